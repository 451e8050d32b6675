"""How many CPU threads a workflow uses when its caller does not say: the free cores of a possibly busy machine.

On a machine that other jobs keep busy, torch's default (every core) collapses: the quick start
trained at ~100 tokens/s with 2 threads on a loaded 2-core machine and at ~3,900 with 1 (issue 46,
``benchmarks/threads_default.py``, docs/commands.md "Threads"). Two causes, two defences:

* OpenMP's threads **spin** at every barrier while they wait for a sibling that the kernel has
  descheduled. :func:`prefer_passive_wait` sets ``OMP_WAIT_POLICY=PASSIVE`` (waiting threads sleep)
  when the package is imported: OpenMP reads it once, when torch loads it, so it must be set before
  ``import torch``; an explicit ``$OMP_WAIT_POLICY`` wins, and a process that imported torch before
  ``polyglot_groc`` keeps spinning (:class:`ThreadChoice` says so).
* More threads than free cores. :func:`pick_threads` takes the cores this process may run on
  (``os.sched_getaffinity``) less what other processes keep busy: the 1-minute load average less
  this process's own share of it, or the processes runnable right now when that is more (the
  average lags a load that has just risen).

This module is torch-free (the package's ``__init__`` calls :func:`prefer_passive_wait` before
anything loads torch); :func:`polyglot_groc.model.device.set_threads` applies the choice.
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from groc_base.wording import counted

#: The OpenMP setting :func:`prefer_passive_wait` makes, and the value it sets.
WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
PASSIVE = "PASSIVE"

#: Whether torch was already imported when :func:`prefer_passive_wait` ran (then OpenMP had read
#: its settings already and the policy set here did not reach it). None: it has not run.
_torch_before: bool | None = None


def prefer_passive_wait() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the environment says otherwise (called on import of the package).

    Waiting OpenMP threads then sleep instead of spinning: on a busy machine a spinning thread burns
    the core its sibling needs. Child processes inherit it (torchrun's workers, the benchmarks' children).
    """
    global _torch_before
    if _torch_before is None:
        _torch_before = "torch" in sys.modules
    os.environ.setdefault(WAIT_POLICY_ENV, PASSIVE)


def wait_policy() -> str:
    """OpenMP's wait policy in effect, in words: ``passive``, ``active``, or why it is not passive."""
    value = os.environ.get(WAIT_POLICY_ENV, "").strip().lower()
    if _torch_before:
        return (f"{value or 'default'}, as torch was imported before polyglot_groc (set "
                f"{WAIT_POLICY_ENV}={PASSIVE} before starting Python)")
    return value or "OpenMP's default (spins, then sleeps)"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask; the CPU count where there is none)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def machine_load() -> tuple[float, int] | None:
    """``(1-minute load average, processes runnable now besides the caller)``; None where the
    system has no load average (Windows). Linux's ``/proc/loadavg`` gives both; elsewhere the
    runnable count is 0 (unknown)."""
    try:
        with open("/proc/loadavg", encoding="ascii") as f:
            fields = f.read().split()
        return float(fields[0]), max(0, int(fields[3].split("/")[0]) - 1)  # "running/total": less the reader
    except (OSError, ValueError, IndexError):
        pass
    try:
        return float(os.getloadavg()[0]), 0
    except (AttributeError, OSError):
        return None


def own_load() -> float:
    """This process's estimated share of the 1-minute load average: its CPU seconds per second since
    it started, damped as the average is (a process a few seconds old has added little to it yet)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: start time, clock ticks
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        age = uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
    if age <= 0:
        return 0.0
    return time.process_time() / age * (1.0 - math.exp(-age / 60.0))


@dataclasses.dataclass(frozen=True)
class ThreadChoice:
    """The CPU threads a workflow uses and why (a run's ``result.json`` ``threads``)."""

    threads: int
    #: Why, in words: "--threads 2", "$OMP_NUM_THREADS=1", "2 cores, 1.3 kept busy by other processes".
    reason: str
    #: The count was picked here (the caller asked for none): a run re-picks it when its speed collapses.
    auto: bool
    cores: int
    #: The 1-minute load average when it was picked (None: not read, or no load average here).
    load: float | None = None
    #: OpenMP's wait policy (:func:`wait_policy`).
    wait_policy: str = ""

    def describe(self) -> str:
        """One line: ``threads: 1, picked: 2 usable cores, 3.9 kept busy by other processes (load average
        3.90); OpenMP wait policy passive``."""
        how = "picked: " if self.auto else ""
        return f"threads: {self.threads}, {how}{self.reason}; OpenMP wait policy {self.wait_policy}"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ThreadChoice:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


def omp_num_threads(environ: Mapping[str, str] | None = None) -> int | None:
    """``$OMP_NUM_THREADS`` as a positive count (None: unset or not a number, as OpenMP ignores it)."""
    text = (environ if environ is not None else os.environ).get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def pick_threads(requested: int = 0, *, cores: int | None = None,
                 load: Callable[[], tuple[float, int] | None] | None = None, own: Callable[[], float] | None = None,
                 environ: Mapping[str, str] | None = None, flag: str = "threads") -> ThreadChoice:
    """The thread count for ``requested`` (a positive count is itself; 0 picks one).

    The pick: ``$OMP_NUM_THREADS`` when it is set (the user's standing choice); else the usable
    cores less the cores other processes keep busy (the load average less this process's share,
    or the runnable processes now when more), rounded, at least 1. ``cores`` (default
    :func:`usable_cores`), ``load`` (returns ``(load average, runnable others)`` or None) and ``own``
    (this process's share of the average) read this machine (:func:`usable_cores`, :func:`machine_load`,
    :func:`own_load`) unless given.
    ``flag`` names the option in the reason (``--threads 2`` or ``threads=2``).
    """
    from groc_base.checks import option

    cores = usable_cores() if cores is None else cores
    policy = wait_policy()
    if requested > 0:
        return ThreadChoice(requested, option(flag, requested), False, cores, wait_policy=policy)
    env = omp_num_threads(environ)
    if env is not None:
        return ThreadChoice(env, f"$OMP_NUM_THREADS={env}", True, cores, wait_policy=policy)
    measured = (load or machine_load)()
    if measured is None:  # no load average here: every usable core
        return ThreadChoice(cores, f"{counted(cores, 'usable core')}, no load average on this system", True, cores,
                            wait_policy=policy)
    average, runnable = measured
    others = max(average - min((own or own_load)(), average), float(runnable))
    free = cores - others
    threads = max(1, min(cores, math.floor(free + 0.5)))
    return ThreadChoice(threads, f"{counted(cores, 'usable core')}, {others:.1f} kept busy by other processes, "
                                 f"load average {average:.2f}", True, cores, round(average, 2), policy)


__all__ = ["PASSIVE", "WAIT_POLICY_ENV", "ThreadChoice", "machine_load", "omp_num_threads", "own_load",
           "pick_threads", "prefer_passive_wait", "usable_cores", "wait_policy"]
