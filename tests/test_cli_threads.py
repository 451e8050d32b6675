"""``--threads`` on every command that runs a model: one option, one helper, train's meaning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.training.trainer import Trainer
from tests.conftest import TINY, small_run_config

runner = CliRunner()

#: Every command that loads or trains a model (pretrain-vectors runs gensim, single-threaded).
MODEL_COMMANDS = [["train"], ["evaluate"], ["export"], ["similarity"], ["align"], ["tune-cache"],
                  ["finetune"], ["init-from-elmo"], ["analyze", "freq-bins"]]


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


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=" ".join)
def test_every_model_command_has_threads(command: list[str]) -> None:
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "--threads" in res.output
    if command != ["train"]:  # the shared option says how it relates to OMP_NUM_THREADS
        assert "OMP_NUM_THREADS" in res.output


def _json(res: object) -> dict:
    text = res.stdout  # type: ignore[attr-defined]
    return json.loads(text[text.index("{"):])


@pytest.mark.parametrize("extra", [[], ["--data", str(TINY)]], ids=["closed", "open"])
def test_evaluate_threads_sets_torch_threads(run: Path, calls: list[int], extra: list[str]) -> None:
    res = runner.invoke(app, ["evaluate", str(run), "--threads", "3", *extra])
    assert res.exit_code == 0, res.output
    assert calls == [3]


def test_threads_zero_or_unset_leaves_torch_default(run: Path, calls: list[int]) -> None:
    for extra in ([], ["--threads", "0"]):
        res = runner.invoke(app, ["evaluate", str(run), *extra])
        assert res.exit_code == 0, res.output
    assert calls == []  # torch's default: $OMP_NUM_THREADS, else all cores


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
], ids=lambda c: " ".join(c[:2]))
def test_negative_threads_exit_2_before_work(run: Path, tmp_path: Path, command: list[str]) -> None:
    args = [str(run) if a == "RUN" else a for a in command]
    if command[0] in ("export", "analyze", "finetune", "init-from-elmo"):
        args += ["--out", str(tmp_path / "out")]
    res = runner.invoke(app, [*args, "--threads", "-1"])
    assert res.exit_code == 2, res.output
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1 and "--threads" in err, err
    assert not (tmp_path / "out").exists()
