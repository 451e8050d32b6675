"""How much of a corpus's vocabulary a lexicon covers (``polyglot-groc lexicon coverage`` as a function).

GroC+lex reads each word's related words and definition from a lexicon; :func:`lexicon_coverage`
says, per language, which share of the training vocabulary (types, and tokens) has an entry,
relations, a definition, and forms inside the vocabulary itself (what the thesis kept).
:func:`open_lexicon_for` opens the lexicon the CLI's options name, for ``coverage`` and ``lookup``.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import option
from groc_base.errors import CorpusError, InputError
from groc_base.textio import iter_lines

__all__ = ["FALLBACKS", "LexiconCoverageResult", "lexicon_coverage", "no_fallback_languages", "open_lexicon_for"]

_KEYS = ("entry", "related", "definition", "related_in_vocab", "definition_in_vocab")


@dataclass(frozen=True)
class LexiconCoverageResult:
    """Per language (``coverage`` rows): ``types``, ``tokens``, and for each of ``entry``, ``related``,
    ``definition``, ``related_in_vocab``, ``definition_in_vocab`` the percentage of types
    (``<key>_pct``) and of tokens (``<key>_token_pct``) that have it; ``specs`` are the lexicons read."""

    specs: list[str]
    coverage: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc lexicon coverage --json`` prints."""
        return {"specs": list(self.specs), "coverage": [dict(row) for row in self.coverage]}


def _languages(lexicon: Any, given: Sequence[str], specs: Sequence[str], flag: str) -> list[str]:
    """The languages to look words up in: as given, else those of the ``specs`` lexicons.

    With ``specs`` the given languages must be theirs: looking French lexicons up in English would
    find nothing.
    """
    from lexicons.protocol import normalize_lang

    covered = list(lexicon.languages())
    if not given:
        return covered
    missing = [x for x in given if normalize_lang(x) not in covered]
    if specs and missing:
        raise InputError(f"{option(flag)} {','.join(missing)} is not a language of {option('specs')} {','.join(specs)} "
                         f"(they cover {','.join(covered) or 'none'}); pass {option(flag)} {','.join(covered)}, or add "
                         f"a lexicon of {','.join(missing)} to {option('specs')}")
    return list(given)


#: ``fallback`` values: ``en`` (glosses and hyponyms from the English wordnet through ILI where a
#: word's own wordnet has none), ``none`` (only its own); None: each language's registry entry.
FALLBACKS = ("en", "none")


def _check_fallback(fallback: str | None) -> None:
    if fallback is not None and fallback not in FALLBACKS:
        raise InputError(f"{option('fallback', fallback)} is unknown; use en (glosses and hyponyms from the English "
                         f"wordnet through ILI) or none (only the language's own wordnet)")


def no_fallback_languages(langs: Sequence[str], registry: Any, fallback: str | None = None) -> list[str]:
    """The languages among ``langs`` that must not borrow English glosses or hyponyms through ILI.

    ``fallback="en"``: none; ``"none"``: all; None: each language's registry entry decides (the
    built-in ten borrow, as in the thesis; another language only with ``fallback = "en"``, and one
    the registry does not know never).
    """
    from lexicons.protocol import normalize_lang

    _check_fallback(fallback)
    if fallback == "en":
        return []
    if fallback == "none":
        return list(langs)
    return [x for x in langs if normalize_lang(x) != "en" and (x not in registry or registry.get(x).fallback is None)]


def open_lexicon_for(backend: str = "wn", langs: Sequence[str] = (), specs: Sequence[str] = (),
                     wn_dir: str | os.PathLike[str] | None = None, tsv: str | os.PathLike[str] | None = None,
                     nltk_data: str | os.PathLike[str] | None = None, flag: str = "--langs",
                     languages: str | os.PathLike[str] | None = None,
                     fallback: str | None = None) -> tuple[Any, list[str]]:
    """The lexicon these options name, and the languages to use it in.

    Without ``langs`` and ``specs`` the language is English. The wordnets' loaded data is cached
    on disk (``$POLYGLOT_GROC_CACHE/wordnets``): only the first call after an import reads the
    whole database (and tokenises every gloss); later calls read one file. ``languages`` is a
    languages TOML file (:func:`langpairs.registry.load_registry`): without ``specs``, a language
    whose entry names ``wordnets`` uses those; on the wn backend, English glosses and hyponyms are
    lent through ILI only where :func:`no_fallback_languages` allows (``fallback`` overrides).
    """
    from groc_base.cache import default_cache_root
    from langpairs.registry import load_registry
    from lexicons.service import open_lexicon

    _check_fallback(fallback)
    chosen = [s for s in specs if s]
    if chosen and backend != "wn":
        raise InputError(f"{option('specs')} selects wn lexicons; with {option('backend', backend)} leave it out "
                         f"(the tsv backend reads {option('tsv')}, the nltk backend {option('nltk_data')})")
    if fallback is not None and backend != "wn":
        raise InputError(f"{option('fallback')} is for the wn backend; with {option('backend', backend)} leave it out")
    registry = load_registry(languages, env=False)
    wanted = list(langs) or ([] if chosen else ["en"])
    lang_specs = {x: list(registry.get(x).wordnets) for x in wanted if x in registry and registry.get(x).wordnets}

    def opened(no_fallback: Sequence[str] = ()) -> Any:
        return open_lexicon(backend, specs=chosen or None, langs=wanted,
                            wn_dir=Path(wn_dir) if wn_dir is not None else None,
                            nltk_data=Path(nltk_data) if nltk_data is not None else None,
                            tsv=Path(tsv) if tsv is not None else None, cache_dir=default_cache_root() / "wordnets",
                            lang_specs=lang_specs or None, no_fallback=no_fallback)

    lexicon = opened()
    used = _languages(lexicon, wanted, chosen, flag)
    if backend == "wn":
        refused = no_fallback_languages(list(dict.fromkeys([*used, *lexicon.languages()])), registry, fallback)
        if refused:
            lexicon = opened(refused)
    return lexicon, used


