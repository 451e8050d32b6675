"""Lexicon protocol, backends (wn, NLTK, TSV), OMW import and the cached form service.

Exports are resolved lazily (PEP 562): ``groc_base.errors`` is imported by every CLI command,
and importing this package must not pull in ``wn``, ``nltk`` or ``numpy`` for that.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "CompiledForms",
    "Lexicon",
    "LexiconService",
    "NltkLexicon",
    "TsvLexicon",
    "WnLexicon",
    "WordForms",
    "build_nltk_data",
    "default_wn_dir",
    "download",
    "import_omw",
    "installed_lexicons",
    "normalize_lang",
    "open_lexicon",
    "tokenize_gloss",
]

_WHERE = {
    "CompiledForms": "lexicons.service",
    "LexiconService": "lexicons.service",
    "WordForms": "lexicons.service",
    "open_lexicon": "lexicons.service",
    "Lexicon": "lexicons.protocol",
    "normalize_lang": "lexicons.protocol",
    "NltkLexicon": "lexicons.nltk_backend",
    "build_nltk_data": "lexicons.nltk_backend",
    "TsvLexicon": "lexicons.tsv_backend",
    "WnLexicon": "lexicons.wn_backend",
    "default_wn_dir": "lexicons.wn_backend",
    "installed_lexicons": "lexicons.wn_backend",
    "download": "lexicons.omw_import",
    "import_omw": "lexicons.omw_import",
    "tokenize_gloss": "lexicons.tokenize",
}

if TYPE_CHECKING:
    from lexicons.nltk_backend import NltkLexicon, build_nltk_data
    from lexicons.omw_import import download, import_omw
    from lexicons.protocol import Lexicon, normalize_lang
    from lexicons.service import CompiledForms, LexiconService, WordForms, open_lexicon
    from lexicons.tokenize import tokenize_gloss
    from lexicons.tsv_backend import TsvLexicon
    from lexicons.wn_backend import WnLexicon, default_wn_dir, installed_lexicons


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'lexicons' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
