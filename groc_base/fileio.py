"""File I/O shared by every package: atomic writes, (optionally gzipped) reads and JSON output.

It lives in ``groc_base``, under every other package, so there is one implementation.
"""

from __future__ import annotations

import errno
import gzip
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from groc_base.errors import GrocError, InputError


def write_then_rename(directory: Path, prefix: str, fill: Callable[[Path], Path], mode: int | None = None) -> Path:
    """Create a temp file in ``directory``, let ``fill(tmp)`` write it, then rename it into place.

    ``fill`` writes the file *by path* (SQLite cannot write to a file object) and returns the
    final path, so a name can depend on the content (e.g. its checksum). The file is fsynced
    before the rename, so readers see the old file or the new one, never half of one; on any
    error the temp file is removed. ``mode`` sets permissions; by default the file gets what
    ``open()`` would give it (0666 minus the umask), since mkstemp creates 0600 files.
    """
    directory.mkdir(parents=True, exist_ok=True)
    # The pid in the name lets sweep_stale_temporaries remove a killed writer's file at once.
    fd, name = tempfile.mkstemp(prefix=f".{prefix}.tmp-{os.getpid()}-", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(name)
    try:
        final = fill(tmp)
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_umask())
        os.replace(tmp, final)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        # A write() that fails (full disk) names no file, an open() names the hidden temp file: the
        # message should name the user's output instead.
        renamed = _renamed(exc, {tmp: directory / prefix})
        if renamed is exc:
            raise
        raise renamed from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


def _renamed(exc: OSError, names: dict[Path, Path]) -> OSError:
    """``exc`` naming the user's path instead of a temporary one (a path under a key becomes the same
    path under its value; no path at all becomes the first value)."""
    if exc.errno is None:
        return exc
    given = exc.filename
    target: Path | None = None
    if given is None:
        target = next(iter(names.values()))
    else:
        for tmp, user in names.items():
            try:
                rel = Path(os.fsdecode(given)).relative_to(tmp)
            except ValueError:
                continue
            target = user / rel if rel.parts else user
            break
    if target is None:
        return exc
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(target))


def atomic_write(path: Path, write: Callable[[IO[bytes]], object], mode: int | None = None) -> None:
    """Call ``write(fileobj)`` on a temp file beside ``path``, then rename it into place (see
    :func:`write_then_rename`)."""
    path = Path(path)

    def fill(tmp: Path) -> Path:
        with tmp.open("wb") as fh:
            write(fh)
        return path

    if path.parent.is_dir():
        sweep_stale_temporaries(path)  # what killed writers of this file left beside it
    write_then_rename(path.parent, path.name, fill, mode)


def json_safe(obj: object) -> object:
    """``obj`` with every NaN/Infinity replaced by None: JSON has no such numbers."""
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def dumps_json(obj: object, **kwargs: object) -> str:
    """``json.dumps`` that never writes NaN or Infinity (they become null)."""
    import json

    return json.dumps(json_safe(obj), allow_nan=False, **kwargs)  # type: ignore[arg-type]


def _umask() -> int:
    """The process umask (reading it means setting it; it is put straight back)."""
    current = os.umask(0o022)
    os.umask(current)
    return current


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda fh: fh.write(data))


def read_bytes(path: Path, what: str, error: type[GrocError]) -> bytes:
    """The bytes of ``path`` (gunzipped for ``.gz``); a missing or unreadable file raises ``error``."""
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rb") as fh:
                return fh.read()
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise error(f"{what} {path} does not exist; check the path") from exc
    except (OSError, EOFError) as exc:
        raise error(f"cannot read {what} {path} ({exc}); check the file and its permissions") from exc


