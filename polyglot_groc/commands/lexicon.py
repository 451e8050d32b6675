"""``polyglot-groc lexicon``: install wordnets offline, inspect them, and measure vocabulary coverage.

Thin layer over :mod:`lexicons`; every command is wrapped by :func:`cli_errors`, so a missing
wordnet or a malformed file is one line on stderr and exit code 2.
"""

from __future__ import annotations

import gzip
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from groc_base.errors import CorpusError, InputError
from polyglot_groc.commands._common import cli_errors, console, print_json

app = typer.Typer(
    help="Wordnets for GroC's relational and definitional forms: import, info, lookup, coverage.",
    no_args_is_help=True,
)

_WN_DIR = typer.Option(
    None, "--wn-dir", envvar="POLYGLOT_GROC_WN_DIR", help="wn data directory (default: wn's own, ~/.wn_data)."
)
_BACKEND = typer.Option("wn", "--backend", help="Lexicon backend: wn, nltk or tsv.")
_TSV = typer.Option(None, "--tsv", help="TSV lexicon file (with --backend tsv).")
_NLTK = typer.Option(None, "--nltk-data", envvar="NLTK_DATA", help="NLTK data directory (with --backend nltk).")
_LANGUAGES = typer.Option(None, "--languages", envvar="POLYGLOT_GROC_LANGUAGES", show_default=False,
                          help="Languages TOML file adding your own languages; their wordnets and fallback "
                               "settings apply (default: $POLYGLOT_GROC_LANGUAGES).")
_FALLBACK = typer.Option(None, "--fallback", show_default=False,
                         help="wn: en = glosses and hyponyms from the English wordnet through ILI where a word's own "
                              "wordnet has none; none = only its own (default: each language's registry entry: the "
                              "built-in ten borrow, other languages only with fallback = \"en\").")
_SPECS = typer.Option(
    None, "--specs", help="wn lexicons to use, comma-separated, as `lexicon info` lists them: omw-fr, omw-fr:3.0 or "
                          "omw-fr:3.0+<hash> (default: the installed wordnets of the languages)."
)


def _split(value: str | None) -> list[str]:
    return [x.strip() for x in (value or "").split(",") if x.strip()]


def _languages(lexicon: Any, given: list[str], specs: list[str], flag: str) -> list[str]:
    """The languages to look words up in: as given, else those of the --specs lexicons.

    With --specs the given languages must be theirs: looking French lexicons up in English would
    find nothing (the default --lang used to be en whatever --specs said).
    """
    from lexicons.protocol import normalize_lang

    covered = list(lexicon.languages())
    if not given:
        return covered
    missing = [x for x in given if normalize_lang(x) not in covered]
    if specs and missing:
        raise InputError(f"{flag} {','.join(missing)} is not a language of --specs {','.join(specs)} (they cover "
                         f"{','.join(covered) or 'none'}); pass {flag} {','.join(covered)}, or add a lexicon of "
                         f"{','.join(missing)} to --specs")
    return given


def _check_fallback(fallback: str | None) -> None:
    if fallback not in (None, "en", "none"):
        raise InputError(f"--fallback {fallback!r} is unknown; use en (glosses and hyponyms from the English "
                         f"wordnet through ILI) or none (only the language's own wordnet)")


def _no_fallback(langs: list[str], registry: Any, fallback: str | None) -> list[str]:
    """The languages that must not borrow English glosses or hyponyms through ILI.

    ``--fallback en``: none; ``--fallback none``: all; unset: each language's registry entry
    (the built-in ten borrow, as in the thesis; a user language only with ``fallback = "en"``;
    a language the registry does not know never does).
    """
    from lexicons.protocol import normalize_lang

    _check_fallback(fallback)
    if fallback == "en":
        return []
    if fallback == "none":
        return list(langs)
    return [x for x in langs if normalize_lang(x) != "en" and (x not in registry or registry.get(x).fallback is None)]


def _open(backend: str, langs: list[str], specs: str | None, wn_dir: Path | None, tsv: Path | None,
          nltk_data: Path | None, flag: str, languages: Path | None = None,
          fallback: str | None = None) -> tuple[Any, list[str]]:
    """The lexicon the options name, and the languages to use it in (see :func:`_languages`).

    Without --specs, a language whose registry entry (built in, or from --languages) names
    ``wordnets`` uses those; the wn backend lends English glosses only where :func:`_no_fallback`
    allows it.
    """
    from langpairs.registry import load_registry

    chosen = _split(specs)
    if chosen and backend != "wn":
        raise InputError(f"--specs selects wn lexicons; with --backend {backend} leave it out "
                         "(the tsv backend reads --tsv, the nltk backend --nltk-data)")
    _check_fallback(fallback)
    if fallback is not None and backend != "wn":
        raise InputError(f"--fallback is for the wn backend; with --backend {backend} leave it out")
    registry = load_registry(languages, env=False)
    wanted = langs or ([] if chosen else ["en"])
    lang_specs = {x: list(registry.get(x).wordnets) for x in wanted if x in registry and registry.get(x).wordnets}
    lexicon = _lexicon(backend, wanted, specs, wn_dir, tsv, nltk_data, lang_specs=lang_specs)
    langs = _languages(lexicon, wanted, chosen, flag)
    if backend == "wn":
        refused = _no_fallback(list(dict.fromkeys([*langs, *lexicon.languages()])), registry, fallback)
        if refused:
            lexicon = _lexicon(backend, wanted, specs, wn_dir, tsv, nltk_data, lang_specs=lang_specs,
                               no_fallback=refused)
    return lexicon, langs


