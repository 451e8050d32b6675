"""A trained run in memory: vectors, neighbours and probabilities of any word, loaded once.

What gensim's ``KeyedVectors``, fastText's model and a language model's log-likelihood give their
users, for a run of this toolkit: :func:`load` reads a run's checkpoint once and returns a
:class:`Model`, which answers from memory

* ``vector`` / ``vectors``: embeddings of any word on the input or output side, composed from its
  characters (and lexicon forms) when the run never saw it; batched, cached, NumPy. They are what
  ``export`` writes: the same function (:func:`~polyglot_groc.analysis.export.embed`) on the same
  batches, so a word list gives the same bits either way;
* ``most_similar`` / ``similarity``: cosine or CSLS neighbours among a language's vocabulary, a
  word list or another language, across languages in a polyglot run's shared space or, after
  :meth:`Model.apply_alignment`, in the space an ``align`` result maps into
  (:mod:`~polyglot_groc.analysis.neighbour_search`, :mod:`~polyglot_groc.analysis.aligned_space`);
* ``log_prob`` / ``perplexity`` / ``token_log_probs`` / ``score_lines``: probabilities of text through
  the model's own scorer, under ``evaluate``'s open-vocabulary rule
  (:mod:`~polyglot_groc.analysis.text_scoring`);
* ``to_keyed_vectors``: a gensim ``KeyedVectors`` that still composes unseen words through the run
  (:mod:`~polyglot_groc.analysis.keyed_vectors`), so gensim's whole toolbox applies;
* gensim's hand: ``model[word]``, ``word in model``, ``len(model)``, ``most_similar(positive=[...],
  negative=[...])``, each in the default language ``model.lang`` (a one-language run's own).

The class is the one place a user meets a loaded run; each job it offers lives in its own module,
and the class keeps only what every job shares: the bundle and the cache of computed vectors. Bad
input (a language the run lacks, a word made only of characters the model never saw, a lookup
table asked for a word outside its vocabulary, empty text) is a one-line
:class:`~groc_base.errors.InputError`; no word ever gets a made-up (zero) vector, and no word an
untrained row: a lookup table's words that training never saw (a closed vocabulary's valid and
test words) are refused by name and left out of the words searched unless ``allow_untrained``
(:mod:`~polyglot_groc.analysis.seen_words`).

Not :class:`~polyglot_groc.model.lm.LanguageModel` (the torch module) nor
:class:`~polyglot_groc.model.bundle.ModelBundle` (that module with its vocabulary and charset, which
a :class:`Model` holds as ``bundle``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from groc_base.errors import InputError
from groc_base.wording import counted
from langpairs.corpus import EOS
from polyglot_groc.analysis import text_scoring
from polyglot_groc.analysis.aligned_space import AppliedAlignment, replay_alignment
from polyglot_groc.analysis.alignment import AlignResult, read_alignment
from polyglot_groc.analysis.export import check_language, check_side, embed, unknown_script_words, vocabulary_words
from polyglot_groc.analysis.neighbour_search import NeighbourSearch, Query
from polyglot_groc.analysis.seen_words import NoVectorError, check_trained, composes
from polyglot_groc.analysis.text_scoring import LineScore, TextScores
from polyglot_groc.config import RunConfig
from polyglot_groc.model.bundle import ModelBundle

if TYPE_CHECKING:
    from polyglot_groc.analysis.keyed_vectors import RunKeyedVectors

log = logging.getLogger(__name__)

__all__ = ["Model", "load"]


@dataclass
class _VectorTable:
    """Cached vectors of one (language, side): ``matrix[index[word]]``."""

    index: dict[str, int]
    matrix: np.ndarray  # (n, d) float32

    def add(self, words: Sequence[str], vectors: np.ndarray) -> None:
        start = self.matrix.shape[0]
        self.index.update((w, start + i) for i, w in enumerate(words))
        self.matrix = np.concatenate([self.matrix, vectors.astype(np.float32, copy=False)])


class Model:
    """A trained run held in memory: vectors, neighbours and probabilities (see the module's docstring).

    Made by :func:`load` (or from a loaded ``ModelBundle``). ``bundle`` is the model with its
    vocabulary and charset; ``config`` the run's :class:`~polyglot_groc.config.RunConfig`,
    ``languages`` its language codes, ``kind`` its model kind, ``dim`` its embedding size, ``lang``
    the language a call without one means. Computed vectors are cached per language and side, so
    asking again is a lookup.

    As gensim's ``KeyedVectors`` (in ``lang``): ``model[word]`` (or a list of words) is
    :meth:`vector`, ``word in model`` and ``len(model)`` are about :meth:`words` (the vocabulary's
    words with a trained vector), iterating gives those words, and :meth:`most_similar` takes
    ``positive=[...]`` and ``negative=[...]``.
    """

    def __init__(self, bundle: ModelBundle, *, run: str | os.PathLike[str] | None = None, checkpoint: str = "best",
                 step: int | None = None, lang: str | None = None) -> None:
        self.bundle = bundle
        self.run = None if run is None else Path(run)
        self.checkpoint = checkpoint
        self.step = step
        self._lang: str | None = None
        self.lang = lang
        self._tables: dict[tuple[str, str], _VectorTable] = {}  # (lang, side)
        self._word_sets: dict[tuple[str | None, str], frozenset[str]] = {}  # (lang or None: all, side)
        self._search = NeighbourSearch(bundle, self._cached_vectors)
        bundle.model.eval()

    # ------------------------------------------------------------------------------- what it is
    @property
    def config(self) -> RunConfig:
        return self.bundle.cfg

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.bundle.vocab.langs)

    @property
    def kind(self) -> str:
        return str(self.bundle.model.kind)

    @property
    def dim(self) -> int:
        return int(self.bundle.model.cfg.d)

    @property
    def lang(self) -> str | None:
        """The language a call without ``lang`` means: the one set (``pg.load(run, lang=...)`` or
        ``model.lang = ...``), else a one-language run's language; None for a polyglot run with none set."""
        if self._lang is not None:
            return self._lang
        return self.languages[0] if len(self.languages) == 1 else None

    @lang.setter
    def lang(self, value: str | None) -> None:
        if value is not None:
            check_language(self.bundle, value)
        self._lang = value

    def _language(self, lang: str | None) -> str:
        """``lang``, or the default language (:attr:`lang`); an error naming both ways for a polyglot run."""
        if lang is not None:
            check_language(self.bundle, lang)
            return lang
        if self.lang is None:
            first = self.languages[0]
            raise InputError(f"this run has {len(self.languages)} languages ({', '.join(self.languages)}): say which, "
                             f"with lang={first!r} in the call, or once with model.lang = {first!r} "
                             f"(or pg.load(run, lang={first!r}))")
        return self.lang

    @property
    def alignment(self) -> AppliedAlignment | None:
        """The alignment :meth:`apply_alignment` applied (None: none)."""
        return self._search.alignment

    def composes(self, side: str = "input") -> bool:
        """Whether ``side`` embeds any word from its spelling (GroC) rather than from a lookup table."""
        check_side(side)
        return composes(self.bundle, side)

    def words(self, lang: str | None = None, side: str = "input", *, allow_untrained: bool = False) -> list[str]:
        """``lang``'s vocabulary, most frequent first, without ``<eos>`` and ``<unk>``: the words with a trained
        ``side`` vector. A lookup side leaves out the words training never saw (a closed vocabulary's valid and
        test words: their rows are untrained) unless ``allow_untrained``; a compositional side (GroC) composes
        every word with the trained function, so it lists them all."""
        check_side(side)
        return vocabulary_words(self.bundle, self._language(lang), side=side, allow_untrained=allow_untrained)

    def _word_set(self, side: str = "input") -> frozenset[str]:
        """The words of :meth:`words` in the default language (all languages when none is set), as a set; cached."""
        key = (self.lang, side)
        if key not in self._word_sets:
            langs = self.languages if self.lang is None else (self.lang,)
            self._word_sets[key] = frozenset(w for lang in langs for w in self.words(lang, side))
        return self._word_sets[key]

    def __contains__(self, word: object) -> bool:
        """Whether ``word`` is a word of the vocabulary (:meth:`words`) of the default language, or of any
        language of a polyglot run with none set. A compositional run also embeds words not ``in`` it."""
        return isinstance(word, str) and word in self._word_set()

    def __bool__(self) -> bool:
        return True  # a model is never "empty": ``if model`` must not list its vocabulary (__len__)

    def __len__(self) -> int:
        """How many words :meth:`words` lists in the default language (all languages, each word once, when
        none is set)."""
        return len(self._word_set())

    def __iter__(self) -> Iterator[str]:
        """The words of :meth:`words` in the default language (a polyglot run with none set: an error)."""
        return iter(self.words())

    def __getitem__(self, words: str | Sequence[str]) -> np.ndarray:
        """``model[word]``: :meth:`vector` in the default language, ``model[[w1, w2]]``: :meth:`vectors`.
        -> (d,) or (n, d) float32"""
        if isinstance(words, str):
            return self.vector(words)
        if isinstance(words, Sequence) and all(isinstance(w, str) for w in words):
            return self.vectors(words)
        raise InputError(f"model[...] takes a word or a list of words, got {type(words).__name__}")

    def __repr__(self) -> str:
        # The words words() lists: <eos> and <unk> are not words of the vocabulary a user looks up.
        sizes = ", ".join(f"{lang} {counted(len(self.words(lang)), 'word')}" for lang in self.languages)
        where = f" from {self.run}" if self.run is not None else ""
        return f"<Model {self.kind} d={self.dim} ({sizes}){where}>"

    # ------------------------------------------------------------------------------- vectors
    def vector(self, word: str, lang: str | None = None, side: str = "input", *,
               allow_untrained: bool = False) -> np.ndarray:
        """The embedding of ``word`` in ``lang`` (default: :attr:`lang`) on ``side`` (``input`` or ``output``).
        -> (d,) float32

        Any word for a compositional side (composed from its characters when the run never saw it);
        a lookup table's words seen in training only (:class:`NoVectorError`, also a ``KeyError``,
        stating the rule otherwise; ``allow_untrained`` serves the untrained rows of the vocabulary's
        other words).
        """
        if not isinstance(word, str):
            raise InputError(f"vector() takes one word (a str), got {type(word).__name__}; for several use vectors()")
        return self.vectors([word], lang, side, allow_untrained=allow_untrained)[0]

    def vectors(self, words: Sequence[str], lang: str | None = None, side: str = "input", *,
                allow_untrained: bool = False) -> np.ndarray:
        """Embeddings of ``words`` (in order, repeats allowed) in ``lang`` (default: :attr:`lang`) on ``side``.
        -> (n, d) float32

        The words not yet cached are embedded together by
        :func:`~polyglot_groc.analysis.export.embed` (``export``'s function, in its batches), so on
        a fresh model ``vectors(words)`` equals the rows ``export --words`` writes for the same
        list, bit for bit. Raises :class:`InputError` for a language the run lacks, an empty
        word or one with whitespace, a word made only of characters the model never saw, and
        (:class:`NoVectorError`) a word outside the vocabulary of a lookup side or, unless
        ``allow_untrained``, one of it training never saw (its row is untrained).
        """
        check_side(side)
        lang = self._language(lang)
        if isinstance(words, str):
            raise InputError("vectors() takes a list of words; for one word use vector(word)")
        return self._cached_vectors(list(words), lang, side, allow_untrained)

    def _cached_vectors(self, words: Sequence[str], lang: str, side: str, allow_untrained: bool) -> np.ndarray:
        """:meth:`vectors` once ``lang`` and ``side`` are checked: the cache, then :func:`embed` for the rest."""
        words = list(words)
        if not allow_untrained:  # every word asked, cached or not: the cache may hold rows asked with allow
            check_trained(self.bundle, words, side)
        table = self._tables.get((lang, side))
        if table is None:
            table = self._tables[(lang, side)] = _VectorTable({}, np.zeros((0, self.dim), np.float32))
        todo = [w for w in dict.fromkeys(words) if w not in table.index]
        if todo:
            self._check_embeddable(todo, lang, side)
            got = embed(self.bundle, lang, todo, side=side, allow_untrained=True)
            table.add(got.words, got.vectors)
        rows = np.fromiter((table.index[w] for w in words), dtype=np.int64, count=len(words))  # (n,)
        return table.matrix[rows]  # (n, d) a copy

    def _check_embeddable(self, words: Sequence[str], lang: str, side: str) -> None:
        """Refuse what would get a made-up vector: a non-token, a word a lookup side lacks, a word of an
        unseen script (it would collapse onto the few vectors of its length)."""
        bad = next((w for w in words if not isinstance(w, str) or w.split() != [w]), None)
        if bad is not None:
            raise InputError(f"word {bad!r} is empty or contains whitespace; ask for one token at a time")
        unseen = [w for w in words if w not in self.bundle.vocab]
        if unseen and not self.composes(side):
            raise NoVectorError(
                f"{len(unseen)} word(s) are outside this {self.kind} run's vocabulary (e.g. "
                f"{', '.join(map(repr, unseen[:5]))}): its {side} side is a lookup table, with a vector for each "
                f"word of its vocabulary seen in training ({len(self.words(lang, side)):,} words of {lang}) and none "
                "for others; ask for words of its vocabulary, or train a compositional run (--model groc) to embed "
                "any word")
        blind = unknown_script_words(self.bundle, unseen)
        if blind:
            raise InputError(
                f"{len(blind)} word(s) are made only of characters this model never saw (e.g. "
                f"{', '.join(map(repr, blind[:5]))}): it spells each such character with one unknown-character "
                "symbol, so these words would collapse to a few vectors that differ only by word length; train on "
                "text of that script to embed them")

    def can_embed(self, word: object, lang: str | None = None, side: str = "input") -> bool:
        """Whether :meth:`vector` gives ``word`` a vector (without ``allow_untrained``): a word with a trained
        row of a lookup side, or any token a compositional side can spell (not one of an unseen script)."""
        try:
            self._check_embeddable([word], self._language(lang), side)  # type: ignore[list-item]
            check_trained(self.bundle, [word], side)  # type: ignore[list-item]
        except InputError:
            return False
        return True

    def to_keyed_vectors(self, lang: str | None = None, words: Sequence[str] | None = None, side: str = "input", *,
                         allow_untrained: bool = False) -> RunKeyedVectors:
        """``lang``'s vectors as gensim ``KeyedVectors``: its vocabulary (:meth:`words`, most frequent first)
        or ``words``. A :class:`~polyglot_groc.analysis.keyed_vectors.RunKeyedVectors`: on a compositional
        side it still composes any other word through this run, as gensim's ``FastTextKeyedVectors`` builds
        out-of-vocabulary words; saved (``kv.save``) or pickled it is a plain ``KeyedVectors``."""
        from polyglot_groc.analysis.keyed_vectors import RunKeyedVectors

        lang = self._language(lang)
        keys = self.words(lang, side, allow_untrained=allow_untrained) if words is None else list(dict.fromkeys(words))
        if not keys:
            raise InputError("no words to put in the KeyedVectors; pass at least one word")
        log.info("%s the %s words of %s (%s side) for the KeyedVectors (cached)",
                 "composing" if self.composes(side) else "reading", f"{len(keys):,}", lang, side)
        kv = RunKeyedVectors(self, lang, side, vector_size=self.dim)
        kv.add_vectors(keys, self.vectors(keys, lang, side, allow_untrained=allow_untrained))
        return kv

    # ------------------------------------------------------------------------------- neighbours
    def apply_alignment(self, alignment: AlignResult | str | os.PathLike[str], *, src_lang: str | None = None,
                        tgt_lang: str | None = None, side: str | None = None) -> Model:
        """Use an ``align`` result (an :class:`AlignResult` or its ``--out`` directory) for cross-language
        neighbours and similarities between its two languages.

        The two aligned vocabularies keep the vectors ``align`` wrote (``src.aligned.vec``,
        ``tgt.vec``), so neighbours among them are those of the aligned export; any other word is
        embedded by this run and mapped as MUSE's export maps words: the normalisation chain with
        the aligned vocabulary's statistics, then the map. The languages and side default to those
        the result records (an alignment made with ``--run``). The run's own vectors must
        reproduce the aligned ones (checked), so an alignment of another run or side is refused.
        Returns the model itself.

        Raises:
            InputError: the result names no languages and none are given, a language the run lacks, or
                the alignment was not made from this run's ``side`` vectors.
        """
        res = alignment if isinstance(alignment, AlignResult) else read_alignment(alignment)
        applied = replay_alignment(res, self.bundle, src_lang=src_lang, tgt_lang=tgt_lang, side=side)
        self._search.use_alignment(applied)
        log.info("alignment %s -> %s (%s, %s side) applied", *applied.langs, applied.method, applied.side)
        return self

    def similarity(self, word1: str, word2: str, lang: str | None = None, lang2: str | None = None,
                   side: str = "input", *, allow_untrained: bool = False) -> float:
        """Cosine similarity of ``word1`` (in ``lang``, default :attr:`lang`) and ``word2`` (in ``lang2``,
        default ``lang``), in the aligned space when an applied alignment covers the two languages."""
        check_side(side)
        lang = self._language(lang)
        lang2 = lang if lang2 is None else self._language(lang2)
        return self._search.similarity(word1, word2, lang, lang2, side, allow_untrained)

    def most_similar(self, positive: Query | Sequence[Query] | None = None, lang: str | None = None, topn: int = 10,
                     *, negative: Query | Sequence[Query] | None = None, among: str | Sequence[str] = "vocab",
                     among_lang: str | None = None, method: str = "cosine", side: str = "input", knn: int = 10,
                     allow_untrained: bool = False) -> list[tuple[str, float]]:
        """The ``topn`` nearest words of the query, best first, as ``[(word, score), ...]`` (gensim's form).

        The query, as gensim's ``most_similar`` builds it: ``positive`` (a word of ``lang``, default
        :attr:`lang`, or a vector of ``lang``'s space, or a list of them) and ``negative`` (the
        same, subtracted): the mean of the words' unit vectors (vectors as given), each negative
        one with weight -1, made unit; ``most_similar(positive=["king", "woman"],
        negative=["man"])`` is the analogy. The query's words are not their own neighbours within
        one language.

        ``among``: ``"vocab"`` (``lang``'s vocabulary, :meth:`words`), another language's code (its
        vocabulary: cross-language neighbours, in a polyglot run's shared space or in an applied
        alignment's, which then holds the aligned vocabulary), or a list of words (in
        ``among_lang``, default ``lang``; composed where unseen). ``method``: ``cosine``, or
        ``csls`` (Conneau et al. 2018: ``2 cos(x, y) - r(x) - r(y)``, each ``r`` the mean cosine to
        the ``knn`` nearest words of the other language's vocabulary), ranked exactly by
        :mod:`eval.knn`. ``allow_untrained``: a lookup side's vocabulary words training never saw
        are searched and may be asked for too (their rows are untrained; left out by default).
        The first search of a vocabulary embeds all its words once (an INFO log line says so);
        later searches reuse them.
        """
        return self._search.most_similar(positive, negative, self._language(lang), topn, among=among,
                                         among_lang=among_lang, method=method, side=side, knn=knn,
                                         allow_untrained=allow_untrained)

    # ------------------------------------------------------------------------------- probabilities
    def token_log_probs(self, text: str, lang: str, *, start: str | None = EOS, streams: int | None = None,
                        uniform_weight: float | None = None) -> TextScores:
        """Per-token log-probabilities of ``text`` in ``lang``, through the model's own scorer.

        ``text`` is read as a corpus file is: one sentence per non-blank line, tokenised as the run
        was, each ending with ``<eos>``, the whole read as one stream with the state carried
        (as ``evaluate`` reads a split). ``start`` is read first, so every token of the text is
        scored (``<eos>``: the first word starts a sentence); ``start=None`` reads the text's first
        token as context only, as ``evaluate`` reads a split. ``streams`` (default: the run's
        ``train.eval_batch_size``) cuts a long text at sentence ends into that many pieces read side
        by side, each from a sentence start, as evaluation cuts a split into parallel streams;
        ``streams=1`` reads it all as one.

        Open vocabulary, as ``evaluate`` with ``data``: the text is scored over the union of the
        training vocabulary and its own words; a compositional output (GroC) composes the new
        words; a lookup output gives them probability 0, so they are refused unless
        ``uniform_weight`` mixes in the uniform distribution over that union.

        Raises:
            InputError: an empty text, a language the run lacks, new words for a lookup output
                without ``uniform_weight``.
        """
        return text_scoring.token_log_probs(self.bundle, text, lang, start=start, streams=streams,
                                            uniform_weight=uniform_weight)

    def log_prob(self, text: str, lang: str, **kwargs: Any) -> float:
        """The log-probability (natural log) of ``text`` in ``lang``: :meth:`token_log_probs` summed."""
        return self.token_log_probs(text, lang, **kwargs).log_prob

    def perplexity(self, text: str, lang: str, **kwargs: Any) -> float:
        """The perplexity of ``text`` in ``lang`` per token, ``<eos>`` included (:meth:`token_log_probs`)."""
        return self.token_log_probs(text, lang, **kwargs).perplexity

    def score_lines(self, lines: Sequence[str], lang: str, *, uniform_weight: float | None = None) -> list[LineScore]:
        """Each line's log-probability and perplexity, every line a sentence of its own.

        Each line is read from a sentence start (``<eos>``) and its words and closing ``<eos>`` are
        scored, as :meth:`log_prob` scores a one-line text; lines run side by side in batches.
        The input is one text for the open-vocabulary rule (:meth:`token_log_probs`): every line is
        scored over the training vocabulary plus the new words of all the lines, as ``evaluate``
        scores a file, so a line with only known words scores exactly as alone when the input has no
        new words (and, for GroC, a new word elsewhere takes only its own small share of the
        probability mass). A blank line gets ``None`` scores.
        """
        return text_scoring.score_lines(self.bundle, lines, lang, uniform_weight=uniform_weight)


def load(run: str | os.PathLike[str], *, checkpoint: str = "best", device: str = "auto", threads: int | None = None,
         lang: str | None = None, which: str | None = None) -> Model:
    """Load a run once into a :class:`Model` (``checkpoint``: its ``best`` or ``last`` checkpoint, as every
    workflow and ``--checkpoint`` name it; ``device``: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``;
    ``threads``: CPU threads for torch; ``lang``: the language calls without one mean, as
    ``model.lang``: a one-language run needs none). ``which`` is the old name of ``checkpoint``
    (deprecated: a ``FutureWarning``).

    Raises:
        CheckpointError: no such run or checkpoint, or a damaged one. ConfigError: a device that is not there.
        InputError: a ``lang`` the run lacks.
    """
    from groc_base.checks import renamed_argument
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.model.device import use_threads

    checkpoint = renamed_argument("checkpoint", "which", checkpoint, which, "best")
    use_threads(threads)
    bundle, payload = load_bundle(Path(run), checkpoint, device)
    step = payload.get("step")
    return Model(bundle, run=run, checkpoint=checkpoint, step=int(step) if step is not None else None, lang=lang)
