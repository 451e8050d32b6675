"""VecMap's robust self-learning (Artetxe, Labaka, Agirre 2018, ACL: "A robust self-learning
method for fully unsupervised cross-lingual mappings of word embeddings").

The reference is ``map_embeddings.py`` of github.com/artetxem/vecmap: ``--unsupervised`` (no
dictionary at all), ``--identical`` (start from the words spelled alike) and
``--semi_supervised DICT`` (start from a small seed).  All three run the same loop:

1. normalise both spaces ``unit, center, unit``;
2. a start dictionary: for ``--unsupervised`` from the *similarity distributions* of the top
   ``unsupervised_vocab`` (4,000) words of each side: ``sqrt(X X^T)`` (``U S U^T`` of
   ``X = U S V^T``), each row sorted, normalised like the vectors, so that a word's row describes
   how it relates to all others, whatever the language; these rows are comparable across the
   two languages, and their CSLS nearest neighbours in both directions (union) are the start;
3. self-learning over the top ``vocabulary_cutoff`` (20,000) words: the orthogonal map
   (Procrustes) of the current dictionary, then a new dictionary from the mapped spaces: each
   source word's best target and each target word's best source (``direction="union"``) by
   CSLS (k=10) with *stochastic dictionary induction*: every similarity is kept with
   probability ``p`` and set to 0 otherwise, ``p`` starting at 0.1 and doubled whenever the
   objective (the mean best cosine of both directions) has not improved by ``threshold``
   (1e-6) for ``stochastic_interval`` (50) iterations; at ``p = 1`` the next such stall ends it;
4. the final map from the last dictionary, with the whole vocabulary: whitening, orthogonal
   mapping, re-weighting by ``S^0.5``, de-whitening (:func:`eval.vecmap.vecmap`, VecMap's
   ``--supervised`` step); both spaces move.

How this code differs from the reference (the same steps and the same distribution of dictionaries,
not VecMap's own random draws):

* one iteration is two GEMM passes over the ``cutoff x cutoff`` similarities (VecMap: four): the
  targets' CSLS neighbourhood means first (target blocks into faiss's top-k heaps; the forward
  scores need all of them), then source blocks, each scored in both directions (a block's own
  rows' means come from the block itself, and the backward direction only needs the means of the
  sources it ranks); only the cutoff rows are mapped per iteration (VecMap maps the whole
  vocabulary every time);
* the dropout mask is drawn once per block and serves both directions (VecMap draws one per
  direction; each direction still sees every similarity kept with probability ``p``, which is
  all the method asks), from 16-bit uniform integers (the keep probability rounded to 1/65536);
* the random numbers are NumPy's ``Generator`` (VecMap: the legacy ``np.random.seed`` state), so a
  seed repeats a run here but is not VecMap's run;
* ``vocabulary_cutoff``/``unsupervised_vocab`` None means VecMap's 20,000/4,000 clipped to the
  vocabularies; an explicit value above a vocabulary is refused (VecMap clips silently);
* ``max_iterations`` can cap the loop (VecMap has no cap).
"""

from __future__ import annotations

import dataclasses
import logging
import math

import faiss
import numpy as np

from eval.align import _check_pairs, procrustes
from eval.knn import _heaps
from eval.methods.vecmap_self_learning import (
    VECMAP_CUTOFF,
    VECMAP_UNSUPERVISED_VOCAB,
    Direction,
    SelfLearningConfig,
    final_map,
)
from eval.methods.vecmap_unsupervised import UnsupervisedConfig
from eval.normalize import normalize_embeddings
from eval.unsup.common import MapResult, Timer, check_spaces, map_criterion, normalized_pair, top_words
from eval.vecmap import vecmap

logger = logging.getLogger(__name__)

__all__ = ["VECMAP_CUTOFF", "VECMAP_UNSUPERVISED_VOCAB", "SelfLearningConfig", "UnsupervisedConfig",
           "similarity_init", "vecmap_self_learning", "vecmap_unsupervised"]

