"""VecMap-style supervised mapping (Artetxe, Labaka, Agirre 2018, AAAI: "Generalizing and improving
bilingual word embedding mappings with a multi-step framework of linear transformations").

Both spaces move.  On the training pairs' rows ``X`` (source) and ``Z`` (target):

1. whitening: ``W_x1 = (X^T X)^-1/2``, ``W_z1 = (Z^T Z)^-1/2``;
2. orthogonal mapping: ``U S V^T = svd((X W_x1)^T (Z W_z1))``, ``W_x2 = U``, ``W_z2 = V``;
3. re-weighting: the mapped columns scaled by ``S^src_reweight`` / ``S^tgt_reweight``;
4. de-whitening: each side multiplied by ``W_2^T W_1^-1 W_2`` of its own side (``"src"``/``"tgt"``),
   of the other side, or not at all (``"none"``);
5. optional dimensionality reduction: keep the first ``dim_reduction`` mapped columns.

The defaults are the paper's best supervised setting (whiten, re-weight 0.5 on both sides,
de-whiten each side with its own whitening, no reduction).  Whitening needs at least ``d``
linearly independent training rows per side; fewer raise :class:`~groc_base.errors.InputError`
(lower the dimension with ``dim_reduction`` does not help there: whiten=False does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eval.methods.vecmap import DEWHITEN, Dewhiten, VecmapConfig  # the knobs, declared with the method
from groc_base.errors import InputError

__all__ = ["DEWHITEN", "Dewhiten", "VecmapConfig", "VecmapResult", "vecmap"]

@dataclass(frozen=True)
class VecmapResult:
    """``W_src`` ``(d, d')`` and ``W_tgt`` ``(d, d')``: the mapped spaces are ``src @ W_src`` and ``tgt @ W_tgt``."""

    W_src: np.ndarray
    W_tgt: np.ndarray
    singular_values: np.ndarray


def _whitening(m: np.ndarray, side: str) -> tuple[np.ndarray, np.ndarray]:
    """``((m^T m)^-1/2, (m^T m)^1/2)`` from the SVD of ``m`` ``(n, d)``, in float64."""
    _, s, vt = np.linalg.svd(m, full_matrices=False)  # s: (min(n, d),)
    if s.shape[0] < m.shape[1] or s[-1] <= s[0] * 1e-6:
        raise InputError(f"the {side} training vectors span fewer than {m.shape[1]} dimensions "
                         f"({m.shape[0]} pairs); whitening needs more distinct training pairs than "
                         "dimensions: add pairs, or turn whitening off")
    return (vt.T / s) @ vt, (vt.T * s) @ vt


def vecmap(src: np.ndarray, tgt: np.ndarray, train_pairs: np.ndarray,
           config: VecmapConfig | None = None) -> VecmapResult:
    """Fit the VecMap supervised mapping on ``train_pairs`` ``(n, 2)`` (checked row indices).

    ``src`` / ``tgt`` are the (already normalised) spaces; only the training rows are read.
    """
    cfg = config or VecmapConfig()
    pairs = np.asarray(train_pairs, dtype=np.int64)
    X = np.asarray(src, dtype=np.float64)[pairs[:, 0]]  # (n, d)
    Z = np.asarray(tgt, dtype=np.float64)[pairs[:, 1]]  # (n, d)
    d = X.shape[1]
    if cfg.dim_reduction > d:
        raise InputError(f"dim_reduction={cfg.dim_reduction} is above the dimension {d}; pass at most {d}")
    eye = np.eye(d)
    wx1, wx1_inv = _whitening(X, "source") if cfg.whiten else (eye, eye)
    wz1, wz1_inv = _whitening(Z, "target") if cfg.whiten else (eye, eye)
    # Orthogonal mapping of the whitened spaces onto each other.
    wx2, s, wz2_t = np.linalg.svd((X @ wx1).T @ (Z @ wz1))  # (d, d), (d,), (d, d)
    wz2 = wz2_t.T
    w_src = wx1 @ wx2 * s**cfg.src_reweight  # (d, d): whiten, rotate, re-weight the columns
    w_tgt = wz1 @ wz2 * s**cfg.tgt_reweight
    dewhiten = {"src": wx2.T @ wx1_inv @ wx2, "tgt": wz2.T @ wz1_inv @ wz2, "none": eye}
    w_src = w_src @ dewhiten[cfg.src_dewhiten]
    w_tgt = w_tgt @ dewhiten[cfg.tgt_dewhiten]
    if cfg.dim_reduction:
        w_src, w_tgt = w_src[:, : cfg.dim_reduction], w_tgt[:, : cfg.dim_reduction]
    return VecmapResult(W_src=np.asarray(w_src, dtype=np.float32), W_tgt=np.asarray(w_tgt, dtype=np.float32),
                        singular_values=s)
