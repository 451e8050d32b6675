"""Bridge from the lexicon service (numpy, cached on disk) to the model's :class:`LexiconForms`.

The thesis uses one set of forms per surface string, whatever the language context: a word's
forms come from the first of its languages (in run order) that the lexicon covers, and non-English
words get the English gloss of the ILI-linked synset where their wordnet has none.

A run records the lexicon it was trained with (:func:`resolved_config`: specs as resolved, the
data folder, absolute), and every later compilation (new words at evaluation, export, finetuning,
a resumed run) opens that one, never one chosen by the environment; :func:`check_recorded`
warns where the lexicon found there is not the one recorded. The run's own words keep the forms
they were trained with (:func:`extend_forms`): they travel in the checkpoint.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from groc_base.cache import default_cache_root
from polyglot_groc.config import LexiconConfig
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.embedder import LexiconForms
from polyglot_groc.model.vocab import Vocab

if TYPE_CHECKING:
    from lexicons.protocol import Lexicon

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``$POLYGLOT_GROC_CACHE/lexforms`` or ``~/.cache/polyglot-groc/lexforms``."""
    return default_cache_root() / "lexforms"


class CompiledLexicon(NamedTuple):
    forms: LexiconForms
    #: Related/definition words outside the vocabulary (rows V.. of the char table).
    extra_words: tuple[str, ...]
    #: JSON-ready: specs, settings, coverage, fingerprint, n_extra_words (reported in result.json).
    info: dict[str, Any]
    #: ``cfg`` with the lexicon as opened (:func:`resolved_config`): what a run records.
    config: LexiconConfig


def describe(cfg: LexiconConfig) -> str:
    """One line naming a lexicon config's backend, specs and data folder (for messages)."""
    where = {"wn": cfg.wn_dir, "tsv": cfg.tsv_path, "nltk": cfg.nltk_data}.get(cfg.backend, "")
    specs = " ".join(cfg.specs) or "by language"
    return f"{cfg.backend} lexicon {specs} in {where or '(the default folder)'}"


def open_run_lexicon(cfg: LexiconConfig, langs: Sequence[str]) -> Lexicon:
    """The lexicon ``cfg`` names (for a vocabulary in ``langs``)."""
    from lexicons.service import open_lexicon

    return open_lexicon(cfg.backend, specs=list(cfg.specs) or None, langs=list(langs),
                        wn_dir=cfg.wn_dir or None, tsv=cfg.tsv_path or None, nltk_data=cfg.nltk_data or None,
                        gloss_specs=list(cfg.gloss_specs) or None,
                        no_fallback=list(cfg.no_fallback) if cfg.backend == "wn" else ())


def lexicon_for_languages(cfg: LexiconConfig, kind: str, codes: Sequence[str], registry: Any) -> LexiconConfig:
    """``cfg`` with the registry settings of a run's languages (``codes``; ``registry`` a
    :class:`langpairs.registry.LanguageRegistry`): what :func:`polyglot_groc.training.workflows.train` records.

    Languages whose entry has no ``fallback = "en"`` (user languages, unless they ask for it) go to
    ``no_fallback``, unless the config sets it. For groc-lex on the wn backend without explicit
    ``specs``, languages whose entry names ``wordnets`` use those and the others their installed
    wordnets; the specs are resolved now (``id:version``), so the run records the lexicons it used.
    """
    refused = tuple(c for c in codes if c != "en" and registry.get(c).fallback is None)
    if refused and not cfg.no_fallback:
        cfg = dataclasses.replace(cfg, no_fallback=refused)
    wordnets = {c: list(registry.get(c).wordnets) for c in codes if registry.get(c).wordnets}
    if wordnets and not cfg.specs and cfg.backend == "wn" and kind_traits(kind).uses_lexicon:
        from lexicons.service import open_lexicon

        opened = open_lexicon("wn", langs=list(codes), lang_specs=wordnets, wn_dir=cfg.wn_dir or None)
        cfg = dataclasses.replace(cfg, specs=tuple(getattr(opened, "selected_specs", opened.specs)))
    return cfg


def resolved_config(cfg: LexiconConfig, lexicon: Lexicon) -> LexiconConfig:
    """``cfg`` naming exactly ``lexicon``: resolved specs and gloss specs, its data folder absolute.

    Reopening it gives the same lexicon wherever and in whatever environment it is done.
    """
    def absolute(path: object) -> str:
        return str(Path(str(path)).expanduser().resolve())

    if cfg.backend == "wn":
        settings = getattr(lexicon, "settings", {}) or {}
        return dataclasses.replace(cfg, specs=tuple(getattr(lexicon, "selected_specs", lexicon.specs)),
                                   gloss_specs=tuple(settings.get("gloss", ())),
                                   wn_dir=absolute(getattr(lexicon, "wn_dir", cfg.wn_dir)))
    if cfg.backend == "nltk":
        return dataclasses.replace(cfg, nltk_data=absolute(getattr(lexicon, "nltk_data", cfg.nltk_data)))
    if cfg.backend == "tsv" and cfg.tsv_path:
        return dataclasses.replace(cfg, tsv_path=absolute(cfg.tsv_path))
    return cfg


