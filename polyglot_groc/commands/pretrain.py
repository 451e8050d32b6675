"""``polyglot-groc pretrain-vectors``: in-domain word vectors for ``train --init-input`` (seed 003)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands._common import check_non_negative, check_output, cli_errors, print_json, setup_logging
from polyglot_groc.commands._options import (
    LanguagesOption,
    OverwriteOption,
    VerboseOption,
    data_option,
    threads_option,
)

app = typer.Typer()


@app.command("pretrain-vectors")
@cli_errors
def pretrain_vectors_command(
    data: Annotated[Path, data_option("Corpus root <data>/<lang>/train.txt")],
    out: Annotated[Path, typer.Option("--out", help="Output .vec file")],
    langs: Annotated[str, typer.Option("--langs", help="Comma-separated language codes")] = "en",
    algorithm: Annotated[str, typer.Option("--algorithm", help="word2vec | fasttext")] = "word2vec",
    dim: Annotated[int, typer.Option("--dim", help="Vector size; must equal the model's model.d")] = 256,
    epochs: Annotated[int, typer.Option("--epochs")] = 5,
    extra: Annotated[list[Path] | None, typer.Option(
        "--extra", help="More in-domain text, one sentence a line")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    threads: Annotated[int, threads_option(
        "gensim's worker threads; 1 gives the same vectors every run, more are faster but vary from run to run; "
        "0: pick from the free cores", show_default="1")] = 1,
    overwrite: OverwriteOption = False,
    verbose: VerboseOption = False,
    languages: LanguagesOption = None,
) -> None:
    """Train word2vec/fastText vectors on the training text (and --extra files) with gensim."""
    from groc_base.checks import check_input_file
    from groc_base.errors import InputError
    from langpairs.registry import load_registry, parse_lang_spec
    from polyglot_groc.training.pretrain import pretrain_vectors

    setup_logging(verbose)
    check_non_negative(threads=threads)
    extra = [check_input_file(path, flag="--extra") for path in extra or []]
    codes = parse_lang_spec(langs, registry=load_registry(languages, env=False))
    check_output(out, overwrite)
    texts = [data / lang / "train.txt" for lang in codes]
    for t in texts:
        if not t.is_file():
            raise InputError(f"{t} does not exist; --data needs <DIR>/<lang>/train.txt")
    n = pretrain_vectors([*texts, *extra], out, algorithm, dim, epochs=epochs, seed=seed, threads=threads)
    print_json({"out": str(out), "words": n, "dim": dim, "algorithm": algorithm})