def registry_lexicon(lex: Any, kind: str, codes: Sequence[str], registry: Any) -> Any:
    """A run's lexicon config with its languages' registry settings applied (``train`` calls it).

    Languages whose entry has no ``fallback = "en"`` go to ``no_fallback`` (unless the config
    sets it); for groc-lex on the wn backend without explicit specs, languages whose entry names
    ``wordnets`` use those, and the specs are resolved now (``id:version``), so the run records
    exactly the lexicons it used.
    """
    import dataclasses

    refused = tuple(c for c in codes if c != "en" and registry.get(c).fallback is None)
    if refused and not lex.no_fallback:
        lex = dataclasses.replace(lex, no_fallback=refused)
    wordnets = {c: list(registry.get(c).wordnets) for c in codes if registry.get(c).wordnets}
    if wordnets and not lex.specs and lex.backend == "wn" and kind == "groc-lex":
        from lexicons.service import open_lexicon

        opened = open_lexicon("wn", langs=list(codes), lang_specs=wordnets, wn_dir=lex.wn_dir or None)
        lex = dataclasses.replace(lex, specs=tuple(getattr(opened, "selected_specs", opened.specs)))
    return lex


def _sources(lexicon: Any) -> str:
    """Which lexicons a lookup used: the selected ones, and those that only lend glosses."""
    selected = list(getattr(lexicon, "selected_specs", lexicon.specs))
    gloss = [x for x in getattr(lexicon, "gloss_specs", []) if x not in selected]
    refused = (getattr(lexicon, "settings", None) or {}).get("no_fallback", [])
    text = ", ".join(selected) + (f"; glosses also from {', '.join(gloss)}" if gloss else "")
    if refused:
        text += f" (not for {', '.join(refused)}: no English fallback)" if gloss else \
            f"; no English fallback for {', '.join(refused)}"
    return text


def _lexicon(
    backend: str, langs: list[str], specs: str | None, wn_dir: Path | None, tsv: Path | None, nltk_data: Path | None,
    lang_specs: dict[str, list[str]] | None = None, no_fallback: list[str] | None = None,
):  # type: ignore[no-untyped-def]
    from groc_base.cache import default_cache_root
    from lexicons.service import open_lexicon

    # The wordnets' loaded data is cached on disk: only the first call after an import reads the
    # whole database (and tokenises every gloss); later calls load one file.
    return open_lexicon(backend, specs=_split(specs) or None, langs=langs, wn_dir=wn_dir, nltk_data=nltk_data,
                        tsv=tsv, cache_dir=default_cache_root() / "wordnets", lang_specs=lang_specs or None,
                        no_fallback=no_fallback or ())


