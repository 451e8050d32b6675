"""Open-vocabulary evaluation on another corpus, with caches (seed 000 §5, "Vocabulary setting").

Text of another domain is scored over the union of the training vocabulary and the test
words. Compositional (GroC) models embed the new words (``groc-lex`` with their lexicon forms,
via :meth:`ModelBundle.with_new_words`); lookup models give them probability 0 and are
interpolated with the uniform distribution over the union. Caches are then mixed in
(:mod:`polyglot_groc.analysis.caches`). The model runs once per text; every setting after that
is arithmetic on per-token vectors, which is what makes the θ/λ grid search cheap.

A setting is applied in one order, with or without a cache: the model's probabilities (lookup
models interpolated with the uniform distribution; GroC's new words times ``new_word_weight``,
renormalised), then the cache mixed in. The new-word weight defaults to 1, so turning a cache
on never changes how new words are scored. The seed's 0.1 (§5, chosen with its caches on wiki)
made every cache worse than none on the crossdomain-en benchmark (benchmarks/results/2026-11-23/
crossdomain.md: far-wiki 1108 -> 1485), while the same caches with a weight of 1 helped (1043).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Container, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from groc_base.checks import either_face, option, setting
from groc_base.errors import CorpusError, InputError
from langpairs.batching import batchify
from polyglot_groc.analysis.caches import (
    check_cache_params,
    downweight_new,
    interpolate_cache,
    neural_cache_logprob,
    uniform_interpolate,
    unigram_cache_logprob,
)
from polyglot_groc.analysis.token_ids import TokenIds
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.training.data import load_corpus

log = logging.getLogger(__name__)

__all__ = ["CacheSettings", "TokenScores", "apply_settings", "cache_logprob", "check_coverage", "check_settings",
           "evaluate_open", "load_other_split", "mix_cache", "model_logprob", "perplexity", "score_tokens",
           "LOGITS_BUDGET", "SegmentScores", "score_segments",
           "stream_pieces",
           "summarize", "tune_uniform_weight"]

UNIFORM_GRID = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class CacheSettings:
    cache: str = "none"  # none | unigram | neural
    theta: float = 0.5
    lam: float = 0.966  # weight of the model (seed convention)
    size: int = 10_000
    #: GroC only: new words' probabilities times this weight, renormalised, before any cache (the
    #: seed used 0.1 with its caches). 1 = as the model scores them, cache or not.
    new_word_weight: float = 1.0
    uniform_weight: float = 0.01  # lookup models only

    def validate(self) -> CacheSettings:
        if self.cache not in ("none", "unigram", "neural"):
            raise InputError(f"{option('cache', self.cache)} is unknown; use none, unigram or neural")
        check_cache_params(self.theta, self.lam, self.size, self.new_word_weight, self.uniform_weight)
        return self

    def plain(self) -> CacheSettings:
        """The same model with neither a cache nor down-weighting: what every setting is compared with."""
        return dataclasses.replace(self, cache="none", new_word_weight=1.0)

    def adjusts(self, compositional: bool) -> bool:
        """Whether these settings change a model's scores beyond :meth:`plain`."""
        return self.cache != "none" or (compositional and self.new_word_weight < 1.0)


@dataclass
class TokenScores:
    """Per-token scores of one text, flattened stream by stream in reading order."""
    logp: torch.Tensor  # (N,) float64, log p_model(y_t) over the union (-inf for new words of lookup models)
    new_mass: torch.Tensor  # (N,) float64, model probability on new words
    is_new: torch.Tensor  # (N,) bool, y_t outside the training vocabulary of the language
    targets: torch.Tensor  # (N,) long, ids in the union (new words numbered after the training vocabulary)
    hidden: torch.Tensor  # (N, d) float32 ((0, d) when not kept)
    stream: torch.Tensor  # (N,) long, which contiguous stream each token belongs to
    train_freq: np.ndarray  # (N,) training count of y_t (0 for new words)
    union_size: int
    compositional: bool
    #: (N,) int64: the index in the scored token list of each target (None: not recorded).
    position: np.ndarray | None = None
    #: (N,) int64: each target's own union size where pieces are scored over their own words only
    #: (a lookup model's uniform share; None: ``union_size`` for every target).
    union_sizes: torch.Tensor | None = None


