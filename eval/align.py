"""Cross-lingual alignment maths: Procrustes, CSLS retrieval, dictionary induction, P@k.

Every algorithm exists once here and reproduces MUSE's numbers (facebookresearch/MUSE,
``src/utils.py``, ``src/dico_builder.py``, ``src/evaluation/word_translation.py``,
``src/trainer.py``), without its failure modes:

* exact k-nearest-neighbour search with faiss ``IndexFlatIP`` on CPU, in query batches, so a
  200k x 200k vocabulary pair never needs its full similarity matrix (MUSE's CPU fallback and
  its CSLS scoring hold ``batch x vocab`` blocks; we keep only ``batch x k``);
* CSLS rankings without MUSE's full searches: a target's ``r_S`` is computed only where it can
  change a top list, with certified bounds elsewhere (:class:`NeighbourhoodMeans`), so the
  exact mode returns the full search's answer at a fraction of its cost;
* zero vectors stay zero instead of turning into NaN when rows are L2-normalised;
* bad input (dimension mismatch, out-of-range pair indices, no pair covered) raises
  :class:`~groc_base.errors.InputError` instead of an ``assert`` or a silent NaN.

Conventions: ``src_mapped`` is the source embedding matrix already mapped into the target space
(``src @ W.T``), one row per word, rows sorted by decreasing frequency (word2vec files are), so
"the top ``max_rank`` words" are the first ``max_rank`` rows.  Cosine similarities are inner
products of L2-normalised rows.

CSLS (Conneau et al. 2018): ``CSLS(x, y) = 2 cos(x, y) - r_T(x) - r_S(y)`` where ``r_T(x)`` is the
mean cosine of the mapped source word ``x`` to its ``knn`` nearest target words and ``r_S(y)`` the
mean cosine of target word ``y`` to its ``knn`` nearest mapped source words.  In this module
``r_src`` holds ``r_T`` for every source row and ``r_tgt`` holds ``r_S`` for every target row.

Ranking trick: for a fixed query ``x``, ``r_T(x)`` is a constant, so the CSLS ranking of targets
is the ranking of ``<[2x, -1], [y, r_S(y)]>`` -- an inner product of augmented vectors.  faiss
therefore ranks by CSLS exactly, with its blocked matrix products and heaps, and ``r_T(x)`` is
subtracted from the k best scores afterwards.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import faiss
import numpy as np

from eval.vectors import vocabulary_index
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = [
    "AlignmentResult",
    "NeighbourhoodMeans",
    "align",
    "build_dictionary",
    "csls_topk",
    "identical_pairs",
    "mean_csls_criterion",
    "mean_knn_similarity",
    "nn_topk",
    "normalize_embeddings",
    "pairs_to_indices",
    "procrustes",
    "translation_precision",
]

Method = Literal["csls", "nn"]
KnnMode = Literal["exact", "approximate"]
KNN_MODES: tuple[str, ...] = ("exact", "approximate")
# Pruned CSLS ranking (NeighbourhoodMeans): r is lower-bounded from a strided sample of this
# fraction of the neighbours (exact mode; the approximate mode samples fewer), and computed
# exactly only for keys whose bound reaches a top list.  Fractions measured at 200k x 200k,
# d=300 (benchmarks/align_scale.py): a 10% sample left ~33 candidate keys per query.
BOUND_FRACTION = 0.1
APPROX_BOUND_FRACTION = 0.05
BOUND_SLACK = 1e-5  # float32 rounding between two faiss searches of the same inner products
PRUNE_MIN_KEYS = 20_000  # fewer keys: one full search is cheaper than the bookkeeping
FULL_SEARCH_FRACTION = 0.5  # once this share of r is exact, finish the rest in one search
RESCORE_FLOATS = 1 << 24  # floats per (pairs, d) gather when rescoring candidate pairs
Build = Literal["S2T", "T2S", "S2T|T2S", "S2T&T2S"]
METHODS: tuple[str, ...] = ("csls", "nn")
BUILDS: tuple[str, ...] = ("S2T", "T2S", "S2T|T2S", "S2T&T2S")
NORMALIZATIONS: tuple[str, ...] = ("center", "renorm")

# Queries per faiss call.  faiss itself works in 4096 x 1024 blocks, so memory per call is
# batch x (d + k) floats; 4096 rows keep the BLAS blocks full while staying a few MB.
DEFAULT_BATCH_SIZE = 4096


# --------------------------------------------------------------------------------------------
# input checks and small helpers
# --------------------------------------------------------------------------------------------


def _matrix(name: str, x: np.ndarray) -> np.ndarray:
    """Return ``x`` as a finite, non-empty, C-contiguous float32 matrix (no copy if it is one)."""
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise InputError(f"{name} must be a 2-d (words, dim) array, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(f"{name} is empty (shape {arr.shape}); load at least one vector")
    if not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} has dtype {arr.dtype}; pass numeric vectors")
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if not np.isfinite(arr).all():
        raise InputError(f"{name} contains nan or inf; fix or drop those vectors")
    return arr


def _two_matrices(src: np.ndarray, tgt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = _matrix("src_mapped", src)
    b = _matrix("tgt", tgt)
    if a.shape[1] != b.shape[1]:
        raise InputError(
            f"source vectors have dimension {a.shape[1]} but target vectors {b.shape[1]}; "
            "map the source into the target space first (src @ W.T) or use vectors of equal size"
        )
    return a, b


def _unit_rows(x: np.ndarray) -> np.ndarray:
    """L2-normalise rows into a new float32 array; all-zero rows stay zero (cosine 0, not NaN)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)  # (n, 1)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(x / norms, dtype=np.float32)


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{name}={value!r}; pass a positive integer")
    return int(value)


def _check_knn_mode(mode: str) -> None:
    if mode not in KNN_MODES:
        raise InputError(f"unknown knn mode {mode!r}; use one of {', '.join(KNN_MODES)}")


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise InputError(f"unknown retrieval method {method!r}; use one of {', '.join(METHODS)}")


def _check_pairs(pairs: np.ndarray, n_src: int, n_tgt: int, name: str = "pairs") -> np.ndarray:
    """Validate an ``(n, 2)`` array of (source row, target row) indices; returns int64."""
    arr = np.asarray(pairs)
    if arr.size == 0:
        raise InputError(f"{name} is empty; pass at least one (source, target) index pair")
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(f"{name} must have shape (n, 2), got {arr.shape}; use pairs_to_indices")
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{name} has dtype {arr.dtype}; pass integer row indices (see pairs_to_indices)")
    arr = arr.astype(np.int64, copy=False)
    for column, size, side in ((0, n_src, "source"), (1, n_tgt, "target")):
        bad = (arr[:, column] < 0) | (arr[:, column] >= size)
        if bad.any():
            raise InputError(
                f"{name} row {int(np.argmax(bad))} has {side} index {int(arr[bad, column][0])} outside "
                f"0..{size - 1}; build the indices against the same vocabularies as the vectors"
            )
    return arr


