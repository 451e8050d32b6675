"""HTML/XML markup taken out of text by a real parser, corpus placeholders (``<unk>``) kept.

:func:`strip_markup` runs the standard library's :class:`html.parser.HTMLParser`, the tokenizer
behind Python's own HTML handling: it reads attributes with ``>`` inside quotes (``<a title="x > y">``),
comments, ``<!DOCTYPE>``, ``<![CDATA[...]]>``, processing instructions (``<?xml ...?>``) and the raw
text of ``<script>``/``<style>`` the way a browser does, which patterns cannot (the regular
expressions this replaced left the tail of every such ``<a>``, the doctype, CDATA and the CSS and
JavaScript in the corpus). It is in the standard library and streams; lxml, selectolax or
BeautifulSoup build a whole tree and would add a dependency for no gain on what is removed here.

What becomes of each piece:

* ``<script>``, ``<style>``, ``<template>``, ``<noscript>``: removed with their content;
  comments, declarations (doctype), processing instructions and CDATA sections: removed.
* Block elements (``p``, ``div``, ``li``, ``h1``..``h6``, ``tr``, ``td``, ``title``, ...) end a
  paragraph (a blank line: ``text="running"`` then reads each as one paragraph); ``<br>`` ends a
  line; inline elements (``b``, ``i``, ``a``, ``span``, ...) vanish without a space, as a browser
  renders ``<b>Hel</b>lo``; any other tag (XML elements, ``img``) becomes a space.
* Character references (``&amp;``, ``&eacute;``, ``&#8217;``) are decoded, as a browser does.
* Whitespace runs within a line become one space and lines are stripped; at most one blank line
  stays between paragraphs.

Corpus placeholders are not markup: ``<unk>``, ``<eos>``, ``<bos>``, ``<pad>``, ``<mask>``,
``<num>``, ``<url>``, WikiText's ``<formula>`` (lower or upper case, :data:`PLACEHOLDERS`) are kept
wherever they are, and ``<s>``/``</s>`` when they stand alone between spaces or line ends (sentence
markers; HTML's strike-through ``<s>old</s>`` is written against its text). WikiText's ``@-@``,
``@,@`` and ``@.@`` contain no markup characters and are left alone. Placeholders are neither
counted as markup nor removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

__all__ = ["PLACEHOLDERS", "Markup", "count_markup", "strip_markup"]

#: Names of the corpus placeholders kept as text (``<unk>`` or ``<UNK>``), besides space-delimited ``<s>``/``</s>``.
PLACEHOLDERS: tuple[str, ...] = ("unk", "eos", "bos", "sos", "pad", "mask", "num", "url", "formula")

_PLACEHOLDER = re.compile("|".join([*(f"<{n}>|<{n.upper()}>" for n in PLACEHOLDERS), r"(?<!\S)</?s>(?!\S)"]))
#: A character reference as written (what is counted; html.parser decodes them).
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,30}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")

_DROP = frozenset({"script", "style", "template", "noscript"})
_BLOCK = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "dir",
    "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "frameset", "h1", "h2", "h3", "h4",
    "h5", "h6", "head", "header", "hgroup", "hr", "html", "legend", "li", "main", "menu", "nav", "ol", "optgroup",
    "option", "p", "pre", "section", "summary", "table", "tbody", "tfoot", "thead", "title", "tr", "ul",
})
#: Elements that end a line, not a paragraph: a table's cells are the lines of its row's paragraph.
_LINE = frozenset({"br", "td", "th"})
_INLINE = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i",
    "ins", "kbd", "label", "mark", "nobr", "q", "rb", "rp", "rt", "rtc", "ruby", "s", "samp", "small", "span",
    "strike", "strong", "sub", "sup", "time", "tt", "u", "var", "wbr",
})
_SPACES = re.compile(r"[^\S\n]+")  # any whitespace but a newline (tabs, NBSP from &nbsp;, \r)
_BLANK_RUNS = re.compile(r"\n{3,}")
_EXAMPLE_CHARS = 60


@dataclass(frozen=True)
class Markup:
    """What :func:`strip_markup` found: the text without markup, and counts with a first example each."""

    #: The text with markup removed and character references decoded (placeholders kept).
    text: str
    #: Tags, comments, declarations, processing instructions, CDATA sections and character references found.
    found: int
    #: The first piece of markup as written (a tag if any, else a reference), or "".
    example: str
    #: Corpus placeholders recognised and kept (``<unk>`` ...).
    placeholders: int
    #: Markup-like pieces left in ``text`` (escaped markup such as ``&lt;b&gt;`` that decodes to ``<b>``, or
    #: broken tags): counted by the same parser over the result.
    remaining: int
    #: The first remaining piece, or "".
    remaining_example: str


class _Cleaner(HTMLParser):
    """Collects text pieces and counts markup (see the module docstring for what becomes of what).

    Breaks are written as the stand-in characters ``paragraph`` and ``line`` rather than newlines,
    so that :func:`_tidy` can merge them with the source's own line ends around them (``<br>``
    followed by a newline in the source is one line break, not a blank line).
    """

    def __init__(self, collect: bool, paragraph: str, line: str) -> None:
        super().__init__(convert_charrefs=True)
        self.collect = collect
        self.paragraph, self.line = paragraph, line
        self.out: list[str] = []
        self.found = 0
        self.example = ""
        self.dropping = 0  # depth inside script/style/template/noscript

    def _markup(self, piece: str, replacement: str = "") -> None:
        self.found += 1
        if not self.example:
            self.example = piece[:_EXAMPLE_CHARS]
        if self.collect and replacement and not self.dropping:
            self.out.append(replacement)

    def _replacement(self, tag: str) -> str:
        if tag in _BLOCK:
            return self.paragraph
        if tag in _LINE:
            return self.line
        return "" if tag in _INLINE else " "

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._markup(self.get_starttag_text() or f"<{tag}>", self._replacement(tag))
        if tag in _DROP:
            self.dropping += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._markup(self.get_starttag_text() or f"<{tag}/>", self._replacement(tag))

    def handle_endtag(self, tag: str) -> None:
        if tag in _DROP and self.dropping:
            self.dropping -= 1
        self._markup(f"</{tag}>", self._replacement(tag))

    def handle_data(self, data: str) -> None:
        if self.collect and not self.dropping:
            self.out.append(data)

    def handle_comment(self, data: str) -> None:
        self._markup(f"<!--{data}-->", " ")

    def handle_decl(self, decl: str) -> None:
        self._markup(f"<!{decl}>", " ")

    def handle_pi(self, data: str) -> None:
        self._markup(f"<?{data}>", " ")

    def unknown_decl(self, data: str) -> None:  # <![CDATA[...]]> and other marked sections
        self._markup(f"<![{data}]]>", " ")


def _stand_ins(text: str, n: int) -> list[str]:
    """``n`` private-use characters (plane 15) that ``text`` does not hold: markers the parser passes
    through as data."""
    free = (chr(c) for c in range(0xF0000, 0xFFFFE) if chr(c) not in text)
    return [next(free) for _ in range(n)]


def _scan(text: str, collect: bool) -> tuple[str, int, str, int]:
    """``(text without markup, tidied ("" unless collect), markup found, first example, placeholders)``;
    placeholders are hidden from the parser behind stand-in characters and put back after."""
    if "<" not in text and "&" not in text:
        return text, 0, "", 0
    forms = sorted(set(_PLACEHOLDER.findall(text)))
    paragraph, line, *hidden = _stand_ins(text, 2 + len(forms))
    stand_in = dict(zip(forms, hidden, strict=True))
    placeholders = 0

    def hide(match: re.Match[str]) -> str:
        nonlocal placeholders
        placeholders += 1
        return stand_in[match.group(0)]

    protected = _PLACEHOLDER.sub(hide, text) if forms else text
    parser = _Cleaner(collect, paragraph, line)
    parser.feed(protected)
    parser.close()
    references = _ENTITY.findall(protected)
    found = parser.found + len(references)
    example = parser.example or (references[0] if references else "")
    if not collect:
        return "", found, example, placeholders
    out = _tidy("".join(parser.out), paragraph, line, text.endswith("\n"))
    if forms:
        out = out.translate(str.maketrans({c: form for form, c in stand_in.items()}))
    return out, found, example, placeholders


def _tidy(text: str, paragraph: str, line: str, ends_with_newline: bool) -> str:
    """Breaks merged with the whitespace around them (a paragraph wins over a line), whitespace runs
    within a line made one space, lines stripped, at most one blank line in a row."""
    breaks = re.compile(rf"\s*(?:[{paragraph}{line}]\s*)+")
    text = breaks.sub(lambda m: "\n\n" if paragraph in m.group(0) else "\n", text)
    lines = [_SPACES.sub(" ", piece).strip() for piece in text.split("\n")]
    tidy = _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip("\n")
    return tidy + "\n" if ends_with_newline and tidy else tidy


def count_markup(text: str) -> tuple[int, str, int]:
    """``(pieces of markup in text, the first as written, placeholders)``: what :func:`strip_markup`
    would find, without building the cleaned text (placeholders are not markup)."""
    _, found, example, placeholders = _scan(text, collect=False)
    return found, example, placeholders


def strip_markup(text: str) -> Markup:
    """``text`` without HTML/XML markup (module docstring), with what was found and what is left."""
    out, found, example, placeholders = _scan(text, collect=True)
    if not found:
        return Markup(text, 0, "", placeholders, 0, "")
    remaining, remaining_example, _ = count_markup(out)
    return Markup(out, found, example, placeholders, remaining, remaining_example)
