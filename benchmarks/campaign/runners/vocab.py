"""vocab-scaling: benchmarks/vocab_scaling.py at paper size, one child process per part."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.campaign.data import materialize_corpora
from benchmarks.campaign.flags import TOY
from benchmarks.campaign.runtime import Ctx, PartSkipped, Runner
from benchmarks.campaign.stages import SAMPLED_K, SAMPLED_PROPOSAL, TOY_SAMPLED_K
from benchmarks.common import parse_filters

VS_MODELS = ("tied_full", "tied_sampled", "groc_full", "groc_sampled", "groc_sampled_sparse")
VS_CORPORA = {"140k": "thesis", "40k": "small", "10k": ""}  # the target size first
#: vocab_scaling.py's targets at ~140k words: (summary key, comparison, threshold).
VS_TARGETS = {"groc_sampled_over_tied_sampled_train": (">=", 0.5), "groc_sampled_over_groc_full_train": (">=", 10.0),
              "groc_over_tied_eval": (">=", 0.9), "groc_sampled_memory_over_tied_full": ("<=", 1.0)}


class VocabScaling(Runner):
    name = "vocab-scaling"
    parts = tuple(f"{c}.{m}" for c in VS_CORPORA for m in VS_MODELS)
    summary_keys = ("size", "precision", "sampled_k", "proposal", "steps", "corpora", "targets_140k", "ok")

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 4.0
        return {"140k": 40.0, "40k": 25.0}.get(part.split(".")[0], 20.0)  # a child: start, data, steps, validation

    def steps(self, ctx: Ctx, corpus: str, model: str) -> int:
        full_softmax = model.endswith("_full") and corpus == "140k"  # ~0.2 s a GroC step there
        if ctx.steps:
            return ctx.steps
        if ctx.toy:
            return 3
        return (10 if full_softmax else 50) if ctx.full else (8 if full_softmax else 20)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        from benchmarks.common import prepare_ptb

        roots: dict[str, Path] = {}
        for corpus in dict.fromkeys(p.split(".")[0] for p in parts):
            budget = VS_CORPORA[corpus]
            roots[corpus] = (materialize_corpora(ctx, budget, ("en", "fr"), ctx.work / f"corpora-{budget}") if budget
                             else prepare_ptb(ctx.data, ctx.work / "ptb"))
        ctx.state["roots"] = roots

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        from benchmarks import vocab_scaling as vs

        corpus, model = part.split(".", 1)
        toy = {"model.d": TOY["d"], "model.prefix.hidden": TOY["hidden"], "train.batch_size": TOY["batch_size"],
               "train.bptt": TOY["bptt"], "train.eval_batch_size": 4,
               "model.surface.filters": parse_filters(TOY["filters"])} if ctx.toy else {}
        spec = vs.child_spec(corpus, model, ctx.state["roots"][corpus], size="paper",
                             steps=self.steps(ctx, corpus, model), device=ctx.device, threads=ctx.threads,
                             precision="auto", sampled_k=TOY_SAMPLED_K if ctx.toy else SAMPLED_K,
                             proposal=SAMPLED_PROPOSAL, work=ctx.work / "vocab_scaling",
                             overrides=toy, deadline=ctx.deadline)
        started = time.monotonic()
        row = vs.run_child(spec, ctx.threads, in_process=ctx.toy)  # a dry run trains in this process
        ctx.invocations.append({"script": "benchmarks/vocab_scaling.py", "argv": ["--child", spec["name"]],
                                "seconds": round(time.monotonic() - started, 1), "in_process": ctx.toy})
        if "skipped" in row:
            raise PartSkipped(row["skipped"])
        return row

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        from benchmarks import vocab_scaling as vs

        corpora = {}
        for corpus in VS_CORPORA:
            rows = {m: ctx.raw[f"{corpus}.{m}"] for m in VS_MODELS if f"{corpus}.{m}" in ctx.raw}
            if rows:
                corpora[corpus] = vs.summarise(corpus, rows)
        at = corpora.get("140k", {}).get("summary", {})
        targets = {}
        for key, (op, threshold) in VS_TARGETS.items():
            value = at.get(key)
            met = None if value is None else (value >= threshold if op == ">=" else value <= threshold)
            targets[key] = {"value": value, "target": f"{op} {threshold}", "met": met}
        return {"size": "paper" if not ctx.toy else "paper, toy overrides", "precision": "auto (bf16 on CUDA)",
                "sampled_k": TOY_SAMPLED_K if ctx.toy else SAMPLED_K, "proposal": SAMPLED_PROPOSAL,
                "steps": {p: r.get("steps") for p, r in ctx.raw.items()}, "corpora": corpora, "targets_140k": targets}