def load_other_split(bundle: ModelBundle, data: Path, split: str) -> dict[str, list[str]]:
    """Tokens of ``split`` for each language of the run that ``data`` has; a foreign language is an error."""
    cfg = bundle.cfg
    langs = [p.name for p in sorted(Path(data).iterdir()) if p.is_dir()] if Path(data).is_dir() else []
    if not langs:
        raise InputError(f"{data} has no <lang>/{split}.txt folders; point {option('data')} at a prepared corpus "
                         "directory")
    unknown = [lang for lang in langs if lang not in bundle.vocab.langs]
    if unknown and not [lang for lang in langs if lang in bundle.vocab.langs]:
        raise InputError(f"{data} holds languages {', '.join(unknown)} that the run does not know "
                         f"(it knows {', '.join(bundle.vocab.langs)}); use data in one of those languages")
    langs = [lang for lang in langs if lang in bundle.vocab.langs]
    data_cfg = dataclasses.replace(cfg.data, root=str(data), langs=tuple(langs))
    corpus = load_corpus(data_cfg, (split,), cfg.languages)
    return {lang: list(corpus.splits[lang][split]) for lang in corpus.langs}


def stream_pieces(n_tokens: int, n_streams: int) -> np.ndarray:
    """:func:`~langpairs.batching.batchify`'s layout as pieces: ``n_streams`` equal contiguous
    ``[start, end)`` ranges, the tail that does not divide evenly dropped.  # (n_streams, 2) int64"""
    length = n_tokens // n_streams
    if length < 2:  # the same refusal as batchify's
        batchify(np.zeros(n_tokens, dtype=np.int64), n_streams)
    starts = np.arange(n_streams, dtype=np.int64) * length
    return np.stack([starts, starts + length], axis=1)


#: The most logits one forward pass of the scorer holds: rows x window x scored words (float32, 4 MiB).
#: A window is cut shorter where rows x vocabulary would pass it, so a pass needs the same memory
#: whatever the length of the text and of its lines (the LSTM state is carried across windows:
#: the scores are those of reading each piece whole). Larger tables were slower, not faster: the
#: log-softmax and its reads leave the cache (a 512 x 10k window ran 5x slower per token than 8 x 10k).
LOGITS_BUDGET = 1 << 20


@dataclass
class _Union:
    """Where a text's words sit in the vocabulary it is scored over: the training vocabulary of the
    language plus the text's new words (composed in ``view`` by a compositional output; numbered
    after the vocabulary, ``>= n_held``, where a lookup table cannot hold them)."""

    view: ModelBundle
    type_union: np.ndarray  # (u,) union id of each word type
    type_new: np.ndarray  # (u,) bool: outside the language's training vocabulary
    type_freq: np.ndarray  # (u,) int64 training count (0 for new words)
    new_ids: torch.Tensor  # union ids of the new words the model scores (their probability mass)
    member_ids: torch.Tensor  # (V_lang,) global ids of the language's training vocabulary
    n_held: int  # ids below are rows of the model's tables
    unk: int  # the id a lookup input reads a new word as (-1: none)
    n_extra: int  # new words a lookup table cannot hold


def _text_union(bundle: ModelBundle, text: TokenIds, lang: str) -> _Union:
    """The union vocabulary ``text`` is scored over in ``lang`` (compositional: a view with the new words)."""
    vocab, model = bundle.vocab, bundle.model
    lang_ids = vocab.lang_ids(lang)
    member = np.zeros(len(vocab), dtype=bool)
    member[lang_ids] = True
    known = np.fromiter((vocab.get(w) for w in text.types), dtype=np.int64, count=len(text.types))  # (u,) -1: none
    type_new = (known < 0) | ~member[np.maximum(known, 0)]
    new_words = [w for w, new in zip(text.types, type_new.tolist(), strict=True) if new]
    if model.compositional_output:
        view = bundle.with_new_words({lang: new_words})
    else:
        view = bundle
        if any(vocab.get(w) < 0 for w in new_words) and "<unk>" not in vocab:
            raise InputError(f"the {model.kind} model has no <unk> to read new words with; train it with "
                             f"{setting('data.vocab_mode', 'open')}")
    held = np.fromiter((view.vocab.get(w) for w in text.types), dtype=np.int64, count=len(text.types))
    n_held = len(view.vocab)
    extra = held < 0
    held[extra] = n_held + np.arange(int(extra.sum()))  # new words a lookup table cannot hold
    counts = np.asarray(vocab.lang_counts[:, list(vocab.langs).index(lang)] if vocab.lang_counts is not None
                        else vocab.counts)
    type_freq = np.where(type_new, 0, counts[np.maximum(known, 0)]).astype(np.int64)
    new_ids = torch.from_numpy(held[type_new & (held < n_held)])
    return _Union(view, held, type_new, type_freq, new_ids, torch.from_numpy(lang_ids), n_held,
                  view.vocab.get("<unk>"), int(extra.sum()))


