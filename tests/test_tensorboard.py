"""``train --tensorboard``: a new run directory works, and the log line's scalars (lr too) are written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.conftest import SMALL, TINY

pytest.importorskip("tensorboard")

runner = CliRunner()


def _train(out: Path, *extra: str) -> Any:
    from polyglot_groc.cli import app

    sets = [x for s in [*SMALL, "train.eval_every=2"] for x in ("--set", s)]
    return runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(out), *sets,
                               "--tensorboard", "--log-every", "1", *extra])


def _scalars(run: Path) -> dict[str, list[int]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run / "tensorboard"))
    acc.Reload()
    return {tag: [e.step for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_tensorboard_on_a_new_run_directory(tmp_path: Path) -> None:
    run = tmp_path / "fresh" / "run"  # neither the run nor its parent exists
    res = _train(run, "--max-steps", "4")
    assert res.exit_code == 0, res.output
    tags = _scalars(run)
    for tag in ("train/loss", "train/perplexity", "train/lr", "train/tokens_per_s", "train/epoch"):
        assert tags[tag] == [1, 2, 3, 4], tag
    assert tags["valid/perplexity/en"] == tags["valid/perplexity/fr"] == tags["valid/nll"] == [2, 4]


def test_overwrite_starts_a_fresh_log(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert _train(run, "--max-steps", "4").exit_code == 0
    res = _train(run, "--max-steps", "2", "--overwrite")
    assert res.exit_code == 0, res.output
    assert _scalars(run)["train/loss"] == [1, 2]  # the replaced run's steps 3, 4 are gone


def test_resume_purges_the_events_its_checkpoint_lacks(tmp_path: Path) -> None:
    from polyglot_groc.cli import app

    run = tmp_path / "run"
    assert _train(run, "--max-steps", "3").exit_code == 0  # events at 1..3; last.pt at step 3
    res = runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "5", "--tensorboard"])
    assert res.exit_code == 0, res.output
    assert _scalars(run)["train/loss"] == [1, 2, 3, 4, 5]
    assert _scalars(run)["valid/nll"] == [2, 3, 4, 5]
