"""``--threads`` on every command that runs a model or trains vectors: one option, one helper, train's meaning;
the count picked when none is given (issue 46: threads that cannot collapse on a busy machine)."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.model import device, threads
from polyglot_groc.training.speed import SpeedWatch
from polyglot_groc.training.trainer import Trainer
from tests.conftest import TINY, small_run_config

runner = CliRunner()

#: The commands that run no model and train no vectors (files, wordnets, listings, plots): every other
#: command must take --threads.
NO_MODEL = {("curves",), ("data", "prepare"), ("lexicon", "info"), ("lexicon", "lookup"), ("lexicon", "coverage"),
            ("lexicon", "import"), ("lexicon", "download"), ("runs", "list"), ("runs", "show")}


def _commands() -> list[list[str]]:
    """Every command of the CLI as its words (``["analyze", "freq-bins"]``), read from the click group."""
    import typer.main

    group = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd: object, path: list[str]) -> None:
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        else:
            out.append(path)

    walk(group, [])
    return out


MODEL_COMMANDS = [c for c in _commands() if tuple(c) not in NO_MODEL and tuple(c[-1:]) not in NO_MODEL]


def test_the_command_lists_are_complete() -> None:
    names = {tuple(c) for c in _commands()}
    assert {("train",), ("pretrain-vectors",), ("align-layers",), ("neighbours",), ("score",)} <= \
        {tuple(c[-1:]) for c in MODEL_COMMANDS}
    assert all(n in names or n[-1:] in {c[-1:] for c in names} for n in NO_MODEL), "a NO_MODEL entry is stale"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("threads") / "run"
    Trainer(small_run_config("groc", "en", ["train.max_steps=1"]), out).fit()
    return out


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Threads asked of torch (the process keeps its one test thread)."""
    seen: list[int] = []
    monkeypatch.setattr(torch, "set_num_threads", seen.append)
    return seen


@pytest.fixture
def free_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 4-core machine whose other processes keep 1 core busy, and no $OMP_NUM_THREADS: the pick is 3."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads, "machine_load", lambda: (1.0, 0))
    monkeypatch.setattr(threads, "own_load", lambda: 0.0)
    monkeypatch.setattr(device, "_applied", torch.get_num_threads())  # the count torch has is not the caller's


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=" ".join)
def test_every_model_command_has_threads(command: list[str]) -> None:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "--threads" in res.output
    if command not in (["train"], ["pretrain-vectors"]):  # the shared option says what it picks
        assert "OMP_NUM_THREADS" in res.output and "free" in res.output


def _json(res: object) -> dict:
    text = res.stdout  # type: ignore[attr-defined]
    return json.loads(text[text.index("{"):])


@pytest.mark.parametrize("extra", [[], ["--data", str(TINY)]], ids=["closed", "open"])
def test_evaluate_threads_sets_torch_threads(run: Path, calls: list[int], extra: list[str]) -> None:
    res = runner.invoke(app, ["evaluate", str(run), "--threads", "3", *extra])
    assert res.exit_code == 0, res.output
    assert calls == [3]


@pytest.mark.usefixtures("free_cores")
def test_threads_zero_or_unset_picks_the_free_cores(run: Path, calls: list[int]) -> None:
    for extra in ([], ["--threads", "0"]):
        res = runner.invoke(app, ["evaluate", str(run), *extra])
        assert res.exit_code == 0, res.output
    assert calls == [3, 3]  # 4 cores, 1 busy with others


def test_omp_num_threads_is_the_users_standing_choice(run: Path, calls: list[int],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    monkeypatch.setattr(threads, "machine_load", lambda: (9.0, 9))
    res = runner.invoke(app, ["evaluate", str(run)])
    assert res.exit_code == 0, res.output
    assert calls == [2]


def test_export_and_similarity_threads(run: Path, calls: list[int], tmp_path: Path) -> None:
    res = runner.invoke(app, ["export", str(run), "--lang", "en", "--vocab", "--out", str(tmp_path / "v.vec"),
                              "--threads", "2"])
    assert res.exit_code == 0, res.output
    ds = tmp_path / "ds.txt"
    ds.write_text("the a 1.0\ncat dog 2.0\nthe cat 0.5\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--dataset", str(ds), "--run", str(run), "--lang", "en",
                              "--threads", "2"])
    assert res.exit_code == 0, res.output
    assert calls == [2, 2]


