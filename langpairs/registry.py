"""The languages the toolkit knows, their related-language pairs, and ``--langs`` parsing.

The ten built-in languages and their families are those of Mulcaire (2022), Table 5.1: five
pairs of *related* languages (fr–en, de–nl, it–es, id–tl, uk–ru), each with the closest family
the pair shares. Users add languages from a TOML ``[languages.xx]`` section
(:meth:`LanguageRegistry.from_config`) instead of editing this file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from groc_base.errors import ConfigError, UnknownLanguageError

__all__ = [
    "BUILTIN_LANGUAGES",
    "Language",
    "LanguageRegistry",
    "RELATED",
    "TOKENIZER_MODES",
    "default_registry",
    "parse_lang_spec",
]

#: Tokeniser modes a language may name (see :func:`langpairs.tokenize.make_tokenizer`).
TOKENIZER_MODES: tuple[str, ...] = ("whitespace", "auto", "stanza", "toktok")

# ISO 639-1 codes are two letters; three-letter 639-3 codes and tags like "pt-br" are allowed so
# users can add languages that have no two-letter code.
_CODE_RE = re.compile(r"^[a-z]{2,3}(?:[-_][a-z0-9]+)*$")


@dataclass(frozen=True)
class Language:
    """One language: codes, script, family (Table 5.1) and how its raw text is tokenised."""

    code: str  # ISO 639-1 (or 639-3 when there is no two-letter code); the key everywhere
    iso3: str  # ISO 639-3; names OMW / wordnet files
    name: str
    script: str  # "Latin", "Cyrillic", ...
    family: str  # closest family shared with its related language (Table 5.1)
    tokenizer: str = "whitespace"  # mode for make_tokenizer when reading raw text
    stanza_lang: str | None = None  # stanza's code, when stanza supports the language

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not _CODE_RE.match(self.code):
            raise ConfigError(
                f"invalid language code {self.code!r}; use a lowercase iso 639-1 or 639-3 code such as 'pt'"
            )
        for field in ("iso3", "name", "script", "family"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"language {self.code!r} needs a non-empty string {field!r}, got {value!r}")
        if self.tokenizer not in TOKENIZER_MODES:
            raise ConfigError(
                f"language {self.code!r} has tokenizer {self.tokenizer!r}; "
                f"use one of {', '.join(TOKENIZER_MODES)}"
            )
        if self.stanza_lang is not None and (not isinstance(self.stanza_lang, str) or not self.stanza_lang):
            raise ConfigError(f"language {self.code!r} has invalid stanza_lang {self.stanza_lang!r}")


BUILTIN_LANGUAGES: tuple[Language, ...] = (
    Language("en", "eng", "English", "Latin", "Indo-European", stanza_lang="en"),
    Language("fr", "fra", "French", "Latin", "Indo-European", stanza_lang="fr"),
    Language("de", "deu", "German", "Latin", "West Germanic", stanza_lang="de"),
    Language("nl", "nld", "Dutch", "Latin", "West Germanic", stanza_lang="nl"),
    Language("it", "ita", "Italian", "Latin", "Italo-Western Romance", stanza_lang="it"),
    Language("es", "spa", "Spanish", "Latin", "Italo-Western Romance", stanza_lang="es"),
    Language("id", "ind", "Indonesian", "Latin", "Malayo-Polynesian", stanza_lang="id"),
    Language("tl", "tgl", "Tagalog", "Latin", "Malayo-Polynesian", stanza_lang="tl"),
    Language("uk", "ukr", "Ukrainian", "Cyrillic", "East Slavic", stanza_lang="uk"),
    Language("ru", "rus", "Russian", "Cyrillic", "East Slavic", stanza_lang="ru"),
)

_PAIRS: tuple[tuple[str, str], ...] = (("fr", "en"), ("de", "nl"), ("it", "es"), ("id", "tl"), ("uk", "ru"))

#: Related-language partner of each built-in language (symmetric). English is paired with French
#: for their shared vocabulary despite the phylogenetic distance (Table 5.1 caption).
RELATED: dict[str, str] = {**{a: b for a, b in _PAIRS}, **{b: a for a, b in _PAIRS}}

# Keys accepted in a [languages.xx] config section; "related" is registry-level, not a field.
_CONFIG_FIELDS = ("iso3", "name", "script", "family", "tokenizer", "stanza_lang")
_CONFIG_KEYS = (*_CONFIG_FIELDS, "related")
_REQUIRED_FIELDS = ("iso3", "name", "script", "family")

# The keyword in --with meaning "each language's related partner".
_RELATED_KEYWORD = "related"


def _normalise_code(code: str) -> str:
    return code.strip().lower()


class LanguageRegistry:
    """A mutable set of :class:`Language` records keyed by code, plus related-language pairs."""

    def __init__(self, languages: Iterable[Language] = (), related: Mapping[str, str] | None = None) -> None:
        self._languages: dict[str, Language] = {}
        self._related: dict[str, str] = {}
        for language in languages:
            self.add(language)
        for code, partner in (related or {}).items():
            self.set_related(code, partner, symmetric=False)

    # -- lookup -------------------------------------------------------------------------------
    def get(self, code: str) -> Language:
        """The language with this code (case-insensitive); unknown -> :class:`UnknownLanguageError`."""
        key = _normalise_code(code) if isinstance(code, str) else code
        try:
            return self._languages[key]
        except (KeyError, TypeError) as exc:
            raise self._unknown(code) from exc

    def _unknown(self, code: object) -> UnknownLanguageError:
        known = ", ".join(self._languages) or "(none)"
        return UnknownLanguageError(
            f"unknown language code {code!r}; known codes: {known}; to add one, put a "
            f"[languages.<code>] section with iso3, name, script and family in the config "
            f"(or call LanguageRegistry.add(Language(...)))"
        )

    @property
    def codes(self) -> tuple[str, ...]:
        """Registered codes in registration order."""
        return tuple(self._languages)

    def __contains__(self, code: object) -> bool:
        return isinstance(code, str) and _normalise_code(code) in self._languages

    def __iter__(self) -> Iterator[Language]:
        return iter(self._languages.values())

    def __len__(self) -> int:
        return len(self._languages)

    def __repr__(self) -> str:
        return f"LanguageRegistry({', '.join(self._languages)})"

    # -- related pairs ------------------------------------------------------------------------
    @property
    def related(self) -> dict[str, str]:
        """A copy of the code -> related-code mapping."""
        return dict(self._related)

    def related_to(self, code: str) -> str:
        """The related language of ``code``; :class:`ConfigError` when it has none."""
        language = self.get(code)
        try:
            return self._related[language.code]
        except KeyError as exc:
            raise ConfigError(
                f"language {language.code!r} has no related language; set `related = \"xx\"` in its "
                f"[languages.{language.code}] config section or name the partner explicitly (--with xx)"
            ) from exc

    def set_related(self, code: str, partner: str, *, symmetric: bool = True) -> None:
        """Pair ``code`` with ``partner``; with ``symmetric`` also pair back if ``partner`` has none."""
        a, b = self.get(code).code, self.get(partner).code
        if a == b:
            raise ConfigError(f"language {a!r} cannot be related to itself; name a different language")
        self._related[a] = b
        if symmetric and b not in self._related:
            self._related[b] = a

    # -- mutation -----------------------------------------------------------------------------
    def add(self, language: Language, *, replace: bool = False) -> None:
        """Register ``language``; an existing code needs ``replace=True`` (guards against typos)."""
        if not isinstance(language, Language):
            raise ConfigError(f"expected a Language, got {type(language).__name__}; build one with Language(...)")
        if language.code in self._languages and not replace:
            raise ConfigError(
                f"language {language.code!r} is already registered; pass replace=True to override it"
            )
        self._languages[language.code] = language

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any], *, base: LanguageRegistry | None = None) -> LanguageRegistry:
        """The built-in languages (or ``base``) plus/overridden by a config's ``[languages.xx]`` sections.

        ``mapping`` is either the parsed TOML document (its ``languages`` table is used) or that
        table itself. A section for a known code overrides only the keys it sets (e.g.
        ``[languages.en] tokenizer = "auto"``); a new code needs iso3, name, script and family.
        An optional ``related = "xx"`` key pairs the language with ``xx``.
        """
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"languages config must be a table, got {type(mapping).__name__}")
        table = mapping.get("languages", mapping)
        if not isinstance(table, Mapping):
            raise ConfigError(f"[languages] must be a table of [languages.xx] sections, got {table!r}")

        registry = cls(base if base is not None else BUILTIN_LANGUAGES, base.related if base else RELATED)
        related: list[tuple[str, str]] = []
        for raw_code, section in table.items():
            code = _normalise_code(str(raw_code))
            if not isinstance(section, Mapping):
                raise ConfigError(f"[languages.{raw_code}] must be a table of keys, got {section!r}")
            unknown = sorted(set(section) - set(_CONFIG_KEYS))
            if unknown:
                raise ConfigError(
                    f"[languages.{raw_code}] has unknown key(s) {', '.join(unknown)}; "
                    f"allowed: {', '.join(_CONFIG_KEYS)}"
                )
            fields = {k: section[k] for k in _CONFIG_FIELDS if k in section}
            if code in registry:
                language = dataclasses.replace(registry.get(code), **fields)
            else:
                missing = [k for k in _REQUIRED_FIELDS if k not in fields]
                if missing:
                    raise ConfigError(
                        f"[languages.{raw_code}] is a new language and needs {', '.join(missing)}; "
                        f"add those keys to the section"
                    )
                language = Language(code=code, **fields)
            registry.add(language, replace=True)
            if "related" in section:
                partner = section["related"]
                if not isinstance(partner, str):
                    raise ConfigError(f"[languages.{raw_code}] related must be a language code, got {partner!r}")
                related.append((code, partner))
        # Pairs are resolved after every section is in, so two new languages can name each other.
        for code, partner in related:
            registry.set_related(code, partner)
        return registry


def default_registry() -> LanguageRegistry:
    """A fresh registry with the thesis's ten languages and their related pairs."""
    return LanguageRegistry(BUILTIN_LANGUAGES, RELATED)


