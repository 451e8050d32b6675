"""Kinds whose words are rows of tables (seed 000 Table 2): untied, tied (once called lookup),
bilinear (tied + L) and deep residual."""

from __future__ import annotations

import torch
import torch.nn as nn

from polyglot_groc.config import ModelConfig
from polyglot_groc.model.embedder import LookupEmbedder
from polyglot_groc.model.kinds.base import DotScorer, KindParts, register
from polyglot_groc.model.outputs import LookupBias, ResidualOutputNet, VariationalDropout


def _residual(cfg: ModelConfig) -> ResidualOutputNet:
    o = cfg.output
    return ResidualOutputNet(cfg.d, o.depth, o.activation, o.dropout)


@register("tied", "deep-residual")
def build_tied(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    """Press & Wolf 2017: one table for inputs and outputs (k = model.output.depth, 0 by default).

    deep-residual (Pappas & Henderson 2019) is this with k >= 1 (its traits require it):
    tied E through E^(j) = act(W_j drop(E^(j-1))) + E."""
    table = LookupEmbedder(n_words, cfg.d, cfg.init_range)
    return KindParts(table, table, _residual(cfg), LookupBias(n_words), DotScorer())


@register("untied")
def build_untied(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    """The plain lookup-table LM: separate input and output tables, each V x d."""
    return KindParts(LookupEmbedder(n_words, cfg.d, cfg.init_range), LookupEmbedder(n_words, cfg.d, cfg.init_range),
                     _residual(cfg), LookupBias(n_words), DotScorer())


class BilinearOutput(nn.Module):
    """E_out = drop(E W) with W a d x d matrix (Gulordava et al. 2018, seed 002: tied + L).

    W starts as the identity so the model starts as the tied one (seed 002 learns L on top of tying).
    """

    def __init__(self, d: int, dropout: float) -> None:
        super().__init__()
        self.w = nn.Linear(d, d, bias=False)
        with torch.no_grad():
            self.w.weight.copy_(torch.eye(d))
        self.drop = VariationalDropout(dropout)

    def forward(self, e: torch.Tensor) -> torch.Tensor:  # (V, d) -> (V, d)
        return self.drop(self.w(e))


@register("bilinear")
def build_bilinear(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    table = LookupEmbedder(n_words, cfg.d, cfg.init_range)
    return KindParts(table, table, BilinearOutput(cfg.d, cfg.output.dropout), LookupBias(n_words), DotScorer())
