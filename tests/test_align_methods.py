"""Tests of the alignment methods beyond Procrustes: RCSLS (against a dense re-implementation of
fastText's ``alignment/align.py`` maths), VecMap-style mapping, normalisation chains, select_on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.align import align, procrustes, translation_precision
from eval.methods import FitContext, ProcrustesConfig, build_config, fit_mapping
from eval.normalize import normalize_embeddings, parse_normalize
from eval.rcsls import RcslsConfig, rcsls, rcsls_loss_and_grad, spectral_projection
from eval.vecmap import VecmapConfig, vecmap
from eval.vectors import write_vec
from groc_base.errors import ArgumentTypeError, InputError
from polyglot_groc.analysis.alignment import AlignResult
from polyglot_groc.cli import app
from tests.conftest import one_error_line

runner = CliRunner()


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _dense_rcsls(X: np.ndarray, Y: np.ndarray, Zs: np.ndarray, Zt: np.ndarray, R: np.ndarray,
                 k: int) -> tuple[float, np.ndarray]:
    """fastText's rcsls(): two dense (n, m) score matrices and argpartition (the oracle)."""
    def getknn(sc: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
        sidx = np.argpartition(sc, -k, axis=1)[:, -k:]
        ytopk = y[sidx.flatten(), :].reshape(sidx.shape[0], sidx.shape[1], y.shape[1])
        return np.sum(sc[np.arange(sc.shape[0])[:, None], sidx]) / k, ytopk.sum(1).T @ x / k

    Xt = X @ R.T
    f = 2 * np.sum(Xt * Y)
    df = 2 * Y.T @ X
    fk0, dfk0 = getknn(Xt @ Zt.T, X, Zt)
    fk1, dfk1 = getknn((Zs @ R.T @ Y.T).T, Y, Zs)
    return -(f - fk0 - fk1) / X.shape[0], -(df - dfk0 - dfk1.T) / X.shape[0]


@pytest.fixture()
def spaces() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A noisy rotated copy: 600 words, d=16; train pairs 0..299, test pairs 300..399."""
    rng = np.random.default_rng(3)
    tgt = rng.standard_normal((600, 16)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((16, 16)))
    src = (tgt @ q.T + 0.5 * rng.standard_normal((600, 16))).astype(np.float32)
    train = np.stack([np.arange(300), np.arange(300)], axis=1)
    test = np.stack([np.arange(300, 400), np.arange(300, 400)], axis=1)
    return src, tgt, train, test


def test_rcsls_loss_and_gradient_equal_the_dense_reference(spaces: tuple[np.ndarray, ...]) -> None:
    src, tgt, train, _ = spaces
    xs, xt = _unit(src), _unit(tgt)
    X, Y = xs[train[:, 0]], xt[train[:, 1]]
    rng = np.random.default_rng(0)
    R = (procrustes(X, Y) + 0.05 * rng.standard_normal((16, 16))).astype(np.float32)
    # query blocks of 7 rows: the blocked top-k must give the dense objective exactly
    f, g = rcsls_loss_and_grad(X, Y, xs[:500], xt[:450], R, knn=5, batch_size=7)
    f_ref, g_ref = _dense_rcsls(X.astype(np.float64), Y.astype(np.float64), xs[:500].astype(np.float64),
                                xt[:450].astype(np.float64), R.astype(np.float64), 5)
    assert f == pytest.approx(f_ref, rel=1e-5)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-5)


def test_rcsls_words_in_several_pairs_are_searched_once_with_the_same_objective(
        spaces: tuple[np.ndarray, ...]) -> None:
    from eval.rcsls import _loss_and_grad, _TopK

    src, tgt, train, _ = spaces
    xs, xt = _unit(src), _unit(tgt)
    # MUSE dictionaries repeat words: every source word twice, some targets three times
    pairs = np.concatenate([train, np.stack([train[:, 0], (train[:, 1] + 7) % 300], axis=1), train[:40]])
    X, Y = xs[pairs[:, 0]], xt[pairs[:, 1]]
    R = procrustes(X, Y)
    f, g = _loss_and_grad(X, Y, R, _TopK(xt, xt, 5, 64), _TopK(xs, xs, 5, 64), pairs)
    f_ref, g_ref = _dense_rcsls(X.astype(np.float64), Y.astype(np.float64), xs.astype(np.float64),
                                xt.astype(np.float64), R.astype(np.float64), 5)
    assert f == pytest.approx(f_ref, rel=1e-5)
    np.testing.assert_allclose(g, g_ref, rtol=1e-4, atol=1e-5)


def test_rcsls_descends_from_procrustes_and_spectral_clips(spaces: tuple[np.ndarray, ...]) -> None:
    src, tgt, train, test = spaces
    xs, xt = _unit(src), _unit(tgt)
    w0 = procrustes(xs[train[:, 0]], xt[train[:, 1]])
    res = rcsls(src, tgt, train, w0, RcslsConfig(knn=5, n_iter=8, lr=2.0))
    losses = [h["loss"] for h in res.history]
    accepted = [h["loss"] for h in res.history if h["accepted"]]
    assert accepted == sorted(accepted, reverse=True) and min(losses) < losses[0]
    assert not np.allclose(res.W, w0)
    spec = rcsls(src, tgt, train, w0, RcslsConfig(knn=5, n_iter=4, spectral=True))
    assert np.linalg.svd(spec.W, compute_uv=False).max() <= 1.0 + 1e-5
    np.testing.assert_allclose(np.linalg.svd(spectral_projection(2 * w0), compute_uv=False), 1.0, rtol=1e-5)
    # the fitted map translates the held-out words at least as well as its Procrustes start
    p0 = translation_precision(xs @ w0.T, xt, test)["precision_at_1"]
    p1 = translation_precision(xs @ res.W.T, xt, test)["precision_at_1"]
    assert p1 >= p0 - 2.0


def test_rcsls_makes_fasttexts_number_of_updates_and_lands_on_its_map(spaces: tuple[np.ndarray, ...]) -> None:
    """fastText's align.py loop, transcribed: ``for it in range(niter + 1)`` an update each pass; at
    a small step the loss falls every pass, so its final R is ours, after niter + 1 updates."""
    src, tgt, train, _ = spaces
    xs, xt = _unit(src).astype(np.float64), _unit(tgt).astype(np.float64)
    X, Y = xs[train[:, 0]], xt[train[:, 1]]
    R = procrustes(X, Y).astype(np.float64)
    w0 = R.copy()
    niter, lr, fold = 3, 0.05, 0.0
    for it in range(niter + 1):
        f, df = _dense_rcsls(X, Y, xs, xt, R, 5)
        R = R - lr * df  # (no rising step at this lr, so the reference's aliasing undo never runs)
        assert it == 0 or f <= fold
        fold = f
    res = rcsls(src, tgt, train, w0, RcslsConfig(knn=5, n_iter=niter, lr=lr))
    assert len(res.history) == niter + 2 and all(h["accepted"] for h in res.history)  # 4 updates, each scored
    np.testing.assert_allclose(res.W, R, atol=2e-5)


def test_rcsls_config_ranges() -> None:
    for bad in ({"knn": 0}, {"lr": 0.0}, {"n_iter": -1}, {"max_neg": 0}, {"lr": float("nan")}):
        with pytest.raises(InputError):
            RcslsConfig(**bad)  # type: ignore[arg-type]


def test_vecmap_without_whitening_or_reweighting_is_procrustes(spaces: tuple[np.ndarray, ...]) -> None:
    src, tgt, train, _ = spaces
    cfg = VecmapConfig(whiten=False, src_reweight=0.0, tgt_reweight=0.0, src_dewhiten="none", tgt_dewhiten="none")
    res = vecmap(src, tgt, train, cfg)
    w = procrustes(src[train[:, 0]], tgt[train[:, 1]])
    # both spaces rotate; their relative map is the Procrustes rotation
    np.testing.assert_allclose(res.W_src @ res.W_tgt.T, w.T, atol=1e-4)
    np.testing.assert_allclose(res.W_src.T @ res.W_src, np.eye(16), atol=1e-4)


def test_vecmap_full_pipeline_whitens_and_reduces(spaces: tuple[np.ndarray, ...]) -> None:
    src, tgt, train, test = spaces
    res = vecmap(src, tgt, train, VecmapConfig(dim_reduction=10))
    assert res.W_src.shape == (16, 10) and res.W_tgt.shape == (16, 10)
    full = vecmap(src, tgt, train)
    # whitening then the orthogonal map: the whitened training sides' cross-covariance is diagonal
    xw, zw = src[train[:, 0]].astype(np.float64), tgt[train[:, 1]].astype(np.float64)
    cfg = VecmapConfig(src_reweight=0.0, tgt_reweight=0.0, src_dewhiten="none", tgt_dewhiten="none")
    plain = vecmap(src, tgt, train, cfg)
    cross = (xw @ plain.W_src).T @ (zw @ plain.W_tgt)
    np.testing.assert_allclose(cross - np.diag(np.diag(cross)), 0.0, atol=1e-3)
    assert translation_precision(src @ full.W_src, tgt @ full.W_tgt, test)["precision_at_1"] > 50.0
    with pytest.raises(InputError, match="fewer than 16 dimensions"):
        vecmap(src, tgt, train[:10])
    with pytest.raises(InputError, match="dim_reduction=20"):
        vecmap(src, tgt, train, VecmapConfig(dim_reduction=20))
    with pytest.raises(InputError, match="src, tgt or none"):
        VecmapConfig(src_dewhiten="both")  # type: ignore[arg-type]


def test_vecmap_method_is_vecmaps_supervised_recipe_with_its_normalisation(spaces: tuple[np.ndarray, ...]) -> None:
    """VecMap's map_embeddings.py --supervised, transcribed: normalize unit, center, unit; whiten;
    SVD; re-weight S^0.5 both sides; de-whiten src/trg. fit_mapping's default is that recipe."""
    src, tgt, train, _ = spaces

    def unit(m: np.ndarray) -> np.ndarray:
        n = np.sqrt((m**2).sum(axis=1))
        n[n == 0] = 1
        return m / n[:, None]

    x, z = (unit(unit(m.astype(np.float64)) - unit(m.astype(np.float64)).mean(axis=0)) for m in (src, tgt))

    def whitening(m: np.ndarray) -> np.ndarray:
        _, s, vt = np.linalg.svd(m, full_matrices=False)
        return vt.T @ np.diag(1 / s) @ vt

    wx1, wz1 = whitening(x[train[:, 0]]), whitening(z[train[:, 1]])
    xw, zw = x @ wx1, z @ wz1
    wx2, s, wz2_t = np.linalg.svd(xw[train[:, 0]].T @ zw[train[:, 1]])
    wz2 = wz2_t.T
    xw, zw = xw @ wx2 * s**0.5, zw @ wz2 * s**0.5
    xw = xw @ (wx2.T @ np.linalg.inv(wx1) @ wx2)
    zw = zw @ (wz2.T @ np.linalg.inv(wz1) @ wz2)
    res = fit_mapping(src, tgt, train, method="vecmap")
    np.testing.assert_allclose(res.map_source(src), xw, atol=2e-4)
    np.testing.assert_allclose(res.prepare_target(tgt), zw, atol=2e-4)


def test_iterative_normalisation_ends_unit_length_and_centred() -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((400, 8)) * rng.uniform(0.5, 3, (400, 1)) + 2.0).astype(np.float32)
    out = normalize_embeddings(x, "iternorm:20")
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-3)
    np.testing.assert_allclose(out.mean(axis=0), 0.0, atol=1e-3)
    five = normalize_embeddings(x, ["iternorm"])
    manual = x.copy()
    for _ in range(5):
        manual = normalize_embeddings(manual, "renorm,center")
    np.testing.assert_allclose(five, manual, atol=1e-6)
    assert parse_normalize("renorm, center,iternorm:3") == ("renorm", "center", "iternorm:3")
    for bad in ("whiten", "renorm:2", "iternorm:0", "iternorm:x"):
        with pytest.raises(InputError, match="normalisation"):
            parse_normalize(bad)


