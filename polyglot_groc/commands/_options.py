"""The command line's options, each declared once.

:func:`option` declares an option; given ``key=`` it is config-backed: ``--seed`` sets ``train.seed``.
Such a declaration registers the key's flag with :mod:`groc_base.checks` (so a library message names
the flag the command line has: ``--lexicon SPEC``, not ``--set model.lexicon.specs=[...]``), derives the
default its help shows from the presets, and :func:`config_overrides` reads the config overrides a
command's options stand for from the same declarations.

The options several commands share (``--device``, ``--checkpoint``, ``--threads``, ``--verbose``,
``--overwrite``, ``--data``, ``--languages``, ``--allow-untrained``) have one factory each here, whose
parameters carry what differs between the commands (the help, the default shown, a config key); the
commonest forms are aliases (``DeviceOption``); a renamed option's old spelling is
:func:`old_spelling`. Then come train's config-backed options, the one place that says which flag
sets which config key.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.models import OptionInfo

from groc_base.checks import SettingFlag, register_setting_flags
from polyglot_groc.config import MODEL_KINDS, PRESETS, load_config
from polyglot_groc.kind_traits import auto_softmax_help

_VALUE: Any = object()  # the flag takes a value (not a switch)

#: Every config-backed option declared so far: its typer declaration -> (config key, flag).
CONFIG_OPTIONS: dict[OptionInfo, tuple[str, SettingFlag]] = {}


@functools.cache
def _presets() -> tuple[dict[str, Any], dict[str, Any]]:
    from polyglot_groc.config import to_dict

    return to_dict(load_config(PRESETS["small"])), to_dict(load_config(PRESETS["paper"]))


def config_default(key: str) -> str:
    """The shown default of a flag that sets config ``key``: the presets' value(s)."""

    def get(values: Mapping[str, Any]) -> str:
        for part in key.split("."):
            values = values[part]
        v: Any = values
        if isinstance(v, list):
            return ", ".join(map(str, v)) or "none"
        return str(v).lower() if isinstance(v, bool) else str(v)

    small, paper = (get(v) for v in _presets())
    return f"config's {key}: {small}" if small == paper else f"config's {key}: {small} (small), {paper} (paper)"


def option(*decls: str, help: str | None = None, key: str | None = None, show_default: bool | str | None = None,
           default_note: str = "", sets: Any = _VALUE, repeat: bool = False, **extra: Any) -> Any:
    """A typer option (``decls``: its spellings, ``"--compile/--no-compile"`` for an on/off pair).

    ``key``: the config key it sets, which makes it config-backed (see the module's docstring);
    ``sets``: a switch's config value when given (``--no-screen``: False); ``repeat``: a list given
    as the flag repeated. ``show_default`` (None) is the presets' value of ``key`` followed by
    ``default_note``, or typer's own for an option without a key."""
    if key is None:
        return typer.Option(*decls, help=help, show_default=True if show_default is None else show_default, **extra)
    on, _, off = decls[0].partition("/")
    flag = SettingFlag(on, off=off or None, repeat=repeat, **({} if sets is _VALUE else {"sets": sets}))
    register_setting_flags({key: flag})
    shown = config_default(key) + default_note if show_default is None else show_default
    info = typer.Option(*decls, help=help, show_default=shown, **extra)
    CONFIG_OPTIONS[info] = (key, flag)
    return info


def config_options(command: Callable[..., Any]) -> dict[str, tuple[str, SettingFlag]]:
    """A typer command function's config-backed parameters: name -> (config key, flag)."""
    hints = typing.get_type_hints(command, include_extras=True)
    return {name: CONFIG_OPTIONS[meta] for name, hint in hints.items()
            for meta in getattr(hint, "__metadata__", ()) if isinstance(meta, OptionInfo) and meta in CONFIG_OPTIONS}


def config_overrides(command: Callable[..., Any], values: Mapping[str, Any],
                     workflow: Callable[..., Any]) -> dict[str, Any]:
    """The config overrides ``command``'s parsed ``values`` stand for: one per config-backed option that was
    given and that ``workflow`` takes no argument for (those go to the workflow as arguments; ``compile_``
    is its ``compile``)."""

    takes = inspect.signature(workflow).parameters
    found = {key: flag.to_config(values.get(name)) for name, (key, flag) in config_options(command).items()
             if name.rstrip("_") not in takes}
    return {key: value for key, value in found.items() if value is not None}


