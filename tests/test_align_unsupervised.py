"""Alignment without a dictionary through the faces: ``align``/``align-many --dictionary-mode unsupervised|
adversarial``, ``--method vecmap-self-learning``, the verdict, ``--require-aligned``, ``--random-seed`` and bad
input, from the command line (CliRunner) and from Python (``pg.align``, ``pg.align_many``).

Tiny spaces (150 words x 8 dimensions) and a short schedule keep each test at seconds; the algorithms
themselves are tested on larger spaces in tests/test_unsupervised_align.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import polyglot_groc as pg
from eval.methods import AdversarialConfig, SelfLearningConfig, UnsupervisedConfig, VerdictConfig
from eval.vectors import write_vec
from groc_base.errors import InputError, UnalignedError
from polyglot_groc.cli import app
from tests.conftest import one_error_line

runner = CliRunner()
N, D = 150, 8
#: A short schedule: every stall of one iteration doubles the keep probability; one restart.
FAST = ["--vecmap-stochastic-interval", "1", "--verdict-restarts", "1", "--verdict-check-words", "100"]
FAST_CONFIG = UnsupervisedConfig(self_learning=SelfLearningConfig(stochastic_interval=1),
                                 verdict=VerdictConfig(restarts=1, check_words=100))


def _clustered(seed: int, n: int = N, d: int = D) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((12, d)) * np.linspace(2.0, 0.5, d)
    return (centers[rng.integers(0, 12, n)] + 0.3 * rng.standard_normal((n, d))).astype(np.float32)


@pytest.fixture(scope="module")
def spaces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``s.vec`` (w0..), ``t.vec`` its rotated copy (x0..), ``u.vec`` an unrelated set, ``test.txt`` w_i x_i."""
    root = tmp_path_factory.mktemp("unsup")
    x = _clustered(0)
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((D, D)))
    write_vec(root / "s.vec", [f"w{i}" for i in range(N)], x)
    write_vec(root / "t.vec", [f"x{i}" for i in range(N)], (x @ q).astype(np.float32))
    write_vec(root / "u.vec", [f"x{i}" for i in range(N)], _clustered(7))
    write_vec(root / "small.vec", [f"x{i}" for i in range(6)], x[:6])
    write_vec(root / "zero.vec", [f"w{i}" for i in range(N)], np.zeros((N, D), np.float32))
    write_vec(root / "d6.vec", [f"x{i}" for i in range(N)], x[:, :6])
    (root / "empty.vec").write_text("0 8\n", encoding="utf-8")
    (root / "test.txt").write_text("".join(f"w{i} x{i}\n" for i in range(40, 140)), encoding="utf-8")
    (root / "seed.txt").write_text("".join(f"w{i} x{i}\n" for i in range(0, 40, 2)), encoding="utf-8")
    return root


def _align(root: Path, *extra: str, tgt: str = "t.vec", fast: bool = True) -> list[str]:
    return ["align", "--src", str(root / "s.vec"), "--tgt", str(root / tgt), *(FAST if fast else []), *extra]


def test_unsupervised_aligns_a_rotated_copy_and_says_so(spaces: Path) -> None:
    out = spaces / "a"
    res = runner.invoke(app, _align(spaces, "--dictionary-mode", "unsupervised", "--eval-dict",
                                    str(spaces / "test.txt"), "--out", str(out)))
    assert res.exit_code == 0, res.output
    first = res.stderr.splitlines()[0]
    assert first.startswith("verdict: aligned (") and "mean CSLS cosine (MUSE's criterion)" in first
    got = json.loads((out / "result.json").read_text())
    assert got["method"] == "vecmap-unsupervised" and got["train_dictionary"] == {"seed": "unsupervised", "found": 0}
    assert got["verdict"]["status"] == "aligned" and got["verdict"]["criterion"]["value"] > 0.5
    assert got["verdict"]["evidence"]["restart_seeds"] == [1]
    assert "--unsupervised" in got["reference"]["recipe"]
    assert "stochastic_interval 1 (VecMap: 50)" in got["reference"]["differences"]
    assert got["protocols"]["muse"]["csls"]["precision_at_1"] >= 90.0
    assert (out / "W_tgt.npy").is_file()  # VecMap's final step moves both sides


def test_a_failed_alignment_is_printed_and_exits_0_unless_required(spaces: Path) -> None:
    strict = ["--dictionary-mode", "unsupervised", "--verdict-aligned-agreement", "1.0",
              "--verdict-failed-agreement", "1.0"]  # an unrelated pair never agrees everywhere: 'failed'
    res = runner.invoke(app, [*_align(spaces, *strict, tgt="u.vec"), "--out", str(spaces / "f")])
    assert res.exit_code == 0, res.output
    assert res.stderr.splitlines()[0].startswith("verdict: failed (")
    assert json.loads((spaces / "f" / "result.json").read_text())["verdict"]["status"] == "failed"
    line = one_error_line(runner.invoke(app, [*_align(spaces, *strict, "--require-aligned", tgt="u.vec"),
                                               "--out", str(spaces / "g")]))
    assert "is failed" in line and "--require-aligned" in line and not (spaces / "g").exists()
    with pytest.raises(UnalignedError, match="drop require_aligned"):
        pg.align(src=spaces / "s.vec", tgt=spaces / "u.vec", dictionary_mode="unsupervised", require_aligned=True,
                 method_config=UnsupervisedConfig(self_learning=FAST_CONFIG.self_learning, verdict=VerdictConfig(
                     restarts=1, check_words=100, aligned_agreement=1.0, failed_agreement=1.0)))


