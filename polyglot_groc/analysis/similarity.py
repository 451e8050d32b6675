"""Word similarity of embeddings: Spearman rho against human judgements (MUSE's mono- and cross-lingual tasks).

:func:`similarity` is ``polyglot-groc similarity`` as a function. Vectors come from a word2vec
file, from memory, from a run's vocabulary (read by MUSE's rule, as ``export --vocab`` writes
it), or, cross-lingually, from two files already in one space. Each dataset is scored on its
own: a bad one becomes an error entry (and a warning) and the others still count.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import check_input_file, check_positive, option
from groc_base.errors import InputError
from groc_base.fileio import json_safe, unique_labels
from groc_base.wording import agree, counted
from polyglot_groc.analysis.alignment import Vectors, check_input_files, load_bundle_once, read_side
from polyglot_groc.model.access import run_access_doc
from polyglot_groc.model.bundle import ModelBundle

log = logging.getLogger(__name__)

__all__ = ["WordSimilarityResult", "similarity"]


@dataclass(frozen=True)
class WordSimilarityResult:
    """Spearman rho per dataset (keyed by file name, with parent folders where two share one).

    Which fields are set says what was scored: ``vectors`` (one file), ``src_vectors`` and
    ``tgt_vectors`` (cross-lingual), or ``run``/``lang``/``side``/``model`` (a run's vocabulary,
    ``in_vocabulary``, and for a compositional side also ``all_pairs_composed``). A dataset that
    could not be scored holds ``{"error": ...}``.
    """

    datasets: dict[str, dict[str, Any]]
    vectors: str | None = None
    src_vectors: str | None = None
    tgt_vectors: str | None = None
    run: str | None = None
    lang: str | None = None
    side: str | None = None
    model: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc similarity`` prints."""
        if self.src_vectors is not None:
            out: dict[str, Any] = {"src_vectors": self.src_vectors, "tgt_vectors": self.tgt_vectors}
        elif self.model is not None:
            out = {"run": self.run, "lang": self.lang, "side": self.side, "model": self.model}
        else:
            out = {"vectors": self.vectors}
        out["datasets"] = self.datasets
        return json_safe(out)  # type: ignore[return-value]


