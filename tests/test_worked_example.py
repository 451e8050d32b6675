"""The worked example (docs/worked-example.md), run as written on small data: every command of the guide works.

The block between the ``worked-example`` markers is extracted from docs/worked-example.md and run by bash with
small sizes (``STEPS``, ``TOKENS``); ``polyglot-groc`` is this interpreter's ``python -m
polyglot_groc`` over this checkout, so the test exercises the code under test, not an install.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def worked_example() -> str:
    doc = (ROOT / "docs" / "worked-example.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- worked-example:start -->\n```bash\n(.*?)```\n<!-- worked-example:end -->", doc, re.S)
    assert m, "docs/worked-example.md lost its worked-example block"
    return m.group(1)


def test_worked_example_runs(shared_data: Path, tmp_path: Path, wordnet_en_fr: tuple[Path, list[str]]) -> None:
    work = tmp_path / "work"
    # The session's wordnets, copied where the example imports them: its `lexicon import` then
    # finds both installed (the import itself is tested in test_lexicons_real) and the ~50 s
    # import is not paid twice.
    shutil.copytree(wordnet_en_fr[0], work / "wn")
    script = f'polyglot-groc() {{ "{sys.executable}" -m polyglot_groc "$@"; }}\n' + worked_example()
    env = {**os.environ, "POLYGLOT_GROC_DATA": str(shared_data), "W": str(work), "STEPS": "6", "TOKENS": "4000",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "POLYGLOT_GROC_CACHE": str(tmp_path / "cache")}
    env.pop("POLYGLOT_GROC_WN_DIR", None)
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]

    for run in ("fr", "enfr", "enfr-lex", "enfr-tied", "enfr-wiki"):
        result = json.loads((work / "runs" / run / "result.json").read_text())
        assert all(math.isfinite(v) for v in result["best_valid_perplexity"].values()), run
    inside = json.loads((work / "eval-in.json").read_text())
    assert set(inside["perplexity"]) == {"en", "fr"} and all(math.isfinite(v) for v in inside["perplexity"].values())
    for name in ("eval-wiki.json", "eval-wiki-cache.json"):
        wiki = json.loads((work / name).read_text())["languages"]["en"]
        assert wiki["oov_rate"] > 0 and math.isfinite(wiki["perplexity"]) and math.isfinite(wiki["perplexity_new"])
    unseen = (work / "unseen.fr.vec").read_text(encoding="utf-8").splitlines()
    assert unseen[0].split()[0] == "4" and [r.split()[0] for r in unseen[1:]] == [
        "chat", "chaton", "chatonnière", "ordinateurs"]
    align = json.loads((work / "align" / "result.json").read_text())
    assert "precision_at_1" in align["precision"]["csls"]
    similarity = json.loads((work / "similarity.json").read_text())
    assert len(json.dumps(similarity)) > 0 and "SIMLEX" in json.dumps(similarity)
    for png in ("curves.png", "freq-bins.png", "cache-grid.png"):
        assert (work / png).read_bytes()[:4] == b"\x89PNG", png
    assert "chien" in proc.stdout or "chien" in proc.stderr  # the lexicon lookup printed its word


@pytest.mark.parametrize("needle", ["data prepare", "lexicon import", "train", "evaluate", "tune-cache", "finetune",
                                    "export", "align", "similarity", "analyze curves", "analyze freq-bins"])
def test_worked_example_covers_the_workflow(needle: str) -> None:
    assert f"polyglot-groc {needle}" in worked_example()
