"""A trained run in memory: vectors, neighbours and probabilities of any word, loaded once.

What gensim's ``KeyedVectors``, fastText's model and a language model's log-likelihood give their
users, for a run of this toolkit: :func:`load` reads a run's checkpoint once and returns a
:class:`Model`, which answers from memory

* ``vector`` / ``vectors``: embeddings of any word on the input or output side, composed from its
  characters (and lexicon forms) when the run never saw it; batched, cached, NumPy. They are what
  ``export`` writes: the same function (:func:`~polyglot_groc.analysis.export.embed`) on the same
  batches, so a word list gives the same bits either way;
* ``most_similar``: cosine or CSLS neighbours among a language's vocabulary, a word list or another
  language (:mod:`eval.knn` ranks them), across languages in a polyglot run's shared space or, after
  :meth:`Model.apply_alignment`, in the space an ``align`` result maps into;
* ``log_prob`` / ``perplexity`` / ``token_log_probs`` / ``score_lines``: probabilities of text through
  the model's own scorer (:func:`~polyglot_groc.analysis.crossdomain.score_tokens`, which
  ``evaluate``'s open-vocabulary setting runs, itself on
  :meth:`~polyglot_groc.model.lm.LanguageModel.token_logprobs`), under ``evaluate``'s
  open-vocabulary rule;
* ``to_keyed_vectors``: a gensim ``KeyedVectors``, so gensim's whole toolbox applies.

:func:`neighbours` and :func:`score` are the workflows behind ``polyglot-groc neighbours`` and
``polyglot-groc score``. Bad input (a language the run lacks, a word made only of characters the
model never saw, a lookup table asked for a word outside its vocabulary, empty text) is a one-line
:class:`~groc_base.errors.InputError`; no word ever gets a made-up (zero) vector.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from groc_base.errors import InputError
from groc_base.fileio import json_safe
from langpairs.corpus import EOS, text_sentences
from polyglot_groc.analysis.alignment import AlignResult, normalize_rows, read_alignment, read_side, training_means
from polyglot_groc.analysis.export import (
    check_language,
    check_side,
    embed,
    unknown_script_words,
    vocabulary_words,
)
from polyglot_groc.config import RunConfig
from polyglot_groc.model.bundle import ModelBundle

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

log = logging.getLogger(__name__)

__all__ = ["LineScore", "Model", "NeighboursResult", "ScoreResult", "TextScores", "load", "neighbours", "score"]

#: Ranking methods of :meth:`Model.most_similar`.
METHODS = ("cosine", "csls")
#: Lines per forward pass when :meth:`Model.score_lines` scores lines side by side.
LINES_PER_BATCH = 64


@dataclass(frozen=True)
class TextScores:
    """Per-token log-probabilities of a text (:meth:`Model.token_log_probs`), in reading order.

    ``tokens`` are the scored tokens (``<eos>`` ends every sentence), ``log_probs`` their natural
    log-probabilities ``(n,)`` float64, ``new`` marks the tokens outside the language's training
    vocabulary (composed by a GroC model).
    """

    lang: str
    tokens: list[str]
    log_probs: np.ndarray = field(repr=False)  # (n,) float64
    new: np.ndarray = field(repr=False)  # (n,) bool

    @property
    def log_prob(self) -> float:
        """The text's log-probability (natural log): the sum over its tokens."""
        return float(self.log_probs.sum())

    @property
    def perplexity(self) -> float:
        """exp(- mean log-probability per token), ``<eos>`` included, as ``evaluate`` counts."""
        return _perplexity(self.log_prob, len(self.tokens))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the totals and every ``[token, log_prob]``."""
        return json_safe({"lang": self.lang, "tokens": len(self.tokens), "log_prob": self.log_prob,  # type: ignore[return-value]
                          "perplexity": self.perplexity, "new_words": int(self.new.sum()),
                          "token_log_probs": [[t, float(v)] for t, v in zip(self.tokens, self.log_probs, strict=True)]})


@dataclass(frozen=True)
class LineScore:
    """One input line's score (:meth:`Model.score_lines`): its tokens (``<eos>`` included), their
    summed log-probability, its perplexity and how many of them are new words; a blank line has
    no tokens and ``None`` scores."""

    line: int
    tokens: int
    log_prob: float | None
    perplexity: float | None
    new_words: int

    def to_dict(self) -> dict[str, Any]:
        """The JSON line ``polyglot-groc score`` prints for this line."""
        return json_safe({f.name: getattr(self, f.name) for f in fields(self)})  # type: ignore[return-value]


def _perplexity(log_prob: float, n: int) -> float:
    mean = -log_prob / n
    return math.exp(mean) if mean < 700 else math.inf


@dataclass
class _Table:
    """Cached vectors of one (language, side): ``matrix[index[word]]``."""

    index: dict[str, int]
    matrix: np.ndarray  # (n, d) float32

    def add(self, words: Sequence[str], vectors: np.ndarray) -> None:
        start = self.matrix.shape[0]
        self.index.update((w, start + i) for i, w in enumerate(words))
        self.matrix = np.concatenate([self.matrix, vectors.astype(np.float32, copy=False)])


@dataclass
class _Space:
    """Words to rank and the unit rows of their vectors (zero rows stay zero)."""

    words: list[str]
    index: dict[str, int]
    unit: np.ndarray  # (n, d) float32


def _unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), float32, C-contiguous.  (n, d)"""
    from eval.normalize import safe_row_norms

    return np.ascontiguousarray(x / safe_row_norms(x), dtype=np.float32)


