"""The README's first journey ("your own text in a built-in language"), run as written at tiny size.

The block between the ``journey-own-text`` markers is extracted from README.md and run by bash on a
small Tagalog file holding what scraped text holds (markup, a header line); ``polyglot-groc`` is
this interpreter's ``python -m polyglot_groc`` over this checkout. The README and this test cannot
drift apart: change the block and this runs the new one.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

SENTENCES = [
    "Ang bahay ay malaki at maganda.", "Kumain kami ng kanin sa bahay ni Lola.", "Maganda ang umaga sa bayan.",
    "Pumunta ang bata sa paaralan kahapon.", "Mabait ang guro sa mga bata.", "Umuulan sa bayan tuwing hapon.",
    "Bumili si Ana ng isda sa palengke.", "Naglaro ang mga bata sa labas ng bahay.",
]


def _documents(text: str) -> list[dict]:
    """The JSON objects printed one after another on stdout."""
    decoder, out, at = json.JSONDecoder(), [], 0
    while (start := text.find("{", at)) >= 0:
        obj, at = decoder.raw_decode(text, start)
        out.append(obj)
    return out


def journey_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"<!-- journey-own-text:start -->\n```bash\n(.*?)```\n<!-- journey-own-text:end -->", readme, re.S)
    assert m, "README.md lost its journey-own-text block"
    return m.group(1)


def _cli(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``polyglot-groc ARGS`` of this checkout, as the journey runs it."""
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "polyglot_groc", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def journey(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The README's block run once on a small file: (its folder, the finished process)."""
    tmp_path = tmp_path_factory.mktemp("journey")
    text = tmp_path / "tagalog.txt"
    # A header line and markup, as downloaded text has them; one paragraph per line.
    lines = ["Title: Mga Kuwento ng Bayan"] + [
        f"<b>{i}</b> {SENTENCES[i % len(SENTENCES)]} {SENTENCES[(3 * i + 1) % len(SENTENCES)]} &amp; iba pa."
        for i in range(60)]
    text.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script = f'polyglot-groc() {{ "{sys.executable}" -m polyglot_groc "$@"; }}\n' + journey_block()
    env = {**os.environ, "TEXT": str(text), "STEPS": "3", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "POLYGLOT_GROC_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    return tmp_path, proc


def test_readme_own_text_journey_runs_on_a_small_file(journey: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    tmp_path, proc = journey
    assert proc.returncode == 0, proc.stderr[-3000:]

    corpus = (tmp_path / "corpora" / "tl" / "train.txt").read_text(encoding="utf-8")
    assert "<b>" not in corpus and "&amp;" not in corpus and "Title" not in corpus and "bahay" in corpus
    manifest = json.loads((tmp_path / "corpora" / "prepare.json").read_text(encoding="utf-8"))
    cleaning = manifest["languages"]["tl"]["inputs"][0]["cleaning"]
    assert cleaning["removed"] == {"headers": 1, "markup": 180} and cleaning["kept"] == {}
    result = json.loads((tmp_path / "runs" / "tl" / "result.json").read_text(encoding="utf-8"))
    assert result["steps"] == 3 and math.isfinite(result["best_valid_perplexity"]["tl"])
    printed = _documents(proc.stdout)  # what each of the four commands printed
    evaluation = next(d for d in printed if "perplexity" in d and "details" in d)
    assert evaluation["split"] == "test" and math.isfinite(evaluation["perplexity"]["tl"])
    assert 0.0 <= evaluation["details"]["tl"]["unseen_in_training_rate"] <= 1.0
    vec = (tmp_path / "words.tl.vec").read_text(encoding="utf-8").splitlines()
    assert vec[0].split()[0] == "3" and [row.split()[0] for row in vec[1:]] == ["bahay", "magandang", "kompyuter"]


def test_the_journeys_run_scores_raw_text_as_its_corpus_was_tokenised(
        journey: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """Issue 46: the corpus was tokenised by data prepare (toktok), the run reads it at whitespace;
    score tokenises raw text as prepare.json says, so "bayan." is "bayan ." and no new word."""
    tmp_path, proc = journey
    assert proc.returncode == 0, proc.stderr[-3000:]
    raw = _cli("score", "runs/tl", "--lang", "tl", cwd=tmp_path, stdin="Maganda ang umaga sa bayan.\n")
    tokenised = _cli("score", "runs/tl", "--lang", "tl", "--tokenized", cwd=tmp_path,
                     stdin="Maganda ang umaga sa bayan .\n")
    assert raw.returncode == tokenised.returncode == 0, raw.stderr + tokenised.stderr
    assert json.loads(raw.stdout) == json.loads(tokenised.stdout)
    assert json.loads(raw.stdout)["tokens"] == 7 and "punctuation" not in raw.stderr


def test_the_journeys_run_resumes_on_new_text_only_when_told(
        journey: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """Issue 45: new words in train.txt; --resume refuses (naming the file and the flag) and leaves the
    run as it was; --accept-changed-data goes on, the new word in the vocabulary. Runs last: it edits."""
    tmp_path, proc = journey
    assert proc.returncode == 0, proc.stderr[-3000:]
    train = tmp_path / "corpora" / "tl" / "train.txt"
    train.write_text(train.read_text(encoding="utf-8") + "Ang zyzzyva ay bago .\n" * 2, encoding="utf-8")
    before = {p.name: p.read_bytes() for p in (tmp_path / "runs" / "tl").iterdir() if p.is_file()}
    refused = _cli("train", "--resume", "runs/tl", "--max-steps", "5", cwd=tmp_path)
    assert refused.returncode == 2 and str(train) in refused.stderr and "--accept-changed-data" in refused.stderr
    assert {p.name: p.read_bytes() for p in (tmp_path / "runs" / "tl").iterdir() if p.is_file()} == before
    resumed = _cli("train", "--resume", "runs/tl", "--max-steps", "5", "--accept-changed-data", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads((tmp_path / "runs" / "tl" / "result.json").read_text(encoding="utf-8"))["steps"] == 5
    scored = _cli("score", "runs/tl", "--lang", "tl", "--checkpoint", "last", cwd=tmp_path, stdin="Ang zyzzyva.\n")
    assert scored.returncode == 0 and json.loads(scored.stdout)["new_words"] == 0, scored.stderr
