"""Batching: batchify/bptt coverage, language schedules, monolingual batches, exact resume."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from groc_base.errors import CheckpointError, ConfigError, CorpusError
from langpairs.batching import (
    LanguageSchedule,
    MultilingualBatcher,
    batchify,
    bptt_windows,
    n_windows,
)


def test_batchify_contiguous_streams_and_trimmed_tail() -> None:
    ids = np.arange(23)
    streams = batchify(ids, 4)  # (4, 5)
    assert streams.shape == (4, 5) and streams.dtype == np.int64
    assert streams[1].tolist() == [5, 6, 7, 8, 9]  # stream i = i-th contiguous chunk
    assert streams.ravel().tolist() == list(range(20))  # tail of 3 dropped


def test_batchify_too_few_tokens() -> None:
    with pytest.raises(CorpusError, match="too few"):
        batchify(np.arange(7), 4)
    with pytest.raises(CorpusError, match="1-d"):
        batchify(np.zeros((2, 3), dtype=np.int64), 1)


@pytest.mark.parametrize(("n", "bptt"), [(2, 1), (10, 3), (11, 5), (50, 7), (36, 35), (36, 100)])
def test_bptt_windows_cover_every_target_once(n: int, bptt: int) -> None:
    ids = batchify(np.arange(3 * n), 3)  # (3, n)
    windows = bptt_windows(n, bptt)
    assert all(1 <= length <= bptt for _, length in windows)
    targets = np.concatenate([ids[:, s + 1 : s + n + 1] for s, n in windows], axis=1)
    inputs = np.concatenate([ids[:, s : s + n] for s, n in windows], axis=1)
    np.testing.assert_array_equal(targets, ids[:, 1:])  # each target exactly once, in order
    np.testing.assert_array_equal(inputs, ids[:, :-1])


def test_bptt_windows_rejects_bad_arguments() -> None:
    with pytest.raises(ConfigError):
        bptt_windows(10, 0)
    with pytest.raises(CorpusError):
        bptt_windows(1, 5)


def test_proportional_schedule_is_exact_over_an_epoch_and_smooth() -> None:
    sizes = {"en": 7, "fr": 3, "tl": 1}
    schedule = LanguageSchedule(sizes)
    picks = [schedule.next() for _ in range(11 * 3)]
    for cycle in range(3):  # every window of sum(sizes) steps has the exact counts
        assert Counter(picks[11 * cycle : 11 * (cycle + 1)]) == Counter(sizes)
    # never more than one pick ahead of or behind the ideal share
    seen: Counter[str] = Counter()
    for step, lang in enumerate(picks, start=1):
        seen[lang] += 1
        assert all(abs(seen[k] - step * v / 11) < 1 for k, v in sizes.items())
    assert schedule.probabilities() == pytest.approx({"en": 7 / 11, "fr": 3 / 11, "tl": 1 / 11})


def test_round_robin_schedule() -> None:
    schedule = LanguageSchedule({"en": 100, "fr": 1}, mode="round_robin")
    assert [schedule.next() for _ in range(4)] == ["en", "fr", "en", "fr"]
    assert schedule.probabilities() == {"en": 0.5, "fr": 0.5}


@pytest.mark.parametrize("temperature", [1.0, 2.0, 5.0])
def test_temperature_schedule_matches_its_probabilities(temperature: float) -> None:
    sizes = {"en": 800, "fr": 150, "tl": 50}
    schedule = LanguageSchedule(sizes, mode="temperature", temperature=temperature, seed=3)
    probs = schedule.probabilities()
    expected = np.array([s ** (1 / temperature) for s in sizes.values()])
    np.testing.assert_allclose(list(probs.values()), expected / expected.sum())
    n = 20_000
    counts = Counter(schedule.next() for _ in range(n))
    chi2 = sum((counts[k] - n * p) ** 2 / (n * p) for k, p in probs.items())
    assert chi2 < 13.8  # chi-square, 2 degrees of freedom, p = 0.001
    again = LanguageSchedule(sizes, mode="temperature", temperature=temperature, seed=3)
    assert Counter(again.next() for _ in range(n)) == counts  # deterministic given the seed


def test_schedule_rejects_bad_configuration() -> None:
    with pytest.raises(ConfigError, match="mode"):
        LanguageSchedule({"en": 1}, mode="random")
    with pytest.raises(ConfigError, match="positive integer"):
        LanguageSchedule({"en": 0})
    with pytest.raises(ConfigError, match="temperature"):
        LanguageSchedule({"en": 1}, mode="temperature", temperature=0)


def _streams() -> dict[str, np.ndarray]:
    # ids encode the language (en < 1000 <= fr < 2000 <= tl) so monolinguality is checkable
    return {
        "en": batchify(np.arange(0, 400), 4),  # (4, 100)
        "fr": batchify(np.arange(1000, 1161), 4),  # (4, 40)
        "tl": batchify(np.arange(2000, 2044), 4),  # (4, 11)
    }


def _owner(batch_ids: np.ndarray) -> set[int]:
    return set((batch_ids // 1000).ravel().tolist())


def test_batches_are_monolingual_and_an_epoch_consumes_each_language_once() -> None:
    streams = _streams()
    bptt = 7
    schedule = LanguageSchedule(MultilingualBatcher.window_counts(streams, bptt))
    batcher = MultilingualBatcher(streams, bptt, schedule)
    assert batcher.batches_per_epoch() == sum(n_windows(s, bptt) for s in streams.values())
    code = {"en": 0, "fr": 1, "tl": 2}
    for epoch in range(2):
        seen: dict[str, list[np.ndarray]] = {lang: [] for lang in streams}
        batches = list(batcher)
        assert len(batches) == batcher.batches_per_epoch() and batcher.epoch == epoch + 1
        for batch in batches:
            assert _owner(batch.inputs) == _owner(batch.targets) == {code[batch.lang]}
            assert batch.inputs.shape == batch.targets.shape and batch.inputs.shape[0] == 4
            assert batch.inputs.flags.c_contiguous and not np.shares_memory(batch.inputs, streams[batch.lang])
            seen[batch.lang].append(batch.targets)
        for lang, stream in streams.items():
            # every target of every language exactly once per epoch, in stream order
            np.testing.assert_array_equal(np.concatenate(seen[lang], axis=1), stream[:, 1:])
        # each language ends exactly once per epoch, and the epoch's last batch ends one
        assert Counter(b.lang for b in batches if b.epoch_end) == Counter(list(streams))
        assert batches[-1].epoch_end


def test_round_robin_epoch_waits_for_the_largest_language() -> None:
    streams = _streams()
    batcher = MultilingualBatcher(streams, 10, LanguageSchedule(dict.fromkeys(streams, 1), mode="round_robin"))
    batches = list(batcher)
    assert batcher.epoch == 1 and batches[-1].lang == "en" and batches[-1].epoch_end
    assert batcher.passes["tl"] > 1  # the small language wrapped and kept going


@pytest.mark.parametrize("mode", ["proportional", "temperature", "round_robin"])
def test_state_dict_round_trip_resumes_exactly(mode: str) -> None:
    streams = _streams()
    bptt = 5
    sizes = MultilingualBatcher.window_counts(streams, bptt)

    def make() -> MultilingualBatcher:
        return MultilingualBatcher(streams, bptt, LanguageSchedule(sizes, mode=mode, seed=11))

    reference = make()
    expected = [reference.next_batch() for _ in range(90)]
    first = make()
    for _ in range(37):
        first.next_batch()
    state = json.loads(json.dumps(first.state_dict()))  # plain ints survive JSON
    resumed = make()
    resumed.load_state_dict(state)
    for want in expected[37:]:
        got = resumed.next_batch()
        assert got.lang == want.lang and got.epoch_end == want.epoch_end
        np.testing.assert_array_equal(got.inputs, want.inputs)
    assert resumed.state_dict() == reference.state_dict()


def test_load_state_dict_rejects_mismatches() -> None:
    streams = _streams()
    batcher = MultilingualBatcher(streams, 5, LanguageSchedule(dict.fromkeys(streams, 1)))
    state = batcher.state_dict()
    other = MultilingualBatcher(streams, 6, LanguageSchedule(dict.fromkeys(streams, 1)))
    with pytest.raises(CheckpointError, match="bptt"):
        other.load_state_dict(state)
    with pytest.raises(CheckpointError):
        batcher.load_state_dict({"bptt": 5})
    with pytest.raises(ConfigError, match="differ"):
        MultilingualBatcher(streams, 5, LanguageSchedule({"en": 1}))


def test_variable_bptt_windows_cover_each_target_once_with_awd_lengths() -> None:
    from langpairs.batching import variable_bptt_windows

    rng = np.random.default_rng(0)
    windows = variable_bptt_windows(5001, 35, rng)
    starts = [s for s, _ in windows]
    lengths = np.array([n for _, n in windows])
    assert starts[0] == 0 and all(a + n == b for (a, n), b in zip(windows, starts[1:], strict=False))
    assert sum(lengths) == 5000  # every target once
    assert lengths[:-1].min() >= 5
    assert 25 < lengths.mean() < 38 and lengths.std() > 3  # N(35, 5), sometimes N(17.5, 5)


def test_variable_batcher_redraws_per_pass_and_resumes_exactly() -> None:
    from langpairs.batching import LanguageSchedule, MultilingualBatcher, batchify

    streams = {"en": batchify(np.arange(2000), 4)}
    counts = MultilingualBatcher.window_counts(streams, 20)
    a = MultilingualBatcher(streams, 20, LanguageSchedule(counts, seed=1), variable_seed=3)
    first = [a.next_batch() for _ in range(40)]
    assert len({b.inputs.shape[1] for b in first}) > 3  # lengths vary
    b = MultilingualBatcher(streams, 20, LanguageSchedule(counts, seed=1), variable_seed=3)
    b.load_state_dict(a.state_dict())
    for _ in range(30):
        x, y = a.next_batch(), b.next_batch()
        assert np.array_equal(x.inputs, y.inputs) and np.array_equal(x.targets, y.targets)
