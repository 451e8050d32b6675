"""``rcsls``: fastText's ``alignment/align.py`` (Joulin et al. 2018): the relaxed CSLS loss over the
training pairs, full-batch steps from the Procrustes solution, on unit rows.

The maths is :func:`eval.rcsls.rcsls`; this module declares its knobs and registers it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from eval.methods.registry import FitContext, MethodConfig, casing_difference, check_fields, knob, register_method

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["RcslsConfig"]


@dataclass(frozen=True)
class RcslsConfig(MethodConfig):
    """RCSLS settings, fastText ``align.py``'s defaults; ranges checked once, on the fields.

    ``n_iter`` counts as fastText's ``--niter``: ``n_iter + 1`` gradient updates (its loop runs
    ``niter + 1`` times); ``lr`` is its ``--lr`` (its README's example uses ``--lr 25 --niter 10``).
    """

    knn: int = knob(10, check="positive_int", help="neighbours of the CSLS terms (fastText's --knn)")
    max_neg: int = knob(200_000, check="positive_int",
                        help="negatives: the N most frequent words of each side (fastText's --maxneg)")
    n_iter: int = knob(10, check="non_negative_int", show_default="10, as fastText",
                       help="fastText's --niter, N+1 full-batch updates as its loop makes")
    lr: float = knob(1.0, check="positive", show_default="1.0, as fastText",
                     help="fastText's --lr (its README's example: --rcsls-lr 25 --rcsls-niter 10)")
    spectral: bool = knob(False, name="", help="clip the map's singular values to [0, 1] after every step "
                                               "(fastText's --model spectral)")
    # query rows per candidate rescoring: a (batch, keep, d) float32 gather (20 MB); memory, not results
    batch_size: int = knob(256, check="positive_int", help="query rows per candidate rescoring (memory only)")

    def __post_init__(self) -> None:
        check_fields(self)


def _differences(cfg: RcslsConfig, context: FitContext) -> list[str]:
    diffs = []
    diffs += casing_difference(context, reference_lowercases=False)
    ref = RcslsConfig()
    for name in ("knn", "max_neg", "n_iter", "lr", "spectral"):
        if getattr(cfg, name) != getattr(ref, name):
            diffs.append(f"rcsls {name} {getattr(cfg, name)} (fastText's default: {getattr(ref, name)})")
    diffs.append("a rising step is undone and retried from the best map, and the map with the lowest loss is "
                 "returned (the reference's in-place update keeps the risen map)")
    if context.max_vocab is not None and context.max_vocab != 200_000:
        diffs.append(f"at most {context.max_vocab} words per side are read (fastText: --maxload 200000)")
    return diffs


@register_method(
    "rcsls", config=RcslsConfig,
    summary="fastText's align.py: the relaxed CSLS loss, Joulin et al. 2018",
    recipe=("fastText alignment/align.py: unit-length vectors, Procrustes start, the RCSLS loss with k=10 and "
            "200000 negatives, --niter 10 (11 full-batch updates), --lr 1.0"),
    normalize=("renorm",), ends_with="renorm", differences=_differences)
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    import numpy as np

    from eval.align import AlignmentResult, procrustes
    from eval.rcsls import rcsls

    assert pairs is not None
    started = time.perf_counter()
    w0 = procrustes(src[pairs[:, 0]], tgt[pairs[:, 1]])  # (d, d): the reference's start
    res = rcsls(src, tgt, pairs, w0, config)
    steps = res.history
    history: list[dict[str, float | int]] = [{
        "iteration": 0, "dictionary_size": int(pairs.shape[0]), "rcsls_steps": len(steps),
        "rcsls_loss_start": float(steps[0]["loss"]), "rcsls_loss_best": float(min(s["loss"] for s in steps)),
        "rcsls_first_step_seconds": float(steps[0]["seconds"]),
        "rcsls_max_step_seconds": float(max(s["seconds"] for s in steps)),
        "rcsls_mean_step_seconds": float(np.mean([s["seconds"] for s in steps])),
        "seconds": time.perf_counter() - started}]
    return AlignmentResult(W=np.asarray(res.W, dtype=np.float32), best_iteration=0, history=history, method="rcsls")
