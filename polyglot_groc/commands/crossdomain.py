"""``tune-cache``, ``finetune`` and ``analyze`` (freq-bins, curves): cross-domain evaluation commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands._common import (
    OVERWRITE_HELP,
    check_output,
    cli_errors,
    locked_run_dir,
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
    new_word_weight: Annotated[float, typer.Option("--new-word-weight", help="GroC: new-word weight")] = 0.1,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Heat-map PNG (Figure 6; default: RUN/tune-cache-CACHE.png)")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Grid-search cache θ (5 values in [0,1]) and λ (5 values in [0.833,0.966]); JSON + heat map."""
    _tune(run, data, split, cache, cache_size, new_word_weight, out, verbose, overwrite)


@cli_errors
def _tune(run: Path, data: Path, split: str, cache: str, size: int, nww: float, out: Path | None,
          verbose: bool, overwrite: bool = False) -> None:
    from polyglot_groc.analysis.tunecache import tune_cache

    setup_logging(verbose)
    png = out or run / f"tune-cache-{cache}.png"
    check_output(png, overwrite)
    print_json(tune_cache(run, data, split, cache, size, nww, png))


def finetune_command(
    run: Annotated[Path, typer.Argument(help="Trained run directory")],
    data: Annotated[Path, typer.Option("--data", help="Corpus directory of the new domain (<lang>/train.txt)")],
    out: Annotated[Path, typer.Option("--out", help="New run directory")],
    epochs: Annotated[int, typer.Option("--epochs", help="Epochs on the new domain (seed: 3)")] = 3,
    max_steps: Annotated[int, typer.Option("--max-steps", help="Stop after this many steps (0: epochs only)")] = 0,
    lr: Annotated[float | None, typer.Option("--lr", help="Learning rate (default: the run's; with "
                                                           "--resume-optimizer its last, decayed one)")] = None,
    resume_optimizer: Annotated[bool, typer.Option(
        "--resume-optimizer", help="Continue the run's Adam state (new words' moments start at 0) "
                                   "instead of a fresh optimizer")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Extend the vocabulary with the new domain's words and train on it (fresh optimizer by default)."""
    _finetune(run, data, out, epochs, max_steps, lr, overwrite, verbose, resume_optimizer)


@cli_errors
def _finetune(run: Path, data: Path, out: Path, epochs: int, max_steps: int, lr: float | None, overwrite: bool,
              verbose: bool, resume_optimizer: bool = False) -> None:
    from polyglot_groc.training.finetune import finetune_run

    setup_logging(verbose)
    # One writer per run directory, as for train and --resume; an early error leaves nothing behind.
    with locked_run_dir(Path(out), "finetune"):
        result = finetune_run(run, data, out, epochs, overwrite=overwrite, lr=lr, max_steps=max_steps,
                              resume_optimizer=resume_optimizer)
    print_json(result.to_dict())


@analyze_app.command("freq-bins")
def freq_bins_command(
    run_a: Annotated[Path, typer.Argument(help="First run (e.g. GroC)")],
    run_b: Annotated[Path, typer.Argument(help="Second run (e.g. tied)")],
    data: Annotated[Path, typer.Option("--data", help="Corpus directory")],
    out: Annotated[Path, typer.Option("--out", help="PNG path (JSON written beside it)")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "test",
    bin_width: Annotated[int, typer.Option("--bin-width", help="Training-frequency bin width (seed: 50)")] = 50,
    bins: Annotated[int, typer.Option("--bins", help="Number of bins; the last is open-ended")] = 10,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Median per-token loss difference (A - B) by training-frequency bin (seed Figure 3), with means and shares."""
    _freq(run_a, run_b, data, out, split, bin_width, bins, verbose, overwrite)


@cli_errors
def _freq(run_a: Path, run_b: Path, data: Path, out: Path, split: str, width: int, n_bins: int,
          verbose: bool, overwrite: bool = False) -> None:
    from lexicons.fileio import atomic_write_bytes, dumps_json
    from polyglot_groc.analysis.freqbins import compare_runs

    setup_logging(verbose)
    check_output(out, overwrite, also=[out.with_suffix(".json")])
    res = compare_runs(run_a, run_b, data, split, width, n_bins, out)
    atomic_write_bytes(out.with_suffix(".json"), (dumps_json(res, indent=2) + "\n").encode())
    print_json(res)


@analyze_app.command("curves")
def curves_command(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (each with metrics.jsonl)")],
    out: Annotated[Path, typer.Option("--out", help="PNG path")],
    title: Annotated[str | None, typer.Option("--title")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
) -> None:
    """Train loss and validation perplexity of one or more runs in one PNG."""
    _curves(runs, out, title, overwrite)


@cli_errors
def _curves(runs: list[Path], out: Path, title: str | None, overwrite: bool = False) -> None:
    from lexicons.errors import InputError
    from polyglot_groc.analysis.curves import plot_curves, read_metrics

    check_output(out, overwrite)

    records = {}
    for run in runs:
        path = run / "metrics.jsonl"
        if not path.is_file():
            raise InputError(f"{path} is missing; pass run directories written by polyglot-groc train")
        records[run.name] = read_metrics(path)
    print_json({"png": str(plot_curves(records, out, title)), "runs": [str(r) for r in runs]})


@cli_errors
def evaluate_open_cli(run: Path, split: str, data: Path | None, checkpoint: str, cache: str, theta: float,
                      lam: float, size: int, new_word_weight: float, uniform_weight: float | None,
                      lexicon_coverage: float | None, verbose: bool) -> None:
    """``evaluate`` in the open-vocabulary setting (see :func:`evaluate_open`)."""
    from polyglot_groc.analysis.crossdomain import CacheSettings, evaluate_open
    from polyglot_groc.model.bundle import load_bundle

    setup_logging(verbose)
    s = CacheSettings(cache, theta, lam, size, new_word_weight, uniform_weight or 0.0).validate()
    if data is None:
        data = Path(load_bundle(run, checkpoint)[0].cfg.data.root)
    print_json(evaluate_open(run, data, split, s, checkpoint, uniform_weight=uniform_weight,
                             lexicon_coverage=lexicon_coverage))
