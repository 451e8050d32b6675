"""Nothing lost, second pass (issue 39): one test per kind of failure, run against every writer.

- a writer killed (SIGKILL) with its temporary complete, just before the rename: the next run of
  it succeeds and no temporary is left anywhere (groc_base.fileio's pid-named temporaries);
- a full disk (ENOSPC) or a read-only target (EACCES) in every writer: exit 2, one line naming the
  user's path (never a hidden temporary), the previous output byte for byte, no empty --out made;
- resume after each kind of data change (edited in place, shrunk, grown): refused before anything
  is written, unless --accept-changed-data; a run without a fingerprint resumes with a warning;
- advice that would destroy work: a run whose last.pt is lost is never told to --overwrite;
- races: two concurrent lexicon imports into one new wn folder both succeed; a broken WN-LMF
  file leaves the wn folder as it was;
- what should be refused is: case-duplicate languages, a script that is not one, an OMW tab file
  of unknown offsets, a similarity dataset with too few pairs;
- errors that are one line: typer's usage errors, an over-long token, a wrong argument type
  anywhere in the Python API.
"""

from __future__ import annotations

import errno
import hashlib
import inspect
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from polyglot_groc.cli import app
from tests.conftest import MINI_LMF, SMALL, SMALL_OVERRIDES, TINY, one_error_line

runner = CliRunner()
REPO = Path(__file__).resolve().parents[1]
SETS = [x for s in SMALL for x in ("--set", s)]


