"""``vecmap-self-learning``: VecMap's robust self-learning from a seed dictionary, its ``--identical`` and
``--semi_supervised`` recipes (Artetxe, Labaka, Agirre 2018, ACL), from any start that gives pairs
(``--dictionary-mode identical|lexicon``, a small ``--train-dict``); judged by restarts.

The maths is :mod:`eval.unsup.selflearn`; this module declares the loop's knobs
(:class:`SelfLearningConfig`, ``--vecmap-*`` flags; VecMap's final step nests
:class:`~eval.methods.vecmap.VecmapConfig`, whose flags it shares with ``--method vecmap``) and registers
the method. :mod:`eval.methods.vecmap_unsupervised` runs the same loop from no dictionary.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from eval.methods.judging import VerdictConfig, fit_judged, verdict_differences
from eval.methods.registry import FitContext, MethodConfig, Plan, check_fields, knob, register_method
from eval.methods.vecmap import VecmapConfig
from eval.methods.vecmap import _differences as _final_differences
from groc_base.checks import option
from groc_base.errors import ConfigError, InputError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["DIRECTIONS", "FINAL_MAPS", "VECMAP_CUTOFF", "VECMAP_UNSUPERVISED_VOCAB", "Direction", "FinalMap",
           "SelfLearningConfig", "SemiSupervisedConfig", "final_map", "loop_differences"]

Direction = Literal["forward", "backward", "union"]
DIRECTIONS: tuple[str, ...] = typing.get_args(Direction)
FinalMap = Literal["vecmap", "orthogonal"]
FINAL_MAPS: tuple[str, ...] = typing.get_args(FinalMap)
#: VecMap's --vocabulary_cutoff and --unsupervised_vocab of its recommended recipes.
VECMAP_CUTOFF = 20_000
VECMAP_UNSUPERVISED_VOCAB = 4_000
#: What every self-learning call does differently from VecMap's code, whatever its settings (why: eval.unsup.selflearn).
ALWAYS = ("two similarity passes per self-learning iteration and one dropout mask for both directions (VecMap: four "
          "passes, one mask per direction); the same distribution of dictionaries, not VecMap's random stream")


@dataclass(frozen=True)
class SelfLearningConfig(MethodConfig):
    """VecMap's self-learning settings (its ``--unsupervised`` / ``--identical`` / ``--semi_supervised``
    defaults); ranges checked once, on the fields."""

    knob_prefix: ClassVar[str] = "vecmap"

    vocabulary_cutoff: int | None = knob(
        None, check="positive_int", show_default="VecMap's 20000, clipped to the vocabularies",
        help="self-learning reads the top N words of each side (VecMap's --vocabulary_cutoff); above a "
             "vocabulary: refused")
    csls_k: int = knob(10, check="non_negative_int", help="CSLS neighbours of dictionary induction (0: nearest "
                                                          "neighbour; VecMap's --csls)")
    direction: Direction = knob("union", help="dictionary induction: forward | backward | union (VecMap's --direction)")
    threshold: float = knob(1e-6, check="unit", help="objective gain that counts as progress (VecMap's --threshold)")
    stochastic_initial: float = knob(0.1, check="unit", help="first keep probability of stochastic induction "
                                                             "(VecMap's --stochastic_initial)")
    stochastic_multiplier: float = knob(2.0, check="positive", help="keep probability's factor after a stall "
                                                                    "(VecMap's --stochastic_multiplier)")
    stochastic_interval: int = knob(50, check="positive_int", help="iterations without progress that make a stall "
                                                                   "(VecMap's --stochastic_interval; fewer: shorter)")
    max_iterations: int | None = knob(None, check="positive_int", show_default="none, as VecMap",
                                      help="stop self-learning after N iterations")
    final_map: FinalMap | None = knob(
        None, show_default="vecmap; orthogonal with align-many",
        help="the map fitted on the last dictionary: vecmap (whiten, orthogonal map, re-weight, de-whiten: both "
             "spaces move) | orthogonal (the source alone, onto the target: align-many's pivot stays)")
    #: The normalisation :mod:`eval.unsup` applies to raw arrays (align normalises first: ``--normalize``).
    normalize: tuple[str, ...] = ("renorm", "center", "renorm")
    final: VecmapConfig = field(default_factory=VecmapConfig)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.vocabulary_cutoff is not None and self.vocabulary_cutoff < 2:
            raise ConfigError(f"vocabulary_cutoff={self.vocabulary_cutoff}; pass an integer >= 2 (the top words "
                              "self-learning reads), or None for VecMap's 20000")
        if self.stochastic_initial <= 0:
            raise ConfigError(f"stochastic_initial={self.stochastic_initial}; pass a keep probability in (0, 1]")
        if self.stochastic_multiplier <= 1:
            raise ConfigError(f"stochastic_multiplier={self.stochastic_multiplier}; pass a number > 1 "
                              "(VecMap: 2)")
        if self.final_map == "orthogonal" and self.final != VecmapConfig():
            raise ConfigError("final_map='orthogonal' fits no VecMap final step; drop the vecmap whiten/re-weight/"
                              "de-whiten settings or pass final_map='vecmap'")
        from eval.normalize import parse_normalize  # numpy: at construction, not at import

        try:
            object.__setattr__(self, "normalize", parse_normalize(self.normalize))
        except InputError as exc:
            raise ConfigError(str(exc)) from None


@dataclass(frozen=True)
class SemiSupervisedConfig(MethodConfig):
    """``vecmap-self-learning``: the loop from a seed dictionary, and the verdict's restarts."""

    self_learning: SelfLearningConfig = field(default_factory=SelfLearningConfig)
    verdict: VerdictConfig = field(default_factory=VerdictConfig)


