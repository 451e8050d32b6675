"""GroC (surface form) vs the tied lookup LM on PTB at an equal token budget.

Both models share the prefix (2-layer LSTM), d, seed, batch size, BPTT and step budget.
Prints one JSON object: valid perplexity of each, groc/lookup perplexity ratio, training
tokens/s of each and their ratio (measured in this run, on this machine).

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/ptb_groc_vs_lookup.py --steps 300
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    FULL_SOFTMAX,
    add_output_args,
    add_ptb_training_args,
    emit,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)
from polyglot_groc.config import load_config, merge_overrides, parse_overrides  # noqa: E402
from polyglot_groc.training.workflows import train  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=Path("bench_out/ptb"))
    add_ptb_training_args(ap)
    ap.add_argument("--models", default="lookup,groc")
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for both models")
    add_output_args(ap)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    corpus = prepare_ptb(shared_data(), args.work / "corpus")
    common = merge_overrides({
        **FULL_SOFTMAX, "data.root": corpus, "data.langs": ["en"], "model.d": args.d,
        "model.prefix.hidden": args.hidden,
        "model.prefix.dropout": args.dropout, "model.output.dropout": args.dropout,
        "train.batch_size": args.batch_size, "train.bptt": args.bptt, "train.lr": args.lr,
        "train.max_steps": args.steps, "train.eval_every": args.eval_every, "train.threads": args.threads,
        "train.seed": args.seed, "train.eval_batch_size": 10,
    }, parse_overrides(args.set))
    results: dict[str, dict[str, Any]] = {}
    for kind in args.models.split(","):
        extra = {"train.output_update_prob": args.output_update_prob} if kind.startswith("groc") else {}
        cfg = load_config(None, merge_overrides(common, {"model.kind": kind}, extra))
        t0 = time.monotonic()
        res = train(config=cfg, out=args.work / "runs" / kind, overwrite=True)
        results[kind] = {
            "valid_perplexity": res.best_valid["en"], "last_valid_perplexity": res.last_valid["en"],
            "tokens_per_s": res.tokens_per_s, "train_seconds": res.train_seconds, "steps": res.steps,
            "n_params": res.n_params, "wall_seconds": time.monotonic() - t0,
            "curve": [(r["step"], r["valid_perplexity"]["en"]) for r in res.history],
        }
    out = {
        "benchmark": "ptb_groc_vs_lookup",
        "config": {"steps": args.steps, "batch_size": args.batch_size, "bptt": args.bptt, "d": args.d,
                   "prefix": f"2x{args.hidden} LSTM", "dropout": args.dropout, "lr": args.lr, "seed": args.seed,
                   "tokens": args.steps * args.batch_size * args.bptt,
                   "output_update_prob": args.output_update_prob, "threads": args.threads},
        "models": results,
        "peak_rss_mib": peak_rss_mib(),
    }
    if "groc" in results and "lookup" in results:
        out["ppl_ratio_groc_over_lookup"] = results["groc"]["valid_perplexity"] / results["lookup"]["valid_perplexity"]
        out["speed_ratio_groc_over_lookup"] = results["groc"]["tokens_per_s"] / results["lookup"]["tokens_per_s"]
    emit(out, args.name, not args.no_save)


if __name__ == "__main__":
    script_main(main)
