"""Validation perplexity (always the full softmax) of GroC and tied lookup trained with the full or the
sampled softmax, at equal steps or at equal CPU time, over several seeds.

    # PTB, equal steps: does sampling cost GroC quality? (the issue's target: within 5% of full)
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/sampled_quality.py --corpus ptb --budget steps:200 \\
        --models groc_full,groc_sampled --seeds 0,1,2 --name sampled_quality_ptb_steps
    # PTB and the thesis-scale en+fr corpora, equal CPU time per model
    ... --corpus ptb --budget cpu:150 --models tied_full,tied_sampled,groc_full,groc_sampled
    ... --corpus thesis --budget cpu:600 --models tied_full,tied_sampled,groc_full,groc_sampled

Each (model, seed) trains in its own child process through ``pg.train`` at ``--size small`` (the
quickstart model) with one thread; a CPU budget is the process's CPU seconds in training steps,
enforced by a hook that raises ``pg.StopTraining`` (the run is then validated on the whole
validation split, as a limit would). ``--jobs 2`` runs two children at a time: CPU seconds do not
depend on what else the machine runs, wall time does. Variants for how k and the proposal trade
quality: ``groc_sampled_k1024``, ``groc_sampled_k16384``, ``groc_sampled_unigram``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import BadInput, add_output_args, check_models, emit, prepare_ptb, script_main, shared_data  # noqa: E402
from benchmarks.vocab_scaling import MODELS as SCALING_MODELS  # noqa: E402

#: vocab_scaling.py's models, and variants for how k and the proposal trade quality.
MODELS: dict[str, dict[str, Any]] = {
    **SCALING_MODELS,
    "groc_sampled_k1024": {"model.kind": "groc", "train.softmax": "sampled", "train.sampled_k": 1024},
    "groc_sampled_k16384": {"model.kind": "groc", "train.softmax": "sampled", "train.sampled_k": 16384},
    "groc_sampled_unigram": {"model.kind": "groc", "train.softmax": "sampled", "train.sampled_proposal": "unigram"},
}
CORPORA = {"ptb": ("en",), "thesis": ("en", "fr")}


class _Budget:
    """Hooks: stop (pg.StopTraining) once the training steps have used ``seconds`` CPU seconds."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.used = 0.0
        self.mark = 0.0

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        self.mark = time.process_time()

    def on_step(self, info: Any) -> None:
        import polyglot_groc as pg

        now = time.process_time()
        self.used += now - self.mark
        self.mark = now
        if self.seconds and self.used >= self.seconds:
            raise pg.StopTraining(f"{self.used:.0f} CPU seconds")

    def on_eval(self, record: Mapping[str, Any]) -> None:
        self.mark = time.process_time()  # a validation is not training time


def child(spec: Mapping[str, Any]) -> dict[str, Any]:
    import polyglot_groc as pg

    budget = _Budget(float(spec.get("cpu_seconds", 0.0)))
    started = time.process_time()
    res = pg.train(out=spec["out"], langs=spec["langs"], data=spec["corpus"], size="small",
                   overrides={**spec["overrides"], "train.threads": 1, "train.log_every": 0,
                              "train.eval_every": 0, "train.checkpoint_minutes": 0, "train.max_epochs": 1000,
                              "train.max_steps": int(spec.get("steps", 0))},
                   overwrite=True, hooks=budget)
    return {"steps": res.steps, "stop_reason": res.stop_reason, "train_cpu_seconds": round(budget.used, 1),
            "total_cpu_seconds": round(time.process_time() - started, 1), "valid_perplexity": res.last_valid,
            "valid_nll": res.history[-1]["valid_nll"] if res.history else None, "softmax": res.softmax}


def run_child(spec: Mapping[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec, default=str)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput(f"child {spec['name']} failed: {proc.stderr.strip().splitlines()[-1:]}")
    out = dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"{spec['name']}: {out['steps']} steps, {out['train_cpu_seconds']} CPU s, "
          f"ppl {out['valid_perplexity']}", file=sys.stderr, flush=True)
    return out


def summarise(runs: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Per model: mean and sd over seeds of the pooled validation NLL's perplexity and of each language's."""
    out: dict[str, Any] = {}
    for model, rows in runs.items():
        ppl = [math.exp(r["valid_nll"]) for r in rows if r.get("valid_nll") is not None]
        langs = sorted({lang for r in rows for lang in r["valid_perplexity"]})
        out[model] = {
            "perplexity_mean": round(statistics.mean(ppl), 2) if ppl else None,
            "perplexity_sd": round(statistics.stdev(ppl), 2) if len(ppl) > 1 else None,
            "per_language_mean": {lang: round(statistics.mean(r["valid_perplexity"][lang] for r in rows), 2)
                                  for lang in langs},
            "steps_mean": round(statistics.mean(r["steps"] for r in rows), 1),
            "train_cpu_seconds_mean": round(statistics.mean(r["train_cpu_seconds"] for r in rows), 1),
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--corpus", choices=tuple(CORPORA), default="ptb")
    ap.add_argument("--budget", default="steps:200", help="steps:N (equal steps) or cpu:SECONDS (equal CPU time)")
    ap.add_argument("--models", default="groc_full,groc_sampled")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], help="more config overrides, key=value")
    ap.add_argument("--work", type=Path, default=Path("bench_out/sampled_quality"))
    add_output_args(ap)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child))))
        return
    from polyglot_groc.config import parse_overrides

    names = args.models.split(",")
    check_models(names, MODELS)
    kind, _, amount = args.budget.partition(":")
    if kind not in ("steps", "cpu") or not amount.replace(".", "", 1).isdigit() or float(amount) <= 0:
        raise BadInput(f"--budget {args.budget!r} must be steps:N or cpu:SECONDS, e.g. cpu:600")
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    data = shared_data()
    if args.corpus == "ptb":
        root = prepare_ptb(data, args.work / "ptb")
    else:
        from benchmarks.polyglot_table import prepare

        root = args.work / "corpora-1000000-50000"  # gpu_campaign's thesis-align corpora
        prepare(data, root, ["en", "fr"], 1_000_000, 50_000, "auto")
    extra = parse_overrides(args.set)
    specs = []
    for seed in seeds:
        for model in names:
            spec: dict[str, Any] = {
                "name": f"{model}/seed{seed}", "model": model, "corpus": str(root),
                "langs": ",".join(CORPORA[args.corpus]),
                "out": str(args.work / "runs" / f"{args.corpus}-{args.budget.replace(':', '')}" / model / str(seed)),
                "overrides": {**MODELS[model], "train.seed": seed, **extra}}
            spec["steps" if kind == "steps" else "cpu_seconds"] = int(amount) if kind == "steps" else float(amount)
            specs.append(spec)
    started = time.time()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(run_child, specs))
    runs: dict[str, list[dict[str, Any]]] = {}
    for spec, res in zip(specs, results, strict=True):
        runs.setdefault(spec["model"], []).append({"seed": spec["overrides"]["train.seed"], **res})
    summary = summarise(runs)
    ref = summary.get("groc_full", {}).get("perplexity_mean")
    for row in summary.values():
        if ref and row["perplexity_mean"]:
            row["over_groc_full"] = round(row["perplexity_mean"] / ref, 4)
    out = {"benchmark": "sampled_quality", "corpus": args.corpus, "budget": args.budget, "size": "small",
           "seeds": seeds, "overrides": {k: str(v) for k, v in extra.items()}, "summary": summary, "runs": runs,
           "wall_seconds": round(time.time() - started, 1)}
    emit(out, args.name, not args.no_save)


if __name__ == "__main__":
    script_main(main)
