"""An ``align`` result replayed on the run it was made from: its two aligned vocabularies, and a map
for any other word.

Neighbours across an alignment should be those of the aligned export, and any other word (composed
where the run never saw it) should land where ``align`` would have put it. So the two aligned
vocabularies keep the exact rows ``align`` wrote (``src.aligned.vec``, ``tgt.vec``), and any other
word of the run is mapped as MUSE's export maps words: the normalisation chain with the aligned
vocabulary's statistics (its training means), then the map ``W``. :func:`replay_alignment` checks
that the run's own vectors reproduce the aligned rows, so an alignment of another run or side is
refused rather than silently mixed. :mod:`~polyglot_groc.analysis.neighbour_search` searches in
the space an :class:`AppliedAlignment` describes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from groc_base.errors import InputError
from polyglot_groc.analysis.alignment import AlignResult, normalize_rows, read_side, training_means
from polyglot_groc.analysis.export import check_language, check_side
from polyglot_groc.model.bundle import ModelBundle

__all__ = ["AlignedLanguage", "AppliedAlignment", "replay_alignment"]


@dataclass(frozen=True)
class AlignedLanguage:
    """One language's side of an applied alignment: its aligned vocabulary and how to map any other word."""

    words: list[str]
    index: dict[str, int]  # word -> its row
    rows: np.ndarray  # (n, d') float32, the aligned vectors as align wrote them
    means: list[np.ndarray] | None  # each ``center``'s training mean (None: the chain cannot be replayed)
    w_t: np.ndarray | None  # (d, d') the map, transposed (None: this space is not moved)


