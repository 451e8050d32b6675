"""``export``, ``align`` and ``similarity``: embeddings out of runs, MUSE-style alignment, word similarity.

The maths lives in ``eval`` (arrays only); these commands read files or runs, call it, and write
results atomically.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from groc_base.fileio import dumps_json
from polyglot_groc.commands._common import (
    OVERWRITE_HELP,
    ThreadsOption,
    check_non_negative,
    check_output,
    check_positive,
    cli_errors,
    deprecated_alias,
    err_console,
    print_json,
    setup_logging,
    use_threads,
    warn,
)

if TYPE_CHECKING:
    import numpy as np  # imported where used: the CLI imports this module for every command

log = logging.getLogger(__name__)


def _read_words(path: Path, skip_multiword: bool = False) -> list[str]:
    """One word per line; a line with several tokens is an error unless ``skip_multiword``."""
    from groc_base.errors import InputError
    from groc_base.fileio import read_bytes
    from langpairs.corpus import decode_utf8

    data = read_bytes(path, "word list", InputError)
    lines = [line.split() for line in decode_utf8(data, path).splitlines()]
    multi = [i for i, fields in enumerate(lines, start=1) if len(fields) > 1]
    if multi and not skip_multiword:
        raise InputError(f"{path}: line {multi[0]} holds several tokens ({' '.join(lines[multi[0] - 1])[:60]!r}; "
                         f"{len(multi)} such lines); .vec files hold one token per word: split the phrase, "
                         "or pass --skip-multiword to leave those lines out")
    if multi:
        log.warning("%s: %d multiword line(s) skipped (--skip-multiword)", path, len(multi))
    words = [fields[0] for fields in lines if len(fields) == 1]
    if not words:
        raise InputError(f"word list {path} is empty; put one word per line")
    return words


def run_vectors(run: Path, lang: str, words: list[str] | None, side: str, max_vocab: int | None,
                checkpoint: str = "best", device: str = "cpu") -> tuple[list[str], np.ndarray, dict[str, Any]]:
    """Words and vectors of ``lang`` from a run: the given words (any word, for GroC) or its vocabulary."""
    from polyglot_groc.analysis.export import embed, vocabulary_words
    from polyglot_groc.model.bundle import load_bundle

    bundle, _ = load_bundle(run, checkpoint, device)
    wanted = words if words is not None else vocabulary_words(bundle, lang, max_vocab)
    out = embed(bundle, lang, wanted, side=side)
    info = {"model": bundle.model.kind, "lang": lang, "side": side, "requested": len(wanted),
            "exported": len(out.words), "composed_unseen": out.composed, "missing": len(out.missing),
            "missing_examples": out.missing[:10]}
    return out.words, out.vectors, info


def export_command(
    run: Annotated[Path, typer.Argument(help="Run directory")],
    lang: Annotated[str, typer.Option("--lang", help="Language whose words to export")],
    out: Annotated[Path, typer.Option("--out", help="Output .vec (word2vec text format)")],
    words: Annotated[Path | None, typer.Option("--words", help="File with one word per line (any word)")] = None,
    vocab: Annotated[bool, typer.Option("--vocab", help="Export the language's vocabulary")] = False,
    side: Annotated[str, typer.Option("--side", help="input | output embeddings")] = "input",
    max_vocab: Annotated[int | None, typer.Option("--max-vocab", help="Keep the N most frequent words")] = None,
    checkpoint: Annotated[str, typer.Option("--checkpoint", help="best | last")] = "best",
    skip_multiword: Annotated[bool, typer.Option(
        "--skip-multiword", help="With --words: leave out lines with several tokens instead of failing")] = False,
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda | cuda:N")] = "auto",
    threads: ThreadsOption = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Write word embeddings of a run in word2vec text format (MUSE, fastText and gensim read it).

    Words are written unchanged (no lowercasing); --vocab writes them most frequent first, so
    MUSE's lowercase first-occurrence rule keeps each word's most frequent casing.
    """
    _export(run, lang, out, words, vocab, side, max_vocab, checkpoint, verbose, skip_multiword, device, threads,
            overwrite)


