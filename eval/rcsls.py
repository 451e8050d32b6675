"""RCSLS: supervised alignment by the relaxed CSLS loss (Joulin et al. 2018, "Loss in Translation").

The objective over the training pairs ``(x_i, y_i)`` (unit rows; ``n`` pairs) with negatives
``Z_src`` / ``Z_tgt`` (the ``max_neg`` most frequent words of each side) is, for a linear map
``R`` ``(d, d)``::

    loss(R) = -1/n sum_i [ 2 (R x_i).y_i - 1/k sum_{z in NN_k(R x_i, Z_tgt)} (R x_i).z
                                         - 1/k sum_{z in NN_k(y_i, R Z_src)} (R z).y_i ]

minimised by full-batch (sub)gradient steps from the Procrustes solution; the step size halves
whenever the loss rises (the rising step is undone), and with ``spectral=True`` the singular
values of ``R`` are clipped to [0, 1] after every step.  This is fastText's
``alignment/align.py`` (read as the reference, not copied) with two differences on purpose:

* memory: the reference builds two dense ``(n, max_neg)`` score matrices (float64 by NumPy's
  promotion; ~17 GB at n=5000, 200k, d=300).  Here the top-``k`` of each row comes from an exact
  faiss inner-product search in query blocks, so only a ``(block, max_neg)`` slab exists at a
  time and the objective is the same;
* the undo: the reference's ``R -= lr * df`` updates ``R`` in place, so its saved ``Rold``
  aliases ``R`` and a rising step is not really undone (without ``spectral``); here the
  previous map is restored and the smaller step retried from it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import faiss
import numpy as np

from eval.knn import _positive, _two_matrices, _unit_rows
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["RcslsConfig", "RcslsResult", "rcsls", "rcsls_loss_and_grad", "spectral_projection"]


@dataclass(frozen=True)
class RcslsConfig:
    """RCSLS settings (fastText's defaults); ranges checked once, here."""

    knn: int = 10
    max_neg: int = 200_000
    n_iter: int = 10
    lr: float = 1.0
    spectral: bool = False
    batch_size: int = 4096  # query rows per faiss search: bounds the (block, max_neg) score slab

    def __post_init__(self) -> None:
        for name in ("knn", "max_neg", "batch_size"):
            _positive(name, getattr(self, name))
        if isinstance(self.n_iter, bool) or self.n_iter < 0:
            raise InputError(f"n_iter={self.n_iter!r}; pass 0 or more RCSLS steps")
        if not (np.isfinite(self.lr) and self.lr > 0):
            raise InputError(f"lr={self.lr!r}; pass a positive learning rate, e.g. 1.0")


@dataclass(frozen=True)
class RcslsResult:
    """``W`` ``(d, d)``: the map (``x @ W.T``); ``history``: loss and step size of every step."""

    W: np.ndarray
    history: list[dict[str, float | int]] = field(default_factory=list)


def spectral_projection(R: np.ndarray) -> np.ndarray:
    """``R`` with its singular values clipped to [0, 1] (fastText's ``proj_spectral``)."""
    u, s, vt = np.linalg.svd(R.astype(np.float64))
    return np.asarray((u * np.clip(s, 0.0, 1.0)) @ vt, dtype=R.dtype)


def _knn_term(queries: np.ndarray, keys: np.ndarray, gather: np.ndarray, k: int,
              batch_size: int) -> tuple[float, np.ndarray]:
    """Sum over queries of the mean of their ``k`` best inner products with ``keys``, and the gradient rows.

    Returns the score sum and ``(q, d)``: for each query, the mean of the ``gather`` rows of its
    ``k`` nearest keys (the negatives before mapping), which is what the gradient needs.  Exact
    (faiss flat search), one query block at a time: never a dense ``(q, m)`` matrix.
    """
    index = faiss.IndexFlatIP(keys.shape[1])
    index.add(np.ascontiguousarray(keys, dtype=np.float32))
    total = 0.0
    means = np.empty((queries.shape[0], gather.shape[1]), dtype=np.float32)  # (q, d)
    for start in range(0, queries.shape[0], batch_size):
        block = np.ascontiguousarray(queries[start : start + batch_size], dtype=np.float32)  # (b, d)
        scores, ids = index.search(block, k)  # (b, k), (b, k)
        total += float(scores.sum(dtype=np.float64)) / k
        means[start : start + block.shape[0]] = gather[ids].mean(axis=1)  # (b, k, d) -> (b, d)
    return total, means


def rcsls_loss_and_grad(
    X: np.ndarray, Y: np.ndarray, Z_src: np.ndarray, Z_tgt: np.ndarray, R: np.ndarray, knn: int = 10,
    batch_size: int = 4096,
) -> tuple[float, np.ndarray]:
    """The RCSLS loss at ``R`` and its gradient ``(d, d)`` (fastText's ``rcsls``), in bounded memory.

    ``X`` / ``Y`` ``(n, d)``: the training pairs' source / target rows; ``Z_src`` / ``Z_tgt``
    ``(m, d)``: the negatives.  The gradient of the top-k terms holds the neighbour sets fixed
    (a subgradient, as the reference).
    """
    n = X.shape[0]
    R = np.asarray(R, dtype=np.float32)
    mapped = X @ R.T  # (n, d)
    f = 2.0 * float(np.einsum("ij,ij->", mapped, Y, dtype=np.float64))
    grad = 2.0 * (Y.T.astype(np.float64) @ X)  # (d, d)
    # Mapped sources against the target negatives: d/dR (R x).z = z x^T.
    f0, z_tgt_mean = _knn_term(mapped, Z_tgt, Z_tgt, knn, batch_size)  # (n, d)
    grad -= z_tgt_mean.T.astype(np.float64) @ X
    # Targets against the mapped source negatives: d/dR (R z).y = y z^T.
    f1, z_src_mean = _knn_term(Y, Z_src @ R.T, Z_src, knn, batch_size)  # (n, d)
    grad -= Y.T.astype(np.float64) @ z_src_mean
    f = f - f0 - f1
    return -f / n, np.asarray(-grad / n, dtype=np.float32)


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
    the step and retries from the best map.  Stops after ``n_iter`` passes or when the step falls
    below 1e-4 (the reference's rule).  Returns the best map found (lowest loss).
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
    for step in range(cfg.n_iter + 1):
        if lr < 1e-4:
            break
        started = time.perf_counter()
        f, grad = rcsls_loss_and_grad(X, Y, Z_src, Z_tgt, candidate, cfg.knn, cfg.batch_size)
        accepted = f <= best_f
        if accepted:
            best_w, best_f, best_grad = candidate, f, grad
        else:
            lr /= 2  # the step overshot: retry a smaller one from the best map
        history.append({"step": step, "loss": f, "lr": lr, "accepted": int(accepted),
                        "seconds": time.perf_counter() - started})
        logger.info("rcsls step %d: loss %.5f (%s), lr %.4g, %.1fs", step, f,
                    "accepted" if accepted else "rejected", lr, history[-1]["seconds"])
        if step == cfg.n_iter:
            break  # the last pass only scores the last candidate
        candidate = best_w - np.float32(lr) * best_grad
        if cfg.spectral:
            candidate = spectral_projection(candidate)
    return RcslsResult(W=best_w, history=history)
