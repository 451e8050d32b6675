"""``polyglot-groc init-from-elmo``: a GroC run initialised from an ELMo-like model, then finetuned.

A thin face over :func:`polyglot_groc.elmo.workflows.init_from_elmo`: two sources, an ``elmo``-kind
run of this toolkit (``ELMO_RUN``) or bilm-tf weights (``--elmo-options``/``--elmo-weights`` with
``--data``/``--langs``). The command prints what was converted and the converted model's
validation perplexity before finetuning (expected to be astronomically bad, seed 004 Table 5.6),
then the progress, then the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer

from groc_base.wording import counted
from polyglot_groc.commands import _options as opt
from polyglot_groc.commands._common import (
    check_non_negative,
    check_positive,
    cli_errors,
    err_console,
    fresh_output,
    print_json,
    setup_logging,
)
from polyglot_groc.commands._options import ThreadsOption, VerboseOption
from polyglot_groc.config import RunConfig, parse_overrides
from polyglot_groc.elmo.workflows import DEFAULT_FINETUNE_EPOCHS, DEFAULT_LR

app = typer.Typer()


@app.command("init-from-elmo")
@cli_errors
def init_from_elmo_command(
    elmo_run: Annotated[Path | None, typer.Argument(help="An elmo run directory (or use --elmo-options)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="GroC run directory to create",
        show_default="a new runs/<model>-from-elmo[-N], never an existing one (printed)")] = None,
    finetune_epochs: Annotated[int | None, typer.Option(
        "--finetune-epochs", help=f"Finetuning epochs (default {DEFAULT_FINETUNE_EPOCHS})")] = None,
    max_steps: Annotated[int | None, typer.Option("--max-steps", help="Finetune for this many steps instead")] = None,
    lr: Annotated[float | None, typer.Option(
        "--lr", help=f"Initial finetuning learning rate (default {DEFAULT_LR:g}, seed 004 C.2)")] = None,
    data: Annotated[Path | None, opt.data_option("Corpus root (default: the elmo run's)")] = None,
    eval_every: Annotated[int | None, typer.Option(
        "--eval-every", help="Validate every S steps (default: every epoch)")] = None,
    checkpoint: Annotated[str, opt.checkpoint_option("Elmo run checkpoint: best | last")] = "best",
    elmo_options: Annotated[Path | None, typer.Option("--elmo-options", help="bilm-tf options.json")] = None,
    elmo_weights: Annotated[Path | None, typer.Option("--elmo-weights", help="bilm-tf lm_weights.hdf5")] = None,
    langs: Annotated[str | None, typer.Option("--langs", help="Languages, with --elmo-weights (default en)")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", help="Override, e.g. --set train.threads=1")] = None,
    threads: ThreadsOption = None,
    device: Annotated[str | None, opt.device_option("auto | cpu | cuda | cuda:N (train.device)", key="train.device",
                                                    show_default=True)] = None,
    overwrite: Annotated[bool, opt.overwrite_option("Replace an existing run directory")] = False,
    model: Annotated[str, typer.Option(
        "--model", help="groc | bilm (bilm-tf weights: char-CNN and both LSTM directions)")] = "groc",
    verbose: VerboseOption = False,
) -> None:
    """Initialise a GroC (or bilm) model from an ELMo-like model, report its perplexity, and finetune it."""
    from polyglot_groc.commands._reporting import ReportInterrupts, RichHooks
    from polyglot_groc.elmo.workflows import init_from_elmo

    setup_logging(verbose)
    check_positive(finetune_epochs=finetune_epochs, max_steps=max_steps, lr=lr, eval_every=eval_every)
    check_non_negative(threads=threads)
    if out is None:  # a fresh folder: running the same command twice never fails on the first one's
        out = fresh_output(Path("runs") / f"{model}-from-elmo")
        err_console.print(f"writing the run to {out} (no --out given)", highlight=False, markup=False)
    hooks = RichHooks(Path(out))
    # one writer per run directory; Ctrl-C / SIGTERM say what was kept and how to resume
    with ReportInterrupts(Path(out), "init-from-elmo"):
        try:
            result = init_from_elmo(out=out, elmo_run=elmo_run, checkpoint=checkpoint, elmo_options=elmo_options,
                                    elmo_weights=elmo_weights, data=data, langs=langs,
                                    finetune_epochs=finetune_epochs, max_steps=max_steps, lr=lr,
                                    eval_every=eval_every, overrides=parse_overrides(set_ or []), threads=threads,
                                    device=device or None, overwrite=overwrite, hooks=_Announce(hooks),
                                    model=model)
        finally:
            hooks.close()
    print_json(result.to_dict())


class _Announce:
    """Say what was converted and the converted model's perplexity (before finetuning), ahead of the
    progress bar: the workflow reports the conversion in ``on_start``'s info (``elmo``) and the
    converted model's record as the first ``on_eval``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.converted: Mapping[str, Any] | None = None

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        elmo = info.get("elmo") or {}
        if elmo.get("source") == "weights":
            err_console.print(f"elmo weights: d={elmo['d']}, charset {elmo['charset']} (max {elmo['max_word_len']} "
                              f"bytes), vocabulary {elmo['vocab']:,} words from {elmo['data']}", highlight=False)
            if not elmo["prefix_copied"]:
                err_console.print(f"prefix trained from scratch: {elmo['prefix_reason']}", highlight=False)
        if elmo:
            _announce_converted_config(info["config"], elmo["configured_bias_activation"])
        if self.converted is not None:
            ppl = ", ".join(f"{k} {v:.4g}" for k, v in self.converted["valid_perplexity"].items())
            err_console.print(f"converted model, before finetuning: valid perplexity {ppl} "
                              f"(pooled nll {self.converted['valid_nll']:.3f} nats)", highlight=False)
        self.inner.on_start(total_steps, info)

    def on_step(self, info: Any) -> None:
        self.inner.on_step(info)

    def on_eval(self, record: Any) -> None:
        if record.get("phase") == "converted":
            self.converted = record  # said at on_start, after what was converted
            return
        self.inner.on_eval(record)


def _announce_converted_config(cfg: RunConfig, configured_bias_activation: str) -> None:
    t = cfg.train
    budget = counted(t.max_steps, "step") if t.max_steps else counted(t.max_epochs, "epoch")
    act = cfg.model.output.bias_activation
    if act != configured_bias_activation:
        # convert.neutral_bias: the old mean bias is outside the configured activation's active region.
        act = f"{act} instead of {configured_bias_activation}, whose active region misses the neutral bias"
    err_console.print(f"finetuning {cfg.model.kind} for {budget} at lr {t.lr:g}; bias activation {act}",
                      highlight=False)
