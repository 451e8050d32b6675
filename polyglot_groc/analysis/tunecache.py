"""Grid search of the cache hyperparameters on validation text (seed 000 appendix C.4, Figures 6-7).

θ (neural cache flattening) and λ (model weight) on the seed's 5 x 5 grid, and for GroC the
new-word weight on the seed's dw grid (0.1 ... 0.9) plus 1 (no down-weighting). No cache at all
is a candidate too: when it beats every grid point it is the best, and the result says so. A
best on the edge of a grid that could go further is flagged (``on_edge``, and a warning naming
values to add).

The model runs once; each θ is one cache pass, and every λ and new-word weight after that is
vectorised arithmetic on per-token vectors.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import check_output, option
from groc_base.errors import ConfigError, InputError
from groc_base.fileio import json_safe
from polyglot_groc.analysis.caches import check_cache_params
from polyglot_groc.analysis.crossdomain import (
    CacheSettings,
    TokenScores,
    apply_settings,
    cache_logprob,
    load_other_split,
    mix_cache,
    model_logprob,
    perplexity,
    score_tokens,
    tune_uniform_weight,
)
from polyglot_groc.analysis.curves import check_png_path, save_png
from polyglot_groc.model.access import check_run_access, run_access_doc

log = logging.getLogger(__name__)

__all__ = ["LAMBDAS", "NEW_WORD_WEIGHTS", "THETAS", "TuneCacheResult", "grid_edges", "grid_search", "plot_heatmap",
           "tune_cache", "tune_scores"]

THETAS = tuple(float(x) for x in np.linspace(0.0, 1.0, 5))
LAMBDAS = tuple(float(x) for x in np.linspace(0.833, 0.966, 5))
#: Seed C.4's dw grid, plus 1: new words as the model scores them.
NEW_WORD_WEIGHTS = (0.1, 0.3, 0.5, 0.7, 0.9, 1.0)

#: Each hyperparameter's hard bounds (None: unbounded), beyond which a grid cannot be widened.
_BOUNDS: dict[str, tuple[float, float | None]] = {"theta": (0.0, None), "lambda": (0.0, 1.0),
                                                  "new_word_weight": (0.0, 1.0)}


def grid_search(scores: TokenScores, base: CacheSettings, thetas: Sequence[float] = THETAS,
                lambdas: Sequence[float] = LAMBDAS, new_word_weights: Sequence[float] = (1.0,)) -> np.ndarray:
    """Perplexity at every (new-word weight, θ, λ) with ``base.cache``.  # (len(nww), len(thetas), len(lambdas))"""
    out = np.empty((len(new_word_weights), len(thetas), len(lambdas)))
    models = [model_logprob(scores, dataclasses.replace(base, new_word_weight=w)) for w in new_word_weights]
    for i, th in enumerate(thetas):  # one cache pass per θ; the rest is arithmetic
        lc = cache_logprob(scores, dataclasses.replace(base, theta=th))
        for k, lm in enumerate(models):
            for j, la in enumerate(lambdas):
                out[k, i, j] = perplexity(mix_cache(scores, lm, lc, la)) or np.nan
    return out


