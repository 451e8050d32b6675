"""``polyglot-groc init-from-elmo``: a GroC run initialised from an ELMo-like model, then finetuned.

Two sources: an ``elmo``-kind run of this toolkit (``ELMO_RUN``), or bilm-tf weights
(``--elmo-options``/``--elmo-weights`` with ``--data``/``--langs``). Either way the converted
model's validation perplexity is measured before finetuning (it is expected to be astronomically
bad, seed 004 Table 5.6), printed, and written as metrics.jsonl's first line (step 0); then the
model is finetuned with the ordinary trainer, so the result is an ordinary GroC run directory.

Mounted in ``polyglot_groc/cli.py`` with ``app.command("init-from-elmo")(init_from_elmo_command)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from groc_base.fileio import dumps_json
from polyglot_groc.commands._common import (
    ThreadsOption,
    check_positive,
    cli_errors,
    err_console,
    print_json,
    setup_logging,
    use_threads,
)
from polyglot_groc.config import RunConfig, load_config, merge_overrides, parse_overrides, to_dict

#: Table 5.6's longest finetuning, which matched GroC trained from scratch for 100 epochs.
DEFAULT_FINETUNE_EPOCHS = 40
#: Seed 004 appendix C.2: the best finetuning learning rate of a 10-value search.
DEFAULT_LR = 1e-3


def init_from_elmo_command(
    elmo_run: Annotated[Path | None, typer.Argument(help="An elmo run directory (or use --elmo-options)")] = None,
    out: Annotated[Path, typer.Option("--out", help="GroC run directory to create")] = Path("runs/groc-from-elmo"),
    finetune_epochs: Annotated[int | None, typer.Option(
        "--finetune-epochs", help=f"Finetuning epochs (default {DEFAULT_FINETUNE_EPOCHS})")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Finetune for this many steps instead")] = None,
    lr: Annotated[float | None, typer.Option(
        "--lr", help=f"Initial finetuning learning rate (default {DEFAULT_LR:g}, seed 004 C.2)")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Corpus root (default: the elmo run's)")] = None,
    eval_every: Annotated[int | None, typer.Option(
        "--eval-every", help="Validate every S steps (default: every epoch)")] = None,
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="Elmo run checkpoint: best | last")] = "best",
    elmo_options: Annotated[Path | None, typer.Option("--elmo-options", help="bilm-tf options.json")] = None,
    elmo_weights: Annotated[Path | None, typer.Option("--elmo-weights", help="bilm-tf lm_weights.hdf5")] = None,
    langs: Annotated[str | None, typer.Option("--langs", help="Languages, with --elmo-weights (default en)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override, e.g. --set train.threads=1")] = None,
    threads: ThreadsOption = None,
    device: Annotated[str | None, typer.Option("--device", help="auto | cpu | cuda | cuda:N (train.device)")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Initialise a GroC model from an ELMo-like model, report its perplexity, and finetune it."""
    overrides = merge_overrides(parse_overrides(set_ or []), {"train.device": device})
    _init_from_elmo(elmo_run, out, finetune_epochs, max_steps, lr, data, eval_every, checkpoint, elmo_options,
                    elmo_weights, langs, overrides, threads, overwrite, verbose)


