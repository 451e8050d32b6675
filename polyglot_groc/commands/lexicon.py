"""``polyglot-groc lexicon``: install wordnets offline, inspect them, and measure vocabulary coverage.

Thin layer over :mod:`lexicons` (coverage: :func:`polyglot_groc.analysis.lexicon.lexicon_coverage`);
every command is wrapped by :func:`cli_errors`, so a missing
wordnet or a malformed file is one line on stderr and exit code 2.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from groc_base.errors import InputError
from groc_base.wording import counted
from polyglot_groc.commands._common import cli_errors, console, language_codes, print_json, setup_logging
from polyglot_groc.commands._options import data_option, languages_option

app = typer.Typer(
    name="lexicon",
    help="Wordnets for GroC's relational and definitional forms: import, info, lookup, coverage.",
    no_args_is_help=True,
)

_WN_DIR = typer.Option(
    None, "--wn-dir", envvar="POLYGLOT_GROC_WN_DIR", help="wn data directory (default: wn's own, ~/.wn_data)."
)
_BACKEND = typer.Option("wn", "--backend", help="Lexicon backend: wn, nltk or tsv.")
_TSV = typer.Option(None, "--tsv", help="TSV lexicon file (with --backend tsv).")
_NLTK = typer.Option(None, "--nltk-data", envvar="NLTK_DATA", help="NLTK data directory (with --backend nltk).")
_LANGUAGES = languages_option("Languages TOML file adding your own languages; their wordnets and fallback settings "
                              "apply (default: $POLYGLOT_GROC_LANGUAGES).")
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


def _refused(lexicon: Any) -> list[str]:
    return list((getattr(lexicon, "settings", None) or {}).get("no_fallback", []))


def _sources(lexicon: Any) -> str:
    """Which lexicons a lookup used: the selected ones, and those that only lend glosses."""
    selected = list(getattr(lexicon, "selected_specs", lexicon.specs))
    gloss = [x for x in getattr(lexicon, "gloss_specs", []) if x not in selected]
    refused = _refused(lexicon)
    text = ", ".join(selected) + (f"; glosses also from {', '.join(gloss)}" if gloss else "")
    if refused:
        text += f" (not for {', '.join(refused)}: no English fallback)" if gloss else \
            f"; no English fallback for {', '.join(refused)}"
    return text


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
    # The specifier is what --lexicon and languages files take: always whole, on one line (a
    # narrow terminal folds the label instead).
    table.add_column("spec", no_wrap=True, min_width=max((len(r["spec"]) for r in rows), default=4))
    table.add_column("language", no_wrap=True)
    for col in ("synsets", "words", "senses"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("label", overflow="fold")
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
    languages: Annotated[Path | None, _LANGUAGES] = None,
    fallback: str | None = _FALLBACK,
) -> None:
    """Print a word's relational and definitional forms (a short summary, or JSON with --json).

    Related words are separated by ' | ' (one may hold spaces: canis familiaris); JSON gives a list.
    Every definition is labelled with its language: a word of a built-in language without a gloss
    in its own language gets the English one (through ILI); other languages only with --fallback en
    or fallback = "en" in their --languages entry.
    """
    from lexicons.service import LexiconService
    from polyglot_groc.analysis.lexicon import open_lexicon_for

    setup_logging(False, progress=("lexicons",))  # the first read of a wordnet takes a while: say so
    langs = _split(lang)
    if lang is not None and not langs:
        raise InputError("--lang needs at least one language code, e.g. --lang fr")
    lexicon, langs = open_lexicon_for(backend, langs, _split(specs), wn_dir, tsv, nltk_data, "--lang",
                                      languages=languages, fallback=fallback)
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
                "no_fallback": _refused(lexicon),
            }
        )
        return
    # Plain lines, never re-wrapped: one line per field, related words split by " | ".
    found = forms.lang or f"not found in {','.join(langs)}"
    typer.echo(f"{word} ({found}; {_sources(lexicon)})")
    related = " | ".join(forms.related) or "-"
    typer.echo(f"  related ({len(forms.related)}, GroC uses {min(max_related, len(forms.related))}): {related}")
    if forms.definition:
        lang = forms.definition_lang or "language unknown"
        typer.echo(f"  definition ({lang}, {counted(len(forms.definition), 'token')}, "
                   f"GroC uses {min(max_definition, len(forms.definition))}): {' '.join(forms.definition)}")
    else:
        typer.echo("  definition: -")


@app.command("coverage")
@cli_errors
def coverage(
    data: Annotated[Path, data_option("Corpus directory laid out as <DIR>/<lang>/train.txt.")],
    langs: str | None = typer.Option(
        None, "--langs", help="Languages, comma-separated (default: the languages of --specs, else en)."),
    backend: str = _BACKEND,
    specs: str | None = _SPECS,
    wn_dir: Path | None = _WN_DIR,
    tsv: Path | None = _TSV,
    nltk_data: Path | None = _NLTK,
    min_count: int = typer.Option(1, help="Only count word types seen at least this often."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    languages: Annotated[Path | None, _LANGUAGES] = None,
    fallback: str | None = _FALLBACK,
) -> None:
    """Share of each language's vocabulary (types and tokens) with relations / a definition."""
    from polyglot_groc.analysis.lexicon import lexicon_coverage

    setup_logging(False, progress=("lexicons",))
    res = lexicon_coverage(data=data, langs=_split(langs) if langs is not None else None, backend=backend,
                           specs=_split(specs), wn_dir=wn_dir, tsv=tsv, nltk_data=nltk_data, min_count=min_count,
                           languages=languages, fallback=fallback)
    if as_json:
        print_json(res.to_dict())
        return
    rows = res.coverage
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
    data: Annotated[Path | None, data_option(
        "Shared data root (wordnet/, omw/; a tab FILE takes its ILI map and PWN 3.0 relations from there).",
        envvar="POLYGLOT_GROC_DATA")] = None,
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

    # An import takes about a minute: its steps show; so do "waiting for another import" and the
    # importer's warnings, one line each.
    setup_logging(False, progress=("lexicons",))
    if file is not None:
        from lexicons.user_import import import_wordnet_file

        if langs is not None:
            raise InputError("--langs installs the shared data's wordnets; with a FILE leave it out (a tab file takes "
                             "--lang)")
        t0 = time.perf_counter()
        result = import_wordnet_file(path=file, wn_dir=wn_dir, lang=lang, ili_map=ili_map, data_root=data, force=force)
        print_json({**result.to_dict(), "seconds": round(time.perf_counter() - t0, 1)})
        return
    if lang is not None or ili_map is not None:
        raise InputError("--lang and --ili-map describe a tab FILE; give the file (lexicon import FILE --lang xx), or "
                         "use --langs to install the shared data's wordnets")
    lang_list = language_codes(langs if langs is not None else "en,fr")  # "tgl", "Tagalog": "tl"
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