def _score_datasets(datasets: Sequence[str | os.PathLike[str]],
                    score: Callable[[Path], dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Run ``score(path) -> dict`` on every dataset; failures become ``{"error": ...}`` entries.

    Each failure is reported once: as a one-line warning when other datasets were scored, or
    inside the one error when none could be.
    """
    results: dict[str, dict[str, Any]] = {}
    # Keyed by file name, with parent folders where two datasets share one (never one lost).
    for label, ds in zip(unique_labels(list(datasets)), datasets, strict=True):
        try:
            check_input_file(ds, flag="datasets")  # a FIFO would block the reader forever
            results[label] = score(Path(ds))
        except InputError as exc:
            results[label] = {"error": str(exc)}
    failed = [name for name, entry in results.items() if "error" in entry]
    if len(failed) == len(results):
        if len(results) == 1:
            raise InputError(results[failed[0]]["error"])
        raise InputError(f"none of the {len(results)} datasets could be scored: "
                         + "; ".join(results[name]["error"] for name in failed))
    for name in failed:
        log.warning("dataset %s skipped: %s", name, results[name]["error"])
    return results


#: Spearman's rho over fewer pairs says nothing (over 2 it is always +-1): such a dataset is not scored.
MIN_PAIRS = 3


def _enough_pairs(ds: Path, found: int, not_found: int, where: str = "the vectors") -> None:
    """Refuse a dataset of which fewer than :data:`MIN_PAIRS` pairs have both words in ``where``."""
    if found < MIN_PAIRS:
        raise InputError(f"{ds}: only {found} of its {counted(found + not_found, 'pair')} "
                         f"{agree(found, 'has', 'have')} both words in {where}, and "
                         f"Spearman's rho needs at least {MIN_PAIRS}; check that the dataset is in the vectors' "
                         "language, raise --max-vocab, or try --keep-case")


def _words_vectors(vec: Vectors, max_vocab: int | None, lower: bool) -> tuple[list[str], Any]:
    return read_side(vec, None, None, "input", max_vocab, "vectors", lower)


@run_access_doc
def similarity(
    *,
    datasets: Sequence[str | os.PathLike[str]],
    vectors: Vectors | None = None,
    run: str | os.PathLike[str] | ModelBundle | None = None,
    lang: str | None = None,
    side: str = "input",
    max_vocab: int | None = 200_000,
    keep_case: bool = False,
    src_vectors: Vectors | None = None,
    tgt_vectors: Vectors | None = None,
    allow_untrained: bool = False,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> WordSimilarityResult:
    """Spearman rho between cosine similarity and human judgements, per dataset (``w1 w2 score`` lines).

    Give exactly one of: ``vectors``; ``run`` with ``lang`` (the run's vocabulary, read as MUSE
    reads ``export --vocab``'s file, so without a lookup side's untrained rows unless
    ``allow_untrained``; a compositional side also scores every pair with the unseen words
    composed, a separate figure); or ``src_vectors`` and ``tgt_vectors`` (cross-lingual,
    already in one space). With ``run``, ``vectors`` may hold the run's vocabulary vectors already
    exported (:func:`~polyglot_groc.analysis.export.vocabulary_vectors` with the same ``side``,
    ``max_vocab`` and case rule), so they are not computed again. Multiword pairs (SemEval-17)
    are skipped and counted, as MUSE does.

    Args:
        datasets: word-similarity files.
        vectors: word vectors (a word2vec file or in memory).
        run: a run directory (or a loaded bundle).
        lang: the run's language to score (default: a one-language run's).
        side: ``input`` or ``output`` embeddings of ``run``.
        max_vocab: read at most N distinct words (default 200,000 as MUSE's ``evaluate.py``: a
            pair whose word sits past that row is not found); None: every row.
        keep_case: keep the vocabulary's case and look the (lowercased) pair words up lowercase,
            then Capitalized, then Title. Not a MUSE mode: MUSE's evaluator always reads the
            vocabulary lowercased (its ``full_vocab`` only serves the final export).
        src_vectors: cross-lingual: the (mapped) source vectors, first word of each pair.
        tgt_vectors: cross-lingual: the target vectors, second word of each pair.
        allow_untrained: with ``run``, keep the untrained lookup rows of vocabulary words training never
            saw (a closed vocabulary's valid and test words) in the in-vocabulary figure.
        {run_access}

    Returns:
        A :class:`WordSimilarityResult`; its ``to_dict()`` is the JSON ``polyglot-groc similarity`` prints.

    Raises:
        InputError: not exactly one source of vectors, a polyglot ``run`` without ``lang``, or no dataset
            could be scored (a dataset that fails while others are scored is an entry and a warning).
    """
    from eval.similarity import read_word_pairs, word_similarity
    from polyglot_groc.model.device import use_threads

    check_positive(max_vocab=max_vocab)
    check_input_files(("vectors", vectors), ("src_vectors", src_vectors), ("tgt_vectors", tgt_vectors))
    use_threads(threads)
    lower = not keep_case
    if src_vectors is not None or tgt_vectors is not None:
        if src_vectors is None or tgt_vectors is None or vectors is not None or run is not None:
            raise InputError(f"cross-lingual similarity takes exactly {option('src_vectors')} A.vec and "
                             f"{option('tgt_vectors')} B.vec")
        sw, sv = _words_vectors(src_vectors, max_vocab, lower)
        tw, tv = _words_vectors(tgt_vectors, max_vocab, lower)

        def cross_score(ds: Path) -> dict[str, Any]:
            triples, multi = read_word_pairs(ds)
            r = word_similarity(triples, sw, sv, lower=lower, tgt_words=tw, tgt_vectors=tv)
            _enough_pairs(ds, r.found, r.not_found, "the source and target vectors")
            return {"rho": r.rho, "found": r.found, "not_found": r.not_found, "multiword_skipped": multi}

        return WordSimilarityResult(datasets=_score_datasets(datasets, cross_score), src_vectors=_name(src_vectors),
                                    tgt_vectors=_name(tgt_vectors))
    if run is None:
        if vectors is None:
            raise InputError(f"pass exactly one of {option('vectors')} FILE or {option('run')} RUN with "
                             f"{option('lang')} XX")
        words, vecs = _words_vectors(vectors, max_vocab, lower)

        def vec_score(ds: Path) -> dict[str, Any]:
            triples, multi = read_word_pairs(ds)
            r = word_similarity(triples, words, vecs, lower=lower)
            _enough_pairs(ds, r.found, r.not_found)
            return {"rho": r.rho, "found": r.found, "not_found": r.not_found, "multiword_skipped": multi}

        return WordSimilarityResult(datasets=_score_datasets(datasets, vec_score), vectors=_name(vectors))
    if isinstance(vectors, (str, os.PathLike)):
        raise InputError(f"pass exactly one of {option('vectors')} FILE or {option('run')} RUN with "
                         f"{option('lang')} XX")
    from polyglot_groc.analysis.export import embed, resolve_language, vocabulary_vectors

    bundle = load_bundle_once(run, checkpoint, device)()
    if lang is None:  # a given language is checked where the vocabulary is read
        lang = resolve_language(bundle, lang)
    # The vocabulary as `similarity --vectors` reads the run's export: same words, same vectors.
    if vectors is not None:
        vocab_words, vocab_vecs = _words_vectors(vectors, max_vocab, lower)
    else:
        vocab = vocabulary_vectors(bundle, lang, side, max_vocab, lower, allow_untrained=allow_untrained)
        vocab_words, vocab_vecs = vocab.words, vocab.vectors
    model = bundle.model
    composed = model.compositional_input if side == "input" else model.compositional_output

    def run_score(ds: Path) -> dict[str, Any]:
        triples, multi = read_word_pairs(ds)
        r = word_similarity(triples, vocab_words, vocab_vecs, lower=lower)
        # found/not_found in MUSE's terms: only the model's vocabulary, comparable with MUSE tables.
        rho = r.rho if r.found >= MIN_PAIRS else None  # too few pairs: no figure (the composed one may stand)
        entry: dict[str, Any] = {"in_vocabulary": {"rho": rho, "found": r.found, "not_found": r.not_found},
                                 "multiword_skipped": multi}
        if composed:
            # A separate figure: a compositional model also embeds the words the vocabulary lacks
            # (100% coverage). Words the in-vocabulary figure found keep exactly its vectors; only
            # the others are embedded, each under the spelling the model knows (German nouns are
            # capitalised), composed from the lowercase spelling when it knows none.
            words_all, vecs_all, n_composed = _with_unseen(bundle, lang, side, triples, vocab_words, vocab_vecs,
                                                           lower, embed)
            ra = word_similarity(triples, words_all, vecs_all, lower=lower)
            entry["all_pairs_composed"] = {"rho": ra.rho, "found": ra.found, "not_found": ra.not_found,
                                           "composed_unseen": n_composed}
            if ra.found < MIN_PAIRS:  # the in-vocabulary figure is then null (too few pairs), the composed one not
                _enough_pairs(ds, ra.found, ra.not_found, f"the model's {lang} words (composed ones included)")
        else:
            _enough_pairs(ds, r.found, r.not_found, f"the model's {lang} vocabulary")
        return entry

    return WordSimilarityResult(datasets=_score_datasets(datasets, run_score), run=_name(run), lang=lang, side=side,
                                model=model.kind)


def _with_unseen(bundle: ModelBundle, lang: str, side: str, triples: Sequence[tuple[str, str, float]],
                 words: list[str], vectors: Any, lower: bool, embed: Callable[..., Any]) -> tuple[list[str], Any, int]:
    """The vocabulary plus a vector for every pair word it lacks: ``(words, vectors (n, d), composed)``.

    A missing word (looked up as :func:`eval.similarity.word_similarity` does) is embedded under
    the first of its lowercase, Capitalized and Title spellings in the model's vocabulary of
    ``lang``, else composed from the lowercase spelling; it is appended under its lowercase key,
    so the vocabulary's own words keep their vectors.
    """
    import numpy as np

    from eval.similarity import _lookup
    from eval.vectors import vocabulary_index
    from polyglot_groc.analysis.export import vocabulary_words

    index = vocabulary_index(words, lower)
    missing = sorted({w.lower() for a, b, _ in triples for w in (a, b) if _lookup(w, index, lower) < 0})
    if not missing:
        return words, vectors, 0
    known = set(vocabulary_words(bundle, lang))
    forms = [next((f for f in (w, w.capitalize(), w.title()) if f in known), w) for w in missing]
    got = embed(bundle, lang, forms, side=side)
    if got.words != list(dict.fromkeys(forms)):
        raise InputError(f"{counted(len(got.missing), 'word')} could not be embedded by this model")
    row = {f: i for i, f in enumerate(got.words)}
    extra = np.asarray(got.vectors)[[row[f] for f in forms]]  # (missing, d)
    return [*words, *missing], np.vstack([np.asarray(vectors), extra]).astype(np.float32), int(got.composed)


def _name(source: object) -> str | None:
    """A file's path as given; None for vectors or a model held in memory."""
    return str(source) if isinstance(source, (str, os.PathLike)) else None