@dataclass
class _Aligned:
    """One language's side of an applied alignment: its aligned vocabulary and how to map any other word."""

    words: list[str]
    index: dict[str, int]
    rows: np.ndarray  # (n, d') the aligned vectors, as align wrote them
    means: list[np.ndarray] | None  # the training means of each ``center`` (None: the chain cannot be replayed)
    w_t: np.ndarray | None  # (d, d') the map, transposed (None: the space is not moved)


@dataclass
class _Alignment:
    langs: tuple[str, str]
    side: str
    lower: bool
    ops: tuple[str, ...]
    method: str
    spaces: dict[str, _Aligned]


class Model:
    """A trained run held in memory: vectors, neighbours and probabilities (see the module's docstring).

    Made by :func:`load` (or from a loaded ``ModelBundle``). ``bundle`` is the model with its
    vocabulary and charset; ``config`` the run's :class:`~polyglot_groc.config.RunConfig`,
    ``languages`` its language codes, ``kind`` its model kind, ``dim`` its embedding size.
    Computed vectors are cached per language and side, so asking again is a lookup.
    """

    def __init__(self, bundle: ModelBundle, *, run: str | os.PathLike[str] | None = None, checkpoint: str = "best",
                 step: int | None = None) -> None:
        self.bundle = bundle
        self.run = None if run is None else Path(run)
        self.checkpoint = checkpoint
        self.step = step
        self._tables: dict[tuple[str, str], _Table] = {}
        self._spaces: dict[tuple[bool, str, str], _Space] = {}
        self._r: dict[tuple[object, ...], np.ndarray] = {}
        self._alignment: _Alignment | None = None
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

    def composes(self, side: str = "input") -> bool:
        """Whether ``side`` embeds any word from its spelling (GroC) rather than from a lookup table."""
        check_side(side)
        model = self.bundle.model
        return bool(model.compositional_input if side == "input" else model.compositional_output)

    def words(self, lang: str) -> list[str]:
        """``lang``'s training vocabulary, most frequent first, without ``<eos>`` and ``<unk>``."""
        return vocabulary_words(self.bundle, lang)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{lang} {len(self.bundle.vocab.lang_ids(lang))}" for lang in self.languages)
        where = f" from {self.run}" if self.run is not None else ""
        return f"<Model {self.kind} d={self.dim} ({sizes} words){where}>"

    # ------------------------------------------------------------------------------- vectors
    def vector(self, word: str, lang: str, side: str = "input") -> np.ndarray:
        """The embedding of ``word`` in ``lang`` on ``side`` (``input`` or ``output``).  -> (d,) float32

        Any word for a compositional side (composed from its characters when the run never saw
        it); a lookup table's words only (:class:`InputError` stating the rule otherwise).
        """
        if not isinstance(word, str):
            raise InputError(f"vector() takes one word (a str), got {type(word).__name__}; for several use vectors()")
        return self.vectors([word], lang, side)[0]

    def vectors(self, words: Sequence[str], lang: str, side: str = "input") -> np.ndarray:
        """Embeddings of ``words`` (in order, repeats allowed) in ``lang`` on ``side``.  -> (n, d) float32

        The words not yet cached are embedded together by
        :func:`~polyglot_groc.analysis.export.embed` (``export``'s function, in its batches), so on
        a fresh model ``vectors(words)`` equals the rows ``export --words`` writes for the same
        list, bit for bit. Raises :class:`InputError` for a language the run lacks, an empty
        word or one with whitespace, a word made only of characters the model never saw, and a
        word outside the vocabulary of a lookup side.
        """
        check_side(side)
        check_language(self.bundle, lang)
        if isinstance(words, str):
            raise InputError("vectors() takes a list of words; for one word use vector(word, lang)")
        words = list(words)
        table = self._tables.get((lang, side))
        if table is None:
            table = self._tables[(lang, side)] = _Table({}, np.zeros((0, self.dim), np.float32))
        todo = [w for w in dict.fromkeys(words) if w not in table.index]
        if todo:
            self._check_embeddable(todo, lang, side)
            got = embed(self.bundle, lang, todo, side=side)
            table.add(got.words, got.vectors)
        rows = np.fromiter((table.index[w] for w in words), dtype=np.int64, count=len(words))
        return table.matrix[rows]  # (n, d) a copy

    def _check_embeddable(self, words: Sequence[str], lang: str, side: str) -> None:
        bad = next((w for w in words if not isinstance(w, str) or w.split() != [w]), None)
        if bad is not None:
            raise InputError(f"word {bad!r} is empty or contains whitespace; ask for one token at a time")
        unseen = [w for w in words if w not in self.bundle.vocab]
        if unseen and not self.composes(side):
            raise InputError(
                f"{len(unseen)} word(s) are outside this {self.kind} run's vocabulary (e.g. "
                f"{', '.join(map(repr, unseen[:5]))}): its {side} side is a lookup table, with a vector for each of "
                f"its {len(self.bundle.vocab)} training words (of all its languages) and none for others; ask for "
                f"words of model.words({lang!r}), or train a compositional run (--model groc) to embed any word")
        blind = unknown_script_words(self.bundle, unseen)
        if blind:
            raise InputError(
                f"{len(blind)} word(s) are made only of characters this model never saw (e.g. "
                f"{', '.join(map(repr, blind[:5]))}): it spells each such character with one unknown-character "
                "symbol, so these words would collapse to a few vectors that differ only by word length; train on "
                "text of that script to embed them")

    def similarity(self, word1: str, word2: str, lang: str, lang2: str | None = None, side: str = "input") -> float:
        """Cosine similarity of ``word1`` (in ``lang``) and ``word2`` (in ``lang2``, default ``lang``),
        in the aligned space when an applied alignment covers the two languages."""
        lang2 = lang if lang2 is None else lang2
        aligned = self._uses_alignment(lang, lang2)
        a = self._space_vectors([word1], lang, side, aligned)[0]
        b = self._space_vectors([word2], lang2, side, aligned)[0]
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        if norm == 0.0:
            raise InputError(f"{word1!r} or {word2!r} has a zero vector; cosine similarity is undefined for it")
        return float(np.dot(a, b) / norm)

    def to_keyed_vectors(self, lang: str, words: Sequence[str] | None = None, side: str = "input") -> KeyedVectors:
        """``lang``'s vectors as a gensim ``KeyedVectors``: its vocabulary (most frequent first) or ``words``."""
        from gensim.models import KeyedVectors

        keys = self.words(lang) if words is None else list(dict.fromkeys(words))
        if not keys:
            raise InputError("no words to put in the KeyedVectors; pass at least one word")
        kv = KeyedVectors(vector_size=self.dim, count=0, dtype=np.float32)
        kv.add_vectors(keys, self.vectors(keys, lang, side))
        return kv

    # ------------------------------------------------------------------------------- alignment
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
        from eval.normalize import normalize_embeddings, parse_normalize

        res = alignment if isinstance(alignment, AlignResult) else read_alignment(alignment)
        src_lang, tgt_lang = src_lang or res.src_lang, tgt_lang or res.tgt_lang
        if src_lang is None or tgt_lang is None:
            raise InputError("the alignment does not record its languages (it was made from vector files); "
                             "pass src_lang= and tgt_lang=")
        side = side or res.side or "input"
        check_side(side)
        for lang in (src_lang, tgt_lang):
            check_language(self.bundle, lang)
        if src_lang == tgt_lang:
            raise InputError(f"the alignment maps {src_lang} onto itself; cross-language neighbours need two languages")
        ops = parse_normalize(res.normalize)
        spaces: dict[str, _Aligned] = {}
        for name, lang, words, rows, w in (("src", src_lang, res.source_words, res.mapped, res.W),
                                           ("tgt", tgt_lang, res.target_words, res.target, res.W_tgt)):
            if not len(words):
                raise InputError("the alignment holds no words; pass the result of a finished align")
            kept, raw = read_side(None, lambda: self.bundle, lang, side, len(words), name, res.lowercased)
            if kept != list(words):
                odd = next(b for a, b in itertools.zip_longest(kept, words) if a != b)
                raise InputError(f"the alignment's {lang} words are not this run's {lang} vocabulary as align reads "
                                 f"it (e.g. {odd!r}); apply an alignment made from this run (polyglot-groc align "
                                 "--run RUN)")
            w_t = None if w is None else np.ascontiguousarray(np.asarray(w, np.float32).T)  # (d, d')
            expected = normalize_embeddings(raw, ops) if ops else raw
            expected = expected if w_t is None else expected @ w_t
            gap = float(np.abs(expected - np.asarray(rows)).max())
            if gap > 1e-4 * max(1.0, float(np.abs(expected).max())):
                raise InputError(f"the alignment's {lang} vectors are not this run's {side} vectors mapped (they "
                                 f"differ by up to {gap:.3g}); apply an alignment made from this run's {side} "
                                 "side, or pass side='input' or 'output'")
            try:
                means: list[np.ndarray] | None = training_means(raw, ops)
            except InputError:  # iternorm: its statistics cannot be replayed row by row
                means = None
            spaces[lang] = _Aligned(list(words), {word: i for i, word in enumerate(words)},
                                    np.ascontiguousarray(rows, dtype=np.float32), means, w_t)
        self._alignment = _Alignment((src_lang, tgt_lang), side, res.lowercased, ops, res.method, spaces)
        self._r = {k: v for k, v in self._r.items() if not k[0]}  # aligned spaces and their r are the new one's
        self._spaces = {k: v for k, v in self._spaces.items() if not k[0]}
        log.info("alignment %s -> %s (%s, %s side) applied", src_lang, tgt_lang, res.method, side)
        return self

    def _uses_alignment(self, lang: str, other: str) -> bool:
        """Whether vectors of ``lang`` compared with ``other``'s come from the applied alignment."""
        al = self._alignment
        if lang == other or al is None:
            return False
        covered = {lang, other} <= set(al.langs)
        if not covered:
            raise InputError(f"the applied alignment maps {al.langs[0]} onto {al.langs[1]}; it does not relate "
                             f"{lang} and {other}: apply an alignment of those two languages")
        return True

    def _aligned_vectors(self, words: Sequence[str], lang: str) -> np.ndarray:
        """Vectors of ``words`` in the aligned space: the aligned rows, else the run's vectors mapped.  (n, d')"""
        al = self._alignment
        assert al is not None
        space = al.spaces[lang]
        keys = [w.lower() for w in words] if al.lower else list(words)
        at = np.fromiter((space.index.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))  # (n,)
        out = np.empty((len(keys), space.rows.shape[1]), np.float32)
        out[at >= 0] = space.rows[at[at >= 0]]
        others = [w for w, i in zip(words, at, strict=True) if i < 0]
        if others:
            if space.means is None:
                raise InputError(f"the alignment's normalisation {','.join(al.ops)} cannot be replayed for words "
                                 f"outside its vocabulary (e.g. {others[0]!r}); align with --normalize made of "
                                 "renorm and center to map any word")
            mapped = normalize_rows(self.vectors(others, lang, al.side), al.ops, space.means)
            out[at < 0] = mapped if space.w_t is None else mapped @ space.w_t
        return out

    def _check_aligned_side(self, side: str) -> None:
        assert self._alignment is not None
        if side != self._alignment.side:
            raise InputError(f"the applied alignment aligns the {self._alignment.side} side; ask for "
                             f"side={self._alignment.side!r} across its languages")

    def _space_vectors(self, words: Sequence[str], lang: str, side: str, aligned: bool) -> np.ndarray:
        if aligned:
            self._check_aligned_side(side)
            return self._aligned_vectors(words, lang)
        return self.vectors(words, lang, side)

    def _vocabulary_space(self, lang: str, side: str, aligned: bool) -> _Space:
        """``lang``'s vocabulary with unit rows of its vectors (the aligned ones when ``aligned``), cached."""
        key = (aligned, lang, side)
        space = self._spaces.get(key)
        if space is None:
            if aligned:
                self._check_aligned_side(side)
                assert self._alignment is not None
                al = self._alignment.spaces[lang]
                words, index, vectors = al.words, al.index, al.rows
            else:
                words = self.words(lang)
                index, vectors = {w: i for i, w in enumerate(words)}, self.vectors(words, lang, side)
            space = self._spaces[key] = _Space(words, index, _unit(vectors))
        return space

    def _neighbourhood(self, unit: np.ndarray, key: tuple[object, ...] | None, lang: str, side: str, aligned: bool,
                       knn: int) -> np.ndarray:
        """CSLS's ``r``: each unit row's mean cosine to its ``knn`` nearest words of ``lang``'s vocabulary
        (MUSE's ``get_nn_avg_dist``), cached under ``key`` (None: not cached).  (n,)"""
        from eval.knn import mean_knn_similarity

        full = None if key is None else (aligned, *key, lang, side, knn)
        if full is not None and full in self._r:
            return self._r[full]
        r = mean_knn_similarity(unit, self._vocabulary_space(lang, side, aligned).unit, knn, assume_normalized=True)
        if full is not None:
            self._r[full] = r
        return r

    # ------------------------------------------------------------------------------- neighbours
    def most_similar(self, query: str | np.ndarray, lang: str, topn: int = 10, *,
                     among: str | Sequence[str] = "vocab", among_lang: str | None = None, method: str = "cosine",
                     side: str = "input", knn: int = 10) -> list[tuple[str, float]]:
        """The ``topn`` nearest words of ``query`` (a word of ``lang``, or a vector of ``lang``'s space), best first.

        ``among``: ``"vocab"`` (``lang``'s vocabulary), another language's code (its vocabulary:
        cross-language neighbours, in a polyglot run's shared space or in an applied alignment's,
        which then holds the aligned vocabulary), or a list of words (in ``among_lang``, default
        ``lang``; composed where unseen). ``method``: ``cosine``, or ``csls`` (Conneau et al.
        2018: ``2 cos(x, y) - r(x) - r(y)``, each ``r`` the mean cosine to the ``knn`` nearest words of
        the other language's vocabulary), ranked exactly by :mod:`eval.knn`. A query word is not its
        own neighbour within one language. Returns ``[(word, score), ...]`` as gensim does.
        """
        from eval.knn import csls_topk, nn_topk

        check_side(side)
        check_language(self.bundle, lang)
        if method not in METHODS:
            raise InputError(f"method {method!r} is unknown; use cosine or csls")
        for name, value in (("topn", topn), ("knn", knn)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"{name}={value!r}; pass a positive number of neighbours")
        if isinstance(among, str):
            if among != "vocab" and among not in self.languages:
                raise InputError(f"among={among!r} is neither 'vocab' nor a language of this run "
                                 f"({', '.join(self.languages)}); pass a list of words to rank those")
            other = lang if among == "vocab" else among
        else:
            other = lang if among_lang is None else among_lang
            check_language(self.bundle, other)
        aligned = self._uses_alignment(lang, other)
        key: tuple[object, ...] | None = None
        if isinstance(among, str):
            cands, key = self._vocabulary_space(other, side, aligned), ("vocab", other)
        else:
            words = list(dict.fromkeys(among))
            if not words:
                raise InputError("among is an empty list; pass the words to rank")
            cands = _Space(words, {w: i for i, w in enumerate(words)},
                           _unit(self._space_vectors(words, other, side, aligned)))
        q = self._query(query, lang, side, aligned)  # (d,) unit
        own = isinstance(query, str) and other == lang and query in cands.index  # not its own neighbour
        k = min(topn + int(own), len(cands.words))
        if method == "cosine":
            ids, scores = nn_topk(q[None], cands.unit, k, assume_normalized=True)
        else:
            r_q = self._neighbourhood(q[None], None, other, side, aligned, knn)
            r_c = self._neighbourhood(cands.unit, key, lang, side, aligned, knn)
            ids, scores = csls_topk(q[None], cands.unit, k, knn, r_src=r_q, r_tgt=r_c, assume_normalized=True)
        found = [(cands.words[i], float(v)) for i, v in zip(ids[0].tolist(), scores[0].tolist(), strict=True)]
        return [(w, v) for w, v in found if not (own and w == query)][:topn]

    def _query(self, query: str | np.ndarray, lang: str, side: str, aligned: bool) -> np.ndarray:
        """The query's unit vector in the searched space.  (d,)"""
        if isinstance(query, str):
            q = self._space_vectors([query], lang, side, aligned)[0]
        else:
            q = np.asarray(query, dtype=np.float32).reshape(-1)
            if q.shape[0] != self.dim or not np.isfinite(q).all():
                raise InputError(f"the query vector has shape {np.shape(query)}; pass a finite ({self.dim},) vector "
                                 "or a word")
            if aligned:  # a vector of lang's space, mapped as lang's words are
                assert self._alignment is not None
                space = self._alignment.spaces[lang]
                if space.means is None:
                    raise InputError("the alignment's normalisation cannot be replayed for a vector; query a word")
                q = normalize_rows(q[None], self._alignment.ops, space.means)[0]
                q = q if space.w_t is None else q @ space.w_t
        if not np.any(q):
            raise InputError(f"the query {query if isinstance(query, str) else 'vector'!r} has a zero vector; "
                             "cosine neighbours are undefined for it")
        return _unit(q[None])[0]

    # ------------------------------------------------------------------------------- probabilities
    def _tokens(self, text: str, lang: str) -> list[list[str]]:
        from langpairs.tokenize import make_tokenizer

        if not isinstance(text, str):
            raise InputError(f"text must be a str (lines are sentences), got {type(text).__name__}")
        mode = self.config.data.tokenize
        return text_sentences(text, None if mode == "whitespace" else make_tokenizer(lang, mode))

    def _check_scorable(self, tokens: Sequence[str], lang: str, uniform_weight: float | None) -> None:
        """A lookup kind gives words outside ``lang``'s vocabulary probability 0: refused unless
        ``uniform_weight`` interpolates, as ``evaluate``'s open-vocabulary setting does."""
        from polyglot_groc.analysis.caches import check_cache_params

        if uniform_weight is not None:
            check_cache_params(uniform_weight=uniform_weight)
        if self.bundle.model.compositional_output:
            new = unknown_script_words(self.bundle, [w for w in dict.fromkeys(tokens) if w not in self.bundle.vocab])
            if new:
                log.warning("%d words of the text are made only of characters this model never saw (e.g. %s); "
                            "their probabilities are those of any word of their length", len(new), ", ".join(new[:5]))
            return
        if uniform_weight is not None:
            return
        vocab = self.bundle.vocab
        members = vocab.membership[:, self.languages.index(lang)]
        outside = [w for w in dict.fromkeys(tokens) if vocab.get(w) < 0 or not members[vocab.id(w)]]
        unread = [w for w in outside if w not in vocab]
        if unread and "<unk>" not in vocab:
            raise InputError(
                f"{len(unread)} word(s) of the text are outside this {self.kind} run's vocabulary (e.g. "
                f"{', '.join(map(repr, unread[:5]))}), and its lookup tables have no <unk> to read them with (it was "
                "trained with a closed vocabulary): score text made of its words (model.words(lang)), or train "
                "with --vocab-mode open or a compositional kind (--model groc)")
        if outside:
            raise InputError(
                f"{len(outside)} word(s) of the text are outside this {self.kind} run's {lang} vocabulary (e.g. "
                f"{', '.join(map(repr, outside[:5]))}): a lookup output table gives them probability 0; "
                "evaluate's open-vocabulary rule mixes in the uniform distribution over the vocabulary and the "
                "text's words: pass uniform_weight (e.g. 0.01; evaluate --data tunes it on valid)")

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
        from polyglot_groc.analysis.crossdomain import CacheSettings, model_logprob, score_tokens

        check_language(self.bundle, lang)
        tokens = [t for sentence in self._tokens(text, lang) for t in sentence]
        if not tokens:
            raise InputError("the text is empty; give at least one word")
        if start is not None:
            if not isinstance(start, str) or start.split() != [start]:
                raise InputError(f"start={start!r} must be one token (e.g. '<eos>') or None")
            tokens = [start, *tokens]
        elif len(tokens) < 2:
            raise InputError("with start=None the first token is context only: give at least two tokens")
        n_streams = self.config.train.eval_batch_size if streams is None else streams
        if isinstance(n_streams, bool) or not isinstance(n_streams, int) or n_streams < 1:
            raise InputError(f"streams={streams!r}; pass a positive number of pieces")
        self._check_scorable(tokens[1:], lang, uniform_weight)
        scores = score_tokens(self.bundle, tokens, lang, self.config.train.bptt, pieces=text_pieces(tokens, n_streams),
                              keep_hidden=False)
        logp = model_logprob(scores, CacheSettings(uniform_weight=uniform_weight or 0.0)).numpy()
        assert scores.position is not None
        self._check_finite(logp, [tokens[i] for i in scores.position[~np.isfinite(logp)][:5]])
        return TextScores(lang, [tokens[i] for i in scores.position], logp, scores.is_new.numpy())

    def _check_finite(self, logp: np.ndarray, zero: list[str]) -> None:
        if zero:
            raise InputError(f"this {self.kind} model gives probability 0 to {', '.join(map(repr, zero))}; pass "
                             "uniform_weight to mix in the uniform distribution, as evaluate does")

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
        from polyglot_groc.analysis.crossdomain import CacheSettings, model_logprob, score_tokens

        check_language(self.bundle, lang)
        if isinstance(lines, str):
            raise InputError("score_lines() takes a list of lines; for one text use log_prob(text, lang)")
        per_line = [[t for s in self._tokens(line, lang) for t in s] for line in lines]
        if not any(per_line):
            raise InputError("the input is empty; give at least one line with a word")
        lengths = np.array([len(t) for t in per_line], dtype=np.int64)  # (n_lines,)
        tokens = [EOS, *(t for line in per_line for t in line)]
        ends = np.cumsum(lengths) + 1  # one past each line's last token in ``tokens``
        kept = np.flatnonzero(lengths > 0)
        pieces = np.stack([ends[kept] - lengths[kept] - 1, ends[kept]], axis=1)  # (n_kept, 2): <eos> before each line
        self._check_scorable(tokens[1:], lang, uniform_weight)
        scores = score_tokens(self.bundle, tokens, lang, self.config.train.bptt, pieces=pieces,
                              rows_per_batch=LINES_PER_BATCH, keep_hidden=False)
        logp = model_logprob(scores, CacheSettings(uniform_weight=uniform_weight or 0.0)).numpy()
        assert scores.position is not None
        self._check_finite(logp, [tokens[i] for i in scores.position[~np.isfinite(logp)][:5]])
        stream = scores.stream.numpy()
        sums = np.bincount(stream, weights=logp, minlength=len(kept))  # (n_kept,)
        new = np.bincount(stream, weights=scores.is_new.numpy(), minlength=len(kept)).astype(np.int64)
        out = [LineScore(i + 1, 0, None, None, 0) for i in range(len(per_line))]
        for j, i in enumerate(kept.tolist()):
            out[i] = LineScore(i + 1, int(lengths[i]), float(sums[j]), _perplexity(float(sums[j]), int(lengths[i])),
                               int(new[j]))
        return out


