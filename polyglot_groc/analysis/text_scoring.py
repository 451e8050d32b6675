"""Probabilities of text under a loaded run: per-token log-probabilities and per-line scores.

Everything goes through the model's own scorer,
:func:`~polyglot_groc.analysis.crossdomain.score_tokens` (the one ``evaluate``'s open-vocabulary
setting runs, itself on :meth:`~polyglot_groc.model.lm.LanguageModel.token_logprobs`), under
``evaluate``'s open-vocabulary rule: a text is scored over the training vocabulary plus its own
words; a compositional output (GroC) composes the new words, a lookup output gives them
probability 0, so they are refused unless ``uniform_weight`` mixes in the uniform distribution.

:class:`~polyglot_groc.analysis.loaded_run.Model` offers these as ``token_log_probs``,
``log_prob``, ``perplexity`` and ``score_lines``. How a text is cut into pieces read side by side
lives here, so another way of reading (e.g. bounded windows of a very long line) is one more
function beside :func:`token_log_probs` and :func:`score_lines`, over the same :func:`_log_probs`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from groc_base.checks import is_int
from groc_base.errors import InputError
from groc_base.fileio import json_safe
from langpairs.corpus import EOS, text_sentences
from polyglot_groc.analysis.export import check_language, unknown_script_words
from polyglot_groc.model.bundle import ModelBundle

if TYPE_CHECKING:
    from polyglot_groc.analysis.crossdomain import TokenScores

log = logging.getLogger(__name__)

__all__ = ["LINES_PER_BATCH", "LineScore", "TextScores", "perplexity_of", "score_lines", "text_pieces",
           "token_log_probs"]

#: Lines per forward pass when :func:`score_lines` scores lines side by side.
LINES_PER_BATCH = 64


def perplexity_of(log_prob: float, n: int) -> float:
    """exp(- log_prob / n): the perplexity of ``n`` tokens; inf where the exponent would overflow."""
    mean = -log_prob / n
    return math.exp(mean) if mean < 700 else math.inf


@dataclass(frozen=True)
class TextScores:
    """Per-token log-probabilities of a text (:func:`token_log_probs`), in reading order.

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
        return perplexity_of(self.log_prob, len(self.tokens))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the totals and every ``[token, log_prob]``."""
        return json_safe({"lang": self.lang, "tokens": len(self.tokens), "log_prob": self.log_prob,  # type: ignore[return-value]
                          "perplexity": self.perplexity, "new_words": int(self.new.sum()),
                          "token_log_probs": [[t, float(v)] for t, v in zip(self.tokens, self.log_probs, strict=True)]})


@dataclass(frozen=True)
class LineScore:
    """One input line's score (:func:`score_lines`): its tokens (``<eos>`` included), their
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


# ----------------------------------------------------------------------------------- reading a text


def tokenize(bundle: ModelBundle, text: str, lang: str) -> list[list[str]]:
    """``text``'s sentences (one per non-blank line), tokenised as the run was, each ending with ``<eos>``."""
    from langpairs.tokenize import make_tokenizer  # some tokenisers load a toolkit: only when asked

    if not isinstance(text, str):
        raise InputError(f"text must be a str (lines are sentences), got {type(text).__name__}")
    mode = bundle.cfg.data.tokenize
    return text_sentences(text, None if mode == "whitespace" else make_tokenizer(lang, mode))


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


