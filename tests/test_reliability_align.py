"""Issue 26 for align / similarity / export: all-or-none outputs under SIGKILL, two concurrent
writers and a full disk; FIFOs refused at once; the umask honoured; killed writers' temporaries
swept; errors naming the user's path, never a hidden temporary one."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import write_vec
from polyglot_groc.analysis.alignment import align
from polyglot_groc.cli import app
from tests.conftest import one_error_line

runner = CliRunner()
ROOT = Path(__file__).parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture
def vectors(tmp_path: Path) -> dict[str, Path]:
    """A rotated pair of 200 x 8 vector files, a seed and a test dictionary."""
    rng = np.random.default_rng(0)
    n, d = 200, 8
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    write_vec(tmp_path / "s.vec", [f"w{i}" for i in range(n)], src)
    write_vec(tmp_path / "t.vec", [f"x{i}" for i in range(n)], (src @ q.T).astype(np.float32))
    (tmp_path / "train.txt").write_text("".join(f"w{i} x{i}\n" for i in range(80)), encoding="utf-8")
    (tmp_path / "test.txt").write_text("".join(f"w{i} x{i}\n" for i in range(150, 200)), encoding="utf-8")
    return {name: tmp_path / f for name, f in (("src", "s.vec"), ("tgt", "t.vec"), ("train", "train.txt"),
                                                ("test", "test.txt"))}


def _args(v: dict[str, Path], out: Path, *extra: str) -> list[str]:
    return ["align", "--src", str(v["src"]), "--tgt", str(v["tgt"]), "--train-dict", str(v["train"]),
            "--eval-dict", str(v["test"]), "--out", str(out), *extra]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _align_in_subprocess(v: dict[str, Path], out: Path, prelude: str, refine: int = 0) -> subprocess.CompletedProcess:
    code = textwrap.dedent(prelude) + textwrap.dedent(f"""
        from polyglot_groc.analysis.alignment import align
        align(src={str(v['src'])!r}, tgt={str(v['tgt'])!r}, train_dict={str(v['train'])!r},
              eval_dict={str(v['test'])!r}, refine={refine}, out={str(out)!r}, overwrite=True)
    """)
    return subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=300)


def test_sigkill_while_writing_keeps_previous_result_and_next_run_sweeps(vectors: dict[str, Path],
                                                                         tmp_path: Path) -> None:
    out = tmp_path / "out"
    align(src=vectors["src"], tgt=vectors["tgt"], train_dict=vectors["train"], eval_dict=vectors["test"],
          refine=1, out=out)
    before = _snapshot(out)
    # Killed after W.npy, best_mapping.pth and src.aligned.vec are written, before result.json.
    proc = _align_in_subprocess(vectors, out, """
        import os, signal
        import eval.vectors as ev
        real = ev.write_vec
        def write_then_die(path, *args, **kwargs):
            real(path, *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        ev.write_vec = write_then_die
    """)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert _snapshot(out) == before  # the previous result, whole and unmixed
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".out.tmp-")
    res = runner.invoke(app, _args(vectors, out, "--refine", "0", "--overwrite"))
    assert res.exit_code == 0, res.output
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # swept
    assert json.loads((out / "result.json").read_text())["history"][-1]["iteration"] == 0


def test_sigkill_into_a_new_out_leaves_no_out(vectors: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "new"
    proc = _align_in_subprocess(vectors, out, """
        import os, signal
        import numpy as np
        real = np.save
        def save_then_die(*args, **kwargs):
            real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        np.save = save_then_die
    """)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not out.exists()  # never W.npy without result.json


def test_two_concurrent_runs_one_wins_whole_the_other_is_refused(vectors: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    base = [sys.executable, "-m", "polyglot_groc"]
    procs = [subprocess.Popen([*base, *_args(vectors, out, "--refine", str(refine))], env=ENV,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for refine in (0, 2)]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    loser = next(err for code, _, err in results if code == 2)
    lines = [line for line in loser.splitlines() if line.strip()]
    assert len(lines) == 1 and "--overwrite" in lines[0] and str(out) in lines[0], loser
    # Every file comes from the one winner: W.npy is the W its result.json describes.
    published = json.loads((out / "result.json").read_text())
    refine = len(published["history"]) - 1
    again = align(src=vectors["src"], tgt=vectors["tgt"], train_dict=vectors["train"], refine=refine)
    np.testing.assert_array_equal(np.load(out / "W.npy"), again.W)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []


class _DiskFull:
    """A writer that puts some bytes down, then fails as a full disk does (errno 28, no file name)."""

    def __init__(self, real_atomic_write: object) -> None:
        self.real = real_atomic_write

    def __call__(self, path: Path, write: object, mode: int | None = None) -> None:
        def failing(fh: object) -> None:
            fh.write(b"5 3\npartial")  # type: ignore[attr-defined]
            raise OSError(errno.ENOSPC, "No space left on device")

        self.real(path, failing, mode)  # type: ignore[operator]


def test_full_disk_keeps_previous_result_and_names_the_users_path(vectors: dict[str, Path], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import eval.vectors as ev

    out = tmp_path / "out"
    assert runner.invoke(app, _args(vectors, out, "--refine", "0")).exit_code == 0
    before = _snapshot(out)
    monkeypatch.setattr(ev, "atomic_write", _DiskFull(ev.atomic_write))
    line = one_error_line(runner.invoke(app, _args(vectors, out, "--refine", "1", "--overwrite")))
    assert f"{out / 'src.aligned.vec'}: No space left on device" in line and "disk is full" in line, line
    assert ".tmp" not in line
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    # a lone .vec (export's output) on a full disk: the error names it, nothing is left beside it
    with pytest.raises(OSError) as caught:
        write_vec(tmp_path / "e.vec", ["a"], np.ones((1, 2), np.float32))
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(tmp_path / "e.vec")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_existing_out_refused_without_overwrite(vectors: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    line = one_error_line(runner.invoke(app, _args(vectors, out)))
    assert "--overwrite" in line and str(out) in line
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO with no writer; a watchdog opens its write end after 20 s so a reader that blocked
    on it fails the test instead of hanging it."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    stop = threading.Event()

    def watchdog() -> None:
        if not stop.wait(20):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass

    thread = threading.Thread(target=watchdog, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join()


def test_fifo_inputs_refused_at_once(vectors: dict[str, Path], tmp_path: Path, fifo: Path) -> None:
    started = time.monotonic()
    for flag in ("--src", "--tgt", "--train-dict", "--eval-dict"):
        args = _args(vectors, tmp_path / "out", "--eval-words", str(vectors["test"]))
        args[args.index(flag) + 1] = str(fifo)
        line = one_error_line(runner.invoke(app, args))
        assert f"{flag} {fifo} is not a regular file" in line, line
    line = one_error_line(runner.invoke(app, _args(vectors, tmp_path / "out", "--eval-words", str(fifo))))
    assert "--eval-words" in line
    line = one_error_line(runner.invoke(app, ["similarity", "--vectors", str(vectors["src"]),
                                              "--dataset", str(fifo)]))
    assert f"--dataset {fifo} is not a regular file" in line
    line = one_error_line(runner.invoke(app, ["similarity", "--vectors", str(fifo), "--dataset",
                                              str(vectors["test"])]))
    assert "--vectors" in line
    line = one_error_line(runner.invoke(app, ["export", str(tmp_path / "no-run"), "--lang", "en", "--words",
                                              str(fifo), "--out", str(tmp_path / "w.vec")]))
    assert f"--words {fifo} is not a regular file" in line
    assert time.monotonic() - started < 15  # refused at once, not after the watchdog
    assert not (tmp_path / "out").exists() and not (tmp_path / "w.vec").exists()


@pytest.mark.parametrize("umask", [0o077, 0o002])
def test_outputs_follow_the_umask(vectors: dict[str, Path], tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        out = tmp_path / "out"
        align(src=vectors["src"], tgt=vectors["tgt"], train_dict=vectors["train"], refine=0, out=out,
              export_mapped=True)
        write_vec(tmp_path / "e.vec", ["a", "b"], np.eye(2, dtype=np.float32))
    finally:
        os.umask(old)
    assert (out.stat().st_mode & 0o777) == 0o777 & ~umask
    for path in [*out.iterdir(), tmp_path / "e.vec"]:
        assert (path.stat().st_mode & 0o777) == 0o666 & ~umask, path


def test_killed_vec_writer_leftovers_are_swept(tmp_path: Path) -> None:
    target = tmp_path / "e.vec"
    # A real kill: the writer dies after its temporary is complete, before the rename.
    code = textwrap.dedent(f"""
        import os, signal
        import numpy as np
        import groc_base.fileio as fio
        from eval.vectors import write_vec
        fio.os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)
        write_vec({str(target)!r}, ["a", "b"], np.eye(2, dtype=np.float32))
    """)
    proc = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".e.vec.tmp-")]
    assert len(left) == 1 and not target.exists()
    # an old-style temporary (no pid) more than an hour old is swept too, a fresh one is kept
    old_style, fresh = tmp_path / ".e.vec.abc123.tmp", tmp_path / ".e.vec.def456.tmp"
    old_style.write_text("x")
    fresh.write_text("x")
    os.utime(old_style, (time.time() - 7200, time.time() - 7200))
    write_vec(target, ["a", "b"], np.eye(2, dtype=np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == [".e.vec.def456.tmp", "e.vec"]
