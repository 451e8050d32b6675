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
(which chooses among rounds) are refused with them.  ``procrustes`` picks its round by the
unsupervised mean-CSLS criterion; the other methods compute it only with ``criterion=True`` (so
their maps can be compared without gold pairs), as their references do not.

Each method is named after a reference and runs that reference's recipe by default
(``normalize=None``): :data:`REFERENCE_NORMALIZE` is each one's normalisation (VecMap's
``--supervised`` normalises ``unit, center, unit`` first; fastText's ``load_vectors``
renormalises; MUSE's default normalises nothing), and :func:`recipe` says in words what the
reference does and how a call differs from it.
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
from groc_base.checks import either_face, option
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["MAPPING_METHODS", "MappingMethod", "fit_mapping"]

MappingMethod = Literal["procrustes", "rcsls", "vecmap"]
MAPPING_METHODS: tuple[str, ...] = ("procrustes", "rcsls", "vecmap")

#: The normalisation each method's reference applies to both spaces before fitting (``normalize=None``).
REFERENCE_NORMALIZE: dict[str, tuple[str, ...]] = {
    "procrustes": (),  # MUSE supervised.py: --normalize_embeddings "" by default
    "rcsls": ("renorm",),  # fastText align.py: load_vectors(norm=True, center=False)
    "vecmap": ("renorm", "center", "renorm"),  # VecMap --supervised: --normalize unit center unit
}

#: What each reference runs, in words (the JSON's ``reference.recipe``).
REFERENCE_RECIPES: dict[str, str] = {
    "procrustes": ("MUSE supervised.py: Procrustes on the training pairs, then 5 refinement rounds of CSLS "
                   "dictionary induction (S2T&T2S, dico_max_rank 10000), no normalisation"),
    "rcsls": ("fastText alignment/align.py: unit-length vectors, Procrustes start, the RCSLS loss with k=10 and "
              "200000 negatives, --niter 10 (11 full-batch updates), --lr 1.0"),
    "vecmap": ("VecMap map_embeddings.py --supervised: normalise unit, center, unit; whiten; orthogonal map; "
               "re-weight by S^0.5 on both sides; de-whiten each side with its own whitening"),
}


def resolve_normalize(method: str, normalize: Sequence[str] | str | None) -> tuple[str, ...]:
    """The chain ``method`` applies: ``normalize`` as given (``"none"`` or ``""``: nothing), or the
    reference's own (:data:`REFERENCE_NORMALIZE`) when it is None; ``rcsls`` always ends with
    ``renorm`` (its loss is defined on unit rows)."""
    ops = REFERENCE_NORMALIZE.get(method, ()) if normalize is None else parse_normalize(normalize)
    if method == "rcsls" and (not ops or ops[-1] != "renorm"):
        ops = (*ops, "renorm")
    return ops


def recipe(method: str, ops: Sequence[str], *, refine: int | None = None, select_on: str = "criterion",
           rcsls_config: RcslsConfig | None = None, lowercase: bool = True,
           max_vocab: int | None = 200_000) -> dict[str, object]:
    """``{"recipe": what the reference runs, "differences": [how this call differs, in words]}``.

    The differences name the option that restores the reference's behaviour where there is one.
    ``lowercase`` and ``max_vocab`` are how the vocabularies were read (MUSE's rule: lowercased,
    the first 200000 words; VecMap and fastText keep the case, and VecMap reads every word).
    """
    diffs: list[str] = []
    reference = REFERENCE_NORMALIZE[method]
    if tuple(ops) != reference:
        rtxt = ",".join(reference) or "none"
        diffs.append(f"normalisation {','.join(ops) or 'none'} (the reference: {rtxt})")
    if method == "procrustes":
        if refine is not None and refine != 5:
            diffs.append(f"{refine} refinement rounds (MUSE: 5)")
        if select_on != "eval":
            diffs.append("the refinement round is picked by the unsupervised mean-CSLS criterion (MUSE's supervised "
                         f"script picks it by P@1 on the test dictionary: {either_face('select_on', 'eval')})")
    else:
        if lowercase:
            diffs.append("words lowercased, the first casing kept (MUSE's rule; the reference keeps every word as "
                         f"written: {either_face('keep_case', True)})")
    if method == "rcsls":
        cfg = rcsls_config or RcslsConfig()
        ref = RcslsConfig()
        for name in ("knn", "max_neg", "n_iter", "lr", "spectral"):
            if getattr(cfg, name) != getattr(ref, name):
                diffs.append(f"rcsls {name} {getattr(cfg, name)} (fastText's default: {getattr(ref, name)})")
        diffs.append("a rising step is undone and retried from the best map, and the map with the lowest loss is "
                     "returned (the reference's in-place update keeps the risen map)")
    if method == "vecmap" and max_vocab is not None:
        diffs.append(f"at most {max_vocab} words per side are read (VecMap reads the whole file: "
                     f"{either_face('max_vocab', 0)})")
    if method == "rcsls" and max_vocab is not None and max_vocab != 200_000:
        diffs.append(f"at most {max_vocab} words per side are read (fastText: --maxload 200000)")
    return {"recipe": REFERENCE_RECIPES[method], "differences": diffs}