def _piece_positions(pieces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of every piece, piece by piece, and the piece of each.  -> ((M,), (M,)) int64"""
    lengths = pieces[:, 1] - pieces[:, 0]
    piece = np.repeat(np.arange(len(pieces)), lengths)
    starts = np.repeat(pieces[:, 0] - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return starts + np.arange(int(lengths.sum())), piece


def _own_words_mask(union: _Union, text: TokenIds, pieces: np.ndarray, table_ids: torch.Tensor) -> torch.Tensor:
    """(P, V_l) bool: the scored words each piece may predict, the language's vocabulary and the
    piece's own new words (a compositional view holds every piece's)."""
    allowed = torch.isin(table_ids, union.member_ids.to(table_ids.device)).cpu()  # (V_l,)
    mask = allowed.unsqueeze(0).repeat(len(pieces), 1)  # (P, V_l)
    pos, piece = _piece_positions(pieces)
    types = text.ids[pos]
    new = union.type_new[types] & (union.type_union[types] < union.n_held)
    cols = torch.searchsorted(table_ids.cpu(), torch.from_numpy(union.type_union[types[new]]))
    mask[torch.from_numpy(piece[new]), cols] = True
    return mask


def _own_union_sizes(union: _Union, text: TokenIds, pieces: np.ndarray, n_scored: int) -> np.ndarray:
    """(P,) the size of the vocabulary each piece is scored over alone: the scored words and the
    piece's own new words that a lookup table cannot hold (the uniform share spreads over them)."""
    pos, piece = _piece_positions(pieces)
    types = text.ids[pos]
    extra = union.type_union[types] >= union.n_held
    pairs = np.unique(np.stack([piece[extra], types[extra]]), axis=1) if extra.any() else np.zeros((2, 0), np.int64)
    return n_scored + np.bincount(pairs[0], minlength=len(pieces))


@dataclass
class _Window:
    """One window of a batch of pieces: ``rows`` the pieces, ``at[k, t]`` the text position whose
    target ``logp[k, t]`` is (valid where ``valid``)."""

    rows: np.ndarray  # (b,) piece numbers
    targets: np.ndarray  # (b, T) text positions of the targets
    valid: np.ndarray  # (b, T) bool
    logp: torch.Tensor  # (b, T) float64
    mass: torch.Tensor | None  # (b, T) float64
    hidden: torch.Tensor  # (b, T, d)


