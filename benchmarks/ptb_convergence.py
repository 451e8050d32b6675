"""PTB protocol to convergence: tied lookup, untied lookup, GroC surface-only and GroC+lexicon.

Seed 000 Tables 3 and 9 report, at convergence, GroC surface-only (76.3 dev / 73.2 test) below
tied lookup (88.6 / 86.2) and GroC with relations and definitions lower still (72.5 / 69.5).
This script trains each model with the same prefix, data, seed and budget, validates once per
epoch and keeps both curves:

* ``--early-stopping``: the B.1 rule (lr /10 after ``--lr-patience`` epochs without improvement,
  stop after ``--stop-patience``), up to ``--epochs``; otherwise exactly ``--epochs`` epochs.
* ``--train-lines/--eval-lines`` train on a fixed slice of PTB (the first N lines of each split),
  so a CPU run can converge; 0 keeps the full split. The closed vocabulary is then the slice's.
* ``--jobs`` trains that many models at once in separate processes (each with ``--threads``).
* Models whose kind this version does not have (e.g. ``untied``) are skipped with the reason.
* ``--resume`` (same ``--work`` and flags) spans sessions or GPU leases: a model that finished
  (``runs/<model>/protocol.json``) is read back, one the ``--max-minutes`` cap stopped continues
  exactly from its ``last.pt`` under the new cap. ``--collect`` reports every model as it stands.
* ``--device`` picks where to train (the JSON's ``device`` names it); ``--jobs`` workers are
  spawned, so several models can share one GPU.

The JSON (``benchmarks.common.emit``) has a top-level ``device`` and
``models: {name: {valid_curve, train_curve, final_valid, test, params, wall_seconds, ...}}``; a PNG
of the curves is written beside it. ``train_curve`` is the mean training perplexity of each epoch
(dropout on, as AWD-LSTM reports it); ``final_valid``/``test`` come from the best checkpoint.

CPU protocol (2x256 LSTM, d=128, the first 4000 lines of PTB train)::

    POLYGLOT_GROC_DATA=../shared/data nice -n 5 python benchmarks/ptb_convergence.py \\
        --wn-dir /tmp/wn --train-lines 4000 --eval-lines 800 --epochs 8 --jobs 2 --threads 1
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import math
import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    DEFAULT_FILTERS,
    FULL_SOFTMAX,
    BadInput,
    add_device_arg,
    add_output_args,
    check_models,
    device_label,
    emit,
    filters_override,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)
from groc_base.fileio import atomic_write, atomic_write_bytes  # noqa: E402

#: Benchmark name -> (model kind, extra overrides).
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "tied": ("lookup", {}),
    "untied": ("untied", {}),
    "groc": ("groc", {}),
    "groc-lex": ("groc-lex", {}),
}
#: Seed 000: dev/test perplexities at the paper configuration (Table 3 and Table 9).
SEED_TARGETS = {"tied": {"dev": 88.6, "test": 86.2}, "groc": {"dev": 76.3, "test": 73.2},
                "groc-lex": {"dev": 72.5, "test": 69.5}}


def slice_ptb(full: Path, out: Path, train_lines: int, eval_lines: int) -> Path:
    """The first N lines of each split as ``<out>/en/{split}.txt`` (the full split for N = 0)."""
    dst = out / "en"
    dst.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", train_lines), ("valid", eval_lines), ("test", eval_lines)):
        lines = (full / "en" / f"{split}.txt").read_text(encoding="utf-8").splitlines()
        text = "\n".join(lines[:n] if n else lines) + "\n"
        target = dst / f"{split}.txt"
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            atomic_write_bytes(target, text.encode("utf-8"))
    return out


def common_overrides(args: argparse.Namespace, corpus: Path) -> dict[str, Any]:
    """Every model's config overrides (dotted keys), ``--set`` last."""
    from polyglot_groc.config import merge_overrides, parse_overrides

    budget = ({"train.max_epochs": args.epochs, "train.lr_patience": args.lr_patience,
               "train.stop_patience": args.stop_patience} if args.early_stopping else
              # No early stop or lr decay inside the budget: exactly --epochs epochs.
              {"train.max_epochs": args.epochs, "train.lr_patience": 1000, "train.stop_patience": 1000})
    return merge_overrides({
        **FULL_SOFTMAX, "data.root": str(corpus), "data.langs": ["en"], "model.d": args.d,
        "model.prefix.hidden": args.hidden, "model.prefix.n_layers": args.layers,
        "model.prefix.dropout": args.dropout, "model.output.dropout": args.output_dropout,
        **filters_override(args.filters), "train.batch_size": args.batch_size,
        "train.bptt": args.bptt, "train.lr": args.lr, "train.clip": args.clip,
        "train.eval_every": 0, "train.threads": args.threads, "train.seed": args.seed,
        "train.eval_batch_size": 10, "train.max_minutes": args.max_minutes, "train.device": args.device,
        **budget,
        "model.lexicon.backend": "wn", "model.lexicon.wn_dir": args.wn_dir,
        "model.lexicon.specs": list(args.lexicon or []), "model.lexicon.extra_cap": 0,
    }, parse_overrides(args.set))


