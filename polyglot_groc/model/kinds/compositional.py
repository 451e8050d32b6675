"""Character-level kinds: ELMo-like (char-CNN input, lookup output), its bidirectional form (bilm) and
GroC / GroC+lexicon (seed 000 §3)."""

from __future__ import annotations

from polyglot_groc.config import ModelConfig
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.embedder import GroundedEmbedder, LookupEmbedder
from polyglot_groc.model.kinds.base import DotScorer, KindParts, register
from polyglot_groc.model.outputs import ComputedBias, LookupBias, ResidualOutputNet


@register("elmo", "bilm")
def build_elmo(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    """Char-CNN inputs, one lookup softmax. ``bilm`` (ELMo's biLM, Peters et al. 2018; seed 004 ch. 3)
    is the same word side shared by a forward and a backward LSTM stack (its ``bidirectional`` trait)."""
    o = cfg.output
    return KindParts(GroundedEmbedder(cfg.surface, n_chars, cfg.d, use_lexicon=False),
                     LookupEmbedder(n_words, cfg.d, cfg.init_range),
                     ResidualOutputNet(cfg.d, o.depth, o.activation, o.dropout), LookupBias(n_words), DotScorer())


@register("groc", "groc-lex")
def build_groc(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    """One grounded function for inputs and outputs, bias computed from e_v (vocabulary-free |Θ|) by default."""
    o = cfg.output
    emb = GroundedEmbedder(cfg.surface, n_chars, cfg.d, use_lexicon=kind_traits(cfg.kind).uses_lexicon,
                           combine=cfg.lexicon.combine)
    # output.bias = "lookup": a per-word vector (the released code's default), which gives up the
    # vocabulary-free |Θ| and gives new words bias 0; "computed" is seed 000 §3.3.
    computed = o.bias == "computed"
    bias = ComputedBias(cfg.d, o.bias_activation, o.bias_dropout) if computed else LookupBias(n_words)
    return KindParts(emb, emb, ResidualOutputNet(cfg.d, o.depth, o.activation, o.dropout),
                     bias, DotScorer(), computed_bias=computed)
