"""``features``, ``anchors``, ``align-layers`` and ``probe``: contextual representations of a run (seed 004 ch. 3).

Thin faces over :mod:`polyglot_groc.contextual`: parse the options, call the workflow, print its JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from polyglot_groc.commands._common import (
    check_non_negative,
    cli_errors,
    err_console,
    float_list,
    print_json,
    setup_logging,
)
from polyglot_groc.commands._options import (
    AllowOverlapOption,
    CheckpointOption,
    DeviceOption,
    OverwriteOption,
    ThreadsOption,
    VerboseOption,
    data_option,
)

app = typer.Typer()


@app.command("features")
@cli_errors
def features_command(
    run: Annotated[Path, typer.Argument(help="Run directory (bilm, elmo, groc, ... any kind)")],
    input: Annotated[Path, typer.Option("--input", help="Sentences: text (one a line) or CoNLL-U (.conllu[.gz])")],
    out: Annotated[Path, typer.Option(
        "--out", help="Output .hdf5 (AllenNLP elmo layout; needs the h5py package: the elmo extra)")],
    lang: Annotated[str | None, typer.Option("--lang", help="The sentences' language (runs with several)")] = None,
    layers: Annotated[str, typer.Option("--layers", help="all (layers, T, D) | top | average (T, D)")] = "all",
    mix: Annotated[str | None, typer.Option(
        "--mix", help="ScalarMix weights W1,W2,W3 (softmax-normalised), one per layer: (T, D) datasets")] = None,
    gamma: Annotated[float, typer.Option("--gamma", help="ScalarMix scale")] = 1.0,
    align: Annotated[Path | None, typer.Option(
        "--align", help="Directory of per-layer maps layer{j}/W.npy (align-layers); applied before mixing")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Sentences per batch")] = 32,
    max_sentences: Annotated[int | None, typer.Option("--max-sentences", help="Read at most N sentences")] = None,
    checkpoint: CheckpointOption = "best",
    device: DeviceOption = "auto",
    threads: ThreadsOption = None,
    overwrite: OverwriteOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Write each sentence's contextual features (layer 0 the token embedding, then each LSTM layer) to HDF5."""
    from rich.progress import Progress

    from polyglot_groc.contextual.features import features

    setup_logging(verbose)
    with Progress(transient=True) as bar:
        task = bar.add_task("features", total=None)
        res = features(run=run, input=input, out=out, lang=lang, layers=layers, mix=float_list(mix, "--mix"),
                       gamma=gamma, align=align, batch_size=batch_size, max_sentences=max_sentences,
                       checkpoint=checkpoint, device=device, threads=threads, overwrite=overwrite,
                       progress=lambda n: bar.advance(task, n))
    if res.note:
        err_console.print(f"note: {res.note}", highlight=False, markup=False, soft_wrap=True)
    print_json(res.to_dict())


@app.command("anchors")
@cli_errors
def anchors_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    data: Annotated[Path, data_option("Corpus root: <data>/<lang>/<split>.txt")],
    out: Annotated[Path, typer.Option("--out", help="Output directory: layer{j}.vec and norms.json")],
    lang: Annotated[str | None, typer.Option("--lang", help="The corpus language (runs with several)")] = None,
    split: Annotated[str, typer.Option("--split", help="Split file to read")] = "train",
    min_count: Annotated[int, typer.Option("--min-count", help="Leave out rarer word types")] = 1,
    max_sentences: Annotated[int | None, typer.Option("--max-sentences", help="Read at most N sentences")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Sentences per batch")] = 32,
    checkpoint: CheckpointOption = "best",
    device: DeviceOption = "auto",
    threads: ThreadsOption = None,
    overwrite: OverwriteOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Per layer, each word type's mean contextual vector over a corpus (anchors, Schuster et al. 2019)."""
    from polyglot_groc.contextual.features import anchors

    setup_logging(verbose)
    res = anchors(run=run, data=data, out=out, lang=lang, split=split, min_count=min_count,
                  max_sentences=max_sentences, batch_size=batch_size, checkpoint=checkpoint, device=device,
                  threads=threads, overwrite=overwrite)
    print_json(res.to_dict())


@app.command("align-layers")
@cli_errors
def align_layers_command(
    src: Annotated[Path, typer.Option("--src", help="Anchors directory of the side to map (layer{j}.vec)")],
    tgt: Annotated[Path, typer.Option("--tgt", help="Anchors directory of the target space")],
    train_dict: Annotated[Path, typer.Option("--train-dict", help="Seed dictionary (MUSE format, src tgt)")],
    out: Annotated[Path, typer.Option("--out", help="Output directory: layer{j}/ as align writes it")],
    eval_dict: Annotated[Path | None, typer.Option("--eval-dict", help="Evaluation dictionary")] = None,
    refine: Annotated[int, typer.Option("--refine", help="CSLS refinement iterations (0: Procrustes)")] = 0,
    allow_overlap: AllowOverlapOption = False,
    threads: ThreadsOption = None,
    overwrite: OverwriteOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Align each layer's anchors with `align` (one map W(j) per layer, for features --align)."""
    from polyglot_groc.contextual.features import align_layers

    setup_logging(verbose)
    check_non_negative(threads=threads)
    print_json(align_layers(src=src, tgt=tgt, out=out, train_dict=train_dict, eval_dict=eval_dict, refine=refine,
                            allow_overlap=allow_overlap, overwrite=overwrite, threads=threads).to_dict())


@app.command("probe")
@cli_errors
def probe_command(
    source: Annotated[Path, typer.Option("--source", help="Source treebank (CoNLL-U)")],
    test: Annotated[Path, typer.Option("--test", help="Target test treebank (CoNLL-U)")],
    target: Annotated[Path | None, typer.Option("--target", help="Target training pool (CoNLL-U)")] = None,
    source_features: Annotated[Path | None, typer.Option("--source-features", help="features --layers all")] = None,
    target_features: Annotated[Path | None, typer.Option("--target-features")] = None,
    test_features: Annotated[Path | None, typer.Option("--test-features")] = None,
    n_source: Annotated[int | None, typer.Option("--n-source", help="First N source trees")] = None,
    n_target: Annotated[int, typer.Option("--n-target", help="Target training trees drawn from the pool")] = 0,
    epochs: Annotated[int, typer.Option("--epochs")] = 4,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    threads: ThreadsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Train the biaffine parsing probe on frozen features (none: word embeddings) and print UAS/LAS."""
    from polyglot_groc.contextual.parser import ParserConfig
    from polyglot_groc.contextual.probe import probe
    from polyglot_groc.model.device import use_threads

    setup_logging(verbose)
    use_threads(threads)
    res = probe(source=source, test=test, target=target, source_features=source_features,
                target_features=target_features, test_features=test_features, n_source=n_source,
                n_target=n_target, seed=seed, config=ParserConfig(epochs=epochs))
    print_json(res.to_dict())