def test_select_on_eval_and_last(spaces: tuple[np.ndarray, ...]) -> None:
    src, tgt, train, test = spaces
    res = align(src, tgt, train[:40], n_refinement=2, dico_max_rank=300, select_on="eval", select_pairs=test)
    scores = [h["eval_precision_at_1"] for h in res.history]
    assert res.best_iteration == int(np.argmax(scores)) and res.select_on == "eval"
    assert align(src, tgt, train[:40], n_refinement=2, dico_max_rank=300, select_on="last").best_iteration == 2
    with pytest.raises(InputError, match="needs select_pairs"):
        align(src, tgt, train, select_on="eval")
    with pytest.raises(InputError, match="unknown selection"):
        align(src, tgt, train, select_on="test")  # type: ignore[arg-type]


def test_fit_mapping_every_method_and_refusals(spaces: tuple[np.ndarray, ...]) -> None:
    src, tgt, train, test = spaces
    for method, ops in (("procrustes", "iternorm"), ("rcsls", ""), ("vecmap", "renorm,center,renorm")):
        config = RcslsConfig(knn=5, n_iter=2) if method == "rcsls" else None
        res = fit_mapping(src, tgt, train, method=method, normalize=ops, config=config,
                          context=FitContext(criterion=True))
        p = translation_precision(res.map_source(src), res.prepare_target(tgt), test)["precision_at_1"]
        assert p > 50.0 and np.isfinite(res.history[-1]["criterion"]) and res.method == method
        # without criterion=True only procrustes (which selects by it) pays for the criterion
        plain = fit_mapping(src, tgt, train, method=method, normalize=ops, config=config)
        assert ("criterion" in plain.history[-1]) is (method == "procrustes")
    assert fit_mapping(src, tgt, train, method="rcsls", config=RcslsConfig(n_iter=0)).normalize == ("renorm",)
    # each method's reference normalisation by default: VecMap's --supervised normalises unit, center, unit
    assert fit_mapping(src, tgt, train, method="vecmap").normalize == ("renorm", "center", "renorm")
    assert fit_mapping(src, tgt, train, method="vecmap", normalize="none").normalize == ()
    assert fit_mapping(src, tgt, train, method="procrustes", config=ProcrustesConfig(refine=0)).normalize == ()
    with pytest.raises(InputError, match="unknown alignment method 'muse'"):
        fit_mapping(src, tgt, train, method="muse")
    with pytest.raises(InputError, match="refine=3 applies to procrustes only"):  # Python names keywords
        build_config("rcsls", values={"refine": 3})
    with pytest.raises(InputError, match="select_on='eval' chooses"):
        build_config("vecmap", values={"select_on": "eval"})
    with pytest.raises(ArgumentTypeError, match="method='vecmap' takes a VecmapConfig"):
        fit_mapping(src, tgt, train, method="vecmap", config=RcslsConfig())
    with pytest.raises(InputError, match="outside"):
        fit_mapping(src, tgt, train + 1000, method="vecmap")


