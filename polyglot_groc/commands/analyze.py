"""``polyglot-groc analyze``: analyses of trained runs (``freq-bins``: loss by frequency bin, ``curves``).

Thin faces over :func:`polyglot_groc.analysis.freqbins.freq_bins` and :func:`polyglot_groc.analysis.curves.curves`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands._common import cli_errors, print_json, setup_logging
from polyglot_groc.commands._options import (
    DeviceOption,
    OverwriteOption,
    ThreadsOption,
    VerboseOption,
    checkpoint_option,
    data_option,
)

app = typer.Typer(name="analyze", help="Analyses of trained runs: loss by frequency bin, training curves.",
                  no_args_is_help=True)


@app.command("freq-bins")
@cli_errors
def freq_bins_command(
    run_a: Annotated[Path, typer.Argument(help="First run (e.g. GroC)")],
    run_b: Annotated[Path, typer.Argument(help="Second run (e.g. tied)")],
    data: Annotated[Path, data_option("Corpus directory")],
    out: Annotated[Path, typer.Option("--out", help="PNG path, ending in .png (the JSON goes beside it: "
                                                    "fig.png -> fig.json)")],
    split: Annotated[str, typer.Option("--split", help="valid | test")] = "test",
    bin_width: Annotated[int, typer.Option("--bin-width", help="Training-frequency bin width (seed: 50)")] = 50,
    bins: Annotated[int, typer.Option("--bins", help="Number of bins; the last is open-ended")] = 10,
    overwrite: OverwriteOption = False,
    threads: ThreadsOption = None,
    device: DeviceOption = "auto",
    checkpoint: Annotated[str, checkpoint_option("best | last (of both runs)")] = "best",
    verbose: VerboseOption = False,
) -> None:
    """Median per-token loss difference (A - B) by training-frequency bin (seed Figure 3), with means and shares."""
    from polyglot_groc.analysis.freqbins import freq_bins

    setup_logging(verbose)
    print_json(freq_bins(run_a=run_a, run_b=run_b, data=data, out=out, split=split, bin_width=bin_width, bins=bins,
                         overwrite=overwrite, checkpoint=checkpoint, device=device, threads=threads).to_dict())


@app.command("curves")
@cli_errors
def curves_command(
    runs: Annotated[list[Path], typer.Argument(help="Run directories (each with metrics.jsonl)")],
    out: Annotated[Path, typer.Option("--out", help="PNG path, ending in .png")],
    title: Annotated[str | None, typer.Option("--title")] = None,
    overwrite: OverwriteOption = False,
) -> None:
    """Train loss and validation perplexity of one or more runs in one PNG."""
    from polyglot_groc.analysis.curves import curves

    print_json(curves(runs=runs, out=out, title=title, overwrite=overwrite).to_dict())
