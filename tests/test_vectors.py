"""Tests of eval.vectors: .vec round trip, MUSE-compatible reading, every malformed input."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from eval.vectors import read_vec, vocabulary_index, write_vec
from groc_base.errors import InputError

FIXTURE = Path(__file__).parent / "data" / "eval" / "tiny.vec"


def test_round_trip_is_exact(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    words = ["the", "Straße", "naïve", "日本", "end"]
    vectors = (rng.standard_normal((5, 7)) * np.array([1e-8, 1e-3, 1, 10, 1e5, 3e7, 1])).astype(np.float32)
    path = tmp_path / "out.vec"
    write_vec(path, words, vectors)
    got_words, got = read_vec(path)
    assert got_words == words
    assert got.dtype == np.float32 and got.shape == (5, 7)
    np.testing.assert_array_equal(got, vectors)  # 9 significant digits: float32 exact
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)
    assert [p.name for p in tmp_path.iterdir()] == ["out.vec"]  # no temp file left behind


def test_written_file_parses_like_muse_and_gensim(tmp_path: Path) -> None:
    path = tmp_path / "out.vec"
    write_vec(path, ["a", "b"], np.array([[0.5, -1.25, 3.0], [1e-7, 2.0, -0.0]], dtype=np.float32))
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "2 3" and lines[-1] == ""
    for line in lines[1:-1]:
        word, vect = line.rstrip().split(" ", 1)  # MUSE's read_txt_embeddings
        assert np.fromstring(vect, sep=" ").shape == (3,)
        parts = line.rstrip().split(" ")  # gensim's _word2vec_line_to_vector
        assert len(parts) == 4 and parts[0] == word
    assert lines[1] == "a 0.5 -1.25 3"


def test_read_fixture_max_vocab_lower_and_duplicates(caplog: pytest.LogCaptureFixture) -> None:
    # tiny.vec: 6 rows; "The" and "the" collide when lowercased; "cat" appears twice.
    with caplog.at_level(logging.WARNING, logger="eval.vectors"):
        words, vectors = read_vec(FIXTURE)
    assert words == ["the", "The", "cat", "dog", "émigré"]
    assert "1 duplicate word(s)" in caplog.text and "'cat'" in caplog.text
    np.testing.assert_array_equal(vectors[2], [0.5, 0.5, 0.0])  # first "cat" kept
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="eval.vectors"):
        lowered, low_vectors = read_vec(FIXTURE, lower=True)
    assert lowered == ["the", "cat", "dog", "émigré"]
    # 'The' is a case variant merged by lowercasing (INFO); the second 'cat' a real duplicate (WARNING)
    assert "1 duplicate word(s)" in caplog.text and "1 case variant(s) merged" in caplog.text
    assert [r.levelno for r in caplog.records if "duplicate" in r.getMessage()] == [logging.WARNING]
    np.testing.assert_array_equal(low_vectors[0], vectors[0])
    top, top_vectors = read_vec(FIXTURE, max_vocab=2, lower=True)
    assert top == ["the", "cat"] and top_vectors.shape == (2, 3)


def test_vocabulary_index_first_occurrence() -> None:
    assert vocabulary_index(["a", "b", "A", "a"]) == {"a": 0, "b": 1, "A": 2}
    assert vocabulary_index(["a", "b", "A", "a"], lower=True) == {"a": 0, "b": 1}


def test_read_tolerates_crlf_trailing_spaces_and_final_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "v.vec"
    path.write_bytes(b"2 2\r\nx 1 2 \r\ny 3 4\n\n\n")
    words, vectors = read_vec(path)
    assert words == ["x", "y"]
    np.testing.assert_array_equal(vectors, [[1, 2], [3, 4]])


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", r"is empty"),
        (b"x 1 2\n", r"line 1 must be the header 'N D'.*glove"),
        (b"3\nx 1 2 3\n", r"line 1 must be the header"),
        (b"0 3\n", r"line 1 declares 0 words"),
        (b"2 3\nx 1 2 3\ny 1 2\n", r"line 3 \(word 'y'\) has 2 values but the header says 3"),
        (b"2 3\nx 1 2 3\ny 1 2 3 4\n", r"line 3 \(word 'y'\) has 4 values"),
        (b"3 2\nx 1 2\ny 3 4\n", r"declares 3 words but the file has 2 rows; fix the header to '2 2'"),
        (b"1 2\nx 1 2\ny 3 4\n", r"line 3 is row 2 but the header declares 1 words"),
        (b"2 2\nx 1 nan\ny 3 4\n", r"line 2 contains nan or inf"),
        (b"2 2\nx 1 2\ny -inf 4\n", r"line 3 contains nan or inf"),
        (b"2 2\nx 1 2\ny 3 four\n", r"line 3 has the non-numeric value 'four'"),
        (b"2 2\nx 1 2\ncaf\xe9 3 4\n", r"line 3 is not valid utf-8.*re-encode"),
        (b"2 2\nx 1 2\n\ny 3 4\n", r"line 3 is blank inside the data"),
        (b"1 2\n 1 2\n", r"line 2 starts with a space"),
    ],
)
def test_read_errors_name_file_line_and_fix(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "bad.vec"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match) as info:
        read_vec(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    assert message[0] == message[0].lower()


def test_read_missing_file_and_bad_max_vocab(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="check the path"):
        read_vec(tmp_path / "missing.vec")
    with pytest.raises(InputError, match="max_vocab=0"):
        read_vec(FIXTURE, max_vocab=0)


def test_read_error_in_a_later_chunk_reports_its_line(tmp_path: Path) -> None:
    rows = [f"w{i} {i} 1" for i in range(5000)]
    rows[4500] = "w4500 1 x"
    path = tmp_path / "big.vec"
    path.write_text("5000 2\n" + "\n".join(rows) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 4502 has the non-numeric value 'x'"):
        read_vec(path)


@pytest.mark.parametrize("word", ["two words", "tab\there", "nbsp\u00a0x", "", "new\nline"])
def test_write_rejects_words_with_whitespace(tmp_path: Path, word: str) -> None:
    path = tmp_path / "out.vec"
    with pytest.raises(InputError, match="empty or contains whitespace"):
        write_vec(path, ["ok", word], np.zeros((2, 2)))
    assert not path.exists() and list(tmp_path.iterdir()) == []


def test_write_errors_keep_the_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "out.vec"
    write_vec(path, ["a"], np.ones((1, 2)))
    before = path.read_bytes()
    with pytest.raises(InputError, match="2 words but 1 vectors"):
        write_vec(path, ["a", "b"], np.ones((1, 2)))
    with pytest.raises(InputError, match="nan"):
        write_vec(path, ["a"], np.array([[np.nan, 1.0]]))
    with pytest.raises(InputError, match="2-d"):
        write_vec(path, ["a"], np.ones(2))
    with pytest.raises(InputError, match="does not exist"):
        write_vec(tmp_path / "no" / "dir.vec", ["a"], np.ones((1, 2)))
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["out.vec"]
