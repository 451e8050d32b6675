"""File I/O shared by every package: atomic writes, (optionally gzipped) reads and JSON output.

It lives in ``groc_base``, under every other package, so there is one implementation.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from groc_base.errors import GrocError


def write_then_rename(directory: Path, prefix: str, fill: Callable[[Path], Path], mode: int | None = None) -> Path:
    """Create a temp file in ``directory``, let ``fill(tmp)`` write it, then rename it into place.

    ``fill`` writes the file *by path* (SQLite cannot write to a file object) and returns the
    final path, so a name can depend on the content (e.g. its checksum). The file is fsynced
    before the rename, so readers see the old file or the new one, never half of one; on any
    error the temp file is removed. ``mode`` sets permissions; by default the file gets what
    ``open()`` would give it (0666 minus the umask), since mkstemp creates 0600 files.
    """
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{prefix}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(name)
    try:
        final = fill(tmp)
        with tmp.open("rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_umask())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final


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
