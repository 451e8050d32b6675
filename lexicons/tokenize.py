"""Gloss tokenisation shared by every backend, so all of them give identical definition tokens."""

from __future__ import annotations

import functools
import re

__all__ = ["tokenize_gloss"]

# A token with no letter or digit in it (",", "(", ";", "’") carries nothing for a mean of surface
# encodings and would use up one of the few definition slots (10 in the seed, appendix B.1).
_HAS_WORD_CHAR = re.compile(r"\w")


@functools.lru_cache(maxsize=1)
def _toktok():  # type: ignore[no-untyped-def]
    # Imported lazily: nltk's import is slow, and the TSV backend or a cached load need none of it.
    from nltk.tokenize import ToktokTokenizer

    return ToktokTokenizer()


def tokenize_gloss(text: str) -> list[str]:
    """Tokenise a gloss with NLTK's ToktokTokenizer and drop punctuation-only tokens.

    Case is kept: a definition token is encoded from its characters like any other word.
    """
    text = " ".join(text.split())
    if not text:
        return []
    return [tok for tok in _toktok().tokenize(text) if _HAS_WORD_CHAR.search(tok)]
