"""``finetune`` writes a run directory like ``train``'s, with its options, progress and parent record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.checkpoint import file_sha256
from polyglot_groc.training.trainer import Trainer
from tests.conftest import one_line_exit_2, small_run_config

runner = CliRunner()

OTHER = ("the zebra sees the purple kettle .\nour zebra likes the old kettle .\n"
         "a teacher sees the purple river .\nthe neighbour likes a zebra .\n") * 4


@pytest.fixture(scope="module")
def parent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ft")
    other = root / "work" / "other" / "en"
    other.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (other / f"{split}.txt").write_text(OTHER, encoding="utf-8")
    Trainer(small_run_config("groc", "en", ["train.max_steps=2"]), root / "parent").fit()
    return root / "parent"


def _json(res: object) -> dict:
    text = res.stdout  # type: ignore[attr-defined]
    return json.loads(text[text.index("{"):])


def test_finetune_writes_a_finished_run_like_train(parent: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    work = parent.parent / "work"
    monkeypatch.chdir(work)  # relative --data and --out, as a newcomer types them
    res = runner.invoke(app, ["finetune", str(parent), "--data", "other", "--out", str(tmp_path / "ft"),
                              "--epochs", "1", "--max-steps", "3", "--log-every", "1", "--threads", "1",
                              "--device", "cpu", "--set", "train.eval_every=2", "--set", "train.lr=0.004"])
    assert res.exit_code == 0, res.output
    ft = tmp_path / "ft"
    assert {p.name for p in ft.iterdir()} >= {"config.toml", "metrics.jsonl", "curves.png", "best.pt", "last.pt",
                                              "result.json"}
    assert "step 1: loss" in res.stderr and "valid ppl" in res.stderr  # train's progress display
    assert (ft / "curves.png").read_bytes()[:4] == b"\x89PNG"
    result = json.loads((ft / "result.json").read_text(encoding="utf-8"))
    assert result == _json(res)
    assert result["steps"] == 3 and result["stop_reason"] == "max_steps"
    assert [json.loads(line)["step"] for line in (ft / "metrics.jsonl").read_text().splitlines()] == [2, 3]
    # The parent: absolute path, checkpoint, step and the checkpoint's sha256, in config and result.
    expected = {"run": str(parent.resolve()), "checkpoint": "best", "step": 2,
                "sha256": file_sha256(parent / "best.pt")}
    assert result["parent"] == expected
    cfg = load_config(ft / "config.toml")
    assert cfg.parent.run == expected["run"] and cfg.parent.sha256 == expected["sha256"]
    assert load_bundle(ft)[0].cfg.parent == cfg.parent
    # Options landed in the finetuned run's config; paths are absolute.
    assert cfg.data.root == str(work / "other")
    assert (cfg.train.threads, cfg.train.device, cfg.train.eval_every, cfg.train.lr) == (1, "cpu", 2, 0.004)
    assert (cfg.train.max_epochs, cfg.train.max_steps, cfg.train.max_minutes) == (1, 3, 0.0)
    # runs calls it finished, and evaluate works from another directory.
    monkeypatch.chdir(tmp_path)
    listed = runner.invoke(app, ["runs", "list", str(tmp_path), "--json"])
    assert listed.exit_code == 0, listed.output
    (entry,) = json.loads(listed.stdout)
    assert entry["status"] == "finished" and entry["parent"] == str(parent.resolve())
    ev = runner.invoke(app, ["evaluate", str(ft), "--threads", "1"])
    assert ev.exit_code == 0, ev.output
    assert _json(ev)["perplexity"]["en"] > 1


def test_finetune_flags_win_over_set(parent: Path, tmp_path: Path) -> None:
    other = parent.parent / "work" / "other"
    res = runner.invoke(app, ["finetune", str(parent), "--data", str(other), "--out", str(tmp_path / "a"),
                              "--max-steps", "1", "--set", "train.max_epochs=7", "--set", "train.threads=3",
                              "--threads", "1"])
    assert res.exit_code == 0, res.output
    cfg = load_config(tmp_path / "a" / "config.toml")
    assert (cfg.train.max_epochs, cfg.train.threads) == (7, 1)  # --set without a flag, the flag over --set
    res = runner.invoke(app, ["finetune", str(parent), "--data", str(other), "--out", str(tmp_path / "b"),
                              "--epochs", "2", "--max-steps", "1", "--set", "train.max_epochs=7"])
    assert res.exit_code == 0, res.output
    assert load_config(tmp_path / "b" / "config.toml").train.max_epochs == 2


@pytest.mark.parametrize("args, needle", [
    (["--set", "model.d=8"], "train.*"),
    (["--set", "data.root=elsewhere"], "train.*"),
    (["--epochs", "0"], "--epochs"),
    (["--max-steps", "-1"], "--max-steps"),
    (["--device", "tpu"], "tpu"),
    (["--checkpoint", "middle"], "best or last"),
])
def test_finetune_bad_options_exit_2_leave_nothing(parent: Path, tmp_path: Path, args: list[str],
                                                   needle: str) -> None:
    out = tmp_path / "ft"
    res = runner.invoke(app, ["finetune", str(parent), "--data", str(parent.parent / "work" / "other"),
                              "--out", str(out), *args])
    one_line_exit_2(res, needle)
    assert not out.exists() or not any(p for p in out.iterdir() if not p.name.startswith(".lock"))


def test_finetune_existing_out_exit_2(parent: Path, tmp_path: Path) -> None:
    out = tmp_path / "ft"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    res = runner.invoke(app, ["finetune", str(parent), "--data", str(parent.parent / "work" / "other"),
                              "--out", str(out)])
    one_line_exit_2(res, "--overwrite")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    before = sorted(p.name for p in parent.iterdir())
    res = runner.invoke(app, ["finetune", str(parent), "--data", str(parent.parent / "work" / "other"),
                              "--out", str(parent), "--overwrite"])
    one_line_exit_2(res, "the run being finetuned")
    assert sorted(p.name for p in parent.iterdir()) == before


def test_interrupted_finetune_resumes_on_its_own_data(parent: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """train --resume continues a finetuned run (its config names the new domain, absolutely)."""
    work = parent.parent / "work"
    monkeypatch.chdir(work)
    ft = tmp_path / "ft"
    res = runner.invoke(app, ["finetune", str(parent), "--data", "other", "--out", str(ft), "--max-steps", "2",
                              "--set", "train.eval_every=1"])
    assert res.exit_code == 0, res.output
    # As if killed after step 2 of 4: the budget was 4 steps and there is no result.json.
    (ft / "result.json").unlink()
    text = (ft / "config.toml").read_text(encoding="utf-8")
    (ft / "config.toml").write_text(text.replace("max_steps = 2\n", "max_steps = 4\n"), encoding="utf-8")
    listed = runner.invoke(app, ["runs", "show", str(ft)])
    assert _json(listed)["status"].startswith("interrupted")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["train", "--resume", str(ft), "--log-every", "0"])
    assert res.exit_code == 0, res.output
    assert _json(res)["steps"] == 4
    steps = [json.loads(line)["step"] for line in (ft / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
    assert load_bundle(ft, "last")[0].vocab.words == load_bundle(ft, "best")[0].vocab.words
    assert "zebra" in load_bundle(ft, "last")[0].vocab


def test_finetuning_a_finetuned_run_records_its_parent(parent: Path, tmp_path: Path) -> None:
    other = parent.parent / "work" / "other"
    first, second = tmp_path / "first", tmp_path / "second"
    for src, dst in ((parent, first), (first, second)):
        res = runner.invoke(app, ["finetune", str(src), "--data", str(other), "--out", str(dst), "--max-steps", "1",
                                  "--checkpoint", "last"])
        assert res.exit_code == 0, res.output
    cfg = load_config(second / "config.toml")
    assert cfg.parent.run == str(first.resolve()) and cfg.parent.checkpoint == "last"
    assert cfg.parent.sha256 == file_sha256(first / "last.pt")
    assert load_config(first / "config.toml").parent.run == str(parent.resolve())


def test_init_from_elmo_records_its_parent(tmp_path: Path) -> None:
    from tests.conftest import TINY
    from tests.test_convert import CLI_SMALL

    elmo, groc = tmp_path / "elmo", tmp_path / "groc"
    res = runner.invoke(app, ["train", "--data", str(TINY), "--langs", "en", "--model", "elmo", "--out", str(elmo),
                              "--max-steps", "2", *CLI_SMALL])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["init-from-elmo", str(elmo), "--out", str(groc), "--max-steps", "1"])
    assert res.exit_code == 0, res.output
    expected = {"run": str(elmo.resolve()), "checkpoint": "best", "step": 2, "sha256": file_sha256(elmo / "best.pt")}
    assert json.loads((groc / "result.json").read_text(encoding="utf-8"))["parent"] == expected
    assert load_config(groc / "config.toml").parent.sha256 == expected["sha256"]
