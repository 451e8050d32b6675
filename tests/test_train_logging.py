"""What ``train`` shows while it runs: a running loss that is never NaN, one log knob (train.log_every)."""

from __future__ import annotations

import io
import math
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from polyglot_groc.config import load_config
from polyglot_groc.training.trainer import Trainer
from tests.conftest import SMALL, TINY, RecordingHooks, small_run_config

runner = CliRunner()


@pytest.mark.parametrize("log_every", [0, 4, 10])
def test_running_loss_is_never_nan_in_short_runs(tmp_path: Path, log_every: int) -> None:
    hooks = RecordingHooks()
    cfg = small_run_config("lookup", "en", ["train.max_steps=6", f"train.log_every={log_every}", "train.eval_every=0"])
    Trainer(cfg, tmp_path / "run", hooks=hooks).fit()
    assert [s.step for s in hooks.steps] == [1, 2, 3, 4, 5, 6]
    assert all(math.isfinite(s.loss) and s.loss > 0 for s in hooks.steps)
    assert [s.step for s in hooks.steps if s.logged] == ([4] if log_every == 4 else [])


def test_running_loss_after_a_resume_is_never_nan(tmp_path: Path) -> None:
    import dataclasses

    from polyglot_groc.model.bundle import ModelBundle
    from polyglot_groc.model.checkpoint import load_checkpoint

    cfg = small_run_config("lookup", "en", ["train.max_steps=3", "train.log_every=100"])
    Trainer(cfg, tmp_path / "run").fit()
    payload = load_checkpoint(tmp_path / "run" / "last.pt")
    longer = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=6))
    hooks = RecordingHooks()
    Trainer(longer, tmp_path / "run", hooks=hooks, bundle=ModelBundle.from_state(payload["bundle"]),
            resume=payload).fit()
    assert [s.step for s in hooks.steps] == [4, 5, 6]
    assert all(math.isfinite(s.loss) for s in hooks.steps)


def _train(out: Path, *extra: str) -> Any:
    from polyglot_groc.cli import app

    sets = [x for s in SMALL for x in ("--set", s)]
    return runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(out), *sets, *extra])


def _log_steps(stderr: str) -> list[int]:
    return [int(m) for m in re.findall(r"^step (\d+): loss", stderr, flags=re.M)]


def test_cli_progress_shows_no_nan_under_ten_steps(tmp_path: Path) -> None:
    res = _train(tmp_path / "r", "--max-steps", "3")
    assert res.exit_code == 0, res.output
    assert "nan" not in res.stderr.lower()
    assert re.search(r"loss \d+\.\d{3}", res.stderr), res.stderr


def test_log_every_is_one_knob(tmp_path: Path) -> None:
    """--log-every N is train.log_every: the log lines, the loss reads and the saved config agree."""
    flag = _train(tmp_path / "flag", "--max-steps", "4", "--log-every", "2")
    sets = _train(tmp_path / "set", "--max-steps", "4", "--set", "train.log_every=2")
    assert flag.exit_code == 0 and sets.exit_code == 0, flag.output + sets.output
    assert _log_steps(flag.stderr) == _log_steps(sets.stderr) == [2, 4]
    for run in ("flag", "set"):
        assert load_config(tmp_path / run / "config.toml").train.log_every == 2
    quiet = _train(tmp_path / "quiet", "--max-steps", "4", "--log-every", "0")
    assert quiet.exit_code == 0 and _log_steps(quiet.stderr) == []


def test_log_every_defaults() -> None:
    presets = Path(__file__).resolve().parent.parent / "polyglot_groc" / "configs"
    assert load_config(None).train.log_every == 100
    assert load_config(presets / "quickstart.toml").train.log_every == 20


def test_finetune_log_every_is_the_same_knob(tmp_path: Path) -> None:
    from polyglot_groc.cli import app

    Trainer(small_run_config("groc", "en", ["train.max_steps=2"]), tmp_path / "parent").fit()
    res = runner.invoke(app, ["finetune", str(tmp_path / "parent"), "--data", str(TINY), "--out", str(tmp_path / "ft"),
                              "--max-steps", "4", "--log-every", "2", "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert _log_steps(res.stderr) == [2, 4]
    assert load_config(tmp_path / "ft" / "config.toml").train.log_every == 2


def _bar(monkeypatch: pytest.MonkeyPatch) -> tuple[object, io.StringIO]:
    from rich.console import Console

    from polyglot_groc.training.progress import ProgressBar

    out = io.StringIO()
    return ProgressBar(console=Console(file=out, force_terminal=False, width=200)), out


def test_no_bar_residue_when_the_console_is_not_a_terminal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bar, out = _bar(monkeypatch)
    cfg = small_run_config("tied", "en", ["train.max_steps=4", "train.log_every=2"])
    with bar:  # type: ignore[attr-defined]
        Trainer(cfg, tmp_path / "run", hooks=bar).fit()  # type: ignore[arg-type]
    text = out.getvalue()
    assert "step 2: loss" in text and "valid ppl" in text
    assert "━" not in text and "\r" not in text and "\x1b" not in text  # lines only: no frame of a bar left over


def test_a_long_validation_prints_progress_in_a_log(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.training import progress

    bar, out = _bar(monkeypatch)
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    bar.on_eval_progress(0, 30_000)  # type: ignore[attr-defined]
    now[0] = 110.0
    bar.on_eval_progress(3_000, 30_000)  # type: ignore[attr-defined]
    assert out.getvalue() == ""  # a short one stays quiet
    now[0] = 131.0
    bar.on_eval_progress(12_000, 30_000)  # type: ignore[attr-defined]
    assert out.getvalue().strip() == "validating: 40% of 30,000 tokens, ETA 0:46"


def test_a_sampled_runs_training_ppl_is_labelled_an_estimate(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.training.trainer import StepInfo

    bar, out = _bar(monkeypatch)
    bar.on_start(10, {"n_params": 1, "vocab": 5, "langs": ["en"], "steps_per_epoch": 5,  # type: ignore[attr-defined]
                      "softmax": {"mode": "sampled", "reason": "r", "largest_vocab": 9, "k": 4,
                                  "proposal": "log-uniform"}})
    bar.on_step(StepInfo(4, 0.8, "en", 8.441, 1e-3, 1234.0, {"en": 4}, logged=True))  # type: ignore[attr-defined]
    line = out.getvalue().splitlines()[-1]
    assert line.startswith("step 4: sampled loss 8.441 ppl ~4,633.2 ") and "(sampled-softmax estimate)" in line
