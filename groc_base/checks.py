"""Checks of user-given values and outputs, shared by the library's workflows and the CLI.

Numbers are named by their command-line flag (``max_vocab`` -> ``--max-vocab``), so one message
serves the CLI and the Python API (whose keyword is the flag's name). Outputs are refused before
any work when they exist and ``overwrite`` is not set: a refused call costs nothing and changes
nothing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from groc_base.errors import ConfigError, InputError

__all__ = ["check_input_file", "check_non_negative", "check_output", "check_positive", "check_probability",
           "check_seed", "flag_name"]


def flag_name(name: str) -> str:
    """``max_vocab`` -> ``--max-vocab``: the command-line flag of a keyword."""
    return "--" + name.replace("_", "-")


def check_positive(**values: int | float | None) -> None:
    """Counts and sizes must be positive, finite numbers (None = not given)."""
    for name, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{flag_name(name)}={value} must be a positive number; pass a value above 0 or "
                              "leave it out")


def check_non_negative(**values: int | float | None) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{flag_name(name)}={value} must be a finite number >= 0")


#: Random seeds are 32-bit unsigned: numpy's legacy generator takes nothing else.
SEED_MAX = 2**32 - 1


def check_seed(**values: int | None) -> None:
    """Seeds must be integers in [0, 2^32 - 1] (None = not given)."""
    for name, value in values.items():
        if value is not None and not 0 <= value <= SEED_MAX:
            raise ConfigError(f"{flag_name(name)}={value} is out of range: a seed must lie in [0, {SEED_MAX}]")


def check_probability(**values: float | None) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"{flag_name(name)}={value} must be a probability in [0, 1]")


def check_output(path: str | os.PathLike[str], overwrite: bool, *, directory: bool = False, flag: str = "--out",
                 also: Sequence[str | os.PathLike[str]] = ()) -> None:
    """Refuse to replace an existing output without ``overwrite``, as ``train`` does for its run directory.

    A file output (``directory=False``) is refused if it exists, and so is each path in ``also``
    (files written beside it, such as a JSON next to a PNG); a directory output if it holds
    anything.  Called before any work, so a refused call costs nothing and changes nothing.

    Raises:
        InputError: the output exists (and ``overwrite`` is false), or is a directory where a
            file is wanted (or the other way round).
    """
    path = Path(path)
    if directory:
        if path.exists() and not path.is_dir():
            raise InputError(f"{flag} {path} is a file, not a directory; give a directory path")
        held = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
        if held and not overwrite:
            shown = ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")
            raise InputError(f"{flag} {path} already exists and is not empty ({shown}); "
                             f"pass --overwrite to replace its results or choose another {flag}")
        return
    for target in (path, *map(Path, also)):
        if target.is_dir():
            raise InputError(f"{flag} {target} is a directory; give a file path")
        if target.exists() and not overwrite:
            raise InputError(f"{target} already exists; pass --overwrite to replace it or choose another {flag}")


def check_input_file(path: str | os.PathLike[str], *, flag: str, what: str = "file") -> Path:
    """``path`` as a Path if it is an existing regular file (or a symlink to one), else a one-line error.

    A FIFO or a device would block the reader forever (or stream without end), so they are
    refused before anything opens them.

    Raises:
        InputError: missing, a directory, or not a regular file.
    """
    import stat

    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{flag} {path}: no such {what}; check the path") from None
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot read it ({exc.strerror}); "
                         "check the path and its permissions") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{flag} {path} is a directory; give a {what}")
    if not stat.S_ISREG(mode):
        raise InputError(f"{flag} {path} is not a regular file (a FIFO, socket or device); give a {what} on disk")
    return path
