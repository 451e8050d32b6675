"""Fit any registered alignment method on arrays: normalise, check, fit, optionally score by the criterion."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from eval.align import AlignmentResult, _check_pairs, _unit_rows, mean_csls_criterion
from eval.knn import DEFAULT_BATCH_SIZE
from eval.methods.registry import FitContext, build_config, get_method, resolve_normalize
from eval.normalize import normalize_embeddings
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["fit_mapping", "score_criterion"]


def fit_mapping(
    src: np.ndarray,
    tgt: np.ndarray,
    train_pairs: np.ndarray | None,
    *,
    method: str = "procrustes",
    config: Any | None = None,
    normalize: Sequence[str] | str | None = None,
    context: FitContext | None = None,
) -> AlignmentResult:
    """Fit ``method`` (a registered name) on ``train_pairs`` (``(n, 2)`` row indices of ``src``
    ``(n_src, d)`` and ``tgt``; None for a method that starts without a dictionary).

    ``config``: the method's config (None: its reference's defaults); ``normalize`` None: the
    method's reference normalisation (:attr:`~eval.methods.registry.Method.normalize`);
    ``context``: the search settings and, with ``criterion=True``, also score a map by the
    unsupervised mean-CSLS criterion where the method has not (procrustes selects by it).
    """
    spec = get_method(method)
    cfg = build_config(method, config)
    ctx = context or FitContext()
    ops = resolve_normalize(method, normalize)
    # No copy without a chain: a caller that normalised the spaces itself passes normalize="none".
    src_n = np.ascontiguousarray(normalize_embeddings(src, ops) if ops else src, dtype=np.float32)  # (n_src, d)
    tgt_n = np.ascontiguousarray(normalize_embeddings(tgt, ops) if ops else tgt, dtype=np.float32)  # (n_tgt, d)
    if src_n.shape[1] != tgt_n.shape[1]:
        raise InputError(f"source vectors have dimension {src_n.shape[1]} but target vectors {tgt_n.shape[1]}; "
                         "align embeddings of the same size")
    pairs = None
    if train_pairs is not None:
        pairs = _check_pairs(train_pairs, src_n.shape[0], tgt_n.shape[0], name="train_pairs")
    elif spec.needs_dictionary:
        raise InputError(f"{method} fits a dictionary; pass train_pairs (a seed dictionary)")
    uses_eval = spec.uses_eval_pairs is not None and spec.uses_eval_pairs(cfg)
    # The chain applied here is the one the spaces went through; a caller that normalised them itself
    # (normalize="none") says which in its context.
    ctx = dataclasses.replace(ctx, select_pairs=ctx.select_pairs if uses_eval else None,
                              normalize=tuple(ops) if ops else ctx.normalize)
    started = time.perf_counter()
    res = spec.fit(src_n, tgt_n, pairs, cfg, ctx)
    if ctx.criterion:
        res = score_criterion(res, src_n, tgt_n, ctx)
    logger.info("%s on %s (%.1fs)%s", method, "no dictionary" if pairs is None else f"{pairs.shape[0]} pairs",
                time.perf_counter() - started, f"; criterion {res.best_criterion:.5f}" if ctx.criterion else "")
    return dataclasses.replace(res, normalize=ops, method=method)


def score_criterion(res: AlignmentResult, src_n: np.ndarray, tgt_n: np.ndarray, ctx: FitContext) -> AlignmentResult:
    """``res`` with the unsupervised mean-CSLS criterion of its map in its best history entry (unless
    the method computed it already: procrustes selects by it)."""
    entry = res.history[res.best_iteration]
    if "criterion" in entry:
        return res
    mapped_tgt = tgt_n if res.W_tgt is None else tgt_n @ res.W_tgt.T
    entry["criterion"] = mean_csls_criterion(_unit_rows(src_n @ res.W.T), _unit_rows(mapped_tgt),
                                             n_src=ctx.criterion_n_src, assume_normalized=True,
                                             batch_size=ctx.batch_size or DEFAULT_BATCH_SIZE,
                                             knn_mode=ctx.knn_mode)  # type: ignore[arg-type]
    return res

