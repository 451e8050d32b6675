"""The ``polyglot-groc`` command line: a thin typer layer over the library.

Every module of :mod:`polyglot_groc.commands` mounts itself (its ``app``): adding a command is adding it
to a module there. Every command is decorated with ``cli_errors``: user errors print one line and exit
with code 2.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from polyglot_groc.commands._common import fail, version_callback

try:  # typer 0.2x vendors click as typer._click; older releases use click itself
    from typer._click import exceptions as _click_errors
except ImportError:  # pragma: no cover - an older typer
    from click import exceptions as _click_errors  # type: ignore[no-redef]

_UsageError: type[Exception] = _click_errors.UsageError
#: A bare command group "fails" with this to show its help: that stays help.
_HelpInstead: tuple[type[Exception], ...] = tuple(
    x for x in (getattr(_click_errors, "NoArgsIsHelpError", None),) if x is not None)


def usage_error_line(exc: Any) -> str:
    """A command-line usage error (a bad or missing option value, an unknown option, a path that
    cannot be read) as the one line every other error is: what is wrong, the fix, where help is."""
    message = " ".join(exc.format_message().split()).rstrip(".")
    if message.endswith(("is not readable", "does not exist", "is not writable")):
        message += "; check the path and its permissions"
    ctx = getattr(exc, "ctx", None)
    command = ctx.command_path if ctx is not None else "polyglot-groc"
    return f"{message[:1].lower()}{message[1:]} (see {command} -h)"


class OneLineErrors(TyperGroup):
    """The root command group: typer's boxed usage errors become one ``error:`` line (exit code 2),
    as the commands' own errors are. Help for a bare command group is still help."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except _HelpInstead:
            raise
        except _UsageError as exc:
            raise fail(usage_error_line(exc)) from exc

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _HelpInstead:
            raise
        except _UsageError as exc:
            raise fail(usage_error_line(exc)) from exc


app = typer.Typer(
    name="polyglot-groc",
    cls=OneLineErrors,
    help="Multilingual word-level language models with grounded compositional output embeddings (GroC).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # -h as well as --help, and every option's default in its help.
    context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
)


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=version_callback, is_eager=True,
                                          help="Print the version and exit")] = False,
) -> None:
    """Multilingual word-level language models with grounded compositional output embeddings (GroC)."""


#: The order of the command modules in ``polyglot-groc --help`` (a workflow's order: train, evaluate, use the
#: embeddings, ...); a module not named here follows them, by name.
HELP_ORDER = ("train", "evaluate", "elmo", "embeddings", "query", "pretrain", "crossdomain", "contextual", "analyze",
              "lexicon", "data", "runs")


def command_modules() -> list[str]:
    """Every public module of :mod:`polyglot_groc.commands`, in help order. Each holds an ``app``: unnamed,
    its commands join the root (``train``); named, it is a command group (``lexicon``)."""
    import pkgutil

    from polyglot_groc import commands

    names = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")]
    return sorted(names, key=lambda n: (HELP_ORDER.index(n) if n in HELP_ORDER else len(HELP_ORDER), n))


def _mount() -> None:
    import importlib

    for name in command_modules():
        app.add_typer(importlib.import_module(f"polyglot_groc.commands.{name}").app)


_mount()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