def check_recorded(cfg: LexiconConfig, lexicon: Lexicon, recorded: Mapping[str, Any]) -> bool:
    """Warn (and return False) where ``lexicon`` is not the one a run recorded in ``recorded``.

    ``recorded`` is the run's ``lexicon_info`` (specs and settings at training). Specs carry the
    version (wn) or a content hash (tsv, nltk), so an edited or other lexicon shows here.
    """
    same = True
    if cfg.backend == "wn" and not cfg.wn_dir:
        log.warning("this run did not record its wordnet folder (trained before runs recorded it); using %s "
                    "($POLYGLOT_GROC_WN_DIR or wn's default): results may differ from the run's own lexicon",
                    getattr(lexicon, "wn_dir", "the default"))
        same = False
    specs = recorded.get("specs")
    if specs is not None and list(specs) != list(lexicon.specs):
        log.warning("the lexicon differs from the one this run was trained with: it recorded %s, %s now has %s; "
                    "new words get other forms than at training (install the recorded one to reproduce results)",
                    " ".join(specs) or "none", describe(cfg), " ".join(lexicon.specs))
        same = False
    settings = recorded.get("settings")
    now = getattr(lexicon, "settings", None)
    if settings is not None and now is not None and dict(settings) != dict(now):
        log.warning("the lexicon's settings differ from the run's (%s, now %s); new words get other forms than "
                    "at training", settings, now)
        same = False
    return same


def compile_forms(cfg: LexiconConfig, vocab: Vocab, cache_dir: Path | None = None,
                  recorded: Mapping[str, Any] | None = None) -> CompiledLexicon:
    """Compile relational/definitional forms for ``vocab`` from the lexicon ``cfg`` names.

    ``recorded``: the run's ``lexicon_info``, checked against the lexicon found (:func:`check_recorded`).
    """
    from lexicons.service import LexiconService

    lexicon = open_run_lexicon(cfg, vocab.langs)
    if recorded is not None:
        check_recorded(cfg, lexicon, recorded)
    service = LexiconService(lexicon, max_related=cfg.max_related, max_definition=cfg.max_definition,
                             extra_cap=cfg.extra_cap, cache_dir=cache_dir or default_cache_dir(),
                             use_relations=cfg.use_relations, use_definitions=cfg.use_definitions,
                             coverage=cfg.coverage)
    compiled = service.compile(list(vocab.words), vocab.word_langs())
    forms = LexiconForms.from_arrays(compiled.related_ids, compiled.related_mask,
                                     compiled.definition_ids, compiled.definition_mask)
    info = {"specs": list(compiled.specs), "settings": dict(getattr(lexicon, "settings", {}) or {}),
            "coverage": dict(compiled.coverage_stats), "fingerprint": compiled.fingerprint,
            "n_extra_words": len(compiled.extra_words)}
    log.info("lexicon %s: coverage %s, %d extra words", ", ".join(compiled.specs), compiled.coverage_stats,
             len(compiled.extra_words))
    return CompiledLexicon(forms, tuple(compiled.extra_words), info, resolved_config(cfg, lexicon))


def extend_forms(old: LexiconForms, old_extra: Sequence[str], n_old: int, vocab: Vocab, fresh: LexiconForms,
                 fresh_extra: Sequence[str]) -> tuple[LexiconForms, tuple[str, ...]]:
    """Forms for ``vocab`` (an old vocabulary of ``n_old`` words, then new ones): the old words keep
    ``old``'s forms (those they were trained with), the new ones get ``fresh``'s (compiled for ``vocab``).

    ``old`` indexes ``old vocabulary + old_extra``, ``fresh`` indexes ``vocab + fresh_extra``; the
    result indexes ``vocab`` + the returned extra words (the old extras, then the fresh ones the
    new words use).
    """
    n_words = len(vocab)
    extra: list[str] = []
    slot: dict[str, int] = {}

    def place(word: str) -> int:
        i = vocab.get(word)
        if i >= 0:
            return i
        if word not in slot:
            slot[word] = n_words + len(extra)
            extra.append(word)
        return slot[word]

    old_map = torch.tensor([*range(n_old), *(place(w) for w in old_extra)], dtype=torch.long)
    new = slice(n_old, n_words)
    used = torch.cat([fresh.related_ids[new][fresh.related_mask[new]],
                      fresh.definition_ids[new][fresh.definition_mask[new]]])
    used_extra = {int(i) - n_words for i in torch.unique(used) if int(i) >= n_words}
    fresh_map = torch.tensor([*range(n_words), *(place(w) if j in used_extra else 0
                                                 for j, w in enumerate(fresh_extra))], dtype=torch.long)

    def rows(ids_old: torch.Tensor, ids_fresh: torch.Tensor) -> torch.Tensor:
        return torch.cat([old_map[ids_old[:n_old]], fresh_map[ids_fresh[new]]])

    forms = LexiconForms(rows(old.related_ids, fresh.related_ids),
                         torch.cat([old.related_mask[:n_old], fresh.related_mask[new]]),
                         rows(old.definition_ids, fresh.definition_ids),
                         torch.cat([old.definition_mask[:n_old], fresh.definition_mask[new]]))
    return forms, tuple(extra)
