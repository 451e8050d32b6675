"""A plain-text lexicon for languages without a wordnet.

Format (UTF-8, one record per line, four tab-separated columns)::

    # comment lines start with '#'; blank lines are ignored
    lang<TAB>word<TAB>related<TAB>w1|w2|w3
    lang<TAB>word<TAB>definition<TAB>gloss text

* ``lang``: a language code (``fr``; ``fra`` and ``fr-FR`` are normalised to ``fr``).
* ``related``: ``|``-separated related words (synonyms, hyponyms, translations...) in priority
  order.  Several ``related`` lines for a word are concatenated; duplicates and the word itself
  are dropped, as in every backend.  Underscores become spaces (WordNet-style multiwords).
* ``definition``: free text, tokenised like wordnet glosses
  (:func:`lexicons.tokenize.tokenize_gloss`).  At most one per word and language.

Lookup is exact, then case-insensitive.  Errors name the file and line number.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groc_base.checks import check_input_file
from groc_base.errors import LexiconFormatError, LexiconMissingError
from groc_base.fileio import atomic_write_bytes
from groc_base.textio import decode_text
from lexicons.protocol import dedupe_related, display_lemma, normalize_lang
from lexicons.tokenize import tokenize_gloss

__all__ = ["TsvLexicon", "parse_tsv_lexicon", "write_tsv_lexicon"]

_KINDS = ("related", "definition")


def parse_tsv_lexicon(
    text: str, source: str = "<string>"
) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], str]]:
    """Parse the format above into ``(lang, word) -> related`` and ``(lang, word) -> gloss``."""
    related: dict[tuple[str, str], list[str]] = {}
    glosses: dict[tuple[str, str], str] = {}
    gloss_line: dict[tuple[str, str], int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = line.split("\t")
        where = f"{source} line {lineno}"
        if len(cols) != 4:
            raise LexiconFormatError(
                f"{where}: expected 4 tab-separated columns 'lang, word, related|definition, value', "
                f"got {len(cols)}: {line[:80]!r}"
            )
        lang_raw, word, kind, value = (c.strip() for c in cols)
        lang = normalize_lang(lang_raw) if lang_raw else ""
        if not lang or not lang.replace("-", "").isalpha():
            raise LexiconFormatError(f"{where}: bad language code {lang_raw!r}; use e.g. 'fr'")
        if not word:
            raise LexiconFormatError(f"{where}: empty word")
        key = (lang, word)
        if kind == "related":
            items = [x.strip() for x in value.split("|")]
            if not value or any(not x for x in items):
                raise LexiconFormatError(f"{where}: empty item in related list {value!r}; write 'w1|w2|w3'")
            related.setdefault(key, []).extend(display_lemma(x) for x in items)
        elif kind == "definition":
            if not value:
                raise LexiconFormatError(f"{where}: empty definition for {word!r}")
            if key in glosses:
                raise LexiconFormatError(
                    f"{where}: second definition of {word!r} ({lang}); the first is on line {gloss_line[key]}"
                )
            glosses[key] = value
            gloss_line[key] = lineno
        else:
            raise LexiconFormatError(f"{where}: unknown record kind {kind!r}; use 'related' or 'definition'")
    return related, glosses


class TsvLexicon:
    """Related words and definitions from one or more TSV files (format in the module docstring)."""

    def __init__(self, paths: Path | str | Sequence[Path | str]) -> None:
        items = [paths] if isinstance(paths, str | Path) else list(paths)
        if not items:
            raise LexiconMissingError("no tsv lexicon files given")
        self.paths = [Path(p).expanduser() for p in items]
        self._related: dict[tuple[str, str], list[str]] = {}
        self._glosses: dict[tuple[str, str], str] = {}
        self._specs: list[str] = []
        for path in self.paths:
            if path.exists():  # a FIFO would block the read: refused before it
                check_input_file(path, flag="tsv lexicon", what="TSV file")
            try:
                data = path.read_bytes()
            except FileNotFoundError as exc:
                raise LexiconMissingError(f"tsv lexicon {str(path)!r} does not exist; check the path") from exc
            text = decode_text(data, path, what="tsv lexicon", error=LexiconFormatError)
            related, glosses = parse_tsv_lexicon(text, source=path.name)
            for key, words in related.items():
                self._related.setdefault(key, []).extend(words)
            for key, gloss in glosses.items():
                self._glosses.setdefault(key, gloss)  # earlier files win, like earlier lines
            # Content hash, so an edited file invalidates caches keyed on specs.
            self._specs.append(f"tsv:{path.name}@{hashlib.sha256(data).hexdigest()[:12]}")
        self._lower: dict[tuple[str, str], tuple[str, str]] = {}
        for key in list(self._related) + list(self._glosses):
            self._lower.setdefault((key[0], key[1].lower()), key)
        self._langs = sorted({lang for lang, _ in list(self._related) + list(self._glosses)})
        self._tokens: dict[tuple[str, str], list[str]] = {}

    @property
    def specs(self) -> list[str]:
        return list(self._specs)

    @property
    def settings(self) -> dict[str, Any]:
        return {"backend": "tsv"}

    def languages(self) -> list[str]:
        return list(self._langs)

    def _key(self, word: str, lang: str) -> tuple[str, str] | None:
        lang = normalize_lang(lang)
        key = (lang, word)
        if key in self._related or key in self._glosses:
            return key
        return self._lower.get((lang, word.lower()))

    def related(self, word: str, lang: str) -> list[str]:
        key = self._key(word, lang)
        return dedupe_related(word, self._related.get(key, [])) if key else []

    def definition(self, word: str, lang: str) -> list[str]:
        key = self._key(word, lang)
        if key is None or key not in self._glosses:
            return []
        tokens = self._tokens.get(key)
        if tokens is None:
            tokens = self._tokens[key] = tokenize_gloss(self._glosses[key])
        return list(tokens)

    def definition_lang(self, word: str, lang: str) -> str | None:
        """A TSV definition is in its record's language."""
        key = self._key(word, lang)
        return key[0] if key is not None and key in self._glosses else None

    def words(self, lang: str) -> list[str]:
        """Every word with a record in ``lang``, in file order."""
        lang = normalize_lang(lang)
        return list(dict.fromkeys(w for key_lang, w in list(self._related) + list(self._glosses) if key_lang == lang))


def write_tsv_lexicon(rows: Sequence[tuple[str, str, list[str], str | None]], path: Path | str) -> Path:
    """Write ``(lang, word, related, gloss)`` rows in the TSV format (e.g. to freeze a wordnet)."""
    out = Path(path)
    lines = ["# polyglot-groc tsv lexicon: lang<TAB>word<TAB>related|definition<TAB>value"]
    for lang, word, related, gloss in rows:
        for field_ in (lang, word, gloss or "", *related):
            if "\t" in field_ or "\n" in field_:
                raise LexiconFormatError(f"cannot write {field_!r} to a tsv lexicon: it contains a tab or newline")
        if any("|" in r for r in related):
            raise LexiconFormatError(f"related words of {word!r} contain '|', the tsv list separator")
        if related:
            lines.append(f"{lang}\t{word}\trelated\t{'|'.join(related)}")
        if gloss:
            lines.append(f"{lang}\t{word}\tdefinition\t{gloss}")
    atomic_write_bytes(out, ("\n".join(lines) + "\n").encode("utf-8"))  # never half a lexicon
    return out
