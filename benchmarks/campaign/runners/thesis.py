"""thesis-align: Tables 5.2 and 5.4 (polyglot_table.py, then align_polyglot.py) at thesis sizes."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from benchmarks.campaign.data import corpus_budget, materialize_corpora
from benchmarks.campaign.flags import config_sizes, sampled_softmax, sets, toy_flags
from benchmarks.campaign.runtime import (
    Ctx,
    Runner,
    call_benchmark,
    capped_estimate,
    share_cap,
)
from benchmarks.campaign.stages import ALIGN_TARGETS

THESIS_TRAIN_MIN = 1.5  # minutes a thesis-align model trains in a window, by default (more where time is left)
THESIS_STEPS_DEFAULT = 3000


class ThesisAlign(Runner):
    name = "thesis-align"
    parts = tuple(f"en-{t}.{k}" for t in ALIGN_TARGETS for k in ("groc", "lookup", "align"))
    summary_keys = ("table_5_2_test_perplexity", "table_5_4_alignment", "corpora", "steps", "max_minutes_per_run",
                    "softmax", "notes", "ok")

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(f"en-{t}.{k}" for k in ("groc", "lookup", "align")) for t in ALIGN_TARGETS]

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 10.0
        # align: two models' export, Procrustes + 10 CSLS refinements and evaluation; one model took
        # over 90 s on the H100 machine's CPU (2026-11-27). A model: its cap, setup and test (~45 s).
        return 200.0 if part.endswith(".align") else THESIS_TRAIN_MIN * 60 + 45.0

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        if toy:
            return super().estimate(part, measured, toy)
        if part.endswith(".align"):
            if measured.get("status") == "done" and measured.get("seconds"):
                return float(measured["seconds"])
            return max(self.default_s(part, toy), 2.2 * float(measured.get("seconds_lower_bound") or 0))
        return capped_estimate(THESIS_TRAIN_MIN * 60, self.default_s(part, toy), measured)

    def steps(self, ctx: Ctx) -> int:
        """The equal step budget of every model: ``--steps``, else what the slowest measured
        sampled-softmax model does in THESIS_TRAIN_MIN minutes, else THESIS_STEPS_DEFAULT (the cap
        binds if it is too many, and the JSON says the budgets were unequal)."""
        if ctx.steps:
            return ctx.steps
        if ctx.toy:
            return 4
        if ctx.full:
            return 60_000  # ~20 epochs of en+fr at batch 20x35: hours on one GPU
        rates = [float(m["steps_per_s"]) for p, m in ctx.measured.get("parts", {}).items()
                 if m.get("status") == "done" and m.get("softmax") == "sampled" and m.get("steps_per_s")]
        if not rates:
            return THESIS_STEPS_DEFAULT
        return max(500, int(min(rates) * THESIS_TRAIN_MIN * 60 // 250 * 250))

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        langs = ["en", *(p.split(".")[0].split("-")[1] for p in parts)]
        materialize_corpora(ctx, "thesis", list(dict.fromkeys(langs)), ctx.work / "table" / "corpora")
        ctx.state["steps"] = self.steps(ctx)
        ctx.state["todo"] = [g for g in self.groups() if set(g) <= set(parts)]
        _, ctx.state["sizes"] = config_sizes("paper.toml", {
            "model.d": "--d", "model.prefix.hidden": "--hidden", "model.prefix.n_layers": "--layers",
            "model.prefix.dropout": "--dropout", "model.output.dropout": "--output-dropout",
            "model.surface.filters": "--filters", "model.surface.char_dim": "--char-dim",
            "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.lr": "--lr",
            "train.eval_batch_size": "--eval-batch-size", "train.output_update_prob": "--output-update-prob",
        }, skip=("model.kind", "train.max_epochs", "train.max_steps", "train.eval_every"))
        if ctx.toy:
            ctx.state["sizes"] = toy_flags(ctx.state["sizes"])

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        from benchmarks import align_polyglot, polyglot_table

        pair, kind = part.split(".")
        tgt = pair.split("-")[1]
        steps, work = ctx.state["steps"], ctx.work / "table"
        if kind == "align":
            aligned = call_benchmark(ctx, align_polyglot, [
                "--work", work, "--src", "en", "--tgt", tgt, "--steps", steps, "--data-root", ctx.data,
                "--refine", 1 if ctx.toy else 10, "--threads", ctx.threads])
            return aligned
        cap = share_cap(ctx, part, ctx.state["todo"], lambda p: not p.endswith(".align"), THESIS_TRAIN_MIN * 60)
        train_tokens, eval_tokens = corpus_budget(ctx, "thesis")
        table = call_benchmark(ctx, polyglot_table, [
            "--work", work, "--data-root", ctx.data, "--targets", tgt, "--kinds", kind, "--settings", "EN+tgt",
            "--baseline-polyglot", "--memory-steps", 0, "--train-tokens", train_tokens, "--eval-tokens", eval_tokens,
            "--steps", steps, "--eval-every", max(steps // 4, 1), "--max-minutes", cap, "--threads", ctx.threads,
            *ctx.state["sizes"], *sets({"train.device": ctx.device, **sampled_softmax(ctx.toy)})])
        run = next(iter(table["runs"].values()))
        if "error" in run:
            raise RuntimeError(run["error"])
        ctx.state.setdefault("corpora", {}).update(table["corpora"])
        ctx.notes.extend(n for n in table["notes"] if n not in ctx.notes)
        train_s = float(run.get("train_seconds") or 0.0)
        return {**run, "max_minutes": cap, "_train_seconds": train_s, "_softmax": "sampled", "_cap_minutes": cap,
                "_steps_per_s": round(run["steps"] / train_s, 2) if train_s else None}

    def run_group(self, ctx: Ctx, group: tuple[str, ...]) -> None:
        for part in group:
            if part.endswith(".align") and not all(p in ctx.raw for p in group if p != part):
                ctx.record.set(part, "skipped", reason="needs both models trained in this call")
                continue
            ctx.attempt(part, functools.partial(self.run_part, ctx, part))

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        perplexity: dict[str, Any] = {}
        alignment: dict[str, Any] = {}
        for tgt in ALIGN_TARGETS:
            for kind in ("groc", "lookup"):
                r = ctx.raw.get(f"en-{tgt}.{kind}")
                if r is not None:
                    perplexity.setdefault(f"en+{tgt}", {})[kind] = {
                        "test_perplexity": r.get("test_perplexity"), "steps": r.get("steps"),
                        "stop_reason": r.get("stop_reason"), "max_minutes": r.get("max_minutes")}
            a = ctx.raw.get(f"en-{tgt}.align")
            if a is not None:
                alignment[f"en-{tgt}"] = {
                    "rows": a["table"]["rows"], "same_evaluated_words": a["table"]["same_evaluated_words"],
                    "non_identical_model_vs_char_ngram": a["table"]["non_identical_model_vs_char_ngram"],
                    "groc_vs_lookup_p_at_5": {k: v for k, v in a["groc_vs_lookup"].items() if k.startswith("p_at_5")},
                    "eval_dictionary": {m: (r.get("alignment") or {}).get("eval_dictionary")
                                        for m, r in a["models"].items()}}
        caps = sorted({r["max_minutes"] for p, r in ctx.raw.items() if not p.endswith(".align")})
        notes = list(ctx.notes) + [n for p, a in ctx.raw.items() if p.endswith(".align") for n in a.get("notes", [])]
        return {"table_5_2_test_perplexity": perplexity, "table_5_4_alignment": alignment,
                "corpora": ctx.state.get("corpora", {}), "steps": ctx.state.get("steps"),
                "max_minutes_per_run": caps, "softmax": sampled_softmax(ctx.toy), "notes": notes}


