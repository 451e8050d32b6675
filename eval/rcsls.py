"""RCSLS: supervised alignment by the relaxed CSLS loss (Joulin et al. 2018, "Loss in Translation").

The objective over the training pairs ``(x_i, y_i)`` (unit rows; ``n`` pairs) with negatives
``Z_src`` / ``Z_tgt`` (the ``max_neg`` most frequent words of each side) is, for a linear map
``R`` ``(d, d)``::

    loss(R) = -1/n sum_i [ 2 (R x_i).y_i - 1/k sum_{z in NN_k(R x_i, Z_tgt)} (R x_i).z
                                         - 1/k sum_{z in NN_k(y_i, R Z_src)} (R z).y_i ]

minimised by full-batch (sub)gradient steps from the Procrustes solution; the step size halves
whenever the loss rises (the rising step is undone), and with ``spectral=True`` the singular
values of ``R`` are clipped to [0, 1] after every step.  This is fastText's
``alignment/align.py`` (read as the reference, not copied), with its defaults (k=10, 200k
negatives, ``--niter 10``, ``--lr 1.0``) and its step count: its loop runs ``niter + 1``
passes and updates ``R`` after each, so ``n_iter=10`` applies 11 updates here too.  Three
differences, on purpose:

* memory: the reference builds two dense ``(n, max_neg)`` score matrices (float64 by NumPy's
  promotion; ~17 GB at n=5000, 200k, d=300).  Here the top-``k`` of each row comes from the
  blocked exact kernel of :mod:`eval.knn` (one ``(4096, 8192)`` float32 score slab at a time:
  128 MiB), so memory stays bounded and the objective is the same;
* the undo: the reference's ``R -= lr * df`` updates ``R`` in place, so its saved ``Rold``
  aliases ``R`` and a rising step is not really undone (without ``spectral``); here the
  previous map is restored and the smaller step retried from it;
* the result: the reference returns ``R`` after its last update without scoring it; here the
  last update is scored too (one more loss evaluation) and the map with the lowest loss is
  returned.  While the loss falls at every step (the usual case) the two are the same map.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np

from eval.knn import _search, _two_matrices, _unit_rows
from eval.methods.rcsls import RcslsConfig  # the knobs, declared with the method
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["RcslsConfig", "RcslsResult", "rcsls", "rcsls_loss_and_grad", "spectral_projection"]


@dataclass(frozen=True)
class RcslsResult:
    """``W`` ``(d, d)``: the map (``x @ W.T``); ``history``: loss and step size of every step."""

    W: np.ndarray
    history: list[dict[str, float | int]] = field(default_factory=list)


def spectral_projection(R: np.ndarray) -> np.ndarray:
    """``R`` with its singular values clipped to [0, 1] (fastText's ``proj_spectral``)."""
    u, s, vt = np.linalg.svd(R.astype(np.float64))
    return np.asarray((u * np.clip(s, 0.0, 1.0)) @ vt, dtype=R.dtype)


# Query rows per full search: the kernel's score slab is (rows, eval.knn.KEY_BLOCK) float32.
SEARCH_ROWS = 4096


class _TopK:
    """Exact top-``k`` of queries against FIXED unit-norm keys, reusing the last full search when it is certified.

    A full search keeps, per query, its ``keep`` best keys and the ``keep``-th score ``t``. When
    the query later moves by ``delta`` (L2), no other key can score above ``t + delta`` (keys
    have norm <= 1, Cauchy-Schwarz), so if the ``k``-th best of the kept keys at the new query
    scores at least that, the top-``k`` is exactly among them; the other queries are searched in
    full again.  When RCSLS's steps are small (random-like spaces; late, halved steps) most
    steps after the first cost ``(q, keep, d)`` instead of ``(q, m, d)``; on real vectors at
    lr=1 the map moves too far per step and most rows fail, so after a check that fails for
    more than half the rows the next call skips the check and searches in full.  Scores are
    float32 with a small safety margin.
    """

    MARGIN = 1e-4

    def __init__(self, keys: np.ndarray, gather: np.ndarray, k: int, batch_size: int, keep: int = 64) -> None:
        self.keys = np.ascontiguousarray(keys, dtype=np.float32)  # (m, d)
        self.gather = gather  # (m, d): the rows whose k-mean the gradient needs
        self.k = min(k, keys.shape[0])
        self.keep = min(max(keep, self.k), keys.shape[0])
        self.batch_size = batch_size
        self.anchor: np.ndarray | None = None  # (q, d): each query where its candidates were found
        self.cand: np.ndarray | None = None  # (q, keep) key ids
        self.floor: np.ndarray | None = None  # (q,) the keep-th best score at the anchor
        self.full_rows = 0  # queries searched in full (over all calls), for the log and tests
        self.check_next = True

    def _full(self, queries: np.ndarray, rows: np.ndarray) -> None:
        """Search ``rows`` of ``queries`` over every key with the blocked exact kernel (eval.knn)."""
        assert self.anchor is not None and self.cand is not None and self.floor is not None
        step = max(self.batch_size, SEARCH_ROWS)
        for start in range(0, rows.shape[0], step):
            idx = rows[start : start + step]
            scores, ids = _search(queries[idx], self.keys, self.keep)  # (b, keep), best first
            self.cand[idx] = ids
            self.floor[idx] = scores[:, -1]
            self.anchor[idx] = queries[idx]
        self.full_rows += int(rows.shape[0])

    def search(self, queries: np.ndarray, weights: np.ndarray) -> tuple[float, np.ndarray]:
        """``(sum over queries of weight x their k-best mean score, (q, d) k-mean of the gathered rows)``."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)  # (q, d)
        q = queries.shape[0]
        if self.anchor is None or self.anchor.shape[0] != q:
            self.anchor = np.empty_like(queries)
            self.cand = np.empty((q, self.keep), dtype=np.int64)
            self.floor = np.empty(q, dtype=np.float32)
            self._full(queries, np.arange(q))
        elif self.check_next:
            failed = self._uncertified(queries)
            self._full(queries, failed)  # re-anchored rows are certified (drift 0)
            # When most rows moved too far, checking next time is likely wasted work: search in full.
            self.check_next = failed.shape[0] * 2 <= q
        else:
            self._full(queries, np.arange(q))
            self.check_next = True
        assert self.cand is not None
        keys = self.keys
        total = 0.0
        means = np.empty((q, self.gather.shape[1]), dtype=np.float32)  # (q, d)
        for start in range(0, q, self.batch_size):
            sl = slice(start, start + self.batch_size)
            scores = np.matmul(keys[self.cand[sl]], queries[sl, :, None])[:, :, 0]  # (b, keep)
            top = np.argpartition(-scores, self.k - 1, axis=1)[:, : self.k]  # (b, k)
            best = np.take_along_axis(scores, top, axis=1).sum(axis=1, dtype=np.float64)  # (b,)
            total += float(best @ weights[sl]) / self.k
            ids = np.take_along_axis(self.cand[sl], top, axis=1)  # (b, k)
            means[sl] = self.gather[ids].mean(axis=1)  # (b, k, d) -> (b, d)
        return total, means

    def _uncertified(self, queries: np.ndarray) -> np.ndarray:
        """Rows whose kept candidates cannot prove their top-k at the new query."""
        assert self.cand is not None and self.floor is not None and self.anchor is not None
        keys = self.keys
        bad = []
        for start in range(0, queries.shape[0], self.batch_size):
            sl = slice(start, start + self.batch_size)
            scores = np.matmul(keys[self.cand[sl]], queries[sl, :, None])[:, :, 0]  # (b, keep)
            kth = -np.partition(-scores, self.k - 1, axis=1)[:, self.k - 1]  # (b,)
            drift = np.linalg.norm(queries[sl] - self.anchor[sl], axis=1)  # (b,)
            bad.append(np.nonzero(kth < self.floor[sl] + drift + self.MARGIN)[0] + start)
        return np.concatenate(bad)


def _loss_and_grad(X: np.ndarray, Y: np.ndarray, R: np.ndarray, tgt_side: _TopK, src_side: _TopK,
                   pairs: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """RCSLS loss and gradient at ``R``; ``tgt_side`` searches Z_tgt, ``src_side`` searches Z_src.

    A word in several training pairs (MUSE dictionaries list every translation) is one query,
    weighted by its count: the same sums with fewer searches.  ``pairs`` ``(n, 2)`` gives the
    words of the rows of ``X`` and ``Y`` (None: every row its own word).
    """
    n = X.shape[0]
    R = np.asarray(R, dtype=np.float32)
    f = 2.0 * float(np.einsum("ij,ij->", X @ R.T, Y, dtype=np.float64))
    grad = 2.0 * (Y.T.astype(np.float64) @ X)  # (d, d)
    src_ids = np.arange(n) if pairs is None else pairs[:, 0]
    tgt_ids = np.arange(n) if pairs is None else pairs[:, 1]
    _, first_x, count_x = np.unique(src_ids, return_index=True, return_counts=True)  # (u,), (u,)
    _, first_y, count_y = np.unique(tgt_ids, return_index=True, return_counts=True)
    Xu, wx = X[first_x], count_x.astype(np.float64)  # (u, d), (u,)
    Yu, wy = Y[first_y], count_y.astype(np.float64)
    # Mapped sources against the target negatives: d/dR (R x).z = z x^T.
    f0, z_tgt_mean = tgt_side.search(Xu @ R.T, wx)  # (u, d)
    grad -= (z_tgt_mean * wx[:, None]).T @ Xu
    # Targets against the mapped source negatives, (R z).y = z.(R^T y): the queries Y R move, the
    # keys Z_src stay fixed (so the search can be certified across steps); d/dR (R z).y = y z^T.
    f1, z_src_mean = src_side.search(Yu @ R, wy)  # (u, d)
    grad -= (Yu * wy[:, None]).T @ z_src_mean
    f = f - f0 - f1
    return -f / n, np.asarray(-grad / n, dtype=np.float32)


def rcsls_loss_and_grad(
    X: np.ndarray, Y: np.ndarray, Z_src: np.ndarray, Z_tgt: np.ndarray, R: np.ndarray, knn: int = 10,
    batch_size: int = 256,
) -> tuple[float, np.ndarray]:
    """The RCSLS loss at ``R`` and its gradient ``(d, d)`` (fastText's ``rcsls``), in bounded memory.

    ``X`` / ``Y`` ``(n, d)``: the training pairs' source / target rows; ``Z_src`` / ``Z_tgt``
    ``(m, d)``: the negatives, rows of norm <= 1.  The gradient of the top-k terms holds the
    neighbour sets fixed (a subgradient, as the reference).
    """
    return _loss_and_grad(X, Y, R, _TopK(Z_tgt, Z_tgt, knn, batch_size), _TopK(Z_src, Z_src, knn, batch_size))


def rcsls(
    src: np.ndarray,
    tgt: np.ndarray,
    train_pairs: np.ndarray,
    W0: np.ndarray,
    config: RcslsConfig | None = None,
) -> RcslsResult:
    """Minimise the RCSLS loss from ``W0`` (the Procrustes map); ``src``/``tgt`` rows are unit-normalised here.

    ``train_pairs`` ``(n, 2)``: checked (source row, target row) indices; the negatives are the
    first ``max_neg`` rows of each side (word2vec files are sorted by frequency).  Every pass
    computes the loss and gradient at one map; a pass whose loss is above the best so far halves
    the step and retries from the best map.  ``n_iter + 1`` updates are made, as fastText's loop
    makes (a last pass scores the last one), or fewer when the step falls below 1e-4 (the
    reference's rule).  Returns the best map found (lowest loss).
    """
    cfg = config or RcslsConfig()
    src_m, tgt_m = _two_matrices(src, tgt)
    src_u, tgt_u = _unit_rows(src_m), _unit_rows(tgt_m)  # (n_src, d), (n_tgt, d)
    pairs = np.asarray(train_pairs, dtype=np.int64)
    X = np.ascontiguousarray(src_u[pairs[:, 0]])  # (n, d)
    Y = np.ascontiguousarray(tgt_u[pairs[:, 1]])  # (n, d)
    Z_src, Z_tgt = src_u[: cfg.max_neg], tgt_u[: cfg.max_neg]  # views: no copy
    best_w = np.asarray(W0, dtype=np.float32)
    if best_w.shape != (X.shape[1], X.shape[1]):
        raise InputError(f"the initial map has shape {best_w.shape}; pass a ({X.shape[1]}, {X.shape[1]}) matrix")
    lr = cfg.lr
    history: list[dict[str, float | int]] = []
    best_f, best_grad = np.inf, np.zeros_like(best_w)
    candidate = best_w
    tgt_side = _TopK(Z_tgt, Z_tgt, cfg.knn, cfg.batch_size)
    src_side = _TopK(Z_src, Z_src, cfg.knn, cfg.batch_size)
    updates = cfg.n_iter + 1  # fastText's `for it in range(0, niter + 1)`, an update in every pass
    for step in range(updates + 1):
        if lr < 1e-4:
            break
        started = time.perf_counter()
        f, grad = _loss_and_grad(X, Y, candidate, tgt_side, src_side, pairs)
        accepted = f <= best_f
        if accepted:
            best_w, best_f, best_grad = candidate, f, grad
        else:
            lr /= 2  # the step overshot: retry a smaller one from the best map
        history.append({"step": step, "loss": f, "lr": lr, "accepted": int(accepted),
                        "seconds": time.perf_counter() - started,
                        "full_searches": tgt_side.full_rows + src_side.full_rows})
        logger.info("rcsls step %d: loss %.5f (%s), lr %.4g, %.1fs", step, f,
                    "accepted" if accepted else "rejected", lr, history[-1]["seconds"])
        if step == updates:
            break  # the last pass only scores the last update
        candidate = best_w - np.float32(lr) * best_grad
        if cfg.spectral:
            candidate = spectral_projection(candidate)
    return RcslsResult(W=best_w, history=history)
