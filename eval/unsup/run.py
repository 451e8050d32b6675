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

from eval.methods.registry import FitContext, get_method
from eval.methods.registry import recipe as method_recipe
from eval.methods.vecmap_self_learning import SemiSupervisedConfig
from eval.unsup.adversarial import AdversarialConfig, muse_adversarial
from eval.unsup.common import CSLS_K, MapResult
from eval.unsup.selflearn import SelfLearningConfig, UnsupervisedConfig, vecmap_self_learning, vecmap_unsupervised
from eval.unsup.verdict import Verdict, VerdictConfig, alignment_verdict
from eval.unsup.wasserstein import WassersteinConfig, wasserstein_procrustes
from groc_base.errors import ArgumentTypeError, InputError

logger = logging.getLogger(__name__)

__all__ = ["REFERENCE_RECIPES", "UNSUPERVISED_METHODS", "UnsupervisedFit", "fit_unsupervised", "recipe"]

UnsupervisedMethod = Literal["vecmap-unsupervised", "vecmap-self-learning", "muse-adversarial",
                             "wasserstein-procrustes"]
AnyConfig = UnsupervisedConfig | SelfLearningConfig | AdversarialConfig | WassersteinConfig
#: Each method's config class: the one list of the methods these functions run.
_CONFIGS: dict[str, type] = {"vecmap-unsupervised": UnsupervisedConfig, "vecmap-self-learning": SelfLearningConfig,
                             "muse-adversarial": AdversarialConfig, "wasserstein-procrustes": WassersteinConfig}
UNSUPERVISED_METHODS: tuple[str, ...] = tuple(_CONFIGS)

#: What each reference runs, in words (the registered methods' recipes: :mod:`eval.methods`).
REFERENCE_RECIPES: dict[str, str] = {name: get_method(name).recipe for name in UNSUPERVISED_METHODS}


def recipe(method: str, config: AnyConfig | None = None) -> dict[str, Any]:
    """``{"recipe": what the reference runs, "differences": [how a call with ``config`` differs]}`` for these
    functions on arrays (:func:`eval.methods.recipe` of the registered method, nothing read from files)."""
    if method not in UNSUPERVISED_METHODS:
        raise InputError(f"unknown unsupervised method {method!r}; use one of {', '.join(UNSUPERVISED_METHODS)}")
    cfg: Any = config or _CONFIGS[method]()
    ops = cfg.self_learning.normalize if isinstance(cfg, UnsupervisedConfig) else cfg.normalize
    if isinstance(cfg, SelfLearningConfig):
        cfg = SemiSupervisedConfig(self_learning=cfg)
    return method_recipe(method, cfg, ops, FitContext(lowercase=False, max_vocab=None))


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


def _run(method: str, x: np.ndarray, z: np.ndarray, cfg: Any, seed: int | None, seed_pairs: np.ndarray | None,
         normalized: tuple[str, ...] | None, keep_target: bool) -> MapResult:
    if method == "vecmap-unsupervised":
        return vecmap_unsupervised(x, z, cfg, seed=seed, normalized=normalized, keep_target=keep_target)
    if method == "vecmap-self-learning":
        assert seed_pairs is not None
        return vecmap_self_learning(x, z, seed_pairs, cfg, seed=seed, normalized=normalized, keep_target=keep_target)
    if method == "wasserstein-procrustes":
        return wasserstein_procrustes(x, z, cfg, seed=seed, normalized=normalized)
    return muse_adversarial(x, z, cfg, seed=seed, normalized=normalized)


