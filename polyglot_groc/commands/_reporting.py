"""The training display and interrupt handling of ``train``, ``finetune`` and ``init-from-elmo``.

:class:`RichHooks` draws the progress (the library's bar, plus the config line, ``curves.png`` and
TensorBoard scalars); :class:`ReportInterrupts` turns Ctrl-C and SIGTERM into one line saying what
was kept and how to resume, exit 130 / 143; :func:`report_result` prints a run's result and makes a
diverged run exit 3.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

import typer

from groc_base.wording import counted
from polyglot_groc.commands._common import EXIT_DIVERGED, EXIT_SIGINT, EXIT_SIGTERM, err_console, print_json
from polyglot_groc.config import RunConfig
from polyglot_groc.training.interrupts import Terminated, TrainingInterrupted, stop_signals
from polyglot_groc.training.progress import ProgressBar


class RichHooks(ProgressBar):
    """The library's :class:`~polyglot_groc.training.progress.ProgressBar` (loss, tokens/s, ETA honouring
    --max-minutes, the language mix; a log line at the trainer's log points), plus what only the
    command line does: the line saying which config this is, the training-curve PNG after each
    validation and TensorBoard scalars. CLI only: the library never prints, and training/ may not
    import analysis/."""

    def __init__(self, run_dir: Path | None = None, tensorboard: bool = False,
                 announce: Callable[[Mapping[str, Any]], str] | None = None) -> None:
        super().__init__(console=err_console)
        self.run_dir = run_dir
        #: The line saying which config this is, made from on_start's info (printed before the model's size).
        self.announce = announce
        self.records: list[Mapping[str, Any]] = []
        self.tb: Any = None
        self.tensorboard = tensorboard and run_dir is not None
        if self.tensorboard:
            try:  # checked now, before anything is written; the writer is made in on_start
                import torch.utils.tensorboard  # noqa: F401
            except ImportError as exc:
                from groc_base.errors import ConfigError

                raise ConfigError("--tensorboard needs the tensorboard package; pip install "
                                  "'polyglot-groc[tensorboard]' or leave the flag out") from exc

    def _open_tensorboard(self, start_step: int) -> None:
        """``RUN/tensorboard``, made only once the trainer has prepared the run directory (a writer
        made earlier creates it, and a new run would then find its directory "already exists").
        A new run starts a fresh log; a resumed one purges the events logged after its checkpoint."""
        import shutil

        from torch.utils.tensorboard import SummaryWriter

        assert self.run_dir is not None
        log_dir = self.run_dir / "tensorboard"
        if start_step == 0:
            shutil.rmtree(log_dir, ignore_errors=True)  # the replaced run's events (--overwrite)
        self.tb = SummaryWriter(log_dir=str(log_dir), purge_step=start_step + 1 if start_step else None)

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        if self.tensorboard and self.tb is None:
            self._open_tensorboard(int(info.get("start_step", 0)))
        if self.announce is not None:
            err_console.print(self.announce(info), highlight=False, markup=False)
        super().on_start(total_steps, info)

    def on_step(self, info: Any) -> None:
        import math

        super().on_step(info)
        if info.logged and self.tb is not None:  # the log line's scalars (ETA aside)
            ppl = math.exp(min(info.loss, 50.0))
            for name, value in (("loss", info.loss), ("perplexity", ppl), ("lr", info.lr),
                                ("tokens_per_s", info.tokens_per_s), ("epoch", info.epoch)):
                self.tb.add_scalar(f"train/{name}", value, info.step)

    def on_eval(self, record: Mapping[str, Any]) -> None:
        super().on_eval(record)
        self.records.append(record)
        if self.run_dir is not None:
            from polyglot_groc.analysis.curves import plot_curves

            plot_curves({self.run_dir.name: self.records}, self.run_dir / "curves.png", title=str(self.run_dir))
        if self.tb is not None:
            for lang, v in record["valid_perplexity"].items():
                self.tb.add_scalar(f"valid/perplexity/{lang}", v, record["step"])
            self.tb.add_scalar("valid/nll", record["valid_nll"], record["step"])
            self.tb.flush()

    def close(self) -> None:
        super().close()
        if self.tb is not None:
            self.tb.close()


def describe_config(cfg: RunConfig) -> str:
    """The configuration in a few words: kind, sizes, output net, budget."""
    m, t = cfg.model, cfg.train
    budget = [counted(t.max_steps, "step") if t.max_steps else "", counted(t.max_epochs, "epoch"),
              f"{t.max_minutes:g} minutes" if t.max_minutes else ""]
    return (f"model {m.kind}: d {m.d}, {m.prefix.n_layers}x{m.prefix.hidden} LSTM, output dropout "
            f"{m.output.dropout:g}, depth {m.output.depth}; at most {' / '.join(b for b in budget if b)}")


def report_result(result: Any, *, report: bool, what: str, fix: str = "train.lr or train.clip") -> None:
    """Print the result's JSON; a diverged run then says so in one line and exits 3."""
    if report:
        print_json(result.to_dict())
    if result.diverged:
        if report:
            report_line = result.divergence_report(fix).replace("training diverged", f"{what} diverged", 1)
            err_console.print(f"error: {report_line}", highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(code=EXIT_DIVERGED)


class ReportInterrupts:
    """``with ReportInterrupts(out, "train"):`` SIGTERM inside the block stops like Ctrl-C
    (:func:`~polyglot_groc.training.interrupts.stop_signals`); either ends the command with one
    :func:`interrupt_report` line and exit 130 / 143, from the workflow's :class:`TrainingInterrupted`
    (the step reached, the checkpoint kept) or, before training started, from the bare signal.
    ``report=False`` (other torchrun ranks) prints nothing."""

    def __init__(self, out: Path, command: str, tensorboard: bool = False, report: bool = True) -> None:
        self.out, self.command, self.tensorboard, self.report = Path(out), command, tensorboard, report
        self._signals = stop_signals()

    def __enter__(self) -> ReportInterrupts:
        self._signals.__enter__()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> Literal[False]:
        self._signals.__exit__(None, None, None)
        if exc is None or not isinstance(exc, (KeyboardInterrupt, Terminated)):
            return False
        stopped = exc if isinstance(exc, TrainingInterrupted) else None
        sigterm = isinstance(exc, Terminated) or (stopped is not None and stopped.signal == "SIGTERM")
        if self.report:
            step = stopped.step if stopped is not None else None
            kept = stopped.checkpoint_step if stopped is not None else None
            err_console.print(interrupt_report(self.out, "SIGTERM" if sigterm else "Ctrl-C (SIGINT)", step, kept,
                                               self.tensorboard, self.command),
                              highlight=False, markup=False, soft_wrap=True)
        raise typer.Exit(code=EXIT_SIGTERM if sigterm else EXIT_SIGINT) from None


def interrupt_report(out: Path, signal_name: str, step: int | None, kept_step: int | None,
                     tensorboard: bool = False, command: str = "train") -> str:
    """One line: what stopped the run, which checkpoint was kept, and the exact command to resume."""
    import shlex

    at = f" at step {step}" if step else ""
    if (out / "last.pt").is_file():
        which = f"the step-{kept_step} checkpoint" if kept_step is not None else "the last checkpoint"
        best = ", best.pt beside it" if (out / "best.pt").is_file() else ""
        command = f"polyglot-groc train --resume {shlex.quote(str(out))}" + (" --tensorboard" if tensorboard else "")
        return (f"interrupted by {signal_name}{at}: kept {which} {out / 'last.pt'} (the last validation{best}); "
                f"resume with: {command}")
    gone = f" ({out} was removed)" if not out.exists() else ""
    return (f"interrupted by {signal_name}{at} before the first checkpoint: nothing was kept{gone}; "
            f"run the same {command} command again to start over")
