"""Frequency-bin loss analysis (seed 000 Figure 3): median per-token loss difference by training frequency."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lexicons.errors import InputError
from polyglot_groc.analysis.curves import save_png

__all__ = ["FreqBin", "bin_edges", "freq_bins", "plot_freq_bins"]


@dataclass(frozen=True)
class FreqBin:
    lo: int  # inclusive training frequency
    hi: int  # inclusive; -1 = unbounded
    n_tokens: int
    median_diff: float  # median of loss_a - loss_b over the bin's tokens (nan when empty)

    def label(self) -> str:
        return f"{self.lo}+" if self.hi < 0 else f"{self.lo}-{self.hi}"

    def to_dict(self) -> dict[str, Any]:
        return {"bin": self.label(), "lo": self.lo, "hi": self.hi, "n_tokens": self.n_tokens,
                "median_diff": None if np.isnan(self.median_diff) else self.median_diff}


def bin_edges(width: int = 50, n_bins: int = 10, include_unseen: bool = True) -> list[tuple[int, int]]:
    """Seed bins 1-50, 51-100, ... of ``width``; the last bin is open-ended; optional 0 bin for new words."""
    if width < 1 or n_bins < 1:
        raise InputError(f"bin width {width} and count {n_bins} must be >= 1; use e.g. --bin-width 50 --bins 10")
    edges = [(0, 0)] if include_unseen else []
    edges += [(1 + k * width, (k + 1) * width) for k in range(n_bins - 1)]
    edges.append((1 + (n_bins - 1) * width, -1))
    return edges


def freq_bins(train_freq: np.ndarray, loss_a: np.ndarray, loss_b: np.ndarray,
              edges: Sequence[tuple[int, int]]) -> list[FreqBin]:
    """Median of loss_a - loss_b per bin; ``train_freq`` (N,) is each target token's training count."""
    if not (train_freq.shape == loss_a.shape == loss_b.shape):
        raise InputError("per-token losses of the two runs have different lengths; evaluate both on the same text "
                         "with the same tokenisation")
    diff = np.asarray(loss_a, dtype=np.float64) - np.asarray(loss_b, dtype=np.float64)  # (N,)
    out = []
    for lo, hi in edges:  # loop over bins (a handful), vectorised over tokens
        m = (train_freq >= lo) & ((train_freq <= hi) if hi >= 0 else True)
        out.append(FreqBin(lo, hi, int(m.sum()), float(np.median(diff[m])) if m.any() else float("nan")))
    return out


def plot_freq_bins(bins: Sequence[FreqBin], out: Path, name_a: str, name_b: str) -> Path:
    """Bar chart of the median loss difference per bin, written headless (Agg)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt


    labels = [b.label() for b in bins]
    vals = [0.0 if np.isnan(b.median_diff) else b.median_diff for b in bins]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(bins)), 3.5))
    ax.bar(range(len(bins)), vals, color=["tab:blue" if v < 0 else "tab:red" for v in vals])
    ax.axhline(0.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bins)), labels, rotation=45, ha="right")
    ax.set_xlabel("training frequency")
    ax.set_ylabel(f"median loss: {name_a} - {name_b}")
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
    sa = score_tokens(a, toks, lang, a.cfg.train.bptt)
    sb = score_tokens(b, toks, lang, b.cfg.train.bptt)
    edges = bin_edges(width, n_bins, include_unseen=sa.compositional and sb.compositional)
    # New words have infinite loss under a lookup model: the unseen bin only when both compose words.
    la, lb = -sa.logp.numpy(), -sb.logp.numpy()
    bins = freq_bins(sa.train_freq, la, lb, edges)
    res = {"run_a": str(run_a), "run_b": str(run_b), "data": str(data), "split": split, "lang": lang,
           "tokens": int(la.size), "bins": [x.to_dict() for x in bins]}
    if out_png is not None:
        plot_freq_bins(bins, out_png, Path(run_a).name, Path(run_b).name)
        res["png"] = str(out_png)
    return res
