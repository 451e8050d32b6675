"""``procrustes``: MUSE's supervised script (Conneau et al. 2018): Procrustes on the dictionary, then
rounds of CSLS dictionary induction, the round kept chosen by ``select_on``.

The maths is :func:`eval.align.align`; this module declares its knobs and registers it.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from eval.methods.registry import MUSE_MAX_RANK, FitContext, MethodConfig, Plan, check_fields, knob, register_method
from groc_base.checks import either_face, option
from groc_base.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["BUILDS", "SELECT_ON", "SELECTION", "Build", "ProcrustesConfig", "SelectOn"]

SelectOn = Literal["criterion", "eval", "last"]
#: How the refinement round is chosen: the unsupervised criterion (default), the evaluation pairs'
#: P@1 (MUSE's supervised rule, explicit only) or the last round.
SELECT_ON: tuple[str, ...] = typing.get_args(SelectOn)
Build = Literal["S2T", "T2S", "S2T|T2S", "S2T&T2S"]
BUILDS: tuple[str, ...] = typing.get_args(Build)

#: How the round kept was chosen, in words (the JSON's ``selection``).
SELECTION = {
    "criterion": "unsupervised mean CSLS cosine (never the evaluation dictionary)",
    "last": "the last refinement round",
    "eval": "P@1 (CSLS) on the evaluation dictionary, as MUSE's supervised mode: tuned on the test pairs",
}


@dataclass(frozen=True)
class ProcrustesConfig(MethodConfig):
    """MUSE's supervised refinement; ranges checked once, on the fields."""

    refine: int = knob(5, name="", check="non_negative_int", inert=(0,),
                       help="refinement iterations (0: Procrustes only; MUSE's supervised script runs 5)",
                       refuse="{given} applies to procrustes only; {method} fits the training pairs directly: "
                              "drop {flag} or use {use}")
    select_on: SelectOn = knob("criterion", name="", inert=("criterion", "last"), help=(
        "how the refinement round is picked: criterion (unsupervised mean CSLS cosine) | last | eval (MUSE's "
        "supervised rule: P@1 on --eval-dict, so the reported P@k is tuned on the test pairs)"),
        refuse="{given} chooses a procrustes refinement round; {method} has none: drop {flag} or use {use}")
    dico_build: Build = knob("S2T&T2S", name="", help="refinement dictionaries: S2T | T2S | S2T|T2S | S2T&T2S")
    dico_max_rank: int | None = knob(None, name="", check="positive_int", help="refinement dictionary rank limit",
                                     show_default="10000 with --train-dict, 15000 with --dictionary-mode, as MUSE's "
                                                  "supervised/unsupervised dico_max_rank")

    def __post_init__(self) -> None:
        check_fields(self)


def _differences(cfg: ProcrustesConfig, context: FitContext) -> list[str]:
    diffs = []
    if cfg.refine != 5:
        diffs.append(f"{cfg.refine} refinement rounds (MUSE: 5)")
    if cfg.select_on != "eval":
        diffs.append("the refinement round is picked by the unsupervised mean-CSLS criterion (MUSE's supervised "
                     f"script picks it by P@1 on the test dictionary: {either_face('select_on', 'eval')})")
    return diffs


def _check(cfg: ProcrustesConfig, plan: Plan) -> None:
    if cfg.select_on == "eval" and not plan.eval_dictionary:
        raise InputError(f"{option('select_on', 'eval')} picks the refinement round by P@1 on the evaluation "
                         f"dictionary; pass {option('eval_dict')}, or drop {option('select_on')}")


@register_method(
    "procrustes", config=ProcrustesConfig,
    summary="MUSE's supervised script: Procrustes + CSLS refinement",
    recipe=("MUSE supervised.py: Procrustes on the training pairs, then 5 refinement rounds of CSLS dictionary "
            "induction (S2T&T2S, dico_max_rank 10000), no normalisation"),
    differences=_differences, selection=lambda cfg: SELECTION[cfg.select_on], check=_check,
    uses_eval_pairs=lambda cfg: cfg.select_on == "eval", dico_max_rank=lambda cfg: cfg.dico_max_rank)
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    from eval.align import DEFAULT_BATCH_SIZE, align

    assert pairs is not None
    rank = config.dico_max_rank or MUSE_MAX_RANK[context.supervised]
    return align(src, tgt, pairs, n_refinement=config.refine, dico_build=config.dico_build, dico_max_rank=rank,
                 knn_mode=context.knn_mode, select_on=config.select_on,  # type: ignore[arg-type]
                 select_pairs=context.select_pairs, criterion_n_src=context.criterion_n_src,
                 batch_size=context.batch_size or DEFAULT_BATCH_SIZE)
