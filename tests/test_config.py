from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from groc_base.errors import ConfigError
from polyglot_groc.config import dump_toml, from_dict, load_config, merge_overrides, parse_overrides


def test_overrides_are_data() -> None:
    cfg = load_config(None, {"model.d": 64, "train.lr": 0.002, "data.langs": ["en", "fr"], "model.output.depth": 2})
    assert cfg.model.d == 64 and cfg.train.lr == 0.002 and cfg.data.langs == ("en", "fr")
    assert cfg.model.output.depth == 2


def test_override_values_need_no_escaping(tmp_path: Path) -> None:
    """Paths with quotes and backslashes go in as they are (no TOML built and parsed back)."""
    odd = tmp_path / 'a "quoted" \\ dir'
    cfg = load_config(None, {"data.root": odd, "model.init_input": str(odd / "v.vec"), "model.lexicon.specs": ["x"]})
    assert cfg.data.root == str(odd) and cfg.model.init_input == str(odd / "v.vec")
    assert cfg.model.lexicon.specs == ("x",)
    assert load_config(None, {"model.output": {"depth": 2}}).model.output.depth == 2  # a whole table


def test_the_cli_strings_parse_into_the_same_mapping() -> None:
    parsed = parse_overrides(["model.d=64", "train.lr=0.002", "data.langs=en,fr", "model.output.depth=2",
                              'model.kind="lookup"', "model.surface.filters=[[1, 4], [2, 8]]", "data.screen=false"])
    assert parsed == {"model.d": 64, "train.lr": 0.002, "data.langs": "en,fr", "model.output.depth": 2,
                      "model.kind": "lookup", "model.surface.filters": [[1, 4], [2, 8]], "data.screen": False}
    cfg = load_config(None, parsed)
    assert cfg.data.langs == ("en", "fr") and cfg.model.surface.filters == ((1, 4), (2, 8))
    # A key given again keeps its last value and applies after the keys before it.
    assert list(parse_overrides(["a.b=1", "c.d=2", "a.b=3"]).items()) == [("c.d", 2), ("a.b", 3)]


def test_later_overrides_win_and_none_is_not_given() -> None:
    merged = merge_overrides({"model.output.depth": 1, "train.lr": 0.1}, {"model.output": {"depth": 3}},
                             {"train.lr": None, "model.output.depth": 2})
    assert list(merged) == ["train.lr", "model.output", "model.output.depth"]
    assert load_config(None, merged).model.output.depth == 2


def test_overrides_must_be_a_mapping() -> None:
    with pytest.raises(TypeError, match="parse_overrides"):
        load_config(None, ["model.d=64"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="malformed override key"):
        load_config(None, {"model..d": 64})


def test_kind_map_picks_the_new_kinds_defaults() -> None:
    cfg = load_config(None, {"model.kind": "tied"}, kind_map={"tied": "untied"})
    assert cfg.model.kind == "untied" and cfg.model.output.dropout == 0.1
    assert load_config(None, {"model.kind": "groc"}, kind_map={"tied": "untied"}).model.kind == "groc"


def test_toml_roundtrip(tmp_path: Path) -> None:
    cfg = load_config(None, {"model.kind": "lookup", "model.surface.filters": [[1, 4], [2, 8]]})
    path = tmp_path / "c.toml"
    path.write_text(dump_toml(cfg), encoding="utf-8")
    assert load_config(path) == cfg
    assert from_dict(tomllib.loads(dump_toml(cfg))) == cfg


#: What the hand-written writer got wrong: a newline and quotes in a path (invalid TOML), a language
#: code that needs quoting as a key (written bare) and a list of tables (a TypeError).
AWKWARD = {"data.root": "/data/two\nlines \"quoted\" \\ back", "model.lexicon.tsv_path": "tab\there",
           "languages": {" zz ": {"name": "Zed", "iso3": "zzz", "script": "Latn",
                                  "wordnets": [{"id": "a", "version": "1"}, {"id": "b"}]}}}


def test_awkward_values_round_trip_through_config_toml(tmp_path: Path) -> None:
    cfg = load_config(None, AWKWARD)
    text = dump_toml(cfg)
    assert '[languages." zz "]' in text
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    back = load_config(path)
    assert back == cfg and back.data.root == AWKWARD["data.root"]
    assert back.languages[" zz "]["wordnets"] == [{"id": "a", "version": "1"}, {"id": "b"}]


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
        load_config(None, parse_overrides([override]))


def test_bad_toml_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[model\nd = ", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_the_seeds_reproductions_pin_the_full_softmax() -> None:
    """auto samples GroC above 5,000 words now (issue 46): every PTB config and every benchmark that trains on PTB
    says which softmax it used, so their published results do not move with the default."""
    from polyglot_groc.config import CONFIGS_DIR

    for path in sorted(CONFIGS_DIR.glob("ptb_*.toml")):
        assert load_config(path).train.softmax == "full", path.name
    benchmarks = Path(__file__).resolve().parent.parent / "benchmarks"
    for path in sorted(benchmarks.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "prepare_ptb(" in text and path.name != "common.py":
            assert "FULL_SOFTMAX" in text or '"train.softmax":' in text, path.name