def _score_windows(union: _Union, text: TokenIds, lang: str | None, bptt: int, pieces: np.ndarray,
                   rows_per_batch: int | None, allowed: torch.Tensor | None, mass: bool) -> Iterator[_Window]:
    """Run the model over ``pieces`` of ``text``, batch by batch and window by window, carrying the
    LSTM state: every window holds at most :data:`LOGITS_BUDGET` logits, and nothing here grows
    with the text (the caller keeps what it needs of each window)."""
    model = union.view.model
    lengths = pieces[:, 1] - pieces[:, 0]  # (P,)
    # Pieces of similar lengths share a batch (less padding).
    order = np.argsort(-lengths, kind="stable") if rows_per_batch else np.arange(len(pieces))
    size = rows_per_batch or len(pieces)
    n_scored = int(model.vocab_tables(lang).ids.numel())
    dev = model.device
    mass_ids = union.new_ids if mass else None
    for first in range(0, len(pieces), size):
        rows = order[first:first + size]  # (b,) piece numbers
        starts, ends = pieces[rows, 0], pieces[rows, 1]
        width = int(lengths[rows].max())
        window = max(1, min(bptt, LOGITS_BUDGET // max(1, len(rows) * n_scored)))
        rows_allowed = allowed[torch.from_numpy(rows)].to(dev) if allowed is not None else None
        state = model.init_state(len(rows))
        for a in range(0, width - 1, window):
            n = min(window, width - 1 - a)
            at = starts[:, None] + np.arange(a, a + n + 1)[None, :]  # (b, n + 1) text positions
            valid = at < ends[:, None]
            # Padding repeats the piece's first token: a valid id, never a target that is read.
            at = np.where(valid, at, starts[:, None])
            types = text.ids[at]
            words = union.type_union[types]  # (b, n + 1) union ids
            inputs = np.where(words[:, :-1] < union.n_held, words[:, :-1], union.unk)
            out = model.token_logprobs(torch.from_numpy(inputs).to(dev), torch.from_numpy(words[:, 1:]).to(dev),
                                       lang, state, mass_ids=mass_ids, allowed=rows_allowed)
            state = out.state
            yield _Window(rows, at[:, 1:], valid[:, 1:], out.logp.cpu(), None if out.mass is None else out.mass.cpu(),
                          out.hidden)


@contextmanager
def _scoring(bundle: ModelBundle, union: _Union, text: TokenIds, pieces: np.ndarray, lang: str | None,
             own_words: bool) -> Iterator[tuple[int, torch.Tensor | None]]:
    """The model in eval mode without gradients over ``union``'s words, for :func:`score_tokens` and
    :func:`score_segments`: yields (words ``lang``'s table scores, the own-words mask of a compositional
    output or None); afterwards the training mode, and (the model is shared) the training vocabulary's
    tables where the text had new words (a text without keeps them, and their cached embeddings)."""
    model = bundle.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            table_ids = model.vocab_tables(lang).ids
            allowed = _own_words_mask(union, text, pieces, table_ids) \
                if own_words and model.compositional_output else None
            yield int(table_ids.numel()), allowed
    finally:
        model.train(was_training)
        if union.view is not bundle:
            bundle.install_words()


def score_tokens(bundle: ModelBundle, tokens: Sequence[str] | TokenIds, lang: str, bptt: int, n_streams: int = 1,
                 screen: bool = True, *, pieces: np.ndarray | None = None, rows_per_batch: int | None = None,
                 keep_hidden: bool = True, own_words: bool = False, keep_mass: bool = True) -> TokenScores:
    """Run the model once over ``tokens`` (the language's own screen, extended by the new words;
    ``screen=False``: every word of the run), through :meth:`LanguageModel.token_logprobs`, so
    every kind is scored with its own scorer. The model stays on its device; scores come back on
    the CPU.

    The text is read as ``pieces``: ``[start, end)`` ranges of ``tokens``, each read from a zero
    state with its first token as context only and every other token a target (state carried
    across windows of at most ``bptt`` tokens, shorter where :data:`LOGITS_BUDGET` asks: memory
    does not grow with a piece's length). By default the pieces are ``n_streams`` equal streams, as
    :func:`~langpairs.batching.batchify` cuts a split for evaluation. Pieces may have any lengths
    (shorter ones are padded, the padding never scored), are run ``rows_per_batch`` at a time
    (default: all together) and come back piece by piece, in reading order, ``stream`` numbering
    them and ``position`` locating each target in ``tokens``. ``keep_hidden=False`` leaves
    ``hidden`` empty (only the neural cache reads it), ``keep_mass=False`` ``new_mass`` zero (only
    the down-weighting of new words reads it). ``own_words``: each piece is scored over the
    vocabulary plus its own new words only (independent lines), not every piece's.
    """
    text = tokens if isinstance(tokens, TokenIds) else TokenIds.of(tokens)
    model = bundle.model
    union = _text_union(bundle, text, lang)
    pieces = stream_pieces(len(text), n_streams) if pieces is None else np.asarray(pieces, dtype=np.int64)
    lengths = pieces[:, 1] - pieces[:, 0]  # (P,)
    if len(pieces) == 0 or int(lengths.min()) < 2:
        raise InputError("every piece of text to score needs at least 2 tokens (a context and a target)")
    scored_lang = lang if screen else None
    n_targets = lengths - 1
    offset = np.concatenate([[0], np.cumsum(n_targets)[:-1]])  # (P,) first output row of each piece
    n = int(n_targets.sum())
    logp = torch.empty(n, dtype=torch.float64)  # (N,) filled window by window, in piece order
    mass = torch.zeros(n, dtype=torch.float64)
    hidden = torch.zeros(n if keep_hidden else 0, model.cfg.d)
    with _scoring(bundle, union, text, pieces, scored_lang, own_words) as (n_scored, allowed):
        for w in _score_windows(union, text, scored_lang, bptt, pieces, rows_per_batch, allowed, keep_mass):
            row = offset[w.rows][:, None] + (w.targets - pieces[w.rows, :1]) - 1  # (b, T) output rows
            row, keep = torch.from_numpy(row[w.valid]), torch.from_numpy(w.valid)
            logp[row] = w.logp[keep]
            if w.mass is not None:
                mass[row] = w.mass[keep]
            if keep_hidden:
                hidden[row] = w.hidden.float().cpu()[keep]
    position = np.repeat(pieces[:, 0] + 1 - offset, n_targets) + np.arange(n)  # (N,) target positions in tokens
    types = text.ids[position]
    union_sizes = None
    if own_words and not model.compositional_output:
        union_sizes = torch.from_numpy(np.repeat(_own_union_sizes(union, text, pieces, n_scored), n_targets))
    return TokenScores(logp, mass, torch.from_numpy(union.type_new[types]), torch.from_numpy(union.type_union[types]),
                       hidden, torch.arange(len(pieces)).repeat_interleave(torch.from_numpy(n_targets)),
                       union.type_freq[types], n_scored + union.n_extra, model.compositional_output, position,
                       union_sizes)


@dataclass(frozen=True)
class SegmentScores:
    """:func:`score_segments`: per segment of a text (a line), its targets' summed log-probability and
    how many of them are new words; ``zero`` the text positions of (at most 5) targets with probability 0."""

    log_prob: np.ndarray  # (S,) float64
    new_words: np.ndarray  # (S,) int64
    zero: list[int]


def score_segments(bundle: ModelBundle, text: TokenIds, lang: str, bptt: int, pieces: np.ndarray,
                   segments: np.ndarray, n_segments: int, *, rows_per_batch: int | None = None,
                   own_words: bool = False, uniform_weight: float | None = None) -> SegmentScores:
    """:func:`score_tokens`' scores of ``text`` read as ``pieces``, summed per segment (``segments``:
    the segment of each text position, (n,) int64) as the windows go, so only a number per segment is
    kept: scoring a text of any length needs the memory of one window. A lookup output's scores are
    mixed with the uniform distribution (``uniform_weight``) as :func:`model_logprob` does."""
    model = bundle.model
    union = _text_union(bundle, text, lang)
    pieces = np.asarray(pieces, dtype=np.int64)
    sums = np.zeros(n_segments, dtype=np.float64)
    zero: list[int] = []
    with _scoring(bundle, union, text, pieces, lang, own_words) as (n_scored, allowed):
        sizes = _own_union_sizes(union, text, pieces, n_scored) if own_words and not model.compositional_output \
            else np.full(len(pieces), n_scored + union.n_extra)
        for w in _score_windows(union, text, lang, bptt, pieces, rows_per_batch, allowed, mass=False):
            lp = w.logp
            if not model.compositional_output and uniform_weight:
                size = torch.from_numpy(np.broadcast_to(sizes[w.rows][:, None], lp.shape).copy())
                lp = uniform_interpolate(lp, size, uniform_weight)
            targets, values = w.targets[w.valid], lp.numpy()[w.valid]
            np.add.at(sums, segments[targets], values)
            if len(zero) < 5 and not np.isfinite(values).all():
                zero.extend(targets[~np.isfinite(values)][:5 - len(zero)].tolist())
    targets = _piece_positions(np.stack([pieces[:, 0] + 1, pieces[:, 1]], axis=1))[0]  # (N,) every target
    new = union.type_new[text.ids[targets]]
    return SegmentScores(sums, np.bincount(segments[targets][new], minlength=n_segments).astype(np.int64), zero)


def model_logprob(scores: TokenScores, s: CacheSettings) -> torch.Tensor:
    """log p of the gold word before any cache: a lookup model interpolated with the uniform
    distribution, GroC's new words down-weighted by ``s.new_word_weight`` (1: unchanged).  (N,)"""
    if not scores.compositional:
        size = scores.union_sizes if scores.union_sizes is not None else scores.union_size
        return uniform_interpolate(scores.logp, size, s.uniform_weight)
    if s.new_word_weight < 1.0:
        return downweight_new(scores.logp, scores.new_mass, scores.is_new, s.new_word_weight)
    return scores.logp


def _streams(scores: TokenScores) -> list[torch.Tensor]:
    """(N,) bool masks of the contiguous streams, in order (a few)."""
    n = int(scores.stream.max()) + 1 if scores.stream.numel() else 0
    return [scores.stream == k for k in range(n)]


def cache_logprob(scores: TokenScores, s: CacheSettings) -> torch.Tensor:
    """log p_cache of the gold word under ``s.cache`` (unigram or neural), stream by stream; -inf
    where the cache does not hold it.  (N,) float64"""
    parts = []
    for m in _streams(scores):
        if s.cache == "unigram":
            parts.append(unigram_cache_logprob(scores.targets[m]))
        else:
            parts.append(neural_cache_logprob(scores.hidden[m], scores.targets[m], s.theta, s.size))
    return torch.cat(parts) if parts else torch.empty(0, dtype=torch.float64)


def mix_cache(scores: TokenScores, logp_model: torch.Tensor, logp_cache: torch.Tensor, lam: float) -> torch.Tensor:
    """lam p_model + (1 - lam) p_cache, stream by stream (each stream's first token: the model alone)."""
    parts = [interpolate_cache(logp_model[m], logp_cache[m], lam) for m in _streams(scores)]
    return torch.cat(parts) if parts else logp_model


def apply_settings(scores: TokenScores, s: CacheSettings) -> torch.Tensor:
    """Final per-token log-probabilities under ``s``: :func:`model_logprob`, then the cache.  (N,) float64"""
    s.validate()
    logp = model_logprob(scores, s)
    if s.cache == "none":
        return logp
    return mix_cache(scores, logp, cache_logprob(scores, s), s.lam)


def perplexity(lp: torch.Tensor) -> float | None:
    """exp(-mean log p); None for no tokens."""
    return float(torch.exp(-lp.mean())) if lp.numel() else None


def summarize(scores: TokenScores, lp: torch.Tensor) -> dict[str, Any]:
    n = int(lp.numel())
    return {"tokens": n, "oov_rate": float(scores.is_new.double().mean()) if n else 0.0,
            "union_size": scores.union_size, "perplexity": perplexity(lp),
            "perplexity_seen": perplexity(lp[~scores.is_new]), "perplexity_new": perplexity(lp[scores.is_new])}


def share_outside(tokens: Sequence[str], words: Container[str]) -> float:
    """The share of ``tokens`` whose word is not in ``words`` (one membership test per word type)."""
    if not tokens:
        return 0.0
    types, inverse = np.unique(np.asarray(list(tokens), dtype=str), return_inverse=True)  # (u,), (n,)
    outside = np.fromiter((w not in words for w in types.tolist()), dtype=bool, count=types.shape[0])
    return float(outside[inverse.reshape(-1)].mean())


def training_words(bundle: ModelBundle) -> dict[str, set[str]] | None:
    """Per language, the words of the run's own training text (None when it cannot be read any more).

    Under a closed vocabulary (``data.vocab_mode = "closed"``: train + valid + test words) the
    vocabulary says nothing about what training saw; this does.
    """
    cfg = bundle.cfg
    try:
        corpus = load_corpus(cfg.data, ("train",), cfg.languages)
    except (InputError, OSError) as exc:
        log.warning("cannot read the run's training text to tell which test words it never saw (%s)", exc)
        return None
    return {lang: set(corpus.splits[lang]["train"]) for lang in corpus.langs}


def unseen_report(tokens: Sequence[str], lang: str, seen: dict[str, set[str]] | None, oov_rate: float,
                  vocab_mode: str, where: str) -> dict[str, Any]:
    """``unseen_in_training_rate`` (the share of ``tokens`` whose word never occurs in the run's
    training text; None when that text is gone) and, under a closed vocabulary that holds such
    words, a ``note`` (also logged as a warning) saying what was scored and how to score them as new."""
    words = seen.get(lang) if seen is not None else None
    if words is None or not tokens:
        return {"unseen_in_training_rate": None}
    unseen = share_outside(tokens, words)
    out: dict[str, Any] = {"unseen_in_training_rate": unseen}
    if vocab_mode == "closed" and unseen > oov_rate + 1e-9:
        text = (f"{100 * unseen:.1f}% of the {lang} tokens of {where} never occur in the run's training text, but "
                f"{100 * (unseen - oov_rate):.1f}% are words of its closed vocabulary (train+valid+test), scored as "
                "known words (a lookup model's untrained rows, GroC's composed vectors), so the OOV rate says "
                f"{100 * oov_rate:.1f}%; to score words unseen in training as new, train with ")
        # The JSON is the same from both faces (both spellings); the warning speaks the caller's face.
        out["note"] = text + either_face("vocab_mode", key="data.vocab_mode", value="open")
        log.warning("%s", text + setting("data.vocab_mode", "open"))
    return out


def tune_uniform_weight(scores: TokenScores, grid: Sequence[float] = UNIFORM_GRID) -> float:
    """The uniform weight with the lowest perplexity on ``scores`` (validation text)."""
    best = min(grid, key=lambda w: -float(uniform_interpolate(scores.logp, scores.union_size, w).mean()))
    return float(best)


class CoverageError(InputError):
    """A lexicon coverage outside [0, 1] or on a run without a lexicon."""


def check_coverage(coverage: float) -> None:
    """A lexicon coverage must lie in [0, 1] (checked before any run is loaded)."""
    if not 0.0 <= coverage <= 1.0 or math.isnan(coverage):
        raise CoverageError(f"{option('lexicon_coverage', coverage)} is outside [0, 1]; e.g. 0.5 keeps half the "
                            f"entries")


def with_lexicon_coverage(bundle: ModelBundle, coverage: float) -> ModelBundle:
    """A groc-lex bundle whose lexicon keeps only ``coverage`` of its entries (Table 4, inference row).

    Entries are dropped by the lexicon service's stable word hash, so the same words lose their
    forms on every call. The model parameters are shared with ``bundle``.
    """
    check_coverage(coverage)
    if not kind_traits(bundle.model.kind).uses_lexicon:
        raise CoverageError(f"{option('lexicon_coverage')} needs a groc-lex run; this run is {bundle.model.kind}")
    from polyglot_groc.model.lexforms import compile_forms

    # The run's recorded lexicon (a missing one is an error here: every word's forms are recompiled).
    lex = dataclasses.replace(bundle.cfg.model.lexicon, coverage=coverage)
    compiled = compile_forms(lex, bundle.vocab, recorded=bundle.lexicon_info)
    cfg = dataclasses.replace(bundle.cfg, model=dataclasses.replace(bundle.cfg.model, lexicon=compiled.config))
    out = dataclasses.replace(bundle, cfg=cfg, forms=compiled.forms, extra_words=compiled.extra_words,
                              lexicon_info=compiled.info)
    out.install_words()
    return out


def evaluate_open(bundle: ModelBundle, payload: dict[str, Any], *, run: Path, data: Path, split: str = "test",
                  settings: CacheSettings | None = None, checkpoint: str = "best", n_streams: int = 1,
                  screen: bool = True, uniform_weight: float | None = None,
                  lexicon_coverage: float | None = None) -> dict[str, Any]:
    """Open-vocabulary perplexity of a loaded run on another corpus (JSON-ready); the body of
    :func:`polyglot_groc.analysis.evaluate.evaluate` in that setting.

    ``uniform_weight=None`` tunes it on ``data``'s valid split (lookup models only). With a cache
    (or a new-word weight below 1) each language also reports ``perplexity_no_cache``, the plain
    model on the same text, and ``cache_check``: the settings against the plain model on
    ``data``'s valid split, the text such settings are tuned on. Settings that make it worse
    there are logged as a warning.
    """
    if split not in ("valid", "test"):
        raise InputError(f"split {split!r} is unknown; use valid or test")
    s = (settings or CacheSettings()).validate()
    if uniform_weight is not None:
        check_cache_params(uniform_weight=uniform_weight)
    if lexicon_coverage is not None:
        bundle = with_lexicon_coverage(bundle, lexicon_coverage)
    bptt = bundle.cfg.train.bptt
    texts = load_other_split(bundle, data, split)
    if s.new_word_weight < 1.0 and not bundle.model.compositional_output:
        log.warning("%s acts on compositional (GroC) models only; the %s model gives new words "
                    "probability 0 and ignores it", option("new_word_weight", s.new_word_weight), bundle.model.kind)
    out: dict[str, Any] = {"run": str(run), "data": str(data), "split": split, "model": bundle.model.kind,
                           "checkpoint": checkpoint, "step": payload.get("step"), "cache": dataclasses.asdict(s),
                           "lexicon_coverage": lexicon_coverage, "vocab_mode": bundle.cfg.data.vocab_mode,
                           "languages": {}}
    seen = training_words(bundle)
    valid_texts: dict[str, list[str]] = {}

    def score(toks: list[str], lang: str) -> TokenScores:
        # Per-token hidden states only for the neural cache (N x d floats: the largest thing kept).
        return score_tokens(bundle, toks, lang, bptt, n_streams, screen=screen, keep_hidden=s.cache == "neural")

    def valid_scores(lang: str, scores: TokenScores) -> TokenScores:
        """The model's scores on ``data``'s valid split (the evaluated ones when that is the split)."""
        if split == "valid":
            return scores
        if not valid_texts:
            valid_texts.update(load_other_split(bundle, data, "valid"))
        return score(valid_texts[lang], lang)

    for lang, toks in texts.items():
        scores = score(toks, lang)
        valid: TokenScores | None = None
        uw = s.uniform_weight
        if not scores.compositional:
            if uniform_weight is None:
                valid = valid_scores(lang, scores)
                uw = tune_uniform_weight(valid)
            else:
                uw = uniform_weight
        sl = dataclasses.replace(s, uniform_weight=uw)
        res = summarize(scores, apply_settings(scores, sl))
        res.update(unseen_report(toks, lang, seen, res["oov_rate"], bundle.cfg.data.vocab_mode, f"{data} ({split})"))
        res["uniform_weight"] = None if scores.compositional else uw
        if sl.adjusts(scores.compositional):
            res["perplexity_no_cache"] = perplexity(apply_settings(scores, sl.plain()))
            try:
                valid = valid if valid is not None else valid_scores(lang, scores)
            except CorpusError as exc:
                log.warning("cannot check the cache settings on %s's valid split (%s); check them with "
                            "polyglot-groc tune-cache", data, exc)
                res["cache_check"] = None
            else:
                res["cache_check"] = check_settings(valid, sl, f"{data} ({lang}, valid)")
        out["languages"][lang] = res
    return out


def check_settings(scores: TokenScores, s: CacheSettings, where: str) -> dict[str, Any]:
    """Perplexity of ``scores`` under ``s`` and under the plain model; a warning when ``s`` is worse."""
    with_s = perplexity(apply_settings(scores, s))
    without = perplexity(apply_settings(scores, s.plain()))
    helps = with_s is not None and without is not None and with_s < without
    if not helps:
        nww = f", new-word weight {s.new_word_weight:g}" if scores.compositional else ""
        what = f"cache {s.cache} (θ {s.theta:g}, λ {s.lam:g}{nww})" if s.cache != "none" else f"no cache{nww}"
        log.warning("on %s, %s gives perplexity %.1f, worse than %.1f without a cache (and new words as the model "
                    "scores them); tune the settings with tune-cache, or leave %s and %s out", where, what,
                    with_s or math.nan, without or math.nan, option("cache"), option("new_word_weight"))
    return {"split": "valid", "perplexity": with_s, "perplexity_no_cache": without, "helps": helps}
