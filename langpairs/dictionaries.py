"""MUSE bilingual dictionaries: one ``source target`` pair per line, tab- or space-separated.

MUSE ships some pairs tab-separated (en-nl) and others space-separated (en-fr, en-es); a source
word with several translations appears on several lines, so order and all pairs are kept and
only exact duplicate pairs dropped.
"""

from __future__ import annotations

import logging
from pathlib import Path

from groc_base.errors import DictionaryError
from groc_base.textio import read_text

__all__ = ["group_by_source", "read_dictionary"]

logger = logging.getLogger(__name__)


def _fields(line: str) -> list[str]:
    # A tab-separated line may hold a multi-word entry ("new york\tnueva york"); otherwise any
    # run of whitespace separates the two words.
    if "\t" in line:
        return [field.strip() for field in line.strip().split("\t")]
    return line.split()


def read_dictionary(path: Path, lower: bool = True, lenient: bool = False) -> list[tuple[str, str]]:
    """``(source, target)`` pairs of a MUSE dictionary, file order kept, exact duplicates dropped.

    Text is NFC-normalised (as corpora are) and lowercased unless ``lower=False``. A line
    without exactly two fields raises :class:`DictionaryError` naming file and line, or, with
    ``lenient=True``, is skipped (one warning with the count). ``.gz`` files are read directly.
    """
    path = Path(path)
    text = read_text(path, what="dictionary file", error=DictionaryError, nfc=True)
    pairs: list[tuple[str, str]] = []
    skipped: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = _fields(line)
        if len(fields) != 2 or not all(fields):
            if not lenient:
                raise DictionaryError(
                    f"{path} line {lineno}: expected 2 fields (source, target), got {len(fields)} in "
                    f"{line.strip()[:60]!r}; fix the line or read with lenient=True to skip such lines"
                )
            skipped.append(lineno)
            continue
        source, target = fields
        if lower:
            source, target = source.lower(), target.lower()
        pairs.append((source, target))
    if skipped:
        logger.warning(
            "%s: skipped %d malformed line(s) without exactly 2 fields (first: line %d)",
            path, len(skipped), skipped[0],
        )
    if not pairs:
        raise DictionaryError(f"dictionary file {path} has no word pairs; expected lines 'source target'")
    unique = list(dict.fromkeys(pairs))
    if len(unique) < len(pairs):
        logger.debug("%s: dropped %d duplicate pair(s)", path, len(pairs) - len(unique))
    return unique


def group_by_source(pairs: list[tuple[str, str]]) -> dict[str, list[str]]:
    """Source word -> all its translations, first-seen order (for precision@k with several golds)."""
    grouped: dict[str, list[str]] = {}
    for source, target in pairs:
        grouped.setdefault(source, []).append(target)
    return grouped