def _rows(src_rows: np.ndarray | Sequence[int] | None, n: int) -> np.ndarray | None:
    if src_rows is None:
        return None
    rows = np.asarray(src_rows)
    if rows.ndim != 1 or (rows.size and not np.issubdtype(rows.dtype, np.integer)):
        raise InputError(f"src_rows must be a 1-d array of integer row indices, got shape {rows.shape}")
    rows = rows.astype(np.int64, copy=False)
    if rows.size == 0:
        raise InputError("src_rows is empty; pass at least one query row or None for all rows")
    if rows.min() < 0 or rows.max() >= n:
        raise InputError(f"src_rows holds indices outside 0..{n - 1}; index rows of src_mapped")
    return rows


def _clip_k(name: str, k: int, available: int) -> int:
    if k > available:
        logger.warning("%s=%d is larger than the %d candidate words; using %d", name, k, available, available)
        return available
    return k


def _check_r(name: str, r: np.ndarray | None, n: int) -> np.ndarray | None:
    if r is None:
        return None
    arr = np.asarray(r, dtype=np.float32).reshape(-1)
    if arr.shape[0] != n:
        raise InputError(f"{name} has {arr.shape[0]} values but there are {n} words; recompute it")
    return arr


# --------------------------------------------------------------------------------------------
# normalisation and Procrustes
# --------------------------------------------------------------------------------------------


def normalize_embeddings(X: np.ndarray, ops: Sequence[str] | str) -> np.ndarray:
    """Apply MUSE's ``normalize_embeddings`` ops in order and return a NEW array.

    ``ops`` items are ``"center"`` (subtract the mean vector) and ``"renorm"`` (unit L2 rows); a
    MUSE-style string ``"renorm,center,renorm"`` is accepted too.  Unlike MUSE, zero rows stay
    zero under ``renorm``.  Float inputs keep their dtype; others become float32.
    """
    op_list = [op for op in ops.split(",") if op] if isinstance(ops, str) else list(ops)
    unknown = [op for op in op_list if op not in NORMALIZATIONS]
    if unknown:
        raise InputError(f"unknown normalisation {unknown[0]!r}; use 'center' and/or 'renorm'")
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise InputError(f"embeddings must be a 2-d (words, dim) array, got shape {arr.shape}")
    dtype = arr.dtype if np.issubdtype(arr.dtype, np.floating) else np.dtype(np.float32)
    out = np.array(arr, dtype=dtype, copy=True)  # (n, d)
    for op in op_list:
        if op == "center":
            # Accumulate the mean in float64: a float32 sum over 200k rows loses digits.
            out -= out.mean(axis=0, keepdims=True, dtype=np.float64).astype(dtype)
        else:
            norms = np.linalg.norm(out, axis=1, keepdims=True)  # (n, 1)
            norms[norms == 0] = 1.0
            out /= norms
    return out


def procrustes(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Orthogonal ``W`` minimising ``||A W^T - B||_F``: ``W = U V^T`` with ``U S V^T = svd(B^T A)``.

    ``A`` ``(n, d)`` holds the source vectors of the dictionary pairs and ``B`` ``(n, d)`` the
    target vectors, row ``i`` of each being one pair; then ``A @ W.T ~= B`` (MUSE's
    ``Trainer.procrustes``).  ``W`` is float32 unless an input is float64.
    """
    a = np.asarray(A)
    b = np.asarray(B)
    if a.ndim != 2 or b.ndim != 2:
        raise InputError(f"procrustes needs 2-d arrays, got shapes {a.shape} and {b.shape}")
    if a.shape != b.shape:
        raise InputError(
            f"procrustes got source pairs of shape {a.shape} but target pairs of shape {b.shape}; "
            "pass one row per dictionary pair on each side, with equal dimensions"
        )
    if a.shape[0] == 0:
        raise InputError("procrustes got no dictionary pairs; pass at least one (source, target) pair")
    dtype = np.result_type(a.dtype, b.dtype, np.float32)
    if not np.issubdtype(dtype, np.floating):
        dtype = np.dtype(np.float32)
    # The d x d cross-covariance is tiny; float64 keeps the SVD accurate for any n.
    m = b.astype(np.float64).T @ a.astype(np.float64)  # (d, d)
    if not np.isfinite(m).all():
        raise InputError("procrustes inputs contain nan or inf; fix the vectors first")
    u, _, vt = np.linalg.svd(m)
    return np.asarray(u @ vt, dtype=dtype)  # (d, d)


# --------------------------------------------------------------------------------------------
# exact nearest neighbours
# --------------------------------------------------------------------------------------------


def _topk_inner(
    queries: np.ndarray,
    keys: np.ndarray,
    k: int,
    batch_size: int,
    *,
    key_bias: np.ndarray | None = None,
    query_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` of ``query_scale * <q, key> - key_bias[key]`` over all keys, per query.

    ``queries`` ``(q, d)``, ``keys`` ``(m, d)`` float32.  The bias rides along as an extra
    coordinate (``[scale*q, -1] . [key, bias]``) so faiss ranks by the biased score directly.
    Returns ``(scores (q, k) float32, ids (q, k) int64)``, best first.
    """
    if key_bias is not None:
        keys = np.hstack([keys, key_bias.reshape(-1, 1).astype(np.float32)])  # (m, d + 1)
    index = faiss.IndexFlatIP(keys.shape[1])
    index.add(np.ascontiguousarray(keys, dtype=np.float32))
    del keys  # the index holds its own copy; drop the augmented one before searching
    n = queries.shape[0]
    scores = np.empty((n, k), dtype=np.float32)
    ids = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, batch_size):
        batch = queries[start : start + batch_size]  # (b, d)
        if query_scale != 1.0:
            batch = batch * np.float32(query_scale)
        if key_bias is not None:
            batch = np.hstack([batch, np.full((batch.shape[0], 1), -1.0, dtype=np.float32)])  # (b, d + 1)
        scores[start : start + batch.shape[0]], ids[start : start + batch.shape[0]] = index.search(
            np.ascontiguousarray(batch, dtype=np.float32), k
        )
    return scores, ids


