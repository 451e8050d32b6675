"""``polyglot-groc data``: build the per-language corpora the models train on.

``data prepare`` is a thin layer over :func:`langpairs.prepare.prepare_corpora`: it samples a
fixed token budget per language from the shared text (``$POLYGLOT_GROC_DATA/text``) into
``<out>/<lang>/{train,valid,test}.txt`` plus ``<out>/prepare.json``, and prints a summary of
what it wrote as JSON on stdout. Errors (no data root, unknown language, bad budget) are one
line on stderr with exit code 2, via :func:`cli_errors`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from polyglot_groc.commands._common import check_positive, cli_errors, deprecated_alias, print_json, setup_logging

app = typer.Typer(
    help="Prepare per-language train/valid/test corpora from the shared text.",
    no_args_is_help=True,
)

DATA_ENV = "POLYGLOT_GROC_DATA"


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
    langs: Annotated[str | None, typer.Option("--langs", help="Comma-separated codes, e.g. en,fr,de")] = None,
    preset: Annotated[str | None, typer.Option(
        "--preset", help="crossdomain-en: <out>/<domain>/en/ corpora for cross-domain evaluation")] = None,
    finetune_tokens: Annotated[int, typer.Option(
        "--finetune-tokens", help="crossdomain-en: tokens of each far domain's finetuning (train) split")] = 250_000,
    data_root: Annotated[
        Path | None,
        typer.Option("--data", envvar=DATA_ENV, help=f"Shared data folder (default: ${DATA_ENV})"),
    ] = None,
    data_root_old: Annotated[Path | None, typer.Option("--data-root", hidden=True, help="Deprecated: --data")] = None,
    train_tokens: Annotated[int | None, typer.Option(
        "--train-tokens", help="Training tokens per language (default 200000; crossdomain-en: 1000000)")] = None,
    eval_tokens: Annotated[int, typer.Option("--eval-tokens", help="Tokens each for valid and test")] = 20_000,
    tokenize: Annotated[str, typer.Option("--tokenize", help="auto | stanza | toktok | whitespace")] = "auto",
    full: Annotated[bool, typer.Option("--full", help="Print the whole manifest (sources, digests)")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace existing corpus files in --out")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Sample fixed-budget train/valid/test text per language (reproducible; see prepare.json)."""
    from groc_base.errors import ConfigError, CorpusError
    from langpairs.prepare import MANIFEST_NAME, prepare_corpora

    setup_logging(verbose)
    data_root = deprecated_alias("--data", "--data-root", data_root, data_root_old)
    check_positive(train_tokens=1 if train_tokens is None else train_tokens, eval_tokens=eval_tokens)
    if data_root is None or not str(data_root).strip():
        raise ConfigError(f"no data root given; pass --data DIR or set ${DATA_ENV} to the shared data folder")
    # prepare_corpora would also fail, but with a message about missing subfolders; a wrong
    # path is the common mistake, so name it.
    if not data_root.is_dir():
        raise CorpusError(
            f"data root {data_root} does not exist or is not a folder; pass --data or set ${DATA_ENV}"
        )
    if preset is not None:
        if preset != "crossdomain-en":
            raise ConfigError(f"--preset {preset!r} is unknown; use crossdomain-en")
        from langpairs.crossdomain import prepare_crossdomain_en

        budget = 1_000_000 if train_tokens is None else train_tokens
        print_json(prepare_crossdomain_en(data_root, out, budget, eval_tokens, finetune_tokens))
        return
    if not langs:
        raise ConfigError("--langs is required (e.g. --langs en,fr) unless --preset is given")
    codes = list(dict.fromkeys(code.strip().lower() for code in langs.split(",") if code.strip()))
    budget = 200_000 if train_tokens is None else train_tokens
    manifest = prepare_corpora(data_root, out, codes, budget, eval_tokens, tokenize=tokenize, overwrite=overwrite)
    print_json(manifest if full else summarize(manifest, codes, out, out / MANIFEST_NAME))