# -- options several commands share ------------------------------------------------------------------------

#: The help of every command's ``--overwrite``: one wording for one behaviour.
OVERWRITE_HELP = "Replace an existing --out (without it, an existing output is an error)"
#: ``--threads`` of every command that runs a model; the workflows apply it (``model.device.use_threads``).
THREADS_HELP = ("CPU threads for torch and the BLAS pools; 0 or unset: $OMP_NUM_THREADS if set, else the cores other "
                "processes leave free (docs/commands.md, Threads)")
LANGUAGES_ENV = "POLYGLOT_GROC_LANGUAGES"
#: ``--languages FILE``: the help every command that takes languages shares.
LANGUAGES_HELP = (f"Languages TOML file adding your own languages (a languages.CODE table each: name, iso3, script, "
                  f"related, wordnets, tokenizer; default: ${LANGUAGES_ENV})")


def device_option(help: str = "auto | cpu | cuda | cuda:N", **how: Any) -> Any:
    return option("--device", help=help, **how)


def checkpoint_option(help: str = "best | last") -> Any:
    return option("--checkpoint", help=help)


def threads_option(help: str = THREADS_HELP, *, show_default: str | None = "picked from the free cores",
                   **how: Any) -> Any:
    return option("--threads", help=help, show_default=show_default, **how)


def verbose_option(help: str | None = None, show_default: bool | str = True) -> Any:
    return option("--verbose", "-v", help=help, show_default=show_default)


def overwrite_option(help: str = OVERWRITE_HELP, show_default: bool | str = True) -> Any:
    return option("--overwrite", help=help, show_default=show_default)


def data_option(help: str, **how: Any) -> Any:
    return option("--data", help=help, **how)


def languages_option(help: str = LANGUAGES_HELP, show_default: bool | str = False) -> Any:
    return option("--languages", envvar=LANGUAGES_ENV, help=help, show_default=show_default)


#: ``--allow-untrained`` of every command that serves a run's vectors (neighbours, export, similarity --run).
ALLOW_UNTRAINED_HELP = ("Serve the lookup rows of vocabulary words training never saw (a closed vocabulary's valid and "
                        "test words): untrained, so refused by name and left out of the words searched or written "
                        "without it; compositional sides (GroC) have none")


def allow_untrained_option(help: str = ALLOW_UNTRAINED_HELP) -> Any:
    return option("--allow-untrained", help=help, show_default=True)


def old_spelling(old: str, new: str) -> Any:
    """A renamed option's old spelling: hidden from --help, still accepted with a warning
    (``_common.deprecated_alias`` merges it into ``new``)."""
    return typer.Option(old, hidden=True, help=f"Deprecated: {new}")


#: ``--allow-dictionary-overlap`` of every command that evaluates an alignment (``allow_overlap`` from Python).
AllowOverlapOption = Annotated[bool, option(
    "--allow-dictionary-overlap", help="Score even when more than 5% of the test pairs are training pairs (read "
                                       "either way round); the overlap is counted and warned about anyway")]
DeviceOption = Annotated[str, device_option()]
CheckpointOption = Annotated[str, checkpoint_option()]
ThreadsOption = Annotated[int | None, threads_option()]
VerboseOption = Annotated[bool, verbose_option()]
OverwriteOption = Annotated[bool, overwrite_option()]
LanguagesOption = Annotated[Path | None, languages_option()]
AllowUntrainedOption = Annotated[bool, allow_untrained_option()]

# -- train's options that set a config key -------------------------------------------------------------------
# With --resume, those that resume() takes apply (commands/train.py); the others are the run's own config.

DataRoot = Annotated[Path | None, data_option(
    "Corpus root: <DATA>/<lang>/{train,valid,test}.txt (data.root)", key="data.root",
    show_default="config's data.root; required if it has none")]
ModelKind = Annotated[str | None, option(
    "--model", key="model.kind", help="Model kind, with its own output-net defaults (seed 000 Table 8): "
    + " | ".join("tied (= lookup)" if k == "tied" else k for k in MODEL_KINDS if k != "lookup") + " (docs/models.md)")]
MaxSteps = Annotated[int | None, option(
    "--max-steps", key="train.max_steps", help="Stop after N steps in all (with --resume: extend the run to N)",
    default_note=" = no step limit")]
