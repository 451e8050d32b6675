"""``train --resume`` from the command line: extending a finished run, options it cannot apply, a run
another process is training, and what Ctrl-C / SIGTERM leave (one line, exit 130 / 143)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
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


# --------------------------------------------------------------------------- resume on changed data
# One rule per kind of change (docs/reliability.md, "Resume on changed data"), for each model family
# (compositional output vs lookup tables) and vocabulary (closed vs open). Every refusal leaves the run
# folder byte for byte as it was; the Python API and the CLI decide alike.

NEW_LINE = "zyzzyva quux the\nzyzzyva the cat\n"  # 'zyzzyva' twice (it reaches data.min_count=2), 'quux' once


def _snapshot(run: Path) -> dict[str, bytes]:
    """Every file of the run folder (the lock files aside) by name -> its bytes."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file() and not p.name.startswith(".lock")}


@pytest.fixture(scope="module")
def changed_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny runs (2 steps, en) of each family, each with its own copy of the corpus under ``root``."""
    from polyglot_groc.training.workflows import train
    from tests.conftest import SMALL_OVERRIDES

    root = tmp_path_factory.mktemp("changed")
    runs = {}
    for name, kind, mode in [("groc-closed", "groc", "closed"), ("tied-closed", "tied", "closed"),
                             ("tied-open", "tied", "open"), ("groc-open", "groc", "open"),
                             ("adaptive-closed", "adaptive", "closed")]:
        import shutil

        shutil.copytree(TINY, root / name / "data")
        train(out=root / name / "run", langs="en,fr", data=root / name / "data", model=kind, max_steps=2,
              threads=1, overrides={**SMALL_OVERRIDES, "data.vocab_mode": mode})
        runs[name] = root / name
    return runs


def _copy(runs: dict[str, Path], name: str, tmp_path: Path) -> tuple[Path, Path]:
    """A fresh copy of run ``name``, and its corpus (the fixture's: runs record its absolute path, so a
    test changes it inside :func:`_changed` only, which puts it back)."""
    import shutil

    shutil.copytree(runs[name] / "run", tmp_path / name, ignore=shutil.ignore_patterns(".lock*"))
    return tmp_path / name, runs[name] / "data"


@contextlib.contextmanager
def _changed(*paths: Path) -> Iterator[None]:
    """Put ``paths`` (files or folders) back as they were when the block ends."""
    import shutil

    saved = Path(tempfile.mkdtemp())
    try:
        for i, path in enumerate(paths):
            shutil.copytree(path, saved / str(i)) if path.is_dir() else shutil.copy2(path, saved / str(i))
        yield
    finally:
        for i, path in enumerate(paths):
            if path.is_dir():
                shutil.rmtree(path)
            if (saved / str(i)).is_dir():
                shutil.copytree(saved / str(i), path)
            else:
                shutil.copy2(saved / str(i), path)
        shutil.rmtree(saved)


def _append(text: Path, lines: str = NEW_LINE) -> None:
    text.write_text(text.read_text(encoding="utf-8") + lines, encoding="utf-8")


def _vocab(run: Path, which: str = "last") -> set[str]:
    from polyglot_groc.model.bundle import load_bundle

    return set(load_bundle(run, which)[0].vocab.words)


@pytest.mark.parametrize("name, split, joins", [
    ("groc-closed", "train", {"zyzzyva", "quux"}),   # GroC composes them
    ("groc-closed", "valid", {"zyzzyva", "quux"}),   # a closed vocabulary holds every split's words
    ("groc-closed", "test", {"zyzzyva", "quux"}),
    ("tied-closed", "train", {"zyzzyva", "quux"}),   # lookup tables: new rows
    ("tied-closed", "valid", {"zyzzyva", "quux"}),   # the case: it failed at validation
    ("tied-open", "train", {"zyzzyva"}),             # open + <unk>: data.min_count=2 decides, as finetune
    ("tied-open", "valid", set()),                   # open: validation words are <unk>, as evaluate reads them
    ("groc-open", "train", {"zyzzyva", "quux"}),
    ("groc-open", "valid", set()),                   # open GroC: composed at validation, not vocabulary
])
def test_new_words_are_refused_untouched_then_join_the_vocabulary_as_finetune_adds_them(
        changed_runs: dict[str, Path], tmp_path: Path, name: str, split: str, joins: set[str]) -> None:
    run, data = _copy(changed_runs, name, tmp_path)
    text = data / "en" / f"{split}.txt"
    with _changed(text):
        _append(text)
        before = _snapshot(run)
        line = one_error_line(_resume(run, "--max-steps", "4"))
        assert f"{text} grew" in line and "--accept-changed-data" in line, line
        assert ("new word(s) join the vocabulary" in line) == bool(joins), line
        assert _snapshot(run) == before  # config.toml, data-fingerprint.json, metrics, checkpoints

        res = _resume(run, "--max-steps", "4", "--accept-changed-data")
        assert res.exit_code == 0, res.output
        assert json.loads((run / "result.json").read_text())["steps"] == 4
        grown = _vocab(run) - _vocab(changed_runs[name] / "run")
        assert grown == joins
        if split == "valid":  # best.pt was re-scored on the new text before training went on
            assert "best.pt scores" in res.stderr
        assert _resume(run, "--max-steps", "5").exit_code == 0  # the new text is the run's own now


def test_the_python_api_refuses_and_goes_on_as_the_cli_does(changed_runs: dict[str, Path], tmp_path: Path) -> None:
    import polyglot_groc as pg

    run, data = _copy(changed_runs, "tied-closed", tmp_path)
    text = data / "en" / "valid.txt"
    with _changed(text):
        _append(text)
        before = _snapshot(run)
        with pytest.raises(pg.InputError, match=r"accept_changed_data=True to go on .*2 new word\(s\) join"):
            pg.resume(run=run, max_steps=4)
        assert _snapshot(run) == before
        res = pg.resume(run=run, max_steps=4, accept_changed_data=True)
        assert res.steps == 4 and {"zyzzyva", "quux"} <= _vocab(run)
        # best.pt's figure is of the new validation text: evaluate measures the same
        best = pg.evaluate(run=run, split="valid", checkpoint="best", batch_size=2)
        assert best.to_dict()["perplexity"]["en"] == pytest.approx(res.best_valid["en"], rel=1e-4)


def test_removed_training_lines_go_on_and_a_changed_validation_text_rescores_best(
        changed_runs: dict[str, Path], tmp_path: Path) -> None:
    run, data = _copy(changed_runs, "groc-closed", tmp_path)
    texts = [data / "en" / f"{split}.txt" for split in ("train", "valid")]
    with _changed(*texts):
        for text in texts:
            text.write_text("".join(text.read_text(encoding="utf-8").splitlines(keepends=True)[:-3]),
                            encoding="utf-8")
        res = _resume(run, "--max-steps", "4", "--accept-changed-data")
        assert res.exit_code == 0, res.output
        assert "shrank" in res.stderr and "best.pt scores" in res.stderr
    assert _vocab(run) == _vocab(changed_runs["groc-closed"] / "run")  # removed words stay: trained rows are kept


def test_a_missing_language_is_refused_even_with_the_flag_and_finetune_goes_on(
        changed_runs: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    run, data = _copy(changed_runs, "groc-closed", tmp_path)
    with _changed(data / "fr"):
        shutil.rmtree(data / "fr")
        before = _snapshot(run)
        for flags in ((), ("--accept-changed-data",)):
            line = one_error_line(_resume(run, "--max-steps", "4", *flags))
            assert f"{data / 'fr' / 'train.txt'} is missing" in line and "--accept-changed-data" not in line, line
            assert _snapshot(run) == before
        command = line.split("`")[1].split()
        assert command[:2] == ["polyglot-groc", "finetune"]
        res = runner.invoke(app, [*command[1:-1], str(tmp_path / "ft"), "--max-steps", "1", "--threads", "1"])
        assert res.exit_code == 0, res.output


def test_a_kind_whose_vocabulary_cannot_grow_is_refused_naming_a_new_run_that_works(
        changed_runs: dict[str, Path], tmp_path: Path) -> None:
    run, data = _copy(changed_runs, "adaptive-closed", tmp_path)
    text = data / "en" / "train.txt"
    with _changed(text):
        _append(text)
        before = _snapshot(run)
        for flags in ((), ("--accept-changed-data",)):
            line = one_error_line(_resume(run, "--max-steps", "4", *flags))
            assert str(text) in line and "cannot grow" in line and "--accept-changed-data" not in line, line
            assert _snapshot(run) == before
        command = line.split("`")[1].split()
        assert command[:2] == ["polyglot-groc", "train"]
        res = runner.invoke(app, [*command[1:-1], str(tmp_path / "new"), "--max-steps", "1", "--threads", "1"])
        assert res.exit_code == 0, res.output
    assert "zyzzyva" in _vocab(tmp_path / "new")


def test_another_language_set_in_config_is_refused_and_a_new_language_folder_is_not_read(
        changed_runs: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    run, data = _copy(changed_runs, "groc-closed", tmp_path)
    shutil.copytree(data / "fr", tmp_path / "de")
    shutil.move(tmp_path / "de", data / "de")  # a folder the run does not train on: not read
    config = run / "config.toml"
    original = config.read_text(encoding="utf-8")
    config.write_text(original.replace('langs = [\n    "en",\n    "fr",\n]', 'langs = [\n    "en",\n]'),
                      encoding="utf-8")
    assert config.read_text(encoding="utf-8") != original
    before = _snapshot(run)
    line = one_error_line(_resume(run, "--max-steps", "4", "--accept-changed-data"))
    assert "data.langs" in line and _snapshot(run) == before, line
    config.write_text(original, encoding="utf-8")
    try:
        assert _resume(run, "--max-steps", "4").exit_code == 0
    finally:
        shutil.rmtree(data / "de")


def test_an_unreadable_fingerprint_is_refused_and_the_flag_takes_every_file_as_changed(
        changed_runs: dict[str, Path], tmp_path: Path) -> None:
    run, _ = _copy(changed_runs, "groc-closed", tmp_path)
    (run / "data-fingerprint.json").write_text("{not json", encoding="utf-8")
    before = _snapshot(run)
    line = one_error_line(_resume(run, "--max-steps", "4"))
    assert "data-fingerprint.json is unreadable" in line and "--accept-changed-data" in line, line
    assert _snapshot(run) == before
    res = _resume(run, "--max-steps", "4", "--accept-changed-data")
    assert res.exit_code == 0, res.output
    assert json.loads((run / "data-fingerprint.json").read_text())["files"]  # recorded anew


# --------------------------------------------------------------------------- advice that names what exists


def test_a_run_that_diverged_before_its_first_checkpoint_is_never_told_to_restore_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45: --resume advised "restore last.pt from a copy of the run"; no last.pt was ever written."""
    from polyglot_groc.model.lm import LanguageModel

    real = LanguageModel.forward

    def nan_loss(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(self, *args, **kwargs)
        if self.training and out.loss is not None:
            out.loss = out.loss * float("nan")
        return out

    run = tmp_path / "r"
    monkeypatch.setattr(LanguageModel, "forward", nan_loss)
    assert _train(run, "--max-steps", "4").exit_code == 3
    monkeypatch.setattr(LanguageModel, "forward", real)
    assert not (run / "last.pt").exists() and not (run / "best.pt").exists()
    lines = [one_error_line(_resume(run, "--max-steps", "8"))] + [
        one_error_line(runner.invoke(app, args, input="the cat .\n")) for args in (
            ["evaluate", str(run)], ["score", str(run), "--lang", "en"],
            ["export", str(run), "--lang", "en", "--vocab", "--out", str(tmp_path / "v.vec")],
            ["finetune", str(run), "--data", str(TINY), "--out", str(tmp_path / "ft")])]
    for line in lines:
        assert "diverged at step 2" in line and "restore" not in line and "train.lr" in line, line
    # The command they name trains it again (with a learning rate filled in).
    command = lines[0].split("`")[1].replace("train.lr=LR", "train.lr=0.002").split()
    res = runner.invoke(app, [*command[1:], "--max-steps", "2", "--threads", "1"])
    assert res.exit_code == 0, res.output
    assert (run / "last.pt").is_file() and _resume(run, "--max-steps", "4").exit_code == 0


def test_a_missing_or_damaged_checkpoint_names_the_other_only_where_it_is_there(tmp_path: Path) -> None:
    run = tmp_path / "r"
    assert _train(run, "--max-steps", "2").exit_code == 0
    (run / "best.pt").rename(tmp_path / "best.pt")
    line = one_error_line(runner.invoke(app, ["evaluate", str(run)]))
    assert "no best.pt (last.pt is there); use --checkpoint last" in line, line
    assert runner.invoke(app, ["evaluate", str(run), "--checkpoint", "last"]).exit_code == 0
    (tmp_path / "best.pt").rename(run / "best.pt")
    (run / "best.pt").write_bytes(b"not a checkpoint")
    line = one_error_line(runner.invoke(app, ["evaluate", str(run)]))
    assert f"use the run's other checkpoint, {run / 'last.pt'}, or train again" in line, line
    (run / "last.pt").unlink()
    line = one_error_line(runner.invoke(app, ["evaluate", str(run)]))
    assert "corrupt" in line and "other checkpoint" not in line and line.endswith("train again"), line
