"""The languages the toolkit knows, their related-language pairs, and ``--langs`` parsing.

The ten built-in languages and their families are those of Mulcaire (2022), Table 5.1: five
pairs of *related* languages (fr–en, de–nl, it–es, id–tl, uk–ru), each with the closest family
the pair shares. Users add languages without editing this file: a TOML file of
``[languages.<code>]`` sections (:data:`LANGUAGES_FILE_FORMAT`), passed as ``--languages FILE``
or through ``$POLYGLOT_GROC_LANGUAGES`` (:func:`load_registry`), or the same sections in a run
config (:meth:`LanguageRegistry.from_config`). A run records the entries it used in its config
(:meth:`LanguageRegistry.config_tables`), so evaluating or resuming it never needs the file.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import check_input_file, option
from groc_base.errors import ConfigError, UnknownLanguageError
from groc_base.languages import to_iso3
from groc_base.textio import decode_text

logger = logging.getLogger(__name__)

__all__ = [
    "APOSTROPHE_MODES",
    "BUILTIN_LANGUAGES",
    "FALLBACKS",
    "LANGUAGES_ENV",
    "LANGUAGES_FILE_FORMAT",
    "Language",
    "LanguageRegistry",
    "RELATED",
    "TOKENIZER_MODES",
    "default_registry",
    "load_registry",
    "parse_lang_spec",
    "resolve_codes",
    "read_languages_file",
]

#: Tokeniser modes a language may name (see :func:`langpairs.tokenize.make_tokenizer`).
TOKENIZER_MODES: tuple[str, ...] = ("whitespace", "auto", "stanza", "toktok")

#: What the Toktok tokeniser does with an apostrophe between two letters: ``split`` (NLTK's rule,
#: ``l ' homme``), ``elision`` (it stays on the left word, UD style: ``l' homme``, ``dell' anno``),
#: ``word`` (it is a letter of the word: Ukrainian ``сім'я``).
APOSTROPHE_MODES: tuple[str, ...] = ("split", "elision", "word")

#: Languages a wordnet may borrow glosses and hyponym structure from, through ILI.
FALLBACKS: tuple[str, ...] = ("en",)

#: Environment variable naming a languages TOML file (what ``--languages FILE`` gives).
LANGUAGES_ENV = "POLYGLOT_GROC_LANGUAGES"

#: One line saying what a languages file looks like (error messages point to it).
LANGUAGES_FILE_FORMAT = (
    'a TOML file with one [languages.<code>] section per language: name = "...", iso3 = "xxx", '
    'script = "Latin" (required for a new code); optional family, related = ["code", ...], '
    'wordnets = ["id:version", ...], tokenizer (toktok, stanza, auto, whitespace), '
    'apostrophe (split, elision, word), stanza_lang, fallback = "en"'
)

# ISO 639-1 codes are two letters; three-letter 639-3 codes and tags like "pt-br" are allowed so
# users can add languages that have no two-letter code.
_CODE_RE = re.compile(r"^[a-z]{2,3}(?:[-_][a-z0-9]+)*$")
_ISO3_RE = re.compile(r"^[a-z]{3}$")


#: Script values that are no writing system of a language (Unicode's Common, Inherited and Unknown).
_NOT_SCRIPTS = frozenset({"common", "zyyy", "inherited", "zinh", "qaai", "unknown", "zzzz"})


def is_script_name(name: str) -> bool:
    """Whether ``name`` is a Unicode script: its property value name (``Latin``, ``Old_Italic``) or ISO
    15924 code (``Latn``), as Unicode's Scripts.txt has them (checked with the ``regex`` module's
    Unicode tables, which follow the Unicode release it was built with), case-insensitively.
    Common, Inherited and Unknown are not the script of a language, so they are refused."""
    import regex

    text = name.strip()
    if not text or text.lower() in _NOT_SCRIPTS or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_ -]*", text):
        return False
    try:
        regex.compile(r"\p{Script=" + text.replace(" ", "_") + "}")
    except regex.error:
        return False
    return True


@dataclass(frozen=True)
class Language:
    """One language: codes, script, family (Table 5.1), how its raw text is tokenised, its wordnets."""

    code: str  # ISO 639-1 (or 639-3 when there is no two-letter code); the key everywhere
    iso3: str  # ISO 639-3; names OMW / wordnet files
    name: str
    script: str  # "Latin", "Cyrillic", ...
    family: str = "unspecified"  # closest family shared with its related language (Table 5.1)
    #: Tokeniser ``data prepare`` uses for this language's raw text unless told otherwise.
    tokenizer: str = "toktok"
    stanza_lang: str | None = None  # stanza's code, when stanza supports the language
    #: Toktok's handling of an apostrophe between letters (:data:`APOSTROPHE_MODES`).
    apostrophe: str = "split"
    #: ``wn`` lexicon specifiers (``id:version``, as ``lexicon import`` prints them) of its wordnets.
    wordnets: tuple[str, ...] = ()
    #: ``"en"``: words of this language may take glosses (and hyponym structure) from the English
    #: wordnet through ILI; ``None``: only their own wordnet's. Built-in languages borrow (seed 004
    #: §5.3: their OMW wordnets have English definitions only); user languages only when they say so.
    fallback: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not _CODE_RE.match(self.code):
            raise ConfigError(
                f"invalid language code {self.code!r}; use a lowercase iso 639-1 or 639-3 code such as 'pt'"
            )
        for field in ("iso3", "name", "script", "family"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"language {self.code!r} needs a non-empty string {field!r}, got {value!r}")
        if not is_script_name(self.script):
            raise ConfigError(f"language {self.code!r} has script {self.script!r}, which is not a Unicode script; "
                              f"use a Unicode script name or ISO 15924 code such as \"Latin\" (Latn), \"Cyrillic\" "
                              f"(Cyrl), \"Arabic\" (Arab) or \"Devanagari\" (Deva)")
        if not _ISO3_RE.match(self.iso3):
            raise ConfigError(f"language {self.code!r} has iso3 {self.iso3!r}; use the three-letter "
                              f"lowercase ISO 639-3 code, e.g. 'ceb'")
        if self.tokenizer not in TOKENIZER_MODES:
            raise ConfigError(
                f"language {self.code!r} has tokenizer {self.tokenizer!r}; "
                f"use one of {', '.join(TOKENIZER_MODES)}"
            )
        if self.apostrophe not in APOSTROPHE_MODES:
            raise ConfigError(f"language {self.code!r} has apostrophe {self.apostrophe!r}; "
                              f"use one of {', '.join(APOSTROPHE_MODES)}")
        if self.stanza_lang is not None and (not isinstance(self.stanza_lang, str) or not self.stanza_lang):
            raise ConfigError(f"language {self.code!r} has invalid stanza_lang {self.stanza_lang!r}")
        if not isinstance(self.wordnets, tuple) or not all(isinstance(w, str) and w.strip() and " " not in w
                                                            for w in self.wordnets):
            raise ConfigError(f"language {self.code!r} has wordnets {self.wordnets!r}; give a list of wn "
                              f"specifiers such as [\"omw-fr:3.0\"] (`polyglot-groc lexicon info` lists them)")
        if self.fallback is not None and self.fallback not in FALLBACKS:
            raise ConfigError(f"language {self.code!r} has fallback {self.fallback!r}; use \"en\" (glosses "
                              f"from the English wordnet through ILI) or leave it out")

    def to_table(self) -> dict[str, Any]:
        """This language as a ``[languages.<code>]`` table (without ``related``), defaults left out."""
        table: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name == "code":
                continue
            value = getattr(self, f.name)
            if f.name in ("iso3", "name", "script") or value != f.default:
                table[f.name] = list(value) if isinstance(value, tuple) else value
        return table


#: The ten languages of the thesis's Table 5.1; their ISO 639-3 codes come from the base's one table.
BUILTIN_LANGUAGES: tuple[Language, ...] = (
    Language("en", to_iso3("en"), "English", "Latin", "Indo-European", stanza_lang="en", fallback="en"),
    Language("fr", to_iso3("fr"), "French", "Latin", "Indo-European", stanza_lang="fr", apostrophe="elision",
             fallback="en"),
    Language("de", to_iso3("de"), "German", "Latin", "West Germanic", stanza_lang="de", fallback="en"),
    Language("nl", to_iso3("nl"), "Dutch", "Latin", "West Germanic", stanza_lang="nl", fallback="en"),
    Language("it", to_iso3("it"), "Italian", "Latin", "Italo-Western Romance", stanza_lang="it", apostrophe="elision",
             fallback="en"),
    Language("es", to_iso3("es"), "Spanish", "Latin", "Italo-Western Romance", stanza_lang="es", fallback="en"),
    Language("id", to_iso3("id"), "Indonesian", "Latin", "Malayo-Polynesian", stanza_lang="id", fallback="en"),
    Language("tl", to_iso3("tl"), "Tagalog", "Latin", "Malayo-Polynesian", stanza_lang="tl", fallback="en"),
    Language("uk", to_iso3("uk"), "Ukrainian", "Cyrillic", "East Slavic", stanza_lang="uk", apostrophe="word",
             fallback="en"),
    Language("ru", to_iso3("ru"), "Russian", "Cyrillic", "East Slavic", stanza_lang="ru", fallback="en"),
)
_BUILTIN_BY_CODE: dict[str, Language] = {x.code: x for x in BUILTIN_LANGUAGES}

_PAIRS: tuple[tuple[str, str], ...] = (("fr", "en"), ("de", "nl"), ("it", "es"), ("id", "tl"), ("uk", "ru"))

#: Related-language partner of each built-in language (symmetric). English is paired with French
#: for their shared vocabulary despite the phylogenetic distance (Table 5.1 caption).
RELATED: dict[str, str] = {**{a: b for a, b in _PAIRS}, **{b: a for a, b in _PAIRS}}

# Keys accepted in a [languages.xx] section; "related" is registry-level, not a field.
_CONFIG_FIELDS = ("iso3", "name", "script", "family", "tokenizer", "stanza_lang", "apostrophe", "wordnets",
                  "fallback")
_CONFIG_KEYS = (*_CONFIG_FIELDS, "related")
_REQUIRED_FIELDS = ("name", "iso3", "script")

# The keyword in --with meaning "each language's related partner".
_RELATED_KEYWORD = "related"


def _normalise_code(code: str) -> str:
    return code.strip().lower()


#: ISO 639-2/B codes that differ from the 639-3 (= 639-2/T) ones, for the languages that have them.
_ISO639_2B: dict[str, str] = {"fra": "fre", "deu": "ger", "nld": "dut", "zho": "chi", "ces": "cze", "ell": "gre",
                              "fas": "per", "msa": "may", "ron": "rum", "slk": "slo", "sqi": "alb", "hye": "arm",
                              "eus": "baq", "mya": "bur", "kat": "geo", "isl": "ice", "mkd": "mac", "mri": "mao",
                              "bod": "tib", "cym": "wel"}


def _aliases(language: Language) -> tuple[str, ...]:
    """Other names a user may give ``language`` by: its ISO 639-3 and 639-2/B codes and its name."""
    out = [language.iso3, language.name.lower()]
    if language.iso3 in _ISO639_2B:
        out.append(_ISO639_2B[language.iso3])
    return tuple(a for a in out if a != language.code)


def _how_to_add(code: object) -> str:
    shown = code if isinstance(code, str) and _CODE_RE.match(code.strip().lower()) else "<code>"
    return (f"to add one, write a languages file with a [languages.{shown}] section (name, iso3, script; "
            f"optional related, wordnets, tokenizer) and pass it with {option('languages', 'FILE')} or "
            f"${LANGUAGES_ENV}")


class LanguageRegistry:
    """A mutable set of :class:`Language` records keyed by code, plus related-language partners."""

    def __init__(self, languages: Iterable[Language] = (),
                 related: Mapping[str, str | Sequence[str]] | None = None) -> None:
        self._languages: dict[str, Language] = {}
        self._related: dict[str, tuple[str, ...]] = {}
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

    def resolve(self, name: str) -> Language:
        """The language ``name`` means: its code, else its ISO 639-3 or 639-2/B code or its English name
        (case-insensitive): ``tgl``, ``Tagalog`` -> ``tl``. Anything else is :class:`UnknownLanguageError`,
        with a suggestion when one is close. Parse user input with this; the code it returns is the one
        folders, runs and wordnets use."""
        key = _normalise_code(name) if isinstance(name, str) else name
        if key in self._languages:
            return self._languages[key]
        if isinstance(key, str):
            matches = [lang for lang in self._languages.values() if key in _aliases(lang)]
            if len(matches) == 1:
                logger.info("language %r is %s: using its code %r", name, matches[0].name, matches[0].code)
                return matches[0]
        raise self._unknown(name)

    def _unknown(self, code: object) -> UnknownLanguageError:
        known = ", ".join(self._languages) or "(none)"
        hint = ""
        if isinstance(code, str):
            close = self._closest(_normalise_code(code))
            if close is not None:
                hint = f"did you mean {close.code!r} ({close.name}, ISO 639-3 {close.iso3})? "
        return UnknownLanguageError(f"unknown language code {code!r}; {hint}known codes: {known}; "
                                    f"{_how_to_add(code)}")

    def _closest(self, key: str) -> Language | None:
        """The registered language whose code, ISO codes or name ``key`` is closest to (None: none close)."""
        import difflib

        names = {alias: lang for lang in self._languages.values() for alias in (lang.code, *_aliases(lang))}
        found = difflib.get_close_matches(key, list(names), n=1, cutoff=0.75)
        return names[found[0]] if found else None

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
        """A copy of the code -> (first) related-code mapping."""
        return {code: partners[0] for code, partners in self._related.items()}

    def partners(self, code: str) -> tuple[str, ...]:
        """Every related language of ``code`` in the order given (empty when it has none)."""
        return self._related.get(self.get(code).code, ())

    def related_to(self, code: str) -> str:
        """The (first) related language of ``code``; :class:`ConfigError` when it has none."""
        partners = self.partners(code)
        if not partners:
            language = self.get(code)
            raise ConfigError(
                f"language {language.code!r} has no related language; set `related = [\"xx\"]` in its "
                f"[languages.{language.code}] section ({option('languages', 'FILE')}) or name the partner explicitly "
                f"({option('extra_langs', 'xx')})"
            )
        return partners[0]

    def set_related(self, code: str, partner: str | Sequence[str], *, symmetric: bool = True) -> None:
        """Pair ``code`` with ``partner`` (a code or codes, first = closest); with ``symmetric`` also
        pair each partner back when it has none."""
        a = self.get(code).code
        wanted = [partner] if isinstance(partner, str) else list(partner)
        codes = tuple(dict.fromkeys(self.get(p).code for p in wanted))
        if a in codes:
            raise ConfigError(f"language {a!r} cannot be related to itself; name a different language")
        self._related[a] = codes
        if symmetric:
            for b in codes:
                if b not in self._related:
                    self._related[b] = (a,)

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

    def copy(self) -> LanguageRegistry:
        """An independent registry with the same languages and partners."""
        out = LanguageRegistry(self)
        out._related = dict(self._related)
        return out

    @classmethod
    def from_config(cls, mapping: Mapping[str, Any], *, base: LanguageRegistry | None = None) -> LanguageRegistry:
        """The built-in languages (or ``base``) plus/overridden by a config's ``[languages.xx]`` sections.

        ``mapping`` is either the parsed TOML document (its ``languages`` table is used) or that
        table itself. A section for a known code overrides only the keys it sets (e.g.
        ``[languages.en] tokenizer = "auto"``); a new code needs name, iso3 and script. An
        optional ``related = "xx"`` (or a list, closest first) names its related languages.
        """
        if not isinstance(mapping, Mapping):
            raise ConfigError(f"languages config must be a table, got {type(mapping).__name__}")
        table = mapping.get("languages", mapping)
        if not isinstance(table, Mapping):
            raise ConfigError(f"[languages] must be a table of [languages.xx] sections, got {table!r}")

        registry = base.copy() if base is not None else default_registry()
        related: list[tuple[str, str, list[str]]] = []
        seen: dict[str, str] = {}
        for raw_code, section in table.items():
            code = _normalise_code(str(raw_code))
            if code in seen:  # TOML keys are case-sensitive, language codes are not: one would silently win
                raise ConfigError(f"[languages.{seen[code]}] and [languages.{raw_code}] both define language "
                                  f"{code!r} (codes are not case-sensitive); keep one section")
            seen[code] = str(raw_code)
            if not isinstance(section, Mapping):
                raise ConfigError(f"[languages.{raw_code}] must be a table of keys, got {section!r}")
            unknown = sorted(set(section) - set(_CONFIG_KEYS))
            if unknown:
                raise ConfigError(
                    f"[languages.{raw_code}] has unknown key(s) {', '.join(unknown)}; "
                    f"allowed: {', '.join(_CONFIG_KEYS)}"
                )
            fields = {k: section[k] for k in _CONFIG_FIELDS if k in section}
            if "wordnets" in fields:
                wordnets = fields["wordnets"]
                if isinstance(wordnets, str):
                    wordnets = [wordnets]
                if not isinstance(wordnets, (list, tuple)):
                    raise ConfigError(f"[languages.{raw_code}] wordnets must be a list of wn specifiers such as "
                                      f"[\"omw-fr:3.0\"], got {wordnets!r}")
                fields["wordnets"] = tuple(wordnets)
            if "fallback" in fields and fields["fallback"] in ("", "none"):
                fields["fallback"] = None
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
                partners = [partner] if isinstance(partner, str) else partner
                if not isinstance(partners, list) or not partners or not all(isinstance(p, str) for p in partners):
                    raise ConfigError(f"[languages.{raw_code}] related must be a language code or a list of "
                                      f"codes such as [\"tl\"], got {partner!r}")
                related.append((str(raw_code), code, partners))
        # Pairs are resolved after every section is in, so two new languages can name each other.
        for raw_code, code, partners in related:
            for p in partners:
                if p not in registry:
                    raise ConfigError(
                        f"[languages.{raw_code}] names related language {p!r}, which is neither built in nor "
                        f"defined in the file; add a [languages.{_normalise_code(p)}] section or fix the code")
            registry.set_related(code, partners)
        return registry

    # -- recording ----------------------------------------------------------------------------
    def is_builtin(self, code: str) -> bool:
        """Whether ``code`` is one of the ten built-in languages, unchanged (partners included)."""
        language = self.get(code)
        builtin = _BUILTIN_BY_CODE.get(language.code)
        partners = (RELATED[language.code],) if language.code in RELATED else ()
        return builtin == language and self.partners(language.code) == partners

    def config_tables(self, codes: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``[languages.xx]`` tables for the non-built-in (or changed) languages among ``codes`` and,
        transitively, their related languages: what a run records in its config so that evaluating
        or resuming it rebuilds the same registry without the user's languages file."""
        todo = [self.get(c).code for c in codes]
        seen: list[str] = []
        while todo:
            code = todo.pop(0)
            if code in seen:
                continue
            seen.append(code)
            todo.extend(self.partners(code))
        tables: dict[str, dict[str, Any]] = {}
        for code in seen:
            if self.is_builtin(code):
                continue
            table = self.get(code).to_table()
            if self.partners(code):
                table["related"] = list(self.partners(code))
            tables[code] = table
        return tables


