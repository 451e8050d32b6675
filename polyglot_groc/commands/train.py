"""``polyglot-groc train`` and ``polyglot-groc evaluate``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from polyglot_groc.commands._common import cli_errors, err_console, print_json, setup_logging
from polyglot_groc.config import RunConfig, load_config

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "configs"


class RichHooks:
    """Progress bar with the language mix, loss and tokens/s (CLI only; the library never prints)."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=err_console, transient=False,
        )
        self.task: Any = None

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        err_console.print(f"training {info['langs']}: {info['n_params']:,} parameters, "
                          f"vocabulary {info['vocab']:,}, {info['steps_per_epoch']} steps/epoch")
        self.progress.start()
        self.task = self.progress.add_task("train", total=total_steps, status="")

    def on_step(self, info: Any) -> None:
        total = sum(info.lang_batches.values())
        mix = " ".join(f"{k}:{v / total:.0%}" for k, v in sorted(info.lang_batches.items()))
        self.progress.update(self.task, advance=1, description=f"epoch {info.epoch:.2f}",
                             status=f"loss {info.loss:.3f} | {info.tokens_per_s:,.0f} tok/s | {mix}")

    def on_eval(self, record: Mapping[str, Any]) -> None:
        ppl = ", ".join(f"{k} {v:.1f}" for k, v in record["valid_perplexity"].items())
        self.progress.console.print(f"step {record['step']}: valid ppl {ppl}")

    def close(self) -> None:
        self.progress.stop()


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


def train_command(
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated language codes, e.g. en,fr")] = "en",
    with_: Annotated[str | None, typer.Option("--with", help="Add 'related' (Table 5.1 pair) or a code")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Corpus root <data>/<lang>/<split>.txt")] = None,
    out: Annotated[Path, typer.Option("--out", help="Run directory to create")] = Path("runs/run"),
    model: Annotated[str | None, typer.Option("--model", help="lookup | elmo | groc | groc-lex")] = None,
    config: Annotated[Path | None, typer.Option("--config", help="TOML config file")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override, e.g. --set model.d=128")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps")] = None,
    max_minutes: Annotated[float | None, typer.Option("--max-minutes")] = None,
    max_epochs: Annotated[int | None, typer.Option("--max-epochs")] = None,
    seed: Annotated[int | None, typer.Option("--seed")] = None,
    tokenize: Annotated[str | None, typer.Option("--tokenize", help="whitespace | auto | stanza | toktok")] = None,
    vocab_mode: Annotated[str | None, typer.Option("--vocab-mode", help="closed | open")] = None,
    no_screen: Annotated[bool, typer.Option("--no-screen", help="Score the full union vocabulary")] = False,
    schedule: Annotated[str | None, typer.Option("--schedule", help="proportional | round_robin | temperature")] = None,
    lexicon: Annotated[list[str] | None, typer.Option("--lexicon", help="Lexicon spec, e.g. omw-en:1.4")] = None,
    no_relations: Annotated[bool, typer.Option("--no-relations")] = False,
    no_definitions: Annotated[bool, typer.Option("--no-definitions")] = False,
    lexicon_coverage: Annotated[float | None, typer.Option("--lexicon-coverage")] = None,
    threads: Annotated[int | None, typer.Option("--threads")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Train a language model (mono- or polyglot) and write a run directory."""
    _train(langs, with_, data, out, model, config, set_ or [], max_steps, max_minutes, max_epochs, seed, tokenize,
           vocab_mode, no_screen, schedule, lexicon, no_relations, no_definitions, lexicon_coverage, threads,
           overwrite, verbose)


@cli_errors
def _train(langs: str, with_: str | None, data: Path | None, out: Path, model: str | None, config: Path | None,
           overrides: list[str], max_steps: int | None, max_minutes: float | None, max_epochs: int | None,
           seed: int | None, tokenize: str | None, vocab_mode: str | None, no_screen: bool, schedule: str | None,
           lexicon: list[str] | None, no_relations: bool, no_definitions: bool, lexicon_coverage: float | None,
           threads: int | None, overwrite: bool, verbose: bool) -> None:
    from langpairs.registry import parse_lang_spec
    from polyglot_groc.training.data import language_registry
    from polyglot_groc.training.trainer import Trainer

    setup_logging(verbose)
    # The config may define languages ([languages.xx]); resolve --langs against them.
    base = load_config(config, overrides)
    lang_codes = parse_lang_spec(langs, with_, registry=language_registry(base.languages))
    cfg = build_config(
        config, overrides,
        **{"data.langs": list(lang_codes), "data.root": str(data) if data else None, "model.kind": model,
           "train.max_steps": max_steps, "train.max_minutes": max_minutes, "train.max_epochs": max_epochs,
           "train.seed": seed, "data.tokenize": tokenize, "data.vocab_mode": vocab_mode,
           "data.screen": False if no_screen else None, "data.schedule": schedule,
           "model.lexicon.specs": lexicon or None, "model.lexicon.use_relations": False if no_relations else None,
           "model.lexicon.use_definitions": False if no_definitions else None,
           "model.lexicon.coverage": lexicon_coverage, "train.threads": threads},
    )
    if not cfg.data.root:
        from lexicons.errors import ConfigError

        raise ConfigError("no corpus given; pass --data DIR with <DIR>/<lang>/{train,valid,test}.txt")
    hooks = RichHooks()
    trainer = Trainer(cfg, out, overwrite=overwrite, hooks=hooks)
    try:
        result = trainer.fit()
    finally:
        hooks.close()
    summary = result.to_dict()
    if trainer.bundle.lexicon_info:
        summary["lexicon"] = trainer.bundle.lexicon_info
    import json

    from polyglot_groc.model.checkpoint import atomic_write_text

    atomic_write_text(Path(out) / "result.json", json.dumps(summary, indent=2) + "\n")
    print_json(summary)


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
    new_word_weight: Annotated[float, typer.Option("--new-word-weight", help="GroC: new words' weight")] = 0.1,
    uniform_weight: Annotated[float | None, typer.Option(
        "--uniform-weight", help="Lookup models: uniform weight (default: tuned on --data's valid)")] = None,
    lexicon_coverage: Annotated[float | None, typer.Option(
        "--lexicon-coverage", help="groc-lex: fraction of lexicon entries kept at inference")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Per-language perplexity of a run on a split, as JSON.

    With --data, a cache, --uniform-weight or --lexicon-coverage: open-vocabulary evaluation
    over the union of training and test words (OOV rate, perplexity on seen and new words).
    """
    if data is not None or cache != "none" or uniform_weight is not None or lexicon_coverage is not None:
        from polyglot_groc.commands.crossdomain import evaluate_open_cli

        evaluate_open_cli(run, split, data, checkpoint, cache, cache_theta, cache_lambda, cache_size,
                          new_word_weight, uniform_weight, lexicon_coverage, verbose)
        return
    _evaluate(run, split, data, batch_size, checkpoint, no_screen, verbose)


@cli_errors
def _evaluate(run: Path, split: str, data: Path | None, batch_size: int | None, checkpoint: str,
              no_screen: bool, verbose: bool) -> None:
    from polyglot_groc.analysis.evaluate import evaluate_run

    setup_logging(verbose)
    print_json(evaluate_run(run, split, data, batch_size, checkpoint, screen=not no_screen))
