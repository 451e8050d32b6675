"""Data-parallel scaling under torchrun (issue 11): tokens/s of N processes vs one, same per-rank batch.

Trains the same model on PTB with ``torchrun --standalone --nproc_per_node=N`` for N in
``--procs`` (default 1,2), each process with ``--threads`` CPU threads (default 1, so two
processes fit two cores) and ``--batch-size`` streams PER RANK (the global batch is N times
that). Each run's ``tokens_per_s`` comes from its ``result.json`` (training time only, all ranks'
tokens). Prints one JSON object with the speed-up of every N over the first one; it asserts
nothing. The issue's target on CPU: 2 processes >= 1.6x one.

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/ddp_scaling.py --model groc --steps 30
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    DEFAULT_FILTERS,
    FULL_SOFTMAX,
    add_output_args,
    emit,
    parse_filters,
    prepare_ptb,
    script_main,
    shared_data,
)


def run(procs: int, args: argparse.Namespace, corpus: Path, out: Path) -> dict[str, object]:
    """One torchrun training run; returns its speed figures."""
    if out.exists():
        shutil.rmtree(out)
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs}",
        "-m", "polyglot_groc", "train", "--data", str(corpus), "--model", args.model, "--out", str(out),
        "--max-steps", str(args.steps), "--threads", str(args.threads), "--device", "cpu",
        "--set", f"train.batch_size={args.batch_size * procs}", "--set", f"train.bptt={args.bptt}",
        "--set", f"model.d={args.d}", "--set", f"model.prefix.hidden={args.hidden}",
        "--set", f"train.eval_every={args.steps}", "--set", f"train.eval_batch_size={args.eval_batch_size}",
        "--set", "train.log_every=10", "--set", f"model.surface.filters={parse_filters(args.filters)}",
        *(x for key, value in FULL_SOFTMAX.items() for x in ("--set", f"{key}={json.dumps(value)}")),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
    started = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"error: torchrun with {procs} processes failed (exit {done.returncode}):\n"
                         f"{done.stderr[-2000:]}")
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return {
        "procs": procs,
        "global_batch": args.batch_size * procs,
        "steps": result["steps"],
        "tokens_per_s": result["tokens_per_s"],
        "train_seconds": result["train_seconds"],
        "wall_seconds": round(wall, 1),
        "valid_perplexity": result["best_valid_perplexity"],
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="groc")
    ap.add_argument("--procs", default="1,2", help="process counts to compare; the first is the reference")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=16, help="streams per rank")
    ap.add_argument("--eval-batch-size", type=int, default=10)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--filters", default=DEFAULT_FILTERS, help="char-CNN width:count list")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads per process")
    ap.add_argument("--work", type=Path, default=Path("bench_out/ddp_scaling"))
    add_output_args(ap)
    args = ap.parse_args(argv)
    corpus = prepare_ptb(shared_data(), args.work / "ptb")
    counts = [int(p) for p in args.procs.split(",")]
    runs = [run(n, args, corpus, args.work / f"run_{n}") for n in counts]
    base = float(runs[0]["tokens_per_s"])  # type: ignore[arg-type]
    report: dict[str, object] = {
        "benchmark": "ddp_scaling",
        "model": args.model,
        "per_rank_batch": args.batch_size,
        "threads_per_process": args.threads,
        "cpu_count": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "runs": runs,
        "speedup": {str(r["procs"]): round(float(r["tokens_per_s"]) / base, 3) for r in runs},  # type: ignore[arg-type]
        "target": "2 processes >= 1.6x one (CPU, same per-rank batch)",
    }
    emit(report, args.name, not args.no_save)
    return report


if __name__ == "__main__":
    script_main(main)
