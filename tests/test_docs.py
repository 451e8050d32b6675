"""The README and docs say what the code does: the install and test commands are the ones CI runs (every
version pinned), the README stays a guide (at most 300 lines, every reference document linked), and
docs/python-api.md lists exactly the public API."""

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


def test_readme_is_a_guide_of_at_most_300_lines_linking_every_reference_document() -> None:
    assert len(README.splitlines()) <= 300
    for heading in ("## Install", "## Quick start", "## The data bundle", "## Journey 1", "## Journey 2",
                    "## Journey 3", "## Reference"):
        assert heading in README, heading
    docs = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert {"docs/commands.md", "docs/outputs.md", "docs/models.md", "docs/configuration.md", "docs/reliability.md",
            "docs/gpu.md", "docs/python-api.md"} <= set(docs)
    missing = [doc for doc in docs if f"`{doc}`" not in README]
    assert not missing, f"README.md's Reference table lacks {missing}"


def _table_names(doc: str, marker: str) -> list[str]:
    """The backquoted names in the first column of the table between ``<!-- marker:start/end -->``."""
    table = doc.split(f"<!-- {marker}:start -->", 1)[1].split(f"<!-- {marker}:end -->", 1)[0]
    rows = [line for line in table.strip().splitlines()[2:] if line.startswith("|")]
    return [name for row in rows for name in re.findall(r"`([A-Za-z_]+)`", row.split("|")[1])]


def test_the_python_api_doc_lists_exactly_the_public_api() -> None:
    """docs/python-api.md's tables hold the names of polyglot_groc.public, functions and types, in its order."""
    from polyglot_groc.public import PUBLIC

    doc = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    functions, types = _table_names(doc, "api-functions"), _table_names(doc, "api-types")
    assert functions == [name for name, kind in PUBLIC.items() if kind == "function"]
    assert types == [name for name, kind in PUBLIC.items() if kind == "type"]


#: The two-letter codes the README's bundle table uses, as the bundle's file names spell them.
_ISO3 = {"en": "eng", "fr": "fra", "de": "deu", "nl": "nld", "es": "spa", "it": "ita", "id": "ind", "ms": "zsm",
         "pt": "por", "ru": "rus", "uk": "ukr", "tl": "tgl"}


def test_the_readmes_data_bundle_table_matches_the_bundle(shared_data: Path) -> None:
    """Every data claim of the README's bundle table holds for the bundle itself (issue 46: it promised MUSE
    dictionaries for nine languages where the bundle has three)."""
    rows = dict(re.findall(r"^\| `(\w+)/` \| (.*) \|$", README, flags=re.M))
    assert set(rows) == {p.name for p in shared_data.iterdir() if p.is_dir()}
    omw_manifest = (shared_data / "omw" / "MANIFEST.txt").read_text(encoding="utf-8")
    for name in rows:  # a MANIFEST each (wordnet/'s file is described in omw's, as the README says)
        assert list((shared_data / name).glob("MANIFEST*")) or (name == "wordnet" and "wordnet/" in omw_manifest), name
    dictionaries = shared_data / "eval" / "dictionaries"
    pairs = set(re.findall(r"en↔(\w+)", rows["eval"]))
    assert pairs == {p.name.split(".")[0][3:] for p in dictionaries.glob("en-*.0-5000.txt")}
    for lang in pairs:  # both directions, train and test
        for name in (f"en-{lang}", f"{lang}-en"):
            assert all((dictionaries / f"{name}.{part}.txt").is_file() for part in ("0-5000", "5000-6500")), name
    sets = {{"English": "en", "Spanish": "es", "French": "fr"}[lang]: int(n)
            for n, lang in re.findall(r"(\d+) (English|Spanish|French)", rows["eval"])}
    assert sets == {d.name: len(list(d.glob("*.txt"))) for d in (shared_data / "eval" / "wordsim").iterdir()}
    tab = re.search(r"tab files \(([^)]*)\)", rows["omw"])
    wikt = re.search(r"Wiktionary-derived ones \(([^)]*)\)", rows["omw"])
    assert tab and wikt
    assert {_ISO3[c.strip()] for c in tab.group(1).split(",")} == {
        p.stem.rsplit("-", 1)[1] for p in (shared_data / "omw" / "tab").rglob("wn-data-*.tab")}
    assert {_ISO3[c.strip()] for c in wikt.group(1).split(",")} == {
        p.stem.rsplit("-", 1)[1] for p in (shared_data / "omw" / "wikt").glob("wn-wikt-*.tab")}
    splits = re.search(r"WikiText-2 \(([\w ]+) splits only\)", rows["text"])
    assert splits and set(splits.group(1).split()) - {"and"} == {
        p.name.split(".")[0] for p in (shared_data / "text" / "wikitext2").glob("*.txt.gz")}
