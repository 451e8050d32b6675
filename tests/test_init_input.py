"""Seed 003 input initialisation: .vec loading, frozen input table, pretrain-vectors, bad files (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.config import load_config
from polyglot_groc.training.trainer import Trainer
from tests.conftest import SMALL, SMALL_OVERRIDES, TINY

runner = CliRunner()


def _sets() -> list[str]:
    return [x for s in SMALL for x in ("--set", s)]


def _vec(path: Path, rows: list[tuple[str, list[float]]], header: str | None = None) -> Path:
    dim = len(rows[0][1])
    lines = [header or f"{len(rows)} {dim}"] + [w + " " + " ".join(map(str, v)) for w, v in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _words() -> list[str]:
    return (TINY / "en" / "train.txt").read_text(encoding="utf-8").split()[:3]


def test_init_and_freeze_keep_the_input_table_bit_identical(tmp_path: Path) -> None:
    w = list(dict.fromkeys(_words()))
    vec = _vec(tmp_path / "v.vec", [(x, [0.5 + i] * 16) for i, x in enumerate(w)] + [("zzz-absent", [9.0] * 16)])
    cfg = load_config(None, {**SMALL_OVERRIDES, "model.kind": "untied", "data.root": TINY, "data.langs": ["en"],
                             "model.init_input": vec, "model.freeze_input": True, "train.max_steps": 3,
                             "train.eval_every": 3})
    tr = Trainer(cfg, tmp_path / "run")
    table = tr.model.input_embedder.weight
    assert torch.equal(table[tr.bundle.vocab.id(w[0])], torch.full((16,), 0.5))
    before = table.detach().clone()
    bias_before = tr.model.bias.b.detach().clone()
    out_before = tr.model.output_embedder.weight.detach().clone()
    tr.fit()
    assert torch.equal(tr.model.input_embedder.weight, before)
    assert not torch.equal(tr.model.bias.b, bias_before)  # the bias is never frozen (seed 003 fn. 1)
    assert not torch.equal(tr.model.output_embedder.weight, out_before)


def test_groc_ignores_init_input_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    vec = _vec(tmp_path / "v.vec", [(_words()[0], [1.0] * 16)])
    cfg = load_config(None, {**SMALL_OVERRIDES, "model.kind": "groc", "data.root": TINY, "data.langs": ["en"],
                             "model.init_input": vec})
    Trainer(cfg, tmp_path / "run")
    assert "initialises nothing" in caplog.text


@pytest.mark.parametrize("case, needle", [
    ("dim", "model.d=16"),
    ("duplicate", "duplicate"),
    ("header", "header"),
])
def test_bad_vec_files_exit_2_with_one_line(tmp_path: Path, case: str, needle: str) -> None:
    w = _words()[0]
    if case == "dim":
        vec = _vec(tmp_path / "v.vec", [(w, [1.0] * 8)])
    elif case == "duplicate":
        vec = _vec(tmp_path / "v.vec", [(w, [1.0] * 16), (w, [2.0] * 16)])
    else:
        vec = _vec(tmp_path / "v.vec", [(w, [1.0] * 16)], header="5 16")
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r"),
                              "--model", "tied", "--untie", "--init-input", str(vec), "--freeze-input",
                              "--max-steps", "2", *_sets()])
    assert res.exit_code == 2, res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and needle in lines[0], res.output


def test_pretrain_vectors_then_train_with_them(tmp_path: Path) -> None:
    vec = tmp_path / "en.vec"
    res = runner.invoke(app, ["pretrain-vectors", "--data", str(TINY), "--langs", "en", "--out", str(vec),
                              "--dim", "16", "--epochs", "1"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["words"] > 0
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r"),
                              "--model", "tied", "--untie", "--init-input", str(vec), "--freeze-input",
                              "--max-steps", "2", *_sets()])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output[res.output.index("{"):])
    assert summary["n_params_split"]["total"] == summary["n_params"]
    ev = runner.invoke(app, ["evaluate", str(tmp_path / "r"), "--split", "test", "--batch-size", "2"])
    assert ev.exit_code == 0, ev.output
    assert json.loads(ev.output)["n_params"]["total"] == summary["n_params"]
