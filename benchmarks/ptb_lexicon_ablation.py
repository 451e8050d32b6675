"""Seed 000 Table 3 in miniature: GroC+lex on PTB with and without relational / definitional forms.

Four ``groc-lex`` models on PTB at one small step budget (the flags and defaults of
``ptb_groc_vs_lookup.py``), identical but for the lexicon forms they see:

  ``full``            GroC+lex: relations (synonyms + hyponyms, <= 3) and definitions (<= 10 tokens)
  ``no-relations``    GroC-relations: ``model.lexicon.use_relations=false``
  ``no-definitions``  GroC-definitions: ``model.lexicon.use_definitions=false``
  ``neither``         GroC-both: both false, still ``groc-lex``, so the architecture (the 3d -> d projection
                      of <surface, relations, definitions> included) and the parameter count are
                      those of the full model; only the forms are zero vectors

Forms come from the wn backend (``--wn-dir``, default ``$POLYGLOT_GROC_WN_DIR``; lexicons by
``--lexicon SPEC...`` or, without it, every installed English wordnet).  ``--extra-cap 0`` (the
default) is the thesis setting: forms only from in-vocabulary words, which also makes a step much
cheaper than encoding thousands of extra words.  Prints ONE JSON object: best-checkpoint valid
perplexity of each model and its difference from the full model, the PTB vocabulary coverage the
lexicon service measured (the seed reports 78% with relations, 86% with definitions), extra-word
counts, what the placeholder tokens got, and timings.  Compiled forms are cached under
``--work``/cache (unless ``$POLYGLOT_GROC_CACHE`` is set).

    polyglot-groc lexicon import --langs en --wn-dir /tmp/bench/wn   # once, offline
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/ptb_lexicon_ablation.py \\
        --wn-dir /tmp/bench/wn --steps 300 --threads 2

Cost: four GroC trainings at that budget (a groc-lex step also averages the forms' surface
encodings) plus, on a cold cache, ~6 s of PWN bulk load and compile per model; the smoke run below
takes ~40 s cold, ~20 s cached.

Smoke test (seconds of training; the valid evaluations and the lexicon load dominate)::

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/ptb_lexicon_ablation.py --wn-dir /tmp/bench/wn \\
        --work /tmp/ablation-smoke --steps 2 --d 16 --hidden 16 --filters 1:4,2:4 --batch-size 4 \\
        --eval-every 0 --threads 1
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    DEFAULT_FILTERS,
    FULL_SOFTMAX,
    BadInput,
    add_output_args,
    add_ptb_training_args,
    emit,
    parse_filters,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)

#: name -> (Table 3 row, use_relations, use_definitions)
VARIANTS: dict[str, tuple[str, bool, bool]] = {
    "full": ("GroC+lex", True, True),
    "no-relations": ("GroC-relations", False, True),
    "no-definitions": ("GroC-definitions", True, False),
    "neither": ("GroC-both", False, False),
}
#: Seed 000 §4 (PTB vocabulary covered by WordNet 3.0 through NLTK).
SEED_COVERAGE = {"with_relations_pct": 78.0, "with_definitions_pct": 86.0}
#: PTB's normalisation tokens, looked up like any word (no special case, on purpose).
PLACEHOLDERS = ("N", "<unk>", "$", "<eos>")


def _pct(value: float | None) -> float | None:
    return None if value is None else round(float(value), 2)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/ptb_lexicon"))
    add_ptb_training_args(ap)
    ap.add_argument("--filters", default=DEFAULT_FILTERS, help="Char-CNN width:count pairs")
    ap.add_argument("--extra-cap", type=int, default=0,
                    help="Out-of-vocabulary form words encoded too (0: the thesis, in-vocabulary forms only)")
    ap.add_argument("--wn-dir", default=os.environ.get("POLYGLOT_GROC_WN_DIR", ""),
                    help="wn data folder (default $POLYGLOT_GROC_WN_DIR, else wn's own)")
    ap.add_argument("--lexicon", nargs="+", default=None, metavar="SPEC",
                    help="wn lexicon specs (default: the installed English wordnets)")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"Subset of {','.join(VARIANTS)}")
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for every model")
    add_output_args(ap)
    args = ap.parse_args()
    args.variant_list = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in args.variant_list if v not in VARIANTS]
    if unknown or not args.variant_list:
        raise BadInput(f"--variants {args.variants!r}: choose from {','.join(VARIANTS)}")
    if args.extra_cap < 0:
        raise BadInput(f"--extra-cap {args.extra_cap}: pass 0 (thesis) or a positive cap")
    return args


def _placeholder_forms(bundle: Any) -> dict[str, dict[str, list[str]]]:
    """The forms the full model's compiled lexicon gave PTB's placeholder tokens."""
    forms = bundle.forms
    table = list(bundle.vocab.words) + list(bundle.extra_words)
    index = {w: i for i, w in enumerate(bundle.vocab.words)}
    out: dict[str, dict[str, list[str]]] = {}
    for word in PLACEHOLDERS:
        i = index.get(word)
        if i is None or forms is None:
            continue
        rel = forms.related_ids[i][forms.related_mask[i]].tolist()
        dfn = forms.definition_ids[i][forms.definition_mask[i]].tolist()
        out[word] = {"related": [table[j] for j in rel], "definition": [table[j] for j in dfn]}
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from lexicons.wn_backend import default_wn_dir
    from polyglot_groc.config import load_config, merge_overrides, parse_overrides
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.trainer import Trainer

    # Keep compiled forms with the benchmark's outputs rather than in the user's cache.
    os.environ.setdefault("POLYGLOT_GROC_CACHE", str(args.work / "cache"))
    filters = parse_filters(args.filters)
    corpus_root = prepare_ptb(shared_data(), args.work / "corpus")
    common = merge_overrides({
        **FULL_SOFTMAX, "data.root": corpus_root, "data.langs": ["en"], "model.d": args.d,
        "model.prefix.hidden": args.hidden, "model.prefix.dropout": args.dropout,
        "model.output.dropout": args.dropout, "model.surface.filters": filters,
        "train.batch_size": args.batch_size, "train.bptt": args.bptt, "train.lr": args.lr,
        "train.max_steps": args.steps, "train.eval_every": args.eval_every, "train.threads": args.threads,
        "train.seed": args.seed, "train.eval_batch_size": 10, "train.output_update_prob": args.output_update_prob,
        "model.kind": "groc-lex", "model.lexicon.backend": "wn", "model.lexicon.wn_dir": args.wn_dir,
        "model.lexicon.specs": list(args.lexicon or []), "model.lexicon.extra_cap": args.extra_cap,
    }, parse_overrides(args.set))
    corpus = None
    results: dict[str, dict[str, Any]] = {}
    lexicon_info: dict[str, Any] = {}
    specs: list[str] | None = None
    placeholders: dict[str, dict[str, list[str]]] = {}
    for name in args.variant_list:
        label, use_rel, use_def = VARIANTS[name]
        cfg = load_config(None, {**common, "model.lexicon.use_relations": use_rel,
                                 "model.lexicon.use_definitions": use_def})
        t0 = time.monotonic()
        if corpus is None:  # one corpus for all four: they differ only in lexicon forms
            splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
            corpus = load_corpus(cfg.data, splits)
        trainer = Trainer(cfg, args.work / "runs" / name, overwrite=True, corpus=corpus)
        build_s = time.monotonic() - t0  # vocabulary, lexicon load + compile (or cache hit), model init
        info = dict(trainer.bundle.lexicon_info)
        specs = specs or info.get("specs")
        if use_rel and use_def:  # coverage of the unablated forms
            lexicon_info = info
            placeholders = _placeholder_forms(trainer.bundle)
        res = trainer.fit()
        coverage = info.get("coverage", {})
        results[name] = {
            "table3_row": label, "use_relations": use_rel, "use_definitions": use_def,
            "valid_perplexity": res.best_valid["en"], "last_valid_perplexity": res.last_valid["en"],
            "with_relations_pct": _pct(coverage.get("with_relations_pct")),
            "with_definitions_pct": _pct(coverage.get("with_definitions_pct")),
            "extra_words": info.get("n_extra_words"), "n_params": res.n_params, "steps": res.steps,
            "tokens_per_s": res.tokens_per_s, "train_seconds": res.train_seconds, "build_seconds": build_s,
            "wall_seconds": time.monotonic() - t0,
            "curve": [(r["step"], r["valid_perplexity"]["en"]) for r in res.history],
        }
    out: dict[str, Any] = {
        "benchmark": "ptb_lexicon_ablation",
        "config": {"steps": args.steps, "batch_size": args.batch_size, "bptt": args.bptt, "d": args.d,
                   "prefix": f"2x{args.hidden} LSTM", "filters": ",".join(f"{w}:{n}" for w, n in filters),
                   "dropout": args.dropout, "lr": args.lr,
                   "seed": args.seed, "tokens": args.steps * args.batch_size * args.bptt,
                   "eval_every": args.eval_every, "output_update_prob": args.output_update_prob,
                   "threads": args.threads, "extra_cap": args.extra_cap, "overrides": args.set},
        "lexicon": {
            "backend": "wn", "wn_dir": str(Path(args.wn_dir).expanduser() if args.wn_dir else default_wn_dir()),
            "specs": specs,
            "coverage": {k: _pct(v) for k, v in lexicon_info.get("coverage", {}).items()},
            "seed_reports": SEED_COVERAGE,
        },
        "models": results,
        "placeholder_forms": placeholders,
        "notes": [
            "valid_perplexity is the best checkpoint's (closed PTB vocabulary, 10k words)",
            "coverage is the service's: % of vocabulary words whose forms survive the limits; with extra_cap=0 a "
            "word whose related / gloss words are all outside the vocabulary counts as uncovered",
            "PTB placeholders are looked up like any word, on purpose (no special case): 'N' (PTB's number "
            "token) matches WordNet's 'N' case-insensitively, as NLTK does, and its first synset is nitrogen, so "
            "its definition is the nitrogen gloss (related words come from its other synsets, e.g. north); "
            "'$', '<unk>' and '<eos>' get nothing; see placeholder_forms",
            "all four are kind groc-lex: same architecture and parameter count, only the forms differ",
        ],
        "peak_rss_mib": peak_rss_mib(),
    }
    full = results.get("full")
    if full is not None:
        out["ppl_minus_full"] = {k: v["valid_perplexity"] - full["valid_perplexity"] for k, v in results.items()
                                 if k != "full"}
    return out


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    # A missing wordnet or a bad override is one line and exit 2 (script_main), not a traceback.
    emit(run(args), args.name, not args.no_save)


if __name__ == "__main__":
    script_main(main)
