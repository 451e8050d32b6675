"""The training loop's state: its checkpoint round trip, and checkpoints written before it existed."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import torch

from groc_base.errors import CheckpointError
from polyglot_groc.config import dump_toml, load_config
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint
from polyglot_groc.training.loop import LoopState
from polyglot_groc.training.trainer import Trainer
from tests.conftest import TESTS, TINY, small_run_config

#: A run of 4 steps (en+fr, sparse output updates) whose last.pt the trainer wrote before LoopState
#: existed (polyglot-groc at commit b1903b0); its config.toml names the corpus "TINY".
OLD_RUN = TESTS / "data" / "old-run"
TIMING = {"tokens_per_s", "elapsed_s"}


def _state() -> LoopState:
    s = LoopState.start(small_run_config().train)
    s.update_rng.random(5)  # a generator part-way through its sequence
    s.step, s.tokens, s.train_time, s.lr = 7, 123, 1.5, 0.01
    s.best_nll, s.best_ckpt_nll, s.bad_evals = 3.25, 3.125, 2
    s.best_valid, s.last_valid = {"en": 20.5, "fr": 30.25}, {"en": 22.0, "fr": 31.0}
    s.loss_acc, s.loss_n = 9.5, 3
    s.lang_batches = Counter(en=4, fr=3)
    s.lstm_states = {"en": [(torch.randn(1, 4, 24), torch.randn(1, 4, 24)), (torch.randn(1, 4, 16),
                                                                                 torch.randn(1, 4, 16))]}
    return s


def _same(a: LoopState, b: LoopState) -> None:
    plain = ("lr", "step", "tokens", "train_time", "best_nll", "best_ckpt_nll", "bad_evals", "best_valid",
             "last_valid", "loss_acc", "loss_n", "lang_batches")
    assert {k: getattr(a, k) for k in plain} == {k: getattr(b, k) for k in plain}
    assert a.lstm_states.keys() == b.lstm_states.keys()
    for lang in a.lstm_states:
        for (h1, c1), (h2, c2) in zip(a.lstm_states[lang], b.lstm_states[lang], strict=True):
            assert torch.equal(h1, h2) and torch.equal(c1, c2)
    assert a.update_rng.random(3).tolist() == b.update_rng.random(3).tolist()  # the same coins from here on


def test_loop_state_round_trips_through_a_checkpoint_file(tmp_path: Path) -> None:
    state = _state()
    save_checkpoint(tmp_path / "s.pt", state.to_checkpoint(steps_per_epoch=10))
    payload = load_checkpoint(tmp_path / "s.pt")
    assert payload["epoch"] == 0.7 and payload["steps_per_epoch"] == 10
    back = LoopState.from_checkpoint(payload)
    assert back.to_checkpoint(10).keys() == state.to_checkpoint(10).keys()
    _same(back, state)


def test_a_checkpoint_without_resume_state_is_a_checkpoint_error() -> None:
    payload = _state().to_checkpoint(10)
    del payload["lstm_states"]
    with pytest.raises(CheckpointError, match="last.pt lacks resume state"):
        LoopState.from_checkpoint(payload, source="checkpoint run/last.pt")


def _copy_old_run(tmp_path: Path) -> Path:
    run = tmp_path / "old"
    shutil.copytree(OLD_RUN, run)
    cfg = load_config(run / "config.toml", {"data.root": TINY})
    (run / "config.toml").write_text(dump_toml(cfg), encoding="utf-8")
    return run


def _records(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in history]


def _resume(run: Path, payload: dict[str, Any], max_steps: int) -> Any:
    cfg = load_config(run / "config.toml", {"train.max_steps": max_steps})
    return Trainer(cfg, run, bundle=ModelBundle.from_state(payload["bundle"]), resume=payload).fit()


def test_an_old_checkpoint_resumes_like_a_run_that_never_stopped(tmp_path: Path) -> None:
    run = _copy_old_run(tmp_path)
    payload = load_checkpoint(run / "last.pt")
    state = LoopState.from_checkpoint(payload)
    assert state.step == 4 and set(state.lstm_states) <= {"en", "fr"} and state.best_ckpt_nll < float("inf")
    resumed = _resume(run, payload, 6)
    fresh = Trainer(load_config(run / "config.toml", {"train.max_steps": 6}), tmp_path / "fresh").fit()
    assert resumed.steps == fresh.steps == 6 and resumed.stop_reason == fresh.stop_reason == "max_steps"
    # The old run's records, then the resumed one's: as the uninterrupted run (to float rounding,
    # since the fixture was written on another machine; test_resume checks bit for bit).
    got, want = _records(resumed.history), _records(fresh.history)
    assert [r["step"] for r in got] == [r["step"] for r in want] == [2, 4, 6]
    for a, b in zip(got, want, strict=True):
        assert a.keys() == b.keys()
        for key in a:
            if isinstance(a[key], float):
                assert a[key] == pytest.approx(b[key], rel=1e-4), key
            elif key not in ("valid_perplexity",):
                assert a[key] == b[key], key
        assert a["valid_perplexity"] == pytest.approx(b["valid_perplexity"], rel=1e-4)


def test_the_oldest_checkpoints_without_the_running_loss_still_resume(tmp_path: Path) -> None:
    """Checkpoints from before best_ckpt_nll / loss_acc / loss_n: every evaluation was scheduled then."""
    run = _copy_old_run(tmp_path)
    payload = load_checkpoint(run / "last.pt")
    for key in ("best_ckpt_nll", "loss_acc", "loss_n"):
        del payload[key]
    state = LoopState.from_checkpoint(payload)
    assert state.best_ckpt_nll == state.best_nll and (state.loss_acc, state.loss_n) == (0.0, 0)
    resumed = _resume(run, payload, 6)
    assert resumed.steps == 6 and [r["step"] for r in resumed.history] == [2, 4, 6]
    assert json.loads((run / "metrics.jsonl").read_text().splitlines()[-1])["step"] == 6
