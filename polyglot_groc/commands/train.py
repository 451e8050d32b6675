"""``polyglot-groc train`` and ``polyglot-groc evaluate``.

``train`` is a thin face over :func:`polyglot_groc.training.workflows.train` and ``train --resume``
over :func:`~polyglot_groc.training.workflows.resume`: the command parses its flags into
arguments and config overrides (both read from the options' declarations, commands/_options.py),
passes its progress display (:class:`RichHooks`), prints the result and maps errors, divergence and
interrupts (:class:`ReportInterrupts`) to exit codes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from polyglot_groc.commands import _options as opt
from polyglot_groc.commands._common import (
    check_non_negative,
    check_positive,
    check_probability,
    cli_errors,
    err_console,
    fresh_output,
    setup_logging,
)
from polyglot_groc.commands._reporting import ReportInterrupts, RichHooks, describe_config, report_result
from polyglot_groc.config import merge_overrides, parse_overrides

app = typer.Typer()

#: Options about how this invocation reports, which --resume takes besides the arguments of
#: ``resume()`` (how far the run goes and how it runs); every other option is the run's own config
#: (config.toml) and is refused with --resume.
_REPORTING = ("tensorboard", "verbose")


def _arguments(workflow: Callable[..., Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The parsed options that ``workflow`` takes as arguments, by its names (``compile_`` is ``compile``)."""
    named = {name.rstrip("_"): value for name, value in values.items()}
    return {name: named[name] for name in inspect.signature(workflow).parameters if name in named}


def given_options(ctx: typer.Context) -> list[str]:
    """The flags the user typed (not defaults, nor environment variables such as $POLYGLOT_GROC_WN_DIR), as spelt
    on the command line (``--max-steps``)."""
    flags = {p.name: p.opts[0] for p in ctx.command.params if p.name}
    given = []
    for name in ctx.params:
        source = ctx.get_parameter_source(name)
        if source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP", "ENVIRONMENT"):
            given.append(flags.get(name, name))
    return given


@app.command("train")
@cli_errors
def train_command(
    ctx: typer.Context,
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated language codes, e.g. en,fr")] = "en",
    with_: Annotated[str | None, typer.Option(
        "--with", help="Add 'related' (the Table 5.1 pair of --langs) or a language code",
        show_default="none")] = None,
    data: opt.DataRoot = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run directory to create",
        show_default="a new runs/<langs>[-<model>][-N], never an existing one (printed)")] = None,
    model: opt.ModelKind = None,
    size: Annotated[str | None, typer.Option(
        "--size", help="Preset: small (d 64, 2x128 LSTM; ~1 min on examples/sample on CPU) | paper (seed 004: d 256, "
        "2x1024 LSTM, ~9M parameters with groc; a GPU model). Not with --config",
        show_default="small, unless --config")] = None,
    config: Annotated[Path | None, typer.Option(
        "--config", help="TOML config file, instead of --size; flags and --set apply on top",
        show_default="none: the --size preset")] = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Config override section.key=value, repeatable, e.g. --set model.d=128 (flags win over it)",
        show_default="none")] = None,
    max_steps: opt.MaxSteps = None,
    max_minutes: opt.MaxMinutes = None,
    max_epochs: opt.MaxEpochs = None,
    seed: opt.Seed = None,
    tokenize: opt.Tokenize = None,
    vocab_mode: opt.VocabMode = None,
    no_screen: opt.NoScreen = False,
    schedule: opt.Schedule = None,
    lexicon: opt.Lexicon = None,
    no_relations: opt.NoRelations = False,
    no_definitions: opt.NoDefinitions = False,
    lexicon_coverage: opt.LexiconCoverage = None,
    wn_dir: opt.WnDir = None,
    threads: opt.Threads = None,
    device: opt.Device = None,
    precision: opt.Precision = None,
    softmax: opt.Softmax = None,
    sampled_k: opt.SampledK = None,
    compile_: opt.Compile = None,
    init_input: opt.InitInput = None,
    freeze_input: opt.FreezeInput = False,
    untie: Annotated[bool, typer.Option(
        "--untie", help="Use separate input/output tables (tied -> untied)", show_default="off")] = False,
    overwrite: Annotated[bool, opt.overwrite_option("Replace an existing run directory", show_default="off")] = False,
    resume: Annotated[Path | None, typer.Option(
        "--resume", help="Continue this interrupted run exactly, with its own config",
        show_default="none: a new run")] = None,
    accept_changed_data: Annotated[bool, typer.Option(
        "--accept-changed-data", help="With --resume: go on although the run's corpus files changed since it "
                                      "started (refused otherwise; the run records the new data)",
        show_default="off")] = False,
    log_every: opt.LogEvery = None,
    tensorboard: Annotated[bool, typer.Option(
        "--tensorboard", help="Also write TensorBoard scalars to RUN/tensorboard", show_default="off")] = False,
    verbose: Annotated[bool, opt.verbose_option("Log INFO messages (data, device, model) to stderr",
                                                show_default="off")] = False,
    languages: Annotated[Path | None, opt.languages_option(
        opt.LANGUAGES_HELP + "; the run records the entries it uses",
        show_default="$POLYGLOT_GROC_LANGUAGES, else the built-in ten")] = None,
) -> None:
    """Train a language model (mono- or polyglot) and write a run directory.

    With --resume RUN: continue RUN exactly where its last checkpoint left it, with its own config;
    a larger --max-steps or --max-epochs extends a finished run. Ctrl-C or SIGTERM stop a run with a
    line saying which checkpoint was kept and the command that resumes it (exit 130 or 143).
    """
    from polyglot_groc.training.distributed import world_from_env
    from polyglot_groc.training.workflows import train

    setup_logging(verbose)
    # Numbers first: nothing is read or written before the command line is known to be sane.
    check_positive(max_steps=max_steps, max_minutes=max_minutes, max_epochs=max_epochs)
    check_non_negative(threads=threads, log_every=log_every)
    check_positive(sampled_k=sampled_k)
    check_probability(lexicon_coverage=lexicon_coverage)
    if resume is not None:
        _resume(ctx, resume, tensorboard)
        return
    out = _new_run_out(out, langs, model, accept_changed_data)
    # The config-backed flags train() takes no argument for; they win over --set.
    flags = opt.config_overrides(train_command, ctx.params, train)
    also = [c.strip() for c in (with_ or "").split(",") if c.strip()]
    if config is None:
        source = f"--size {size or 'small'}{'' if size else ' (the default; --size paper for the paper model)'}"
    else:
        source = f"--config {config}"
    if set_:
        source += f" with {len(set_)} --set override{'s' if len(set_) > 1 else ''}"
    # Under torchrun, progress and output belong to rank 0.
    main_rank = world_from_env()[0] == 0
    hooks = RichHooks(out, tensorboard, announce=lambda info: f"config: {source}; {describe_config(info['config'])}") \
        if main_rank else None
    with ReportInterrupts(out, "train", tensorboard, report=main_rank):
        try:
            result = train(**{**_arguments(train, ctx.params), "out": out, "hooks": hooks,
                              "overrides": merge_overrides(parse_overrides(set_ or []), flags),
                              "with_related": "related" in also, "extra_langs": [c for c in also if c != "related"]})
        finally:
            if hooks is not None:
                hooks.close()
    report_result(result, report=main_rank, what="training")