def parse_variant(text: str) -> tuple[str, tuple[str, dict[str, Any]]]:
    """``NAME=KIND;key=value;...`` -> (NAME, (KIND, overrides)): one more model, one setting changed."""
    from polyglot_groc.config import parse_overrides

    name, sep, rest = text.partition("=")
    parts = [p for p in rest.split(";") if p.strip()]
    if not sep or not name or not parts:
        raise BadInput(f"--variant {text!r}: write NAME=KIND;section.key=value;..., "
                       'e.g. groc-tanh=groc;model.output.bias_activation="tanh"')
    return name, (parts[0], parse_overrides(parts[1:]))


def _what_it_computes(cfg: Any) -> dict[str, Any]:
    """The config without what a resumed model may change: the new session's budget (minutes, epoch
    cap) and the settings that change only speed or memory, not the run's result."""
    import dataclasses

    surface = dataclasses.replace(cfg.model.surface, chunk_size=0, checkpoint=False, impl="auto")
    train = dataclasses.replace(cfg.train, threads=0, device="auto", compile=False, log_every=1,
                                max_minutes=0.0, max_epochs=1)
    return dataclasses.asdict(dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, surface=surface),
                                                  train=train))


def train_one(name: str, spec: tuple[str, dict[str, Any]], overrides: dict[str, Any], work: str,
              output_update_prob: float, resume: bool = False, collect: bool = False) -> dict[str, Any]:
    """Train one model in this process (the toolkit's ``train`` workflow); returns its curves and final figures.

    With ``resume``, a model that finished in an earlier session (``protocol.json`` in its run
    directory, or its result.json) is read back, and one stopped by the wall-clock cap (or killed)
    continues from its ``last.pt`` exactly (the ``resume`` workflow) under this session's budget;
    the rest must match the stored config. ``collect`` (implies ``resume``) trains nothing: an
    unfinished model is reported as it stands.
    """
    import torch

    from groc_base.fileio import dumps_json
    from polyglot_groc.config import load_config, merge_overrides
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.model.scoring import pooled_nll
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.evaluation import evaluate_split
    from polyglot_groc.training.workflows import load_result, train
    from polyglot_groc.training.workflows import resume as resume_run

    kind, extra = spec
    sparse = {"train.output_update_prob": output_update_prob} if kind.startswith("groc") else {}
    # A variant's own settings come last: ``groc-p0.3=groc;train.output_update_prob=0.3`` is seed 000
    # B.4's sparse-update model beside the full-update ones of --output-update-prob.
    cfg = load_config(None, merge_overrides(overrides, {"model.kind": kind}, sparse, extra))
    t = cfg.train
    run_dir = Path(work) / "runs" / name
    done = run_dir / "protocol.json"
    t0 = time.monotonic()
    resumed = (resume or collect) and (run_dir / "last.pt").is_file()
    if resumed:
        stored = load_config(run_dir / "config.toml")
        if _what_it_computes(stored) != _what_it_computes(cfg):
            raise BadInput(f"{run_dir} was trained with another configuration; "
                           "resume with the flags of the first session, or use a new --work")
        if done.is_file():
            return dict(json.loads(done.read_text(encoding="utf-8")))
        res = load_result(run=run_dir)
        # Stopped by the wall-clock cap or killed, or short of this session's epoch budget: go on,
        # with this session's budget and execution settings (device, threads).
        unfinished = res.stop_reason in ("max_minutes", "interrupted") or \
            (res.stop_reason == "max_epochs" and res.epochs < t.max_epochs)
        if unfinished and not collect:
            res = resume_run(run=run_dir, max_epochs=t.max_epochs if t.max_epochs != stored.train.max_epochs else None,
                             max_minutes=t.max_minutes, threads=t.threads, device=t.device)
    elif collect:
        raise BadInput(f"--collect: {run_dir} holds no run to collect; train it first (without --collect)")
    else:
        res = train(config=cfg, out=run_dir, overwrite=True)
    # Final dev/test from the best checkpoint (B.1 keeps the best model on dev).
    best, _ = load_bundle(run_dir, "best", t.device)
    corpus = load_corpus(best.cfg.data, ("valid", "test"), best.cfg.languages)
    with torch.no_grad():
        valid = evaluate_split(best, corpus, "valid", 10, t.bptt)
        test = evaluate_split(best, corpus, "test", 10, t.bptt)
    out = {
        "kind": kind,
        "overrides": extra,
        "valid_curve": [round(r["valid_perplexity"]["en"], 2) for r in res.history],
        "train_curve": [round(r["train_perplexity"], 2) for r in res.history],
        "epochs": [r["epoch"] for r in res.history],
        "lr_curve": [r["lr"] for r in res.history],
        "final_valid": round(math.exp(pooled_nll(valid)), 2),
        "test": round(math.exp(pooled_nll(test)), 2),
        "params": res.n_params,
        "stop_reason": res.stop_reason,
        "steps": res.steps,
        "tokens_per_s": round(res.tokens_per_s, 1),
        "train_seconds": round(res.train_seconds, 1),
        "wall_seconds": round(time.monotonic() - t0, 1),  # this session's (train_seconds spans all)
        "resumed": resumed,
        "output_update_prob": cfg.train.output_update_prob,
    }
    if collect:  # trains and writes nothing; an unfinished model says why it stands where it does
        if res.stop_reason in ("max_minutes", "interrupted"):
            out["stop_reason"] = ("max_epochs" if res.epochs >= t.max_epochs else
                                  "unfinished: stopped by the wall-clock cap, collected as it stands")
    elif res.stop_reason != "max_minutes":  # finished for good: a later --resume reads this back
        atomic_write_bytes(done, (dumps_json(out, indent=1) + "\n").encode("utf-8"))
    return out


