"""``polyglot-groc evaluate``: a run's perplexity, in domain or over new text (open vocabulary).

A thin face over :func:`polyglot_groc.analysis.evaluate.evaluate`: parse the options, call it, print its JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands._common import cli_errors, print_json, setup_logging
from polyglot_groc.commands._options import (
    CheckpointOption,
    DeviceOption,
    ThreadsOption,
    data_option,
    verbose_option,
)

app = typer.Typer()


@app.command("evaluate")
@cli_errors
def evaluate_command(
    run: Annotated[Path, typer.Argument(help="Run directory (written by train)")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "test",
    data: Annotated[Path | None, data_option(
        "Corpus root to score instead (open-vocabulary evaluation)", show_default="the run's data.root")] = None,
    batch_size: Annotated[int | None, typer.Option(
        "--batch-size", help="Eval batch size (parallel streams)",
        show_default="the run's train.eval_batch_size; open vocabulary: 1")] = None,
    checkpoint: CheckpointOption = "best",
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
    device: DeviceOption = "auto",
    threads: ThreadsOption = None,
    verbose: Annotated[bool, verbose_option("Log INFO messages to stderr", show_default="off")] = False,
) -> None:
    """Per-language perplexity of a run on a split, as JSON.

    With --data, a cache, --new-word-weight, --uniform-weight or --lexicon-coverage: open-vocabulary
    evaluation over the union of training and test words (OOV rate, perplexity on seen and new
    words; with a cache also the perplexity without it, and a check on --data's valid split).
    """
    from polyglot_groc.analysis.evaluate import evaluate

    setup_logging(verbose)
    print_json(evaluate(run=run, split=split, data=data, checkpoint=checkpoint, batch_size=batch_size,
                        screen=not no_screen, device=device, threads=threads, cache=cache, cache_theta=cache_theta,
                        cache_lambda=cache_lambda, cache_size=cache_size, new_word_weight=new_word_weight,
                        uniform_weight=uniform_weight, lexicon_coverage=lexicon_coverage).to_dict())
