"""Model kinds: each kind is a module that builds the word-side parts behind one small interface.

A kind returns a :class:`~polyglot_groc.model.kinds.base.KindParts` (input embedder, output
embedder, output net, bias, scorer and two flags); :class:`~polyglot_groc.model.lm.LanguageModel`
wires those parts to the shared prefix and the training loop never looks at the kind. Adding a
kind = adding a module here and one registry line.

============== ===================== ============================= ==========
kind           input embedding       output embedding              bias
============== ===================== ============================= ==========
untied         lookup                separate lookup               per word
tied (lookup)  lookup                the same table                per word
bilinear       lookup                E W, W d x d (seed 002)       per word
deep-residual  lookup                depth-k residual net of E     per word
adaptive       adaptive input        tied adaptive softmax (001)   none
conv           lookup                char-CNN + per-word corr.     per word
elmo           char-CNN              separate lookup               per word
bilm           char-CNN (fwd + bwd)  separate lookup (shared)      per word
groc           char-CNN              the same function             computed
groc-lex       char-CNN + r + d      the same function             computed
============== ===================== ============================= ==========
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from groc_base.errors import ConfigError
from polyglot_groc.config import ModelConfig
from polyglot_groc.model.kinds import adaptive, compositional, conv, lookup
from polyglot_groc.model.kinds.base import DotScorer, KindParts

Builder = Callable[[ModelConfig, int, int], KindParts]


@dataclass(frozen=True)
class Kind:
    """A kind's builder and the traits the code around the model must know BEFORE building it."""

    build: Builder
    #: Output words are composed from their spelling: an open vocabulary needs no ``<unk>`` row.
    composes_output: bool = False
    #: The embedder reads lexicon forms (WordNet relatives and definition words): compile them.
    uses_lexicon: bool = False
    #: Can train on a sampled softmax (``train.softmax``): every kind whose scorer scores words one by
    #: one; must match ``KindParts.samples`` and config.FULL_SOFTMAX_KINDS (a test checks).
    samples: bool = True


#: kind name -> Kind. ``lookup`` is the historical name of ``tied``.
REGISTRY: dict[str, Kind] = {
    "untied": Kind(lookup.build_untied),
    "tied": Kind(lookup.build_tied),
    "lookup": Kind(lookup.build_tied),
    "bilinear": Kind(lookup.build_bilinear),
    "deep-residual": Kind(lookup.build_deep_residual),
    "adaptive": Kind(adaptive.build, samples=False),
    "conv": Kind(conv.build),
    "elmo": Kind(compositional.build_elmo),
    "bilm": Kind(compositional.build_bilm),
    "groc": Kind(compositional.build_groc, composes_output=True),
    "groc-lex": Kind(compositional.build_groc, composes_output=True, uses_lexicon=True),
}


def kind(name: str) -> Kind:
    try:
        return REGISTRY[name]
    except KeyError as exc:
        raise ConfigError(f"unknown model kind {name!r}; use one of {', '.join(REGISTRY)}") from exc


def build_parts(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    return kind(cfg.kind).build(cfg, n_chars, n_words)


__all__ = ["REGISTRY", "DotScorer", "Kind", "KindParts", "build_parts", "kind"]
