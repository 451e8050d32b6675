"""export / align / similarity through the CLI, on tiny runs and hand-made vectors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import read_vec, write_vec
from polyglot_groc.cli import app
from tests.conftest import CLOSED_TRAIN, SMALL, TEST_ONLY, TINY

runner = CliRunner()


def _json(text: str) -> dict:
    return json.loads(text[text.index("{"):])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    out = {}
    for kind in ("groc", "lookup"):
        sets = [x for s in SMALL for x in ("--set", s)]
        res = runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(root / kind),
                                  "--max-steps", "2", "--model", kind, *sets])
        assert res.exit_code == 0, res.output
        out[kind] = root / kind
    return out


def test_export_vocab_and_unseen_words(runs: dict[str, Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["export", str(runs["groc"]), "--lang", "fr", "--vocab",
                              "--out", str(tmp_path / "fr.vec")])
    assert res.exit_code == 0, res.output
    words, vecs = read_vec(tmp_path / "fr.vec")
    assert "<eos>" not in words and vecs.shape == (len(words), 16) and "le" in words
    (tmp_path / "w.txt").write_text("chien\nmaisonnette\nchien\n", encoding="utf-8")
    res = runner.invoke(app, ["export", str(runs["groc"]), "--lang", "fr", "--words", str(tmp_path / "w.txt"),
                              "--out", str(tmp_path / "w.vec"), "--side", "output"])
    assert res.exit_code == 0, res.output
    info = _json(res.stdout)
    assert info["exported"] == 2 and info["composed_unseen"] == 1 and info["missing"] == 0  # maisonnette
    # The same word gets the same vector whether exported with the vocabulary or on its own.
    res = runner.invoke(app, ["export", str(runs["groc"]), "--lang", "fr", "--words", str(tmp_path / "w.txt"),
                              "--out", str(tmp_path / "w_in.vec")])
    w_in, v_in = read_vec(tmp_path / "w_in.vec")
    w_all, v_all = read_vec(tmp_path / "fr.vec")
    if "chien" in w_all:
        assert np.allclose(v_in[w_in.index("chien")], v_all[w_all.index("chien")], atol=1e-6)


def test_lookup_reports_words_it_cannot_embed(runs: dict[str, Path], tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_text("le\nmaisonnette\n", encoding="utf-8")
    res = runner.invoke(app, ["export", str(runs["lookup"]), "--lang", "fr", "--words", str(tmp_path / "w.txt"),
                              "--out", str(tmp_path / "w.vec")])
    assert res.exit_code == 0, res.output
    info = _json(res.stdout)
    assert info["exported"] == 1 and info["missing"] == 1 and info["missing_examples"] == ["maisonnette"]


def test_export_leaves_out_a_lookup_run_s_untrained_rows_unless_allowed(closed_runs: dict[str, Path],
                                                                        tmp_path: Path) -> None:
    """A closed vocabulary's test words have untrained rows in a tied run: --vocab leaves them out, a listed
    one is counted as untrained; --allow-untrained writes them. A one-language run needs no --lang."""
    tied = str(closed_runs["tied"])
    res = runner.invoke(app, ["export", tied, "--vocab", "--out", str(tmp_path / "v.vec")])
    assert res.exit_code == 0, res.output
    assert _json(res.stdout)["lang"] == "en" and set(read_vec(tmp_path / "v.vec")[0]) == set(CLOSED_TRAIN.split())
    (tmp_path / "w.txt").write_text("cat\nHome-Scale\n", encoding="utf-8")
    res = runner.invoke(app, ["export", tied, "--words", str(tmp_path / "w.txt"), "--out", str(tmp_path / "w.vec")])
    info = _json(res.stdout)
    assert res.exit_code == 0 and info["exported"] == 1 and info["missing"] == 0
    assert info["untrained"] == 1 and info["untrained_examples"] == ["Home-Scale"]
    assert res.stderr.strip() == ("warning: left out 1 of the words asked (e.g. Home-Scale): in the tied model's "
                                  "vocabulary but never seen in training, so their input rows are untrained; "
                                  "--allow-untrained keeps them")
    res = runner.invoke(app, ["export", tied, "--vocab", "--allow-untrained", "--out", str(tmp_path / "all.vec")])
    assert res.exit_code == 0 and TEST_ONLY <= set(read_vec(tmp_path / "all.vec")[0])
    # GroC composes them: nothing is untrained, the closed vocabulary is written whole.
    res = runner.invoke(app, ["export", str(closed_runs["groc"]), "--vocab", "--out", str(tmp_path / "g.vec")])
    assert res.exit_code == 0 and TEST_ONLY <= set(read_vec(tmp_path / "g.vec")[0])


def test_similarity_of_a_lookup_run_counts_only_trained_rows_in_vocabulary(closed_runs: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    ds = tmp_path / "sim.txt"
    ds.write_text("cat dog 8.0\ncat river 2.0\nold dog 5.5\ncat zebra 1.0\n", encoding="utf-8")
    args = ["similarity", "--run", str(closed_runs["tied"]), "--dataset", str(ds)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert _json(res.stdout)["datasets"]["sim.txt"]["in_vocabulary"]["not_found"] == 1  # zebra: an untrained row
    res = runner.invoke(app, [*args, "--allow-untrained"])
    assert res.exit_code == 0 and _json(res.stdout)["datasets"]["sim.txt"]["in_vocabulary"]["not_found"] == 0


def test_a_polyglot_run_needs_lang(runs: dict[str, Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["export", str(runs["groc"]), "--vocab", "--out", str(tmp_path / "v.vec")])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: this run has 2 languages (en, fr); say which with --lang en"


def test_align_recovers_a_rotation_end_to_end(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    n, d = 300, 8
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    tgt = (src @ q.T).astype(np.float32)
    words = [f"w{i}" for i in range(n)]
    write_vec(tmp_path / "s.vec", words, src)
    write_vec(tmp_path / "t.vec", [f"x{i}" for i in range(n)], tgt)
    (tmp_path / "train.txt").write_text("".join(f"w{i} x{i}\n" for i in range(0, 100)), encoding="utf-8")
    (tmp_path / "test.txt").write_text("".join(f"w{i}\tx{i}\n" for i in range(200, 300)), encoding="utf-8")
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
                              "--train-dict", str(tmp_path / "train.txt"), "--eval-dict", str(tmp_path / "test.txt"),
                              "--refine", "2", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["precision"]["csls"]["precision_at_1"] == pytest.approx(100.0)
    assert np.allclose(np.load(tmp_path / "out" / "W.npy"), q, atol=1e-4)
    assert (tmp_path / "out" / "src.aligned.vec").exists()


def test_align_from_run_with_identical_seed(runs: dict[str, Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["align", "--run", str(runs["groc"]), "--src-lang", "en", "--tgt-lang", "fr",
                              "--dictionary-mode", "identical", "--refine", "1", "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert _json(res.stdout)["train_dictionary"]["seed"] == "identical"


@pytest.mark.parametrize("case", ["dim", "nodict", "empty", "nan", "header"])
def test_align_bad_inputs_exit_2(tmp_path: Path, case: str) -> None:
    write_vec(tmp_path / "s.vec", ["a", "b"], np.eye(2, dtype=np.float32))
    tgt = np.eye(2, 3, dtype=np.float32) if case == "dim" else np.eye(2, dtype=np.float32)
    write_vec(tmp_path / "t.vec", ["a", "b"], tgt)
    (tmp_path / "d.txt").write_text("zz yy\n" if case == "nodict" else "a a\n", encoding="utf-8")
    if case == "empty":
        (tmp_path / "t.vec").write_text("", encoding="utf-8")
    if case == "nan":
        (tmp_path / "t.vec").write_text("2 2\na nan 1\nb 0 1\n", encoding="utf-8")
    if case == "header":
        (tmp_path / "t.vec").write_text("3 2\na 1 0\nb 0 1\n", encoding="utf-8")
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
                              "--train-dict", str(tmp_path / "d.txt"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert not (tmp_path / "o" / "result.json").exists()


def test_similarity_vectors_and_run(runs: dict[str, Path], tmp_path: Path) -> None:
    ds = tmp_path / "sim.txt"
    ds.write_text("cat dog 8.0\ncat garden 2.0\nbird fish 5.5\nteacher zebra 1.0\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--run", str(runs["groc"]), "--lang", "en", "--dataset", str(ds)])
    assert res.exit_code == 0, res.output
    entry = _json(res.stdout)["datasets"]["sim.txt"]
    assert entry["in_vocabulary"]["not_found"] == 1  # zebra is unseen
    assert entry["all_pairs_composed"]["found"] == 4  # GroC composes it
    res = runner.invoke(app, ["similarity", "--run", str(runs["lookup"]), "--lang", "en", "--dataset", str(ds)])
    assert res.exit_code == 0 and "all_pairs_composed" not in _json(res.stdout)["datasets"]["sim.txt"]
    bad = tmp_path / "bad.txt"
    bad.write_text("cat dog\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--run", str(runs["groc"]), "--lang", "en", "--dataset", str(bad)])
    assert res.exit_code == 2


def test_similarity_datasets_with_the_same_name_are_both_scored(tmp_path: Path) -> None:
    write_vec(tmp_path / "s.vec", ["a", "b", "c"], np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32))
    for folder, scores in (("x", "1 2 3"), ("y", "3 2 1")):
        (tmp_path / folder).mkdir()
        s = scores.split()
        (tmp_path / folder / "EN_RG-65.txt").write_text(f"a b {s[0]}\nb c {s[1]}\na c {s[2]}\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "s.vec"),
                              "--dataset", str(tmp_path / "x" / "EN_RG-65.txt"),
                              "--dataset", str(tmp_path / "y" / "EN_RG-65.txt")])
    assert res.exit_code == 0, res.output
    got = _json(res.stdout)["datasets"]
    assert set(got) == {"x/EN_RG-65.txt", "y/EN_RG-65.txt"}
    assert got["x/EN_RG-65.txt"]["rho"] == pytest.approx(-got["y/EN_RG-65.txt"]["rho"]) != 0


def test_align_polyglot_benchmark_keeps_same_named_wordsim_files(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from benchmarks.align_polyglot import similarity

    paths = []
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        paths.append(tmp_path / folder / "EN_RG-65.txt")
        paths[-1].write_text("a b 1\nb c 2\na c 3\n", encoding="utf-8")
    bundle = SimpleNamespace(model=SimpleNamespace(kind="tied", compositional_output=False,
                                                   compositional_input=False))
    vocab = SimpleNamespace(words=["a", "b", "c"], vectors=np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32))
    args = SimpleNamespace(keep_case=False, side="input")
    got = similarity(bundle, {"en": vocab}, {"en": paths}, args)  # type: ignore[arg-type]
    assert set(got) == {"en/x/EN_RG-65.txt", "en/y/EN_RG-65.txt"}


def test_align_export_mapped_one_language_on_both_sides_writes_two_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    src = rng.standard_normal((40, 4)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    write_vec(tmp_path / "s.vec", [f"w{i}" for i in range(40)], src)
    write_vec(tmp_path / "t.vec", [f"w{i}" for i in range(40)], (src @ q.T).astype(np.float32))
    (tmp_path / "d.txt").write_text("".join(f"w{i} w{i}\n" for i in range(20)), encoding="utf-8")
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
                              "--train-dict", str(tmp_path / "d.txt"), "--refine", "0", "--export-mapped",
                              "--src-lang", "en", "--tgt-lang", "en", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    # vectors-en.txt for both sides would have kept only the target's vectors.
    mapped = read_vec(tmp_path / "o" / "vectors-en.src.txt", lower=False)[1]
    target = read_vec(tmp_path / "o" / "vectors-en.tgt.txt", lower=False)[1]
    assert np.allclose(mapped, read_vec(tmp_path / "o" / "src.aligned.vec", lower=False)[1])
    assert np.allclose(target, read_vec(tmp_path / "o" / "tgt.vec", lower=False)[1])
    assert not (tmp_path / "o" / "vectors-en.txt").exists()


def test_freq_bins_and_tune_cache_say_which_languages_they_leave_out(
        runs: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    from polyglot_groc.analysis.workflows import freq_bins, tune_cache

    with caplog.at_level("WARNING"):
        out = freq_bins(run_a=runs["groc"], run_b=runs["lookup"], data=TINY, split="test", bin_width=5,
                        bins=2).to_dict()
        res = tune_cache(run=runs["groc"], data=TINY, cache="unigram", lambdas=[0.9], new_word_weights=[1.0],
                         plot=False).to_dict()
    assert out["lang"] == res["lang"] == "en" and out["languages_left_out"] == res["languages_left_out"] == ["fr"]
    assert caplog.text.count("fr left out") == 2
