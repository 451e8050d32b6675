"""throughput: benchmarks/throughput.py at paper size, one precision/compile/impl configuration per part."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from benchmarks.campaign.data import unpack_wordnet
from benchmarks.campaign.flags import TOY, sets
from benchmarks.campaign.plots import plot_bars
from benchmarks.campaign.runtime import Ctx, Runner, call_benchmark
from benchmarks.campaign.stages import THROUGHPUT_TARGET
from benchmarks.common import parse_filters

THROUGHPUT_MODELS = ("lookup", "groc", "groc_sparse_p0.3", "groc-lex")
#: label -> (precision, compile, char-CNN impl, models); padded is CUDA's "auto". Every precision is
#: named explicitly: train.precision's default (auto) is bf16 on CUDA.
THROUGHPUT_CONFIGS: dict[str, tuple[str, bool, str, tuple[str, ...]]] = {
    "fp32": ("fp32", False, "padded", THROUGHPUT_MODELS),
    "tf32": ("tf32", False, "padded", THROUGHPUT_MODELS),
    "bf16": ("bf16", False, "padded", THROUGHPUT_MODELS),
    "fp32+compile": ("fp32", True, "padded", ("lookup", "groc")),
    "bf16+compile": ("bf16", True, "padded", ("lookup", "groc")),
    "fp32-grouped": ("fp32", False, "grouped", ("lookup", "groc")),
}


@contextlib.contextmanager
def cheap_compile(on: bool) -> Iterator[None]:
    """Dry run: ``torch.compile`` with the "eager" backend (dynamo's capture without inductor's
    code generation, which costs ~40 s per model on a CPU); a no-op for the real stage."""
    import torch

    if not on:
        yield
        return
    saved = torch.compile
    torch.compile = functools.partial(saved, backend="eager")  # type: ignore[assignment]
    try:
        yield
    finally:
        torch.compile = saved


class Throughput(Runner):
    name = "throughput"
    parts = tuple(THROUGHPUT_CONFIGS)
    summary_keys = ("target", "configs", "target_met_in", "target_met_everywhere", "best_config", "ok")

    def default_s(self, part: str, toy: bool) -> float:
        if toy:
            return 8.0
        return 150.0 if "compile" in part else 60.0  # inductor compiles each model (~40 s)

    def setup(self, ctx: Ctx, parts: Sequence[str]) -> None:
        ctx.state["wn"] = unpack_wordnet(ctx)
        if ctx.toy:
            ctx.notes.append("dry run: torch.compile runs with backend='eager' (inductor would cost ~40 s a model)")

    def run_part(self, ctx: Ctx, label: str) -> dict[str, Any]:
        from benchmarks import throughput

        spec, wn_dir = ctx.state["wn"]
        precision, compiled, impl, models = THROUGHPUT_CONFIGS[label]
        steps = ctx.steps or (2 if ctx.toy else 100 if ctx.full else 20)
        repeats = 1 if ctx.toy else 3 if ctx.full else 2
        argv: list[Any] = ["--device", ctx.device, "--steps", steps, "--repeats", repeats, "--threads", ctx.threads,
                           "--work", ctx.work / "throughput", "--lexicon", spec, "--wn-dir", wn_dir, "--size", "paper",
                           *sets({"train.softmax": "full"})]
        if ctx.toy:  # --set comes after --size's overrides
            argv += ["--eval-lines", 4, *sets({"model.d": TOY["d"], "model.prefix.hidden": TOY["hidden"],
                                                "train.batch_size": TOY["batch_size"], "train.bptt": TOY["bptt"],
                                                "model.surface.filters": parse_filters(TOY["filters"])})]
        argv += ["--precision", precision, "--impl", impl, "--models", ",".join(models)]
        with cheap_compile(ctx.toy and compiled):
            res = call_benchmark(ctx, throughput, [*argv, "--compile"] if compiled else argv)
        return res

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        configs: dict[str, Any] = {}
        for label, (precision, compiled, impl, _) in THROUGHPUT_CONFIGS.items():
            head = {"precision": precision, "compile": compiled, "impl": impl}
            res = ctx.raw.get(label)
            if res is None:
                if label in ctx.record.obj["parts"]:
                    configs[label] = {**head, "owed": ctx.record.obj["parts"][label]["status"]}
                continue
            ratio = res.get("groc_over_lookup_train")
            configs[label] = {
                **head,
                "train_tokens_per_s": {m: r.get("train_tokens_per_s") for m, r in res["models"].items()},
                "train_ratio_to_lookup": {m: r.get("train_ratio_to_lookup") for m, r in res["models"].items()
                                          if m != "lookup"},
                "encoder_impl": {m: r.get("encoder_impl") for m, r in res["models"].items()},
                "peak_memory_mib": {m: r.get("peak_memory_mib") for m, r in res["models"].items()},
                "groc_over_lookup_train": ratio,
                "target_met": ratio >= THROUGHPUT_TARGET if ratio is not None else None,
                "surface_fwd_bwd_seconds_over_vocab": res.get("surface_fwd_bwd_seconds_over_vocab"),
            }
        met = [c["target_met"] for c in configs.values() if c.get("target_met") is not None]
        measured = [k for k, c in configs.items() if "owed" not in c]
        return {"target": f"GroC/lookup train tokens/s >= {THROUGHPUT_TARGET}", "configs": configs,
                "target_met_in": [k for k, c in configs.items() if c.get("target_met")],
                "target_met_everywhere": bool(met) and len(met) == len(configs) and all(met),
                "best_config": max(measured, key=lambda k: configs[k].get("groc_over_lookup_train") or 0.0)
                if measured else None}

    def render(self, result: dict[str, Any], out: Path, prefix: str = "") -> list[str]:
        configs = {label: c for label, c in result["summary"].get("configs", {}).items() if "owed" not in c}
        if not configs:
            return []
        name = f"{prefix}throughput.png"
        plot_bars({label: c.get("train_ratio_to_lookup", {}) for label, c in configs.items()}, out / name,
                  "train tokens/s relative to lookup", THROUGHPUT_TARGET)
        return [name]


