"""Language registry, tokenisation, corpora, batching and bilingual dictionaries.

Imports only ``groc_base`` from the toolkit; NLTK and Stanza are imported lazily by the
tokenisers that need them, and the names below are imported from their modules on first use, so
``import langpairs.registry`` (what ``lexicon lookup`` needs) does not pull in numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    "Batch": "batching",
    "LanguageSchedule": "batching",
    "MultilingualBatcher": "batching",
    "batchify": "batching",
    "bptt_windows": "batching",
    "n_windows": "batching",
    "EOS": "corpus",
    "SPLITS": "corpus",
    "MultilingualCorpus": "corpus",
    "check_corpora": "corpus",
    "find_split": "corpus",
    "has_corpus": "corpus",
    "read_split": "corpus",
    "group_by_source": "dictionaries",
    "read_dictionary": "dictionaries",
    "PreparedLanguage": "files",
    "SplitStats": "files",
    "prepare_language": "files",
    "prepare_corpora": "prepare",
    "LANGUAGES_ENV": "registry",
    "RELATED": "registry",
    "Language": "registry",
    "LanguageRegistry": "registry",
    "default_registry": "registry",
    "load_registry": "registry",
    "parse_lang_spec": "registry",
    "read_languages_file": "registry",
    "SentenceTokenizer": "tokenize",
    "Tokenizer": "tokenize",
    "make_tokenizer": "tokenize",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'langpairs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