def _restart(method: str, main: MapResult, cfg: Any, seed_pairs: np.ndarray | None, verdict: VerdictConfig,
             index: int, seed: int) -> tuple[Any, np.ndarray | None]:
    """Restart ``index``'s config and seed pairs: VecMap's (or the convex) start over fewer words, or a
    random share of the seed dictionary, or (MUSE) only another seed; ``restart_cutoff`` caps self-learning."""
    if method == "muse-adversarial":
        return cfg, None
    if method == "wasserstein-procrustes":  # the convex start is deterministic: over fewer words, as VecMap's
        factor = verdict.init_vocab_factors[index % len(verdict.init_vocab_factors)]
        return dataclasses.replace(cfg, init_words=max(2, round(int(main.config["init_words"]) * factor))), None
    sl = cfg.self_learning if isinstance(cfg, UnsupervisedConfig) else cfg
    if verdict.restart_cutoff is not None:
        sl = dataclasses.replace(sl, vocabulary_cutoff=min(verdict.restart_cutoff, *main.config["cutoff_words"]))
    if isinstance(cfg, UnsupervisedConfig):
        factor = verdict.init_vocab_factors[index % len(verdict.init_vocab_factors)]
        words = max(2 * CSLS_K + 1, round(int(main.config["unsupervised_vocab"]) * factor))
        return dataclasses.replace(cfg, unsupervised_vocab=words, self_learning=sl), None
    assert seed_pairs is not None
    rng = np.random.default_rng(seed)
    size = max(1, round(verdict.seed_fraction * seed_pairs.shape[0]))
    return sl, seed_pairs[np.sort(rng.permutation(seed_pairs.shape[0])[:size])]


def fit_unsupervised(x: np.ndarray, z: np.ndarray, *, method: UnsupervisedMethod = "vecmap-unsupervised",
                     config: AnyConfig | None = None, seed_pairs: np.ndarray | None = None, seed: int = 0,
                     verdict: VerdictConfig | None = None, main: MapResult | None = None,
                     normalized: tuple[str, ...] | None = None, keep_target: bool = False) -> UnsupervisedFit:
    """Fit ``method`` on the raw spaces ``x`` ``(n_x, d)`` and ``z`` ``(n_z, d)``, restart it
    ``verdict.restarts`` times (seeds ``seed + 1``, ...) and judge it.

    ``method``: ``vecmap-unsupervised`` (no dictionary), ``vecmap-self-learning`` (from
    ``seed_pairs`` ``(n, 2)``: identical words, a lexicon or a small dictionary) or
    ``muse-adversarial`` or ``wasserstein-procrustes``; ``config`` the method's config (None: the reference's defaults).
    The restarts cost as much as the fit each; their summaries are in the result.  ``main``: the
    fit of these arguments made already (say in another process): only the restarts and the verdict run.
    ``verdict`` None: the config's own (``UnsupervisedConfig.verdict``, ``AdversarialConfig.verdict``, ...), else
    the defaults. ``normalized`` and ``keep_target``: as :func:`~eval.unsup.vecmap_unsupervised`'s (the
    spaces normalised by the caller; the target left in place).
    """
    if method not in UNSUPERVISED_METHODS:
        raise InputError(f"unknown unsupervised method {method!r}; use one of {', '.join(UNSUPERVISED_METHODS)}")
    cfg: AnyConfig = config if config is not None else _CONFIGS[method]()
    if not isinstance(cfg, _CONFIGS[method]):
        raise ArgumentTypeError(f"config is a {type(cfg).__name__}; {method} takes a {_CONFIGS[method].__name__}")
    if (seed_pairs is None) == (method == "vecmap-self-learning"):
        raise InputError("seed_pairs start vecmap-self-learning and only it; pass seed_pairs with "
                         "method='vecmap-self-learning', or drop them for an unsupervised start")
    vcfg = verdict or getattr(cfg, "verdict", None) or VerdictConfig()
    if main is None:
        main = _run(method, x, z, cfg, seed, seed_pairs, normalized, keep_target)
    elif main.seed != seed:
        raise InputError(f"main was fitted with seed {main.seed} but seed={seed}; pass the seed it was fitted with "
                         "(the restarts use seed + 1, ...)")
    restarts = []
    for index in range(vcfg.restarts):
        r_seed = seed + 1 + index
        r_cfg, r_pairs = _restart(method, main, cfg, seed_pairs, vcfg, index, r_seed)
        restarts.append(_run(method, x, z, r_cfg, r_seed, r_pairs, normalized, keep_target))
    result = alignment_verdict(x, z, main, restarts, vcfg)
    logger.info("%s: %s (%s)", method, result.status, result.reason)
    return UnsupervisedFit(result=main, verdict=result, restarts=tuple(restarts), reference=recipe(method, cfg))
