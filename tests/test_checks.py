"""groc_base.checks helpers that the whole repository shares."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from groc_base.checks import is_int

ROOT = Path(__file__).resolve().parent.parent
#: Files that may still hold an inline check (none).
PENDING: set[str] = set()


def test_is_int_refuses_bools_and_takes_numpy_integers_when_asked() -> None:
    assert is_int(3) and is_int(-1) and is_int(0)
    assert not is_int(True) and not is_int(False) and not is_int(3.0) and not is_int("3") and not is_int(None)
    assert not is_int(np.int64(3)) and is_int(np.int64(3), numpy=True) and is_int(np.uint8(1), numpy=True)
    assert not is_int(np.bool_(True), numpy=True) and not is_int(True, numpy=True)


def test_no_inline_integer_check_is_left() -> None:
    """`isinstance(v, bool) or not isinstance(v, int)` is spelled once, in groc_base.checks.is_int."""
    inline = re.compile(r"isinstance\((\w+), bool\) or not isinstance\(\1, (int|\(int, np\.integer\))\)"
                        r"|isinstance\((\w+), int\) and not isinstance\(\3, bool\)")
    found = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
             if ".git" not in p.parts and p.parts[-2] != "tests" and inline.search(p.read_text(encoding="utf-8"))]
    assert sorted(set(found) - PENDING) == []


def test_counts_in_messages_are_singular_for_one_and_grouped_alike() -> None:
    from groc_base.wording import agree, counted

    assert (counted(1, "line"), counted(2, "line"), counted(0, "word")) == ("1 line", "2 lines", "0 words")
    assert counted(12_345, "token") == "12,345 tokens" and counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries" and counted(4.0, "epoch") == "4 epochs"
    assert counted(0.25, "minute") == "0.25 minutes"
    assert (agree(1, "is", "are"), agree(2, "is", "are")) == ("is", "are")
