"""Wasserstein-Procrustes (eval.unsup.wasserstein, fastText's ``alignment/unsup_align.py``): the convex
start and a stochastic epoch against dense transcriptions of the reference's functions; recovery of a
rotated, permuted, noised copy and the verdict on unrelated spaces; seeds; the faces (``align
--dictionary-mode wasserstein``, ``pg.align``); bad input. Short schedules keep each test at seconds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import polyglot_groc as pg
from eval.align import translation_precision
from eval.unsup import MapResult, WassersteinConfig, convex_init, fit_unsupervised, recipe, wasserstein_procrustes
from eval.unsup.wasserstein import _stochastic
from eval.vectors import write_vec
from groc_base.errors import ConfigError, InputError
from polyglot_groc.cli import app
from tests.conftest import one_error_line
from tests.test_unsupervised_align import _clustered, _copy

ot = pytest.importorskip("ot")
runner = CliRunner()
N, D = 1000, 32
#: A short schedule: a 300-word start of 30 steps, two epochs of 30 then 7 batches of 200 and 400 words.
FAST = WassersteinConfig(init_words=300, init_iterations=30, n_epochs=2, n_iterations=30, batch_size=200)


@pytest.fixture(scope="module")
def related() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = _clustered(0, N, D)
    z, gold = _copy(x, noise=0.1)
    return x, z, gold


# --------------------------------------------------------------------------------------------
# against transcriptions of the reference
# --------------------------------------------------------------------------------------------


def _reference_convex_init(x: np.ndarray, y: np.ndarray, niter: int, reg: float) -> tuple[np.ndarray, np.ndarray]:
    """unsup_align.py's convex_init (apply_sqrt=True), dense Gram matrices, transcribed; returns R and P."""
    def sqrt_eig(m: np.ndarray) -> np.ndarray:
        u, s, vt = np.linalg.svd(m, full_matrices=False)
        return np.dot(u, np.dot(np.diag(np.sqrt(s)), vt))

    n = x.shape[0]
    x, y = sqrt_eig(x), sqrt_eig(y)
    k_x, k_y = np.dot(x, x.T), np.dot(y, y.T)
    k_y *= np.linalg.norm(k_x) / np.linalg.norm(k_y)
    k2_x, k2_y = np.dot(k_x, k_x), np.dot(k_y, k_y)
    p = np.ones([n, n]) / float(n)
    for it in range(1, niter + 1):
        g = np.dot(p, k2_x) + np.dot(k2_y, p) - 2 * np.dot(k_y, np.dot(p, k_x))
        q = ot.sinkhorn(np.ones(n), np.ones(n), g, reg, stopThr=1e-3)
        alpha = 2.0 / float(2.0 + it)
        p = alpha * q + (1.0 - alpha) * p
    u, _, vt = np.linalg.svd(np.dot(y.T, np.dot(p, x)))  # utils.procrustes(P X, Y) = U V^T; the start is its .T
    return np.dot(u, vt).T, p


def _unit_centered(m: np.ndarray) -> np.ndarray:
    m = m / np.linalg.norm(m, axis=1, keepdims=True)
    m = m - m.mean(axis=0)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_the_convex_start_equals_a_dense_transcription_of_fasttexts(related: tuple[np.ndarray, ...]) -> None:
    x, z, _ = related
    a, b = _unit_centered(x[:120].astype(np.float64)), _unit_centered(z[:120].astype(np.float64))
    want_r, want_p = _reference_convex_init(a, b, niter=8, reg=0.05)
    got_r, got_p, objective = convex_init(a, b, iterations=8, reg=0.05)
    assert np.allclose(got_p, want_p, atol=1e-8) and np.allclose(got_r, want_r, atol=1e-6)
    assert np.allclose(got_r @ got_r.T, np.eye(D), atol=1e-8) and objective > 0


