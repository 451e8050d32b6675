"""ISO 639 language codes: the one table the toolkit keeps (lexicons and langpairs both use it).

Wordnets (OMW, NLTK) name languages by ISO 639-3 codes, corpora and the CLI by ISO 639-1 where one
exists; :func:`normalize_lang` gives the key used everywhere and :func:`to_iso3` the wordnet name.
"""

from __future__ import annotations

__all__ = ["ISO639_1_TO_3", "normalize_lang", "to_iso3"]

#: ISO 639-1 -> 639-3 for the languages OMW / NLTK name by three-letter codes.
ISO639_1_TO_3: dict[str, str] = {
    "en": "eng",
    "fr": "fra",
    "de": "deu",
    "nl": "nld",
    "it": "ita",
    "es": "spa",
    "id": "ind",
    "ms": "zsm",
    "pt": "por",
    "tl": "tgl",
    "uk": "ukr",
    "ru": "rus",
    "ca": "cat",
    "eu": "eus",
    "gl": "glg",
    "fi": "fin",
    "ja": "jpn",
    "zh": "cmn",
}
_ISO3_TO_1: dict[str, str] = {v: k for k, v in ISO639_1_TO_3.items()}
_ISO3_TO_1["msa"] = "ms"


def normalize_lang(code: str) -> str:
    """Canonical language key: lowercase ISO 639-1 where one is known (``'fra'`` -> ``'fr'``).

    Region subtags are dropped (``'en-US'`` -> ``'en'``) because wordnets are per language.
    """
    primary = code.strip().lower().replace("_", "-").split("-", 1)[0]
    return _ISO3_TO_1.get(primary, primary)


def to_iso3(code: str) -> str:
    """ISO 639-3 code for ``code`` (OMW and NLTK name languages this way)."""
    lang = normalize_lang(code)
    return ISO639_1_TO_3.get(lang, lang)