@pytest.mark.parametrize("command", [
    ["evaluate", "RUN"], ["evaluate", "RUN", "--data", str(TINY)], ["export", "RUN", "--lang", "en", "--vocab"],
    ["tune-cache", "RUN", "--data", str(TINY)], ["analyze", "freq-bins", "RUN", "RUN", "--data", str(TINY)],
    ["similarity", "--dataset", "x.txt", "--run", "RUN", "--lang", "en"],
    ["align", "--run", "RUN", "--src-lang", "en", "--tgt-lang", "en"],
    ["align-many", "--vectors", "en=missing-en.vec", "--vectors", "fr=missing-fr.vec", "--pivot", "en",
     "--train-dict", "fr-en=missing.txt"],
    ["finetune", "RUN", "--data", str(TINY)], ["init-from-elmo", "RUN"],
    ["pretrain-vectors", "--data", str(TINY)],
    ["align-layers", "--src", "RUN", "--tgt", "RUN", "--train-dict", "x.txt"],
], ids=lambda c: " ".join(c[:2]))
def test_negative_threads_exit_2_before_work(run: Path, tmp_path: Path, command: list[str]) -> None:
    args = [str(run) if a == "RUN" else a for a in command]
    if command[0] in ("export", "analyze", "finetune", "init-from-elmo", "pretrain-vectors", "align-layers"):
        args += ["--out", str(tmp_path / "out")]
    res = runner.invoke(app, [*args, "--threads", "-1"])
    assert res.exit_code == 2, res.output
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "--threads" in err, err
    assert not (tmp_path / "out").exists()


# -- the pick ------------------------------------------------------------------------------------------------

def _pick(requested: int = 0, *, cores: int = 4, load: tuple[float, int] | None = (0.0, 0), own: float = 0.0,
          environ: dict[str, str] | None = None) -> threads.ThreadChoice:
    return threads.pick_threads(requested, cores=cores, load=lambda: load, own=lambda: own, environ=environ or {})


def test_pick_takes_the_cores_other_processes_leave_free() -> None:
    assert _pick(load=(0.2, 0)).threads == 4  # an idle machine: every core
    assert _pick(load=(1.4, 0)).threads == 3  # 2.6 free rounds to 3
    assert _pick(load=(6.0, 0)).threads == 1  # busier than its cores: one thread, never 0
    assert _pick(cores=2, load=(5.0, 4)).reason.startswith("2 usable cores, 5.0 kept busy by other processes")


def test_pick_leaves_out_its_own_share_and_sees_a_load_that_just_rose() -> None:
    assert _pick(load=(3.0, 0), own=3.0).threads == 4  # the load is this process's own
    assert _pick(load=(0.5, 3)).threads == 1  # 3 runnable now, the average still lags behind them


def test_pick_honours_a_count_and_omp_num_threads() -> None:
    asked = _pick(2, load=(9.0, 9))
    assert (asked.threads, asked.auto) == (2, False)
    env = _pick(load=(9.0, 9), environ={"OMP_NUM_THREADS": "3"})
    assert (env.threads, env.auto, env.reason) == (3, True, "$OMP_NUM_THREADS=3")
    assert _pick(load=None).threads == 4  # no load average on this system: every core
    assert _pick(load=(0.0, 0), environ={"OMP_NUM_THREADS": "x"}).reason != "$OMP_NUM_THREADS=x"  # as OpenMP ignores it


