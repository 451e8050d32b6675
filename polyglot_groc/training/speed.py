"""Noticing when training's speed collapses (a busy machine, too many threads for the cores left).

:class:`SpeedWatch` compares the tokens/s of recent training steps with those of the run's first
steps (after a short warm-up) and says so, once, when they fall far below: the trainer logs the
warning, records it in ``result.json`` (``threads.slowdown``) and, when it picked the thread count
itself, picks again from the machine's load now (:func:`polyglot_groc.model.device.set_threads`).
Only the steps' own time counts (validation is not in it), so a long validation is no slowdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from polyglot_groc.model.threads import machine_load

__all__ = ["SpeedWatch"]


@dataclass
class _Window:
    step: int
    tokens: int
    seconds: float


class SpeedWatch:
    """Watches a run's training speed: :meth:`update` after every step returns a warning, once,
    when the tokens/s of a recent window of steps is below ``1/factor`` of the first window's.

    A window is at least ``window_steps`` steps and ``window_seconds`` seconds of training time, so a
    slow language's batch or a garbage collection does not count as a collapse; the first
    ``warmup_steps`` steps of the process are left out (allocation, first-touch). ``load`` reads
    the machine's load (``(1-minute load average, runnable others)`` or None): the warning says
    whether it rose.
    """

    def __init__(self, *, warmup_steps: int = 2, window_steps: int = 10, window_seconds: float = 2.0,
                 factor: float = 4.0, load: Callable[[], tuple[float, int] | None] = machine_load) -> None:
        self.warmup_steps, self.window_steps, self.window_seconds = warmup_steps, window_steps, window_seconds
        self.factor = factor
        self.load = load
        self.seen = 0
        self.mark: _Window | None = None
        #: The first window's tokens/s (None until it is measured) and the load average then.
        self.baseline: float | None = None
        self.baseline_load: float | None = None
        #: The warning, once given (the run records it).
        self.warning: str | None = None
        #: The last window's tokens/s.
        self.recent: float | None = None

    def update(self, step: int, tokens: int, train_seconds: float) -> str | None:
        """After a step: ``tokens`` and ``train_seconds`` are the run's totals so far. Returns the
        warning the first time a window is ``factor`` times slower than the first, else None."""
        self.seen += 1
        now = _Window(step, tokens, train_seconds)
        if self.seen <= self.warmup_steps or self.mark is None:
            self.mark = now
            return None
        steps, seconds = now.step - self.mark.step, now.seconds - self.mark.seconds
        if steps < self.window_steps or seconds < self.window_seconds:
            return None
        rate = (now.tokens - self.mark.tokens) / seconds
        self.mark, self.recent = now, rate
        if self.baseline is None:
            self.baseline, self.baseline_load = rate, self._load_average()
            return None
        if self.warning is not None or rate * self.factor >= self.baseline:
            return None
        self.warning = self._message(rate)
        return self.warning

    def _load_average(self) -> float | None:
        measured = self.load()
        return measured[0] if measured is not None else None

    def _message(self, rate: float) -> str:
        assert self.baseline is not None
        load = self._load_average()
        rose = ""
        if load is not None and self.baseline_load is not None and load > self.baseline_load + 0.5:
            rose = f" while the machine's load average rose from {self.baseline_load:.1f} to {load:.1f}"
        return (f"training slowed from {self.baseline:,.0f} to {rate:,.0f} tokens/s{rose}: other processes now "
                "share its cores")
