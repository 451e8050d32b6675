"""Shared CLI plumbing: one error boundary, one console.

Every typer command function is decorated with :func:`cli_errors` (under ``@app.command``), so the
library can raise typed errors and the CLI alone decides how they look (one line on stderr) and the
exit code (2). The options live in ``_options.py``.
"""

from __future__ import annotations

import errno
import functools
import logging
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console

from groc_base.checks import (  # noqa: F401  the commands' checks are the library's
    check_non_negative,
    check_output,
    check_positive,
    check_probability,
)
from groc_base.errors import ConfigError, GrocError
from groc_base.fileio import dumps_json

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

# No rich markup in what the commands print: messages carry words, file lines and paths, and rich
# would swallow any "[tag]" among them (a word "[b]" or a line "[default] x").
console = Console(markup=False)
#: stderr never wraps: an error or warning is one line however long (a terminal may still fold it).
err_console = Console(stderr=True, soft_wrap=True, markup=False)

#: Errors that are the user's to fix: reported in one line, exit code 2.
USER_ERRORS: tuple[type[BaseException], ...] = (GrocError, FileNotFoundError, UnicodeDecodeError)

EXIT_USER_ERROR = 2
#: Conventional exit codes of a process ended by a signal: 128 + SIGINT (Ctrl-C), 128 + SIGTERM.
EXIT_SIGINT = 130
EXIT_SIGTERM = 143
#: A training run whose loss diverged (result.json says so; last.pt is the last good state).
EXIT_DIVERGED = 3


def one_line(message: object) -> str:
    """``message`` on one line: newlines and runs of blanks become single spaces."""
    return " ".join(str(message).split())


def fail(message: str) -> typer.Exit:
    """Print a one-line error and return the ``typer.Exit`` to raise.

    Under torchrun every rank runs the command and meets the same error: rank 0 alone prints it, so
    the user reads one line, not one per process.
    """
    if os.environ.get("RANK", "0") in ("0", ""):
        err_console.print(f"error: {one_line(message)}", highlight=False, markup=False, soft_wrap=True)
    return typer.Exit(code=EXIT_USER_ERROR)


def warn(message: str) -> None:
    """Print a one-line warning on stderr (the command goes on)."""
    err_console.print(f"warning: {one_line(message)}", highlight=False, markup=False, soft_wrap=True)


#: errno -> what the user can do about it (the path comes from the exception).
_OS_FIXES: dict[int, str] = {
    errno.ENOSPC: "the disk is full; free space or write elsewhere",
    errno.EDQUOT: "the disk quota is exceeded; free space or write elsewhere",
    errno.EACCES: "permission denied; choose a path you can write/read or fix its permissions",
    errno.EPERM: "operation not permitted; choose another path or fix its permissions",
    errno.EROFS: "the file system is read-only; write somewhere else",
    errno.EISDIR: "it is a directory; give a file path",
    errno.ENOTDIR: "a part of the path is not a directory; check the path",
    errno.ENAMETOOLONG: "the name is too long; use a shorter path",
    errno.ENOENT: "it does not exist; check the path",
    errno.EEXIST: "it already exists; choose another path or move it away",
    errno.ENOTEMPTY: "the directory is not empty; choose another path or move its contents away",
    errno.ELOOP: "too many symbolic links; check the path",
}


def os_error_message(exc: OSError) -> str:
    """One line naming the path, what went wrong and the fix."""
    fix = _OS_FIXES.get(exc.errno or -1, "check the path and its permissions")
    reason = exc.strerror or type(exc).__name__
    if exc.filename is None:  # the library names outputs where it can; this is the last resort
        return f"a file could not be read or written: {reason}; {fix}"
    return f"cannot use {exc.filename}: {reason}; {fix}"


def cli_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn the toolkit's user errors (and the OSError family) into one line and exit code 2.

    Decorates the typer command function itself (``@app.command("x")`` over ``@cli_errors``): the
    wrapper keeps ``fn``'s signature (``functools.wraps``), which is what typer reads the options from."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from groc_base.checks import cli_face

        try:
            with cli_face():  # the library's messages name options as flags (--max-vocab), not keywords
                return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            raise fail(str(exc)) from exc
        except OSError as exc:  # a directory given as a file, read-only output, disk full, ...
            raise fail(os_error_message(exc)) from exc

    return wrapper


