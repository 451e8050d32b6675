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

#: ``train.softmax = "auto"`` samples when the largest screened vocabulary (the words one full step
#: scores) has more words than the kind's :attr:`KindTraits.sampled_above`. What a full step costs
#: decides it (benchmarks/vocab_scaling.py, docs/results.md "GroC at a real vocabulary", one CPU thread):
#:
#: * a kind whose output only multiplies by a table (tied, untied, bilinear, deep-residual, elmo, bilm)
#:   pays one matrix product over the vocabulary: tied full 1.69 s vs sampled 0.67 s a step at 10k words,
#:   3.31 vs 0.83 s at 34k. The line stays above the seeds' full-softmax benchmarks (PTB 10k, WikiText-2
#:   33k words) and below the thesis' per-language vocabularies (78k at 1M tokens): TABLE_SAMPLED_ABOVE;
#: * a kind whose full softmax composes every word of the screened vocabulary from its spelling at every
#:   step (a char-CNN: groc, groc-lex, conv) pays that encoder V times: GroC full 6.48 s vs sampled 1.57 s
#:   at 10k words (4.1x), 9.21 vs 1.52 s at 18k (6.0x); issue 46 measured 1.01 vs 0.077 s at 32k (13x). A
#:   sampled step encodes the batch's words and the distinct words of ``train.sampled_k`` = 4096 draws:
#:   about 1,350 at 5,000 words, already 3x fewer than the full step: COMPOSED_SAMPLED_ABOVE. Below
#:   ``sampled_k`` words auto stays full anyway (the draws would cover the vocabulary).
#:
#: The seeds' reproductions (configs/ptb_*.toml, the PTB benchmarks) set ``train.softmax = "full"``
#: themselves, so this line never changes them.
TABLE_SAMPLED_ABOVE = 50_000
COMPOSED_SAMPLED_ABOVE = 5_000


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
    #: ``train.softmax = "auto"`` samples above this many words in the largest screened vocabulary:
    #: :data:`COMPOSED_SAMPLED_ABOVE` for a kind whose full softmax composes every word at every step,
    #: :data:`TABLE_SAMPLED_ABOVE` for one that multiplies by a table (see there).
    sampled_above: int = TABLE_SAMPLED_ABOVE
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
               "per-word bias", sampled_above=COMPOSED_SAMPLED_ABOVE,
               defaults={"output": {"dropout": 0.1, "correction": 128}}),
    KindTraits("elmo", "char-CNN input (layer-normed); a separate lookup output table; per-word bias",
               composes_input=True, defaults={"surface": {"norm": "layer"}}),
    KindTraits("bilm", "char-CNN input (layer-normed), forward and backward LSTMs (ELMo's biLM); a shared "
               "lookup output table; per-word bias", composes_input=True, bidirectional=True,
               defaults={"surface": {"norm": "layer"}}),
    KindTraits("groc", "char-CNN input; the same function as output (seed 000); computed bias",
               composes_input=True, composes_output=True, sampled_above=COMPOSED_SAMPLED_ABOVE,
               defaults={"output": {"dropout": 0.2, "depth": 0}}),
    KindTraits("groc-lex", "char-CNN + lexicon relatives and definitions; the same function as output "
               "(seed 000); computed bias", composes_input=True, composes_output=True, uses_lexicon=True,
               sampled_above=COMPOSED_SAMPLED_ABOVE, defaults={"output": {"dropout": 0.2, "depth": 0}}),
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


def auto_softmax_help() -> str:
    """Where ``train.softmax = "auto"`` samples, in words: ``above 5,000 words a language for conv, groc and
    groc-lex, above 50,000 for the other kinds (adaptive never samples)``."""
    groups: dict[int, list[str]] = {}
    for t in KINDS:
        if t.samples:
            groups.setdefault(t.sampled_above, []).append(t.name)
    commonest = max(groups, key=lambda n: len(groups[n]))
    parts = [f"above {n:,} words a language for " + (
        "the other kinds" if n == commonest else
        ", ".join(groups[n][:-1]) + f" and {groups[n][-1]}" if len(groups[n]) > 1 else groups[n][0])
        for n in sorted(groups)]
    parts = [p.replace(" words a language", "", 1) if i else p for i, p in enumerate(parts)]
    never = [t.name for t in KINDS if not t.samples]
    return ", ".join(parts) + (f" ({', '.join(never)} never samples)" if never else "")


def kind_help() -> str:
    """The kinds as a command line lists them: ``untied | tied (= lookup) | bilinear | ...``."""
    return " | ".join(f"{t.name} (= {', '.join(t.aliases)})" if t.aliases else t.name for t in KINDS)


__all__ = ["BY_NAME", "COMPOSED_SAMPLED_ABOVE", "FULL_SOFTMAX_KINDS", "KINDS", "KIND_DEFAULTS", "MODEL_KINDS",
           "TABLE_SAMPLED_ABOVE", "UNTIE", "KindTraits", "auto_softmax_help", "kind_help", "kind_traits"]
