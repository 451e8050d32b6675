"""``vecmap-unsupervised``: VecMap's ``map_embeddings.py --unsupervised`` (Artetxe, Labaka, Agirre 2018, ACL),
the method of ``--dictionary-mode unsupervised``: no dictionary at all; judged by restarts.

The maths is :mod:`eval.unsup.selflearn` (the start from the sorted similarity distributions, then
:mod:`eval.methods.vecmap_self_learning`'s loop); this module declares the start's knob and registers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from eval.methods.judging import VerdictConfig, fit_judged, verdict_differences
from eval.methods.registry import FitContext, MethodConfig, Plan, check_fields, knob, register_method
from eval.methods.vecmap_self_learning import (
    VECMAP_UNSUPERVISED_VOCAB,
    SelfLearningConfig,
    check_pivot,
    final_map,
    loop_differences,
)
from groc_base.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["UnsupervisedConfig"]


@dataclass(frozen=True)
class UnsupervisedConfig(MethodConfig):
    """VecMap's ``--unsupervised``: the similarity-distribution start over the top ``unsupervised_vocab``
    words (None: 4,000 clipped to the vocabularies), then self-learning, then the verdict's restarts."""

    knob_prefix: ClassVar[str] = "vecmap"

    unsupervised_vocab: int | None = knob(
        None, check="positive_int", show_default="VecMap's 4000, clipped to the vocabularies",
        help="the start compares the top N words' similarity distributions (VecMap's --unsupervised_vocab)")
    self_learning: SelfLearningConfig = field(default_factory=SelfLearningConfig)
    verdict: VerdictConfig = field(default_factory=VerdictConfig)

    def __post_init__(self) -> None:
        check_fields(self)
        if self.unsupervised_vocab is not None and self.unsupervised_vocab < 2:
            raise ConfigError(f"unsupervised_vocab={self.unsupervised_vocab}; pass an integer >= 2 (the top words "
                              "the start compares), or None for VecMap's 4000")


def _differences(cfg: UnsupervisedConfig, context: FitContext) -> list[str]:
    diffs = loop_differences(cfg.self_learning, context)
    if cfg.unsupervised_vocab is not None and cfg.unsupervised_vocab != VECMAP_UNSUPERVISED_VOCAB:
        diffs.append(f"the start compares the top {cfg.unsupervised_vocab} words (VecMap: {VECMAP_UNSUPERVISED_VOCAB})")
    return diffs + verdict_differences(cfg.verdict)


def _check(cfg: UnsupervisedConfig, plan: Plan) -> None:
    check_pivot(cfg.self_learning, plan)


@register_method(
    "vecmap-unsupervised", config=UnsupervisedConfig,
    summary="VecMap's --unsupervised: no dictionary, similarity-distribution start, robust self-learning, judged",
    recipe=("VecMap map_embeddings.py --unsupervised: normalise unit, center, unit; start from the CSLS matches of "
            "the sorted similarity distributions of the top 4000 words (both directions); self-learning over the "
            "top 20000 words: orthogonal map, CSLS (k=10) union dictionary with stochastic induction (keep "
            "probability 0.1, doubled after 50 iterations without an objective gain of 1e-6); final map from the "
            "last dictionary on the whole vocabulary: whiten, orthogonal map, re-weight by S^0.5, de-whiten each "
            "side with its own whitening"),
    normalize=("renorm", "center", "renorm"), needs_dictionary=False, moves_target=True, judges=True, check=_check,
    keeps_pivot=lambda cfg: final_map(cfg.self_learning, True) == "orthogonal", differences=_differences,
    selection=lambda cfg: "the last self-learning iteration's dictionary (VecMap's rule)")
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    return fit_judged("vecmap-unsupervised", src, tgt, None, config, config.verdict, context)
