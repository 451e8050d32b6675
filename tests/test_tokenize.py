"""Tokenisers: whitespace, Toktok (no HTML escapes, Ukrainian apostrophes), auto/stanza selection."""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

import langpairs.tokenize as tok
from groc_base.errors import ConfigError, ResourceMissingError
from langpairs.tokenize import SentenceTokenizer, Tokenizer, make_tokenizer


def test_whitespace() -> None:
    t = make_tokenizer("en")
    assert t(" the  cat\tsat ") == ["the", "cat", "sat"]
    assert t.name == "whitespace" and isinstance(t, Tokenizer) and isinstance(t, SentenceTokenizer)


def test_toktok_splits_punctuation_without_html_escapes() -> None:
    t = make_tokenizer("en", "toktok")
    assert t("Fish & chips | peas, 3.5% (cheap).") == [
        "Fish", "&", "chips", "|", "peas", ",", "3.5", "%", "(", "cheap", ")", ".",
    ]


def test_toktok_keeps_ukrainian_word_apostrophes() -> None:
    assert make_tokenizer("uk", "toktok")("сім'я п’ять 'так'") == ["сім'я", "п’ять", "'", "так", "'"]
    assert make_tokenizer("en", "toktok")("don't") == ["don", "'", "t"]  # NLTK's rule elsewhere


def test_toktok_keeps_french_and_italian_elisions_on_the_left_word() -> None:
    # NLTK's Toktok gives "l ' homme"; UD French and Italian write the elided article "l'" as a token.
    fr = make_tokenizer("fr", "toktok")
    assert fr("L'homme qu’il voit, 'dit-il'.") == ["L'", "homme", "qu’", "il", "voit", ",", "'", "dit-il", "'", "."]
    assert make_tokenizer("it", "toktok")("dell'anno") == ["dell'", "anno"]
    # Any language can ask for it (a user language's `apostrophe = "elision"`), or for NLTK's split.
    assert make_tokenizer("ceb", "toktok", apostrophe="elision")("usa'g-usa") == ["usa'", "g-usa"]
    assert make_tokenizer("fr", "toktok", apostrophe="split")("l'homme") == ["l", "'", "homme"]
    with pytest.raises(ConfigError, match="split, elision, word"):
        make_tokenizer("fr", "toktok", apostrophe="keep")


def test_toktok_sentences_with_trained_punkt() -> None:
    sample = " ".join(["Це було в 276 до н. е. у Греції.", "Потім прийшли інші."] * 50)
    t = make_tokenizer("uk", "toktok", sentence_sample=sample)
    sentences = t.sentences("Це було в 276 до н. е. у Греції. Потім прийшли інші.")
    assert len(sentences) == 2 and sentences[1] == ["Потім", "прийшли", "інші", "."]


def test_unknown_mode() -> None:
    with pytest.raises(ConfigError, match="whitespace, auto, stanza, toktok"):
        make_tokenizer("en", "spacy")


def _missing(lang: str) -> Any:
    raise ResourceMissingError(f"stanza tokenizer model for {lang!r} is not installed; stanza.download")


def test_auto_falls_back_to_toktok_and_logs(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(tok, "_stanza_pipeline", _missing)
    with caplog.at_level(logging.INFO, logger="langpairs.tokenize"):
        t = make_tokenizer("fr", "auto")
    assert t.name == "toktok"
    assert any("toktok" in r.getMessage() and "'fr'" in r.getMessage() for r in caplog.records)


def test_auto_uses_stanza_when_installed(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def fake_pipeline(lang: str) -> Any:
        def run(text: str) -> Any:
            tokens = [SimpleNamespace(text=w) for w in ["10 000", "chats", "."]]
            return SimpleNamespace(sentences=[SimpleNamespace(tokens=tokens)] * 2)

        return run

    monkeypatch.setattr(tok, "_stanza_pipeline", fake_pipeline)
    with caplog.at_level(logging.INFO, logger="langpairs.tokenize"):
        t = make_tokenizer("fr", "auto")
    assert t.name == "stanza" and "stanza" in caplog.text
    assert t.sentences("x")[0] == ["10_000", "chats", "."]  # inner space made line-safe
    assert len(t("x")) == 6


def test_stanza_mode_without_models_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    stanza = pytest.importorskip("stanza")
    from stanza.resources.common import ResourcesFileNotFoundError

    def no_models(*args: Any, **kwargs: Any) -> Any:
        assert kwargs.get("download_method") is None  # never touches the network
        raise ResourcesFileNotFoundError("/nowhere/resources.json")

    monkeypatch.setattr(stanza, "Pipeline", no_models)
    tok._stanza_pipeline.cache_clear()
    with pytest.raises(ResourceMissingError, match=r"stanza\.download\('ru'") as info:
        make_tokenizer("ru", "stanza")
    assert isinstance(info.value.__cause__, FileNotFoundError)
    assert tok.stanza_available("ru") is False
