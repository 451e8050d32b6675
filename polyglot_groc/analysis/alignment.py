"""Align two embedding spaces (MUSE-style Procrustes + CSLS refinement) and report P@k with baselines.

:func:`align` is ``polyglot-groc align`` as a function: the vectors come from word2vec files,
from memory, or from a run's vocabulary on either side; the seed dictionary from a file, from
identical strings or from a wordnet; the maths is :func:`eval.align.align`, the evaluation
:func:`polyglot_groc.analysis.alignment_report.evaluate_with_baselines`. With ``out`` every file
(``W.npy``, ``best_mapping.pth``, ``src.aligned.vec``, ``tgt.vec``, optionally MUSE's
``vectors-<lang>.txt``, ``result.json``) is written atomically, all of them or none.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import check_non_negative, check_output, check_positive
from groc_base.errors import InputError
from groc_base.fileio import dumps_json, json_safe
from polyglot_groc.analysis.export import Exported, read_words, vocabulary_vectors
from polyglot_groc.model.bundle import ModelBundle

__all__ = ["AlignResult", "Vectors", "align", "check_input_files", "export_full_vocabulary", "lexicon_seed",
           "load_bundle_once", "normalize_rows", "read_alignment", "read_side", "training_means"]

#: A side's vectors: a word2vec file (.vec or .bin, plain or .gz/.bz2/.xz), or words and vectors
#: in memory (:class:`~polyglot_groc.analysis.export.Exported`, e.g. from ``vocabulary_vectors``).
Vectors = str | os.PathLike[str] | Exported


@dataclass(frozen=True)
class AlignResult:
    """What :func:`align` found: the dictionaries used, the refinement history, and P@k.

    ``precision`` holds P@1/5/10 per retrieval (``nn``, ``csls``) and ``baselines`` the
    identical-string and character n-gram figures on the same scored words (both ``None``
    without an evaluation dictionary). The arrays (``W``, the words and the mapped and target
    vectors) are in memory only; :meth:`to_dict` is the JSON ``polyglot-groc align`` prints and
    writes to ``result.json``.
    """

    src_words: int
    tgt_words: int
    dim: int
    train_dictionary: dict[str, Any]
    dico_max_rank: int
    knn_mode: str
    lowercased: bool
    best_iteration: int
    history: list[dict[str, Any]]
    normalize: str
    selection: str
    eval_dictionary: dict[str, Any] | None = None
    precision: dict[str, Any] | None = None
    baselines: dict[str, Any] | None = None
    out: str | None = None
    method: str = "procrustes"
    protocols: dict[str, Any] | None = None
    W: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32), repr=False, compare=False)
    source_words: list[str] = field(default_factory=list, repr=False, compare=False)
    target_words: list[str] = field(default_factory=list, repr=False, compare=False)
    mapped: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32), repr=False, compare=False)
    target: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32), repr=False, compare=False)
    #: The languages and the side of the run the two spaces were read from (None: from vectors).
    src_lang: str | None = None
    tgt_lang: str | None = None
    side: str | None = None
    #: Methods that move the target space too (vecmap): ``target = normalize(tgt) @ W_tgt.T``.
    W_tgt: np.ndarray | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc align`` prints (the evaluation keys only with an evaluation dictionary)."""
        out: dict[str, Any] = {
            "src_words": self.src_words, "tgt_words": self.tgt_words, "dim": self.dim,
            "train_dictionary": self.train_dictionary, "dico_max_rank": self.dico_max_rank,
            "knn_mode": self.knn_mode, "lowercased": self.lowercased, "best_iteration": self.best_iteration,
            "history": self.history, "normalize": self.normalize, "selection": self.selection,
            "method": self.method, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang, "side": self.side}
        if self.eval_dictionary is not None:
            out.update({"eval_dictionary": self.eval_dictionary, "precision": self.precision,
                        "baselines": self.baselines, "protocols": self.protocols})
        return json_safe(out)  # type: ignore[return-value]

    def summary(self) -> list[str]:
        """The human-readable lines ``polyglot-groc align`` prints on stderr: coverage, drops, every
        P@k beside the baselines (none without an evaluation dictionary)."""
        if self.eval_dictionary is None or self.precision is None or self.baselines is None:
            return []
        from polyglot_groc.analysis.alignment_report import protocol_lines, summary_lines

        return summary_lines(self.eval_dictionary, self.precision, self.baselines) + protocol_lines(self.protocols)


