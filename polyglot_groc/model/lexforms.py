"""Bridge from the lexicon service (numpy, cached on disk) to the model's :class:`LexiconForms`.

The thesis uses one set of forms per surface string, whatever the language context: a word's
forms come from the first of its languages (in run order) that the lexicon covers, and non-English
words get the English gloss of the ILI-linked synset where their wordnet has none.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from lexicons.cache import default_cache_root
from polyglot_groc.config import LexiconConfig
from polyglot_groc.model.embedder import LexiconForms
from polyglot_groc.model.vocab import Vocab

log = logging.getLogger(__name__)

def default_cache_dir() -> Path:
    """``$POLYGLOT_GROC_CACHE/lexforms`` or ``~/.cache/polyglot-groc/lexforms``."""
    return default_cache_root() / "lexforms"


def compile_forms(cfg: LexiconConfig, vocab: Vocab,
                  cache_dir: Path | None = None) -> tuple[LexiconForms, tuple[str, ...], dict[str, Any]]:
    """Compile relational/definitional forms for ``vocab``; returns (forms, extra words, info)."""
    from lexicons.service import LexiconService, open_lexicon

    lexicon = open_lexicon(cfg.backend, specs=list(cfg.specs) or None, langs=list(vocab.langs),
                           wn_dir=cfg.wn_dir or None, tsv=cfg.tsv_path or None)
    service = LexiconService(lexicon, max_related=cfg.max_related, max_definition=cfg.max_definition,
                             extra_cap=cfg.extra_cap, cache_dir=cache_dir or default_cache_dir(),
                             use_relations=cfg.use_relations, use_definitions=cfg.use_definitions,
                             coverage=cfg.coverage)
    compiled = service.compile(list(vocab.words), vocab.word_langs())
    forms = LexiconForms.from_arrays(compiled.related_ids, compiled.related_mask,
                                     compiled.definition_ids, compiled.definition_mask)
    info = {"specs": list(compiled.specs), "coverage": dict(compiled.coverage_stats),
            "fingerprint": compiled.fingerprint, "n_extra_words": len(compiled.extra_words)}
    log.info("lexicon %s: coverage %s, %d extra words", ", ".join(compiled.specs), compiled.coverage_stats,
             len(compiled.extra_words))
    return forms, tuple(compiled.extra_words), info
