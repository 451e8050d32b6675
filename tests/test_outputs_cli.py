"""No command replaces an existing output silently: without --overwrite it is a one-line error, exit 2.

``train`` always refused an existing run directory; ``align``, ``export``, ``pretrain-vectors``,
``tune-cache`` and ``analyze freq-bins`` / ``curves`` now refuse their --out the same way, before
doing any work, and leave the old output untouched.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import read_vec, write_vec
from polyglot_groc.cli import app
from tests.conftest import TINY, one_error_line

runner = CliRunner()


def _align_inputs(tmp_path: Path) -> list[str]:
    rng = np.random.default_rng(0)
    n, d = 60, 4
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    write_vec(tmp_path / "s.vec", [f"w{i}" for i in range(n)], src)
    write_vec(tmp_path / "t.vec", [f"x{i}" for i in range(n)], (src @ q.T).astype(np.float32))
    (tmp_path / "d.txt").write_text("".join(f"w{i} x{i}\n" for i in range(20)), encoding="utf-8")
    return ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
            "--train-dict", str(tmp_path / "d.txt"), "--refine", "0"]


def test_align_refuses_an_existing_result_without_overwrite(tmp_path: Path) -> None:
    args = [*_align_inputs(tmp_path), "--out", str(tmp_path / "out")]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()}
    line = one_error_line(runner.invoke(app, args))
    assert "--overwrite" in line and "already exists" in line and str(tmp_path / "out") in line
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == before  # untouched
    # --overwrite replaces the result, mapped vectors of the earlier one included.
    assert runner.invoke(app, [*args, "--export-mapped"]).exit_code == 2
    assert runner.invoke(app, [*args, "--export-mapped", "--overwrite"]).exit_code == 0
    assert (tmp_path / "out" / "vectors-src.txt").is_file()
    again = runner.invoke(app, [*args, "--overwrite"])
    assert again.exit_code == 0, again.output
    assert not (tmp_path / "out" / "vectors-src.txt").exists()
    assert json.loads((tmp_path / "out" / "result.json").read_text())["src_words"] == 60


def test_align_writes_into_an_empty_directory_and_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert runner.invoke(app, [*_align_inputs(tmp_path), "--out", str(tmp_path / "empty")]).exit_code == 0
    (tmp_path / "f").write_text("x", encoding="utf-8")
    assert "not a directory" in one_error_line(runner.invoke(app, [*_align_inputs(tmp_path), "--out",
                                                                    str(tmp_path / "f")]))


def test_pretrain_vectors_refuses_an_existing_file(tmp_path: Path) -> None:
    out = tmp_path / "v.vec"
    args = ["pretrain-vectors", "--data", str(TINY), "--out", str(out), "--dim", "4", "--epochs", "1"]
    assert runner.invoke(app, args).exit_code == 0
    words, _ = read_vec(out)
    out.write_text("keep me", encoding="utf-8")
    assert "--overwrite" in one_error_line(runner.invoke(app, args))
    assert out.read_text(encoding="utf-8") == "keep me"
    assert runner.invoke(app, [*args, "--overwrite"]).exit_code == 0
    assert read_vec(out)[0] == words


@pytest.mark.parametrize("command", [
    ["export", "RUN", "--lang", "en", "--vocab"],
    ["tune-cache", "RUN", "--data", str(TINY)],
    ["analyze", "freq-bins", "RUN", "RUN", "--data", str(TINY)],
    ["analyze", "curves", "RUN"],
])
def test_file_outputs_are_refused_before_any_work(tmp_path: Path, command: list[str]) -> None:
    """The run need not even exist: the output is checked first, and left as it was."""
    out = tmp_path / "result.png"  # the figure commands take .png paths only
    out.write_text("earlier result", encoding="utf-8")
    args = [str(tmp_path / "no-run") if a == "RUN" else a for a in command]
    line = one_error_line(runner.invoke(app, [*args, "--out", str(out)]))
    assert f"{out} already exists" in line and "--overwrite" in line
    assert out.read_text(encoding="utf-8") == "earlier result"


def test_tune_cache_default_output_is_checked_too(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "tune-cache-neural.png").write_bytes(b"earlier")
    line = one_error_line(runner.invoke(app, ["tune-cache", str(run), "--data", str(TINY)]))
    assert "tune-cache-neural.png already exists" in line


def test_freq_bins_checks_the_json_written_beside_the_png(tmp_path: Path) -> None:
    (tmp_path / "bins.json").write_text("{}", encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["analyze", "freq-bins", "a", "b", "--data", str(TINY),
                                              "--out", str(tmp_path / "bins.png")]))
    assert "bins.json already exists" in line


def test_export_overwrite_replaces_the_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(run), "--max-steps", "1",
                              "--model", "lookup", "--set", "model.d=8", "--set", "train.batch_size=4",
                              "--set", "train.bptt=8", "--set", "train.eval_batch_size=2"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "en.vec"
    out.write_text("earlier", encoding="utf-8")
    args = ["export", str(run), "--lang", "en", "--vocab", "--out", str(out)]
    one_error_line(runner.invoke(app, args))
    assert runner.invoke(app, [*args, "--overwrite"]).exit_code == 0
    assert read_vec(out)[1].shape[1] == 8


def test_every_command_with_an_out_has_overwrite() -> None:
    """The kind, not the sample: a new command writing --out must take --overwrite too."""
    import typer

    def walk(cmd, path):  # type: ignore[no-untyped-def]
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, [*path, name])

    missing = []
    for path, cmd in walk(typer.main.get_command(app), []):
        opts = {o for p in cmd.params for o in p.opts}
        if "--out" in opts and "--overwrite" not in opts:
            missing.append(" ".join(path))
    assert missing == []
