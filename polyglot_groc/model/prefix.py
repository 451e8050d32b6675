"""Prefix function f: a multi-layer LSTM whose last layer outputs the embedding size d."""

from __future__ import annotations

import torch
import torch.nn as nn

from polyglot_groc.config import PrefixConfig

State = list[tuple[torch.Tensor, torch.Tensor]]


class LockedDropout(nn.Module):
    """Dropout with one mask per sequence, shared across time (variational, AWD-LSTM style)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, D)
        if not self.training or self.p == 0.0:
            return x
        mask = x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1.0 - self.p) / (1.0 - self.p)
        return x * mask


class LSTMPrefix(nn.Module):
    def __init__(self, cfg: PrefixConfig, d: int, init_range: float = 0.05) -> None:
        super().__init__()
        sizes = [d] + [cfg.hidden] * (cfg.n_layers - 1) + [d]
        self.layers = nn.ModuleList(
            nn.LSTM(sizes[i], sizes[i + 1], batch_first=True) for i in range(cfg.n_layers)
        )
        def place(p: float) -> float:  # a negative per-place value falls back to `dropout`
            return cfg.dropout if p < 0 else p

        self.drop_in = LockedDropout(place(cfg.input_dropout))
        self.drop_between = LockedDropout(place(cfg.layer_dropout))
        self.drop_out = LockedDropout(place(cfg.output_dropout))
        for p in self.layers.parameters():
            nn.init.uniform_(p, -init_range, init_range)

    def init_state(self, batch_size: int, device: torch.device | None = None) -> State:
        sizes = [int(layer.hidden_size) for layer in self.layers]  # type: ignore[arg-type]
        return [
            (torch.zeros(1, batch_size, h, device=device), torch.zeros(1, batch_size, h, device=device))
            for h in sizes
        ]

    def forward(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """(B, T, d) -> (B, T, d); dropout on the input, between layers and on the output."""
        out, _, new_state = self.forward_with_raw(x, state)
        return out, new_state

    def forward_with_raw(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, torch.Tensor, State]:
        """:meth:`forward`, plus the top layer's output BEFORE its dropout (what TAR penalises).

        Returns ``(out (B, T, d), raw (B, T, d), state)``.
        """
        new_state: State = []
        h = self.drop_in(x)
        for i, (layer, s) in enumerate(zip(self.layers, state, strict=True)):
            h, (hn, cn) = layer(h, s)
            new_state.append((hn, cn))
            if i < len(self.layers) - 1:
                h = self.drop_between(h)
        return self.drop_out(h), h, new_state


def detach_state(state: State) -> State:
    """Carry the hidden state across BPTT windows without backpropagating into the past."""
    return [(h.detach(), c.detach()) for h, c in state]
