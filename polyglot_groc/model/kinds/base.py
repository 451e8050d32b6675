"""The interface every model kind implements: the word-side parts of a language model."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from polyglot_groc.model.screen import screened_logits


class DotScorer(nn.Module):
    """logits = h E_out^T + b: the plain (screened) softmax's scores; no parameters."""

    def forward(self, h: torch.Tensor, ids: torch.Tensor, e_out: torch.Tensor,
                bias: torch.Tensor) -> torch.Tensor:  # (B, T, d), (V_l,), (V_l, d), (V_l,) -> (B, T, V_l)
        return screened_logits(h, e_out, bias)


class NoBias(nn.Module):
    """A zero bias (kinds whose softmax has none, e.g. the adaptive softmax)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (V_l,) ids or (V_l, d) -> (V_l,)
        return x.new_zeros(x.shape[0], dtype=torch.float32)


@dataclass
class KindParts:
    """What a kind contributes; the model's prefix, screening and loss are shared by all kinds.

    The scores of the scored vocabulary ``ids`` are ``scorer(h, ids, output_net(output_embedder(ids)), b)``
    with ``b = bias(e_out)`` when ``computed_bias`` else ``bias(ids)``; the scorer returns logits
    (or normalised log-probabilities: cross-entropy is the same on both).
    """

    input_embedder: nn.Module
    output_embedder: nn.Module  # may be the same object as input_embedder (tied kinds)
    output_net: nn.Module
    bias: nn.Module
    scorer: nn.Module
    #: The bias is computed from the output embedding (GroC) rather than looked up per word.
    computed_bias: bool = False
    #: Input / output embeddings are functions of the spelling, so new words can be embedded.
    compositional_input: bool = False
    compositional_output: bool = False
    #: A forward and a backward LSTM stack (ELMo's biLM, seed 004 ch. 3), each layer projected to d.
    bidirectional: bool = False
    #: The scorer scores each word on its own (a dot product), so a sampled softmax over a subset of
    #: the vocabulary is the same function on fewer words (not so for the adaptive softmax's bands).
    samples: bool = True
