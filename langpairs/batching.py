"""AWD-LSTM-style batching for several languages: batchify, BPTT windows, a language schedule.

Each language's token ids are cut into ``B`` contiguous streams (``batchify``) and read in BPTT
windows; a :class:`LanguageSchedule` chooses which language the next (monolingual) batch comes
from. Every language keeps its own stream position, so a language's hidden state can be carried
across its batches exactly as in monolingual AWD-LSTM training.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from groc_base.checks import is_int
from groc_base.errors import CheckpointError, ConfigError, CorpusError
from groc_base.wording import agree, counted

__all__ = [
    "SCHEDULE_MODES",
    "Batch",
    "LanguageSchedule",
    "MultilingualBatcher",
    "batchify",
    "epoch_restart",
    "bptt_windows",
    "variable_bptt_windows",
    "n_windows",
]

logger = logging.getLogger(__name__)

SCHEDULE_MODES: tuple[str, ...] = ("proportional", "round_robin", "temperature")


def batchify(ids: np.ndarray, n_streams: int) -> np.ndarray:
    """Cut a 1-D id sequence into ``n_streams`` contiguous streams: ``(n_streams, L)`` int64.

    Stream ``i`` is the ``i``-th contiguous chunk (AWD-LSTM's ``batchify`` transposed to batch
    first); the tail that does not divide evenly is dropped, as there.
    """
    ids = np.asarray(ids)  # (N,)
    if ids.ndim != 1:
        raise CorpusError(f"batchify needs a 1-d array of token ids, got shape {ids.shape}; flatten it first")
    if not np.issubdtype(ids.dtype, np.integer):
        raise CorpusError(f"batchify needs integer token ids, got dtype {ids.dtype}; map tokens to ids first")
    if not is_int(n_streams, numpy=True) or n_streams < 1:
        raise ConfigError(f"n_streams must be a positive integer, got {n_streams!r}")
    length = ids.shape[0] // n_streams
    if length < 2:  # one input and one target per stream at the very least
        raise CorpusError(
            f"{counted(ids.shape[0], 'token')} {agree(ids.shape[0], 'is', 'are')} too few for "
            f"{counted(n_streams, 'stream')} (each needs >= 2); "
            f"use a smaller batch size or more text"
        )
    return np.ascontiguousarray(ids[: length * n_streams].reshape(n_streams, length), dtype=np.int64)


def bptt_windows(n_positions: int, bptt: int) -> list[tuple[int, int]]:
    """``(start, length)`` windows over a stream of ``n_positions`` ids, each target exactly once.

    A window's inputs are ``ids[:, s:s+l]`` and its targets ``ids[:, s+1:s+l+1]``, so targets
    ``1 .. n_positions-1`` are covered once; the last window may be shorter than ``bptt``.
    """
    if not is_int(bptt, numpy=True) or bptt < 1:
        raise ConfigError(f"bptt must be a positive integer, got {bptt!r}")
    if n_positions < 2:
        raise CorpusError(f"a stream of {n_positions} positions has no targets; it needs at least 2")
    last = n_positions - 1  # number of targets
    return [(int(s), int(min(bptt, last - s))) for s in range(0, last, bptt)]


def variable_bptt_windows(n_positions: int, bptt: int, rng: np.random.Generator,
                          p_half: float = 0.05, std: float = 5.0, min_len: int = 5) -> list[tuple[int, int]]:
    """AWD-LSTM's variable-length windows over one pass of a stream, each target exactly once.

    Each window's base is ``bptt`` (or ``bptt / 2`` with probability ``p_half``), its length
    ``max(min_len, int(N(base, std)))``, cut at the stream's end. The trainer scales the step's
    learning rate by ``length / bptt`` so short windows do not weigh as much as long ones.
    """
    bptt_windows(n_positions, bptt)  # same argument checks
    last = n_positions - 1
    # Enough draws for the worst case (every window min_len long), made at once (no per-step RNG).
    n = last // max(min_len, 1) + 1
    base = np.where(rng.random(n) < p_half, bptt / 2.0, float(bptt))
    lengths = np.maximum(min_len, rng.normal(base, std).astype(np.int64))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    keep = starts < last
    return [(int(st), int(min(ln, last - st))) for st, ln in zip(starts[keep], lengths[keep], strict=True)]


def n_windows(stream: np.ndarray, bptt: int) -> int:
    """Number of BPTT windows (batches) in a batchified ``(B, L)`` stream: one epoch of it."""
    return len(bptt_windows(int(np.shape(stream)[1]), bptt))


class LanguageSchedule:
    """Which language the next batch comes from.

    ``sizes`` are per-language weights -- for :class:`MultilingualBatcher`, the number of batches
    in each language's epoch (:func:`n_windows`). Modes:

    * ``proportional`` (default): deterministic smooth weighted round robin -- each step picks
      the language furthest behind its share ``size / total``, so every window of ``total``
      steps contains exactly ``size`` picks of each language, spread evenly.
    * ``round_robin``: languages in turn.
    * ``temperature``: sampled with ``p ∝ size ** (1 / temperature)`` (``T=1`` proportional in
      expectation, large ``T`` towards uniform) from a seeded numpy ``Generator``.
    """

    def __init__(
        self,
        sizes: Mapping[str, int],
        mode: str = "proportional",
        temperature: float = 1.0,
        seed: int = 0,
    ) -> None:
        if mode not in SCHEDULE_MODES:
            raise ConfigError(f"unknown schedule mode {mode!r}; use one of {', '.join(SCHEDULE_MODES)}")
        if not sizes:
            raise ConfigError("a language schedule needs at least one language with a size")
        for lang, size in sizes.items():
            if not is_int(size, numpy=True) or size < 1:
                raise ConfigError(f"schedule size for {lang!r} must be a positive integer, got {size!r}")
        if mode == "temperature" and not (np.isfinite(temperature) and temperature > 0):
            raise ConfigError(f"temperature must be a positive number, got {temperature!r}")
        self.langs: tuple[str, ...] = tuple(sizes)
        self.mode = mode
        self.temperature = float(temperature)
        self.seed = int(seed)
        self._sizes = np.array([int(sizes[lang]) for lang in self.langs], dtype=np.int64)  # (K,)
        self._total = int(self._sizes.sum())
        if mode == "temperature":
            # In log space so large sizes with small temperatures do not overflow.
            logits = np.log(self._sizes.astype(np.float64)) / self.temperature
            weights = np.exp(logits - logits.max())
            self._probs = weights / weights.sum()  # (K,)
        elif mode == "round_robin":
            self._probs = np.full(len(self.langs), 1.0 / len(self.langs))
        else:
            self._probs = self._sizes / self._total
        self._cdf = np.cumsum(self._probs)  # (K,)
        self.reset()

    def reset(self) -> None:
        """Back to the state right after construction."""
        self._step = 0
        self._credit = np.zeros(len(self.langs), dtype=np.int64)  # (K,) proportional deficits
        self._rng = np.random.Generator(np.random.PCG64(self.seed))

    @property
    def sizes(self) -> dict[str, int]:
        return {lang: int(size) for lang, size in zip(self.langs, self._sizes, strict=True)}

    @property
    def step(self) -> int:
        """How many languages :meth:`next` has returned."""
        return self._step

    def probabilities(self) -> dict[str, float]:
        """Long-run share of steps per language."""
        return {lang: float(p) for lang, p in zip(self.langs, self._probs, strict=True)}

    def next(self) -> str:
        """The language of the next batch."""
        if self.mode == "proportional":
            # Smooth weighted round robin in integers: credit_i = step * size_i - total * picks_i,
            # i.e. how far behind its share language i is, scaled by total (exact, no float drift).
            self._credit += self._sizes
            index = int(np.argmax(self._credit))  # first maximum: ties go to the earlier language
            self._credit[index] -= self._total
        elif self.mode == "round_robin":
            index = self._step % len(self.langs)
        else:
            # One float64 per draw consumes exactly one PCG64 output, so resuming can advance().
            u = self._rng.random()
            index = min(int(np.searchsorted(self._cdf, u, side="right")), len(self.langs) - 1)
        self._step += 1
        return self.langs[index]

    def __iter__(self) -> Iterator[str]:
        while True:
            yield self.next()

    def state_dict(self) -> dict[str, Any]:
        """Plain-int state (JSON- and ``torch.save``-friendly) to resume the exact sequence."""
        return {
            "mode": self.mode,
            "step": self._step,
            "credit": {lang: int(c) for lang, c in zip(self.langs, self._credit, strict=True)},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from :meth:`state_dict` of a schedule built with the same arguments."""
        try:
            mode, step, credit = state["mode"], int(state["step"]), state["credit"]
            credits = [int(credit[lang]) for lang in self.langs]
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(
                f"schedule state {dict(state)!r} does not fit languages {', '.join(self.langs)}; "
                f"resume with the languages and schedule the run was started with"
            ) from exc
        if mode != self.mode or step < 0 or set(credit) != set(self.langs):
            raise CheckpointError(
                f"schedule state (mode {mode!r}, languages {', '.join(map(str, credit))}) does not match "
                f"this schedule (mode {self.mode!r}, languages {', '.join(self.langs)}); "
                f"resume with the settings the run was started with"
            )
        self.reset()
        self._step = step
        self._credit = np.array(credits, dtype=np.int64)
        if self.mode == "temperature":
            self._rng.bit_generator.advance(step)  # type: ignore[attr-defined]


