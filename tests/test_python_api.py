"""The training workflows called from Python: keyword-only, typed results, the CLI's run directory, no output.

``polyglot-groc train``, ``train --resume``, ``finetune`` and ``init-from-elmo`` are faces over these
functions, so each call here is compared with the command it stands for.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groc_base.errors import ConfigError, InputError
from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from polyglot_groc.elmo.workflows import ElmoInitResult, init_from_elmo
from polyglot_groc.training.interrupts import TrainingInterrupted
from polyglot_groc.training.trainer import StepInfo
from polyglot_groc.training.workflows import TrainResult, finetune, load_result, resume, train
from tests.conftest import SMALL, SMALL_OVERRIDES, TINY, RecordingHooks

runner = CliRunner()
#: What differs between two runs of the same config: where they are and how fast they went.
TIMING = {"tokens_per_s", "elapsed_s", "train_seconds", "run_dir"}
SETTINGS = {**SMALL_OVERRIDES, "train.eval_every": 2}


def _cli(*args: str) -> Any:
    res = runner.invoke(app, [*args, *[x for s in [*SMALL, "train.eval_every=2"] for x in ("--set", s)]])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):])


def _without(d: dict[str, Any], keys: set[str] = TIMING) -> dict[str, Any]:
    out = {k: v for k, v in d.items() if k not in keys}
    if isinstance(out.get("threads"), dict):  # its reason names the option as the face that set it spells it
        out["threads"] = {k: v for k, v in out["threads"].items() if k != "reason"}  # (--threads 1 / threads=1)
    return out


def _records(run: Path) -> list[dict[str, Any]]:
    return [_without(json.loads(line)) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]


def _files(run: Path) -> set[str]:
    # curves.png is the CLI's progress hooks' drawing, not the library's.
    return {p.name for p in run.iterdir()} - {"curves.png"}


def _config(run: Path) -> dict[str, Any]:
    return json.loads(json.dumps(load_config(run / "config.toml"), default=lambda o: o.__dict__))


@pytest.mark.parametrize("fn", [train, resume, finetune, init_from_elmo, load_result])
def test_every_workflow_is_keyword_only_and_typed(fn: Any) -> None:
    params = inspect.signature(fn).parameters.values()
    assert params and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), fn.__name__
    assert all(p.annotation is not inspect.Parameter.empty for p in params)
    assert inspect.signature(fn).return_annotation in ("TrainResult", "ElmoInitResult")
    doc = inspect.getdoc(fn) or ""
    assert "Returns:" in doc or "TrainResult" in doc, fn.__name__
    with pytest.raises(TypeError):
        fn("positional")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same 4-step en+fr run from the CLI and from Python, and a 2-step one resumed to 4 from each."""
    root = tmp_path_factory.mktemp("api")
    runs = {name: root / name for name in ("cli", "py", "cli2", "py2")}
    args = ("train", "--langs", "en,fr", "--data", str(TINY), "--threads", "1")
    runs_out = {"cli": _cli(*args, "--out", str(runs["cli"]), "--max-steps", "4"),
                "cli2": _cli(*args, "--out", str(runs["cli2"]), "--max-steps", "2")}
    (root / "cli.json").write_text(json.dumps(runs_out["cli"]))
    res = runner.invoke(app, ["train", "--resume", str(runs["cli2"]), "--max-steps", "4"])
    assert res.exit_code == 0, res.output
    return runs


