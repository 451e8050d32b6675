"""``export``, ``align``, ``align-many`` and ``similarity``: embeddings out of runs, alignment, word similarity.

Thin faces over :mod:`polyglot_groc.analysis.workflows` (``export``, ``align``, ``similarity``):
parse the options, call the function, print its JSON (and, for ``align``, its summary on stderr).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from groc_base.wording import counted
from polyglot_groc.commands._align_options import (
    DictionaryModeOption,
    RandomSeedOption,
    RequireAlignedOption,
    method_help,
    method_options,
)
from polyglot_groc.commands._common import (
    cli_errors,
    deprecated_alias,
    err_console,
    fresh_output,
    key_values,
    print_json,
    setup_logging,
)
from polyglot_groc.commands._options import (
    AllowOverlapOption,
    AllowUntrainedOption,
    CheckpointOption,
    DeviceOption,
    OverwriteOption,
    ThreadsOption,
    VerboseOption,
    device_option,
)

app = typer.Typer()


@app.command("export")
@cli_errors
def export_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    out: Annotated[Path, typer.Option("--out", help="Output .vec (word2vec text format)")],
    lang: Annotated[str | None, typer.Option(
        "--lang", help="Language whose words to export",
        show_default="a one-language run's; required for a polyglot run")] = None,
    words: Annotated[Path | None, typer.Option(
        "--words", help="File with one word per line (any word); with --vocab: added after the vocabulary")] = None,
    vocab: Annotated[bool, typer.Option("--vocab", help="Export the language's vocabulary")] = False,
    side: Annotated[str, typer.Option("--side", help="input | output embeddings")] = "input",
    max_vocab: Annotated[int | None, typer.Option("--max-vocab", help="Keep the N most frequent words")] = None,
    checkpoint: CheckpointOption = "best",
    skip_multiword: Annotated[bool, typer.Option(
        "--skip-multiword", help="With --words: leave out lines with several tokens instead of failing")] = False,
    allow_untrained: AllowUntrainedOption = False,
    device: DeviceOption = "auto",
    threads: ThreadsOption = None,
    overwrite: OverwriteOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Write word embeddings of a run in word2vec text format (MUSE, fastText and gensim read it).

    Words are written unchanged (no lowercasing); --vocab writes them most frequent first, so
    MUSE's lowercase first-occurrence rule keeps each word's most frequent casing. --vocab with
    --words writes the vocabulary, then the listed words it lacks.
    """
    from polyglot_groc.analysis.export import export

    setup_logging(verbose)
    res = export(run=run, lang=lang, out=out, words=words, vocab=vocab, side=side, max_vocab=max_vocab,
                 checkpoint=checkpoint, skip_multiword=skip_multiword, overwrite=overwrite,
                 allow_untrained=allow_untrained, device=device, threads=threads)
    if res.missing:
        err_console.print(f"{counted(res.missing, 'word')} cannot be embedded by this {res.model} model "
                          f"(e.g. {', '.join(res.missing_examples[:5])})")
    if res.unknown_characters:
        err_console.print(f"{res.unknown_characters} composed words use only characters the model never saw "
                          f"(e.g. {', '.join(res.unknown_characters_examples[:5])}); they collapse to a few vectors")
    print_json(res.to_dict())


def _side_name(vectors: Path | None, lang: str | None, fallback: str) -> str:
    """A side's short name for a default output folder: its language, else its file's stem."""
    if lang:
        return lang
    if vectors is not None:
        name = vectors.name
        for suffix in (".gz", ".bz2", ".xz", ".vec", ".bin", ".txt"):
            name = name.removesuffix(suffix)
        return name or fallback
    return fallback


#: --src-lang / --tgt-lang: what the language of a side is used for.
_LANG_HELP = ("{side} language code: with --run, which of the run's languages is the {side} side; with "
              "--dictionary-mode lexicon, the wordnet language; names --export-mapped's vectors-<lang>.txt")


