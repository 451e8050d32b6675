from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from groc_base.errors import InputError
from polyglot_groc.model.vocab import UNK, Vocab


def _vocab() -> Vocab:
    return Vocab.build({"en": Counter({"the": 5, "cat": 2, "chat": 1}), "fr": Counter({"le": 4, "chat": 3})})


def test_sorted_by_frequency_union_membership() -> None:
    v = _vocab()
    assert v.words == ("the", "chat", "le", "cat") and v.counts == (5, 4, 4, 2)  # ties by string
    assert list(v.lang_ids("fr")) == sorted([v.id("le"), v.id("chat")])
    assert v.word_langs()[v.id("chat")] == ("en", "fr")  # one item for the shared string


def test_encode_and_unk() -> None:
    v = Vocab.build({"en": Counter({"a": 2, "b": 1})}, add_unk=True)
    assert list(v.encode(["a", "zzz"], unk=True)) == [v.id("a"), v.id(UNK)]
    with pytest.raises(InputError, match="zzz"):
        v.encode(["zzz"])


def test_extend_returns_new_vocab_without_mutation() -> None:
    v = _vocab()
    before = (v.words, v.membership.copy())
    w = v.extend({"fr": ["chien", "le"]})
    assert v.words == before[0] and np.array_equal(v.membership, before[1])
    assert w.words[-1] == "chien" and len(w) == len(v) + 1
    assert w.membership[w.id("chien")].tolist() == [False, True]


def test_state_roundtrip_and_fingerprint() -> None:
    v = _vocab()
    r = Vocab.from_state(v.to_state())
    assert r.words == v.words and np.array_equal(r.membership, v.membership)
    assert r.fingerprint() == v.fingerprint() != v.extend({"en": ["dog"]}).fingerprint()


def test_training_counts_are_recorded_apart_from_the_closed_vocabulary_s_counts() -> None:
    """A closed vocabulary counts train+valid+test; ``train_counts`` keeps what training read, through extension,
    a finetuning corpus and a checkpoint."""
    v = Vocab.build({"en": Counter({"the": 5, "cat": 2, "zebra": 1})},
                    train_counts={"en": Counter({"the": 4, "cat": 2})})
    assert v.train_counts is not None and v.train_counts[:, 0].tolist() == [4, 2, 0]  # the, cat, zebra
    assert v.trained().tolist() == [True, True, False]
    assert Vocab.build({"en": Counter({"a": 2})}).trained().tolist() == [True]  # open: its counts are training's
    grown = v.extend({"en": ["kettle"]})
    assert grown.trained().tolist() == [True, True, False, False]
    tuned = grown.with_training({"en": Counter({"kettle": 3, "unknown": 9})})  # words outside it are not counted
    assert tuned.train_counts[:, 0].tolist() == [4, 2, 0, 3] and v.train_counts[:, 0].tolist() == [4, 2, 0]
    back = Vocab.from_state(tuned.to_state())
    assert np.array_equal(back.train_counts, tuned.train_counts)
    state = tuned.to_state()
    del state["train_counts"]  # a vocabulary saved before the field: not recorded, not made up
    old = Vocab.from_state(state)
    assert old.train_counts is None and old.trained() is None and old.with_training({"en": Counter()}) is old
