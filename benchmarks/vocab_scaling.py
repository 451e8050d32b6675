"""Training and evaluation speed, and peak memory, of tied lookup and GroC as the vocabulary grows.

For each corpus (PTB, ~10k words; en+fr at a small budget, ~40k; en+fr at the thesis' ~1M training
tokens per language, ~140k words: the corpora ``gpu_campaign.py prepare thesis-align`` builds) and
each model

    tied_full  tied_sampled  groc_full  groc_sampled  groc_sampled_sparse (p = 0.3)

one child process trains ``--steps`` steps through ``pg.train`` (the public API) and reports the
median seconds of its steps after the first (warm-up; CPU seconds of the process on CPU, so a
loaded machine does not skew one model more than another; wall seconds on CUDA), the tokens/s of
the run's own final
validation (the full softmax over the screened vocabulary, the output table encoded once), and its
peak RSS (or CUDA peak memory). Ratios to tied (full and sampled) are taken within the one run. A
full-softmax variant is given fewer steps where ``--max-full-step-s`` says its steps are slow.

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/vocab_scaling.py --size cpu --threads 1
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/vocab_scaling.py --size paper --device cuda

Targets (issue "GroC at a real vocabulary"), all at ~140k: GroC sampled / tied sampled >= 0.5 train
tokens/s; GroC sampled >= 10x GroC full; GroC eval tokens/s >= 0.9x tied's; GroC sampled's peak
memory <= tied full's.

``--deadline EPOCH_SECONDS`` (an absolute time, as ``date +%s`` prints it) makes the run end by then
on its own: a child that cannot start at least ``MIN_CHILD_S`` before it is skipped (its row says
so), and each child that starts gets ``train.max_minutes`` of what is left (less the reserve for
its final validation) and stops at the deadline itself, at a step boundary (``pg.StopTraining``).
``benchmarks/gpu_campaign.py`` runs it this way, one child per sub-run, through :func:`child_spec`,
:func:`run_child` and :func:`summarise`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    BadInput,
    add_output_args,
    check_models,
    emit,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)
from benchmarks.throughput import SEED_FILTERS  # noqa: E402
from benchmarks.throughput import SIZES as THROUGHPUT_SIZES  # noqa: E402

#: Model sizes: throughput.py's (``cpu``: 2x256 LSTM, d 256, batch 64x35, with the seed's char-CNN;
#: ``paper``: the thesis model, 2x1024, batch 20x35), validated 10 streams at a time.
SIZES: dict[str, dict[str, Any]] = {
    "cpu": {**THROUGHPUT_SIZES["cpu"], "train.eval_batch_size": 10, "model.surface.filters": SEED_FILTERS},
    "paper": {**THROUGHPUT_SIZES["paper"], "train.eval_batch_size": 10},
}
MODELS: dict[str, dict[str, Any]] = {
    "tied_full": {"model.kind": "tied", "train.softmax": "full"},
    "tied_sampled": {"model.kind": "tied", "train.softmax": "sampled"},
    "groc_full": {"model.kind": "groc", "train.softmax": "full"},
    "groc_sampled": {"model.kind": "groc", "train.softmax": "sampled"},
    "groc_sampled_sparse": {"model.kind": "groc", "train.softmax": "sampled", "train.output_update_prob": 0.3},
}
#: Corpora: (languages, training tokens per language, eval tokens per split); 0 = PTB as it is.
CORPORA: dict[str, tuple[tuple[str, ...], int, int]] = {
    "10k": (("en",), 0, 0), "40k": (("en", "fr"), 60_000, 15_000), "140k": (("en", "fr"), 1_000_000, 50_000)}
#: With ``--deadline``: a child starts only with at least this many seconds left, and keeps this
#: much of them for its final validation (``train.max_minutes`` gets the rest).
MIN_CHILD_S = 20.0
EVAL_RESERVE_S = 10.0


def corpus_root(name: str, data: Path, work: Path) -> Path:
    """The prepared corpus of ``name`` (built once under ``work``)."""
    langs, train_tokens, eval_tokens = CORPORA[name]
    if not train_tokens:
        return prepare_ptb(data, work / "ptb")
    from benchmarks.polyglot_table import prepare

    out = work / f"corpora-{train_tokens}-{eval_tokens}"
    prepare(data, out, list(langs), train_tokens, eval_tokens, "auto")
    return out


class _Timer:
    """Hooks recording each step's end time and the final validation's.

    ``clock``: ``time.process_time`` on CPU (CPU seconds of this process: with one thread, the work
    itself, whatever else the machine runs), ``time.perf_counter`` on CUDA (kernels run async;
    the trainer's loss read at each log point and the validation's final read sync the device).
    """

    def __init__(self, clock: Any, deadline: float | None = None) -> None:
        self.clock = clock
        self.deadline = deadline  # absolute (time.time()); a step boundary past it ends the run
        self.step_s: list[float] = []  # each step's own seconds, validations excluded
        self.eval_record: dict[str, Any] = {}
        self.eval_s = 0.0
        self.info: dict[str, Any] = {}
        self.mark = 0.0  # where the next step's time starts: the last step's end, or the last validation's

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        self.info = {"vocab": info["vocab"], "softmax": info.get("softmax")}
        self.mark = self.clock()

    def on_step(self, info: Any) -> None:
        now = self.clock()
        self.step_s.append(now - self.mark)
        self.mark = now
        if self.deadline is not None and time.time() >= self.deadline:
            import polyglot_groc as pg

            raise pg.StopTraining("the --deadline passed")

    def on_eval(self, record: Mapping[str, Any]) -> None:
        # A validation runs between one step's end and this call. Any of them (the final one, or a
        # wall-clock checkpoint's, train.checkpoint_minutes: the "third-step spike" of issue 43 was the
        # first such checkpoint, due one minute in, counted inside the next timed step) is left out of
        # the steps' times; the last one is the run's measured evaluation.
        now = self.clock()
        self.eval_s = now - self.mark
        self.eval_record = dict(record)
        self.mark = now


def child(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Train one model (``spec``: overrides, steps, corpus, langs, out) and measure it."""
    import torch

    import polyglot_groc as pg
    from polyglot_groc.model.device import resolve_device

    device = resolve_device(spec["overrides"].get("train.device", "auto"))
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    timer = _Timer(time.perf_counter if device.type == "cuda" else time.process_time, spec.get("deadline"))
    steps = int(spec["steps"])
    # log_every=1 on CUDA: the loss read after each step syncs the device, so each step's time is its own.
    res = pg.train(out=spec["out"], langs=spec["langs"], data=spec["corpus"], size="small",
                   overrides={**spec["overrides"], "train.max_steps": steps, "train.eval_every": steps,
                              "train.log_every": 1 if device.type == "cuda" else 0,
                              # no wall-clock validations between the timed steps
                              "train.checkpoint_minutes": 0},
                   overwrite=True, hooks=timer)
    if len(timer.step_s) < 2:
        raise RuntimeError(f"{spec.get('name')}: {len(timer.step_s)} step(s) before its time ran out; "
                           "a median needs at least 2 (give it more time)")
    step_s = timer.step_s
    measured = step_s[1:] or step_s  # the first step warms up (allocations, first encodes)
    tokens_per_step = res.tokens_per_s * res.train_seconds / max(res.steps, 1)
    median = statistics.median(measured)
    valid_tokens = sum(timer.eval_record.get("valid_tokens", {}).values())
    return {
        "clock": "wall" if device.type == "cuda" else "cpu", "steps": res.steps, "stop_reason": res.stop_reason,
        "step_seconds": [round(s, 3) for s in step_s], "median_step_s": round(median, 4),
        "train_tokens_per_s": tokens_per_step / median, "eval_seconds": round(timer.eval_s, 2),
        "eval_tokens": valid_tokens, "eval_tokens_per_s": valid_tokens / timer.eval_s if timer.eval_s else None,
        "valid_perplexity": res.last_valid, "vocab": timer.info["vocab"], "softmax": timer.info["softmax"],
        "peak_memory_mib": (torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda"
                            else peak_rss_mib()),
        "memory_kind": "cuda_max_allocated" if device.type == "cuda" else "VmHWM",
    }