def _new_run_out(out: Path | None, langs: str, model: str | None, accept_changed_data: bool) -> Path:
    """The folder of a new run: ``--out``, or without it a fresh ``runs/<langs>[-<model>][-N]`` (printed),
    so running the same command twice never fails on (or replaces) the first."""
    from groc_base.errors import ConfigError
    from polyglot_groc.training.distributed import world_from_env

    if accept_changed_data:
        raise ConfigError("--accept-changed-data belongs to --resume RUN (a new run records its data as it is); "
                          "drop it, or add --resume RUN")
    if out is not None:
        return out
    if world_from_env()[1] > 1:
        raise ConfigError("under torchrun every process must write the same run: pass --out")
    out = fresh_output(Path("runs") / "-".join([*(c.strip() for c in langs.split(",") if c.strip()),
                                                *([model] if model else [])]))
    err_console.print(f"writing the run to {out} (no --out given)", highlight=False, markup=False)
    return out


def _resume(ctx: typer.Context, run: Path, tensorboard: bool) -> None:
    """``train --resume``: new stop limits extend the run, runtime flags apply to this invocation (both
    are written to its config.toml); the options resume() takes no argument for are refused."""
    from groc_base.errors import ConfigError
    from polyglot_groc.training.distributed import world_from_env
    from polyglot_groc.training.workflows import resume

    takes = [*inspect.signature(resume).parameters, *_REPORTING]
    applies = {p.opts[0]: takes.index(p.name.rstrip("_")) for p in ctx.command.params
               if p.name and p.name.rstrip("_") in takes}
    refused = [f for f in given_options(ctx) if f not in applies and f != "--resume"]
    if refused:
        them = "it" if len(refused) == 1 else "them"
        ok = sorted(applies, key=applies.__getitem__)
        raise ConfigError(f"--resume continues {run} with its own config, so {', '.join(refused)} cannot apply; "
                          f"drop {them} (with --resume only {', '.join(ok[:-1])} and {ok[-1]} apply)")
    run = run.resolve()
    main_rank = world_from_env()[0] == 0

    def announce(info: Mapping[str, Any]) -> str:
        changes = info.get("changes") or []
        note = f"; {', '.join(changes)}" if changes else ""
        return (f"config: {run / 'config.toml'}, resumed at step {info.get('start_step')}{note}; "
                f"{describe_config(info['config'])}")

    hooks = RichHooks(run, tensorboard, announce=announce) if main_rank else None
    if hooks is not None and (run / "metrics.jsonl").is_file():
        from polyglot_groc.analysis.curves import read_metrics

        hooks.records = list(read_metrics(run / "metrics.jsonl"))  # the curves go on from the earlier ones
    with ReportInterrupts(run, "train", tensorboard, report=main_rank):
        try:
            result = resume(**{**_arguments(resume, ctx.params), "run": run, "hooks": hooks})
        finally:
            if hooks is not None:
                hooks.close()
    report_result(result, report=main_rank, what="training")