def test_a_stochastic_epoch_equals_a_transcription_of_fasttexts_align(related: tuple[np.ndarray, ...]) -> None:
    x, z, _ = related
    a, b = _unit_centered(x).astype(np.float32), _unit_centered(z).astype(np.float32)
    r0 = np.linalg.qr(np.random.default_rng(2).standard_normal((D, D)))[0]
    cfg = WassersteinConfig(n_epochs=1, n_iterations=4, batch_size=50, lr=500.0)
    got = _stochastic(a, b, r0, cfg, 400, np.random.default_rng(7), [])
    rng, r = np.random.default_rng(7), r0.copy()  # the reference's loop, float64, the same draws
    for _ in range(4):
        xt = a[:400][rng.permutation(400)[:50]].astype(np.float64)
        yt = b[:400][rng.permutation(400)[:50]].astype(np.float64)
        p = ot.sinkhorn(np.ones(50), np.ones(50), -np.dot(np.dot(xt, r), yt.T), 0.05, stopThr=1e-3)
        r -= 500.0 / 50 * -np.dot(xt.T, np.dot(p, yt))
        u, _, vt = np.linalg.svd(r)
        r = np.dot(u, vt)
    assert np.abs(got - r).max() < 1e-3  # float32 transports against the reference's float64


# --------------------------------------------------------------------------------------------
# what it finds, and the verdict
# --------------------------------------------------------------------------------------------


def _p_at_1(res: MapResult, x: np.ndarray, z: np.ndarray, gold: np.ndarray) -> float:
    out = translation_precision(res.map_source(x), res.prepare_target(z), gold, ks=(1,))
    return float(out["precision_at_1"])  # type: ignore[arg-type]


def test_it_recovers_a_rotated_permuted_noised_copy_and_says_aligned(related: tuple[np.ndarray, ...]) -> None:
    x, z, gold = related
    fit = fit_unsupervised(x, z, method="wasserstein-procrustes", config=FAST, seed=0)
    assert _p_at_1(fit.result, x, z, gold) >= 95.0
    assert fit.verdict.status == "aligned"
    assert [h["phase"] for h in fit.result.history] == ["init", "stochastic", "stochastic"]
    assert fit.result.criterion == fit.result.history[-1]["criterion"]  # the last map, fastText's rule
    assert [r.config["init_words"] for r in fit.restarts] == [225, 150]  # the convex start over fewer words
    assert np.allclose(fit.result.W @ fit.result.W.T, np.eye(D), atol=1e-4)
    assert fit.result.normalize == ("renorm", "center", "renorm")


@pytest.mark.parametrize("kind", ["gaussian", "clustered"])
def test_unrelated_spaces_are_said_to_fail(related: tuple[np.ndarray, ...], kind: str) -> None:
    rng = np.random.default_rng(9)
    a, b = ((rng.standard_normal((N, D)).astype(np.float32), rng.standard_normal((N, D)).astype(np.float32))
            if kind == "gaussian" else (related[0], _clustered(5, N, D)))
    assert fit_unsupervised(a, b, method="wasserstein-procrustes", config=FAST, seed=0).verdict.status == "failed"


def test_a_seed_repeats_a_run_and_another_seed_changes_it(related: tuple[np.ndarray, ...], tmp_path: Path) -> None:
    x, z, _ = related
    one, two, other = (wasserstein_procrustes(x, z, FAST, seed=s) for s in (4, 4, 5))
    assert np.array_equal(one.W, two.W) and not np.array_equal(one.W, other.W)
    one.save(tmp_path / "wp.npz")
    back = MapResult.load(tmp_path / "wp.npz")
    assert np.array_equal(back.W, one.W) and back.config == one.config and back.history == one.history
    diffs = recipe("wasserstein-procrustes", FAST)["differences"]
    assert "n_iterations 30 (fastText: 5000)" in diffs and any("POT's Sinkhorn" in d for d in diffs)


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


def test_sizes_above_the_vocabulary_and_bad_spaces_are_one_line_errors(related: tuple[np.ndarray, ...]) -> None:
    x, z, _ = related
    cases = [(lambda: wasserstein_procrustes(x, z, WassersteinConfig(init_words=N + 1)), "init_words=1001 is larger"),
             (lambda: wasserstein_procrustes(x, z, WassersteinConfig(nmax=N + 1)), "nmax=1001 is larger"),
             (lambda: wasserstein_procrustes(x, z[:, :8], FAST), "dimension"),
             (lambda: wasserstein_procrustes(np.zeros_like(x), z, FAST), "every source vector is zero"),
             (lambda: wasserstein_procrustes(x[:20], z, FAST), "needs at least 33")]
    for run, match in cases:
        with pytest.raises(InputError, match=match) as exc:
            run()
        assert "\n" not in str(exc.value)


