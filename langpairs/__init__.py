"""Language registry, tokenisation, corpora, batching and bilingual dictionaries.

Imports only ``groc_base.errors`` from the toolkit; NLTK and Stanza are imported lazily by the
tokenisers that need them, so ``import langpairs`` stays cheap.
"""

from __future__ import annotations

from .batching import Batch, LanguageSchedule, MultilingualBatcher, batchify, bptt_windows, n_windows
from .corpus import EOS, SPLITS, MultilingualCorpus, find_split, read_split
from .dictionaries import group_by_source, read_dictionary
from .prepare import prepare_corpora
from .registry import RELATED, Language, LanguageRegistry, default_registry, parse_lang_spec
from .tokenize import SentenceTokenizer, Tokenizer, make_tokenizer

__all__ = [
    "EOS",
    "RELATED",
    "SPLITS",
    "Batch",
    "Language",
    "LanguageRegistry",
    "LanguageSchedule",
    "MultilingualBatcher",
    "MultilingualCorpus",
    "SentenceTokenizer",
    "Tokenizer",
    "batchify",
    "bptt_windows",
    "default_registry",
    "find_split",
    "group_by_source",
    "make_tokenizer",
    "n_windows",
    "parse_lang_spec",
    "prepare_corpora",
    "read_dictionary",
    "read_split",
]