@app.command("align")
@cli_errors
@method_options
def align_command(
    src: Annotated[Path | None, typer.Option(
        "--src", help="Source vectors: word2vec text (.vec) or binary (.bin), plain or .gz/.bz2/.xz")] = None,
    tgt: Annotated[Path | None, typer.Option("--tgt", help="Target vectors, in any format --src takes")] = None,
    run: Annotated[Path | None, typer.Option(
        "--run", help="A run whose vocabulary gives the sides not given as --src/--tgt (with --src-lang/--tgt-lang)")]
    = None,
    src_lang: Annotated[str | None, typer.Option("--src-lang", help=_LANG_HELP.format(side="Source"))] = None,
    tgt_lang: Annotated[str | None, typer.Option("--tgt-lang", help=_LANG_HELP.format(side="Target"))] = None,
    side: Annotated[str, typer.Option("--side", help="input | output embeddings (with --run)")] = "input",
    train_dict: Annotated[Path | None, typer.Option(
        "--train-dict", help="Seed dictionary (MUSE format: one 'source target' pair a line)")] = None,
    eval_dict: Annotated[Path | None, typer.Option("--eval-dict", help="Evaluation dictionary (MUSE format)")] = None,
    reverse_dicts: Annotated[bool, typer.Option(
        "--reverse-dicts", help="Read --train-dict and --eval-dict as 'target source' lines: flip a dictionary's "
                                "direction (e.g. an en-tl file to map tl onto en)")] = False,
    dictionary_mode: DictionaryModeOption = None,
    seed_old: Annotated[str | None, typer.Option("--seed", hidden=True, help="Deprecated: --dictionary-mode")] = None,
    method: Annotated[str | None, typer.Option("--method", help=method_help(), show_default="procrustes")] = None,
    normalize: Annotated[str | None, typer.Option("--normalize", help=(
        "Chain applied to both sides, in order: renorm, center, iternorm (iterative normalisation, 5 rounds; "
        "iternorm:N for N), e.g. renorm,center,renorm; none for nothing"),
        show_default="the method's reference: none (procrustes), renorm (rcsls), renorm,center,renorm (vecmap)")]
    = None,
    criterion: Annotated[bool, typer.Option(
        "--criterion", help="--method rcsls|vecmap: also score the map by the unsupervised mean CSLS cosine "
                            "(procrustes always does; costs a CSLS search)")] = False,
    random_seed: RandomSeedOption = 0,
    require_aligned: RequireAlignedOption = False,
    max_vocab: Annotated[int | None, typer.Option(
        "--max-vocab", help="Read at most N words per side (MUSE's 200000); 0: every word, as VecMap")] = 200000,
    keep_case: Annotated[bool, typer.Option(
        "--keep-case", help="Keep every word as written and match dictionaries as written (not a MUSE mode: MUSE "
                            "always lowercases for training and evaluation); default lowercases, first wins")] = False,
    knn: Annotated[str, typer.Option("--knn", help=(
        "CSLS ranking: exact (faiss exact search; the full ranking, certified) | approximate (from 20000 words "
        "on: neighbourhood means bounded from a 5% sample, one re-ranked candidate round; faster, not "
        "guaranteed; below 20000 words the same as exact)"))] = "exact",
    eval_words: Annotated[Path | None, typer.Option(
        "--eval-words", help="Evaluate only these source words (one per line), to compare models on one set")] = None,
    allow_overlap: AllowOverlapOption = False,
    export_mapped: Annotated[bool, typer.Option(
        "--export-mapped", help="Also write vectors-<lang>.txt as MUSE's export does")] = False,
    lenient: Annotated[bool, typer.Option("--lenient", help="Skip malformed dictionary lines")] = False,
    lexicon: Annotated[list[str] | None, typer.Option(
        "--lexicon", help="wn lexicon for --dictionary-mode lexicon, repeatable, e.g. omw-fr (as `lexicon info` lists "
                          "them; default: the installed wordnets of --src-lang and --tgt-lang)")] = None,
    wn_dir: Annotated[Path | None, typer.Option("--wn-dir", help="wn data folder (dictionary-mode lexicon)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Output directory",
        show_default="a new alignment-<src>-<tgt>[-N] in the current directory, never an existing one (printed)")]
    = None,
    threads: ThreadsOption = None,
    overwrite: OverwriteOption = False,
    device: Annotated[str, device_option("auto | cpu | cuda | cuda:N (with --run)")] = "auto",
    verbose: VerboseOption = False,
    **knobs: Any,
) -> None:
    """Align two embedding spaces (Procrustes + CSLS refinement, RCSLS, VecMap; or with no dictionary:
    --dictionary-mode unsupervised|adversarial); P@1/5/10 with nn and csls under MUSE's and fastText's
    protocols (and, with --run, on composed words), each beside its own baselines.

    Each method's knobs are its own options (--refine, --rcsls-lr, --vecmap-whiten, ...), refused with
    another method. A method that judges its map (no dictionary, or --method vecmap-self-learning)
    prints its verdict first: aligned, doubtful or failed (exit 0 unless --require-aligned)."""
    from eval.methods.registry import build_config
    from polyglot_groc.analysis.alignment import align
    from polyglot_groc.analysis.alignment_starts import method_for

    dictionary_mode = deprecated_alias("--dictionary-mode", "--seed", dictionary_mode, seed_old)
    setup_logging(verbose)
    name = method_for(method, dictionary_mode, train_dict)
    config = build_config(name, None, knobs)  # a knob of another method is refused here, before anything runs
    defaulted = out is None
    if out is None:
        base = f"alignment-{_side_name(src, src_lang, 'src')}-{_side_name(tgt, tgt_lang, 'tgt')}"
        out = fresh_output(Path(base))
    res = align(src=src, tgt=tgt, run=run, src_lang=src_lang, tgt_lang=tgt_lang, side=side, train_dict=train_dict,
                eval_dict=eval_dict, dictionary_mode=dictionary_mode, method=name, method_config=config,
                normalize=normalize, max_vocab=max_vocab, keep_case=keep_case, knn=knn, eval_words=eval_words,
                allow_overlap=allow_overlap, export_mapped=export_mapped, lenient=lenient, lexicon=lexicon,
                wn_dir=wn_dir, out=out, overwrite=overwrite, device=device, threads=threads,
                reverse_dicts=reverse_dicts, criterion=criterion or None, random_seed=random_seed,
                require_aligned=require_aligned)
    for line in res.summary():
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    if defaulted:  # the user did not name the folder: say which one it is
        err_console.print(f"wrote {out} (no --out given)", highlight=False, markup=False, soft_wrap=True)
    print_json(res.to_dict())


