"""Running one stage: its parts, its JSON (rewritten atomically around every part), its deadline."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import shlex
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.campaign.device import DEADLINE_GRACE_S
from benchmarks.campaign.stages import Stage, now
from groc_base.fileio import write_json

#: A part's status in a stage JSON. "running" in a JSON whose process is gone: it was killed there.
#: done and failed (an error: retried only after `reset`) are final; the rest are still owed.
PART_STATES = ("owed", "running", "done", "failed", "skipped", "interrupted", "killed")
OWED_STATES = ("owed", "running", "skipped", "interrupted", "killed", "pending")


class PartSkipped(Exception):  # noqa: N818 - a decision, not an error
    """Raised by a runner for a part it does not start (out of time): the part stays owed."""


@dataclasses.dataclass
class Ctx:
    """One stage's run: where it reads and writes, its deadline, and what it has done so far."""

    stage: Stage
    toy: bool
    full: bool
    device: str
    data: Path
    work: Path
    out: Path
    deadline: float | None  # absolute (time.time()); None: no limit (--full)
    steps: int | None
    threads: int
    measured: dict[str, Any]  # the ledger's entry for this stage (last measured seconds)
    record: StageRecord
    ledger: dict[str, Any] = dataclasses.field(default_factory=dict)  # every stage's entry (speeds to borrow)
    notes: list[str] = dataclasses.field(default_factory=list)
    invocations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    files: list[str] = dataclasses.field(default_factory=list)
    raw: dict[str, Any] = dataclasses.field(default_factory=dict)  # part -> what it measured (this call)
    state: dict[str, Any] = dataclasses.field(default_factory=dict)  # a runner's own values
    slices: dict[str, Any] = dataclasses.field(default_factory=dict)

    def left(self) -> float:
        """Seconds to the deadline (inf without one)."""
        return math.inf if self.deadline is None else self.deadline - time.time()

    def cap_minutes(self, reserve_s: float = 0.0, share: float = 1.0, floor: float = 0.05) -> float:
        """A training cap (``train.max_minutes``) from what is left: ``(left - reserve) / share``; 0
        (no cap) without a deadline."""
        if self.deadline is None:
            return 0.0
        return round(max((self.left() - reserve_s) / share / 60, floor), 3)

    @property
    def runner(self) -> Runner:
        """The stage's runner. Imported here, not at the top: each runner's module subclasses
        :class:`Runner` from this one."""
        from benchmarks.campaign.runners import RUNNERS

        return RUNNERS[self.stage.name]

    def estimate(self, part: str) -> float:
        return self.runner.estimate(part, self.measured.get("parts", {}).get(part, {}), self.toy)

    def attempt(self, part: str, fn: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """Run one part: the JSON says it is running, then done (with its seconds) or failed (with
        the error) or skipped; returns what it measured (None unless done). Interrupts propagate."""
        self.record.begin(part)
        started = time.monotonic()
        try:
            raw = fn()
        except PartSkipped as why:
            self.record.set(part, "skipped", reason=str(why))
            return None
        except Exception as exc:  # the stage goes on with its other parts; the ledger keeps the error
            self.record.set(part, "failed", seconds=round(time.monotonic() - started, 1),
                            error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])
            print(f"[gpu_campaign] {self.stage.name} {part} failed: {exc}", file=sys.stderr)
            return None
        self.raw[part] = raw
        meta = {k: raw.pop(k) for k in list(raw) if k.startswith("_")}
        self.record.set(part, "done", seconds=round(time.monotonic() - started, 1),
                        **{k[1:]: v for k, v in meta.items()})
        return raw


