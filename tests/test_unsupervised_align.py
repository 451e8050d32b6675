"""Alignment without a dictionary (eval.unsup): VecMap's self-learning against transcriptions of its
steps and on a rotated, permuted, noised copy; the verdict on related and unrelated spaces; seeds;
MUSE's adversarial start; bad input.  Shortened schedules (stochastic_interval 3, at most 30
iterations: the related copies converge in ~21) keep it fast."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from eval.align import AlignmentResult, translation_precision
from eval.unsup import (
    AdversarialConfig,
    MapResult,
    SelfLearningConfig,
    UnsupervisedConfig,
    VerdictConfig,
    alignment_verdict,
    fit_unsupervised,
    muse_adversarial,
    recipe,
    similarity_init,
    vecmap_self_learning,
    vecmap_unsupervised,
)
from eval.unsup.selflearn import _induce
from groc_base.errors import ArgumentTypeError, ConfigError, InputError

FAST = SelfLearningConfig(stochastic_interval=3, max_iterations=30)
N, D = 2000, 64


def _clustered(seed: int, n: int = N, d: int = D, clusters: int = 40) -> np.ndarray:
    """Anisotropic Gaussian clusters: structure an unsupervised start can find (an isotropic cloud
    looks the same under every rotation)."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, d)) * np.linspace(2.0, 0.5, d)
    return (centers[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)


def _copy(x: np.ndarray, noise: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``x`` rotated, its rows shuffled as frequency ranks shuffle between languages (each moves by
    ~3% of the vocabulary), plus noise; returns the copy and the gold ``(n, 2)`` pairs."""
    rng = np.random.default_rng(seed)
    n, d = x.shape
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    order = np.argsort(np.arange(n) + 0.03 * n * rng.standard_normal(n), kind="stable")  # copy row i = x row order[i]
    z = (x[order] @ q + noise * rng.standard_normal((n, d))).astype(np.float32)
    return z, np.stack([order, np.arange(n)], axis=1)


@pytest.fixture(scope="module")
def related() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = _clustered(0)
    z, gold = _copy(x, noise=0.1)
    return x, z, gold


def _p_at_1(res: AlignmentResult | MapResult, x: np.ndarray, z: np.ndarray, gold: np.ndarray) -> float:
    out = translation_precision(res.map_source(x), res.prepare_target(z), gold, ks=(1,))
    return float(out["precision_at_1"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# the steps against transcriptions of VecMap's code
# --------------------------------------------------------------------------------------------


def _unit(m: np.ndarray) -> np.ndarray:
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _vecmap_normalize(m: np.ndarray) -> np.ndarray:
    m = _unit(m)
    return _unit(m - m.mean(axis=0))


def _topk_mean(m: np.ndarray, k: int) -> np.ndarray:
    return np.sort(m, axis=1)[:, -k:].mean(axis=1)


class _FixedMask:
    """An rng stub whose ``integers`` returns one known (b, m) draw: the dropout both sides see."""

    def __init__(self, draws: np.ndarray) -> None:
        self.draws, self.row = draws, 0

    def integers(self, low: int, high: int, size: tuple[int, int], dtype: type) -> np.ndarray:
        out = self.draws[self.row : self.row + size[0]]
        self.row += size[0]
        return out


def test_induction_equals_a_dense_transcription_of_vecmaps_step() -> None:
    rng = np.random.default_rng(0)
    xw = _unit(rng.standard_normal((300, 8))).astype(np.float32)
    zw = _unit(rng.standard_normal((250, 8))).astype(np.float32)
    draws = rng.integers(0, 65536, size=(300, 250), dtype=np.uint16)
    keep = 0.4
    pairs, objective = _induce(xw, zw, FAST, keep, _FixedMask(draws))  # type: ignore[arg-type]
    # map_embeddings.py, --direction union --csls 10: full similarity matrices, dropout to 0.
    sim = xw.astype(np.float64) @ zw.T.astype(np.float64)  # (300, 250)
    kept = draws < round(keep * 65536)
    fwd = ((sim - _topk_mean(sim.T, 10) / 2) * kept).argmax(axis=1)
    bwd = ((sim.T - _topk_mean(sim, 10) / 2) * kept.T).argmax(axis=1)
    assert np.array_equal(pairs[:300], np.stack([np.arange(300), fwd], axis=1))
    assert np.array_equal(pairs[300:], np.stack([bwd, np.arange(250)], axis=1))
    assert objective == pytest.approx((sim.max(axis=1).mean() + sim.max(axis=0).mean()) / 2, abs=1e-6)


def test_similarity_start_equals_a_transcription_of_vecmaps_init(related: tuple[np.ndarray, ...]) -> None:
    x, z, _ = related
    xn, zn = _vecmap_normalize(x[:300].astype(np.float64)), _vecmap_normalize(z[:300].astype(np.float64))
    got = similarity_init(xn.astype(np.float32), zn.astype(np.float32), 300)

    def sqrt_sorted(m: np.ndarray) -> np.ndarray:
        u, s, _ = np.linalg.svd(m, full_matrices=False)
        return _vecmap_normalize(np.sort((u * s) @ u.T, axis=1))

    sim = sqrt_sorted(xn) @ sqrt_sorted(zn).T
    sim -= _topk_mean(sim, 10)[:, None] / 2 + _topk_mean(sim.T, 10)[None, :] / 2
    want = np.concatenate([np.stack([np.arange(300), sim.argmax(axis=1)], axis=1),
                           np.stack([sim.argmax(axis=0), np.arange(300)], axis=1)])
    assert (got == want).all(axis=1).mean() >= 0.99  # float32 against float64: a near-tie may differ


# --------------------------------------------------------------------------------------------
# the recipes end to end
# --------------------------------------------------------------------------------------------


def test_unsupervised_recovers_a_rotated_permuted_noised_copy_and_says_aligned(
        related: tuple[np.ndarray, ...]) -> None:
    x, z, gold = related
    fit = fit_unsupervised(x, z, config=UnsupervisedConfig(self_learning=FAST), seed=0)
    assert _p_at_1(fit.result, x, z, gold) >= 95.0
    assert fit.verdict.status == "aligned", fit.verdict.reason
    assert fit.verdict.evidence["best_agreement"] >= 0.5
    assert len(fit.restarts) == 2 and fit.result.W_tgt is not None
    assert [h["iteration"] for h in fit.result.history] == list(range(1, len(fit.result.history) + 1))
    assert fit.result.history[-1]["keep_probability"] == 1.0
    # The same map as an AlignmentResult, for code that evaluates supervised maps.
    assert _p_at_1(fit.result.alignment(), x, z, gold) == _p_at_1(fit.result, x, z, gold)
    assert any("stochastic_interval 3" in d for d in fit.to_dict()["reference"]["differences"])


@pytest.mark.parametrize("kind", ["gaussian", "clustered"])
def test_unrelated_spaces_are_said_to_fail(kind: str) -> None:
    rng = np.random.default_rng(9)
    n, d = N // 2, D // 2
    if kind == "gaussian":
        x, z = rng.standard_normal((n, d)).astype(np.float32), rng.standard_normal((n, d)).astype(np.float32)
    else:  # the same kind of structure, nothing in common
        x, z = _clustered(0, n, d), _clustered(5, n, d)
    fit = fit_unsupervised(x, z, config=UnsupervisedConfig(self_learning=FAST), seed=0)
    assert fit.verdict.status == "failed", fit.verdict.reason
    assert fit.verdict.evidence["best_agreement"] < 0.1


def test_a_seed_repeats_a_run_and_another_seed_changes_it(related: tuple[np.ndarray, ...]) -> None:
    x, z, _ = related
    small = UnsupervisedConfig(self_learning=dataclasses.replace(FAST, max_iterations=4))
    a, b = vecmap_unsupervised(x, z, small, seed=7), vecmap_unsupervised(x, z, small, seed=7)
    c = vecmap_unsupervised(x, z, small, seed=8)
    assert np.array_equal(a.W, b.W) and np.array_equal(a.dictionary, b.dictionary)
    assert [h["objective"] for h in a.history] == [h["objective"] for h in b.history]
    assert not np.array_equal(a.dictionary, c.dictionary)  # the stochastic induction draws differ


def test_self_learning_from_a_small_seed_dictionary(related: tuple[np.ndarray, ...]) -> None:
    x, z, gold = related
    seed = gold[np.argsort(gold[:, 0])][:40]  # --semi_supervised with 40 pairs
    fit = fit_unsupervised(x, z, method="vecmap-self-learning", config=FAST, seed_pairs=seed)
    assert _p_at_1(fit.result, x, z, gold) >= 95.0
    assert fit.result.method == "vecmap-self-learning" and np.array_equal(fit.result.seed_dictionary, seed)
    assert fit.verdict.status == "aligned", fit.verdict.reason
    assert all(r.seed_dictionary.shape[0] == 20 for r in fit.restarts)  # each restart: half of the seed


def test_muse_adversarial_runs_seeded_and_keeps_the_best_criterion(related: tuple[np.ndarray, ...]) -> None:
    x, z, _ = related
    cfg = AdversarialConfig.reduced(dis_hid_dim=64, n_epochs=2, epoch_size=3200, n_refinement=2)
    a, b = muse_adversarial(x, z, cfg, seed=3), muse_adversarial(x, z, cfg, seed=3)
    assert np.array_equal(a.W, b.W)
    phases = [h["phase"] for h in a.history]
    assert phases == ["adversarial"] * 2 + ["refinement"] * 2
    assert a.criterion == pytest.approx(max(h["criterion"] for h in a.history))
    assert np.allclose(a.W @ a.W.T, np.eye(D), atol=0.05)  # orthogonalised / Procrustes
    assert any("dis_hid_dim 64" in d for d in recipe("muse-adversarial", cfg)["differences"])


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text and text
    return text


@pytest.mark.parametrize("make, match", [
    (lambda x: (x[:0], x), "empty"),
    (lambda x: (x[:12], x), "needs at least 65"),
    (lambda x: (x, x[:, :32]), "dimension"),
    (lambda x: (np.zeros_like(x), x), "every source vector is zero"),
    (lambda x: (x, np.where(np.arange(x.shape[0])[:, None] == 3, np.nan, x)), "nan"),
])
def test_bad_spaces_are_one_line_input_errors(related: tuple[np.ndarray, ...], make: object, match: str) -> None:
    x = related[0]
    a, b = make(x)  # type: ignore[operator]
    for run in (lambda: vecmap_unsupervised(a, b, UnsupervisedConfig(self_learning=FAST)),
                lambda: muse_adversarial(a, b, AdversarialConfig.reduced(n_epochs=0))):
        with pytest.raises(InputError, match=match) as exc:
            run()
        _one_line(exc)


def test_sizes_above_the_vocabulary_are_refused(related: tuple[np.ndarray, ...]) -> None:
    x, z, gold = related
    cases = [
        (lambda: vecmap_unsupervised(x, z, UnsupervisedConfig(self_learning=dataclasses.replace(
            FAST, vocabulary_cutoff=N + 1))), "vocabulary_cutoff=2001 is larger"),
        (lambda: vecmap_unsupervised(x, z, UnsupervisedConfig(unsupervised_vocab=5000)), "unsupervised_vocab=5000"),
        (lambda: muse_adversarial(x, z, AdversarialConfig.reduced(dis_most_frequent=N + 1)), "dis_most_frequent"),
        (lambda: vecmap_self_learning(x, z, gold + N, FAST), "outside"),
    ]
    for run, match in cases:
        with pytest.raises(InputError, match=match) as exc:
            run()
        assert "pass" in _one_line(exc) or "build" in _one_line(exc)


@pytest.mark.parametrize("build, match", [
    (lambda: SelfLearningConfig(stochastic_interval=0), "stochastic_interval"),
    (lambda: SelfLearningConfig(stochastic_initial=0.0), "stochastic_initial"),
    (lambda: SelfLearningConfig(direction="sideways"), "direction"),  # type: ignore[arg-type]
    (lambda: SelfLearningConfig(normalize=("whiten",)), "normalisation"),
    (lambda: UnsupervisedConfig(unsupervised_vocab=1), "unsupervised_vocab"),
    (lambda: AdversarialConfig(dis_smooth=0.7), "dis_smooth"),
    (lambda: AdversarialConfig(batch_size=0), "batch_size"),
    (lambda: VerdictConfig(restarts=0), "restarts"),
    (lambda: VerdictConfig(failed_agreement=0.6, aligned_agreement=0.5), "failed_agreement"),
])
def test_bad_settings_are_config_errors(build: object, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as exc:
        build()  # type: ignore[operator]
    _one_line(exc)


def test_bad_calls_of_the_entry_point(related: tuple[np.ndarray, ...]) -> None:
    x, z, gold = related
    with pytest.raises(InputError, match="seed_pairs") as exc:
        fit_unsupervised(x, z, seed_pairs=gold)
    _one_line(exc)
    with pytest.raises(InputError, match="seed_pairs"):
        fit_unsupervised(x, z, method="vecmap-self-learning")
    with pytest.raises(InputError, match="unknown unsupervised method"):
        fit_unsupervised(x, z, method="gan")  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="UnsupervisedConfig"):
        fit_unsupervised(x, z, config=FAST)
    res = vecmap_self_learning(x, z, gold[:40], dataclasses.replace(FAST, max_iterations=1), method="vecmap-identical")
    assert res.method == "vecmap-identical" and len(res.history) == 1
    with pytest.raises(InputError, match="no restarts"):
        alignment_verdict(x, z, res, [])


def test_a_result_saves_and_loads_whole(related: tuple[np.ndarray, ...], tmp_path: object) -> None:
    from pathlib import Path

    x, z, gold = related
    res = vecmap_self_learning(x, z, gold[:40], dataclasses.replace(FAST, max_iterations=2))
    path = Path(str(tmp_path)) / "map.npz"
    res.save(path)
    back = type(res).load(path)
    assert np.array_equal(back.W, res.W) and back.W_tgt is not None and np.array_equal(back.W_tgt, res.W_tgt)
    assert np.array_equal(back.dictionary, res.dictionary) and back.criterion == res.criterion
    assert (back.method, back.normalize, back.seed, back.history) == (res.method, res.normalize, res.seed, res.history)
    assert [p.name for p in path.parent.iterdir()] == ["map.npz"]  # no temporary left
    (path.parent / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a saved MapResult") as exc:
        type(res).load(path.parent / "bad.npz")
    _one_line(exc)
