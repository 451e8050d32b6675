"""Seed 000 Table 4 in miniature: lexicon coverage at inference and at training (GroC+lex on PTB).

*inference* row: one ``groc-lex`` model trained with the full lexicon, evaluated on PTB test with
only a fraction C of its lexicon entries kept (``evaluate --lexicon-coverage C``).
*train* row: one model per C trained with ``train --lexicon-coverage C`` and evaluated with the
lexicon it was trained with. Entries are dropped deterministically by the lexicon service's
stable word hash. Prints ONE JSON object with both rows (test perplexity by C).

    polyglot-groc lexicon import --langs en --wn-dir /tmp/bench/wn   # once, offline
    POLYGLOT_GROC_DATA=../shared/data nice -n 5 python benchmarks/coverage_ablation.py \\
        --wn-dir /tmp/bench/wn --steps 300 --threads 2
"""

from __future__ import annotations

import argparse
import os
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
    filters_override,
    prepare_ptb,
    script_main,
    shared_data,
)

COVERAGES = (0.0, 0.16, 0.32, 0.48, 0.64, 0.82)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/coverage_ablation"))
    add_ptb_training_args(ap)
    ap.add_argument("--wn-dir", default=os.environ.get("POLYGLOT_GROC_WN_DIR", ""))
    ap.add_argument("--lexicon", nargs="+", default=None, metavar="SPEC")
    ap.add_argument("--coverages", default=",".join(map(str, COVERAGES)))
    ap.add_argument("--skip-train-row", action="store_true", help="only the inference row (one training)")
    ap.add_argument("--filters", default=None, help="char-CNN as width:n,... (default: the config's)")
    ap.add_argument("--eval-batch-size", type=int, default=10, help="parallel streams when scoring test")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="extra config overrides for every model")
    add_output_args(ap)
    args = ap.parse_args()

    from polyglot_groc.analysis.workflows import evaluate
    from polyglot_groc.config import load_config, merge_overrides, parse_overrides
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.training.workflows import train

    os.environ.setdefault("POLYGLOT_GROC_CACHE", str(args.work / "cache"))
    t0 = time.monotonic()
    covs = [float(c) for c in args.coverages.split(",") if c.strip()]
    filters = filters_override(args.filters) if args.filters else {}  # checked before any data is written
    root = prepare_ptb(shared_data(), args.work / "corpus")
    common = merge_overrides({
        **FULL_SOFTMAX, "data.root": root, "data.langs": ["en"], "model.d": args.d,
        "model.prefix.hidden": args.hidden, "train.batch_size": args.batch_size, "train.bptt": args.bptt,
        "train.lr": args.lr, "train.max_steps": args.steps, "train.eval_every": args.eval_every,
        "train.threads": args.threads, "train.seed": args.seed, "model.kind": "groc-lex",
        "model.lexicon.backend": "wn", "model.lexicon.wn_dir": args.wn_dir,
        "model.lexicon.specs": list(args.lexicon or []), "model.lexicon.extra_cap": 0,
        "model.prefix.dropout": args.dropout, "train.output_update_prob": args.output_update_prob,
        "train.eval_batch_size": args.eval_batch_size,
    }, parse_overrides(args.set), filters)

    def test_ppl(run: Path, coverage: float | None) -> float:
        # Open vocabulary on the run's own corpus, on the CPU as before (the run is loaded once).
        res = evaluate(run=run, data=root, split="test", batch_size=args.eval_batch_size, lexicon_coverage=coverage,
                       device="cpu")
        return float(res.perplexity["en"])  # type: ignore[arg-type]

    full = args.work / "full"
    trained = {"1.0": train(config=load_config(None, common), out=full, overwrite=True)}
    inference = {str(c): test_ppl(full, c) for c in [*covs, 1.0]}
    train_row: dict[str, float] = {}
    if not args.skip_train_row:
        for c in covs:
            run = args.work / f"train-{c}"
            trained[str(c)] = train(config=load_config(None, {**common, "model.lexicon.coverage": c}), out=run,
                                    overwrite=True)
            train_row[str(c)] = test_ppl(run, None)
        train_row["1.0"] = inference["1.0"]
    result: dict[str, Any] = {"args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
                              "inference": inference, "train": train_row,
                              "training": {c: {"steps": r.steps, "best_valid_ppl": r.best_valid.get("en"),
                                               "train_seconds": round(r.train_seconds, 1),
                                               "lexicon": load_bundle(r.run_dir)[0].lexicon_info}
                                           for c, r in trained.items()},
                              "elapsed_s": round(time.monotonic() - t0, 1)}
    emit(result, args.name or "coverage_ablation", save=not args.no_save)


if __name__ == "__main__":
    script_main(main)
