"""File I/O shared by every package: atomic writes and JSON output (reading text: :mod:`groc_base.textio`).

It lives in ``groc_base``, under every other package, so there is one implementation.

Temporaries: every writer builds its output under a hidden temporary name beside it and renames
it into place. The name carries the writer, ``.<name>.tmp-<pid>@<host>-<random>`` (files end in
``.tmp``), so the next writer of that place (or of that folder, :func:`sweep_folder`) removes what a
killed writer left: a temporary whose process is gone on this machine, or one from another machine
untouched for a day (a pid means nothing there). A running writer's temporaries are never taken.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING

from groc_base.errors import InputError
from groc_base.textio import read_bytes  # noqa: F401 - the one reader, where callers used to find it

if TYPE_CHECKING:
    from _hashlib import HASH

#: Temporaries of writers on another machine (shared file system) are removed after this long unchanged.
FOREIGN_TEMP_MAX_AGE_S = 24 * 3600
#: Temporaries of older versions carry no writer: removed after this long unchanged.
LEGACY_TEMP_MAX_AGE_S = 3600

# ".<name>.tmp-<pid>[@<host>][-<random>][.tmp]" (mkstemp's random part has no "-").
_TAG_RE = re.compile(r"\.(tmp|old)-(\d+)(?:@([0-9a-f]{8}))?(?:-[a-z0-9_]*)?(?:\.tmp)?$")


def _host_tag() -> str:
    """Eight hex digits naming this machine in temporary names (a pid is only meaningful on its host)."""
    return hashlib.sha1(socket.gethostname().encode("utf-8", "surrogateescape")).hexdigest()[:8]


def temp_prefix(name: str, kind: str = "tmp") -> str:
    """The start of this process's temporary names for the output ``name``: ``.<name>.tmp-<pid>@<host>-``."""
    return f".{name}.{kind}-{os.getpid()}@{_host_tag()}-"


def _writer_gone(entry: Path, match: re.Match[str]) -> bool:
    """Whether the writer that named the temporary ``entry`` (parsed by ``_TAG_RE``) is gone."""
    pid, host = int(match.group(2)), match.group(3)
    if host is not None and host != _host_tag():
        try:
            return time.time() - entry.lstat().st_mtime > FOREIGN_TEMP_MAX_AGE_S
        except OSError:
            return False
    return not pid_alive(pid)


def write_then_rename(directory: Path, prefix: str, fill: Callable[[Path], Path], mode: int | None = None) -> Path:
    """Create a temp file in ``directory``, let ``fill(tmp)`` write it, then rename it into place.

    ``fill`` writes the file *by path* (SQLite cannot write to a file object) and returns the
    final path, so a name can depend on the content (e.g. its checksum). The file is fsynced
    before the rename, so readers see the old file or the new one, never half of one; on any
    error the temp file is removed, and so are the folders this call created. ``mode`` sets
    permissions; by default the file gets what ``open()`` would give it (0666 minus the umask),
    since mkstemp creates 0600 files. Killed writers' temporaries of ``prefix`` are swept first.
    An OSError names ``directory / prefix`` (or the file ``fill`` returns), never the temporary.
    """
    directory = Path(directory)
    user = directory / prefix
    with removing_new_dirs(directory):
        directory.mkdir(parents=True, exist_ok=True)
        sweep_stale_temporaries(user)
        try:
            fd, name = tempfile.mkstemp(prefix=temp_prefix(prefix), suffix=".tmp", dir=directory)
        except OSError as exc:  # a read-only or full folder: name the user's file, not the temporary
            raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno or 0), str(user)) from exc
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
            renamed = _renamed(exc, {tmp: user})
            if renamed is exc:
                raise
            raise renamed from exc
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    return final


@contextmanager
def removing_new_dirs(path: Path, litter: Sequence[str] = ()) -> Iterator[None]:
    """Run the block; if it fails, remove ``path`` and the parents of it that it created, if still empty.

    Writers create their output folder (``--out a/b``) before they know whether they will succeed;
    a refused argument, a full disk or a kill turned into an exception must not leave an empty
    folder behind that the user never had. ``litter``: names of files the block may leave in
    ``path`` (a lock file) that do not make it non-empty.
    """
    path = Path(os.path.abspath(path))
    missing: list[Path] = []  # deepest first
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    try:
        yield
    except BaseException:
        if missing and missing[0] == path and litter:
            try:
                if set(os.listdir(path)) <= set(litter):
                    for name in litter:
                        (path / name).unlink(missing_ok=True)
            except OSError:
                pass
        for folder in missing:
            try:
                folder.rmdir()  # only an empty folder goes
            except FileNotFoundError:
                continue
            except OSError:
                break
        raise


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