def text_pieces(tokens: Sequence[str], n_streams: int) -> np.ndarray:
    """``[start, end)`` pieces of ``tokens`` for :func:`~polyglot_groc.analysis.crossdomain.score_tokens`:
    at most ``n_streams`` of about equal length, each but the first starting at an ``<eos>`` (read as its
    context), so every token after the first is scored exactly once.  # (P, 2) int64"""
    n = len(tokens)
    if n_streams <= 1 or n < 4:
        return np.array([[0, n]], dtype=np.int64)
    cuts = np.flatnonzero(np.asarray(tokens, dtype=object) == EOS)  # positions a piece may start reading at
    cuts = cuts[(cuts > 0) & (cuts < n - 1)]
    want = np.arange(1, n_streams) * (n - 1) / n_streams  # (n_streams - 1,) ideal starts
    at = np.searchsorted(cuts, want)
    starts = np.unique(cuts[at[at < len(cuts)]])
    bounds = np.concatenate([[0], starts, [n - 1]]).astype(np.int64)
    return np.stack([bounds[:-1], bounds[1:] + 1], axis=1)


def load(run: str | os.PathLike[str], *, which: str = "best", device: str = "auto",
         threads: int | None = None) -> Model:
    """Load a run once into a :class:`Model` (``which``: its ``best`` or ``last`` checkpoint; ``device``:
    ``auto``, ``cpu``, ``cuda`` or ``cuda:N``; ``threads``: CPU threads for torch).

    Raises:
        CheckpointError: no such run or checkpoint, or a damaged one. ConfigError: a device that is not there.
    """
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.model.device import use_threads

    use_threads(threads)
    bundle, payload = load_bundle(Path(run), which, device)
    step = payload.get("step")
    return Model(bundle, run=run, checkpoint=which, step=int(step) if step is not None else None)