# --------------------------------------------------------------------------------------------
# through the workflow and the CLI
# --------------------------------------------------------------------------------------------



@pytest.fixture()
def vec_files(tmp_path: Path, spaces: tuple[np.ndarray, ...]) -> Path:
    src, tgt, _, _ = spaces
    write_vec(tmp_path / "s.vec", [f"w{i}" for i in range(600)], src)
    write_vec(tmp_path / "t.vec", [f"x{i}" for i in range(600)], tgt)
    (tmp_path / "train.txt").write_text("".join(f"w{i} x{i}\n" for i in range(300)), encoding="utf-8")
    # 100 scorable test words and 25 whose source word is in no vocabulary
    lines = [f"w{i}\tx{i}\n" for i in range(300, 400)] + [f"unseen{i}\tx{i}\n" for i in range(25)]
    (tmp_path / "test.txt").write_text("".join(lines), encoding="utf-8")
    return tmp_path


def _args(root: Path, *extra: str) -> list[str]:
    return ["align", "--src", str(root / "s.vec"), "--tgt", str(root / "t.vec"), "--train-dict",
            str(root / "train.txt"), "--eval-dict", str(root / "test.txt"), "--out", str(root / "out"), *extra]


@pytest.mark.parametrize("extra", [["--method", "rcsls", "--normalize", "iternorm"], ["--method", "vecmap"],
                                   ["--refine", "1", "--select-on", "eval"]])
