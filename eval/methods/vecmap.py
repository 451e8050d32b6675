"""``vecmap``: VecMap's ``map_embeddings.py --supervised`` (Artetxe, Labaka, Agirre 2018, AAAI):
normalise, whiten, orthogonal map, re-weight, de-whiten; both spaces move.

The maths is :func:`eval.vecmap.vecmap`; this module declares its knobs and registers it.
:class:`VecmapConfig` is VecMap's final mapping step wherever it runs (a self-learning config may
nest it): its knobs keep the ``vecmap_`` prefix there too, so one flag sets it in either method.
"""

from __future__ import annotations

import dataclasses
import time
import typing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from eval.methods.registry import FitContext, MethodConfig, casing_difference, check_fields, knob, register_method
from groc_base.checks import either_face
from groc_base.errors import InputError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["DEWHITEN", "Dewhiten", "VecmapConfig"]

Dewhiten = Literal["src", "tgt", "none"]
DEWHITEN: tuple[str, ...] = typing.get_args(Dewhiten)


@dataclass(frozen=True)
class VecmapConfig(MethodConfig):
    """VecMap's supervised settings (the paper's best: whiten, re-weight 0.5 on both sides, de-whiten
    each side with its own whitening, no reduction); ranges checked once, on the fields."""

    knob_prefix: ClassVar[str] = "vecmap"

    whiten: bool = knob(True, help="whiten both sides first (VecMap's --whiten)")
    src_reweight: float = knob(0.5, check="unit", help="re-weighting exponent of the source side (--src_reweight)")
    tgt_reweight: float = knob(0.5, check="unit", help="re-weighting exponent of the target side (--trg_reweight)")
    src_dewhiten: Dewhiten = knob("src", help="de-whiten the source side with the src or tgt whitening, or none")
    tgt_dewhiten: Dewhiten = knob("tgt", help="de-whiten the target side with the src or tgt whitening, or none")
    dim_reduction: int = knob(0, check="non_negative_int", help="keep the first N mapped dimensions (0: all)")

    def __post_init__(self) -> None:
        check_fields(self)
        if not self.whiten and (self.src_dewhiten != "none" or self.tgt_dewhiten != "none"):
            raise InputError("de-whitening needs whitening; pass whiten=True or src_dewhiten=tgt_dewhiten='none'")


def _differences(cfg: VecmapConfig, context: FitContext) -> list[str]:
    diffs = []
    diffs += casing_difference(context, reference_lowercases=False)
    ref = VecmapConfig()
    diffs += [f"vecmap {f.name} {getattr(cfg, f.name)} (VecMap's --supervised: {getattr(ref, f.name)})"
              for f in dataclasses.fields(cfg) if getattr(cfg, f.name) != getattr(ref, f.name)]
    if context.max_vocab is not None:
        diffs.append(f"at most {context.max_vocab} words per side are read (VecMap reads the whole file: "
                     f"{either_face('max_vocab', 0)})")
    return diffs


@register_method(
    "vecmap", config=VecmapConfig,
    summary="VecMap's --supervised: normalise, whiten, orthogonal map, re-weight, de-whiten; Artetxe et al. 2018",
    recipe=("VecMap map_embeddings.py --supervised: normalise unit, center, unit; whiten; orthogonal map; "
            "re-weight by S^0.5 on both sides; de-whiten each side with its own whitening"),
    normalize=("renorm", "center", "renorm"), differences=_differences, moves_target=True)
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    import numpy as np

    from eval.align import AlignmentResult
    from eval.vecmap import vecmap

    assert pairs is not None
    started = time.perf_counter()
    vm = vecmap(src, tgt, pairs, config)
    history: list[dict[str, float | int]] = [{"iteration": 0, "dictionary_size": int(pairs.shape[0]),
                                              "seconds": time.perf_counter() - started}]
    # (d', d): the AlignmentResult convention x @ W.T
    return AlignmentResult(W=np.asarray(vm.W_src.T, dtype=np.float32), W_tgt=np.asarray(vm.W_tgt.T, dtype=np.float32),
                           best_iteration=0, history=history, method="vecmap")