def _train_overrides(finetune_epochs: int | None, max_steps: int | None, lr: float | None,
                     eval_every: int | None, threads: int | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(defaults, explicit): defaults go before the user's --set overrides, explicit flags after
    them (flags win, as in ``train``), so --set train.lr=... is not undone by --lr's default."""
    from groc_base.errors import ConfigError

    if finetune_epochs is not None and max_steps is not None:
        raise ConfigError("--finetune-epochs and --max-steps both given; pass one of them")
    for name, val in (("--finetune-epochs", finetune_epochs), ("--max-steps", max_steps), ("--lr", lr)):
        if val is not None and val <= 0:
            raise ConfigError(f"{name}={val} must be positive")
    if eval_every is not None and eval_every < 0:
        raise ConfigError(f"--eval-every={eval_every} must be >= 0 (0: every epoch)")
    # The elmo run's own budget (steps, minutes) is not the finetuning budget.
    defaults = {"train.lr": DEFAULT_LR, "train.max_minutes": 0.0, "train.max_steps": 0,
                "train.max_epochs": DEFAULT_FINETUNE_EPOCHS}
    explicit: dict[str, Any] = {"train.lr": lr, "train.eval_every": eval_every, "train.threads": threads}
    if max_steps is not None:
        # max_epochs stays a cap the steps never reach in practice.
        explicit.update({"train.max_steps": max_steps, "train.max_epochs": 1000000})
    if finetune_epochs is not None:
        explicit.update({"train.max_steps": 0, "train.max_epochs": finetune_epochs})
    return defaults, merge_overrides(explicit)


def _check_overrides(overrides: Mapping[str, Any], allowed: tuple[str, ...], forbidden: tuple[str, ...],
                     why: str) -> None:
    from groc_base.errors import ConfigError

    for key in overrides:
        bad = any(key == f or key.startswith(f + ".") for f in forbidden)
        if bad or (allowed and not any(key == a or key.startswith(a + ".") for a in allowed)):
            raise ConfigError(f"--set {key} is not allowed here: {why}; drop it")


@cli_errors
def _init_from_elmo(elmo_run: Path | None, out: Path, finetune_epochs: int | None, max_steps: int | None,
                    lr: float | None,
                    data: Path | None, eval_every: int | None, checkpoint: str, elmo_options: Path | None,
                    elmo_weights: Path | None, langs: str | None, overrides: dict[str, Any], threads: int | None,
                    overwrite: bool, verbose: bool) -> None:
    from groc_base.errors import ConfigError
    from polyglot_groc.commands.train import ReportInterrupts, RichHooks
    from polyglot_groc.elmo.convert import finetune_converted

    setup_logging(verbose)
    check_positive(finetune_epochs=finetune_epochs, max_steps=max_steps, lr=lr, eval_every=eval_every)
    use_threads(threads)  # the conversion runs the model too, before the trainer's train.threads
    weights_mode = elmo_options is not None or elmo_weights is not None
    if weights_mode and elmo_run is not None:
        raise ConfigError("give either an elmo run directory or --elmo-options/--elmo-weights, not both")
    if not weights_mode and elmo_run is None:
        raise ConfigError("nothing to convert; pass an elmo run directory or --elmo-options and --elmo-weights")
    train_ov = _train_overrides(finetune_epochs, max_steps, lr, eval_every, threads)
    if weights_mode:
        bundle, cfg, report = _from_weights(elmo_options, elmo_weights, data, langs, overrides, *train_ov)
    else:
        assert elmo_run is not None
        if langs is not None:
            raise ConfigError("--langs applies to --elmo-weights; an elmo run keeps its own languages")
        bundle, cfg, report = _from_run(elmo_run, checkpoint, data, overrides, *train_ov)

    from polyglot_groc.training.runlock import RunLock

    # one writer per run directory; Ctrl-C / SIGTERM say what was kept and how to resume
    with ReportInterrupts(Path(out), "init-from-elmo") as watch, RunLock(out, "init-from-elmo"):
        hooks = watch.hooks = RichHooks(Path(out))
        try:
            result = finetune_converted(bundle, cfg, out, overwrite=overwrite, hooks=_Announce(hooks),
                                        report=report)
        finally:
            hooks.close()
        summary = {**result.to_dict(), **report, "parent": to_dict(cfg.parent)}
        from polyglot_groc.model.checkpoint import atomic_write_text

        atomic_write_text(Path(out) / "result.json", dumps_json(summary, indent=2) + "\n")
    print_json(summary)


class _Announce:
    """Print the converted model's perplexity (before finetuning) ahead of the progress bar."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def on_start(self, total_steps: int | None, info: Any) -> None:
        self.inner.on_start(total_steps, info)

    def on_step(self, info: Any) -> None:
        self.inner.on_step(info)

    def on_eval(self, record: Any) -> None:
        if record.get("phase") != "converted":
            self.inner.on_eval(record)
            return
        ppl = ", ".join(f"{k} {v:.4g}" for k, v in record["valid_perplexity"].items())
        err_console.print(f"converted model, before finetuning: valid perplexity {ppl} "
                          f"(pooled nll {record['valid_nll']:.3f} nats)", highlight=False)


def _from_run(run: Path, which: str, data: Path | None, overrides: dict[str, Any], defaults: dict[str, Any],
              explicit: dict[str, Any]) -> tuple[Any, RunConfig, dict[str, Any]]:
    from groc_base.errors import InputError
    from polyglot_groc.elmo.convert import convert_elmo_bundle
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.training.finetune import parent_record

    elmo, payload = load_bundle(run, which)
    if elmo.model.kind != "elmo":
        raise InputError(f"run {run} is a {elmo.model.kind} run, not elmo; init-from-elmo converts runs trained "
                         "with --model elmo (or bilm-tf weights via --elmo-options/--elmo-weights)")
    # The converted model keeps the elmo model's architecture: only training settings may change.
    _check_overrides(overrides, ("train",), (), "a converted run keeps the elmo run's model and data settings")
    converted = convert_elmo_bundle(elmo)
    base = to_dict(converted.cfg)
    if data is not None:
        base["data"]["root"] = str(data)
    cfg = load_config(None, merge_overrides(defaults, overrides, explicit), base=base)
    cfg = dataclasses.replace(cfg, parent=parent_record(run, which, payload))
    report = {"init_from": str(run.resolve()), "init_checkpoint": which, "init_step": payload.get("step"),
              "bias_activation": cfg.model.output.bias_activation, "prefix_copied": True}
    _announce_converted_config(cfg, elmo.cfg.model.output.bias_activation)
    return converted, cfg, report


def _from_weights(options_path: Path | None, weights_path: Path | None, data: Path | None, langs: str | None,
                  overrides: dict[str, Any], defaults: dict[str, Any],
                  explicit: dict[str, Any]) -> tuple[Any, RunConfig, dict[str, Any]]:
    from groc_base.errors import ConfigError
    from langpairs.registry import parse_lang_spec
    from polyglot_groc.config import ParentConfig
    from polyglot_groc.elmo.bilm import ElmoModel, load_bilm_options
    from polyglot_groc.elmo.convert import ELMO_FIXED_KEYS, elmo_groc_config, install_elmo_weights
    from polyglot_groc.model.checkpoint import file_sha256
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.trainer import build_bundle, seed_everything

    if options_path is None or weights_path is None:
        raise ConfigError("bilm-tf weights need both --elmo-options options.json and --elmo-weights lm_weights.hdf5")
    if data is None:
        raise ConfigError("no corpus given; pass --data DIR with <DIR>/<lang>/{train,valid,test}.txt")
    _check_overrides(overrides, (), ELMO_FIXED_KEYS, "the elmo weights fix it (d, charset, char-CNN sizes)")
    options = load_bilm_options(options_path)
    lang_codes = parse_lang_spec(langs or "en", None)
    base = load_config(None, merge_overrides(defaults, overrides, {"data.root": str(data),
                                                                    "data.langs": list(lang_codes)}, explicit))
    cfg, info = elmo_groc_config(options, base)
    splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
    corpus = load_corpus(cfg.data, splits)
    seed_everything(cfg.train.seed)  # a prefix trained from scratch starts from the run's seed
    bundle = build_bundle(cfg, corpus)
    elmo = ElmoModel.from_files(options_path, weights_path)
    install_elmo_weights(bundle, elmo, info)
    err_console.print(f"elmo weights: d={info.d}, charset {info.charset_scheme} (max {info.max_word_len} bytes), "
                      f"vocabulary {len(bundle.vocab):,} words from {data}", highlight=False)
    if not info.prefix_copied:
        err_console.print(f"prefix trained from scratch: {info.prefix_reason}", highlight=False)
    _announce_converted_config(cfg, base.model.output.bias_activation)
    report = {"init_from": str(weights_path.resolve()), "init_options": str(options_path.resolve()),
              "charset": info.charset_scheme,
              "bias_activation": info.bias_activation, "prefix_copied": info.prefix_copied,
              "prefix_reason": info.prefix_reason}
    # The parent of the new run: the weights file (no run directory, no checkpoint name or step).
    parent = ParentConfig(run=str(weights_path.resolve()), sha256=file_sha256(weights_path))
    return bundle, dataclasses.replace(cfg, parent=parent), report


def _announce_converted_config(cfg: RunConfig, configured_bias_activation: str) -> None:
    t = cfg.train
    budget = f"{t.max_steps} steps" if t.max_steps else f"{t.max_epochs} epochs"
    act = cfg.model.output.bias_activation
    if act != configured_bias_activation:
        # convert.neutral_bias: the old mean bias is outside the configured activation's active region.
        act = f"{act} instead of {configured_bias_activation}, whose active region misses the neutral bias"
    err_console.print(f"finetuning {cfg.model.kind} for {budget} at lr {t.lr:g}; bias activation {act}",
                      highlight=False)
