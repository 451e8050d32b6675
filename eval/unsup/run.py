"""One entry point: fit an unsupervised (or self-learned) map, its restarts and its verdict.

:func:`fit_unsupervised` runs ``method`` (:data:`UNSUPERVISED_METHODS`), then
``VerdictConfig.restarts`` runs of the same method from perturbed starts, and
:func:`~eval.unsup.verdict.alignment_verdict` on them.  :func:`recipe` says in words what each
method's reference runs and how a call differs, as :func:`eval.methods.recipe` does for the
supervised methods.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from eval.unsup.adversarial import AdversarialConfig, muse_adversarial
from eval.unsup.common import CSLS_K, MapResult
from eval.unsup.selflearn import (
    VECMAP_CUTOFF,
    VECMAP_UNSUPERVISED_VOCAB,
    SelfLearningConfig,
    UnsupervisedConfig,
    vecmap_self_learning,
    vecmap_unsupervised,
)
from eval.unsup.verdict import Verdict, VerdictConfig, alignment_verdict
from groc_base.errors import ArgumentTypeError, InputError

logger = logging.getLogger(__name__)

__all__ = ["REFERENCE_RECIPES", "UNSUPERVISED_METHODS", "UnsupervisedFit", "fit_unsupervised", "recipe"]

UnsupervisedMethod = Literal["vecmap-unsupervised", "vecmap-self-learning", "muse-adversarial"]
UNSUPERVISED_METHODS: tuple[str, ...] = ("vecmap-unsupervised", "vecmap-self-learning", "muse-adversarial")
AnyConfig = UnsupervisedConfig | SelfLearningConfig | AdversarialConfig
_CONFIGS: dict[str, type] = {"vecmap-unsupervised": UnsupervisedConfig, "vecmap-self-learning": SelfLearningConfig,
                             "muse-adversarial": AdversarialConfig}

#: What each reference runs, in words.
REFERENCE_RECIPES: dict[str, str] = {
    "vecmap-unsupervised": (
        "VecMap map_embeddings.py --unsupervised: normalise unit, center, unit; start from the CSLS matches of the "
        "sorted similarity distributions of the top 4000 words (both directions); self-learning over the top 20000 "
        "words: orthogonal map, CSLS (k=10) union dictionary with stochastic induction (keep probability 0.1, "
        "doubled after 50 iterations without an objective gain of 1e-6); final map from the last dictionary on the "
        "whole vocabulary: whiten, orthogonal map, re-weight by S^0.5, de-whiten each side with its own whitening"),
    "vecmap-self-learning": (
        "VecMap map_embeddings.py --identical / --semi_supervised DICT: the same self-learning and final map as "
        "--unsupervised, started from the identical words or the seed dictionary"),
    "muse-adversarial": (
        "MUSE unsupervised.py: no normalisation; a linear map (identity start) against a discriminator (2 x 2048 "
        "units, input dropout 0.1, smoothing 0.1) on the 75000 most frequent words, SGD lr 0.1, batches of 32, "
        "5 discriminator steps per map step, orthogonalisation beta 0.001, 5 epochs of 1000000 words, lr decay "
        "0.98 and shrink 0.5; then 5 Procrustes refinements on S2T CSLS dictionaries of the top 15000 words; the "
        "map with the best mean-cosine CSLS criterion (top 10000 words) over both phases"),
}

#: Differences every call has, whatever its settings (the modules' texts say why).
_ALWAYS: dict[str, tuple[str, ...]] = {
    "vecmap-unsupervised": (
        "two similarity passes per self-learning iteration and one dropout mask for both directions (VecMap: four "
        "passes, one mask per direction); the same distribution of dictionaries, not VecMap's random stream",),
    "vecmap-self-learning": (
        "two similarity passes per self-learning iteration and one dropout mask for both directions (VecMap: four "
        "passes, one mask per direction); the same distribution of dictionaries, not VecMap's random stream",),
    "muse-adversarial": ("one seeded torch generator on the CPU (MUSE: unseeded by default, on a GPU)",),
}


def _self_learning_differences(cfg: SelfLearningConfig) -> list[str]:
    ref, diffs = SelfLearningConfig(), []
    if cfg.vocabulary_cutoff is not None and cfg.vocabulary_cutoff != VECMAP_CUTOFF:
        diffs.append(f"self-learning over the top {cfg.vocabulary_cutoff} words (VecMap: {VECMAP_CUTOFF})")
    for name in ("csls_k", "direction", "threshold", "stochastic_initial", "stochastic_multiplier",
                 "stochastic_interval"):
        if getattr(cfg, name) != getattr(ref, name):
            diffs.append(f"{name} {getattr(cfg, name)} (VecMap: {getattr(ref, name)})")
    if cfg.max_iterations is not None:
        diffs.append(f"at most {cfg.max_iterations} self-learning iterations (VecMap: no cap)")
    if cfg.normalize != ref.normalize:
        diffs.append(f"normalisation {','.join(cfg.normalize) or 'none'} (VecMap: unit, center, unit)")
    if cfg.final != ref.final:
        diffs.append(f"final map {cfg.final} (VecMap: {ref.final})")
    return diffs


def recipe(method: str, config: AnyConfig | None = None) -> dict[str, Any]:
    """``{"recipe": what the reference runs, "differences": [how a call with ``config`` differs]}``."""
    if method not in UNSUPERVISED_METHODS:
        raise InputError(f"unknown unsupervised method {method!r}; use one of {', '.join(UNSUPERVISED_METHODS)}")
    cfg = config or _CONFIGS[method]()
    diffs = list(_ALWAYS[method])
    if isinstance(cfg, UnsupervisedConfig):
        if cfg.unsupervised_vocab is not None and cfg.unsupervised_vocab != VECMAP_UNSUPERVISED_VOCAB:
            diffs.append(f"the start compares the top {cfg.unsupervised_vocab} words "
                         f"(VecMap: {VECMAP_UNSUPERVISED_VOCAB})")
        diffs += _self_learning_differences(cfg.self_learning)
    elif isinstance(cfg, SelfLearningConfig):
        diffs += _self_learning_differences(cfg)
    else:
        ref = AdversarialConfig()
        for f in dataclasses.fields(AdversarialConfig):
            if f.name != "normalize" and getattr(cfg, f.name) != getattr(ref, f.name):
                diffs.append(f"{f.name} {getattr(cfg, f.name)} (MUSE: {getattr(ref, f.name)})")
        if cfg.normalize != ref.normalize:
            diffs.append(f"normalisation {','.join(cfg.normalize)} (MUSE: none)")
    return {"recipe": REFERENCE_RECIPES[method], "differences": diffs}


@dataclass(frozen=True)
class UnsupervisedFit:
    """The map (``result``), the ``restarts`` its ``verdict`` compared it with, and the recipe."""

    result: MapResult
    verdict: Verdict
    restarts: tuple[MapResult, ...]
    reference: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the result's summary, the verdict, the restarts' summaries, the reference."""
        return {"result": self.result.summary(), "verdict": self.verdict.to_dict(),
                "restarts": [r.summary() for r in self.restarts], "reference": self.reference}


