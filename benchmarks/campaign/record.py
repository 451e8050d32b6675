"""``record``: file what a device call brought back; the ledger moves on."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from benchmarks.campaign.ledger import load_ledger, merge_run, owed_parts, save_ledger
from benchmarks.campaign.runners import RUNNERS
from benchmarks.campaign.stages import REPO, STAGES, ledger_path, now, results_dir
from benchmarks.common import BadInput


def _json_objects(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Stage JSONs in ``folder`` and its subfolders (``$OUT/<file>`` flattened, or ``$OUT/<dir>/<file>``)."""
    found = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*/*.json")]):
        try:
            obj = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        if isinstance(obj, dict) and "campaign" in obj and obj.get("stage") in STAGES:
            found.append((path, obj))
    return found


def _stage_of_file(name: str) -> str | None:
    return max((s for s in STAGES if name.startswith(s)), key=len, default=None)


def _file_as(dst_dir: Path, name: str, src: Path, suffix: str) -> Path:
    """``dst_dir/gpu_campaign_<name>``, or with ``_<suffix>`` where another run's file holds that name."""
    dst = dst_dir / f"gpu_campaign_{name}"
    if dst.is_file() and dst.read_bytes() != src.read_bytes():
        stem, dot, ext = name.partition(".")
        dst = dst_dir / f"gpu_campaign_{stem}_{suffix}{dot}{ext}"
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    return dst


def stage_results(folder: Path, toy: bool) -> list[tuple[Path, dict[str, Any], list[Path]]]:
    """Every stage JSON of ``folder`` with the stage logs beside it, each checked before anything is filed.

    Only stage JSONs with parts are filed: a stage writes its JSON when it starts and around every part
    since 2026-11-28. The one call before (2026-11-27: JSONs without parts, a stage that left only its
    log) is in the ledger already, so such a folder is refused, not re-derived from its logs.
    """
    objects = _json_objects(folder)
    logs = sorted([*folder.glob("*.log"), *folder.glob("*/*.log")])
    with_json = {obj["stage"] for _, obj in objects}
    orphans = [log.name for log in logs if (stage := _stage_of_file(log.name)) and stage not in with_json]
    legacy = [obj["stage"] for _, obj in objects if "parts" not in obj or "status" not in obj["campaign"]]
    if legacy or orphans:
        what = f"{', '.join(legacy)} without parts" if legacy else f"{', '.join(orphans)} without its stage JSON"
        raise BadInput(f"{folder} holds {what}: the format of before 2026-11-28, whose one call (2026-11-27) the "
                       "ledger has filed already; record only what a current stage writes")
    if not objects:
        raise BadInput(f"{folder} holds no gpu_campaign stage result (<stage>.json)")
    for _, obj in objects:
        c = obj["campaign"]
        if toy and not c["dry_run"]:
            raise BadInput(f"{obj['stage']}: a GPU run; record it without --dry-run")
        if not toy and (c["dry_run"] or not str(c["device"]).startswith("cuda") or not c.get("cuda_device_name")):
            raise BadInput(f"{obj['stage']}: a run on {c['device']} (dry run: {c['dry_run']}) cannot mark a GPU stage "
                           "done; only a run on CUDA can (a dry run: record --dry-run)")
    return [(path, obj, [p for p in logs if _stage_of_file(p.name) == obj["stage"]]) for path, obj in objects]


def cmd_record(args: argparse.Namespace) -> dict[str, Any]:
    """File a device call's output folder (``files_at``): every stage JSON (a partial one too), the
    files it names, its log and the window's log; the ledger marks each part. ``--reason`` says why a
    killed stage stopped (its JSON, last written before the kill, cannot)."""
    folder = Path(args.folder)
    toy = bool(args.dry_run)
    if not folder.is_dir():
        raise BadInput(f"{folder} is not a folder; pass the device call's files_at")
    results = stage_results(folder, toy)
    path_l = ledger_path(args, toy)
    ledger = load_ledger(path_l)
    recorded = []
    for src, obj, extra in results:
        stage, c = obj["stage"], obj["campaign"]
        when = c.get("finished") or c.get("updated") or c.get("started") or now()
        day, suffix = when[:10], when[11:19].replace(":", "")
        dst_dir = results_dir(args, toy) / day
        files = [_file_as(dst_dir, f"{stage}.json", src, suffix)]
        for name in c.get("files", [])[1:]:
            path = src.parent / name
            if path.is_file() and path not in extra:
                files.append(_file_as(dst_dir, name, path, suffix))
        files += [_file_as(dst_dir, p.name, p, suffix) for p in extra]
        if (folder / "README.md").is_file():
            files.append(_file_as(dst_dir, "README.md", folder / "README.md", suffix))
        have = {f.name for f in files}
        # figures drawn here from the JSON (a window brings back JSON only)
        files += [dst_dir / n for n in RUNNERS[stage].render(obj, dst_dir, prefix="gpu_campaign_") if n not in have]
        names = [str(f.relative_to(REPO)) if f.is_relative_to(REPO) else str(f) for f in files]
        parts, status = obj["parts"], c["status"]
        if status == "running":  # the file of a process that is gone: killed (SIGKILL, the call's limit)
            status = "killed"
            parts = {p: {**e, "status": "killed"} if e["status"] == "running" else e for p, e in parts.items()}
        for info in parts.values():
            info["file"] = names[0]
            if info.get("status") == "done":
                info.setdefault("at", when)
                info["device"] = c.get("cuda_device_name") or c["device"]
        timings = obj.get("timings", {})
        reason = c.get("error") or (f"stopped by {c['stopped_by']}" if c.get("stopped_by") else None)
        run = {"started": c.get("started"), "finished": c.get("finished") or c.get("updated"), "status": status,
               "reason": reason or (args.reason if status == "killed" else None),
               "device": c.get("cuda_device_name") or c["device"], "torch": c.get("torch"),
               "wall_seconds": c.get("wall_seconds"), "overhead_s": timings.get("overhead_s"),
               "setup_s": timings.get("setup_s"), "command": c.get("command"), "files": names,
               "parts": {p: e["status"] for p, e in parts.items()}}
        merge_run(ledger, stage, {k: v for k, v in run.items() if v is not None}, parts)
        recorded.append({"stage": stage, "run_status": status, "stage_status": ledger["stages"][stage]["status"],
                         "parts": run["parts"], "files": names})
    for log in (p for p in sorted([*folder.glob("*.log"), *folder.glob("*/*.log")]) if p.name.startswith("window")):
        _file_as(results_dir(args, toy) / (recorded[0]["files"][0].split("/")[-2] if recorded else now()[:10]),
                 log.name, log, now()[11:19].replace(":", ""))
    save_ledger(path_l, ledger)
    return {"ledger": str(path_l), "recorded": recorded,
            "owed": {s: owed_parts(e, RUNNERS[s]) for s, e in ledger["stages"].items() if owed_parts(e, RUNNERS[s])}}
