"""The k-nearest-neighbour engine behind cross-lingual retrieval: exact top-k by cosine and by CSLS.

Split from :mod:`eval.align` (Procrustes, dictionary induction, P@k), which ranks through it:

* :func:`nn_topk` and :func:`csls_topk`: the best targets of each query by plain cosine or by
  CSLS, from one exact kernel (:func:`_search`: NumPy GEMM per key block merged into faiss's
  top-k heaps; never a full score matrix);
* :func:`mean_knn_similarity`: the CSLS neighbourhood means ``r`` (MUSE's ``get_nn_avg_dist``);
* :class:`NeighbourhoodMeans`: ``r`` computed only where it can change a top list, with certified
  lower bounds elsewhere (``knn_mode="exact"``), or one re-ranked candidate round
  (``"approximate"``);
* :func:`sweep`: dictionary induction's queries scored once against every key, giving their own
  exact ``r``, bounds of every key's ``r`` and the first candidate round together;
* the input checks the package shares.

CSLS (Conneau et al. 2018): ``CSLS(x, y) = 2 cos(x, y) - r_T(x) - r_S(y)``. For a fixed query
``x``, ``r_T(x)`` is a constant, so the ranking of targets is that of ``<[2x, -1], [y, r_S(y)]>``,
so each key block's scores are ``2 <x, y>`` less ``r_S(y)``, ranked exactly, and ``r_T(x)`` is
subtracted from the k best scores afterwards.  Rows are L2-normalised (zero rows stay zero), so inner
products are cosines.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator, Sequence
from typing import Literal, NamedTuple

import faiss
import numpy as np

from eval.normalize import safe_row_norms
from groc_base.checks import is_int
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = [
    "APPROX_BOUND_FRACTION",
    "BOUND_FRACTION",
    "DEFAULT_BATCH_SIZE",
    "KNN_MODES",
    "KnnMode",
    "NeighbourhoodMeans",
    "PRUNE_MIN_KEYS",
    "Prior",
    "csls_topk",
    "mapping_change",
    "mean_knn_similarity",
    "nn_topk",
    "sweep",
]

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

# Queries per faiss call.  faiss itself works in 4096 x 1024 blocks, so memory per call is
# batch x (d + k) floats; 4096 rows keep the BLAS blocks full while staying a few MB.
DEFAULT_BATCH_SIZE = 4096


class Prior(NamedTuple):
    """What the previous mapping's :class:`NeighbourhoodMeans` knew, for the next mapping of the same words.

    ``lower`` and ``upper`` ``(m,)`` bound each key's ``r`` under the previous mapping (equal where
    it was exact, ``upper`` infinite where unknown); ``delta`` bounds how far any cosine between
    the two sides can move between the mappings: for orthogonal maps ``W1`` and ``W2``,
    ``|cos(W2 x, y) - cos(W1 x, y)| <= ||W2 - W1||_2`` for unit ``x``, ``y``, and a mean of the
    top ``knn`` values moves no more than each value.  So the new ``r`` lies in
    ``[lower - delta, upper + delta]``, and the bounds carry from refinement to refinement.
    """

    lower: np.ndarray
    upper: np.ndarray
    delta: float

    @classmethod
    def of(cls, means: NeighbourhoodMeans, delta: float) -> Prior:
        """The bounds ``means`` holds, moved by at most ``delta``."""
        return cls(means.value.copy(), means.upper.copy(), float(delta))


def mapping_change(w_old: np.ndarray, w_new: np.ndarray) -> float:
    """``||w_new - w_old||_2`` (spectral norm, in float64): the most any unit vector's image moves,
    hence the most a cosine between a mapped source word and a target word can change."""
    return float(np.linalg.norm(np.asarray(w_new, np.float64) - np.asarray(w_old, np.float64), 2))


# --------------------------------------------------------------------------------------------
# input checks shared by the eval package
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
    return np.ascontiguousarray(x / safe_row_norms(x), dtype=np.float32)


def _positive(name: str, value: int) -> int:
    if not is_int(value, numpy=True) or value < 1:
        raise InputError(f"{name}={value!r}; pass a positive integer")
    return int(value)


def _check_knn_mode(mode: str) -> None:
    if mode not in KNN_MODES:
        raise InputError(f"unknown knn mode {mode!r}; use one of {', '.join(KNN_MODES)}")


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
# exact nearest neighbours
# --------------------------------------------------------------------------------------------


# Keys per GEMM block of the blocked kernels: a (batch, KEY_BLOCK) float32 score slab is
# reused for every block (4096 x 8192: 128 MiB), small enough to stay in memory bounds and
# large enough for full-speed GEMM (measured 150-160 GFLOPS on 2 cores at 4096 x 8192 x 300).
KEY_BLOCK = 8192
# Neighbours per step when candidate keys are refuted (NeighbourhoodMeans._tighten): whole
# KEY_BLOCKs, so a key's exact r sees the GEMM blocks of _search.
TIGHTEN_CHUNK = 3 * KEY_BLOCK


def _score_blocks(
    queries: np.ndarray,
    keys: np.ndarray,
    *,
    key_bias: np.ndarray | None = None,
    query_scale: float = 1.0,
    width: int = KEY_BLOCK,
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(start, scores)``: ``query_scale * <q, key> - key_bias[key]`` for ``keys[start:start + b]``.

    ``queries`` ``(q, d)`` and ``keys`` ``(m, d)`` float32, ``width`` keys per block;
    ``scores`` ``(q, b)`` is C-contiguous and lives in one reused buffer, valid until the next
    block.  The GEMM is NumPy's (its BLAS picks this CPU's kernels), the bias one in-place
    subtraction per block: no ``(m, d + 1)`` augmented copy.
    """
    if query_scale != 1.0:
        queries = queries * np.float32(query_scale)  # (q, d) scaled once, not per block
    width = min(width, keys.shape[0])
    buffer = np.empty((queries.shape[0], width), dtype=np.float32)  # (q, width)
    for start in range(0, keys.shape[0], width):
        block = keys[start : start + width]  # (b, d)
        # (q, b) C-contiguous in the buffer's first q * b floats: the short last block reuses the
        # slab too (a fresh (q, b) array there doubled the peak: +250 MiB for MUSE's criterion of a
        # 22k-word en-fr map, whose sweep slab is 128 MiB).
        scores = buffer.reshape(-1)[: queries.shape[0] * block.shape[0]].reshape(queries.shape[0], block.shape[0])
        np.matmul(queries, block.T, out=scores)
        if key_bias is not None:
            scores -= key_bias[start : start + block.shape[0]]
        yield start, scores