def _read_tokens(path: Path) -> Counter[str]:
    """Whitespace tokens of a (possibly gzipped) UTF-8 text file."""
    counts: Counter[str] = Counter()
    for line in iter_lines(path, what="corpus file", error=CorpusError):
        counts.update(line.split())
    if not counts:
        raise CorpusError(f"{str(path)!r} has no tokens; check the corpus")
    return counts


def _train_file(data: Path, lang: str) -> Path:
    for name in ("train.txt", "train.txt.gz"):
        if (data / lang / name).is_file():
            return data / lang / name
    raise CorpusError(f"no {data / lang / 'train.txt'} (or .gz); corpora are laid out as <DIR>/<lang>/train.txt")


def lexicon_coverage(
    *,
    data: str | os.PathLike[str],
    langs: Sequence[str] | None = None,
    backend: str = "wn",
    specs: Sequence[str] | None = None,
    wn_dir: str | os.PathLike[str] | None = None,
    tsv: str | os.PathLike[str] | None = None,
    nltk_data: str | os.PathLike[str] | None = None,
    min_count: int = 1,
    languages: str | os.PathLike[str] | None = None,
    fallback: str | None = None,
) -> LexiconCoverageResult:
    """Share of each language's training vocabulary (types and tokens) with lexicon relations / a definition.

    Args:
        data: corpus directory laid out as ``<data>/<lang>/train.txt`` (or ``.gz``).
        langs: languages (default: those of ``specs``, else English).
        backend: ``wn``, ``nltk`` or ``tsv``.
        specs: wn lexicons, as ``lexicon info`` lists them (``omw-fr``, ``omw-fr:3.0``, ...).
        wn_dir: wn data folder (default ``$POLYGLOT_GROC_WN_DIR`` or wn's own).
        tsv: the TSV lexicon file (``backend="tsv"``).
        nltk_data: the NLTK data folder (``backend="nltk"``).
        min_count: only count word types seen at least this often.
        languages: a languages TOML file: user languages, their ``wordnets`` and ``fallback``.
        fallback: ``en`` or ``none`` for every language (wn); None: each language's registry entry
            (see :func:`no_fallback_languages`).

    Returns:
        A :class:`LexiconCoverageResult`; its ``to_dict()`` is what ``lexicon coverage --json`` prints.

    Raises:
        InputError: ``min_count`` below 1, an empty ``langs``, ``specs`` with another backend or
            languages they do not cover; CorpusError: a missing or unreadable training file;
            LexiconMissingError: no such lexicon installed.
    """
    from lexicons.service import LexiconService

    if min_count < 1:
        raise InputError(f"{option('min_count', min_count)} must be a positive count; pass 1 or more")
    if langs is not None and not [x for x in langs if x]:
        raise InputError(f"{option('langs')} needs at least one language code, e.g. {option('langs', 'en,fr')}")
    lexicon, lang_list = open_lexicon_for(backend, [x for x in langs or () if x], list(specs or ()), wn_dir, tsv,
                                          nltk_data, "--langs", languages=languages, fallback=fallback)
    service = LexiconService(lexicon)
    load = getattr(service.lexicon, "load", None)
    if callable(load):
        load()  # bulk lookups: read each wordnet (or its cache) into memory once, not row by row
    rows = []
    for lang in lang_list:
        counts = _read_tokens(_train_file(Path(data), lang))
        vocab = {w: c for w, c in counts.items() if c >= min_count}
        total_tokens = sum(vocab.values()) or 1
        n = dict.fromkeys(_KEYS, 0)
        tok = Counter[str]()
        t0 = time.perf_counter()
        for word, count in vocab.items():
            forms = service.lookup(word, [lang])
            flags = {
                "entry": forms.lang is not None,
                "related": bool(forms.related),
                "definition": bool(forms.definition),
                # the thesis kept only forms inside the vocabulary (extra_cap=0)
                "related_in_vocab": any(w in vocab for w in forms.related),
                "definition_in_vocab": any(w in vocab for w in forms.definition),
            }
            for key, hit in flags.items():
                if hit:
                    n[key] += 1
                    tok[key] += count
        types = max(len(vocab), 1)
        row: dict[str, Any] = {"lang": lang, "types": len(vocab), "tokens": sum(vocab.values())}
        row.update({f"{k}_pct": round(100.0 * v / types, 2) for k, v in n.items()})
        row.update({f"{k}_token_pct": round(100.0 * tok[k] / total_tokens, 2) for k in n})
        row["seconds"] = round(time.perf_counter() - t0, 2)
        rows.append(row)
    return LexiconCoverageResult(specs=list(service.lexicon.specs), coverage=rows)
