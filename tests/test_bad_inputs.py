"""Every bad input is a clean exit: code 2, one line on stderr, and no new file anywhere.

Table-driven over every command; placeholders in the argv are filled from the fixtures below.
Then property-based fuzzing (hypothesis, capped) of the corpus, .vec, dictionary and config
readers: any input either parses or raises the toolkit's typed error, never anything else. Then
disk-full (ENOSPC) and read-only targets for train, export and align.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from eval.vectors import write_vec
from groc_base.errors import GrocError
from polyglot_groc.cli import app
from tests.conftest import SMALL, TINY

runner = CliRunner()
SETS = [x for s in SMALL for x in ("--set", s)]
TRAIN = ["train", "--langs", "en,fr", "--data", str(TINY), "--out", "{tmp}/new", *SETS]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "groc"
    res = runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(out),
                              "--max-steps", "2", *SETS])
    assert res.exit_code == 0, res.output
    return out


def _fixtures(tmp: Path) -> dict[str, str]:
    write_vec(tmp / "s.vec", ["a", "b", "c"], np.eye(3, dtype=np.float32))
    write_vec(tmp / "t2.vec", ["a", "b", "c"], np.eye(3, 2, dtype=np.float32))
    (tmp / "garbage.vec").write_bytes(b"\xff\xfe not a vec file\n")
    (tmp / "d.txt").write_text("a a\nb b\n", encoding="utf-8")
    (tmp / "empty.txt").write_text("", encoding="utf-8")
    (tmp / "bad.toml").write_text("[train\nlr = ", encoding="utf-8")
    (tmp / "file").write_text("x\n", encoding="utf-8")
    (tmp / "adir").mkdir()
    (tmp / "full").mkdir()
    (tmp / "full" / "keep.txt").write_text("mine\n", encoding="utf-8")
    return {"tmp": str(tmp), "data": str(TINY)}


# (id, argv, substring the one error line must contain or None)
CASES: list[tuple[str, list[str], str | None]] = [
    # train: numbers
    ("train-max-steps-0", [*TRAIN, "--max-steps", "0"], "--max-steps"),
    ("train-softmax-unknown", [*TRAIN, "--softmax", "foo"], "train.softmax"),
    ("train-sampled-k-0", [*TRAIN, "--sampled-k", "0"], "--sampled-k"),
    ("train-sampled-adaptive", [*TRAIN, "--softmax", "sampled", "--model", "adaptive"], "adaptive"),
    ("train-sampled-proposal", [*TRAIN, "--set", "train.sampled_proposal=zipf"], "sampled_proposal"),
    ("train-max-steps-neg", [*TRAIN, "--max-steps", "-5"], "--max-steps"),
    ("train-max-epochs-0", [*TRAIN, "--max-epochs", "0"], "--max-epochs"),
    ("train-max-minutes-neg", [*TRAIN, "--max-minutes", "-1"], "--max-minutes"),
    ("train-max-minutes-nan", [*TRAIN, "--max-minutes", "nan"], "--max-minutes"),
    ("train-max-minutes-inf", [*TRAIN, "--max-minutes", "inf"], "--max-minutes"),
    ("train-threads-neg", [*TRAIN, "--threads", "-1"], "--threads"),
    ("train-coverage-high", [*TRAIN, "--lexicon-coverage", "1.5"], "--lexicon-coverage"),
    ("train-coverage-neg", [*TRAIN, "--lexicon-coverage", "-0.1"], "--lexicon-coverage"),
    ("train-log-every-neg", [*TRAIN, "--log-every", "-1"], "--log-every"),
    ("train-batch-size-0", [*TRAIN, "--set", "train.batch_size=0"], "batch_size"),
    ("train-bptt-0", [*TRAIN, "--set", "train.bptt=0"], "bptt"),
    ("train-lr-neg", [*TRAIN, "--set", "train.lr=-1.0"], "lr"),
    ("train-lr-nan", [*TRAIN, "--set", "train.lr=nan"], "lr"),
    ("train-clip-inf", [*TRAIN, "--set", "train.clip=inf"], "clip"),
    ("train-clip-neg", [*TRAIN, "--set", "train.clip=-1.0"], "clip"),
    ("train-dropout-high", [*TRAIN, "--set", "model.prefix.dropout=1.5"], "dropout"),
    ("train-update-prob-0", [*TRAIN, "--set", "train.output_update_prob=0.0"], "output_update_prob"),
    ("train-epochs-cfg-0", [*TRAIN, "--set", "train.max_epochs=0"], "max_epochs"),
    ("train-lr-factor", [*TRAIN, "--set", "train.lr_factor=2.0"], "lr_factor"),
    ("train-temperature-0", [*TRAIN, "--set", "data.temperature=0.0"], "temperature"),
    ("train-patience-0", [*TRAIN, "--set", "train.stop_patience=0"], "stop_patience"),
    ("train-d-0", [*TRAIN, "--set", "model.d=0"], "model.d"),
    # train: names and files
    ("train-unknown-key", [*TRAIN, "--set", "train.nosuch=1"], "nosuch"),
    ("train-bad-override", [*TRAIN, "--set", "train.lr"], None),
    ("train-model-kind", [*TRAIN, "--model", "transformer"], "transformer"),
    ("train-vocab-mode", [*TRAIN, "--vocab-mode", "half"], "vocab_mode"),
    ("train-schedule", [*TRAIN, "--schedule", "random"], "schedule"),
    ("train-size", [*TRAIN, "--size", "huge"], "--size"),
    ("train-unknown-lang", ["train", "--langs", "xx", "--data", str(TINY), "--out", "{tmp}/new"], "xx"),
    ("train-no-data", ["train", "--out", "{tmp}/new"], "--data"),
    ("train-data-missing", ["train", "--data", "{tmp}/nowhere", "--out", "{tmp}/new", *SETS], None),
    ("train-data-is-file", ["train", "--data", "{tmp}/file", "--out", "{tmp}/new", *SETS], None),
    ("train-config-missing", [*TRAIN, "--config", "{tmp}/nowhere.toml"], "nowhere.toml"),
    ("train-config-dir", [*TRAIN, "--config", "{tmp}/adir"], "adir"),
    ("train-config-bad", [*TRAIN, "--config", "{tmp}/bad.toml"], "bad.toml"),
    ("train-out-exists", ["train", "--langs", "en,fr", "--data", str(TINY), "--out", "{tmp}/full", *SETS], "full"),
    ("train-out-under-file", ["train", "--langs", "en,fr", "--data", str(TINY), "--out", "{tmp}/file/run", *SETS],
     "file"),
    ("train-out-name-too-long", ["train", "--langs", "en,fr", "--data", str(TINY), "--out", "{tmp}/" + "r" * 300,
                                 *SETS], "too long"),
    ("train-resume-missing", ["train", "--resume", "{tmp}/nowhere"], "nowhere"),
    ("train-resume-not-run", ["train", "--resume", "{tmp}/adir"], "adir"),
    # evaluate
    ("evaluate-missing-run", ["evaluate", "{tmp}/nowhere"], "nowhere"),
    ("evaluate-run-is-file", ["evaluate", "{tmp}/file"], None),
    ("evaluate-batch-size-0", ["evaluate", "{run}", "--batch-size", "0"], "--batch-size"),
    ("evaluate-bad-split", ["evaluate", "{run}", "--split", "dev"], "dev"),
    ("evaluate-bad-checkpoint", ["evaluate", "{run}", "--checkpoint", "middle"], "middle"),
    ("evaluate-data-missing", ["evaluate", "{run}", "--data", "{tmp}/nowhere"], None),
    # export
    ("export-missing-run", ["export", "{tmp}/nowhere", "--lang", "en", "--vocab", "--out", "{tmp}/o.vec"], None),
    ("export-max-vocab-0", ["export", "{run}", "--lang", "en", "--vocab", "--max-vocab", "0", "--out", "{tmp}/o.vec"],
     "--max-vocab"),
    ("export-max-vocab-neg", ["export", "{run}", "--lang", "en", "--vocab", "--max-vocab", "-1",
                              "--out", "{tmp}/o.vec"], "--max-vocab"),
    ("export-words-missing", ["export", "{run}", "--lang", "en", "--words", "{tmp}/nowhere", "--out", "{tmp}/o.vec"],
     "nowhere"),
    ("export-words-dir", ["export", "{run}", "--lang", "en", "--words", "{tmp}/adir", "--out", "{tmp}/o.vec"], "adir"),
    ("export-words-empty", ["export", "{run}", "--lang", "en", "--words", "{tmp}/empty.txt", "--out", "{tmp}/o.vec"],
     "empty"),
    ("export-bad-side", ["export", "{run}", "--lang", "en", "--vocab", "--side", "middle", "--out", "{tmp}/o.vec"],
     None),
    ("export-bad-lang", ["export", "{run}", "--lang", "xx", "--vocab", "--out", "{tmp}/o.vec"], "xx"),
    ("export-no-words", ["export", "{run}", "--lang", "en", "--out", "{tmp}/o.vec"], None),
    ("export-out-is-dir", ["export", "{run}", "--lang", "en", "--vocab", "--out", "{tmp}/adir"], "adir"),
    ("export-out-under-file", ["export", "{run}", "--lang", "en", "--vocab", "--out", "{tmp}/file/o.vec"], "file"),
    # align
    ("align-src-missing", ["align", "--src", "{tmp}/nowhere.vec", "--tgt", "{tmp}/s.vec", "--train-dict", "{tmp}/d.txt",
                           "--out", "{tmp}/al"], "nowhere"),
    ("align-src-garbage", ["align", "--src", "{tmp}/garbage.vec", "--tgt", "{tmp}/s.vec", "--train-dict",
                           "{tmp}/d.txt", "--out", "{tmp}/al"], "garbage"),
    ("align-max-vocab-negative", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--train-dict",
                                  "{tmp}/d.txt", "--max-vocab", "-1", "--out", "{tmp}/al"], "--max-vocab"),
    ("align-no-dict", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--out", "{tmp}/al"], "--train-dict"),
    ("align-bad-mode", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--dictionary-mode", "guess",
                        "--out", "{tmp}/al"], None),
    ("align-dict-missing", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--train-dict",
                            "{tmp}/nowhere.txt", "--out", "{tmp}/al"], "nowhere"),
    ("align-dim-mismatch", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/t2.vec", "--train-dict", "{tmp}/d.txt",
                            "--out", "{tmp}/al"], "dimension"),
    ("align-refine-neg", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--train-dict", "{tmp}/d.txt",
                          "--refine", "-1", "--out", "{tmp}/al"], "--refine"),
    ("align-max-rank-0", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--train-dict", "{tmp}/d.txt",
                          "--dico-max-rank", "0", "--out", "{tmp}/al"], "--dico-max-rank"),
    ("align-out-under-file", ["align", "--src", "{tmp}/s.vec", "--tgt", "{tmp}/s.vec", "--train-dict", "{tmp}/d.txt",
                              "--refine", "0", "--out", "{tmp}/file/al"], "file"),
    # similarity
    ("similarity-dataset-missing", ["similarity", "--vectors", "{tmp}/s.vec", "--dataset", "{tmp}/nowhere.txt"],
     "nowhere"),
    ("similarity-vectors-missing", ["similarity", "--vectors", "{tmp}/nowhere.vec", "--dataset", "{tmp}/d.txt"],
     "nowhere"),
    ("similarity-max-vocab-0", ["similarity", "--vectors", "{tmp}/s.vec", "--dataset", "{tmp}/d.txt", "--max-vocab",
                                "0"], "--max-vocab"),
    ("similarity-both", ["similarity", "--vectors", "{tmp}/s.vec", "--run", "{run}", "--dataset", "{tmp}/d.txt"],
     "exactly one"),
    # data prepare
    ("prepare-train-tokens-0", ["data", "prepare", "--data", "{tmp}", "--out", "{tmp}/c", "--langs", "en",
                                "--train-tokens", "0"], "--train-tokens"),
    ("prepare-eval-tokens-neg", ["data", "prepare", "--data", "{tmp}", "--out", "{tmp}/c", "--langs", "en",
                                 "--eval-tokens", "-1"], "--eval-tokens"),
    ("prepare-data-missing", ["data", "prepare", "--data", "{tmp}/nowhere", "--out", "{tmp}/c", "--langs", "en"],
     "nowhere"),
    # lexicon
    ("lexicon-coverage-min-count", ["lexicon", "coverage", "--data", str(TINY), "--langs", "en", "--backend", "tsv",
                                    "--min-count", "-5"], "--min-count"),
    # runs
    ("runs-show-not-run", ["runs", "show", "{tmp}/adir"], "adir"),
    ("runs-list-missing", ["runs", "list", "{tmp}/nowhere"], "nowhere"),
    # init-from-elmo
    ("elmo-missing-run", ["init-from-elmo", "{tmp}/nowhere", "--out", "{tmp}/g"], None),
    ("elmo-max-steps-0", ["init-from-elmo", "{run}", "--out", "{tmp}/g", "--max-steps", "0"], "--max-steps"),
    ("elmo-lr-neg", ["init-from-elmo", "{run}", "--out", "{tmp}/g", "--lr", "-0.1"], "--lr"),
]


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("argv", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_one_line_and_no_new_files(argv: list[str], run_dir: Path, tmp_path: Path) -> None:
    needle = {c[0]: c[2] for c in CASES}[next(c[0] for c in CASES if c[1] is argv)]
    values = {**_fixtures(tmp_path), "run": str(run_dir)}
    args = [a.format(**values) for a in argv]
    before, run_before = _tree(tmp_path), _tree(run_dir)
    res = runner.invoke(app, args, env={"POLYGLOT_GROC_DATA": ""})
    assert res.exit_code == 2, (res.output, repr(res.exception))
    # Logged warnings may come first; the error itself is one line, the last one; no blank lines.
    lines = res.stderr.splitlines()
    assert all(line.strip() for line in lines), res.stderr
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], res.stderr
    assert "Traceback" not in res.output
    if needle is not None:
        assert needle.lower() in errors[0].lower(), errors[0]
    assert _tree(tmp_path) == before
    assert _tree(run_dir) == run_before


def test_the_harness_is_big_enough() -> None:
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)
    commands = {c[1][0] for c in CASES}
    assert commands >= {"train", "evaluate", "export", "align", "similarity", "data", "lexicon", "runs",
                        "init-from-elmo"}


# ---------------------------------------------------------------- fuzzing the readers
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TYPED = (GrocError,)


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_corpus_reader(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    from langpairs.corpus import read_split

    p = tmp_path_factory.mktemp("fz") / "train.txt"
    p.write_bytes(data)
    try:
        sentences = read_split(p)
    except TYPED:
        return
    assert all(isinstance(w, str) and w for s in sentences for w in s)


@FUZZ
@given(st.one_of(st.binary(max_size=300),
                 st.lists(st.lists(st.sampled_from(["a", "b", "1", "0.5", "nan", "-", "3 2", "x"]), max_size=5),
                          max_size=6).map(lambda rows: "\n".join(" ".join(r) for r in rows).encode())))
def test_fuzz_vec_reader(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    from eval.vectors import read_vec

    p = tmp_path_factory.mktemp("fz") / "x.vec"
    p.write_bytes(data)
    try:
        words, vecs = read_vec(p)
    except TYPED:
        return
    assert len(words) == vecs.shape[0] and np.isfinite(vecs).all()


@FUZZ
@given(st.binary(max_size=300))
def test_fuzz_dictionary_reader(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    from langpairs.dictionaries import read_dictionary

    p = tmp_path_factory.mktemp("fz") / "d.txt"
    p.write_bytes(data)
    try:
        pairs = read_dictionary(p)
    except TYPED:
        return
    assert all(len(pair) == 2 for pair in pairs)


@FUZZ
@given(st.one_of(st.text(max_size=200),
                 st.lists(st.tuples(st.sampled_from(["train.lr", "train.batch_size", "model.d", "data.langs",
                                                     "train.clip", "model.prefix.dropout", "x.y"]),
                                    st.sampled_from(["0", "-1", "1e309", "nan", "inf", '"s"', "[1]", "0.5", "3"])),
                          max_size=4).map(lambda kv: "\n".join(f"{k} = {v}" for k, v in kv))))
def test_fuzz_config_reader(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    from polyglot_groc.config import load_config

    p = tmp_path_factory.mktemp("fz") / "c.toml"
    p.write_text(text, encoding="utf-8")
    try:
        load_config(p).validate()
    except TYPED:
        return


# ---------------------------------------------------------------- disk full and read-only targets
def _enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device", "disk")


def test_train_disk_full_keeps_previous_checkpoint(run_dir: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import torch

    run = tmp_path / "run"
    shutil.copytree(run_dir, run)
    cfg = (run / "config.toml").read_text(encoding="utf-8")
    assert "max_steps = 2\n" in cfg
    (run / "config.toml").write_text(cfg.replace("max_steps = 2\n", "max_steps = 4\n"), encoding="utf-8")
    before = (run / "last.pt").read_bytes()
    monkeypatch.setattr(torch, "save", _enospc)  # every checkpoint write fails as on a full disk
    res = runner.invoke(app, ["train", "--resume", str(run)])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "disk is full" in lines[0]
    assert (run / "last.pt").read_bytes() == before
    assert not list(run.glob(".*.tmp"))


@pytest.mark.parametrize("command", ["train", "export", "align"])
def test_read_only_target_exits_2(command: str, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = _fixtures(tmp_path)
    ro = tmp_path / "ro"
    ro.mkdir()
    argv = {"train": [a.format(**values) for a in TRAIN[:-len(SETS)]][:-1] + [str(ro / "run"), *SETS,
                                                                            "--max-steps", "1"],
            "export": ["export", str(run_dir), "--lang", "en", "--vocab", "--out", str(ro / "o.vec")],
            "align": ["align", "--src", values["tmp"] + "/s.vec", "--tgt", values["tmp"] + "/s.vec",
                      "--train-dict", values["tmp"] + "/d.txt", "--refine", "0", "--out", str(ro / "al")]}[command]
    ro.chmod(0o555)
    if os.geteuid() == 0:  # root ignores permissions: make creating anything under ro/ fail as it would
        import tempfile

        real_mkdir, real_mkstemp = Path.mkdir, tempfile.mkstemp

        def deny(path: object) -> None:
            if str(path).startswith(str(ro)):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))

        def mkdir(self: Path, *a: object, **k: object) -> None:
            deny(self)
            real_mkdir(self, *a, **k)  # type: ignore[arg-type]

        def mkstemp(*a: object, **k: object) -> tuple[int, str]:
            deny(k.get("dir"))
            return real_mkstemp(*a, **k)  # type: ignore[call-overload,no-any-return]

        monkeypatch.setattr(Path, "mkdir", mkdir)
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    try:
        res = runner.invoke(app, argv)
    finally:
        monkeypatch.undo()
        ro.chmod(0o755)
    assert res.exit_code == 2, res.output
    assert "permission denied" in res.stderr.lower()
    assert list(ro.iterdir()) == []


@pytest.mark.parametrize("command", ["export", "align"])
def test_disk_full_on_output_exits_2_and_leaves_nothing(command: str, run_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import groc_base.fileio as fileio

    values = _fixtures(tmp_path)
    real = fileio.os.fsync

    def full_disk(fd: int) -> None:
        real(fd)
        raise OSError(errno.ENOSPC, "No space left on device")

    argv = {"export": ["export", str(run_dir), "--lang", "en", "--vocab", "--out", values["tmp"] + "/o.vec"],
            "align": ["align", "--src", values["tmp"] + "/s.vec", "--tgt", values["tmp"] + "/s.vec",
                      "--train-dict", values["tmp"] + "/d.txt", "--refine", "0", "--out", values["tmp"] + "/al"]}
    before = _tree(tmp_path)
    monkeypatch.setattr(fileio.os, "fsync", full_disk)
    res = runner.invoke(app, argv[command])
    monkeypatch.undo()
    assert res.exit_code == 2, res.output
    assert "disk is full" in res.stderr
    assert _tree(tmp_path) == before