def _split_codes(spec: str) -> list[str]:
    return [part for part in (_normalise_code(p) for p in re.split(r"[,\s]+", spec)) if part]


def parse_lang_spec(
    langs: str, with_: str | None = None, registry: LanguageRegistry | None = None
) -> tuple[str, ...]:
    """Parse ``--langs`` / ``--with`` into validated, deduplicated codes, first-seen order kept.

    ``langs`` is a comma-separated list (``"en,fr"``). ``with_`` adds languages after them: a
    code or comma list (``"en"``) and/or the keyword ``"related"`` (each language's partner), so
    ``parse_lang_spec("fr", "related") == ("fr", "en")``.
    """
    registry = registry if registry is not None else default_registry()
    if not isinstance(langs, str):
        raise ConfigError(f"language spec must be a comma-separated string such as 'en,fr', got {langs!r}")
    primary = [registry.get(code).code for code in _split_codes(langs)]
    if not primary:
        raise ConfigError(
            f"no languages given ({langs!r}); pass comma-separated codes such as 'en,fr' "
            f"(known: {', '.join(registry.codes)})"
        )
    extra: list[str] = []
    for item in _split_codes(with_ or ""):
        if item == _RELATED_KEYWORD:
            extra.extend(registry.related_to(code) for code in primary)
        else:
            extra.append(registry.get(item).code)
    return tuple(dict.fromkeys([*primary, *extra]))