def _search(
    queries: np.ndarray,
    keys: np.ndarray,
    k: int,
    *,
    key_bias: np.ndarray | None = None,
    query_scale: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``k`` of ``query_scale * <q, key> - key_bias[key]`` among ``keys`` rows: ``(scores, ids)`` ``(q, k)``.

    Blocked NumPy GEMM (:func:`_score_blocks`) merged block by block into faiss's own top-``k``
    heaps (``float_minheap_array_t.addn``, the merge ``faiss.knn`` runs), best first.  Why not
    ``faiss.knn`` itself: the faiss-cpu wheel bundles OpenBLAS 0.3.15, which does not know
    CPUs newer than it (Sapphire Rapids here) and falls back to its generic "Prescott" SSE3
    kernels: 4096 x 200k x 300 took 13.3 s in ``faiss.knn`` (37 GFLOPS) against 3.2 s here
    (153 GFLOPS; 2 cores, 2026-11-27), the same ids, scores within 1e-6.  On CPUs the old
    OpenBLAS knows, faiss's kernel is at most ~20% faster (187 GFLOPS with SkylakeX kernels
    forced), so one path serves every machine.
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    n = queries.shape[0]
    scores = np.empty((n, k), dtype=np.float32)
    ids = np.empty((n, k), dtype=np.int64)
    heaps = _heaps(scores, ids)
    for start, block in _score_blocks(queries, keys, key_bias=key_bias, query_scale=query_scale):
        heaps.addn(block.shape[1], faiss.swig_ptr(block), start, 0, n)  # type: ignore[call-arg]  # faiss's stub omits j0, i0, ni
    heaps.reorder()  # best first
    return scores, ids


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

    ``queries`` ``(q, d)``, ``keys`` ``(m, d)`` float32, queries in batches of ``batch_size``.
    Returns ``(scores (q, k) float32, ids (q, k) int64)``, best first.
    """
    keys = np.ascontiguousarray(keys, dtype=np.float32)
    bias = None if key_bias is None else np.ascontiguousarray(key_bias, dtype=np.float32).reshape(-1)
    n = queries.shape[0]
    scores = np.empty((n, k), dtype=np.float32)
    ids = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, batch_size):
        stop = min(n, start + batch_size)
        scores[start:stop], ids[start:stop] = _search(queries[start:stop], keys, k, key_bias=bias,
                                                      query_scale=query_scale)
    return scores, ids


def _exact_means(queries: np.ndarray, keys: np.ndarray, k: int, batch_size: int) -> np.ndarray:
    """Mean of the ``k`` best inner products of each query row among ``keys`` rows; ``(q,)`` float32."""
    keys = np.ascontiguousarray(keys, dtype=np.float32)
    out = np.empty(queries.shape[0], dtype=np.float32)
    for start in range(0, queries.shape[0], batch_size):
        found, _ = _search(queries[start : start + batch_size], keys, k)  # (b, k)
        out[start : start + found.shape[0]] = found.mean(axis=1, dtype=np.float64)
    return out


def mean_knn_similarity(
    queries: np.ndarray,
    keys: np.ndarray,
    k: int = 10,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    assume_normalized: bool = False,
) -> np.ndarray:
    """Mean cosine of each query row to its ``k`` nearest key rows: ``r`` in CSLS, ``(n_queries,)``.

    MUSE's ``get_nn_avg_dist(emb=keys, query=queries, knn=k)``: exact search (:func:`_search`)
    on L2-normalised rows, queries in batches of ``batch_size`` so memory stays one
    ``(batch_size, KEY_BLOCK)`` score slab beyond the two matrices.  Set ``assume_normalized`` when
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
    means = _exact_means(q, kk, k, batch_size)
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
        prior: Prior | None = None,
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
        self.upper = np.full(m, np.inf, dtype=np.float32)  # (m,) an upper bound of r (exact r where exact)
        self.exact = np.zeros(m, dtype=bool)  # (m,)
        if values is not None:
            given = _check_r("values", values, m)
            assert given is not None
            self.value[:], self.upper[:], self.exact[:] = given, given, True
        self._bounded = False
        if prior is not None and values is None:
            lower, upper = np.asarray(prior.lower, np.float32), np.asarray(prior.upper, np.float32)
            if lower.shape != (m,) or upper.shape != (m,):
                raise InputError(f"prior is for {lower.shape[0]} keys but there are {m}; pass the previous "
                                 "mapping's NeighbourhoodMeans of the same words")
            width = np.float32(prior.delta + 2 * BOUND_SLACK)
            self.value[:], self.upper[:] = lower - width, upper + width  # every key bounded: no sample search
            self._bounded = True
        fraction = BOUND_FRACTION if knn_mode == "exact" else APPROX_BOUND_FRACTION
        self.sample_size = max(self.knn, math.ceil(fraction * n))
        # Pruning needs a sample smaller than the neighbours; by default also much smaller, and
        # enough keys to pay off.
        wanted = m >= PRUNE_MIN_KEYS and self.sample_size < n // 2 if prune is None else prune
        self.prune = bool(wanted) and self.sample_size < n
        # (key, queries, scores, ids) of the last topk call; see topk.
        self._memo: tuple[tuple[object, ...], np.ndarray, np.ndarray, np.ndarray] | None = None
        # (query key, bounds, found, scaled) of the first round a sweep ranked; see _first_round.
        self._swept: tuple[tuple[object, ...], np.ndarray, np.ndarray, np.ndarray] | None = None
        self.exact_computed = 0  # keys whose r this object searched exactly (for the logs and benchmarks)

    def compute_exact(self, ids: np.ndarray) -> None:
        """Make ``r`` exact for the key rows ``ids`` (any order, repeats allowed)."""
        todo = np.unique(np.asarray(ids, dtype=np.int64))
        todo = todo[~self.exact[todo]]
        if todo.size == 0:
            return
        self._set_exact(todo, _exact_means(self.keys[todo], self.neighbours, self.knn, self.batch_size))

    def _set_exact(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Record exact ``r`` ``values`` for the key rows ``ids`` (unique, not yet exact)."""
        self.value[ids] = values
        self.upper[ids] = self.value[ids]
        self.exact[ids] = True
        self.exact_computed += int(ids.shape[0])

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
        bound = _exact_means(self.keys[todo], sample, self.knn, self.batch_size)
        # Two faiss searches can round the same inner products differently; the slack keeps the
        # lower bound a bound.
        self.value[todo] = bound - np.float32(BOUND_SLACK)
        logger.info(
            "CSLS %s mode: r lower bounds of %d keys from %d of %d neighbours (stride %d) in %.1fs",
            self.knn_mode, todo.size, sample.shape[0], self.neighbours.shape[0], stride,
            time.perf_counter() - started,
        )

    def _candidates(
        self, queries: np.ndarray, threshold: np.ndarray, query_scale: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Every (query row, key) whose current score bound reaches the query's ``threshold``.

        The bound ``s <q, key> - r(key)`` of every key, block by block (:func:`_score_blocks`),
        compared with the row's threshold (less a float32 slack: two GEMMs may round one inner
        product differently, and the threshold's own keys must stay in).  Returns
        ``(rows (P,), keys (P,))`` int64.
        """
        rows: list[np.ndarray] = []
        keys: list[np.ndarray] = []
        for start in range(0, queries.shape[0], self.batch_size):
            batch = queries[start : start + self.batch_size]  # (b, d)
            floor = threshold[start : start + batch.shape[0], None] - np.float32(BOUND_SLACK)  # (b, 1)
            mask = np.empty((batch.shape[0], min(KEY_BLOCK, self.keys.shape[0])), dtype=bool)  # (b, width)
            for key_start, scores in _score_blocks(batch, self.keys, key_bias=self.value, query_scale=query_scale):
                hits = mask[:, : scores.shape[1]]
                np.greater_equal(scores, floor, out=hits)
                # flatnonzero of the flat mask: ~12x faster than the 2-d np.nonzero (measured on
                # 4096 x 8192 blocks); row-major, so rows stay ascending.
                row, col = np.divmod(np.flatnonzero(hits), scores.shape[1])  # (p,), (p,)
                rows.append(start + row)
                keys.append(key_start + col)
        return np.concatenate(rows).astype(np.int64), np.concatenate(keys).astype(np.int64)

    def _best_of_pairs(
        self, queries: np.ndarray, rows: np.ndarray, keys: np.ndarray, k: int, query_scale: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` per query row among its candidate keys (``rows``/``keys`` ``(P,)`` pairs)."""
        scores = query_scale * self._pair_cosines(queries, rows, keys) - self.value[keys]  # (P,)
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

    def topk(self, queries: np.ndarray, k: int, query_scale: float = 2.0, *,
             ids_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` keys by ``query_scale * <q, key> - r(key)`` per query row (unit rows ``(q, d)``).

        Returns ``(scores (q, k) float32, ids (q, k) int64)``, best first, with exact ``r`` in
        every returned score.  Exact mode: a first round lists the ``2k`` best keys by bound (a
        sweep's list: ``SWEEP_DEPTH``), and the ``k`` first get exact ``r``: their ``k``-th best
        score is a floor under the true ``k``-th best, so only keys whose bound reaches it can be
        in the top ``k`` (listed ones, and where the last listed bound reaches the floor, those a
        range search finds).  Those are settled without a full search each
        (:meth:`_certify`), and the answer is the best ``k`` of the keys left.  Approximate mode:
        one round of depth ``k + max(5, k // 2)`` by bound, re-ranked
        with exact ``r``.  The last answer is memoised: the refinement's criterion and the next
        induction ask the same question of one mapping (``queries`` must not change in place).

        ``ids_only`` (for ``k == 1``: dictionary induction needs the best key, not its score) lets
        a row be settled without any exact ``r`` when the bounds alone prove its best key: with
        ``r`` known within an interval (a ``prior`` from the previous mapping), the first key by
        upper bound wins outright when its LOWER bound beats the second key's upper bound (every
        other key is bounded below that).  Those rows' scores are then upper bounds.
        """
        m = self.keys.shape[0]
        k = min(k, m)
        ids_only = ids_only and k == 1
        key = (queries.__array_interface__["data"][0], queries.shape, queries.strides, k, query_scale, ids_only)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[2].copy(), self._memo[3].copy()
        if not self.prune:
            scores, ids = self._full_topk(queries, k, query_scale)
        else:
            scores, ids = self._pruned_topk(queries, k, query_scale, ids_only)
        # The memo holds `queries` itself, so its memory cannot be reused by another array.
        self._memo = (key, queries, scores.copy(), ids.copy())
        return scores, ids

    def _full_topk(self, queries: np.ndarray, k: int, query_scale: float) -> tuple[np.ndarray, np.ndarray]:
        """Plain ranking: exact ``r`` of every key (one full search of those not yet exact)."""
        return _topk_inner(queries, self.keys, k, self.batch_size, key_bias=self.full(), query_scale=query_scale)

    def _depth(self, k: int) -> int:
        """Keys per query of the first round: exact mode ``2k`` (nearly always holds the true
        ``k`` best; a floor of ``k`` alone drew ~25% more candidates at 200k x 200k),
        approximate mode ``k + max(5, k // 2)``."""
        m = self.keys.shape[0]
        return min(m, k + max(5, k // 2)) if self.knn_mode == "approximate" else min(m, 2 * k)

    @staticmethod
    def _query_key(queries: np.ndarray, query_scale: float) -> tuple[object, ...]:
        return (queries.__array_interface__["data"][0], queries.shape, queries.strides, query_scale)

    def _first_round(self, queries: np.ndarray, depth: int,
                     query_scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(bounds, found, scaled)`` ``(q, depth)``: the ``depth`` best keys by score bound.

        ``bounds`` are the bounds the list was ranked by (every key outside the list is bounded
        by ``bounds[:, -1]``, and r only tightens later, so that stays true); ``scaled`` is
        ``query_scale * <q, key>`` of each listed key.  A :func:`sweep` over these very
        queries stored its list already: it is used instead of a search.
        """
        stored = self._swept
        if stored is not None and stored[0] == self._query_key(queries, query_scale) and stored[1].shape[1] >= depth:
            # Exact mode takes the whole stored list (deeper lists leave fewer rows to a range
            # search); the approximate mode re-ranks exactly what it asked for.
            width = stored[1].shape[1] if self.knn_mode == "exact" else depth
            return stored[1][:, :width], stored[2][:, :width], stored[3][:, :width]
        self._ensure_bounds()
        bounds, found = _topk_inner(
            queries, self.keys, depth, self.batch_size, key_bias=self.value, query_scale=query_scale
        )  # (q, depth) upper bounds, best first
        return bounds, found, bounds + self.value[found]

    def _pruned_topk(self, queries: np.ndarray, k: int, query_scale: float,
                     ids_only: bool = False) -> tuple[np.ndarray, np.ndarray]:
        depth = self._depth(k)
        bounds, found, scaled = self._first_round(queries, depth, query_scale)
        if ids_only and self.knn_mode == "exact" and depth >= 2:
            # score(first) >= scaled - upper r; every other key <= bounds[:, 1].
            first = found[:, 0]
            lower_first = scaled[:, 0] - self.upper[first]  # (q,) -inf without an upper r
            settled = lower_first - np.float32(BOUND_SLACK) >= bounds[:, 1]  # (q,)
            if settled.any():
                rest = np.flatnonzero(~settled)
                out_scores, out_ids = bounds[:, :1].copy(), found[:, :1].copy()
                if rest.size:
                    out_scores[rest], out_ids[rest] = self._certify(queries[rest], k, query_scale,
                                                                    bounds[rest], found[rest])
                logger.info("CSLS exact top-1: %d of %d rows settled by the bounds alone (no exact r)",
                            int(settled.sum()), queries.shape[0])
                return out_scores, out_ids
        return self._certify(queries, k, query_scale, bounds, found)

    def _certify(self, queries: np.ndarray, k: int, query_scale: float, bounds: np.ndarray,
                 found: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` from a first round (``bounds``, ``found`` ``(q, depth)``, best bound first).

        Exact mode: the ``k`` first listed keys of each row get exact ``r``, so the row's ``k``-th
        best exact score is a floor under its true ``k``-th best.  Only keys whose bound reaches
        the floor can be in the top ``k``: the rest of the list, and for rows where a key outside
        the list may reach it, every such key (one range search).  The floor rises with every
        exact key among them; the others are not searched exactly but refuted (:meth:`_tighten`):
        their ``r`` bounds tighten over growing prefixes of the neighbours until each key is
        shown below every floor it had to reach, or its ``r`` is exact.  The answer is the best
        ``k`` among the keys left, all exact.  Approximate mode: exact ``r`` for the whole list.
        """
        m, depth = self.keys.shape[0], found.shape[1]
        started, exact_before = time.perf_counter(), self.exact_computed
        n_q = queries.shape[0]
        rows = np.repeat(np.arange(n_q, dtype=np.int64), depth)  # (q * depth,)
        keys = found.reshape(-1)  # (q * depth,)
        if self.knn_mode != "exact" or depth >= m:
            self.compute_exact(found)
            scores, ids = self._best_of_pairs(queries, rows, keys, k, query_scale)
            self._log_topk(k, n_q, exact_before, started, rows.shape[0])
            return scores, ids
        # The k first listed keys (the likely answer) get exact r: their k-th best score is the
        # floor.  (Refuting them too, against a floor of the exact keys alone, took 9 s instead of
        # 2 s at 200k x 200k: that floor is far lower.)
        self.compute_exact(found[:, :k])
        floor = self._exact_floor(queries, rows, keys, k, query_scale)  # (q,)
        pending = np.flatnonzero(floor < bounds[:, -1])  # rows a key outside the list may beat
        if pending.size:
            cand_rows, cand_keys = self._candidates(queries[pending], floor[pending], query_scale)  # (P,), (P,)
            pairs = np.unique(np.concatenate([rows * m + keys, pending[cand_rows] * m + cand_keys]))
            rows, keys = pairs // m, pairs % m
            floor = self._exact_floor(queries, rows, keys, k, query_scale)  # raised by exact candidates
        loose = np.flatnonzero(~self.exact[keys])  # pairs whose key has only a bound of r
        scaled = query_scale * self._pair_cosines(queries, rows[loose], keys[loose])  # (L,)
        # A pair can reach its row's top k only while  scaled - r >= floor  (less the float32 slack).
        ceiling = scaled - floor[rows[loose]] + np.float32(BOUND_SLACK)  # (L,) r must stay below this
        reach = self.value[keys[loose]] <= ceiling
        loose, ceiling = loose[reach], ceiling[reach]
        unknown, where = np.unique(keys[loose], return_inverse=True)  # (u,) keys to settle
        key_ceiling = np.full(unknown.shape[0], -np.inf, dtype=np.float32)
        np.maximum.at(key_ceiling, where, ceiling)  # (u,) the highest floor each key must clear
        if int(self.exact.sum()) + unknown.shape[0] > FULL_SEARCH_FRACTION * m:
            # The bounds were too loose to pay off: finish r in one search and rank plainly.
            scores, ids = self._full_topk(queries, k, query_scale)
        else:
            self._tighten(unknown, key_ceiling)
            known = self.exact[keys]  # refuted keys stay bounds: below every floor they had to reach
            scores, ids = self._best_of_pairs(queries, rows[known], keys[known], k, query_scale)
        logger.debug("%d of %d rows needed the range search; %d keys to settle", pending.size, n_q, unknown.shape[0])
        self._log_topk(k, n_q, exact_before, started, rows.shape[0])
        return scores, ids

    def _pair_cosines(self, queries: np.ndarray, rows: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """``<queries[rows], self.keys[keys]>`` for ``(P,)`` pairs, ``(P,)`` float32, in bounded gathers."""
        out = np.empty(rows.shape[0], dtype=np.float32)  # (P,)
        step = max(1, RESCORE_FLOATS // queries.shape[1])
        for start in range(0, rows.shape[0], step):
            r, c = rows[start : start + step], keys[start : start + step]
            out[start : start + step] = np.einsum("pd,pd->p", queries[r], self.keys[c])
        return out

    def _exact_floor(self, queries: np.ndarray, rows: np.ndarray, keys: np.ndarray, k: int,
                     query_scale: float) -> np.ndarray:
        """Each row's ``k``-th best exact score among its pairs whose key has exact ``r``
        (``-inf`` with fewer than ``k``), ``(q,)``: the true ``k``-th best is at least that."""
        known = self.exact[keys]
        scores, _ = self._best_of_pairs(queries, rows[known], keys[known], k, query_scale)
        return scores[:, -1]

    def _tighten(self, ids: np.ndarray, ceiling: np.ndarray) -> None:
        """Raise the ``r`` bounds of the keys ``ids`` (unique, not exact) until each is above its
        ``ceiling`` ``(u,)`` (the key then cannot matter) or exact.

        Each key's ``knn`` best cosines are merged over growing prefixes of the neighbours
        (``TIGHTEN_CHUNK`` at a time, in the heaps :func:`_search` uses); after each chunk their
        mean is a lower bound of ``r`` (a subset's best cannot beat the whole set's), so keys whose
        bound passed their ceiling drop out, and the keys still in after the last chunk have
        exact ``r``.  At 200k x 200k (``benchmarks/align_scale.py``) 57% of the keys a top-1 had
        to settle dropped out after the first 25k neighbours and 1.3% were left at the end:
        about a quarter of the work of their exact ``r``.
        """
        n = self.neighbours.shape[0]
        started, work = time.perf_counter(), 0
        top = np.empty((ids.shape[0], self.knn), dtype=np.float32)  # (u, knn) running best cosines
        top_ids = np.empty((ids.shape[0], self.knn), dtype=np.int64)
        _heaps(top, top_ids)  # emptied; compacted rows below stay valid heaps
        alive = ids
        for chunk_start in range(0, n, TIGHTEN_CHUNK):
            chunk = self.neighbours[chunk_start : chunk_start + TIGHTEN_CHUNK]  # (c, d)
            work += alive.shape[0] * chunk.shape[0]
            for start in range(0, alive.shape[0], self.batch_size):
                stop = min(alive.shape[0], start + self.batch_size)
                heaps = _heaps(top[start:stop], top_ids[start:stop], empty=False)
                for block_start, scores in _score_blocks(self.keys[alive[start:stop]], chunk):
                    heaps.addn(scores.shape[1], faiss.swig_ptr(scores), chunk_start + block_start,  # type: ignore[call-arg]  # faiss's stub omits j0, i0, ni
                               0, stop - start)
            mean = top.mean(axis=1, dtype=np.float64).astype(np.float32)  # (a,)
            if chunk_start + TIGHTEN_CHUNK >= n:  # every neighbour is in: exact
                self._set_exact(alive, mean)
                break
            self.value[alive] = np.maximum(self.value[alive], mean - np.float32(BOUND_SLACK))
            keep = self.value[alive] <= ceiling
            alive, ceiling = alive[keep], ceiling[keep]
            top, top_ids = top[keep], top_ids[keep]  # whole rows: each stays a heap
            if alive.shape[0] == 0:
                break
        logger.debug("settled r of %d keys: %d refuted, %d exact, %.0f%% of the work of their exact search, in %.1fs",
                     ids.shape[0], ids.shape[0] - alive.shape[0], alive.shape[0], 100 * work / max(1, ids.shape[0] * n),
                     time.perf_counter() - started)

    def _log_topk(self, k: int, n_queries: int, exact_before: int, started: float, pairs: int) -> None:
        logger.info(
            "CSLS %s top-%d of %d queries over %d keys: %d candidate pairs, exact r for %d more keys "
            "(%d of %d now) in %.1fs",
            self.knn_mode, k, n_queries, self.keys.shape[0], pairs, self.exact_computed - exact_before,
            int(self.exact.sum()), self.keys.shape[0], time.perf_counter() - started,
        )


SWEEP_GROUP = 16  # query rows per group maximum in a sweep's neighbourhood bounds
# Keys per query row of a sweep's first round: deeper lists leave fewer rows to a range search
# (at 200k x 200k, top-1: depth 2 left 2.2 s of range search per ranking, 16 left 0.1 s; the
# sweep's time did not change).
SWEEP_DEPTH = 16
SWEEP_FLOATS = 1 << 24  # floats in a sweep's (queries, key block) score slab (64 MiB; 128 cost the same CPU time on
# MUSE's criterion of a 22k-word en-fr map, 6.3-6.9 CPU-s both, and 81 MiB more peak memory)


def sweep(rows: NeighbourhoodMeans, cols: NeighbourhoodMeans, n_rows: int, k: int = 1,
          query_scale: float = 2.0) -> bool:
    """One pass that serves three searches at once, for CSLS ranking of ``cols.neighbours[:n_rows]``.

    ``rows`` and ``cols`` are the two sides' means of one mapping: ``rows.keys`` is
    ``cols.neighbours`` (say the mapped sources) and ``rows.neighbours`` is ``cols.keys`` (the
    targets).  The queries ``Q = rows.keys[:n_rows]`` (dictionary induction's top words) are
    scored against every key of ``cols`` once, key block by key block, and from each block:

    * ``rows`` gets the exact ``r`` of the ``n_rows`` queries (each row's best ``knn`` over all
      keys): the other direction's induction ranks these very words as keys;
    * ``cols`` gets a lower bound of ``r`` for each key of the block: the mean of its ``knn``
      best group maxima over the queries (groups of ``SWEEP_GROUP`` rows; each maximum is the
      cosine of a distinct neighbour, so the mean of any ``knn`` of them cannot exceed the mean
      of the ``knn`` best over all neighbours).  The block's bounds are final once its scores
      for every query are in, so they rank the block at once:
    * ``cols`` stores each query's first round, its ``max(2k, SWEEP_DEPTH)`` (exact mode) best
      keys by bound, for the :meth:`NeighbourhoodMeans.topk` call on ``Q`` that follows.

    Without it that call costs a bound search over a 10% sample of the neighbours (keys x
    n/10), the first round (n_rows x keys) and exact ``r`` for every listed key (2 n_rows
    searches over all neighbours); with it, one pass of n_rows x keys.  Returns False (and
    does nothing) where ``cols`` does not prune or that ranking is already answered.
    """
    if (rows.keys.__array_interface__["data"][0] != cols.neighbours.__array_interface__["data"][0]
            or rows.neighbours.__array_interface__["data"][0] != cols.keys.__array_interface__["data"][0]):
        raise ValueError("sweep needs the two sides of one mapping: rows.keys must be cols.neighbours "
                         "and rows.neighbours cols.keys")
    n_rows = min(_positive("n_rows", n_rows), rows.keys.shape[0])
    queries = cols.neighbours[:n_rows]  # (L, d)
    key = NeighbourhoodMeans._query_key(queries, query_scale)
    if not cols.prune or (cols._swept is not None and cols._swept[0] == key) or (
            cols._memo is not None and cols._memo[0][:3] == key[:3]):
        return False
    started = time.perf_counter()
    m, knn, depth = cols.keys.shape[0], cols.knn, min(cols.keys.shape[0], max(cols._depth(k), SWEEP_DEPTH))
    row_top = np.empty((n_rows, rows.knn), dtype=np.float32)
    row_ids = np.empty((n_rows, rows.knn), dtype=np.int64)
    bounds = np.empty((n_rows, depth), dtype=np.float32)
    found = np.empty((n_rows, depth), dtype=np.int64)
    row_heaps, rank_heaps = _heaps(row_top, row_ids), _heaps(bounds, found)
    full = n_rows - n_rows % SWEEP_GROUP  # rows in whole groups; the rest form one last group
    # Scores come out already scaled (x2 is exact in binary floating point): one pass less per block.
    blocks = _score_blocks(queries, cols.keys, query_scale=query_scale, width=max(SWEEP_GROUP, SWEEP_FLOATS // n_rows))
    for start, scores in blocks:  # (L, b) query_scale * <q, key>
        b = scores.shape[1]
        row_heaps.addn(b, faiss.swig_ptr(scores), start, 0, n_rows)  # type: ignore[call-arg]  # faiss's stub omits j0, i0, ni
        group_max = _group_max(scores, full)  # (G, b)
        top = np.empty((b, knn), dtype=np.float32)
        top_ids = np.empty((b, knn), dtype=np.int64)
        col_heaps = _heaps(top, top_ids)
        by_key = np.ascontiguousarray(group_max.T)  # (b, G); held while faiss reads it
        col_heaps.addn(by_key.shape[1], faiss.swig_ptr(by_key), 0, 0, b)  # type: ignore[call-arg]  # faiss's stub omits j0, i0, ni
        # Missing neighbours (fewer groups than knn) count as cosine -1: still a lower bound.
        lower = np.maximum(top, -query_scale).mean(axis=1, dtype=np.float64) / query_scale  # (b,)
        keys = slice(start, start + b)
        loose = ~cols.exact[keys]
        cols.value[keys][loose] = np.maximum(cols.value[keys][loose], lower[loose] - np.float32(BOUND_SLACK))
        scores -= cols.value[keys]
        rank_heaps.addn(b, faiss.swig_ptr(scores), start, 0, n_rows)  # type: ignore[call-arg]  # faiss's stub omits j0, i0, ni
    row_heaps.reorder()
    rank_heaps.reorder()
    cols._bounded = True  # every key has its bound now: no sample search
    todo = np.flatnonzero(~rows.exact[:n_rows])
    rows._set_exact(todo, row_top[todo].mean(axis=1, dtype=np.float64) / query_scale)
    cols._swept = (key, bounds, found, bounds + cols.value[found])
    logger.info("CSLS sweep of %d queries over %d keys: exact r of the queries, r bounds of the keys and "
                "a first round of %d in %.1fs", n_rows, m, depth, time.perf_counter() - started)
    return True


def _group_max(scores: np.ndarray, full: int) -> np.ndarray:
    """Maximum of each ``SWEEP_GROUP`` consecutive rows of ``scores`` ``(L, b)`` (the rows past
    ``full`` form one last group): ``(G, b)``, one value per group and column."""
    n_rows, b = scores.shape
    out = scores[:full].reshape(full // SWEEP_GROUP, SWEEP_GROUP, b).max(axis=1)  # (G, b)
    if full < n_rows:  # the last, short group
        out = np.vstack([out, scores[full:].max(axis=0, keepdims=True)])
    return out


def _heaps(values: np.ndarray, ids: np.ndarray, *, empty: bool = True) -> faiss.float_minheap_array_t:
    """faiss top-k heaps (the LARGEST values kept) over ``values``/``ids`` ``(n, k)`` (C-contiguous),
    emptied, or with ``empty=False`` taken as they are (rows that are heaps already)."""
    heaps = faiss.float_minheap_array_t()
    heaps.nh, heaps.k = values.shape
    heaps.val, heaps.ids = faiss.swig_ptr(values), faiss.swig_ptr(ids)
    if empty:
        heaps.heapify()
    return heaps


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
