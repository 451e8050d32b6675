"""Language registry: the ten thesis languages, related pairs, config additions, --langs parsing."""

from __future__ import annotations

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from groc_base.errors import ConfigError, UnknownLanguageError
from langpairs.registry import (
    RELATED,
    Language,
    LanguageRegistry,
    default_registry,
    parse_lang_spec,
)


def test_ten_thesis_languages_with_table_5_1_families() -> None:
    reg = default_registry()
    assert reg.codes == ("en", "fr", "de", "nl", "it", "es", "id", "tl", "uk", "ru")
    assert reg.get("de") == Language("de", "deu", "German", "Latin", "West Germanic", stanza_lang="de",
                                     fallback="en")
    assert reg.get("tl").iso3 == "tgl" and reg.get("tl").family == "Malayo-Polynesian"
    assert reg.get("uk").script == "Cyrillic" and reg.get("ru").family == "East Slavic"
    assert reg.get("en").family == reg.get("fr").family == "Indo-European"
    assert reg.get("EN").code == "en"  # codes are case-insensitive


def test_related_pairs_are_symmetric() -> None:
    assert RELATED["fr"] == "en" and RELATED["en"] == "fr"
    assert {frozenset(p) for p in RELATED.items()} == {
        frozenset(p) for p in [("fr", "en"), ("de", "nl"), ("it", "es"), ("id", "tl"), ("uk", "ru")]
    }
    assert all(RELATED[RELATED[c]] == c for c in RELATED)


def test_unknown_code_lists_known_codes_and_the_fix() -> None:
    with pytest.raises(UnknownLanguageError) as info:
        default_registry().get("xx")
    message = str(info.value)
    assert "'xx'" in message and "en, fr, de, nl, it, es, id, tl, uk, ru" in message
    assert "[languages." in message and "\n" not in message


def test_add_refuses_silent_override() -> None:
    reg = default_registry()
    pt = Language("pt", "por", "Portuguese", "Latin", "Italo-Western Romance")
    reg.add(pt)
    assert reg.get("pt") is pt
    with pytest.raises(ConfigError, match="replace=True"):
        reg.add(pt)
    with pytest.raises(ConfigError, match="tokenizer"):
        Language("pt", "por", "Portuguese", "Latin", "Romance", tokenizer="spacy")


def test_from_config_adds_and_overrides_languages() -> None:
    doc = tomllib.loads(
        """
        [languages.pt]
        iso3 = "por"
        name = "Portuguese"
        script = "Latin"
        family = "Italo-Western Romance"
        tokenizer = "auto"
        related = "es"

        [languages.en]
        tokenizer = "toktok"
        """
    )
    reg = LanguageRegistry.from_config(doc)
    assert reg.get("pt").tokenizer == "auto" and reg.related_to("pt") == "es"
    assert reg.related_to("es") == "it"  # an existing pair is not broken by the new one
    assert reg.get("en").tokenizer == "toktok" and reg.get("en").family == "Indo-European"
    assert parse_lang_spec("pt", "related", registry=reg) == ("pt", "es")
    # the built-in registry is untouched
    assert "pt" not in default_registry()


@pytest.mark.parametrize(
    ("section", "match"),
    [({"pt": {"name": "Portuguese"}}, "needs iso3"), ({"en": {"colour": "red"}}, "unknown key")],
)
def test_from_config_rejects_incomplete_sections(section: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        LanguageRegistry.from_config({"languages": section})


@pytest.mark.parametrize(
    ("langs", "with_", "expected"),
    [
        ("en,fr", None, ("en", "fr")),
        ("fr", "related", ("fr", "en")),
        ("it", "en", ("it", "en")),
        ("en", "related", ("en", "fr")),
        ("de, nl ,de", None, ("de", "nl")),
        ("uk,ru", "related", ("uk", "ru")),
        ("fr,tl", "related", ("fr", "tl", "en", "id")),
        ("en", "en", ("en",)),
    ],
)
def test_parse_lang_spec(langs: str, with_: str | None, expected: tuple[str, ...]) -> None:
    assert parse_lang_spec(langs, with_) == expected


@pytest.mark.parametrize("langs", ["", " , ", ","])
def test_parse_lang_spec_empty_is_an_error(langs: str) -> None:
    with pytest.raises(ConfigError, match="no languages"):
        parse_lang_spec(langs)


def test_parse_lang_spec_validates_every_code() -> None:
    with pytest.raises(UnknownLanguageError, match="'zz'"):
        parse_lang_spec("en,zz")
    with pytest.raises(UnknownLanguageError, match="'qq'"):
        parse_lang_spec("en", "qq")


def test_related_without_partner_says_how_to_fix() -> None:
    reg = default_registry()
    reg.add(Language("pt", "por", "Portuguese", "Latin", "Italo-Western Romance"))
    with pytest.raises(ConfigError, match="no related language"):
        parse_lang_spec("pt", "related", registry=reg)
