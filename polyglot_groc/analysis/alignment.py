"""Align two embedding spaces (Procrustes + CSLS refinement, RCSLS or VecMap) and report P@k with baselines.

:func:`align` is ``polyglot-groc align`` as a function: the vectors come from word2vec files,
from memory, or from a run's vocabulary on either side; the seed dictionary from a file (read
either way round: ``reverse_dicts``), from identical strings or from a wordnet (a start,
:mod:`~polyglot_groc.analysis.alignment_starts`); the maths is a registered method of
:mod:`eval.methods` with its config (:func:`eval.methods.fitting.fit_mapping`), the evaluation
:func:`polyglot_groc.analysis.alignment_report.evaluate_protocols` (every protocol with its own
baselines). :func:`align` reads as its steps: plan (every option checked, the method's config
built), read the dictionaries (their overlap checked) and the two sides, seed, normalise, fit,
evaluate, write. With ``out`` every file (``W.npy``, ``best_mapping.pth``, ``src.aligned.vec``,
``tgt.vec``, optionally MUSE's ``vectors-<lang>.txt``, ``result.json``) is written atomically, all
of them or none. Aligning vector files never imports torch (only a run needs it).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Union

import numpy as np

from eval.methods.registry import (
    FitContext,
    Method,
    MethodConfig,
    Plan,
    build_config,
    dictionary_rank,
    get_method,
    recipe,
    resolve_normalize,
)
from groc_base.checks import check_non_negative, check_output, check_positive, check_seed, option
from groc_base.errors import InputError, UnalignedError
from groc_base.fileio import dumps_json, json_safe
from polyglot_groc.analysis.alignment_starts import (
    Start,
    StartInputs,
    get_start,
    lexicon_seed,
    method_for,
    no_dictionary,
    start_names,
)

if TYPE_CHECKING:  # at run time these come in with a run only (they import torch)
    from eval.align import AlignmentResult
    from polyglot_groc.analysis.alignment_report import Side
    from polyglot_groc.analysis.export import Exported
    from polyglot_groc.model.bundle import ModelBundle

logger = logging.getLogger(__name__)

__all__ = ["AlignResult", "Vectors", "align", "check_aligned", "check_input_files", "check_judged",
           "export_full_vocabulary", "lexicon_seed",
           "load_bundle_once", "normalize_rows", "read_alignment", "read_pairs", "read_side", "training_means",
           "write_torch_legacy"]

#: A side's vectors: a word2vec file (.vec or .bin, plain or .gz/.bz2/.xz), or words and vectors
#: in memory (:class:`~polyglot_groc.analysis.export.Exported`, e.g. from ``vocabulary_vectors``).
Vectors = Union[str, "os.PathLike[str]", "Exported"]  # noqa: UP007 - a string forward reference at run time


@dataclass(frozen=True)
class AlignResult:
    """What :func:`align` found: the dictionaries used, the fit, and P@k under every protocol with baselines.

    ``precision`` holds P@1/5/10 per retrieval (``nn``, ``csls``) and ``baselines`` the
    identical-string and character n-gram figures, both on MUSE's scored words; ``protocols``
    holds each protocol (``muse``, ``fasttext``, with a run ``composed``) with ITS OWN baselines
    (identical string, char 3-grams, no mapping) and the identical / non-identical gold split (all
    ``None`` without an evaluation dictionary). ``reference`` says which reference recipe the
    method follows and how this call differs from it. The arrays (``W``, the words and the
    mapped and target vectors) are in memory only; :meth:`to_dict` is the JSON ``polyglot-groc
    align`` prints and writes to ``result.json``.
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
    reference: dict[str, Any] | None = None
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
    #: A method that judges its own map (a start without a dictionary): ``{"status": "aligned" |
    #: "doubtful" | "failed", "reason", "criterion": {"name", "value"}, "evidence"}``; None: no verdict.
    verdict: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc align`` prints (the evaluation keys only with an evaluation dictionary)."""
        out: dict[str, Any] = {
            "src_words": self.src_words, "tgt_words": self.tgt_words, "dim": self.dim,
            "train_dictionary": self.train_dictionary, "dico_max_rank": self.dico_max_rank,
            "knn_mode": self.knn_mode, "lowercased": self.lowercased, "best_iteration": self.best_iteration,
            "history": self.history, "normalize": self.normalize, "selection": self.selection,
            "method": self.method, "reference": self.reference, "src_lang": self.src_lang, "tgt_lang": self.tgt_lang,
            "side": self.side}
        if self.verdict is not None:
            out["verdict"] = self.verdict
        if self.eval_dictionary is not None:
            out.update({"eval_dictionary": self.eval_dictionary, "precision": self.precision,
                        "baselines": self.baselines, "protocols": self.protocols})
        return json_safe(out)  # type: ignore[return-value]

    def summary(self) -> list[str]:
        """The human-readable lines ``polyglot-groc align`` prints on stderr: the verdict of a method that
        judges its map, then coverage, drops, the training overlap, and per protocol the model's P@k
        beside that protocol's own baselines (none without an evaluation dictionary)."""
        from polyglot_groc.analysis.alignment_report import report_lines, verdict_lines

        lines = verdict_lines(self.verdict)
        if self.eval_dictionary is None or self.protocols is None:
            return lines
        return lines + report_lines(self.eval_dictionary, self.protocols)


