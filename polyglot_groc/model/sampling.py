"""Sampled training softmax: the candidate words of one step and the log-inclusion correction.

At a real vocabulary (the thesis' en+fr corpora: 139k words) a full softmax makes every GroC step
encode every scored word with the char-CNN (and the lexicon forms); seed 000 §3.1/B.4 says to use a
softmax approximation there. A training step of ``train.softmax = "sampled"`` scores only

    C = D ∪ S

where ``D`` is the step's own words (its inputs and targets, so one encoding serves the input
embeddings and the output table, the backward LM of a bidirectional kind included) and ``S`` the
distinct words of ``k`` draws, with replacement, from a proposal ``Q`` over the language's screened
vocabulary. Each candidate ``c`` is scored ``s_c - log π_c``, where ``π_c`` is its probability of
being in ``C`` given the batch: 1 for ``c ∈ D``, and ``π_c = 1 - (1 - q_c)^k`` for a sampled word
(Jean et al. 2015's log-Q correction, with the exact inclusion probability of ``k`` draws). Then

    Ẑ = Σ_{c ∈ C} exp(s_c) / π_c

is the Horvitz–Thompson estimate of the softmax normaliser ``Z = Σ_w exp(s_w)``: unbiased for any
proposal that gives every word ``q_w > 0``, and exact when ``S`` holds every word. A sampled word
that is also one of the batch's words (an *accidental hit*) is the same candidate, counted once with
``π = 1``: removing accidental hits is the union. With ``k >= |V_l|`` the candidates are the whole
screened vocabulary with no correction, i.e. the full softmax.

Evaluation never samples: candidates are built by the trainer for training steps only, and
:meth:`~polyglot_groc.model.lm.LanguageModel.forward` refuses them in eval mode.

The draws are made on the host with NumPy from a generator seeded by ``(seed, rank, step)``: every
rank of a torchrun run draws its own negatives, a resumed run draws exactly what the uninterrupted
run drew (no generator state to save), and the device never waits for the host (the candidate ids
and corrections go over with one non-blocking copy each, like the batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch

from groc_base.errors import ConfigError
from polyglot_groc.config import PROPOSALS  # the proposals' names, checked by the config (one list)


@dataclass(frozen=True)
class Candidates:
    """The words one sampled step scores, as tensors on the model's device."""

    ids: torch.Tensor  # (C,) sorted global ids: the batch's words and the distinct sampled words
    log_correction: torch.Tensor  # (C,) float32 -log π_c: 0 for the batch's words, > 0 for sampled ones
    #: Distinct sampled words that are not batch words (for logging and tests).
    n_sampled: int = 0

    def to(self, device: torch.device) -> Candidates:
        return Candidates(self.ids.to(device, non_blocking=True),
                          self.log_correction.to(device, non_blocking=True), self.n_sampled)