def _line_pieces(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pieces of ``[<eos>, line 1, line 2, ...]`` reading each non-blank line from the ``<eos>`` before
    it, and those lines' indices.  lengths (n_lines,) -> ((n_kept, 2) int64, (n_kept,) int64)"""
    ends = np.cumsum(lengths) + 1  # one past each line's last token
    kept = np.flatnonzero(lengths > 0)
    return np.stack([ends[kept] - lengths[kept] - 1, ends[kept]], axis=1), kept


# ----------------------------------------------------------------------------------- the checks


def check_scorable(bundle: ModelBundle, tokens: Sequence[str], lang: str, uniform_weight: float | None) -> None:
    """A lookup kind gives words outside ``lang``'s vocabulary probability 0: refused unless
    ``uniform_weight`` interpolates, as ``evaluate``'s open-vocabulary setting does. A compositional
    output scores any word (a word of an unseen script only as any word of its length: a warning)."""
    from polyglot_groc.analysis.caches import check_cache_params

    if uniform_weight is not None:
        check_cache_params(uniform_weight=uniform_weight)
    if bundle.model.compositional_output:
        _warn_unseen_script(bundle, tokens)
    elif uniform_weight is None:
        _check_in_vocabulary(bundle, tokens, lang)


def _warn_unseen_script(bundle: ModelBundle, tokens: Sequence[str]) -> None:
    blind = unknown_script_words(bundle, [w for w in dict.fromkeys(tokens) if w not in bundle.vocab])
    if blind:
        log.warning("%d words of the text are made only of characters this model never saw (e.g. %s); "
                    "their probabilities are those of any word of their length", len(blind), ", ".join(blind[:5]))


def _check_in_vocabulary(bundle: ModelBundle, tokens: Sequence[str], lang: str) -> None:
    """Every token must be in ``lang``'s training vocabulary (a lookup output without the uniform share)."""
    vocab, kind = bundle.vocab, bundle.model.kind
    members = vocab.membership[:, list(vocab.langs).index(lang)]  # (V,) bool
    outside = [w for w in dict.fromkeys(tokens) if vocab.get(w) < 0 or not members[vocab.id(w)]]
    unread = [w for w in outside if w not in vocab]
    if unread and "<unk>" not in vocab:
        raise InputError(
            f"{len(unread)} word(s) of the text are outside this {kind} run's vocabulary (e.g. "
            f"{', '.join(map(repr, unread[:5]))}), and its lookup tables have no <unk> to read them with (it was "
            "trained with a closed vocabulary): score text made of its words (model.words(lang)), or train "
            "with --vocab-mode open or a compositional kind (--model groc)")
    if outside:
        raise InputError(
            f"{len(outside)} word(s) of the text are outside this {kind} run's {lang} vocabulary (e.g. "
            f"{', '.join(map(repr, outside[:5]))}): a lookup output table gives them probability 0; "
            "evaluate's open-vocabulary rule mixes in the uniform distribution over the vocabulary and the "
            "text's words: pass uniform_weight (e.g. 0.01; evaluate --data tunes it on valid)")


def _log_probs(bundle: ModelBundle, tokens: Sequence[str], lang: str, pieces: np.ndarray,
               uniform_weight: float | None, rows_per_batch: int | None = None) -> tuple[TokenScores, np.ndarray]:
    """Score ``tokens`` read as ``pieces`` (each piece's first token is context only), after the
    checks; the scorer's per-target record and each target's log-probability (N,) float64, in the
    scorer's order (``position`` locates each target in ``tokens``)."""
    from polyglot_groc.analysis.crossdomain import CacheSettings, model_logprob, score_tokens

    check_scorable(bundle, tokens[1:], lang, uniform_weight)
    scores = score_tokens(bundle, tokens, lang, bundle.cfg.train.bptt, pieces=pieces,
                          rows_per_batch=rows_per_batch, keep_hidden=False)
    logp = model_logprob(scores, CacheSettings(uniform_weight=uniform_weight or 0.0)).numpy()  # (N,)
    assert scores.position is not None
    zero = [tokens[i] for i in scores.position[~np.isfinite(logp)][:5]]
    if zero:
        raise InputError(f"this {bundle.model.kind} model gives probability 0 to {', '.join(map(repr, zero))}; pass "
                         "uniform_weight to mix in the uniform distribution, as evaluate does")
    return scores, logp


# ----------------------------------------------------------------------------------- the two readings


def token_log_probs(bundle: ModelBundle, text: str, lang: str, *, start: str | None = EOS, streams: int | None = None,
                    uniform_weight: float | None = None) -> TextScores:
    """Per-token log-probabilities of ``text`` in ``lang`` (:meth:`Model.token_log_probs
    <polyglot_groc.analysis.loaded_run.Model.token_log_probs>` says how the text is read)."""
    check_language(bundle, lang)
    tokens = [t for sentence in tokenize(bundle, text, lang) for t in sentence]
    if not tokens:
        raise InputError("the text is empty; give at least one word")
    if start is not None:
        if not isinstance(start, str) or start.split() != [start]:
            raise InputError(f"start={start!r} must be one token (e.g. '<eos>') or None")
        tokens = [start, *tokens]
    elif len(tokens) < 2:
        raise InputError("with start=None the first token is context only: give at least two tokens")
    n_streams = bundle.cfg.train.eval_batch_size if streams is None else streams
    if not is_int(n_streams) or n_streams < 1:
        raise InputError(f"streams={streams!r}; pass a positive number of pieces")
    scores, logp = _log_probs(bundle, tokens, lang, text_pieces(tokens, n_streams), uniform_weight)
    assert scores.position is not None
    return TextScores(lang, [tokens[i] for i in scores.position], logp, scores.is_new.numpy())


def score_lines(bundle: ModelBundle, lines: Sequence[str], lang: str, *,
                uniform_weight: float | None = None) -> list[LineScore]:
    """Each line's log-probability and perplexity, every line a sentence of its own read from an
    ``<eos>``, lines side by side in batches of :data:`LINES_PER_BATCH` (:meth:`Model.score_lines
    <polyglot_groc.analysis.loaded_run.Model.score_lines>` says over which vocabulary)."""
    check_language(bundle, lang)
    if isinstance(lines, str):
        raise InputError("score_lines() takes a list of lines; for one text use log_prob(text, lang)")
    per_line = [[t for s in tokenize(bundle, line, lang) for t in s] for line in lines]
    if not any(per_line):
        raise InputError("the input is empty; give at least one line with a word")
    lengths = np.array([len(t) for t in per_line], dtype=np.int64)  # (n_lines,)
    tokens = [EOS, *(t for line in per_line for t in line)]
    pieces, kept = _line_pieces(lengths)  # (n_kept, 2), (n_kept,)
    scores, logp = _log_probs(bundle, tokens, lang, pieces, uniform_weight, LINES_PER_BATCH)
    stream = scores.stream.numpy()  # (N,) the piece of each target
    sums = np.bincount(stream, weights=logp, minlength=len(kept))  # (n_kept,)
    new = np.bincount(stream, weights=scores.is_new.numpy(), minlength=len(kept)).astype(np.int64)  # (n_kept,)
    out = [LineScore(i + 1, 0, None, None, 0) for i in range(len(per_line))]
    for j, i in enumerate(kept.tolist()):  # one record per line, not per token
        n = int(lengths[i])
        out[i] = LineScore(i + 1, n, float(sums[j]), perplexity_of(float(sums[j]), n), int(new[j]))
    return out