@app.command("align-many")
@cli_errors
@method_options
def align_many_command(
    vectors: Annotated[list[str], typer.Option(
        "--vectors", help="LANG=FILE, repeated: each language's vectors (word2vec .vec/.bin, plain or compressed)")],
    pivot: Annotated[str, typer.Option("--pivot", help="The language every other one is mapped onto")],
    train_dict: Annotated[list[str] | None, typer.Option(
        "--train-dict", help="L-PIVOT=FILE (or PIVOT-L=FILE, read reversed), one per non-pivot language (those "
                             "without one start from --dictionary-mode)")] = None,
    eval_dict: Annotated[list[str] | None, typer.Option(
        "--eval-dict", help="A-B=FILE, repeated: a test dictionary for any two languages (P@k table)")] = None,
    dictionary_mode: DictionaryModeOption = None,
    method: Annotated[str | None, typer.Option(
        "--method", help=method_help(pivot=True), show_default="procrustes, or the --dictionary-mode's own")] = None,
    random_seed: RandomSeedOption = 0,
    require_aligned: RequireAlignedOption = False,
    normalize: Annotated[str | None, typer.Option(
        "--normalize", help="Chain of renorm, center, iternorm[:N]; none for nothing",
        show_default="the method's reference, as align's")] = None,
    max_vocab: Annotated[int | None, typer.Option("--max-vocab", help="Read at most N words per language")] = 200000,
    keep_case: Annotated[bool, typer.Option("--keep-case", help="Keep every word as written")] = False,
    knn: Annotated[str, typer.Option("--knn", help="CSLS ranking: exact | approximate")] = "exact",
    lenient: Annotated[bool, typer.Option("--lenient", help="Skip malformed dictionary lines")] = False,
    allow_overlap: AllowOverlapOption = False,
    export_mapped: Annotated[bool, typer.Option(
        "--export-mapped", help="Also write OUT/<lang>.vec: every language's vocabulary in the pivot's space "
                                "(large: the maps OUT/W-<lang>.npy are always written)")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Output directory",
        show_default="a new alignment-many-<pivot>[-N] in the current directory, never an existing one (printed)")]
    = None,
    threads: ThreadsOption = None,
    overwrite: OverwriteOption = False,
    verbose: VerboseOption = False,
    **knobs: Any,
) -> None:
    """Map several languages into one space (each onto --pivot) and print, for every --eval-dict pair, the
    report align prints (coverage, dropped pairs, training overlap, nn and csls beside every baseline).

    Writes OUT/W-<lang>.npy and OUT/result.json (with --export-mapped, OUT/<lang>.vec too). Progress per
    language on a terminal (in a log: with --verbose).
    """
    from eval.methods.registry import build_config
    from polyglot_groc.analysis.alignment_many import align_many
    from polyglot_groc.analysis.alignment_starts import method_for

    setup_logging(verbose, progress=("polyglot_groc.analysis.alignment_many",))
    method = method_for(method, dictionary_mode, train_dict or None)
    config = build_config(method, None, knobs)  # a knob of another method is refused here, before anything runs
    defaulted = out is None
    if out is None:  # a fresh folder: running it twice never fails on, or replaces, the first result
        out = fresh_output(Path(f"alignment-many-{pivot}"))
    res = align_many(vectors=key_values(vectors, "--vectors", "fr=fr.vec"), pivot=pivot,
                     train_dicts=key_values(train_dict, "--train-dict", "fr-en=fr-en.0-5000.txt"),
                     eval_dicts=key_values(eval_dict, "--eval-dict", "fr-es=fr-es.5000-6500.txt"),
                     dictionary_mode=dictionary_mode, method=method, method_config=config, random_seed=random_seed,
                     require_aligned=require_aligned, normalize=normalize, max_vocab=max_vocab, keep_case=keep_case,
                     knn=knn, lenient=lenient, allow_overlap=allow_overlap, export_mapped=export_mapped, out=out,
                     overwrite=overwrite, threads=threads)
    for line in res.table():
        err_console.print(line, highlight=False, markup=False, soft_wrap=True)
    if defaulted:
        err_console.print(f"wrote {out} (no --out given)", highlight=False, markup=False, soft_wrap=True)
    print_json(res.to_dict())