def test_align_methods_and_both_protocols_through_the_cli(vec_files: Path, extra: list[str]) -> None:
    res = runner.invoke(app, _args(vec_files, *extra))
    assert res.exit_code == 0, res.output
    out = json.loads((vec_files / "out" / "result.json").read_text())
    proto = out["protocols"]
    assert proto["muse"]["n_queries"] == 100 and proto["fasttext"]["n_queries"] == 125
    assert proto["fasttext"]["coverage"] == pytest.approx(0.8)
    muse_p1 = out["precision"]["csls"]["precision_at_1"]
    assert proto["muse"]["csls"]["precision_at_1"] == muse_p1 > 50.0
    assert proto["fasttext"]["csls"]["precision_at_1"] == pytest.approx(muse_p1 * 0.8)
    assert out["method"] == (extra[1] if extra[0] == "--method" else "procrustes")
    if "eval" in extra:
        assert "tuned on the test pairs" in out["selection"] and "eval_precision_at_1" in out["history"][0]
    assert "fastText protocol: all 125 test source words" in res.stderr


@pytest.mark.parametrize(("extra", "needle"), [
    (["--method", "muse"], "unknown alignment method 'muse'"),
    (["--method", "rcsls", "--refine", "2"], "--refine 2 applies to procrustes only"),
    (["--method", "vecmap", "--select-on", "eval"], "--select-on eval chooses"),
    (["--select-on", "test"], "--select-on test is unknown"),
    (["--spectral"], "--spectral sets up rcsls; it does nothing for procrustes"),
    (["--rcsls-lr", "25"], "--rcsls-lr sets up rcsls"),
    (["--method", "rcsls", "--rcsls-lr", "0"], "--rcsls-lr=0.0 must be a positive number"),
    (["--normalize", "renorm,whiten"], "unknown normalisation 'whiten'"),
    (["--normalize", "iternorm:0"], "round count must be 1..100"),
])
def test_align_new_options_bad_input_exit_2_and_nothing_written(vec_files: Path, extra: list[str],
                                                                 needle: str) -> None:
    res = runner.invoke(app, _args(vec_files, *extra))
    assert needle in one_error_line(res)
    assert not (vec_files / "out").exists()