def child_spec(corpus: str, model: str, root: Path | str, *, size: str, steps: int, device: str, threads: int,
               precision: str, sampled_k: int, proposal: str, work: Path, overrides: dict[str, Any] | None = None,
               deadline: float | None = None) -> dict[str, Any]:
    """The spec of one child: ``model`` trained ``steps`` steps on the prepared corpus ``root``."""
    merged = {**SIZES[size], **MODELS[model], "train.threads": threads, "train.device": device,
              "train.precision": precision, "train.sampled_k": sampled_k, "train.sampled_proposal": proposal,
              **(overrides or {})}
    return {"name": f"{corpus}/{model}", "overrides": merged, "steps": steps, "corpus": str(root),
            "langs": ",".join(CORPORA[corpus][0]), "out": str(work / "runs" / corpus / model), "deadline": deadline}


def run_child(spec: dict[str, Any], threads: int, *, in_process: bool = False) -> dict[str, Any]:
    """Train and measure one model in a child process (``in_process``: in this one, for a CPU dry run).

    A ``spec["deadline"]`` (absolute, ``time.time()``) gives the child ``train.max_minutes`` of what
    is left less :data:`EVAL_RESERVE_S`; one with under :data:`MIN_CHILD_S` left is not started
    (``{"skipped": ...}``)."""
    deadline = spec.get("deadline")
    if deadline is not None:
        left = deadline - time.time()
        if left < MIN_CHILD_S:
            return {"skipped": f"not started: {max(left, 0):.0f} s to the deadline (a child needs {MIN_CHILD_S:.0f})"}
        cap = (left - EVAL_RESERVE_S) / 60
        spec = {**spec, "overrides": {**spec["overrides"],
                                      "train.max_minutes": round(min(cap, spec["overrides"].get("train.max_minutes")
                                                                     or cap), 3)}}
    if in_process:
        return child(spec)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec, default=str)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise BadInput(f"child {spec['name']} failed: {proc.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def ratio(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> float | None:
    if not a or not b or not a.get(key) or not b.get(key):
        return None
    return round(float(a[key]) / float(b[key]), 4)


#: The figures of a child that repeats combine: each model's median over its repeats, with the spread.
REPEATED = ("median_step_s", "train_tokens_per_s", "eval_tokens_per_s", "peak_memory_mib")


def combine(repeats: list[dict[str, Any]]) -> dict[str, Any]:
    """One model's row from its repeated children: the median of each figure over the repeats, its
    spread (min, max), and every repeat's own row. One repeat is returned as it is."""
    done = [r for r in repeats if "skipped" not in r and "error" not in r]
    if len(repeats) == 1 or not done:
        return repeats[0]
    row = dict(done[0])
    row["repeats"] = repeats
    for key in REPEATED:
        values = [float(r[key]) for r in done if r.get(key) is not None]
        if values:
            row[key] = statistics.median(values)
            row[f"{key}_spread"] = [round(min(values), 4), round(max(values), 4)]
    return row


#: Ratios of the summary: (key, numerator model, denominator model(s), figure).
RATIOS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("groc_sampled_over_tied_sampled_train", ("groc_sampled",), ("tied_sampled",), "train_tokens_per_s"),
    ("groc_sampled_over_tied_full_train", ("groc_sampled",), ("tied_full",), "train_tokens_per_s"),
    ("groc_sampled_over_groc_full_train", ("groc_sampled",), ("groc_full",), "train_tokens_per_s"),
    ("groc_sparse_over_tied_sampled_train", ("groc_sampled_sparse",), ("tied_sampled",), "train_tokens_per_s"),
    ("groc_full_over_tied_full_train", ("groc_full",), ("tied_full",), "train_tokens_per_s"),
    ("groc_over_tied_eval", ("groc_full", "groc_sampled"), ("tied_full", "tied_sampled"), "eval_tokens_per_s"),
    ("groc_sampled_memory_over_tied_full", ("groc_sampled",), ("tied_full",), "peak_memory_mib"),
)


