"""Refinements reuse the previous mapping's CSLS neighbourhood means as certified bounds (eval.knn.Prior):
the induced dictionaries equal the full search's exactly, with fewer exact r searches."""

from __future__ import annotations

import numpy as np
import pytest

from eval.align import align, build_dictionary
from eval.knn import NeighbourhoodMeans, Prior, mapping_change
from groc_base.errors import InputError


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _small_rotation(d: int, angle: float, seed: int) -> np.ndarray:
    """An orthogonal matrix close to the identity: exp of a scaled skew-symmetric matrix."""
    from scipy.linalg import expm

    a = np.random.default_rng(seed).standard_normal((d, d))
    skew = (a - a.T) / np.linalg.norm(a - a.T, 2) * angle
    return expm(skew).astype(np.float32)


@pytest.mark.parametrize("angle", [0.005, 0.05])
def test_prior_bounds_give_the_full_searchs_dictionary(angle: float) -> None:
    rng = np.random.default_rng(5)
    n, d = 6000, 48
    src = _unit(rng.standard_normal((n, d)).astype(np.float32))
    tgt = _unit(src + 1.2 * rng.standard_normal((n, d)).astype(np.float32))
    w_old = np.eye(d, dtype=np.float32)
    w_new = _small_rotation(d, angle, seed=6)
    delta = mapping_change(w_old, w_new)
    assert delta == pytest.approx(angle, rel=0.05)
    mapped_old, mapped_new = _unit(src @ w_old.T), _unit(src @ w_new.T)
    # The previous mapping's objects after an induction: exact r for the keys its rankings needed.
    old_t, old_s = NeighbourhoodMeans(tgt, mapped_old, prune=True), NeighbourhoodMeans(mapped_old, tgt, prune=True)
    build_dictionary(mapped_old, tgt, max_rank=600, assume_normalized=True, r_src=old_s, r_tgt=old_t)
    assert old_t.exact.any() and old_s.exact.any()
    r_t = NeighbourhoodMeans(tgt, mapped_new, prune=True, prior=Prior.of(old_t, delta))
    r_s = NeighbourhoodMeans(mapped_new, tgt, prune=True, prior=Prior.of(old_s, delta))
    got = build_dictionary(mapped_new, tgt, max_rank=600, assume_normalized=True, r_src=r_s, r_tgt=r_t)
    full = build_dictionary(mapped_new, tgt, max_rank=600, assume_normalized=True,
                            r_src=NeighbourhoodMeans(mapped_new, tgt, prune=False),
                            r_tgt=NeighbourhoodMeans(tgt, mapped_new, prune=False))
    np.testing.assert_array_equal(got, full)
    # every bound is a bound: lower <= true r <= upper
    true_t = NeighbourhoodMeans(tgt, mapped_new, prune=False).full()
    assert (r_t.value <= true_t + 1e-6).all() and (r_t.upper >= true_t - 1e-6).all()
    if angle < 0.01:  # a small move settles rows without any new exact r
        fresh = NeighbourhoodMeans(tgt, mapped_new, prune=True)
        build_dictionary(mapped_new, tgt, build="S2T", max_rank=600, assume_normalized=True, r_tgt=fresh)
        assert r_t.exact_computed < fresh.exact_computed


def test_prior_of_other_words_is_refused() -> None:
    x = _unit(np.random.default_rng(0).standard_normal((50, 4)).astype(np.float32))
    with pytest.raises(InputError, match="prior is for 40 keys but there are 50"):
        NeighbourhoodMeans(x, x, prior=Prior(np.zeros(40, np.float32), np.zeros(40, np.float32), 0.01))


def test_refinement_with_priors_equals_refinement_without() -> None:
    rng = np.random.default_rng(8)
    n, d = 20_500, 12  # above PRUNE_MIN_KEYS: the pruned, prior-bounded path runs
    src = rng.standard_normal((n, d)).astype(np.float32)
    tgt = (src @ np.linalg.qr(rng.standard_normal((d, d)))[0].T + 0.5 * rng.standard_normal((n, d))).astype(np.float32)
    seed = np.stack([np.arange(300), np.arange(300)], axis=1)
    res = align(src, tgt, seed, n_refinement=3, dico_max_rank=800, criterion_n_src=800)
    import eval.align as ea

    old = ea.PRIOR_MAX_CHANGE
    ea.PRIOR_MAX_CHANGE = -1.0  # never reuse: every mapping bounded from scratch
    try:
        plain = align(src, tgt, seed, n_refinement=3, dico_max_rank=800, criterion_n_src=800)
    finally:
        ea.PRIOR_MAX_CHANGE = old
    assert [h["dictionary_size"] for h in res.history] == [h["dictionary_size"] for h in plain.history]
    np.testing.assert_array_equal(res.W, plain.W)
