"""``tune-cache``, ``finetune`` and ``analyze`` (freq-bins, curves): cross-domain evaluation commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands._common import (
    OVERWRITE_HELP,
    ThreadsOption,
    check_non_negative,
    check_positive,
    cli_errors,
    float_list,
    print_json,
    setup_logging,
)

analyze_app = typer.Typer(help="Analyses of trained runs: loss by frequency bin, training curves.",
                          no_args_is_help=True)


def tune_cache_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    data: Annotated[Path, typer.Option("--data", help="Corpus directory of the target domain")],
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
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    threads: ThreadsOption = None,
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda | cuda:N")] = "auto",
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Grid-search the cache's θ, λ and (GroC) new-word weight against no cache at all; JSON + heat map.

    No cache is the best when no grid point beats it. A best on a grid's edge is flagged (on_edge).

    evaluate_args holds the evaluate options that apply the best.
    """
    _tune(run, data, split, cache, cache_size, out, verbose, thetas, lambdas, new_word_weights, new_word_weight,
          threads, overwrite, device)


@cli_errors
def _tune(run: Path, data: Path, split: str, cache: str, size: int, out: Path | None, verbose: bool,
          thetas: str | None = None, lambdas: str | None = None, new_word_weights: str | None = None,
          new_word_weight: float | None = None, threads: int | None = None,
          overwrite: bool = False, device: str = "auto") -> None:
    from polyglot_groc.analysis.tunecache import tune_cache

    setup_logging(verbose)
    res = tune_cache(run=run, data=data, split=split, cache=cache, cache_size=size,
                     thetas=float_list(thetas, "--thetas"), lambdas=float_list(lambdas, "--lambdas"),
                     new_word_weights=float_list(new_word_weights, "--new-word-weights"),
                     new_word_weight=new_word_weight, out=out, overwrite=overwrite, threads=threads, device=device)
    print_json(res.to_dict())


def finetune_command(
    run: Annotated[Path, typer.Argument(help="Trained run directory")],
    data: Annotated[Path, typer.Option("--data", help="Corpus directory of the new domain (<lang>/train.txt)")],
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
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="The run's checkpoint to start from: best | last")
                          ] = "best",
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="Training override, e.g. --set train.eval_every=50 (train.* only: the model and data "
                      "settings are the run's)")] = None,
    threads: ThreadsOption = None,
    device: Annotated[str | None, typer.Option("--device", help="auto | cpu | cuda | cuda:N (train.device; "
                                               "default: the run's)", show_default=False)] = None,
    log_every: Annotated[int | None, typer.Option(
        "--log-every", help="Log loss/ppl/lr/tok/s/ETA every N steps; 0: no log lines (train.log_every)",
        show_default="the run's train.log_every")] = None,
    tensorboard: Annotated[bool, typer.Option("--tensorboard", help="Also write TensorBoard scalars")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing run directory")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Extend the vocabulary with the new domain's words and train on it (fresh optimizer by default).

    OUT is a run directory like train's (config.toml recording the parent run, metrics.jsonl,
    curves.png, best.pt, last.pt, result.json): evaluate, runs and train --resume take it.
    """
    _finetune(run, data, out, epochs, max_steps, lr, overwrite, verbose, resume_optimizer, set_ or [], threads,
              device, max_minutes, log_every, tensorboard, checkpoint)


@cli_errors
def _finetune(run: Path, data: Path, out: Path, epochs: int | None, max_steps: int | None, lr: float | None,
              overwrite: bool, verbose: bool, resume_optimizer: bool = False, overrides: list[str] | None = None,
              threads: int | None = None, device: str | None = None, max_minutes: float | None = None,
              log_every: int | None = None, tensorboard: bool = False, checkpoint: str = "best") -> None:
    """A thin face over :func:`polyglot_groc.training.workflows.finetune`."""
    from polyglot_groc.commands.train import ReportInterrupts, RichHooks, report_result
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
                              checkpoint=checkpoint, overrides=parse_overrides(overrides or []), threads=threads,
                              device=device, log_every=log_every, overwrite=overwrite, hooks=hooks)
        finally:
            hooks.close()
    report_result(result, report=True, what="finetuning", fix="--lr or train.clip")


@analyze_app.command("freq-bins")
def freq_bins_command(
    run_a: Annotated[Path, typer.Argument(help="First run (e.g. GroC)")],
    run_b: Annotated[Path, typer.Argument(help="Second run (e.g. tied)")],
    data: Annotated[Path, typer.Option("--data", help="Corpus directory")],
    out: Annotated[Path, typer.Option("--out", help="PNG path, ending in .png (the JSON goes beside it: "
                                                    "fig.png -> fig.json)")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "test",
    bin_width: Annotated[int, typer.Option("--bin-width", help="Training-frequency bin width (seed: 50)")] = 50,
    bins: Annotated[int, typer.Option("--bins", help="Number of bins; the last is open-ended")] = 10,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    threads: ThreadsOption = None,
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda | cuda:N")] = "auto",
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="best | last (of both runs)")] = "best",
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Median per-token loss difference (A - B) by training-frequency bin (seed Figure 3), with means and shares."""
    _freq(run_a, run_b, data, out, split, bin_width, bins, verbose, threads, overwrite, device, checkpoint)


@cli_errors
def _freq(run_a: Path, run_b: Path, data: Path, out: Path, split: str, width: int, n_bins: int,
          verbose: bool, threads: int | None = None, overwrite: bool = False, device: str = "auto",
          checkpoint: str = "best") -> None:
    from polyglot_groc.analysis.freqbins import freq_bins

    setup_logging(verbose)
    print_json(freq_bins(run_a=run_a, run_b=run_b, data=data, out=out, split=split, bin_width=width, bins=n_bins,
                         overwrite=overwrite, checkpoint=checkpoint, device=device, threads=threads).to_dict())


@analyze_app.command("curves")
def curves_command(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (each with metrics.jsonl)")],
    out: Annotated[Path, typer.Option("--out", help="PNG path, ending in .png")],
    title: Annotated[str | None, typer.Option("--title")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
) -> None:
    """Train loss and validation perplexity of one or more runs in one PNG."""
    _curves(runs, out, title, overwrite)


@cli_errors
def _curves(runs: list[Path], out: Path, title: str | None, overwrite: bool = False) -> None:
    from polyglot_groc.analysis.curves import curves

    print_json(curves(runs=runs, out=out, title=title, overwrite=overwrite).to_dict())
