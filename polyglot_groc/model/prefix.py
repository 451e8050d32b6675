"""Prefix function f: a multi-layer LSTM whose last layer outputs the embedding size d.

The ``bilm`` kind builds two of these (forward and backward) with ``project=True``: every layer then
has ``hidden`` cells projected to ``d`` (ELMo's LSTM with projection), so all layers are d wide.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn as nn

from groc_base.errors import ConfigError
from polyglot_groc.config import PrefixConfig

State = list[tuple[torch.Tensor, torch.Tensor]]

#: torch warns (once a process, on CPU) that oneDNN has no LSTM with projections (bilm's) and that it
#: uses its default implementation: the results are the same and nothing can be done about it, so
#: the prefix silences it around its own LSTM calls (never globally).
PROJECTION_WARNING = "LSTM with projections is not supported with oneDNN"


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
    def __init__(self, cfg: PrefixConfig, d: int, init_range: float = 0.05, project: bool = False) -> None:
        super().__init__()
        if project:
            # ELMo: each layer has `hidden` cells and a projection of its output to d (none when hidden == d).
            if cfg.hidden < d:
                raise ConfigError(f"model.prefix.hidden={cfg.hidden} is below d={d}; an ELMo-style LSTM projects its "
                                  "cells down to d, so set hidden >= d")
            proj = d if cfg.hidden > d else 0
            self.layers = nn.ModuleList(
                nn.LSTM(d, cfg.hidden, batch_first=True, proj_size=proj) for _ in range(cfg.n_layers)
            )
        else:
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
        # (h, c): h is the (projected) output, c the cell.
        sizes = [(int(layer.proj_size or layer.hidden_size), int(layer.hidden_size))  # type: ignore[arg-type]
                 for layer in self.layers]
        return [
            (torch.zeros(1, batch_size, h, device=device), torch.zeros(1, batch_size, c, device=device))
            for h, c in sizes
        ]

    @property
    def output_sizes(self) -> list[int]:
        """Each layer's output width."""
        return [int(layer.proj_size or layer.hidden_size) for layer in self.layers]  # type: ignore[arg-type]

    def forward(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """(B, T, d) -> (B, T, d); dropout on the input, between layers and on the output."""
        out, _, new_state = self.forward_with_raw(x, state)
        return out, new_state

    def forward_with_raw(self, x: torch.Tensor, state: State) -> tuple[torch.Tensor, torch.Tensor, State]:
        """:meth:`forward`, plus the top layer's output BEFORE its dropout (what TAR penalises).

        Returns ``(out (B, T, d), raw (B, T, d), state)``.
        """
        outs, new_state = self.layer_outputs(x, state)
        return self.drop_out(outs[-1]), outs[-1], new_state

    def layer_outputs(self, x: torch.Tensor, state: State) -> tuple[list[torch.Tensor], State]:
        """Every layer's output before the dropout that follows it: ``[(B, T, size_k)]`` and the state."""
        new_state: State = []
        outs: list[torch.Tensor] = []
        h = self.drop_in(x)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=PROJECTION_WARNING, category=UserWarning)
            for i, (layer, s) in enumerate(zip(self.layers, state, strict=True)):
                h, (hn, cn) = layer(h, s)
                new_state.append((hn, cn))
                outs.append(h)
                if i < len(self.layers) - 1:
                    h = self.drop_between(h)
        return outs, new_state


def detach_state(state: State) -> State:
    """Carry the hidden state across BPTT windows without backpropagating into the past."""
    return [(h.detach(), c.detach()) for h, c in state]
