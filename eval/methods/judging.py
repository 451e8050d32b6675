"""What the methods that judge their own map share: the verdict's config and the fit that runs a judged method.

The methods registered in :mod:`eval.methods.vecmap_unsupervised`, :mod:`eval.methods.vecmap_self_learning`
and :mod:`eval.methods.muse_adversarial` are :mod:`eval.unsup`'s; each config nests a
:class:`VerdictConfig` (``--verdict-*`` flags), and :func:`fit_judged` runs the method, its restarts and the
verdict (:func:`eval.unsup.fit_unsupervised`) and returns the map as an
:class:`~eval.align.AlignmentResult` whose ``verdict`` the result JSON keeps.

Numpy-free at import, as every module of :mod:`eval.methods` (the command line reads the configs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from eval.methods.registry import FitContext, MethodConfig, casing_difference, check_fields, knob
from groc_base.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["CRITERION_NAME", "CRITERION_WORDS", "VerdictConfig", "fit_judged", "script_differences",
           "verdict_differences"]

#: The criterion every judged result reports beside its verdict (MUSE's ``mean_cosine-csls_knn_10-S2T-10000``).
CRITERION_NAME = "mean CSLS cosine (MUSE's criterion)"
#: The top source words that criterion reads (the ``10000`` of MUSE's name for it).
CRITERION_WORDS = 10_000


@dataclass(frozen=True)
class VerdictConfig(MethodConfig):
    """How many restarts, which words they are compared on, and the thresholds (:mod:`eval.unsup.verdict`)."""

    knob_prefix: ClassVar[str] = "verdict"

    restarts: int = knob(2, check="positive_int", help="restarts from perturbed starts the verdict compares the "
                                                       "map with (each costs what the fit costs)")
    check_words: int = knob(2000, check="positive_int", help="top source words whose translations are compared")
    aligned_agreement: float = knob(0.5, check="unit", help="agreement from which the map is 'aligned'")
    failed_agreement: float = knob(0.25, check="unit", help="agreement below which the map 'failed'")
    #: VecMap unsupervised restarts: the start over these shares of the main run's ``unsupervised_vocab``
    #: (restart i takes share i, cycling).
    init_vocab_factors: tuple[float, ...] = (0.75, 0.5)
    #: Seeded self-learning restarts: a random share of the seed dictionary.
    seed_fraction: float = knob(0.5, check="unit", help="share of the seed dictionary a self-learning restart "
                                                        "starts from")
    restart_cutoff: int | None = knob(None, check="positive_int", show_default="the fit's",
                                      help="self-learning words of each restart (fewer: cheaper, a weaker test)")

    def __post_init__(self) -> None:
        check_fields(self)
        if self.failed_agreement > self.aligned_agreement:
            raise ConfigError(f"failed_agreement={self.failed_agreement} is above aligned_agreement="
                              f"{self.aligned_agreement}; pass failed_agreement <= aligned_agreement")
        factors = tuple(self.init_vocab_factors)
        if not factors or any(not 0.0 < f <= 1.0 for f in factors):
            raise ConfigError(f"init_vocab_factors={factors!r}; pass shares in (0, 1], e.g. (0.75, 0.5)")
        object.__setattr__(self, "init_vocab_factors", factors)
        if self.seed_fraction <= 0.0:
            raise ConfigError(f"seed_fraction={self.seed_fraction}; pass a share in (0, 1]")
        if self.restart_cutoff is not None and self.restart_cutoff < 21:
            raise ConfigError(f"restart_cutoff={self.restart_cutoff}; pass at least 21 (more words than CSLS "
                              "neighbours), or None for the fit's")


def verdict_differences(config: VerdictConfig) -> list[str]:
    """How the verdict's settings differ from their defaults, in words (no reference has a verdict)."""
    ref = VerdictConfig()
    return [f"verdict {f.name} {getattr(config, f.name)} (default {getattr(ref, f.name)})"
            for f in dataclasses.fields(config) if getattr(config, f.name) != getattr(ref, f.name)]


def script_differences(config: Any, context: FitContext, *, reference: str, lowercases: bool,
                       always: list[str]) -> list[str]:
    """How a call of a judged method differs from its reference script (MUSE's, fastText's: each reads the
    first 200,000 words): what ours ``always`` does otherwise, each config field away from the config
    class's defaults (the reference's; ``normalize`` and ``verdict`` aside), the casing, the words read,
    and the verdict's settings."""
    ref = type(config)()
    diffs = list(always) + [f"{f.name} {getattr(config, f.name)} ({reference}: {getattr(ref, f.name)})"
                            for f in dataclasses.fields(config) if f.name not in ("normalize", "verdict")
                            and getattr(config, f.name) != getattr(ref, f.name)]
    diffs += casing_difference(context, reference_lowercases=lowercases)
    if context.max_vocab != 200_000:
        diffs.append(f"{context.max_vocab or 'every'} words per side read ({reference}: 200000)")
    return diffs + verdict_differences(config.verdict)


def fit_judged(method: str, src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
               verdict: VerdictConfig, context: FitContext) -> AlignmentResult:
    """``method`` of :mod:`eval.unsup` with its ``config`` on the spaces as normalised by the call
    (``context.normalize``), its restarts and the ``verdict``, seeded by ``context.seed``; the map as an
    AlignmentResult with the verdict."""
    from eval.unsup.run import fit_unsupervised

    fit = fit_unsupervised(src, tgt, method=method, config=config, seed_pairs=pairs,  # type: ignore[arg-type]
                           seed=context.seed, verdict=verdict, normalized=context.normalize,
                           keep_target=context.keep_target)
    res = fit.result.alignment()
    said: dict[str, Any] = {"status": fit.verdict.status, "reason": fit.verdict.reason,
                            "criterion": {"name": CRITERION_NAME, "value": fit.result.criterion},
                            "evidence": {**fit.verdict.evidence, "seed": context.seed,
                                         "restart_seeds": [r.seed for r in fit.restarts]}}
    return dataclasses.replace(res, verdict=said)
