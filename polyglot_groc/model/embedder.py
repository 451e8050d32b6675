"""Embedding functions: the grounded compositional embedder (GroC) and the lookup table.

GroC (seed 000 §3.1): e_x = W [c_x; r_x; d_x] where c is the surface encoding, r the *masked*
mean surface encoding of at most 3 lexicon-related words (synonyms, hyponyms), d the masked mean
over at most 10 definition words; a missing part is 0. Without lexicon forms e_x = c_x (the
surface encoder already projects to d). Related/definition words outside the vocabulary are
still encoded compositionally: they are extra rows of the character table (ids >= V).

No parameter here depends on the vocabulary: the word-dependent tensors are non-persistent
buffers, rebuilt from the vocabulary, charset and compiled forms saved in the checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn

from groc_base.checks import option, setting
from groc_base.errors import ModelError
from polyglot_groc.config import SurfaceConfig
from polyglot_groc.model.surface import SurfaceEncoder, masked_mean


@dataclass(frozen=True)
class LexiconForms:
    """Per-word lexicon forms as index tensors into the character table (vocab + extra words)."""

    related_ids: torch.Tensor  # (V, R) int64
    related_mask: torch.Tensor  # (V, R) bool
    definition_ids: torch.Tensor  # (V, K) int64
    definition_mask: torch.Tensor  # (V, K) bool

    @classmethod
    def empty(cls, n_words: int, max_related: int = 3, max_definition: int = 10) -> LexiconForms:
        z = torch.zeros
        return cls(z(n_words, max_related, dtype=torch.long), z(n_words, max_related, dtype=torch.bool),
                   z(n_words, max_definition, dtype=torch.long), z(n_words, max_definition, dtype=torch.bool))

    @classmethod
    def from_arrays(cls, related_ids: np.ndarray, related_mask: np.ndarray,
                    definition_ids: np.ndarray, definition_mask: np.ndarray) -> LexiconForms:
        # Copies: the service's arrays may be read-only memory maps of its cache.
        return cls(torch.tensor(np.array(related_ids), dtype=torch.long),
                   torch.tensor(np.array(related_mask), dtype=torch.bool),
                   torch.tensor(np.array(definition_ids), dtype=torch.long),
                   torch.tensor(np.array(definition_mask), dtype=torch.bool))

    def to_state(self) -> dict[str, torch.Tensor]:
        return {"related_ids": self.related_ids, "related_mask": self.related_mask,
                "definition_ids": self.definition_ids, "definition_mask": self.definition_mask}

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor]) -> LexiconForms:
        return cls(state["related_ids"], state["related_mask"], state["definition_ids"], state["definition_mask"])

    def to(self, device: torch.device) -> LexiconForms:
        return LexiconForms(self.related_ids.to(device), self.related_mask.to(device),
                            self.definition_ids.to(device), self.definition_mask.to(device))

    def extend(self, n_new: int) -> LexiconForms:
        """Forms for ``n_new`` appended words that have none (r = d = 0)."""
        e = LexiconForms.empty(n_new, self.related_ids.shape[1], self.definition_ids.shape[1])
        return LexiconForms(torch.cat([self.related_ids, e.related_ids]),
                            torch.cat([self.related_mask, e.related_mask]),
                            torch.cat([self.definition_ids, e.definition_ids]),
                            torch.cat([self.definition_mask, e.definition_mask]))


class GroundedEmbedder(nn.Module):
    """The one function that embeds input words *and* every scored output word."""

    def __init__(self, cfg: SurfaceConfig, n_chars: int, d: int, use_lexicon: bool,
                 combine: str = "concat") -> None:
        super().__init__()
        self.surface = SurfaceEncoder(cfg, n_chars, d, highway_act=cfg.highway_activation)
        self.use_lexicon = use_lexicon
        # W: 3d -> d over [c; r; d] (seed 000 §3.4: "3d^2 parameters for projection"); "add" is the
        # released code's default (c + r + d, no projection).
        self.combine = nn.Linear(3 * d, d) if use_lexicon and combine == "concat" else None
        self.chars: torch.Tensor
        self.register_buffer("chars", torch.zeros(0, 1, dtype=torch.long), persistent=False)
        self.forms: LexiconForms | None = None

    def set_words(self, chars: torch.Tensor, forms: LexiconForms | None) -> None:
        """Install the character table (V_enc, L) and, for GroC+lex, the per-word forms (V rows)."""
        if self.use_lexicon:
            if forms is None:
                raise ModelError(f"a groc-lex model needs lexicon forms; pass "
                                 f"{setting('model.lexicon.specs', ['SPEC'])} "
                                 f"or use {option('model', 'groc')}")
            top = max((int(t.max()) for t in (forms.related_ids, forms.definition_ids) if t.numel()), default=0)
            if top >= chars.shape[0]:
                raise ModelError(f"lexicon forms reference word row {top} but the char table has {chars.shape[0]} rows")
        self.chars = chars.to(self.chars.device)
        self.forms = forms

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Embed word ids.  (n,) -> (n, d)"""
        if not self.use_lexicon:
            return self.surface(self.chars[ids])
        assert self.forms is not None
        if self.forms.related_ids.device != ids.device:  # index tables follow the model (moved once)
            self.forms = self.forms.to(ids.device)
        f = self.forms
        rel_ids, rel_mask = f.related_ids[ids], f.related_mask[ids]  # (n, R)
        def_ids, def_mask = f.definition_ids[ids], f.definition_mask[ids]  # (n, K)
        # Encode each needed row once: the words, their related words and definition words.
        needed, inverse = torch.unique(
            torch.cat([ids, rel_ids[rel_mask], def_ids[def_mask]]), return_inverse=True
        )
        enc = self.surface(self.chars[needed])  # (u, d)
        c = enc[inverse[: ids.numel()]]  # (n, d)
        # Masked slots point at row 0 of `needed`, their value is ignored by masked_mean.
        r = masked_mean(enc[torch.searchsorted(needed, rel_ids)], rel_mask)  # (n, d)
        dd = masked_mean(enc[torch.searchsorted(needed, def_ids)], def_mask)  # (n, d)
        if self.combine is None:  # combine = "add"
            return c + r + dd
        return self.combine(torch.cat([c, r, dd], dim=-1))


class LookupEmbedder(nn.Module):
    """A lookup table: one vector per vocabulary word (parameters grow with |V|)."""

    def __init__(self, n_words: int, d: int, init_range: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_words, d).uniform_(-init_range, init_range))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:  # (n,) -> (n, d)
        return self.weight[ids]
