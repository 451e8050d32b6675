"""The README's install and test commands are the ones CI runs, with every version pinned."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            pins[_name(name)] = version
    return pins


def test_ci_runs_the_readme_test_command_word_for_word() -> None:
    commands = [line for line in README.splitlines() if "python3 -m pytest" in line and line.startswith("pip ")]
    assert len(commands) == 1, commands
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[0] in ci


def test_every_pip_install_in_the_readme_and_ci_uses_the_pins_and_installs_torch_first() -> None:
    text = README + (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    installs = re.findall(r"pip install [^&\n]*", text)
    assert installs
    for cmd in installs:
        assert "-c constraints.txt" in cmd, cmd
    for line in text.splitlines():
        if "pip install -e" in line and "torch" in line:
            assert line.index("torch==2.13.0") < line.index("pip install -e"), line


def test_constraints_pin_every_declared_dependency_and_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared += extra
    pins = _pins()
    missing = sorted({_name(r) for r in declared} - set(pins))
    assert not missing, f"constraints.txt lacks {missing}: run bash tools/refresh-constraints.sh"
    assert pins["torch"] == "2.13.0"  # the build the README installs first


def test_readme_names_no_seed_file_and_no_private_path() -> None:
    assert not re.search(r"seed 00\d", README)
    assert "../shared" not in README
    for doc in ("docs/results.md", "docs/fidelity.md", "docs/internals.md"):
        assert (ROOT / doc).is_file() and f"`{doc}`" in README