def test_align_names_its_reference_and_flips_a_dictionary(vec_files: Path) -> None:
    # a dictionary written target-first: as given nothing is found, and the error names the flip
    (vec_files / "rev.txt").write_text("".join(f"x{i} w{i}\n" for i in range(300)), encoding="utf-8")
    (vec_files / "rev-test.txt").write_text("".join(f"x{i} w{i}\n" for i in range(300, 400)), encoding="utf-8")
    args = ["align", "--src", str(vec_files / "s.vec"), "--tgt", str(vec_files / "t.vec"), "--train-dict",
            str(vec_files / "rev.txt"), "--eval-dict", str(vec_files / "rev-test.txt"), "--out", str(vec_files / "o")]
    res = runner.invoke(app, args)
    assert "300 do read the other way round; pass --reverse-dicts" in one_error_line(res)
    res = runner.invoke(app, [*args, "--reverse-dicts", "--method", "vecmap"])
    assert res.exit_code == 0, res.output
    out = json.loads((vec_files / "o" / "result.json").read_text())
    assert out["train_dictionary"]["reversed"] is True and out["eval_dictionary"]["found"] == 100
    assert out["normalize"] == "renorm,center,renorm" and "VecMap" in out["reference"]["recipe"]
    assert any("--keep-case" in d for d in out["reference"]["differences"])
    # fastText's example settings are reachable, and the differences say what was changed
    rc = polyglot_groc_align(vec_files, method="rcsls", rcsls_lr=25.0, rcsls_n_iter=1)
    assert rc.reference is not None and "rcsls lr 25.0 (fastText's default: 1.0)" in rc.reference["differences"]
    assert rc.history[0]["rcsls_steps"] == 3  # 2 updates (niter 1), the last one scored too


def polyglot_groc_align(root: Path, **kwargs: object) -> AlignResult:
    import polyglot_groc as pg

    return pg.align(src=root / "s.vec", tgt=root / "t.vec", train_dict=root / "train.txt", **kwargs)  # type: ignore[arg-type]


def test_align_takes_each_method_config_whole(vec_files: Path) -> None:
    """A method's knobs pass as its config, VecMap's included (unreachable before); the shorthands set fields."""
    import polyglot_groc as pg

    plain = polyglot_groc_align(vec_files, method="vecmap")
    cfg = VecmapConfig(src_reweight=0.0, tgt_reweight=1.0)
    tuned = polyglot_groc_align(vec_files, method="vecmap", method_config=cfg)
    assert tuned.reference is not None and "vecmap src_reweight 0.0 (VecMap's --supervised: 0.5)" in \
        tuned.reference["differences"]
    assert not np.allclose(plain.W, tuned.W)  # the config reached the fit
    by_config = polyglot_groc_align(vec_files, method_config=ProcrustesConfig(refine=0))
    by_keyword = polyglot_groc_align(vec_files, refine=0)
    np.testing.assert_array_equal(by_config.W, by_keyword.W)
    assert by_config.reference == by_keyword.reference and by_config.best_iteration == 0
    both = polyglot_groc_align(vec_files, method="rcsls", method_config=RcslsConfig(n_iter=1), rcsls_lr=25.0)
    assert both.history[0]["rcsls_steps"] == 3 and "rcsls lr 25.0 (fastText's default: 1.0)" in \
        both.reference["differences"]  # type: ignore[index]
    with pytest.raises(ArgumentTypeError, match="method='rcsls' takes a RcslsConfig"):
        polyglot_groc_align(vec_files, method="rcsls", method_config=VecmapConfig())
    with pytest.raises(ArgumentTypeError, match="method_config must be"):
        pg.align(src=vec_files / "s.vec", tgt=vec_files / "t.vec", train_dict=vec_files / "train.txt",
                 method_config={"refine": 0})  # type: ignore[arg-type]


@pytest.mark.parametrize(("extra", "needle"), [
    (["--vecmap-src-reweight", "2"], "--vecmap-src-reweight=2.0 must be a number in [0, 1]"),
    (["--method", "procrustes", "--no-vecmap-whiten"],
     "--vecmap-whiten sets up vecmap; it does nothing for procrustes"),
    (["--vecmap-src-dewhiten", "both"], "--vecmap-src-dewhiten both is unknown; use src (default), tgt or none"),
    (["--method", "procrustes", "--dico-max-rank", "0"], "--dico-max-rank=0 must be a positive integer"),
])
def test_every_knob_is_a_flag_derived_from_its_config(vec_files: Path, extra: list[str], needle: str) -> None:
    args = _args(vec_files, *(["--method", "vecmap"] if "--method" not in extra else []), *extra)
    assert needle in one_error_line(runner.invoke(app, args))
    assert not (vec_files / "out").exists()


def test_vecmaps_knobs_through_the_cli(vec_files: Path) -> None:
    res = runner.invoke(app, _args(vec_files, "--method", "vecmap", "--no-vecmap-whiten", "--vecmap-src-dewhiten",
                                   "none", "--vecmap-tgt-dewhiten", "none", "--vecmap-src-reweight", "0"))
    assert res.exit_code == 0, res.output
    out = json.loads((vec_files / "out" / "result.json").read_text())
    assert "vecmap whiten False (VecMap's --supervised: True)" in out["reference"]["differences"]
    assert out["protocols"]["muse"]["csls"]["precision_at_1"] > 50.0