def default_registry() -> LanguageRegistry:
    """A fresh registry with the thesis's ten languages and their related pairs."""
    return LanguageRegistry(BUILTIN_LANGUAGES, RELATED)


def read_languages_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``languages`` table of a user's languages file, checked (every section valid, every
    related code known); errors name the file and say what the format is."""
    path = Path(path).expanduser()
    if path.exists():  # a FIFO or a device would block the read: refused before it
        check_input_file(path, flag="languages file")
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise ConfigError(f"languages file {path} does not exist; check {option('languages')} or "
                          f"${LANGUAGES_ENV}") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read languages file {path} ({exc.strerror or exc}); check the path") from exc
    text = decode_text(data, path, what="languages file", error=ConfigError)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = " ".join(str(exc).split())
        raise ConfigError(f"languages file {path} is not valid TOML ({reason}); it should be "
                          f"{LANGUAGES_FILE_FORMAT}") from exc
    extra = sorted(set(doc) - {"languages"})
    table = doc.get("languages")
    if extra or not isinstance(table, dict) or not table:
        what = f"has top-level key(s) {', '.join(extra)}" if extra else "has no [languages.<code>] section"
        raise ConfigError(f"languages file {path} {what}; it should be {LANGUAGES_FILE_FORMAT}")
    try:
        LanguageRegistry.from_config(table)
    except ConfigError as exc:
        raise type(exc)(f"languages file {path}: {exc}") from exc
    return table


def load_registry(languages_file: str | os.PathLike[str] | None = None, *, config: Mapping[str, Any] | None = None,
                  env: bool = True) -> LanguageRegistry:
    """The built-in languages, plus a user's languages file, plus a run config's ``[languages]`` table.

    ``languages_file`` defaults to ``$POLYGLOT_GROC_LANGUAGES`` when ``env`` is true (an empty
    value counts as unset). ``config`` is a run config's ``languages`` table (what a run
    recorded); its sections win over the file's.
    """
    if languages_file is None and env:
        languages_file = os.environ.get(LANGUAGES_ENV) or None
    registry = default_registry()
    if languages_file is not None and str(languages_file).strip():
        registry = LanguageRegistry.from_config(read_languages_file(languages_file), base=registry)
    if config:
        registry = LanguageRegistry.from_config(config, base=registry)
    return registry


def _split_codes(spec: str) -> list[str]:
    return [part for part in (_normalise_code(p) for p in re.split(r"[,\s]+", spec)) if part]


def resolve_codes(langs: str, registry: LanguageRegistry, *, keep_unknown: bool = False) -> list[str]:
    """The codes ``langs`` names (comma/space separated; codes, ISO 639-3/639-2/B codes or English names,
    :meth:`LanguageRegistry.resolve`), deduplicated, first-seen order kept. An unknown name is
    :class:`UnknownLanguageError`, or with ``keep_unknown`` kept as given (lowercased), for a caller
    whose own data answers it better (the shared data's list of what it has)."""
    codes: list[str] = []
    for item in _split_codes(langs):
        try:
            code = registry.resolve(item).code
        except UnknownLanguageError:
            if not keep_unknown:
                raise
            code = item
        if code not in codes:
            codes.append(code)
    return codes


def parse_lang_spec(
    langs: str, with_: str | None = None, registry: LanguageRegistry | None = None
) -> tuple[str, ...]:
    """Parse ``--langs`` / ``--with`` into validated, deduplicated codes, first-seen order kept.

    A language may be named by its code, its ISO 639-3 or 639-2/B code or its English name
    (``tgl``, ``Tagalog``: ``tl``; :meth:`LanguageRegistry.resolve`); the result holds codes.

    ``langs`` is a comma-separated list (``"en,fr"``). ``with_`` adds languages after them: a
    code or comma list (``"en"``) and/or the keyword ``"related"`` (each language's related
    languages), so ``parse_lang_spec("fr", "related") == ("fr", "en")``.
    """
    registry = registry if registry is not None else default_registry()
    if not isinstance(langs, str):
        raise ConfigError(f"language spec must be a comma-separated string such as 'en,fr', got {langs!r}")
    primary = resolve_codes(langs, registry)
    if not primary:
        raise ConfigError(
            f"no languages given ({langs!r}); pass comma-separated codes such as 'en,fr' "
            f"(known: {', '.join(registry.codes)})"
        )
    extra: list[str] = []
    for item in _split_codes(with_ or ""):
        if item == _RELATED_KEYWORD:
            for code in primary:
                registry.related_to(code)  # a language without partners is an error, not a no-op
                extra.extend(registry.partners(code))
        else:
            extra.append(registry.resolve(item).code)
    return tuple(dict.fromkeys([*primary, *extra]))
