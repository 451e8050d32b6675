"""cuda-tests: ``pytest -m cuda tests/test_cuda.py`` on the device."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from typing import Any

from benchmarks.campaign.runtime import Ctx, Runner
from benchmarks.campaign.stages import REPO


class CudaTests(Runner):
    name = "cuda-tests"
    parts = ("pytest",)
    summary_keys = ("passed", "failed", "error", "skipped", "exit_code", "ok", "tests")

    def default_s(self, part: str, toy: bool) -> float:
        return 30.0 if toy else 90.0

    def run_part(self, ctx: Ctx, part: str) -> dict[str, Any]:
        junit = ctx.work / "junit.xml"
        junit.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "pytest", "-q", "-m", "cuda", "tests/test_cuda.py", "-p", "no:cacheprovider",
               f"--junitxml={junit}"]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(x for x in (str(REPO), os.environ.get("PYTHONPATH")) if x)}
        started = time.monotonic()
        try:  # its own deadline: pytest is stopped, this stage is not (it writes its JSON)
            proc = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=None if ctx.deadline is None else max(ctx.left(), 5), check=False)
        finally:
            ctx.invocations.append({"script": "pytest", "argv": cmd[1:],
                                    "seconds": round(time.monotonic() - started, 1)})
        print(proc.stdout, file=sys.stderr)
        tests: dict[str, str] = {}
        if junit.is_file():
            for case in ET.parse(junit).getroot().iter("testcase"):
                outcome = "passed"
                for child, label in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
                    if case.find(child) is not None:
                        outcome = label
                tests[f"{case.get('classname')}::{case.get('name')}"] = outcome
        return {"tests": tests, "exit_code": proc.returncode, "pytest_tail": proc.stdout[-4000:]}

    def summary(self, ctx: Ctx) -> dict[str, Any]:
        r = ctx.raw.get("pytest")
        if r is None:
            return {"passed": None, "failed": None, "error": None, "skipped": None, "exit_code": None, "tests": {}}
        counts = {k: sum(v == k for v in r["tests"].values()) for k in ("passed", "failed", "error", "skipped")}
        # On CPU (the dry run) every cuda case skips: that is the dry run's pass.
        ok = r["exit_code"] == 0 and (ctx.toy or counts["passed"] > 0)
        return {**counts, "exit_code": r["exit_code"], "ok": ok, "tests": r["tests"]}


