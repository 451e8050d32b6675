from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from groc_base.errors import CheckpointError, InputError
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint
from polyglot_groc.training.trainer import Trainer
from tests.conftest import small_run_config


@pytest.mark.parametrize("kind", ["groc", "lookup", "elmo"])
def test_train_save_reload_identical_logits(tmp_path: Path, kind: str) -> None:
    cfg = small_run_config(kind, "en,fr", ["train.max_steps=6", "train.eval_every=3"])
    trainer = Trainer(cfg, tmp_path / "run")
    result = trainer.fit()
    assert result.steps == 6 and set(result.best_valid) == {"en", "fr"}
    run = tmp_path / "run"
    assert {p.name for p in run.iterdir()} >= {"config.toml", "metrics.jsonl", "best.pt", "last.pt"}
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [3, 6]
    bundle, payload = load_bundle(run, "last")
    assert payload["step"] == 6 and payload["format_version"] == 1
    assert {"optimizer", "rng", "batcher"} <= set(payload)
    # The in-memory model from a fresh identical training run and the reloaded one agree exactly.
    again = Trainer(cfg, tmp_path / "again").fit()
    assert again.last_valid == pytest.approx(result.last_valid)
    ids = torch.from_numpy(bundle.vocab.encode(["the", "cat", "sees", "the", "garden", "."]))[None]
    bundle.model.eval()
    other, _ = load_bundle(tmp_path / "again", "last")
    live = trainer.model.eval()
    a = bundle.model(ids[:, :-1], ids[:, 1:], "en", bundle.model.init_state(1), return_logits=True)
    b = other.model(ids[:, :-1], ids[:, 1:], "en", other.model.init_state(1), return_logits=True)
    c = live(ids[:, :-1], ids[:, 1:], "en", live.init_state(1), return_logits=True)
    assert a.logits is not None and b.logits is not None and c.logits is not None
    assert torch.equal(a.logits, c.logits)  # saved and reloaded == the trained model in memory
    assert torch.equal(a.logits, b.logits)  # and training is deterministic given the seed


def test_training_reduces_validation_perplexity(tmp_path: Path) -> None:
    cfg = small_run_config("groc", "en", ["train.max_steps=40", "train.eval_every=20"])
    result = Trainer(cfg, tmp_path / "run").fit()
    first, last = result.history[0]["valid_nll"], result.history[-1]["valid_nll"]
    assert last < first


def test_open_vocabulary_groc_scores_unseen_words(tmp_path: Path) -> None:
    cfg = small_run_config("groc", "en", ["train.max_steps=2", "data.vocab_mode=\"open\""])
    # valid has words absent from train only if the fixture says so; add one via a custom corpus
    data = tmp_path / "data" / "en"
    data.mkdir(parents=True)
    (data / "train.txt").write_text("the cat sees the dog .\n" * 20, encoding="utf-8")
    (data / "valid.txt").write_text("the zebra sees the cat .\n" * 4, encoding="utf-8")
    (data / "test.txt").write_text("the cat sees the dog .\n", encoding="utf-8")
    import dataclasses

    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, root=str(tmp_path / "data")))
    result = Trainer(cfg, tmp_path / "run").fit()
    assert np.isfinite(result.last_valid["en"])
    bundle, _ = load_bundle(tmp_path / "run")
    assert "zebra" not in bundle.vocab  # the saved vocabulary is the training one


def test_existing_run_dir_needs_overwrite(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "something").write_text("x")
    with pytest.raises(InputError, match="overwrite=True"):
        Trainer(small_run_config(), run)


