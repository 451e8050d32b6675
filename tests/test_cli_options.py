"""Each option is declared once, and what depends on it is derived from that declaration.

Walks every typer command of ``polyglot-groc`` (the root's and every group's): an option that documents a
config key (``(train.device)``, ``config's data.root``) is declared config-backed with that key; every
config-backed flag is in ``groc_base.checks.SETTING_FLAGS``, so a library message names it, and what
``setting()`` spells for a key parses back, through the command, to the same config value. No command
re-lists its signature in a private function, and the shared options are declared once.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer
from typer.testing import CliRunner

from groc_base.checks import CLI_SPELLING, SETTING_FLAGS, cli_face, override, setting
from groc_base.errors import ModelError
from polyglot_groc.cli import app
from polyglot_groc.commands._common import cli_errors
from polyglot_groc.commands._options import config_options
from polyglot_groc.config import PRESETS, load_config, to_dict

ROOT = Path(__file__).resolve().parent.parent
COMMANDS_DIR = ROOT / "polyglot_groc" / "commands"
#: A config key named in an option's help ("(train.device", "(data.screen=false)") or default ("config's data.root").
DOCUMENTED_KEY = re.compile(r"(?:\(|config's )((?:data|model|train)(?:\.[a-z_]+)+)")


def _typer_commands(typer_app: typer.Typer, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...],
                                                                                        Callable[..., Any]]]:
    """(command path, command function) of every command of ``typer_app``: its own and its groups' (a group
    without a name joins its parent)."""
    for info in typer_app.registered_commands:
        assert info.callback is not None
        yield (*path, info.name or info.callback.__name__), info.callback
    for group in typer_app.registered_groups:
        assert group.typer_instance is not None
        name = group.name or group.typer_instance.info.name
        yield from _typer_commands(group.typer_instance, (*path, name) if isinstance(name, str) else path)


COMMANDS = dict(_typer_commands(app))
ROOT_COMMAND = typer.main.get_command(app)


def _click(path: tuple[str, ...]) -> click.Command:
    cmd: Any = ROOT_COMMAND
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def _config_keys() -> set[str]:
    def flat(values: dict[str, Any], prefix: str) -> Iterator[str]:
        for k, v in values.items():
            yield f"{prefix}{k}"
            if isinstance(v, dict):
                yield from flat(v, f"{prefix}{k}.")

    return set(flat(to_dict(load_config(PRESETS["small"])), ""))


def test_the_walk_sees_every_command() -> None:
    names = {" ".join(path) for path in COMMANDS}
    assert {"train", "evaluate", "finetune", "init-from-elmo", "align", "neighbours", "score", "analyze curves",
            "lexicon lookup", "data prepare", "runs show"} <= names
    assert len(names) == sum(1 for _ in _leaves(ROOT_COMMAND))  # every command click shows, and no other


def _leaves(cmd: click.Command) -> Iterator[click.Command]:
    subs = getattr(cmd, "commands", None)
    if subs is None:
        yield cmd
    for sub in (subs or {}).values():
        yield from _leaves(sub)


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_config_backed_flag_is_found_by_the_derived_mapping(path: tuple[str, ...]) -> None:
    fn, cmd = COMMANDS[path], _click(path)
    declared = config_options(fn)  # param name -> (config key, flag)
    real_keys = _config_keys()
    for param in cmd.params:
        text = f"{getattr(param, 'help', '') or ''} {param.show_default if isinstance(param.show_default, str) else ''}"
        documented = set(DOCUMENTED_KEY.findall(text))
        if documented:  # an option that says which config key it sets is declared with it
            assert param.name in declared, f"{' '.join(path)} {param.opts[0]} names {documented} but sets no key"
            assert declared[param.name][0] in documented, (path, param.opts[0], declared[param.name][0], documented)
    for name, (key, flag) in declared.items():
        param = next(p for p in cmd.params if p.name == name)
        assert key in real_keys, f"{param.opts[0]} sets {key}, which is no config key"
        assert SETTING_FLAGS[key] == flag, key
        assert flag.flag in param.opts and (flag.off is None or flag.off in param.secondary_opts), (key, flag)
        for value in _samples(key, flag):
            with cli_face():
                spelled = setting(key, value)
            assert not spelled.startswith("--set"), (key, value, spelled)
            parsed = cmd.make_context(cmd.name, shlex.split(spelled), resilient_parsing=True).params[name]
            assert flag.to_config(parsed) == value, f"{spelled!r} reads back as {parsed!r}, not {key} = {value!r}"


def _samples(key: str, flag: Any) -> list[Any]:
    """Values of ``key`` the flag can say: the switch's value, both of a pair's, else the preset's (or one made up)."""
    if flag.off is not None:
        return [True, False]
    if flag.switch:
        return [flag.sets]
    if flag.repeat:
        return [["omw-en", "omw-fr:3.0"]]
    value: Any = to_dict(load_config(PRESETS["small"]))
    for part in key.split("."):
        value = value[part]
    return [value if value not in ("", None, []) else "x"]