def check_input_files(*given: tuple[str, object]) -> None:
    """Refuse at once every ``(flag, value)`` whose value is a path but not a regular file.

    A FIFO with no writer would block the reader forever; a missing file or a folder is named by
    its flag before any work is done. Values that are not paths (vectors or words in memory,
    None) are skipped.
    """
    from groc_base.checks import check_input_file

    for flag, value in given:
        if isinstance(value, (str, os.PathLike)):
            check_input_file(value, flag=flag)


def load_bundle_once(run: str | os.PathLike[str] | ModelBundle, checkpoint: str,
                     device: str) -> Callable[[], ModelBundle]:
    """A function returning the run's bundle, loaded on first call only (or ``run`` itself when it
    is already a loaded bundle)."""
    loaded: list[Any] = [] if isinstance(run, (str, os.PathLike)) else [run]

    def get() -> ModelBundle:
        if not loaded:
            from polyglot_groc.model.bundle import load_bundle

            assert isinstance(run, (str, os.PathLike))
            loaded.append(load_bundle(Path(run), checkpoint, device)[0])
        return loaded[0]  # type: ignore[no-any-return]

    return get


def read_side(vec: Vectors | None, bundle: Callable[[], ModelBundle] | None, lang: str | None, side: str,
          max_vocab: int | None, name: str, lower: bool) -> tuple[list[str], np.ndarray]:
    """One side's words and vectors, from a file, from memory or from the run; the same vocabulary rule
    every way.

    MUSE's reading (lowercase, first occurrence wins, ``max_vocab`` distinct words, all-zero rows
    nudged to ``v[0] = 0.01``; ``lower=False`` keeps the case, which MUSE never does) applies to
    a run's vocabulary and to vectors in memory exactly as to a file, so aligning a run scores
    the words that ``export --vocab`` and aligning the exported files score.
    """
    from eval.vectors import first_occurrences, nudge_zero_rows, read_vec

    if isinstance(vec, (str, os.PathLike)):
        return read_vec(Path(vec), max_vocab=max_vocab, lower=lower)
    if vec is not None:
        kept, rows = first_occurrences(list(vec.words), lower=lower, max_vocab=max_vocab)
        vectors = np.array(np.asarray(vec.vectors)[rows], dtype=np.float32, order="C")  # (n, d) a copy
        nudge_zero_rows(vectors, f"--{name} vectors")
        return kept, vectors
    if bundle is None or lang is None:
        raise InputError(f"give --{name} FILE (word2vec .vec or .bin), or --run RUN with --{name}-lang")
    out = vocabulary_vectors(bundle(), lang, side, max_vocab, lower)
    nudge_zero_rows(out.vectors, f"--run {lang} vocabulary")  # as reading its export would
    return out.words, out.vectors


