"""File I/O shared by every package above ``eval``: atomic writes and (optionally gzipped) reads.

It lives at the bottom of the dependency chain (``lexicons`` <- ``langpairs`` <- ``polyglot_groc``)
so there is one implementation. ``eval`` imports none of the toolkit and keeps its own writer.
"""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from lexicons.errors import GrocError


def atomic_write(path: Path, write: Callable[[IO[bytes]], object], mode: int | None = None) -> None:
    """Call ``write(fileobj)`` on a temp file beside ``path``, then rename it into place.

    Readers see the old file or the new one, never half of one; on any error the temp file is
    removed. ``mode`` sets permissions; by default the file gets what ``open()`` would give it
    (0666 minus the umask), since mkstemp creates 0600 files.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode if mode is not None else 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
