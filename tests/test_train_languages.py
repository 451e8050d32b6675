"""``train --languages FILE`` (or $POLYGLOT_GROC_LANGUAGES): user languages, ``--with related`` for them,
a partner without a corpus named in one line, and the entries recorded in the run's config so
evaluate and --resume never need the file again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app
from tests.conftest import SMALL, TINY, one_error_line

runner = CliRunner()
NO_ENV = {"POLYGLOT_GROC_LANGUAGES": ""}

LANGUAGES = """
[languages.ceb]
name = "Cebuano"
iso3 = "ceb"
script = "Latin"
family = "Central Philippine"
related = ["fr"]
"""


def _sets() -> list[str]:
    return [arg for s in SMALL for arg in ("--set", s)]


def _data(tmp_path: Path, *langs: str) -> Path:
    data = tmp_path / "data"
    for lang in langs:
        source = TINY / ("fr" if lang == "fr" else "en")
        shutil.copytree(source, data / lang)
    return data


def test_user_language_with_related_is_trained_and_recorded(tmp_path: Path) -> None:
    langs = tmp_path / "languages.toml"
    langs.write_text(LANGUAGES, encoding="utf-8")
    data = _data(tmp_path, "ceb", "fr")
    run = tmp_path / "run"
    res = runner.invoke(app, ["train", "--langs", "ceb", "--with", "related", "--data", str(data), "--out", str(run),
                              "--languages", str(langs), "--max-steps", "2", *_sets()], env=NO_ENV)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert set(summary["best_valid_perplexity"]) == {"ceb", "fr"}
    config = (run / "config.toml").read_text(encoding="utf-8")
    assert "[languages.ceb]" in config and 'name = "Cebuano"' in config
    # The file is gone and no variable names it: evaluate reads the run's own record.
    langs.unlink()
    ev = runner.invoke(app, ["evaluate", str(run)], env=NO_ENV)
    assert ev.exit_code == 0, ev.output
    assert set(json.loads(ev.stdout[ev.stdout.index("{"):])["perplexity"]) == {"ceb", "fr"}
    resumed = runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "3"], env=NO_ENV)
    assert resumed.exit_code == 0, resumed.output


def test_the_environment_variable_names_the_languages_file(tmp_path: Path) -> None:
    langs = tmp_path / "languages.toml"
    langs.write_text(LANGUAGES, encoding="utf-8")
    data = _data(tmp_path, "ceb")
    res = runner.invoke(app, ["train", "--langs", "ceb", "--data", str(data), "--out", str(tmp_path / "r"),
                              "--max-steps", "1", *_sets()], env={"POLYGLOT_GROC_LANGUAGES": str(langs)})
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(("case", "needle"), [
    ("unknown", "[languages.ceb]"),
    ("related-without-corpus", "'fr' is the related language of 'ceb'"),
    ("builtin-related-without-corpus", "'en' is the related language of 'fr'"),
    ("bad-file", "needs iso3"),
    ("missing-file", "does not exist"),
])
def test_bad_input_is_one_line_and_no_run(tmp_path: Path, case: str, needle: str) -> None:
    langs = tmp_path / "languages.toml"
    langs.write_text(LANGUAGES, encoding="utf-8")
    data = _data(tmp_path, "ceb", "fr")
    args = ["--langs", "ceb", "--with", "related", "--languages", str(langs)]
    if case == "unknown":
        args = ["--langs", "ceb"]
    elif case == "related-without-corpus":
        shutil.rmtree(data / "fr")
    elif case == "builtin-related-without-corpus":
        args = ["--langs", "fr", "--with", "related"]
    elif case == "bad-file":
        langs.write_text('[languages.ceb]\nname = "Cebuano"\n', encoding="utf-8")
    else:
        langs.unlink()
    run = tmp_path / "run"
    res = runner.invoke(app, ["train", *args, "--data", str(data), "--out", str(run), "--max-steps", "1", *_sets()],
                        env=NO_ENV)
    line = one_error_line(res)
    assert needle in line and "langpairs." not in line, line
    assert not run.exists()
