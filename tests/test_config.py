from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from groc_base.errors import ConfigError
from polyglot_groc.config import dump_toml, from_dict, load_config


def test_overrides_are_typed() -> None:
    cfg = load_config(None, ["model.d=64", "train.lr=0.002", "data.langs=en,fr", "model.output.depth=2"])
    assert cfg.model.d == 64 and cfg.train.lr == 0.002 and cfg.data.langs == ("en", "fr")
    assert cfg.model.output.depth == 2


def test_toml_roundtrip(tmp_path: Path) -> None:
    cfg = load_config(None, ["model.kind=\"lookup\"", "model.surface.filters=[[1, 4], [2, 8]]"])
    path = tmp_path / "c.toml"
    path.write_text(dump_toml(cfg), encoding="utf-8")
    assert load_config(path) == cfg
    assert from_dict(tomllib.loads(dump_toml(cfg))) == cfg


@pytest.mark.parametrize("override, needle", [
    ("model.d=abc", "model.d"),
    ("model.nope=1", "nope"),
    ("model.kind=\"transformer\"", "transformer"),
    ("train.lr=-1", "train.lr"),
    ("model.prefix.dropout=1.5", "dropout"),
    ("garbage", "section.key=value"),
    ("model.charset.max_word_len=3", "max_word_len"),
])
def test_malformed_values_name_the_key(override: str, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle):
        load_config(None, [override])


def test_bad_toml_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[model\nd = ", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
