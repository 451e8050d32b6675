"""Cache maths, uniform interpolation and frequency binning on tiny hand-computed examples."""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np
import pytest
import torch

from polyglot_groc.analysis.caches import (
    CacheParamError,
    check_cache_params,
    downweight_new,
    interpolate_cache,
    neural_cache_logprob,
    uniform_interpolate,
    unigram_cache_logprob,
)
from polyglot_groc.analysis.freqbins import bin_differences, bin_edges, plot_freq_bins


def test_unigram_cache_by_hand() -> None:
    # stream a b a a c: p_cache(y_t) = count(y_t in y_<t) / t
    y = torch.tensor([0, 1, 0, 0, 2])
    p = unigram_cache_logprob(y).exp()
    assert p[0] == 0 and p[1] == 0 and p[4] == 0  # empty cache / unseen word
    assert p[2].item() == pytest.approx(1 / 2)  # one 'a' in [a, b]
    assert p[3].item() == pytest.approx(2 / 3)  # two 'a' in [a, b, a]


def test_neural_cache_next_word_by_hand() -> None:
    # h0=(1,0) predicted 'a', h1=(0,1) predicted 'b'; query h2=(1,1), theta=1.
    # scores: h2.h0 = 1, h2.h1 = 1 -> p_cache(a) = e/(e+e) = 1/2
    # query h3=(2,0) for 'a' again: scores 2, 0, 2 (h2.h3=2) with targets a, b, b -> p(a)=e^2/(2e^2+1)
    h = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    y = torch.tensor([0, 1, 1, 0])
    p = neural_cache_logprob(h, y, theta=1.0, size=10, chunk=2).exp()
    assert p[0] == 0
    assert p[1] == 0  # 'b' not in the cache yet
    assert p[2].item() == pytest.approx(0.5)
    assert p[3].item() == pytest.approx(math.e ** 2 / (2 * math.e ** 2 + 1))
    # window of 1: position 3 sees only position 2 (target b) -> p(a) = 0
    p1 = neural_cache_logprob(h, y, theta=1.0, size=1).exp()
    assert p1[3] == 0 and p1[2].item() == pytest.approx(1.0)
    # theta=0 flattens the cache into the unigram cache over the window
    p0 = neural_cache_logprob(h, y, theta=0.0, size=10).exp()
    assert torch.allclose(p0, unigram_cache_logprob(y).exp())


def test_neural_cache_chunking_matches_one_chunk() -> None:
    g = torch.Generator().manual_seed(0)
    h = torch.randn(50, 4, generator=g)
    y = torch.randint(0, 5, (50,), generator=g)
    a = neural_cache_logprob(h, y, 0.7, size=7, chunk=4)
    b = neural_cache_logprob(h, y, 0.7, size=7, chunk=1000)
    assert torch.equal(torch.isinf(a), torch.isinf(b))
    fin = torch.isfinite(a)
    assert torch.allclose(a[fin], b[fin])


def test_interpolation_and_uniform() -> None:
    logp = torch.log(torch.tensor([0.5, 0.0, 0.2], dtype=torch.float64))
    u = uniform_interpolate(logp, union_size=10, weight=0.1).exp()
    assert torch.allclose(u, torch.tensor([0.9 * 0.5 + 0.01, 0.01, 0.9 * 0.2 + 0.01], dtype=torch.float64))
    cache = torch.log(torch.tensor([0.0, 1.0, 0.5], dtype=torch.float64))
    mixed = interpolate_cache(u.log(), cache, lam=0.8).exp()
    assert mixed[0].item() == pytest.approx(u[0].item())  # empty cache at t = 0
    assert mixed[1].item() == pytest.approx(0.8 * 0.01 + 0.2)
    assert mixed[2].item() == pytest.approx(0.8 * u[2].item() + 0.2 * 0.5)


def test_downweight_new_renormalises() -> None:
    # distribution: seen s=0.6, new n1=0.3, n2=0.1; dw=0.1 -> Z = 0.6 + 0.04 = 0.64
    probs = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    is_new = torch.tensor([False, True, True])
    new_mass = torch.full((3,), 0.4, dtype=torch.float64)
    out = downweight_new(probs.log(), new_mass, is_new, 0.1).exp()
    assert torch.allclose(out, torch.tensor([0.6 / 0.64, 0.03 / 0.64, 0.01 / 0.64], dtype=torch.float64))
    assert out.sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("kw", [{"theta": -1.0}, {"lam": 1.5}, {"size": 0}, {"new_word_weight": 0.0},
                                {"uniform_weight": 1.0}])
