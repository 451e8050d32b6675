"""The default CPU threads against ``--threads 1`` and ``--threads 2`` on a quiet and on a busy machine (issue 46).

Runs the README's quick start (``polyglot-groc train --langs en,fr --data examples/sample --size
small``) as a child process, with ``--max-steps S`` so every arm trains the same tokens, under
``--busy`` loads: 0, and N busy processes (``python -c 'while True: pass'``) that the benchmark
starts itself and stops after. Arms:

* ``default``: no ``--threads`` (the count picked from the free cores, OpenMP waiting passively);
* ``threads_1``, ``threads_2``: ``--threads 1`` / ``--threads 2``;
* ``before``: what the default was before issue 46, torch's own (every usable core) with OpenMP's
  own wait policy (``OMP_WAIT_POLICY`` set empty, which OpenMP ignores and the package leaves alone).

Every child runs without ``$OMP_NUM_THREADS`` (which the default would obey). Repeats are interleaved
(each repeat runs every arm in turn, the order rotating), so a drift in the machine's load falls on
every arm alike; ``--loaded-repeats`` and ``--loaded-arms`` spend less under a load, where a run's
start and validation alone take minutes. The JSON gives each run (tokens/s of training from
``result.json``, the wall time of the whole command, the threads the run used and why, the load
average before it) and medians per load and arm, with the ratio to ``threads_1``. ``--as-written``
also runs the quick start exactly as the README writes it (all its steps, no ``--threads``) against
the same with ``--threads 1`` under the largest load: the issue's must-show is its wall time within
2x of ``--threads 1``'s.

``--base-load`` says in words what else the machine was running (the benchmark cannot know whose
processes they are); the JSON records it with the load average at the start.

    python benchmarks/threads_default.py --busy 0,4 --steps 10 --repeats 2 --loaded-repeats 1 \\
        --loaded-arms default,threads_1,threads_2 --as-written --base-load "2 busy processes (other jobs)"
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import BadInput, add_output_args, emit, script_main  # noqa: E402
from polyglot_groc.model.threads import machine_load, usable_cores  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
#: The README's quick start (its --out and --overwrite aside: each run writes its own folder).
QUICK_START = ["train", "--langs", "en,fr", "--data", "examples/sample", "--size", "small"]
ARMS: dict[str, tuple[list[str], dict[str, str]]] = {
    "default": ([], {}),
    "threads_1": (["--threads", "1"], {}),
    "threads_2": (["--threads", "2"], {}),
    "before": (["--threads", str(usable_cores())], {"OMP_WAIT_POLICY": ""}),
}


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the busy processes' block, which stops them


@contextmanager
def busy_processes(n: int, settle: float) -> Iterator[None]:
    """``n`` processes spinning on a core each, for the block; ``settle`` seconds to let the load show."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        if n:
            time.sleep(settle)
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of a run: this one without $OMP_NUM_THREADS (the default would obey it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**env, **extra}


def run_once(arm: str, work: Path, steps: int | None, timeout: float) -> dict[str, Any]:
    """One quick-start run of ``arm`` (``steps`` None: all of them, as written); its figures."""
    flags, extra_env = ARMS[arm]
    out = work / f"run-{arm}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "polyglot_groc", *QUICK_START, "--out", str(out), *flags]
    if steps is not None:
        cmd += ["--max-steps", str(steps)]
    load = machine_load()
    began = time.perf_counter()
    try:
        done = subprocess.run(cmd, cwd=REPO, env=child_env(extra_env), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"arm": arm, "timed_out": True, "wall_s": round(time.perf_counter() - began, 1),
                "load_before": load[0] if load else None, "validations": validations(out)}
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise BadInput(f"{' '.join(cmd)} failed (exit {done.returncode}): {done.stderr.strip()[-500:]}")
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    threads = result.get("threads", {})
    return {"arm": arm, "timed_out": False, "wall_s": round(wall, 1), "tokens_per_s": result["tokens_per_s"],
            "train_seconds": result["train_seconds"], "steps": result["steps"], "threads": threads.get("threads"),
            "threads_reason": threads.get("reason"), "slowdown": threads.get("slowdown"),
            "load_before": load[0] if load else None, "runnable_before": load[1] if load else None,
            "validations": validations(out)}