def test_a_method_is_its_module_and_one_registration(monkeypatch: pytest.MonkeyPatch,
                                                     spaces: tuple[np.ndarray, ...]) -> None:
    """What a new method module declares is all the faces need: its name, knobs, flags, checks and recipe."""
    from dataclasses import dataclass

    import typer

    from eval.align import AlignmentResult
    from eval.methods import registry
    from eval.methods.registry import MethodConfig, knob, knobs, method_names, recipe, register_method
    from polyglot_groc.commands._align_options import method_options

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))  # the registration ends with the test

    @dataclass(frozen=True)
    class ScaledConfig(MethodConfig):
        scale: float = knob(2.0, check="positive", help="how much the identity stretches")

    @register_method("scaled", config=ScaledConfig, recipe="a scaled identity (no reference)")
    def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: ScaledConfig,
            context: object) -> AlignmentResult:
        w = config.scale * np.eye(src.shape[1], dtype=np.float32)
        return AlignmentResult(W=w, best_iteration=0, history=[{"iteration": 0}])

    try:
        assert "scaled" in method_names() and knobs("scaled")["scaled_scale"][0].default == 2.0

        given: dict[str, object] = {}

        def command(method: str = "procrustes", **values: object) -> None:
            given.update(build_config(method, None, values).__dict__)

        probe = typer.Typer()
        probe.command()(method_options(command))  # the flags a command taking every method's knobs gets
        assert "--scaled-scale" in runner.invoke(probe, ["--help"]).stdout
        assert runner.invoke(probe, ["--method", "scaled", "--scaled-scale", "3"]).exit_code == 0
        assert given == {"scale": 3.0}
        src, tgt, train, _ = spaces
        res = fit_mapping(src, tgt, train, method="scaled", config=build_config("scaled", None, {"scaled_scale": 3.0}))
        np.testing.assert_allclose(res.W, 3.0 * np.eye(16))
        with pytest.raises(InputError, match="scaled_scale=-1.0 must be a positive number"):
            build_config("scaled", None, {"scaled_scale": -1.0})
        with pytest.raises(InputError, match="scaled_scale sets up scaled; it does nothing for rcsls"):
            build_config("rcsls", None, {"scaled_scale": 3.0})
        said = recipe("scaled", ScaledConfig(), (), registry.FitContext())
        assert said == {"recipe": "a scaled identity (no reference)", "differences": []}
    finally:
        registry._knobs_of.cache_clear()


def test_a_start_without_a_dictionary_runs_its_method_and_keeps_its_verdict(monkeypatch: pytest.MonkeyPatch,
                                                                          vec_files: Path) -> None:
    """The slot of issue 47: ``--dictionary-mode <start>`` with no dictionary runs the start's own method, whose
    verdict and criterion the result keeps and the summary says first; a dictionary with it is refused."""
    from dataclasses import dataclass

    from eval.align import AlignmentResult
    from eval.methods import registry
    from eval.methods.registry import MethodConfig, register_method
    from polyglot_groc.analysis import alignment_starts
    from polyglot_groc.analysis.alignment_starts import Start, register_start

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(alignment_starts, "_STARTS", dict(alignment_starts._STARTS))
    seen: list[object] = []

    @dataclass(frozen=True)
    class GuessConfig(MethodConfig):
        pass

    @register_method("guess", config=GuessConfig, recipe="the identity, judged", needs_dictionary=False)
    def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: GuessConfig,
            context: object) -> AlignmentResult:
        seen.append(pairs)
        verdict = {"status": "failed", "reason": "restarts disagree", "criterion": {"name": "mean CSLS", "value": 0.1},
                   "evidence": {"restart_agreement": [0.01]}}
        return AlignmentResult(W=np.eye(src.shape[1], dtype=np.float32), best_iteration=0,
                               history=[{"iteration": 0}], verdict=verdict)

    register_start(Start("unsupervised-toy", "no dictionary at all", pairs=None, default_method="guess"))
    try:
        args = ["align", "--src", str(vec_files / "s.vec"), "--tgt", str(vec_files / "t.vec"), "--eval-dict",
                str(vec_files / "test.txt"), "--dictionary-mode", "unsupervised-toy", "--out", str(vec_files / "u")]
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output  # a failed alignment is a result, said out loud, not an error
        assert seen == [None] and "verdict: failed (restarts disagree; mean CSLS 0.1000)" in res.stderr
        out = json.loads((vec_files / "u" / "result.json").read_text())
        assert out["method"] == "guess" and out["verdict"]["status"] == "failed"
        assert out["train_dictionary"] == {"seed": "unsupervised-toy", "found": 0} and out["dico_max_rank"] == 15000
        with_dict = one_error_line(runner.invoke(app, [*args, "--train-dict", str(vec_files / "train.txt")]))
        assert "--dictionary-mode unsupervised-toy starts without a dictionary; drop --train-dict" in with_dict
        needs = one_error_line(runner.invoke(app, [*args, "--method", "procrustes", "--overwrite"]))
        assert "--dictionary-mode unsupervised-toy gives no dictionary, and procrustes fits one" in needs
    finally:
        registry._knobs_of.cache_clear()
    assert "verdict" not in json.loads(runner.invoke(app, _args(vec_files, "--refine", "0")).stdout)