def check_input_files(*given: tuple[str, object]) -> None:
    """Refuse at once every ``(option, value)`` whose value is a path but not a regular file.

    A FIFO with no writer would block the reader forever; a missing file or a folder is named by
    its option (as a keyword from Python, as a flag on the command line) before any work is
    done. Values that are not paths (vectors or words in memory, None) are skipped.
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
        nudge_zero_rows(vectors, f"{option(name)} vectors")
        return kept, vectors
    if bundle is None or lang is None:
        raise InputError(f"give {option(name)} (a word2vec .vec or .bin file, or vectors in memory), or "
                         f"{option('run')} with {option(name + '_lang')}")
    from polyglot_groc.analysis.export import vocabulary_vectors

    out = vocabulary_vectors(bundle(), lang, side, max_vocab, lower)
    nudge_zero_rows(out.vectors, f"run {lang} vocabulary")  # as reading its export would
    return out.words, out.vectors


def read_pairs(path: str | os.PathLike[str], *, lower: bool, lenient: bool, reverse: bool) -> list[tuple[str, str]]:
    """A dictionary file's ``(source, target)`` pairs (``reverse``: each line read as ``target source``)."""
    from langpairs.dictionaries import read_dictionary

    pairs = read_dictionary(Path(path), lower=lower, lenient=lenient)
    return [(b, a) for a, b in pairs] if reverse else pairs


