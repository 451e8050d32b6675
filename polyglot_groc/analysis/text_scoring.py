"""Probabilities of text under a loaded run: per-token log-probabilities and per-line scores.

Everything goes through the model's own scorer,
:func:`~polyglot_groc.analysis.crossdomain.score_tokens` (the one ``evaluate``'s open-vocabulary
setting runs, itself on :meth:`~polyglot_groc.model.lm.LanguageModel.token_logprobs`), under
``evaluate``'s open-vocabulary rule: a text is scored over the training vocabulary plus its own
words; a compositional output (GroC) composes the new words, a lookup output gives them
probability 0, so they are refused unless ``uniform_weight`` mixes in the uniform distribution.

Raw text is tokenised as the run's corpus was (:func:`text_tokenizer`): the run's
``data.tokenize``, or, for a corpus read at whitespace (``data.tokenize = "whitespace"``, a
corpus tokenised beforehand), the tokeniser its ``prepare.json`` records; ``tokenized=True`` takes
the text as tokenised already. When nothing says how the corpus was tokenised, the text is split
at whitespace and a warning names tokens that carry punctuation the training vocabulary holds as
tokens of their own ("small." where the corpus has "small .").

The scorer reads a text in windows of bounded length, carrying the LSTM state
(:data:`~polyglot_groc.analysis.crossdomain.LOGITS_BUDGET`), so a line of any length is scored in
the memory of one window; :func:`score_lines` keeps one number per line, not per token.

:class:`~polyglot_groc.analysis.loaded_run.Model` offers these as ``token_log_probs``,
``log_prob``, ``perplexity`` and ``score_lines``.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import is_int
from groc_base.errors import InputError
from groc_base.fileio import json_safe
from langpairs.corpus import EOS, text_sentences
from langpairs.files import prepared_tokenizer
from langpairs.tokenize import Tokenizer
from polyglot_groc.analysis.export import check_language, unknown_script_words
from polyglot_groc.analysis.token_ids import TokenIds
from polyglot_groc.model.bundle import ModelBundle

log = logging.getLogger(__name__)

__all__ = ["LINES_PER_BATCH", "LineScore", "TextScores", "perplexity_of", "score_lines", "text_pieces",
           "token_log_probs"]

#: Lines per forward pass when :func:`score_lines` scores lines side by side.
LINES_PER_BATCH = 64
#: The longest window text is read in (tokens; the state is carried across windows, so any length
#: gives the same scores). Longer than training's ``bptt``: fewer passes over a long line; a large
#: vocabulary cuts it shorter (:data:`~polyglot_groc.analysis.crossdomain.LOGITS_BUDGET`).
TEXT_WINDOW = 512


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


def text_tokenizer(bundle: ModelBundle, lang: str, *, tokenized: bool = False) -> tuple[Tokenizer | None, bool]:
    """The tokeniser raw text of ``lang`` is read with to match the run's corpus, and whether that is known.

    ``(None, True)``: split at whitespace, as the text is tokenised already (``tokenized``) or the
    corpus was. ``(None, False)``: the run read a corpus tokenised beforehand
    (``data.tokenize = "whitespace"``) and no ``prepare.json`` at its root says how.
    """
    if tokenized:
        return None, True
    mode, apostrophe = bundle.cfg.data.tokenize, None
    if mode == "whitespace":
        recorded = prepared_tokenizer(Path(bundle.cfg.data.root), lang)
        if recorded is None:
            return None, False
        mode, apostrophe = recorded
        if mode != "whitespace":
            log.info("tokenising the text with %s, as %s/prepare.json says the run's %s corpus was", mode,
                     bundle.cfg.data.root, lang)
    if mode == "whitespace":
        return None, True
    return _tokenizer(lang, mode, apostrophe), True


@functools.lru_cache(maxsize=8)
def _tokenizer(lang: str, mode: str, apostrophe: str | None) -> Tokenizer:
    from langpairs.tokenize import make_tokenizer  # some tokenisers load a toolkit: only when asked

    return make_tokenizer(lang, mode, apostrophe=apostrophe)


def tokenize(bundle: ModelBundle, text: str, lang: str, *, tokenized: bool = False) -> list[list[str]]:
    """``text``'s sentences (one per non-blank line), tokenised as the run's corpus was
    (:func:`text_tokenizer`), each ending with ``<eos>``."""
    if not isinstance(text, str):
        raise InputError(f"text must be a str (lines are sentences), got {type(text).__name__}")
    tokenizer, known = text_tokenizer(bundle, lang, tokenized=tokenized)
    sentences = text_sentences(text, tokenizer)
    if not known:
        warn_attached_punctuation(bundle, lang, dict.fromkeys(t for s in sentences for t in s))
    return sentences


_EDGE_PUNCTUATION = re.compile(r"^([^\w\s]+)(?=\w)|(?<=\w)([^\w\s]+)$")


def warn_attached_punctuation(bundle: ModelBundle, lang: str, words: Iterable[str]) -> None:
    """One warning when words of a text carry punctuation at an edge that the run's vocabulary holds
    as a token of its own (``small.`` where training read ``small .``): text split at whitespace for a
    run whose corpus was tokenised beforehand by an unknown tokeniser (:func:`text_tokenizer`)."""
    vocab = bundle.vocab
    attached = []
    for word in words:  # word types
        if word in vocab:
            continue
        m = _EDGE_PUNCTUATION.search(word)
        if m is not None and (m.group(1) or m.group(2)) in vocab:
            attached.append(word)
    if attached:
        log.warning("%d word(s) of the text carry punctuation that the run's training text has as tokens of their "
                    "own (e.g. %s): its corpus was tokenised before training (data.tokenize = 'whitespace') and "
                    "no prepare.json says how, so the text is split at whitespace only; tokenise it like the "
                    "training corpus (e.g. 'small .' for 'small.') to score it as the run was trained",
                    len(attached), ", ".join(map(repr, attached[:3])))


def text_pieces(tokens: Sequence[str] | TokenIds, n_streams: int) -> np.ndarray:
    """``[start, end)`` pieces of ``tokens`` for :func:`~polyglot_groc.analysis.crossdomain.score_tokens`:
    at most ``n_streams`` of about equal length, each but the first starting at an ``<eos>`` (read as its
    context), so every token after the first is scored exactly once.  # (P, 2) int64"""
    n = len(tokens)
    if n_streams <= 1 or n < 4:
        return np.array([[0, n]], dtype=np.int64)
    if isinstance(tokens, TokenIds):
        eos = tokens.types.index(EOS) if EOS in tokens.types else -1
        cuts = np.flatnonzero(tokens.ids == eos)  # positions a piece may start reading at
    else:
        cuts = np.flatnonzero(np.asarray(tokens, dtype=object) == EOS)
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


