"""Frequency-bin loss analysis (seed 000 Figure 3): median per-token loss difference by training frequency.

The median is the seed's statistic; each bin also reports the mean difference and its share of
the binned tokens' mean difference (the shares add up to log(binned_perplexity_a /
binned_perplexity_b)), because perplexity follows the mean: a model can lose on the median of
every bin and still win on perplexity through the tail of badly predicted tokens.

Losses are in nats per token. The binned tokens can be fewer than the text's (new words are
left out unless both models compose them), so the result gives the binned perplexities and,
separately, each model's perplexity over every token of the text.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.errors import InputError
from groc_base.fileio import unique_labels
from polyglot_groc.analysis.curves import check_png_path, save_png

log = logging.getLogger(__name__)

__all__ = ["FreqBin", "bin_edges", "binned", "freq_bins", "plot_freq_bins"]


@dataclass(frozen=True)
class FreqBin:
    lo: int  # inclusive training frequency
    hi: int  # inclusive; -1 = unbounded
    n_tokens: int
    median_diff: float  # median of loss_a - loss_b over the bin's tokens (nan when empty)
    mean_diff: float = float("nan")  # mean of loss_a - loss_b over the bin's tokens (nan when empty)
    share: float = 0.0  # sum of loss_a - loss_b over the bin / tokens in all bins: its part of the binned mean

    def label(self) -> str:
        return f"{self.lo}+" if self.hi < 0 else f"{self.lo}-{self.hi}"

    def to_dict(self) -> dict[str, Any]:
        return {"bin": self.label(), "lo": self.lo, "hi": self.hi, "n_tokens": self.n_tokens,
                "median_diff": None if np.isnan(self.median_diff) else self.median_diff,
                "mean_diff": None if np.isnan(self.mean_diff) else self.mean_diff, "share": self.share}


def bin_edges(width: int = 50, n_bins: int = 10, include_unseen: bool = True) -> list[tuple[int, int]]:
    """Seed bins 1-50, 51-100, ... of ``width``; the last bin is open-ended; optional 0 bin for new words."""
    if width < 1 or n_bins < 1:
        raise InputError(f"bin width {width} and count {n_bins} must be >= 1; use e.g. --bin-width 50 --bins 10")
    edges = [(0, 0)] if include_unseen else []
    edges += [(1 + k * width, (k + 1) * width) for k in range(n_bins - 1)]
    edges.append((1 + (n_bins - 1) * width, -1))
    return edges


def binned(train_freq: np.ndarray, edges: Sequence[tuple[int, int]]) -> np.ndarray:
    """(N,) bool: the tokens whose training frequency falls in one of the bins ``edges``."""
    m = np.zeros(train_freq.shape, dtype=bool)
    for lo, hi in edges:
        m |= (train_freq >= lo) & ((train_freq <= hi) if hi >= 0 else True)
    return m


def freq_bins(train_freq: np.ndarray, loss_a: np.ndarray, loss_b: np.ndarray,
              edges: Sequence[tuple[int, int]]) -> list[FreqBin]:
    """Median and mean of loss_a - loss_b per bin, and each bin's share of the mean over the binned
    tokens (the shares add up to it); ``train_freq`` (N,) is each target token's training count."""
    if not (train_freq.shape == loss_a.shape == loss_b.shape):
        raise InputError("per-token losses of the two runs have different lengths; evaluate both on the same text "
                         "with the same tokenisation")
    diff = np.asarray(loss_a, dtype=np.float64) - np.asarray(loss_b, dtype=np.float64)  # (N,)
    masks = [binned(train_freq, [edge]) for edge in edges]  # a handful of bins, vectorised over tokens
    n_binned = max(sum(int(m.sum()) for m in masks), 1)
    out = []
    for (lo, hi), m in zip(edges, masks, strict=True):
        if m.any():
            part = diff[m]
            out.append(FreqBin(lo, hi, int(m.sum()), float(np.median(part)), float(part.mean()),
                               float(part.sum() / n_binned)))
        else:
            out.append(FreqBin(lo, hi, 0, float("nan")))
    return out


