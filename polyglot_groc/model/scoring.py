"""Adapters from a :class:`LanguageModel` to ``eval.perplexity``'s scorer protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import torch

from eval.perplexity import PerplexityResult, perplexity
from polyglot_groc.model.lm import LanguageModel
from polyglot_groc.model.prefix import State


class ModelScorer:
    """Scores one language's windows; ``screen=False`` scores over the full union vocabulary.

    ``direction="backward"`` scores a bidirectional model's backward LM; the caller reverses the streams.
    """

    def __init__(self, model: LanguageModel, lang: str, screen: bool = True, direction: str = "forward") -> None:
        self.model = model
        self.lang = lang
        self.screen = screen
        self.direction = direction

    def init_state(self, batch_size: int) -> State:
        return self.model.init_state(batch_size, self.direction)

    def score(self, inputs: np.ndarray, targets: np.ndarray, state: State) -> tuple[torch.Tensor, int, State]:
        dev = self.model.device
        with torch.no_grad():
            out = self.model(torch.from_numpy(inputs).to(dev), torch.from_numpy(targets).to(dev),
                             self.lang if self.screen else None, state, direction=self.direction)
        # The 0-d NLL stays on the device: eval.perplexity sums it there and reads it once.
        return out.nll_sum, out.n_tokens, out.state


def evaluate_streams(model: LanguageModel, streams: Mapping[str, np.ndarray], bptt: int, screen: bool = True,
                     progress: Callable[[int], None] | None = None,
                     direction: str = "forward") -> dict[str, PerplexityResult]:
    """Per-language perplexity, each language scored over its own vocabulary (unless ``screen=False``).

    ``direction="backward"``: a bidirectional model's backward LM over the streams reversed in time
    (each position but the last of the original stream is a target once, state carried).
    """
    was_training = model.training
    model.eval()
    try:
        if direction == "backward":
            streams = {lang: np.ascontiguousarray(s[:, ::-1]) for lang, s in streams.items()}
        return {lang: perplexity(ModelScorer(model, lang, screen, direction), s, bptt, progress)
                for lang, s in streams.items()}
    finally:
        model.train(was_training)


def pooled_nll(results: Mapping[str, PerplexityResult]) -> float:
    """Token-weighted mean NLL over languages: the model-selection criterion."""
    tok = sum(r.n_tokens for r in results.values())
    return sum(r.nll * r.n_tokens for r in results.values()) / max(tok, 1)