def test_test_pairs_that_are_training_pairs_are_counted_and_refused_above_five_percent(vec_files: Path) -> None:
    import polyglot_groc as pg

    # 100 test pairs: 10 are training pairs (5 as written, 5 reversed: an en-X file against X-en)
    lines = ([f"w{i} x{i}\n" for i in range(290, 295)] + [f"x{i} w{i}\n" for i in range(295, 300)]
             + [f"w{i} x{i}\n" for i in range(300, 390)])
    (vec_files / "overlap.txt").write_text("".join(lines), encoding="utf-8")
    args = ["align", "--src", str(vec_files / "s.vec"), "--tgt", str(vec_files / "t.vec"), "--train-dict",
            str(vec_files / "train.txt"), "--eval-dict", str(vec_files / "overlap.txt"), "--refine", "0",
            "--out", str(vec_files / "o")]
    line = one_error_line(runner.invoke(app, args))
    assert "10 of the 100 test pairs (10.0%) are training pairs (5 as written, 5 reversed)" in line
    assert "--allow-dictionary-overlap" in line and not (vec_files / "o").exists()
    res = runner.invoke(app, [*args, "--allow-dictionary-overlap"])
    assert res.exit_code == 0, res.output
    assert "test pairs that are training pairs (either direction): 10 of 100 (10.0%)" in res.stderr
    overlap = json.loads((vec_files / "o" / "result.json").read_text())["eval_dictionary"]["train_overlap"]
    assert (overlap["pairs"], overlap["reversed"], overlap["allowed"]) == (10, 5, True)
    with pytest.raises(InputError, match="pass allow_overlap=True"):
        pg.align(src=vec_files / "s.vec", tgt=vec_files / "t.vec", train_dict=vec_files / "train.txt",
                 eval_dict=vec_files / "overlap.txt")
    clean = polyglot_groc_align(vec_files, eval_dict=vec_files / "test.txt", refine=0)
    assert clean.eval_dictionary is not None and clean.eval_dictionary["train_overlap"]["pairs"] == 0