# ----------------------------------------------------------------------------------- workflows


@dataclass(frozen=True)
class NeighboursResult:
    """What :func:`neighbours` found: the query, where it searched, and the neighbours best first.

    ``composed`` says whether the query word is outside its language's vocabulary (embedded from
    its spelling); ``aligned`` whether an alignment's space was searched.
    """

    run: str
    word: str
    lang: str
    among: str
    method: str
    side: str
    composed: bool
    aligned: bool
    neighbours: list[tuple[str, float]]

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc neighbours`` prints."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["neighbours"] = [{"word": w, "score": s} for w, s in self.neighbours]
        return json_safe(out)  # type: ignore[return-value]


def neighbours(
    *,
    run: str | os.PathLike[str],
    word: str,
    lang: str,
    among: str | None = None,
    topn: int = 10,
    method: str = "cosine",
    side: str = "input",
    alignment: str | os.PathLike[str] | AlignResult | None = None,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> NeighboursResult:
    """The nearest words of ``word`` (in ``lang``) among a language's vocabulary, from a run.

    Any word, composed from its spelling where the run never saw it (a compositional side).
    ``among`` is the language searched (default ``lang``); another language of a polyglot run is
    searched in the run's shared space, or in an ``align`` result's when ``alignment`` (its
    directory or the result) is given. :meth:`Model.most_similar` does the work.

    Args:
        run: run directory.
        word: the query word.
        lang: its language.
        among: the language whose vocabulary is searched (default: ``lang``).
        topn: how many neighbours.
        method: ``cosine`` or ``csls``.
        side: ``input`` or ``output`` embeddings.
        alignment: an ``align --out`` directory or :class:`AlignResult` relating ``lang`` and ``among``.
        checkpoint: ``best`` or ``last``.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        threads: CPU threads for torch (None or 0: torch's default).

    Returns:
        A :class:`NeighboursResult`; its ``to_dict()`` is the JSON ``polyglot-groc neighbours`` prints.

    Raises:
        InputError: a language the run lacks, a word it cannot embed, a bad ``method`` or ``topn``,
            an alignment of other languages or of another run; CheckpointError: no such run.
    """
    if method not in METHODS:
        raise InputError(f"--method {method!r} is unknown; use cosine or csls")
    check_side(side)
    if isinstance(alignment, (str, os.PathLike)):
        alignment = read_alignment(alignment)  # before the run is loaded: a bad directory fails fast
    model = load(run, which=checkpoint, device=device, threads=threads)
    if alignment is not None:
        model.apply_alignment(alignment)
    other = among or lang
    found = model.most_similar(word, lang, topn, among=other, method=method, side=side)
    return NeighboursResult(run=str(run), word=word, lang=lang, among=other, method=method, side=side,
                            composed=word not in model.bundle.vocab, aligned=model._uses_alignment(lang, other),
                            neighbours=found)


@dataclass(frozen=True)
class ScoreResult:
    """What :func:`score` measured: one :class:`LineScore` per input line, and the totals."""

    run: str
    lang: str
    model: str
    lines: list[LineScore]

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.lines)

    @property
    def log_prob(self) -> float:
        return float(sum(s.log_prob for s in self.lines if s.log_prob is not None))

    @property
    def perplexity(self) -> float:
        return _perplexity(self.log_prob, self.tokens)

    def to_dict(self) -> dict[str, Any]:
        """The totals and every line's record (``polyglot-groc score`` prints the lines as JSON lines)."""
        return json_safe({"run": self.run, "lang": self.lang, "model": self.model,  # type: ignore[return-value]
                          "tokens": self.tokens, "log_prob": self.log_prob, "perplexity": self.perplexity,
                          "lines": [s.to_dict() for s in self.lines]})


