"""``data prepare --clean markup``: HTML read by a parser, corpus placeholders kept, leftovers warned about.

The page in tests/data/markup/page.html is an ordinary web page: doctype, a head with a title,
style and script (a CDATA block and ``</p>`` inside a string), a comment holding a tag, links whose
title attributes hold ``>``, entities (named, numeric, ``&nbsp;``), nested inline tags, ``<br>``,
a table, a CDATA section, ``<noscript>``. The regular expressions this replaced left the tails of
the links, the doctype, the CDATA pieces and the CSS and JavaScript in the corpus.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groc_base.textio import read_text
from langpairs.files import clean_text, prepare_language
from langpairs.markup import strip_markup
from polyglot_groc.cli import app

DATA = Path(__file__).parent / "data" / "markup"
PAGE = DATA / "page.html"
WIKITEXT = DATA / "wikitext.txt"

# What the page reads as, written by hand: head/title and block elements become paragraphs, table cells
# lines of their row, <br> a line end; script, style, noscript, comments, CDATA and doctype are gone.
PAGE_TEXT = """\
Harbour Notes \u2013 Issue 12

Home

News

The harbour at dawn

Fishermen leave at five o\u2019clock, before the caf\u00e9 opens.
The boats return at noon \u2014 if the sea allows.

Prices rose by 5% & the market moved inland.
A second line follows the break.

Boat
Crew

Aurora
4