@pytest.mark.parametrize("kwargs, match", [
    ({"n_iterations": 0}, "n_iterations"), ({"reg": 0.0}, "reg"), ({"init_words": 1}, "init_words"),
    ({"normalize": ("whiten",)}, "normalisation"), ({"init_sqrt": 1}, "init_sqrt"), ({"lr": float("nan")}, "lr"),
    ({"criterion_words": 2.5}, "criterion_words"), ({"stop_threshold": 0.0}, "stop_threshold"),
])
def test_bad_settings_are_config_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as exc:
        WassersteinConfig(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value)


# --------------------------------------------------------------------------------------------
# the faces
# --------------------------------------------------------------------------------------------


CLI_FAST = ["--wp-init-words", "300", "--wp-init-iterations", "30", "--wp-n-epochs", "2", "--wp-n-iterations", "30",
            "--wp-batch-size", "200", "--verdict-restarts", "1", "--verdict-check-words", "300"]


@pytest.fixture(scope="module")
def files(related: tuple[np.ndarray, ...], tmp_path_factory: pytest.TempPathFactory) -> Path:
    x, z, gold = related
    root = tmp_path_factory.mktemp("wp")
    write_vec(root / "s.vec", [f"w{i}" for i in range(N)], x)
    write_vec(root / "t.vec", [f"x{i}" for i in range(N)], z)
    (root / "test.txt").write_text("".join(f"w{s} x{t}\n" for s, t in gold[:300]), encoding="utf-8")
    return root


def test_align_runs_it_from_the_command_line_and_python(files: Path) -> None:
    args = ["align", "--src", str(files / "s.vec"), "--tgt", str(files / "t.vec"), "--dictionary-mode", "wasserstein",
            *CLI_FAST, "--eval-dict", str(files / "test.txt"), "--out", str(files / "o")]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "verdict: aligned" in res.stderr
    got = json.loads((files / "o" / "result.json").read_text())
    assert got["method"] == "wasserstein-procrustes" and got["verdict"]["status"] == "aligned"
    reference = got["reference"]
    assert "unsup_align.py" in reference["recipe"] and "n_epochs 2 (fastText: 5)" in reference["differences"]
    assert got["precision"]["csls"]["precision_at_1"] >= 95.0 and got["precision"]["csls"]["n_queries"] == 300
    py = pg.align(src=files / "s.vec", tgt=files / "t.vec", dictionary_mode="wasserstein", method_config=FAST,
                  eval_dict=files / "test.txt")
    assert py.method == "wasserstein-procrustes" and py.verdict is not None and py.verdict["status"] == "aligned"
    assert py.precision is not None and py.precision["csls"]["precision_at_1"] >= 95.0


@pytest.mark.parametrize("extra, needle", [
    (["--wp-init-words", "5000"], "--wp-init-words 5000 is larger than the vocabularies (1000 source, 1000 target"),
    (["--wp-nmax", "5000"], "--wp-nmax 5000 is larger"),
    (["--train-dict", "TEST"], "--dictionary-mode wasserstein starts without a dictionary; drop --train-dict"),
    (["--muse-n-epochs", "1"], "--muse-n-epochs sets up"),
    (["--wp-reg", "0"], "--wp-reg"),
])
def test_bad_input_is_one_line_and_writes_nothing(files: Path, extra: list[str], needle: str) -> None:
    extra = [str(files / "test.txt") if e == "TEST" else e for e in extra]
    out = files / "bad"
    line = one_error_line(runner.invoke(app, ["align", "--src", str(files / "s.vec"), "--tgt", str(files / "t.vec"),
                                              "--dictionary-mode", "wasserstein", *extra, "--out", str(out)]))
    assert needle in line and not out.exists()


def test_align_many_maps_onto_a_pivot_with_it(files: Path) -> None:
    out = files / "many"
    res = runner.invoke(app, ["align-many", "--vectors", f"en={files / 't.vec'}", "--vectors", f"fr={files / 's.vec'}",
                              "--pivot", "en", "--dictionary-mode", "wasserstein", *CLI_FAST, "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "fr: mapped onto en (wasserstein-procrustes) from --dictionary-mode wasserstein" in res.stderr
    got = json.loads((out / "result.json").read_text())
    assert got["languages"]["fr"]["verdict"]["status"] == "aligned" and (out / "W-fr.npy").is_file()
