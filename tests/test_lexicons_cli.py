"""The ``lexicon`` typer sub-app, driven through CliRunner on hand-written fixtures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.commands.lexicon import app

DATA = Path(__file__).parent / "data" / "lexicon"
runner = CliRunner()


def _json(output: str) -> dict:
    return json.loads(output[output.index("{") :])


def _one_line_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


def test_info_lists_installed_lexicons(wn_dir: Path) -> None:
    result = runner.invoke(app, ["info", "--wn-dir", str(wn_dir), "--json"])
    assert result.exit_code == 0, result.output
    specs = {row["spec"]: row for row in _json(result.output)["lexicons"]}
    assert specs["test-fr:1"]["language"] == "fr" and specs["test-en:1"]["synsets"] == 9
    table = runner.invoke(app, ["info", "--wn-dir", str(wn_dir)])
    assert table.exit_code == 0 and "test-en:1" in table.output


def test_lookup_prints_forms(wn_dir: Path) -> None:
    result = runner.invoke(app, ["lookup", "chien", "--lang", "fr", "--wn-dir", str(wn_dir), "--json"])
    assert result.exit_code == 0, result.output
    out = _json(result.output)
    assert out["lang"] == "fr"
    assert out["related"] == ["canis familiaris", "chiot", "chien de chasse"]
    assert out["definition"][:4] == ["a", "member", "of", "the"] and len(out["used_definition"]) == 10
    tsv = runner.invoke(
        app, ["lookup", "chat", "--lang", "en,fr", "--backend", "tsv", "--tsv", str(DATA / "mini-en-fr.tsv"), "--json"]
    )
    assert tsv.exit_code == 0 and _json(tsv.output)["lang"] == "fr"


def test_coverage_table_and_json(tmp_path: Path, wn_dir: Path) -> None:
    (tmp_path / "en").mkdir()
    (tmp_path / "en" / "train.txt").write_text("the dog chased the puppy\nthe dogs and a wolf\n", encoding="utf-8")
    (tmp_path / "fr").mkdir()
    with gzip.open(tmp_path / "fr" / "train.txt.gz", "wt", encoding="utf-8") as fh:
        fh.write("le chien et le chiot\n")
    result = runner.invoke(
        app, ["coverage", "--data", str(tmp_path), "--langs", "en,fr", "--wn-dir", str(wn_dir), "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = {row["lang"]: row for row in _json(result.output)["coverage"]}
    # en types: the dog chased puppy dogs and a wolf -> dog, chased (chase), puppy, dogs, wolf
    assert rows["en"]["types"] == 8 and rows["en"]["entry_pct"] == pytest.approx(62.5)
    assert rows["fr"]["types"] == 4 and rows["fr"]["definition_pct"] == pytest.approx(50.0)
    assert rows["fr"]["related_in_vocab_pct"] == pytest.approx(25.0)  # chien -> chiot
    table = runner.invoke(app, ["coverage", "--data", str(tmp_path), "--langs", "en", "--wn-dir", str(wn_dir)])
    assert table.exit_code == 0 and "coverage" in table.output


def test_user_errors_are_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wn_dir: Path) -> None:
    assert "lexicon import" in _one_line_error(runner.invoke(app, ["info", "--wn-dir", str(tmp_path / "none")]))
    _one_line_error(runner.invoke(app, ["coverage", "--data", str(tmp_path), "--wn-dir", str(wn_dir)]))
    _one_line_error(runner.invoke(app, ["lookup", "dog", "--backend", "tsv", "--tsv", str(tmp_path / "x.tsv")]))
    _one_line_error(runner.invoke(app, ["lookup", "dog", "--specs", "omw-xx:9", "--wn-dir", str(wn_dir)]))
    monkeypatch.delenv("POLYGLOT_GROC_DATA", raising=False)
    _one_line_error(runner.invoke(app, ["import", "--data", str(tmp_path), "--wn-dir", str(tmp_path / "wn")]))

    import wn

    def offline(*args: object, **kwargs: object) -> None:
        raise OSError("network is unreachable")

    monkeypatch.setattr(wn, "download", offline)
    line = _one_line_error(runner.invoke(app, ["download", "omw-en:1.4", "--wn-dir", str(tmp_path / "wn")]))
    assert "polyglot-groc lexicon import" in line