def _dictionary_indices(pairs: list[tuple[str, str]], path: str | os.PathLike[str], src_words: list[str],
                        tgt_words: list[str], *, lower: bool, reverse: bool,
                        name: str) -> tuple[np.ndarray, dict[str, Any]]:
    """A dictionary's rows in the vocabularies and its counts (``pairs`` as :func:`read_pairs` read them).

    A dictionary that covers the vocabularies much better read the other way round is named: an
    error when no pair is found as given, a warning when fewer than half as many are.
    """
    from eval.align import pairs_to_indices

    flip = option("reverse_dicts", not reverse)

    def found(candidate: list[tuple[str, str]]) -> int:
        try:
            return int(pairs_to_indices(candidate, src_words, tgt_words, lower=lower)[1]["found"])
        except InputError:
            return 0

    try:
        indices, stats = pairs_to_indices(pairs, src_words, tgt_words, lower=lower)
    except InputError as exc:
        other = found([(b, a) for a, b in pairs])
        if other:
            raise InputError(f"{option(name)} {path}: none of its {len(pairs)} pairs has both words in the "
                             f"vocabularies as read, but {other} do read the other way round; pass {flip} (or swap "
                             "the two sides)") from exc
        raise
    if stats["found"] * 2 < len(pairs):
        other = found([(b, a) for a, b in pairs])
        if other > 2 * stats["found"]:
            logger.warning("%s %s: %d of its %d pairs are in the vocabularies as read, %d read the other way round; "
                           "if the file lists target words first, pass %s", option(name), path, stats["found"],
                           len(pairs), other, flip)
    return indices, {"path": str(path), "reversed": reverse, **stats}


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
    reverse_dicts: bool = False,
    dictionary_mode: str | None = None,
    method: str | None = None,
    method_config: MethodConfig | None = None,
    normalize: str | None = None,
    criterion: bool | None = None,
    random_seed: int = 0,
    require_aligned: bool = False,
    max_vocab: int | None = 200_000,
    keep_case: bool = False,
    knn: str = "exact",
    eval_words: str | os.PathLike[str] | Iterable[str] | None = None,
    allow_overlap: bool = False,
    export_mapped: bool = False,
    lenient: bool = False,
    lexicon: list[str] | None = None,
    wn_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
    refine: int | None = None,
    select_on: str | None = None,
    dico_build: str | None = None,
    dico_max_rank: int | None = None,
    spectral: bool = False,
    rcsls_n_iter: int | None = None,
    rcsls_lr: float | None = None,
) -> AlignResult:
    """Map source embeddings onto target embeddings (Procrustes + CSLS refinement, RCSLS or VecMap) and evaluate P@k.

    Each side comes from ``src``/``tgt`` (a word2vec file or vectors in memory) or, without one,
    from ``run``'s vocabulary in ``src_lang``/``tgt_lang`` (the run is loaded once, and only if a
    side needs it). The seed dictionary is ``train_dict``, else ``dictionary_mode`` ``identical``
    (identical strings) or ``lexicon`` (words sharing a wordnet synset); ``dictionary_mode``
    ``unsupervised`` (VecMap's ``--unsupervised``) or ``adversarial`` (MUSE's ``unsupervised.py``)
    starts from no dictionary at all. Those, and ``vecmap-self-learning`` from any seed, judge their
    own map: the result's ``verdict`` is aligned, doubtful or failed (restart agreement) with MUSE's
    criterion; a failed map is a result, not an error, unless ``require_aligned``. ``method`` is a method of
    :mod:`eval.methods` and ``method_config`` its config (:class:`~eval.methods.ProcrustesConfig`,
    :class:`~eval.methods.RcslsConfig`, :class:`~eval.methods.VecmapConfig`; None: the reference's
    defaults). Each method runs its reference's recipe unless told otherwise: ``procrustes``
    MUSE's supervised script (its refinement round chosen by the unsupervised mean-CSLS
    criterion, never the evaluation dictionary, unless ``select_on="eval"`` asks for MUSE's rule),
    ``rcsls`` fastText's ``align.py`` (unit vectors, ``--niter 10`` = 11 updates, ``--lr 1``),
    ``vecmap`` VecMap's ``--supervised`` (normalise ``renorm,center,renorm`` first); the result's
    ``reference`` says how a call differs.

    Every evaluation reports each protocol with its own baselines (``protocols``): MUSE's (test
    pairs with both words in the vocabularies), fastText's (every test source word; those not
    scorable count as errors) and, for a side read from ``run``, ``composed`` (every test word,
    the words missing from the vocabulary composed by the model); each beside the
    identical-string, char 3-gram and no-mapping baselines on its own words, split into words
    whose gold includes the word itself and the others. Test pairs that are also training pairs
    (either direction) are counted (``eval_dictionary.train_overlap``), warned about, and refused
    above 5% unless ``allow_overlap``.

    Args:
        src: source vectors (file or in memory).
        tgt: target vectors (file or in memory).
        run: a run directory (or a loaded bundle) for the sides not given as vectors.
        src_lang: the source side's language: with ``run``, which of its languages; with
            ``dictionary_mode="lexicon"``, the wordnet language; names ``vectors-<lang>.txt``.
        tgt_lang: the target side's language, likewise.
        side: ``input`` or ``output`` embeddings of ``run``.
        train_dict: seed dictionary in MUSE's format (one ``src tgt`` pair a line).
        eval_dict: evaluation dictionary; None: no P@k.
        reverse_dicts: read both dictionaries as ``tgt src`` lines (e.g. an en-tl file to map tl
            onto en).
        dictionary_mode: without ``train_dict``: ``identical``, ``lexicon`` (seed pairs), ``unsupervised`` or
            ``adversarial`` (no dictionary; refused beside ``train_dict``) (the registered starts,
            :mod:`polyglot_groc.analysis.alignment_starts`).
        method: ``procrustes`` (MUSE), ``rcsls`` (Joulin et al. 2018), ``vecmap`` (Artetxe et al.
            2018), ``vecmap-self-learning`` (VecMap's ``--identical``/``--semi_supervised``: from any
            seed), ``vecmap-unsupervised`` or ``muse-adversarial`` (no dictionary); None: procrustes (or,
            for a start without a dictionary, that start's method).
        method_config: the method's knobs as its config dataclass (:class:`~eval.methods.UnsupervisedConfig`,
            :class:`~eval.methods.SemiSupervisedConfig`, :class:`~eval.methods.AdversarialConfig`, ...);
            None: its reference's defaults.
        normalize: a chain of ``renorm``, ``center``, ``iternorm`` (iterative normalisation,
            ``iternorm:N`` for N rounds), e.g. ``renorm,center,renorm``, applied to both sides;
            ``none`` for nothing; None: the method's reference (procrustes none, rcsls renorm,
            vecmap renorm,center,renorm).
        criterion: also score an ``rcsls``/``vecmap`` map by the unsupervised mean-CSLS criterion
            (None: only ``procrustes``, which selects by it, and the methods that judge their map); it
            costs a CSLS search.
        random_seed: the seed of a method that draws (stochastic induction, the adversarial start, the
            verdict's restarts use ``random_seed + 1``, ...): the same seed repeats a run on one machine.
        require_aligned: refuse (UnalignedError, nothing written) a map its method judges doubtful or
            failed; only with a method that judges its map.
        max_vocab: read at most N words per side (0 or None: every word).
        keep_case: keep every word as written, dictionaries matched as written; default lowercases
            with the first (most frequent) casing kept, as MUSE always does for training and
            evaluation (its ``full_vocab`` only serves the final export).
        knn: CSLS ranking, ``exact`` or ``approximate``.
        eval_words: evaluate only these source words (a file, one a line, or the words).
        allow_overlap: score even when more than 5% of the test pairs are training pairs.
        export_mapped: also write MUSE's ``vectors-<lang>.txt`` files.
        lenient: skip malformed dictionary lines.
        lexicon: wn lexicons for ``dictionary_mode="lexicon"`` (default: the installed wordnets of
            the two languages).
        wn_dir: wn data folder for ``dictionary_mode="lexicon"``.
        out: output directory; None: write nothing.
        overwrite: replace an existing, non-empty ``out``.
        checkpoint: ``best`` or ``last`` of ``run``.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` for ``run``.
        threads: CPU threads (torch's and the BLAS pools'; None or 0: the default).
        refine: shorthand of ``ProcrustesConfig.refine``: refinement iterations (None: 5; 0:
            Procrustes only); refused with the other methods (0 is accepted).
        select_on: shorthand of ``ProcrustesConfig.select_on``: ``criterion`` (unsupervised, the
            default), ``last``, or ``eval`` (MUSE's supervised rule: P@1 on ``eval_dict``, i.e.
            tuned on the test pairs; needs ``eval_dict``).
        dico_build: shorthand of ``ProcrustesConfig.dico_build``: ``S2T``, ``T2S``, ``S2T|T2S`` or
            ``S2T&T2S`` (the default).
        dico_max_rank: shorthand of ``ProcrustesConfig.dico_max_rank``: refinement dictionary rank
            limit (default 10000 with ``train_dict``, 15000 otherwise, as MUSE's runs).
        spectral: shorthand of ``RcslsConfig.spectral``: clip the map's singular values to [0, 1].
        rcsls_n_iter: shorthand of ``RcslsConfig.n_iter``: fastText's ``--niter`` (None: 10), i.e.
            ``n + 1`` updates.
        rcsls_lr: shorthand of ``RcslsConfig.lr``: fastText's ``--lr`` (None: 1.0; its README's
            example uses 25).

    A shorthand given with ``method_config`` sets that field of it; a shorthand of another
    method's knob is refused (``refine=0`` and ``select_on`` ``criterion``/``last`` ask nothing
    and pass).

    Returns:
        An :class:`AlignResult`; its ``to_dict()`` is the JSON ``polyglot-groc align`` prints.

    Raises:
        InputError: a side without vectors, dimensions that differ, no seed dictionary or one
            with no pair in the vocabularies (naming ``reverse_dicts`` when the file reads the
            other way round), a dictionary beside a start without one, a bad ``knn``, a knob of
            another method, too many test pairs that are training pairs, an existing ``out`` without
            ``overwrite``, vocabularies too small (or a cutoff larger than them) for an unsupervised method;
        LexiconMissingError: no wordnet for ``dictionary_mode="lexicon"``;
        UnalignedError: ``require_aligned`` and the verdict is doubtful or failed.
    """
    check_non_negative(threads=threads)  # the arguments' own checks before any about the inputs
    knobs = {"refine": refine, "select_on": select_on, "dico_build": dico_build, "dico_max_rank": dico_max_rank,
             "spectral": spectral, "rcsls_n_iter": rcsls_n_iter, "rcsls_lr": rcsls_lr}
    plan = _plan(method, method_config, knobs, train_dict=train_dict, eval_dict=eval_dict,
                 dictionary_mode=dictionary_mode, normalize=normalize, criterion=criterion, max_vocab=max_vocab,
                 keep_case=keep_case, knn=knn, random_seed=random_seed, require_aligned=require_aligned)
    _use_threads(threads, run)
    if out is not None:
        check_output(Path(out), overwrite, directory=True)
    check_input_files(("src", src), ("tgt", tgt), ("train_dict", train_dict), ("eval_dict", eval_dict),
                      ("eval_words", eval_words))
    dicts = _read_dictionaries(plan, train_dict, eval_dict, eval_words, reverse=reverse_dicts, lenient=lenient,
                               allow_overlap=allow_overlap)
    bundle = load_bundle_once(run, checkpoint, device) if run is not None else None
    src_words, src_vecs = read_side(src, bundle, src_lang, side, plan.context.max_vocab, "src", plan.lower)
    tgt_words, tgt_vecs = read_side(tgt, bundle, tgt_lang, side, plan.context.max_vocab, "tgt", plan.lower)
    if src_vecs.shape[1] != tgt_vecs.shape[1]:
        raise InputError(f"source vectors have dimension {src_vecs.shape[1]} but target vectors "
                         f"{tgt_vecs.shape[1]}; align embeddings of the same size")
    seed, train_info = _seed(plan, dicts, StartInputs(src_words, tgt_words, src_lang, tgt_lang, lexicon, wn_dir))
    # MUSE's export normalises every word with the training vocabulary's means: keep those, not the
    # vectors (computed before the fit, so a chain that cannot be streamed is refused before any work).
    means = {"src": training_means(src_vecs, plan.ops), "tgt": training_means(tgt_vecs, plan.ops)} \
        if export_mapped and out is not None else {}
    composing = dicts.test is not None and bundle is not None and (src is None or tgt is None)
    raw = (src_vecs, tgt_vecs) if composing else None  # the composed test words are normalised with them
    src_n, tgt_n = _normalized(plan.ops, src_vecs, tgt_vecs, inplace=not composing)
    dim = int(src_vecs.shape[1])
    del src_vecs, tgt_vecs
    select_pairs = None
    if dicts.test is not None and plan.uses_eval_pairs:
        select_pairs = _dictionary_indices(dicts.test, eval_dict, src_words, tgt_words,  # type: ignore[arg-type]
                                           lower=plan.lower, reverse=reverse_dicts, name="eval_dict")[0]
    res = _fit(plan, src_n, tgt_n, seed, select_pairs)
    if require_aligned:
        check_aligned(res.verdict, f"{src_lang or 'source'} onto {tgt_lang or 'target'}")
    mapped = src_n @ res.W.T  # (n_src, d')
    target = tgt_n if res.W_tgt is None else tgt_n @ res.W_tgt.T  # (n_tgt, d')
    evaluation: dict[str, Any] = {}
    if dicts.test is not None:
        from polyglot_groc.analysis.alignment_report import Side

        composed = None
        if raw is not None:  # the test words a run-read side lacks, composed by the model
            composed = _composed_sides(dicts.test, dicts.restrict, plan.lower, bundle, side, res,  # type: ignore[arg-type]
                                       (src_lang if src is None else None, src_words, raw[0], mapped),
                                       (tgt_lang if tgt is None else None, tgt_words, raw[1], target))
        del raw
        # The no-mapping baseline reads the normalised spaces as they are: by nn always (cheap), by csls
        # too where both sides come from one run (one shared encoder: a word may have one vector on
        # both sides), where it is the honest comparison.
        shared = bundle is not None and src is None and tgt is None
        evaluation = _evaluate(plan, dicts, Side(src_words, mapped, src_n), Side(tgt_words, target, tgt_n), composed,
                               no_mapping=("nn", "csls") if shared else ("nn",))
        evaluation["eval_dictionary"].update(path=str(eval_dict), reversed=reverse_dicts)
    del src_n, tgt_n
    result = AlignResult(
        src_words=len(src_words), tgt_words=len(tgt_words), dim=dim, train_dictionary=train_info,
        dico_max_rank=plan.dico_max_rank, knn_mode=knn, lowercased=plan.lower, best_iteration=res.best_iteration,
        history=res.history, normalize=",".join(res.normalize) or "none", method=plan.method.name,
        selection=plan.method.selection_words(plan.config),
        reference=recipe(plan.method.name, plan.config, res.normalize, plan.context),
        **evaluation, out=str(out) if out is not None else None, W=np.asarray(res.W), source_words=list(src_words),
        target_words=list(tgt_words), mapped=mapped, target=target, verdict=res.verdict,
        src_lang=src_lang, tgt_lang=tgt_lang, side=side if run is not None and (src is None or tgt is None) else None,
        W_tgt=None if res.W_tgt is None else np.asarray(res.W_tgt))
    if out is not None:
        full = {"src": (src, means["src"], np.asarray(res.W)), "tgt": (tgt, means["tgt"], res.W_tgt)} if means else {}
        _write(Path(out), result, src_lang, tgt_lang, export_mapped, overwrite, full)
    return result


