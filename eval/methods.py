"""One entry point for every supervised mapping method: ``procrustes`` (+ CSLS refinement), ``rcsls``, ``vecmap``.

:func:`fit_mapping` normalises both spaces with the ``normalize`` chain (:mod:`eval.normalize`),
fits the chosen method on the training pairs and returns an
:class:`~eval.align.AlignmentResult` whose ``map_source`` / ``prepare_target`` give the two
spaces to evaluate, whatever the method:

* ``procrustes``: :func:`eval.align.align` (MUSE's supervised Procrustes with ``refine`` rounds
  of CSLS dictionary induction, the round chosen by ``select_on``);
* ``rcsls``: Procrustes on the training pairs, then :func:`eval.rcsls.rcsls`.  RCSLS works on
  unit rows, so ``renorm`` is appended to the chain when it does not already end with it;
* ``vecmap``: :func:`eval.vecmap.vecmap`; both spaces move (``W_tgt``).

``rcsls`` and ``vecmap`` have no refinement rounds, so ``refine > 0`` and ``select_on="eval"``
(which chooses among rounds) are refused with them.  Every result's ``history`` ends with the
unsupervised mean-CSLS criterion of its map, so the methods can be compared without gold pairs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Literal

import numpy as np

from eval.align import (
    DEFAULT_BATCH_SIZE,
    AlignmentResult,
    Build,
    KnnMode,
    SelectOn,
    _check_pairs,
    _unit_rows,
    align,
    mean_csls_criterion,
    procrustes,
)
from eval.normalize import normalize_embeddings, parse_normalize
from eval.rcsls import RcslsConfig, rcsls
from eval.vecmap import VecmapConfig, vecmap
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["MAPPING_METHODS", "MappingMethod", "fit_mapping"]

MappingMethod = Literal["procrustes", "rcsls", "vecmap"]
MAPPING_METHODS: tuple[str, ...] = ("procrustes", "rcsls", "vecmap")


def check_method_options(method: str, refine: int | None, select_on: str) -> int:
    """The refinement rounds ``method`` runs (``refine`` None: 5 for procrustes, else 0); incompatible
    options raise InputError naming the fix."""
    if method not in MAPPING_METHODS:
        raise InputError(f"unknown alignment method {method!r}; use one of {', '.join(MAPPING_METHODS)}")
    if method == "procrustes":
        return 5 if refine is None else int(refine)
    if refine:
        raise InputError(f"--refine {refine} applies to procrustes only; {method} fits the training pairs "
                         "directly: drop --refine or use --method procrustes")
    if select_on == "eval":
        raise InputError(f"--select-on eval chooses a procrustes refinement round; {method} has none: "
                         "drop --select-on or use --method procrustes")
    return 0


def fit_mapping(
    src: np.ndarray,
    tgt: np.ndarray,
    train_pairs: np.ndarray,
    *,
    method: MappingMethod = "procrustes",
    normalize: Sequence[str] | str = (),
    refine: int | None = None,
    select_on: SelectOn = "criterion",
    select_pairs: np.ndarray | None = None,
    dico_build: Build = "S2T&T2S",
    dico_max_rank: int | None = 10000,
    knn_mode: KnnMode = "exact",
    rcsls_config: RcslsConfig | None = None,
    vecmap_config: VecmapConfig | None = None,
    criterion_n_src: int = 10000,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> AlignmentResult:
    """Fit ``method`` on ``train_pairs`` (``(n, 2)`` row indices of ``src`` ``(n_src, d)`` and ``tgt``)."""
    n_refine = check_method_options(method, refine, select_on)
    ops = parse_normalize(normalize)
    if method == "procrustes":
        return align(src, tgt, train_pairs, n_refinement=n_refine, normalize=ops, dico_build=dico_build,
                     dico_max_rank=dico_max_rank, knn_mode=knn_mode, select_on=select_on,
                     select_pairs=select_pairs, criterion_n_src=criterion_n_src, batch_size=batch_size)
    if method == "rcsls" and (not ops or ops[-1] != "renorm"):
        ops = (*ops, "renorm")  # RCSLS's loss is defined on unit rows
    src_n = np.ascontiguousarray(normalize_embeddings(src, ops), dtype=np.float32)  # (n_src, d)
    tgt_n = np.ascontiguousarray(normalize_embeddings(tgt, ops), dtype=np.float32)  # (n_tgt, d)
    if src_n.shape[1] != tgt_n.shape[1]:
        raise InputError(f"source vectors have dimension {src_n.shape[1]} but target vectors {tgt_n.shape[1]}; "
                         "align embeddings of the same size")
    pairs = _check_pairs(train_pairs, src_n.shape[0], tgt_n.shape[0], name="train_pairs")
    started = time.perf_counter()
    history: list[dict[str, float | int]] = []
    w_tgt: np.ndarray | None = None
    if method == "rcsls":
        w0 = procrustes(src_n[pairs[:, 0]], tgt_n[pairs[:, 1]])  # (d, d): the reference's start
        res = rcsls(src_n, tgt_n, pairs, w0, rcsls_config)
        w = res.W
        steps = res.history
        history.append({"iteration": 0, "dictionary_size": int(pairs.shape[0]),
                        "rcsls_steps": len(steps), "rcsls_loss_start": float(steps[0]["loss"]),
                        "rcsls_loss_best": float(min(s["loss"] for s in steps)),
                        "rcsls_first_step_seconds": float(steps[0]["seconds"]),
                        "rcsls_max_step_seconds": float(max(s["seconds"] for s in steps)),
                        "rcsls_mean_step_seconds": float(np.mean([s["seconds"] for s in steps]))})
    else:
        vm = vecmap(src_n, tgt_n, pairs, vecmap_config)
        w, w_tgt = vm.W_src.T, vm.W_tgt.T  # (d', d): the AlignmentResult convention x @ W.T
        history.append({"iteration": 0, "dictionary_size": int(pairs.shape[0])})
    mapped_tgt = tgt_n if w_tgt is None else tgt_n @ w_tgt.T
    history[0]["criterion"] = mean_csls_criterion(_unit_rows(src_n @ w.T), _unit_rows(mapped_tgt),
                                                   n_src=criterion_n_src, assume_normalized=True,
                                                   batch_size=batch_size, knn_mode=knn_mode)
    history[0]["seconds"] = time.perf_counter() - started
    logger.info("%s on %d pairs: criterion %.5f (%.1fs)", method, pairs.shape[0], history[0]["criterion"],
                history[0]["seconds"])
    return AlignmentResult(W=np.asarray(w, dtype=np.float32), best_iteration=0, history=history, normalize=ops,
                           W_tgt=None if w_tgt is None else np.asarray(w_tgt, dtype=np.float32), method=method,
                           select_on=select_on)
