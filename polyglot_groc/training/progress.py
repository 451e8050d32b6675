"""Progress of a training run: the estimated time left, and a ready progress bar for the Python API.

:func:`eta_seconds` is the one estimate of the time a run has left: by its step budget at the
current speed, and never beyond its ``train.max_minutes`` (so a 5-minute run never shows an hour).
The trainer logs it at INFO at every log point; :class:`ProgressBar` is a :class:`TrainHooks`
that draws it (``pg.train(..., hooks=pg.ProgressBar())``), the bar the command line draws too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from groc_base.wording import counted
from polyglot_groc.model.threads import ThreadChoice

__all__ = ["ProgressBar", "eta_seconds", "format_eta"]


def eta_seconds(step: int, total_steps: int | None, start_step: int, elapsed: float,
                max_minutes: float = 0.0) -> float | None:
    """Seconds a run has left: the steps to ``total_steps`` at this invocation's speed (steps since
    ``start_step`` over ``elapsed`` seconds), capped by what is left of ``max_minutes`` (0: no cap).
    None when neither is known yet."""
    estimates: list[float] = []
    done = step - start_step
    if total_steps and done > 0 and elapsed > 0:
        estimates.append(max(0.0, (total_steps - step) * elapsed / done))
    if max_minutes:
        estimates.append(max(0.0, 60.0 * max_minutes - elapsed))
    return min(estimates) if estimates else None


def format_eta(seconds: float | None) -> str:
    """``h:mm:ss`` or ``m:ss`` (``?`` when unknown)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class ProgressBar:
    """A :class:`~polyglot_groc.training.trainer.TrainHooks` drawing a rich progress bar: step, epoch,
    running loss, tokens/s, the language mix and the time left (:func:`eta_seconds`, honouring
    ``train.max_minutes``); a line at every log point (``train.log_every``) and after each validation,
    and a second bar while a validation runs (its own time left).

    Where the console is not a terminal (a log file, a pipe) there is no bar, which would leave its last
    frame behind: the lines alone, and a line every 30 s of a long validation.

    Pass it explicitly (``pg.train(..., hooks=pg.ProgressBar())``): the library itself only logs.
    ``console``: a ``rich.console.Console`` (default: one on stderr; rich also draws in notebooks).
    Call :meth:`close` (or use it as a context manager) when training ends.
    """

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.text import Text

        bar = self

        class _EtaColumn(ProgressColumn):
            def render(self, task: Any) -> Text:
                if task.id == bar.eval_task:  # a validation: its own time left, from its own speed
                    return Text(f"ETA {format_eta(task.time_remaining)}")
                return Text(f"ETA {format_eta(bar.eta())}")

        self.console = console if console is not None else Console(stderr=True)
        #: Draw a live bar (a terminal or a notebook); else print lines only.
        self.live = bool(self.console.is_terminal or self.console.is_jupyter)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
            TextColumn("{task.fields[status]}"), TimeElapsedColumn(), _EtaColumn(),
            console=self.console, transient=False,
        )
        self.task: Any = None
        self.eval_task: Any = None
        self.eval_started = 0.0
        self.eval_printed = 0.0
        #: The last step's info, and whether a line showed it (without a bar, close() prints it once).
        self.last_info: Any = None
        self.last_printed = False
        self.log_every = 1
        #: The run trains on a sampled softmax: its running loss is an estimate (validation is exact).
        self.sampled = False
        #: The last step shown (None before the first), for an interrupted run's report.
        self.last_step: int | None = None
        self.total: int | None = None
        self.start_step = 0
        self.max_minutes = 0.0
        self.started = time.monotonic()

    def eta(self) -> float | None:
        """Seconds left (see :func:`eta_seconds`), from the last step shown."""
        step = self.last_step if self.last_step is not None else self.start_step
        return eta_seconds(step, self.total, self.start_step, time.monotonic() - self.started, self.max_minutes)

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        split = info.get("n_params_split") or {}
        parts = ", ".join(f"{k} {split[k]:,}" for k in ("embeddings", "prefix", "output") if k in split)
        what = f"{info['kind']} " if info.get("kind") else ""
        self.console.print(f"training {what}on {', '.join(info['langs'])}: {info['n_params']:,} parameters ({parts}), "
                           f"vocabulary {info['vocab']:,}, {info['steps_per_epoch']} steps/epoch"
                           + (f", {counted(total_steps, 'step')}" if total_steps else ""),
                           highlight=False, markup=False)
        if info.get("softmax"):  # which training softmax, and why (perplexities are always the full softmax)
            from polyglot_groc.training.softmax import SoftmaxChoice  # here: it loads torch, this module must not

            self.console.print(SoftmaxChoice.from_dict(info["softmax"]).describe(), highlight=False, markup=False)
        if info.get("threads"):  # how many CPU threads, and why (picked from the free cores unless asked)
            self.console.print(ThreadChoice.from_dict(info["threads"]).describe(), highlight=False, markup=False)
        self.sampled = (info.get("softmax") or {}).get("mode") == "sampled"
        cfg = info.get("config")
        self.max_minutes = float(getattr(getattr(cfg, "train", None), "max_minutes", 0.0) or 0.0)
        self.log_every = int(getattr(getattr(cfg, "train", None), "log_every", 1))  # 0: no lines at all
        self.start_step = int(info.get("start_step", 0))
        self.started = time.monotonic()
        self.total = total_steps
        if self.live:
            self.progress.start()
            self.task = self.progress.add_task("train", total=total_steps, status="", completed=self.start_step)

    def on_step(self, info: Any) -> None:
        self.last_step = info.step
        loss = "sampled loss" if self.sampled else "loss"
        if self.task is not None:
            total = sum(info.lang_batches.values())
            mix = " ".join(f"{k}:{v / total:.0%}" for k, v in sorted(info.lang_batches.items()))
            self.progress.update(self.task, completed=info.step, description=f"epoch {info.epoch:.2f}",
                                 status=f"{loss} {info.loss:.3f} | {info.tokens_per_s:,.0f} tok/s | {mix}")
        self.last_info, self.last_printed = info, info.logged
        if info.logged:
            self._print_step(info)

    def _print_step(self, info: Any) -> None:
        loss = "sampled loss" if self.sampled else "loss"
        ppl = math.exp(min(info.loss, 50.0))
        # A sampled softmax's loss is an estimate of the full one (the validation lines are exact).
        ppl_text = f"ppl ~{ppl:,.1f} (sampled-softmax estimate)" if self.sampled else f"ppl {ppl:,.1f}"
        self.console.print(f"step {info.step}: {loss} {info.loss:.3f} {ppl_text} lr {info.lr:.3g} "
                           f"{info.tokens_per_s:,.0f} tok/s ETA {format_eta(self.eta())}", highlight=False)

    def on_eval_progress(self, done: int, total: int) -> None:
        """During a validation: a second bar (a terminal), or a line every 30 s of a long one (a log)."""
        now = time.monotonic()
        if done == 0:
            self.eval_started = self.eval_printed = now
        if self.live:
            if self.eval_task is None:
                self.eval_task = self.progress.add_task("validate", total=total, status="", completed=done)
            self.progress.update(self.eval_task, completed=done, total=total,
                                 status=f"{done:,} of {total:,} tokens")
        elif now - self.eval_printed >= 30 and total:
            self.eval_printed = now
            left = (now - self.eval_started) * (total - done) / done if done else None
            self.console.print(f"validating: {100 * done // total}% of {total:,} tokens, ETA {format_eta(left)}",
                               highlight=False)

    def on_eval(self, record: Mapping[str, Any]) -> None:
        if self.eval_task is not None:
            self.progress.remove_task(self.eval_task)
            self.eval_task = None
        ppl = ", ".join(f"{k} {v:,.1f}" for k, v in record["valid_perplexity"].items())
        kind = "" if record.get("scheduled", True) else " (checkpoint)"
        self.console.print(f"step {record['step']}: valid ppl {ppl}{kind}", highlight=False)

    def close(self) -> None:
        if self.task is not None:  # never started: stop() would print a blank line before the error line
            self.progress.stop()
        elif self.last_info is not None and not self.last_printed and self.log_every:
            self._print_step(self.last_info)  # what the bar's last frame would say, as a line
            self.last_printed = True

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
