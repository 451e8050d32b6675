"""``run STAGE``: one stage on the device (or its dry run on CPU), its JSON written throughout."""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.util
import os
import shlex
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from benchmarks.campaign.data import load_slices, stage_data
from benchmarks.campaign.device import GPU_LACKS
from benchmarks.campaign.ledger import load_ledger, owed_parts
from benchmarks.campaign.runners import RUNNERS
from benchmarks.campaign.runtime import ALARM, Ctx, Runner, StageRecord, deadline_alarm
from benchmarks.campaign.stages import CARRY_NAME, REPO, iso, ledger_path, stage_of, toy_root
from benchmarks.common import BadInput


class _Blocker(importlib.abc.MetaPathFinder):
    """Makes ``import NAME`` fail as on the GPU machine for packages a stage does not carry."""

    def __init__(self, names: set[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (blocked: the GPU machine lacks it)")
        return None


PROCESS_STARTED = time.time()  # the stage's own overhead (imports) counts from here


def select_parts(args: argparse.Namespace, runner: Runner, toy: bool) -> list[str]:
    """``--parts``, else every part with ``--full``/``--all``, else those the ledger says are owed;
    widened to whole groups (a group runs in one call), in the stage's order."""
    if args.parts:
        asked = [p.strip() for p in args.parts.split(",") if p.strip()]
        unknown = [p for p in asked if p not in runner.parts]
        if unknown:
            raise BadInput(f"unknown part(s) {', '.join(unknown)} of {runner.name}; its parts are "
                           f"{', '.join(runner.parts)}")
    elif args.full or args.all:
        asked = list(runner.parts)
    else:
        entry = load_ledger(ledger_path(args, toy))["stages"][runner.name]
        asked = owed_parts(entry, runner)
        if not asked:
            raise BadInput(f"{runner.name}: nothing is owed (the ledger says done or failed); pass --all to run it "
                           "again, or `reset` it")
    chosen = {p for g in runner.groups() if set(g) & set(asked) for p in g}
    return [p for p in runner.parts if p in chosen]


def cmd_run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from polyglot_groc.model.device import device_name
    from polyglot_groc.training.interrupts import Terminated, stop_signals

    stage = stage_of(args.stage)
    runner = RUNNERS[stage.name]
    toy = bool(args.dry_run)
    cuda = torch.cuda.is_available()
    if not toy and not cuda:
        raise BadInput(f"stage {stage.name} needs CUDA and torch.cuda.is_available() is False here; "
                       f"use `run {stage.name} --dry-run` for the CPU toy run")
    parts = select_parts(args, runner, toy)
    if args.block_missing:
        sys.meta_path.insert(0, _Blocker({mod for pkg, mod in GPU_LACKS.items() if pkg not in stage.packages}))
    missing = [pkg for pkg in stage.packages if importlib.util.find_spec(GPU_LACKS[pkg]) is None]
    if missing:
        raise BadInput(f"{', '.join(missing)} not importable: carry the wheels (`plan` puts them in "
                       f".campaign/{CARRY_NAME}/whl and its command installs them)")
    data = stage_data(args, stage, toy) if stage.slices else toy_root(args, toy) / "data"
    out = Path(args.out) if args.out else REPO / "bench_out" / "gpu_campaign"
    work = Path(args.work) if args.work else toy_root(args, toy) / "work" / stage.name
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    os.environ["POLYGLOT_GROC_DATA"] = str(data)
    os.environ["POLYGLOT_GROC_CACHE"] = str(work / "cache")
    os.environ["POLYGLOT_GROC_WN_DIR"] = str(work / "wn")
    now = time.time()
    if args.deadline is not None:
        deadline: float | None = float(args.deadline)
    elif args.minutes is not None:
        deadline = now + 60 * args.minutes
    else:
        deadline = None if (args.full or toy) else now + 60 * DEFAULT_RUN_MINUTES
    device = "cpu" if toy else "cuda"
    header = {"stage": stage.name, "title": stage.title, "campaign": {
        "dry_run": toy, "device": device_name(torch.device(device)),
        "cuda_device_name": torch.cuda.get_device_name(0) if cuda and not toy else None,
        "torch": torch.__version__, "started": iso(PROCESS_STARTED), "updated": None, "finished": None,
        "status": "running", "deadline": iso(deadline) if deadline is not None else None,
        "deadline_epoch": deadline, "minutes_budget": args.minutes, "full_length": bool(args.full),
        "parts_asked": parts, "command": shlex.join(["python3", "benchmarks/gpu_campaign.py", *args.argv]),
        "data": str(data), "files": [f"{stage.name}.json"], "notes": []}}
    record = StageRecord(out / f"{stage.name}.json", header, parts)
    ledger = load_ledger(ledger_path(args, toy))["stages"]
    ctx = Ctx(stage=stage, toy=toy, full=bool(args.full), device=device, data=data, work=work, out=out,
              deadline=deadline, steps=args.steps, threads=args.threads or (1 if toy else 12),
              measured=ledger[stage.name], ledger=ledger, record=record, slices=load_slices(data).get("slices", {}))
    record.ctx = ctx
    record.write()  # from here on a kill leaves this JSON (every part owed, or what is done)
    c = record.obj["campaign"]
    order = [g for g in runner.groups() if set(g) <= set(parts)]
    try:
        with stop_signals(), deadline_alarm(deadline):
            try:
                started = time.monotonic()
                runner.setup(ctx, parts)
                record.obj["timings"]["setup_s"] = round(time.monotonic() - started, 1)
                started = time.monotonic()
                try:
                    runner.run(ctx, order)
                finally:
                    record.obj["timings"]["run_s"] = round(time.monotonic() - started, 1)
            except (KeyboardInterrupt, Terminated) as exc:
                signum = exc.args[0] if isinstance(exc, Terminated) and exc.args else None
                cause = ("the deadline (SIGALRM, past its grace)" if ALARM["fired"] or signum == signal.SIGALRM
                         else "SIGINT" if not isinstance(exc, Terminated) and getattr(exc, "signal", "") != "SIGTERM"
                         else "SIGTERM")
                c["stopped_by"] = cause
                for part in record.running():
                    record.set(part, "interrupted", reason=f"stopped by {cause}")
            except Exception as exc:  # setup, or a stage's own loop: the parts done so far are kept
                c["error"] = f"{type(exc).__name__}: {exc}"
                c["traceback"] = traceback.format_exc()[-4000:]
                for part in record.running():
                    record.set(part, "failed", error=c["error"])
    finally:
        # overhead: the process's seconds outside its parts (start, imports, setup): a stage's own cost
        timings = record.obj["timings"]
        process_s = time.time() - PROCESS_STARTED
        timings.update(process_s=round(process_s, 1), overhead_s=round(process_s - timings.get("run_s", 0.0), 1))
        record.write(final=True)
    if not args.json_only:  # figures from the JSON (a window leaves them to `record`: 8 files come back)
        try:
            ctx.files.extend(runner.render(record.obj, out))
            record.write(final=True)
        except Exception as exc:  # a figure: the numbers are in the JSON already
            ctx.notes.append(f"render: {type(exc).__name__}: {exc}")
    return {"stage": stage.name, "status": c["status"], "out": str(out / f"{stage.name}.json"),
            "parts": {p: e["status"] for p, e in record.obj["parts"].items()}, "wall_seconds": c["wall_seconds"],
            "deadline": c["deadline"], **({"error": c["error"]} if c.get("error") else {})}


DEFAULT_RUN_MINUTES = 8.5  # `run STAGE` with neither --deadline, --minutes nor --full

