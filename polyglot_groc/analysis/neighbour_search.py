"""Cosine and CSLS neighbours of a loaded run's words: within a language, across the languages of a
polyglot run's shared space, or in the space of an applied alignment.

:class:`NeighbourSearch` is what :class:`~polyglot_groc.analysis.loaded_run.Model`'s
``most_similar`` and ``similarity`` run on. It asks the run for vectors through one callable (the
model's cached ``vectors``, which composes unseen words), places them in the searched space
(the run's own, or an :class:`~polyglot_groc.analysis.aligned_space.AppliedAlignment`'s) and ranks
exactly with :mod:`eval.knn`: cosine, or CSLS (Conneau et al. 2018, ``2 cos(x, y) - r(x) - r(y)``,
each ``r`` the mean cosine to the ``knn`` nearest words of the other language's vocabulary,
MUSE's ``get_nn_avg_dist``). A query is built as gensim's ``most_similar`` builds it: the mean of
its positive and negative terms (words as unit vectors, vectors as given; the negative ones with
weight -1), made unit. A vocabulary searched once keeps its unit rows and its CSLS ``r``, so the
next query ranks without embedding it again; the first search of one logs what it embeds.

A vocabulary searched is :func:`~polyglot_groc.analysis.export.vocabulary_words`': a lookup side
leaves out the words training never saw (their rows are untrained,
:mod:`~polyglot_groc.analysis.seen_words`) unless ``allow_untrained``; a compositional side
searches every word of the vocabulary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

from groc_base.checks import is_int, option
from groc_base.errors import InputError
from polyglot_groc.analysis.aligned_space import AppliedAlignment
from polyglot_groc.analysis.export import check_language, check_side, vocabulary_words
from polyglot_groc.analysis.seen_words import composes
from polyglot_groc.model.bundle import ModelBundle

log = logging.getLogger(__name__)

__all__ = ["METHODS", "Candidates", "NeighbourSearch", "Query", "check_method", "unit_rows"]

#: One term of a query: a word, or a vector of the query language's space (d,).
Query = Union[str, np.ndarray]  # noqa: UP007 - a runtime alias (annotations of other modules name it)

#: Ranking methods of :meth:`NeighbourSearch.most_similar`.
METHODS = ("cosine", "csls")

#: The run's vectors: (words, lang, side, allow_untrained) -> (n, d) float32, unseen words composed.
VectorsOf = Callable[[Sequence[str], str, str, bool], np.ndarray]


def check_method(method: str) -> None:
    """``method`` must be one of :data:`METHODS`."""
    if method not in METHODS:
        raise InputError(f"{option('method', method)} is unknown; use cosine or csls")


def _check_counts(**counts: int) -> None:
    for name, value in counts.items():
        if not is_int(value) or value < 1:
            raise InputError(f"{name}={value!r}; pass a positive number of neighbours")


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), float32, C-contiguous: what eval.knn ranks
    with ``assume_normalized``.  (n, d) -> (n, d)"""
    from eval.normalize import safe_row_norms

    return np.ascontiguousarray(x / safe_row_norms(x), dtype=np.float32)


@dataclass(frozen=True)
class Candidates:
    """Words to rank and the unit rows of their vectors (zero rows stay zero)."""

    words: list[str]
    index: dict[str, int]  # word -> its row
    unit: np.ndarray  # (n, d) float32

    @classmethod
    def of(cls, words: Sequence[str], vectors: np.ndarray) -> Candidates:
        """``words`` with their vectors ``(n, d)`` made unit."""
        return cls(list(words), {w: i for i, w in enumerate(words)}, unit_rows(vectors))


@dataclass(frozen=True)
class _Where:
    """Where one search runs: the query's language, the searched one, the side, whether in the
    applied alignment's space rather than the run's own, and whether untrained lookup rows may serve."""

    lang: str
    other: str
    side: str
    aligned: bool
    allow_untrained: bool = False


