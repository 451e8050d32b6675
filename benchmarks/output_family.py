"""Mini seed 000 Table 2 on PTB: every output-embedding kind under one prefix, seed and token budget.

Rows: untied (lookup table), conv, tied, bilinear, deep-residual, adaptive, groc, and untied with
Welch et al. (seed 003) init + freeze from word2vec vectors trained on the PTB training text.
Each kind takes its Table 8 (PTB) knobs from ``polyglot_groc/configs/ptb_table8_<kind>.toml``;
prefix, d, batch, BPTT, lr, seed and steps are shared. Per model: best valid and test perplexity
(best checkpoint), |Θ| and its split, training tokens/s. Also writes the table as Markdown next to
the JSON result.

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/output_family.py --steps 150    # CPU size
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/output_family.py --size paper   # GPU size
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    FULL_SOFTMAX,
    add_device_arg,
    add_output_args,
    add_ptb_training_args,
    device_label,
    emit,
    filters_override,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)
from groc_base.fileio import atomic_write_bytes  # noqa: E402
from polyglot_groc.analysis.workflows import evaluate  # noqa: E402
from polyglot_groc.config import load_config, merge_overrides, parse_overrides  # noqa: E402
from polyglot_groc.training.pretrain import pretrain_vectors  # noqa: E402
from polyglot_groc.training.workflows import train  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "polyglot_groc" / "configs"
#: Table 2 order; "untied+welch" is the seed 003 row.
ROWS = ("untied", "conv", "tied", "bilinear", "deep-residual", "adaptive", "groc", "untied+welch")
#: Seed 000 appendix B (PTB, GPU): 2-layer LSTM, d = 400, 1150 hidden; batch 20, BPTT 70 is AWD-LSTM's.
PAPER = {"d": 400, "hidden": 1150, "batch_size": 20, "bptt": 70, "steps": 40000, "dropout": 0.4,
         "eval_every": 2000}


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--work", type=Path, default=Path("bench_out/output_family"))
    add_ptb_training_args(ap)
    add_device_arg(ap)
    ap.add_argument("--size", choices=("cpu", "paper"), default="cpu")
    ap.add_argument("--rows", default=",".join(ROWS))
    ap.add_argument("--filters", default="1:32,2:32,3:64,4:64,5:64,6:64", help="char-CNN of conv and groc")
    ap.add_argument("--w2v-epochs", type=int, default=5)
    ap.add_argument("--eval-batch-size", type=int, default=80, help="parallel streams when scoring valid/test")
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for every model")
    add_output_args(ap)
    args = ap.parse_args(argv)
    if args.size == "paper":
        for k, v in PAPER.items():
            setattr(args, k, v)
    return args


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every row trained and tested, as the JSON object the script reports."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    device = device_label(args.device)
    filters = filters_override(args.filters)  # checked before any data is written
    corpus = prepare_ptb(shared_data(), args.work / "corpus")
    common = merge_overrides({
        **FULL_SOFTMAX, "data.root": corpus, "data.langs": ["en"], "model.d": args.d,
        "model.prefix.hidden": args.hidden,
        "model.prefix.dropout": args.dropout, **filters,
        "train.batch_size": args.batch_size, "train.bptt": args.bptt, "train.lr": args.lr,
        "train.max_steps": args.steps, "train.eval_every": args.eval_every, "train.threads": args.threads,
        "train.seed": args.seed, "train.eval_batch_size": args.eval_batch_size, "train.device": args.device,
    }, parse_overrides(args.set))
    results: dict[str, Any] = {}
    for row in args.rows.split(","):
        kind = row.split("+")[0]
        extra: dict[str, Any] = {}
        if row == "untied+welch":
            vec = args.work / f"ptb_train_w2v_{args.d}.vec"
            t0 = time.monotonic()
            if not vec.exists():
                pretrain_vectors([corpus / "en" / "train.txt"], vec, "word2vec", args.d, epochs=args.w2v_epochs,
                                 seed=args.seed)
            extra = {"model.init_input": vec, "model.freeze_input": True}
            pretrain_s = time.monotonic() - t0
        if kind.startswith("groc"):
            extra["train.output_update_prob"] = args.output_update_prob
        cfg = load_config(CONFIGS / f"ptb_table8_{kind.replace('-', '_')}.toml", merge_overrides(common, extra))
        run_dir = args.work / "runs" / row.replace("+", "_")
        t0 = time.monotonic()
        res = train(config=cfg, out=run_dir, overwrite=True)
        test = evaluate(run=run_dir, split="test", batch_size=args.eval_batch_size, device=args.device).to_dict()
        results[row] = {
            "valid_perplexity": res.best_valid["en"], "test_perplexity": test["perplexity"]["en"],
            "n_params": res.n_params, "n_params_split": res.n_params_split,
            "tokens_per_s": res.tokens_per_s, "train_seconds": res.train_seconds, "steps": res.steps,
            "wall_seconds": time.monotonic() - t0, "output_dropout": cfg.model.output.dropout,
            "curve": [(r["step"], r["valid_perplexity"]["en"]) for r in res.history],
        }
        if row == "untied+welch":
            results[row]["pretrain_seconds"] = pretrain_s
        logging.info("%s: valid %.1f test %.1f", row, res.best_valid["en"], test["perplexity"]["en"])
    out = {
        "benchmark": "output_family",
        "device": device,
        "config": {"size": args.size, "steps": args.steps, "batch_size": args.batch_size, "bptt": args.bptt,
                   "d": args.d, "prefix": f"2x{args.hidden} LSTM", "prefix_dropout": args.dropout, "lr": args.lr,
                   "seed": args.seed, "tokens": args.steps * args.batch_size * args.bptt, "filters": args.filters,
                   "output_update_prob_groc": args.output_update_prob, "eval_batch_size": args.eval_batch_size,
                   "threads": args.threads,
                   "overrides": args.set},
        "models": results,
        "seed_expected_order": "untied > tied > bilinear >= deep-residual >= adaptive > groc (ppl); "
                               "conv > untied; |Θ| adaptive < tied",
        "peak_rss_mib": peak_rss_mib(),
    }
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The script: :func:`run`, its JSON printed and saved, its table printed (and saved beside the JSON)."""
    args = parse_args(argv)
    out = run(args)
    path = emit(out, args.name, not args.no_save)
    md = markdown(out)
    print(md)
    if path is not None:  # only the saved run writes the Markdown file
        atomic_write_bytes(path.with_suffix(".md"), md.encode("utf-8"))
    return out


def markdown(out: dict[str, Any]) -> str:
    c = out["config"]
    lines = [f"Mini Table 2 (PTB, {c['steps']} steps x {c['batch_size']} x {c['bptt']} = {c['tokens']} tokens, "
             f"d={c['d']}, prefix {c['prefix']}, seed {c['seed']})", "",
             "| model | valid ppl | test ppl | |Θ| | embeddings | prefix | output | train tok/s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in out["models"].items():
        s = r["n_params_split"]
        lines.append(f"| {name} | {r['valid_perplexity']:.1f} | {r['test_perplexity']:.1f} | {r['n_params']:,} | "
                     f"{s['embeddings']:,} | {s['prefix']:,} | {s['output']:,} | {r['tokens_per_s']:.0f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    script_main(main)
