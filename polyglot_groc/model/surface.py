"""Surface encoder c_x: char embedding -> Conv1d bank -> masked max-over-time -> act -> highway -> proj.

Seed 000 §3.1 / seed 004 appendix C (after Józefowicz et al. 2016 and ELMo). Two bugs of the
original code are avoided here: the embedded characters are *transposed* to (N, C, L) for
Conv1d (a ``view`` reshape silently scrambles characters and channels), and padding windows are
masked to -inf so a PAD position can never win the max.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

from polyglot_groc.config import SurfaceConfig
from polyglot_groc.model.activations import GRAD_FROM_OUTPUT, IN_PLACE, activation
from polyglot_groc.model.charset import PAD

#: Encodes a chunk of char rows ``(N, L)`` into surface vectors ``(N, d)``.
EncodeFn = Callable[[torch.Tensor], torch.Tensor]


class _FusedHighway(torch.autograd.Function):
    """The highway layer with a hand-written backward, for fp32/tf32.

    Same function as ``Highway``'s autograd path (test), but it saves only x and the activated
    ``[t; g]`` block, and the elementwise work runs in a few in-place passes: on CPU the 1024-wide
    highway over the whole vocabulary is the largest cost of a GroC step (benchmarks/README.md).
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor, weight: torch.Tensor,  # type: ignore[override]
                bias: torch.Tensor, act: str) -> torch.Tensor:
        z = torch.addmm(bias, x, weight.t())  # (N, 2D): [transform | gate] pre-activations
        t, g = z.chunk(2, dim=-1)
        IN_PLACE[act](t)
        g.sigmoid_()
        y = torch.lerp(t, x, g)  # t + g (x - t) = g x + (1 - g) t
        ctx.save_for_backward(x, weight, z)
        ctx.act = act  # type: ignore[attr-defined]
        return y

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,  # type: ignore[override]
                 gy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight, z = ctx.saved_tensors  # type: ignore[attr-defined]
        t, g = z.chunk(2, dim=-1)  # (N, D) each, already activated
        gz = torch.empty_like(z)  # (N, 2D): gradient of the pre-activations
        gt, gg = gz.chunk(2, dim=-1)
        torch.addcmul(gy, gy, g, value=-1.0, out=gt)  # dy/dt = 1 - g: gy (1 - g)
        torch.sub(x, t, out=gg)  # dy/dg = x - t, and dg/da = g (1 - g): (x - t) g gy (1 - g)
        gg.mul_(g).mul_(gt)
        GRAD_FROM_OUTPUT[ctx.act](gt, t)  # type: ignore[attr-defined]  # then dt/dz
        needs = ctx.needs_input_grad  # type: ignore[attr-defined]
        gx = torch.addcmul(gz @ weight, gy, g) if needs[0] else None  # the carry path adds g * gy
        gw = gz.t() @ x if needs[1] else None
        gb = gz.sum(dim=0) if needs[2] else None
        return gx, gw, gb, None


