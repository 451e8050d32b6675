"""Stopping a run from outside: Ctrl-C (``KeyboardInterrupt``) and, inside :func:`stop_signals`, SIGTERM.

The workflows (:mod:`polyglot_groc.training.workflows`) turn either into :class:`TrainingInterrupted`
once the run directory is consistent again (lock released, a run without a checkpoint removed):
it says which step was reached and which step ``last.pt`` holds, so a caller can report it and
resume. Light on purpose (no torch): the CLI imports it at start-up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Terminated", "TrainingInterrupted", "stop_signals"]


class Terminated(BaseException):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt (inside :func:`stop_signals`) so cleanup runs."""


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` instead of killing the process on the
    spot, so ``finally`` blocks, the run lock and the caller's report run; the old handler comes back
    after. Only the main thread can install handlers; elsewhere this does nothing."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class TrainingInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, as :class:`Terminated`) stopped a training workflow.

    A ``KeyboardInterrupt``, so code that catches that still does. Raised after the run directory
    was put in order: the lock is released, and a new run stopped before its first checkpoint is
    removed (nothing half-written is left). ``checkpoint_step`` is the step ``last.pt`` holds
    (None: no checkpoint was kept); ``resume(run=run_dir)`` continues from it exactly.
    """

    def __init__(self, run_dir: Path, signal: str, step: int | None, checkpoint_step: int | None) -> None:
        kept = f"last.pt holds step {checkpoint_step}" if checkpoint_step is not None else "no checkpoint was kept"
        super().__init__(f"training of {run_dir} interrupted by {signal}"
                         f"{f' at step {step}' if step else ''}; {kept}")
        #: The run directory, ``"SIGINT"`` or ``"SIGTERM"``, the last step made (None: none yet).
        self.run_dir, self.signal, self.step = Path(run_dir), signal, step
        self.checkpoint_step = checkpoint_step

    @property
    def kept(self) -> bool:
        """Whether a checkpoint was kept (``last.pt`` is there to resume from)."""
        return (self.run_dir / "last.pt").is_file()
