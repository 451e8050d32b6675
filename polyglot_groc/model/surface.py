"""Surface encoder c_x: char embedding -> Conv1d bank -> masked max-over-time -> act -> highway -> proj.

Seed 000 §3.1 / seed 004 appendix C (after Józefowicz et al. 2016 and ELMo). Two bugs of the
original code are avoided here: the embedded characters are *transposed* to (N, C, L) for
Conv1d (a ``view`` reshape silently scrambles characters and channels), and padding windows are
masked to -inf so a PAD position can never win the max.
"""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from polyglot_groc.config import SurfaceConfig
from polyglot_groc.model.activations import activation
from polyglot_groc.model.charset import PAD


class Highway(nn.Module):
    """y = g * x + (1 - g) * f(W_t x), g = sigmoid(W_g x); AllenNLP's layout (one Linear, 2D outputs).

    ``g`` is the *carry* gate: its bias starts at +1 so the layer initially passes x through.
    """

    def __init__(self, dim: int, act: str = "relu") -> None:
        super().__init__()
        self.dim = dim
        self.layer = nn.Linear(dim, 2 * dim)
        self.act = activation(act)
        with torch.no_grad():
            self.layer.bias[dim:].fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, D) -> (N, D)
        transform, gate = self.layer(x).chunk(2, dim=-1)
        g = torch.sigmoid(gate)
        return g * x + (1.0 - g) * self.act(transform)


class SurfaceEncoder(nn.Module):
    def __init__(self, cfg: SurfaceConfig, n_chars: int, d: int, highway_act: str = "relu") -> None:
        super().__init__()
        self.cfg = cfg
        self.widths = tuple(w for w, _ in cfg.filters)
        self.char_emb = nn.Embedding(n_chars, cfg.char_dim, padding_idx=PAD)
        self.convs = nn.ModuleList(nn.Conv1d(cfg.char_dim, n, w) for w, n in cfg.filters)
        self.n_filters = sum(n for _, n in cfg.filters)
        self.act = activation(cfg.activation)
        self.highways = nn.ModuleList(Highway(self.n_filters, highway_act) for _ in range(cfg.n_highway))
        self.proj = nn.Linear(self.n_filters, d)
        self.d = d

    def _encode(self, chars: torch.Tensor) -> torch.Tensor:
        # chars: (N, L) int64; PAD (id 0) only ever fills a suffix of a row.
        lengths = (chars != PAD).sum(dim=1)  # (N,)
        # Words are grouped by length and each group is convolved over its true length only: no
        # window can reach a PAD position, so padding cannot win the max and no mask is needed.
        # A word shorter than a filter keeps the single window 0 (its PAD slots embed to zero).
        order = torch.argsort(lengths, stable=True)
        uniq, counts = torch.unique_consecutive(lengths[order], return_counts=True)
        pooled_groups = []
        start = 0
        for length, count in zip(uniq.tolist(), counts.tolist(), strict=True):
            rows = order[start : start + count]
            start += count
            width = max(length, max(self.widths))
            x = self.char_emb(chars[rows, :width]).transpose(1, 2)  # (n, C, width): channels first
            pooled = [
                self.act(conv(x[:, :, : max(length, w)]).max(dim=2).values)  # (n, F_w)
                for w, conv in zip(self.widths, self.convs, strict=True)
            ]
            pooled_groups.append(torch.cat(pooled, dim=1))  # (n, sum F)
        h = torch.cat(pooled_groups, dim=0)[torch.argsort(order)]  # (N, sum F), original row order
        for hw in self.highways:
            h = hw(h)
        return self.proj(h)  # (N, d)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """Encode words given as character ids.  (N, L) -> (N, d)

        Rows are processed in chunks to bound peak memory; with ``cfg.checkpoint`` the chunk
        activations are recomputed in backward instead of stored.
        """
        n = chars.shape[0]
        size = self.cfg.chunk_size
        if n <= size:
            return self._run(chars)
        return torch.cat([self._run(chars[i : i + size]) for i in range(0, n, size)], dim=0)

    def _run(self, chars: torch.Tensor) -> torch.Tensor:
        if self.cfg.checkpoint and self.training and torch.is_grad_enabled():
            out = checkpoint(self._encode, chars, use_reentrant=False)
            assert isinstance(out, torch.Tensor)
            return out
        return self._encode(chars)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over dim -2 of ``x`` counting only ``mask`` slots; 0 where no slot is set.

    x: (..., K, d), mask: (..., K) bool -> (..., d). Pad slots never change the mean.
    """
    m = mask.to(x.dtype).unsqueeze(-1)  # (..., K, 1)
    total = (x * m).sum(dim=-2)
    count = m.sum(dim=-2).clamp_min(1.0)
    return total / count


__all__ = ["Highway", "SurfaceEncoder", "masked_mean"]