def grid_edges(grids: Mapping[str, Sequence[float]], best: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """The hyperparameters whose best value is the smallest or largest of a grid that could go further.

    ``grids`` maps a name of :data:`_BOUNDS` to its sorted values, ``best`` to the chosen one. A
    one-value grid was not tuned; a value at a hard bound (θ = 0, λ = 1, weight = 1) cannot be
    passed. Each edge comes with two values to ``try`` beyond it, a grid step apart (or, near a
    bound, halfway and three quarters of the way to it).
    """
    edges: dict[str, dict[str, Any]] = {}
    for name, values in grids.items():
        lo, hi = _BOUNDS[name]
        v = best[name]
        if len(values) < 2:
            continue
        if v == values[-1] and (hi is None or v < hi):
            side, step, bound = "largest", values[-1] - values[-2], hi
        elif v == values[0] and v > lo:
            side, step, bound = "smallest", values[0] - values[1], lo
        else:
            continue
        more = []
        for n in (1, 2):
            x = v + n * step
            if bound is not None and (x - bound) * step >= 0:  # at or past the bound: approach it instead
                x = v + (bound - v) * (1 - 0.5 ** n)
            more.append(round(x, 4))
        edges[name] = {"side": side, "value": v, "try": sorted(more)}
    return edges


def plot_heatmap(grid: np.ndarray, thetas: Sequence[float], lambdas: Sequence[float], out: Path, title: str,
                 no_cache: float | None = None, best: tuple[int, int] | None = None) -> Path:
    """θ x λ perplexities; with ``no_cache`` the colours are centred on it (blue: better than no cache,
    red: worse), it is in the title and marked on the colour bar. ``best`` (row, column) is outlined."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize, TwoSlopeNorm
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots(figsize=(6.0, 4.8))
    finite = grid[np.isfinite(grid)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if no_cache is not None:
        span = max(hi - lo, abs(no_cache) * 1e-3, 1e-6)
        norm: Normalize = TwoSlopeNorm(vcenter=no_cache, vmin=min(lo, no_cache - span), vmax=max(hi, no_cache + span))
        im = ax.imshow(grid, origin="lower", cmap="RdBu_r", norm=norm, aspect="auto")
        title = f"{title}\nno cache: {no_cache:.1f} (blue: better, red: worse)"
    else:
        im = ax.imshow(grid, origin="lower", cmap="viridis_r", aspect="auto")
    ax.set_xticks(range(len(lambdas)), [f"{x:.3f}" for x in lambdas])
    ax.set_yticks(range(len(thetas)), [f"{x:.2f}" for x in thetas])
    ax.set_xlabel("λ (model weight)")
    ax.set_ylabel("θ (flattening)")
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            r, g, b, _ = im.cmap(im.norm(grid[i, j]))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(j, i, f"{grid[i, j]:.1f}", ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")
    if best is not None:
        ax.add_patch(Rectangle((best[1] - 0.5, best[0] - 0.5), 1, 1, fill=False, edgecolor="gold", linewidth=2.5))
    bar = fig.colorbar(im, ax=ax, label="perplexity" + (" (black line: no cache)" if no_cache is not None else ""))
    if no_cache is not None:
        bar.ax.axhline(no_cache, color="black", linewidth=2)
    ax.set_title(title, fontsize="medium")
    fig.tight_layout()
    try:
        return save_png(fig, out)
    finally:
        plt.close(fig)


def _grid(values: Sequence[float] | None, default: Sequence[float], flag: str,
          check: Callable[[float], None]) -> tuple[float, ...]:
    """Sorted distinct values of a grid, each passing ``check`` (its range)."""
    out = tuple(sorted({float(v) for v in (default if values is None else values)}))
    if not out:
        raise InputError(f"{option(flag)} is empty; give at least one value")
    for v in out:
        try:
            check(v)
        except InputError as exc:
            raise InputError(f"{option(flag)} holds {v:g}: {exc}") from exc
    return out


def _grids(cache: str, thetas: Sequence[float] | None, lambdas: Sequence[float] | None,
           new_word_weights: Sequence[float] | None) -> tuple[tuple[float, ...], ...]:
    """The three grids, sorted and checked (``None``: the seed's), for a cache that can be tuned."""
    if cache not in ("unigram", "neural"):
        raise InputError(f"{option('cache', cache)} cannot be tuned; use unigram or neural")
    return (_grid(thetas, THETAS, "--thetas", lambda v: check_cache_params(theta=v)),
            _grid(lambdas, LAMBDAS, "--lambdas", lambda v: check_cache_params(lam=v)),
            _grid(new_word_weights, NEW_WORD_WEIGHTS, "--new-word-weights",
                  lambda v: check_cache_params(new_word_weight=v)))


def tune_scores(scores: TokenScores, base: CacheSettings, thetas: Sequence[float] | None = None,
                lambdas: Sequence[float] | None = None,
                new_word_weights: Sequence[float] | None = None) -> dict[str, Any]:
    """The grid around ``base`` (its cache, size and uniform weight) on ``scores``, no cache
    included as a candidate, the best, and the grid edges it sits on (JSON-ready)."""
    cache = base.validate().cache
    th, la, nw = _grids(cache, thetas, lambdas, new_word_weights)
    if not scores.compositional:
        nw = (1.0,)  # a lookup model gives new words probability 0: nothing to weight
    if cache == "unigram":
        th = (0.0,)  # θ does not act on the unigram cache
    grid = grid_search(scores, base, th, la, nw)
    # Ties (a weight with no new word to act on, ...) go to the least intervention: the largest
    # new-word weight, then the largest λ, then the smallest θ.
    ties = np.argwhere(grid == np.nanmin(grid))
    k, i, j = (int(x) for x in max(ties.tolist(), key=lambda t: (t[0], t[2], -t[1])))
    no_cache = perplexity(apply_settings(scores, base.plain()))
    best_cached: dict[str, Any] = {"cache": cache, "theta": th[i] if cache == "neural" else None, "lambda": la[j],
                                   "new_word_weight": nw[k] if scores.compositional else None,
                                   "perplexity": float(grid[k, i, j])}
    helps = no_cache is not None and best_cached["perplexity"] < no_cache
    best = best_cached if helps else {"cache": "none", "theta": None, "lambda": None, "new_word_weight": None,
                                      "perplexity": no_cache}
    tried = {"lambda": la} | ({"theta": th} if cache == "neural" else {}) | (
        {"new_word_weight": nw} if scores.compositional else {})
    edges = grid_edges(tried, {"theta": th[i], "lambda": la[j], "new_word_weight": nw[k]})
    if not helps:
        log.warning("no %s cache setting on the grid beats no cache (best %.1f vs %.1f without); evaluate without "
                    "%s", cache, best_cached["perplexity"], no_cache or np.nan, option("cache"))
    for name, e in edges.items():
        flag = option({"theta": "thetas", "lambda": "lambdas", "new_word_weight": "new_word_weights"}[name])
        log.warning("the best %s, %g, is the %s value tried: the optimum may lie beyond the grid; widen it, "
                    "e.g. add %s to %s", name, e["value"], e["side"], ", ".join(f"{x:g}" for x in e["try"]), flag)
    return {
        "cache": cache, "cache_size": base.size, "thetas": list(th), "lambdas": list(la),
        "new_word_weights": list(nw) if scores.compositional else None,
        # θ x λ at the best new-word weight (the heat map); every weight's grid below.
        "perplexity": grid[k].tolist(),
        "perplexity_by_new_word_weight": ({f"{w:g}": grid[n].tolist() for n, w in enumerate(nw)}
                                          if scores.compositional else None),
        # The same model without a cache and without down-weighting: a candidate like the grid's points.
        "perplexity_no_cache": no_cache, "best": best, "best_cached": best_cached, "cache_helps": helps,
        "on_edge": edges, "uniform_weight": None if scores.compositional else base.uniform_weight,
        "evaluate_args": _evaluate_args(best),
    }


@dataclass(frozen=True)
class TuneCacheResult:
    """What :func:`tune_cache` found: the θ x λ (x new-word weight) grid, no cache beside it, the best.

    ``perplexity`` is the θ x λ grid at the best new-word weight (the heat map);
    ``perplexity_by_new_word_weight`` every weight's grid (GroC). ``best`` is no cache when no
    grid point beats it; ``best_cached`` is the best grid point either way; ``on_edge`` names the
    hyperparameters whose best is a grid edge that could go further; ``evaluate_args`` are the
    ``evaluate`` options that apply ``best``.
    """

    run: str
    data: str
    split: str
    lang: str
    languages_left_out: list[str]
    cache: str
    cache_size: int
    thetas: list[float]
    lambdas: list[float]
    new_word_weights: list[float] | None
    perplexity: list[list[float]]
    perplexity_by_new_word_weight: dict[str, list[list[float]]] | None
    perplexity_no_cache: float | None
    best: dict[str, Any]
    best_cached: dict[str, Any]
    cache_helps: bool
    on_edge: dict[str, dict[str, Any]]
    uniform_weight: float | None
    evaluate_args: list[str]
    png: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc tune-cache`` prints (``png`` only when a heat map was written)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.png is None:
            del out["png"]
        return json_safe(out)  # type: ignore[return-value]


@run_access_doc
def tune_cache(
    *,
    run: str | os.PathLike[str],
    data: str | os.PathLike[str],
    split: str = "valid",
    cache: str = "neural",
    cache_size: int = 5000,
    thetas: Sequence[float] | None = None,
    lambdas: Sequence[float] | None = None,
    new_word_weights: Sequence[float] | None = None,
    new_word_weight: float | None = None,
    out: str | os.PathLike[str] | None = None,
    plot: bool = True,
    overwrite: bool = False,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> TuneCacheResult:
    """Grid-search the cache's θ, λ and (GroC) new-word weight on ``data``'s ``split``, against no cache.

    The model runs once over the text (the first language of the run that ``data`` has); each θ
    is one cache pass, every λ and new-word weight after that is arithmetic. Lookup models get
    the uniform weight tuned on the same text first. A heat map of θ x λ at the best new-word
    weight is written to ``out`` (Figure 6).

    Args:
        run: run directory.
        data: corpus root of the target domain (``<lang>/<split>.txt``).
        split: ``valid`` (the seed tunes there) or ``test``.
        cache: ``neural`` or ``unigram`` (θ does not act on the unigram cache).
        cache_size: the cache window (the seed used 5000 when tuning).
        thetas: θ values (default :data:`THETAS`).
        lambdas: λ values, the model's weight (default :data:`LAMBDAS`).
        new_word_weights: GroC's new-word weights (default :data:`NEW_WORD_WEIGHTS`).
        new_word_weight: fix GroC's new-word weight instead of tuning it (not with ``new_word_weights``).
        out: the heat map's PNG path (default ``RUN/tune-cache-CACHE.png``).
        plot: write the heat map (``False``: no file at all).
        overwrite: replace an existing ``out``.
        {run_access}

    Returns:
        A :class:`TuneCacheResult`; its ``to_dict()`` is the JSON ``polyglot-groc tune-cache`` prints.

    Raises:
        InputError: a grid value out of range, both ``new_word_weight`` and ``new_word_weights``,
            an output that exists without ``overwrite`` or is not a ``.png``, a corpus without the
            run's languages; CheckpointError: no such run.
    """
    from polyglot_groc.model.bundle import load_bundle

    check_run_access(checkpoint=checkpoint, device=device, threads=threads)
    if new_word_weight is not None and new_word_weights is not None:
        raise ConfigError(f"give {option('new_word_weight')} (one value) or {option('new_word_weights')} (a grid), not "
                          "both")
    weights = [new_word_weight] if new_word_weight is not None else new_word_weights
    png = None
    if plot:
        png = check_png_path(Path(out) if out is not None else Path(run) / f"tune-cache-{cache}.png")
        check_output(png, overwrite)
    _grids(cache, thetas, lambdas, weights)  # bad input fails before the model runs too
    base = CacheSettings(cache=cache, size=cache_size).validate()
    bundle, _ = load_bundle(Path(run), checkpoint, device)
    texts = load_other_split(bundle, Path(data), split)
    lang, toks = next(iter(texts.items()))
    if len(texts) > 1:
        log.warning("tune-cache tunes on the first language, %s; %s left out", lang, ", ".join(list(texts)[1:]))
    scores = score_tokens(bundle, toks, lang, bundle.cfg.train.bptt)
    if not scores.compositional:
        base = dataclasses.replace(base, uniform_weight=tune_uniform_weight(scores))
    res: dict[str, Any] = {"run": str(run), "data": str(data), "split": split, "lang": lang,
                           "languages_left_out": list(texts)[1:],
                           **tune_scores(scores, base, thetas, lambdas, weights)}
    if png is not None:
        bc = res["best_cached"]
        i, j = res["thetas"].index(bc["theta"] or 0.0), res["lambdas"].index(bc["lambda"])
        nww = f", new-word weight {bc['new_word_weight']:g}" if scores.compositional else ""
        plot_heatmap(np.array(res["perplexity"]), res["thetas"], res["lambdas"], png,
                     f"{bundle.model.kind} + {cache} cache, {split}{nww}", no_cache=res["perplexity_no_cache"],
                     best=(i, j))
        res["png"] = str(png)
    return TuneCacheResult(**res)


def _evaluate_args(best: dict[str, Any]) -> list[str]:
    """The ``evaluate`` options that apply ``best`` (none when no cache is best)."""
    if best["cache"] == "none":
        return []
    args = ["--cache", best["cache"], "--cache-lambda", f"{best['lambda']:g}"]
    if best["theta"] is not None:
        args += ["--cache-theta", f"{best['theta']:g}"]
    if best["new_word_weight"] is not None and best["new_word_weight"] < 1.0:
        args += ["--new-word-weight", f"{best['new_word_weight']:g}"]
    return args
