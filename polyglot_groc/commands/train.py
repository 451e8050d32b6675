"""``polyglot-groc train`` and ``polyglot-groc evaluate``.

``train`` is a thin face over :func:`polyglot_groc.training.workflows.train` and ``train --resume``
over :func:`~polyglot_groc.training.workflows.resume`: the command parses its flags into
arguments and config overrides, passes its progress display (:class:`RichHooks`), prints the
result and maps errors, divergence and interrupts (:class:`ReportInterrupts`) to exit codes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from polyglot_groc.commands._common import (
    EXIT_DIVERGED,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    ThreadsOption,
    check_non_negative,
    check_positive,
    check_probability,
    cli_errors,
    err_console,
    fresh_output,
    print_json,
    setup_logging,
)
from polyglot_groc.commands.data import LANGUAGES_ENV, LANGUAGES_HELP
from polyglot_groc.config import (
    AUTO_SAMPLED_ABOVE,
    MODEL_KINDS,
    PRESETS,
    RunConfig,
    load_config,
    merge_overrides,
    parse_overrides,
)
from polyglot_groc.training.interrupts import Terminated, TrainingInterrupted, stop_signals
from polyglot_groc.training.progress import ProgressBar


class RichHooks(ProgressBar):
    """The library's :class:`~polyglot_groc.training.progress.ProgressBar` (loss, tokens/s, ETA honouring
    --max-minutes, the language mix; a log line at the trainer's log points), plus what only the
    command line does: the line saying which config this is, the training-curve PNG after each
    validation and TensorBoard scalars. CLI only: the library never prints, and training/ may not
    import analysis/."""

    def __init__(self, run_dir: Path | None = None, tensorboard: bool = False,
                 announce: Callable[[Mapping[str, Any]], str] | None = None) -> None:
        super().__init__(console=err_console)
        self.run_dir = run_dir
        #: The line saying which config this is, made from on_start's info (printed before the model's size).
        self.announce = announce
        self.records: list[Mapping[str, Any]] = []
        self.tb: Any = None
        self.tensorboard = tensorboard and run_dir is not None
        if self.tensorboard:
            try:  # checked now, before anything is written; the writer is made in on_start
                import torch.utils.tensorboard  # noqa: F401
            except ImportError as exc:
                from groc_base.errors import ConfigError

                raise ConfigError("--tensorboard needs the tensorboard package; pip install "
                                  "'polyglot-groc[tensorboard]' or leave the flag out") from exc

    def _open_tensorboard(self, start_step: int) -> None:
        """``RUN/tensorboard``, made only once the trainer has prepared the run directory (a writer
        made earlier creates it, and a new run would then find its directory "already exists").
        A new run starts a fresh log; a resumed one purges the events logged after its checkpoint."""
        import shutil

        from torch.utils.tensorboard import SummaryWriter

        assert self.run_dir is not None
        log_dir = self.run_dir / "tensorboard"
        if start_step == 0:
            shutil.rmtree(log_dir, ignore_errors=True)  # the replaced run's events (--overwrite)
        self.tb = SummaryWriter(log_dir=str(log_dir), purge_step=start_step + 1 if start_step else None)

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        if self.tensorboard and self.tb is None:
            self._open_tensorboard(int(info.get("start_step", 0)))
        if self.announce is not None:
            err_console.print(self.announce(info), highlight=False, markup=False)
        super().on_start(total_steps, info)

    def on_step(self, info: Any) -> None:
        import math

        super().on_step(info)
        if info.logged and self.tb is not None:  # the log line's scalars (ETA aside)
            ppl = math.exp(min(info.loss, 50.0))
            for name, value in (("loss", info.loss), ("perplexity", ppl), ("lr", info.lr),
                                ("tokens_per_s", info.tokens_per_s), ("epoch", info.epoch)):
                self.tb.add_scalar(f"train/{name}", value, info.step)

    def on_eval(self, record: Mapping[str, Any]) -> None:
        super().on_eval(record)
        self.records.append(record)
        if self.run_dir is not None:
            from polyglot_groc.analysis.curves import plot_curves

            plot_curves({self.run_dir.name: self.records}, self.run_dir / "curves.png", title=str(self.run_dir))
        if self.tb is not None:
            for lang, v in record["valid_perplexity"].items():
                self.tb.add_scalar(f"valid/perplexity/{lang}", v, record["step"])
            self.tb.add_scalar("valid/nll", record["valid_nll"], record["step"])
            self.tb.flush()

    def close(self) -> None:
        super().close()
        if self.tb is not None:
            self.tb.close()


def describe_config(cfg: RunConfig) -> str:
    """The configuration in a few words: kind, sizes, output net, budget."""
    m, t = cfg.model, cfg.train
    budget = [f"{t.max_steps} steps" if t.max_steps else "", f"{t.max_epochs} epochs",
              f"{t.max_minutes:g} minutes" if t.max_minutes else ""]
    return (f"model {m.kind}: d {m.d}, {m.prefix.n_layers}x{m.prefix.hidden} LSTM, output dropout "
            f"{m.output.dropout:g}, depth {m.output.depth}; at most {' / '.join(b for b in budget if b)}")


@functools.cache
def _presets() -> tuple[dict[str, Any], dict[str, Any]]:
    from polyglot_groc.config import to_dict

    return to_dict(load_config(PRESETS["small"])), to_dict(load_config(PRESETS["paper"]))


def _cfg_default(key: str) -> str:
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


#: What --resume can change: how far the run goes and how this invocation runs and reports.
#: Everything else is the run's own config (config.toml) and is refused with --resume.
RESUME_OPTIONS = frozenset({"resume", "max_steps", "max_epochs", "max_minutes", "threads", "device", "precision",
                            "compile_", "log_every", "tensorboard", "verbose", "accept_changed_data"})


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


def train_command(
    ctx: typer.Context,
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated language codes, e.g. en,fr")] = "en",
    with_: Annotated[str | None, typer.Option(
        "--with", help="Add 'related' (the Table 5.1 pair of --langs) or a language code",
        show_default="none")] = None,
    data: Annotated[Path | None, typer.Option(
        "--data", help="Corpus root: <DATA>/<lang>/{train,valid,test}.txt (data.root)",
        show_default="config's data.root; required if it has none")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Run directory to create",
        show_default="a new runs/<langs>[-<model>][-N], never an existing one (printed)")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model kind, with its own output-net defaults (seed 000 Table 8): "
        + " | ".join("tied (= lookup)" if k == "tied" else k for k in MODEL_KINDS if k != "lookup")
        + " (docs/models.md)", show_default=_cfg_default("model.kind"),
    )] = None,
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
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", help="Stop after N steps in all (with --resume: extend the run to N)",
        show_default=_cfg_default("train.max_steps") + " = no step limit")] = None,
    max_minutes: Annotated[float | None, typer.Option(
        "--max-minutes", help="Stop after M minutes of this invocation",
        show_default=_cfg_default("train.max_minutes") + " = no time limit")] = None,
    max_epochs: Annotated[int | None, typer.Option(
        "--max-epochs", help="Stop after N epochs in all (with --resume: extend the run to N)",
        show_default=_cfg_default("train.max_epochs"))] = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Random seed", show_default=_cfg_default("train.seed"))] = None,
    tokenize: Annotated[str | None, typer.Option(
        "--tokenize", help="whitespace | auto | stanza | toktok", show_default=_cfg_default("data.tokenize"))] = None,
    vocab_mode: Annotated[str | None, typer.Option(
        "--vocab-mode", help="closed (train+valid+test words) | open (train words only)",
        show_default=_cfg_default("data.vocab_mode"))] = None,
    no_screen: Annotated[bool, typer.Option(
        "--no-screen", help="Score the full union vocabulary instead of the batch language's (data.screen=false)",
        show_default="off: screened")] = False,
    schedule: Annotated[str | None, typer.Option(
        "--schedule", help="Language mix of the batches: proportional | round_robin | temperature",
        show_default=_cfg_default("data.schedule"))] = None,
    lexicon: Annotated[list[str] | None, typer.Option(
        "--lexicon", help="groc-lex: wn lexicon, repeatable, as `lexicon info` lists them: omw-en, omw-en:3.0 or "
                          "the full omw-en:3.0+<hash> (model.lexicon.specs)",
        show_default="config's model.lexicon.specs: none = the installed wordnets of --langs")] = None,
    no_relations: Annotated[bool, typer.Option(
        "--no-relations", help="groc-lex: leave out the related words r (model.lexicon.use_relations=false)",
        show_default="off: relations used")] = False,
    no_definitions: Annotated[bool, typer.Option(
        "--no-definitions", help="groc-lex: leave out the definition words d (model.lexicon.use_definitions=false)",
        show_default="off: definitions used")] = False,
    lexicon_coverage: Annotated[float | None, typer.Option(
        "--lexicon-coverage", help="groc-lex: fraction in [0, 1] of lexicon entries kept",
        show_default=_cfg_default("model.lexicon.coverage"))] = None,
    wn_dir: Annotated[Path | None, typer.Option(
        "--wn-dir", help="groc-lex: the wn data folder of `lexicon import --wn-dir` (model.lexicon.wn_dir; the run "
                         "records it)",
        show_default="$POLYGLOT_GROC_WN_DIR, else wn's own ~/.wn_data")] = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", help="CPU threads; 0: torch's choice",
        show_default=_cfg_default("train.threads"))] = None,
    device: Annotated[str | None, typer.Option(
        "--device", help="auto (CUDA when available) | cpu | cuda | cuda:N",
        show_default=_cfg_default("train.device"))] = None,
    precision: Annotated[str | None, typer.Option(
        "--precision", help="auto | fp32 | tf32 | bf16 (auto: bf16 on a CUDA GPU that has it, else fp32; the loss "
                            "stays fp32)",
        show_default=_cfg_default("train.precision"))] = None,
    softmax: Annotated[str | None, typer.Option(
        "--softmax", help="Training softmax: full | sampled | auto (auto: sampled above "
                          f"{AUTO_SAMPLED_ABOVE:,} words per language); perplexities are always the full softmax",
        show_default=_cfg_default("train.softmax"))] = None,
    sampled_k: Annotated[int | None, typer.Option(
        "--sampled-k", help="Draws of negatives per sampled step (train.sampled_k)",
        show_default=_cfg_default("train.sampled_k"))] = None,
    compile_: Annotated[bool | None, typer.Option(
        "--compile/--no-compile", help="torch.compile the char encoder",
        show_default=_cfg_default("train.compile"))] = None,
    init_input: Annotated[Path | None, typer.Option(
        "--init-input", help="Initialise the input table from word2vec vectors, .vec or .bin, plain or .gz "
                             "(seed 003)",
        show_default="none: random init")] = None,
    freeze_input: Annotated[bool, typer.Option(
        "--freeze-input", help="Keep the input table fixed (model.freeze_input)", show_default="off")] = False,
    untie: Annotated[bool, typer.Option(
        "--untie", help="Use separate input/output tables (tied -> untied)", show_default="off")] = False,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Replace an existing run directory", show_default="off")] = False,
    resume: Annotated[Path | None, typer.Option(
        "--resume", help="Continue this interrupted run exactly, with its own config",
        show_default="none: a new run")] = None,
    accept_changed_data: Annotated[bool, typer.Option(
        "--accept-changed-data", help="With --resume: go on although the run's corpus files changed since it "
                                      "started (refused otherwise; the run records the new data)",
        show_default="off")] = False,
    log_every: Annotated[int | None, typer.Option(
        "--log-every", help="Log loss/ppl/lr/tok/s/ETA every N steps; 0: no log lines (train.log_every)",
        show_default=_cfg_default("train.log_every"))] = None,
    tensorboard: Annotated[bool, typer.Option(
        "--tensorboard", help="Also write TensorBoard scalars to RUN/tensorboard", show_default="off")] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Log INFO messages (data, device, model) to stderr", show_default="off")] = False,
    languages: Annotated[Path | None, typer.Option(
        "--languages", envvar=LANGUAGES_ENV, help=LANGUAGES_HELP + "; the run records the entries it uses",
        show_default="$POLYGLOT_GROC_LANGUAGES, else the built-in ten")] = None,
) -> None:
    """Train a language model (mono- or polyglot) and write a run directory.

    With --resume RUN: continue RUN exactly where its last checkpoint left it, with its own config;
    a larger --max-steps or --max-epochs extends a finished run. Ctrl-C or SIGTERM stop a run with a
    line saying which checkpoint was kept and the command that resumes it (exit 130 or 143).
    """
    resume_flags = {p.name: p.opts[0] for p in ctx.command.params if p.name in RESUME_OPTIONS}
    not_for_resume = [f for f in given_options(ctx) if f not in resume_flags.values()]
    _train(langs, with_, data, out, model, size, config, set_ or [], max_steps, max_minutes, max_epochs, seed,
           tokenize, vocab_mode, no_screen, schedule, lexicon, no_relations, no_definitions, lexicon_coverage,
           threads, device, overwrite, resume, log_every, tensorboard, verbose, init_input, freeze_input, untie,
           precision, compile_, not_for_resume=not_for_resume, wn_dir=wn_dir, languages=languages,
           softmax=softmax, sampled_k=sampled_k, accept_changed_data=accept_changed_data)


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


@cli_errors
def _train(langs: str, with_: str | None, data: Path | None, out: Path | None, model: str | None, size: str | None,
           config: Path | None, overrides: list[str], max_steps: int | None, max_minutes: float | None,
           max_epochs: int | None, seed: int | None, tokenize: str | None, vocab_mode: str | None, no_screen: bool,
           schedule: str | None, lexicon: list[str] | None, no_relations: bool, no_definitions: bool,
           lexicon_coverage: float | None, threads: int | None, device: str | None, overwrite: bool,
           resume: Path | None, log_every: int | None, tensorboard: bool, verbose: bool, init_input: Path | None = None,
           freeze_input: bool = False, untie: bool = False, precision: str | None = None,
           compile_: bool | None = None, not_for_resume: list[str] | None = None,
           wn_dir: Path | None = None, languages: Path | None = None, softmax: str | None = None,
           sampled_k: int | None = None, accept_changed_data: bool = False) -> None:
    from groc_base.errors import ConfigError
    from polyglot_groc.training.distributed import world_from_env
    from polyglot_groc.training.workflows import train

    setup_logging(verbose)
    # Numbers first: nothing is read or written before the command line is known to be sane.
    check_positive(max_steps=max_steps, max_minutes=max_minutes, max_epochs=max_epochs)
    check_non_negative(threads=threads, log_every=log_every)
    check_positive(sampled_k=sampled_k)
    check_probability(lexicon_coverage=lexicon_coverage)
    if resume is not None:
        if not_for_resume:
            them = "it" if len(not_for_resume) == 1 else "them"
            raise ConfigError(f"--resume continues {resume} with its own config, so {', '.join(not_for_resume)} "
                              f"cannot apply; drop {them} (with --resume only --max-steps, --max-epochs, "
                              "--max-minutes, --threads, --device, --precision, --compile, --log-every, "
                              "--tensorboard, --verbose and --accept-changed-data apply)")
        _resume(resume, tensorboard, max_steps=max_steps, max_epochs=max_epochs, max_minutes=max_minutes,
                threads=threads, device=device, precision=precision, compile=compile_, log_every=log_every,
                accept_changed_data=accept_changed_data)
        return
    out = _new_run_out(out, langs, model, accept_changed_data)
    # The flags that set a config key the library takes no argument for; they win over --set.
    flags: dict[str, Any] = {
        "train.seed": seed, "data.tokenize": tokenize, "data.vocab_mode": vocab_mode,
        "data.screen": False if no_screen else None, "data.schedule": schedule,
        "model.lexicon.specs": lexicon or None, "model.lexicon.use_relations": False if no_relations else None,
        "model.lexicon.use_definitions": False if no_definitions else None,
        "model.lexicon.coverage": lexicon_coverage, "model.lexicon.wn_dir": str(wn_dir) if wn_dir else None,
        "train.precision": precision, "train.compile": compile_, "train.log_every": log_every,
        "train.softmax": softmax, "train.sampled_k": sampled_k,
        "model.init_input": str(init_input) if init_input else None,
        "model.freeze_input": True if freeze_input else None}
    also = [c.strip() for c in (with_ or "").split(",") if c.strip()]
    if config is None:
        source = f"--size {size or 'small'}{'' if size else ' (the default; --size paper for the paper model)'}"
    else:
        source = f"--config {config}"
    if overrides:
        source += f" with {len(overrides)} --set override{'s' if len(overrides) > 1 else ''}"
    # Under torchrun, progress and output belong to rank 0.
    main_rank = world_from_env()[0] == 0
    hooks = RichHooks(out, tensorboard, announce=lambda info: f"config: {source}; {describe_config(info['config'])}") \
        if main_rank else None
    with ReportInterrupts(out, "train", tensorboard, report=main_rank):
        try:
            result = train(out=out, langs=langs, data=data, model=model, size=size, config=config,
                           overrides=merge_overrides(parse_overrides(overrides), flags),
                           with_related="related" in also, extra_langs=[c for c in also if c != "related"],
                           untie=untie, max_steps=max_steps, max_epochs=max_epochs, max_minutes=max_minutes,
                           threads=threads, device=device, overwrite=overwrite, hooks=hooks, languages=languages)
        finally:
            if hooks is not None:
                hooks.close()
    report_result(result, report=main_rank, what="training")


def _resume(run: Path, tensorboard: bool, **limits_and_runtime: Any) -> None:
    """``train --resume``: new stop limits extend the run, runtime flags apply to this invocation (both
    are written to its config.toml)."""
    from polyglot_groc.training.distributed import world_from_env
    from polyglot_groc.training.workflows import resume

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
            result = resume(run=run, hooks=hooks, **limits_and_runtime)
        finally:
            if hooks is not None:
                hooks.close()
    report_result(result, report=main_rank, what="training")


def report_result(result: Any, *, report: bool, what: str, fix: str = "train.lr or train.clip") -> None:
    """Print the result's JSON; a diverged run then says so in one line and exits 3."""
    if report:
        print_json(result.to_dict())
    if result.diverged:
        if report:
            report_line = result.divergence_report(fix).replace("training diverged", f"{what} diverged", 1)
            err_console.print(f"error: {report_line}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(code=EXIT_DIVERGED)


class ReportInterrupts:
    """``with ReportInterrupts(out, "train"):`` SIGTERM inside the block stops like Ctrl-C
    (:func:`~polyglot_groc.training.interrupts.stop_signals`); either ends the command with one
    :func:`interrupt_report` line and exit 130 / 143, from the workflow's :class:`TrainingInterrupted`
    (the step reached, the checkpoint kept) or, before training started, from the bare signal.
    ``report=False`` (other torchrun ranks) prints nothing."""

    def __init__(self, out: Path, command: str, tensorboard: bool = False, report: bool = True) -> None:
        self.out, self.command, self.tensorboard, self.report = Path(out), command, tensorboard, report
        self._signals = stop_signals()

    def __enter__(self) -> ReportInterrupts:
        self._signals.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        self._signals.__exit__(None, None, None)
        if exc is None or not isinstance(exc, (KeyboardInterrupt, Terminated)):
            return False
        stopped = exc if isinstance(exc, TrainingInterrupted) else None
        sigterm = isinstance(exc, Terminated) or (stopped is not None and stopped.signal == "SIGTERM")
        if self.report:
            step = stopped.step if stopped is not None else None
            kept = stopped.checkpoint_step if stopped is not None else None
            err_console.print(interrupt_report(self.out, "SIGTERM" if sigterm else "Ctrl-C (SIGINT)", step, kept,
                                               self.tensorboard, self.command),
                              highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(code=EXIT_SIGTERM if sigterm else EXIT_SIGINT) from None


def interrupt_report(out: Path, signal_name: str, step: int | None, kept_step: int | None,
                     tensorboard: bool = False, command: str = "train") -> str:
    """One line: what stopped the run, which checkpoint was kept, and the exact command to resume."""
    import shlex

    at = f" at step {step}" if step else ""
    if (out / "last.pt").is_file():
        which = f"the step-{kept_step} checkpoint" if kept_step is not None else "the last checkpoint"
        best = ", best.pt beside it" if (out / "best.pt").is_file() else ""
        command = f"polyglot-groc train --resume {shlex.quote(str(out))}" + (" --tensorboard" if tensorboard else "")
        return (f"interrupted by {signal_name}{at}: kept {which} {out / 'last.pt'} (the last validation{best}); "
                f"resume with: {command}")
    gone = f" ({out} was removed)" if not out.exists() else ""
    return (f"interrupted by {signal_name}{at} before the first checkpoint: nothing was kept{gone}; "
            f"run the same {command} command again to start over")


def evaluate_command(
    run: Annotated[Path, typer.Argument(help="Run directory (written by train)")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "test",
    data: Annotated[Path | None, typer.Option(
        "--data", help="Corpus root to score instead (open-vocabulary evaluation)",
        show_default="the run's data.root")] = None,
    batch_size: Annotated[int | None, typer.Option(
        "--batch-size", help="Eval batch size (parallel streams)",
        show_default="the run's train.eval_batch_size; open vocabulary: 1")] = None,
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="best | last")] = "best",
    no_screen: Annotated[bool, typer.Option(
        "--no-screen", help="Score over the full union vocabulary", show_default="off: screened")] = False,
    cache: Annotated[str, typer.Option("--cache", help="none | unigram | neural (open vocabulary)")] = "none",
    cache_theta: Annotated[float, typer.Option("--cache-theta", help="Neural cache flattening θ >= 0")] = 0.5,
    cache_lambda: Annotated[float, typer.Option("--cache-lambda", help="Model weight λ in [0, 1]")] = 0.966,
    cache_size: Annotated[int, typer.Option("--cache-size", help="Neural cache window")] = 10_000,
    new_word_weight: Annotated[float, typer.Option(
        "--new-word-weight", help="GroC: new words' weight before any cache (1: as the model scores them; "
                                  "the seed used 0.1 with caches; tune-cache tunes it)")] = 1.0,
    uniform_weight: Annotated[float | None, typer.Option(
        "--uniform-weight", help="Lookup models: uniform weight of new words",
        show_default="tuned on --data's valid")] = None,
    lexicon_coverage: Annotated[float | None, typer.Option(
        "--lexicon-coverage", help="groc-lex: fraction of lexicon entries kept at inference",
        show_default="the run's model.lexicon.coverage")] = None,
    device: Annotated[str, typer.Option(
        "--device", help="auto | cpu | cuda | cuda:N")] = "auto",
    threads: ThreadsOption = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Log INFO messages to stderr", show_default="off")] = False,
) -> None:
    """Per-language perplexity of a run on a split, as JSON.

    With --data, a cache, --new-word-weight, --uniform-weight or --lexicon-coverage: open-vocabulary
    evaluation over the union of training and test words (OOV rate, perplexity on seen and new
    words; with a cache also the perplexity without it, and a check on --data's valid split).
    """
    _evaluate(run, split, data, batch_size, checkpoint, no_screen, device, verbose, threads, cache, cache_theta,
              cache_lambda, cache_size, new_word_weight, uniform_weight, lexicon_coverage)


@cli_errors
def _evaluate(run: Path, split: str, data: Path | None, batch_size: int | None, checkpoint: str,
              no_screen: bool, device: str, verbose: bool, threads: int | None = None, cache: str = "none",
              cache_theta: float = 0.5, cache_lambda: float = 0.966, cache_size: int = 10_000,
              new_word_weight: float = 1.0, uniform_weight: float | None = None,
              lexicon_coverage: float | None = None) -> None:
    from polyglot_groc.analysis.evaluate import evaluate

    setup_logging(verbose)
    print_json(evaluate(run=run, split=split, data=data, checkpoint=checkpoint, batch_size=batch_size,
                        screen=not no_screen, device=device, threads=threads, cache=cache, cache_theta=cache_theta,
                        cache_lambda=cache_lambda, cache_size=cache_size, new_word_weight=new_word_weight,
                        uniform_weight=uniform_weight, lexicon_coverage=lexicon_coverage).to_dict())
