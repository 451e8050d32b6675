"""Adaptive input and tied adaptive softmax (Baevski & Auli 2019, seed 001).

The frequency-sorted vocabulary (ids are frequency ranks) is cut into bands
``[0, c_1), [c_1, c_2), ..., [c_n, V)``. Band b has a table of dimension d / factor^b (factor 4)
and, for b > 0, a projection to d. Input embeddings are e_v = P_b E_b[v]; the output side is tied
to them (tables and projections, seed 001 §4): the head scores band-0 words and one cluster per
tail band, and log p(v) = log p_head(cluster(v)) + log softmax_band(h . e_v) within the tail band.

Screening: the scored ids of a language are sorted, so each band's words form one contiguous
slice; every band is normalised over the language's words in it, and a band the language does not
use has no cluster in the head.

Cost: band b is scored in its own dimension, h . (P_b E_b[v]) = (h P_b) . E_b[v], so a position
costs d d_b + V_b d_b multiply-adds per tail band instead of V_b d: with the seed's factor 4 and
cutoffs 0.2/0.7 of |V|, about a third of a full softmax's score matmul. The output dropout (a
(1, d) mask shared by every word, as the other kinds' output-embedding dropout) is applied to h
instead, which is the same function: (m * h) . e_v = h . (m * e_v).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.weak import WeakIdKeyDictionary

from groc_base.errors import ConfigError
from polyglot_groc.config import ModelConfig
from polyglot_groc.model.kinds.base import KindParts, NoBias, register
from polyglot_groc.model.outputs import ResidualOutputNet, VariationalDropout


def band_boundaries(cutoffs: tuple[float, ...], n_words: int) -> list[int]:
    """Cutoffs as ids: values > 1 are word counts, values <= 1 fractions of |V|; cumulative, increasing."""
    out = [int(round(c * n_words)) if c <= 1 else int(c) for c in cutoffs]
    out = [c for c in out if 0 < c < n_words]
    if out != sorted(set(out)):
        raise ConfigError(f"model.output.cutoffs={list(cutoffs)} must increase (ids {out} for |V|={n_words}); "
                          "e.g. [2000, 7000] or [0.2, 0.7]")
    return out


class AdaptiveEmbedder(nn.Module):
    def __init__(self, n_words: int, d: int, cutoffs: tuple[float, ...], factor: float, init_range: float) -> None:
        super().__init__()
        self.d = d
        edges = [0, *band_boundaries(cutoffs, n_words), n_words]
        self.starts: torch.Tensor
        self.register_buffer("starts", torch.tensor(edges[:-1], dtype=torch.long), persistent=False)
        dims = [max(1, int(d // factor**b)) for b in range(len(edges) - 1)]
        self.tables = nn.ParameterList(
            nn.Parameter(torch.empty(edges[b + 1] - edges[b], dims[b]).uniform_(-init_range, init_range))
            for b in range(len(dims))
        )
        # Band 0 has full dimension d and needs no projection (identity).
        self.projs = nn.ModuleList(nn.Identity() if dims[b] == d else nn.Linear(dims[b], d, bias=False)
                                   for b in range(len(dims)))

    @property
    def n_bands(self) -> int:
        return len(self.tables)

    def band_of(self, ids: torch.Tensor) -> torch.Tensor:  # (n,) -> (n,) band index
        return torch.bucketize(ids, self.starts, right=True) - 1

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (n,) -> (n, d)
        band = self.band_of(ids)  # (n,)
        out = torch.zeros(ids.shape[0], self.d, device=ids.device, dtype=self.tables[0].dtype)
        for b in range(self.n_bands):  # a loop over the few bands, not over words
            # Every id is looked up in every band (clamped) and masked, instead of selecting the
            # band's ids with nonzero(): a data-dependent shape would sync the GPU every step.
            local = (ids - self.starts[b]).clamp(0, self.tables[b].shape[0] - 1)  # (n,)
            vectors = self.projs[b](self.tables[b][local])  # (n, d)
            out = out + vectors * (band == b).unsqueeze(1).to(vectors.dtype)
        return out


class AdaptiveScorer(nn.Module):
    """Normalised log-probabilities of the scored ids from head + per-band softmaxes."""

    def __init__(self, embedder: AdaptiveEmbedder, d: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.embedder = [embedder]  # a plain list: the embedder's parameters belong to the input side
        self.clusters = nn.Linear(d, max(embedder.n_bands - 1, 1), bias=False)
        self.drop = VariationalDropout(dropout)  # the output dropout, on h (see the module docstring)
        # Band edges within each scored-id tensor, read to the host once per tensor (the screen
        # keeps one per language) instead of once per step, which would sync the GPU.
        self._edges: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def band_edges(self, ids: torch.Tensor) -> list[int]:
        """Positions in the sorted ``ids`` where each band starts, plus ``len(ids)``."""
        edges = self._edges.get(ids)
        if edges is None:
            edges = torch.searchsorted(ids, self.embedder[0].starts).tolist() + [ids.numel()]
            self._edges[ids] = edges
        return list(edges)

    def band_scores(self, h: torch.Tensor, ids: torch.Tensor, b: int) -> torch.Tensor:
        """h . e_v for the scored ids of band b, in band b's dimension.  (B, T, d) -> (B, T, V_b)"""
        emb = self.embedder[0]
        edge = self.band_edges(ids)
        local = ids[edge[b]:edge[b + 1]] - emb.starts[b]  # (V_b,) rows of band b's table
        proj = emb.projs[b]
        hb = F.linear(h, proj.weight.t()) if isinstance(proj, nn.Linear) else h  # (B, T, d_b) = h P_b
        return F.linear(hb, emb.tables[b][local])  # (B, T, V_b)

    def forward(self, h: torch.Tensor, ids: torch.Tensor, e_out: torch.Tensor,
                bias: torch.Tensor) -> torch.Tensor:  # (B, T, d) ... -> (B, T, V_l) log-probs
        # e_out (the projected table) is not needed: each band is scored in its own dimension.
        emb = self.embedder[0]
        h = self.drop(h.reshape(-1, h.shape[-1])).reshape(h.shape)  # one (1, d) mask for all positions
        # Sorted ids: band b occupies positions edge[b]:edge[b+1] of the scored vocabulary.
        edge = self.band_edges(ids)
        tails = [b for b in range(1, emb.n_bands) if edge[b + 1] > edge[b]]
        cluster = self.clusters(h)[..., [b - 1 for b in tails]]  # (B, T, n_used_tails)
        n0 = edge[1]
        head = torch.log_softmax(torch.cat([self.band_scores(h, ids, 0), cluster], dim=-1), dim=-1)
        parts = [head[..., :n0]]
        for j, b in enumerate(tails):
            parts.append(torch.log_softmax(self.band_scores(h, ids, b), dim=-1) + head[..., n0 + j: n0 + j + 1])
        return torch.cat(parts, dim=-1)


@register("adaptive")
def build(cfg: ModelConfig, n_chars: int, n_words: int) -> KindParts:
    o = cfg.output
    if o.inputs_after_dropout:
        raise ConfigError("model.output.inputs_after_dropout=true does not apply to model.kind=\"adaptive\" "
                          "(its output dropout acts on h, not on the table); set it to false")
    emb = AdaptiveEmbedder(n_words, cfg.d, o.cutoffs, o.adaptive_factor, cfg.init_range)
    # The output dropout lives in the scorer (on h), so the output net is the identity.
    return KindParts(emb, emb, ResidualOutputNet(cfg.d, 0, o.activation, 0.0), NoBias(),
                     AdaptiveScorer(emb, cfg.d, o.dropout))
