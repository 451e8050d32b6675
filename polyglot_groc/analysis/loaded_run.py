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
* ``to_keyed_vectors``: a gensim ``KeyedVectors``, so gensim's whole toolbox applies.

The class is the one place a user meets a loaded run; each job it offers lives in its own module,
and the class keeps only what every job shares: the bundle and the cache of computed vectors. Bad
input (a language the run lacks, a word made only of characters the model never saw, a lookup
table asked for a word outside its vocabulary, empty text) is a one-line
:class:`~groc_base.errors.InputError`; no word ever gets a made-up (zero) vector.

Not :class:`~polyglot_groc.model.lm.LanguageModel` (the torch module) nor
:class:`~polyglot_groc.model.bundle.ModelBundle` (that module with its vocabulary and charset, which
a :class:`Model` holds as ``bundle``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
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
from polyglot_groc.analysis.neighbour_search import NeighbourSearch
from polyglot_groc.analysis.text_scoring import LineScore, TextScores
from polyglot_groc.config import RunConfig
from polyglot_groc.model.bundle import ModelBundle

if TYPE_CHECKING:
    from gensim.models import KeyedVectors

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
    ``languages`` its language codes, ``kind`` its model kind, ``dim`` its embedding size.
    Computed vectors are cached per language and side, so asking again is a lookup.
    """

    def __init__(self, bundle: ModelBundle, *, run: str | os.PathLike[str] | None = None, checkpoint: str = "best",
                 step: int | None = None) -> None:
        self.bundle = bundle
        self.run = None if run is None else Path(run)
        self.checkpoint = checkpoint
        self.step = step
        self._tables: dict[tuple[str, str], _VectorTable] = {}  # (lang, side)
        self._search = NeighbourSearch(bundle, self.vectors)
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
    def alignment(self) -> AppliedAlignment | None:
        """The alignment :meth:`apply_alignment` applied (None: none)."""
        return self._search.alignment

    def composes(self, side: str = "input") -> bool:
        """Whether ``side`` embeds any word from its spelling (GroC) rather than from a lookup table."""
        check_side(side)
        model = self.bundle.model
        return bool(model.compositional_input if side == "input" else model.compositional_output)

    def words(self, lang: str) -> list[str]:
        """``lang``'s training vocabulary, most frequent first, without ``<eos>`` and ``<unk>``."""
        return vocabulary_words(self.bundle, lang)

    def __repr__(self) -> str:
        # The words words() lists: <eos> and <unk> are not words of the vocabulary a user looks up.
        sizes = ", ".join(f"{lang} {counted(len(self.words(lang)), 'word')}" for lang in self.languages)
        where = f" from {self.run}" if self.run is not None else ""
        return f"<Model {self.kind} d={self.dim} ({sizes}){where}>"

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
            table = self._tables[(lang, side)] = _VectorTable({}, np.zeros((0, self.dim), np.float32))
        todo = [w for w in dict.fromkeys(words) if w not in table.index]
        if todo:
            self._check_embeddable(todo, lang, side)
            got = embed(self.bundle, lang, todo, side=side)
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

    def to_keyed_vectors(self, lang: str, words: Sequence[str] | None = None, side: str = "input") -> KeyedVectors:
        """``lang``'s vectors as a gensim ``KeyedVectors``: its vocabulary (most frequent first) or ``words``."""
        from gensim.models import KeyedVectors

        keys = self.words(lang) if words is None else list(dict.fromkeys(words))
        if not keys:
            raise InputError("no words to put in the KeyedVectors; pass at least one word")
        kv = KeyedVectors(vector_size=self.dim, count=0, dtype=np.float32)
        kv.add_vectors(keys, self.vectors(keys, lang, side))
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

    def similarity(self, word1: str, word2: str, lang: str, lang2: str | None = None, side: str = "input") -> float:
        """Cosine similarity of ``word1`` (in ``lang``) and ``word2`` (in ``lang2``, default ``lang``),
        in the aligned space when an applied alignment covers the two languages."""
        return self._search.similarity(word1, word2, lang, lang if lang2 is None else lang2, side)

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
        return self._search.most_similar(query, lang, topn, among=among, among_lang=among_lang, method=method,
                                         side=side, knn=knn)

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
