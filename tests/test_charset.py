from __future__ import annotations

import numpy as np
import pytest

from groc_base.errors import ModelError
from polyglot_groc.model.charset import BOW, EOW, PAD, UNK_CHAR, Charset, check_word_lengths


def test_table_layout_and_unknown_chars() -> None:
    cs = Charset.from_words(["chat", "été"], max_word_len=8)
    table = cs.encode(["chat", "thé", "ß"])
    assert table.shape == (3, 8) and table.dtype == np.int64
    assert (table[:, 0] == BOW).all()
    # "chat": 4 chars then EOW then PAD
    assert table[0, 5] == EOW and (table[0, 6:] == PAD).all()
    # unseen characters map to UNK-char, never crash
    assert table[2, 1] == UNK_CHAR and table[2, 2] == EOW
    # same char, same id across words
    assert table[0, 4] == table[1, 1]  # 't'


def test_truncation_keeps_eow() -> None:
    cs = Charset.from_words(["abcdefghijkl"], max_word_len=6)
    row = cs.encode(["abcdefghijkl"])[0]
    assert list(row[[0, -1]]) == [BOW, EOW] and PAD not in row


def test_state_roundtrip() -> None:
    cs = Charset.from_words(["ёж", "кот", "chat"])
    assert Charset.from_state(cs.to_state()) == cs


def test_elmo_bytes_scheme() -> None:
    cs = Charset.elmo_bytes(10)
    row = cs.encode(["é"])[0]
    # bilm-tf: BOW=258, bytes, EOW=259, pad=260, all +1
    assert list(row[:5]) == [259, 0xC3 + 1, 0xA9 + 1, 260, 261] and cs.n_chars == 262
    assert list(cs.encode(["<S>"])[0][:4]) == [259, 257, 260, 261]


def test_absurd_word_length() -> None:
    with pytest.raises(ModelError, match="not tokenised"):
        check_word_lengths(["ok", "x" * 5000])