class StageRecord:
    """The stage's ``<stage>.json``, rewritten atomically at the start, around every part and at the end."""

    def __init__(self, path: Path, header: dict[str, Any], parts: Sequence[str]) -> None:
        self.path = path
        self.obj: dict[str, Any] = {**header, "parts": {p: {"status": "owed"} for p in parts}, "timings": {},
                                    "summary": {}, "invocations": [], "results": {}}
        self.ctx: Ctx | None = None
        self.started = time.monotonic()

    def begin(self, part: str) -> None:
        self.set(part, "running", started=now())

    def set(self, part: str, status: str, **fields: Any) -> None:
        entry = self.obj["parts"].setdefault(part, {})
        entry.update(status=status, **fields)
        if status != "running":
            entry["at"] = now()
        self.write()

    def running(self) -> list[str]:
        return [p for p, e in self.obj["parts"].items() if e["status"] == "running"]

    def fail_running(self, exc: BaseException) -> None:
        """Mark the parts a benchmark call was still running as failed by ``exc`` (call in its handler)."""
        for part in self.running():
            self.set(part, "failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc()[-3000:])

    def write(self, final: bool = False) -> None:
        ctx, c = self.ctx, self.obj["campaign"]
        c["updated"] = now()
        c["wall_seconds"] = round(time.monotonic() - self.started, 1)
        states = [e["status"] for e in self.obj["parts"].values()]
        if final:
            c["finished"] = c["updated"]
            if c.get("stopped_by"):
                c["status"] = "interrupted"
            elif c.get("error"):
                c["status"] = "failed"
            elif all(s == "done" for s in states):
                c["status"] = "complete"
            elif "done" in states:
                c["status"] = "partial"
            else:
                c["status"] = "failed" if "failed" in states else "nothing done"
        if ctx is not None:
            try:
                summary = ctx.runner.summary(ctx)
            except Exception as exc:  # a summary must never lose the parts' figures
                summary = {"error": f"summary: {type(exc).__name__}: {exc}"}
            summary.setdefault("ok", c.get("status") == "complete" if final else None)
            self.obj["summary"] = summary
            self.obj["invocations"] = ctx.invocations
            self.obj["results"] = ctx.raw
            c["notes"] = ctx.notes
            c["files"] = [f"{ctx.stage.name}.json", *ctx.files]
        write_json(self.path, self.obj)


class Runner:
    """A stage's parts and how to run them. Subclasses say what each part runs and how the
    figures add up (``summary``); the loop, the deadline checks and the JSON are shared."""

    name = ""
    parts: tuple[str, ...] = ()
    summary_keys: tuple[str, ...] = ()
    #: An elastic stage takes what is left of the window (training to a time cap), at least min_s.
    elastic = False

    def groups(self) -> list[tuple[str, ...]]:
        """Parts that must run in one call (an alignment needs its models); each alone by default."""
        return [(p,) for p in self.parts]

    def default_s(self, part: str, toy: bool) -> float:
        """The stated conservative estimate of a part never measured."""
        return 5.0 if toy else 60.0

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        """Seconds ``part`` is expected to take: its last measured seconds, else :meth:`default_s`."""
        seconds = measured.get("seconds")
        return float(seconds) if isinstance(seconds, int | float) and seconds > 0 else self.default_s(part, toy)

    def min_s(self, toy: bool) -> float:
        return 0.0

    def skipped_for_time(self, ctx: Ctx, parts: Sequence[str]) -> bool:
        """Whether the call has less time left than the stage's minimum; if so ``parts`` are recorded
        as skipped, saying why (an elastic stage runs whole or not at all)."""
        if ctx.left() >= self.min_s(ctx.toy):
            return False
        for part in parts:
            ctx.record.set(part, "skipped", reason=f"out of time: {max(ctx.left(), 0):.0f} s left, the stage "
                                                    f"needs at least {self.min_s(ctx.toy):.0f}")
        return True

    def max_s(self, toy: bool) -> float:
        """The most an elastic stage takes of a window: all that is left on the GPU (more epochs, a
        larger B); twice its minimum in a dry run, so that every toy stage fits one window."""
        return 2 * self.min_s(toy) if toy else math.inf

    def overhead_s(self, measured: dict[str, Any], toy: bool) -> float:
        """A stage's own seconds besides its parts (process start, imports, setup): measured (at least
        the floor: a 2026-11-27 figure does not count the process's start), else stated."""
        floor, default = (3.0, 8.0) if toy else (10.0, 25.0)
        value = measured.get("overhead_s")
        return max(float(value), floor) if isinstance(value, int | float) and value >= 0 else default

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        """Before the first part (unpack data); timed as the stage's ``setup_s``."""

    def run(self, ctx: Ctx, groups: Sequence[tuple[str, ...]]) -> None:
        """Each group in turn, if its estimate fits what is left before the deadline."""
        for group in groups:
            need = sum(ctx.estimate(p) for p in group)
            if ctx.left() < need:
                for part in group:
                    ctx.record.set(part, "skipped", reason=f"out of time: {max(ctx.left(), 0):.0f} s left before "
                                                            f"the deadline, {need:.0f} s needed (estimate)")
                ctx.notes.append(f"{'+'.join(group)}: skipped, out of time")
                continue
            self.run_group(ctx, group)

    def run_group(self, ctx: Ctx, group: tuple[str, ...]) -> None:
        for part in group:
            ctx.attempt(part, functools.partial(self.run_part, ctx, part))

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        raise NotImplementedError

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        raise NotImplementedError

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        """Figures drawn from the stage's JSON (``result``) into ``out`` as ``<prefix><stage>.png`` (or
        .md); returns the names written. Not on the GPU machine in a window (only 8 files come back
        from $OUT): ``record`` draws them from the filed JSON."""
        return []


def call_benchmark(ctx: Ctx, script: ModuleType, argv: Sequence[Any], **kwargs: Any) -> dict[str, Any]:
    """A benchmark script's result in this process: ``script.run(script.parse_args(argv), **kwargs)``
    (keyword arguments such as ``progress``), the dict it returns; nothing is printed or saved. The
    call goes into ``ctx.invocations`` with its seconds, as the script's command line."""
    argv = [str(a) for a in argv]
    name = f"benchmarks/{script.__name__.rsplit('.', 1)[-1]}.py"
    started = time.monotonic()
    print(f"[gpu_campaign] {ctx.stage.name}: {name} {shlex.join(argv)}", file=sys.stderr)
    try:
        return dict(script.run(script.parse_args(argv), **kwargs))
    finally:
        ctx.invocations.append({"script": name, "argv": argv, "seconds": round(time.monotonic() - started, 1)})


#: Set when :func:`deadline_alarm` fires, so the stage can say what stopped it.
ALARM = {"fired": False}


@contextlib.contextmanager
def deadline_alarm(deadline: float | None) -> Iterator[None]:
    """SIGALRM ``DEADLINE_GRACE_S`` after the deadline raises ``Terminated`` (as SIGTERM does inside
    ``stop_signals``): a part that overruns its estimate is stopped by the stage itself, which then
    writes its JSON, rather than by the call's outer limit in the middle of a write."""
    from polyglot_groc.training.interrupts import Terminated

    if deadline is None or not hasattr(signal, "SIGALRM"):
        yield
        return

    def handler(signum: int, frame: object) -> None:
        ALARM["fired"] = True
        raise Terminated(signum)

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, max(deadline + DEADLINE_GRACE_S - time.time(), 0.01))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def capped_estimate(cap_s: float, default_s: float, measured: dict[str, Any]) -> float:
    """A training part's seconds: its cap plus its measured overhead (setup, validation, test), else
    the default."""
    seconds, train = measured.get("seconds"), measured.get("train_seconds")
    if isinstance(seconds, int | float) and isinstance(train, int | float) and seconds >= train:
        return cap_s + (seconds - train)
    return default_s


def share_cap(ctx: Ctx, part: str, todo: Sequence[tuple[str, ...]], capped: Callable[[str], bool],
              target_s: float) -> float:
    """``part``'s training cap in minutes: what is left before the deadline, less what the parts after
    it need (their estimates: the rest of its group, then each later group of ``todo`` that still
    fits whole) and its own overhead, shared with the capped parts among them; at least 0.1 minutes.
    0 (no cap) without a deadline."""
    if ctx.deadline is None:
        return 0.0
    own = ctx.estimate(part)
    room = ctx.left() - own
    at = next(i for i, g in enumerate(todo) if part in g)
    after = list(todo[at][todo[at].index(part) + 1:])
    for group in todo[at + 1:]:
        if sum(ctx.estimate(q) for q in (*after, *group)) > room:
            break  # it will not start in this call: no time is kept for it
        after += group
    n = 1 + sum(capped(p) for p in after)
    fixed = sum(ctx.estimate(p) for p in after) - (n - 1) * target_s + max(own - target_s, 0)
    return round(max((ctx.left() - fixed) / n / 60, 0.1), 3)


