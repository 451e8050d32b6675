"""``polyglot-groc data prepare``: JSON summary on stdout, one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app

runner = CliRunner()

# An empty value counts as unset for click's envvar lookup: the tests must not see the CI's root.
NO_ENV = {"POLYGLOT_GROC_DATA": ""}


def _synthetic_root(tmp_path: Path) -> Path:
    """A shared-data-shaped folder with a small Tagalog source (running text, one per line)."""
    text = tmp_path / "shared" / "text" / "palito"
    text.mkdir(parents=True)
    lines = [f"Pangungusap {i} ito ay maikli." for i in range(400)]
    (text / "wiki_parallel.tl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "shared"


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _json(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"):])


def test_prepare_synthetic_prints_summary(tmp_path: Path) -> None:
    root = _synthetic_root(tmp_path)
    out = tmp_path / "corpora"
    args = ["data", "prepare", "--data", str(root), "--out", str(out), "--langs", "tl",
            "--train-tokens", "800", "--eval-tokens", "100", "--tokenize", "toktok"]
    res = runner.invoke(app, args, env=NO_ENV)
    assert res.exit_code == 0, res.output
    summary = _json(res.stdout)
    assert summary["out"] == str(out) and Path(summary["manifest"]).is_file()
    tl = summary["languages"]["tl"]
    assert tl["tokenizer"] == "toktok" and tl["short"] is False and tl["sources"] == ["palito/wiki_parallel.tl"]
    for split, budget in (("train", 800), ("valid", 100), ("test", 100)):
        written = (out / "tl" / f"{split}.txt").read_text(encoding="utf-8").split()
        assert tl["splits"][split]["tokens"] == len(written)
        assert abs(len(written) - budget) <= 8  # within one sentence of the budget
    # A rerun refuses to replace the corpus without --overwrite, and changes nothing.
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    again = runner.invoke(app, [*args], env=NO_ENV)
    assert again.exit_code == 2 and "--overwrite" in again.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    # --full prints the manifest file itself (sources, digests), unchanged by a rerun.
    full = runner.invoke(app, [*args, "--full", "--overwrite"], env=NO_ENV)
    assert full.exit_code == 0, full.output
    assert _json(full.stdout) == json.loads(Path(summary["manifest"]).read_text(encoding="utf-8"))
    assert "sha256" in _json(full.stdout)["languages"]["tl"]["splits"]["train"]


def test_env_var_gives_the_data_root(tmp_path: Path) -> None:
    root = _synthetic_root(tmp_path)
    res = runner.invoke(app, ["data", "prepare", "--out", str(tmp_path / "c"), "--langs", "tl",
                              "--train-tokens", "300", "--eval-tokens", "50", "--tokenize", "toktok"],
                        env={"POLYGLOT_GROC_DATA": str(root)})
    assert res.exit_code == 0, res.output
    assert (tmp_path / "c" / "tl" / "test.txt").is_file()


@pytest.mark.parametrize("case, needle", [
    ("unset", "polyglot_groc_data"),
    ("missing", "does not exist"),
    ("not-shared", "text/leipzig"),
    ("unknown-lang", "'xx'"),
    ("bad-budget", "train-tokens"),
    ("no-langs", "no languages"),
])
def test_user_errors_exit_2_one_line(tmp_path: Path, case: str, needle: str) -> None:
    root = _synthetic_root(tmp_path)
    langs, budget, root_args = "tl", "500", ["--data", str(root)]
    if case == "unset":
        root_args = []
    elif case == "missing":
        root_args = ["--data", str(tmp_path / "nowhere")]
    elif case == "not-shared":
        root_args = ["--data", str(tmp_path)]  # exists, but holds no text/ sources
    elif case == "unknown-lang":
        langs = "tl,xx"
    elif case == "bad-budget":
        budget = "0"
    else:
        langs = " , "
    res = runner.invoke(app, ["data", "prepare", *root_args, "--out", str(tmp_path / "out"), "--langs", langs,
                              "--train-tokens", budget, "--tokenize", "toktok"], env=NO_ENV)
    assert res.exit_code == 2, res.output
    errors = _errors(res.stderr)
    assert len(errors) == 1 and needle in errors[0].lower(), res.stderr
    assert "Traceback" not in res.output
    assert not (tmp_path / "out" / "tl" / "train.txt").exists()


def test_prepare_real_data(shared_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "corpora"
    res = runner.invoke(app, ["data", "prepare", "--data", str(shared_data), "--out", str(out),
                              "--langs", "en,fr", "--train-tokens", "5000", "--eval-tokens", "500"])
    assert res.exit_code == 0, res.output
    summary = _json(res.stdout)
    assert set(summary["languages"]) == {"en", "fr"}
    for lang in ("en", "fr"):
        splits = summary["languages"][lang]["splits"]
        assert abs(splits["train"]["tokens"] - 5000) < 300 and abs(splits["test"]["tokens"] - 500) < 300
        assert (out / lang / "valid.txt").stat().st_size > 0
