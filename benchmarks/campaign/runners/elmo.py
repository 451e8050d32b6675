"""elmo-init: Table 5.6 (elmo_init.py) on en+es, B sized from measured speeds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.campaign.data import materialize_corpora
from benchmarks.campaign.flags import config_sizes, sampled_softmax, sets, toy_flags
from benchmarks.campaign.plots import plot_curves
from benchmarks.campaign.runtime import Ctx, Runner, call_benchmark


class ElmoInit(Runner):
    name = "elmo-init"
    parts = ("elmo", "finetune", "groc_scratch")
    summary_keys = ("starter_elmo", "random_groc_no_train", "elmo_to_groc_no_ft", "elmo_to_groc_ft", "groc_scratch",
                    "finetune_steps_to_match_scratch_at_B", "ratio_finetune_to_scratch",
                    "total_ratio_incl_elmo_pretraining", "stop_reasons", "seconds", "budget", "n_params",
                    "max_minutes_per_run", "softmax", "ok")
    elastic = True
    EVALS = 4  # validations per B steps: B/4, B/2, B (and 2B for scratch)
    RATE_DEFAULT = 10.0  # steps/s of a paper-size en+es model on the GPU, stated (never measured yet)
    EVAL_S_DEFAULT = 6.0  # one validation (en+es valid, full softmax)

    def min_s(self, toy: bool) -> float:
        return 20.0 if toy else 240.0

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(self.parts)]  # finetune needs this call's elmo run; B must be the same for all

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        return self.min_s(toy) / len(self.parts)

    def budget(self, ctx: Ctx, seconds: float) -> int:
        """B: what fits ``seconds`` at the measured speeds (steps/s of each training, seconds of a
        validation), else thesis-align's measured sampled-softmax speeds at the same sizes (tied's for
        ELMo, whose output is a lookup table; GroC's for the GroC runs), else the stated defaults; a
        multiple of 4 x EVALS."""
        if ctx.steps:
            return ctx.steps
        if ctx.toy:
            return 4
        if ctx.full:
            return 8000
        parts = ctx.measured.get("parts", {})
        thesis = ctx.ledger.get("thesis-align", {}).get("parts", {})

        def borrowed(kind: str) -> float | None:
            rates = [float(m["steps_per_s"]) for p, m in thesis.items() if p.endswith(f".{kind}")
                     and m.get("status") == "done" and m.get("softmax") == "sampled" and m.get("steps_per_s")]
            return min(rates) if rates else None

        proxy = {"elmo": borrowed("lookup"), "finetune": borrowed("groc"), "groc_scratch": borrowed("groc")}
        rate = {p: float(parts.get(p, {}).get("steps_per_s") or proxy[p] or self.RATE_DEFAULT) for p in self.parts}
        eval_s = max([float(parts.get(p, {}).get("eval_s") or self.EVAL_S_DEFAULT) for p in self.parts])
        n_evals = self.EVALS + 1 + (1 + self.EVALS) + 2 * self.EVALS  # elmo, random GroC, finetune, scratch
        per_b = 1 / rate["elmo"] + 1 / rate["finetune"] + 2 / rate["groc_scratch"]
        b = (seconds - 60.0 - n_evals * eval_s) / per_b
        return max(int(b // (4 * self.EVALS) * 4 * self.EVALS), 4 * self.EVALS)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        materialize_corpora(ctx, "thesis", ("en", "es"), ctx.work / "corpora")

    def run(self, ctx: Ctx, groups: Sequence[tuple[str, ...]]) -> None:
        from benchmarks import elmo_init

        parts = [p for g in groups for p in g]
        if self.skipped_for_time(ctx, parts):
            return
        _, sizes = config_sizes("paper.toml", {
            "model.d": "--d", "model.prefix.hidden": "--hidden", "model.prefix.n_layers": "--layers",
            "model.surface.filters": "--filters", "model.surface.char_dim": "--char-dim",
            "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.eval_batch_size": "--eval-batch-size",
        }, skip=("model.kind", "train.max_epochs", "train.max_steps", "train.eval_every", "train.max_minutes"))
        if ctx.toy:
            sizes = toy_flags(sizes)
        budget = self.budget(ctx, ctx.left() - 10.0)
        cap = ctx.cap_minutes(10.0, share=2)  # a safety net: B is sized to fit; the 2B scratch run is the longest
        ctx.state.update(budget=budget, cap=cap)
        last = time.monotonic()
        ctx.record.begin("elmo")

        def progress(phase: str, info: dict[str, Any]) -> None:
            nonlocal last
            ctx.raw[phase] = info
            train = float(info.get("train_seconds") or 0.0)
            n_evals = max(len(info.get("curve", [])), 1)
            ctx.record.set(phase, "done", seconds=round(time.monotonic() - last, 1), train_seconds=train,
                           steps_per_s=round(info["steps"] / train, 2) if train else None,
                           eval_s=round((info["seconds"] - train) / n_evals, 2), stop_reason=info.get("stop_reason"))
            last = time.monotonic()
            following = self.parts[self.parts.index(phase) + 1:]
            if following:
                ctx.record.begin(following[0])

        try:
            res = call_benchmark(ctx, elmo_init, [
                "--data", ctx.work / "corpora", "--langs", "en,es", "--budget", budget,
                "--evals", self.EVALS, "--out", ctx.work / "elmo", "--overwrite", "--threads", ctx.threads, *sizes,
                *sets({"train.device": ctx.device, "train.max_minutes": cap, **sampled_softmax(ctx.toy)})],
                progress=progress)
        except Exception as exc:
            ctx.record.fail_running(exc)
            return
        ctx.state["elmo"] = res

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        res = ctx.state.get("elmo", {})
        keys = self.summary_keys[:-3]
        out = {k: res.get(k) for k in keys}
        if not res:  # stopped part-way: what the finished trainings measured
            out["stop_reasons"] = {p: r.get("stop_reason") for p, r in ctx.raw.items()}
            out["seconds"] = {p: r.get("seconds") for p, r in ctx.raw.items()}
            out["n_params"] = {p: r.get("n_params") for p, r in ctx.raw.items()}
            out["budget"] = ctx.state.get("budget")
        return {**out, "max_minutes_per_run": ctx.state.get("cap"), "softmax": sampled_softmax(ctx.toy)}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        curves = {phase: [(p["step"], p["pooled_perplexity"]) for p in r.get("curve", [])
                          if isinstance(p["pooled_perplexity"], float)] for phase, r in result["results"].items()}
        if not any(curves.values()):
            return []
        name = f"{prefix}elmo-init.png"
        plot_curves(curves, out / name, "pooled valid perplexity")
        return [name]