@cli_errors
def _export(run: Path, lang: str, out: Path, words: Path | None, vocab: bool, side: str, max_vocab: int | None,
            checkpoint: str, verbose: bool, skip_multiword: bool = False, device: str = "auto",
            threads: int | None = None, overwrite: bool = False) -> None:
    from eval.vectors import write_vec
    from groc_base.errors import InputError

    setup_logging(verbose)
    check_positive(max_vocab=max_vocab)
    use_threads(threads)
    if (words is None) == (not vocab):
        raise InputError("pass exactly one of --words FILE or --vocab")
    check_output(out, overwrite)
    wanted = _read_words(words, skip_multiword) if words is not None else None
    if wanted is not None and max_vocab:
        wanted = wanted[:max_vocab]
    ws, vecs, info = run_vectors(run, lang, wanted, side, max_vocab, checkpoint, device)
    if not ws:
        raise InputError(f"none of the requested words can be embedded by this {info['model']} model")
    write_vec(out, ws, vecs)
    if info["missing"]:
        err_console.print(f"{info['missing']} words cannot be embedded by this {info['model']} model "
                          f"(e.g. {', '.join(info['missing_examples'][:5])})")
    print_json({**info, "out": str(out), "dim": int(vecs.shape[1])})


def _load_side(vec: Path | None, bundle: Callable[[], Any] | None, lang: str | None, side: str,
               max_vocab: int | None, name: str, lower: bool = True) -> tuple[list[str], np.ndarray]:
    """One side's words and vectors, from a file or from the run; the same vocabulary rule either way.

    MUSE's reading (lowercase, first occurrence wins, ``max_vocab`` distinct words; --keep-case is
    MUSE's full_vocab) applies to a run's vocabulary exactly as to a file, so ``align --run`` scores
    the words that ``export --vocab`` and ``align --src/--tgt`` on the exported files score.
    """
    from eval.vectors import read_vec
    from groc_base.errors import InputError

    if vec is not None:
        return read_vec(vec, max_vocab=max_vocab, lower=lower)
    if bundle is None or lang is None:
        raise InputError(f"give --{name} FILE (word2vec .vec or .bin), or --run RUN with --{name}-lang")
    from polyglot_groc.analysis.export import vocabulary_vectors

    out = vocabulary_vectors(bundle(), lang, side, max_vocab, lower)
    return out.words, out.vectors