@dataclass(frozen=True)
class _Plan:
    """An align call's options, checked and resolved before anything is read."""

    method: Method
    config: Any
    ops: tuple[str, ...]
    start: Start | None  # None: the seed is the training dictionary
    context: FitContext
    dico_max_rank: int

    @property
    def lower(self) -> bool:
        return self.context.lowercase

    @property
    def uses_eval_pairs(self) -> bool:
        return self.method.uses_eval_pairs is not None and self.method.uses_eval_pairs(self.config)


def check_aligned(verdict: dict[str, Any] | None, what: str) -> None:
    """``require_aligned``: refuse a map whose verdict is not ``aligned`` (UnalignedError naming it and the fix)."""
    if verdict is not None and verdict["status"] != "aligned":
        raise UnalignedError(f"the alignment of {what} is {verdict['status']} ({verdict['reason']}); nothing was "
                             f"written: drop {option('require_aligned')} to keep it, or give a seed "
                             f"({option('train_dict')} or {option('dictionary_mode', 'identical')})")


def check_judged(spec: Method, require_aligned: bool) -> None:
    """``require_aligned`` needs a method that judges its map."""
    if require_aligned and not spec.judges:
        raise InputError(f"{option('require_aligned')} reads the verdict of a method that judges its map; "
                         f"{spec.name} gives none: use {option('dictionary_mode', 'unsupervised')}, "
                         f"{option('method', 'vecmap-self-learning')} or drop {option('require_aligned')}")


