"""The blocked exact k-NN kernel and the CSLS sweep (eval.knn): both equal a dense NumPy reference.

The kernel (NumPy GEMM per key block, faiss heaps) must give faiss's own top-k; the sweep must give
exact r for its query rows, true lower bounds of r for every key, and dictionaries identical to
a dense CSLS computation, whatever the block and group boundaries.
"""

from __future__ import annotations

import numpy as np
import pytest

import eval.knn as knn_mod
from eval.align import build_dictionary
from eval.knn import NeighbourhoodMeans, _search, sweep


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _hubby(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two related spaces with clusters of very different density, so r varies a lot (hubs)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((8, d)) * np.linspace(0.2, 3.0, 8)[:, None]
    src = centres[rng.integers(0, 8, n)] + rng.standard_normal((n, d))
    tgt = src + 0.8 * rng.standard_normal((n, d))
    return _unit(src.astype(np.float32)), _unit(tgt.astype(np.float32))


def _dense_r(keys: np.ndarray, neighbours: np.ndarray, k: int = 10) -> np.ndarray:
    sims = keys.astype(np.float64) @ neighbours.T.astype(np.float64)
    return -np.sort(-sims, axis=1)[:, :k].mean(axis=1)


def _dense_dictionary(src: np.ndarray, tgt: np.ndarray, max_rank: int, build: str) -> np.ndarray:
    """MUSE's CSLS dictionary induction with every score materialised (float64)."""
    cos = src.astype(np.float64) @ tgt.T.astype(np.float64)  # (n_src, n_tgt)
    r_src, r_tgt = _dense_r(src, tgt), _dense_r(tgt, src)
    n_tgt = tgt.shape[0]
    codes = []
    if "S2T" in build:
        best = np.argmax(2 * cos[:max_rank] - r_tgt[None, :], axis=1)
        keep = best < max_rank
        codes.append(np.arange(max_rank)[keep] * n_tgt + best[keep])
    if "T2S" in build:
        best = np.argmax(2 * cos[:, :max_rank].T - r_src[None, :], axis=1)
        keep = best < max_rank
        codes.append(best[keep] * n_tgt + np.arange(max_rank)[keep])
    if build == "S2T&T2S":
        merged = np.intersect1d(codes[0], codes[1])
    elif build == "S2T|T2S":
        merged = np.union1d(codes[0], codes[1])
    else:
        merged = np.unique(codes[0])
    return np.stack([merged // n_tgt, merged % n_tgt], axis=1)


@pytest.mark.parametrize("block", [7, 64, 10_000])
def test_blocked_kernel_equals_the_dense_top_k(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    monkeypatch.setattr(knn_mod, "KEY_BLOCK", block)  # several blocks and a short last one
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((37, 16)).astype(np.float32)
    keys = rng.standard_normal((500, 16)).astype(np.float32)
    bias = rng.standard_normal(500).astype(np.float32)
    scores, ids = _search(queries, keys, 5, key_bias=bias, query_scale=2.0)
    dense = 2.0 * queries.astype(np.float64) @ keys.T.astype(np.float64) - bias[None, :]
    want = np.argsort(-dense, axis=1)[:, :5]
    np.testing.assert_array_equal(ids, want)  # best first, as faiss.knn returns them
    np.testing.assert_allclose(scores, np.take_along_axis(dense, want, axis=1), atol=1e-5)


def test_kernel_matches_faiss_knn() -> None:
    import faiss

    rng = np.random.default_rng(2)
    keys = _unit(rng.standard_normal((3000, 24)).astype(np.float32))
    queries = keys[:100] + 0.1
    got_s, got_i = _search(queries, keys, 10)
    ref_s, ref_i = faiss.knn(np.ascontiguousarray(queries), keys, 10, metric=faiss.METRIC_INNER_PRODUCT)
    np.testing.assert_array_equal(got_i, ref_i)
    np.testing.assert_allclose(got_s, ref_s, atol=1e-5)


@pytest.mark.parametrize("n_rows", [5, 333, 1200])
def test_sweep_gives_exact_rows_and_lower_bounds(monkeypatch: pytest.MonkeyPatch, n_rows: int) -> None:
    monkeypatch.setattr(knn_mod, "SWEEP_FLOATS", 50_000)  # many key blocks, a short last one
    src, tgt = _hubby(1500, 20, seed=3)
    r_tgt = NeighbourhoodMeans(tgt, src, prune=True)
    r_src = NeighbourhoodMeans(src, tgt, prune=True)
    assert sweep(r_src, r_tgt, n_rows)
    assert not sweep(r_src, r_tgt, n_rows)  # the same ranking is not swept twice
    true_src, true_tgt = _dense_r(src, tgt), _dense_r(tgt, src)
    assert r_src.exact[:n_rows].all() and not r_src.exact[n_rows:].any()
    np.testing.assert_allclose(r_src.value[:n_rows], true_src[:n_rows], atol=1e-5)
    # every key's r is bounded from below (5 rows: fewer groups than knn, missing ones count -1)
    assert (r_tgt.value <= true_tgt + 1e-6).all()
    if n_rows >= 333:
        assert np.median(true_tgt - r_tgt.value) < 0.2  # and the bounds are not vacuous


def test_sweep_refuses_sides_of_different_mappings() -> None:
    src, tgt = _hubby(100, 8, seed=4)
    with pytest.raises(ValueError, match="two sides of one mapping"):
        sweep(NeighbourhoodMeans(src, tgt), NeighbourhoodMeans(src.copy(), tgt), 10)


@pytest.mark.parametrize("build", ["S2T", "T2S", "S2T&T2S", "S2T|T2S"])
@pytest.mark.parametrize("max_rank", [7, 500])
def test_swept_induction_equals_the_dense_dictionary(monkeypatch: pytest.MonkeyPatch, build: str,
                                                     max_rank: int) -> None:
    monkeypatch.setattr(knn_mod, "SWEEP_FLOATS", 40_000)
    src, tgt = _hubby(2500, 16, seed=5)
    r_tgt = NeighbourhoodMeans(tgt, src, prune=True)
    r_src = NeighbourhoodMeans(src, tgt, prune=True)
    got = build_dictionary(src, tgt, build=build, max_rank=max_rank, assume_normalized=True,
                           r_src=r_src, r_tgt=r_tgt)
    np.testing.assert_array_equal(got, _dense_dictionary(src, tgt, max_rank, build))
    if max_rank == 500 and "S2T" in build:
        # the sweep's rows made r exact for the queried words without a search of their own
        assert r_src.exact[:max_rank].all()
        assert r_tgt.exact_computed < tgt.shape[0] // 2


@pytest.mark.parametrize("chunk", [None, 96])
def test_swept_ranking_is_not_stale_after_the_other_sweep(monkeypatch: pytest.MonkeyPatch, chunk: int | None) -> None:
    """The other direction's sweep makes more r exact after the first round was ranked; the
    answers (ids and exact scores) still equal the dense CSLS top-1, also when the candidates
    are refuted in many small steps (``chunk``)."""
    if chunk is not None:
        monkeypatch.setattr(knn_mod, "TIGHTEN_CHUNK", chunk)
        monkeypatch.setattr(knn_mod, "FULL_SEARCH_FRACTION", 1.0)
    src, tgt = _hubby(2200, 12, seed=6)
    r_tgt = NeighbourhoodMeans(tgt, src, prune=True)
    r_src = NeighbourhoodMeans(src, tgt, prune=True)
    sweep(r_src, r_tgt, 800)
    sweep(r_tgt, r_src, 800)
    scores, ids = r_tgt.topk(src[:800], 1)
    cos = src[:800].astype(np.float64) @ tgt.T.astype(np.float64)
    dense = 2 * cos - _dense_r(tgt, src)[None, :]
    np.testing.assert_array_equal(ids[:, 0], np.argmax(dense, axis=1))
    np.testing.assert_allclose(scores[:, 0], dense.max(axis=1), atol=1e-5)


def test_threads_setting_limits_the_blas_the_kernel_runs_on() -> None:
    """``--threads``/``threads=`` reaches NumPy's BLAS (the kernel's GEMMs), not only torch."""
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from polyglot_groc.model.device import set_threads

    before = torch.get_num_threads()
    with threadpool_limits():  # restores every pool's setting on exit
        try:
            set_threads(1)
            blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
            assert blas and all(p["num_threads"] == 1 for p in blas)
        finally:
            torch.set_num_threads(before)
