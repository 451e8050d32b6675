"""The (multilingual) word vocabulary: frequency-sorted, immutable, with per-language membership.

The same surface string in two languages is one item (seed 004 §5.4). A vocabulary is never
mutated: :meth:`Vocab.extend` returns a new one (the original code appended to its list in place).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from groc_base.errors import InputError

UNK = "<unk>"
EOS = "<eos>"


@dataclass(frozen=True)
class Vocab:
    words: tuple[str, ...]
    #: Each word's count over the splits the vocabulary was built from (train, or train+valid+test for a
    #: closed vocabulary; 0 for words added at evaluation time): its frequency rank.
    counts: tuple[int, ...]
    langs: tuple[str, ...]
    #: membership[i, j]: word i occurs in language langs[j].  # (V, n_langs) bool
    membership: np.ndarray = field(repr=False)
    #: lang_counts[i, j]: count of word i in language langs[j] over those splits.  # (V, n_langs) int64
    lang_counts: np.ndarray | None = field(default=None, repr=False)
    #: train_counts[i, j]: count of word i in the training split of language langs[j] (a closed
    #: vocabulary also holds valid/test words, with 0 here); None: not recorded (a vocabulary saved
    #: before this field; ``polyglot_groc.analysis.seen_words`` then derives it).  # (V, n_langs) int64
    train_counts: np.ndarray | None = field(default=None, repr=False)
    _index: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        assert self.membership.shape == (len(self.words), len(self.langs))
        object.__setattr__(self, "_index", {w: i for i, w in enumerate(self.words)})
        if len(self._index) != len(self.words):
            raise InputError("vocabulary has duplicate words; build it with Vocab.build")
        if self.train_counts is not None:
            assert self.train_counts.shape == self.membership.shape

    @classmethod
    def build(cls, lang_counts: Mapping[str, Counter[str]], add_unk: bool = False, min_count: int = 1,
              train_counts: Mapping[str, Counter[str]] | None = None) -> Vocab:
        """Union of per-language counts, sorted by total frequency then string (deterministic).

        ``train_counts``: each language's counts in its training split alone, recorded as
        :attr:`train_counts` (a closed vocabulary is built from more splits than training reads);
        None: ``lang_counts`` are the training counts (an open vocabulary).

        ``min_count`` (needs ``add_unk``): words whose total count over the languages is lower are
        left out, so their tokens encode as ``<unk>``. ``<unk>`` then takes its rank from the
        tokens it stands for (ids are frequency ranks: the adaptive kind's bands rely on it), while
        its recorded count stays the corpus's own (0 unless the corpus writes ``<unk>``).
        """
        if min_count > 1 and not add_unk:
            raise ValueError("Vocab.build: min_count > 1 leaves words out, which then need add_unk=True")
        langs = tuple(lang_counts)
        total: Counter[str] = Counter()
        for counts in lang_counts.values():
            total.update(counts)
        rare = {w for w, n in total.items() if n < min_count and w != UNK} if min_count > 1 else set()
        n_rare = sum(total.pop(w) for w in rare)
        if add_unk and UNK not in total:
            total[UNK] = 0
        rank = dict(total)  # training targets per word: <unk> also stands for every rare token
        if add_unk:
            rank[UNK] += n_rare
        words = sorted(total, key=lambda w: (-rank[w], w))
        membership = np.zeros((len(words), len(langs)), dtype=bool)
        per_lang = np.zeros((len(words), len(langs)), dtype=np.int64)
        index = {w: i for i, w in enumerate(words)}
        for j, lang in enumerate(langs):
            c = lang_counts[lang]
            if rare:
                c = Counter({w: n for w, n in c.items() if w not in rare})
            ids = np.fromiter(map(index.__getitem__, c), dtype=np.int64, count=len(c))
            membership[ids, j] = True
            per_lang[ids, j] = np.fromiter(c.values(), dtype=np.int64, count=len(c))
        if add_unk:
            membership[index[UNK], :] = True  # every language may emit <unk>
        trained = per_lang if train_counts is None else _count_table(index, langs, train_counts)
        return cls(tuple(words), tuple(total[w] for w in words), langs, membership, per_lang, trained.copy())

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: object) -> bool:
        return word in self._index

    def id(self, word: str) -> int:
        return self._index[word]

    def get(self, word: str, default: int = -1) -> int:
        return self._index.get(word, default)

    def encode(self, tokens: Sequence[str], unk: bool = False) -> np.ndarray:
        """Token ids.  # (n,) int64. Unknown tokens map to <unk> when ``unk`` else raise."""
        if unk:
            uid = self._index[UNK]
            get = self._index.get
            return np.fromiter((get(t, uid) for t in tokens), dtype=np.int64, count=len(tokens))
        try:
            return np.fromiter(map(self._index.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        except KeyError as exc:
            raise InputError(f"token {exc.args[0]!r} is not in the vocabulary; rebuild it or use <unk>") from exc

    def lang_ranked_ids(self, lang: str) -> np.ndarray:
        """Ids of ``lang``'s words, most frequent in that language first.  # (V_lang,) int64"""
        ids = self.lang_ids(lang)
        if self.lang_counts is None:
            return ids  # ids are already in total-frequency order
        j = self.langs.index(lang)
        order = np.argsort(-self.lang_counts[ids, j], kind="stable")
        return ids[order]

    def lang_ids(self, lang: str) -> np.ndarray:
        """Sorted ids of the words of ``lang``.  # (V_lang,) int64"""
        j = self.langs.index(lang)
        return np.flatnonzero(self.membership[:, j]).astype(np.int64)

    def word_langs(self) -> list[tuple[str, ...]]:
        """For each word, the languages it occurs in, in run order."""
        return [tuple(self.langs[j] for j in np.flatnonzero(row)) for row in self.membership]

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        h.update("\x1f".join(self.langs).encode())
        h.update("\x1e".join(self.words).encode())
        h.update(np.packbits(self.membership).tobytes())
        return h.hexdigest()[:16]

    def extend(self, new_words: Mapping[str, Sequence[str]]) -> Vocab:
        """A new vocabulary where every ``new_words[lang]`` word belongs to ``lang``; self is unchanged.

        Unknown words are appended (count 0); a known word of another language only joins
        ``lang``'s membership (and so its screened softmax).
        """
        words = list(self.words)
        base = self.membership.copy()
        index = dict(self._index)
        extra_rows: list[np.ndarray] = []
        for lang, ws in new_words.items():
            j = self.langs.index(lang)
            for w in ws:
                i = index.get(w)
                if i is not None and i < len(self.words):
                    base[i, j] = True
                elif i is not None:
                    extra_rows[i - len(self.words)][j] = True
                else:
                    index[w] = len(words)
                    words.append(w)
                    row = np.zeros(len(self.langs), dtype=bool)
                    row[j] = True
                    extra_rows.append(row)
        full = np.concatenate([base, np.stack(extra_rows)]) if extra_rows else base
        n_new = len(words) - len(self.words)
        counts = self.counts + (0,) * n_new
        return Vocab(tuple(words), counts, self.langs, full, _pad_rows(self.lang_counts, n_new),
                     _pad_rows(self.train_counts, n_new))

    def trained(self) -> np.ndarray | None:
        """Whether training read each word, in any language (None: not recorded).  # (V,) bool"""
        return None if self.train_counts is None else self.train_counts.sum(axis=1) > 0

    def with_training(self, more: Mapping[str, Counter[str]]) -> Vocab:
        """This vocabulary with ``more`` training counts added (a finetuning corpus's training split: its
        words must be in the vocabulary already); unchanged when the training counts are not recorded."""
        if self.train_counts is None:
            return self
        add = _count_table(self._index, self.langs, more)
        return replace(self, train_counts=self.train_counts + add)

    def to_state(self) -> dict[str, object]:
        state: dict[str, object] = {"words": list(self.words), "counts": list(self.counts),
                                    "langs": list(self.langs), "membership": torch_tensor(self.membership)}
        if self.lang_counts is not None:
            state["lang_counts"] = torch_tensor(self.lang_counts)
        if self.train_counts is not None:
            state["train_counts"] = torch_tensor(self.train_counts)
        return state

    @classmethod
    def from_state(cls, state: Mapping[str, object]) -> Vocab:
        import torch

        def arr(x: object) -> np.ndarray:
            return x.numpy() if isinstance(x, torch.Tensor) else np.asarray(x)

        membership = arr(state["membership"])
        lc, tc = state.get("lang_counts"), state.get("train_counts")
        words: Any = state["words"]
        counts: Any = state["counts"]
        langs: Any = state["langs"]
        return cls(tuple(words), tuple(int(c) for c in counts), tuple(langs), membership.astype(bool),
                   arr(lc).astype(np.int64) if lc is not None else None,
                   arr(tc).astype(np.int64) if tc is not None else None)


def _count_table(index: Mapping[str, int], langs: Sequence[str], counts: Mapping[str, Counter[str]]) -> np.ndarray:
    """``counts[lang][word]`` as a (V, n_langs) int64 table over ``index``'s words (other words and
    languages are not counted: a word the vocabulary left out, ``min_count``'s, has no row)."""
    table = np.zeros((len(index), len(langs)), dtype=np.int64)
    for j, lang in enumerate(langs):
        c = counts.get(lang) or Counter()
        ids = np.fromiter((index.get(w, -1) for w in c), dtype=np.int64, count=len(c))  # (n,) -1: no row
        ns = np.fromiter(c.values(), dtype=np.int64, count=len(c))  # (n,)
        kept = ids >= 0
        table[ids[kept], j] = ns[kept]
    return table


def _pad_rows(table: np.ndarray | None, n_new: int) -> np.ndarray | None:
    """``table`` (V, n_langs) with ``n_new`` zero rows below (None stays None)."""
    if table is None:
        return None
    return np.concatenate([table, np.zeros((n_new, table.shape[1]), dtype=table.dtype)])


def torch_tensor(a: np.ndarray) -> object:
    """Checkpoints hold tensors, not numpy arrays (``weights_only=True`` loading)."""
    import torch

    return torch.from_numpy(np.ascontiguousarray(a))