def test_the_keys_that_had_no_flag_name_their_flag() -> None:
    """The keys train's flags set, each with the flag a message names (11 of them used to say --set)."""
    expected = {
        "data.vocab_mode": "--vocab-mode", "data.tokenize": "--tokenize", "data.schedule": "--schedule",
        "data.screen": "--no-screen", "data.root": "--data", "train.max_steps": "--max-steps",
        "train.max_minutes": "--max-minutes", "train.max_epochs": "--max-epochs", "train.seed": "--seed",
        "train.threads": "--threads", "train.device": "--device", "train.log_every": "--log-every",
        "train.compile": "--compile", "train.precision": "--precision", "train.sampled_k": "--sampled-k",
        "train.softmax": "--softmax", "model.kind": "--model", "model.freeze_input": "--freeze-input",
        "model.init_input": "--init-input", "model.lexicon.coverage": "--lexicon-coverage",
        "model.lexicon.specs": "--lexicon", "model.lexicon.use_definitions": "--no-definitions",
        "model.lexicon.use_relations": "--no-relations", "model.lexicon.wn_dir": "--wn-dir"}
    assert {key: flag.flag for key, flag in SETTING_FLAGS.items()} == expected
    with cli_face():
        assert setting("data.screen", False) == "--no-screen"
        assert setting("data.screen", True) == "--set data.screen=True"  # no flag turns screening on
        assert setting("train.compile", False) == "--no-compile"
        assert setting("model.lexicon.specs", ["omw-en", "omw-fr"]) == "--lexicon omw-en --lexicon omw-fr"
        assert setting("train.lr", 0.1) == "--set train.lr=0.1"
        assert override("model.kind", "...") == "--set model.kind=..."
    assert override("model.kind", "...") == "overrides={'model.kind': '...'}"


def test_a_library_error_about_the_lexicon_names_train_s_flag() -> None:
    """The message of a groc-lex model without lexicon forms (model/bundle.py), through the CLI's error boundary."""
    message = f"a groc-lex model needs compiled lexicon forms; pass {setting('model.lexicon.specs', ['SPEC'])}"
    assert message.endswith("pass overrides={'model.lexicon.specs': ['SPEC']}")  # from Python: the keyword

    probe = typer.Typer()

    @probe.command()
    @cli_errors
    def lexicon_less() -> None:
        raise ModelError(f"a groc-lex model needs compiled lexicon forms; pass "
                         f"{setting('model.lexicon.specs', ['SPEC'])}")

    res = CliRunner().invoke(probe, [])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: a groc-lex model needs compiled lexicon forms; pass --lexicon SPEC"


def test_every_command_is_its_function_behind_the_error_boundary() -> None:
    """Each command function is wrapped by cli_errors itself, and no other function of commands/ re-lists its
    parameters (the old ``_x(langs, with_, data, ...)`` bodies)."""
    for path, fn in COMMANDS.items():
        assert getattr(fn, "__wrapped__", None) is not None, f"{' '.join(path)} is not decorated with cli_errors"
    command_names = {fn.__name__ for fn in COMMANDS.values()}
    for source in sorted(COMMANDS_DIR.glob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        params = {f.name: {a.arg for a in [*f.args.args, *f.args.kwonlyargs]} for f in functions}
        for command in (f for f in functions if f.name in command_names):
            for other in (f for f in functions if f.name not in command_names):
                shared = params[command.name] & params[other.name]
                assert len(shared) <= 4, f"{source.name}:{other.name} re-lists {command.name}'s {sorted(shared)}"


@pytest.mark.parametrize("flag", ["--device", "--checkpoint", "--threads", "--verbose", "--overwrite", "--data",
                                  "--languages", "--log-every", "--allow-untrained"])
def test_a_shared_option_is_declared_once(flag: str) -> None:
    declarations = re.compile(rf"""[oO]ption\(\s*(?:[^,()]+,\s*)?["']{re.escape(flag)}["'/]""")
    found = [f"{p.name}" for p in sorted(COMMANDS_DIR.glob("*.py"))
             for _ in declarations.finditer(p.read_text(encoding="utf-8"))]
    assert found == ["_options.py"], found


def test_every_cli_spelling_is_a_flag_some_command_has() -> None:
    """groc_base.checks.CLI_SPELLING (keywords whose flag is not --keyword) names flags that exist."""
    flags = {opt for path in COMMANDS for p in _click(path).params for opt in (*p.opts, *p.secondary_opts)}
    assert {spelled.split()[0] for spelled in CLI_SPELLING.values()} <= flags


@pytest.mark.parametrize(("command", "workflow"), [
    (("neighbours",), "polyglot_groc.analysis.neighbours:neighbours"),
    (("export",), "polyglot_groc.analysis.export:export"),
    (("similarity",), "polyglot_groc.analysis.similarity:similarity"),
])
def test_one_name_per_option_in_both_faces(command: tuple[str, ...], workflow: str) -> None:
    """Each visible flag of these commands is its workflow's keyword (``--among`` is ``among=``), so a user
    moving between Python and the command line meets one name; old spellings are hidden."""
    import importlib
    import inspect

    module, name = workflow.split(":")
    takes = set(inspect.signature(getattr(importlib.import_module(module), name)).parameters)
    spelled = {flag.split()[0]: keyword for keyword, flag in CLI_SPELLING.items()}
    for param in _click(command).params:
        if not isinstance(param, click.Option) or param.hidden or param.name == "verbose":
            continue
        flag = param.opts[0]
        keyword = spelled.get(flag, flag[2:].replace("-", "_"))
        assert keyword in takes, f"{' '.join(command)} {flag} is not {name}()'s {keyword}="