def key_values(items: list[str] | None, flag: str, example: str) -> dict[str, str]:
    """``KEY=VALUE`` options (repeatable) as a dict; a malformed or repeated key is bad input."""
    from groc_base.errors import InputError

    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise InputError(f"{flag} {item!r}: write KEY=FILE, e.g. {flag} {example}")
        same = next((k for k in out if k.lower() == key.lower()), None)
        if same is not None:  # en and EN: one OUT/<lang>.vec on a case-insensitive disk, one lost
            twice = key if same == key else f"{same} and {key}"
            raise InputError(f"{flag} {twice} is given twice (keys do not differ by case); give each once")
        out[key] = value
    return out


def float_list(text: str | None, flag: str) -> list[float] | None:
    """A comma-separated list of numbers given on the command line (None: not given)."""
    if text is None:
        return None
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{flag} {text!r} is not a comma-separated list of numbers; "
                          f"e.g. {flag} 0.1,0.5,0.9") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise ConfigError(f"{flag} {text!r} needs at least one finite number; e.g. {flag} 0.1,0.5,0.9")
    return values


def fresh_output(base: Path) -> Path:
    """The first of ``BASE``, ``BASE-2``, ``BASE-3``, ... that does not exist yet: the output of a command
    run without ``--out``, so that running it twice keeps both results instead of failing the second
    time (the command prints where it wrote)."""
    candidate, n = base, 1
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def deprecated_alias(new: str, old: str, new_value: T, old_value: T | None) -> T:
    """Merge a hidden old spelling into its new option, warning that it goes away next release."""
    if old_value is None:
        return new_value
    warn(f"{old} is deprecated and will be removed in the next release; use {new}")
    return old_value


def version_callback(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("polyglot-groc")
        except PackageNotFoundError:
            from polyglot_groc import __version__ as v
        typer.echo(f"polyglot-groc {v}")
        raise typer.Exit()


class OneLineHandler(logging.Handler):
    """Library log records on stderr, each on one line: ``warning: ...``, ``error: ...``, ``info: ...``.

    Goes through ``err_console``, so it prints above a live progress bar; never wraps a record
    over several lines (a logged error reads like the CLI's own error lines).
    """

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = one_line(self.format(record))
            err_console.print(f"{record.levelname.lower()}: {text}", highlight=False, markup=False, soft_wrap=True)
        except Exception:  # a logging handler must not raise
            self.handleError(record)


def setup_logging(verbose: bool, progress: tuple[str, ...] = ()) -> None:
    """Route library logging to stderr, one line a record; the library itself never prints.

    Warnings always show, INFO with ``--verbose``; on a terminal the loggers named in ``progress``
    (e.g. ``"lexicons"`` for a wordnet import) show their INFO lines anyway: they are the progress
    of a step that takes a while (in a log or a pipe only ``--verbose`` adds them)."""
    level = logging.INFO if verbose else logging.WARNING
    root = logging.getLogger()
    if not any(isinstance(h, OneLineHandler) for h in root.handlers):
        root.addHandler(OneLineHandler())
    root.setLevel(level)
    import sys

    for name in progress:
        logging.getLogger(name).setLevel(logging.INFO if verbose or sys.stderr.isatty() else logging.NOTSET)


def print_json(obj: object) -> None:
    """Print a result as JSON on stdout (machine-readable; progress goes to stderr)."""
    typer.echo(dumps_json(obj, indent=2, ensure_ascii=False, sort_keys=False))


def language_codes(langs: str, languages: Path | None = None) -> list[str]:
    """``--langs`` as codes (``langpairs.registry.resolve_codes``: "tgl", "Tagalog": "tl").

    With a ``--languages`` file an unknown name is the registry's error (with its suggestion); without
    one it is kept as given, so the shared data's own message (what it has, how to bring your own
    text or wordnet) answers it.
    """
    from langpairs.registry import load_registry, resolve_codes

    return resolve_codes(langs, load_registry(languages), keep_unknown=languages is None)
