"""Every command's --help shows every help text whole, and only the options that exist.

typer renders help through rich, whose markup takes ``[word ...]`` for a style tag and swallows
it: ``[default: 10000 ...]`` vanished from ``align --help``.  These tests render each command's
help and look for each help string in it, so a string that rich eats is caught wherever it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
import typer
from typer.testing import CliRunner

from polyglot_groc.cli import app

runner = CliRunner()
_BOX = re.compile(r"[│╭╮╰╯─┃┏┓┗┛━]")


def _commands() -> Iterator[tuple[list[str], click.Command]]:
    def walk(cmd: click.Command, path: list[str]) -> Iterator[tuple[list[str], click.Command]]:
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    yield from walk(typer.main.get_command(app), [])


COMMANDS = {" ".join(path) or "(root)": (path, cmd) for path, cmd in _commands()}


def _flat(text: str) -> str:
    """Whitespace collapsed and table borders removed: wrapping must not matter."""
    return " ".join(_BOX.sub(" ", text).split())


def _render(path: list[str]) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "120", "TERMINAL_WIDTH": "120"},
                           terminal_width=120)
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_checked() -> None:
    names = set(COMMANDS)
    assert {"align", "export", "train", "lexicon lookup", "tune-cache", "analyze freq-bins"} <= names


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_shows_every_help_text_whole(name: str) -> None:
    path, cmd = COMMANDS[name]
    shown = _flat(_render(path))
    texts = [("the command's description", (cmd.help or "").split("\b")[0])]
    texts += [(f"{'/'.join(p.opts)}", getattr(p, "help", None) or "") for p in cmd.params
              if not getattr(p, "hidden", False)]
    for what, text in texts:
        if text.strip():
            assert _flat(text) in shown, f"{name} --help mangles the help of {what}: {text!r}"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_names_no_hidden_option(name: str) -> None:
    """Deprecated spellings stay accepted but hidden: help describes current options only."""
    path, cmd = COMMANDS[name]
    shown = _render(path)
    visible = {opt for p in cmd.params if not getattr(p, "hidden", False) for opt in p.opts}
    for p in cmd.params:
        if getattr(p, "hidden", False):
            for opt in set(p.opts) - visible:
                assert not re.search(rf"{re.escape(opt)}(?![\w-])", shown), f"{name} --help names the hidden {opt}"


def test_help_texts_carry_no_rich_markup() -> None:
    """No help string holds text rich would read as a tag (``[word...]``, ``[/...]``, ``[#...]``)."""
    tag = re.compile(r"(?<!\\)\[[a-zA-Z#/@][^\]]*\]")
    bad = []
    for name, (_, cmd) in COMMANDS.items():
        for text in [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]:
            bad += [f"{name}: {m.group(0)}" for m in tag.finditer(text)]
    assert bad == []


def test_align_help_describes_current_options() -> None:
    from eval.align import APPROX_BOUND_FRACTION, PRUNE_MIN_KEYS

    shown = _flat(_render(["align"]))
    assert "default: 10000 with --train-dict, 15000 with --dictionary-mode" in shown
    assert "--seed" not in shown and "IVF" not in shown
    # --knn describes what eval.align does, with its numbers.
    assert f"from {PRUNE_MIN_KEYS} words" in shown and f"{APPROX_BOUND_FRACTION:.0%} sample" in shown


def test_deprecated_seed_still_works_hidden(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    from eval.vectors import write_vec

    words = [f"w{i}" for i in range(30)]
    vecs = np.random.default_rng(0).standard_normal((30, 4)).astype(np.float32)
    write_vec(tmp_path / "s.vec", words, vecs)
    result = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "s.vec"),
                                 "--seed", "identical", "--refine", "0", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "--seed is deprecated" in result.stderr and "use --dictionary-mode" in result.stderr


def test_messages_print_brackets_verbatim(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """What commands print (words, file lines, paths) is not rich markup either."""
    import numpy as np

    from eval.vectors import write_vec

    write_vec(tmp_path / "v.vec", ["cat", "dog", "bird"], np.eye(3, dtype=np.float32))
    (tmp_path / "good.txt").write_text("cat dog 1\ndog bird 2\ncat bird 3\n", encoding="utf-8")
    (tmp_path / "[red]bad.txt").write_text("[bold] x\n", encoding="utf-8")
    result = runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "v.vec"), "--dataset",
                                 str(tmp_path / "good.txt"), "--dataset", str(tmp_path / "[red]bad.txt")])
    assert result.exit_code == 0, result.output
    assert "[red]bad.txt" in result.stderr and "'[bold] x'" in result.stderr
