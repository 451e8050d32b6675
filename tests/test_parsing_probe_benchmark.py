"""benchmarks/parsing_probe.py --quick: the whole pipeline (three bilm LMs, anchors, per-layer maps, features,
five parser systems) at toy size; bad input is one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "parsing_probe.py"


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


def test_quick_run_reports_every_system(shared_data: Path, tmp_path: Path) -> None:
    proc = _run(["--quick", "--work", str(tmp_path / "w"), "--no-save"], {"POLYGLOT_GROC_DATA": str(shared_data)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert set(out["las"]) == {"mono", "mono+align", "polyglot", "polyglot+align", "no-lm"}
    for system in out["las"].values():
        assert set(system) == {"0", "10"}
        assert all(0.0 <= v["las_mean"] <= v["uas_mean"] <= 100.0 for v in system.values())
    assert set(out["lms"]) >= {"mono-en", "mono-es", "polyglot"}
    assert set(out["lms"]["polyglot"]["valid_perplexity_backward"]) == {"en", "es"}
    assert len(out["runs"]) == 10 and set(out["direction"]) == {"0", "10"}
    assert (tmp_path / "w" / "maps" / "mono" / "layer2" / "W.npy").is_file()


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    proc = _run(["--work", str(tmp_path / "w"), "--n-target", "0,x"], {"POLYGLOT_GROC_DATA": str(tmp_path)})
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: --n-target '0,x' must be comma-separated integers"]