def test_checkpoint_refuses_unknown_format_and_garbage(tmp_path: Path) -> None:
    save_checkpoint(tmp_path / "a.pt", {"x": 1})
    payload = torch.load(tmp_path / "a.pt", weights_only=True)
    payload["format_version"] = 99
    torch.save(payload, tmp_path / "b.pt")
    with pytest.raises(CheckpointError, match="format_version 99"):
        load_checkpoint(tmp_path / "b.pt")
    (tmp_path / "c.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="is corrupt"):
        load_checkpoint(tmp_path / "c.pt")


@pytest.mark.parametrize("kind", ["groc", "lookup"])
def test_open_vocabulary_word_known_only_from_the_other_language(tmp_path: Path, kind: str) -> None:
    """fr test has 'garden', seen in training only in en: it must join fr's screen, not crash."""
    import dataclasses

    for lang, train, test in (("en", "the cat sees the garden .", "the cat sees the garden ."),
                              ("fr", "le chat voit le jardin .", "le chat voit le garden .")):
        d = tmp_path / "data" / lang
        d.mkdir(parents=True)
        (d / "train.txt").write_text((train + "\n") * 20, encoding="utf-8")
        (d / "valid.txt").write_text((train + "\n") * 4, encoding="utf-8")
        (d / "test.txt").write_text((test + "\n") * 4, encoding="utf-8")
    cfg = small_run_config(kind, "en,fr", ["train.max_steps=2", 'data.vocab_mode="open"'])
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, root=str(tmp_path / "data")))
    Trainer(cfg, tmp_path / "run").fit()
    from polyglot_groc.analysis.workflows import evaluate

    res = evaluate(run=tmp_path / "run", split="test").to_dict()
    assert np.isfinite(res["perplexity"]["fr"])


# -- train.max_minutes counts validation (issue 46) ------------------------------------------------------------

class _Clock:
    """The trainer's clock, set by the test (perf_counter stays real: it times the steps)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now

    @staticmethod
    def perf_counter() -> float:
        import time

        return time.perf_counter()


def test_max_minutes_keeps_time_for_the_final_validation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.training import trainer as trainer_mod
    from polyglot_groc.training.loop import LoopState

    trainer = Trainer(small_run_config("tied", "en", ["train.max_minutes=1"]), tmp_path / "run")
    loop = trainer._open_loop()
    state = LoopState.start(trainer.cfg.train)
    clock = _Clock(1000.0)
    monkeypatch.setattr(trainer_mod, "time", clock)
    loop.started, loop.start_step, loop.start_train_time = 1000.0, 0, 0.0
    clock.now = 1000.0 + 3600  # past the budget before a step: one step is made all the same
    assert trainer._limit_reached(loop, state) == ""
    state.step, state.train_time = 10, 10.0  # 1 s a step
    loop.last_validation_seconds = 20.0  # the last validation and its checkpoint took 20 s
    clock.now = 1000.0 + 38.5  # 38.5 s + a step + 20 s = 59.5 s: room for one more step
    assert trainer._limit_reached(loop, state) == ""
    clock.now = 1000.0 + 39.5  # 60.5 s: the final validation would not fit
    assert trainer._limit_reached(loop, state) == "max_minutes"
    loop.last_validation_seconds, loop.validation_estimate = 0.0, 5.0  # before the first: the estimate
    clock.now = 1000.0 + 53.5
    assert trainer._limit_reached(loop, state) == ""
    clock.now = 1000.0 + 54.5
    assert trainer._limit_reached(loop, state) == "max_minutes"


def test_the_validation_estimate_is_timed_on_its_first_windows(tmp_path: Path) -> None:
    import time

    from polyglot_groc.training.evaluation import estimate_evaluation_seconds, evaluate_split

    trainer = Trainer(small_run_config("groc", "en,fr", ["train.max_steps=1"]), tmp_path / "run")
    t = trainer.cfg.train
    estimate = estimate_evaluation_seconds(trainer.bundle, trainer.corpus, "valid", t.eval_batch_size, t.bptt)
    began = time.perf_counter()
    evaluate_split(trainer.bundle, trainer.corpus, "valid", t.eval_batch_size, t.bptt)
    took = time.perf_counter() - began
    assert 0 < estimate < 20 * took + 1.0 and took < 20 * estimate + 1.0  # the right order of magnitude


def test_a_tiny_budget_stops_after_a_step_and_validation_reports_progress(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []

    class Hooks:
        def on_start(self, total_steps: int | None, info: object) -> None:
            pass

        def on_step(self, info: object) -> None:
            pass

        def on_eval(self, record: object) -> None:
            pass

        def on_eval_progress(self, done: int, total: int) -> None:
            seen.append((done, total))

    cfg = small_run_config("tied", "en", ["train.max_minutes=0.0001"])
    res = Trainer(cfg, tmp_path / "run", hooks=Hooks()).fit()
    assert res.stop_reason == "max_minutes" and res.steps == 1  # one step, then the validation that fits
    total = seen[0][1]
    assert seen[0] == (0, total) and seen[-1] == (total, total) and total > 0
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