def _exact_means(queries: np.ndarray, index: faiss.Index, k: int, batch_size: int) -> np.ndarray:
    """Mean of the ``k`` best inner products of each query row in ``index``; ``(q,)`` float32."""
    out = np.empty(queries.shape[0], dtype=np.float32)
    for start in range(0, queries.shape[0], batch_size):
        batch = np.ascontiguousarray(queries[start : start + batch_size])  # (b, d)
        found, _ = index.search(batch, k)  # (b, k)
        out[start : start + batch.shape[0]] = found.mean(axis=1, dtype=np.float64)
    return out


def _flat_index(rows: np.ndarray) -> faiss.Index:
    index = faiss.IndexFlatIP(rows.shape[1])
    index.add(np.ascontiguousarray(rows, dtype=np.float32))
    return index


def mean_knn_similarity(
    queries: np.ndarray,
    keys: np.ndarray,
    k: int = 10,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    assume_normalized: bool = False,
) -> np.ndarray:
    """Mean cosine of each query row to its ``k`` nearest key rows: ``r`` in CSLS, ``(n_queries,)``.

    MUSE's ``get_nn_avg_dist(emb=keys, query=queries, knn=k)``: exact search with faiss
    ``IndexFlatIP`` on L2-normalised rows, queries in batches of ``batch_size`` so memory stays
    ``O(batch_size * k)`` beyond the two matrices and the index.  Set ``assume_normalized`` when
    both inputs already have unit rows to skip the normalised copies.  This is the full search;
    CSLS retrieval itself computes ``r`` only where it can matter (:class:`NeighbourhoodMeans`).
    """
    q = _matrix("queries", queries)
    kk = _matrix("keys", keys)
    if q.shape[1] != kk.shape[1]:
        raise InputError(
            f"queries have dimension {q.shape[1]} but keys {kk.shape[1]}; map both into one space first"
        )
    k = _clip_k("k", _positive("k", k), kk.shape[0])
    batch_size = _positive("batch_size", batch_size)
    if not assume_normalized:
        q, kk = _unit_rows(q), _unit_rows(kk)
    started = time.perf_counter()
    means = _exact_means(q, _flat_index(kk), k, batch_size)
    logger.debug(
        "mean %d-nn similarity of %d queries over %d keys in %.1fs", k, q.shape[0], kk.shape[0],
        time.perf_counter() - started,
    )
    return means  # (n_queries,)


