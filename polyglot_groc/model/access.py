"""The three keywords every workflow that loads a trained run takes: ``checkpoint``, ``device`` and
``threads``, documented and checked in one place.

The workflows keep them as keyword arguments (their public API); each one's docstring gets the text
of :data:`RUN_ACCESS_ARGS` through :func:`run_access_doc`, and :func:`check_run_access` checks the
values and applies the thread count before any work. Torch-free to import (torch is needed only
when a device is checked).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from groc_base.errors import CheckpointError

#: The checkpoints a run directory holds: ``best.pt`` (best validation) and ``last.pt``.
CHECKPOINTS = ("best", "last")

#: The ``Args:`` text of the three keywords every workflow that loads a trained run shares, written
#: once: :func:`run_access_doc` puts it into each workflow's docstring, :func:`check_run_access`
#: checks and applies the values.
RUN_ACCESS_ARGS = (
    "checkpoint: ``best`` or ``last``: which checkpoint of the run (of each run) to load.\n"
    "device: ``auto`` (CUDA when available), ``cpu``, ``cuda`` or ``cuda:N``, for the run's model.\n"
    "threads: CPU threads for torch and the BLAS pools (None or 0: ``$OMP_NUM_THREADS`` when set, else the "
    "cores other processes leave free; None keeps a count set with ``torch.set_num_threads``)."
)

_F = TypeVar("_F", bound=Callable[..., Any])


def run_access_doc(fn: _F) -> _F:
    """Replace the ``{run_access}`` line of ``fn``'s docstring with :data:`RUN_ACCESS_ARGS`, indented as
    that line: the one text of ``checkpoint``, ``device`` and ``threads`` in every workflow's help."""
    doc = fn.__doc__ or ""
    line = next((ln for ln in doc.splitlines() if ln.strip() == "{run_access}"), None)
    if line is None:
        raise TypeError(f"{fn.__qualname__}'s docstring has no {{run_access}} line for run_access_doc to fill")
    indent = line[: len(line) - len(line.lstrip())]
    fn.__doc__ = doc.replace(line, "\n".join(indent + text for text in RUN_ACCESS_ARGS.splitlines()))
    return fn


def check_checkpoint_name(which: str) -> None:
    if which not in CHECKPOINTS:
        raise CheckpointError(f"checkpoint {which!r} is unknown; use best or last")


def check_run_access(*, checkpoint: str, device: str, threads: int | None) -> None:
    """Check a workflow's ``checkpoint`` and ``device`` and apply its ``threads``, before any work: the
    one normaliser of the three keywords (:data:`RUN_ACCESS_ARGS`). Raises CheckpointError for an
    unknown checkpoint, ConfigError for a device that is not there or a thread count out of range."""
    from polyglot_groc.model.device import resolve_device, use_threads  # torch, when checking

    check_checkpoint_name(checkpoint)
    resolve_device(device)
    use_threads(threads)


__all__ = ["CHECKPOINTS", "RUN_ACCESS_ARGS", "check_checkpoint_name", "check_run_access", "run_access_doc"]