def _plan(method: str | None, method_config: Any, knobs: dict[str, Any], *, train_dict: object, eval_dict: object,
          dictionary_mode: str | None, normalize: str | None, criterion: bool | None, max_vocab: int | None,
          keep_case: bool, knn: str, random_seed: int, require_aligned: bool) -> _Plan:
    """Every option checked, the start and the method's config resolved: a refused call costs nothing."""
    from eval.align import KNN_MODES

    if max_vocab == 0:
        max_vocab = None  # every word, as VecMap reads
    check_positive(max_vocab=max_vocab)
    if knn not in KNN_MODES:
        raise InputError(f"{option('knn', knn)} is unknown; use exact or approximate")
    start = None
    if train_dict is None:
        if dictionary_mode is None:
            raise InputError(f"no seed dictionary: {no_dictionary()}")
        start = get_start(dictionary_mode)
    elif dictionary_mode in start_names() and get_start(dictionary_mode).pairs is None:
        raise InputError(f"{option('dictionary_mode', dictionary_mode)} starts without a dictionary; drop "
                         f"{option('train_dict')} (or the mode, to start from the dictionary)")
    check_seed(random_seed=random_seed)
    spec = get_method(method_for(method, dictionary_mode, train_dict))
    _check_start(spec, start)
    check_judged(spec, require_aligned)
    config = build_config(spec.name, method_config, knobs)
    supervised = train_dict is not None
    if spec.check is not None:
        spec.check(config, Plan(eval_dictionary=eval_dict is not None, supervised=supervised))
    ops = resolve_normalize(spec.name, normalize)
    context = FitContext(knn_mode=knn, criterion=bool(criterion), supervised=supervised, lowercase=not keep_case,
                         max_vocab=max_vocab, seed=random_seed, normalize=ops)
    return _Plan(method=spec, config=config, ops=ops, start=start, context=context,
                 dico_max_rank=dictionary_rank(spec, config, supervised))



