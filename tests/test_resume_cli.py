"""``train --resume`` from the command line: extending a finished run, options it cannot apply, a run
another process is training, and what Ctrl-C / SIGTERM leave (one line, exit 130 / 143)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from tests.conftest import SMALL, TINY, one_error_line

ROOT = Path(__file__).resolve().parent.parent
TIMING = {"tokens_per_s", "elapsed_s"}
runner = CliRunner()


def _train(out: Path, *extra: str, sets: tuple[str, ...] = ()) -> Any:
    flags = [x for s in [*SMALL, "train.eval_every=2", "train.threads=1", *sets] for x in ("--set", s)]
    return runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(out), *flags, *extra])


def _resume(run: Path, *extra: str) -> Any:
    return runner.invoke(app, ["train", "--resume", str(run), *extra])


def _records(run: Path) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_a_finished_run_is_extended_by_a_larger_max_steps(tmp_path: Path) -> None:
    straight, extended = tmp_path / "straight", tmp_path / "extended"
    assert _train(straight, "--max-steps", "8").exit_code == 0
    assert _train(extended, "--max-steps", "4").exit_code == 0
    # Nothing to do: said so, with the command that extends it.
    err = one_error_line(_resume(extended))
    assert "already finished at step 4" in err and f"--resume {extended.resolve()} --max-steps 8" in err
    assert "does not extend" in one_error_line(_resume(extended, "--max-steps", "4"))
    res = _resume(extended, "--max-steps", "8")
    assert res.exit_code == 0, res.output
    assert "train.max_steps 4 -> 8" in " ".join(res.stderr.split())
    assert json.loads((extended / "result.json").read_text())["steps"] == 8
    assert load_config(extended / "config.toml").train.max_steps == 8
    assert _records(extended) == _records(straight)  # as if it had been asked for 8 steps from the start


def test_an_epoch_limit_that_would_stop_it_first_is_lifted(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _train(run, "--max-epochs", "1", sets=("train.eval_every=0",)).exit_code == 0
    done = json.loads((run / "result.json").read_text())
    assert done["stop_reason"] == "max_epochs"
    assert "--max-epochs 2" in one_error_line(_resume(run))
    target = done["steps"] + 3
    res = _resume(run, "--max-steps", str(target))
    assert res.exit_code == 0, res.output
    assert "train.max_epochs 1 -> 2" in " ".join(res.stderr.split())
    assert json.loads((run / "result.json").read_text())["steps"] == target


def test_options_resume_cannot_apply_are_refused_not_ignored(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _train(run, "--max-steps", "2").exit_code == 0
    before = sorted(p.name for p in run.iterdir())
    err = one_error_line(_resume(run, "--max-steps", "4", "--model", "tied", "--set", "train.lr=0.1", "--seed", "3"))
    for flag in ("--model", "--set", "--seed"):
        assert flag in err
    assert "--max-steps" not in err.split("cannot apply")[0]
    assert sorted(p.name for p in run.iterdir()) == before
    # What it can apply is applied, and kept in the run's config.
    res = _resume(run, "--max-steps", "4", "--log-every", "1", "--threads", "1")
    assert res.exit_code == 0, res.output
    assert load_config(run / "config.toml").train.log_every == 1


def test_an_early_stopped_run_cannot_be_extended(tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = _train(run, "--max-steps", "40", sets=("train.lr=1e-30", "train.stop_patience=1", "train.lr_patience=1"))
    assert res.exit_code == 0, res.output
    assert json.loads((run / "result.json").read_text())["stop_reason"] == "early_stopping"
    assert "stopped early" in one_error_line(_resume(run, "--max-steps", "80"))


_HOLD = """
import sys, time
from polyglot_groc.training.runlock import RunLock
with RunLock(sys.argv[1], "train"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_resume_of_a_run_another_process_is_training(tmp_path: Path) -> None:
    """Before its first checkpoint a run has no last.pt: that is "being trained", not "train it first"."""
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(run)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        (run / "config.toml").write_text("", encoding="utf-8")  # what a run writes before its first checkpoint
        err = one_error_line(_resume(run))
        assert "being trained by" in err and f"pid {holder.pid}" in err and "train it first" not in err
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # Once the trainer is gone, the same run is one that stopped before its first checkpoint.
    assert "nothing to resume" in one_error_line(_resume(run))


@pytest.mark.parametrize("sig, code, name", [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_says_what_was_kept_and_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      sig: int, code: int, name: str) -> None:
    from polyglot_groc.commands.train import RichHooks

    real = RichHooks.on_step

    def on_step(self: RichHooks, info: Any) -> None:
        real(self, info)
        if info.step == 5:  # after the step-4 checkpoint
            if sig == signal.SIGINT:
                # What Python's SIGINT handler raises, raised here: a real os.kill lands wherever the
                # main thread is next, on a loaded machine sometimes in a finalizer, where Python
                # prints and drops a KeyboardInterrupt (a flake of the test, not of the trainer).
                raise KeyboardInterrupt
            os.kill(os.getpid(), sig)

    monkeypatch.setattr(RichHooks, "on_step", on_step)
    before = signal.getsignal(signal.SIGTERM)
    run = tmp_path / "run"
    res = _train(run, "--max-steps", "8")
    assert res.exit_code == code, res.output
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is put back
    lines = [line for line in res.stderr.splitlines() if line.startswith("interrupted")]
    assert len(lines) == 1, res.stderr
    line = " ".join(res.stderr[res.stderr.index("interrupted"):].split())
    assert f"interrupted by {name}" in line and "at step 5" in line and "step-4 checkpoint" in line
    assert line.endswith(f"resume with: polyglot-groc train --resume {run}")
    assert not (run / "result.json").exists() and not (run / ".lock.owner").exists()
    monkeypatch.setattr(RichHooks, "on_step", real)
    res = _resume(run)
    assert res.exit_code == 0, res.output
    assert json.loads((run / "result.json").read_text())["steps"] == 8


def test_a_signal_before_the_first_checkpoint_keeps_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.commands.train import RichHooks

    def on_step(self: RichHooks, info: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(RichHooks, "on_step", on_step)
    run = tmp_path / "run"
    res = _train(run, "--max-steps", "8")
    assert res.exit_code == 143, res.output
    line = " ".join(res.stderr[res.stderr.index("interrupted"):].split())
    assert "before the first checkpoint: nothing was kept" in line and "was removed" in line
    assert not run.exists()


def test_finetune_interrupted_says_how_to_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """finetune writes an ordinary run: Ctrl-C/SIGTERM report it the same way, and train --resume finishes it."""
    from polyglot_groc.commands.train import RichHooks
    from polyglot_groc.training.trainer import Trainer
    from tests.conftest import small_run_config

    Trainer(small_run_config("groc", "en", ["train.max_steps=2"]), tmp_path / "parent").fit()
    real = RichHooks.on_step

    def on_step(self: RichHooks, info: Any) -> None:
        real(self, info)
        if info.step == 3:
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(RichHooks, "on_step", on_step)
    ft = tmp_path / "ft"
    res = runner.invoke(app, ["finetune", str(tmp_path / "parent"), "--data", str(TINY), "--out", str(ft),
                              "--max-steps", "6", "--threads", "1", "--set", "train.eval_every=2"])
    assert res.exit_code == 143, res.output
    line = " ".join(res.stderr[res.stderr.index("interrupted"):].split())
    assert "interrupted by SIGTERM at step 3: kept" in line and line.endswith(f"train --resume {ft}")
    monkeypatch.setattr(RichHooks, "on_step", real)
    res = _resume(ft)
    assert res.exit_code == 0, res.output
    assert json.loads((ft / "result.json").read_text())["steps"] == 6
