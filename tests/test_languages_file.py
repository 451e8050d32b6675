"""A languages file: users add languages (name, iso3, script, related, wordnets, tokenizer) without code."""

from __future__ import annotations

from pathlib import Path

import pytest

from groc_base.errors import ConfigError, UnknownLanguageError
from langpairs.registry import (
    LANGUAGES_ENV,
    LanguageRegistry,
    default_registry,
    load_registry,
    parse_lang_spec,
    read_languages_file,
)

CEB = """
[languages.ceb]
name = "Cebuano"
iso3 = "ceb"
script = "Latin"
family = "Central Philippine"
related = ["tl", "id"]
wordnets = ["ceb-wn:1.0"]
apostrophe = "elision"
fallback = "en"
"""


def _file(tmp_path: Path, text: str, name: str = "languages.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_adds_languages_to_the_built_in_ten(tmp_path: Path) -> None:
    reg = load_registry(_file(tmp_path, CEB), env=False)
    ceb = reg.get("ceb")
    assert reg.codes[:10] == default_registry().codes and reg.codes[10:] == ("ceb",)
    assert (ceb.name, ceb.iso3, ceb.script, ceb.family) == ("Cebuano", "ceb", "Latin", "Central Philippine")
    assert ceb.wordnets == ("ceb-wn:1.0",) and ceb.fallback == "en" and ceb.apostrophe == "elision"
    assert ceb.tokenizer == "toktok"  # the deterministic default
    assert reg.partners("ceb") == ("tl", "id") and reg.related_to("ceb") == "tl"
    assert reg.partners("tl") == ("id",)  # a built-in pair is kept
    assert parse_lang_spec("ceb", "related", registry=reg) == ("ceb", "tl", "id")
    assert parse_lang_spec("ceb", "en,related", registry=reg) == ("ceb", "en", "tl", "id")


def test_minimal_section_and_defaults(tmp_path: Path) -> None:
    reg = load_registry(_file(tmp_path, '[languages.pam]\nname = "Kapampangan"\niso3 = "pam"\nscript = "Latin"\n'),
                        env=False)
    pam = reg.get("pam")
    assert pam.family == "unspecified" and pam.fallback is None and pam.wordnets == () and reg.partners("pam") == ()
    with pytest.raises(ConfigError, match=r"related = \[") as info:
        parse_lang_spec("pam", "related", registry=reg)
    assert "languages='FILE'" in str(info.value)  # from Python the keyword; the CLI names --languages FILE


def test_the_environment_variable_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LANGUAGES_ENV, str(_file(tmp_path, CEB)))
    assert "ceb" in load_registry()
    assert "ceb" not in load_registry(env=False)
    monkeypatch.setenv(LANGUAGES_ENV, "")
    assert "ceb" not in load_registry()


def test_config_sections_win_over_the_file(tmp_path: Path) -> None:
    reg = load_registry(_file(tmp_path, CEB), config={"ceb": {"tokenizer": "whitespace"}}, env=False)
    assert reg.get("ceb").tokenizer == "whitespace" and reg.get("ceb").name == "Cebuano"


def test_config_tables_record_what_a_run_needs(tmp_path: Path) -> None:
    text = CEB + '\n[languages.hil]\nname = "Hiligaynon"\niso3 = "hil"\nscript = "Latin"\nrelated = "ceb"\n'
    reg = load_registry(_file(tmp_path, text), env=False)
    tables = reg.config_tables(["hil"])
    # hil's partner ceb is user-defined too, so it is recorded; built-in tl and id are not.
    assert list(tables) == ["hil", "ceb"]
    assert tables["hil"] == {"iso3": "hil", "name": "Hiligaynon", "script": "Latin", "related": ["ceb"]}
    assert tables["ceb"]["wordnets"] == ["ceb-wn:1.0"] and tables["ceb"]["related"] == ["tl", "id"]
    assert reg.config_tables(["en", "fr"]) == {}
    # The tables alone rebuild the same languages (what evaluate and --resume do).
    again = LanguageRegistry.from_config(tables)
    assert again.get("ceb") == reg.get("ceb") and again.partners("hil") == ("ceb",)


@pytest.mark.parametrize(("text", "needle"), [
    ('[languages.pam]\nname = "Kapampangan"\n', "needs iso3, script"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = 3\n', "'script'"),
    ('[languages.pam]\nname = "K"\niso3 = "pampanga"\nscript = "Latin"\n', "three-letter"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = "Latin"\ncolour = "red"\n', "unknown key"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = "Latin"\nrelated = "zz"\n', "'zz'"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = "Latin"\nrelated = 3\n', "related must be"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = "Latin"\ntokenizer = "spacy"\n', "toktok"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = "Latin"\nwordnets = 3\n', "wordnets"),
    ('[languages.pam]\nname = "K"\niso3 = "pam"\nscript = "Latin"\nfallback = "fr"\n', "fallback"),
    ('[languages."pa m"]\nname = "K"\niso3 = "pam"\nscript = "Latin"\n', "invalid language code"),
    ('[languages.pam\nname = "K"\n', "not valid toml"),
    ('name = "K"\n', "top-level"),
    ('', "no [languages.<code>] section"),
])
def test_bad_files_are_one_line_naming_the_file(tmp_path: Path, text: str, needle: str) -> None:
    path = _file(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        read_languages_file(path)
    message = str(info.value)
    assert needle.lower() in message.lower() and str(path) in message and "\n" not in message


def test_a_missing_file_names_the_option_and_variable(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="check languages or") as info:
        load_registry(tmp_path / "nope.toml")
    assert LANGUAGES_ENV in str(info.value)


def test_unknown_codes_say_how_to_add_one_without_naming_python() -> None:
    with pytest.raises(UnknownLanguageError) as info:
        parse_lang_spec("ceb")
    message = str(info.value)
    assert "[languages.ceb]" in message and "languages='FILE'" in message and LANGUAGES_ENV in message
    assert "LanguageRegistry" not in message and "SourceGroup" not in message
