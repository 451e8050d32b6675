"""Exact resume after SIGKILL (sparse updates and a sampled softmax included), and one writer per run directory
(the run lock)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from polyglot_groc.training.runlock import OWNER_NAME, RunLock, RunLockedError

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--langs", "en,fr", "--data", str(ROOT / "examples" / "sample"), "--size", "small", "--max-steps", "60",
        "--set", "train.eval_every=10", "--set", "model.d=16", "--set", "model.prefix.hidden=32",
        "--set", "model.surface.filters=[[1, 8], [2, 8], [3, 8]]", "--set", "model.output.dropout=0.2",
        "--set", "train.output_update_prob=0.5", "--set", "train.threads=1", "--log-every", "0",
        # Sampled softmax too: each step's negatives must be drawn again exactly after the kill.
        "--set", "train.softmax=sampled", "--set", "train.sampled_k=64"]
TIMING = {"tokens_per_s", "elapsed_s"}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "polyglot_groc", "train", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def _records(run: Path) -> list[dict]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path: Path) -> None:
    full, killed = tmp_path / "full", tmp_path / "killed"
    subprocess.run(_cli(*ARGS, "--out", str(full)), env=_env(), check=True, capture_output=True, cwd=tmp_path)
    proc = subprocess.Popen(_cli(*ARGS, "--out", str(killed)), env=_env(), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        # Kill after the first checkpoint (metrics.jsonl is written just before last.pt).
        while time.monotonic() < deadline and proc.poll() is None:
            if (killed / "last.pt").exists() and (killed / "metrics.jsonl").exists():
                break
            time.sleep(0.05)
        assert proc.poll() is None, "the run finished before it could be killed; make it longer"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (killed / "result.json").exists()
    done_before = len(_records(killed))
    assert done_before < len(_records(full))
    (killed / ".last.pt.leftover.tmp").write_bytes(b"half a checkpoint")  # what a kill mid-write leaves
    res = subprocess.run(_cli("--resume", str(killed)), env=_env(), capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not list(killed.glob(".*.tmp"))
    assert _records(killed) == _records(full)  # every validation record, bit for bit (timings aside)
    a = json.loads((full / "result.json").read_text())
    b = json.loads((killed / "result.json").read_text())
    for key in ("steps", "best_valid_perplexity", "last_valid_perplexity", "stop_reason"):
        assert a[key] == b[key]


def test_a_run_with_awkward_config_values_resumes(tmp_path: Path) -> None:
    """A newline and quotes in the corpus path and a language code that TOML must quote: config.toml
    stays valid TOML, so the run reads back and resumes (the hand-written writer broke both)."""
    import shutil

    from polyglot_groc.config import load_config
    from polyglot_groc.training.workflows import resume, train

    root = tmp_path / 'tiny\ncorpus "quoted"'
    shutil.copytree(ROOT / "tests" / "data" / "tiny", root)
    cfg = load_config(None, {"model.kind": "tied", "data.root": root, "data.langs": ["en"], "model.d": 16,
                             "model.prefix.hidden": 24, "train.threads": 1, "train.max_steps": 2,
                             "train.batch_size": 4, "train.bptt": 8, "train.log_every": 0,
                             "languages": {" zz ": {"name": "Zed", "iso3": "zzz", "script": "Latn"}}})
    train(config=cfg, out=tmp_path / "run")
    assert load_config(tmp_path / "run" / "config.toml") == cfg
    result = resume(run=tmp_path / "run", max_steps=4)
    assert result.steps == 4 and load_config(tmp_path / "run" / "config.toml").data.root == str(root)


_HOLD = """
import sys, time
from polyglot_groc.training.runlock import RunLock
with RunLock(sys.argv[1], "train"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_second_writer_is_refused_and_stale_lock_taken_over(tmp_path: Path) -> None:
    run = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(run)], env=_env(), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
            RunLock(run, "train").acquire()
        # The CLI: exit 2, one line naming the holder, nothing written.
        from typer.testing import CliRunner

        from polyglot_groc.cli import app

        before = sorted(p.name for p in run.iterdir())
        r = CliRunner().invoke(app, ["train", "--data", str(ROOT / "examples" / "sample"), "--out", str(run),
                                     "--overwrite"])
        assert r.exit_code == 2
        lines = [line for line in r.output.splitlines() if line.strip()]
        assert len(lines) == 1 and f"pid {holder.pid}" in lines[0]
        assert sorted(p.name for p in run.iterdir()) == before
        # finetune into a held directory is refused the same way, before any work.
        r = CliRunner().invoke(app, ["finetune", str(tmp_path / "no-such-run"), "--data",
                                     str(ROOT / "examples" / "sample"), "--out", str(run), "--overwrite"])
        assert r.exit_code == 2
        lines = [line for line in r.output.splitlines() if line.strip()]
        assert len(lines) == 1 and f"pid {holder.pid}" in lines[0], r.output
        assert sorted(p.name for p in run.iterdir()) == before
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The holder died without releasing: its owner note is left, the kernel lock is gone.
    assert (run / OWNER_NAME).exists()
    with RunLock(run, "resume") as lock:
        assert json.loads((run / OWNER_NAME).read_text())["pid"] == os.getpid()
        assert lock is not None
    assert not (run / OWNER_NAME).exists()