#: Seed 000's claims as (lower kind, higher kind): perplexity of the first below the second.
SEED_ORDER = (("groc", "tied"), ("groc-lex", "groc"), ("tied", "untied"))


def seed_orderings(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, bool]]:
    """The seed's orderings, checked between every pair of models of the kinds they name (variants
    included; GroC+lex only against GroC with the same sparse-update p): best valid, test, and
    whether the first is below the second at every epoch from 2 on that both validated."""
    out: dict[str, dict[str, bool]] = {}
    kind = {m: {"lookup": "tied"}.get(r["kind"], r["kind"]) for m, r in results.items()}  # lookup: tied's alias
    for low, high in SEED_ORDER:
        for a, ra in results.items():
            for b, rb in results.items():
                if kind[a] != low or kind[b] != high:
                    continue
                if low == "groc-lex" and ra["output_update_prob"] != rb["output_update_prob"]:
                    continue
                curve_b = dict(zip(rb["epochs"], rb["valid_curve"], strict=True))
                shared = [(v, curve_b[e]) for e, v in zip(ra["epochs"], ra["valid_curve"], strict=True)
                          if e >= 2 and float(e).is_integer() and e in curve_b]
                out[f"{a} < {b}"] = {"valid": ra["final_valid"] < rb["final_valid"], "test": ra["test"] < rb["test"],
                                     "every_epoch_from_2": bool(shared) and all(x < y for x, y in shared)}
    return out


def plot(models: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=80)
    for name, m in models.items():
        (line,) = ax.plot(m["epochs"], m["valid_curve"], marker="o", ms=3, label=f"{name} valid")
        ax.plot(m["epochs"], m["train_curve"], ls="--", color=line.get_color(), lw=1, label=f"{name} train")
    ax.set_xlabel("epoch")
    ax.set_ylabel("perplexity")
    ax.set_yscale("log")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    atomic_write(path, functools.partial(fig.savefig, format="png"))
    plt.close(fig)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/ptb_convergence"))
    ap.add_argument("--models", default="tied,untied,groc,groc-lex")
    ap.add_argument("--train-lines", type=int, default=0, help="first N lines of PTB train (0: all)")
    ap.add_argument("--eval-lines", type=int, default=0, help="first N lines of valid and test (0: all)")
    ap.add_argument("--epochs", type=int, default=100, help="epoch budget (the cap under --early-stopping)")
    ap.add_argument("--early-stopping", action="store_true", help="seed 000 B.1 lr decay and early stop")
    ap.add_argument("--lr-patience", type=int, default=4)
    ap.add_argument("--stop-patience", type=int, default=8)
    ap.add_argument("--max-minutes", type=float, default=0.0, help="wall-clock cap per model (0: none)")
    ap.add_argument("--resume", action="store_true",
                    help="same --work and flags as an earlier session: read back the models it finished and "
                         "continue those its --max-minutes cap stopped (a new cap may be given)")
    ap.add_argument("--collect", action="store_true",
                    help="like --resume but train nothing: report unfinished models as they stand")
    # Paper configuration (seed 000 B.1-B.2) unless overridden.
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.65)
    ap.add_argument("--output-dropout", type=float, default=0.2)
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--clip", type=float, default=0.1)
    ap.add_argument("--output-update-prob", type=float, default=1.0,
                    help="GroC sparse updates (seed 000 B.4). The seed's headline figures are full-update models "
                         "(p = 0.3 reached 75.3, not 69.5), and on the CPU protocol p = 0.3 slowed GroC per epoch "
                         "(docs/fidelity.md), so the protocol trains with full updates unless told otherwise")
    ap.add_argument("--filters", default=DEFAULT_FILTERS)
    ap.add_argument("--wn-dir", default=os.environ.get("POLYGLOT_GROC_WN_DIR", ""))
    ap.add_argument("--lexicon", nargs="+", default=None, metavar="SPEC")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1, help="models trained at once (separate processes; on one GPU "
                    "too, where a batch-20 LSTM leaves most of it idle)")
    add_device_arg(ap)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for every model")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=KIND;key=value;...",
                    help="an extra model (ablation): a kind plus its own overrides; repeatable")
    add_output_args(ap)
    return ap.parse_args(argv)


