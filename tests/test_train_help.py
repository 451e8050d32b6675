"""``train --help`` tells a newcomer everything: every option's help and default; the config in use
is announced; --size and --config are not silently combined."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from tests.conftest import TINY

runner = CliRunner()
COMMANDS = ["train", "evaluate"]  # every command of commands/train.py


def _options(name: str) -> list[Any]:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    return [p for p in command.params if p.param_type_name == "option" and p.name != "help"]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_help_and_a_visible_default(name: str) -> None:
    for opt in _options(name):
        assert opt.help and opt.help.strip(), f"{name} {opt.opts[0]} has no help text"
        # None and False defaults are not shown by themselves: they need a show_default text.
        shown = isinstance(opt.show_default, str) or (opt.show_default is not False
                                                       and opt.default not in (None, False))
        assert shown, f"{name} {opt.opts[0]} shows no default"
    res = runner.invoke(app, [name, "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"}, terminal_width=400)
    assert res.exit_code == 0
    assert res.output.count("[default:") >= len(_options(name)), res.output


def _flat(text: str) -> str:
    """Table borders removed and whitespace collapsed: wrapping must not matter."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


def test_train_help_names_the_defaults_a_newcomer_asks_about() -> None:
    res = runner.invoke(app, ["train", "--help"], env={"COLUMNS": "100", "TERMINAL_WIDTH": "100"},
                        terminal_width=100)
    text = _flat(res.output)
    options = {opt.opts[0]: opt for opt in _options("train")}
    for flag, default in (("--model", "groc"), ("--size", "small"), ("--tokenize", "whitespace"),
                          ("--vocab-mode", "closed"), ("--schedule", "proportional"), ("--threads", "0"),
                          ("--device", "auto"), ("--precision", "auto"), ("--softmax", "auto")):
        shown = options[flag].show_default
        assert isinstance(shown, str) and default in shown, (flag, shown)
        assert f"[default: ({shown})]" in text, flag
    assert "9M parameters" in text


def test_size_and_config_together_are_refused(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text("[model]\nd = 32\n", encoding="utf-8")
    res = runner.invoke(app, ["train", "--data", str(TINY), "--out", str(tmp_path / "r"), "--size", "paper",
                              "--config", str(conf)])
    assert res.exit_code == 2
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--size" in lines[0] and "--config" in lines[0] and "one of them" in lines[0]
    assert not (tmp_path / "r").exists()


def test_the_default_is_the_small_preset_and_it_is_announced(tmp_path: Path) -> None:
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r"),
                              "--max-steps", "1", "--set", "train.threads=1"])
    assert res.exit_code == 0, res.output
    err = " ".join(res.stderr.split())
    assert "config: --size small (the default" in err and "model groc: d 64, 2x128 LSTM" in err
    assert re.search(r"training groc on en: [\d,]+ parameters", err), err
    small = load_config(Path(__file__).resolve().parent.parent / "polyglot_groc" / "configs" / "quickstart.toml")
    saved = load_config(tmp_path / "r" / "config.toml")
    assert saved.model == small.model


def test_a_config_file_is_announced(tmp_path: Path) -> None:
    conf = tmp_path / "c.toml"
    conf.write_text('[model]\nkind = "tied"\nd = 16\n\n[model.prefix]\nhidden = 16\n', encoding="utf-8")
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r"),
                              "--config", str(conf), "--max-steps", "1", "--set", "train.batch_size=4"])
    assert res.exit_code == 0, res.output
    err = " ".join(res.stderr.split())
    assert f"config: --config {conf} with 1 --set override" in err and "model tied: d 16, 2x16 LSTM" in err
