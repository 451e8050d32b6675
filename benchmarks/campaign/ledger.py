"""The ledger: per stage, its parts' status and measured seconds, and its runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.campaign.runners import RUNNERS
from benchmarks.campaign.runtime import OWED_STATES, Runner
from benchmarks.campaign.stages import STAGES
from benchmarks.common import BadInput
from groc_base.fileio import write_json


def load_ledger(path: Path) -> dict[str, Any]:
    ledger: dict[str, Any] = {}
    if path.is_file():
        try:
            ledger = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BadInput(f"{path} is not valid JSON ({exc}); restore it from git") from exc
    stages = ledger.get("stages", {})
    return {"campaign": "benchmarks/gpu_campaign.py",
            "rule": "a part is done only when a run on CUDA (never a CPU dry run) finished it; `plan` runs the "
                    "parts still owed, in priority order; a part that failed with an error waits for `reset`",
            "stages": {name: {"status": "pending", "parts": {}, "runs": [], **stages.get(name, {})}
                       for name in STAGES}}


def save_ledger(path: Path, ledger: dict[str, Any]) -> None:
    write_json(path, ledger)


def owed_parts(entry: dict[str, Any], runner: Runner) -> list[str]:
    return [p for p in runner.parts if entry["parts"].get(p, {}).get("status", "pending") in OWED_STATES]


def failed_parts(entry: dict[str, Any], runner: Runner) -> list[str]:
    return [p for p in runner.parts if entry["parts"].get(p, {}).get("status") == "failed"]


def stage_status(entry: dict[str, Any], runner: Runner) -> tuple[str, str | None]:
    """done (every part), failed (a part's error, or the last run failed with nothing done: its
    reason), partial (some parts done), pending (nothing run)."""
    states = {p: entry["parts"].get(p, {}).get("status", "pending") for p in runner.parts}
    if all(s == "done" for s in states.values()):
        return "done", None
    failed = [p for p, s in states.items() if s == "failed"]
    if failed:
        return "failed", f"{failed[0]}: {entry['parts'][failed[0]].get('error')}"
    last = entry["runs"][-1] if entry.get("runs") else None
    if last is not None and last.get("status") in ("failed", "killed", "interrupted", "nothing done") \
            and not any(s == "done" for s in last.get("parts", {}).values()):
        return "failed", last.get("reason") or last.get("status")
    if any(s == "done" for s in states.values()):
        return "partial", None
    return "pending", None


def merge_run(ledger: dict[str, Any], stage: str, run: dict[str, Any], parts: dict[str, dict[str, Any]]) -> None:
    """File one run of ``stage``: its parts (a new figure replaces an old one; a part not done this
    time never undoes one done earlier, though its measured seconds are kept), and the run itself."""
    entry = ledger["stages"][stage]
    for name, info in parts.items():
        old = entry["parts"].get(name, {})
        info = {k: v for k, v in info.items() if k not in ("traceback", "started")}
        if info.get("status") == "done" or old.get("status") != "done":
            kept = {k: v for k, v in old.items() if k in ("seconds", "train_seconds", "steps_per_s", "eval_s",
                                                          "seconds_lower_bound") and k not in info}
            entry["parts"][name] = {**kept, **info}
        else:
            entry["parts"][name] = {**old, "last_attempt": {k: info.get(k) for k in ("status", "at", "reason", "error")
                                                            if info.get(k) is not None}}
    runs = [r for r in entry.get("runs", []) if r.get("started") != run.get("started")]
    entry["runs"] = [*runs, run]
    for key in ("overhead_s", "setup_s"):
        if run.get(key) is not None:
            entry[key] = run[key]
    entry["status"], reason = stage_status(entry, RUNNERS[stage])
    if reason:
        entry["reason"] = reason
    else:
        entry.pop("reason", None)


