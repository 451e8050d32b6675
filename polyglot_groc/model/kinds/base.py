"""The interface every model kind implements (the word-side parts of a language model) and the
registration of a kind's builder: ``@register("name")`` in the kind's own module."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn as nn

from polyglot_groc.config import ModelConfig
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


#: A kind's builder: ``build(model config, n_chars, n_words)``. The kind's traits (composed inputs
#: and outputs, bidirectional, samples: polyglot_groc/kind_traits.py) are not in the parts: the model
#: and the code around it read them from the traits record.
Builder = Callable[[ModelConfig, int, int], KindParts]

#: kind name -> its builder, filled by :func:`register` as the kinds' modules are imported.
BUILDERS: dict[str, Builder] = {}


def register(*names: str) -> Callable[[Builder], Builder]:
    """Register the decorated function as the builder of the kinds ``names`` (canonical names, as in
    polyglot_groc/kind_traits.py; an alias is served by its kind's builder)."""
    def decorate(build: Builder) -> Builder:
        for name in names:
            if name in BUILDERS:
                raise RuntimeError(f"model kind {name!r} has two builders: {BUILDERS[name].__module__} and "
                                   f"{build.__module__}")
            BUILDERS[name] = build
        return build

    return decorate
