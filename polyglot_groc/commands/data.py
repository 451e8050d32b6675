"""``polyglot-groc data``: build the per-language corpora the models train on.

``data prepare`` has two modes, each a thin layer over one library function:

* ``--lang xx --input FILE [FILE...]``: the user's own text or CoNLL-U files, in any language the
  registry knows (built in, or defined in a ``--languages`` file), via
  :func:`langpairs.files.prepare_language`;
* ``--langs en,fr`` (or ``--preset crossdomain-en``): a fixed token budget per built-in language
  sampled from the shared text (``$POLYGLOT_GROC_DATA/text``), via
  :func:`langpairs.prepare.prepare_corpora`.

Both write ``<out>/<lang>/{train,valid,test}.txt`` plus ``<out>/prepare.json`` and print a summary
as JSON on stdout. Errors (unknown language, bad input file, impossible split, an existing language
without ``--overwrite``) are one line on stderr with exit code 2, via :func:`cli_errors`, and
nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from polyglot_groc.commands._common import (
    check_positive,
    cli_errors,
    deprecated_alias,
    language_codes,
    print_json,
    setup_logging,
)
from polyglot_groc.commands._options import LanguagesOption, VerboseOption, data_option, overwrite_option

app = typer.Typer(
    name="data",
    help="Prepare per-language train/valid/test corpora from your own files or the shared text.",
    no_args_is_help=True,
)

DATA_ENV = "POLYGLOT_GROC_DATA"


def files_summary(result: dict[str, Any], full: bool) -> dict[str, Any]:
    """What ``data prepare --input`` prints: the manifest entry, without digests unless ``full``."""
    if full:
        return result
    out = {k: v for k, v in result.items() if k not in ("inputs", "splits", "language")}
    out["inputs"] = [{k: v for k, v in x.items() if k != "sha256"} for x in result["inputs"]]
    out["splits"] = {split: {k: v for k, v in info.items() if k != "sha256"}
                     for split, info in result["splits"].items()}
    return out


def summarize(manifest: dict[str, Any], langs: list[str], out: Path, manifest_path: Path) -> dict[str, Any]:
    """The manifest without sources and digests: what a person checks after preparing.

    Only the languages of this call are listed; the manifest file also keeps languages
    prepared into ``out`` earlier.
    """
    languages: dict[str, Any] = {}
    for lang in langs:
        entry = manifest["languages"][lang]
        languages[lang] = {
            "tokenizer": entry["tokenizer"],
            "sentence_splitter": entry["sentence_splitter"],
            "short": entry["short"],
            "duplicates_dropped": entry["duplicates_dropped"],
            "sources": [source["name"] for source in entry["sources"]],
            "splits": {
                split: {"sentences": info["sentences"], "tokens": info["tokens"]}
                for split, info in entry["splits"].items()
            },
        }
    return {"out": str(out), "manifest": str(manifest_path), "languages": languages}


@app.command("prepare")
@cli_errors
def prepare(
    out: Annotated[Path, typer.Option("--out", help="Output folder: <out>/<lang>/{train,valid,test}.txt")],
    files: Annotated[list[Path] | None, typer.Argument(
        help="More input files (so --input a.txt b.txt works)", show_default=False)] = None,
    lang: Annotated[str | None, typer.Option(
        "--lang", help="Your own text: the language of --input (a built-in code or one from --languages)")] = None,
    inputs: Annotated[list[Path] | None, typer.Option(
        "--input", help="Your own text: UTF-8 text or .conllu files, optionally .gz (--input FILE FILE... or repeated)",
        show_default=False)] = None,
    text: Annotated[str, typer.Option(
        "--text", help="How plain-text input is read: lines (one sentence per line) | paragraphs (one paragraph "
                       "per line, split into sentences) | running (paragraphs between blank lines, lines "
                       "joined)")] = "lines",
    split_by: Annotated[str, typer.Option(
        "--split-by", help="What the train/valid/test cut keeps whole: line (sentence) | document (blank-line "
                           "block, conll-u # newdoc)")] = "line",
    valid: Annotated[str, typer.Option(
        "--valid", help="Valid split: a fraction of the tokens (0.1) or a token count (2000)")] = "0.1",
    test: Annotated[str, typer.Option(
        "--test", help="Test split: a fraction of the tokens (0.1) or a token count (2000)")] = "0.1",
    shuffle: Annotated[bool, typer.Option(
        "--shuffle", help="Cut after a seeded hash order of lines/documents (default: text order, held-out "
                          "text last)")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of --shuffle's order (recorded)")] = 0,
    dedupe: Annotated[bool, typer.Option("--dedupe", help="Drop repeated sentences (the first is kept)")] = False,
    clean: Annotated[str | None, typer.Option(
        "--clean", help="Your own text: what to remove before tokenising, comma-separated: ids (Leipzig's "
                        "'id<TAB>sentence'), markup (HTML/XML tags and entities), headers ('Title: ...' lines heading "
                        "the text or a block); all | none. Whatever is found and kept is warned about with counts",
        show_default="ids")] = None,
    languages: LanguagesOption = None,
    langs: Annotated[str | None, typer.Option(
        "--langs", help="Shared text: comma-separated built-in codes, e.g. en,fr,de")] = None,
    preset: Annotated[str | None, typer.Option(
        "--preset", help="crossdomain-en: <out>/<domain>/en/ corpora for cross-domain evaluation")] = None,
    finetune_tokens: Annotated[int, typer.Option(
        "--finetune-tokens", help="crossdomain-en: tokens of each far domain's finetuning (train) split")] = 250_000,
    data_root: Annotated[Path | None, data_option(f"Shared data folder (default: ${DATA_ENV})",
                                                  envvar=DATA_ENV)] = None,
    data_root_old: Annotated[Path | None, typer.Option("--data-root", hidden=True, help="Deprecated: --data")] = None,
    train_tokens: Annotated[int | None, typer.Option(
        "--train-tokens", help="Shared text: training tokens per language (default 200000; crossdomain-en: "
                               "1000000)")] = None,
    eval_tokens: Annotated[int | None, typer.Option(
        "--eval-tokens", help="Shared text: tokens each for valid and test (default 20000)")] = None,
    tokenize: Annotated[str | None, typer.Option(
        "--tokenize", "--tokenizer", help="toktok (default: rule-based, the same on every machine) | stanza "
                                          "(needs its models) | whitespace (pre-tokenised text); shared text also "
                                          "takes auto (stanza where installed, else toktok)")] = None,
    full: Annotated[bool, typer.Option("--full", help="Print the whole manifest entry (inputs, digests)")] = False,
    overwrite: Annotated[bool, overwrite_option(
        "Replace the language(s) already in --out (--preset crossdomain-en: the whole --out)")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Tokenise your own files (--lang xx --input FILE...) or sample the shared text (--langs en,fr) into
    train/valid/test; deterministic, recorded in <out>/prepare.json."""
    from groc_base.errors import ConfigError

    setup_logging(verbose)
    if lang is not None or inputs or files:  # your own text: langpairs.files.prepare_language
        from langpairs.files import prepare_language
        from langpairs.registry import load_registry

        paths = [*(inputs or []), *(files or [])]
        lang = _files_language(lang, paths, {
            "--langs": langs, "--preset": preset, "--train-tokens": train_tokens, "--eval-tokens": eval_tokens})
        result = prepare_language(lang=lang, inputs=paths, out=out,
                                  registry=load_registry(languages, env=False), text=text, tokenizer=tokenize,
                                  split_by=split_by, valid=valid, test=test, shuffle=shuffle, seed=seed,
                                  dedupe=dedupe, clean=clean, overwrite=overwrite)
        print_json(files_summary(result.to_dict(), full))
        return
    if clean is not None:
        raise ConfigError("--clean applies to your own text (--lang xx --input FILE); the shared text is read in "
                          "its own formats")
    codes: list[str] = []
    if langs:
        # Unknown ones without --languages: the shared text's message (how to prepare your own text).
        codes = language_codes(langs, languages)
    data_root = deprecated_alias("--data", "--data-root", data_root, data_root_old)
    eval_budget = 20_000 if eval_tokens is None else eval_tokens
    check_positive(train_tokens=1 if train_tokens is None else train_tokens, eval_tokens=eval_budget)
    if data_root is None or not str(data_root).strip():
        raise ConfigError(f"no data root given; pass --data DIR or set ${DATA_ENV} to the shared data folder "
                          f"(or prepare your own text with --lang xx --input FILE)")
    # prepare_corpora would also fail, but with a message about missing subfolders; a wrong
    # path is the common mistake, so name it.
    if not data_root.is_dir():
        from groc_base.errors import CorpusError

        raise CorpusError(
            f"data root {data_root} does not exist or is not a folder; pass --data or set ${DATA_ENV}"
        )
    if preset is not None:
        if preset != "crossdomain-en":
            raise ConfigError(f"--preset {preset!r} is unknown; use crossdomain-en")
        from langpairs.crossdomain import prepare_crossdomain_en

        budget = 1_000_000 if train_tokens is None else train_tokens
        print_json(prepare_crossdomain_en(data_root, out, budget, eval_budget, finetune_tokens, overwrite=overwrite))
        return
    if not langs:
        raise ConfigError("--langs is required (e.g. --langs en,fr) unless --preset is given; for your own text "
                          "pass --lang xx --input FILE")
    from langpairs.prepare import MANIFEST_NAME, prepare_corpora

    budget = 200_000 if train_tokens is None else train_tokens
    manifest = prepare_corpora(data_root, out, codes, budget, eval_budget, tokenize=tokenize or "toktok",
                               overwrite=overwrite)
    print_json(manifest if full else summarize(manifest, codes, out, out / MANIFEST_NAME))


def _files_language(lang: str | None, inputs: list[Path], shared_only: dict[str, Any]) -> str:
    """``data prepare --lang xx --input FILE...``: the language, once the files are there and none of the shared
    text's options is given."""
    from groc_base.errors import ConfigError

    given = [flag for flag, value in shared_only.items() if value is not None]
    if given:
        raise ConfigError(f"{', '.join(given)} belong(s) to preparing the shared text; with --lang/--input use "
                          f"--valid/--test for the split sizes, or drop --input to sample the shared text")
    if lang is None:
        raise ConfigError("--input needs --lang, the language of the files (e.g. --lang ceb); define a new one in "
                          "a --languages file")
    if not inputs:
        raise ConfigError(f"--lang {lang} needs --input FILE (text, .conllu or .gz), one or more")
    return lang