@app.command("similarity")
@cli_errors
def similarity_command(
    dataset: Annotated[list[Path], typer.Option("--dataset", help="Word-similarity file(s): w1 w2 score")],
    vectors: Annotated[Path | None, typer.Option(
        "--vectors", help="Word vectors: word2vec text (.vec) or binary (.bin), plain or .gz/.bz2/.xz")] = None,
    run: Annotated[Path | None, typer.Option("--run", help="Run directory")] = None,
    lang: Annotated[str | None, typer.Option("--lang")] = None,
    side: Annotated[str, typer.Option("--side", help="input | output (with --run)")] = "input",
    max_vocab: Annotated[int | None, typer.Option(
        "--max-vocab", help="Read at most N distinct words, as MUSE's evaluate.py (its default 200000)")] = 200000,
    keep_case: Annotated[bool, typer.Option(
        "--keep-case", help="Keep the vocabulary's case; look words up lowercase, Capitalized, Title (not a MUSE "
                            "mode: MUSE's evaluator always lowercases the vocabulary)")] = False,
    src_vectors: Annotated[Path | None, typer.Option(
        "--src-vectors", help="Cross-lingual: source vectors (already mapped), first word of each pair")] = None,
    tgt_vectors: Annotated[Path | None, typer.Option(
        "--tgt-vectors", help="Cross-lingual: target vectors, second word of each pair")] = None,
    allow_untrained: AllowUntrainedOption = False,
    device: Annotated[str, device_option("auto | cpu | cuda | cuda:N (with --run)")] = "auto",
    threads: ThreadsOption = None,
    verbose: VerboseOption = False,
) -> None:
    """Spearman rho between cosine similarity and human judgements (MUSE's mono- and cross-lingual evaluation).

    Multiword pairs (SemEval-17) are skipped and counted, as MUSE does. Each dataset is scored on
    its own: a bad one is reported as an error entry and the others still count (exit 2 only if
    all fail).
    """
    from polyglot_groc.analysis.similarity import similarity

    setup_logging(verbose)
    print_json(similarity(datasets=dataset, vectors=vectors, run=run, lang=lang, side=side, max_vocab=max_vocab,
                          keep_case=keep_case, src_vectors=src_vectors, tgt_vectors=tgt_vectors,
                          allow_untrained=allow_untrained, device=device, threads=threads).to_dict())
