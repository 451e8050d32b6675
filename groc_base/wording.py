"""Counts in messages: ``1 word``, ``2 words``, ``12,345 words``, one format everywhere.

Every message that counts something says it with :func:`counted`, so a count of one is singular and
every count of a line is written the same way (thousands grouped with commas).
"""

from __future__ import annotations

__all__ = ["agree", "counted"]


def counted(n: int | float, noun: str, plural: str | None = None) -> str:
    """``n`` and ``noun``, singular for exactly one: ``counted(1, "word")`` is ``1 word``,
    ``counted(1234, "line")`` ``1,234 lines``; ``plural`` for nouns that do not take an s
    (``counted(2, "entry", "entries")``)."""
    many = plural if plural is not None else f"{noun}s"
    text = f"{int(n):,}" if float(n).is_integer() else f"{n:,.2f}"
    return f"{text} {noun if n == 1 else many}"


def agree(n: int | float, one: str, many: str) -> str:
    """The word that agrees with a count: ``agree(1, "is", "are")`` is ``is``, any other count ``are``."""
    return one if n == 1 else many