MaxMinutes = Annotated[float | None, option(
    "--max-minutes", key="train.max_minutes",
    help="Stop after M minutes of this invocation, validations included (it stops early enough for the last one)",
    default_note=" = no time limit")]
MaxEpochs = Annotated[int | None, option(
    "--max-epochs", key="train.max_epochs", help="Stop after N epochs in all (with --resume: extend the run to N)")]
Seed = Annotated[int | None, option("--seed", key="train.seed", help="Random seed")]
Tokenize = Annotated[str | None, option(
    "--tokenize", key="data.tokenize", help="whitespace | auto | stanza | toktok")]
VocabMode = Annotated[str | None, option(
    "--vocab-mode", key="data.vocab_mode", help="closed (train+valid+test words) | open (train words only)")]
NoScreen = Annotated[bool, option(
    "--no-screen", key="data.screen", sets=False, show_default="off: screened",
    help="Score the full union vocabulary instead of the batch language's (data.screen=false)")]
Schedule = Annotated[str | None, option(
    "--schedule", key="data.schedule", help="Language mix of the batches: proportional | round_robin | temperature")]
Lexicon = Annotated[list[str] | None, option(
    "--lexicon", key="model.lexicon.specs", repeat=True,
    help="groc-lex: wn lexicon, repeatable, as `lexicon info` lists them: omw-en, omw-en:3.0 or the full "
         "omw-en:3.0+<hash> (model.lexicon.specs)",
    show_default="config's model.lexicon.specs: none = the installed wordnets of --langs")]
NoRelations = Annotated[bool, option(
    "--no-relations", key="model.lexicon.use_relations", sets=False, show_default="off: relations used",
    help="groc-lex: leave out the related words r (model.lexicon.use_relations=false)")]
NoDefinitions = Annotated[bool, option(
    "--no-definitions", key="model.lexicon.use_definitions", sets=False, show_default="off: definitions used",
    help="groc-lex: leave out the definition words d (model.lexicon.use_definitions=false)")]
LexiconCoverage = Annotated[float | None, option(
    "--lexicon-coverage", key="model.lexicon.coverage", help="groc-lex: fraction in [0, 1] of lexicon entries kept")]
WnDir = Annotated[Path | None, option(
    "--wn-dir", key="model.lexicon.wn_dir", show_default="$POLYGLOT_GROC_WN_DIR, else wn's own ~/.wn_data",
    help="groc-lex: the wn data folder of `lexicon import --wn-dir` (model.lexicon.wn_dir; the run records it)")]
Threads = Annotated[int | None, threads_option(THREADS_HELP + "; the run prints what it picked and why",
                                               key="train.threads", show_default=None)]
Device = Annotated[str | None, device_option("auto (CUDA when available) | cpu | cuda | cuda:N", key="train.device")]
Precision = Annotated[str | None, option(
    "--precision", key="train.precision",
    help="auto | fp32 | tf32 | bf16 (auto: bf16 on a CUDA GPU that has it, else fp32; the loss stays fp32)")]
Softmax = Annotated[str | None, option(
    "--softmax", key="train.softmax",
    help=f"Training softmax: full | sampled | auto (auto: sampled {auto_softmax_help()}); perplexities are always "
         "the full softmax")]
SampledK = Annotated[int | None, option(
    "--sampled-k", key="train.sampled_k", help="Draws of negatives per sampled step (train.sampled_k)")]
Compile = Annotated[bool | None, option(
    "--compile/--no-compile", key="train.compile", help="torch.compile the char encoder")]
InitInput = Annotated[Path | None, option(
    "--init-input", key="model.init_input", show_default="none: random init",
    help="Initialise the input table from word2vec vectors, .vec or .bin, plain or .gz (seed 003)")]
FreezeInput = Annotated[bool, option(
    "--freeze-input", key="model.freeze_input", sets=True, show_default="off",
    help="Keep the input table fixed (model.freeze_input)")]


def log_every_option(show_default: str | None = None) -> Any:
    return option("--log-every", key="train.log_every", show_default=show_default,
                  help="Log loss/ppl/lr/tok/s/ETA every N steps; 0: no log lines (train.log_every)")


LogEvery = Annotated[int | None, log_every_option()]
