"""The alignment commands' options (align, align-many, align-layers): one flag per knob of every registered
method, derived from the methods' config fields, and the options only they take. Declared through
:func:`polyglot_groc.commands._options.option` like every other option."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

from polyglot_groc.commands._options import option

# -- the alignment methods' knobs ----------------------------------------------------------------------------


def _knob_option(name: str) -> tuple[Any, Any]:
    """(annotation, default) of the option of knob ``name``, from its declarations in the method configs:
    a switch for a knob that is off by default (``--spectral``), an on/off pair for one that is on
    (``--vecmap-whiten/--no-vecmap-whiten``), else a value (None: the config's default)."""
    from eval.methods.registry import knobs
    from groc_base.checks import cli_face
    from groc_base.checks import option as spelled

    declared = knobs()[name]
    first = declared[0]
    with cli_face():
        flag = spelled(name)
    owners = " | ".join(dict.fromkeys(k.owner for k in declared))
    shown = first.info.show_default or (str(first.default).lower() if first.kind is bool else str(first.default))
    if len({repr(k.default) for k in declared}) > 1:
        shown = "each method's own"
    # The default in the help's words (a string show_default would print in parentheses)
    help_text = f"--method {owners}: {first.info.help} (default: {shown})"
    if first.kind is bool and first.default is False:
        return Annotated[bool, option(flag, help=f"--method {owners}: {first.info.help}", show_default=False)], False
    if first.kind is bool:
        return Annotated[bool | None, option(f"{flag}/--no-{flag[2:]}", help=help_text, show_default=False)], None
    kind = str if first.choices else first.kind
    return Annotated[kind | None, option(flag, help=help_text, show_default=False)], None  # type: ignore[valid-type]


def method_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with one option per knob of every registered alignment method, after its ``method``
    parameter, derived from the methods' config fields (:mod:`eval.methods.registry`); the function
    takes them as ``**knobs`` (knob name -> value, None when not given) for
    :func:`eval.methods.build_config`. A method added to the registry gets its flags here, unwritten."""
    from eval.methods.registry import knobs

    signature = inspect.signature(command, eval_str=True)
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in signature.parameters.values()
              if p.kind is not inspect.Parameter.VAR_KEYWORD]
    at = next(i for i, p in enumerate(params) if p.name == "method") + 1
    extra = []
    for name in knobs():
        annotation, default = _knob_option(name)
        extra.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))

    @functools.wraps(command)
    def with_knobs(**values: Any) -> Any:
        return command(**values)

    with_knobs.__signature__ = signature.replace(parameters=[*params[:at], *extra, *params[at:]])  # type: ignore[attr-defined]
    return with_knobs


def method_help(pivot: bool = False) -> str:
    """``--method``'s help from the registry: every method with its reference (``align``), or for ``align-many``
    (``pivot``) those that leave the target where it is."""
    from eval.methods.registry import method_names, methods

    if pivot:
        movers = method_names(where=lambda m: m.moves_target and m.keeps_pivot is None)
        return (" | ".join(method_names(where=lambda m: not m.moves_target or m.keeps_pivot is not None))
                + (f" ({', '.join(movers)} moves the pivot: refused)" if movers else ""))
    listed = " | ".join(f"{name} ({m.summary})" for name, m in methods().items())
    return f"{listed}. Each runs its reference's recipe; result.json's 'reference' says how a run differs"


def starts_help() -> str:
    """``--dictionary-mode``'s help: the registered starts."""
    from polyglot_groc.analysis.alignment_starts import start_names

    return "Without --train-dict: " + " | ".join(start_names())


# -- align's and align-many's options (beside the method knobs above) ---------------------------------------

#: ``--dictionary-mode`` of align and align-many: the registered starts.
DictionaryModeOption = Annotated[str | None, option("--dictionary-mode", help=starts_help(), show_default=False)]
#: ``--random-seed`` (not ``--seed``: align's old spelling of --dictionary-mode).
RandomSeedOption = Annotated[int, option(
    "--random-seed", help="Seed of a method that draws (VecMap's stochastic induction, MUSE's adversarial start; the "
                          "verdict's restarts take the next seeds): the same seed repeats a run on one machine")]
RequireAlignedOption = Annotated[bool, option(
    "--require-aligned", help="Fail (one line, exit 2, nothing written) when the method judges its map doubtful or "
                              "failed; without it such a map is written and its verdict printed")]