def check_method_options(method: str, refine: int | None, select_on: str) -> int:
    """The refinement rounds ``method`` runs (``refine`` None: 5 for procrustes, else 0); incompatible
    options raise InputError naming the fix."""
    if method not in MAPPING_METHODS:
        raise InputError(f"unknown alignment method {method!r}; use one of {', '.join(MAPPING_METHODS)}")
    if method == "procrustes":
        return 5 if refine is None else int(refine)
    if refine:
        raise InputError(f"{option('refine', refine)} applies to procrustes only; {method} fits the training pairs "
                         f"directly: drop {option('refine')} or use {option('method', 'procrustes')}")
    if select_on == "eval":
        raise InputError(f"{option('select_on', 'eval')} chooses a procrustes refinement round; {method} has none: "
                         f"drop {option('select_on')} or use {option('method', 'procrustes')}")
    return 0


def fit_mapping(
    src: np.ndarray,
    tgt: np.ndarray,
    train_pairs: np.ndarray,
    *,
    method: MappingMethod = "procrustes",
    normalize: Sequence[str] | str | None = None,
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
    criterion: bool = False,
) -> AlignmentResult:
    """Fit ``method`` on ``train_pairs`` (``(n, 2)`` row indices of ``src`` ``(n_src, d)`` and ``tgt``).

    ``normalize`` None: the method's reference normalisation (:data:`REFERENCE_NORMALIZE`).
    ``criterion``: also score an ``rcsls`` or ``vecmap`` map by the unsupervised mean-CSLS
    criterion (``procrustes`` always does: it selects its round with it).
    """
    n_refine = check_method_options(method, refine, select_on)
    ops = resolve_normalize(method, normalize)
    if method == "procrustes":
        return align(src, tgt, train_pairs, n_refinement=n_refine, normalize=ops, dico_build=dico_build,
                     dico_max_rank=dico_max_rank, knn_mode=knn_mode, select_on=select_on,
                     select_pairs=select_pairs, criterion_n_src=criterion_n_src, batch_size=batch_size)
    # No copy without a chain: a caller that normalised the spaces itself passes normalize="none".
    src_n = np.ascontiguousarray(normalize_embeddings(src, ops) if ops else src, dtype=np.float32)  # (n_src, d)
    tgt_n = np.ascontiguousarray(normalize_embeddings(tgt, ops) if ops else tgt, dtype=np.float32)  # (n_tgt, d)
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
    if criterion:
        mapped_tgt = tgt_n if w_tgt is None else tgt_n @ w_tgt.T
        history[0]["criterion"] = mean_csls_criterion(_unit_rows(src_n @ w.T), _unit_rows(mapped_tgt),
                                                       n_src=criterion_n_src, assume_normalized=True,
                                                       batch_size=batch_size, knn_mode=knn_mode)
    history[0]["seconds"] = time.perf_counter() - started
    logger.info("%s on %d pairs (%.1fs)%s", method, pairs.shape[0], history[0]["seconds"],
                f"; criterion {history[0]['criterion']:.5f}" if criterion else "")
    return AlignmentResult(W=np.asarray(w, dtype=np.float32), best_iteration=0, history=history, normalize=ops,
                           W_tgt=None if w_tgt is None else np.asarray(w_tgt, dtype=np.float32), method=method,
                           select_on=select_on)
