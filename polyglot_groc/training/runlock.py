"""One writer per run directory: an OS file lock (``filelock``) plus a note naming the holder.

The lock is an fcntl/msvcrt lock on ``<run>/.lock``, so the kernel releases it when the holding
process dies, however it dies: a stale lock file left by ``kill -9`` is simply taken over (and
logged, from the owner note of the dead process). A live holder makes the second writer fail with
an ``InputError`` naming it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType

from filelock import FileLock, Timeout

from groc_base.errors import InputError
from groc_base.fileio import pid_alive

log = logging.getLogger(__name__)

LOCK_NAME = ".lock"
OWNER_NAME = ".lock.owner"


class RunLockedError(InputError):
    """Another live process is writing this run directory."""


def _describe(owner: dict[str, object]) -> str:
    return f"pid {owner.get('pid')} on {owner.get('host')} ({owner.get('command')}, since {owner.get('since')})"


def describe_owner(owner: dict[str, object]) -> str:
    """``pid 123 on host (train, since ...)``: who holds a run directory."""
    return _describe(owner) if owner else "another process (its owner note is missing)"


def lock_holder(run_dir: Path) -> dict[str, object] | None:
    """The owner note of the live process holding ``run_dir`` (``{}`` if it has none), or None when the
    directory is free. Creates nothing: a directory without a lock file is free."""
    path = Path(run_dir) / LOCK_NAME
    if not path.is_file():
        return None
    probe = RunLock(Path(run_dir), "probe")
    try:
        probe._lock.acquire()
    except Timeout:
        return probe._owner()
    probe._lock.release()
    return None


class RunLock:
    """``with RunLock(run_dir, "train"):`` holds the directory for this process."""

    def __init__(self, run_dir: Path, command: str) -> None:
        self.run_dir = Path(run_dir)
        self.command = command
        self._lock = FileLock(str(self.run_dir / LOCK_NAME), timeout=0, is_singleton=False)

    def _owner(self) -> dict[str, object]:
        try:
            data = json.loads((self.run_dir / OWNER_NAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def acquire(self) -> RunLock:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except Timeout:
            what = describe_owner(self._owner())
            if self.command == "resume":
                raise RunLockedError(f"run {self.run_dir} is being trained by {what}; wait for it to finish, "
                                     "or stop it (Ctrl-C, or kill the pid) and resume then") from None
            raise RunLockedError(f"run directory {self.run_dir} is in use by {what}; "
                                 "wait for it to finish or choose another --out") from None
        previous = self._owner()
        if previous and previous.get("host") == socket.gethostname() and isinstance(previous.get("pid"), int) \
                and not pid_alive(int(previous["pid"])):  # type: ignore[call-overload]
            log.warning("taking over the stale lock of %s, which is no longer running", _describe(previous))
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "command": self.command,
                 "argv": sys.argv[:8], "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            (self.run_dir / OWNER_NAME).write_text(json.dumps(owner) + "\n", encoding="utf-8")
        except BaseException as exc:  # a full disk: give the lock back, leave no half-written note
            (self.run_dir / OWNER_NAME).unlink(missing_ok=True)
            self._lock.release()
            if isinstance(exc, OSError) and exc.filename is None:  # a failed write names no file
                raise OSError(exc.errno, exc.strerror, str(self.run_dir / OWNER_NAME)) from exc
            raise
        return self

    def release(self) -> None:
        if not self._lock.is_locked:
            return
        # The owner note goes while we still hold the lock. The lock file itself stays: unlinking it
        # would let a process that opened the old inode and one that creates a new file both "hold" it.
        (self.run_dir / OWNER_NAME).unlink(missing_ok=True)
        self._lock.release()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


@contextlib.contextmanager
def locked_run_dir(out: Path, command: str, clean: Sequence[str] = ()) -> Iterator[None]:
    """Hold the run lock on ``out`` while ``command`` writes it (train, resume, finetune).

    An error before the first checkpoint (``last.pt``) leaves no trace: a directory this command
    created is removed; in one that existed, only the files named in ``clean`` are removed.
    """
    out = Path(out)
    created = not out.exists()
    lock = RunLock(out, command)
    try:
        lock.acquire()
    except BaseException:  # a full disk or a refused lock: a folder made for the lock goes again
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    try:
        yield
    except BaseException:
        if out.is_dir() and not (out / "last.pt").exists():
            if created:
                shutil.rmtree(out, ignore_errors=True)
            else:
                for name in clean:
                    (out / name).unlink(missing_ok=True)
        raise
    finally:
        lock.release()