def _run(method: str, x: np.ndarray, z: np.ndarray, cfg: Any, seed: int | None,
         seed_pairs: np.ndarray | None) -> MapResult:
    if method == "vecmap-unsupervised":
        return vecmap_unsupervised(x, z, cfg, seed=seed)
    if method == "vecmap-self-learning":
        assert seed_pairs is not None
        return vecmap_self_learning(x, z, seed_pairs, cfg, seed=seed)
    return muse_adversarial(x, z, cfg, seed=seed)


def _restart(method: str, main: MapResult, cfg: Any, seed_pairs: np.ndarray | None, verdict: VerdictConfig,
             index: int, seed: int) -> tuple[Any, np.ndarray | None]:
    """Restart ``index``'s config and seed pairs: VecMap's start over fewer words, or a random share
    of the seed dictionary, or (MUSE) only another seed; ``restart_cutoff`` caps self-learning."""
    if method == "muse-adversarial":
        return cfg, None
    sl = cfg.self_learning if isinstance(cfg, UnsupervisedConfig) else cfg
    if verdict.restart_cutoff is not None:
        sl = dataclasses.replace(sl, vocabulary_cutoff=min(verdict.restart_cutoff, *main.config["cutoff_words"]))
    if isinstance(cfg, UnsupervisedConfig):
        words = max(2 * CSLS_K + 1, round(int(main.config["unsupervised_vocab"]) * verdict.init_vocab_factors[index]))
        return dataclasses.replace(cfg, unsupervised_vocab=words, self_learning=sl), None
    assert seed_pairs is not None
    rng = np.random.default_rng(seed)
    size = max(1, round(verdict.seed_fraction * seed_pairs.shape[0]))
    return sl, seed_pairs[np.sort(rng.permutation(seed_pairs.shape[0])[:size])]


def fit_unsupervised(x: np.ndarray, z: np.ndarray, *, method: UnsupervisedMethod = "vecmap-unsupervised",
                     config: AnyConfig | None = None, seed_pairs: np.ndarray | None = None, seed: int = 0,
                     verdict: VerdictConfig | None = None, main: MapResult | None = None) -> UnsupervisedFit:
    """Fit ``method`` on the raw spaces ``x`` ``(n_x, d)`` and ``z`` ``(n_z, d)``, restart it
    ``verdict.restarts`` times (seeds ``seed + 1``, ...) and judge it.

    ``method``: ``vecmap-unsupervised`` (no dictionary), ``vecmap-self-learning`` (from
    ``seed_pairs`` ``(n, 2)``: identical words, a lexicon or a small dictionary) or
    ``muse-adversarial``; ``config`` the method's config (None: the reference's defaults).
    The restarts cost as much as the fit each; their summaries are in the result.  ``main``: the
    fit of these arguments made already (say in another process): only the restarts and the verdict run.
    """
    if method not in UNSUPERVISED_METHODS:
        raise InputError(f"unknown unsupervised method {method!r}; use one of {', '.join(UNSUPERVISED_METHODS)}")
    cfg: AnyConfig = config if config is not None else _CONFIGS[method]()
    if not isinstance(cfg, _CONFIGS[method]):
        raise ArgumentTypeError(f"config is a {type(cfg).__name__}; {method} takes a {_CONFIGS[method].__name__}")
    if (seed_pairs is None) == (method == "vecmap-self-learning"):
        raise InputError("seed_pairs start vecmap-self-learning and only it; pass seed_pairs with "
                         "method='vecmap-self-learning', or drop them for an unsupervised start")
    vcfg = verdict or VerdictConfig()
    if main is None:
        main = _run(method, x, z, cfg, seed, seed_pairs)
    elif main.seed != seed:
        raise InputError(f"main was fitted with seed {main.seed} but seed={seed}; pass the seed it was fitted with "
                         "(the restarts use seed + 1, ...)")
    restarts = []
    for index in range(vcfg.restarts):
        r_seed = seed + 1 + index
        r_cfg, r_pairs = _restart(method, main, cfg, seed_pairs, vcfg, index, r_seed)
        restarts.append(_run(method, x, z, r_cfg, r_seed, r_pairs))
    result = alignment_verdict(x, z, main, restarts, vcfg)
    logger.info("%s: %s (%s)", method, result.status, result.reason)
    return UnsupervisedFit(result=main, verdict=result, restarts=tuple(restarts), reference=recipe(method, cfg))