class NeighbourSearch:
    """Neighbours and similarities among a run's words (see the module's docstring).

    ``bundle`` is the run, ``vectors`` its (cached) embedding of words; ``alignment`` the applied
    alignment, if any (:meth:`use_alignment`).
    """

    def __init__(self, bundle: ModelBundle, vectors: VectorsOf) -> None:
        self.bundle = bundle
        self._vectors = vectors
        self.alignment: AppliedAlignment | None = None
        self._vocabularies: dict[tuple[bool, str, str, bool], Candidates] = {}  # (aligned, lang, side, allow)
        #: (aligned, of, over, side, knn, allow) -> (n,)
        self._r: dict[tuple[bool, str, str, str, int, bool], np.ndarray] = {}

    def use_alignment(self, alignment: AppliedAlignment) -> None:
        """Search across ``alignment``'s two languages in its space from now on; what was cached for an
        earlier alignment's space is dropped, the run's own spaces are kept."""
        self.alignment = alignment
        self._vocabularies = {k: v for k, v in self._vocabularies.items() if not k[0]}
        self._r = {k: v for k, v in self._r.items() if not k[0]}

    def aligned(self, lang: str, other: str) -> bool:
        """Whether ``lang``'s vectors compared with ``other``'s come from the applied alignment."""
        return self.alignment is not None and self.alignment.relates(lang, other)

    def vectors(self, words: Sequence[str], lang: str, side: str, aligned: bool,
                allow_untrained: bool = False) -> np.ndarray:
        """``words`` of ``lang`` in the searched space: the run's, or the applied alignment's.  (n, d) or (n, d')"""
        if not aligned:
            return self._vectors(words, lang, side, allow_untrained)
        al = self._applied(side)
        return al.vectors(words, lang, lambda others: self._vectors(others, lang, al.side, allow_untrained))

    def _applied(self, side: str) -> AppliedAlignment:
        """The applied alignment, which must align ``side``."""
        assert self.alignment is not None
        self.alignment.check_side(side)
        return self.alignment

    # ------------------------------------------------------------------------------- the two questions
    def similarity(self, word1: str, word2: str, lang: str, lang2: str, side: str,
                   allow_untrained: bool = False) -> float:
        """Cosine of ``word1`` (``lang``) and ``word2`` (``lang2``), in the aligned space when the applied
        alignment relates the two languages."""
        aligned = self.aligned(lang, lang2)
        a = self.vectors([word1], lang, side, aligned, allow_untrained)[0]  # (d,)
        b = self.vectors([word2], lang2, side, aligned, allow_untrained)[0]  # (d,)
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        if norm == 0.0:
            raise InputError(f"{word1!r} or {word2!r} has a zero vector; cosine similarity is undefined for it")
        return float(np.dot(a, b) / norm)

    def most_similar(self, positive: Query | Sequence[Query] | None, negative: Query | Sequence[Query] | None,
                     lang: str, topn: int = 10, *, among: str | Sequence[str] = "vocab", among_lang: str | None = None,
                     method: str = "cosine", side: str = "input", knn: int = 10,
                     allow_untrained: bool = False) -> list[tuple[str, float]]:
        """The ``topn`` nearest words of the query ``positive`` minus ``negative``, best first, as
        ``[(word, score), ...]`` (:meth:`Model.most_similar
        <polyglot_groc.analysis.loaded_run.Model.most_similar>` says what the arguments mean). The
        query's words are not their own neighbours within one language."""
        from eval.knn import nn_topk

        check_side(side)
        check_language(self.bundle, lang)
        check_method(method)
        _check_counts(topn=topn, knn=knn)
        terms = _terms(positive, 1.0) + _terms(negative, -1.0)
        if not terms:
            raise InputError("most_similar() needs a query: a word or vector as positive (and/or negative), "
                             "or a list of them")
        other = self._searched_language(lang, among, among_lang)
        where = _Where(lang, other, side, self.aligned(lang, other), allow_untrained)
        cands = self._vocabulary(other, where) if isinstance(among, str) else self._listed(among, where)
        q = self._query(terms, where)  # (d,) unit
        asked = {t for t, _ in terms if isinstance(t, str)} if other == lang else set()
        own = [w for w in asked if w in cands.index]
        k = min(topn + len(own), len(cands.words))
        if method == "cosine":
            ids, scores = nn_topk(q[None], cands.unit, k, assume_normalized=True)  # (1, k) each
        else:
            ids, scores = self._csls(q, cands, where, k, knn, cached=isinstance(among, str))
        found = [(cands.words[i], float(v)) for i, v in zip(ids[0].tolist(), scores[0].tolist(), strict=True)]
        return [(w, v) for w, v in found if w not in asked][:topn]

    # ------------------------------------------------------------------------------- the steps
    def _searched_language(self, lang: str, among: str | Sequence[str], among_lang: str | None) -> str:
        """The language whose words are ranked: ``lang`` for ``"vocab"``, a language code as given, else
        (a word list) ``among_lang`` or ``lang``."""
        if isinstance(among, str):
            langs = tuple(self.bundle.vocab.langs)
            if among != "vocab" and among not in langs:
                raise InputError(f"among={among!r} is neither 'vocab' nor a language of this run "
                                 f"({', '.join(langs)}); pass a list of words to rank those")
            return lang if among == "vocab" else among
        other = lang if among_lang is None else among_lang
        check_language(self.bundle, other)
        return other

    def _vocabulary(self, lang: str, where: _Where) -> Candidates:
        """``lang``'s vocabulary as candidates: the aligned vocabulary when ``where.aligned``, else the
        run's (:func:`~polyglot_groc.analysis.export.vocabulary_words`, most frequent first); cached."""
        side, aligned, allow = where.side, where.aligned, where.allow_untrained
        key = (aligned, lang, side, allow)
        if key not in self._vocabularies:
            if aligned:
                space = self._applied(side).spaces[lang]
                self._vocabularies[key] = Candidates(space.words, space.index, unit_rows(space.rows))
            else:
                words = vocabulary_words(self.bundle, lang, side=side, allow_untrained=allow)
                log.info("%s the %s words of %s's vocabulary (%s side) once; later searches reuse them",
                         "composing" if composes(self.bundle, side) else "reading", f"{len(words):,}", lang, side)
                # The list already follows the untrained rule: its words need no second check.
                self._vocabularies[key] = Candidates.of(words, self._vectors(words, lang, side, True))
        return self._vocabularies[key]

    def _listed(self, among: Sequence[str], where: _Where) -> Candidates:
        """A word list (in the searched language, composed where unseen) as candidates; not cached."""
        words = list(dict.fromkeys(among))
        if not words:
            raise InputError("among is an empty list; pass the words to rank")
        return Candidates.of(words, self.vectors(words, where.other, where.side, where.aligned, where.allow_untrained))

    def _query(self, terms: list[tuple[Query, float]], where: _Where) -> np.ndarray:
        """The query's unit vector in the searched space: the weighted mean of its terms, words as unit
        vectors and vectors as given (gensim's ``get_mean_vector(pre_normalize=True)``), a vector being
        one of ``where.lang``'s run space, moved as that language's words are.  (d,)"""
        rows = []
        for term, weight in terms:
            if isinstance(term, str):
                v = self.vectors([term], where.lang, where.side, where.aligned, where.allow_untrained)  # (1, d)
                if not np.any(v):
                    raise InputError(f"the query word {term!r} has a zero vector; cosine neighbours are undefined "
                                     "for it")
                rows.append(weight * unit_rows(v)[0])
            else:
                rows.append(weight * self._vector_term(term, where))
        q = np.mean(rows, axis=0)  # (d,)
        if not np.any(q):
            raise InputError("the query is a zero vector (its positive and negative terms cancel out); cosine "
                             "neighbours are undefined for it")
        return unit_rows(q[None])[0]

    def _vector_term(self, term: np.ndarray, where: _Where) -> np.ndarray:
        """A vector term of a query, checked and placed in the searched space.  (d,) -> (d,) or (d',)"""
        dim = int(self.bundle.model.cfg.d)
        q = np.asarray(term, dtype=np.float32).reshape(-1)
        if q.shape[0] != dim or not np.isfinite(q).all():
            raise InputError(f"the query vector has shape {np.shape(term)}; pass a finite ({dim},) vector or a word")
        if not np.any(q):
            raise InputError("the query vector is zero; cosine neighbours are undefined for it")
        if where.aligned:
            q = self._applied(where.side).map_rows(q[None], where.lang, "a query vector")[0]
        return q

    def _csls(self, q: np.ndarray, cands: Candidates, where: _Where, k: int, knn: int,
              cached: bool) -> tuple[np.ndarray, np.ndarray]:
        """CSLS top-``k`` of the unit query ``q`` (d,): ``r`` of the query over the searched language's
        vocabulary, ``r`` of each candidate over the query language's (kept for a whole vocabulary,
        which ranks again; a word list is scored once).  -> ids (1, k), scores (1, k)"""
        from eval.knn import csls_topk

        r_q = self._mean_knn(q[None], where.other, where, knn)  # (1,)
        r_c = self._mean_knn(cands.unit, where.lang, where, knn, cache_as=where.other if cached else None)  # (n,)
        return csls_topk(q[None], cands.unit, k, knn, r_src=r_q, r_tgt=r_c, assume_normalized=True)

    def _mean_knn(self, unit: np.ndarray, over: str, where: _Where, knn: int,
                  cache_as: str | None = None) -> np.ndarray:
        """CSLS's ``r``: each unit row's mean cosine to its ``knn`` nearest words of ``over``'s vocabulary,
        kept when the rows are the vocabulary of ``cache_as`` (None: not kept).  (n, d) -> (n,)"""
        from eval.knn import mean_knn_similarity

        key = None if cache_as is None else (where.aligned, cache_as, over, where.side, knn, where.allow_untrained)
        if key is not None and key in self._r:
            return self._r[key]
        keys = self._vocabulary(over, where).unit  # (m, d)
        r = mean_knn_similarity(unit, keys, knn, assume_normalized=True)
        if key is not None:
            self._r[key] = r
        return r


def _terms(query: Query | Sequence[Query] | None, weight: float) -> list[tuple[Query, float]]:
    """A query's ``positive`` or ``negative`` side as (term, weight) pairs: one word or vector, or a list."""
    if query is None:
        return []
    if isinstance(query, (str, np.ndarray)):
        return [(query, weight)]
    if isinstance(query, Sequence) and all(isinstance(t, (str, np.ndarray)) for t in query):
        return [(t, weight) for t in query]
    raise InputError(f"a query is a word, a vector or a list of them; got {type(query).__name__}")
