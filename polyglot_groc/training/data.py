"""From a corpus directory to id streams: vocabulary building and stream encoding."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from langpairs.batching import batchify
from langpairs.corpus import MultilingualCorpus
from langpairs.registry import LanguageRegistry, default_registry
from polyglot_groc.config import DataConfig
from polyglot_groc.model.vocab import UNK, Vocab

log = logging.getLogger(__name__)


def language_registry(languages: Mapping[str, Any] | None = None) -> LanguageRegistry:
    """The built-in languages plus a config's ``[languages.xx]`` tables."""
    return LanguageRegistry.from_config(languages, base=default_registry()) if languages else default_registry()


def load_corpus(cfg: DataConfig, splits: Sequence[str] = ("train", "valid", "test"),
                languages: Mapping[str, Any] | None = None) -> MultilingualCorpus:
    registry = language_registry(languages)
    for lang in cfg.langs:
        registry.get(lang)  # unknown codes fail here with the list of known ones
    return MultilingualCorpus.load(Path(cfg.root), tuple(cfg.langs), splits=tuple(splits), tokenize=cfg.tokenize)


def vocab_splits(mode: str, available: Sequence[str]) -> tuple[str, ...]:
    """Closed vocabulary: train+valid+test (the seeds' PTB setup); open: train only."""
    wanted = ("train", "valid", "test") if mode == "closed" else ("train",)
    return tuple(s for s in wanted if s in available)


def vocab_policy(data: DataConfig, composes_output: bool) -> tuple[bool, int]:
    """``(add_unk, min_count)`` of a new vocabulary for the data settings ``data``.

    An open vocabulary of a lookup-output kind gets ``<unk>`` for the words it lacks, and
    ``data.min_count``: were every training word in it, ``<unk>`` would never be a training target
    and unseen words would be scored with an untrained (ever less likely) row. A closed vocabulary
    covers every split and a compositional kind scores any word, so neither drops words.
    """
    add_unk = not composes_output and data.vocab_mode == "open"
    return add_unk, data.min_count if add_unk else 1


def build_vocab(corpus: MultilingualCorpus, mode: str, add_unk: bool, min_count: int = 1) -> Vocab:
    """The vocabulary of ``corpus``'s splits for ``mode``; ``min_count`` as in :meth:`Vocab.build`.

    It records each word's training-split count as well (``Vocab.train_counts``): a closed
    vocabulary also holds words only the valid and test splits have, whose lookup rows training
    never updates from data, and analysis must tell them apart (``analysis.seen_words``).
    """
    counts: dict[str, Counter[str]] = {}
    train: dict[str, Counter[str]] = {}
    for lang in corpus.langs:
        splits = vocab_splits(mode, tuple(corpus.splits[lang]))
        counts[lang] = corpus.counts(lang, splits)
        if splits != ("train",):
            train[lang] = corpus.counts(lang, ("train",))
    return Vocab.build(counts, add_unk=add_unk, min_count=min_count, train_counts=train or None)


def unk_report(vocab: Vocab, corpus: MultilingualCorpus, streams: Mapping[str, np.ndarray],
               min_count: int) -> dict[str, Any]:
    """What ``<unk>`` stands for in training (``streams``: the encoded training split per language).

    ``dropped_words``: training word types outside the vocabulary (the ``min_count`` cutoff's);
    ``unk_tokens``/``unk_share``: training targets that are ``<unk>``, those the corpus writes included.
    """
    uid = vocab.id(UNK)
    dropped = {w for lang in corpus.langs for w in set(corpus.splits[lang]["train"]) if w not in vocab}
    n_unk = sum(int(np.count_nonzero(s == uid)) for s in streams.values())
    n_all = sum(int(s.size) for s in streams.values())
    return {"min_count": min_count, "dropped_words": len(dropped), "unk_tokens": n_unk,
            "unk_share": round(n_unk / max(n_all, 1), 6)}


def encode_stream(vocab: Vocab, tokens: Sequence[str], n_streams: int, unk: bool) -> np.ndarray:
    """Tokens -> batchified ids.  # (n_streams, L)"""
    return batchify(vocab.encode(tokens, unk=unk), n_streams)


def unseen_words(vocab: Vocab, corpus: MultilingualCorpus, split: str) -> dict[str, list[str]]:
    """Per language, the words of ``split`` outside that language's vocabulary, in first-seen order.

    That includes words the vocabulary knows only from another language (open vocabulary).
    """
    out: dict[str, list[str]] = {}
    for lang in corpus.langs:
        members = set(vocab.words[i] for i in vocab.lang_ids(lang))
        out[lang] = [w for w in dict.fromkeys(corpus.splits[lang][split]) if w not in members]
    return out
