"""The architecture's import rules, checked on the source (lazy imports inside functions too).

Packages: ``groc_base`` (errors, file I/O, cache) under everything; ``lexicons`` and ``langpairs``
are siblings above it; ``polyglot_groc`` uses all of them; ``eval`` works on arrays and imports
only ``groc_base``.
Inside ``polyglot_groc``: ``model`` ← ``training`` ← (``elmo``, ``analysis``) ← ``commands`` ← ``cli``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: package or subpackage -> module prefixes it must never import
FORBIDDEN: dict[str, set[str]] = {
    # The base imports nothing of the toolkit: every package may import it.
    "groc_base": {"lexicons", "langpairs", "polyglot_groc", "eval", "benchmarks"},
    # lexicons is about lexicons, langpairs about languages and corpora: siblings, neither imports the other.
    "lexicons": {"langpairs", "polyglot_groc", "eval"},
    "langpairs": {"lexicons", "polyglot_groc", "eval"},
    # eval works on arrays (numpy, scipy.sparse, faiss); of the toolkit it imports only the base.
    "eval": {"polyglot_groc", "lexicons", "langpairs"},
    "polyglot_groc/config.py": {"polyglot_groc.model", "polyglot_groc.training", "polyglot_groc.elmo",
                                "polyglot_groc.analysis", "polyglot_groc.commands", "polyglot_groc.cli"},
    # The kinds' traits are config-level facts, read before torch: torch-free like the config.
    "polyglot_groc/kind_traits.py": {"torch", "polyglot_groc.config", "polyglot_groc.model", "polyglot_groc.training",
                                     "polyglot_groc.elmo", "polyglot_groc.analysis", "polyglot_groc.commands",
                                     "polyglot_groc.cli"},
    "polyglot_groc/model": {"polyglot_groc.training", "polyglot_groc.elmo", "polyglot_groc.analysis",
                            "polyglot_groc.api", "polyglot_groc.commands", "polyglot_groc.cli"},
    "polyglot_groc/training": {"polyglot_groc.elmo", "polyglot_groc.analysis", "polyglot_groc.api",
                               "polyglot_groc.commands", "polyglot_groc.cli"},
    "polyglot_groc/elmo": {"polyglot_groc.analysis", "polyglot_groc.api", "polyglot_groc.commands",
                           "polyglot_groc.cli"},
    "polyglot_groc/analysis": {"polyglot_groc.elmo", "polyglot_groc.api", "polyglot_groc.commands",
                               "polyglot_groc.cli"},
    # Contextual features, anchors and the parsing probe sit beside analysis (and may use it).
    "polyglot_groc/contextual": {"polyglot_groc.elmo", "polyglot_groc.api", "polyglot_groc.commands",
                                 "polyglot_groc.cli"},
    # The façade gathers the rooms' workflows; the faces (commands, cli) sit above it.
    "polyglot_groc/api.py": {"polyglot_groc.commands", "polyglot_groc.cli"},
    "polyglot_groc/commands": {"polyglot_groc.cli"},
    # Benchmarks drive the library through its public workflows, never through the CLI's commands.
    "benchmarks": {"polyglot_groc.commands", "polyglot_groc.cli"},
}


def _imports(path: Path) -> list[str]:
    """Absolute module names imported anywhere in ``path`` (relative imports resolved)."""
    rel = path.relative_to(ROOT).with_suffix("")
    package = list(rel.parts[:-1])
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names.append(module)
            # `from polyglot_groc import training` imports the subpackage too.
            names += [f"{module}.{alias.name}" for alias in node.names]
    return names


def _files(scope: str) -> list[Path]:
    target = ROOT / scope
    return [target] if target.suffix == ".py" else sorted(target.rglob("*.py"))


def _violations(scope: str, forbidden: set[str]) -> list[str]:
    bad = []
    for path in _files(scope):
        for name in _imports(path):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


@pytest.mark.parametrize("scope", sorted(FORBIDDEN))
def test_imports_run_one_way(scope: str) -> None:
    assert _files(scope), f"{scope} has no modules: update FORBIDDEN after a move"
    assert _violations(scope, FORBIDDEN[scope]) == []


def test_only_cli_imports_commands() -> None:
    offenders = []
    for path in sorted((ROOT / "polyglot_groc").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("polyglot_groc/commands/") or rel == "polyglot_groc/cli.py":
            continue
        offenders += _violations(rel, {"polyglot_groc.commands"})
    assert offenders == []


def test_the_checker_sees_lazy_and_relative_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard against a checker that passes because it sees nothing."""
    pkg = tmp_path / "polyglot_groc" / "model"
    pkg.mkdir(parents=True)
    (pkg / "bad.py").write_text("def f():\n    from ..training import trainer\n    import polyglot_groc.cli\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    bad = _violations("polyglot_groc/model", FORBIDDEN["polyglot_groc/model"])
    assert len(bad) == 3  # polyglot_groc.training, polyglot_groc.training.trainer, polyglot_groc.cli


def test_top_level_stays_small() -> None:
    """The package faces only: new code goes into a room (model, training, elmo, analysis, commands)."""
    modules = sorted(p.name for p in (ROOT / "polyglot_groc").glob("*.py"))
    assert len(modules) <= 12, modules
    rooms = {p.name for p in (ROOT / "polyglot_groc").iterdir() if (p / "__init__.py").exists()}
    assert {"model", "training", "elmo", "analysis", "commands"} <= rooms
    for room in rooms:
        doc = ast.get_docstring(ast.parse((ROOT / "polyglot_groc" / room / "__init__.py").read_text()))
        assert doc and "import" in doc, f"{room}/__init__.py must say what it owns and may import"


def test_benchmarks_share_one_helper_and_use_public_names_only() -> None:
    """Every benchmark saves its JSON through ``benchmarks.common.emit`` (a script that fronts a package,
    ``gpu_campaign.py`` for ``benchmarks/campaign/``, through its package) and no benchmark module imports
    a private name."""

    def imported(path: Path) -> list[tuple[str, str]]:
        return [(node.module or "", alias.name)
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(node, ast.ImportFrom)
                for alias in node.names]

    bench = ROOT / "benchmarks"
    scripts = sorted(p for p in bench.glob("*.py") if p.name not in {"__init__.py", "common.py"})
    assert scripts
    for path in scripts:
        names = imported(path)
        packages = {m.split(".")[1] for m, _ in names if m.startswith("benchmarks.")}
        fronted = {pkg for pkg in packages if (bench / pkg).is_dir()}
        names += [n for pkg in fronted for module in sorted((bench / pkg).rglob("*.py")) for n in imported(module)]
        assert ("benchmarks.common", "emit") in names, f"{path.name} must save results through common.emit"
    for path in sorted(p for p in bench.rglob("*.py") if p.name != "__init__.py"):
        names = imported(path)
        private = [f"{m}.{n}" for m, n in names if n.startswith("_") and m.split(".")[0] != "__future__"]
        private += [f"{m}" for m, _ in names if any(part.startswith("_") for part in m.split("."))
                    and m != "__future__"]
        assert private == [], f"{path.relative_to(ROOT)} reaches into private names: {private}"


def test_benchmark_modules_stay_short() -> None:
    """No benchmark module does several jobs: each is at most 800 lines (the GPU campaign is a package)."""
    long = {str(p.relative_to(ROOT)): n for p in sorted((ROOT / "benchmarks").rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 800}
    assert long == {}, long


def test_workflows_live_in_the_library_and_commands_are_thin() -> None:
    """Every public workflow is a library function (polyglot_groc.api), and no command defines one: a
    command module's functions parse, call one workflow, print; no body is longer than a screen (the
    option declarations of a signature are not counted)."""
    from polyglot_groc import api

    for name in ("train", "resume", "finetune", "init_from_elmo", "evaluate", "tune_cache", "freq_bins", "curves",
                 "export", "align", "similarity", "lexicon_coverage"):
        module = getattr(api, name).__module__
        assert module.startswith(("polyglot_groc.training", "polyglot_groc.elmo", "polyglot_groc.analysis")), name
    too_long = []
    for path in sorted((ROOT / "polyglot_groc" / "commands").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef) or node.end_lineno is None:
                continue
            body = node.body[1:] if ast.get_docstring(node) else node.body
            length = node.end_lineno - body[0].lineno + 1 if body else 0
            if length > 60:
                too_long.append(f"{path.name}:{node.name} ({length} lines)")
    assert too_long == [], too_long


def test_one_iso_639_table() -> None:
    """The ISO 639 table lives once, in the base; lexicons re-exports it and langpairs derives its codes from it."""
    from groc_base.languages import ISO639_1_TO_3, to_iso3
    from langpairs.registry import BUILTIN_LANGUAGES
    from lexicons import protocol

    assert protocol.ISO639_1_TO_3 is ISO639_1_TO_3
    assert all(lang.iso3 == to_iso3(lang.code) for lang in BUILTIN_LANGUAGES)
    defining = [p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
                if ".git" not in p.parts and p.parts[-2] != "tests"
                and "ISO639_1_TO_3: dict" in p.read_text(encoding="utf-8")]
    assert defining == ["groc_base/languages.py"], defining


def test_the_api_loads_no_alignment_engine_until_an_alignment_runs() -> None:
    """Training needs neither faiss nor the alignment code: a GPU machine that lacks faiss still trains
    (the GPU campaign's dry run blocks it), and `import polyglot_groc.api` stays light."""
    import subprocess
    import sys

    code = ("import sys, polyglot_groc.api; print(sorted(m for m in ('faiss', 'eval.knn', "
            "'polyglot_groc.analysis.alignment_report') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent)
    assert out.stdout.strip() == "[]"
