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


def test_readme_own_text_journey_runs_on_a_small_file(tmp_path: Path) -> None:
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


# -- issue 46: the first hour on a shared machine ------------------------------------------------------------

def test_quick_start_on_a_busy_machine_picks_its_threads_and_leaves_clean_lines(tmp_path: Path) -> None:
    """The README's quick start (two steps of it), with no $OMP_NUM_THREADS, as a newcomer runs it: it says
    how many threads it picked and why, records that in result.json, OpenMP waits passively, and a log
    (stderr not a terminal) holds lines, not the last frame of a progress bar."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "polyglot_groc", "train", "--langs", "en,fr", "--data",
                           str(ROOT / "examples" / "sample"), "--out", str(tmp_path / "quickstart"), "--size", "small",
                           "--max-steps", "2"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("threads: "))
    assert ", picked: " in line and "kept busy by other processes" in line and line.endswith("wait policy passive")
    threads = json.loads((tmp_path / "quickstart" / "result.json").read_text(encoding="utf-8"))["threads"]
    assert threads["auto"] and 1 <= threads["threads"] <= threads["cores"] == len(os.sched_getaffinity(0))
    assert "━" not in proc.stderr and "\r" not in proc.stderr
    assert re.search(r"^step 2: loss \d+\.\d{3} ppl [\d,]+\.\d", proc.stderr, flags=re.M), proc.stderr

    import polyglot_groc as pg  # the run from Python: its size counts the words words() lists

    model = pg.load(run=tmp_path / "quickstart")
    assert f"en {len(model.words('en')):,} words, fr {len(model.words('fr')):,} words" in repr(model)


def test_a_mid_size_corpus_samples_groc_by_default_and_keeps_tied_full(tmp_path: Path) -> None:
    """A user's corpus of 6,000 words: auto samples GroC (its full softmax encodes every word at every
    step) and keeps the table kind on the full softmax, saying why; the run trains and validates."""
    from typer.testing import CliRunner

    from polyglot_groc.cli import app
    from tests.conftest import SMALL

    corpus = tmp_path / "corpus" / "en"
    corpus.mkdir(parents=True)
    words = [f"w{i:04d}" for i in range(6000)]
    for split, n in (("train", 6000), ("valid", 200), ("test", 200)):  # each of the 6,000 words in train
        (corpus / f"{split}.txt").write_text(
            "\n".join(" ".join(words[i:i + 10]) for i in range(0, n, 10)) + "\n", encoding="utf-8")
    for kind, mode in (("groc", "sampled"), ("tied", "full")):
        sets = [x for s in SMALL for x in ("--set", s)]
        res = CliRunner().invoke(app, ["train", "--langs", "en", "--data", str(tmp_path / "corpus"), "--model", kind,
                                       "--max-steps", "1", "--out", str(tmp_path / kind), *sets])
        assert res.exit_code == 0, res.output
        softmax = json.loads(res.stdout[res.stdout.index("{"):])["softmax"]
        assert softmax["mode"] == mode and softmax["largest_vocab"] > 5000, softmax
        line = 5_000 if kind == "groc" else 50_000
        assert f"auto's line for {kind}" in softmax["reason"] and f"{line:,}" in softmax["reason"]
