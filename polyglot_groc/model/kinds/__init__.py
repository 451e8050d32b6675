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
groc           char-CNN              the same function             computed
groc-lex       char-CNN + r + d      the same function             computed
============== ===================== ============================= ==========
"""

from __future__ import annotations

from collections.abc import Callable

from lexicons.errors import ConfigError
from polyglot_groc.config import ModelConfig
from polyglot_groc.model.kinds import adaptive, compositional, conv, lookup
from polyglot_groc.model.kinds.base import DotScorer, KindParts

Builder = Callable[[ModelConfig, int, int], KindParts]

#: kind name -> builder(cfg, n_chars, n_words). ``lookup`` is the historical name of ``tied``.
REGISTRY: dict[str, Builder] = {
    "untied": lookup.build_untied,
    "tied": lookup.build_tied,
    "lookup": lookup.build_tied,
    "bilinear": lookup.build_bilinear,
    "deep-residual": lookup.build_deep_residual,
    "adaptive": adaptive.build,
    "conv": conv.build,
    "elmo": compositional.build_elmo,
    "groc": compositional.build_groc,
    "groc-lex": compositional.build_groc,
}


def build_parts(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    try:
        builder = REGISTRY[cfg.kind]
    except KeyError as exc:
        raise ConfigError(f"unknown model kind {cfg.kind!r}; use one of {', '.join(REGISTRY)}") from exc
    return builder(cfg, n_chars, n_words)


__all__ = ["REGISTRY", "DotScorer", "KindParts", "build_parts"]
