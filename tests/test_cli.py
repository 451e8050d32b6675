from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from polyglot_groc.cli import app
from tests.conftest import SMALL, TINY

runner = CliRunner()


def _sets() -> list[str]:
    out: list[str] = []
    for s in SMALL:
        out += ["--set", s]
    return out


def _train(data: Path, out: Path, *extra: str) -> object:
    return runner.invoke(app, ["train", "--langs", "en,fr", "--data", str(data), "--out", str(out),
                               "--max-steps", "4", *_sets(), *extra])


def test_train_then_evaluate(tmp_path: Path) -> None:
    res = _train(TINY, tmp_path / "run")
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["steps"] == 4 and set(summary["best_valid_perplexity"]) == {"en", "fr"}
    ev = runner.invoke(app, ["evaluate", str(tmp_path / "run"), "--split", "test", "--batch-size", "3"])
    assert ev.exit_code == 0, ev.output
    out = json.loads(ev.stdout[ev.stdout.index("{"):])
    assert set(out["perplexity"]) == {"en", "fr"} and out["details"]["en"]["batch_size"] == 3
    assert all(v > 1 for v in out["perplexity"].values())


def test_with_related_resolves_pair(tmp_path: Path) -> None:
    res = runner.invoke(app, ["train", "--langs", "fr", "--with", "related", "--data", str(TINY),
                              "--out", str(tmp_path / "r"), "--max-steps", "1", *_sets(), "--model", "lookup"])
    assert res.exit_code == 0, res.output
    assert "'en'" in (tmp_path / "r" / "config.toml").read_text().replace('"', "'")


def _corpus(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    shutil.copytree(TINY, data)
    return data


@pytest.mark.parametrize("case, needle", [
    ("missing", "valid"),
    ("empty", "empty"),
    ("latin1", "utf-8"),
])
def test_bad_corpus_exit_2(tmp_path: Path, case: str, needle: str) -> None:
    data = _corpus(tmp_path)
    target = data / "fr" / "valid.txt"
    if case == "missing":
        target.unlink()
    elif case == "empty":
        target.write_text("", encoding="utf-8")
    else:
        target.write_bytes("le ch\xe2teau .\n".encode("latin-1"))
    res = _train(data, tmp_path / "run")
    assert res.exit_code == 2
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and needle in errors[0].lower()


def test_unknown_language_exit_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["train", "--langs", "en,xx", "--data", str(TINY), "--out", str(tmp_path / "r")])
    assert res.exit_code == 2 and "xx" in res.stderr and "known" in res.stderr


def test_malformed_config_value_exit_2(tmp_path: Path) -> None:
    res = _train(TINY, tmp_path / "run", "--set", "model.d=big")
    assert res.exit_code == 2 and "model.d" in res.stderr


def test_existing_run_dir_exit_2_then_overwrite(tmp_path: Path) -> None:
    assert _train(TINY, tmp_path / "run").exit_code == 0
    res = _train(TINY, tmp_path / "run")
    assert res.exit_code == 2 and "--overwrite" in res.stderr
    assert _train(TINY, tmp_path / "run", "--overwrite").exit_code == 0


def test_evaluate_missing_run_exit_2(tmp_path: Path) -> None:
    res = runner.invoke(app, ["evaluate", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "does not exist" in res.stderr


def test_language_added_through_config(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "eu").mkdir(parents=True)
    for split in ("train", "valid", "test"):
        shutil.copyfile(TINY / "en" / f"{split}.txt", data / "eu" / f"{split}.txt")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[languages.eu]\niso3 = "eus"\nname = "Basque"\nscript = "Latin"\nfamily = "isolate"\n',
                   encoding="utf-8")
    res = runner.invoke(app, ["train", "--langs", "eu", "--data", str(data), "--out", str(tmp_path / "r"),
                              "--config", str(cfg), "--max-steps", "1", *_sets()])
    assert res.exit_code == 0, res.output
    ev = runner.invoke(app, ["evaluate", str(tmp_path / "r")])
    assert ev.exit_code == 0 and "eu" in json.loads(ev.stdout[ev.stdout.index("{"):])["perplexity"]
    bad = runner.invoke(app, ["train", "--langs", "eu", "--data", str(data), "--out", str(tmp_path / "r2")])
    assert bad.exit_code == 2 and "eu" in bad.stderr
