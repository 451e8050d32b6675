"""What a run directory records, so that commands run later (anywhere, any environment) see the same run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from polyglot_groc.model.bundle import load_bundle
from tests.conftest import SMALL, TINY

runner = CliRunner()


def _sets(*extra: str) -> list[str]:
    return [arg for s in (*SMALL, *extra) for arg in ("--set", s)]


def _json(res: object) -> dict:
    text = res.stdout  # type: ignore[attr-defined]
    return json.loads(text[text.index("{"):])


def test_relative_paths_are_stored_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--config and --set paths, relative to where train ran, still work from another directory."""
    work = tmp_path / "work"
    shutil.copytree(TINY, work / "corpus")
    (work / "vec.txt").write_text("2 16\nthe " + " ".join(["0.1"] * 16) + "\n. " + " ".join(["0.2"] * 16) + "\n",
                                  encoding="utf-8")
    (work / "c.toml").write_text('[data]\nroot = "corpus"\n', encoding="utf-8")
    monkeypatch.chdir(work)
    res = runner.invoke(app, ["train", "--langs", "en", "--config", "c.toml", "--out", "runs/a", "--max-steps", "1",
                              *_sets('model.init_input="vec.txt"'), "--model", "untied"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["train", "--langs", "en", "--out", "runs/b", "--max-steps", "1",
                              *_sets('data.root="corpus"')])
    assert res.exit_code == 0, res.output
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("a", "b"):
        run = work / "runs" / name
        cfg = load_config(run / "config.toml")
        assert cfg.data.root == str(work / "corpus")
        assert load_bundle(run)[0].cfg.data.root == str(work / "corpus")  # the checkpoint's config too
        ev = runner.invoke(app, ["evaluate", str(run)])
        assert ev.exit_code == 0, ev.output
        assert _json(ev)["perplexity"]["en"] > 1
    assert load_config(work / "runs" / "a" / "config.toml").model.init_input == str(work / "vec.txt")