def test_divergence_stops_with_flag_null_and_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from polyglot_groc.cli import app
    from polyglot_groc.model.lm import LanguageModel
    from tests.conftest import SMALL, TINY

    real = LanguageModel.forward
    calls = {"n": 0}

    def nan_after_three(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(self, *args, **kwargs)
        if self.training:
            calls["n"] += 1
            if calls["n"] > 3 and out.loss is not None:
                out.loss = out.loss * float("nan")
        return out

    monkeypatch.setattr(LanguageModel, "forward", nan_after_three)
    sets = [x for s in [*SMALL, "train.eval_every=2"] for x in ("--set", s)]
    res = CliRunner().invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(tmp_path / "r"),
                                   "--max-steps", "10", *sets])
    assert res.exit_code == 3, res.output

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in JSON")

    result = json.loads((tmp_path / "r" / "result.json").read_text(), parse_constant=no_constants)
    assert result["diverged"] is True and result["stop_reason"] == "diverged" and result["steps"] == 4
    assert "training diverged" in res.stderr
    for line in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines():
        json.loads(line, parse_constant=no_constants)
    assert (tmp_path / "r" / "last.pt").exists()  # the last good state (step 2)


def test_resuming_an_early_stopped_run_trains_nothing_more(tmp_path: Path) -> None:
    """A run killed after it had stopped early (or resumed to collect it) stays where it stopped."""
    from conftest import small_run_config

    from polyglot_groc.model.bundle import ModelBundle
    from polyglot_groc.model.checkpoint import load_checkpoint
    from polyglot_groc.training.trainer import Trainer

    # lr ~ 0: the second evaluation cannot improve on the first, so patience 1 stops the run there.
    cfg = small_run_config("lookup", "en", ["train.lr=1e-30", "train.eval_every=2", "train.max_steps=40",
                                            "train.stop_patience=1", "train.lr_patience=1"])
    first = Trainer(cfg, tmp_path / "run").fit()
    assert first.stop_reason == "early_stopping" and first.steps == 4
    payload = load_checkpoint(tmp_path / "run" / "last.pt")
    again = Trainer(cfg, tmp_path / "run", bundle=ModelBundle.from_state(payload["bundle"]), resume=payload).fit()
    assert again.stop_reason == "early_stopping"
    assert again.steps == first.steps and again.history == first.history
    assert again.best_valid == first.best_valid


def test_a_stop_between_evaluations_leaves_the_schedule_alone(tmp_path: Path) -> None:
    """The evaluation a cap adds between scheduled ones must not count toward lr decay or early
    stopping: stopped there and resumed, the run follows the uninterrupted one exactly."""
    import dataclasses

    import torch
    from conftest import small_run_config

    from polyglot_groc.model.bundle import ModelBundle
    from polyglot_groc.model.checkpoint import load_checkpoint
    from polyglot_groc.training.trainer import Trainer

    # lr ~ 0: no evaluation after the first improves, so with patience 1 every scheduled one decays
    # the lr; an off-schedule evaluation counted as one more would decay it once too often.
    cfg = small_run_config("lookup", "en", ["train.lr=1e-30", "train.eval_every=4", "train.max_steps=12",
                                            "train.stop_patience=10", "train.lr_patience=1"])
    full = Trainer(cfg, tmp_path / "full").fit()
    capped_cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, max_steps=6))
    capped = Trainer(capped_cfg, tmp_path / "capped").fit()
    assert [r["scheduled"] for r in capped.history] == [True, False]  # step 4, then the stop at 6
    payload = load_checkpoint(tmp_path / "capped" / "last.pt")
    resumed = Trainer(cfg, tmp_path / "capped", bundle=ModelBundle.from_state(payload["bundle"]),
                      resume=payload).fit()
    # The running training loss is summed in fp32 on the device and read at log points, so a stop
    # regroups that sum: the same mean to rounding. Everything else is bit for bit.
    loose = {"tokens_per_s", "elapsed_s", "train_loss", "train_perplexity"}
    scheduled = [r for r in resumed.history if r["scheduled"]]
    assert [{k: v for k, v in r.items() if k not in loose} for r in scheduled] == \
        [{k: v for k, v in r.items() if k not in loose} for r in full.history]
    assert [r["train_loss"] for r in scheduled] == pytest.approx([r["train_loss"] for r in full.history], rel=1e-6)
    assert [r["lr"] for r in full.history] == [1e-30, 1e-30, 1e-31]  # recorded before each decay
    final = load_checkpoint(tmp_path / "full" / "last.pt")["bundle"]["model_state"]
    again = load_checkpoint(tmp_path / "capped" / "last.pt")["bundle"]["model_state"]
    assert all(torch.equal(final[k], again[k]) for k in final)