def _check_start(spec: Method, start: Start | None) -> None:
    """A method that fits a dictionary needs a start that gives one, and one that starts alone takes none."""
    if spec.needs_dictionary and start is not None and start.pairs is None:
        raise InputError(f"{option('dictionary_mode', start.name)} gives no dictionary, and {spec.name} fits one: "
                         f"use {option('method', start.default_method)} or drop {option('method')}")
    if not spec.needs_dictionary and (start is None or start.pairs is not None):
        given = option("train_dict") if start is None else option("dictionary_mode", start.name)
        raise InputError(f"{option('method', spec.name)} starts without a dictionary; drop {given}")


def _use_threads(threads: int | None, run: object) -> None:
    """Threads for torch (a run) or, for vectors only, the BLAS and OpenMP pools without loading torch
    (``threads`` already checked by :func:`align`, before the inputs)."""
    if not threads:
        return
    if run is not None:
        from polyglot_groc.model.device import use_threads

        use_threads(threads)
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)


@dataclass(frozen=True)
class _Dictionaries:
    """The training and test dictionaries as read, the words to evaluate, and their overlap."""

    train: list[tuple[str, str]] | None
    test: list[tuple[str, str]] | None
    restrict: set[str] | None
    overlap: dict[str, Any] | None
    train_path: str | os.PathLike[str] | None
    reverse: bool