def summarise(corpus: str, rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One corpus's entry: its rows and the ratios between them (rows skipped for time are kept, unused).

    Rows with ``repeats`` (:func:`combine`) give each ratio from the medians and, beside it, the
    spread of the ratios taken repeat by repeat (the repeats ran interleaved: repeat i of every model
    ran close in time, so their ratio sees the same machine)."""
    done = {m: r for m, r in rows.items() if "skipped" not in r and "error" not in r}
    summary: dict[str, Any] = {}
    for key, tops, bottoms, figure in RATIOS:
        top = next((done[m] for m in tops if m in done), None)
        bottom = next((done[m] for m in bottoms if m in done), None)
        summary[key] = ratio(top, bottom, figure)
        if top is not None and bottom is not None and "repeats" in top and "repeats" in bottom:
            pairs = [ratio(a, b, figure) for a, b in zip(top["repeats"], bottom["repeats"], strict=False)]
            per = [x for x in pairs if x is not None]
            if per:
                summary[f"{key}_per_repeat"] = per
    first = next(iter(done.values()), None)
    return {"langs": ",".join(CORPORA[corpus][0]), "vocab": first["vocab"] if first else None,
            "largest_screened_vocab": first["softmax"]["largest_vocab"] if first else None,
            "models": rows, "summary": summary}


def interleaved(names: list[str], repeats: int) -> list[tuple[int, str]]:
    """(repeat, model) in the order the children run: every model once per repeat, the order rotated
    each repeat, so no model always runs first (or last) on a machine whose load drifts."""
    order: list[tuple[int, str]] = []
    for r in range(repeats):
        k = r % len(names)
        order += [(r, m) for m in names[k:] + names[:k]]
    return order


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--size", choices=tuple(SIZES), default="cpu")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--steps", type=int, default=6, help="steps per model (the first is not timed)")
    ap.add_argument("--full-steps", type=int, default=3, help="steps of a full-softmax model at the largest corpus")
    ap.add_argument("--sampled-k", type=int, default=4096)
    ap.add_argument("--proposal", default="log-uniform")
    ap.add_argument("--precision", default="auto")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3,
                    help="children per model, run interleaved (ratios from medians, spreads reported)")
    ap.add_argument("--work", type=Path, default=Path("bench_out/vocab_scaling"))
    ap.add_argument("--deadline", type=float, default=None,
                    help="absolute end (seconds since the epoch, `date +%%s`): children that cannot start "
                         "before it are skipped, and each stops by it")
    add_output_args(ap)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(json.loads(args.child))))
        return
    logging.basicConfig(level=logging.WARNING)
    names = args.models.split(",")
    check_models(names, MODELS)
    corpora = args.corpora.split(",")
    check_models(corpora, CORPORA)
    if args.repeats < 1:
        raise BadInput("--repeats must be at least 1")
    if args.steps < 2 or args.full_steps < 2:
        raise BadInput("--steps and --full-steps must be at least 2 (the first step is not timed)")
    data = shared_data()
    started = time.time()
    out: dict[str, Any] = {"benchmark": "vocab_scaling", "size": args.size, "device": args.device,
                           "threads": args.threads, "repeats": args.repeats, "sampled_k": args.sampled_k,
                           "proposal": args.proposal,
                           "precision": args.precision, "corpora": {}}
    for name in corpora:
        root = corpus_root(name, data, args.work)
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in names}
        for r, model in interleaved(names, args.repeats):
            steps = args.full_steps if name == corpora[-1] and MODELS[model]["train.softmax"] == "full" \
                else args.steps
            spec = child_spec(name, model, root, size=args.size, steps=steps, device=args.device,
                              threads=args.threads, precision=args.precision, sampled_k=args.sampled_k,
                              proposal=args.proposal, work=args.work / f"repeat{r}", deadline=args.deadline)
            row = run_child(spec, args.threads)
            runs[model].append(row)
            if "skipped" in row:
                print(f"{name} {model} #{r}: {row['skipped']}", file=sys.stderr)
                continue
            print(f"{name} {model} #{r}: {row['median_step_s']} s/step, "
                  f"{row['train_tokens_per_s']:.0f} tok/s, steps {row['step_seconds']}", file=sys.stderr)
        out["corpora"][name] = summarise(name, {m: combine(rs) for m, rs in runs.items()})
    out["wall_seconds"] = round(time.time() - started, 1)
    emit(out, args.name, not args.no_save)


if __name__ == "__main__":
    script_main(main)
