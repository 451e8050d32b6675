"""Output side: depth-k residual net over the embeddings and the computed bias (seed 000 §3.2-3.3)."""

from __future__ import annotations

import torch
import torch.nn as nn

from polyglot_groc.model.activations import activation


class VariationalDropout(nn.Module):
    """Dropout whose mask is shared across rows (vocabulary words or time steps)."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., n, d)
        if not self.training or self.p == 0.0:
            return x
        shape = (*x.shape[:-2], 1, x.shape[-1])
        mask = x.new_empty(shape).bernoulli_(1.0 - self.p) / (1.0 - self.p)
        return x * mask


class ResidualOutputNet(nn.Module):
    """E^(j) = g_j(drop(E^(j-1))) + E_in with g_j = act(Linear); k = 0 returns drop(E_in)."""

    def __init__(self, d: int, depth: int, act: str, dropout: float) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(d, d) for _ in range(depth))
        self.act = activation(act)
        self.drop = VariationalDropout(dropout)

    def forward(self, e_in: torch.Tensor) -> torch.Tensor:  # (V, d) -> (V, d)
        e = e_in
        for g in self.layers:
            e = self.act(g(self.drop(e))) + e_in
        return self.drop(e)

    def zero_residual_(self) -> None:
        """Make every g_j contribute 0 (identity output net), e.g. after ELMo conversion."""
        with torch.no_grad():
            for g in self.layers:
                assert isinstance(g, nn.Linear)
                g.weight.zero_()
                g.bias.zero_()


class ComputedBias(nn.Module):
    """b_v = act(w . drop(e_v) + a): two parameters sets, none per word.

    ``dropout`` is the released code's ``--bias_drop`` (plain dropout on e_v, training only).
    """

    def __init__(self, d: int, act: str, dropout: float = 0.0) -> None:
        super().__init__()
        self.w = nn.Linear(d, 1)
        self.act = activation(act)
        self.drop = nn.Dropout(dropout)
        with torch.no_grad():
            self.w.bias.zero_()

    def forward(self, e_out: torch.Tensor) -> torch.Tensor:  # (V, d) -> (V,)
        return self.act(self.w(self.drop(e_out))).squeeze(-1)


class LookupBias(nn.Module):
    """A per-word bias vector (lookup/ELMo baselines, or GroC with ``output.bias = "lookup"``).

    Words added after training (open-vocabulary evaluation of a compositional model) have no
    row: their bias is 0.
    """

    def __init__(self, n_words: int) -> None:
        super().__init__()
        self.b = nn.Parameter(torch.zeros(n_words))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (V_l,) -> (V_l,)
        n = self.b.shape[0]
        return torch.where(ids < n, self.b[ids.clamp(max=n - 1)], self.b.new_zeros(()))
