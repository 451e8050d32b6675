"""Character inventories and the vectorised word -> character-id table.

Two schemes:

* ``unicode``: one id per Unicode code point seen in training (seed 004 ch. 5), plus PAD=0,
  BOW, EOW and UNK-char. Characters never seen in training map to UNK-char. PAD positions are
  masked out of the convolution's max (see :mod:`polyglot_groc.model.surface`).
* ``elmo-bytes``: the bilm-tf/AllenNLP convention: UTF-8 bytes b -> b+1, BOW/EOW/pad chars
  shifted by one as well, 262 ids including the zero row. Padding *inside* a word uses the
  learned pad character (id 261), exactly as ELMo does, so only id 0 is ever masked.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from groc_base.checks import setting
from groc_base.errors import ModelError

PAD, BOW, EOW, UNK_CHAR = 0, 1, 2, 3
N_SPECIAL = 4

# bilm-tf ids before its +1 shift: 0..255 bytes, then these.
_ELMO_BOS, _ELMO_EOS, _ELMO_BOW, _ELMO_EOW, _ELMO_PAD = 256, 257, 258, 259, 260
ELMO_N_CHARS = 262
#: Sentence-boundary tokens that bilm-tf encodes specially.
ELMO_BOS_TOKEN, ELMO_EOS_TOKEN = "<S>", "</S>"


@dataclass(frozen=True)
class Charset:
    """An immutable character inventory; ``chars[i]`` has id ``N_SPECIAL + i`` (unicode scheme)."""

    scheme: str
    chars: tuple[str, ...]
    max_word_len: int
    #: How a too-long word is cut: "ends" keeps a prefix and a suffix (inflection lives at the
    #: end, so Auseinandersetzung/-en stay distinct); "prefix" keeps the first characters only,
    #: the rule of checkpoints written before "ends" existed (honoured when they are loaded).
    truncate: str = "ends"

    @classmethod
    def from_words(cls, words: Iterable[str], max_word_len: int = 50) -> Charset:
        """Unicode inventory of every code point in ``words``, sorted by code point (deterministic)."""
        seen = set("".join(words))
        return cls("unicode", tuple(sorted(seen)), max_word_len)

    @classmethod
    def elmo_bytes(cls, max_word_len: int = 50) -> Charset:
        # bilm-tf keeps the first bytes of a long token; pretrained ELMo weights expect that.
        return cls("elmo-bytes", (), max_word_len, "prefix")

    @property
    def n_chars(self) -> int:
        return ELMO_N_CHARS if self.scheme == "elmo-bytes" else N_SPECIAL + len(self.chars)

    def to_state(self) -> dict[str, object]:
        return {"scheme": self.scheme, "chars": "".join(self.chars), "max_word_len": self.max_word_len,
                "truncate": self.truncate}

    @classmethod
    def from_state(cls, state: dict[str, object]) -> Charset:
        chars = str(state["chars"])
        # A state without "truncate" predates prefix+suffix truncation: it kept prefixes.
        return cls(str(state["scheme"]), tuple(chars), int(state["max_word_len"]),  # type: ignore[call-overload]
                   str(state.get("truncate", "prefix")))

    def n_truncated(self, words: Sequence[str]) -> int:
        """How many of ``words`` do not fit ``max_word_len`` (BOW/EOW included)."""
        if not words:
            return 0
        if self.scheme == "elmo-bytes":
            lengths = np.fromiter((len(w.encode("utf-8", "ignore")) for w in words), dtype=np.int64, count=len(words))
        else:
            lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        return int((lengths > self.max_word_len - 2).sum())

    def _source_positions(self, lengths: np.ndarray, room: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For every character of the concatenated words: (word index, slot in its row, kept?).

        With ``truncate == "ends"`` a word longer than ``room`` keeps its first ``ceil(room/2)``
        and its last ``floor(room/2)`` characters; otherwise its first ``room``.
        """
        n = lengths.size
        word_idx = np.repeat(np.arange(n), lengths)
        pos = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        length = np.repeat(lengths, lengths)
        if self.truncate == "ends":
            head = (room + 1) // 2
            tail_start = length - (room - head)  # first kept position of the suffix
            keep = (pos < head) | (pos >= tail_start) | (length <= room)
            slot = np.where((length > room) & (pos >= tail_start), pos - tail_start + head, pos)
        else:
            keep = pos < room
            slot = pos
        return word_idx, slot, keep

    def encode(self, words: Sequence[str]) -> np.ndarray:
        """Character-id table for ``words``.  # (N, max_word_len) int64

        Words longer than ``max_word_len - 2`` characters are truncated (prefix + suffix, see
        :attr:`truncate`) and keep their EOW marker.
        Fully vectorised: all words are concatenated into one code-point array and scattered.
        """
        if self.scheme == "elmo-bytes":
            return self._encode_elmo(words)
        L = self.max_word_len
        n = len(words)
        table = np.full((n, L), PAD, dtype=np.int64)
        if n == 0:
            return table
        # Code points of every word, in one array; lengths give each word's slice.
        joined = "".join(words)
        cps = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=n)
        ids = self._lookup(cps)
        keep = np.minimum(lengths, L - 2)  # room for BOW and EOW
        word_idx, slot, sel = self._source_positions(lengths, L - 2)
        table[word_idx[sel], slot[sel] + 1] = ids[sel]
        table[:, 0] = BOW
        table[np.arange(n), keep + 1] = EOW
        return table

    def _lookup(self, cps: np.ndarray) -> np.ndarray:
        """Map code points to ids; unseen code points become UNK_CHAR (never an error)."""
        known = np.fromiter((ord(c) for c in self.chars), dtype=np.int64, count=len(self.chars))
        if known.size == 0:
            return np.full_like(cps, UNK_CHAR)
        pos = np.searchsorted(known, cps)
        pos_c = np.minimum(pos, known.size - 1)
        hit = known[pos_c] == cps
        return np.where(hit, pos_c + N_SPECIAL, UNK_CHAR)

    def _encode_elmo(self, words: Sequence[str]) -> np.ndarray:
        L = self.max_word_len
        n = len(words)
        table = np.full((n, L), _ELMO_PAD, dtype=np.int64)
        if n:
            encoded = [w.encode("utf-8", "ignore") for w in words]
            full = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
            flat = np.frombuffer(b"".join(encoded), dtype=np.uint8).astype(np.int64)
            word_idx, slot, sel = self._source_positions(full, L - 2)
            table[word_idx[sel], slot[sel] + 1] = flat[sel]
            lengths = np.minimum(full, L - 2)
            table[:, 0] = _ELMO_BOW
            table[np.arange(n), lengths + 1] = _ELMO_EOW
            # Sentence boundary tokens: [BOW, BOS|EOS, EOW, pad...] as bilm-tf builds them.
            for token, char in ((ELMO_BOS_TOKEN, _ELMO_BOS), (ELMO_EOS_TOKEN, _ELMO_EOS)):
                rows = np.fromiter((w == token for w in words), dtype=bool, count=n)
                if rows.any():
                    table[rows] = _ELMO_PAD
                    table[rows, 0], table[rows, 1], table[rows, 2] = _ELMO_BOW, char, _ELMO_EOW
        return table + 1  # bilm-tf reserves 0 for masking


def check_word_lengths(words: Sequence[str], limit: int = 1000) -> None:
    """Reject absurd words (e.g. a whole un-tokenised line) with a one-line fix."""
    if not words:
        return
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    worst = int(lengths.argmax())
    if lengths[worst] > limit:
        raise ModelError(
            f"word {words[worst][:40]!r}... has {lengths[worst]} characters (limit {limit}); "
            f"the corpus is probably not tokenised: pass {setting('data.tokenize', 'auto')} or split it into words"
        )
