"""The README's first journey ("your own text in a built-in language"), run as written at tiny size,
and the newcomer's journeys that went wrong before, one case per kind fixed.

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


# -- the newcomer's journeys (issue 46): what a gensim user tries first -----------------------------------


def _train(kind: str, data: Path, out: Path) -> None:
    """``polyglot-groc train`` as a newcomer runs it (the default closed vocabulary), at tiny size."""
    from typer.testing import CliRunner

    from polyglot_groc.cli import app
    from tests.conftest import SMALL

    sets = [x for s in SMALL for x in ("--set", s)]
    res = CliRunner().invoke(app, ["train", "--langs", "en", "--data", str(data), "--out", str(out),
                                   "--model", kind, "--max-steps", "2", "--threads", "1", *sets])
    assert res.exit_code == 0, res.output


def test_a_tied_run_refuses_a_word_only_its_test_split_has(tmp_path: Path) -> None:
    """Item 5: a closed vocabulary holds the test split's words; a tied run's rows of them are untrained.
    The newcomer asked for one (``Home-Scale``) and got a random row with training singletons as its
    "neighbours"; now it is refused by name, and the neighbours of a trained word are trained words."""
    from typer.testing import CliRunner

    import polyglot_groc as pg
    from polyglot_groc.cli import app
    from tests.conftest import CLOSED_TRAIN, TEST_ONLY, one_error_line, write_closed_corpus

    runner = CliRunner()
    _train("tied", write_closed_corpus(tmp_path / "data"), tmp_path / "tied")
    run = str(tmp_path / "tied")
    line = one_error_line(runner.invoke(app, ["neighbours", run, "Home-Scale"]))
    assert line.startswith("error: 'Home-Scale' is a word of this tied run's vocabulary but was never seen in "
                           "training") and line.endswith("pass --allow-untrained to get the row anyway")
    found = json.loads(runner.invoke(app, ["neighbours", run, "cat", "--topn", "50"]).stdout)
    assert {n["word"] for n in found["neighbours"]} == set(CLOSED_TRAIN.split()) - {"cat"}
    assert runner.invoke(app, ["neighbours", run, "Home-Scale", "--allow-untrained"]).exit_code == 0
    model = pg.load(run)
    assert "Home-Scale" not in model and TEST_ONLY.isdisjoint(model.words())
    try:
        model["Home-Scale"]
    except KeyError as exc:  # gensim's KeyError, and the toolkit's one-line InputError
        assert isinstance(exc, pg.InputError) and "never seen in training" in str(exc)
    else:
        raise AssertionError("an untrained row was served")


def test_a_one_language_run_reads_like_gensim(tmp_path: Path) -> None:
    """Item 9: ``model[word]``, ``in``, ``len``, ``most_similar(positive=, negative=)`` on a one-language run
    with no ``lang`` anywhere, and KeyedVectors that still compose unseen words."""
    import numpy as np

    import polyglot_groc as pg
    from tests.conftest import write_closed_corpus

    _train("groc", write_closed_corpus(tmp_path / "data"), tmp_path / "groc")
    model = pg.load(tmp_path / "groc")
    assert model["cat"].shape == (16,) and "cat" in model and len(model) == len(model.words())
    analogy = model.most_similar(positive=["cat", "river"], negative=["dog"], topn=3)
    assert len(analogy) == 3 and not {"cat", "river", "dog"} & {w for w, _ in analogy}
    kv = model.to_keyed_vectors()
    assert np.array_equal(kv["kompyuter"], model["kompyuter"])  # composed, as fastText builds unseen words
    assert [w for w, _ in kv.most_similar(positive=["cat", "river"], negative=["dog"], topn=3)] == \
        [w for w, _ in analogy]

# -- mapping four languages into one space (align-many), as the newcomer of issue 46 did ----------------------


def _four_languages(root: Path) -> dict[str, Path]:
    """en (pivot), fr, es, nl: noisy rotations of one space, 300 words each, with MUSE-style dictionaries:
    X-en training pairs 0-150, and en-X / X-Y test files of which most words are past the vocabularies
    (as MUSE's 5000-6500 files are for vectors trained on a small corpus)."""
    import numpy as np

    from eval.vectors import write_vec

    rng = np.random.default_rng(5)
    base = rng.standard_normal((300, 16)).astype(np.float32)
    files: dict[str, Path] = {}
    for lang in ("en", "fr", "es", "nl"):
        q, _ = np.linalg.qr(rng.standard_normal((16, 16)))
        files[lang] = root / f"{lang}.vec"
        write_vec(files[lang], [f"{lang}{i}" for i in range(300)], (base @ q.T + 0.1 * rng.standard_normal(
            base.shape)).astype(np.float32))
    for lang in ("fr", "es", "nl"):
        (root / f"{lang}-en.0-150.txt").write_text("".join(f"{lang}{i} en{i}\n" for i in range(150)), encoding="utf-8")
    # 20 words in the vocabularies, 180 past them: 10% of the test words can be scored
    (root / "fr-es.test.txt").write_text("".join(f"fr{i} es{i}\n" for i in range(280, 480)), encoding="utf-8")
    return files


def _many_args(root: Path, files: dict[str, Path], *extra: str) -> list[str]:
    args = ["align-many", "--pivot", "en", "--out", str(root / "many"), "-v"]
    for lang, path in files.items():
        args += ["--vectors", f"{lang}={path}"]
        if lang != "en":
            args += ["--train-dict", f"{lang}-en={root / f'{lang}-en.0-150.txt'}"]
    return [*args, "--eval-dict", f"fr-es={root / 'fr-es.test.txt'}", *extra]


def test_align_many_reads_like_align_and_streams_its_progress(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from polyglot_groc.cli import app

    files = _four_languages(tmp_path)
    res = CliRunner().invoke(app, _many_args(tmp_path, files))
    assert res.exit_code == 0, res.output
    err = res.stderr
    # progress, language by language, before the table
    assert "[1/4] read the pivot en" in err and "[4/4] mapped nl onto en" in err and "[1/1] scored fr-es" in err
    # coverage as scored of asked (not "100%" for the words MUSE's protocol happened to score), and the warning
    assert "MUSE protocol: the 20 test source words with a pair in both vocabularies (20 of 200 test source " \
           "words scored: coverage 10.0%)" in err
    assert "WARNING: more than half of the test pairs were dropped (180 of 200)" in err
    # the model by csls and nn beside every baseline, no mapping included, with the columns explained
    for row in ("model csls", "model nn", "no mapping, nn", "identical string", "char 3-grams", "columns: all ="):
        assert row in err, row
    out = json.loads((tmp_path / "many" / "result.json").read_text(encoding="utf-8"))
    muse = out["pairs"]["fr-es"]["protocols"]["muse"]
    assert muse["csls"]["precision_at_1"] > 80.0 > muse["baselines"]["no_mapping"]["nn"]["precision_at_1"]
    # the maps and the JSON, not every language's vectors (they are hundreds of MB at real sizes)
    assert sorted(p.name for p in (tmp_path / "many").iterdir()) == ["W-es.npy", "W-fr.npy", "W-nl.npy",
                                                                     "result.json"]


def test_a_test_dictionary_that_shares_pairs_with_training_is_refused_unless_allowed(tmp_path: Path) -> None:
    """Training on fr-en 0-150 and testing on en-fr 100-200: a third of the test pairs were trained on."""
    from typer.testing import CliRunner

    from polyglot_groc.cli import app

    files = _four_languages(tmp_path)
    (tmp_path / "en-fr.test.txt").write_text("".join(f"en{i} fr{i}\n" for i in range(100, 250)), encoding="utf-8")
    args = [*_many_args(tmp_path, files), "--eval-dict", f"en-fr={tmp_path / 'en-fr.test.txt'}"]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2
    line = next(line for line in refused.stderr.splitlines() if line.startswith("error:"))
    assert "50 of the 150 test pairs (33.3%) are training pairs (0 as written, 50 reversed)" in line
    assert "--allow-dictionary-overlap" in line and not (tmp_path / "many").exists()
    allowed = CliRunner().invoke(app, [*args, "--allow-dictionary-overlap"])
    assert allowed.exit_code == 0, allowed.output
    assert "test pairs that are training pairs (either direction): 50 of 150 (33.3%)" in allowed.stderr
    overlap = json.loads((tmp_path / "many" / "result.json").read_text(encoding="utf-8"))["pairs"]
    assert overlap["en-fr"]["eval_dictionary"]["train_overlap"]["pairs"] == 50
    assert "train_overlap" not in overlap["fr-es"]["eval_dictionary"]  # no dictionary links fr and es directly


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