\u00a9 2023 Harbour Notes
"""
# 66 tags, comments, declarations and CDATA sections (start and end tags counted apart) + 9 references.
PAGE_MARKUP = 75


def test_an_ordinary_page_is_cleaned_exactly() -> None:
    result = clean_text(PAGE.read_text(encoding="utf-8"), ("markup",))
    assert result.text == PAGE_TEXT
    assert result.found == {"markup": PAGE_MARKUP} and result.examples["markup"] == "<!DOCTYPE html>"
    assert result.remaining == {} and result.placeholders == 0


def test_a_page_is_only_counted_when_markup_is_not_asked_for() -> None:
    text = PAGE.read_text(encoding="utf-8")
    result = clean_text(text, ())
    assert result.text == text and result.found == {"markup": PAGE_MARKUP}


def test_prepare_language_on_a_page_leaves_no_markup(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        prepared = prepare_language(lang="en", inputs=[PAGE], out=tmp_path / "c", clean="markup,headers",
                                    text="running", tokenizer="whitespace", valid=1, test=1)
    corpus = " ".join((tmp_path / "c" / "en" / f"{split}.txt").read_text(encoding="utf-8")
                      for split in ("train", "valid", "test"))
    for residue in ("<", ">", "&amp", "&nbsp", "&#", "DOCTYPE", "CDATA", "color", "document.write", "never text",
                    "tracker", "JavaScript", "Start\"", "April\""):
        assert residue not in corpus, residue
    assert "caf\u00e9" in corpus and "o\u2019clock" in corpus
    assert prepared.to_dict()["inputs"][0]["cleaning"] == {"removed": {"markup": PAGE_MARKUP}, "kept": {}}
    assert caplog.records == []


@pytest.mark.parametrize("raw, clean", [
    ('<a title="x > y" href="/a">link</a> text', "link text"),  # '>' inside a quoted attribute
    ("<p>one</p><p>two</p>", "one\n\ntwo"),  # block elements end paragraphs
    ("a<br>\nb", "a\nb"),  # <br> and the source's newline after it: one line end
    ("<b>Hel</b>lo wor<i>ld</i>", "Hello world"),  # inline elements leave no space
    ("<w>one</w><w>two</w>", "one two"),  # unknown (XML) elements are word breaks
    ('<?xml version="1.0"?><doc>x</doc>', "x"),  # processing instruction
    ("x<script>if (a<b) {}</script>y", "x y"),
    ("x <![CDATA[ raw ]]> y", "x y"),
    ("AT&T &amp; caf&eacute; &#233; &#xE9;", "AT&T & caf\u00e9 \u00e9 \u00e9"),
    ("<p>old <s>price</s> new</p>", "old price new"),  # HTML's strike-through
])
def test_markup_pieces(raw: str, clean: str) -> None:
    assert strip_markup(raw).text == clean


@pytest.mark.parametrize("text", [
    " = Robert <unk> = \n he had a guest @-@ starring role , 1 @,@ 000 and 2 @.@ 5 <UNK> <eos>\n",
    "<s> the cat sat </s>\n<s> a dog </s>\n",  # sentence markers: alone between spaces
    "<pad> <pad> <bos> word <mask> <num> <url> <formula>\n",
])
def test_corpus_placeholders_are_words_not_markup(text: str) -> None:
    result = clean_text(text, ("markup",))
    assert result.text == text and result.found == {} and result.placeholders > 0
    # Inside real markup they are kept too, and only the markup goes (lines come out stripped).
    mixed = strip_markup(f"<p>\n{text}</p>")
    assert mixed.text == "\n".join(line.strip() for line in text.strip().split("\n")) and mixed.found == 2


def test_wikitext_gets_no_markup_warning_and_keeps_unk(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        plain = prepare_language(lang="en", inputs=[WIKITEXT], out=tmp_path / "a", tokenizer="whitespace",
                                 valid=1, test=1)
    assert caplog.records == []  # no "HTML/XML tags", no --clean markup suggestion
    assert plain.to_dict()["inputs"][0]["cleaning"] == {"removed": {}, "kept": {}}
    cleaned = prepare_language(lang="en", inputs=[WIKITEXT], out=tmp_path / "b", tokenizer="whitespace",
                               clean="markup", valid=1, test=1)
    assert cleaned.to_dict()["inputs"][0]["cleaning"] == {"removed": {}, "kept": {}}
    for split in ("train", "valid", "test"):
        before = (tmp_path / "a" / "en" / f"{split}.txt").read_text(encoding="utf-8")
        assert (tmp_path / "b" / "en" / f"{split}.txt").read_text(encoding="utf-8") == before
    corpus = " ".join((tmp_path / "b" / "en" / f"{split}.txt").read_text(encoding="utf-8")
                      for split in ("train", "valid", "test"))
    for word in ("<unk>", "<UNK>", "<formula>", "@-@", "@,@"):
        assert word in corpus, word


def test_real_wikitext_has_no_markup() -> None:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set (point it at the shared data folder)")
    text = read_text(Path(root) / "text" / "wikitext2" / "test.txt.gz", nfc=True)
    result = clean_text(text, ("markup",))
    assert result.found == {} and result.text == text and result.placeholders > 10_000  # <unk>, <formula>


def test_markup_left_after_cleaning_is_warned_and_recorded(tmp_path: Path,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    # A page about HTML: its escaped tags are text that reads like markup once decoded.
    page = tmp_path / "tutorial.html"
    page.write_text("<html><body>\n" + "".join(f"<p>Step {i}: wrap the word in &lt;b&gt; to make it bold.</p>\n"
                                               for i in range(30)) + "</body></html>\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        prepared = prepare_language(lang="en", inputs=[page], out=tmp_path / "c", clean="markup",
                                    tokenizer="whitespace")
    assert prepared.to_dict()["inputs"][0]["cleaning"] == {"removed": {"markup": 64 + 60}, "kept": {"markup": 30}}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "30 markup-like pieces remain after removing markup (e.g. '<b>')" in warnings[0]
    assert str(page) in warnings[0] and "edit the input" in warnings[0]


def test_cli_cleans_a_page_without_warnings(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["data", "prepare", "--lang", "en", "--input", str(PAGE), "--out",
                                   str(tmp_path / "c"), "--clean", "markup,headers", "--text", "running",
                                   "--valid", "1", "--test", "1"])
    assert res.exit_code == 0, res.output
    assert "warning" not in res.stderr.lower()
    manifest = json.loads((tmp_path / "c" / "prepare.json").read_text(encoding="utf-8"))
    assert manifest["languages"]["en"]["inputs"][0]["cleaning"]["kept"] == {}
    assert "<" not in (tmp_path / "c" / "en" / "train.txt").read_text(encoding="utf-8")