def validations(run: Path) -> list[list[float]]:
    """``[step, seconds since training started]`` of each validation the run made (metrics.jsonl): how far
    a run got, also one stopped by the timeout."""
    path = run / "metrics.jsonl"
    if not path.is_file():
        return []
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [[r["step"], round(r["elapsed_s"], 1)] for r in records]


def compare(default: dict[str, Any], one: dict[str, Any]) -> dict[str, Any]:
    """The as-written pair's wall-time ratio: of the whole commands where both finished, else of the time
    both took to the last epoch-end validation both reached (the same point of the same run)."""
    if not default["timed_out"] and not one["timed_out"]:
        ratio = default["wall_s"] / one["wall_s"]
        return {"wall_ratio": round(ratio, 3), "measured": "whole commands", "within_2x": ratio <= 2.0}
    a, b = dict(map(tuple, default["validations"])), dict(map(tuple, one["validations"]))
    common = sorted(set(a) & set(b))
    if common:
        step = common[-1]
        ratio = a[step] / b[step]
        return {"wall_ratio": round(ratio, 3), "within_2x": ratio <= 2.0,
                "measured": f"seconds from the start of training to the validation at step {step}, which both "
                            "reached before the timeout"}
    if not a or not b:
        return {"wall_ratio": None, "measured": "a run made no validation before the timeout", "within_2x": None}
    # The wall-clock checkpoints fall on different steps: compare seconds per step up to the k-th validation of
    # each, k the fewer the two made (the same stretch of the run, about the same minutes of the machine's load).
    k = min(len(a), len(b))
    (sa, ta), (sb, tb) = sorted(a.items())[k - 1], sorted(b.items())[k - 1]
    ratio = (ta / sa) / (tb / sb)
    return {"wall_ratio": round(ratio, 3), "within_2x": ratio <= 2.0,
            "measured": f"seconds per step from the start of training to validation {k} of each (default: step "
                        f"{sa:g} at {ta:g} s; --threads 1: step {sb:g} at {tb:g} s), both timed out"}


