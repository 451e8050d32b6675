"""MUSE dictionary reading: separators, lowercasing, dedupe, malformed lines, lenient mode."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from groc_base.errors import DictionaryError
from langpairs.dictionaries import group_by_source, read_dictionary

DICT = Path(__file__).parent / "data" / "corpus" / "dict"


def test_tab_separated_lowercased_ordered_and_deduplicated() -> None:
    assert read_dictionary(DICT / "tab.txt") == [
        ("the", "le"),
        ("the", "la"),
        ("cat", "chat"),
        ("new york", "new york"),  # a tab line may hold multi-word entries
    ]
    assert ("The", "La") in read_dictionary(DICT / "tab.txt", lower=False)


def test_malformed_line_names_file_and_line() -> None:
    with pytest.raises(DictionaryError) as info:
        read_dictionary(DICT / "space_bad.txt")
    message = str(info.value)
    assert "space_bad.txt line 3" in message and "got 3" in message and "lenient" in message


def test_lenient_skips_with_one_counted_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="langpairs.dictionaries"):
        pairs = read_dictionary(DICT / "space_bad.txt", lenient=True)
    assert pairs == [("the", "le"), ("cat", "chat"), ("house", "maison")]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "skipped 2 malformed" in warnings[0].getMessage()


def test_empty_and_non_utf8_and_missing_files() -> None:
    with pytest.raises(DictionaryError, match="no word pairs"):
        read_dictionary(DICT / "empty.txt")
    with pytest.raises(DictionaryError, match="byte offset 3"):
        read_dictionary(DICT / "latin1.txt")
    with pytest.raises(DictionaryError, match="does not exist"):
        read_dictionary(DICT / "nope.txt")


def test_group_by_source() -> None:
    assert group_by_source([("the", "le"), ("cat", "chat"), ("the", "la")]) == {
        "the": ["le", "la"],
        "cat": ["chat"],
    }


def test_real_muse_dictionaries() -> None:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set (point it at the shared data folder)")
    folder = Path(root) / "eval" / "dictionaries"
    space = read_dictionary(folder / "en-fr.5000-6500.txt")  # space-separated
    tab = read_dictionary(folder / "en-nl.5000-6500.txt")  # tab-separated
    assert len(space) == 2943 and len(tab) == 2481
    assert all(len(p) == 2 and all(p) for p in space + tab)
    assert len(read_dictionary(folder / "en-fr.txt.gz")) > 100_000