def align_command(
    src: Annotated[Path | None, typer.Option(
        "--src", help="Source vectors: word2vec text (.vec) or binary (.bin), plain or .gz/.bz2/.xz")] = None,
    tgt: Annotated[Path | None, typer.Option("--tgt", help="Target vectors, in any format --src takes")] = None,
    run: Annotated[Path | None, typer.Option("--run", help="Polyglot run to export both languages from")] = None,
    src_lang: Annotated[str | None, typer.Option("--src-lang")] = None,
    tgt_lang: Annotated[str | None, typer.Option("--tgt-lang")] = None,
    side: Annotated[str, typer.Option("--side", help="input | output embeddings (with --run)")] = "input",
    train_dict: Annotated[Path | None, typer.Option("--train-dict", help="Seed dictionary (MUSE format)")] = None,
    eval_dict: Annotated[Path | None, typer.Option("--eval-dict", help="Evaluation dictionary")] = None,
    dictionary_mode: Annotated[str | None, typer.Option(
        "--dictionary-mode", help="Without --train-dict: identical | lexicon")] = None,
    seed_old: Annotated[str | None, typer.Option("--seed", hidden=True, help="Deprecated: --dictionary-mode")] = None,
    refine: Annotated[int, typer.Option("--refine", help="Refinement iterations")] = 5,
    normalize: Annotated[str, typer.Option("--normalize", help="e.g. center,renorm (applied to both)")] = "",
    dico_build: Annotated[str, typer.Option("--dico-build", help="S2T | T2S | S2T|T2S | S2T&T2S")] = "S2T&T2S",
    dico_max_rank: Annotated[int | None, typer.Option(
        "--dico-max-rank", help="Refinement dictionary rank limit (default: 10000 with --train-dict, 15000 with "
                                "--dictionary-mode, as MUSE's supervised/unsupervised dico_max_rank)")] = None,
    max_vocab: Annotated[int | None, typer.Option("--max-vocab", help="Read at most N words per side")] = 200000,
    keep_case: Annotated[bool, typer.Option(
        "--keep-case", help="Keep every word as written (MUSE's full_vocab); default lowercases, first wins")] = False,
    knn: Annotated[str, typer.Option("--knn", help=(
        "CSLS ranking: exact (faiss exact search; the full ranking, certified) | approximate (from 20000 words "
        "on: neighbourhood means bounded from a 5% sample, one re-ranked candidate round; faster, not "
        "guaranteed; below 20000 words the same as exact)"))] = "exact",
    eval_words: Annotated[Path | None, typer.Option(
        "--eval-words", help="Evaluate only these source words (one per line), to compare models on one set")] = None,
    export_mapped: Annotated[bool, typer.Option(
        "--export-mapped", help="Also write vectors-<lang>.txt as MUSE's export does")] = False,
    lenient: Annotated[bool, typer.Option("--lenient", help="Skip malformed dictionary lines")] = False,
    lexicon: Annotated[list[str] | None, typer.Option(
        "--lexicon", help="wn lexicon for --dictionary-mode lexicon, repeatable, e.g. omw-fr (as `lexicon info` lists "
                          "them; default: the installed wordnets of --src-lang and --tgt-lang)")] = None,
    wn_dir: Annotated[Path | None, typer.Option("--wn-dir", help="wn data folder (dictionary-mode lexicon)")] = None,
    out: Annotated[Path, typer.Option("--out", help="Output directory")] = Path("alignment"),
    threads: ThreadsOption = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help=OVERWRITE_HELP)] = False,
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda | cuda:N (with --run)")] = "auto",
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Supervised Procrustes + CSLS refinement (MUSE-style); P@1/5/10 with nn and csls."""
    seed = deprecated_alias("--dictionary-mode", "--seed", dictionary_mode, seed_old)
    _align(src, tgt, run, src_lang, tgt_lang, side, train_dict, eval_dict, seed, refine, normalize, dico_build,
           dico_max_rank, max_vocab, keep_case, lenient, lexicon, wn_dir, out, verbose, knn, eval_words, export_mapped,
           threads, overwrite, device)


@cli_errors
def _align(src: Path | None, tgt: Path | None, run: Path | None, src_lang: str | None, tgt_lang: str | None,
           side: str, train_dict: Path | None, eval_dict: Path | None, seed: str | None, refine: int,
           normalize: str, dico_build: str, dico_max_rank: int | None, max_vocab: int | None, keep_case: bool,
           lenient: bool, lexicon: list[str] | None, wn_dir: Path | None, out: Path, verbose: bool,
           knn: str = "exact", eval_words: Path | None = None, export_mapped: bool = False,
           threads: int | None = None, overwrite: bool = False, device: str = "auto") -> None:
    import torch

    from eval.align import KNN_MODES, align, identical_pairs, pairs_to_indices
    from eval.vectors import write_vec
    from groc_base.errors import InputError
    from langpairs.dictionaries import read_dictionary
    from polyglot_groc.model.checkpoint import atomic_write, atomic_write_text

    setup_logging(verbose)
    check_positive(max_vocab=max_vocab, dico_max_rank=dico_max_rank)
    check_non_negative(refine=refine)
    use_threads(threads)
    if knn not in KNN_MODES:
        raise InputError(f"--knn {knn!r} is unknown; use exact or approximate")
    check_output(out, overwrite, directory=True)
    lower = not keep_case
    loaded: list[Any] = []

    def bundle() -> Any:  # the run is loaded once, and only if a side comes from it
        if not loaded:
            from polyglot_groc.model.bundle import load_bundle

            assert run is not None
            loaded.append(load_bundle(run, "best", device)[0])
        return loaded[0]

    src_words, src_vecs = _load_side(src, bundle if run else None, src_lang, side, max_vocab, "src", lower)
    tgt_words, tgt_vecs = _load_side(tgt, bundle if run else None, tgt_lang, side, max_vocab, "tgt", lower)
    if src_vecs.shape[1] != tgt_vecs.shape[1]:
        raise InputError(f"source vectors have dimension {src_vecs.shape[1]} but target vectors "
                         f"{tgt_vecs.shape[1]}; align embeddings of the same size")
    result: dict[str, Any] = {"src_words": len(src_words), "tgt_words": len(tgt_words), "dim": int(src_vecs.shape[1])}
    if train_dict is not None:
        train_pairs, stats = pairs_to_indices(read_dictionary(train_dict, lower=lower, lenient=lenient),
                                              src_words, tgt_words, lower=lower)
        result["train_dictionary"] = {"path": str(train_dict), **stats}
    elif seed == "identical":
        train_pairs = identical_pairs(src_words, tgt_words)
        if len(train_pairs) == 0:
            raise InputError("no identical strings in the two vocabularies; "
                             "pass --train-dict or --dictionary-mode lexicon")
        result["train_dictionary"] = {"seed": "identical", "found": int(len(train_pairs))}
    elif seed == "lexicon":
        train_pairs = _lexicon_seed(src_words, tgt_words, src_lang, tgt_lang, lexicon, wn_dir)
        result["train_dictionary"] = {"seed": "lexicon", "found": int(len(train_pairs))}
    else:
        raise InputError("no seed dictionary: pass --train-dict FILE, --dictionary-mode identical "
                         "or --dictionary-mode lexicon")
    if dico_max_rank is None:
        dico_max_rank = 10000 if train_dict is not None else 15000
    result.update({"dico_max_rank": dico_max_rank, "knn_mode": knn, "lowercased": lower})
    res = align(src_vecs, tgt_vecs, train_pairs, n_refinement=refine, normalize=normalize,
                dico_build=dico_build, dico_max_rank=dico_max_rank, knn_mode=knn)  # type: ignore[arg-type]
    mapped, target = res.map_source(src_vecs), res.prepare_target(tgt_vecs)
    result.update({"best_iteration": res.best_iteration, "history": res.history, "normalize": normalize,
                   "selection": "unsupervised mean CSLS cosine (never the evaluation dictionary)"})
    if eval_dict is not None:
        from polyglot_groc.analysis.alignment_report import evaluate_with_baselines, summary_lines

        pairs = read_dictionary(eval_dict, lower=lower, lenient=lenient)
        restrict = set(_read_words(eval_words)) if eval_words is not None else None
        result["eval_dictionary"], result["precision"], result["baselines"] = evaluate_with_baselines(
            pairs, src_words, tgt_words, mapped, target, lower=lower, eval_words=restrict, knn_mode=knn)  # type: ignore[arg-type]
        result["eval_dictionary"]["path"] = str(eval_dict)
        for line in summary_lines(result["eval_dictionary"], result["precision"], result["baselines"]):
            err_console.print(line)
    import numpy as np

    # All files or none: a failed write (disk full, read-only) removes the ones written before it.
    # MUSE saves best_mapping.pth with torch.save(W numpy array) and reloads it with torch.load.
    outputs: list[tuple[str, Callable[[Path], None]]] = [
        ("W.npy", lambda p: atomic_write(p, lambda f: np.save(f, res.W))),
        ("best_mapping.pth", lambda p: atomic_write(p, lambda f: torch.save(np.asarray(res.W), f))),
        ("src.aligned.vec", lambda p: write_vec(p, src_words, mapped)),
        ("tgt.vec", lambda p: write_vec(p, tgt_words, target)),
    ]
    if export_mapped:
        src_name, tgt_name = f"vectors-{src_lang or 'src'}.txt", f"vectors-{tgt_lang or 'tgt'}.txt"
        if src_name == tgt_name:  # one language on both sides: MUSE's names would write one file twice
            src_name, tgt_name = f"vectors-{src_lang}.src.txt", f"vectors-{tgt_lang}.tgt.txt"
        outputs += [(src_name, lambda p: write_vec(p, src_words, mapped)),
                    (tgt_name, lambda p: write_vec(p, tgt_words, target))]
    outputs.append(("result.json", lambda p: atomic_write_text(p, dumps_json(result, indent=2) + "\n")))
    created = not out.exists()
    written: list[Path] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, write in outputs:
            write(out / name)
            written.append(out / name)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    # --overwrite replaces the earlier result whole: its mapped vectors must not outlive it.
    for stale in set(out.glob("vectors-*.txt")) - set(written):
        stale.unlink(missing_ok=True)
    print_json(result)


def _lexicon_seed(src_words: list[str], tgt_words: list[str], src_lang: str | None, tgt_lang: str | None,
                  specs: list[str] | None, wn_dir: Path | None = None) -> np.ndarray:
    """Seed pairs: words of the two languages that share a synset (ILI) in the lexicon."""
    import numpy as np

    from groc_base.errors import InputError
    from lexicons.service import open_lexicon

    if not src_lang or not tgt_lang:
        raise InputError("--dictionary-mode lexicon needs --src-lang and --tgt-lang")
    lex = open_lexicon("wn", specs=specs or None, langs=None if specs else [src_lang, tgt_lang], wn_dir=wn_dir)
    translate = getattr(lex, "translation_pairs", None)
    if translate is None:
        raise InputError(f"the {type(lex).__name__} backend cannot derive cross-lingual pairs; pass --train-dict")
    pairs = translate(src_words, src_lang, tgt_words, tgt_lang)
    src_index = {w: i for i, w in reversed(list(enumerate(src_words)))}
    tgt_index = {w: i for i, w in reversed(list(enumerate(tgt_words)))}
    rows = np.array([(src_index[s], tgt_index[t]) for s, t in pairs], dtype=np.int64).reshape(-1, 2)
    if len(rows) == 0:
        raise InputError(f"the lexicon links no {src_lang} word to a {tgt_lang} word of these vocabularies")
    return rows


def similarity_command(
    dataset: Annotated[list[Path], typer.Option("--dataset", help="Word-similarity file(s): w1 w2 score")],
    vectors: Annotated[Path | None, typer.Option(
        "--vectors", help="Word vectors: word2vec text (.vec) or binary (.bin), plain or .gz/.bz2/.xz")] = None,
    run: Annotated[Path | None, typer.Option("--run", help="Run directory")] = None,
    lang: Annotated[str | None, typer.Option("--lang")] = None,
    side: Annotated[str, typer.Option("--side", help="input | output (with --run)")] = "input",
    max_vocab: Annotated[int | None, typer.Option("--max-vocab")] = None,
    keep_case: Annotated[bool, typer.Option(
        "--keep-case", help="Keep the vocabulary's case; look words up lowercase, Capitalized, Title")] = False,
    src_vectors: Annotated[Path | None, typer.Option(
        "--src-vectors", help="Cross-lingual: source vectors (already mapped), first word of each pair")] = None,
    tgt_vectors: Annotated[Path | None, typer.Option(
        "--tgt-vectors", help="Cross-lingual: target vectors, second word of each pair")] = None,
    device: Annotated[str, typer.Option("--device", help="auto | cpu | cuda | cuda:N (with --run)")] = "auto",
    threads: ThreadsOption = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Spearman rho between cosine similarity and human judgements (MUSE's mono- and cross-lingual evaluation).

    Multiword pairs (SemEval-17) are skipped and counted, as MUSE does. Each dataset is scored on
    its own: a bad one is reported as an error entry and the others still count (exit 2 only if
    all fail).
    """
    _similarity(dataset, vectors, run, lang, side, max_vocab, keep_case, verbose, src_vectors, tgt_vectors, device,
                threads)


