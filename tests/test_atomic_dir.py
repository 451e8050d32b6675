"""groc_base's all-or-none directory outputs and input-file checks (used by every command writing a folder)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from groc_base.checks import check_input_file
from groc_base.errors import InputError
from groc_base.fileio import atomic_output_dir, sweep_stale_temporaries


def _write(folder: Path, tag: str) -> None:
    (folder / "W.npy").write_text(tag)
    (folder / "result.json").write_text(tag)


def test_success_publishes_whole_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic_output_dir(out, overwrite=False) as tmp:
        _write(tmp, "a")
        assert not out.exists()
    assert {p.name for p in out.iterdir()} == {"W.npy", "result.json"}
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_error_keeps_previous_result(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic_output_dir(out, overwrite=False) as tmp:
        _write(tmp, "old")
    with pytest.raises(OSError), atomic_output_dir(out, overwrite=True) as tmp:
        (tmp / "W.npy").write_text("new")
        raise OSError(errno.ENOSPC, "No space left on device")
    assert (out / "W.npy").read_text() == "old" and (out / "result.json").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_overwrite_replaces_whole_and_refusal_without(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic_output_dir(out, overwrite=False) as tmp:
        _write(tmp, "old")
        (tmp / "extra.vec").write_text("old")
    with pytest.raises(InputError, match="overwrite=True"), atomic_output_dir(out, overwrite=False):
        pass
    with atomic_output_dir(out, overwrite=True) as tmp:
        _write(tmp, "new")
    assert sorted(p.name for p in out.iterdir()) == ["W.npy", "result.json"]  # no stale extra.vec
    assert (out / "W.npy").read_text() == "new"


def test_second_concurrent_writer_refused_not_mixed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(InputError, match="another process"), atomic_output_dir(out, overwrite=False) as slow:
        _write(slow, "slow")
        with atomic_output_dir(out, overwrite=False) as fast:  # starts later, publishes first
            _write(fast, "fast")
    assert (out / "W.npy").read_text() == "fast" and (out / "result.json").read_text() == "fast"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_sigkill_leaves_old_result_and_next_run_sweeps(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with atomic_output_dir(out, overwrite=False) as tmp:
        _write(tmp, "old")
    code = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from groc_base.fileio import atomic_output_dir
        with atomic_output_dir(Path({str(out)!r}), overwrite=True) as tmp:
            (tmp / "W.npy").write_text("half")
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    proc = subprocess.run([sys.executable, "-c", code], env=env)
    assert proc.returncode == -9
    leftovers = [p for p in tmp_path.iterdir() if p.name != "out"]
    assert len(leftovers) == 1 and leftovers[0].name.startswith(".out.tmp-")
    assert (out / "W.npy").read_text() == "old"
    assert sweep_stale_temporaries(out) == leftovers
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_kill_between_renames_restores_old(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old = tmp_path / f".out.old-{2**22 + 12345}-zz"  # a pid that is not running
    (old / "result").mkdir(parents=True)
    _write(old / "result", "old")
    sweep_stale_temporaries(out)
    assert (out / "W.npy").read_text() == "old" and not old.exists()


def test_check_input_file_refuses_fifo_dir_missing(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        check_input_file(fifo, flag="--src")
    with pytest.raises(InputError, match="is a directory"):
        check_input_file(tmp_path, flag="--src")
    with pytest.raises(InputError, match="no such"):
        check_input_file(tmp_path / "nope", flag="--src")
    good = tmp_path / "a.vec"
    good.write_text("x")
    assert check_input_file(good, flag="--src") == good
