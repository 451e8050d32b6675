"""Convolutional output embeddings (Józefowicz et al. 2016, "CNN softmax" with correction).

e_w = CNN(chars_w) + M c_w: the char-CNN + highway surface encoder of every scored word plus a
per-word correction c_w of size ``cor`` (model.output.correction) projected by M (cor x d), which
lets words with similar spellings get different output vectors. Inputs use a lookup table.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from polyglot_groc.config import ModelConfig
from polyglot_groc.model.embedder import GroundedEmbedder, LexiconForms, LookupEmbedder
from polyglot_groc.model.kinds.base import DotScorer, KindParts, register
from polyglot_groc.model.outputs import LookupBias, ResidualOutputNet


class ConvOutputEmbedder(nn.Module):
    def __init__(self, cfg: ModelConfig, n_chars: int, n_words: int) -> None:
        super().__init__()
        cor = cfg.output.correction
        self.cnn = GroundedEmbedder(cfg.surface, n_chars, cfg.d, use_lexicon=False)
        self.correction = nn.Parameter(torch.empty(n_words, cor).uniform_(-cfg.init_range, cfg.init_range))
        self.proj = nn.Linear(cor, cfg.d, bias=False)

    def set_words(self, chars: torch.Tensor, forms: LexiconForms | None) -> None:
        self.cnn.set_words(chars, None)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (n,) -> (n, d)
        return self.cnn(ids) + self.proj(self.correction[ids])


@register("conv")
def build(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    o = cfg.output
    return KindParts(LookupEmbedder(n_words, cfg.d, cfg.init_range), ConvOutputEmbedder(cfg, n_chars, n_words),
                     ResidualOutputNet(cfg.d, 0, o.activation, o.dropout), LookupBias(n_words), DotScorer())
