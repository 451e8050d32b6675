"""Character-level kinds: ELMo-like (char-CNN input, lookup output), its bidirectional form (bilm) and
GroC / GroC+lexicon (seed 000 §3)."""

from __future__ import annotations

import dataclasses

from polyglot_groc.config import ModelConfig
from polyglot_groc.model.embedder import GroundedEmbedder, LookupEmbedder
from polyglot_groc.model.kinds.base import DotScorer, KindParts
from polyglot_groc.model.outputs import ComputedBias, LookupBias, ResidualOutputNet


def build_elmo(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    o = cfg.output
    return KindParts(GroundedEmbedder(cfg.surface, n_chars, cfg.d, use_lexicon=False),
                     LookupEmbedder(n_words, cfg.d, cfg.init_range),
                     ResidualOutputNet(cfg.d, o.depth, o.activation, o.dropout), LookupBias(n_words), DotScorer(),
                     compositional_input=True)


def build_bilm(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    """ELMo's biLM (Peters et al. 2018; seed 004 ch. 3): the elmo kind's word side (char-CNN inputs, one
    lookup softmax) shared by a forward and a backward LSTM stack with projections."""
    return dataclasses.replace(build_elmo(cfg, n_chars, n_words), bidirectional=True)


def build_groc(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    """One grounded function for inputs and outputs, bias computed from e_v (vocabulary-free |Θ|) by default."""
    o = cfg.output
    emb = GroundedEmbedder(cfg.surface, n_chars, cfg.d, use_lexicon=cfg.kind == "groc-lex",
                           combine=cfg.lexicon.combine)
    # output.bias = "lookup": a per-word vector (the released code's default), which gives up the
    # vocabulary-free |Θ| and gives new words bias 0; "computed" is seed 000 §3.3.
    computed = o.bias == "computed"
    bias = ComputedBias(cfg.d, o.bias_activation, o.bias_dropout) if computed else LookupBias(n_words)
    return KindParts(emb, emb, ResidualOutputNet(cfg.d, o.depth, o.activation, o.dropout),
                     bias, DotScorer(), computed_bias=computed,
                     compositional_input=True, compositional_output=True)
