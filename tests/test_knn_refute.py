"""Certified CSLS top-k with refuted candidates (eval.knn.NeighbourhoodMeans._tighten / _certify).

Candidate keys whose score bound reaches a row's floor are not all searched exactly: their r
bounds tighten over growing prefixes of the neighbours until the key is refuted or its r is
exact.  The rankings must still equal a dense float64 CSLS computation, the refuted keys' values
must stay lower bounds, and the refutation must actually spare searches.
"""

from __future__ import annotations

import numpy as np
import pytest

import eval.knn as knn_mod
from eval.align import build_dictionary, translation_precision
from eval.knn import NeighbourhoodMeans
from tests.test_knn_sweep import _dense_dictionary, _dense_r, _hubby


@pytest.fixture(autouse=True)
def _small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(knn_mod, "TIGHTEN_CHUNK", 96)  # many refutation steps, a short last one
    monkeypatch.setattr(knn_mod, "FULL_SEARCH_FRACTION", 1.0)  # never fall back to the full search


def test_tighten_refutes_or_makes_exact() -> None:
    src, tgt = _hubby(1000, 16, seed=11)
    means = NeighbourhoodMeans(tgt, src, prune=True)
    true_r = _dense_r(tgt, src)
    ids = np.arange(0, 1000, 3)
    rng = np.random.default_rng(0)
    ceiling = (true_r[ids] + rng.uniform(-0.15, 0.05, ids.shape[0])).astype(np.float32)
    means._tighten(ids, ceiling)
    exact = means.exact[ids]
    np.testing.assert_allclose(means.value[ids][exact], true_r[ids][exact], atol=1e-5)
    assert (means.value[ids][~exact] > ceiling[~exact]).all()  # refuted: above the ceiling ...
    assert (means.value[ids][~exact] <= true_r[ids][~exact] + 1e-6).all()  # ... and still a lower bound
    # every key whose true r is below its ceiling must have been made exact
    assert exact[true_r[ids] < ceiling - 1e-4].all()
    assert 0 < exact.sum() < ids.shape[0]
    assert means.exact_computed == exact.sum()


@pytest.mark.parametrize("k", [1, 10])
def test_refuted_topk_equals_the_dense_csls_top_k(k: int) -> None:
    src, tgt = _hubby(2000, 12, seed=12)
    r_tgt = NeighbourhoodMeans(tgt, src, prune=True)
    queries = src[::25]  # (80, d)
    scores, ids = r_tgt.topk(queries, k)
    dense = 2 * queries.astype(np.float64) @ tgt.T.astype(np.float64) - _dense_r(tgt, src)[None, :]
    want = np.argsort(-dense, axis=1)[:, :k]
    np.testing.assert_array_equal(ids, want)
    np.testing.assert_allclose(scores, np.take_along_axis(dense, want, axis=1), atol=1e-5)
    # the answer's keys are exact, and refutation spared the searches of most candidates
    assert r_tgt.exact[ids].all()
    assert r_tgt.exact_computed < tgt.shape[0] // 2


@pytest.mark.parametrize("build", ["S2T", "S2T&T2S"])
def test_swept_induction_with_refutation_equals_the_dense_dictionary(monkeypatch: pytest.MonkeyPatch,
                                                                     build: str) -> None:
    monkeypatch.setattr(knn_mod, "SWEEP_FLOATS", 40_000)
    src, tgt = _hubby(2500, 16, seed=13)
    r_tgt = NeighbourhoodMeans(tgt, src, prune=True)
    r_src = NeighbourhoodMeans(src, tgt, prune=True)
    got = build_dictionary(src, tgt, build=build, max_rank=300, assume_normalized=True, r_src=r_src, r_tgt=r_tgt)
    np.testing.assert_array_equal(got, _dense_dictionary(src, tgt, 300, build))


def test_precision_with_refutation_equals_the_full_search(monkeypatch: pytest.MonkeyPatch) -> None:
    src, tgt = _hubby(1800, 10, seed=15)
    rng = np.random.default_rng(3)
    pairs = np.stack([rng.choice(1800, 150, replace=False)] * 2, axis=1)
    monkeypatch.setattr(knn_mod, "PRUNE_MIN_KEYS", 10**9)
    full = translation_precision(src, tgt, pairs, method="csls", return_ranks=True)
    monkeypatch.setattr(knn_mod, "PRUNE_MIN_KEYS", 500)  # bounds, a first round, refuted candidates
    pruned = translation_precision(src, tgt, pairs, method="csls", return_ranks=True)
    assert pruned.keys() == full.keys()
    for key, value in full.items():
        np.testing.assert_array_equal(np.asarray(pruned[key]), np.asarray(value), err_msg=key)
