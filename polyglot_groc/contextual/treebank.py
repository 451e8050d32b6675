"""CoNLL-U treebanks for the parsing probe: syntactic words, heads and relations.

As the CoNLL 2018 evaluation script reads them: multiword-token ranges (``3-4``) and empty nodes
(``5.1``) are skipped, every other line is one syntactic word with its HEAD and DEPREL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from groc_base.errors import InputError
from groc_base.textio import read_text
from groc_base.wording import counted


@dataclass(frozen=True)
class Sentence:
    """One tree: ``words[i]`` has head ``heads[i]`` (0 = root, else 1-based) and relation ``deprels[i]``."""

    words: tuple[str, ...]
    heads: tuple[int, ...]
    deprels: tuple[str, ...]


def _open_text(path: Path) -> str:
    return read_text(path, what="treebank", error=InputError, nfc=True)


def read_conllu(path: str | os.PathLike[str], max_sentences: int | None = None) -> list[Sentence]:
    """The trees of a CoNLL-U file (plain or ``.gz``).

    Raises:
        InputError: the file is missing, not UTF-8, holds a malformed line (not 10 tab-separated
            fields, a non-integer HEAD, a HEAD outside the sentence) or no tree.
    """
    path = Path(path)
    text = _open_text(path)
    out: list[Sentence] = []
    words: list[str] = []
    heads: list[int] = []
    rels: list[str] = []

    def close(lineno: int) -> None:
        if not words:
            return
        bad = [h for h in heads if not 0 <= h <= len(words)]
        if bad:
            raise InputError(f"{path} sentence ending at line {lineno}: HEAD {bad[0]} is outside the sentence of "
                             f"{counted(len(words), 'word')}; fix the treebank")
        out.append(Sentence(tuple(words), tuple(heads), tuple(rels)))
        words.clear()
        heads.clear()
        rels.clear()

    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            close(lineno)
            if max_sentences is not None and len(out) >= max_sentences:
                break
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise InputError(f"{path} line {lineno}: {len(cols)} tab-separated fields, CoNLL-U needs 10; fix the line")
        if "-" in cols[0] or "." in cols[0]:  # multiword-token range / empty node
            continue
        try:
            head = int(cols[6])
        except ValueError as exc:
            raise InputError(f"{path} line {lineno}: HEAD {cols[6]!r} is not an integer; the probe needs "
                             "gold trees") from exc
        words.append(cols[1].replace(" ", "_") or "_")
        heads.append(head)
        rels.append(cols[7])
    else:
        close(len(text.splitlines()) + 1)
    if not out:
        raise InputError(f"treebank {path} holds no sentence; give a CoNLL-U file")
    return out[:max_sentences] if max_sentences is not None else out


def universal_relation(deprel: str) -> str:
    """The relation without its subtype (``nsubj:pass`` -> ``nsubj``), as the CoNLL 2018 script scores LAS."""
    return deprel.split(":", 1)[0]