def test_cache_params_out_of_range(kw: dict[str, float]) -> None:
    with pytest.raises(CacheParamError, match="out of range"):
        check_cache_params(**kw)  # type: ignore[arg-type]


def test_freq_bins_by_hand(tmp_path) -> None:
    edges = bin_edges(width=50, n_bins=3)
    assert edges == [(0, 0), (1, 50), (51, 100), (101, -1)]
    freq = np.array([0, 3, 50, 51, 100, 500, 500])
    la = np.array([5.0, 2.0, 1.0, 1.0, 3.0, 1.0, 2.0])
    lb = np.array([6.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    bins = bin_differences(freq, la, lb, edges)
    assert [b.n_tokens for b in bins] == [1, 2, 2, 2]
    assert [b.median_diff for b in bins] == [-1.0, 0.0, 1.0, 0.5]
    assert [b.mean_diff for b in bins] == [-1.0, 0.0, 1.0, 0.5]
    # Shares: each bin's summed difference over all 7 tokens; together the mean difference.
    assert [b.share for b in bins] == pytest.approx([-1 / 7, 0.0, 2 / 7, 1 / 7])
    assert sum(b.share for b in bins) == pytest.approx(float((la - lb).mean()))
    skewed = bin_differences(np.array([1, 1, 1]), np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0, -4.0]), [(1, -1)])
    assert skewed[0].median_diff == -1.0 and skewed[0].mean_diff == 1.0  # median and mean disagree
    png = plot_freq_bins(bins, tmp_path / "f.png", "a", "b")
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_freq_bins_figure_marks_empty_bins_counts_and_unit(tmp_path, monkeypatch) -> None:
    import polyglot_groc.analysis.freqbins as fb

    edges = bin_edges(width=50, n_bins=3)  # 0, 1-50, 51-100, 101+
    freq = np.array([3, 3, 500])  # no token in the 0 and 51-100 bins
    bins = bin_differences(freq, np.array([1.0, 2.0, 1.0]), np.array([2.0, 2.0, 3.0]), edges)
    assert [b.n_tokens for b in bins] == [0, 2, 0, 1]
    assert [b.to_dict()["median_diff"] for b in bins] == [None, -0.5, None, -2.0]
    seen = {}

    def capture(fig):  # the figure as drawn, before it is closed
        ax = fig.axes[0]
        seen["bars"] = [(round(p.get_x() + p.get_width() / 2), p.get_height()) for p in ax.patches]
        seen["ticks"] = [t.get_text() for t in ax.get_xticklabels()]
        seen["ylabel"], seen["title"] = ax.get_ylabel(), ax.get_title()
        seen["marked"] = [list(line.get_xdata()) for line in ax.get_lines() if line.get_marker() == "x"]
        return b"png"

    monkeypatch.setattr(fb, "png_bytes", capture)
    fb.plot_freq_bins(bins, tmp_path / "f.png", "groc", "tied")
    assert seen["bars"] == [(1, -0.5), (3, -2.0)]  # no zero-height bar stands in for an empty bin
    assert seen["marked"] == [[0, 2]]  # the empty bins are marked instead
    assert seen["ticks"] == ["0-0\nn=0", "1-50\nn=2", "51-100\nn=0", "101+\nn=1"]
    assert "nats per token" in seen["ylabel"] and "groc" in seen["title"] and "tied" in seen["title"]


@pytest.mark.parametrize("name", ["fig.json", "fig", "fig.pdf", "fig.png.json"])
def test_figures_refuse_a_path_that_is_not_png(tmp_path, name: str) -> None:
    from groc_base.errors import InputError
    from polyglot_groc.analysis.curves import check_png_path

    bins = bin_differences(np.array([3]), np.array([1.0]), np.array([2.0]), bin_edges(50, 1, include_unseen=False))
    with pytest.raises(InputError, match=r"does not end in \.png"):
        plot_freq_bins(bins, tmp_path / name, "a", "b")
    assert list(tmp_path.iterdir()) == []
    assert check_png_path(tmp_path / "F.PNG") == tmp_path / "F.PNG"


