"""Language registry, tokenisation, corpora, batching and bilingual dictionaries.

Imports only ``groc_base.errors`` from the toolkit; NLTK and Stanza are imported lazily by the
tokenisers that need them, so ``import langpairs`` stays cheap.
"""

from __future__ import annotations

from .batching import Batch, LanguageSchedule, MultilingualBatcher, batchify, bptt_windows, n_windows
from .corpus import EOS, SPLITS, MultilingualCorpus, check_corpora, find_split, has_corpus, read_split
from .dictionaries import group_by_source, read_dictionary
from .files import PreparedLanguage, SplitStats, prepare_language
from .prepare import prepare_corpora
from .registry import (
    LANGUAGES_ENV,
    RELATED,
    Language,
    LanguageRegistry,
    default_registry,
    load_registry,
    parse_lang_spec,
    read_languages_file,
)
from .tokenize import SentenceTokenizer, Tokenizer, make_tokenizer

__all__ = [
    "EOS",
    "LANGUAGES_ENV",
    "RELATED",
    "SPLITS",
    "Batch",
    "Language",
    "LanguageRegistry",
    "LanguageSchedule",
    "MultilingualBatcher",
    "MultilingualCorpus",
    "PreparedLanguage",
    "SentenceTokenizer",
    "SplitStats",
    "Tokenizer",
    "batchify",
    "bptt_windows",
    "check_corpora",
    "default_registry",
    "find_split",
    "group_by_source",
    "has_corpus",
    "load_registry",
    "make_tokenizer",
    "n_windows",
    "parse_lang_spec",
    "prepare_corpora",
    "prepare_language",
    "read_dictionary",
    "read_languages_file",
    "read_split",
]