def _read_dictionaries(plan: _Plan, train_dict: str | os.PathLike[str] | None,
                       eval_dict: str | os.PathLike[str] | None, eval_words: Any, *, reverse: bool, lenient: bool,
                       allow_overlap: bool) -> _Dictionaries:
    """Both dictionaries (before any vectors: an overlap above the limit costs nothing) and ``eval_words``."""
    train = read_pairs(train_dict, lower=plan.lower, lenient=lenient, reverse=reverse) if train_dict else None
    test = read_pairs(eval_dict, lower=plan.lower, lenient=lenient, reverse=reverse) if eval_dict else None
    overlap = None
    if train is not None and test is not None:
        from polyglot_groc.analysis.alignment_report import check_overlap

        overlap = check_overlap(train, test, allow=allow_overlap,
                                what=f"{option('eval_dict')} {eval_dict} and {option('train_dict')} {train_dict}")
    restrict = None
    if test is not None and eval_words is not None:
        from polyglot_groc.analysis.export import read_words

        restrict = set(read_words(eval_words) if isinstance(eval_words, (str, os.PathLike)) else eval_words)
    return _Dictionaries(train, test, restrict, overlap, train_dict, reverse)


def _seed(plan: _Plan, dicts: _Dictionaries, inputs: StartInputs) -> tuple[np.ndarray | None, dict[str, Any]]:
    """The seed pairs ``(n, 2)`` (None for a start without a dictionary) and what the JSON says of them."""
    if plan.start is None:
        assert dicts.train is not None and dicts.train_path is not None
        return _dictionary_indices(dicts.train, dicts.train_path, inputs.src_words, inputs.tgt_words,
                                   lower=plan.lower, reverse=dicts.reverse, name="train_dict")
    if plan.start.pairs is None:
        return None, {"seed": plan.start.name, "found": 0}
    pairs = plan.start.pairs(inputs)
    return pairs, {"seed": plan.start.name, "found": int(len(pairs))}


def _normalized(ops: tuple[str, ...], src: np.ndarray, tgt: np.ndarray, *, inplace: bool) -> tuple[np.ndarray,
                                                                                                 np.ndarray]:
    """Both spaces through the chain once, in place where the raw vectors are not needed again (at 200k x
    300 each copy is 229 MiB): the fit, the mapped spaces and the no-mapping baseline all read them."""
    from eval.normalize import normalize_embeddings

    if not ops:
        return src, tgt
    return normalize_embeddings(src, ops, inplace=inplace), normalize_embeddings(tgt, ops, inplace=inplace)


def _fit(plan: _Plan, src_n: np.ndarray, tgt_n: np.ndarray, seed: np.ndarray | None,
         select_pairs: np.ndarray | None) -> AlignmentResult:
    """The method on the normalised spaces; the result keeps the chain raw vectors take (composed words, the
    export)."""
    from eval.methods.fitting import fit_mapping

    context = dataclasses.replace(plan.context, select_pairs=select_pairs)
    res = fit_mapping(src_n, tgt_n, seed, method=plan.method.name, config=plan.config, normalize="none",
                      context=context)
    return dataclasses.replace(res, normalize=plan.ops)


def _evaluate(plan: _Plan, dicts: _Dictionaries, src: Side, tgt: Side, composed: Any,
              no_mapping: tuple[str, ...]) -> dict[str, Any]:
    """P@k under every protocol with its baselines, and the test dictionary's counts (with its training overlap)."""
    from polyglot_groc.analysis.alignment_report import evaluate_protocols

    assert dicts.test is not None
    stats, precision, baselines, protocols = evaluate_protocols(
        dicts.test, src, tgt, lower=plan.lower, eval_words=dicts.restrict, knn_mode=plan.context.knn_mode,  # type: ignore[arg-type]
        composed=composed, no_mapping=no_mapping)
    if dicts.overlap is not None:
        stats["train_overlap"] = dicts.overlap
    return {"eval_dictionary": stats, "precision": precision, "baselines": baselines, "protocols": protocols}


