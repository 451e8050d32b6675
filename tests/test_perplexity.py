from __future__ import annotations

import math

import numpy as np
import pytest

from eval.perplexity import perplexity
from groc_base.errors import InputError


class BigramScorer:
    """A fixed bigram table; state counts windows to check it is carried."""

    def __init__(self, table: np.ndarray) -> None:
        self.table = table
        self.windows = 0

    def init_state(self, batch_size: int) -> int:
        return 0

    def score(self, inputs: np.ndarray, targets: np.ndarray, state: int) -> tuple[float, int, int]:
        self.windows += 1
        p = self.table[inputs, targets]
        return float(-np.log(p).sum()), int(targets.size), state + 1


def test_hand_computed_perplexity() -> None:
    # P(next | prev): from 0 -> 1 w.p. 0.5, from 1 -> 0 w.p. 0.25, from 1 -> 1 w.p. 0.75
    table = np.array([[0.5, 0.5], [0.25, 0.75]])
    stream = np.array([[0, 1, 1, 0]])  # targets: 1|0 (0.5), 1|1 (0.75), 0|1 (0.25)
    res = perplexity(BigramScorer(table), stream, bptt=2)
    expected = math.exp(-(math.log(0.5) + math.log(0.75) + math.log(0.25)) / 3)
    assert res.perplexity == pytest.approx(expected) and res.n_tokens == 3 and res.batch_size == 1


def test_uniform_model_has_vocabulary_size_perplexity_and_bptt_does_not_matter() -> None:
    table = np.full((4, 4), 0.25)
    stream = np.random.default_rng(0).integers(0, 4, size=(3, 17))
    for bptt in (1, 5, 100):
        res = perplexity(BigramScorer(table), stream, bptt)
        assert res.perplexity == pytest.approx(4.0) and res.n_tokens == 3 * 16


def test_too_short_stream_is_an_error() -> None:
    with pytest.raises(InputError, match="batch size"):
        perplexity(BigramScorer(np.ones((2, 2))), np.zeros((4, 1), dtype=np.int64), 5)


class DeviceNumber:
    """Stands for a 0-d accelerator tensor: adding is free, float() is a host sync (counted)."""

    syncs = 0

    def __init__(self, value: float) -> None:
        self.value = value

    def __add__(self, other: object) -> DeviceNumber:
        return DeviceNumber(self.value + (other.value if isinstance(other, DeviceNumber) else float(other)))  # type: ignore[arg-type]

    __radd__ = __add__

    def __float__(self) -> float:
        DeviceNumber.syncs += 1
        return self.value


class DeviceBigramScorer(BigramScorer):
    def score(self, inputs: np.ndarray, targets: np.ndarray, state: int) -> tuple[DeviceNumber, int, int]:  # type: ignore[override]
        nll, tok, state = super().score(inputs, targets, state)
        return DeviceNumber(nll), tok, state


def test_device_side_nll_is_read_once_per_evaluation_not_per_window() -> None:
    table = np.array([[0.5, 0.5], [0.25, 0.75]])
    stream = np.random.default_rng(1).integers(0, 2, size=(2, 41))
    plain = perplexity(BigramScorer(table), stream, bptt=4)
    DeviceNumber.syncs = 0
    scorer = DeviceBigramScorer(table)
    lazy = perplexity(scorer, stream, bptt=4)
    assert scorer.windows == 10 and DeviceNumber.syncs == 1
    assert lazy.perplexity == pytest.approx(plain.perplexity, rel=1e-12)