def temporaries(root: Path) -> list[str]:
    """Every writer's temporary under ``root``: ``.<name>.tmp-<pid>@<host>-*``, ``.<name>.old-*`` and
    older versions' ``.<name>.*.tmp``."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*")
                  if ".tmp-" in p.name or ".old-" in p.name or p.name.endswith(".tmp"))


def snapshot(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) by relative name -> sha256 (lock files aside)."""
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return {str(p.relative_to(path) if p != path else p.name): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in files if not p.name.startswith(".lock") and p.name != ".import.lock"}


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny trained run, its corpus, a text file and two vector files: what the writers read."""
    from polyglot_groc.training.workflows import train

    root = tmp_path_factory.mktemp("writers")
    run = root / "run"
    train(out=run, langs="en", data=TINY, model="groc", overrides=SMALL_OVERRIDES, max_steps=2, threads=1)
    text = root / "text.txt"
    text.write_text((TINY / "en" / "train.txt").read_text(encoding="utf-8"), encoding="utf-8")
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(40)]
    from eval.vectors import write_vec

    base = rng.standard_normal((40, 6)).astype(np.float32)
    write_vec(root / "a.vec", words, base)
    write_vec(root / "b.vec", words, (base @ np.linalg.qr(rng.standard_normal((6, 6)))[0]).astype(np.float32))
    (root / "a-b.txt").write_text("".join(f"w{i} w{i}\n" for i in range(30)), encoding="utf-8")
    # What the writers import on first use, imported once here rather than in each killed child too.
    import matplotlib.pyplot  # noqa: F401

    from langpairs.tokenize import make_tokenizer

    make_tokenizer("en", "toktok")
    return {"run": run, "data": TINY, "text": text, "a": root / "a.vec", "b": root / "b.vec",
            "dict": root / "a-b.txt"}


#: Each writer: (its command line for ``out``, the name of what it renames into place, what ``out`` is).
WRITERS: dict[str, tuple[Callable[[dict[str, Path], Path], list[str]], Callable[[Path], str], str]] = {
    "data prepare --input": (lambda w, out: ["data", "prepare", "--lang", "en", "--input", str(w["text"]),
                                             "--out", str(out)], lambda out: "en", "dir"),
    "features": (lambda w, out: ["features", str(w["run"]), "--input", str(w["text"]), "--out", str(out),
                                 "--threads", "1"], lambda out: out.name, "file"),
    "export": (lambda w, out: ["export", str(w["run"]), "--lang", "en", "--vocab", "--out", str(out)],
               lambda out: out.name, "file"),
    "anchors": (lambda w, out: ["anchors", str(w["run"]), "--data", str(w["data"]), "--out", str(out),
                                "--threads", "1"], lambda out: out.name, "dir"),
    "align-many": (lambda w, out: ["align-many", "--vectors", f"a={w['a']}", "--vectors", f"b={w['b']}",
                                   "--pivot", "b", "--train-dict", f"a-b={w['dict']}", "--refine", "0",
                                   "--out", str(out)], lambda out: out.name, "dir"),
    # two files together: the chart and its JSON (tune-cache and analyze curves write one PNG the same way)
    "analyze freq-bins": (lambda w, out: ["analyze", "freq-bins", str(w["run"]), str(w["run"]), "--data",
                                          str(w["data"]), "--out", str(out), "--threads", "1"],
                          lambda out: out.name, "file"),
    "lexicon import": (lambda w, out: ["lexicon", "import", str(MINI_LMF), "--wn-dir", str(out)],
                       lambda out: "wn.db", "dir"),
}
SUFFIX = {"features": ".hdf5", "export": ".vec", "analyze freq-bins": ".png"}
OVERWRITE = {"lexicon import": "--force"}


def _out(tmp_path: Path, name: str) -> Path:
    """Where ``name`` writes: ``outs/out`` (with the writer's suffix), in an existing folder."""
    (tmp_path / "outs").mkdir(exist_ok=True)
    return tmp_path / "outs" / ("out" + SUFFIX.get(name, ""))


def _killed_before_rename(target: str, args: list[str], nth: int = 1) -> None:
    """Run the command ``args`` in a forked child that SIGKILLs itself when it is about to rename the
    ``nth`` temporary of ``target`` (``.<target>.tmp-*``) into place: its temporary is complete, the
    output not yet published. Asserts the child died of that signal."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            # One thread, and the command's own thread picker told so: the parent's OpenMP team does not
            # survive the fork, and a child that starts a parallel region on it can hang (CI: OMP_NUM_THREADS=2).
            os.environ["OMP_NUM_THREADS"] = "1"
            torch.set_num_threads(1)
            seen = {"n": 0}

            def deadly(real: Callable[..., Any]) -> Callable[..., Any]:
                def rename(src: Any, dst: Any, *a: Any, **k: Any) -> Any:
                    if f".{target}.tmp-" in os.fspath(src):
                        seen["n"] += 1
                        if seen["n"] == nth:
                            os.kill(os.getpid(), signal.SIGKILL)
                    return real(src, dst, *a, **k)
                return rename

            os.replace, os.rename = deadly(os.replace), deadly(os.rename)  # type: ignore[assignment]
            result = CliRunner().invoke(app, args)
            sys.stderr.write(f"the child was not killed: exit {result.exit_code}: {result.output[-2000:]}\n")
            code = 3
        except BaseException:  # noqa: BLE001 - report, never unwind into the parent's test
            traceback.print_exc()
            code = 4
        finally:
            os._exit(code)
    deadline = time.monotonic() + 180
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the killed writer's child hung")
        time.sleep(0.02)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status


# --------------------------------------------------------------------------- 1. killed writers' temporaries


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_writer_killed_before_its_rename_is_swept_by_the_next_run(world: dict[str, Path], tmp_path: Path,
                                                                       name: str) -> None:
    command, target, _ = WRITERS[name]
    out = _out(tmp_path, name)
    _killed_before_rename(target(out), command(world, out))
    assert temporaries(tmp_path), "the kill left no temporary: the test killed nothing mid-write"
    res = runner.invoke(app, command(world, out))  # the next run: nothing was published, so no --overwrite
    assert res.exit_code == 0, res.output
    assert out.exists()
    assert temporaries(tmp_path) == []


def test_a_training_run_killed_while_writing_a_checkpoint_resumes_without_leftovers(world: dict[str, Path],
                                                                                   tmp_path: Path) -> None:
    run = tmp_path / "r"
    shutil.copytree(world["run"], run, ignore=shutil.ignore_patterns(".lock*"))
    before = snapshot(run / "last.pt")
    _killed_before_rename("last.pt", ["train", "--resume", str(run), "--max-steps", "3"])
    assert any(".last.pt.tmp-" in t for t in temporaries(run))
    assert snapshot(run / "last.pt") == before  # the step-2 checkpoint, whole
    res = runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "3"])
    assert res.exit_code == 0, res.output
    assert json.loads((run / "result.json").read_text())["steps"] == 3
    assert temporaries(run) == []


# --------------------------------------------------------------------------- 2. full disk, read-only target


@pytest.fixture
def disk_full_at_sync(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fsync fails with ENOSPC (where a delayed-allocation file system reports a full disk),
    naming no file, as a real one does; HDF5's writes through features' file object fail the same way."""
    import polyglot_groc.contextual.features as features

    def fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    class FullFile(io.FileIO):
        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(features, "_hdf5_target", lambda tmp: FullFile(tmp, "r+"))  # type: ignore[arg-type]


def _refused_for_the_disk(res: Any, out: Path, reason: str = "disk is full") -> str:
    line = one_error_line(res)
    assert reason in line and str(out) in line, line
    assert ".tmp" not in line and "unknown path" not in line, line
    return line


@pytest.mark.parametrize("name", list(WRITERS))
def test_every_writer_on_a_full_disk_is_one_line_and_keeps_the_previous_output(
        world: dict[str, Path], tmp_path: Path, name: str, request: pytest.FixtureRequest) -> None:
    command, _, kind = WRITERS[name]
    out = _out(tmp_path, name)
    first = runner.invoke(app, command(world, out))
    assert first.exit_code == 0, first.output
    before = snapshot(out.parent)  # files written beside --out (freq-bins' JSON) included
    request.getfixturevalue("disk_full_at_sync")
    _refused_for_the_disk(runner.invoke(app, [*command(world, out), OVERWRITE.get(name, "--overwrite")]), out)
    assert snapshot(out.parent) == before
    assert temporaries(tmp_path) == []


@pytest.mark.parametrize("name", [name for name, (_, _, kind) in WRITERS.items() if kind == "dir"])
def test_every_folder_writer_into_a_new_out_on_a_full_disk_leaves_no_folder(
        world: dict[str, Path], tmp_path: Path, name: str, disk_full_at_sync: None) -> None:
    """(A file writer writes into a folder that exists: there is no folder of its own to leave.)"""
    command, _, _ = WRITERS[name]
    out = tmp_path / "new" / "deeper" / "out"
    _refused_for_the_disk(runner.invoke(app, command(world, out)), out)
    assert not (tmp_path / "new").exists()
    assert temporaries(tmp_path) == []


def test_a_resume_on_a_full_disk_changes_nothing(world: dict[str, Path], tmp_path: Path,
                                                disk_full_at_sync: None) -> None:
    run = tmp_path / "run"
    shutil.copytree(world["run"], run)
    before = snapshot(run)
    res = runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4"])
    assert res.exit_code == 2, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and res.stderr.strip().splitlines()[-1] == errors[0], res.stderr  # after the progress
    assert f"{run / 'config.toml'}" in errors[0] and "disk is full" in errors[0] and ".tmp" not in errors[0]
    assert snapshot(run) == before


@pytest.mark.parametrize("name", ["export", "align-many", "data prepare --input", "features"])
def test_a_read_only_target_names_the_users_path(world: dict[str, Path], tmp_path: Path, name: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """EACCES where the temporary is created (a read-only folder): the error names --out, not it."""
    import tempfile

    def refused(*args: Any, dir: Any = None, prefix: str = "", **kwargs: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", os.path.join(str(dir), f"{prefix}abc123"))

    command, _, _ = WRITERS[name]
    out = _out(tmp_path, name)
    monkeypatch.setattr(tempfile, "mkstemp", refused)
    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    _refused_for_the_disk(runner.invoke(app, command(world, out)), out, "permission denied")
    assert list(out.parent.iterdir()) == []


def test_a_refused_argument_leaves_no_new_out(world: dict[str, Path], tmp_path: Path) -> None:
    palito = tmp_path / "shared" / "text" / "palito"
    palito.mkdir(parents=True)
    (palito / "wiki_parallel.tl").write_text("Ang bahay ay malaki .\n" * 50, encoding="utf-8")
    for args in (["--langs", "tl", "--data", str(tmp_path / "shared")],
                 ["--lang", "en", "--input", str(world["text"])]):
        out = tmp_path / "new" / "c"
        line = one_error_line(runner.invoke(app, ["data", "prepare", *args, "--out", str(out), "--tokenize", "foo"]))
        assert "foo" in line
        assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("after", [4_000, 60_000])
def test_features_whose_hdf5_write_fails_midway_raise_the_oserror_and_leave_no_debris(
        world: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """HDF5 writes through a file object that keeps a failed write's OSError from HDF5: whether the
    disk fills at the start, among the datasets or while closing, the caller gets that OSError naming
    --out, and nothing is left for the garbage collector to complain about (h5py's own driver made
    "Exception ignored" tracebacks, then a segmentation fault)."""
    import gc

    import polyglot_groc.contextual.features as features

    class FillsUp(io.FileIO):
        written = 0

        def write(self, data: Any) -> int:
            FillsUp.written += memoryview(data).nbytes
            if FillsUp.written > after:
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)

    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    monkeypatch.setattr(features, "_hdf5_target", lambda tmp: FillsUp(tmp, "r+"))
    with pytest.raises(OSError) as caught:
        features.features(run=world["run"], input=world["text"], out=tmp_path / "f.hdf5", threads=1)
    gc.collect()
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "f.hdf5")
    assert unraisable == []
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- 3. resume on changed data


@pytest.fixture(scope="module")
def own_data_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(run, its own copy of the tiny corpus), trained 2 steps once; each test copies the run and
    puts the corpus back as it was."""
    from polyglot_groc.training.workflows import train

    root = tmp_path_factory.mktemp("own-data")
    data = root / "data"
    shutil.copytree(TINY, data)
    train(out=root / "run", langs="en", data=data, model="groc", overrides=SMALL_OVERRIDES, max_steps=2,
          threads=1)
    return root / "run", data


def _edit_in_place(text: str) -> str:
    return text.replace(" the ", " cat ", 1)  # same length: only the digest tells


@pytest.mark.parametrize("change, how, accept", [
    (_edit_in_place, "was edited in place", False),
    (lambda text: "".join(text.splitlines(keepends=True)[:3]), "shrank", True),  # the epoch position no longer fits
    (lambda text: text + text, "grew", False),
])
def test_resume_refuses_each_kind_of_data_change_before_writing_anything(
        own_data_run: tuple[Path, Path], tmp_path: Path, change: Callable[[str], str], how: str,
        accept: bool) -> None:
    from polyglot_groc.training.fingerprint import check_data

    run = tmp_path / "run"
    shutil.copytree(own_data_run[0], run, ignore=shutil.ignore_patterns(".lock*"))
    train_txt = own_data_run[1] / "en" / "train.txt"
    original = train_txt.read_bytes()
    try:
        train_txt.write_text(change(original.decode("utf-8")), encoding="utf-8")
        assert train_txt.read_bytes() != original
        before = snapshot(run)
        line = one_error_line(runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4"]))
        assert f"{train_txt} {how}" in line and "--accept-changed-data" in line, line
        assert snapshot(run) == before  # config.toml's max_steps included
        if not accept:
            return
        res = runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4", "--accept-changed-data"])
        assert res.exit_code == 0, res.output
        assert "going on with the new text" in res.stderr
        assert json.loads((run / "result.json").read_text())["steps"] == 4
        assert check_data(run) is False  # the new data is the run's now: the next resume takes it as it is
    finally:
        train_txt.write_bytes(original)


def test_a_run_without_a_fingerprint_resumes_and_says_it_could_not_check(world: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(world["run"], run, ignore=shutil.ignore_patterns(".lock*"))
    (run / "data-fingerprint.json").unlink()  # as a run of an older polyglot-groc
    res = runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "3"])
    assert res.exit_code == 0, res.output
    assert "cannot be checked" in res.stderr
    assert (run / "data-fingerprint.json").is_file() is False  # nothing invented for it


# --------------------------------------------------------------------------- 4. advice that destroys work


def test_a_finished_run_whose_last_pt_is_lost_is_never_told_to_overwrite(world: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(world["run"], run, ignore=shutil.ignore_patterns(".lock*"))
    (run / "last.pt").unlink()
    (run / "last.pt").mkdir()
    line = one_error_line(runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4"]))
    assert "--overwrite" not in line and "best.pt" in line and "is a directory" in line, line
    shutil.rmtree(run / "last.pt")
    line = one_error_line(runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4"]))
    assert "--overwrite" not in line and "copy best.pt to last.pt" in line, line
    # a new run into it names the safe way on and what --overwrite would delete
    shutil.copy(run / "best.pt", run / "last.pt")
    line = one_error_line(runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(run),
                                              *SETS]))
    assert f"train --resume {run}" in line and "delete its checkpoints" in line, line
    assert (run / "best.pt").is_file()


def _raised_messages(path: Path) -> list[tuple[int, str]]:
    """The message text of every ``raise SomeError("...")`` in a source file (f-string fields as {})."""
    import ast

    def text(node: ast.AST) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(text(v) if isinstance(v, ast.Constant) else "{}" for v in node.values)
        if isinstance(node, ast.BinOp):
            return text(node.left) + text(node.right)
        if isinstance(node, ast.Call) and node.args:  # existing_run_message(out) and the like
            return ""
        return ""

    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            out.append((node.lineno, text(node.exc.args[0])))
        if isinstance(node, ast.Return) and node.value is not None:  # message builders return their text
            out.append((node.lineno, text(node.value)))
    return out


def test_every_overwrite_suggestion_says_what_it_replaces() -> None:
    """An error's --overwrite advice says what it replaces or deletes (no fix that silently loses data);
    read from the library's source, so a new message is held to the rule too."""
    offenders = []
    for path in [*REPO.glob("groc_base/*.py"), *REPO.glob("langpairs/*.py"), *REPO.glob("lexicons/*.py"),
                 *REPO.glob("polyglot_groc/**/*.py"), *REPO.glob("eval/*.py")]:
        if "--overwrite" not in path.read_text(encoding="utf-8"):
            continue
        for lineno, message in _raised_messages(path):
            if "--overwrite" in message and not re.search(r"replace|delete|anew|holds only", message):
                offenders.append(f"{path.relative_to(REPO)}:{lineno}: {message[:120]}")
    assert offenders == [], offenders


# --------------------------------------------------------------------------- 5. races


def test_two_concurrent_lexicon_imports_into_one_new_folder_both_succeed(tmp_path: Path) -> None:
    wn_dir = tmp_path / "wn"
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    args = [sys.executable, "-m", "polyglot_groc", "lexicon", "import", str(MINI_LMF), "--wn-dir", str(wn_dir)]
    procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    assert [code for code, _, _ in results] == [0, 0], results
    outs = [json.loads(out) for _, out, _ in results]
    assert all(o["installed"] == ["test-en:1", "test-fr:1"] for o in outs)
    # one installed them, the other waited for it and found them there (or ran after it)
    assert sorted(len(o["already_installed"]) for o in outs) == [0, 2], outs
    from lexicons.wn_backend import installed_lexicons

    assert sorted(x["spec"] for x in installed_lexicons(wn_dir)) == ["test-en:1", "test-fr:1"]
    assert temporaries(wn_dir) == []


def test_a_broken_wn_lmf_file_leaves_the_wn_folder_as_it_was(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    text = MINI_LMF.read_text(encoding="utf-8")
    bad.write_text(text.replace('synset="test-en-2-n"', 'synset="test-en-999-n"', 1)
                   .replace('id="test-en"', 'id="test-xx"', 1), encoding="utf-8")
    fresh = tmp_path / "fresh"
    line = one_error_line(runner.invoke(app, ["lexicon", "import", str(bad), "--wn-dir", str(fresh)]))
    assert "test-en-999-n" in line and "Traceback" not in line, line
    assert not fresh.exists()
    wn_dir = tmp_path / "wn"
    assert runner.invoke(app, ["lexicon", "import", str(MINI_LMF), "--wn-dir", str(wn_dir)]).exit_code == 0
    before = snapshot(wn_dir)
    line = one_error_line(runner.invoke(app, ["lexicon", "import", str(bad), "--wn-dir", str(wn_dir)]))
    assert "missing" in line and str(wn_dir) in line, line
    assert snapshot(wn_dir) == before
    assert temporaries(wn_dir) == []


# --------------------------------------------------------------------------- 6. what should be refused


@pytest.mark.parametrize("toml, needle", [
    ('[languages.ceb]\nname = "Cebuano"\niso3 = "ceb"\nscript = "Latin"\n'
     '[languages.CEB]\nname = "Cebuano 2"\niso3 = "ceb"\nscript = "Latin"\n', "both define language 'ceb'"),
    ('[languages.ceb]\nname = "Cebuano"\niso3 = "ceb"\nscript = "Latn-typo"\n', "is not a Unicode script"),
    ('[languages.ceb]\nname = "Cebuano"\niso3 = "ceb"\nscript = "Common"\n', "is not a Unicode script"),
])
def test_a_languages_file_that_should_be_refused_is(tmp_path: Path, toml: str, needle: str) -> None:
    (tmp_path / "l.toml").write_text(toml, encoding="utf-8")
    (tmp_path / "in.txt").write_text("Maayong buntag kanimo .\n" * 30, encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["data", "prepare", "--lang", "ceb", "--input", str(tmp_path / "in.txt"),
                                              "--languages", str(tmp_path / "l.toml"), "--out", str(tmp_path / "c")]))
    assert needle in line, line
    assert not (tmp_path / "c").exists()


def test_an_omw_tab_file_of_unknown_offsets_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ili.tab").write_text("i1\t00001740-n\ni2\t00001930-n\n", encoding="utf-8")
    (tmp_path / "w.tab").write_text("# Test\tceb\turl\tCC-BY\n99999999-n\tceb:lemma\tiro\n"
                                    "99999998-n\tceb:lemma\tbalay\n", encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["lexicon", "import", str(tmp_path / "w.tab"), "--ili-map",
                                              str(tmp_path / "ili.tab"), "--wn-dir", str(tmp_path / "wn")]))
    assert "none of its 2 synset keys" in line and "empty" in line, line
    assert not (tmp_path / "wn").exists()


def test_a_wn_lmf_lexicon_without_synsets_is_refused(tmp_path: Path) -> None:
    text = MINI_LMF.read_text(encoding="utf-8")
    head, _, _ = text.partition("<LexicalEntry")
    empty = head + "</Lexicon>\n</LexicalResource>\n"
    (tmp_path / "empty.xml").write_text(empty, encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["lexicon", "import", str(tmp_path / "empty.xml"), "--wn-dir",
                                              str(tmp_path / "wn")]))
    assert "test-en:1 has no synsets" in line, line
    assert not (tmp_path / "wn").exists()


