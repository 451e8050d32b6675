"""The wheels a stage carries: what it imports that the GPU machine lacks, with their requirements."""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.campaign.device import GPU_HAS, GPU_MARKERS, PIP_PLATFORM
from benchmarks.campaign.stages import REPO, Stage, campaign_dir, wheel_dir
from benchmarks.common import BadInput


def _canon(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def requirement_closure(names: Iterable[str]) -> dict[str, str]:
    """Canonical name -> installed version of ``names`` and everything they require on the GPU's
    Python (markers evaluated for CPython 3.12 on Linux x86_64), from this machine's metadata."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement

    seen: dict[str, str] = {}
    todo = [_canon(n) for n in names]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError as exc:
            raise BadInput(f"{name} is not installed here, so its requirements are unknown; "
                           f"install the project's dependencies (pip install -e .) first") from exc
        seen[name] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate(GPU_MARKERS):
                todo.append(_canon(req.name))
    return seen


def pinned_versions(constraints: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    if constraints.is_file():
        for line in constraints.read_text(encoding="utf-8").splitlines():
            name, sep, version = line.split("#", 1)[0].strip().partition("==")
            if sep:
                pins[_canon(name)] = version.strip()
    return pins


def wheel_plan(stage: Stage, constraints: Path = REPO / "constraints.txt") -> dict[str, str]:
    """Name -> version of every wheel ``stage`` must carry: its packages' closure minus what the
    GPU machine's packages bring; versions from constraints.txt where pinned."""
    if not stage.packages:
        return {}
    present = requirement_closure(GPU_HAS)
    needed = requirement_closure(stage.packages)
    pins = pinned_versions(constraints)
    return {name: pins.get(name, version) for name, version in sorted(needed.items()) if name not in present}


def pip_download_command(pins: dict[str, str], dest: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", *PIP_PLATFORM, "-d", str(dest),
            *(f"{n}=={v}" for n, v in sorted(pins.items()))]


def wheel_project(path: Path) -> str:
    return _canon(path.name.split("-", 1)[0])


def prepare_wheels(args: argparse.Namespace, stage: Stage) -> dict[str, Any]:
    pins = wheel_plan(stage)
    dest = wheel_dir(args, stage)
    if dest.exists():
        shutil.rmtree(dest)
    if not pins:
        return {"wheels": {}}
    house = campaign_dir(args) / "wheelhouse"
    house.mkdir(parents=True, exist_ok=True)
    have = {(wheel_project(p), p.name.split("-")[1]): p for p in house.glob("*.whl")}
    todo = {n: v for n, v in pins.items() if (n, v) not in have}
    if todo:
        cmd = pip_download_command(todo, house)
        print("+ " + " ".join(shlex.quote(c) for c in cmd), file=sys.stderr)
        proc = subprocess.run(cmd, stdout=sys.stderr, check=False)
        if proc.returncode != 0:
            raise BadInput(f"pip download failed (exit {proc.returncode}) for {', '.join(todo)}; "
                           "is PyPI reachable? (see the pip output above)")
        have = {(wheel_project(p), p.name.split("-")[1]): p for p in house.glob("*.whl")}
    dest.mkdir(parents=True)
    got: dict[str, str] = {}
    for name, version in pins.items():
        path = have.get((name, version))
        if path is None:
            raise BadInput(f"no {name}=={version} wheel for cp312 manylinux x86_64 came back from pip")
        shutil.copyfile(path, dest / path.name)
        got[path.name] = f"{path.stat().st_size / 2**20:.2f} MiB"
    return {"wheels": got}