def summarise(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Medians per arm, with tokens/s and wall time against ``threads_1``'s."""
    out: dict[str, Any] = {}
    for arm in dict.fromkeys(r["arm"] for r in runs):
        mine = [r for r in runs if r["arm"] == arm]
        done = [r for r in mine if not r["timed_out"]]
        out[arm] = {"runs": len(mine), "timed_out": len(mine) - len(done),
                    "tokens_per_s": statistics.median(r["tokens_per_s"] for r in done) if done else None,
                    "wall_s": statistics.median(r["wall_s"] for r in mine),
                    "threads": sorted({r["threads"] for r in done}) if done else []}
    one = out.get("threads_1")
    for figures in out.values():
        if one and one["tokens_per_s"] and figures["tokens_per_s"]:
            figures["tokens_per_s_vs_threads_1"] = round(figures["tokens_per_s"] / one["tokens_per_s"], 3)
        if one:
            figures["wall_vs_threads_1"] = round(figures["wall_s"] / one["wall_s"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--busy", default="0,4", help="busy processes to start, comma-separated (0: none)")
    ap.add_argument("--steps", type=int, default=30, help="training steps of every measured run")
    ap.add_argument("--repeats", type=int, default=2, help="interleaved repeats of every arm and load")
    ap.add_argument("--loaded-repeats", type=int, default=None,
                    help="repeats under a load above 0 (default: --repeats; a loaded run takes minutes)")
    ap.add_argument("--arms", default=",".join(ARMS), help=f"a subset of {','.join(ARMS)}")
    ap.add_argument("--loaded-arms", default=None, help="the arms under a load above 0 (default: --arms)")
    ap.add_argument("--settle", type=float, default=5.0, help="seconds the busy processes run before measuring")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds a run may take (then: timed out)")
    ap.add_argument("--as-written", action="store_true",
                    help="also run the README's quick start as written against --threads 1 under the largest load")
    ap.add_argument("--only-as-written", action="store_true", help="run the --as-written pair alone (no table)")
    ap.add_argument("--base-load", default="not stated",
                    help="what else the machine ran, in words (recorded in the JSON)")
    ap.add_argument("--work", type=Path, default=None, help="folder for the runs (default: a temporary one)")
    add_output_args(ap)
    args = ap.parse_args()
    try:
        loads = [int(x) for x in args.busy.split(",") if x.strip()]
    except ValueError as exc:
        raise BadInput(f"--busy {args.busy!r}: give counts such as 0,4") from exc
    arms = [a for a in args.arms.split(",") if a]
    loaded_arms = [a for a in (args.loaded_arms or args.arms).split(",") if a]
    if unknown := [a for a in [*arms, *loaded_arms] if a not in ARMS]:
        raise BadInput(f"unknown --arms {','.join(unknown)}; use a subset of {','.join(ARMS)}")
    loaded_repeats = args.repeats if args.loaded_repeats is None else args.loaded_repeats
    if not loads or min(loads) < 0 or args.steps < 1 or min(args.repeats, loaded_repeats) < 1:
        raise BadInput("--busy needs counts >= 0, --steps, --repeats and --loaded-repeats at least 1")
    signal.signal(signal.SIGTERM, _terminate)  # stop the busy processes on the way out
    work = args.work or Path(tempfile.mkdtemp(prefix="threads_default-"))
    start_load = machine_load()
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    for rep in range(0 if args.only_as_written else max(args.repeats, loaded_repeats)):
        for busy in loads:
            if rep >= (loaded_repeats if busy else args.repeats):
                continue
            mine = loaded_arms if busy else arms
            with busy_processes(busy, args.settle):
                order = mine[rep % len(mine):] + mine[:rep % len(mine)]  # rotate: no arm always first
                for arm in order:
                    row = run_once(arm, work, args.steps, args.timeout)
                    runs.append({"busy": busy, "repeat": rep, **row})
                    print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    by_load = {f"busy={n}": summarise([r for r in runs if r["busy"] == n]) for n in loads}
    as_written: dict[str, Any] | None = None
    if args.as_written or args.only_as_written:
        busy = max(loads)
        with busy_processes(busy, args.settle):
            rows = [run_once(arm, work, None, args.timeout) for arm in ("default", "threads_1")]
        for row in rows:
            print(json.dumps(row), file=sys.stderr, flush=True)
        default, one = rows
        as_written = {"busy": busy, "command": "polyglot-groc " + " ".join(QUICK_START), "default": default,
                      "threads_1": one, **compare(default, one)}
    emit({
        "benchmark": "threads_default",
        "machine": {"usable_cores": usable_cores(), "cpu": platform.processor() or platform.machine(),
                    "base_load": args.base_load, "load_average_at_start": start_load[0] if start_load else None},
        "command": "polyglot-groc " + " ".join(QUICK_START) + f" --max-steps {args.steps} [--threads N]",
        "steps": args.steps, "repeats": args.repeats, "loaded_repeats": loaded_repeats, "busy": loads, "arms": arms,
        "loaded_arms": loaded_arms, "arm_flags": {a: {"flags": ARMS[a][0], "env": ARMS[a][1]} for a in ARMS},
        "summary": by_load, "as_written": as_written, "runs": runs,
        "seconds": round(time.perf_counter() - started, 1),
    }, name=args.name or "threads_default", save=not args.no_save)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    script_main(main)