def plot_freq_bins(bins: Sequence[FreqBin], out: Path, name_a: str, name_b: str) -> Path:
    """Bar chart of the median loss difference per bin (nats per token), written headless (Agg).

    Each bin's token count is under its label; an empty bin has no bar (a grey x and n=0), so
    it is never read as a difference of zero.
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{b.label()}\nn={b.n_tokens:,}" for b in bins]
    full = [i for i, b in enumerate(bins) if b.n_tokens and not np.isnan(b.median_diff)]
    empty = [i for i in range(len(bins)) if i not in full]
    vals = [bins[i].median_diff for i in full]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(bins)), 4.0))
    ax.bar(full, vals, color=["tab:blue" if v < 0 else "tab:red" for v in vals])
    if empty:
        ax.plot(empty, [0.0] * len(empty), linestyle="none", marker="x", color="grey", label="empty bin (n=0)")
        ax.legend(fontsize="small", loc="best")
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bins)), labels, rotation=45, ha="right", fontsize="small")
    ax.set_xlim(-0.6, len(bins) - 0.4)
    ax.set_xlabel("training frequency of the target word (n = test tokens in the bin)")
    ax.set_ylabel("median loss difference\n(nats per token)")
    ax.set_title(f"{name_a} minus {name_b}: below 0, {name_a} predicts better", fontsize="medium")
    fig.tight_layout()
    try:
        return save_png(fig, out)
    finally:
        plt.close(fig)


class IncomparableRunsError(InputError):
    """Two runs whose vocabularies or tokenisation differ cannot be compared token by token."""


def compare_runs(run_a: Path, run_b: Path, data: Path, split: str = "test", width: int = 50, n_bins: int = 10,
                 out_png: Path | None = None, which: str = "best") -> dict[str, Any]:
    """Per-token losses of two runs on the same text, binned by training frequency (Figure 3)."""
    from polyglot_groc.analysis.crossdomain import load_other_split, score_tokens
    from polyglot_groc.model.bundle import load_bundle

    if out_png is not None:
        check_png_path(out_png)  # before the models run
    a, _ = load_bundle(run_a, which)
    b, _ = load_bundle(run_b, which)
    if a.cfg.data.tokenize != b.cfg.data.tokenize:
        raise IncomparableRunsError(f"the runs tokenise differently ({a.cfg.data.tokenize} vs "
                                    f"{b.cfg.data.tokenize}); compare runs trained on the same corpus")
    if a.vocab.words != b.vocab.words:
        # <unk> is the one word a lookup run may add to the same training text.
        wa = [w for w in a.vocab.words if w != "<unk>"]
        wb = [w for w in b.vocab.words if w != "<unk>"]
        if wa != wb:
            raise IncomparableRunsError("the runs have different vocabularies; compare runs trained on the same "
                                        "corpus with the same vocabulary settings")
    texts = load_other_split(a, data, split)
    lang, toks = next(iter(texts.items()))
    if len(texts) > 1:
        log.warning("freq-bins compares the runs on the first language, %s; %s left out", lang,
                    ", ".join(list(texts)[1:]))
    sa = score_tokens(a, toks, lang, a.cfg.train.bptt)
    sb = score_tokens(b, toks, lang, b.cfg.train.bptt)
    edges = bin_edges(width, n_bins, include_unseen=sa.compositional and sb.compositional)
    # New words have infinite loss under a lookup model: the unseen bin only when both compose words.
    la, lb = -sa.logp.numpy(), -sb.logp.numpy()  # (N,) nats per token
    bins = freq_bins(sa.train_freq, la, lb, edges)
    m = binned(sa.train_freq, edges)  # new words only where both runs compose them
    label_a, label_b = unique_labels([run_a, run_b])
    res = {"run_a": str(run_a), "run_b": str(run_b), "label_a": label_a, "label_b": label_b, "data": str(data),
           "split": split, "lang": lang, "languages_left_out": list(texts)[1:], "unit": "nats per token",
           "tokens": int(la.size),
           "tokens_binned": int(m.sum()),
           # Each model over every token of the text (None when it gives some token probability 0:
           # a lookup model and a new word), then over the binned tokens only, whose bins' shares
           # add up to log(binned_perplexity_a / binned_perplexity_b) = mean_diff.
           "perplexity_a": _perplexity(la), "perplexity_b": _perplexity(lb),
           "zero_probability_tokens_a": int(np.isinf(la).sum()), "zero_probability_tokens_b": int(np.isinf(lb).sum()),
           "binned_perplexity_a": _perplexity(la[m]), "binned_perplexity_b": _perplexity(lb[m]),
           "mean_diff": float((la[m].astype(np.float64) - lb[m]).mean()) if m.any() else None,
           "bins": [x.to_dict() for x in bins]}
    if out_png is not None:
        plot_freq_bins(bins, out_png, label_a, label_b)
        res["png"] = str(out_png)
    return res


def _perplexity(loss: np.ndarray) -> float | None:
    """exp(mean loss); None for no tokens or an infinite loss (JSON has no Infinity)."""
    if not loss.size:
        return None
    ppl = float(np.exp(np.asarray(loss, dtype=np.float64).mean()))
    return ppl if np.isfinite(ppl) else None