def run(args: argparse.Namespace, *,
        progress: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The protocol, as the JSON object it reports; ``progress(model, result)`` is called as each model
    finishes (in finishing order with ``--jobs``), so a caller can keep what is done if the rest is stopped."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(message)s")
    log = logging.getLogger("ptb_convergence")

    from polyglot_groc.config import MODEL_KINDS

    # Every flag is checked before anything is written under --work.
    names = [m for m in args.models.split(",") if m]
    check_models(names, MODELS)
    specs = {m: MODELS[m] for m in names}
    for text in args.variant:
        vname, spec = parse_variant(text)
        specs[vname] = spec
        names.append(vname)
    skipped = {m: f"model kind {specs[m][0]!r} does not exist in this version"
               for m in names if specs[m][0] not in MODEL_KINDS}
    for m, why in skipped.items():
        log.warning("skipping %s: %s", m, why)
    todo = [m for m in names if m not in skipped]
    device = device_label(args.device)
    overrides = common_overrides(args, args.work / "corpus")  # checks --filters too
    os.environ.setdefault("POLYGLOT_GROC_CACHE", str(args.work / "cache"))
    slice_ptb(prepare_ptb(shared_data(), args.work / "ptb_full"), args.work / "corpus", args.train_lines,
              args.eval_lines)
    t0 = time.monotonic()
    results: dict[str, dict[str, Any]] = {}
    if args.jobs > 1:
        # spawn, not fork: a forked child cannot use CUDA, and spawn behaves the same on CPU.
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(train_one, m, specs[m], overrides, str(args.work), args.output_update_prob,
                                   args.resume, args.collect): m
                       for m in todo}
            done: dict[str, dict[str, Any]] = {}
            for future in as_completed(futures):
                done[futures[future]] = future.result()
                if progress is not None:
                    progress(futures[future], done[futures[future]])
            results = {m: done[m] for m in todo}
    else:
        for m in todo:
            results[m] = train_one(m, specs[m], overrides, str(args.work), args.output_update_prob, args.resume,
                                   args.collect)
            if progress is not None:
                progress(m, results[m])
    out: dict[str, Any] = {
        "benchmark": "ptb_convergence",
        "device": device,
        "config": {"prefix": f"{args.layers}x{args.hidden} LSTM", "d": args.d, "dropout": args.dropout,
                   "output_dropout": args.output_dropout, "batch_size": args.batch_size, "bptt": args.bptt,
                   "lr": args.lr, "clip": args.clip, "epochs": args.epochs,
                   "early_stopping": args.early_stopping, "max_minutes_per_model": args.max_minutes,
                   "train_lines": args.train_lines, "eval_lines": args.eval_lines, "filters": args.filters,
                   "output_update_prob": args.output_update_prob, "threads": args.threads, "jobs": args.jobs,
                   "seed": args.seed, "overrides": args.set},
        "models": results,
        "skipped": skipped,
        "seed_000_targets_paper_config": SEED_TARGETS,
        "wall_seconds": round(time.monotonic() - t0, 1),
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    out["orderings"] = seed_orderings(results)
    return out


def main(argv: Sequence[str] | None = None, *,
         progress: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The script: :func:`run`, its JSON printed and saved, and its curves drawn beside it (or under --work)."""
    args = parse_args(argv)
    out = run(args, progress=progress)
    name = args.name or "ptb_convergence"
    path = emit(out, name, not args.no_save)
    png = path.with_suffix(".png") if path is not None else args.work / f"{name}.png"
    if out["models"]:
        plot(out["models"], png)
    return out


if __name__ == "__main__":
    script_main(main)
