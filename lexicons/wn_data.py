"""The wn backend's data model: one lexicon loaded for lookups, and one installed lexicon's row.

Shared by :mod:`lexicons.wn_backend` (which builds and reads it) and :mod:`lexicons.wn_mirror`
(which writes it to, and serves it from, its compiled on-disk copy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from lexicons.tokenize import tokenize_gloss

__all__ = ["DB_FILENAME", "Installed", "LexData", "db_path"]

#: The database file in a wn data folder.
DB_FILENAME = "wn.db"


@dataclass
class LexData:
    """One lexicon as dense sequences indexed by a synset number, plus mappings from forms.

    Built in memory (lists and dicts) from the database, or backed by a cache file (see
    :class:`lexicons.wn_mirror.CachedColumn`), whose rows are read on demand: the lookup code is the same for both.
    """

    spec: str
    lang: str
    synset_pos: Sequence[str]
    synset_ili: Sequence[str | None]
    members: Sequence[tuple[str, ...]]
    hyponyms: Sequence[tuple[int, ...]]
    definitions: Sequence[str | None]
    has_relations: bool
    lemmas: Sequence[str]  # distinct lemmas as written, in entry order
    lower_index: Mapping[str, tuple[int, ...]]  # lemma, lower-cased
    form_index: Mapping[str, tuple[int, ...]]  # other forms, lower-cased
    ili_index: Mapping[str, int]  # ILI id -> first synset with it
    # wn.morphy's suffix rules (part of speech -> (suffix, replacement)), taken from wn when the
    # lexicon is read, so that a process loading the cache need not import wn.
    morphy_rules: Mapping[str, Sequence[tuple[str, str]]]
    # tokenize_gloss of each definition, joined by spaces (tokens hold no whitespace, so split()
    # gives them back), None where there is none; filled for the on-disk cache, so a process that
    # loads it never imports NLTK.  None: tokenise lazily.
    definition_tokens: Sequence[str | None] | None = None

    @property
    def num_synsets(self) -> int:
        return len(self.synset_pos)

    def gloss_tokens(self, synset: int) -> list[str]:
        """The tokens of the synset's own definition (``[]`` where it has none)."""
        if self.definition_tokens is not None:
            return (self.definition_tokens[synset] or "").split()
        text = self.definitions[synset]
        return tokenize_gloss(text) if text else []

    def tokenize_definitions(self) -> None:
        self.definition_tokens = [" ".join(tokenize_gloss(t)) if t else None for t in self.definitions]


@dataclass(frozen=True)
class Installed:
    rowid: int
    id: str
    version: str
    language: str
    label: str

    @property
    def spec(self) -> str:
        return f"{self.id}:{self.version}"


def db_path(wn_dir: Path) -> Path:
    """The ``wn`` database of a data folder."""
    return wn_dir / DB_FILENAME
