"""``neighbours`` and ``score``, queries of a trained run: the nearest words of any word, and the probability
of each line of a text.

Thin faces over :func:`polyglot_groc.analysis.neighbours.neighbours` and
:func:`polyglot_groc.analysis.score.score` (both on :class:`~polyglot_groc.analysis.loaded_run.Model`):
parse the options, call the function, print its JSON (``score``: one JSON line per input line).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from groc_base.wording import counted
from polyglot_groc.commands._common import cli_errors, deprecated_alias, err_console, print_json, setup_logging
from polyglot_groc.commands._options import (
    AllowUntrainedOption,
    CheckpointOption,
    DeviceOption,
    ThreadsOption,
    VerboseOption,
    old_spelling,
)

app = typer.Typer()


@app.command("neighbours")
@cli_errors
def neighbours_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    word: Annotated[str, typer.Argument(help="The query word (any word: composed from its spelling if unseen)")],
    lang: Annotated[str | None, typer.Option(
        "--lang", help="The word's language", show_default="a one-language run's; required for a polyglot run")] = None,
    among: Annotated[str | None, typer.Option(
        "--among", help="Search this language's vocabulary (default: --lang); another language of a polyglot run is "
                        "searched in the run's shared space, or in --alignment's")] = None,
    among_old: Annotated[str | None, old_spelling("--in", "--among")] = None,
    topn: Annotated[int, typer.Option("--topn", help="How many neighbours")] = 10,
    method: Annotated[str, typer.Option("--method", help="cosine | csls")] = "cosine",
    side: Annotated[str, typer.Option("--side", help="input | output embeddings")] = "input",
    alignment: Annotated[Path | None, typer.Option(
        "--alignment", help="An align --out directory relating --lang and --among: search in its aligned "
                            "space")] = None,
    alignment_old: Annotated[Path | None, old_spelling("--align", "--alignment")] = None,
    allow_untrained: AllowUntrainedOption = False,
    checkpoint: CheckpointOption = "best",
    device: DeviceOption = "auto",
    threads: ThreadsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """The nearest words of WORD in a run's embedding space, as JSON (best first, with their scores).

    The first search embeds the whole vocabulary searched (a progress line says so on a terminal).
    """
    from polyglot_groc.analysis.neighbours import neighbours

    setup_logging(verbose, progress=("polyglot_groc.analysis.neighbour_search",))
    among = deprecated_alias("--among", "--in", among, among_old)
    alignment = deprecated_alias("--alignment", "--align", alignment, alignment_old)
    res = neighbours(run=run, word=word, lang=lang, among=among, topn=topn, method=method, side=side,
                     alignment=alignment, allow_untrained=allow_untrained, checkpoint=checkpoint, device=device,
                     threads=threads)
    print_json(res.to_dict())


@app.command("score")
@cli_errors
def score_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    lang: Annotated[str, typer.Option("--lang", help="The text's language")],
    input: Annotated[str, typer.Option(
        "--input", help="A UTF-8 text file, one sentence a line; - reads standard input")] = "-",
    uniform_weight: Annotated[float | None, typer.Option(
        "--uniform-weight", help="Lookup-output runs: mix in the uniform distribution with this weight in [0, 1) "
                                 "so new words get a probability (evaluate's open-vocabulary rule)")] = None,
    checkpoint: CheckpointOption = "best",
    device: DeviceOption = "auto",
    threads: ThreadsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Log-probability (natural log) and perplexity of every line, as JSON lines on stdout.

    Each line is a sentence read from a sentence start; its words and closing <eos> are scored
    through the model's own scorer (the one evaluate uses), over the training vocabulary and the
    new words of the whole input, as evaluate scores a file (GroC composes them). A blank line gets
    null scores. The totals go to stderr.
    """
    from groc_base.fileio import dumps_json
    from polyglot_groc.analysis.score import score

    setup_logging(verbose)
    # "-": the library reads standard input (through groc_base.textio: bad bytes name it and the fix).
    res = score(run=run, lang=lang, input=input, uniform_weight=uniform_weight, checkpoint=checkpoint,
                device=device, threads=threads)
    for line in res.lines:
        typer.echo(dumps_json(line.to_dict(), ensure_ascii=False))
    err_console.print(f"{counted(len(res.lines), 'line')}, {counted(res.tokens, 'token')}: log-probability "
                      f"{res.log_prob:,.4f}, perplexity {res.perplexity:,.2f}")
