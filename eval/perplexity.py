"""The one perplexity loop, over a small scorer protocol.

Perplexity = exp(mean NLL over all target tokens, ``<eos>`` included), with the hidden state
carried across BPTT windows (stateful evaluation, as in AWD-LSTM). The caller batchifies the
token stream; this module knows nothing about models or vocabularies.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, SupportsFloat

import numpy as np

from groc_base.errors import InputError


class Scorer(Protocol):
    """Anything that scores (B, T) windows statefully."""

    def init_state(self, batch_size: int) -> Any: ...

    def score(self, inputs: np.ndarray, targets: np.ndarray, state: Any) -> tuple[SupportsFloat, int, Any]:
        """Return (summed NLL in nats, number of target tokens, next state).

        The NLL may be any number that adds to a float and converts with ``float()`` -- e.g. a
        0-d GPU tensor: the loop only adds them up and converts once at the end, so a scorer on
        an accelerator is not forced to synchronise with the host after every window.
        """
        ...


@dataclass(frozen=True)
class PerplexityResult:
    perplexity: float
    nll: float  # mean NLL per token (nats)
    n_tokens: int
    batch_size: int
    bptt: int

    def to_dict(self) -> dict[str, float | int]:
        return {"perplexity": self.perplexity, "nll": self.nll, "n_tokens": self.n_tokens,
                "batch_size": self.batch_size, "bptt": self.bptt}


def perplexity(scorer: Scorer, streams: np.ndarray, bptt: int,
               progress: Callable[[int], None] | None = None) -> PerplexityResult:
    """Evaluate ``streams`` (B, L): inputs streams[:, s:s+l], targets streams[:, s+1:s+l+1].

    Every position but the first of each stream is a target exactly once.
    """
    if streams.ndim != 2 or streams.shape[1] < 2:
        raise InputError(
            f"evaluation streams have shape {streams.shape}; need (batch, length >= 2) — "
            "use a smaller eval batch size or a longer split"
        )
    if bptt <= 0:
        raise InputError(f"bptt={bptt} must be positive")
    b, n = streams.shape
    state = scorer.init_state(b)
    total_nll: Any = 0.0  # stays a device number if the scorer returns one; read once below
    total_tok = 0
    for start in range(0, n - 1, bptt):
        length = min(bptt, n - 1 - start)
        inputs = streams[:, start : start + length]
        targets = streams[:, start + 1 : start + 1 + length]
        nll, tok, state = scorer.score(inputs, targets, state)
        total_nll = total_nll + nll
        total_tok += tok
        if progress is not None:
            progress(tok)
    mean = float(total_nll) / total_tok
    return PerplexityResult(math.exp(mean) if mean < 700 else math.inf, mean, total_tok, b, bptt)
