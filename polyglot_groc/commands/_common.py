"""Shared CLI plumbing: one error boundary, one console.

Every command body is wrapped by :func:`cli_errors`, so the library can raise typed errors and
the CLI alone decides how they look (one line on stderr) and the exit code (2).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console

from eval.errors import EvalInputError
from lexicons.errors import GrocError

P = ParamSpec("P")
R = TypeVar("R")

console = Console()
err_console = Console(stderr=True)

#: Errors that are the user's to fix: reported in one line, exit code 2.
USER_ERRORS: tuple[type[BaseException], ...] = (GrocError, EvalInputError, FileNotFoundError, UnicodeDecodeError)

EXIT_USER_ERROR = 2


def fail(message: str) -> typer.Exit:
    """Print a one-line error and return the ``typer.Exit`` to raise."""
    first_line = " ".join(str(message).split())
    err_console.print(f"error: {first_line}", highlight=False, markup=False, soft_wrap=True)
    return typer.Exit(code=EXIT_USER_ERROR)


def cli_errors(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn the toolkit's user errors into a one-line message and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except USER_ERRORS as exc:
            raise fail(str(exc)) from exc

    return wrapper


def setup_logging(verbose: bool) -> None:
    """Route library logging to stderr through rich; the library itself never prints."""
    from rich.logging import RichHandler

    level = logging.INFO if verbose else logging.WARNING
    root = logging.getLogger()
    if not any(isinstance(h, RichHandler) for h in root.handlers):
        root.addHandler(RichHandler(console=err_console, show_path=False, show_time=False))
    root.setLevel(level)


def print_json(obj: object) -> None:
    """Print a result as JSON on stdout (machine-readable; progress goes to stderr)."""
    import json

    typer.echo(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False))
