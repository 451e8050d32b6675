"""Every model kind works on its own defaults (seed 000 Table 8), and explicit values still win."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groc_base.errors import ConfigError
from polyglot_groc.config import KIND_DEFAULTS, load_config
from polyglot_groc.model.kinds import REGISTRY
from tests.conftest import TESTS, TINY

CONFIGS = Path(__file__).resolve().parent.parent / "polyglot_groc" / "configs"
#: Size-only overrides for a CPU test: nothing here touches [model.output], the kind's own knobs.
TINY_SIZE = ["model.d=16", "model.prefix.hidden=24", "model.surface.filters=[[1, 8], [2, 8], [3, 16]]",
             "train.batch_size=4", "train.bptt=8", "train.eval_batch_size=2", "train.threads=1"]
#: groc-lex reads a lexicon (a resource, not a default): the hand-written en/fr TSV.
LEXICON = ['model.lexicon.backend="tsv"', f'model.lexicon.tsv_path="{TESTS / "data" / "lexicon" / "mini-en-fr.tsv"}"']


#: Seed 000 Table 8, the PTB (penn) columns: output embedding dropout r, cutoffs, depth k, activation
#: (the Convolutional row's correction "cor" is Table 7's 128); "Lookup table" is untied, "GroC (ours)"
#: both groc and groc-lex. The kinds' traits state these values; this is the paper's table to check them.
TABLE8_PTB: dict[str, dict[str, object]] = {
    "untied": {"dropout": 0.1}, "tied": {"dropout": 0.0}, "bilinear": {"dropout": 0.5},
    "deep-residual": {"dropout": 0.5, "depth": 4, "activation": "selu"},
    "adaptive": {"dropout": 0.3, "cutoffs": [2000, 7000]}, "conv": {"dropout": 0.1, "correction": 128},
    "groc": {"dropout": 0.2, "depth": 0}, "groc-lex": {"dropout": 0.2, "depth": 0},
}


@pytest.mark.parametrize("kind", sorted(TABLE8_PTB))
def test_kind_defaults_are_the_table8_rows(kind: str) -> None:
    """``--model X`` alone gets Table 8's PTB row (cutoffs as fractions of PTB's 10k words)."""
    out = load_config(None, {"model.kind": kind}).model.output
    for key, value in TABLE8_PTB[kind].items():
        if key == "cutoffs":
            assert [c * 10_000 for c in out.cutoffs] == pytest.approx(value)
        else:
            assert getattr(out, key) == value, (kind, key)


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("ptb_table8_*.toml")), ids=lambda p: p.stem)
def test_the_table8_files_give_their_rows(path: Path) -> None:
    """configs/ptb_table8_X.toml names the kind (its defaults are the row), adaptive with PTB's word counts."""
    cfg = load_config(path)
    row = TABLE8_PTB[cfg.model.kind]
    assert {key: getattr(cfg.model.output, key) for key in row} == {
        key: tuple(v) if isinstance(v, list) else v for key, v in row.items()}


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_every_kind_trains_on_its_defaults(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.cli import app

    monkeypatch.setenv("POLYGLOT_GROC_CACHE", str(tmp_path / "cache"))
    sets = [x for s in [*TINY_SIZE, *(LEXICON if REGISTRY[kind].traits.uses_lexicon else [])] for x in ("--set", s)]
    res = CliRunner().invoke(app, ["train", "--langs", "en,fr", "--data", str(TINY), "--out", str(tmp_path / "r"),
                                   "--model", kind, "--max-steps", "2", *sets])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["steps"] == 2 and not summary["diverged"]
    saved = load_config(tmp_path / "r" / "config.toml")
    assert saved.model.kind == kind
    for key, value in KIND_DEFAULTS[kind].get("output", {}).items():
        got = getattr(saved.model.output, key)
        assert (list(got) if isinstance(got, tuple) else got) == value


def test_the_presets_leave_the_output_net_to_the_kind() -> None:
    for preset in ("quickstart.toml", "paper.toml"):
        cfg = load_config(CONFIGS / preset, {"model.kind": "deep-residual"})
        assert (cfg.model.output.depth, cfg.model.output.activation) == (4, "selu")
        assert cfg.model.output.dropout == 0.5


def test_explicit_values_win_over_the_kind_defaults(tmp_path: Path) -> None:
    assert load_config(None, {"model.kind": "deep-residual", "model.output.depth": 2}).model.output.depth == 2
    conf = tmp_path / "c.toml"
    conf.write_text('[model]\nkind = "deep-residual"\n\n[model.output]\ndropout = 0.25\n', encoding="utf-8")
    cfg = load_config(conf)
    assert cfg.model.output.dropout == 0.25 and cfg.model.output.depth == 4
    # The kind is the final one, whoever set it: the file's groc, then an override's tied.
    assert load_config(CONFIGS / "quickstart.toml", {"model.kind": "tied"}).model.output.dropout == 0.0
    with pytest.raises(ConfigError, match="depth >= 1"):
        load_config(None, {"model.kind": "deep-residual", "model.output.depth": 0})


def test_untie_gets_the_untied_kinds_defaults(tmp_path: Path) -> None:
    """--untie turns tied into untied before the defaults are chosen: r 0.1 (Table 8 lookup), not tied's 0.0."""
    from polyglot_groc.cli import app

    sets = [x for s in TINY_SIZE for x in ("--set", s)]
    res = CliRunner().invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r"),
                                   "--model", "tied", "--untie", "--max-steps", "1", *sets])
    assert res.exit_code == 0, res.output
    saved = load_config(tmp_path / "r" / "config.toml")
    assert saved.model.kind == "untied" and saved.model.output.dropout == 0.1