def test_a_seed_repeats_a_run(spaces: Path) -> None:
    def run(seed: int) -> pg.AlignResult:
        return pg.align(src=spaces / "s.vec", tgt=spaces / "u.vec", dictionary_mode="unsupervised",
                        method_config=FAST_CONFIG, random_seed=seed)

    def steps(res: pg.AlignResult) -> list[dict[str, object]]:
        return [{k: v for k, v in h.items() if k != "seconds"} for h in res.history]

    a, b, c = run(3), run(3), run(4)
    assert np.array_equal(a.W, b.W) and steps(a) == steps(b) and a.verdict == b.verdict
    assert not np.array_equal(a.W, c.W)  # stochastic induction drew other dictionaries
    line = one_error_line(runner.invoke(app, _align(spaces, "--dictionary-mode", "unsupervised",
                                                    "--random-seed", "-1")))
    assert "--random-seed" in line


def test_self_learning_runs_from_a_small_seed_and_adversarial_on_cpu(spaces: Path) -> None:
    res = runner.invoke(app, _align(spaces, "--train-dict", str(spaces / "seed.txt"), "--method",
                                    "vecmap-self-learning", "--out", str(spaces / "s")))
    assert res.exit_code == 0, res.output
    got = json.loads((spaces / "s" / "result.json").read_text())
    assert got["verdict"]["status"] in ("aligned", "doubtful", "failed") and got["train_dictionary"]["found"] == 20
    assert "--semi_supervised" in got["reference"]["recipe"]
    adv = runner.invoke(app, ["align", "--src", str(spaces / "s.vec"), "--tgt", str(spaces / "t.vec"),
                              "--dictionary-mode", "adversarial", "--muse-n-epochs", "1", "--muse-epoch-size", "320",
                              "--muse-dis-hid-dim", "16", "--muse-n-refinement", "1", *FAST[2:], "--out",
                              str(spaces / "m")])
    assert adv.exit_code == 0, adv.output
    got = json.loads((spaces / "m" / "result.json").read_text())
    assert got["method"] == "muse-adversarial" and "verdict" in got and not (spaces / "m" / "W_tgt.npy").exists()
    assert "n_epochs 1 (MUSE: 5)" in got["reference"]["differences"]


def test_align_many_maps_onto_a_pivot_without_a_dictionary(spaces: Path) -> None:
    args = ["align-many", "--vectors", f"en={spaces / 't.vec'}", "--vectors", f"fr={spaces / 's.vec'}", "--pivot",
            "en", "--dictionary-mode", "unsupervised", *FAST, "--out", str(spaces / "many")]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert "fr: mapped onto en (vecmap-unsupervised) from --dictionary-mode unsupervised" in res.stderr
    assert "verdict: aligned" in res.stderr
    got = json.loads((spaces / "many" / "result.json").read_text())
    assert got["languages"]["fr"]["verdict"]["status"] == "aligned" and (spaces / "many" / "W-fr.npy").is_file()
    line = one_error_line(runner.invoke(app, [*args[:-2], "--train-dict", f"fr-en={spaces / 'seed.txt'}"]))
    assert "starts without a dictionary; drop --train-dict" in line
    line = one_error_line(runner.invoke(app, [*args[:-2], "--vecmap-final-map", "vecmap"]))
    assert "moves the pivot" in line
    res = pg.align_many(vectors={"en": spaces / "t.vec", "fr": spaces / "s.vec"}, pivot="en",
                        dictionary_mode="unsupervised", method_config=FAST_CONFIG)
    assert res.languages["fr"]["verdict"]["status"] == "aligned" and res.method == "vecmap-unsupervised"