def align(
    *,
    src: Vectors | None = None,
    tgt: Vectors | None = None,
    run: str | os.PathLike[str] | ModelBundle | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
    side: str = "input",
    train_dict: str | os.PathLike[str] | None = None,
    eval_dict: str | os.PathLike[str] | None = None,
    dictionary_mode: str | None = None,
    refine: int | None = None,
    normalize: str = "",
    method: str = "procrustes",
    select_on: str = "criterion",
    spectral: bool = False,
    dico_build: str = "S2T&T2S",
    dico_max_rank: int | None = None,
    max_vocab: int | None = 200_000,
    keep_case: bool = False,
    knn: str = "exact",
    eval_words: str | os.PathLike[str] | Iterable[str] | None = None,
    export_mapped: bool = False,
    lenient: bool = False,
    lexicon: list[str] | None = None,
    wn_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> AlignResult:
    """Map source embeddings onto target embeddings (Procrustes + CSLS refinement, RCSLS or VecMap) and evaluate P@k.

    Each side comes from ``src``/``tgt`` (a word2vec file or vectors in memory) or, without one,
    from ``run``'s vocabulary in ``src_lang``/``tgt_lang`` (the run is loaded once, and only if a
    side needs it). The seed dictionary is ``train_dict``, else ``dictionary_mode`` ``identical``
    (identical strings) or ``lexicon`` (words sharing a wordnet synset). The refinement iteration
    is chosen by the unsupervised mean-CSLS criterion, never the evaluation dictionary, unless
    ``select_on="eval"`` asks for MUSE's supervised rule explicitly.

    Every evaluation reports both protocols (``protocols``): MUSE's (test pairs with both words in
    the vocabularies) and fastText's (every test source word; those not scorable count as
    errors), with the coverage; for a side read from ``run``, a third figure scores every test
    word with the words missing from the vocabulary composed by the model.

    Args:
        src: source vectors (file or in memory).
        tgt: target vectors (file or in memory).
        run: a run directory (or a loaded bundle) for the sides not given as vectors.
        src_lang: the source language (with ``run``, or for ``dictionary_mode="lexicon"``).
        tgt_lang: the target language.
        side: ``input`` or ``output`` embeddings of ``run``.
        train_dict: seed dictionary in MUSE's format (one ``src tgt`` pair a line).
        eval_dict: evaluation dictionary; None: no P@k.
        dictionary_mode: without ``train_dict``: ``identical`` or ``lexicon``.
        refine: refinement iterations of ``procrustes`` (None: 5; 0: Procrustes only); refused with
            the other methods.
        normalize: a chain of ``renorm``, ``center``, ``iternorm`` (iterative normalisation,
            ``iternorm:N`` for N rounds), e.g. ``renorm,center,renorm``, applied to both sides.
        method: ``procrustes`` (MUSE), ``rcsls`` (Joulin et al. 2018) or ``vecmap`` (Artetxe et al. 2018).
        select_on: how ``procrustes`` picks its refinement round: ``criterion`` (unsupervised, the
            default), ``last``, or ``eval`` (MUSE's supervised rule: P@1 on ``eval_dict``, i.e.
            tuned on the test pairs; needs ``eval_dict``).
        spectral: ``rcsls`` only: clip the map's singular values to [0, 1] after every step.
        dico_build: ``S2T``, ``T2S``, ``S2T|T2S`` or ``S2T&T2S``.
        dico_max_rank: refinement dictionary rank limit (default 10000 with ``train_dict``, 15000
            otherwise, as MUSE's supervised/unsupervised runs).
        max_vocab: read at most N words per side.
        keep_case: keep every word as written, dictionaries matched as written; default lowercases
            with the first (most frequent) casing kept, as MUSE always does for training and
            evaluation (its ``full_vocab`` only serves the final export).
        knn: CSLS ranking, ``exact`` or ``approximate``.
        eval_words: evaluate only these source words (a file, one a line, or the words).
        export_mapped: also write MUSE's ``vectors-<lang>.txt`` files.
        lenient: skip malformed dictionary lines.
        lexicon: wn lexicons for ``dictionary_mode="lexicon"`` (default: the installed wordnets of
            the two languages).
        wn_dir: wn data folder for ``dictionary_mode="lexicon"``.
        out: output directory; None: write nothing.
        overwrite: replace an existing, non-empty ``out``.
        checkpoint: ``best`` or ``last`` of ``run``.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` for ``run``.
        threads: CPU threads for torch (None or 0: torch's default).

    Returns:
        An :class:`AlignResult`; its ``to_dict()`` is the JSON ``polyglot-groc align`` prints.

    Raises:
        InputError: a side without vectors, dimensions that differ, no seed dictionary or one
            with no pair in the vocabularies, a bad ``knn``, an existing ``out`` without
            ``overwrite``; LexiconMissingError: no wordnet for ``dictionary_mode="lexicon"``.
    """
    from eval.align import KNN_MODES, SELECT_ON, identical_pairs, pairs_to_indices
    from eval.methods import check_method_options, fit_mapping
    from eval.normalize import parse_normalize
    from eval.rcsls import RcslsConfig
    from langpairs.dictionaries import read_dictionary
    from polyglot_groc.model.device import use_threads

    check_positive(max_vocab=max_vocab, dico_max_rank=dico_max_rank)
    check_non_negative(refine=refine)
    use_threads(threads)
    if knn not in KNN_MODES:
        raise InputError(f"--knn {knn!r} is unknown; use exact or approximate")
    # Every new option is checked before anything is read or written.
    if select_on not in SELECT_ON:
        raise InputError(f"--select-on {select_on!r} is unknown; use criterion (default), last or eval")
    if select_on == "eval" and eval_dict is None:
        raise InputError("--select-on eval picks the refinement round by P@1 on the evaluation dictionary; "
                         "pass --eval-dict, or drop --select-on")
    check_method_options(method, refine, select_on)
    if spectral and method != "rcsls":
        raise InputError(f"--spectral constrains rcsls; it does nothing for {method}: add --method rcsls or "
                         "drop --spectral")
    parse_normalize(normalize)
    if out is not None:
        check_output(Path(out), overwrite, directory=True)
    check_input_files(("--src", src), ("--tgt", tgt), ("--train-dict", train_dict), ("--eval-dict", eval_dict),
                      ("--eval-words", eval_words))
    lower = not keep_case
    bundle = load_bundle_once(run, checkpoint, device) if run is not None else None
    src_words, src_vecs = read_side(src, bundle, src_lang, side, max_vocab, "src", lower)
    tgt_words, tgt_vecs = read_side(tgt, bundle, tgt_lang, side, max_vocab, "tgt", lower)
    if src_vecs.shape[1] != tgt_vecs.shape[1]:
        raise InputError(f"source vectors have dimension {src_vecs.shape[1]} but target vectors "
                         f"{tgt_vecs.shape[1]}; align embeddings of the same size")
    if train_dict is not None:
        train_pairs, stats = pairs_to_indices(read_dictionary(Path(train_dict), lower=lower, lenient=lenient),
                                              src_words, tgt_words, lower=lower)
        train_info: dict[str, Any] = {"path": str(train_dict), **stats}
    elif dictionary_mode == "identical":
        train_pairs = identical_pairs(src_words, tgt_words)
        if len(train_pairs) == 0:
            raise InputError("no identical strings in the two vocabularies; "
                             "pass --train-dict or --dictionary-mode lexicon")
        train_info = {"seed": "identical", "found": int(len(train_pairs))}
    elif dictionary_mode == "lexicon":
        train_pairs = lexicon_seed(src_words, tgt_words, src_lang, tgt_lang, lexicon, wn_dir)
        train_info = {"seed": "lexicon", "found": int(len(train_pairs))}
    else:
        raise InputError("no seed dictionary: pass --train-dict FILE, --dictionary-mode identical "
                         "or --dictionary-mode lexicon")
    if dico_max_rank is None:
        dico_max_rank = 10000 if train_dict is not None else 15000
    pairs: list[tuple[str, str]] | None = None
    restrict: set[str] | None = None
    select_pairs = None
    if eval_dict is not None:
        pairs = read_dictionary(Path(eval_dict), lower=lower, lenient=lenient)
        if eval_words is not None:
            restrict = set(read_words(eval_words) if isinstance(eval_words, (str, os.PathLike)) else eval_words)
        if select_on == "eval":
            select_pairs = pairs_to_indices(pairs, src_words, tgt_words, lower=lower)[0]
    # MUSE's export normalises every word with the training vocabulary's means: keep those, not the
    # vectors (computed before the fit, so a chain that cannot be streamed is refused before any work).
    means = {"src": training_means(src_vecs, normalize), "tgt": training_means(tgt_vecs, normalize)} \
        if export_mapped and out is not None else {}
    res = fit_mapping(src_vecs, tgt_vecs, train_pairs, method=method, refine=refine,  # type: ignore[arg-type]
                      normalize=normalize, select_on=select_on, select_pairs=select_pairs,  # type: ignore[arg-type]
                      dico_build=dico_build, dico_max_rank=dico_max_rank, knn_mode=knn,  # type: ignore[arg-type]
                      rcsls_config=RcslsConfig(spectral=spectral))
    full = {"src": (src, means["src"], np.asarray(res.W)), "tgt": (tgt, means["tgt"], res.W_tgt)} if means else {}
    dim = int(src_vecs.shape[1])
    mapped, target = res.map_source(src_vecs), res.prepare_target(tgt_vecs)
    compose = bundle is not None and (src is None or tgt is None) and pairs is not None
    if not compose:
        del src_vecs, tgt_vecs  # 229 MiB each at 200k x 300: only the mapped and target spaces go on
    evaluation: dict[str, Any] = {}
    if pairs is not None:
        from polyglot_groc.analysis.alignment_report import evaluate_with_baselines, protocols_table

        stats_e, precision, baselines = evaluate_with_baselines(
            pairs, src_words, tgt_words, mapped, target, lower=lower, eval_words=restrict,
            knn_mode=knn)  # type: ignore[arg-type]
        stats_e["path"] = str(eval_dict)
        composed = None
        if compose:
            assert bundle is not None  # compose implies a run
            composed = _composed_precision(pairs, restrict, lower, bundle, side, res, knn,
                                           (src_lang if src is None else None, src_words, src_vecs, mapped),
                                           (tgt_lang if tgt is None else None, tgt_words, tgt_vecs, target))
        evaluation = {"eval_dictionary": stats_e, "precision": precision, "baselines": baselines,
                      "protocols": protocols_table(stats_e, precision, composed)}
    result = AlignResult(
        src_words=len(src_words), tgt_words=len(tgt_words), dim=dim, train_dictionary=train_info,
        dico_max_rank=dico_max_rank, knn_mode=knn, lowercased=lower, best_iteration=res.best_iteration,
        history=res.history, normalize=",".join(res.normalize), method=method, selection=_SELECTION[select_on]
        if method == "procrustes" else f"none ({method} has no refinement rounds)", **evaluation,
        out=str(out) if out is not None else None, W=np.asarray(res.W), source_words=list(src_words),
        target_words=list(tgt_words), mapped=mapped, target=target,
        src_lang=src_lang, tgt_lang=tgt_lang, side=side if run is not None and (src is None or tgt is None) else None,
        W_tgt=None if res.W_tgt is None else np.asarray(res.W_tgt))
    if out is not None:
        _write(Path(out), result, src_lang, tgt_lang, export_mapped, overwrite, full)
    return result


_SELECTION = {
    "criterion": "unsupervised mean CSLS cosine (never the evaluation dictionary)",
    "last": "the last refinement round",
    "eval": "P@1 (CSLS) on the evaluation dictionary, as MUSE's supervised mode: tuned on the test pairs",
}


def _composed_precision(pairs: list[tuple[str, str]], restrict: set[str] | None, lower: bool,
                        bundle: Callable[[], ModelBundle], side: str, res: Any, knn: str,
                        *sides: tuple[str | None, list[str], np.ndarray, np.ndarray]) -> dict[str, Any]:
    """CSLS P@k over EVERY test source word, the test words missing from a run-read side composed by the model.

    Each side read from the run (a language given) gets its missing test words embedded by
    :func:`~polyglot_groc.analysis.export.embed` (composed from characters by compositional
    models; a lookup model cannot, and they stay missing), normalised and mapped with the
    vocabulary (so ``center`` uses the same statistics up to those few rows), and appended to that
    side's words; then the test pairs are scored on the extended spaces, every test source word
    in the denominator.
    """
    from eval.align import pairs_to_indices, translation_precision
    from polyglot_groc.analysis.export import embed

    if restrict is not None:
        wanted = {w.lower() for w in restrict} if lower else restrict
        pairs = [p for p in pairs if (p[0].lower() if lower else p[0]) in wanted]
    extended: list[tuple[list[str], np.ndarray]] = []
    composed_counts: list[int] = []
    for column, (lang, words, raw, prepared) in enumerate(sides):
        known = set(words)
        missing = sorted({p[column] for p in pairs} - known) if lang is not None else []
        if not missing:
            extended.append((words, prepared))
            composed_counts.append(0)
            continue
        got = embed(bundle(), lang, missing, side=side)  # type: ignore[arg-type]
        stacked = np.vstack([raw, got.vectors])  # (n + m, d): normalise with the vocabulary's statistics
        extra = (res.map_source(stacked) if column == 0 else res.prepare_target(stacked))[len(words):]
        extended.append(([*words, *got.words], np.vstack([prepared, extra]).astype(np.float32)))
        composed_counts.append(len(got.words))
    total = len({p[0] for p in pairs})
    out: dict[str, Any] = {"composed_source_words": composed_counts[0], "composed_target_words": composed_counts[1],
                           "n_queries": total}
    try:
        indices, _ = pairs_to_indices(pairs, extended[0][0], extended[1][0], lower=lower)
    except InputError:  # no pair scorable even with composition: every word counts as an error
        indices = None
    prec: dict[str, Any] = {"n_queries": 0}
    if indices is not None:
        prec = translation_precision(extended[0][1], extended[1][1], indices, method="csls",
                                     knn_mode=knn)  # type: ignore[arg-type]
    for k in (1, 5, 10):
        out[f"precision_at_{k}"] = 100.0 * int(prec.get(f"correct_at_{k}", 0)) / total if total else 0.0
    out["coverage"] = int(prec["n_queries"]) / total if total else 0.0
    return out


def _write(out: Path, result: AlignResult, src_lang: str | None, tgt_lang: str | None, export_mapped: bool,
           overwrite: bool,
           full: dict[str, tuple[Vectors | None, list[np.ndarray], np.ndarray | None]] | None = None) -> None:
    """Every output file, all or none: built in a temporary folder beside ``out`` and renamed into place.

    A kill, a full disk or any error leaves the previous ``out`` untouched (and a killed run's
    folder is swept by the next run); a second ``align`` into the same ``out`` at the same time is
    refused instead of mixing the two results (:func:`groc_base.fileio.atomic_output_dir`).
    With ``export_mapped``, a side read from a file is exported whole, as MUSE's export does
    (:func:`export_full_vocabulary`); ``full`` maps ``"src"``/``"tgt"`` to ``(given side, its
    training vocabulary's means (:func:`training_means`), the side's map or None)``.
    """
    import torch

    from eval.vectors import write_vec
    from groc_base.fileio import atomic_output_dir

    text = dumps_json(result.to_dict(), indent=2) + "\n"
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        np.save(tmp / "W.npy", result.W)
        if result.W_tgt is not None:  # vecmap moves the target space too
            np.save(tmp / "W_tgt.npy", result.W_tgt)
        # MUSE saves best_mapping.pth with torch.save(W numpy array) and reloads it with torch.load.
        torch.save(np.asarray(result.W), tmp / "best_mapping.pth")
        write_vec(tmp / "src.aligned.vec", result.source_words, result.mapped)
        write_vec(tmp / "tgt.vec", result.target_words, result.target)
        if export_mapped:
            src_name, tgt_name = f"vectors-{src_lang or 'src'}.txt", f"vectors-{tgt_lang or 'tgt'}.txt"
            if src_name == tgt_name:  # one language on both sides: MUSE's names would write one file twice
                src_name, tgt_name = f"vectors-{src_lang}.src.txt", f"vectors-{tgt_lang}.tgt.txt"
            full = full or {}
            for side, name, words, vectors in (("src", src_name, result.source_words, result.mapped),
                                               ("tgt", tgt_name, result.target_words, result.target)):
                given, means, w = full.get(side, (None, None, None))
                if isinstance(given, (str, os.PathLike)) and means is not None:
                    export_full_vocabulary(given, tmp / name, normalize=result.normalize, means=means, W=w)
                else:  # vectors from memory or a run: the vocabulary aligned is all there is
                    write_vec(tmp / name, words, vectors)
        (tmp / "result.json").write_text(text, encoding="utf-8")


def training_means(train_vectors: np.ndarray, normalize: str | Sequence[str]) -> list[np.ndarray]:
    """The mean each ``center`` of the ``normalize`` chain subtracts from the training vocabulary
    ``(n, d)``, in chain order (``[]`` without ``center``): what MUSE keeps as ``params.src_mean``
    to normalise its full-vocabulary export.

    Raises:
        InputError: a normalisation other than ``center`` and ``renorm``.
    """
    ops = _stream_ops(normalize)
    means: list[np.ndarray] = []
    if "center" in ops:
        current = np.array(train_vectors, dtype=np.float32)  # (n, d) one transient copy
        for op in ops:
            if op == "center":
                means.append(current.mean(axis=0, dtype=np.float64).astype(np.float32))
                current -= means[-1]
            else:
                current = _renorm(current)
    return means


def export_full_vocabulary(vectors: str | os.PathLike[str], out: str | os.PathLike[str], *, normalize: str,
                           means: list[np.ndarray], W: np.ndarray | None = None, chunk_rows: int = 4096) -> int:
    """MUSE's export (``Trainer.export``, ``full_vocab=True``): every word of ``vectors``, mapped, in chunks.

    Every row of the file is read as MUSE reads it for export (case kept, no ``--max-vocab``, a
    repeated word's first row wins, null vectors nudged), normalised as in training (each
    ``center`` subtracts the TRAINING vocabulary's mean, ``means`` from :func:`training_means`,
    as MUSE's ``normalize_embeddings(..., mean=params.src_mean)``), mapped by ``W`` (``x @ W.T``;
    None for the target side) and written to ``out`` in word2vec text, ``chunk_rows`` at a time:
    memory stays bounded by one chunk whatever the file's size (2.5M x 300 included). Returns the
    rows written.
    """
    from eval.vectors import iter_vec, vec_shape, write_vec_chunks

    ops = _stream_ops(normalize)
    if ops.count("center") != len(means):
        raise InputError(f"normalize={normalize!r} has {ops.count('center')} center step(s) but {len(means)} "
                         "means were given; compute them with training_means")
    dim = vec_shape(vectors)[1]
    w_t = None if W is None else np.ascontiguousarray(np.asarray(W, dtype=np.float32).T)  # (d, d)

    def mapped() -> Iterable[tuple[list[str], np.ndarray]]:
        for words, block in iter_vec(vectors, chunk_rows=chunk_rows):  # (k, d)
            block = normalize_rows(block, ops, means)
            yield words, block if w_t is None else block @ w_t

    return write_vec_chunks(Path(out), mapped(), dim)


def normalize_rows(block: np.ndarray, ops: Sequence[str], means: Sequence[np.ndarray]) -> np.ndarray:
    """Rows ``(k, d)`` normalised as the training vocabulary was: ``ops`` (``center`` and ``renorm``, from
    :func:`_stream_ops`) in order, each ``center`` subtracting the training vocabulary's mean (``means``,
    from :func:`training_means`). For any row outside that vocabulary (MUSE's full export, a word composed
    by a run). Returns a new array."""
    centred = iter(means)
    for op in ops:
        block = block - next(centred) if op == "center" else _renorm(block)
    return np.asarray(block)


def read_alignment(path: str | os.PathLike[str]) -> AlignResult:
    """The :class:`AlignResult` an ``align`` output directory holds (``W.npy``, ``W_tgt.npy`` for vecmap,
    ``src.aligned.vec``, ``tgt.vec``, ``result.json``), with its mapped and target spaces.

    Raises:
        InputError: ``path`` is not such a directory, or a file of it is missing or damaged.
    """
    import json

    from eval.vectors import read_vec

    path = Path(path)
    needed = [path / name for name in ("W.npy", "src.aligned.vec", "tgt.vec", "result.json")]
    missing = [p.name for p in needed if not p.is_file()]
    if missing:
        raise InputError(f"{path} is not an align output directory (no {', '.join(missing)}); give the --out "
                         "directory of polyglot-groc align, or an AlignResult")
    try:
        info = json.loads((path / "result.json").read_text(encoding="utf-8"))
        W = np.load(path / "W.npy")
        W_tgt = np.load(path / "W_tgt.npy") if (path / "W_tgt.npy").is_file() else None
        fields_ok = isinstance(info, dict) and isinstance(info.get("normalize", ""), str)
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: result.json or W.npy cannot be read ({exc}); it is damaged: align again") from exc
    if not fields_ok:
        raise InputError(f"{path / 'result.json'} is not an align result; it is damaged: align again")
    src_words, mapped = read_vec(path / "src.aligned.vec")
    tgt_words, target = read_vec(path / "tgt.vec")
    return AlignResult(
        src_words=len(src_words), tgt_words=len(tgt_words), dim=int(mapped.shape[1]),
        train_dictionary=dict(info.get("train_dictionary") or {}), dico_max_rank=int(info.get("dico_max_rank", 0)),
        knn_mode=str(info.get("knn_mode", "exact")), lowercased=bool(info.get("lowercased", True)),
        best_iteration=int(info.get("best_iteration", 0)), history=list(info.get("history") or []),
        normalize=info.get("normalize", ""), selection=str(info.get("selection", "")), out=str(path),
        method=str(info.get("method", "procrustes")), W=W, source_words=src_words, target_words=tgt_words,
        mapped=mapped, target=target, src_lang=info.get("src_lang"), tgt_lang=info.get("tgt_lang"),
        side=info.get("side"), W_tgt=W_tgt)


def _stream_ops(normalize: str | Sequence[str]) -> list[str]:
    """The ``normalize`` chain as a list, refusing steps a chunked export cannot replay (iternorm's
    statistics are iterated over the training vocabulary, not replayable chunk by chunk)."""
    from eval.normalize import parse_normalize

    ops = list(parse_normalize(normalize))
    unknown = [op for op in ops if op not in ("center", "renorm")]
    if unknown:
        raise InputError(f"--export-mapped cannot stream the normalisation {unknown[0]!r} yet; "
                         "export without --export-mapped, or map the words with W.npy")
    return ops


def _renorm(x: np.ndarray) -> np.ndarray:
    """Unit L2 rows in a new array (zero rows stay zero), as ``normalize_embeddings``' ``renorm``."""
    from eval.normalize import safe_row_norms

    return x / safe_row_norms(x)


def lexicon_seed(src_words: list[str], tgt_words: list[str], src_lang: str | None, tgt_lang: str | None,
                 specs: list[str] | None, wn_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
    """Seed pairs ``(n, 2)``: words of the two languages that share a synset (ILI) in the lexicon."""
    from lexicons.service import open_lexicon

    if not src_lang or not tgt_lang:
        raise InputError("--dictionary-mode lexicon needs --src-lang and --tgt-lang")
    lex = open_lexicon("wn", specs=specs or None, langs=None if specs else [src_lang, tgt_lang],
                       wn_dir=Path(wn_dir) if wn_dir is not None else None)
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