def test_align_without_out_never_reuses_a_folder(vec_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(vec_files)
    args = ["align", "--src", "s.vec", "--tgt", "t.vec", "--train-dict", "train.txt", "--refine", "0"]
    first, second = runner.invoke(app, args), runner.invoke(app, args)
    assert first.exit_code == second.exit_code == 0, second.output
    assert "wrote alignment-s-t (no --out given)" in first.stderr
    assert "wrote alignment-s-t-2 (no --out given)" in second.stderr
    assert (vec_files / "alignment-s-t" / "W.npy").is_file() and (vec_files / "alignment-s-t-2" / "W.npy").is_file()


def test_select_on_eval_needs_an_eval_dictionary(vec_files: Path) -> None:
    res = runner.invoke(app, ["align", "--src", str(vec_files / "s.vec"), "--tgt", str(vec_files / "t.vec"),
                              "--train-dict", str(vec_files / "train.txt"), "--select-on", "eval",
                              "--out", str(vec_files / "o")])
    assert "pass --eval-dict" in one_error_line(res)
    assert not (vec_files / "o").exists()


def test_certified_topk_reuse_equals_fresh_search() -> None:
    """Moving queries: the reused candidates give exactly the fresh search's sums and means, and
    small moves skip most full searches."""
    from eval.rcsls import _TopK

    rng = np.random.default_rng(5)
    keys = _unit(rng.standard_normal((3000, 12))).astype(np.float32)
    queries = _unit(rng.standard_normal((200, 12))).astype(np.float32)
    reused = _TopK(keys, keys, 10, 64, keep=64)
    ones = np.ones(200)
    for step in range(6):
        f, means = reused.search(queries, ones)
        f_ref, means_ref = _TopK(keys, keys, 10, 64).search(queries, ones)
        assert f == pytest.approx(f_ref, rel=1e-5)
        np.testing.assert_allclose(means, means_ref, atol=1e-5)
        queries = queries + (0.002 if step < 4 else 0.5) * rng.standard_normal(queries.shape).astype(np.float32)
    assert 200 < reused.full_rows < 6 * 200  # the small moves reused, the large ones searched again


# --------------------------------------------------------------------------------------------
# align-many
# --------------------------------------------------------------------------------------------


@pytest.fixture()
def three_languages(tmp_path: Path) -> Path:
    """en (pivot), fr and es: rotated noisy copies of one space; fr-en and en-es training dictionaries."""
    rng = np.random.default_rng(11)
    base = rng.standard_normal((400, 12)).astype(np.float32)
    for lang in ("en", "fr", "es"):
        q, _ = np.linalg.qr(rng.standard_normal((12, 12)))
        vecs = base @ q.T + 0.2 * rng.standard_normal(base.shape)
        write_vec(tmp_path / f"{lang}.vec", [f"{lang}{i}" for i in range(400)], vecs.astype(np.float32))
    (tmp_path / "fr-en.txt").write_text("".join(f"fr{i} en{i}\n" for i in range(200)), encoding="utf-8")
    (tmp_path / "en-es.txt").write_text("".join(f"en{i} es{i}\n" for i in range(200)), encoding="utf-8")
    (tmp_path / "fr-es.test.txt").write_text("".join(f"fr{i} es{i}\n" for i in range(300, 350)), encoding="utf-8")
    return tmp_path


def _many(root: Path, *extra: str) -> list[str]:
    return ["align-many", "--vectors", f"en={root / 'en.vec'}", "--vectors", f"fr={root / 'fr.vec'}",
            "--vectors", f"es={root / 'es.vec'}", "--pivot", "en", "--train-dict", f"fr-en={root / 'fr-en.txt'}",
            "--train-dict", f"en-es={root / 'en-es.txt'}", "--eval-dict", f"fr-es={root / 'fr-es.test.txt'}",
            "--out", str(root / "many"), *extra]


def test_align_many_puts_every_language_in_one_space(three_languages: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from eval.vectors import read_vec

    res = runner.invoke(app, _many(three_languages, "--refine", "1"))
    assert res.exit_code == 0, res.output
    out = json.loads((three_languages / "many" / "result.json").read_text())
    # every protocol beside its own baselines, and the table says so
    assert out["pairs"]["fr-es"]["protocols"]["fasttext"]["baselines"]["identical_string"]["precision_at_1"] == 0.0
    assert "identical string" in res.stderr and "char 3-grams" in res.stderr
    assert out["languages"]["es"]["train_dictionary"]["reversed"] is True
    # fr and es never met in training: through the pivot they translate each other
    assert out["pairs"]["fr-es"]["protocols"]["muse"]["csls"]["precision_at_1"] > 80.0
    assert "fr-es" in res.stderr
    # align's report for every pair: coverage as scored of asked, nn and csls, every baseline, explained columns
    assert "50 of 50 test source words scored: coverage 100.0%" in res.stderr
    assert all(row in res.stderr for row in ("model csls", "model nn", "no mapping, nn", "other gold = the rest"))
    no_map = out["pairs"]["fr-es"]["protocols"]["muse"]["baselines"]["no_mapping"]["nn"]["precision_at_1"]
    assert no_map < 20.0  # fr and es are independent rotations: unmapped, they do not translate
    # the maps, not the vocabularies: <lang>.vec only when asked
    assert (three_languages / "many" / "W-es.npy").exists() and not (three_languages / "many" / "fr.vec").exists()
    assert not (three_languages / "many" / "W-en.npy").exists()  # the pivot does not move
    res = runner.invoke(app, _many(three_languages, "--refine", "0", "--export-mapped", "--overwrite"))
    assert res.exit_code == 0, res.output
    words, vecs = read_vec(three_languages / "many" / "fr.vec")
    assert len(words) == 400
    # without --out: a fresh alignment-many-<pivot>, named on stderr
    monkeypatch.chdir(three_languages)
    args = _many(three_languages, "--refine", "0")
    again = runner.invoke(app, args[: args.index("--out")] + args[args.index("--out") + 2 :])
    assert again.exit_code == 0 and "wrote alignment-many-en (no --out given)" in again.stderr
    assert (three_languages / "alignment-many-en" / "result.json").is_file()


@pytest.mark.parametrize(("extra", "needle"), [
    (["--pivot", "de"], "--pivot de has no vectors; add --vectors de=FILE"),
    (["--method", "vecmap"], "vecmap moves the target space too"),
    (["--method", "rcsls", "--refine", "1"], "--refine 1 applies to procrustes only"),
    (["--eval-dict", "fr-de=x.txt"], "no vectors for 'de'"),
    (["--eval-dict", "fres"], "write KEY=FILE"),
    (["--normalize", "whiten"], "unknown normalisation"),
])
def test_align_many_bad_input_exit_2_and_nothing_written(three_languages: Path, extra: list[str],
                                                         needle: str) -> None:
    args = _many(three_languages)
    if extra[0] == "--pivot":
        args[args.index("--pivot") + 1] = extra[1]
        extra = []
    res = runner.invoke(app, [*args, *extra])
    assert needle in one_error_line(res)
    assert not (three_languages / "many").exists()


def test_align_many_needs_a_training_dictionary_per_language(three_languages: Path) -> None:
    args = _many(three_languages)
    i = args.index(f"en-es={three_languages / 'en-es.txt'}")
    del args[i - 1 : i + 1]
    assert "no training dictionary for 'es'" in one_error_line(runner.invoke(app, args))


def test_align_methods_benchmark_refuses_an_unknown_pair() -> None:
    from benchmarks.align_methods import main
    from benchmarks.common import BadInput

    with pytest.raises(BadInput, match="en-de"):
        main(["--pairs", "en-de", "--no-save"])
    with pytest.raises(BadInput, match="--refine-rounds"):
        main(["--refine-rounds", "-1", "--no-save"])