@app.command("info")
@cli_errors
def info(wn_dir: Path | None = _WN_DIR, as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List installed wordnets with their language and synset / word counts."""
    from lexicons.wn_backend import default_wn_dir, installed_lexicons

    where = wn_dir or default_wn_dir()
    rows = installed_lexicons(where)
    if as_json:
        print_json({"wn_dir": str(where), "lexicons": rows})
        return
    table = Table(title=f"wordnets in {where}")
    for col in ("spec", "language", "synsets", "words", "senses", "label"):
        table.add_column(col, justify="right" if col in ("synsets", "words", "senses") else "left")
    for row in rows:
        table.add_row(
            row["spec"], row["language"], f"{row['synsets']:,}", f"{row['words']:,}", f"{row['senses']:,}", row["label"]
        )
    console.print(table)


@app.command("lookup")
@cli_errors
def lookup(
    word: str = typer.Argument(..., help="The word to look up."),
    lang: str | None = typer.Option(
        None, "--lang", help="Language(s) in priority order, comma-separated, e.g. fr,en (default: the languages of "
                             "--specs, else en)."),
    backend: str = _BACKEND,
    specs: str | None = _SPECS,
    wn_dir: Path | None = _WN_DIR,
    tsv: Path | None = _TSV,
    nltk_data: Path | None = _NLTK,
    max_related: int = typer.Option(3, help="Related words GroC uses (the first ones; counted in the output)."),
    max_definition: int = typer.Option(10, help="Definition tokens GroC uses."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    languages: Path | None = _LANGUAGES,
    fallback: str | None = _FALLBACK,
) -> None:
    """Print a word's relational and definitional forms (a short summary, or JSON with --json).

    Related words are separated by ' | ' (one may hold spaces: canis familiaris); JSON gives a list.
    Every definition is labelled with its language: a word of a built-in language without a gloss
    in its own language gets the English one (through ILI); other languages only with --fallback en
    or fallback = "en" in their --languages entry.
    """
    from lexicons.service import LexiconService

    langs = _split(lang)
    if lang is not None and not langs:
        raise InputError("--lang needs at least one language code, e.g. --lang fr")
    lexicon, langs = _open(backend, langs, specs, wn_dir, tsv, nltk_data, "--lang", languages, fallback)
    service = LexiconService(lexicon, max_related, max_definition)
    forms = service.lookup(word, langs)
    if as_json:
        print_json(
            {
                "word": word,
                "lang": forms.lang,
                "related": forms.related,
                "definition": forms.definition,
                "definition_lang": forms.definition_lang,
                "used_related": forms.related[:max_related],
                "used_definition": forms.definition[:max_definition],
                "specs": service.lexicon.specs,
                "lexicons": list(getattr(lexicon, "selected_specs", lexicon.specs)),
                "gloss_lexicons": list(getattr(lexicon, "gloss_specs", [])),
                "no_fallback": list((getattr(lexicon, "settings", None) or {}).get("no_fallback", [])),
            }
        )
        return
    # Plain lines, never re-wrapped: one line per field, related words split by " | ".
    found = forms.lang or f"not found in {','.join(langs)}"
    typer.echo(f"{word} ({found}; {_sources(lexicon)})")
    related = " | ".join(forms.related) or "-"
    typer.echo(f"  related ({len(forms.related)}, GroC uses {min(max_related, len(forms.related))}): {related}")
    if forms.definition:
        typer.echo(f"  definition ({forms.definition_lang or 'language unknown'}, {len(forms.definition)} tokens, "
                   f"GroC uses {min(max_definition, len(forms.definition))}): {' '.join(forms.definition)}")
    else:
        typer.echo("  definition: -")


def _read_tokens(path: Path) -> Counter[str]:
    """Whitespace tokens of a (possibly gzipped) UTF-8 text file."""
    opener = gzip.open if path.suffix == ".gz" else open
    counts: Counter[str] = Counter()
    try:
        with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            for line in fh:
                counts.update(line.split())
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{str(path)!r} is not utf-8 text ({exc}); convert it to utf-8") from exc
    except OSError as exc:
        raise CorpusError(f"cannot read {str(path)!r}: {exc}") from exc
    if not counts:
        raise CorpusError(f"{str(path)!r} has no tokens; check the corpus")
    return counts


def _train_file(data: Path, lang: str) -> Path:
    for name in ("train.txt", "train.txt.gz"):
        if (data / lang / name).is_file():
            return data / lang / name
    raise CorpusError(f"no {data / lang / 'train.txt'} (or .gz); corpora are laid out as <DIR>/<lang>/train.txt")


@app.command("coverage")
@cli_errors
def coverage(
    data: Path = typer.Option(..., "--data", help="Corpus directory laid out as <DIR>/<lang>/train.txt."),
    langs: str | None = typer.Option(
        None, "--langs", help="Languages, comma-separated (default: the languages of --specs, else en)."),
    backend: str = _BACKEND,
    specs: str | None = _SPECS,
    wn_dir: Path | None = _WN_DIR,
    tsv: Path | None = _TSV,
    nltk_data: Path | None = _NLTK,
    min_count: int = typer.Option(1, help="Only count word types seen at least this often."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    languages: Path | None = _LANGUAGES,
    fallback: str | None = _FALLBACK,
) -> None:
    """Share of each language's vocabulary (types and tokens) with relations / a definition."""
    from lexicons.service import LexiconService

    if min_count < 1:
        raise InputError(f"--min-count={min_count} must be a positive count; pass 1 or more")
    lang_list = _split(langs)
    if langs is not None and not lang_list:
        raise InputError("--langs needs at least one language code, e.g. --langs en,fr")
    lexicon, lang_list = _open(backend, lang_list, specs, wn_dir, tsv, nltk_data, "--langs", languages, fallback)
    service = LexiconService(lexicon)
    load = getattr(service.lexicon, "load", None)
    if callable(load):
        load()  # bulk lookups: read each wordnet (or its cache) into memory once, not row by row
    rows = []
    for lang in lang_list:
        counts = _read_tokens(_train_file(data, lang))
        vocab = {w: c for w, c in counts.items() if c >= min_count}
        total_tokens = sum(vocab.values()) or 1
        n = {"entry": 0, "related": 0, "definition": 0, "related_in_vocab": 0, "definition_in_vocab": 0}
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
        row: dict[str, object] = {"lang": lang, "types": len(vocab), "tokens": sum(vocab.values())}
        row.update({f"{k}_pct": round(100.0 * v / types, 2) for k, v in n.items()})
        row.update({f"{k}_token_pct": round(100.0 * tok[k] / total_tokens, 2) for k in n})
        row["seconds"] = round(time.perf_counter() - t0, 2)
        rows.append(row)
    if as_json:
        print_json({"specs": service.lexicon.specs, "coverage": rows})
        return
    table = Table(title="lexicon coverage of the vocabulary (% of types; tokens in brackets)")
    for col in ("lang", "types", "entry", "related", "definition", "related in vocab", "definition in vocab"):
        table.add_column(col, justify="left" if col == "lang" else "right")
    for row in rows:
        cells = [
            f"{row[f'{k}_pct']:.1f} ({row[f'{k}_token_pct']:.1f})"
            for k in ("entry", "related", "definition", "related_in_vocab", "definition_in_vocab")
        ]
        table.add_row(str(row["lang"]), f"{row['types']:,}", *cells)
    console.print(table)


@app.command("import")
@cli_errors
def import_(
    file: Path | None = typer.Argument(
        None, show_default=False,
        help="Your own wordnet: WN-LMF XML (.xml, .xml.gz; wn's format) or an OMW tab file (.tab, PWN 3.0 offsets). "
             "Without it: the shared data's PWN 3.0 + OMW wordnets of --langs."),
    data: Path | None = typer.Option(
        None, "--data", envvar="POLYGLOT_GROC_DATA", help="Shared data root (wordnet/, omw/; a tab FILE takes its ILI "
                                                          "map and PWN 3.0 relations from there)."
    ),
    langs: str | None = typer.Option(
        None, "--langs", help="Without FILE: languages to install from the shared data, comma-separated (en is always "
                              "added; default en,fr).", show_default=False),
    lang: str | None = typer.Option(None, "--lang", help="Tab FILE: its language code (default: the file's own label).",
                                    show_default=False),
    ili_map: Path | None = typer.Option(
        None, "--ili-map", show_default=False,
        help="Tab FILE: the ILI map ili-map-pwn30.tab (default: omw/ili-map-pwn30.tab under --data)."),
    wn_dir: Path | None = _WN_DIR,
    force: bool = typer.Option(False, "--force", help="Re-install lexicons that are already installed."),
) -> None:
    """Install wordnets offline: your own WN-LMF or OMW tab FILE, or PWN 3.0 + OMW from the shared data.

    Prints the installed specifiers (id:version, as wn reports them): name them in train --lexicon,
    lexicon lookup --specs, or a language's wordnets = [...] in a --languages file.
    """
    from lexicons.omw_import import import_omw
    from lexicons.wn_backend import default_wn_dir

    if file is not None:
        from lexicons.user_import import import_wordnet_file

        if langs is not None:
            raise InputError("--langs installs the shared data's wordnets; with a FILE leave it out (a tab file takes "
                             "--lang)")
        t0 = time.perf_counter()
        result = import_wordnet_file(file, wn_dir=wn_dir, lang=lang, ili_map=ili_map, data_root=data, force=force)
        print_json({**result.to_dict(), "seconds": round(time.perf_counter() - t0, 1)})
        return
    if lang is not None or ili_map is not None:
        raise InputError("--lang and --ili-map describe a tab FILE; give the file (lexicon import FILE --lang xx), or "
                         "use --langs to install the shared data's wordnets")
    lang_list = _split(langs if langs is not None else "en,fr")
    if not lang_list:
        raise InputError("--langs needs at least one language code, e.g. --langs en,fr")
    t0 = time.perf_counter()
    specs = import_omw(data, lang_list, wn_dir, force=force)
    print_json(
        {"installed": specs, "wn_dir": str(wn_dir or default_wn_dir()), "seconds": round(time.perf_counter() - t0, 1)}
    )


@app.command("download")
@cli_errors
def download(
    spec: str = typer.Argument(..., help="A project in wn's download index, e.g. omw-fr:1.4 (installed under that "
                                         "specifier; `lexicon import` installs omw-fr:3.0+<hash> offline)."),
    wn_dir: Path | None = _WN_DIR,
) -> None:
    """Download a wordnet with wn (needs network; offline, use `lexicon import`)."""
    from lexicons.omw_import import download as wn_download
    from lexicons.wn_backend import default_wn_dir

    installed = wn_download(spec, wn_dir)
    print_json({"installed": installed, "wn_dir": str(wn_dir or default_wn_dir())})


__all__ = ["app"]