def _score_datasets(datasets: list[Path], score: Any) -> dict[str, Any]:
    """Run ``score(path) -> dict`` on every dataset; failures become ``{"error": ...}`` entries.

    Each failure is reported once: as a one-line warning when other datasets were scored, or
    inside the one error (exit 2) when none could be.
    """
    from groc_base.errors import InputError
    from groc_base.fileio import unique_labels

    results: dict[str, Any] = {}
    # Keyed by file name, with parent folders where two datasets share one (never one lost).
    for label, ds in zip(unique_labels(datasets), datasets, strict=True):
        try:
            results[label] = score(ds)
        except InputError as exc:
            results[label] = {"error": str(exc)}
    failed = [name for name, entry in results.items() if "error" in entry]
    if len(failed) == len(results):
        if len(results) == 1:
            raise InputError(results[failed[0]]["error"])
        raise InputError(f"none of the {len(results)} datasets could be scored: "
                         + "; ".join(results[name]["error"] for name in failed))
    for name in failed:
        warn(f"dataset {name} skipped: {results[name]['error']}")
    return results


@cli_errors
def _similarity(datasets: list[Path], vectors: Path | None, run: Path | None, lang: str | None, side: str,
                max_vocab: int | None, keep_case: bool, verbose: bool, src_vectors: Path | None = None,
                tgt_vectors: Path | None = None, device: str = "auto", threads: int | None = None) -> None:
    from eval.similarity import read_word_pairs, word_similarity
    from eval.vectors import read_vec
    from groc_base.errors import InputError

    setup_logging(verbose)
    check_positive(max_vocab=max_vocab)
    use_threads(threads)
    lower = not keep_case
    cross = src_vectors is not None or tgt_vectors is not None
    if cross:
        if src_vectors is None or tgt_vectors is None or vectors is not None or run is not None:
            raise InputError("cross-lingual similarity takes exactly --src-vectors A.vec and --tgt-vectors B.vec")
        sw, sv = read_vec(src_vectors, max_vocab=max_vocab, lower=lower)
        tw, tv = read_vec(tgt_vectors, max_vocab=max_vocab, lower=lower)

        def cross_score(ds: Path) -> dict[str, Any]:
            triples, multi = read_word_pairs(ds)
            r = word_similarity(triples, sw, sv, lower=lower, tgt_words=tw, tgt_vectors=tv)
            return {"rho": r.rho, "found": r.found, "not_found": r.not_found, "multiword_skipped": multi}

        print_json({"src_vectors": str(src_vectors), "tgt_vectors": str(tgt_vectors),
                    "datasets": _score_datasets(datasets, cross_score)})
        return
    if (vectors is None) == (run is None):
        raise InputError("pass exactly one of --vectors FILE or --run RUN --lang XX")
    if vectors is not None:
        words, vecs = read_vec(vectors, max_vocab=max_vocab, lower=lower)

        def vec_score(ds: Path) -> dict[str, Any]:
            triples, multi = read_word_pairs(ds)
            r = word_similarity(triples, words, vecs, lower=lower)
            return {"rho": r.rho, "found": r.found, "not_found": r.not_found, "multiword_skipped": multi}

        print_json({"vectors": str(vectors), "datasets": _score_datasets(datasets, vec_score)})
        return
    if lang is None or run is None:
        raise InputError("--run needs --lang")
    from polyglot_groc.analysis.export import embed, vocabulary_vectors
    from polyglot_groc.model.bundle import load_bundle

    bundle, _ = load_bundle(run, device=device)
    # The vocabulary as `similarity --vectors` reads the run's export: same words, same vectors.
    vocab = vocabulary_vectors(bundle, lang, side, max_vocab, lower)
    composed = bundle.model.compositional_input if side == "input" else bundle.model.compositional_output

    def run_score(ds: Path) -> dict[str, Any]:
        triples, multi = read_word_pairs(ds)
        r = word_similarity(triples, vocab.words, vocab.vectors, lower=lower)
        # found/not_found in MUSE's terms: only the model's vocabulary, comparable with MUSE tables.
        entry: dict[str, Any] = {"in_vocabulary": {"rho": r.rho, "found": r.found, "not_found": r.not_found},
                                 "multiword_skipped": multi}
        if composed:
            # A separate figure: a compositional model also embeds the unseen words (100% coverage).
            # Only the lowercase forms are composed, so the lookup order cannot prefer a capitalised form.
            pair_words = sorted({w.lower() for a, b, _ in triples for w in (a, b)})
            everything = embed(bundle, lang, pair_words, side=side)
            ra = word_similarity(triples, everything.words, everything.vectors, lower=True)
            entry["all_pairs_composed"] = {"rho": ra.rho, "found": ra.found, "not_found": ra.not_found,
                                           "composed_unseen": everything.composed}
        return entry

    print_json({"run": str(run), "lang": lang, "side": side, "model": bundle.model.kind,
                "datasets": _score_datasets(datasets, run_score)})
