"""Which training softmax a run uses (``train.softmax``), why, and the sampler of a sampled run.

``auto`` samples where the full softmax's cost would dominate: the largest screened vocabulary
(the words one step scores) has more words than the kind's
:attr:`~polyglot_groc.kind_traits.KindTraits.sampled_above` (5,000 for a kind that composes every
output word from its spelling at every step, 50,000 for one that multiplies by a table: see
:mod:`polyglot_groc.kind_traits`), the kind scores words one by one (not the adaptive softmax) and
``train.sampled_k`` draws would not cover the vocabulary anyway. A resumed run keeps the choice it
started with (its checkpoints record it), so a resume continues exactly. The choice and its reason
go to the log, to the hooks' ``on_start`` info and to ``result.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from polyglot_groc.config import TrainConfig
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.lm import LanguageModel
from polyglot_groc.model.sampling import CandidateSampler, build_sampler

__all__ = ["LEGACY_SAMPLED_ABOVE", "SoftmaxChoice", "choose_softmax", "make_sampler"]


@dataclass(frozen=True)
class SoftmaxChoice:
    """The training softmax of a run: ``mode`` is "full" or "sampled", ``reason`` says why in words."""

    mode: str
    reason: str
    #: Words in the largest screened vocabulary (what one full-softmax step scores).
    largest_vocab: int
    k: int = 0
    proposal: str = ""

    @property
    def sampled(self) -> bool:
        return self.mode == "sampled"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, "reason": self.reason, "largest_vocab": self.largest_vocab}
        if self.sampled:
            out.update(k=self.k, proposal=self.proposal)
        return out

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SoftmaxChoice:
        """The choice :meth:`to_dict` wrote (result.json, the hooks' ``on_start`` info)."""
        return cls(str(values["mode"]), str(values["reason"]), int(values["largest_vocab"]),
                   int(values.get("k", 0)), str(values.get("proposal", "")))

    def describe(self) -> str:
        """One line: ``softmax: sampled (4096 log-uniform draws per step): <reason>``."""
        how = f" ({self.k} {self.proposal} draws per step)" if self.sampled else ""
        return f"softmax: {self.mode}{how}: {self.reason}"


#: ``auto``'s line for every kind in the runs checkpointed before the choice was recorded (and before
#: the line depended on the kind): a resumed run of that time goes on as it started.
LEGACY_SAMPLED_ABOVE = 50_000


def choose_softmax(t: TrainConfig, model: LanguageModel, screen: bool,
                   resumed: Mapping[str, Any] | None = None) -> SoftmaxChoice:
    """Resolve ``t.softmax`` for ``model`` (``screen``: data.screen, each language scored on its own).

    ``resumed``: for a resumed run, the choice its checkpoint recorded (:meth:`SoftmaxChoice.to_dict`;
    empty for a checkpoint written before choices were recorded): ``auto`` keeps the mode the run
    started with, so a resume continues exactly whatever the rule is today.
    """
    screen_ids = model.screen.lang_ids if screen else {None: model.screen.all_ids}
    largest = max(int(ids.numel()) for ids in screen_ids.values())
    traits = kind_traits(model.kind)
    if t.softmax == "full":
        return SoftmaxChoice("full", "train.softmax=full", largest)
    sampled = SoftmaxChoice("sampled", "", largest, t.sampled_k, t.sampled_proposal)
    if t.softmax == "sampled":
        return replace(sampled, reason="train.softmax=sampled")
    # auto
    if not traits.samples:
        return SoftmaxChoice("full", f"train.softmax=auto and a {model.kind} model cannot sample", largest)
    if resumed is not None and resumed.get("mode") in ("full", "sampled"):
        kept = sampled if resumed["mode"] == "sampled" else SoftmaxChoice("full", "", largest)
        return replace(kept, reason=f"train.softmax=auto, as the run chose when it started: {resumed.get('reason')}")
    line = LEGACY_SAMPLED_ABOVE if resumed is not None else traits.sampled_above
    why = "auto's line when this run started" if resumed is not None else f"auto's line for {model.kind}"
    if largest <= line:
        return SoftmaxChoice("full", f"train.softmax=auto and the largest screened vocabulary ({largest:,} words) "
                                     f"is at most {line:,} ({why})", largest)
    if t.sampled_k >= largest:
        return SoftmaxChoice("full", f"train.softmax=auto and train.sampled_k={t.sampled_k} covers the largest "
                                     f"screened vocabulary ({largest:,} words)", largest)
    return replace(sampled, reason=f"train.softmax=auto and the largest screened vocabulary ({largest:,} words) is "
                                   f"above {line:,} ({why})")


def make_sampler(choice: SoftmaxChoice, t: TrainConfig, model: LanguageModel,
                 train_streams: Mapping[str, np.ndarray], screen: bool, rank: int = 0) -> CandidateSampler | None:
    """The candidate sampler of a sampled run (None for full): proposals from the training
    streams' word counts, over each language's screened ids (``screen=False``: the whole union)."""
    if not choice.sampled:
        return None
    n_words = int(model.screen.all_ids.numel())
    counts = np.zeros(n_words, dtype=np.int64)
    for stream in train_streams.values():
        counts += np.bincount(np.asarray(stream).ravel(), minlength=n_words)[:n_words]
    lang_ids: dict[str | None, np.ndarray]
    if screen:
        lang_ids = {lang: ids.cpu().numpy() for lang, ids in model.screen.lang_ids.items()}
    else:
        lang_ids = {None: model.screen.all_ids.cpu().numpy()}
    return build_sampler(lang_ids, counts, k=t.sampled_k, proposal=t.sampled_proposal, alpha=t.sampled_alpha,
                         seed=t.seed, rank=rank)
