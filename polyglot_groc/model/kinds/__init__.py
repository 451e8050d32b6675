"""Model kinds: each kind is a module that builds the word-side parts behind one small interface.

A kind's facts (input and output embeddings, whether it samples, composes outputs or reads a
lexicon, its own defaults) are one torch-free record in :mod:`polyglot_groc.kind_traits`; its torch
parts are a builder in a module of this package, registered with ``@register("name")``
(:mod:`~polyglot_groc.model.kinds.base`). Every module of this package is imported here, so a new
kind's module needs no import line. A builder returns a
:class:`~polyglot_groc.model.kinds.base.KindParts` (input embedder, output embedder, output net,
bias, scorer); :class:`~polyglot_groc.model.lm.LanguageModel` wires those parts to the shared
prefix and reads the kind's traits, and the training loop never looks at the kind.

Modules: ``tables`` (untied, tied, bilinear, deep-residual), ``adaptive``, ``conv``,
``compositional`` (elmo, bilm, groc, groc-lex). docs/internals.md, "Adding a model kind".
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from polyglot_groc.config import ModelConfig
from polyglot_groc.kind_traits import BY_NAME, KINDS, KindTraits, kind_traits
from polyglot_groc.model.kinds.base import BUILDERS, Builder, DotScorer, KindParts, register

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")  # each registers its builders


def _check_registrations() -> None:
    """Every kind with traits has a builder and every builder a kind: a new kind missing one half
    fails at import, naming the half, not at its first training run."""
    named = {t.name for t in KINDS}
    if named - set(BUILDERS):
        raise RuntimeError(f"model kind(s) {sorted(named - set(BUILDERS))} have traits (polyglot_groc/kind_traits.py) "
                           "but no builder: decorate one with @register(name) in a module of "
                           "polyglot_groc/model/kinds/")
    if set(BUILDERS) - named:
        raise RuntimeError(f"builder(s) {sorted(set(BUILDERS) - named)} have no traits: add a KindTraits record "
                           "to polyglot_groc/kind_traits.py")


_check_registrations()


@dataclass(frozen=True)
class Kind:
    """A ``model.kind`` value's traits and builder (an alias has its kind's)."""

    traits: KindTraits
    build: Builder


#: ``model.kind`` value (names and aliases, polyglot_groc.config.MODEL_KINDS) -> its Kind.
REGISTRY: dict[str, Kind] = {name: Kind(t, BUILDERS[t.name]) for name, t in BY_NAME.items()}


def kind(name: str) -> Kind:
    """The Kind of ``model.kind`` value ``name``; ConfigError naming the kinds if unknown."""
    kind_traits(name)  # ConfigError naming the kinds for an unknown one
    return REGISTRY[name]


def build_parts(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    return kind(cfg.kind).build(cfg, n_chars, n_words)


__all__ = ["REGISTRY", "DotScorer", "Kind", "KindParts", "build_parts", "kind", "register"]
