"""``polyglot-groc train`` and ``polyglot-groc evaluate``."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from polyglot_groc.commands._common import (
    ThreadsOption,
    check_non_negative,
    check_positive,
    check_probability,
    cli_errors,
    err_console,
    locked_run_dir,
    print_json,
    setup_logging,
    use_threads,
)
from polyglot_groc.commands.data import LANGUAGES_ENV, LANGUAGES_HELP
from polyglot_groc.config import RunConfig, load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs"
#: --size presets: small trains the sample corpus in about a minute on 2 CPU cores; paper is seed 004's.
SIZES = {"small": DEFAULT_CONFIG / "quickstart.toml", "paper": DEFAULT_CONFIG / "paper.toml"}
EXIT_DIVERGED = 3


def _fmt_eta(seconds: float) -> str:
    if not seconds or seconds != seconds or seconds == float("inf"):
        return "?"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class RichHooks:
    """Progress bar with loss, tokens/s, ETA and the language mix; a log line every ``log_every`` steps;
    after each validation the training-curve PNG (and TensorBoard scalars). CLI only: the library
    never prints, and training/ may not import analysis/."""

    def __init__(self, run_dir: Path | None = None, log_every: int = 100, tensorboard: bool = False) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TextColumn("{task.fields[status]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=err_console, transient=False,
        )
        self.task: Any = None
        self.run_dir = run_dir
        self.log_every = log_every
        self.records: list[Mapping[str, Any]] = []
        self.total: int | None = None
        self.tb: Any = None
        if tensorboard and run_dir is not None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError as exc:
                from groc_base.errors import ConfigError

                raise ConfigError("--tensorboard needs the tensorboard package; pip install "
                                  "'polyglot-groc[tensorboard]' or leave the flag out") from exc
            self.tb = SummaryWriter(log_dir=str(run_dir / "tensorboard"))

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        split = info.get("n_params_split") or {}
        parts = ", ".join(f"{k} {split[k]:,}" for k in ("embeddings", "prefix", "output") if k in split)
        err_console.print(f"training {info['langs']}: {info['n_params']:,} parameters ({parts}), "
                          f"vocabulary {info['vocab']:,}, {info['steps_per_epoch']} steps/epoch")
        self.progress.start()
        self.total = total_steps
        self.task = self.progress.add_task("train", total=total_steps, status="")

    def on_step(self, info: Any) -> None:
        import math

        total = sum(info.lang_batches.values())
        mix = " ".join(f"{k}:{v / total:.0%}" for k, v in sorted(info.lang_batches.items()))
        self.progress.update(self.task, completed=info.step, description=f"epoch {info.epoch:.2f}",
                             status=f"loss {info.loss:.3f} | {info.tokens_per_s:,.0f} tok/s | {mix}")
        if self.log_every and info.step % self.log_every == 0:
            task = self.progress.tasks[0] if self.progress.tasks else None
            eta = task.time_remaining if task is not None else None
            ppl = math.exp(min(info.loss, 50.0))
            self.progress.console.print(
                f"step {info.step}: loss {info.loss:.3f} ppl {ppl:.1f} lr {info.lr:.3g} "
                f"{info.tokens_per_s:,.0f} tok/s ETA {_fmt_eta(eta or 0.0)}", highlight=False)
            if self.tb is not None:
                self.tb.add_scalar("train/loss", info.loss, info.step)
                self.tb.add_scalar("train/tokens_per_s", info.tokens_per_s, info.step)

    def on_eval(self, record: Mapping[str, Any]) -> None:
        ppl = ", ".join(f"{k} {v:.1f}" for k, v in record["valid_perplexity"].items())
        self.progress.console.print(f"step {record['step']}: valid ppl {ppl}")
        self.records.append(record)
        if self.run_dir is not None:
            from polyglot_groc.analysis.curves import plot_curves

            plot_curves({self.run_dir.name: self.records}, self.run_dir / "curves.png", title=str(self.run_dir))
        if self.tb is not None:
            for lang, v in record["valid_perplexity"].items():
                self.tb.add_scalar(f"valid/perplexity/{lang}", v, record["step"])
            self.tb.flush()

    def close(self) -> None:
        self.progress.stop()
        if self.tb is not None:
            self.tb.close()


def build_config(config: Path | None, overrides: list[str], **flags: Any) -> RunConfig:
    """CLI flags become overrides on top of the TOML config; explicit flags win."""
    ov = list(overrides)
    for key, value in flags.items():
        if value is None:
            continue
        if isinstance(value, bool):
            ov.append(f"{key}={'true' if value else 'false'}")
        elif isinstance(value, (list, tuple)):
            items = ", ".join('"' + str(v).replace('"', '\\"') + '"' for v in value)
            ov.append(f"{key}=[{items}]")
        elif isinstance(value, str):
            ov.append(f'{key}="' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')
        else:
            ov.append(f"{key}={value}")
    return load_config(config, ov)


def untied_config(cfg: RunConfig) -> RunConfig:
    """``--untie``: the tied kind becomes untied (seed 003 unties before freezing the input)."""
    import dataclasses
    import logging

    if cfg.model.kind in ("tied", "lookup"):
        return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, kind="untied"))
    if cfg.model.kind != "untied":
        logging.getLogger(__name__).warning("--untie applies to the tied kind only; %s is kept", cfg.model.kind)
    return cfg


def train_command(
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated language codes, e.g. en,fr")] = "en",
    with_: Annotated[str | None, typer.Option("--with", help="Add 'related' (Table 5.1 pair) or a code")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Corpus root <data>/<lang>/<split>.txt")] = None,
    out: Annotated[Path, typer.Option("--out", help="Run directory to create")] = Path("runs/run"),
    model: Annotated[str | None, typer.Option(
        "--model", help="untied | tied (= lookup) | bilinear | deep-residual | adaptive | conv | elmo | groc | groc-lex"
    )] = None,
    size: Annotated[str | None, typer.Option("--size", help="Preset when no --config: small (CPU, ~1 min on the "
                                             "sample) | paper (seed 004)")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="TOML config file")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override, e.g. --set model.d=128")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Stop after N steps (default: config)")] = None,
    max_minutes: Annotated[float | None, typer.Option("--max-minutes", help="Stop after M minutes")] = None,
    max_epochs: Annotated[int | None, typer.Option("--max-epochs", help="Stop after N epochs")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Random seed (default: config)")] = None,
    tokenize: Annotated[str | None, typer.Option("--tokenize", help="whitespace | auto | stanza | toktok")] = None,
    vocab_mode: Annotated[str | None, typer.Option("--vocab-mode", help="closed | open")] = None,
    no_screen: Annotated[bool, typer.Option("--no-screen", help="Score the full union vocabulary")] = False,
    schedule: Annotated[str | None, typer.Option("--schedule", help="proportional | round_robin | temperature")] = None,
    lexicon: Annotated[list[str] | None, typer.Option(
        "--lexicon", help="wn lexicon, repeatable, as `lexicon info` lists them: omw-en, omw-en:3.0 or the full "
                          "omw-en:3.0+<hash> (default: the installed wordnets of --langs)")] = None,
    no_relations: Annotated[bool, typer.Option("--no-relations")] = False,
    no_definitions: Annotated[bool, typer.Option("--no-definitions")] = False,
    lexicon_coverage: Annotated[float | None, typer.Option("--lexicon-coverage", help="Fraction in [0, 1]")] = None,
    threads: Annotated[int | None, typer.Option("--threads", help="CPU threads (default: config; 0 = torch's)")] = None,
    device: Annotated[str | None, typer.Option("--device", help="auto | cpu | cuda | cuda:N (train.device)")] = None,
    precision: Annotated[str | None, typer.Option(
        "--precision", help="fp32 | tf32 | bf16 (train.precision; loss stays fp32)")] = None,
    compile_: Annotated[bool | None, typer.Option(
        "--compile/--no-compile", help="torch.compile the char encoder (train.compile)")] = None,
    init_input: Annotated[Path | None, typer.Option(
        "--init-input", help="Initialise the input table from word2vec vectors, .vec or .bin, plain or .gz "
                             "(seed 003)")] = None,
    freeze_input: Annotated[bool, typer.Option("--freeze-input", help="Keep the input table fixed")] = False,
    untie: Annotated[bool, typer.Option("--untie", help="Use separate input/output tables (tied -> untied)")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory")] = False,
    resume: Annotated[Path | None, typer.Option("--resume", help="Continue this interrupted run exactly "
                                                "(other options are ignored)")] = None,
    log_every: Annotated[int, typer.Option("--log-every", help="Log loss/ppl/lr/tok/s/ETA every N steps")] = 100,
    tensorboard: Annotated[bool, typer.Option("--tensorboard", help="Also write TensorBoard scalars")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    languages: Annotated[Path | None, typer.Option(
        "--languages", envvar=LANGUAGES_ENV, help=LANGUAGES_HELP, show_default=False)] = None,
) -> None:
    """Train a language model (mono- or polyglot) and write a run directory."""
    _train(langs, with_, data, out, model, size, config, set_ or [], max_steps, max_minutes, max_epochs, seed,
           tokenize, vocab_mode, no_screen, schedule, lexicon, no_relations, no_definitions, lexicon_coverage,
           threads, device, overwrite, resume, log_every, tensorboard, verbose, init_input, freeze_input, untie,
           precision, compile_, languages)


@cli_errors
def _train(langs: str, with_: str | None, data: Path | None, out: Path, model: str | None, size: str | None,
           config: Path | None, overrides: list[str], max_steps: int | None, max_minutes: float | None,
           max_epochs: int | None, seed: int | None, tokenize: str | None, vocab_mode: str | None, no_screen: bool,
           schedule: str | None, lexicon: list[str] | None, no_relations: bool, no_definitions: bool,
           lexicon_coverage: float | None, threads: int | None, device: str | None, overwrite: bool,
           resume: Path | None, log_every: int, tensorboard: bool, verbose: bool, init_input: Path | None = None,
           freeze_input: bool = False, untie: bool = False, precision: str | None = None,
           compile_: bool | None = None, languages: Path | None = None) -> None:
    import dataclasses

    from groc_base.errors import ConfigError
    from langpairs.corpus import check_corpora
    from langpairs.registry import load_registry, parse_lang_spec

    setup_logging(verbose)
    # Numbers first: nothing is read or written before the command line is known to be sane.
    check_positive(max_steps=max_steps, max_minutes=max_minutes, max_epochs=max_epochs)
    check_non_negative(threads=threads, log_every=log_every)
    check_probability(lexicon_coverage=lexicon_coverage)
    if resume is not None:
        _resume(resume, log_every, tensorboard)
        return
    if size is not None:
        if size not in SIZES:
            raise ConfigError(f"--size {size!r} is unknown; use {' or '.join(SIZES)}")
        if config is None:
            config = SIZES[size]
    # --languages FILE and the config may define languages ([languages.xx]); resolve --langs against them.
    base = load_config(config, overrides)
    registry = load_registry(languages, config=base.languages, env=False)
    lang_codes = parse_lang_spec(langs, with_, registry=registry)
    # Runs record the absolute data path, so evaluate works from any directory.
    cfg = build_config(
        config, overrides,
        **{"data.langs": list(lang_codes), "data.root": str(data.resolve()) if data else None, "model.kind": model,
           "train.max_steps": max_steps, "train.max_minutes": max_minutes, "train.max_epochs": max_epochs,
           "train.seed": seed, "data.tokenize": tokenize, "data.vocab_mode": vocab_mode,
           "data.screen": False if no_screen else None, "data.schedule": schedule,
           "model.lexicon.specs": lexicon or None, "model.lexicon.use_relations": False if no_relations else None,
           "model.lexicon.use_definitions": False if no_definitions else None,
           "model.lexicon.coverage": lexicon_coverage, "train.threads": threads, "train.device": device,
           "train.precision": precision, "train.compile": compile_,
           "model.init_input": str(init_input) if init_input else None,
           "model.freeze_input": True if freeze_input else None},
    )
    if untie:
        cfg = untied_config(cfg)
    if not cfg.data.root:
        raise ConfigError("no corpus given; pass --data DIR with <DIR>/<lang>/{train,valid,test}.txt")
    # A language --with related added without a corpus is named as such (not as a missing file).
    check_corpora(Path(cfg.data.root), lang_codes, primary=parse_lang_spec(langs, registry=registry),
                  registry=registry)
    # The run records the registry entries it used: evaluate and --resume never need the file again;
    # their wordnets and fallback settings go into the lexicon config.
    from polyglot_groc.commands.lexicon import registry_lexicon

    lex = registry_lexicon(cfg.model.lexicon, cfg.model.kind, lang_codes, registry)
    cfg = dataclasses.replace(cfg, languages={**cfg.languages, **registry.config_tables(lang_codes)},
                              model=dataclasses.replace(cfg.model, lexicon=lex))
    cfg.validate()
    _run_training(cfg, out, overwrite, None, log_every, tensorboard)


def _resume(run: Path, log_every: int, tensorboard: bool) -> None:
    from polyglot_groc.config import load_config
    from polyglot_groc.model.bundle import ModelBundle
    from polyglot_groc.model.checkpoint import load_checkpoint

    run = run.resolve()
    if not (run / "config.toml").is_file() or not (run / "last.pt").is_file():
        from groc_base.errors import InputError

        raise InputError(f"{run} has no config.toml and last.pt to resume from; train it first without --resume")
    cfg = load_config(run / "config.toml", [])
    payload = load_checkpoint(run / "last.pt")
    _run_training(cfg, run, False, payload, log_every, tensorboard, ModelBundle.from_state(payload["bundle"]))


def _run_training(cfg: RunConfig, out: Path, overwrite: bool, payload: Mapping[str, Any] | None, log_every: int,
                  tensorboard: bool, bundle: Any = None) -> None:
    """Lock the run directory, train, write result.json; on an early error leave nothing behind."""
    from groc_base.errors import InputError
    from groc_base.fileio import dumps_json
    from polyglot_groc.model.checkpoint import atomic_write_text
    from polyglot_groc.training.distributed import world_from_env
    from polyglot_groc.training.trainer import Trainer, run_dir_has_content

    out = Path(out)
    # Under torchrun only rank 0 owns the run directory (lock, checks, result.json, output);
    # the other ranks train beside it and write nothing.
    main_rank = world_from_env()[0] == 0
    if main_rank and payload is None and not overwrite and run_dir_has_content(out):
        # Checked before taking the lock, so a refused run leaves not even a lock file behind.
        raise InputError(f"run directory {out} already exists; pass --overwrite or choose another --out")
    clean = ("config.toml", "metrics.jsonl", "curves.png") if payload is None else ()
    owner = locked_run_dir(out, "resume" if payload is not None else "train", clean)
    with owner if main_rank else contextlib.nullcontext():
        # Progress, curves and TensorBoard belong to rank 0 too.
        hooks = RichHooks(out, log_every, tensorboard) if main_rank else None
        if hooks is not None and payload is not None:
            from polyglot_groc.analysis.curves import read_metrics

            if (out / "metrics.jsonl").is_file():
                hooks.records = list(read_metrics(out / "metrics.jsonl"))
        trainer = Trainer(cfg, out, overwrite=overwrite, hooks=hooks, bundle=bundle, resume=payload)
        try:
            result = trainer.fit()
        finally:
            if hooks is not None:
                hooks.close()
        summary = result.to_dict()
        if trainer.bundle.lexicon_info:
            summary["lexicon"] = trainer.bundle.lexicon_info
        if main_rank:
            atomic_write_text(out / "result.json", dumps_json(summary, indent=2) + "\n")
    if main_rank:
        print_json(summary)
    if result.diverged:
        if main_rank:
            err_console.print("error: training diverged; lower train.lr or train.clip (last.pt is the last good state)",
                              highlight=False, markup=False)
        raise typer.Exit(code=EXIT_DIVERGED)


def evaluate_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "test",
    data: Annotated[Path | None, typer.Option("--data", help="Corpus root (default: the run's)")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="Eval batch size (default: config)")] = None,
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="best | last")] = "best",
    no_screen: Annotated[bool, typer.Option("--no-screen", help="Score over the full union vocabulary")] = False,
    cache: Annotated[str, typer.Option("--cache", help="none | unigram | neural (open vocabulary)")] = "none",
    cache_theta: Annotated[float, typer.Option("--cache-theta", help="Neural cache flattening θ >= 0")] = 0.5,
    cache_lambda: Annotated[float, typer.Option("--cache-lambda", help="Model weight λ in [0, 1]")] = 0.966,
    cache_size: Annotated[int, typer.Option("--cache-size", help="Neural cache window")] = 10_000,
    new_word_weight: Annotated[float, typer.Option(
        "--new-word-weight", help="GroC: new words' weight before any cache (1: as the model scores them; "
                                  "the seed used 0.1 with caches; tune-cache tunes it)")] = 1.0,
    uniform_weight: Annotated[float | None, typer.Option(
        "--uniform-weight", help="Lookup models: uniform weight (default: tuned on --data's valid)")] = None,
    lexicon_coverage: Annotated[float | None, typer.Option(
        "--lexicon-coverage", help="groc-lex: fraction of lexicon entries kept at inference")] = None,
    device: Annotated[str, typer.Option(
        "--device", help="auto | cpu | cuda | cuda:N (closed-vocabulary evaluation)")] = "auto",
    threads: ThreadsOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Per-language perplexity of a run on a split, as JSON.

    With --data, a cache, --new-word-weight, --uniform-weight or --lexicon-coverage: open-vocabulary
    evaluation over the union of training and test words (OOV rate, perplexity on seen and new
    words; with a cache also the perplexity without it, and a check on --data's valid split).
    """
    if (data is not None or cache != "none" or new_word_weight != 1.0 or uniform_weight is not None
            or lexicon_coverage is not None):
        from polyglot_groc.commands.crossdomain import evaluate_open_cli

        evaluate_open_cli(run, split, data, checkpoint, cache, cache_theta, cache_lambda, cache_size,
                          new_word_weight, uniform_weight, lexicon_coverage, verbose, threads)
        return
    _evaluate(run, split, data, batch_size, checkpoint, no_screen, device, verbose, threads)


@cli_errors
def _evaluate(run: Path, split: str, data: Path | None, batch_size: int | None, checkpoint: str,
              no_screen: bool, device: str, verbose: bool, threads: int | None = None) -> None:
    from polyglot_groc.analysis.evaluate import evaluate_run

    setup_logging(verbose)
    check_positive(batch_size=batch_size)
    use_threads(threads)
    print_json(evaluate_run(run, split, data, batch_size, checkpoint, screen=not no_screen, device=device))
