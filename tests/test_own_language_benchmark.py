"""benchmarks/own_language.py at toy size: a user-defined language prepared from files, mono and
polyglot GroC and tied models, per-language test perplexity in one JSON object; bad input is one line."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "own_language.py"
TOY = ["--steps", "3", "--eval-every", "3", "--related-tokens", "1500", "--related-eval", "200", "--seeds", "0",
       "--d", "16", "--hidden", "24", "--filters", "1:8,2:8,3:16", "--no-save"]


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=600)


def test_toy_run_reports_every_model(shared_data: Path, tmp_path: Path) -> None:
    proc = _run(["--work", str(tmp_path / "w"), *TOY], {"POLYGLOT_GROC_DATA": str(shared_data)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert set(out["summary"]) == {"groc mono", "groc rel+tgt (proportional)", "groc rel+tgt (temperature)",
                                   "tied mono", "tied rel+tgt (proportional)", "tied rel+tgt (temperature)"}
    for label, entry in out["summary"].items():
        ppl = entry["test_perplexity_mean"]
        assert set(ppl) == ({"ceb"} if "mono" in label else {"ceb", "tl"})
        assert all(math.isfinite(v) and v > 1 for v in ppl.values())
        assert ("ceb_change_vs_mono_pct" in entry) == ("mono" not in label)
    assert out["corpora"]["ceb"]["train"]["tokens"] > 1000 and out["corpora"]["ceb"]["tokenizer"] == "toktok"
    config = (tmp_path / "w" / "runs" / "groc_ceb_-_seed0" / "config.toml").read_text(encoding="utf-8")
    assert "[languages.ceb]" in config  # the run carries the user's language


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    proc = _run(["--work", str(tmp_path / "w"), "--kinds", "groc,elmo", *TOY], {"POLYGLOT_GROC_DATA": str(tmp_path)})
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: --kinds 'groc,elmo': choose from groc,tied"]
    proc = _run(["--work", str(tmp_path / "w"), *TOY], {"POLYGLOT_GROC_DATA": str(tmp_path / "nowhere")})
    assert proc.returncode == 2 and proc.stderr.strip().startswith("error: ") and len(proc.stderr.splitlines()) == 1
