"""``plan``: the owed work that fits one device window, as one command and its carry."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.campaign.data import load_slices, slice_files
from benchmarks.campaign.device import (
    CALL_MARGIN_S,
    CALL_MAX_S,
    CARRY_LIMIT_MIB,
    COMMAND_MAX_CHARS,
    IDLE_AFTER_S,
    INSTALL_S,
    MACHINE_START_S,
    OUT_MAX_FILES,
)
from benchmarks.campaign.ledger import failed_parts, load_ledger, owed_parts
from benchmarks.campaign.runners import RUNNERS
from benchmarks.campaign.stages import (
    CARRY_NAME,
    STAGES,
    Stage,
    data_dir,
    ledger_path,
    slice_union,
    stage_of,
    toy_root,
    tree_mib,
    wheel_dir,
    working_tree_mib,
)
from benchmarks.campaign.wheels import wheel_plan, wheel_project
from benchmarks.common import BadInput
from groc_base.fileio import write_json


@dataclasses.dataclass
class Planned:
    stage: Stage
    parts: list[str]
    budget_s: float
    estimates: dict[str, float]
    overhead_s: float


def plan_window(ledger: dict[str, Any], toy: bool, avail_s: float,
                only: Sequence[str] = ()) -> tuple[list[Planned], dict[str, Any]]:
    """The owed work that fits ``avail_s`` seconds, in priority order: a fixed-cost stage takes the
    groups of parts whose estimates fit (a group with any owed part is redone whole); an elastic
    stage (training to a time cap) takes the rest of the window if at least its minimum is left."""
    chosen: list[Planned] = []
    deferred: dict[str, Any] = {}
    for name, stage in STAGES.items():
        runner, entry = RUNNERS[name], ledger["stages"][name]
        owed = owed_parts(entry, runner)
        if not owed or (only and name not in only):
            continue
        groups = [g for g in runner.groups() if set(g) & set(owed)]
        overhead = runner.overhead_s(entry, toy)
        est = {p: round(runner.estimate(p, entry["parts"].get(p, {}), toy), 1) for g in groups for p in g}
        if runner.elastic:
            need = overhead + runner.min_s(toy)
            if avail_s >= need:
                parts = [p for g in groups for p in g]
                take = min(avail_s, overhead + runner.max_s(toy))
                chosen.append(Planned(stage, parts, take, {p: est[p] for p in parts}, overhead))
                avail_s -= take
            else:
                deferred[name] = {"parts": owed, "why": f"needs at least {need:.0f} s, {max(avail_s, 0):.0f} s left"}
            continue
        picked: list[str] = []
        used = overhead
        for g in groups:
            cost = sum(est[p] for p in g)
            if used + cost <= avail_s:
                picked += g
                used += cost
        if picked:
            chosen.append(Planned(stage, picked, used, {p: est[p] for p in picked}, overhead))
            avail_s -= used
        rest = [p for p in owed if p not in picked]
        if rest:
            deferred[name] = {"parts": rest, "why": f"out of this window ({max(avail_s, 0):.0f} s left; estimates "
                                                    f"{', '.join(f'{p} {est[p]:.0f} s' for p in rest if p in est)})"}
    return chosen, deferred


def forecast_windows(ledger: dict[str, Any], toy: bool, avail_s: float, first: Sequence[str],
                     limit: int = 12) -> list[dict[str, list[str]]]:
    """The windows after this one that the owed work needs, by today's estimates (each window
    planned as ``plan`` would once the one before it is done; carry and file limits aside)."""
    sim = json.loads(json.dumps(ledger))
    windows: list[dict[str, list[str]]] = []
    chosen, _ = plan_window(sim, toy, avail_s, first)
    for _ in range(limit + 1):
        for p in chosen:
            for part in p.parts:
                sim["stages"][p.stage.name]["parts"][part] = {**sim["stages"][p.stage.name]["parts"].get(part, {}),
                                                              "status": "done"}
        if windows or chosen:
            windows.append({p.stage.name: p.parts for p in chosen})
        chosen, _ = plan_window(sim, toy, avail_s)
        if not chosen:
            break
    return windows[1:]


def assemble_carry(args: argparse.Namespace, toy: bool, stages: Sequence[Stage]) -> dict[str, Any]:
    """``.campaign/carry`` (``toy/carry`` for a dry run): exactly the data slices and wheels of
    ``stages``, hard-linked from what ``prepare`` made; returns sizes in MiB."""
    root = toy_root(args, toy)
    carry = root / CARRY_NAME
    if carry.exists():
        shutil.rmtree(carry)
    src = data_dir(args, toy)
    info = load_slices(src)
    need = slice_union([s for s in stages if s.slices])
    missing = [k for k in need if k not in info.get("slices", {})]
    missing += [f"{k}:{lang}" for k, langs in need.items() if k.startswith("corpora")
                for lang in langs if lang not in info.get("slices", {}).get(k, {}).get("langs", {})]
    if missing:
        flag = " --toy" if toy else ""
        raise BadInput(f"the window needs data not prepared ({', '.join(missing)}): run `python benchmarks/"
                       f"gpu_campaign.py prepare {' '.join(s.name for s in stages)}{flag}` first")

    def link(a: Path, b: Path) -> None:
        b.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(a, b)
        except OSError:
            shutil.copyfile(a, b)

    slices: dict[str, Any] = {}
    for key, langs in need.items():
        entry = dict(info["slices"][key])
        if key.startswith("corpora"):
            entry["langs"] = {lang: v for lang, v in entry["langs"].items() if lang in langs}
        for rel in slice_files(src, key, entry, langs):
            link(src / rel, carry / "data" / rel)
        slices[key] = entry
    if need:
        write_json(carry / "data" / "slices.json", {**info, "slices": slices, "carried_for": [s.name for s in stages]})
    wheels: dict[str, Path] = {}
    if not toy:
        for stage in stages:
            if not stage.packages:
                continue
            folder = wheel_dir(args, stage)
            plan = wheel_plan(stage)
            have = {wheel_project(p): p for p in folder.glob("*.whl")} if folder.is_dir() else {}
            lacking = [n for n in plan if n not in have]
            if lacking:
                raise BadInput(f"{stage.name} needs wheels not downloaded ({', '.join(lacking)}): run `python "
                               f"benchmarks/gpu_campaign.py prepare {stage.name} --wheels` on a machine with PyPI")
            for p in have.values():
                wheels.setdefault(p.name, p)
        for name, p in wheels.items():
            link(p, carry / "whl" / name)
    data_mib = tree_mib(carry / "data")
    whl_mib = tree_mib(carry / "whl")
    return {"path": str(carry), "data": round(data_mib, 2), "wheels": round(whl_mib, 2),
            "carry": round(data_mib + whl_mib, 2), "n_wheels": len(wheels)}


def window_command(chosen: Sequence[Planned], deadline_after: int, toy: bool, wheels: bool) -> str:
    """The one shell command of a window: the deadline D first (the install's time counts), the
    wheels, then each stage with its budget and its deadline (D less the budgets after it); stderr
    to $OUT/window.log, each stage's one-line JSON to stdout (the tool's output_tail)."""
    py = shlex.quote(sys.executable) if toy else "python3"
    steps = ["export PYTHONPATH=$PWD PYTHONUNBUFFERED=1", f"D=$(($(date +%s)+{deadline_after}))"]
    if wheels:
        steps.append(f"{py} -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "
                     f".campaign/{CARRY_NAME}/whl/*.whl >>$OUT/window.log 2>&1 && export PYTHONPATH=/tmp/site:$PWD")
    steps.append(f'G="{py} benchmarks/gpu_campaign.py run"')
    later = [sum(p.budget_s for p in chosen[i + 1:]) for i in range(len(chosen))]
    for p, after in zip(chosen, later, strict=True):
        dl = "$D" if after < 1 else f"$((D-{int(math.ceil(after))}))"
        flags = " --json-only" + (" --dry-run --block-missing" if toy else "")
        steps.append(f"$G {p.stage.name} --deadline {dl} --minutes {p.budget_s / 60:.2f} --parts {','.join(p.parts)} "
                     f"--out $OUT{flags} 2>>$OUT/window.log")
    return "; ".join(steps)


def cmd_plan(args: argparse.Namespace) -> dict[str, Any]:
    toy = bool(args.dry_run)
    window = args.minutes * 60 - MACHINE_START_S - IDLE_AFTER_S
    call_s = int(min(window, CALL_MAX_S))
    deadline_after = int(call_s - CALL_MARGIN_S)
    if deadline_after < 60:
        raise BadInput(f"--minutes {args.minutes:g} leaves {max(call_s, 0)} s for the call after the machine's start "
                       f"({MACHINE_START_S:.0f} s) and its idle time ({IDLE_AFTER_S:.0f} s); give at least "
                       f"{(MACHINE_START_S + IDLE_AFTER_S + CALL_MARGIN_S + 60) / 60:.1f}")
    ledger = load_ledger(ledger_path(args, toy))
    only = [stage_of(s).name for s in args.stages]
    tree = working_tree_mib()
    chosen: list[Planned] = []
    deferred: dict[str, Any] = {}
    install = INSTALL_S
    dropped: dict[str, Any] = {}
    while True:  # drop the last stage while the carry or $OUT's file count would not fit
        chosen, deferred = plan_window(ledger, toy, deadline_after - install,
                                       [s for s in (only or STAGES) if s not in dropped])
        if not chosen:
            break
        needs_wheels = not toy and any(p.stage.packages for p in chosen)
        install = INSTALL_S if needs_wheels else 0.0
        carry = assemble_carry(args, toy, [p.stage for p in chosen])
        files = ["window.log", *(f"{p.stage.name}.json" for p in chosen)]
        total = tree + carry["carry"]
        if total <= CARRY_LIMIT_MIB and len(files) <= OUT_MAX_FILES:
            break
        why = (f"carry {total:.1f} MiB > {CARRY_LIMIT_MIB:g}" if total > CARRY_LIMIT_MIB
               else f"{len(files)} files from $OUT > {OUT_MAX_FILES}")
        dropped[chosen[-1].stage.name] = {"parts": chosen[-1].parts, "why": f"not with the stages before it: {why}"}
    deferred.update(dropped)
    waiting = {s: failed_parts(e, RUNNERS[s]) for s, e in ledger["stages"].items() if failed_parts(e, RUNNERS[s])}
    if not chosen:
        why = f" ({json.dumps(deferred)})" if deferred else ": every part is done" + (
            f" or waiting for `reset` ({waiting})" if waiting else "")
        raise BadInput("nothing owed fits a window" + why)
    # Re-plan with the install time of the chosen stages (it was assumed above).
    chosen, again = plan_window(ledger, toy, deadline_after - install, [p.stage.name for p in chosen])
    deferred.update({k: v for k, v in again.items() if k not in deferred})
    carry = assemble_carry(args, toy, [p.stage for p in chosen])
    command = window_command(chosen, deadline_after, toy, carry["n_wheels"] > 0)
    if len(command) > COMMAND_MAX_CHARS:
        raise BadInput(f"the window's command is {len(command)} characters (the tool takes {COMMAND_MAX_CHARS}); "
                       "plan fewer stages with `plan --minutes N STAGE...`")
    files = ["window.log", *(f"{p.stage.name}.json" for p in chosen)]
    forecast = forecast_windows(ledger, toy, deadline_after - INSTALL_S, [p.stage.name for p in chosen])
    out = {
        "dry_run": toy,
        "window": {"minutes": args.minutes, "machine_start_s": MACHINE_START_S, "idle_after_s": IDLE_AFTER_S,
                   "call_s": call_s, "deadline_after_s": deadline_after, "install_s": install,
                   "margin_s": CALL_MARGIN_S},
        "timeout_s": call_s,
        "stages": [{"stage": p.stage.name, "parts": p.parts, "budget_s": round(p.budget_s, 1),
                    "overhead_s": round(p.overhead_s, 1), "estimates_s": p.estimates,
                    "elastic": RUNNERS[p.stage.name].elastic} for p in chosen],
        "deferred": deferred, "waiting_for_reset": waiting,
        "command": command, "command_chars": len(command),
        "carry": [f".campaign/{CARRY_NAME}"] if not toy else [],
        "carry_mib": {"tree": round(tree, 2), **{k: carry[k] for k in ("data", "wheels", "carry")},
                      "total": round(tree + carry["carry"], 2), "limit": CARRY_LIMIT_MIB},
        "out_files": files,
        "forecast": forecast,
        "then": f"python benchmarks/gpu_campaign.py record{' --dry-run' if toy else ''} FILES_AT",
    }
    return out


