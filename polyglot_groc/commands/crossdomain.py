"""``tune-cache`` and ``finetune``: cross-domain evaluation commands (``analyze`` is in analyze.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands import _options as opt
from polyglot_groc.commands._common import (
    check_non_negative,
    check_positive,
    cli_errors,
    float_list,
    print_json,
    setup_logging,
)
from polyglot_groc.commands._options import DeviceOption, OverwriteOption, ThreadsOption, VerboseOption

app = typer.Typer()


@app.command("tune-cache")
@cli_errors
def tune_cache_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    data: Annotated[Path, opt.data_option("Corpus directory of the target domain")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "valid",
    cache: Annotated[str, typer.Option("--cache", help="neural | unigram")] = "neural",
    cache_size: Annotated[int, typer.Option("--cache-size", help="Cache window (seed: 5000 when tuning)")] = 5000,
    thetas: Annotated[str | None, typer.Option(
        "--thetas", help="θ values, comma-separated", show_default="0,0.25,0.5,0.75,1")] = None,
    lambdas: Annotated[str | None, typer.Option(
        "--lambdas", help="λ values (model weight), comma-separated",
        show_default="0.833,0.86625,0.8995,0.93275,0.966")] = None,
    new_word_weights: Annotated[str | None, typer.Option(
        "--new-word-weights", help="GroC: new-word weights, comma-separated (1: none)",
        show_default="0.1,0.3,0.5,0.7,0.9,1")] = None,
    new_word_weight: Annotated[float | None, typer.Option(
        "--new-word-weight", help="GroC: fix the new-word weight instead of tuning it")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Heat-map PNG (Figure 6)",
                                             show_default="RUN/tune-cache-CACHE.png")] = None,
    overwrite: OverwriteOption = False,
    threads: ThreadsOption = None,
    device: DeviceOption = "auto",
    verbose: VerboseOption = False,
) -> None:
    """Grid-search the cache's θ, λ and (GroC) new-word weight against no cache at all; JSON + heat map.

    No cache is the best when no grid point beats it. A best on a grid's edge is flagged (on_edge).

    evaluate_args holds the evaluate options that apply the best.
    """
    from polyglot_groc.analysis.tunecache import tune_cache

    setup_logging(verbose)
    res = tune_cache(run=run, data=data, split=split, cache=cache, cache_size=cache_size,
                     thetas=float_list(thetas, "--thetas"), lambdas=float_list(lambdas, "--lambdas"),
                     new_word_weights=float_list(new_word_weights, "--new-word-weights"),
                     new_word_weight=new_word_weight, out=out, overwrite=overwrite, threads=threads, device=device)
    print_json(res.to_dict())


@app.command("finetune")
@cli_errors
def finetune_command(
    run: Annotated[Path, typer.Argument(help="Trained run directory")],
    data: Annotated[Path, opt.data_option("Corpus directory of the new domain (<lang>/train.txt)")],
    out: Annotated[Path, typer.Option("--out", help="New run directory")],
    epochs: Annotated[int | None, typer.Option(
        "--epochs", help="Epochs on the new domain (default 3 as in the seed, or --set train.max_epochs)",
        show_default=False)] = None,
    max_steps: Annotated[int | None, typer.Option(
        "--max-steps", help="Stop after this many steps (default 0: epochs only)", show_default=False)] = None,
    max_minutes: Annotated[float | None, typer.Option("--max-minutes", help="Stop after M minutes")] = None,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate (default: the run's; with "
                                                           "--resume-optimizer its last, decayed one)")] = None,
    resume_optimizer: Annotated[bool, typer.Option(
        "--resume-optimizer", help="Continue the run's Adam state (new words' moments start at 0) "
                                   "instead of a fresh optimizer")] = False,
    checkpoint: Annotated[str, opt.checkpoint_option("The run's checkpoint to start from: best | last")] = "best",
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Training override, e.g. --set train.eval_every=50 (train.* only: the model and data "
                      "settings are the run's)")] = None,
    threads: ThreadsOption = None,
    device: Annotated[str | None, opt.device_option("auto | cpu | cuda | cuda:N (train.device; default: the run's)",
                                                    key="train.device", show_default=False)] = None,
    log_every: Annotated[int | None, opt.log_every_option(show_default="the run's train.log_every")] = None,
    tensorboard: Annotated[bool, typer.Option("--tensorboard", help="Also write TensorBoard scalars")] = False,
    overwrite: Annotated[bool, opt.overwrite_option("Replace an existing run directory")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Extend the vocabulary with the new domain's words and train on it (fresh optimizer by default).

    OUT is a run directory like train's (config.toml recording the parent run, metrics.jsonl,
    curves.png, best.pt, last.pt, result.json): evaluate, runs and train --resume take it.
    """
    from polyglot_groc.commands._reporting import ReportInterrupts, RichHooks, report_result
    from polyglot_groc.config import parse_overrides
    from polyglot_groc.training.workflows import finetune

    setup_logging(verbose)
    # Numbers first: nothing is read or written before the command line is known to be sane.
    check_positive(epochs=epochs, lr=lr, max_minutes=max_minutes)
    check_non_negative(max_steps=max_steps, log_every=log_every, threads=threads)
    hooks = RichHooks(Path(out), tensorboard)
    with ReportInterrupts(Path(out), "finetune", tensorboard):
        try:
            result = finetune(run=run, data=data, out=out, epochs=epochs, max_steps=max_steps,
                              max_minutes=max_minutes, lr=lr, resume_optimizer=resume_optimizer,
                              checkpoint=checkpoint, overrides=parse_overrides(set_ or []), threads=threads,
                              device=device, log_every=log_every, overwrite=overwrite, hooks=hooks)
        finally:
            hooks.close()
    report_result(result, report=True, what="finetuning", fix="--lr or train.clip")
