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
import os
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import check_output
from groc_base.errors import InputError
from groc_base.fileio import atomic_write_all, atomic_write_bytes, dumps_json, json_safe, unique_labels
from polyglot_groc.analysis.curves import check_png_path, png_bytes
from polyglot_groc.model.access import check_run_access, run_access_doc

log = logging.getLogger(__name__)

__all__ = ["FreqBin", "FreqBinsResult", "IncomparableRunsError", "bin_differences", "bin_edges", "binned",
           "freq_bins", "plot_freq_bins"]


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


#: The most bins ``--bins`` may ask for.
MAX_BINS = 1000


def bin_edges(width: int = 50, n_bins: int = 10, include_unseen: bool = True) -> list[tuple[int, int]]:
    """Seed bins 1-50, 51-100, ... of ``width``; the last bin is open-ended; optional 0 bin for new words."""
    # At most MAX_BINS bins: a figure of more is unreadable, and a huge count would build its edges for ever.
    if not (1 <= width <= 10**12 and 1 <= n_bins <= MAX_BINS):
        raise InputError(f"bin width {width} must lie in [1, 10^12] and bin count {n_bins} in [1, {MAX_BINS}]; use "
                         "e.g. --bin-width 50 --bins 10")
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


def bin_differences(train_freq: np.ndarray, loss_a: np.ndarray, loss_b: np.ndarray,
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
    out = check_png_path(out, "figure path")
    atomic_write_bytes(out, freq_bins_png(bins, name_a, name_b))
    return out


def freq_bins_png(bins: Sequence[FreqBin], name_a: str, name_b: str) -> bytes:
    """:func:`plot_freq_bins`'s chart as PNG bytes."""
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
        return png_bytes(fig)
    finally:
        plt.close(fig)


class IncomparableRunsError(InputError):
    """Two runs whose vocabularies or tokenisation differ cannot be compared token by token."""


@dataclass(frozen=True)
class FreqBinsResult:
    """Two runs' per-token losses on one text, binned by the target's training frequency (Figure 3).

    ``bins`` are :meth:`FreqBin.to_dict` entries; losses are nats per token, A minus B (below 0:
    A predicts better). ``perplexity_a``/``_b`` cover every token of the text, ``binned_*`` only
    the binned ones (new words only where both runs compose them).
    """

    run_a: str
    run_b: str
    label_a: str
    label_b: str
    data: str
    split: str
    lang: str
    languages_left_out: list[str]
    unit: str
    tokens: int
    tokens_binned: int
    perplexity_a: float | None
    perplexity_b: float | None
    zero_probability_tokens_a: int
    zero_probability_tokens_b: int
    binned_perplexity_a: float | None
    binned_perplexity_b: float | None
    mean_diff: float | None
    bins: list[dict[str, Any]]
    png: str | None = None
    json: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc analyze freq-bins`` prints and writes beside the PNG."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for key in ("png", "json"):
            if out[key] is None:
                del out[key]
        return json_safe(out)  # type: ignore[return-value]


@run_access_doc
def freq_bins(
    *,
    run_a: str | os.PathLike[str],
    run_b: str | os.PathLike[str],
    data: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    split: str = "test",
    bin_width: int = 50,
    bins: int = 10,
    overwrite: bool = False,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> FreqBinsResult:
    """Median (and mean) per-token loss difference of run A minus run B by training-frequency bin.

    Both runs score ``data``'s ``split`` (its first language the runs know) through their kinds'
    scorers, one stream each; the runs must share a tokenisation and vocabulary. With ``out`` (a
    ``.png``) the bar chart is written there and the result's JSON beside it (``fig.png`` ->
    ``fig.json``), both atomically, after every check.

    Args:
        run_a: first run (e.g. GroC).
        run_b: second run (e.g. tied).
        data: corpus root (``<lang>/<split>.txt``).
        out: PNG path ending in ``.png``; None: no files.
        split: ``valid`` or ``test``.
        bin_width: training-frequency bin width (the seed's 50).
        bins: number of bins; the last is open-ended.
        overwrite: replace an existing PNG or JSON.
        {run_access}

    Returns:
        A :class:`FreqBinsResult`; its ``to_dict()`` is the JSON the CLI prints.

    Raises:
        InputError: a bad bin width or count, a path that is not a ``.png`` or exists without
            ``overwrite``; IncomparableRunsError: runs with different tokenisation or vocabularies.
    """
    from polyglot_groc.analysis.crossdomain import load_other_split, score_tokens
    from polyglot_groc.model.bundle import load_bundle

    check_run_access(checkpoint=checkpoint, device=device, threads=threads)
    png = json_out = None
    if out is not None:
        # The figure must be a .png, so the JSON beside it (fig.png -> fig.json) is always another file.
        png = check_png_path(Path(out))
        json_out = png.with_suffix(".json")
        check_output(png, overwrite, also=[json_out])  # before the models run
    bin_edges(bin_width, bins)
    a, _ = load_bundle(Path(run_a), checkpoint, device)
    b, _ = load_bundle(Path(run_b), checkpoint, device)
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
    texts = load_other_split(a, Path(data), split)
    lang, toks = next(iter(texts.items()))
    if len(texts) > 1:
        log.warning("freq-bins compares the runs on the first language, %s; %s left out", lang,
                    ", ".join(list(texts)[1:]))
    sa = score_tokens(a, toks, lang, a.cfg.train.bptt)
    sb = score_tokens(b, toks, lang, b.cfg.train.bptt)
    edges = bin_edges(bin_width, bins, include_unseen=sa.compositional and sb.compositional)
    # New words have infinite loss under a lookup model: the unseen bin only when both compose words.
    la, lb = -sa.logp.numpy(), -sb.logp.numpy()  # (N,) nats per token
    binned_bins = bin_differences(sa.train_freq, la, lb, edges)
    m = binned(sa.train_freq, edges)  # new words only where both runs compose them
    label_a, label_b = unique_labels([run_a, run_b])
    figure = freq_bins_png(binned_bins, label_a, label_b) if png is not None else None
    result = FreqBinsResult(
        run_a=str(run_a), run_b=str(run_b), label_a=label_a, label_b=label_b, data=str(data), split=split,
        lang=lang, languages_left_out=list(texts)[1:], unit="nats per token", tokens=int(la.size),
        tokens_binned=int(m.sum()),
        # Each model over every token of the text (None when it gives some token probability 0:
        # a lookup model and a new word), then over the binned tokens only, whose bins' shares
        # add up to log(binned_perplexity_a / binned_perplexity_b) = mean_diff.
        perplexity_a=_perplexity(la), perplexity_b=_perplexity(lb),
        zero_probability_tokens_a=int(np.isinf(la).sum()), zero_probability_tokens_b=int(np.isinf(lb).sum()),
        binned_perplexity_a=_perplexity(la[m]), binned_perplexity_b=_perplexity(lb[m]),
        mean_diff=float((la[m].astype(np.float64) - lb[m]).mean()) if m.any() else None,
        bins=[x.to_dict() for x in binned_bins],
        png=str(png) if png is not None else None, json=str(json_out) if json_out is not None else None)
    if png is not None and json_out is not None and figure is not None:
        # The chart and its JSON together or neither: a full disk leaves the previous pair as it was.
        atomic_write_all({png: figure, json_out: (dumps_json(result.to_dict(), indent=2) + "\n").encode()})
    return result


def _perplexity(loss: np.ndarray) -> float | None:
    """exp(mean loss); None for no tokens or an infinite loss (JSON has no Infinity)."""
    if not loss.size:
        return None
    ppl = float(np.exp(np.asarray(loss, dtype=np.float64).mean()))
    return ppl if np.isfinite(ppl) else None
