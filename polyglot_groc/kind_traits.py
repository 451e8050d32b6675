"""The model kinds' traits: one torch-free record per kind, the one place a kind's facts live.

The config (:mod:`polyglot_groc.config`) checks and defaults a run from these records before torch
is imported (the CLI reads a config first), and the code around the model (vocabulary, lexicon
compilation, the softmax choice, ``--untie``, the CLI's kind list) asks them what a kind does
before the model exists. :data:`MODEL_KINDS`, :data:`FULL_SOFTMAX_KINDS`, :data:`KIND_DEFAULTS`,
:data:`UNTIE` and :func:`kind_help` are derived from :data:`KINDS`; a kind's torch parts are a
builder in its own module under ``polyglot_groc/model/kinds/``, registered with
``@register("name")`` (``model/kinds/base.py``), and the registry refuses to import when a record
has no builder or a builder no record. Adding a kind: docs/internals.md, "Adding a model kind".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from groc_base.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class KindTraits:
    """What the code around a model must know about its kind BEFORE building it (no torch here)."""

    #: The ``model.kind`` value.
    name: str
    #: Input embedding, output embedding, bias, and where the kind comes from (docs and help).
    summary: str
    #: Older names that still load, read as this kind (a run stores the name it was given).
    aliases: tuple[str, ...] = ()
    #: Input embeddings are functions of the spelling (a char CNN): new words can be embedded.
    composes_input: bool = False
    #: Output words are composed from their spelling: an open vocabulary needs no ``<unk>`` row.
    composes_output: bool = False
    #: The embedder reads lexicon forms (WordNet relatives and definition words): compile them.
    uses_lexicon: bool = False
    #: A forward and a backward LSTM stack (ELMo's biLM, seed 004 ch. 3), each layer projected to d.
    bidirectional: bool = False
    #: The scorer scores each word on its own (a dot product), so a sampled softmax over a subset of
    #: the vocabulary is the same function on fewer words (not so for the adaptive softmax's bands).
    samples: bool = True
    #: The vocabulary can grow after training (``finetune``, a resume on new words): word-indexed
    #: parameters get new rows and nothing else changes shape (not so for the adaptive softmax,
    #: whose bands are fractions of the vocabulary).
    grows_vocabulary: bool = True
    #: The smallest ``model.output.depth`` the kind is defined for (deep-residual: at least one layer).
    min_output_depth: int = 0
    #: The kind ``train --untie`` turns this one into (None: untie does not apply).
    untied: str | None = None
    #: The kind's own ``[model]`` defaults (seed 000 Table 8, PTB rows), between the dataclass
    #: defaults and what a config file or an override sets: ``--model deep-residual`` alone gets
    #: depth 4 and selu, and ``--set model.output.depth=2`` still wins.
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict, hash=False)


#: Every kind, in the order the CLI and the docs list them. ``adaptive`` keeps its Table 8 cutoffs
#: as fractions of |V| (0.2/0.7 = PTB's 2k/7k of 10k words) so they fit any vocabulary; ``elmo``
#: and ``bilm`` are not in Table 8 and keep the dataclass defaults; ``groc-lex`` is Table 8's "GroC
#: (ours)" row, like ``groc``.
KINDS: tuple[KindTraits, ...] = (
    KindTraits("untied", "lookup input; a separate lookup output table; per-word bias",
               defaults={"output": {"dropout": 0.1}}),  # Table 8 "Lookup table"
    KindTraits("tied", "lookup input; the same table as output (Press & Wolf 2017); per-word bias",
               aliases=("lookup",), untied="untied", defaults={"output": {"dropout": 0.0}}),
    KindTraits("bilinear", "lookup input; output E W, W d x d (seed 002); per-word bias",
               defaults={"output": {"dropout": 0.5}}),
    KindTraits("deep-residual", "lookup input; output a depth-k residual net of E (Pappas & Henderson 2019); "
               "per-word bias", min_output_depth=1,
               defaults={"output": {"dropout": 0.5, "depth": 4, "activation": "selu"}}),
    KindTraits("adaptive", "adaptive input; tied adaptive softmax (seed 001); no bias", samples=False,
               grows_vocabulary=False,
               defaults={"output": {"dropout": 0.3, "cutoffs": [0.2, 0.7]}}),
    KindTraits("conv", "lookup input; output char-CNN + per-word correction (Jozefowicz et al. 2016); "
               "per-word bias", defaults={"output": {"dropout": 0.1, "correction": 128}}),
    KindTraits("elmo", "char-CNN input; a separate lookup output table; per-word bias", composes_input=True),
    KindTraits("bilm", "char-CNN input, forward and backward LSTMs (ELMo's biLM); a shared lookup output "
               "table; per-word bias", composes_input=True, bidirectional=True),
    KindTraits("groc", "char-CNN input; the same function as output (seed 000); computed bias",
               composes_input=True, composes_output=True, defaults={"output": {"dropout": 0.2, "depth": 0}}),
    KindTraits("groc-lex", "char-CNN + lexicon relatives and definitions; the same function as output "
               "(seed 000); computed bias", composes_input=True, composes_output=True, uses_lexicon=True,
               defaults={"output": {"dropout": 0.2, "depth": 0}}),
)

#: ``model.kind`` value (a name or an alias) -> its traits.
BY_NAME: dict[str, KindTraits] = {n: t for t in KINDS for n in (t.name, *t.aliases)}
#: Every accepted ``model.kind`` value, each name followed by its aliases.
MODEL_KINDS: tuple[str, ...] = tuple(BY_NAME)
#: Kinds that cannot train on a sampled softmax.
FULL_SOFTMAX_KINDS: tuple[str, ...] = tuple(n for n, t in BY_NAME.items() if not t.samples)
#: ``model.kind`` value -> its own ``[model]`` defaults.
KIND_DEFAULTS: dict[str, Mapping[str, Any]] = {n: t.defaults for n, t in BY_NAME.items()}
#: ``untie``: a kind (and its aliases) -> the kind it becomes, chosen before the defaults are.
UNTIE: dict[str, str] = {n: t.untied for n, t in BY_NAME.items() if t.untied}


def kind_traits(kind: str) -> KindTraits:
    """The traits of ``model.kind`` value ``kind`` (a name or an alias); ConfigError if unknown."""
    try:
        return BY_NAME[kind]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"unknown model kind {kind!r}; use one of {', '.join(MODEL_KINDS)}") from exc


def kind_help() -> str:
    """The kinds as a command line lists them: ``untied | tied (= lookup) | bilinear | ...``."""
    return " | ".join(f"{t.name} (= {', '.join(t.aliases)})" if t.aliases else t.name for t in KINDS)


__all__ = ["BY_NAME", "FULL_SOFTMAX_KINDS", "KINDS", "KIND_DEFAULTS", "MODEL_KINDS", "UNTIE", "KindTraits",
           "kind_help", "kind_traits"]
