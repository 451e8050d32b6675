"""Language-screened softmax (seed 004 §5.4): score only the current language's vocabulary.

Each language keeps the sorted global ids of its words; local positions come from
``searchsorted``, so memory and time scale with |V_lang|, never with |V_union|.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.nn.functional as F

from groc_base.errors import InputError


class LanguageScreen:
    def __init__(self, lang_ids: Mapping[str, torch.Tensor], n_words: int) -> None:
        self.lang_ids = {lang: torch.as_tensor(ids, dtype=torch.long).sort().values for lang, ids in lang_ids.items()}
        self.all_ids = torch.arange(n_words)

    @property
    def device(self) -> torch.device:
        return self.all_ids.device

    def to(self, device: torch.device) -> LanguageScreen:
        """The same screen with its id tables on ``device``."""
        moved = LanguageScreen.__new__(LanguageScreen)
        moved.lang_ids = {lang: ids.to(device) for lang, ids in self.lang_ids.items()}
        moved.all_ids = self.all_ids.to(device)
        return moved

    def ids(self, lang: str | None) -> torch.Tensor:
        """Global ids scored for ``lang``; ``None`` = the full union (no screening).  # (V_l,)"""
        if lang is None:
            return self.all_ids
        try:
            return self.lang_ids[lang]
        except KeyError as exc:
            raise InputError(f"language {lang!r} is not in this model; it knows {', '.join(self.lang_ids)}") from exc

    def local(self, ids: torch.Tensor, global_ids: torch.Tensor) -> torch.Tensor:
        """Positions of global word ids within the sorted ``ids`` table.  (B, T) -> (B, T)"""
        global_ids = global_ids.contiguous()
        pos = torch.searchsorted(ids, global_ids).clamp_max(ids.numel() - 1)
        if not bool((ids[pos] == global_ids).all()):
            bad = global_ids[ids[pos] != global_ids][0]
            raise InputError(f"word id {int(bad)} is outside the scored vocabulary of this batch's language")
        return pos


def screened_logits(h: torch.Tensor, e_out: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """(B, T, d) x (V_l, d) + (V_l,) -> (B, T, V_l)"""
    return F.linear(h, e_out, bias)
