"""examples/own_language.sh, the bring-your-own-language worked example, run as written on tiny sizes.

Cebuano (not a built-in language) from the UDHR in the data bundle, its languages.toml and hand-made
wordnet and dictionary: prepare, import, lookup, train mono / +Tagalog / +Tagalog+English / tied /
groc-lex, evaluate without the languages file, export, align. ``polyglot-groc`` is this
interpreter's ``python -m polyglot_groc`` over this checkout.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_own_language_example_runs(shared_data: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    env = {**os.environ, "POLYGLOT_GROC_DATA": str(shared_data), "W": str(work), "STEPS": "4", "TOKENS": "3000",
           "ENGLISH_WORDNET": "0", "PYTHON": sys.executable, "POLYGLOT_GROC": f"{sys.executable} -m polyglot_groc",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "POLYGLOT_GROC_CACHE": str(tmp_path / "cache")}
    for name in ("POLYGLOT_GROC_WN_DIR", "POLYGLOT_GROC_LANGUAGES"):
        env.pop(name, None)
    proc = subprocess.run(["bash", str(ROOT / "examples" / "own_language.sh")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]

    manifest = json.loads((work / "corpora" / "prepare.json").read_text(encoding="utf-8"))
    ceb = manifest["languages"]["ceb"]
    assert ceb["tokenizer"]["name"] == "toktok" and ceb["splits"]["train"]["tokens"] > 1000
    assert ceb["inputs"][0]["sha256"] and {"tl", "en"} <= set(manifest["languages"])
    assert json.loads((work / "wordnet-ceb.json").read_text())["installed"] == ["ceb-mini:1.0"]
    assert "babaye | lalaki | bata" in proc.stdout
    for run, langs in (("ceb", {"ceb"}), ("ceb+tl", {"ceb", "tl"}), ("ceb+tl+en", {"ceb", "tl", "en"}),
                       ("ceb+tl+en-tied", {"ceb", "tl", "en"}), ("ceb-lex", {"ceb"})):
        assert '[languages.ceb]' in (work / "runs" / run / "config.toml").read_text(encoding="utf-8"), run
        ppl = json.loads((work / f"eval-{run}.json").read_text())["perplexity"]
        assert set(ppl) == langs and all(math.isfinite(v) and v > 1 for v in ppl.values()), run
    lex = (work / "runs" / "ceb-lex" / "config.toml").read_text(encoding="utf-8")
    assert '"ceb-mini:1.0"' in lex  # the registry's wordnet, resolved and recorded
    unseen = (work / "unseen.ceb.vec").read_text(encoding="utf-8").splitlines()
    assert unseen[0].split()[0] == "3"
    align = json.loads((work / "align" / "result.json").read_text())
    assert align["train_dictionary"]["found"] > 0 and "precision_at_1" in align["precision"]["csls"]
    assert "ceb+tl+en" in proc.stdout  # the closing table
