"""ptb-paper: seed 000's PTB configuration (ptb_convergence.py), all four models at once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.campaign.data import unpack_wordnet
from benchmarks.campaign.flags import config_sizes, override, sets, toy_flags
from benchmarks.campaign.runtime import Ctx, Runner, call_benchmark

PTB_MODELS = {"tied": "", "groc": "", "groc-lex": "", "groc-p0.3": "groc;train.output_update_prob=0.3"}


class PtbPaper(Runner):
    """Seed 000's PTB configuration, all four models at once on the GPU (--jobs), for as long as the
    call allows: the paper trains to early stopping (tens of epochs), one call fits a few."""

    name = "ptb-paper"
    parts = tuple(PTB_MODELS)
    summary_keys = ("config", "kind_in_config", "models", "orderings", "max_minutes_per_model", "epochs_in_one_call",
                    "one_call", "unfinished", "seed_000_targets_paper_config", "seed_000_b4_sparse", "ok")
    elastic = True
    FINAL_S = 90.0  # after the cap: the spawned workers' start, final dev/test of each best checkpoint

    def min_s(self, toy: bool) -> float:
        return 20.0 if toy else 300.0

    def groups(self) -> list[tuple[str, ...]]:
        return [tuple(self.parts)]  # trained together, sharing the GPU

    def estimate(self, part: str, measured: dict[str, Any], toy: bool) -> float:
        return self.min_s(toy) / len(self.parts)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        ctx.state["wn"] = unpack_wordnet(ctx)

    def run(self, ctx: Ctx, groups: Sequence[tuple[str, ...]]) -> None:
        from benchmarks import ptb_convergence

        parts = [p for g in groups for p in g]
        if self.skipped_for_time(ctx, parts):
            return
        spec, wn_dir = ctx.state["wn"]
        cfg, sizes = config_sizes("ptb_paper.toml", {
            "model.prefix.n_layers": "--layers", "model.prefix.hidden": "--hidden", "model.d": "--d",
            "model.prefix.dropout": "--dropout", "model.output.dropout": "--output-dropout",
            "train.batch_size": "--batch-size", "train.bptt": "--bptt", "train.lr": "--lr", "train.clip": "--clip",
            "train.lr_patience": "--lr-patience", "train.stop_patience": "--stop-patience",
            "train.max_epochs": "--epochs", "train.output_update_prob": "--output-update-prob",
            "model.surface.filters": "--filters", "train.seed": "--seed",
        }, skip=("model.kind", "model.lexicon.specs", "model.lexicon.backend", "model.lexicon.wn_dir",
                 "model.lexicon.extra_cap"))
        sizes += ["--jobs", str(len(parts)), *sets({"train.softmax": "full"})]  # PTB is 10k words
        if ctx.toy:  # one model at a time on CPU (the spawned --jobs path is tests/test_ptb_convergence.py's)
            sizes = override(toy_flags(sizes), {"--epochs": 2, "--train-lines": 60, "--eval-lines": 12, "--jobs": 1})
        cap = ctx.cap_minutes(3.0 if ctx.toy else self.FINAL_S)
        ctx.state.update(cfg=cfg, cap=cap)
        models = [p for p in parts if not PTB_MODELS[p]]
        variants = [f"{p}={PTB_MODELS[p]}" for p in parts if PTB_MODELS[p]]
        argv: list[Any] = ["--work", ctx.work / "ptb", "--models", ",".join(models), "--lexicon", spec,
                           "--wn-dir", wn_dir, "--device", ctx.device, "--threads", ctx.threads, "--early-stopping",
                           "--max-minutes", cap, *sizes, *(x for v in variants for x in ("--variant", v))]
        for part in parts:
            ctx.record.begin(part)

        def progress(model: str, result: dict[str, Any]) -> None:  # the models train at once: their own seconds
            ctx.raw[model] = result
            ctx.record.set(model, "done", seconds=result.get("wall_seconds"), train_seconds=result.get("train_seconds"),
                           epochs=(result.get("epochs") or [0])[-1], stop_reason=result.get("stop_reason"))

        try:
            res = call_benchmark(ctx, ptb_convergence, argv, progress=progress)
        except Exception as exc:
            ctx.record.fail_running(exc)
            return
        ctx.state["ptb"] = res

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        from benchmarks.ptb_convergence import SEED_TARGETS, seed_orderings

        done = {m: ctx.raw[m] for m in self.parts if m in ctx.raw}
        models = {m: {k: r.get(k) for k in ("epochs", "final_valid", "test", "stop_reason", "steps", "train_seconds",
                                             "params", "output_update_prob", "valid_curve")}
                  for m, r in done.items()}
        epochs = {m: (r["epochs"][-1] if r.get("epochs") else 0) for m, r in done.items()}
        unfinished = [m for m, r in done.items() if r.get("stop_reason") in ("max_minutes", "stopped")]
        cfg = ctx.state.get("cfg")
        return {"config": "polyglot_groc/configs/ptb_paper.toml (train.softmax full, the paper's updates; "
                          "groc-p0.3: seed 000 B.4's sparse updates)",
                "kind_in_config": cfg.model.kind if cfg is not None else None, "models": models,
                "orderings": seed_orderings(done) if done else {}, "max_minutes_per_model": ctx.state.get("cap"),
                "epochs_in_one_call": epochs,
                "one_call": "trained in ONE device call, as many epochs as fit (checkpoints cannot come back through "
                            "$OUT, so nothing is resumed later): the paper trains to B.1 early stopping; models "
                            "stopped by the cap are not converged",
                "unfinished": unfinished, "seed_000_targets_paper_config": SEED_TARGETS,
                "seed_000_b4_sparse": {"groc-p0.3": "p = 0.3 reaches 75.3 on penn (split not stated)"}}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        from benchmarks.ptb_convergence import plot

        models = {m: r for m, r in result["results"].items() if r.get("valid_curve")}
        if not models:
            return []
        name = f"{prefix}ptb-paper.png"
        plot(models, out / name)
        return [name]


