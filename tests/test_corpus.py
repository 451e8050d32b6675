"""Corpus reading: text and CoNLL-U splits, NFC, <eos>, and the errors for bad files."""

from __future__ import annotations

import gzip
import unicodedata
from pathlib import Path

import pytest

from groc_base.errors import CorpusError, UnknownLanguageError
from langpairs.corpus import EOS, MultilingualCorpus, find_split, read_split

DATA = Path(__file__).parent / "data" / "corpus"
TINY = DATA / "tiny"


def test_text_split_one_sentence_per_line_with_eos() -> None:
    sentences = read_split(TINY / "en" / "train.txt")
    # the blank line is not a sentence
    assert sentences == [
        ["the", "cat", "sat", "on", "the", "mat", ".", EOS],
        ["a", "dog", "barked", ".", EOS],
    ]


def test_conllu_reads_forms_and_skips_multiword_ranges_and_empty_nodes() -> None:
    sentences = read_split(TINY / "fr" / "train.conllu")
    assert sentences == [
        ["Il", "parle", "de", "le", "chat", ".", EOS],  # "du" (3-4) skipped, its words kept
        ["Jean", "dort", "10_000", EOS],  # empty node 1.1 skipped; inner space made safe
    ]


def test_gzipped_conllu(tmp_path: Path) -> None:
    path = tmp_path / "test.conllu.gz"
    path.write_bytes(gzip.compress((TINY / "fr" / "train.conllu").read_bytes()))
    assert read_split(path) == read_split(TINY / "fr" / "train.conllu")


def test_nfc_normalisation() -> None:
    (sentence,) = read_split(DATA / "nfd.txt")
    assert sentence[0] == sentence[1] == "caf\u00e9"
    assert all(unicodedata.is_normalized("NFC", t) for t in sentence)


def test_custom_tokenizer_is_used_for_text() -> None:
    (sentence, _) = read_split(TINY / "en" / "train.txt", tokenizer=lambda s: s.upper().split())
    assert sentence[:2] == ["THE", "CAT"] and sentence[-1] == EOS


def test_non_utf8_names_file_and_offset() -> None:
    with pytest.raises(CorpusError) as info:
        read_split(DATA / "latin1.txt")
    message = str(info.value)
    assert "latin1.txt" in message and "byte offset 11" in message and "utf-8" in message
    assert isinstance(info.value.__cause__, UnicodeDecodeError)


@pytest.mark.parametrize("name", ["blank.txt"])
def test_empty_split_is_an_error(name: str, tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no tokens"):
        read_split(DATA / name)
    (tmp_path / "zero.txt").write_bytes(b"")
    with pytest.raises(CorpusError, match="no tokens"):
        read_split(tmp_path / "zero.txt")


def test_malformed_conllu_names_the_line() -> None:
    with pytest.raises(CorpusError, match="line 1: 3 tab-separated fields"):
        read_split(DATA / "bad.conllu")


def test_missing_split_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(CorpusError) as info:
        find_split(tmp_path, "en", "train")
    assert str(tmp_path / "en" / "train.txt") in str(info.value)
    with pytest.raises(CorpusError, match="does not exist"):
        read_split(tmp_path / "nope.txt")


def test_find_split_prefers_txt(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "train.conllu").write_text("1\ta\t_\t_\t_\t_\t0\troot\t_\t_\n", encoding="utf-8")
    assert find_split(tmp_path, "en", "train").name == "train.conllu"
    (tmp_path / "en" / "train.txt").write_text("a\n", encoding="utf-8")
    assert find_split(tmp_path, "en", "train").name == "train.txt"


def test_multilingual_corpus_load_counts_and_lookup_errors() -> None:
    corpus = MultilingualCorpus.load(TINY, ["en", "fr", "en"])
    assert corpus.langs == ("en", "fr")
    assert corpus.splits["en"]["valid"] == ["the", "dog", "sat", ".", EOS]
    assert corpus.n_tokens("en", "train") == 13
    assert corpus.n_tokens("fr", "train") == 11
    counts = corpus.counts("en", ("train", "valid"))
    assert counts["the"] == 3 and counts[EOS] == 3
    with pytest.raises(UnknownLanguageError, match="loaded: en, fr"):
        corpus.counts("de")
    with pytest.raises(CorpusError, match="not loaded"):
        MultilingualCorpus.load(TINY, ["en"], splits=("train",)).n_tokens("en", "test")


def test_load_reports_a_missing_language_directory() -> None:
    with pytest.raises(CorpusError, match="no train split for 'de'"):
        MultilingualCorpus.load(TINY, ["en", "de"])