@pytest.mark.parametrize("extra, tgt, needle", [
    (["--dictionary-mode", "unsupervised"], "empty.vec", "empty.vec"),
    (["--dictionary-mode", "unsupervised"], "small.vec", "the target vocabulary has 6 words"),
    (["--dictionary-mode", "unsupervised"], "d6.vec", "dimension 8 but target vectors 6"),
    (["--dictionary-mode", "unsupervised", "--vecmap-vocabulary-cutoff", "500"], "t.vec",
     "--vecmap-vocabulary-cutoff 500 is larger than the vocabularies (150 source, 150 target words)"),
    (["--dictionary-mode", "unsupervised", "--vecmap-unsupervised-vocab", "500"], "t.vec",
     "--vecmap-unsupervised-vocab 500 is larger"),
    (["--dictionary-mode", "adversarial", "--muse-dis-most-frequent", "500"], "t.vec",
     "--vecmap-stochastic-interval sets up"),  # a knob of another method: refused before anything is read
    (["--dictionary-mode", "adversarial", "--muse-dis-most-frequent", "500", "NOFAST"], "t.vec",
     "--muse-dis-most-frequent 500 is larger"),
    (["--dictionary-mode", "unsupervised", "--train-dict", "SEED"], "t.vec",
     "--dictionary-mode unsupervised starts without a dictionary; drop --train-dict"),
    (["--train-dict", "SEED", "--require-aligned", "NOFAST"], "t.vec", "procrustes gives none"),
    (["--dictionary-mode", "unsupervised", "--refine", "3"], "t.vec", "--refine 3 applies to procrustes only"),
])
def test_bad_input_is_one_line_and_writes_nothing(spaces: Path, extra: list[str], tgt: str, needle: str) -> None:
    fast = "NOFAST" not in extra
    extra = [str(spaces / "seed.txt") if e == "SEED" else e for e in extra if e != "NOFAST"]
    out = spaces / "bad"
    line = one_error_line(runner.invoke(app, [*_align(spaces, *extra, tgt=tgt, fast=fast), "--out", str(out)]))
    assert needle in line and not out.exists()


def test_all_zero_vectors_are_refused(spaces: Path) -> None:
    args = ["align", "--src", str(spaces / "zero.vec"), "--tgt", str(spaces / "t.vec"), "--dictionary-mode",
            "unsupervised", *FAST, "--out", str(spaces / "z")]
    assert "zero.vec: every vector is zero (150 words)" in one_error_line(runner.invoke(app, args))
    assert not (spaces / "z").exists()


@pytest.mark.parametrize("kwargs, needle", [
    ({"tgt": "small.vec"}, "the target vocabulary has 6 words"),
    ({"tgt": "d6.vec"}, "dimension 8 but target vectors 6"),
    ({"src": "zero.vec"}, "zero.vec: every vector is zero"),
    ({"train_dict": "seed.txt"}, "dictionary_mode='unsupervised' starts without a dictionary; drop train_dict"),
    ({"method_config": UnsupervisedConfig(self_learning=SelfLearningConfig(vocabulary_cutoff=500))},
     "vecmap_vocabulary_cutoff=500 is larger"),
    ({"dictionary_mode": "adversarial", "method_config": AdversarialConfig(dis_most_frequent=500)},
     "muse_dis_most_frequent=500 is larger"),
])
def test_bad_input_from_python_names_the_keyword(spaces: Path, kwargs: dict[str, object], needle: str) -> None:
    given = {"src": spaces / "s.vec", "tgt": spaces / "t.vec", "dictionary_mode": "unsupervised",
             "method_config": FAST_CONFIG, "out": spaces / "py"}
    given.update({k: spaces / v if k in ("src", "tgt", "train_dict") else v for k, v in kwargs.items()})
    with pytest.raises(InputError, match=needle) as exc:
        pg.align(**given)  # type: ignore[arg-type]
    assert "\n" not in str(exc.value) and not (spaces / "py").exists()


def test_the_polyglot_alignment_benchmark_aligns_without_a_dictionary(spaces: Path) -> None:
    # benchmarks/align_polyglot.py --dictionary-mode unsupervised: the same align call with no dictionary,
    # its schedule from the flags, the verdict in the model's record (issue 47: GroC's output embeddings
    # aligned with and without a dictionary).
    from types import SimpleNamespace

    from benchmarks.align_polyglot import alignment, parse_args
    from eval.vectors import read_vec

    args = parse_args(["--src", "en", "--tgt", "fr", "--dictionary-mode", "unsupervised", "--interval", "1",
                       "--cutoff", "150", "--restart-cutoff", "100", "--eval-dict", str(spaces / "test.txt")])
    src_words, src = read_vec(spaces / "s.vec", lower=False)
    tgt_words, tgt = read_vec(spaces / "t.vec", lower=False)
    exported = {"en": SimpleNamespace(words=list(src_words), vectors=src),
                "fr": SimpleNamespace(words=list(tgt_words), vectors=tgt)}
    out = alignment(exported, args, {"en": 0, "fr": 0})
    assert out["verdict"]["status"] == "aligned", out["verdict"]
    assert out["method"] == "vecmap-unsupervised" and out["train_dictionary"]["seed"] == "unsupervised"
    p1 = out["protocols"]["muse"]["csls"]["precision_at_1"]
    assert p1 >= 95.0, out["protocols"]["muse"]


def test_the_polyglot_alignment_benchmark_refuses_a_dictionary_without_one() -> None:
    from benchmarks.align_polyglot import parse_args, run
    from benchmarks.common import BadInput

    args = parse_args(["--src", "en", "--tgt", "fr", "--dictionary-mode", "unsupervised", "--groc", "x",
                       "--train-dict", "d.txt", "--eval-dict", "e.txt", "--wordsim", "w.txt"])
    with pytest.raises(BadInput, match="drop --train-dict"):
        run(args)
