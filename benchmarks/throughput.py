"""Training and evaluation throughput of lookup, elmo, groc, groc (sparse p=0.3) and groc-lex.

Each model trains a fixed number of steps on PTB and is then evaluated on a fixed slice of the
validation text; tokens/s of both are reported with their ratio to the tied lookup model, which is
the figure to compare across machines (absolute tokens/s depend on the machine and its load).

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/throughput.py --device cpu --size cpu
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/throughput.py --device cuda --size paper

``--size paper``: 2x1024 LSTM, d=256, batch 20x35, the seed's char-CNN. ``--size cpu``: the
small CPU size of benchmarks/ptb_groc_vs_lookup.py (2x256, d=256, batch 64x35).
``--repeats R`` trains every model R times, going round the models in turn, and reports medians
(each repeat's figures are in ``*_runs``): on a noisy machine one run of each can move the ratio
by 10%. groc-lex needs a lexicon (``--lexicon omw-en`` with ``--wn-dir``); without one it is skipped
and the JSON says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

import torch  # noqa: E402

from benchmarks.common import (  # noqa: E402
    FULL_SOFTMAX,
    BadInput,
    add_output_args,
    check_models,
    emit,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)
from polyglot_groc.config import load_config, merge_overrides, parse_overrides  # noqa: E402
from polyglot_groc.model.bundle import ModelBundle  # noqa: E402
from polyglot_groc.model.device import device_name, resolve_device  # noqa: E402
from polyglot_groc.training.evaluation import evaluate_split  # noqa: E402
from polyglot_groc.training.trainer import Trainer  # noqa: E402

SIZES: dict[str, dict[str, Any]] = {
    "paper": {"model.d": 256, "model.prefix.hidden": 1024, "model.prefix.dropout": 0.65, "model.output.dropout": 0.2,
              "train.batch_size": 20, "train.bptt": 35},
    "cpu": {"model.d": 256, "model.prefix.hidden": 256, "model.prefix.dropout": 0.2, "model.output.dropout": 0.2,
            "train.batch_size": 64, "train.bptt": 35},
}
#: The seed's char-CNN filters (seed 000 appendix B), which the ``cpu`` size keeps.
SEED_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512]]
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "lookup": ("lookup", {}), "elmo": ("elmo", {}), "groc": ("groc", {}),
    "groc_sparse_p0.3": ("groc", {"train.output_update_prob": 0.3}), "groc-lex": ("groc-lex", {})}


def slice_corpus(root: Path, out: Path, eval_lines: int) -> Path:
    """PTB with the validation split cut to ``eval_lines`` lines (a fixed evaluation workload)."""
    (out / "en").mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        lines = (root / "en" / f"{split}.txt").read_text(encoding="utf-8").splitlines()
        if split != "train":
            lines = lines[:eval_lines]
        (out / "en" / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def time_impls(bundle: ModelBundle, device: torch.device, reps: int = 3) -> dict[str, float]:
    """Seconds per fwd+bwd of the surface encoder over the whole vocabulary, per implementation.

    This is the measurement behind ``model.surface.impl = "auto"``'s per-device rule.
    """
    surface = getattr(bundle.model.input_embedder, "surface", None)
    if surface is None:
        return {}
    chars = bundle.model.input_embedder.chars  # (V, L) on the device
    saved, out = surface.cfg, {}
    try:
        for impl in ("grouped", "padded"):
            surface.cfg = dataclasses.replace(saved, impl=impl)
            times = []
            for _ in range(reps + 1):
                t0 = time.perf_counter()
                surface(chars).sum().backward()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                times.append(time.perf_counter() - t0)
            out[impl] = min(times[1:])  # the first call warms up
    finally:
        surface.cfg = saved
        surface.zero_grad(set_to_none=True)
    return out


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--size", choices=tuple(SIZES), default="cpu")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=1, help="runs of each model, taken in turn; figures are medians")
    ap.add_argument("--eval-lines", type=int, default=200)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--impl", default="auto", help="model.surface.impl: auto | grouped | padded")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--lexicon", default="", help="lexicon spec for groc-lex, e.g. omw-en (see `lexicon info`)")
    ap.add_argument("--wn-dir", default="")
    ap.add_argument("--work", type=Path, default=Path("bench_out/throughput"))
    ap.add_argument("--set", action="append", default=[])
    add_output_args(ap)
    return ap.parse_args(argv)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The measurement, as the JSON object it reports."""
    logging.basicConfig(level=logging.WARNING)
    device = resolve_device(args.device)
    names = args.models.split(",")
    check_models(names, MODELS)
    if args.repeats < 1 or args.steps < 1:
        raise BadInput("--repeats and --steps must be at least 1")
    corpus = slice_corpus(prepare_ptb(shared_data(), args.work / "ptb"), args.work / "corpus", args.eval_lines)
    common = merge_overrides(
        {**FULL_SOFTMAX, "data.root": corpus, "data.langs": ["en"], **SIZES[args.size], "train.max_steps": args.steps,
         "train.eval_every": args.steps, "train.threads": args.threads, "train.device": args.device,
         "train.precision": args.precision, "train.compile": bool(args.compile),
         "model.surface.impl": args.impl, "train.eval_batch_size": 10, "train.lr": 0.002},
        parse_overrides(args.set))
    if args.size == "cpu":
        common = merge_overrides(common, {"model.surface.filters": SEED_FILTERS})
    results: dict[str, dict[str, float | int | str | list[float]]] = {}
    runs: dict[str, list[tuple[float, float]]] = {}  # model -> (train, eval) tokens/s of each repeat
    # From each model's first repeat: on CPU the peak is the process's RSS high-water mark, which
    # later repeats would inherit from the models run before them.
    first: dict[str, dict[str, float | int | str]] = {}
    impl_seconds: dict[str, float] = {}
    for name in names:
        if MODELS[name][0] == "groc-lex" and not args.lexicon:
            results[name] = {"skipped": "no --lexicon given"}
    # Repeats go round the models in turn, so a slow spell of a noisy machine hits every model,
    # and each figure is the median over repeats.
    for _ in range(args.repeats):
        for name in (n for n in names if n not in results):
            kind, extra = MODELS[name]
            if kind == "groc-lex":
                extra = {**extra, "model.lexicon.specs": [args.lexicon], "model.lexicon.wn_dir": args.wn_dir}
            cfg = load_config(None, merge_overrides(common, {"model.kind": kind}, extra))
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            trainer = Trainer(cfg, args.work / "runs" / name, overwrite=True)
            res = trainer.fit()
            t0 = time.perf_counter()
            ev = evaluate_split(trainer.bundle, trainer.corpus, "valid", 10, cfg.train.bptt)
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            eval_s = time.perf_counter() - t0
            n_eval = sum(r.n_tokens for r in ev.values())
            runs.setdefault(name, []).append((res.tokens_per_s, n_eval / eval_s))
            if kind == "groc" and not impl_seconds:
                impl_seconds = time_impls(trainer.bundle, device)
            surface = getattr(trainer.model.input_embedder, "surface", None)
            first.setdefault(name, {
                "steps": res.steps, "eval_tokens": n_eval, "n_params": res.n_params,
                "encoder_impl": surface.impl_for(device) if surface is not None else "none",
                "peak_memory_mib": (torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda"
                                    else peak_rss_mib()),
            })
    medians = {name: (statistics.median(m[0] for m in measured), statistics.median(m[1] for m in measured))
               for name, measured in runs.items()}
    base = medians.get("lookup")
    for name, (train, ev_tps) in medians.items():
        results[name] = {"train_tokens_per_s": train, "eval_tokens_per_s": ev_tps, **first[name],
                         "train_tokens_per_s_runs": [m[0] for m in runs[name]],
                         "eval_tokens_per_s_runs": [m[1] for m in runs[name]]}
        if base is not None:
            results[name]["train_ratio_to_lookup"] = train / base[0]
            results[name]["eval_ratio_to_lookup"] = ev_tps / base[1]
    out = {
        "benchmark": "throughput", "device": device_name(device), "size": args.size, "torch": torch.__version__,
        "precision": args.precision, "compile": args.compile, "impl": args.impl,
        "auto_impl_rule": "padded on CUDA, grouped on CPU (model/surface.py SurfaceEncoder.impl_for)",
        "surface_fwd_bwd_seconds_over_vocab": impl_seconds,
        "faster_impl_here": min(impl_seconds, key=impl_seconds.__getitem__) if impl_seconds else None,
        "steps": args.steps, "repeats": args.repeats, "threads": args.threads,
        "groc_over_lookup_train": results.get("groc", {}).get("train_ratio_to_lookup"),
        "groc_over_lookup_eval": results.get("groc", {}).get("eval_ratio_to_lookup"),
        "models": results,
        "peak_rss_mib": peak_rss_mib(),
    }
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    out = run(args)
    emit(out, args.name, not args.no_save)
    return out


if __name__ == "__main__":
    script_main(main)
