"""Grid search of the cache hyperparameters θ and λ on validation text (seed 000 appendix C.4, Figure 6).

The model runs once; each of the 25 grid points is vectorised arithmetic on per-token vectors.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from lexicons.errors import InputError
from polyglot_groc.analysis.crossdomain import (
    CacheSettings,
    TokenScores,
    apply_settings,
    load_other_split,
    score_tokens,
    tune_uniform_weight,
)
from polyglot_groc.analysis.curves import check_png_path, save_png

__all__ = ["LAMBDAS", "THETAS", "grid_search", "plot_heatmap", "tune_cache"]

THETAS = tuple(float(x) for x in np.linspace(0.0, 1.0, 5))
LAMBDAS = tuple(float(x) for x in np.linspace(0.833, 0.966, 5))


def grid_search(scores: TokenScores, base: CacheSettings, thetas: Sequence[float] = THETAS,
                lambdas: Sequence[float] = LAMBDAS) -> np.ndarray:
    """Perplexity at every (θ, λ).  # (len(thetas), len(lambdas))"""
    out = np.empty((len(thetas), len(lambdas)))
    for i, th in enumerate(thetas):  # 5 x 5 grid points, each fully vectorised
        for j, la in enumerate(lambdas):
            out[i, j] = _perplexity(scores, dataclasses.replace(base, theta=th, lam=la))
    return out


def _perplexity(scores: TokenScores, s: CacheSettings) -> float:
    return float(np.exp(-apply_settings(scores, s).mean().item()))


def plot_heatmap(grid: np.ndarray, thetas: Sequence[float], lambdas: Sequence[float], out: Path, title: str) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    im = ax.imshow(grid, origin="lower", cmap="viridis_r", aspect="auto")
    ax.set_xticks(range(len(lambdas)), [f"{x:.3f}" for x in lambdas])
    ax.set_yticks(range(len(thetas)), [f"{x:.2f}" for x in thetas])
    ax.set_xlabel("λ (model weight)")
    ax.set_ylabel("θ (flattening)")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            ax.text(j, i, f"{grid[i, j]:.1f}", ha="center", va="center", fontsize=7, color="white")
    fig.colorbar(im, ax=ax, label="perplexity")
    ax.set_title(title)
    fig.tight_layout()
    try:
        return save_png(fig, out)
    finally:
        plt.close(fig)


def tune_cache(run_dir: Path, data: Path, split: str = "valid", cache: str = "neural", size: int = 5000,
               new_word_weight: float = 0.1, out_png: Path | None = None, which: str = "best",
               thetas: Sequence[float] = THETAS, lambdas: Sequence[float] = LAMBDAS) -> dict[str, Any]:
    """Best (θ, λ) by perplexity on ``data``'s ``split`` (the first language the run knows)."""
    from polyglot_groc.model.bundle import load_bundle

    if out_png is not None:
        check_png_path(out_png)  # before the model runs
    if cache not in ("unigram", "neural"):
        raise InputError(f"--cache {cache!r} cannot be tuned; use unigram or neural")
    base = CacheSettings(cache=cache, size=size, new_word_weight=new_word_weight).validate()
    bundle, _ = load_bundle(run_dir, which)
    texts = load_other_split(bundle, data, split)
    lang, toks = next(iter(texts.items()))
    scores = score_tokens(bundle, toks, lang, bundle.cfg.train.bptt)
    if not scores.compositional:
        base = dataclasses.replace(base, uniform_weight=tune_uniform_weight(scores))
    if cache == "unigram":
        thetas = (0.0,)  # θ does not act on the unigram cache
    grid = grid_search(scores, base, thetas, lambdas)
    i, j = (int(k) for k in np.unravel_index(int(np.argmin(grid)), grid.shape))
    res: dict[str, Any] = {"run": str(run_dir), "data": str(data), "split": split, "lang": lang, "cache": cache,
                           "cache_size": size, "thetas": list(thetas), "lambdas": list(lambdas),
                           "perplexity": grid.tolist(), "best": {"theta": thetas[i], "lambda": lambdas[j],
                                                                  "perplexity": float(grid[i, j])},
                           "uniform_weight": None if scores.compositional else base.uniform_weight,
                           # What the grid is relative to: the same model without a cache and
                           # without down-weighting, and the weight used.
                           "perplexity_no_cache": _perplexity(scores, base.plain()),
                           "new_word_weight": new_word_weight if scores.compositional else None}
    if out_png is not None:
        plot_heatmap(grid, thetas, lambdas, out_png, f"{bundle.model.kind} + {cache} cache, {split}")
        res["png"] = str(out_png)
    return res