def score(
    *,
    run: str | os.PathLike[str],
    lang: str,
    input: str | os.PathLike[str] | Sequence[str],
    uniform_weight: float | None = None,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> ScoreResult:
    """Log-probability and perplexity of every line of a text under a run (:meth:`Model.score_lines`).

    Each line is a sentence of its own, read from a sentence start; its words and its closing
    ``<eos>`` are scored through the model's own scorer, over the training vocabulary and the new
    words of the whole input, as ``evaluate`` scores a file (composed by GroC; a lookup output
    needs ``uniform_weight``, as ``evaluate``'s open-vocabulary setting mixes in the uniform
    distribution).

    Args:
        run: run directory.
        lang: the language of the text.
        input: a UTF-8 text file (one sentence a line) or the lines themselves.
        uniform_weight: lookup outputs: the uniform distribution's weight in [0, 1) for new words.
        checkpoint: ``best`` or ``last``.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        threads: CPU threads for torch (None or 0: torch's default).

    Returns:
        A :class:`ScoreResult`; ``polyglot-groc score`` prints each line's ``to_dict()`` as a JSON line.

    Raises:
        InputError: a missing, non-UTF-8 or empty input, a language the run lacks, new words for a
            lookup output without ``uniform_weight``; CheckpointError: no such run.
    """
    from groc_base.checks import check_input_file
    from groc_base.fileio import read_bytes
    from langpairs.corpus import decode_utf8
    from polyglot_groc.analysis.caches import check_cache_params

    if uniform_weight is not None:
        check_cache_params(uniform_weight=uniform_weight)
    if isinstance(input, (str, os.PathLike)):
        check_input_file(input, flag="--input")
        lines = decode_utf8(read_bytes(Path(input), "text", InputError), Path(input), InputError).splitlines()
    else:
        lines = list(input)
    if not any(line.strip() for line in lines):
        raise InputError("the input is empty; give at least one line with a word")
    model = load(run, which=checkpoint, device=device, threads=threads)
    return ScoreResult(run=str(run), lang=lang, model=model.kind,
                       lines=model.score_lines(lines, lang, uniform_weight=uniform_weight))
