"""A text's tokens as indices into its distinct words, so a long text holds each word's string once.

A list of 10^6 tokens is 10^6 Python strings (about 60 bytes each); as :class:`TokenIds` it is one
``int64`` per token and one string per distinct word. The scorers of user text
(:mod:`polyglot_groc.analysis.crossdomain`, :mod:`polyglot_groc.analysis.text_scoring`) read text
this way; building one is a pass in C over the tokens (``dict.fromkeys``, ``map``), a Python loop
over the word types only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["TokenIds"]


@dataclass(frozen=True)
class TokenIds:
    """``types``: the distinct tokens in first-seen order; ``ids`` ``(n,)``: each token's index into them."""

    types: list[str]
    ids: np.ndarray  # (n,) int64

    @classmethod
    def of(cls, tokens: Sequence[str]) -> TokenIds:
        return cls.join([tokens])[0]

    @classmethod
    def join(cls, parts: Iterable[Sequence[str]], *, first: str | None = None) -> tuple[TokenIds, np.ndarray]:
        """The tokens of ``parts`` one after the other (after ``first``, when given), and each part's
        length ``(n_parts,)``; ``parts`` may be a generator, read one part at a time."""
        index: dict[str, int] = {}
        chunks: list[np.ndarray] = []
        lengths: list[int] = []
        if first is not None:
            index[first] = 0
            chunks.append(np.zeros(1, dtype=np.int64))
        for part in parts:
            for word in dict.fromkeys(part):  # this part's word types
                if word not in index:
                    index[word] = len(index)
            chunks.append(np.fromiter(map(index.__getitem__, part), dtype=np.int64, count=len(part)))
            lengths.append(len(part))
        ids = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
        return cls(list(index), ids), np.asarray(lengths, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def words(self, positions: np.ndarray) -> list[str]:
        """The tokens at ``positions``, as strings."""
        types = self.types
        return [types[i] for i in self.ids[np.asarray(positions, dtype=np.int64)].tolist()]

    def words_of(self, ids: np.ndarray) -> list[str]:
        """The distinct words among ``ids`` (a slice of :attr:`ids`), in first-seen order."""
        types = self.types
        return [types[i] for i in dict.fromkeys(np.asarray(ids).tolist())]