class NeighbourhoodMeans:
    """CSLS neighbourhood means ``r`` of every row of ``keys`` over ALL rows of ``neighbours``, on demand.

    ``r(y)`` is the mean cosine of key ``y`` to its ``knn`` nearest neighbour rows (MUSE's
    ``get_nn_avg_dist``).  Ranking keys for a query ``x`` by ``CSLS = 2 cos(x, y) - r(y) - r(x)``
    needs ``r(y)`` only for keys that can reach the top, so instead of one full
    ``keys x neighbours`` search (MUSE does two per evaluation) this object keeps, per key, either
    its exact ``r`` or a LOWER bound of it: the mean of its ``knn`` best cosines over a strided
    sample of the neighbours (a subset's top-``knn`` mean cannot exceed the full one).  A lower
    bound on ``r`` is an upper bound on every score, so :meth:`topk` can certify a top-``k`` list
    once the ``k``-th best exact score is at least the best bound left outside the list, computing
    exact ``r`` only for the keys whose bound reached the list.

    ``knn_mode="exact"`` certifies (the result equals the full search's, up to float32 ties);
    ``"approximate"`` bounds with a smaller sample and re-ranks a single candidate round of depth
    ``k + max(5, k // 2)`` with exact ``r`` -- no guarantee, far fewer exact ``r``.  Both log
    their parameters.  Exact values accumulate, so one object serves every ranking made under one
    mapping (evaluation, criterion and dictionary induction).  Below ``PRUNE_MIN_KEYS`` keys (or
    with ``prune=False``) the full search is simply done once: it is cheaper than bookkeeping.
    ``keys`` ``(m, d)`` and ``neighbours`` ``(n, d)`` must have unit rows; ``values`` gives an
    already computed exact ``r`` ``(m,)``.
    """

    def __init__(
        self,
        keys: np.ndarray,
        neighbours: np.ndarray,
        knn: int = 10,
        batch_size: int = DEFAULT_BATCH_SIZE,
        *,
        knn_mode: KnnMode = "exact",
        values: np.ndarray | None = None,
        prune: bool | None = None,
    ) -> None:
        _check_knn_mode(knn_mode)
        self.keys = _matrix("keys", keys)  # (m, d)
        self.neighbours = _matrix("neighbours", neighbours)  # (n, d)
        if self.keys.shape[1] != self.neighbours.shape[1]:
            raise InputError(
                f"keys have dimension {self.keys.shape[1]} but neighbours {self.neighbours.shape[1]}; "
                "map both into one space first"
            )
        m, n = self.keys.shape[0], self.neighbours.shape[0]
        self.knn = min(_positive("knn", knn), n)
        self.batch_size = _positive("batch_size", batch_size)
        self.knn_mode: KnnMode = knn_mode
        self.value = np.zeros(m, dtype=np.float32)  # (m,) exact r where self.exact, else a lower bound
        self.exact = np.zeros(m, dtype=bool)  # (m,)
        if values is not None:
            given = _check_r("values", values, m)
            assert given is not None
            self.value[:], self.exact[:] = given, True
        fraction = BOUND_FRACTION if knn_mode == "exact" else APPROX_BOUND_FRACTION
        self.sample_size = max(self.knn, math.ceil(fraction * n))
        # Pruning needs a sample smaller than the neighbours; by default also much smaller, and
        # enough keys to pay off.
        wanted = m >= PRUNE_MIN_KEYS and self.sample_size < n // 2 if prune is None else prune
        self.prune = bool(wanted) and self.sample_size < n
        self._index: faiss.Index | None = None  # all neighbours, built on first exact r
        # (key, queries, scores, ids) of the last topk call; see topk.
        self._memo: tuple[tuple[object, ...], np.ndarray, np.ndarray, np.ndarray] | None = None
        self._bounded = False
        self.exact_computed = 0  # keys whose r this object searched exactly (for the logs and benchmarks)

    def _neighbour_index(self) -> faiss.Index:
        if self._index is None:
            self._index = _flat_index(self.neighbours)
        return self._index

    def compute_exact(self, ids: np.ndarray) -> None:
        """Make ``r`` exact for the key rows ``ids`` (any order, repeats allowed)."""
        todo = np.unique(np.asarray(ids, dtype=np.int64))
        todo = todo[~self.exact[todo]]
        if todo.size == 0:
            return
        self.value[todo] = _exact_means(self.keys[todo], self._neighbour_index(), self.knn, self.batch_size)
        self.exact[todo] = True
        self.exact_computed += int(todo.size)

    def full(self) -> np.ndarray:
        """Exact ``r`` of every key, ``(m,)``: one full search of the keys not yet exact."""
        self.compute_exact(np.flatnonzero(~self.exact))
        return self.value

    def _ensure_bounds(self) -> None:
        if self._bounded:
            return
        self._bounded = True
        todo = np.flatnonzero(~self.exact)
        if todo.size == 0:
            return
        stride = max(1, self.neighbours.shape[0] // self.sample_size)
        sample = self.neighbours[::stride][: self.sample_size]  # (s, d) a fixed, deterministic subset
        started = time.perf_counter()
        bound = _exact_means(self.keys[todo], _flat_index(sample), self.knn, self.batch_size)
        # Two faiss searches can round the same inner products differently; the slack keeps the
        # lower bound a bound.
        self.value[todo] = bound - np.float32(BOUND_SLACK)
        logger.info(
            "CSLS %s mode: r lower bounds of %d keys from %d of %d neighbours (stride %d) in %.1fs",
            self.knn_mode, todo.size, sample.shape[0], self.neighbours.shape[0], stride,
            time.perf_counter() - started,
        )

    def _augmented_keys(self) -> np.ndarray:
        """``[key, r(key), 1]`` rows ``(m, d + 2)``: one inner product gives a biased, thresholded score."""
        return np.hstack([self.keys, self.value[:, None], np.ones((self.keys.shape[0], 1), dtype=np.float32)])

    def _candidates(
        self, queries: np.ndarray, threshold: np.ndarray, query_scale: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every (query row, key) whose current score bound reaches the query's ``threshold``.

        ``[s q, -1, -t] . [key, r, 1] = s <q, key> - r - t``, so one faiss range search with
        radius 0 finds them all.  Returns ``(rows (P,), keys (P,))`` int64.
        """
        index = faiss.IndexFlatIP(self.keys.shape[1] + 2)
        index.add(self._augmented_keys())
        rows: list[np.ndarray] = []
        keys: list[np.ndarray] = []
        for start in range(0, queries.shape[0], self.batch_size):
            batch = queries[start : start + self.batch_size]  # (b, d)
            augmented = np.hstack([
                np.float32(query_scale) * batch,
                np.full((batch.shape[0], 1), -1.0, dtype=np.float32),
                -threshold[start : start + batch.shape[0], None],
            ]).astype(np.float32)  # (b, d + 2)
            # faiss keeps scores strictly above the radius; the slack keeps the threshold's own keys.
            lims, _, found = index.range_search(augmented, -BOUND_SLACK)
            rows.append(start + np.repeat(np.arange(batch.shape[0]), np.diff(lims).astype(np.int64)))
            keys.append(found.astype(np.int64))
        return np.concatenate(rows), np.concatenate(keys)

    def _best_of_pairs(
        self, queries: np.ndarray, rows: np.ndarray, keys: np.ndarray, k: int, query_scale: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` per query row among its candidate keys (``rows``/``keys`` ``(P,)`` pairs)."""
        scores = np.empty(rows.shape[0], dtype=np.float32)  # (P,)
        step = max(1, RESCORE_FLOATS // queries.shape[1])
        for start in range(0, rows.shape[0], step):
            r, c = rows[start : start + step], keys[start : start + step]
            cos = np.einsum("pd,pd->p", queries[r], self.keys[c])  # (p,)
            scores[start : start + step] = query_scale * cos - self.value[c]
        order = np.lexsort((-scores, rows))  # by row, best first within a row
        rows, keys, scores = rows[order], keys[order], scores[order]
        first = np.searchsorted(rows, np.arange(queries.shape[0]))  # (q,) where each row's run starts
        rank = np.arange(rows.shape[0]) - first[rows]  # (P,) position within the row's run
        keep = rank < k
        out_scores = np.full((queries.shape[0], k), -np.inf, dtype=np.float32)
        out_ids = np.full((queries.shape[0], k), -1, dtype=np.int64)
        out_scores[rows[keep], rank[keep]] = scores[keep]
        out_ids[rows[keep], rank[keep]] = keys[keep]
        return out_scores, out_ids

    def topk(self, queries: np.ndarray, k: int, query_scale: float = 2.0) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` keys by ``query_scale * <q, key> - r(key)`` per query row (unit rows ``(q, d)``).

        Returns ``(scores (q, k) float32, ids (q, k) int64)``, best first, with exact ``r`` in
        every returned score.  Exact mode: the ``2k`` best keys by bound get exact ``r``.  A row
        whose ``k``-th best exact score is at least the last listed bound is done (every key
        outside the list is bounded below it).  For the other rows that score is a floor under
        the true ``k``-th best, so only keys whose bound reaches it can be in the top ``k``: one
        range search finds them, they get exact ``r``, and the answer is the best ``k`` among
        them.  Approximate mode: one round of depth ``k + max(5, k // 2)`` by bound, re-ranked
        with exact ``r``.  The last answer is memoised: the refinement's criterion and the next
        induction ask the same question of one mapping (``queries`` must not change in place).
        """
        m = self.keys.shape[0]
        k = min(k, m)
        key = (queries.__array_interface__["data"][0], queries.shape, queries.strides, k, query_scale)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[2].copy(), self._memo[3].copy()
        if not self.prune:
            scores, ids = self._full_topk(queries, k, query_scale)
        else:
            scores, ids = self._pruned_topk(queries, k, query_scale)
        # The memo holds `queries` itself, so its memory cannot be reused by another array.
        self._memo = (key, queries, scores.copy(), ids.copy())
        return scores, ids

    def _full_topk(self, queries: np.ndarray, k: int, query_scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Plain ranking: exact ``r`` of every key (one full search of those not yet exact)."""
        return _topk_inner(queries, self.keys, k, self.batch_size, key_bias=self.full(), query_scale=query_scale)

    def _pruned_topk(self, queries: np.ndarray, k: int, query_scale: float) -> tuple[np.ndarray, np.ndarray]:
        m = self.keys.shape[0]
        self._ensure_bounds()
        started, exact_before = time.perf_counter(), self.exact_computed
        # Exact mode: the first round's depth sets the floor; 2k by bound nearly always holds the
        # true k best (a floor of k alone drew ~25% more candidates at 200k x 200k).
        depth = min(m, k + max(5, k // 2)) if self.knn_mode == "approximate" else min(m, 2 * k)
        bounds, found = _topk_inner(
            queries, self.keys, depth, self.batch_size, key_bias=self.value, query_scale=query_scale
        )  # (q, depth) upper bounds, best first
        self.compute_exact(found)
        rows = np.repeat(np.arange(queries.shape[0]), depth)  # (q * depth,)
        scores, ids = self._best_of_pairs(queries, rows, found.reshape(-1), k, query_scale)  # exact, in the list
        pairs = rows.shape[0]
        if self.knn_mode == "exact" and depth < m:
            pending = np.flatnonzero(scores[:, -1] < bounds[:, -1])  # rows a key outside the list may beat
            if pending.size:
                sub = queries[pending]
                cand_rows, candidates = self._candidates(sub, scores[pending, -1], query_scale)  # (P,), (P,)
                pairs += cand_rows.shape[0]
                unique = np.unique(candidates)
                if self.exact.sum() + np.count_nonzero(~self.exact[unique]) > FULL_SEARCH_FRACTION * m:
                    # The bounds were too loose to pay off: finish r in one search and rank plainly.
                    scores[pending], ids[pending] = self._full_topk(sub, k, query_scale)
                else:
                    self.compute_exact(unique)
                    scores[pending], ids[pending] = self._best_of_pairs(sub, cand_rows, candidates, k, query_scale)
            logger.debug("%d of %d rows needed the range search", pending.size, queries.shape[0])
        self._log_topk(k, queries.shape[0], exact_before, started, pairs)
        return scores, ids

    def _log_topk(self, k: int, n_queries: int, exact_before: int, started: float, pairs: int) -> None:
        logger.info(
            "CSLS %s top-%d of %d queries over %d keys: %d candidate pairs, exact r for %d more keys "
            "(%d of %d now) in %.1fs",
            self.knn_mode, k, n_queries, self.keys.shape[0], pairs, self.exact_computed - exact_before,
            int(self.exact.sum()), self.keys.shape[0], time.perf_counter() - started,
        )


def _means(
    r: np.ndarray | NeighbourhoodMeans | None,
    name: str,
    keys: np.ndarray,
    neighbours: np.ndarray,
    knn: int,
    batch_size: int,
    knn_mode: KnnMode,
) -> NeighbourhoodMeans:
    """Wrap ``r`` (None: compute on demand; an array: exact values) for ``keys`` over ``neighbours``."""
    if isinstance(r, NeighbourhoodMeans):
        if r.keys.shape[0] != keys.shape[0] or r.neighbours.shape[0] != neighbours.shape[0]:
            raise InputError(
                f"{name} was computed for {r.keys.shape[0]} x {r.neighbours.shape[0]} words but there are "
                f"{keys.shape[0]} x {neighbours.shape[0]}; recompute it for this mapping"
            )
        return r
    values = _check_r(name, r, keys.shape[0])
    return NeighbourhoodMeans(keys, neighbours, knn, batch_size, knn_mode=knn_mode, values=values)


def nn_topk(
    src_mapped: np.ndarray,
    tgt: np.ndarray,
    k_top: int,
    src_rows: np.ndarray | Sequence[int] | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    assume_normalized: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k_top`` targets by plain cosine for each query row (``src_rows``, default all).

    Returns ``(indices (q, k_top) int64, scores (q, k_top) float32)``, best first.
    """
    src, tgt_m = _two_matrices(src_mapped, tgt)
    rows = _rows(src_rows, src.shape[0])
    k_top = _clip_k("k_top", _positive("k_top", k_top), tgt_m.shape[0])
    batch_size = _positive("batch_size", batch_size)
    queries = src if rows is None else src[rows]  # (q, d)
    if not assume_normalized:
        queries, tgt_m = _unit_rows(queries), _unit_rows(tgt_m)
    scores, ids = _topk_inner(queries, tgt_m, k_top, batch_size)
    return ids, scores


def csls_topk(
    src_mapped: np.ndarray,
    tgt: np.ndarray,
    k_top: int,
    knn: int = 10,
    src_rows: np.ndarray | Sequence[int] | None = None,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    assume_normalized: bool = False,
    r_src: np.ndarray | NeighbourhoodMeans | None = None,
    r_tgt: np.ndarray | NeighbourhoodMeans | None = None,
    knn_mode: KnnMode = "exact",
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``k_top`` targets by CSLS for each query row (``src_rows``, default all rows).

    ``CSLS(Wx, y) = 2 cos(Wx, y) - r_T(Wx) - r_S(y)``; ``r_S`` is over ALL rows of
    ``src_mapped`` and ``r_T`` over all rows of ``tgt``, as in MUSE.  Neighbourhood means can be
    passed to share them between calls on one mapping (``r_src``: ``r_T`` of every source row,
    ``r_tgt``: ``r_S`` of every target row), as arrays of exact values or as
    :class:`NeighbourhoodMeans`, which compute ``r_S`` only for the targets that can reach a
    query's top ``k_top`` (certified in ``knn_mode="exact"``).  The score matrix is never
    materialised: faiss returns only the best few per query.

    Returns ``(indices (q, k_top) int64, scores (q, k_top) float32)``, best first.
    """
    _check_knn_mode(knn_mode)
    src, tgt_m = _two_matrices(src_mapped, tgt)
    rows = _rows(src_rows, src.shape[0])
    k_top = _clip_k("k_top", _positive("k_top", k_top), tgt_m.shape[0])
    knn = _positive("knn", knn)
    batch_size = _positive("batch_size", batch_size)
    if not assume_normalized:
        src, tgt_m = _unit_rows(src), _unit_rows(tgt_m)
    queries = src if rows is None else src[rows]  # (q, d)
    means_tgt = _means(r_tgt, "r_tgt", tgt_m, src, knn, batch_size, knn_mode)
    scores, ids = means_tgt.topk(queries, k_top)
    if r_src is None:
        # Only the queries' own r_T: a search of q rows.
        r_query = mean_knn_similarity(queries, tgt_m, knn, batch_size, assume_normalized=True)  # (q,)
    else:
        means_src = _means(r_src, "r_src", src, tgt_m, knn, batch_size, knn_mode)
        query_rows = np.arange(src.shape[0]) if rows is None else rows
        means_src.compute_exact(query_rows)
        r_query = means_src.value[query_rows]
    scores -= r_query[:, None]
    return ids, scores


# --------------------------------------------------------------------------------------------
# dictionary induction
# --------------------------------------------------------------------------------------------


def build_dictionary(
    src_mapped: np.ndarray,
    tgt: np.ndarray,
    method: Method = "csls",
    build: Build = "S2T&T2S",
    max_rank: int | None = 15000,
    knn: int = 10,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    assume_normalized: bool = False,
    r_src: np.ndarray | NeighbourhoodMeans | None = None,
    r_tgt: np.ndarray | NeighbourhoodMeans | None = None,
    knn_mode: KnnMode = "exact",
) -> np.ndarray:
    """Induce a dictionary from the current mapping, as MUSE's ``build_dictionary``; ``(n, 2)`` int64.

    S2T: each of the top ``max_rank`` source words takes its best target among ALL target
    words (``method`` ``"csls"`` or ``"nn"``); the pair is kept only if that target is itself
    among the top ``max_rank`` target words.  T2S is the mirror image.  ``build`` combines them:
    ``"S2T"``, ``"T2S"``, ``"S2T|T2S"`` (union) or ``"S2T&T2S"`` (intersection).  ``max_rank``
    ``None`` or ``0`` uses every word (MUSE's ``--dico_max_rank 0``).

    Differences from MUSE, on purpose: MUSE keeps pairs whose indices are ``<= max_rank`` (one
    word too many); here "top ``max_rank``" means indices ``< max_rank``.  An empty result is an
    empty ``(0, 2)`` array with a warning, where MUSE returns ``None`` and crashes later.  Rows
    are returned sorted by (source, target); MUSE's confidence order only matters for its
    ``dico_max_size`` / ``dico_threshold`` options, which the toolkit does not use.
    ``r_src`` / ``r_tgt`` (CSLS neighbourhood means over all words, see :func:`csls_topk`) may be
    passed to reuse them; S2T needs only ``r_tgt``, T2S only ``r_src``.  The best target under
    CSLS is found among ALL targets without computing ``r`` for all of them (exact in
    ``knn_mode="exact"``: see :class:`NeighbourhoodMeans`).
    """
    _check_method(method)
    _check_knn_mode(knn_mode)
    if build not in BUILDS:
        raise InputError(f"unknown dictionary build {build!r}; use one of {', '.join(BUILDS)}")
    src, tgt_m = _two_matrices(src_mapped, tgt)
    knn = _positive("knn", knn)
    batch_size = _positive("batch_size", batch_size)
    if max_rank is not None and (isinstance(max_rank, bool) or max_rank < 0):
        raise InputError(f"max_rank={max_rank!r}; pass a positive rank, or 0/None for all words")
    limit = int(max_rank) if max_rank else max(src.shape[0], tgt_m.shape[0])
    if not assume_normalized:
        src, tgt_m = _unit_rows(src), _unit_rows(tgt_m)
    started = time.perf_counter()

    def best(queries: np.ndarray, keys: np.ndarray, neighbours: np.ndarray,
             r: np.ndarray | NeighbourhoodMeans | None, name: str) -> np.ndarray:
        """Row of the best key for each query, ``(q,)``; the query's own r cannot change an argmax.

        ``r`` of a key is its mean similarity to its nearest ``neighbours`` (all words of the
        queries' side).
        """
        if method == "nn":
            return _topk_inner(queries, keys, 1, batch_size)[1][:, 0]
        return _means(r, name, keys, neighbours, knn, batch_size, knn_mode).topk(queries, 1)[1][:, 0]

    n_tgt = tgt_m.shape[0]
    codes: list[np.ndarray] = []  # each pair encoded as src * n_tgt + tgt for set operations
    sizes: dict[str, int] = {}
    if "S2T" in build:
        n_q = min(limit, src.shape[0])
        targets = best(src[:n_q], tgt_m, src, r_tgt, "r_tgt")  # (n_q,)
        keep = targets < limit
        codes.append(np.arange(n_q, dtype=np.int64)[keep] * n_tgt + targets[keep])
        sizes["S2T"] = int(keep.sum())
    if "T2S" in build:
        n_q = min(limit, n_tgt)
        sources = best(tgt_m[:n_q], src, tgt_m, r_src, "r_src")  # (n_q,) source rows
        keep = sources < limit
        codes.append(sources[keep] * n_tgt + np.arange(n_q, dtype=np.int64)[keep])
        sizes["T2S"] = int(keep.sum())

    if build == "S2T|T2S":
        merged = np.union1d(codes[0], codes[1])
    elif build == "S2T&T2S":
        merged = np.intersect1d(codes[0], codes[1])
    else:
        merged = np.unique(codes[0])
    dico = np.stack([merged // n_tgt, merged % n_tgt], axis=1).astype(np.int64)  # (n, 2)
    logger.info(
        "induced %s %s dictionary of %d pairs from the top %d words (%s) in %.1fs",
        build,
        method,
        dico.shape[0],
        limit,
        ", ".join(f"{key}: {value}" for key, value in sizes.items()),
        time.perf_counter() - started,
    )
    if dico.shape[0] == 0:
        logger.warning("the induced %s dictionary is empty; the mapping aligns nothing yet", build)
    return dico


def mean_csls_criterion(
    src_mapped: np.ndarray,
    tgt: np.ndarray,
    n_src: int = 10000,
    knn: int = 10,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    assume_normalized: bool = False,
    r_tgt: np.ndarray | NeighbourhoodMeans | None = None,
    knn_mode: KnnMode = "exact",
) -> float:
    """MUSE's unsupervised model-selection criterion ``mean_cosine-csls_knn_10-S2T-10000``.

    Induce the S2T CSLS dictionary of the top ``n_src`` source words (targets also limited to
    the top ``n_src``) and return the mean cosine of its pairs.  It uses no gold dictionary, so
    it can pick the best refinement iteration without peeking at evaluation data.  Returns
    ``-inf`` when the dictionary is empty (MUSE: ``-1e9``).
    """
    src, tgt_m = _two_matrices(src_mapped, tgt)
    n_src = _positive("n_src", n_src)
    if not assume_normalized:
        src, tgt_m = _unit_rows(src), _unit_rows(tgt_m)
    dico = build_dictionary(
        src,
        tgt_m,
        method="csls",
        build="S2T",
        max_rank=n_src,
        knn=knn,
        batch_size=batch_size,
        assume_normalized=True,
        r_tgt=r_tgt,
        knn_mode=knn_mode,
    )
    if dico.shape[0] == 0:
        return float("-inf")
    cosines = np.einsum("ij,ij->i", src[dico[:, 0]], tgt_m[dico[:, 1]], dtype=np.float64)  # (n,)
    return float(cosines.mean())


# --------------------------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------------------------


def translation_precision(
    src_mapped: np.ndarray,
    tgt: np.ndarray,
    pairs: np.ndarray,
    method: Method = "csls",
    ks: Sequence[int] = (1, 5, 10),
    knn: int = 10,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    knn_mode: KnnMode = "exact",
    return_ranks: bool = False,
) -> dict[str, object]:
    """Word-translation precision@k, exactly MUSE's ``get_word_translation_accuracy``.

    Both sides are L2-normalised; the queries are the UNIQUE source words of ``pairs``
    (``(n, 2)`` row indices, e.g. from :func:`pairs_to_indices`), retrieved among ALL target
    words; a query is correct at ``k`` when ANY of its gold targets is in its top ``k``.
    Precision is averaged over unique source words and reported in percent, like MUSE.

    Returns ``{"method": "csls_knn_10" | "nn", "n_pairs", "n_queries",
    "precision_at_{k}" (percent), "correct_at_{k}" (query count) for each k}``.
    """
    _check_method(method)
    src, tgt_m = _two_matrices(src_mapped, tgt)
    gold = _check_pairs(pairs, src.shape[0], tgt_m.shape[0])
    k_list = [_positive("k", k) for k in ks]
    if not k_list:
        raise InputError("ks is empty; pass the cut-offs to report, e.g. (1, 5, 10)")
    knn = _positive("knn", knn)
    src, tgt_m = _unit_rows(src), _unit_rows(tgt_m)

    queries, inverse = np.unique(gold[:, 0], return_inverse=True)  # (q,), (n_pairs,)
    inverse = inverse.reshape(-1)
    k_max = min(max(k_list), tgt_m.shape[0])
    if method == "csls":
        top, _ = csls_topk(
            src, tgt_m, k_max, knn, queries, batch_size=batch_size, assume_normalized=True, knn_mode=knn_mode
        )
    else:
        top, _ = nn_topk(src, tgt_m, k_max, queries, batch_size=batch_size, assume_normalized=True)

    # Rank of each gold pair's target in its query's list (k_max when absent), then the best rank
    # over all golds of a query: "correct at k" <=> best rank < k (the any-gold rule).
    hits = top[inverse] == gold[:, 1:2]  # (n_pairs, k_max)
    pair_rank = np.where(hits.any(axis=1), hits.argmax(axis=1), k_max)  # (n_pairs,)
    best_rank = np.full(queries.shape[0], k_max, dtype=np.int64)  # (q,)
    np.minimum.at(best_rank, inverse, pair_rank)

    result: dict[str, object] = {
        "method": f"csls_knn_{knn}" if method == "csls" else "nn",
        "n_pairs": int(gold.shape[0]),
        "n_queries": int(queries.shape[0]),
    }
    for k in k_list:
        correct = int((best_rank < k).sum())
        result[f"precision_at_{k}"] = 100.0 * correct / queries.shape[0]
        result[f"correct_at_{k}"] = correct
        logger.info(
            "%d source words - %s - precision at k = %d: %.2f",
            queries.shape[0],
            result["method"],
            k,
            result[f"precision_at_{k}"],
        )
    if return_ranks:
        # Per query (sorted source row): its best gold rank, k_max when no gold is in the top k_max.
        result["queries"] = queries
        result["best_rank"] = best_rank
    return result


def pairs_to_indices(
    pairs: Sequence[tuple[str, str]],
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    lower: bool = True,
) -> tuple[np.ndarray, dict[str, int]]:
    """Turn word pairs into ``(n, 2)`` row indices, dropping pairs with an unknown word.

    Like MUSE's ``load_dictionary``: a word maps to the first row holding it (lowercased on both
    sides when ``lower``), pairs are sorted by source row (stable), duplicates are kept.  The
    stats are ``pairs``, ``found``, ``not_found``, ``not_found_source``, ``not_found_target``
    and ``unique_source`` (distinct source words among the found pairs).
    """
    if len(pairs) == 0:
        raise InputError("the dictionary has no pairs; check the file and its language direction")
    src_index = vocabulary_index(src_words, lower)
    tgt_index = vocabulary_index(tgt_words, lower)
    if lower:
        pairs = [(a.lower(), b.lower()) for a, b in pairs]
    src_ids = np.fromiter((src_index.get(a, -1) for a, _ in pairs), dtype=np.int64, count=len(pairs))
    tgt_ids = np.fromiter((tgt_index.get(b, -1) for _, b in pairs), dtype=np.int64, count=len(pairs))
    found = (src_ids >= 0) & (tgt_ids >= 0)
    stats = {
        "pairs": len(pairs),
        "found": int(found.sum()),
        "not_found": int((~found).sum()),
        "not_found_source": int((src_ids < 0).sum()),
        "not_found_target": int((tgt_ids < 0).sum()),
        "unique_source": int(np.unique(src_ids[found]).shape[0]),
    }
    if stats["found"] == 0:
        raise InputError(
            f"none of the {len(pairs)} dictionary pairs has both words in the vocabularies "
            f"({stats['not_found_source']} unknown source, {stats['not_found_target']} unknown target words); "
            "check the language direction (en-es vs es-en), the casing (lower=True), or raise max_vocab"
        )
    indices = np.stack([src_ids[found], tgt_ids[found]], axis=1)  # (found, 2)
    indices = indices[np.argsort(indices[:, 0], kind="stable")]
    logger.info(
        "found %d pairs of words in the dictionary (%d unique); %d other pairs contained at least one "
        "unknown word (%d source, %d target)",
        stats["found"],
        stats["unique_source"],
        stats["not_found"],
        stats["not_found_source"],
        stats["not_found_target"],
    )
    return indices, stats


def identical_pairs(src_words: Sequence[str], tgt_words: Sequence[str]) -> np.ndarray:
    """Seed dictionary of words spelled identically on both sides (``--seed identical``).

    MUSE's ``load_identical_char_dico``: one pair per distinct word present in both vocabularies
    (first occurrences), sorted by source row; ``(n, 2)`` int64.
    """
    src_index = vocabulary_index(src_words)
    tgt_index = vocabulary_index(tgt_words)
    common = src_index.keys() & tgt_index.keys()  # set intersection in C
    if not common:
        raise InputError(
            "no word is spelled identically in both vocabularies; use a seed dictionary instead of "
            "the identical-strings seed"
        )
    words = list(common)
    src_ids = np.fromiter(map(src_index.__getitem__, words), dtype=np.int64, count=len(words))
    tgt_ids = np.fromiter(map(tgt_index.__getitem__, words), dtype=np.int64, count=len(words))
    order = np.argsort(src_ids, kind="stable")
    logger.info("found %d identical character strings", len(words))
    return np.stack([src_ids[order], tgt_ids[order]], axis=1)  # (n, 2)


# --------------------------------------------------------------------------------------------
# Procrustes refinement
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AlignmentResult:
    """Outcome of :func:`align`.

    ``W`` ``(d, d)`` maps rows of the NORMALISED source space into the normalised target space:
    use :meth:`map_source` / :meth:`prepare_target` (or apply ``normalize_embeddings`` with
    ``normalize`` yourself) before :func:`translation_precision`.  ``history`` has one dict per
    iteration: ``iteration``, ``dictionary_size`` (pairs the Procrustes step was solved on) and
    ``criterion`` (:func:`mean_csls_criterion` after that step).
    """

    W: np.ndarray
    best_iteration: int
    history: list[dict[str, float | int]] = field(default_factory=list)
    normalize: tuple[str, ...] = ()

    @property
    def best_criterion(self) -> float:
        return float(self.history[self.best_iteration]["criterion"])

    def prepare_target(self, tgt: np.ndarray) -> np.ndarray:
        """Target vectors in the space ``W`` maps into (``normalize`` applied)."""
        return normalize_embeddings(tgt, self.normalize)

    def map_source(self, src: np.ndarray) -> np.ndarray:
        """Source vectors mapped into the target space: ``normalize(src) @ W.T``, ``(n, d)``."""
        return normalize_embeddings(src, self.normalize) @ self.W.T


def align(
    src: np.ndarray,
    tgt: np.ndarray,
    train_pairs: np.ndarray,
    n_refinement: int = 5,
    normalize: Sequence[str] = (),
    dico_build: Build = "S2T&T2S",
    dico_max_rank: int | None = 10000,
    method: Method = "csls",
    *,
    knn: int = 10,
    criterion_n_src: int = 10000,
    batch_size: int = DEFAULT_BATCH_SIZE,
    knn_mode: KnnMode = "exact",
) -> AlignmentResult:
    """Supervised Procrustes alignment with iterative refinement (MUSE's ``supervised.py``).

    Iteration 0 solves Procrustes on ``train_pairs`` (``(n, 2)`` row indices of ``src`` and
    ``tgt``); each of the ``n_refinement`` further iterations induces a dictionary from the
    current mapping with :func:`build_dictionary` (``method``, ``dico_build``, ``dico_max_rank``,
    ``knn``) and solves Procrustes on it.  After every iteration :func:`mean_csls_criterion`
    scores the mapping, and the best-scoring iteration's ``W`` is returned.

    Model selection differs from MUSE on purpose: MUSE's supervised script keeps the iteration
    with the best P@1 on the EVALUATION dictionary (``VALIDATION_METRIC_SUP``), which reports a
    test score tuned on the test set.  Here selection uses only the unsupervised mean-cosine
    CSLS criterion, never gold pairs; evaluate afterwards with :func:`translation_precision`
    on ``result.map_source(src)`` and ``result.prepare_target(tgt)``.

    ``normalize`` (``"center"``, ``"renorm"``, in order) is applied to both sides first, like
    MUSE's ``--normalize_embeddings``; the default ``()`` is MUSE's default.  If an induced
    dictionary comes out empty, refinement stops and the best mapping so far is kept.
    """
    n_refinement = int(n_refinement)
    if n_refinement < 0:
        raise InputError(f"n_refinement={n_refinement}; pass 0 or more refinement iterations")
    _check_method(method)
    _check_knn_mode(knn_mode)
    if dico_build not in BUILDS:
        raise InputError(f"unknown dictionary build {dico_build!r}; use one of {', '.join(BUILDS)}")
    knn = _positive("knn", knn)
    criterion_n_src = _positive("criterion_n_src", criterion_n_src)
    batch_size = _positive("batch_size", batch_size)
    ops = tuple(op for op in normalize.split(",") if op) if isinstance(normalize, str) else tuple(normalize)
    src_m, tgt_m = _two_matrices(src, tgt)
    seed = _check_pairs(train_pairs, src_m.shape[0], tgt_m.shape[0], name="train_pairs")
    if ops:
        src_m = np.ascontiguousarray(normalize_embeddings(src_m, ops), dtype=np.float32)  # (n_src, d)
        tgt_m = np.ascontiguousarray(normalize_embeddings(tgt_m, ops), dtype=np.float32)  # (n_tgt, d)
    tgt_unit = _unit_rows(tgt_m)  # (n_tgt, d)

    history: list[dict[str, float | int]] = []
    best_w: np.ndarray | None = None
    best_iteration = 0
    best_criterion = -math.inf
    dico = seed
    mapped_unit: np.ndarray | None = None
    r_tgt: NeighbourhoodMeans | None = None
    r_src: NeighbourhoodMeans | None = None
    for iteration in range(n_refinement + 1):
        started = time.perf_counter()
        if iteration > 0:
            assert mapped_unit is not None
            dico = build_dictionary(
                mapped_unit,
                tgt_unit,
                method=method,
                build=dico_build,
                max_rank=dico_max_rank,
                knn=knn,
                batch_size=batch_size,
                assume_normalized=True,
                r_src=r_src if method == "csls" else None,
                r_tgt=r_tgt if method == "csls" else None,
                knn_mode=knn_mode,
            )
            if dico.shape[0] == 0:
                logger.warning("iteration %d: empty induced dictionary, stopping refinement", iteration)
                break
        w = procrustes(src_m[dico[:, 0]], tgt_m[dico[:, 1]])  # (d, d)
        mapped_unit = _unit_rows(src_m @ w.T)  # (n_src, d)
        # r_S of the targets and r_T of the sources under this mapping, computed where a ranking
        # needs them and shared by the criterion and the next iteration's induction.
        r_tgt = NeighbourhoodMeans(tgt_unit, mapped_unit, knn, batch_size, knn_mode=knn_mode)
        r_src = NeighbourhoodMeans(mapped_unit, tgt_unit, knn, batch_size, knn_mode=knn_mode)
        criterion = mean_csls_criterion(
            mapped_unit,
            tgt_unit,
            n_src=criterion_n_src,
            knn=knn,
            batch_size=batch_size,
            assume_normalized=True,
            r_tgt=r_tgt,
            knn_mode=knn_mode,
        )
        history.append({"iteration": iteration, "dictionary_size": int(dico.shape[0]), "criterion": criterion})
        logger.info(
            "iteration %d: procrustes on %d pairs, mean cosine csls criterion %.5f (%.1fs)",
            iteration,
            dico.shape[0],
            criterion,
            time.perf_counter() - started,
        )
        if best_w is None or criterion > best_criterion:
            best_w, best_iteration, best_criterion = w, iteration, criterion
    assert best_w is not None
    logger.info("best iteration %d with criterion %.5f", best_iteration, best_criterion)
    return AlignmentResult(W=best_w, best_iteration=best_iteration, history=history, normalize=ops)