def _scores(targets: list[int], new: set[int], compositional: bool = True, p_new: float = 0.05,
            streams: int = 1):
    """Hand-made per-token scores: every seen word p = 0.02, every new word ``p_new``, 0.3 of the
    model's mass on new words when the text has any (else none); random states."""
    from polyglot_groc.analysis.crossdomain import TokenScores

    g = torch.Generator().manual_seed(0)
    y = torch.tensor(targets)
    is_new = torch.tensor([t in new for t in targets])
    p = torch.where(is_new, torch.tensor(p_new if compositional else 0.0), torch.tensor(0.02)).double()
    n = len(targets)
    return TokenScores(logp=p.log(), new_mass=torch.full((n,), 0.3 if new else 0.0, dtype=torch.float64),
                       is_new=is_new, targets=y, hidden=torch.randn(n, 4, generator=g),
                       stream=torch.arange(streams).repeat_interleave(n // streams),
                       train_freq=np.where(is_new.numpy(), 0, 5), union_size=60, compositional=compositional)


def test_a_cache_alone_never_changes_how_new_words_are_scored() -> None:
    from polyglot_groc.analysis.crossdomain import CacheSettings, apply_settings

    scores = _scores([1, 2, 50, 3, 50, 51, 2, 1] * 3, new={50, 51})
    plain = apply_settings(scores, CacheSettings())
    for cache in ("unigram", "neural"):
        # λ = 1 gives the cache no weight: exactly the no-cache scores, new words included
        # (a hidden down-weighting of 0.1 used to come with every cache).
        assert torch.equal(apply_settings(scores, CacheSettings(cache=cache, lam=1.0)), plain)
        # Asked for, the down-weighting applies the same with or without a cache.
        dw = CacheSettings(new_word_weight=0.1)
        assert torch.equal(apply_settings(scores, dataclasses.replace(dw, cache=cache, lam=1.0)),
                           apply_settings(scores, dw))
    assert CacheSettings().new_word_weight == 1.0 and CacheSettings(cache="neural").plain() == CacheSettings()


@pytest.mark.parametrize("cache", ["neural", "unigram"])
def test_grid_search_matches_apply_settings_point_by_point(cache: str) -> None:
    from polyglot_groc.analysis.crossdomain import CacheSettings, apply_settings
    from polyglot_groc.analysis.tunecache import grid_search

    scores = _scores([1, 2, 50, 3, 50, 51, 2, 1, 4, 50] * 4, new={50, 51}, streams=2)
    base = CacheSettings(cache=cache, size=7)
    thetas, lambdas, weights = (0.0, 0.7), (0.5, 0.9, 1.0), (0.1, 1.0)
    grid = grid_search(scores, base, thetas, lambdas, weights)
    assert grid.shape == (2, 2, 3)
    for k, w in enumerate(weights):
        for i, th in enumerate(thetas):
            for j, la in enumerate(lambdas):
                s = dataclasses.replace(base, theta=th, lam=la, new_word_weight=w)
                assert grid[k, i, j] == pytest.approx(float(torch.exp(-apply_settings(scores, s).mean())))


def test_tune_picks_no_cache_when_every_setting_is_worse(caplog: pytest.LogCaptureFixture) -> None:
    from polyglot_groc.analysis.crossdomain import CacheSettings
    from polyglot_groc.analysis.tunecache import tune_scores

    scores = _scores(list(range(40)), new=set())  # no word comes back: a cache can only cost
    with caplog.at_level(logging.WARNING, logger="polyglot_groc.analysis.tunecache"):
        res = tune_scores(scores, CacheSettings(cache="neural", size=50))
    assert res["best"] == {"cache": "none", "theta": None, "lambda": None, "new_word_weight": None,
                           "perplexity": res["perplexity_no_cache"]}
    assert not res["cache_helps"] and res["best_cached"]["perplexity"] > res["perplexity_no_cache"]
    assert res["evaluate_args"] == [] and "beats no cache" in caplog.text


def test_tune_flags_a_best_on_the_grid_edge(caplog: pytest.LogCaptureFixture) -> None:
    from polyglot_groc.analysis.crossdomain import CacheSettings
    from polyglot_groc.analysis.tunecache import LAMBDAS, NEW_WORD_WEIGHTS, tune_scores

    # The same 3 words over and over: the more cache, the better, so the best λ is the grid's smallest.
    scores = _scores([1, 2, 3] * 30, new=set())
    with caplog.at_level(logging.WARNING, logger="polyglot_groc.analysis.tunecache"):
        res = tune_scores(scores, CacheSettings(cache="unigram"))
    assert res["cache_helps"] and res["best"] == res["best_cached"] and res["best"]["lambda"] == LAMBDAS[0]
    assert res["on_edge"] == {"lambda": {"side": "smallest", "value": LAMBDAS[0], "try": [0.7665, 0.7997]}}
    assert "widen it" in caplog.text and "to lambdas" in caplog.text  # the keyword, from Python
    assert res["evaluate_args"] == ["--cache", "unigram", "--cache-lambda", f"{LAMBDAS[0]:g}"]
    # A best inside the grid, or at a bound no grid can pass (λ = 1), is not flagged.
    inside = tune_scores(scores, CacheSettings(cache="unigram"), lambdas=[0.0, 0.5, 0.9])
    assert inside["best"]["lambda"] == 0.5 or inside["on_edge"] == {}
    assert tune_scores(_scores(list(range(40)), new=set()), CacheSettings(cache="unigram"),
                       lambdas=[0.9, 1.0])["on_edge"] == {}
    # GroC: the new-word weight is tuned on the seed's grid plus 1.
    assert res["new_word_weights"] == list(NEW_WORD_WEIGHTS) and len(res["perplexity_by_new_word_weight"]) == 6


def test_tune_new_word_weight_is_tuned_for_groc_only() -> None:
    from polyglot_groc.analysis.crossdomain import CacheSettings
    from polyglot_groc.analysis.tunecache import tune_scores

    # The model puts 0.3 of its mass on new words (0.2 on each that occurs) but only 2 tokens in 18
    # are new: without a cache the best weight is w = 0.29 (d/dw of -2 log w + 18 log(0.7 + 0.3 w)).
    targets = [1, 2, 3, 4, 5, 6, 7, 8, 50, 9, 10, 11, 12, 13, 14, 15, 16, 51] * 3
    res = tune_scores(_scores(targets, new={50, 51}, p_new=0.2), CacheSettings(cache="unigram"))
    assert res["best"]["new_word_weight"] in res["new_word_weights"] and res["best"]["new_word_weight"] < 1.0
    grid = res["perplexity_by_new_word_weight"]
    assert min(min(row) for row in grid[f"{res['best']['new_word_weight']:g}"]) == res["best"]["perplexity"]
    assert res["evaluate_args"][-2:] == ["--new-word-weight", f"{res['best']['new_word_weight']:g}"]
    # Lookup models have no new-word weight to tune.
    lookup = tune_scores(_scores(targets, new={50, 51}, compositional=False), CacheSettings(cache="unigram"))
    assert lookup["new_word_weights"] is None and lookup["best_cached"]["new_word_weight"] is None


def test_heatmap_shows_the_no_cache_figure(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    import polyglot_groc.analysis.tunecache as tc

    seen = {}

    def capture(fig, out):
        ax = fig.axes[0]
        seen["title"] = ax.get_title()
        seen["bar_lines"] = [line.get_ydata()[0] for line in fig.axes[1].get_lines()]
        seen["outlined"] = [(p.get_x(), p.get_y()) for p in ax.patches]
        return out

    monkeypatch.setattr(tc, "save_png", capture)
    grid = np.array([[110.0, 105.0], [98.0, 101.0]])
    tc.plot_heatmap(grid, [0.0, 1.0], [0.9, 0.95], tmp_path / "h.png", "groc + neural", no_cache=100.0, best=(1, 0))
    assert "no cache: 100.0" in seen["title"] and seen["bar_lines"] == [100.0]
    assert seen["outlined"] == [(-0.5, 0.5)]  # the best cell, row 1 column 0
    # All worse than no cache still draws (the centre is kept inside the colour range).
    tc.plot_heatmap(grid + 50, [0.0, 1.0], [0.9, 0.95], tmp_path / "h.png", "t", no_cache=100.0)