def _composed_sides(pairs: list[tuple[str, str]], restrict: set[str] | None, lower: bool,
                    bundle: Callable[[], ModelBundle], side: str, res: Any,
                    *sides: tuple[str | None, list[str], np.ndarray, np.ndarray]
                    ) -> tuple[Side, Side, dict[str, int]]:
    """Both sides extended by the test words missing from a run-read side, composed by the model.

    Each side read from the run (a language given) gets its missing test words embedded by
    :func:`~polyglot_groc.analysis.export.embed` (composed from characters by compositional
    models; a lookup model cannot, and they stay missing), normalised and mapped with the
    vocabulary (so ``center`` uses the same statistics up to those few rows), and appended to that
    side's words (the vocabulary stays a prefix); the unmapped vectors are extended likewise, for
    the no-mapping baseline.
    """
    from eval.normalize import normalize_embeddings
    from polyglot_groc.analysis.alignment_report import Side
    from polyglot_groc.analysis.export import embed

    if restrict is not None:
        wanted = {w.lower() for w in restrict} if lower else restrict
        pairs = [p for p in pairs if (p[0].lower() if lower else p[0]) in wanted]
    extended: list[Side] = []
    counts: list[int] = []
    for column, (lang, words, raw, prepared) in enumerate(sides):
        key = {(w.lower() if lower else w) for w in words}
        missing = sorted({(p[column].lower() if lower else p[column]) for p in pairs} - key) if lang is not None else []
        unmapped = normalize_embeddings(raw, res.normalize) if res.normalize else raw
        got = embed(bundle(), lang, missing, side=side) if missing else None  # type: ignore[arg-type]
        if got is None or not got.words:
            extended.append(Side(words, prepared, unmapped))
            counts.append(0)
            continue
        stacked = np.vstack([raw, got.vectors])  # (n + m, d): normalise with the vocabulary's statistics
        extra = (res.map_source(stacked) if column == 0 else res.prepare_target(stacked))[len(words):]
        extra_raw = (normalize_embeddings(stacked, res.normalize) if res.normalize else stacked)[len(words):]
        extended.append(Side([*words, *got.words], np.vstack([prepared, extra]).astype(np.float32),
                             np.vstack([unmapped, extra_raw]).astype(np.float32)))
        counts.append(len(got.words))
    return extended[0], extended[1], {"composed_source_words": counts[0], "composed_target_words": counts[1]}


#: torch's legacy serialization header (``torch.save(..., _use_new_zipfile_serialization=False)``).
_TORCH_MAGIC = 0x1950A86A20F9469CFC6C
_TORCH_PROTOCOL = 1001


def write_torch_legacy(f: IO[bytes], obj: object) -> None:
    """Write ``obj`` (no tensors: e.g. a NumPy array) as ``torch.save(obj, f,
    _use_new_zipfile_serialization=False)`` does, byte for byte, without importing torch.

    MUSE saves ``best_mapping.pth`` with ``torch.save`` of the NumPy map and reloads it with
    ``torch.load``; torch of every version reads this format (old ones only read this one).
    """
    sys_info = {"protocol_version": _TORCH_PROTOCOL, "little_endian": sys.byteorder == "little",
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for part in (_TORCH_MAGIC, _TORCH_PROTOCOL, sys_info, obj, []):  # the last: no tensor storages follow
        pickle.dump(part, f, protocol=2)


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
    from eval.vectors import write_vec
    from groc_base.fileio import atomic_output_dir

    text = dumps_json(result.to_dict(), indent=2) + "\n"
    with atomic_output_dir(out, overwrite=overwrite) as tmp:
        np.save(tmp / "W.npy", result.W)
        if result.W_tgt is not None:  # vecmap moves the target space too
            np.save(tmp / "W_tgt.npy", result.W_tgt)
        with (tmp / "best_mapping.pth").open("wb") as f:  # MUSE's torch.save of the W numpy array
            write_torch_legacy(f, np.asarray(result.W))
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
        raise InputError(f"{option('export_mapped')} cannot stream the normalisation {unknown[0]!r} yet; "
                         f"export without {option('export_mapped')}, or map the words with W.npy")
    return ops


def _renorm(x: np.ndarray) -> np.ndarray:
    """Unit L2 rows in a new array (zero rows stay zero), as ``normalize_embeddings``' ``renorm``."""
    from eval.normalize import safe_row_norms

    return x / safe_row_norms(x)