def test_passive_wait_is_set_before_torch_loads() -> None:
    import subprocess
    import sys

    code = ("import os; os.environ.pop('OMP_WAIT_POLICY', None); import polyglot_groc, sys; "
            "print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["PASSIVE", "False"]
    mine = subprocess.run([sys.executable, "-c", "import polyglot_groc, os; print(os.environ['OMP_WAIT_POLICY'])"],
                          capture_output=True, text=True, check=True, env={**os.environ, "OMP_WAIT_POLICY": "ACTIVE"})
    assert mine.stdout.strip() == "ACTIVE"  # the user's own setting wins


@pytest.mark.usefixtures("free_cores")
def test_use_threads_keeps_a_count_the_caller_set(calls: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "get_num_threads", lambda: 7)  # the caller's torch.set_num_threads(7)
    assert device.use_threads(None) is None and calls == []
    assert device.use_threads(0) is not None and calls == [3]  # 0 asks for the pick all the same


# -- a collapse while training -------------------------------------------------------------------------------

def test_speed_watch_warns_once_when_speed_collapses() -> None:
    loads = iter([(2.0, 0), (6.5, 4)])
    watch = SpeedWatch(window_steps=5, window_seconds=1.0, load=lambda: next(loads))
    step, tokens, seconds, said = 0, 0, 0.0, []
    for rate in [1000.0] * 12 + [900.0] * 10 + [100.0] * 30:  # tokens/s of each step of 100 tokens
        step, tokens, seconds = step + 1, tokens + 100, seconds + 100 / rate
        if (msg := watch.update(step, tokens, seconds)) is not None:
            said.append(msg)
    assert len(said) == 1, said
    assert re.search(r"slowed from 1,000 to 1\d\d tokens/s while the machine's load average rose from 2.0 to 6.5",
                     said[0]), said[0]


def test_speed_watch_is_quiet_at_a_steady_pace_and_within_the_factor() -> None:
    watch = SpeedWatch(window_steps=5, window_seconds=1.0, load=lambda: None)
    for step in range(1, 200):
        seconds = step * 0.3 if step < 100 else 30 + (step - 100) * 0.9  # 3x slower: not a collapse
        assert watch.update(step, 100 * step, seconds) is None


def test_a_collapsed_run_repicks_its_threads_and_records_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "usable_cores", lambda: 4)
    monkeypatch.setattr(threads, "own_load", lambda: 0.0)
    monkeypatch.setattr(threads, "machine_load", lambda: (0.0, 0))
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # the test process keeps its one thread
    trainer = Trainer(small_run_config("tied", "en", ["train.max_steps=2"]), tmp_path / "run")
    assert (trainer.threads.threads, trainer.threads.auto) == (4, True)
    monkeypatch.setattr(threads, "machine_load", lambda: (3.2, 3))  # other jobs came
    with caplog.at_level(logging.WARNING):
        trainer._slowed("training slowed from 4,000 to 100 tokens/s")
    assert "now 1 thread instead of 4" in caplog.text
    result = trainer.fit().to_dict()
    assert result["threads"]["threads"] == 1 and "slowed" in result["threads"]["slowdown"]


def test_train_says_which_threads_and_why(tmp_path: Path, tiny_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # CI runs the suite with OMP_NUM_THREADS=2 (.ci/run)
    res = runner.invoke(app, ["train", "--data", str(tiny_data), "--langs", "en", "--model", "tied", "--max-steps",
                              "2", "--out", str(tmp_path / "run"), "--set", "model.d=8",
                              "--set", "model.prefix.hidden=8"])
    assert res.exit_code == 0, res.output
    assert "threads: 1, picked: $OMP_NUM_THREADS=1" in res.stderr
    assert _json(res)["threads"]["reason"] == "$OMP_NUM_THREADS=1"


def test_pretrain_vectors_threads_are_gensim_workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gensim.models

    seen: list[int] = []
    real = gensim.models.Word2Vec

    def spy(*args: object, **kw: object) -> object:
        seen.append(int(kw["workers"]))  # type: ignore[call-overload]
        return real(*args, **kw)

    monkeypatch.setattr(gensim.models, "Word2Vec", spy)
    for extra, out in (([], "a.vec"), (["--threads", "2"], "b.vec")):
        res = runner.invoke(app, ["pretrain-vectors", "--data", str(TINY), "--out", str(tmp_path / out), "--dim",
                                  "8", "--epochs", "1", *extra])
        assert res.exit_code == 0, res.output
    assert seen == [1, 2]  # one worker by default: the same vectors on every run
