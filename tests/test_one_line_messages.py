"""Errors and warnings on stderr are one line each, however long, and each is said once."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest
import typer
from typer.testing import CliRunner

from eval.vectors import write_vec
from groc_base.errors import InputError
from polyglot_groc.cli import app
from polyglot_groc.commands._common import cli_errors, setup_logging, warn

runner = CliRunner()
LONG = " ".join(f"word{i}" for i in range(60))  # ~400 characters: wider than any terminal default


def _vectors(tmp_path: Path) -> Path:
    write_vec(tmp_path / "s.vec", ["a", "b", "c"], np.array([[1, 0], [0, 1], [1, 1]], dtype=np.float32))
    return tmp_path / "s.vec"


def _deep(tmp_path: Path) -> Path:
    """A folder whose path alone is longer than a terminal line."""
    deep = tmp_path.joinpath(*(["a-rather-long-folder-name"] * 5))
    deep.mkdir(parents=True)
    return deep


def test_similarity_empty_dataset_error_once_on_one_line(tmp_path: Path) -> None:
    empty = _deep(tmp_path) / "empty.txt"
    empty.write_text("", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(_vectors(tmp_path)), "--dataset", str(empty)])
    assert res.exit_code == 2, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) > 120, res.stderr
    assert res.stderr.count("no single-word pairs") == 1 and str(empty) in lines[0]
    assert res.stdout == ""


def test_similarity_all_datasets_fail_one_error_naming_each(tmp_path: Path) -> None:
    deep = _deep(tmp_path)
    (deep / "empty.txt").write_text("", encoding="utf-8")
    (deep / "bad.txt").write_text("a b high\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(_vectors(tmp_path)),
                              "--dataset", str(deep / "empty.txt"), "--dataset", str(deep / "bad.txt")])
    assert res.exit_code == 2
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: none of the 2 datasets"), res.stderr
    assert res.stderr.count("no single-word pairs") == 1 and res.stderr.count("non-numeric score") == 1


def test_similarity_one_bad_dataset_is_one_warning_and_the_rest_scored(tmp_path: Path) -> None:
    deep = _deep(tmp_path)
    (deep / "empty.txt").write_text("", encoding="utf-8")
    (deep / "good.txt").write_text("a b 1\nb c 2\na c 3\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(_vectors(tmp_path)),
                              "--dataset", str(deep / "empty.txt"), "--dataset", str(deep / "good.txt")])
    assert res.exit_code == 0, res.output
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: dataset empty.txt skipped"), res.stderr
    assert res.stderr.count("no single-word pairs") == 1


def test_long_error_warning_and_log_records_are_never_wrapped(capsys: pytest.CaptureFixture[str]) -> None:
    @cli_errors
    def boom() -> None:
        raise InputError(f"first part\nsecond part {LONG}")

    with pytest.raises(typer.Exit) as exc:
        boom()
    assert exc.value.exit_code == 2
    warn(f"careful {LONG}")
    root = logging.getLogger()
    before = list(root.handlers), root.level
    try:
        setup_logging(verbose=False)
        setup_logging(verbose=False)  # idempotent: one handler, one line per record
        logging.getLogger("polyglot_groc.test").warning("a logged warning\n%s", LONG)
        logging.getLogger("polyglot_groc.test").error("a logged error %s", LONG)
    finally:
        root.handlers[:], root.level = before[0], before[1]
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" ", 1)[0] for line in err] == ["error:", "warning:", "warning:", "error:"], err
    assert err[0] == f"error: first part second part {LONG}"
    assert all(LONG in line for line in err)


def test_a_deprecated_option_is_one_warning(tmp_path: Path) -> None:
    # It was logged (Python's last-resort handler printed it bare) and printed again.
    write_vec(tmp_path / "t.vec", ["a", "c"], np.array([[1, 0], [0, 1]], dtype=np.float32))
    res = runner.invoke(app, ["align", "--src", str(_vectors(tmp_path)), "--tgt", str(tmp_path / "t.vec"),
                              "--seed", "identical", "--refine", "0", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if "deprecated" in line]
    assert lines == ["warning: --seed is deprecated and will be removed in the next release; use --dictionary-mode"]