def final_map(cfg: SelfLearningConfig, keep_target: bool) -> str:
    """The final map a call fits: the config's, else VecMap's, or an orthogonal one where the target must stay."""
    return cfg.final_map or ("orthogonal" if keep_target else "vecmap")


def loop_differences(cfg: SelfLearningConfig, context: FitContext) -> list[str]:
    """How a self-learning call differs from VecMap's code, in words (the reading, the loop, the final map)."""
    ref = SelfLearningConfig()
    diffs = [ALWAYS]
    if final_map(cfg, context.keep_target) == "orthogonal":
        diffs.append("the final map is orthogonal, the source onto the unmoved target (VecMap: whiten, orthogonal "
                     f"map, re-weight, de-whiten, both sides move; {option('vecmap_final_map', 'vecmap')} in align)")
    diffs += _final_differences(cfg.final, context)
    if cfg.vocabulary_cutoff is not None and cfg.vocabulary_cutoff != VECMAP_CUTOFF:
        diffs.append(f"self-learning over the top {cfg.vocabulary_cutoff} words (VecMap: {VECMAP_CUTOFF})")
    for name in ("csls_k", "direction", "threshold", "stochastic_initial", "stochastic_multiplier",
                 "stochastic_interval"):
        if getattr(cfg, name) != getattr(ref, name):
            diffs.append(f"{name} {getattr(cfg, name)} (VecMap: {getattr(ref, name)})")
    if cfg.max_iterations is not None:
        diffs.append(f"at most {cfg.max_iterations} self-learning iterations (VecMap: no cap)")
    return diffs


def _check(cfg: SemiSupervisedConfig, plan: Plan) -> None:
    check_pivot(cfg.self_learning, plan)


def check_pivot(cfg: SelfLearningConfig, plan: Plan) -> None:
    """align-many's pivot must stay: VecMap's final step (both sides move) is refused there."""
    if plan.pivot and (cfg.final_map == "vecmap" or cfg.final != VecmapConfig()):
        raise InputError(f"VecMap's final step moves the pivot, so languages cannot share it; drop "
                         f"{option('vecmap_final_map')} and the {option('vecmap_whiten')}/re-weight/de-whiten options "
                         "(align-many maps each language by an orthogonal map)")


@register_method(
    "vecmap-self-learning", config=SemiSupervisedConfig,
    summary="VecMap's --identical/--semi_supervised: robust self-learning from any seed, judged by restarts",
    recipe=("VecMap map_embeddings.py --identical / --semi_supervised DICT: normalise unit, center, unit; from the "
            "seed, self-learning over the top 20000 words: orthogonal map, CSLS (k=10) union dictionary with "
            "stochastic induction (keep probability 0.1, doubled after 50 iterations without an objective gain of "
            "1e-6); final map from the last dictionary on the whole vocabulary: whiten, orthogonal map, re-weight "
            "by S^0.5, de-whiten each side with its own whitening"),
    normalize=("renorm", "center", "renorm"), moves_target=True, judges=True, check=_check,
    keeps_pivot=lambda cfg: final_map(cfg.self_learning, True) == "orthogonal",
    differences=lambda cfg, ctx: loop_differences(cfg.self_learning, ctx) + verdict_differences(cfg.verdict),
    selection=lambda cfg: "the last self-learning iteration's dictionary (VecMap's rule)")
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    assert pairs is not None
    return fit_judged("vecmap-self-learning", src, tgt, pairs, config.self_learning, config.verdict, context)

