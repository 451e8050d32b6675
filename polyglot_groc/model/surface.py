"""Surface encoder c_x: char embedding -> Conv1d bank -> masked max-over-time -> act -> highway -> proj.

Seed 000 §3.1 / seed 004 appendix C (after Józefowicz et al. 2016 and ELMo). Two bugs of the
original code are avoided here: the embedded characters are *transposed* to (N, C, L) for
Conv1d (a ``view`` reshape silently scrambles characters and channels), and padding windows are
masked to -inf so a PAD position can never win the max.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from polyglot_groc.config import SurfaceConfig
from polyglot_groc.model.activations import activation
from polyglot_groc.model.charset import PAD

#: Encodes a chunk of char rows ``(N, L)`` into surface vectors ``(N, d)``.
EncodeFn = Callable[[torch.Tensor], torch.Tensor]


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
        #: What encodes a chunk: ``_encode``, or its ``torch.compile``d version (train.compile).
        self.encode_fn: EncodeFn = self._encode

    def use_compiler(self, compiler: Callable[[EncodeFn], EncodeFn]) -> None:
        """Encode chunks with ``compiler(eager encoder)``, e.g. ``model.device.maybe_compile``."""
        self.encode_fn = compiler(self._encode)

    def impl_for(self, device: torch.device) -> str:
        """The encoder implementation used on ``device`` (``cfg.impl`` unless it is "auto").

        Measured rule (benchmarks/README.md, surface encoder fwd+bwd over a PTB-size vocabulary):
        on CPU the grouped pass is faster (no work on padding), on CUDA the padded pass is (the
        grouped one is bound by ~300 small kernel launches per step).
        """
        if self.cfg.impl != "auto":
            return self.cfg.impl
        return "padded" if device.type == "cuda" else "grouped"

    def _encode(self, chars: torch.Tensor) -> torch.Tensor:
        # chars: (N, L) int64; PAD (id 0) only ever fills a suffix of a row.
        lengths = (chars != PAD).sum(dim=1)  # (N,)
        if self.impl_for(chars.device) == "padded":
            h = self._pooled_padded(chars, lengths)
        else:
            h = self._pooled_grouped(chars, lengths)
        for hw in self.highways:
            h = hw(h)
        return self.proj(h)  # (N, d)

    def _pooled_padded(self, chars: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """One conv pass per filter over the padded table, PAD windows masked to -inf.  -> (N, sum F)

        Window j of width w is valid when it ends inside the word, j + w <= length; a word
        shorter than w keeps window 0 (as the grouped pass does). To keep a large max word length
        cheap, rows are split into a few length buckets (powers of two) and each bucket is cut to
        its longest word, so padding costs at most 2x, with a handful of launches.
        """
        max_w = max(self.widths)
        n, full = chars.shape
        bounds: list[int] = []
        b = 1 << max(max_w - 1, 1).bit_length()
        while b < full:
            bounds.append(b)
            b *= 2
        bounds.append(full)
        if len(bounds) == 1:
            return self._pooled_padded_block(chars, lengths, full)
        # Buckets by length; sorting and re-ordering are device ops, no host sync but the sizes.
        bucket = torch.bucketize(lengths, torch.tensor(bounds, device=lengths.device))  # (N,)
        order = torch.argsort(bucket, stable=True)
        counts = torch.bincount(bucket, minlength=len(bounds)).tolist()
        parts, start = [], 0
        for width, count in zip(bounds, counts, strict=True):
            if count:
                rows = order[start : start + count]
                parts.append(self._pooled_padded_block(chars[rows, :width], lengths[rows], width))
            start += count
        return torch.cat(parts, dim=0)[torch.argsort(order)]

    def _pooled_padded_block(self, chars: torch.Tensor, lengths: torch.Tensor, width: int) -> torch.Tensor:
        width = max(width, max(self.widths))
        x = self.char_emb(chars[:, :width]).transpose(1, 2)  # (n, C, width): channels first
        pos = torch.arange(width, device=chars.device)  # (width,)
        pooled = []
        for w, conv in zip(self.widths, self.convs, strict=True):
            y = conv(x)  # (n, F_w, width - w + 1)
            n_valid = (lengths - w + 1).clamp_min(1)  # (n,) windows fully inside the word
            invalid = pos[None, : y.shape[2]] >= n_valid[:, None]  # (n, width - w + 1)
            y = y.masked_fill(invalid[:, None, :], float("-inf"))
            pooled.append(self.act(y.max(dim=2).values))  # (n, F_w)
        return torch.cat(pooled, dim=1)  # (n, sum F)

    def _pooled_grouped(self, chars: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
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
        return torch.cat(pooled_groups, dim=0)[torch.argsort(order)]  # (N, sum F), original row order

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
            out = checkpoint(self.encode_fn, chars, use_reentrant=False)
            assert isinstance(out, torch.Tensor)
            return out
        return self.encode_fn(chars)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over dim -2 of ``x`` counting only ``mask`` slots; 0 where no slot is set.

    x: (..., K, d), mask: (..., K) bool -> (..., d). Pad slots never change the mean.
    """
    m = mask.to(x.dtype).unsqueeze(-1)  # (..., K, 1)
    total = (x * m).sum(dim=-2)
    count = m.sum(dim=-2).clamp_min(1.0)
    return total / count


__all__ = ["Highway", "SurfaceEncoder", "masked_mean"]