@dataclass(frozen=True, eq=False)  # eq=False: comparing numpy arrays with == is elementwise
class Batch:
    """One monolingual batch."""

    lang: str
    inputs: np.ndarray  # (B, T) int64 ids
    targets: np.ndarray  # (B, T) int64 ids: inputs shifted by one position
    epoch_end: bool  # the last window of this language's stream: its next batch starts over


class MultilingualBatcher:
    """Monolingual BPTT batches from several batchified streams, languages chosen by a schedule.

    Each language advances through its own windows and wraps at its end (that batch has
    ``epoch_end=True``; reset that language's hidden state after it). Iterating yields one epoch:
    batches until every language has been consumed once since the epoch began (with the
    proportional schedule sized by :meth:`window_counts` that is exactly ``sum(sizes)`` batches,
    each language once, all at the same relative pace; with other modes smaller languages wrap
    and continue meanwhile). :meth:`state_dict` / :meth:`load_state_dict` resume exactly.
    """

    def __init__(self, streams: Mapping[str, np.ndarray], bptt: int, schedule: LanguageSchedule,
                 variable_seed: int | None = None) -> None:
        if not streams:
            raise ConfigError("the batcher needs at least one language stream")
        if set(streams) != set(schedule.langs):
            raise ConfigError(
                f"stream languages ({', '.join(streams)}) differ from schedule languages "
                f"({', '.join(schedule.langs)}); build the schedule from the same languages"
            )
        self.streams: dict[str, np.ndarray] = {}
        for lang, stream in streams.items():
            array = np.asarray(stream)  # (B, L)
            if array.ndim != 2:
                raise CorpusError(
                    f"stream for {lang!r} has shape {array.shape}; pass batchify(ids, batch_size) output (B, L)"
                )
            self.streams[lang] = array
        self.bptt = bptt
        self.schedule = schedule
        # None: fixed windows (the default). Otherwise AWD variable windows, redrawn per pass from
        # (seed, language, pass) so a resumed batcher sees the same windows.
        self.variable_seed = variable_seed
        self._windows = {lang: self._pass_windows(lang, 0) for lang in self.streams}
        counts = {lang: len(w) for lang, w in self._windows.items()}
        if schedule.mode == "proportional" and schedule.sizes != counts:
            logger.warning(
                "proportional schedule sizes %s differ from the streams' batch counts %s: languages "
                "will not finish their epochs together; build it with MultilingualBatcher.window_counts",
                schedule.sizes, counts,
            )
        self._position = dict.fromkeys(self.streams, 0)  # next window index per language
        self._passes = dict.fromkeys(self.streams, 0)  # completed passes per language
        self._done_this_epoch = dict.fromkeys(self.streams, 0)  # 1 once consumed in this epoch
        self._epoch = 0

    def _pass_windows(self, lang: str, n_pass: int) -> list[tuple[int, int]]:
        length = self.streams[lang].shape[1]
        if self.variable_seed is None:
            return bptt_windows(length, self.bptt)
        index = sorted(self.streams).index(lang)
        rng = np.random.default_rng([self.variable_seed, index, n_pass])
        return variable_bptt_windows(length, self.bptt, rng)

    @staticmethod
    def window_counts(streams: Mapping[str, np.ndarray], bptt: int) -> dict[str, int]:
        """Batches per language epoch: the sizes for a :class:`LanguageSchedule` over these streams."""
        return {lang: n_windows(stream, bptt) for lang, stream in streams.items()}

    @property
    def epoch(self) -> int:
        """Completed epochs (every language consumed once per epoch)."""
        return self._epoch

    @property
    def passes(self) -> dict[str, int]:
        """Completed passes over each language's stream."""
        return dict(self._passes)

    def batches_per_epoch(self) -> int | None:
        """Exact epoch length for a proportional schedule sized by :meth:`window_counts`, else None."""
        counts = {lang: len(w) for lang, w in self._windows.items()}
        if self.schedule.mode == "proportional" and self.schedule.sizes == counts:
            return sum(counts.values())
        return None

    def next_batch(self) -> Batch:
        """The next batch (epoch bookkeeping included); never stops."""
        lang = self.schedule.next()
        windows = self._windows[lang]
        index = self._position[lang]
        start, length = windows[index]
        stream = self.streams[lang]
        epoch_end = index == len(windows) - 1
        if epoch_end:
            self._position[lang] = 0
            self._passes[lang] += 1
            if self.variable_seed is not None:
                self._windows[lang] = self._pass_windows(lang, self._passes[lang])
            self._done_this_epoch[lang] = 1
            if all(self._done_this_epoch.values()):
                self._epoch += 1
                self._done_this_epoch = dict.fromkeys(self.streams, 0)
        else:
            self._position[lang] = index + 1
        # Contiguous copies (B*T ids, cheap): torch.from_numpy + .view() needs contiguity, and a
        # consumer writing into a batch must not corrupt the stream for the next epoch.
        return Batch(
            lang=lang,
            inputs=np.ascontiguousarray(stream[:, start : start + length]),  # (B, T)
            targets=np.ascontiguousarray(stream[:, start + 1 : start + length + 1]),  # (B, T)
            epoch_end=epoch_end,
        )

    def __iter__(self) -> Iterator[Batch]:
        """Batches of one epoch, from the current state."""
        epoch = self._epoch
        while self._epoch == epoch:
            yield self.next_batch()

    def state_dict(self) -> dict[str, Any]:
        """Plain-int state: positions, passes, epoch and the schedule's state."""
        return {
            "bptt": int(self.bptt),
            "epoch": self._epoch,
            "position": dict(self._position),
            "passes": dict(self._passes),
            "done_this_epoch": dict(self._done_this_epoch),
            "schedule": self.schedule.state_dict(),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from :meth:`state_dict`: the next batch is the one that would have followed."""
        try:
            bptt = int(state["bptt"])
            position = {lang: int(state["position"][lang]) for lang in self.streams}
            passes = {lang: int(state["passes"][lang]) for lang in self.streams}
            done = {lang: int(state["done_this_epoch"][lang]) for lang in self.streams}
            epoch = int(state["epoch"])
            schedule = state["schedule"]
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(
                f"batcher state is missing or malformed ({exc!r}); it must come from state_dict() of a "
                f"batcher over the languages {', '.join(self.streams)}"
            ) from exc
        if bptt != self.bptt:
            raise CheckpointError(f"batcher state has bptt {bptt}, this batcher {self.bptt}; resume with bptt={bptt}")
        if self.variable_seed is not None:
            self._windows = {lang: self._pass_windows(lang, passes[lang]) for lang in self.streams}
        for lang, index in position.items():
            if not 0 <= index < len(self._windows[lang]):
                raise CheckpointError(
                    f"batcher state position {index} of {lang!r} is outside its {len(self._windows[lang])} "
                    f"windows; resume with the same corpus and batch size"
                )
        self.schedule.load_state_dict(schedule)
        self._position, self._passes, self._done_this_epoch, self._epoch = position, passes, done, epoch


def epoch_restart(state: Mapping[str, Any]) -> dict[str, Any]:
    """A :meth:`MultilingualBatcher.state_dict` with every language back at the first window of the
    current epoch (its epoch, passes and schedule kept): what a resumed run whose corpus changed
    (and got shorter than the position it had reached) goes on from."""
    out = dict(state)
    out["position"] = {lang: 0 for lang in state.get("position", {})}
    out["done_this_epoch"] = {lang: 0 for lang in state.get("done_this_epoch", {})}
    return out