@dataclass(frozen=True)
class Proposal:
    """A proposal ``q`` over one language's scored ids (sorted global ids) and its CDF for drawing."""

    ids: np.ndarray  # (V_l,) int64 sorted global ids
    q: np.ndarray  # (V_l,) float64, sums to 1, every entry > 0
    cdf: np.ndarray  # (V_l,) float64 cumulative q, last entry 1

    @classmethod
    def build(cls, ids: np.ndarray, counts: np.ndarray, kind: str, alpha: float = 0.75) -> Proposal:
        """``q`` over ``ids`` from their training ``counts`` (aligned with ``ids``).

        ``"log-uniform"``: by frequency rank ``r`` (0 = most frequent, ties by id),
        ``q = log((r + 2) / (r + 1)) / log(V + 1)`` (Zipfian; bilm-tf's and TF's
        ``LogUniformCandidateSampler``). ``"unigram"``: ``q ∝ max(count, 1)^alpha``: a word never
        seen in training (a closed vocabulary holds valid/test words) counts as seen once, since
        the estimate of ``Z`` is unbiased only where every word can be drawn.
        """
        ids = np.asarray(ids, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.float64)
        if ids.ndim != 1 or counts.shape != ids.shape or ids.size == 0:
            raise ConfigError("a sampled-softmax proposal needs one count per scored word and at least one word")
        if kind == "log-uniform":
            order = np.lexsort((ids, -counts))  # frequency rank, most frequent first, ties by id
            rank = np.empty(ids.size, dtype=np.float64)
            rank[order] = np.arange(ids.size, dtype=np.float64)
            q = np.log((rank + 2.0) / (rank + 1.0)) / np.log(ids.size + 1.0)
        elif kind == "unigram":
            q = np.maximum(counts, 1.0) ** alpha
        else:
            raise ConfigError(f"train.sampled_proposal={kind!r} is unknown; use one of {', '.join(PROPOSALS)}")
        q = q / q.sum()
        cdf = np.cumsum(q)
        cdf[-1] = 1.0
        return cls(ids, q, cdf)

    def draw(self, rng: np.random.Generator, k: int) -> np.ndarray:
        """``k`` global ids drawn with replacement from ``q``.  -> (k,)"""
        pos = np.searchsorted(self.cdf, rng.random(k), side="right")
        return self.ids[np.minimum(pos, self.ids.size - 1)]

    def log_inclusion(self, ids: np.ndarray, k: int) -> np.ndarray:
        """``log π`` of global ``ids`` (all in this proposal): the log probability that ``k`` draws
        hold each at least once, ``log(1 - (1 - q)^k)``, computed without cancellation.  (n,) -> (n,)"""
        q = self.q[np.searchsorted(self.ids, ids)]
        return np.log(-np.expm1(k * np.log1p(-np.minimum(q, 1.0 - 1e-16))))


class CandidateSampler:
    """Builds each sampled step's :class:`Candidates` from per-language proposals.

    ``proposals`` maps a language (``None``: the unscreened union) to its :class:`Proposal`.
    """

    def __init__(self, proposals: Mapping[str | None, Proposal], k: int, seed: int, rank: int = 0) -> None:
        self.proposals = dict(proposals)
        self.k, self.seed, self.rank = int(k), int(seed), int(rank)

    def rng(self, step: int) -> np.random.Generator:
        """The generator of ``step`` on this rank: a function of (seed, rank, step) alone."""
        return np.random.default_rng(np.random.SeedSequence([self.seed, self.rank, step]))

    def draw(self, lang: str | None, words: np.ndarray, step: int) -> Candidates:
        """The candidates of ``step`` for a batch of ``lang`` whose inputs and targets are ``words``
        (global ids, any shape), as CPU tensors."""
        proposal = self.proposals[lang]
        if self.k >= proposal.ids.size:  # the sample would be the whole vocabulary: score it exactly
            return Candidates(torch.from_numpy(proposal.ids.copy()), torch.zeros(proposal.ids.size), 0)
        batch = np.unique(np.asarray(words, dtype=np.int64))  # D
        drawn = np.unique(proposal.draw(self.rng(step), self.k))
        sampled = np.setdiff1d(drawn, batch, assume_unique=True)  # S \ D: accidental hits stay in D
        ids = np.union1d(batch, sampled)  # (C,) sorted
        corr = np.zeros(ids.size, dtype=np.float32)
        corr[np.searchsorted(ids, sampled)] = -proposal.log_inclusion(sampled, self.k)
        return Candidates(torch.from_numpy(ids), torch.from_numpy(corr), int(sampled.size))


def build_sampler(lang_ids: Mapping[str | None, np.ndarray], counts: np.ndarray, *, k: int, proposal: str,
                  alpha: float, seed: int, rank: int = 0) -> CandidateSampler:
    """A sampler whose proposal for each language covers its scored ``lang_ids`` (sorted global ids),
    from ``counts`` (training occurrences of every global id)."""
    props = {lang: Proposal.build(ids, counts[ids], proposal, alpha) for lang, ids in lang_ids.items()}
    return CandidateSampler(props, k, seed, rank)


__all__ = ["PROPOSALS", "CandidateSampler", "Candidates", "Proposal", "build_sampler"]