@dataclass(frozen=True)
class AppliedAlignment:
    """An alignment of two languages of a run, ready to place any word of either in the aligned space."""

    langs: tuple[str, str]  # (source, target)
    side: str
    lower: bool  # align lowercased the words: look them up lowercased
    ops: tuple[str, ...]  # the normalisation chain align applied
    method: str
    spaces: dict[str, AlignedLanguage]

    def relates(self, lang: str, other: str) -> bool:
        """Whether ``lang``'s words compared with ``other``'s go through this alignment: never within
        one language; across languages only these two (another pair is an error, not the shared space,
        so that a user who applied an alignment never gets unaligned neighbours by mistake)."""
        if lang == other:
            return False
        if not {lang, other} <= set(self.langs):
            raise InputError(f"the applied alignment maps {self.langs[0]} onto {self.langs[1]}; it does not relate "
                             f"{lang} and {other}: apply an alignment of those two languages")
        return True

    def check_side(self, side: str) -> None:
        """The alignment holds one side's vectors; asking for the other across its languages is an error."""
        if side != self.side:
            raise InputError(f"the applied alignment aligns the {self.side} side; ask for "
                             f"side={self.side!r} across its languages")

    def map_rows(self, raw: np.ndarray, lang: str, what: str) -> np.ndarray:
        """Rows of ``lang``'s run space moved as align moved its vocabulary: the chain with the training
        means, then the map. ``what`` names the rows in the error (iternorm cannot be replayed row by
        row).  (k, d) -> (k, d')"""
        space = self.spaces[lang]
        if space.means is None:
            raise InputError(f"the alignment's normalisation {','.join(self.ops)} cannot be replayed for {what}; "
                             "align with --normalize made of renorm and center to map any word")
        mapped = normalize_rows(raw, self.ops, space.means)
        return mapped if space.w_t is None else mapped @ space.w_t

    def vectors(self, words: Sequence[str], lang: str, embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """``words`` of ``lang`` in the aligned space: their aligned rows where they have one, else their
        run vectors (``embed``, on this alignment's side) mapped.  (n, d') float32"""
        space = self.spaces[lang]
        keys = [w.lower() for w in words] if self.lower else list(words)
        at = np.fromiter((space.index.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))  # (n,) -1: none
        out = np.empty((len(keys), space.rows.shape[1]), np.float32)
        found = at >= 0
        out[found] = space.rows[at[found]]
        others = [w for w, i in zip(words, at, strict=True) if i < 0]
        if others:
            out[~found] = self.map_rows(embed(others), lang, f"words outside its vocabulary (e.g. {others[0]!r})")
        return out


def replay_alignment(res: AlignResult, bundle: ModelBundle, *, src_lang: str | None = None,
                     tgt_lang: str | None = None, side: str | None = None) -> AppliedAlignment:
    """``res`` checked against the run in ``bundle`` and made ready to map its words (the module's docstring).

    The languages and side default to those ``res`` records (an alignment made with ``--run``).

    Raises:
        InputError: ``res`` names no languages and none are given, a language the run lacks, one
            language twice, or ``res`` was not made from this run's ``side`` vectors.
    """
    from eval.normalize import parse_normalize

    src_lang, tgt_lang = src_lang or res.src_lang, tgt_lang or res.tgt_lang
    if src_lang is None or tgt_lang is None:
        raise InputError("the alignment does not record its languages (it was made from vector files); "
                         "pass src_lang= and tgt_lang=")
    side = side or res.side or "input"
    check_side(side)
    for lang in (src_lang, tgt_lang):
        check_language(bundle, lang)
    if src_lang == tgt_lang:
        raise InputError(f"the alignment maps {src_lang} onto itself; cross-language neighbours need two languages")
    ops = parse_normalize(res.normalize)
    replay = _Replay(bundle, side, ops, res.lowercased)
    spaces = {src_lang: replay.language("src", src_lang, res.source_words, res.mapped, res.W),
              tgt_lang: replay.language("tgt", tgt_lang, res.target_words, res.target, res.W_tgt)}
    return AppliedAlignment((src_lang, tgt_lang), side, res.lowercased, ops, res.method, spaces)


@dataclass(frozen=True)
class _Replay:
    """What both languages of one replay share: the run, the side, the chain and the case rule."""

    bundle: ModelBundle
    side: str
    ops: tuple[str, ...]
    lower: bool

    def language(self, name: str, lang: str, words: Sequence[str], rows: np.ndarray,
                 w: np.ndarray | None) -> AlignedLanguage:
        """One side of the result (``name``: ``src`` or ``tgt``; ``rows`` (n, d') as align wrote them,
        ``w`` (d', d) its map or None), checked to be this run's ``lang`` vocabulary moved by ``w``."""
        if not len(words):
            raise InputError("the alignment holds no words; pass the result of a finished align")
        kept, raw = read_side(None, lambda: self.bundle, lang, self.side, len(words), name, self.lower)  # raw (n, d)
        if kept != list(words):
            odd = next(b for a, b in itertools.zip_longest(kept, words) if a != b)
            raise InputError(f"the alignment's {lang} words are not this run's {lang} vocabulary as align reads "
                             f"it (e.g. {odd!r}); apply an alignment made from this run (polyglot-groc align "
                             "--run RUN)")
        w_t = None if w is None else np.ascontiguousarray(np.asarray(w, np.float32).T)  # (d, d')
        self._check_reproduced(raw, np.asarray(rows), w_t, lang)
        try:
            means: list[np.ndarray] | None = training_means(raw, self.ops)
        except InputError:  # iternorm: its statistics cannot be replayed row by row
            means = None
        return AlignedLanguage(list(words), {word: i for i, word in enumerate(words)},
                               np.ascontiguousarray(rows, dtype=np.float32), means, w_t)

    def _check_reproduced(self, raw: np.ndarray, rows: np.ndarray, w_t: np.ndarray | None, lang: str) -> None:
        """The run's vectors ``raw`` (n, d), normalised and mapped, must give the aligned ``rows`` (n, d'):
        otherwise the alignment was made from other vectors, and mapping this run's words by it would
        put them somewhere else than its vocabulary."""
        from eval.normalize import normalize_embeddings

        expected = normalize_embeddings(raw, self.ops) if self.ops else raw
        expected = expected if w_t is None else expected @ w_t
        gap = float(np.abs(expected - rows).max())
        if gap > 1e-4 * max(1.0, float(np.abs(expected).max())):
            raise InputError(f"the alignment's {lang} vectors are not this run's {self.side} vectors mapped (they "
                             f"differ by up to {gap:.3g}); apply an alignment made from this run's {self.side} "
                             "side, or pass side='input' or 'output'")