def test_align_many_refuses_languages_that_differ_only_by_case(world: dict[str, Path], tmp_path: Path) -> None:
    line = one_error_line(runner.invoke(app, ["align-many", "--vectors", f"en={world['a']}", "--vectors",
                                              f"EN={world['b']}", "--pivot", "en", "--train-dict",
                                              f"EN-en={world['dict']}", "--out", str(tmp_path / "o")]))
    assert "en and EN is given twice" in line, line
    assert not (tmp_path / "o").exists()


def test_similarity_with_too_few_pairs_found_says_how_many(world: dict[str, Path], tmp_path: Path) -> None:
    ds = tmp_path / "s.txt"
    ds.write_text("w1 w2 3.0\nw1 nope 2.0\nzz w3 1.0\n", encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["similarity", "--vectors", str(world["a"]), "--dataset", str(ds)]))
    assert "only 1 of its 3 pairs" in line and "at least 3" in line, line
    ds.write_text("w1 w2 3.0\nw1 w3 2.0\nw4 w5 1.0\nw6 w7 0.5\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(world["a"]), "--dataset", str(ds)])
    assert res.exit_code == 0, res.output


# --------------------------------------------------------------------------- 7. errors that are one line


def test_typer_usage_errors_are_one_line(world: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["align", "--src", str(world["a"]), "--tgt", str(world["b"]), "--train-dict", str(world["dict"])]
    line = one_error_line(runner.invoke(app, [*args, "--refine", "foo"]))
    assert "--refine" in line and "-h" in line
    line = one_error_line(runner.invoke(app, [*args, "--no-such-flag"]))
    assert "--no-such-flag" in line
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if str(p) == str(world["a"]) else real(p, mode, **k))
    line = one_error_line(runner.invoke(app, args))  # what an unreadable --src gets for a user who is not root
    assert "--src" in line and "not readable" in line and "permissions" in line, line


def test_an_over_long_token_names_the_file_and_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(TINY, data)
    with (data / "en" / "train.txt").open("a", encoding="utf-8") as fh:
        fh.write("x" * 5000 + "\n")
    n_lines = (data / "en" / "train.txt").read_text(encoding="utf-8").count("\n")
    line = one_error_line(runner.invoke(app, ["train", "--langs", "en", "--data", str(data), "--out",
                                              str(tmp_path / "r"), *SETS]))
    assert f"train.txt:{n_lines}" in line and "5,000 characters" in line and "1,000" in line, line
    assert "--tokenize" not in line
    assert not (tmp_path / "r").exists()
    line = one_error_line(runner.invoke(app, ["data", "prepare", "--lang", "en", "--input",
                                              str(data / "en" / "train.txt"), "--out", str(tmp_path / "c")]))
    assert f"train.txt:{n_lines}" in line and not (tmp_path / "c").exists()


def test_every_api_function_names_an_argument_of_the_wrong_type() -> None:
    """Each parameter of each public function, given an object of no type it takes: a typed error
    naming it, before the function does anything."""
    import polyglot_groc as pg
    from groc_base.errors import ArgumentTypeError, GrocError
    from polyglot_groc import api

    class Nothing:
        pass

    checked = 0
    for name in api.__all__:
        fn = getattr(pg, name)
        if not inspect.isfunction(fn):
            continue
        for param in inspect.signature(fn).parameters.values():
            annotation = str(param.annotation)
            if "Any" in annotation or "Hooks" in annotation or "Callable" in annotation:
                continue  # takes anything that quacks
            with pytest.raises(ArgumentTypeError) as caught:
                fn(**{param.name: Nothing()})
            assert isinstance(caught.value, GrocError) and isinstance(caught.value, TypeError)
            assert f"{param.name} must be" in str(caught.value) and "\n" not in str(caught.value)
            checked += 1
    assert checked > 100
    with pytest.raises(ArgumentTypeError, match="langs must be"):
        pg.train(langs=5, out="never", data=str(TINY))
    with pytest.raises(ArgumentTypeError, match="did you mean langs"):
        pg.train(lang="en", out="never")
    assert not Path("never").exists()