def test_train_from_python_writes_the_clis_run_and_prints_nothing(trained: dict[str, Path],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    result = train(out=trained["py"], langs=["en", "fr"], data=TINY, overrides=SETTINGS, max_steps=4, threads=1)
    assert capsys.readouterr() == ("", "")  # the library never prints
    assert isinstance(result, TrainResult) and result.steps == 4 and result.stop_reason == "max_steps"
    with pytest.raises(AttributeError):
        result.steps = 5  # type: ignore[misc]  # frozen
    cli = json.loads((trained["cli"].parent / "cli.json").read_text())
    assert _without(result.to_dict()) == _without(cli)  # the JSON the CLI prints, timings aside
    assert json.loads((trained["py"] / "result.json").read_text()) == result.to_dict()
    assert _files(trained["py"]) == _files(trained["cli"])
    assert _records(trained["py"]) == _records(trained["cli"])
    saved, expected = _config(trained["py"]), _config(trained["cli"])
    assert saved == expected
    assert [r["step"] for r in result.history] == [2, 4]
    assert load_result(run=trained["py"]).to_dict() == result.to_dict()


def test_resume_from_python_is_the_clis_resume(trained: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    first = train(out=trained["py2"], langs="en,fr", data=TINY, overrides=SETTINGS, max_steps=2, threads=1)
    assert first.steps == 2
    hooks = RecordingHooks()
    capsys.readouterr()
    result = resume(run=trained["py2"], max_steps=4, hooks=hooks)
    started = hooks.starts
    assert capsys.readouterr() == ("", "")
    assert isinstance(result, TrainResult) and result.steps == 4
    assert started[0]["start_step"] == 2 and started[0]["changes"] == ["train.max_steps 2 -> 4"]
    assert started[0]["config"].train.max_steps == 4
    assert _records(trained["py2"]) == _records(trained["cli2"]) == _records(trained["cli"])
    assert _without(result.to_dict()) == _without(json.loads((trained["cli2"] / "result.json").read_text()))
    with pytest.raises(InputError, match="already finished at step 4"):
        resume(run=trained["py2"])


def test_finetune_from_python_records_its_parent(trained: dict[str, Path], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    result = finetune(run=trained["py"], data=TINY, out=tmp_path / "ft", max_steps=2, threads=1,
                      overrides={"train.eval_every": 2})
    assert capsys.readouterr() == ("", "")
    assert isinstance(result, TrainResult) and result.steps == 2
    assert result.parent is not None and result.parent["run"] == str(trained["py"].resolve())
    assert json.loads((tmp_path / "ft" / "result.json").read_text()) == result.to_dict()
    assert result.to_dict()["parent"]["checkpoint"] == "best"
    assert _files(tmp_path / "ft") == {".lock", "best.pt", "last.pt", "config.toml", "metrics.jsonl", "result.json",
                                       "data-fingerprint.json"}
    cli = tmp_path / "ft-cli"
    res = runner.invoke(app, ["finetune", str(trained["py"]), "--data", str(TINY), "--out", str(cli),
                              "--max-steps", "2", "--threads", "1", "--set", "train.eval_every=2"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout[res.stdout.index("{"):])
    assert _without(printed) == _without(result.to_dict()) and _records(cli) == _records(tmp_path / "ft")
    with pytest.raises(InputError, match="is the run being finetuned"):
        finetune(run=trained["py"], data=TINY, out=trained["py"])


def test_init_from_elmo_from_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    elmo = train(out=tmp_path / "elmo", langs=["en", "fr"], data=TINY, model="elmo", overrides=SETTINGS,
                 max_steps=2, threads=1)
    assert elmo.steps == 2
    capsys.readouterr()
    result = init_from_elmo(out=tmp_path / "groc", elmo_run=tmp_path / "elmo", max_steps=2, eval_every=2,
                            overrides={"train.lr": 0.002}, threads=1)
    assert capsys.readouterr() == ("", "")
    assert isinstance(result, ElmoInitResult) and result.train.steps == 2
    summary = result.to_dict()
    assert json.loads((tmp_path / "groc" / "result.json").read_text()) == summary
    assert summary["init_from"] == str((tmp_path / "elmo").resolve()) and summary["init_checkpoint"] == "best"
    assert summary["converted_valid_perplexity"] == result.converted["valid_perplexity"]
    assert list(summary)[-1] == "parent" and summary["parent"]["run"] == str((tmp_path / "elmo").resolve())
    cli = tmp_path / "groc-cli"
    res = runner.invoke(app, ["init-from-elmo", str(tmp_path / "elmo"), "--out", str(cli), "--max-steps", "2",
                              "--eval-every", "2", "--threads", "1", "--set", "train.lr=0.002"])
    assert res.exit_code == 0, res.output
    printed = json.loads(res.stdout[res.stdout.index("{"):])
    assert list(printed) == list(summary) and _without(printed) == _without(summary)
    with pytest.raises(ConfigError, match="not both"):
        init_from_elmo(out=tmp_path / "x", elmo_run=tmp_path / "elmo", elmo_options="o.json", elmo_weights="w.h5")


def test_an_interrupt_is_a_training_interrupted_that_resume_goes_on_from(tmp_path: Path) -> None:
    class StopAtThree:
        def on_start(self, total_steps: int | None, info: Any) -> None:
            pass

        def on_step(self, info: StepInfo) -> None:
            if info.step == 3:
                raise KeyboardInterrupt

        def on_eval(self, record: Any) -> None:
            pass

    run = tmp_path / "run"
    with pytest.raises(TrainingInterrupted) as caught:
        train(out=run, langs="en", data=TINY, overrides=SETTINGS, max_steps=6, threads=1, hooks=StopAtThree())
    stop = caught.value
    assert isinstance(stop, KeyboardInterrupt) and stop.signal == "SIGINT"
    assert (stop.step, stop.checkpoint_step, stop.kept) == (3, 2, True)
    assert not (run / "result.json").exists() and not (run / ".lock.owner").exists()
    assert resume(run=run).steps == 6
    # Before the first checkpoint nothing is kept, and the run directory it made is gone.
    with pytest.raises(TrainingInterrupted) as caught:
        train(out=tmp_path / "early", langs="en", data=TINY, overrides={**SETTINGS, "train.eval_every": 5},
              max_steps=6, threads=1, hooks=StopAtThree())
    assert caught.value.checkpoint_step is None and not caught.value.kept and not (tmp_path / "early").exists()


def test_arguments_win_over_overrides_and_bad_ones_raise(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="one of them"):
        train(out=tmp_path / "r", data=TINY, size="small", config=tmp_path / "c.toml")
    with pytest.raises(ConfigError, match="unknown"):
        train(out=tmp_path / "r", data=TINY, size="huge")
    with pytest.raises(ConfigError, match="no corpus"):
        train(out=tmp_path / "r", config=load_config(None, SMALL_OVERRIDES))
    with pytest.raises(TypeError, match="parse_overrides"):
        train(out=tmp_path / "r", data=TINY, overrides=["model.d=8"])  # type: ignore[arg-type]
    assert not (tmp_path / "r").exists()
    # A RunConfig is used as built; the arguments go on top; with_related adds the pair.
    cfg = load_config(None, {**SETTINGS, "model.kind": "tied", "train.max_steps": 9})
    result = train(out=tmp_path / "r", config=cfg, langs="fr", with_related=True, data=TINY, max_steps=1,
                   overrides={"train.max_steps": 7})
    saved = load_config(tmp_path / "r" / "config.toml")
    assert result.steps == 1 and saved.train.max_steps == 1 and saved.data.langs == ("fr", "en")
    assert saved.model.kind == "tied" and saved.data.root == str(TINY)