def _zero_refusal(bundle: ModelBundle, words: Sequence[str]) -> InputError:
    return InputError(f"this {bundle.model.kind} model gives probability 0 to {', '.join(map(repr, words))}; pass "
                      "uniform_weight to mix in the uniform distribution, as evaluate does")


# ----------------------------------------------------------------------------------- the two readings


def token_log_probs(bundle: ModelBundle, text: str, lang: str, *, start: str | None = EOS, streams: int | None = None,
                    uniform_weight: float | None = None, tokenized: bool = False) -> TextScores:
    """Per-token log-probabilities of ``text`` in ``lang`` (:meth:`Model.token_log_probs
    <polyglot_groc.analysis.loaded_run.Model.token_log_probs>` says how the text is read)."""
    from polyglot_groc.analysis.crossdomain import CacheSettings, model_logprob, score_tokens

    check_language(bundle, lang)
    if start is not None and (not isinstance(start, str) or start.split() != [start]):
        raise InputError(f"start={start!r} must be one token (e.g. '<eos>') or None")
    ids, _ = TokenIds.join(tokenize(bundle, text, lang, tokenized=tokenized), first=start)
    if start is None and 0 < len(ids) < 2:
        raise InputError("with start=None the first token is context only: give at least two tokens")
    if len(ids) <= (start is not None):
        raise InputError("the text is empty; give at least one word")
    n_streams = bundle.cfg.train.eval_batch_size if streams is None else streams
    if not is_int(n_streams) or n_streams < 1:
        raise InputError(f"streams={streams!r}; pass a positive number of pieces")
    check_scorable(bundle, ids.words_of(ids.ids[1:]), lang, uniform_weight)
    scores = score_tokens(bundle, ids, lang, TEXT_WINDOW, pieces=text_pieces(ids, n_streams), keep_hidden=False,
                          keep_mass=False)
    logp = model_logprob(scores, CacheSettings(uniform_weight=uniform_weight or 0.0)).numpy()  # (N,)
    assert scores.position is not None
    zero = scores.position[~np.isfinite(logp)][:5]
    if len(zero):
        raise _zero_refusal(bundle, ids.words(zero))
    return TextScores(lang, ids.words(scores.position), logp, scores.is_new.numpy())


def score_lines(bundle: ModelBundle, lines: Sequence[str], lang: str, *, uniform_weight: float | None = None,
                tokenized: bool = False, running_context: bool = False) -> list[LineScore]:
    """Each line's log-probability and perplexity (:meth:`Model.score_lines
    <polyglot_groc.analysis.loaded_run.Model.score_lines>` says how the lines are read)."""
    from polyglot_groc.analysis.crossdomain import score_segments

    check_language(bundle, lang)
    if isinstance(lines, str):
        raise InputError("score_lines() takes a list of lines; for one text use log_prob(text, lang)")
    tokenizer, known = text_tokenizer(bundle, lang, tokenized=tokenized)
    # One line at a time: only the line being read is held as strings.
    per_line = ([t for sentence in text_sentences(line, tokenizer) for t in sentence] for line in lines)
    ids, lengths = TokenIds.join(per_line, first=EOS)  # [<eos>, line 1 ..., line 2 ..., ...], (n_lines,)
    if not lengths.any():
        raise InputError("the input is empty; give at least one line with a word")
    if not known:
        warn_attached_punctuation(bundle, lang, ids.types)
    check_scorable(bundle, ids.words_of(ids.ids[1:]), lang, uniform_weight)
    segments = np.concatenate([[0], np.repeat(np.arange(len(lengths)), lengths)])  # (n,) the line of each token
    # Independent lines: each read from its own <eos> over the vocabulary and its own new words;
    # running context: the lines as one text, each after those before it (state carried).
    pieces = np.array([[0, len(ids)]]) if running_context else _line_pieces(lengths)[0]
    res = score_segments(bundle, ids, lang, TEXT_WINDOW, pieces, segments, len(lengths),
                         rows_per_batch=LINES_PER_BATCH, own_words=not running_context, uniform_weight=uniform_weight)
    if res.zero:
        raise _zero_refusal(bundle, ids.words(np.asarray(res.zero)))
    out = []
    for i, n in enumerate(lengths.tolist()):  # one record per line, not per token
        total = float(res.log_prob[i])
        out.append(LineScore(i + 1, n, total, perplexity_of(total, n), int(res.new_words[i])) if n
                   else LineScore(i + 1, 0, None, None, 0))
    return out
