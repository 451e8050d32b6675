"""The :class:`Lexicon` protocol every backend implements, and the conventions they share.

A lexicon answers two questions about a surface word in one language, as GroC (seed 000 §3.1)
needs them:

* :meth:`Lexicon.related` -- the lemmas of the word's synonyms and hyponyms, across all of the
  word's synsets, in backend synset order and then lemma order, de-duplicated, without the word
  itself.  Multiword lemmas are returned with spaces (WordNet's ``hot_dog`` becomes
  ``hot dog``): they are encoded from their characters like any other string, and a space is
  what a user would type.
* :meth:`Lexicon.definition` -- the gloss of the word's *first* synset, tokenised with
  :func:`lexicons.tokenize.tokenize_gloss`.  The gloss is in the word's language where the
  wordnet has one, else the English gloss of the synset linked through the shared synset / ILI
  (what the thesis, seed 004 §5, does for non-English words).

Both return ``[]`` for a word the lexicon does not know.  A backend may also say which language a
definition is in (``definition_lang(word, lang) -> str | None``, all three here do): ``lexicon
lookup`` labels every gloss with it, since a French word's gloss is often English.  ``specs`` names the data (lexicon
specifiers with versions, or content hashes) so caches keyed on it are invalidated when the data
changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

# The ISO 639 table is the base's (one table for lexicons and langpairs); re-exported here.
from groc_base.languages import ISO639_1_TO_3, normalize_lang, to_iso3

__all__ = [
    "ISO639_1_TO_3",
    "Lexicon",
    "dedupe_related",
    "display_lemma",
    "normalize_lang",
    "to_iso3",
]

def display_lemma(lemma: str) -> str:
    """WordNet's ``_``-joined multiword lemmas as text (``hot_dog`` -> ``hot dog``)."""
    return lemma.replace("_", " ")


def dedupe_related(word: str, lemmas: Iterable[str]) -> list[str]:
    """Order-preserving de-duplication that also drops the word itself.

    The word is compared case-insensitively and with ``_`` read as a space: ``Dog`` is not a
    relational form of ``dog``, it is the same string, and would only repeat the surface encoding.
    """
    own = display_lemma(word).casefold()
    seen: set[str] = set()
    out: list[str] = []
    for lemma in lemmas:
        if lemma in seen or lemma.casefold() == own or not lemma:
            continue
        seen.add(lemma)
        out.append(lemma)
    return out


@runtime_checkable
class Lexicon(Protocol):
    """What :class:`lexicons.service.LexiconService` needs from a lexicon backend."""

    @property
    def specs(self) -> list[str]:
        """Specifiers with versions (or content hashes) of the data; part of every cache key."""
        ...

    def languages(self) -> list[str]:
        """Normalised language codes (see :func:`normalize_lang`) this lexicon covers."""
        ...

    def related(self, word: str, lang: str) -> list[str]:
        """Synonym and hyponym lemmas of ``word`` in ``lang`` (see the module docstring)."""
        ...

    def definition(self, word: str, lang: str) -> list[str]:
        """Tokens of the gloss of the first synset of ``word`` in ``lang``; ``[]`` if none."""
        ...