def nonfinite_as_text(obj: object) -> object:
    """``obj`` with every NaN/Infinity float as the string ``"nan"``, ``"inf"`` or ``"-inf"``.

    The policy of the result files (:func:`write_json`: the benchmarks' results, the GPU campaign's
    stage files and ledger): the JSON stays strict (it has no such numbers) and nothing is lost, since
    a diverged run's ``inf`` stays apart from a ``nan`` and from a figure that is missing (null).
    The library's own formats (a run's result.json, metrics.jsonl) keep :func:`json_safe`'s null,
    which their readers take as "no figure".
    """
    import math

    if isinstance(obj, float):
        return obj if math.isfinite(obj) else str(obj)
    if isinstance(obj, dict):
        return {k: nonfinite_as_text(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [nonfinite_as_text(v) for v in obj]
    return obj


def json_text(obj: object) -> str:
    """``obj`` as the text :func:`write_json` writes (without its final newline): strict JSON,
    indented by 2, non-ASCII as written, non-finite floats as :func:`nonfinite_as_text` says."""
    import json

    return json.dumps(nonfinite_as_text(obj), indent=2, ensure_ascii=False, allow_nan=False)


def write_json(path: Path, obj: object) -> None:
    """``obj`` as :func:`json_text` plus a newline at ``path``, atomically (:func:`write_then_rename`:
    a temporary named for this writer, fsynced, renamed into place; its folder is made if missing),
    so a reader, a concurrent writer or a kill sees the old file or the new one, never half of one."""
    atomic_write_bytes(Path(path), (json_text(obj) + "\n").encode("utf-8"))


def file_digest(path: Path, into: HASH | None = None) -> HASH:
    """The sha256 of ``path``'s bytes, read in chunks (``hashlib.file_digest``), as a hash object;
    ``into``: a hash to extend instead (one digest over several files, or over a prefix and a file)."""
    with Path(path).open("rb") as fh:
        if into is None:
            return hashlib.file_digest(fh, "sha256")
        extended = into
        return hashlib.file_digest(fh, lambda: extended)


def _umask() -> int:
    """The process umask (reading it means setting it; it is put straight back)."""
    current = os.umask(0o022)
    os.umask(current)
    return current


def atomic_write_bytes(path: Path, data: bytes) -> None:
    atomic_write(path, lambda fh: fh.write(data))


def atomic_write_all(contents: Mapping[Path, bytes]) -> None:
    """Write several files that belong together (a figure and its JSON) all or none.

    Each is written to its temporary and synced first; only when every one is complete are they
    renamed into place, so a full disk or an error leaves every previous file as it was (a kill
    between the renames leaves whole files, some new, some old). OSErrors name the user's paths.
    """
    done: list[tuple[Path, Path]] = []
    try:
        for path, data in contents.items():
            path = Path(path)
            sweep_stale_temporaries(path)
            try:
                fd, name = tempfile.mkstemp(prefix=temp_prefix(path.name), suffix=".tmp", dir=path.parent)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno or 0), str(path)) from exc
            tmp = Path(name)
            done.append((tmp, path))
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.chmod(tmp, 0o666 & ~_umask())
            except OSError as exc:
                renamed = _renamed(exc, {tmp: path})
                if renamed is exc:
                    raise
                raise renamed from exc
        for tmp, path in done:
            os.replace(tmp, path)
    finally:
        for tmp, _ in done:
            tmp.unlink(missing_ok=True)


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


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is alive (one owned by another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True


def _fsync_tree(root: Path) -> None:
    """fsync every file and folder under ``root`` (then ``root``), so a rename publishes written bytes.

    An error (a full disk) names the file it met, so the caller can name the user's path for it.
    """
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as fh:
                    os.fsync(fh.fileno())
            except OSError as exc:
                if exc.filename is not None:
                    raise
                raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno or 0), path) from exc
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _remove(entry: Path) -> None:
    if entry.is_dir() and not entry.is_symlink():
        shutil.rmtree(entry, ignore_errors=True)
    else:
        entry.unlink(missing_ok=True)


def _sweep_entry(entry: Path, out: Path | None) -> bool:
    """Remove the temporary ``entry`` if its writer is gone; ``out``: the output it was made for
    (a ``.old-`` folder left between the two renames of a replacement is put back when ``out`` is
    missing). True when it was removed."""
    match = _TAG_RE.search(entry.name)
    if match is None or not _writer_gone(entry, match):
        return False
    if match.group(1) == "old" and out is not None and not os.path.lexists(out):
        # The kill came between the two renames of a replacement: the old result is whole.
        kept = entry / "result" if (entry / "result").is_dir() else entry
        if kept.is_dir():
            os.rename(kept, out)
        if kept is entry:
            return True
    _remove(entry)
    return True


