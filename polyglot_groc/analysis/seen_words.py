"""Which words of a run's vocabulary training saw, and the rule that keeps untrained rows out of answers.

A closed vocabulary (``data.vocab_mode = "closed"``, the default: the seeds' PTB setup) is built
from the train, valid and test splits, so it holds words that training never reads. A lookup
table has a row for each of them, but training never updates that row from data (an input row
gets no gradient; a tied or output row is only pushed down as a wrong answer): it stays near its
random start. Served as a word's vector, such a row is noise that looks like an answer, and its
"neighbours" are other such rows or training singletons.

The rule, for every vector served (``Model``, ``neighbours``, ``export``, ``similarity --run``):

* **Lookup side** (the input of tied, untied, bilinear, deep-residual, adaptive and conv; the
  output of every kind but GroC's): a word of the vocabulary that training never saw has an
  untrained row. Asked for by name it is refused (:class:`UntrainedWordError`, naming the word);
  in a list of words to choose from (a vocabulary searched for neighbours, ``export --vocab``,
  ``similarity --run``'s in-vocabulary figure) it is left out. ``allow_untrained=True``
  (``--allow-untrained``) serves those rows anyway.
* **Compositional side** (GroC's input and output, ELMo's and bilm's input): every word's vector is
  made by the trained function from its spelling, the valid and test words of a closed
  vocabulary as much as any word never seen; nothing is untrained, and those words are answers
  like any other.

Which words training saw is recorded in the vocabulary (``Vocab.train_counts``, since the
vocabularies that record it); for a run saved before, :func:`trained_rows` derives it: an open
vocabulary holds training words only; a closed one is read against the run's corpus (its training
split, ``data.root``), once per loaded run. Where that corpus is gone, or the run was finetuned
from another (its parent read other text), it cannot be told, and every word counts as seen
(a warning says so).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Sequence

import numpy as np

from groc_base.checks import option
from groc_base.errors import GrocError, InputError
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.vocab import EOS, UNK, Vocab

log = logging.getLogger(__name__)

__all__ = ["NoVectorError", "UntrainedWordError", "check_trained", "composes", "trained_rows", "untrained_rows"]


class NoVectorError(InputError, KeyError):
    """A word the run gives no vector for by default: outside a lookup table's vocabulary, or one whose row
    training never updated (:class:`UntrainedWordError`). Also a ``KeyError``, as gensim's ``KeyedVectors``
    raise for a missing key."""

    __str__ = InputError.__str__  # the message as written, not KeyError's repr of it


class UntrainedWordError(NoVectorError):
    """A word of the vocabulary that training never saw, asked for on a lookup side (module docstring)."""


def composes(bundle: ModelBundle, side: str) -> bool:
    """Whether ``side`` embeds any word from its spelling (GroC) rather than from a lookup table."""
    model = bundle.model
    return bool(model.compositional_input if side == "input" else model.compositional_output)


#: Derived training masks of runs that do not record one, per vocabulary object (read once).
_DERIVED: dict[int, tuple[weakref.ref[Vocab], np.ndarray | None]] = {}


def trained_rows(bundle: ModelBundle) -> np.ndarray | None:
    """Whether training read each word of the vocabulary, in any language.  -> (V,) bool, or None: not known.

    Recorded by the vocabulary; derived for a run saved before it records it (module docstring).
    """
    vocab = bundle.vocab
    recorded = vocab.trained()
    if recorded is not None:
        return recorded
    cached = _DERIVED.get(id(vocab))
    if cached is not None and cached[0]() is vocab:
        return cached[1]
    derived = _derive(bundle)
    _DERIVED[id(vocab)] = (weakref.ref(vocab, lambda _: _DERIVED.pop(id(vocab), None)), derived)
    return derived


def _derive(bundle: ModelBundle) -> np.ndarray | None:
    """:func:`trained_rows` of a run whose vocabulary does not record it."""
    cfg, vocab = bundle.cfg, bundle.vocab
    if cfg.data.vocab_mode == "open":  # built from the training split: every word counted there was read
        return np.asarray(vocab.counts, dtype=np.int64) > 0
    if cfg.parent.run:
        log.warning("this run does not record which words of its closed vocabulary training saw, and it was "
                    "finetuned from %s, whose training text it cannot read again: every word counts as seen "
                    "in training", cfg.parent.run)
        return None
    from polyglot_groc.training.data import load_corpus

    try:
        corpus = load_corpus(cfg.data, ("train",), cfg.languages)
    except (GrocError, OSError) as exc:
        log.warning("this run does not record which words of its closed vocabulary training saw, and its "
                    "training text cannot be read (%s): every word counts as seen in training, the valid and "
                    "test words too", str(exc).split(";")[0])
        return None
    log.info("this run does not record which words training saw: read from its training text in %s",
             cfg.data.root)
    zero = np.zeros((len(vocab), len(vocab.langs)), dtype=np.int64)
    counted = Vocab(vocab.words, vocab.counts, vocab.langs, vocab.membership, train_counts=zero)
    seen = counted.with_training({lang: corpus.counts(lang, ("train",)) for lang in corpus.langs}).trained()
    assert seen is not None
    return seen


def untrained_rows(bundle: ModelBundle, side: str) -> np.ndarray | None:
    """The vocabulary words whose ``side`` vector is a row training never updated from data: a lookup
    side's words that training never saw.  -> (V,) bool, or None: none (a compositional side) or not known."""
    if composes(bundle, side):
        return None
    trained = trained_rows(bundle)
    if trained is None:
        return None
    untrained = ~trained
    for special in (EOS, UNK):  # <unk> learns from the tokens it stands for, which are not its own count
        if special in bundle.vocab:
            untrained[bundle.vocab.id(special)] = False
    return untrained


def check_trained(bundle: ModelBundle, words: Sequence[str], side: str, allow_untrained: bool = False) -> None:
    """Refuse the ``words`` whose ``side`` vector is an untrained row (:class:`UntrainedWordError`, naming the
    first), unless ``allow_untrained``. Words outside the vocabulary are not this check's business."""
    if allow_untrained:
        return
    mask = untrained_rows(bundle, side)
    if mask is None:
        return
    vocab = bundle.vocab
    ids = np.fromiter((vocab.get(w) for w in words), dtype=np.int64, count=len(words))  # (n,) -1: not in it
    bad = [w for w, i in zip(words, ids.tolist(), strict=True) if i >= 0 and mask[i]]
    if not bad:
        return
    more = f" ({len(bad)} such words, e.g. {', '.join(map(repr, bad[:5]))})" if len(bad) > 1 else ""
    why = "its closed vocabulary also holds the valid and test words, and " if bundle.cfg.data.vocab_mode == "closed" \
        else ""
    raise UntrainedWordError(
        f"{bad[0]!r} is a word of this {bundle.model.kind} run's vocabulary but was never seen in training{more}: "
        f"{why}the {side} side is a lookup table, whose row of such a word is untrained; ask for words seen in "
        f"training, or pass {option('allow_untrained', True)} to get the row anyway")

