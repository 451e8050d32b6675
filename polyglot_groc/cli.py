"""The ``polyglot-groc`` command line: a thin typer layer over the library.

Every command wraps its body in ``cli_errors``: user errors print one line and exit with code 2.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from polyglot_groc.commands._common import fail, version_callback
from polyglot_groc.commands.contextual import (
    align_layers_command,
    anchors_command,
    features_command,
    probe_command,
)
from polyglot_groc.commands.crossdomain import analyze_app, finetune_command, tune_cache_command
from polyglot_groc.commands.elmo import init_from_elmo_command
from polyglot_groc.commands.embeddings import align_command, align_many_command, export_command, similarity_command
from polyglot_groc.commands.model import neighbours_command, score_command
from polyglot_groc.commands.pretrain import pretrain_vectors_command
from polyglot_groc.commands.train import evaluate_command, train_command

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

app.command("train")(train_command)
app.command("evaluate")(evaluate_command)
app.command("init-from-elmo")(init_from_elmo_command)
app.command("export")(export_command)
app.command("align")(align_command)
app.command("align-many")(align_many_command)
app.command("similarity")(similarity_command)
app.command("neighbours")(neighbours_command)
app.command("score")(score_command)
app.command("pretrain-vectors")(pretrain_vectors_command)
app.command("tune-cache")(tune_cache_command)
app.command("finetune")(finetune_command)
app.command("features")(features_command)
app.command("anchors")(anchors_command)
app.command("align-layers")(align_layers_command)
app.command("probe")(probe_command)
app.add_typer(analyze_app, name="analyze")


def _mount_optional() -> None:
    """Command groups living in their own modules."""
    import importlib

    for module, name in (("polyglot_groc.commands.lexicon", "lexicon"), ("polyglot_groc.commands.data", "data"),
                         ("polyglot_groc.commands.runs", "runs")):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        app.add_typer(mod.app, name=name)


_mount_optional()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