def sweep_stale_temporaries(out: Path) -> list[Path]:
    """Remove what killed writers of ``out`` left beside it; return the paths removed.

    A writer's temporaries are named ``.<name>.tmp-<pid>@<host>-*`` (directories from
    :func:`make_temp_dir` and :func:`atomic_output_dir`, files from :func:`write_then_rename`):
    those whose writer is gone are removed (see the module docstring); a running writer's are kept.
    Temporaries of older versions, ``.<name>.*.tmp`` files or folders without a writer, are removed
    when untouched for an hour. A ``.<name>.old-*`` left by a kill between the two renames of a
    replacement is put back in place when ``out`` is missing, else removed.
    """
    out = Path(out)
    parent, name = out.parent, out.name
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for entry in parent.iterdir():
        ename = entry.name
        if ename.startswith(f".{name}.tmp-") or ename.startswith(f".{name}.old-"):
            if _sweep_entry(entry, out):
                removed.append(entry)
        elif ename.startswith(f".{name}.") and ename.endswith(".tmp") and _TAG_RE.search(ename) is None:
            try:
                old = time.time() - entry.lstat().st_mtime > LEGACY_TEMP_MAX_AGE_S
            except OSError:
                continue
            if old:
                _remove(entry)
                removed.append(entry)
    return removed


def sweep_folder(folder: Path) -> list[Path]:
    """:func:`sweep_stale_temporaries` for every output in ``folder``: the temporaries (of any name)
    whose writers are gone. For writers that put several outputs in one folder (a run directory,
    a corpus folder, a wordnet folder), so a killed writer's temporaries go even when the next
    run writes other names."""
    folder = Path(folder)
    removed: list[Path] = []
    if not folder.is_dir():
        return removed
    for entry in folder.iterdir():
        if not entry.name.startswith("."):
            continue
        match = _TAG_RE.search(entry.name)
        if match is None:
            continue
        out = folder / entry.name[1:match.start()]
        if _sweep_entry(entry, out):
            removed.append(entry)
    return removed


def make_temp_dir(parent: Path, name: str) -> Path:
    """A new temporary folder for the output ``parent / name``, beside it, named for this writer
    (:func:`temp_prefix`) and made with the umask's permissions. An OSError names ``parent / name``."""
    try:
        tmp = Path(tempfile.mkdtemp(prefix=temp_prefix(name), dir=parent))
    except OSError as exc:  # read-only, full, or no such folder: the user's path, not the temporary
        raise OSError(exc.errno, exc.strerror or os.strerror(exc.errno or 0), str(Path(parent) / name)) from exc
    os.chmod(tmp, 0o777 & ~_umask())
    return tmp


@contextmanager
def atomic_output_dir(out: Path, *, overwrite: bool, flag: str = "--out") -> Iterator[Path]:
    """Build the directory output ``out`` all-or-none: yield a temp folder beside it, publish by rename.

    Readers (and a later run) see the previous ``out`` or the new one whole, never a mix:
    - the caller writes every file into the yielded folder ``.<name>.tmp-<pid>@<host>-XXXX``;
    - on success its files are fsynced and the folder is renamed to ``out``; an existing ``out``
      (only with ``overwrite``) is first moved aside and removed after the swap;
    - on any error, a kill signal turned into an exception, or a full disk, the temp folder is
      removed, the previous ``out`` is untouched and parent folders this call made are removed;
    - two concurrent writers cannot mix files: each builds its own folder, and without
      ``overwrite`` the second to finish finds ``out`` taken and fails with a one-line error.
    A SIGKILL leaves only the temp folder, which the next writer of ``out`` sweeps
    (:func:`sweep_stale_temporaries`). An OSError names ``out`` (and the file in it), never the
    temporary.

    Raises:
        InputError: ``out`` exists and is not empty without ``overwrite``, is a file, or was
            published by another process while this one ran.
    """
    from groc_base.checks import check_output

    out = Path(out)
    check_output(out, overwrite, directory=True, flag=flag)
    with removing_new_dirs(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale_temporaries(out)
        tmp = make_temp_dir(out.parent, out.name)
        try:
            yield tmp
            _fsync_tree(tmp)
            publish_dir(tmp, out, overwrite=overwrite, flag=flag)
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


def publish_dir(tmp: Path, out: Path, *, overwrite: bool, flag: str = "--out") -> None:
    """Rename the finished folder ``tmp`` to ``out``; with ``overwrite``, an existing non-empty ``out``
    is swapped out first (moved into ``.<name>.old-<pid>@<host>-*``, removed after the swap; a kill
    between the two renames is undone by the next :func:`sweep_stale_temporaries`).

    Raises:
        InputError: ``out`` holds something and ``overwrite`` is false (another process published it).
    """
    try:
        os.rename(tmp, out)  # succeeds when out is missing or an empty folder
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
        if not overwrite:
            from groc_base.checks import option

            raise InputError(f"{option(flag)} {out} was written by another process while this one ran (its result "
                             f"is kept); choose another {option(flag)}, or run again with "
                             f"{option('overwrite', True)} to replace it with this run's") from exc
    old = Path(tempfile.mkdtemp(prefix=temp_prefix(out.name, "old"), dir=out.parent))
    os.rename(out, old / "result")
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old / "result", out)  # the previous result goes back
        shutil.rmtree(old, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
