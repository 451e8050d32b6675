"""The campaign's commands (status, plan, prepare, run, record, reset) and its argument parser."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import campaign
from benchmarks.campaign.data import prepare_data
from benchmarks.campaign.device import CARRY_LIMIT_MIB
from benchmarks.campaign.ledger import failed_parts, load_ledger, owed_parts, save_ledger, stage_status
from benchmarks.campaign.planner import cmd_plan
from benchmarks.campaign.record import cmd_record
from benchmarks.campaign.run import DEFAULT_RUN_MINUTES, cmd_run
from benchmarks.campaign.runners import RUNNERS
from benchmarks.campaign.stages import (
    STAGES,
    campaign_dir,
    data_dir,
    ledger_path,
    now,
    slice_union,
    stage_of,
    toy_root,
    tree_mib,
    wheel_dir,
    working_tree_mib,
)
from benchmarks.campaign.wheels import prepare_wheels, wheel_plan
from benchmarks.common import BadInput, emit


def cmd_status(args: argparse.Namespace) -> dict[str, Any]:
    toy = bool(args.dry_run)
    ledger = load_ledger(ledger_path(args, toy))
    stages = {}
    for name, entry in ledger["stages"].items():
        runner = RUNNERS[name]
        stages[name] = {"status": entry["status"], **({"reason": entry["reason"]} if entry.get("reason") else {}),
                        "done": [p for p in runner.parts if entry["parts"].get(p, {}).get("status") == "done"],
                        "owed": owed_parts(entry, runner), "failed": failed_parts(entry, runner),
                        "last_run": entry["runs"][-1].get("finished") if entry.get("runs") else None}
    nxt = next((n for n, s in stages.items() if s["owed"]), None)
    return {"ledger": str(ledger_path(args, toy)), "next": nxt, "stages": stages}


def cmd_reset(args: argparse.Namespace) -> dict[str, Any]:
    stage = stage_of(args.stage)
    runner = RUNNERS[stage.name]
    toy = bool(args.dry_run)
    path = ledger_path(args, toy)
    ledger = load_ledger(path)
    entry = ledger["stages"][stage.name]
    parts = [args.part] if args.part else list(runner.parts)
    unknown = [p for p in parts if p not in runner.parts]
    if unknown:
        raise BadInput(f"unknown part {unknown[0]!r} of {stage.name}; its parts are {', '.join(runner.parts)}")
    for p in parts:  # owed again; measured seconds stay (estimates)
        old = entry["parts"].get(p, {})
        entry["parts"][p] = {**{k: v for k, v in old.items() if k in ("seconds", "train_seconds", "steps_per_s",
                                                                      "eval_s", "seconds_lower_bound")},
                             "status": "pending", "reset": now()}
    entry["status"], reason = stage_status({**entry, "runs": []}, runner)
    entry.pop("reason", None)
    save_ledger(path, ledger)
    return {"stage": stage.name, "status": entry["status"], "owed": owed_parts(entry, runner)}


def cmd_prepare(args: argparse.Namespace) -> dict[str, Any]:
    stages = [stage_of(s) for s in (args.stages or list(STAGES))]
    src = Path(args.data_root or os.environ.get("POLYGLOT_GROC_DATA", ""))
    if not str(src) or not src.is_dir():
        raise BadInput("set POLYGLOT_GROC_DATA (or --data-root) to the shared data folder (../shared/data)")
    toy = bool(args.toy)
    root = toy_root(args, toy)
    info = prepare_data(src, data_dir(args, toy), stages, toy, campaign_dir(args) / "cache")
    report: dict[str, Any] = {"toy": toy, "data": str(data_dir(args, toy)), "slices": info["slices"], "stages": {}}
    tree = working_tree_mib()
    for stage in stages:
        entry: dict[str, Any] = {}
        if args.wheels and not toy:
            entry.update(prepare_wheels(args, stage))
        elif stage.packages:
            entry["wheel_plan"] = wheel_plan(stage)
        need = slice_union([stage])
        data_mib = sum(info["slices"][k]["mib"] for k in need)
        whl_mib = tree_mib(wheel_dir(args, stage)) if stage.packages and not toy else 0.0
        entry["carry_mib"] = {"tree": round(tree, 2), "data": round(data_mib, 2), "wheels": round(whl_mib, 2),
                              "total": round(tree + data_mib + whl_mib, 2), "limit": args.carry_limit_mib}
        if stage.packages and not toy and not args.wheels and not whl_mib:
            entry["note"] = "wheels not downloaded (pass --wheels on a machine that reaches PyPI)"
        report["stages"][stage.name] = entry
    over = {n: e["carry_mib"]["total"] for n, e in report["stages"].items()
            if e["carry_mib"]["total"] > args.carry_limit_mib}
    if over:
        raise BadInput("carry over the device tool's limit: " + ", ".join(
            f"{n} {mib:.3g} MiB > {args.carry_limit_mib:g} MiB" for n, mib in over.items()))
    report["root"] = str(root)
    return report


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="gpu_campaign.py", description=campaign.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--campaign-dir", default=os.environ.get("GPU_CAMPAIGN_DIR"),
                    help="where prepared data, wheels, the carry and work go (default .campaign/ in the repository)")
    ap.add_argument("--ledger", default=os.environ.get("GPU_CAMPAIGN_LEDGER"),
                    help="ledger file (default benchmarks/results/gpu_campaign_ledger.json; a dry run's is "
                         "<campaign-dir>/toy/ledger.json)")
    ap.add_argument("--results", default=os.environ.get("GPU_CAMPAIGN_RESULTS"),
                    help="where record files results (default benchmarks/results/, as <day>/gpu_campaign_<file>)")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("status", help="the ledger: per stage, the parts done, owed and failed")
    p.add_argument("--dry-run", action="store_true", help="the dry run's ledger")
    p = sub.add_parser("plan", help="the next window's device command, carry and timeout")
    p.add_argument("stages", nargs="*", help="only these stages (default: every stage with owed parts)")
    p.add_argument("--minutes", type=float, default=12.0,
                   help="device minutes of the window, the machine's start and idle time included (default 12)")
    p.add_argument("--dry-run", action="store_true", help="a command that runs the toy stages here, on CPU")
    p = sub.add_parser("prepare", help="fill .campaign/ with the stages' data (and --wheels)")
    p.add_argument("stages", nargs="*")
    p.add_argument("--toy", action="store_true", help="the dry run's tiny slices (under .campaign/toy/)")
    p.add_argument("--wheels", action="store_true", help="download the missing packages' wheels (needs PyPI)")
    p.add_argument("--data-root", default=None, help="shared data folder (default $POLYGLOT_GROC_DATA)")
    p.add_argument("--carry-limit-mib", type=float, default=CARRY_LIMIT_MIB)
    p = sub.add_parser("run", help="run one stage (its owed parts, or --parts, or --full)")
    p.add_argument("stage")
    p.add_argument("--out", default=os.environ.get("OUT"), help="output folder (default $OUT)")
    p.add_argument("--dry-run", "--toy", dest="dry_run", action="store_true",
                   help="CPU, toy sizes, toy data; never marks the ledger")
    p.add_argument("--deadline", type=float, default=None,
                   help="absolute end, seconds since the epoch (`date +%%s`): the stage starts no part that "
                        "does not fit before it, caps its trainings by it, and stops itself past it")
    p.add_argument("--minutes", type=float, default=None,
                   help=f"the stage's budget (its deadline when --deadline is not given; default "
                        f"{DEFAULT_RUN_MINUTES}, none with --full)")
    p.add_argument("--parts", default=None, help="comma-separated parts (default: those the ledger says are owed)")
    p.add_argument("--all", action="store_true", help="every part, done or not")
    p.add_argument("--full", action="store_true",
                   help="your own CUDA machine: every part at the stage's full length, no deadline")
    p.add_argument("--work", default=None)
    p.add_argument("--steps", type=int, default=None, help="the stage's step budget (default: its own)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--block-missing", action="store_true",
                   help="refuse imports of the packages the GPU machine lacks and the stage does not carry")
    p.add_argument("--json-only", action="store_true",
                   help="write only <stage>.json (a window: `record` draws the figures from it)")
    p = sub.add_parser("record", help="file a device call's output folder; the ledger moves on")
    p.add_argument("folder")
    p.add_argument("--reason", default=None,
                   help="why a killed stage stopped (its JSON, last written before the kill, cannot say): "
                        "filed as its run's reason")
    p.add_argument("--dry-run", action="store_true", help="file dry-run results into the dry run's ledger")
    p = sub.add_parser("reset", help="mark a stage's parts (or --part) owed again")
    p.add_argument("stage")
    p.add_argument("--part", default=None)
    p.add_argument("--dry-run", action="store_true", help="the dry run's ledger")
    argv = list(argv)
    if argv[:1] == ["--prepare"]:  # the spelling
        argv[0] = "prepare"
    args = ap.parse_args(argv)
    args.argv = argv
    return args


COMMANDS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "status": cmd_status, "plan": cmd_plan, "prepare": cmd_prepare, "run": cmd_run, "record": cmd_record,
    "reset": cmd_reset,
}


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    out = COMMANDS[args.command](args)
    emit(out, "gpu_campaign", save=False)
    return out


def exit_code(out: dict[str, Any]) -> int:
    """A stage run's status as the process's exit status (the window's command goes on either way)."""
    return {"interrupted": 143, "failed": 1}.get(str(out.get("status")), 0)