#: Floats per (rows, cutoff) similarity slab of one block (64 MiB); three such slabs are live.
SLAB_FLOATS = 1 << 24


def _size(name: str, value: int | None, default: int, n_x: int, n_z: int) -> tuple[int, int]:
    """Words of each side a setting reads: ``value`` (refused above either vocabulary, naming the knob
    ``vecmap_<name>`` in the caller's face) or VecMap's ``default`` clipped to each."""
    if value is None:
        return min(default, n_x), min(default, n_z)
    words = top_words(value, knob=f"vecmap_{name}", reference="VecMap", default=default, n_x=n_x, n_z=n_z)
    return words, words


# --------------------------------------------------------------------------------------------
# the unsupervised start
# --------------------------------------------------------------------------------------------


def _topk_mean(m: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Mean of the ``k`` largest values along ``axis`` of a small in-memory matrix."""
    n = m.shape[axis]
    k = min(k, n)
    return np.partition(m, n - k, axis=axis).take(range(n - k, n), axis=axis).mean(axis=axis)


def _sorted_similarity(m: np.ndarray, ops: tuple[str, ...]) -> np.ndarray:
    """``sqrt(m m^T)`` ``(n, n)`` (``U S U^T`` of ``m = U S V^T``), each row sorted, then normalised by ``ops``."""
    u, s, _ = np.linalg.svd(np.asarray(m, dtype=np.float32), full_matrices=False)  # u (n, r), s (r,)
    sim = (u * s) @ u.T  # (n, n)
    sim.sort(axis=1)
    return normalize_embeddings(sim, ops, inplace=True) if ops else sim


def similarity_init(x: np.ndarray, z: np.ndarray, n_words: int, *, csls_k: int = 10,
                    direction: Direction = "union", normalize: tuple[str, ...] = ("renorm", "center", "renorm"),
                    ) -> np.ndarray:
    """VecMap's unsupervised start: ``(n, 2)`` (source row, target row) pairs among the top ``n_words``.

    ``x``/``z`` are the normalised spaces; the rows of their sorted similarity matrices are
    compared by CSLS (``csls_k`` 0: cosine) and matched in ``direction``.  Memory: three
    ``n_words x n_words`` float32 matrices (4,000 words: 64 MiB each).
    """
    xsim = _sorted_similarity(x[:n_words], normalize)  # (n, n)
    zsim = _sorted_similarity(z[:n_words], normalize)  # (n, n)
    sim = xsim @ zsim.T  # (n, n) source rows x target rows
    del xsim, zsim
    if csls_k > 0:
        fwd = _topk_mean(sim, csls_k, axis=1)  # (n,) each source row's neighbourhood
        bwd = _topk_mean(sim, csls_k, axis=0)  # (n,) each target row's
        sim -= fwd[:, None] / 2 + bwd[None, :] / 2
    rows = np.arange(n_words, dtype=np.int64)
    fwd_pairs = np.stack([rows, sim.argmax(axis=1)], axis=1)  # (n, 2)
    bwd_pairs = np.stack([sim.argmax(axis=0), rows], axis=1)  # (n, 2)
    if direction == "forward":
        return fwd_pairs
    if direction == "backward":
        return bwd_pairs
    return np.concatenate([fwd_pairs, bwd_pairs])


# --------------------------------------------------------------------------------------------
# one self-learning step: dictionary induction over the cutoff words
# --------------------------------------------------------------------------------------------


def _block_rows(m: int) -> int:
    return max(16, SLAB_FLOATS // max(1, m))


def _target_means(xw: np.ndarray, zw: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Each target row's mean of its ``k`` best source cosines (CSLS's r, ``k`` 0: zeros) and its best
    cosine, ``(m,)`` each: one GEMM pass over target blocks into faiss's top-k heaps."""
    n, m = xw.shape[0], zw.shape[0]
    kk = max(1, k)
    r = np.zeros(m, dtype=np.float32)
    best = np.empty(m, dtype=np.float32)
    step = _block_rows(n)
    for start in range(0, m, step):
        sim = zw[start : start + step] @ xw.T  # (b, n)
        top, _ = _row_top(sim, kk)
        if k > 0:
            r[start : start + sim.shape[0]] = top.mean(axis=1, dtype=np.float64)
        best[start : start + sim.shape[0]] = top.max(axis=1)
    return r, best


def _row_top(sim: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` largest values of each row of ``sim`` ``(b, m)`` (unordered) and their columns."""
    top = np.empty((sim.shape[0], k), dtype=np.float32)
    ids = np.empty((sim.shape[0], k), dtype=np.int64)
    _heaps(top, ids).addn(sim.shape[1], faiss.swig_ptr(sim), 0, 0, sim.shape[0])  # type: ignore[call-arg]  # faiss's stub omits j0, i0, ni
    return top, ids


def _column_argmax(scores: np.ndarray, col_max: np.ndarray) -> np.ndarray:
    """``scores.argmax(axis=0)`` given ``col_max = scores.max(axis=0)``: the first row holding each
    column's maximum.  NumPy's strided argmax over axis 0 took 242 ms on an 838 x 20000 block, this
    (one comparison, the hits in row-major order, the first hit per column) 71 ms."""
    m = scores.shape[1]
    hits = np.flatnonzero(scores == col_max)  # row-major: each column's first hit is its top row
    cols, first = np.unique(hits % m, return_index=True)
    out = np.zeros(m, dtype=np.int64)
    out[cols] = hits[first] // m
    return out


def _induce(xw: np.ndarray, zw: np.ndarray, cfg: SelfLearningConfig, keep: float,
            rng: np.random.Generator) -> tuple[np.ndarray, float]:
    """The next dictionary ``(pairs, 2)`` and the objective, from the mapped cutoff rows ``xw``
    ``(n, d)`` and ``zw`` ``(m, d)``.

    Two GEMM passes: the targets' CSLS means first (the forward scores need all of them), then
    source blocks, each scored in both directions: its own rows' means come from the block itself,
    and the backward direction only needs the means of the sources it ranks.
    """
    n, m = xw.shape[0], zw.shape[0]
    k = cfg.csls_k
    r_tgt, best_tgt = _target_means(xw, zw, k)
    # CSLS of a source query up to its own r (which cannot change its argmax): cos - r_tgt / 2.
    tgt_bias = np.float32(0.5) * r_tgt  # (m,)
    forward, backward = cfg.direction in ("forward", "union"), cfg.direction in ("backward", "union")
    fwd_tgt = np.empty(n, dtype=np.int64)
    best_src = np.empty(n, dtype=np.float32)
    bwd_best = np.full(m, -np.inf, dtype=np.float32)
    bwd_src = np.zeros(m, dtype=np.int64)
    threshold = np.uint16(min(65535, round(keep * 65536)))
    step = _block_rows(m)
    for start in range(0, n, step):
        sim = xw[start : start + step] @ zw.T  # (b, m)
        b = sim.shape[0]
        top, _ = _row_top(sim, max(1, k))
        best_src[start : start + b] = top.max(axis=1)
        # VecMap's dropout: a dropped similarity becomes 0 (not -inf); one mask serves both directions.
        kept = rng.integers(0, 65536, size=(b, m), dtype=np.uint16) < threshold if keep < 1.0 else None
        if forward:
            scores = sim - tgt_bias  # (b, m)
            if kept is not None:
                scores *= kept
            fwd_tgt[start : start + b] = scores.argmax(axis=1)
            del scores
        if backward:
            if k > 0:
                sim -= np.float32(0.5) * top.mean(axis=1, dtype=np.float64).astype(np.float32)[:, None]
            if kept is not None:
                sim *= kept
            block_best = sim.max(axis=0)  # (m,)
            better = block_best > bwd_best  # strictly: the first (most frequent) source wins ties, as argmax
            bwd_best[better] = block_best[better]
            bwd_src[better] = start + _column_argmax(sim, block_best)[better]
    rows_n, rows_m = np.arange(n, dtype=np.int64), np.arange(m, dtype=np.int64)
    parts, objective = [], 0.0
    if forward:
        parts.append(np.stack([rows_n, fwd_tgt], axis=1))
        objective += float(best_src.mean(dtype=np.float64))
    if backward:
        parts.append(np.stack([bwd_src, rows_m], axis=1))
        objective += float(best_tgt.mean(dtype=np.float64))
    return np.concatenate(parts), objective / len(parts)


def _self_learn(x: np.ndarray, z: np.ndarray, start: np.ndarray, cfg: SelfLearningConfig, n: int, m: int,
                rng: np.random.Generator) -> tuple[np.ndarray, list[dict[str, float | int]]]:
    """VecMap's loop from ``start`` over the top ``n``/``m`` rows; the last dictionary and the history."""
    xs, zs = x[:n], np.ascontiguousarray(z[:m])
    pairs = start
    history: list[dict[str, float | int]] = []
    best, last_improvement, keep, it = -math.inf, 0, cfg.stochastic_initial, 1
    while True:
        timer = Timer()
        if it - last_improvement > cfg.stochastic_interval:
            if keep >= 1.0:
                break
            keep = min(1.0, cfg.stochastic_multiplier * keep)
            last_improvement = it
        if cfg.max_iterations is not None and it > cfg.max_iterations:
            logger.warning("self-learning stopped at max_iterations=%d before its schedule ended", cfg.max_iterations)
            break
        with timer("step"):
            w = procrustes(x[pairs[:, 0]], z[pairs[:, 1]])  # (d, d): x @ w.T ~ z on the dictionary
            xw = np.ascontiguousarray(xs @ w.T, dtype=np.float32)  # (n, d) only the cutoff rows move here
            pairs, objective = _induce(xw, zs, cfg, keep, rng)
        if objective - best >= cfg.threshold:
            best, last_improvement = objective, it
        history.append({"iteration": it, "keep_probability": keep, "objective": objective,
                        "dictionary_size": int(pairs.shape[0]), "seconds": timer.seconds["step"]})
        logger.info("self-learning iteration %d: objective %.5f, keep probability %.3f, %d pairs (%.2fs)",
                    it, objective, keep, pairs.shape[0], timer.seconds["step"])
        it += 1
    return pairs, history


def _finish(method: str, x: np.ndarray, z: np.ndarray, start: np.ndarray, cfg: SelfLearningConfig, n: int, m: int,
            seed: int | None, timer: Timer, config: dict[str, object], ops: tuple[str, ...],
            keep_target: bool) -> MapResult:
    """Self-learning from ``start``, the final map from the whole vocabulary (VecMap's, or an orthogonal map
    of the source alone where the target stays), and the criterion."""
    rng = np.random.default_rng(seed)
    with timer("self_learning"):
        pairs, history = _self_learn(x, z, start, cfg, n, m, rng)
    with timer("final_map"):
        w_tgt: np.ndarray | None
        if final_map(cfg, keep_target) == "orthogonal":
            w, w_tgt = procrustes(x[pairs[:, 0]], z[pairs[:, 1]]), None  # (d, d): x @ w.T ~ z
        else:
            final = vecmap(x, z, pairs, cfg.final)  # x @ W_src, z @ W_tgt
            w, w_tgt = final.W_src.T, np.ascontiguousarray(final.W_tgt.T)  # (d', d): the AlignmentResult convention
    with timer("criterion"):
        criterion = map_criterion(x @ w.T, z if w_tgt is None else z @ w_tgt.T)
    logger.info("%s: %d iterations, criterion %.5f", method, len(history), criterion)
    return MapResult(method=method, W=np.ascontiguousarray(w, dtype=np.float32), W_tgt=w_tgt, normalize=ops,
                     dictionary=pairs, seed_dictionary=start, criterion=criterion, history=history,
                     seconds=timer.seconds, seed=seed, config=config)


def vecmap_unsupervised(x: np.ndarray, z: np.ndarray, config: UnsupervisedConfig | None = None, *,
                        seed: int | None = 0, normalized: tuple[str, ...] | None = None,
                        keep_target: bool = False) -> MapResult:
    """VecMap's ``--unsupervised`` recipe on the raw spaces ``x`` ``(n_x, d)`` and ``z`` ``(n_z, d)``.

    Normalises both (``config.self_learning.normalize``), starts from :func:`similarity_init`,
    self-learns, and fits the final map on the whole vocabulary (see the module's text for how this
    differs from the reference).  ``seed`` makes the stochastic induction repeatable.
    ``normalized``: the chain ``x`` and ``z`` went through already (``align`` normalises first): they are
    not normalised again, and the start's similarity rows get that chain; the result's ``normalize`` is
    then empty (``map_source`` takes the normalised spaces). ``keep_target``: a config without
    ``final_map`` ends with an orthogonal map of the source (``align-many``'s pivot stays).
    """
    cfg = config or UnsupervisedConfig()
    sl = cfg.self_learning
    x32, z32 = check_spaces(x, z)
    # VecMap: one size for both sides, the smaller of the setting and the vocabularies.
    n_init = min(_size("unsupervised_vocab", cfg.unsupervised_vocab, VECMAP_UNSUPERVISED_VOCAB, x32.shape[0],
                       z32.shape[0]))
    n, m = _size("vocabulary_cutoff", sl.vocabulary_cutoff, VECMAP_CUTOFF, x32.shape[0], z32.shape[0])
    timer = Timer()
    ops = sl.normalize if normalized is None else tuple(normalized)
    with timer("normalize"):
        xn, zn = normalized_pair(x32, z32, ops if normalized is None else ())
    with timer("init"):
        start = similarity_init(xn, zn, n_init, csls_k=sl.csls_k, direction=sl.direction, normalize=ops)
    config_dict = {"unsupervised_vocab": n_init, **_sl_dict(sl, n, m, ops)}
    return _finish("vecmap-unsupervised", xn, zn, start, sl, n, m, seed, timer, config_dict,
                   ops if normalized is None else (), keep_target)


def vecmap_self_learning(x: np.ndarray, z: np.ndarray, seed_pairs: np.ndarray,
                         config: SelfLearningConfig | None = None, *, seed: int | None = 0,
                         method: str = "vecmap-self-learning", normalized: tuple[str, ...] | None = None,
                         keep_target: bool = False) -> MapResult:
    """VecMap's self-learning from a seed dictionary ``seed_pairs`` ``(n, 2)`` (row indices of ``x``
    and ``z``): its ``--identical`` recipe with :func:`eval.align.identical_pairs` as the seed, its
    ``--semi_supervised`` with a small dictionary, or the start from a lexicon.  ``method`` names
    the start in the result (e.g. ``"vecmap-identical"``); ``normalized`` and ``keep_target`` as
    :func:`vecmap_unsupervised`'s.
    """
    cfg = config or SelfLearningConfig()
    x32, z32 = check_spaces(x, z)
    start = _check_pairs(seed_pairs, x32.shape[0], z32.shape[0], name="seed_pairs")
    n, m = _size("vocabulary_cutoff", cfg.vocabulary_cutoff, VECMAP_CUTOFF, x32.shape[0], z32.shape[0])
    timer = Timer()
    ops = cfg.normalize if normalized is None else tuple(normalized)
    with timer("normalize"):
        xn, zn = normalized_pair(x32, z32, ops if normalized is None else ())
    return _finish(method, xn, zn, start, cfg, n, m, seed, timer, _sl_dict(cfg, n, m, ops),
                   ops if normalized is None else (), keep_target)


def _sl_dict(cfg: SelfLearningConfig, n: int, m: int, ops: tuple[str, ...]) -> dict[str, object]:
    out = dataclasses.asdict(cfg)
    out["normalize"] = ",".join(ops) or "none"
    out["cutoff_words"] = [n, m]
    return out