def _compute_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype autocast would run a matmul of ``x`` in (``x.dtype`` without autocast)."""
    kind = x.device.type
    return torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else x.dtype


class _GroupedCharCNN(torch.autograd.Function):
    """The char-CNN's grouped pass: embed, every filter, max over time, bias and activation.

    Words are grouped by length and each group is convolved over its true length only: no window
    can reach a PAD position, so padding cannot win the max and no mask is needed. A word shorter
    than a filter keeps the single window 0 (its PAD slots embed PAD's row, zero).

    Each filter is one GEMM per group over the windows laid out (n, P, C w) (im2col), so the max
    over positions reduces a middle axis with the filters contiguous. The backward folds window
    gradients into one (n, L, C) buffer per group and scatters it into the char table once. On
    CPU this is faster, forward and backward, than Conv1d + max + autograd's bookkeeping of
    ~100 small ops per group (benchmarks/README.md). Saved for backward: the windows, the conv
    outputs overwritten in place by a 0/1 mask of the winning windows (in the compute dtype, so
    the backward multiplies without a conversion pass), and the output.

    Ties (a repeated substring gives equal windows) share the gradient equally, as ``amax``
    does; tied windows hold the same characters, so every parameter gradient equals that of
    max's pick-one rule. Under autocast the GEMMs run in the autocast dtype, as Conv1d's would.
    ``act`` is applied in place when it has an in-place form (else None: the caller applies it).
    """

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, chars: torch.Tensor,  # type: ignore[override]
                lengths: torch.Tensor, emb: torch.Tensor, bias: torch.Tensor, pad: int, widths: tuple[int, ...],
                act: str | None, keep: bool, *weights: torch.Tensor) -> torch.Tensor:
        dt = _compute_dtype(emb)
        table = emb.to(dt)
        kernels = [weight.to(dt).reshape(weight.shape[0], -1).t() for weight in weights]  # (C w, F): [c w + k, f]
        order = torch.argsort(lengths, stable=True)
        uniq, counts = torch.unique_consecutive(lengths[order], return_counts=True)
        out = torch.empty(chars.shape[0], sum(k.shape[1] for k in kernels), dtype=dt, device=chars.device)
        saved: list[torch.Tensor] = []
        start = 0
        with torch.autocast(chars.device.type, enabled=False):
            for length, count in zip(uniq.tolist(), counts.tolist(), strict=True):
                rows = order[start : start + count]
                start += count
                ids = chars[rows, : max(length, max(widths))]  # (n, L)
                x = table[ids]  # (n, L, C)
                pooled = []
                for w, kernel in zip(widths, kernels, strict=True):
                    n_pos = max(length, w) - w + 1  # windows of width w
                    windows = x[:, : n_pos + w - 1].unfold(1, w, 1).reshape(count, n_pos, -1)  # (n, P, C w)
                    y = torch.matmul(windows, kernel)  # (n, P, F)
                    best = y.amax(dim=1)  # (n, F)
                    pooled.append(best)
                    if keep:  # what backward needs; skipped without grad (evaluation)
                        won = y.eq_(best.unsqueeze(1))  # (n, P, F): 1 at the winning windows, several if tied
                        share = won.sum(dim=1).reciprocal_()  # (n, F): 1 / number of winners
                        saved += [windows, won, share]
                out.index_copy_(0, rows, torch.cat(pooled, dim=1))
                if keep:
                    saved += [rows, ids]
            out += bias.to(dt)
            if act is not None:
                IN_PLACE[act](out)
        ctx.save_for_backward(out, emb, *weights, *saved)
        ctx.meta = (pad, widths, act, len(uniq), dt)  # type: ignore[attr-defined]
        return out

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx,  # type: ignore[override]
                 grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        pad, widths, act, n_groups, dt = ctx.meta  # type: ignore[attr-defined]
        out, emb, *rest = ctx.saved_tensors  # type: ignore[attr-defined]
        weights, saved = rest[: len(widths)], rest[len(widths) :]
        g_out = grad.to(dt, copy=True)  # (N, sum F); a copy, as the act's derivative is applied in place
        if act is not None:
            GRAD_FROM_OUTPUT[act](g_out, out)
        kernels = [weight.to(dt).reshape(weight.shape[0], -1) for weight in weights]  # (F, C w)
        g_kernels = [torch.zeros_like(k) for k in kernels]
        g_table = torch.zeros(emb.shape, dtype=dt, device=emb.device)  # (n_chars, C)
        per_group = 3 * len(widths) + 2
        for gi in range(n_groups):
            group = saved[gi * per_group : (gi + 1) * per_group]
            rows, ids = group[-2:]
            g_rows = g_out[rows]  # (n, sum F)
            n, c = ids.shape[0], emb.shape[1]
            g_x = torch.zeros(n, ids.shape[1], c, dtype=dt, device=emb.device)  # (n, L, C)
            col = 0
            for i, (w, kernel) in enumerate(zip(widths, kernels, strict=True)):
                windows, won, share = group[3 * i : 3 * i + 3]
                f, n_pos = kernel.shape[0], windows.shape[1]
                g_y = won * (g_rows[:, col : col + f] * share).unsqueeze(1)  # (n, P, F)
                col += f
                g_kernels[i].addmm_(g_y.reshape(n * n_pos, f).t(), windows.reshape(n * n_pos, -1))
                g_win = (g_y @ kernel).reshape(n, n_pos, c, w)  # (n, P, C, w)
                for k in range(w):  # window p, offset k reads character p + k
                    g_x[:, k : k + n_pos] += g_win[..., k]
            g_table.index_add_(0, ids.reshape(-1), g_x.reshape(-1, c))
        g_table[pad] = 0.0  # nn.Embedding(padding_idx=PAD): the PAD row never trains
        g_weights = [gk.reshape(wt.shape).to(wt.dtype) for gk, wt in zip(g_kernels, weights, strict=True)]
        return (None, None, g_table.to(emb.dtype), g_out.sum(dim=0).to(emb.dtype), None, None, None, None,
                *g_weights)


class Highway(nn.Module):
    """y = g * x + (1 - g) * f(W_t x), g = sigmoid(W_g x); AllenNLP's layout (one Linear, 2D outputs).

    ``g`` is the *carry* gate: its bias starts at +1 so the layer initially passes x through.
    """

    def __init__(self, dim: int, act: str = "relu") -> None:
        super().__init__()
        self.dim = dim
        self.layer = nn.Linear(dim, 2 * dim)
        self.act_name = act
        self.act = activation(act)
        with torch.no_grad():
            self.layer.bias[dim:].fill_(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (N, D) -> (N, D)
        if self.fused_for(x):
            return _FusedHighway.apply(x, self.layer.weight, self.layer.bias, self.act_name)  # type: ignore[no-any-return]
        transform, gate = self.layer(x).chunk(2, dim=-1)
        g = torch.sigmoid(gate)
        return g * x + (1.0 - g) * self.act(transform)

    def fused_for(self, x: torch.Tensor) -> bool:
        """Whether ``x`` takes the fused path: an activation it knows, and no autocast (under
        autocast the Linear runs in bf16 and autograd's own path keeps the dtypes straight)."""
        return (self.act_name in IN_PLACE and not torch.is_autocast_enabled(x.device.type)
                and x.dtype == self.layer.weight.dtype)


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
        # model.surface.norm = "layer": the elmo kinds' default (config.SurfaceConfig says why). None
        # adds no parameter, so a state dict without it (GroC, bilm-tf's weights) loads as before.
        self.norm = nn.LayerNorm(d) if cfg.norm == "layer" else None
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
        out = self.proj(h)  # (N, d)
        return out if self.norm is None else self.norm(out)

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
        """Grouped by length, one fused pass (``_GroupedCharCNN``).  -> (N, sum F)"""
        in_place = self.cfg.activation if self.cfg.activation in IN_PLACE else None
        convs: list[nn.Conv1d] = list(self.convs)  # type: ignore[arg-type]
        bias = torch.cat([cast(torch.Tensor, conv.bias) for conv in convs])  # (sum F,): Conv1d's default bias
        pad = self.char_emb.padding_idx
        assert pad is not None
        params = [self.char_emb.weight, bias, *(conv.weight for conv in convs)]
        keep = torch.is_grad_enabled() and any(t.requires_grad for t in params)
        h = _GroupedCharCNN.apply(chars, lengths, params[0], bias, pad, self.widths, in_place, keep, *params[2:])
        return h if in_place is not None else self.act(h)  # type: ignore[no-any-return]

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
