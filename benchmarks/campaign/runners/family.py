"""family: Table 2 at paper size (output_family.py), one row per part."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.campaign.flags import TOY
from benchmarks.campaign.runtime import Ctx, Runner, call_benchmark, capped_estimate, share_cap

FAMILY_ROWS = ("untied", "conv", "tied", "bilinear", "deep-residual", "adaptive", "groc", "untied+welch")
FAMILY_ROW_MIN = 0.75  # minutes a row trains in a window, by default (more where time is left)


class Family(Runner):
    name = "family"
    parts = FAMILY_ROWS
    summary_keys = ("models", "steps_asked", "max_minutes_per_row", "rows_stopped_by_cap", "seed_expected_order",
                    "ok")

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 6.0
        return FAMILY_ROW_MIN * 60 + (70.0 if part == "untied+welch" else 40.0)  # + word2vec; setup and test

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        if toy:
            return super().estimate(part, measured, toy)
        return capped_estimate(FAMILY_ROW_MIN * 60, self.default_s(part, toy), measured)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        ctx.state["todo"] = [(p,) for p in parts]

    def run_part(self, ctx: Ctx, row: str) -> dict[str, Any]:
        from benchmarks import output_family
        from benchmarks.output_family import PAPER

        steps = ctx.steps or (3 if ctx.toy else PAPER["steps"])
        if ctx.toy:
            sizes: list[Any] = ["--d", TOY["d"], "--hidden", TOY["hidden"], "--batch-size", TOY["batch_size"],
                                "--bptt", TOY["bptt"], "--filters", TOY["filters"], "--w2v-epochs", 1,
                                "--eval-batch-size", 4, "--set", "model.output.cutoffs=[0.2, 0.7]"]
        else:  # PAPER's sizes as flags so --steps applies (--size paper fixes its own steps)
            sizes = ["--d", PAPER["d"], "--hidden", PAPER["hidden"], "--batch-size", PAPER["batch_size"],
                     "--bptt", PAPER["bptt"], "--dropout", PAPER["dropout"]]
        cap = share_cap(ctx, row, ctx.state["todo"], lambda p: True, FAMILY_ROW_MIN * 60)
        res = call_benchmark(ctx, output_family, [
            "--work", ctx.work / "output_family", "--device", ctx.device, "--steps", steps,
            "--eval-every", max(steps // 3, 1) if ctx.toy else PAPER["eval_every"], "--threads", ctx.threads,
            "--rows", row, *sizes, "--set", f"train.max_minutes={cap}"])
        r = res["models"][row]
        return {**r, "config": res["config"], "max_minutes": cap, "steps_asked": steps,
                "_train_seconds": r.get("train_seconds")}

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        done = {row: ctx.raw[row] for row in self.parts if row in ctx.raw}
        models = {row: {"valid_perplexity": r["valid_perplexity"], "test_perplexity": r["test_perplexity"],
                        "steps": r["steps"], "n_params": r["n_params"], "tokens_per_s": r["tokens_per_s"],
                        "max_minutes": r["max_minutes"]} for row, r in done.items()}
        return {"models": models, "steps_asked": next((r["steps_asked"] for r in done.values()), None),
                "max_minutes_per_row": sorted({r["max_minutes"] for r in done.values()}),
                "rows_stopped_by_cap": [row for row, r in done.items() if r["steps"] < r["steps_asked"]],
                "seed_expected_order": "untied > tied > bilinear >= deep-residual >= adaptive > groc (ppl); "
                                       "conv > untied; |Θ| adaptive < tied"}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        from benchmarks.output_family import markdown

        done = {row: result["results"][row] for row in self.parts if row in result["results"]}
        if not done:
            return []
        name = f"{prefix}family.md"
        config = next(iter(done.values()))["config"]
        (out / name).write_text(markdown({"config": config, "models": done}) + "\n", encoding="utf-8")
        return [name]