def unique_labels(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """One distinct, short label per path, in order: to key results or legends by input file.

    A label is the path's name, with as many parent folders as it takes to tell it from the
    other paths ("a/EN_RG-65.txt", "b/EN_RG-65.txt"), so two inputs with the same base name never
    share a key and one is never silently lost. The same file given again is labelled
    "name#2", "name#3", ... Paths are compared absolute (``..`` resolved, symlinks not).
    """
    parts = [Path(os.path.abspath(p)).parts for p in paths]

    def tail(i: int, k: int) -> str:
        return "/".join(parts[i][-k:]) if len(parts[i]) > 1 else parts[i][0]

    labels: list[str] = []
    for i, mine in enumerate(parts):
        k = 1
        while k < len(mine) - 1 and any(tail(j, k) == tail(i, k) for j in range(len(parts))
                                        if j != i and parts[j] != mine):
            k += 1
        labels.append(tail(i, k))
    # The same path more than once: number the repeats (the first keeps the bare label).
    seen: dict[str, int] = {}
    out: list[str] = []
    for label, mine in zip(labels, parts, strict=True):
        key = "/".join(mine)
        seen[key] = seen.get(key, 0) + 1
        out.append(label if seen[key] == 1 else f"{label}#{seen[key]}")
    return out


def named_for_user(exc: OSError, tmp: Path, final: Path) -> OSError:
    """``exc`` with a path inside the temporary ``tmp`` renamed to the same place under ``final``
    (no path at all becomes ``final``); ``exc`` itself when it names something else.

    Outputs are built under hidden temporary names and renamed into place; an error met while
    writing them (a full disk) should name the output the user asked for, not the temporary.
    """
    return _renamed(exc, {tmp: final})


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (then ``root``), so a rename publishes written bytes."""
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as fh:
                os.fsync(fh.fileno())
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sweep_stale_temporaries(out: Path) -> list[Path]:
    """Remove what killed writers of ``out`` left beside it; return the paths removed.

    A writer's temporaries are named ``.<name>.tmp-<pid>-*`` (directories from
    :func:`atomic_output_dir`, files from :func:`write_then_rename`): those of a dead pid are
    removed. Files ``.<name>.*.tmp`` of older versions carry no pid: they are removed only when
    older than an hour, so a live writer's file is never taken. A temporary whose pid is alive
    belongs to a running writer and is kept.
    A ``.<name>.old-<pid>-*`` left by a kill between the two renames of a replacement is put back
    in place when ``out`` is missing, else removed.
    """
    import time

    out = Path(out)
    parent, name = out.parent, out.name
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        ename = entry.name
        if ename.startswith(f".{name}.tmp-") or ename.startswith(f".{name}.old-"):
            try:
                pid = int(ename.split("-")[-2])
            except (ValueError, IndexError):
                continue
            if _pid_alive(pid):  # a running writer (this process included) owns it
                continue
            if ename.startswith(f".{name}.old-") and not out.exists():
                if (entry / "result").is_dir():  # the kill came between the renames: the old result is whole
                    os.rename(entry / "result", out)
                shutil.rmtree(entry, ignore_errors=True)
                continue
            shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
            removed.append(entry)
        elif ename.startswith(f".{name}.") and ename.endswith(".tmp") and entry.is_file():
            if time.time() - entry.stat().st_mtime > 3600:
                entry.unlink(missing_ok=True)
                removed.append(entry)
    return removed


@contextmanager
def atomic_output_dir(out: Path, *, overwrite: bool, flag: str = "--out") -> Iterator[Path]:
    """Build the directory output ``out`` all-or-none: yield a temp folder beside it, publish by rename.

    Readers (and a later run) see the previous ``out`` or the new one whole, never a mix:
    - the caller writes every file into the yielded folder ``.<name>.tmp-<pid>-XXXX``;
    - on success its files are fsynced and the folder is renamed to ``out``; an existing ``out``
      (only with ``overwrite``) is first moved aside and removed after the swap;
    - on any error, a kill signal turned into an exception, or a full disk, the temp folder is
      removed and the previous ``out`` is untouched;
    - two concurrent writers cannot mix files: each builds its own folder, and without
      ``overwrite`` the second to finish finds ``out`` taken and fails with a one-line error.
    A SIGKILL leaves only the temp folder, which the next writer of ``out`` sweeps
    (:func:`sweep_stale_temporaries`).

    Raises:
        InputError: ``out`` exists and is not empty without ``overwrite``, is a file, or was
            published by another process while this one ran.
    """
    from groc_base.checks import check_output

    out = Path(out)
    check_output(out, overwrite, directory=True, flag=flag)
    out.parent.mkdir(parents=True, exist_ok=True)
    sweep_stale_temporaries(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-{os.getpid()}-", dir=out.parent))
    os.chmod(tmp, 0o777 & ~_umask())
    try:
        yield tmp
        _fsync_tree(tmp)
        _publish(tmp, out, overwrite=overwrite, flag=flag)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        # Name the user's --out (and the file in it), never the hidden temp folder.
        renamed = _renamed(exc, {tmp: out})
        if renamed is exc:
            raise
        raise renamed from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _publish(tmp: Path, out: Path, *, overwrite: bool, flag: str) -> None:
    """Rename ``tmp`` to ``out``; with ``overwrite``, an existing non-empty ``out`` is swapped out first."""
    try:
        os.rename(tmp, out)  # succeeds when out is missing or an empty folder
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        if not overwrite:
            from groc_base.checks import option

            raise InputError(f"{option(flag)} {out} was written by another process while this one ran; "
                             f"pass {option('overwrite', True)} to replace it or choose another "
                             f"{option(flag)}") from exc
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-{os.getpid()}-", dir=out.parent))
    os.rename(out, old / "result")
    os.rename(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
