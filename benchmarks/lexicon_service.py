"""Benchmark: compile lexicon forms for a 100k-word vocabulary, cold and from the cache.

Prints one JSON object.  With ``POLYGLOT_GROC_DATA`` set it imports the real PWN 3.0 (English)
into a wn directory (``--wn-dir`` to reuse one across runs) and uses PWN lemmas, padded with
synthetic words, as the vocabulary; without it, a synthetic 60k-synset wordnet is generated.

    python benchmarks/lexicon_service.py [--vocab-size 100000] [--wn-dir DIR] [--langs en,fr]

Targets: cold compile (fresh backend: bulk load + compile) < 30 s, cached load < 1 s.

It also times the CLI, ``polyglot-groc lexicon lookup WORD --lang en --json`` in fresh processes
(issue 15: a warm lookup answers within 1 s of process start): ``lookup_cold_s`` is the first
call with an empty cache (it reads the database, tokenises every gloss and writes the wordnet
cache), ``lookup_warm_s`` the median of ``--warm-runs`` later calls on other words (each loads
only the rows it needs from the cache).  Wall time of the whole process, start to exit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import add_output_args, emit, script_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WARM_WORDS = ("cat", "geese", "running", "house", "better", "bank", "river", "paris", "run", "light")


def time_cli_lookup(word: str, wn_dir: Path, cache_root: Path) -> tuple[float, dict[str, object]]:
    """Wall seconds of one ``polyglot-groc lexicon lookup`` process, and its JSON answer."""
    env = {**os.environ, "POLYGLOT_GROC_CACHE": str(cache_root),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    cmd = [sys.executable, "-m", "polyglot_groc", "lexicon", "lookup", word, "--lang", "en", "--json",
           "--wn-dir", str(wn_dir)]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"error: {' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return seconds, json.loads(done.stdout)


def _synthetic_wordnet(wn_dir: Path, n_synsets: int = 60000) -> list[str]:
    import wn

    from lexicons.omw_import import LmfEntry, LmfLexicon, write_lmf
    from lexicons.wn_backend import wn_data_dir

    rng = random.Random(0)
    keys = [f"{i:08d}-n" for i in range(n_synsets)]
    lemmas = [f"lemma{i}" for i in range(int(n_synsets * 1.3))]
    members: dict[str, list[str]] = {k: rng.sample(lemmas, rng.randint(1, 4)) for k in keys}
    by_lemma: dict[str, list[str]] = {}
    for key, words in members.items():
        for w in words:
            by_lemma.setdefault(w, []).append(key)
    relations = {k: [("hyponym", rng.choice(keys)) for _ in range(rng.randint(0, 3))] for k in keys}
    glosses = {k: " ".join(rng.choice(lemmas) for _ in range(rng.randint(4, 16))) for k in keys}
    lex = LmfLexicon(
        id="synthetic-en",
        version="1",
        language="en",
        label="synthetic",
        license="CC0",
        entries=[LmfEntry(w, "n", [], ks) for w, ks in by_lemma.items()],
        synsets=keys,
        ss_type=dict.fromkeys(keys, "n"),
        ili={},
        definitions=glosses,
        examples={},
        relations=relations,
        member_order=members,
    )
    path = write_lmf([lex], wn_dir / "lmf" / "synthetic.xml")
    with wn_data_dir(wn_dir):
        wn.add(path, progress_handler=None)
    return ["synthetic-en:1"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-size", type=int, default=100_000)
    parser.add_argument("--wn-dir", type=Path, default=None, help="wn data directory to (re)use")
    parser.add_argument("--langs", default="en", help="languages to import with real data (en is always)")
    parser.add_argument("--warm-runs", type=int, default=5, help="warm CLI lookups timed (other words)")
    add_output_args(parser)
    args = parser.parse_args(argv)

    from lexicons.service import LexiconService
    from lexicons.wn_backend import WnLexicon

    scratch = Path(tempfile.mkdtemp(prefix="lexicon-bench-"))
    wn_dir = args.wn_dir or scratch / "wn"
    data_root = os.environ.get("POLYGLOT_GROC_DATA")
    result: dict[str, object] = {
        "benchmark": "lexicon_service",
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
    }
    t0 = time.perf_counter()
    if data_root:
        from lexicons.omw_import import import_omw

        specs = import_omw(data_root, [x for x in args.langs.split(",") if x], wn_dir)
        specs = [s for s in specs if s.startswith("omw-en:")]
        result["data"] = "pwn-3.0 (POLYGLOT_GROC_DATA)"
    else:
        specs = _synthetic_wordnet(wn_dir)
        result["data"] = "synthetic wordnet (POLYGLOT_GROC_DATA not set)"
    result["import_s"] = round(time.perf_counter() - t0, 2)  # ~0 when --wn-dir already had it

    # Vocabulary: the lexicon's own lemmas (single tokens first), then synthetic words.
    probe = WnLexicon(specs, wn_dir=wn_dir)
    lemmas = sorted(probe.lemmas("en"), key=lambda w: (" " in w, w))
    words = lemmas[: args.vocab_size]
    n_real = len(words)
    words += [f"zzsyn{i}" for i in range(args.vocab_size - n_real)]
    word_langs = [["en"]] * len(words)
    probe.close()
    cache = scratch / "cache"

    t1 = time.perf_counter()
    lexicon = WnLexicon(specs, wn_dir=wn_dir)
    lexicon.load()
    load_s = time.perf_counter() - t1
    forms = LexiconService(lexicon, cache_dir=cache).compile(words, word_langs)
    cold_s = time.perf_counter() - t1

    t2 = time.perf_counter()
    cached = LexiconService(WnLexicon(specs, wn_dir=wn_dir), cache_dir=cache).compile(words, word_langs)
    cached_s = time.perf_counter() - t2
    assert cached.fingerprint == forms.fingerprint

    result.update(
        specs=specs,
        vocab_size=len(words),
        lexicon_words=n_real,
        synthetic_words=len(words) - n_real,
        bulk_load_s=round(load_s, 2),
        compile_s=round(cold_s - load_s, 2),
        cold_compile_s=round(cold_s, 2),
        cached_load_s=round(cached_s, 3),
        extra_words=len(forms.extra_words),
        coverage_stats={k: round(v, 2) for k, v in forms.coverage_stats.items()},
        targets_met=bool(cold_s < 30 and cached_s < 1),
    )

    # The CLI, start to exit, with an empty cache and then warm.
    lookup_cache = scratch / "lookup-cache"
    lookup_cold, cold_answer = time_cli_lookup("dog", wn_dir, lookup_cache)
    warm = [time_cli_lookup(w, wn_dir, lookup_cache) for w in WARM_WORDS[: max(args.warm_runs, 1)]]
    again_s, again_answer = time_cli_lookup("dog", wn_dir, lookup_cache)
    warm_s = statistics.median(s for s, _ in warm)
    result.update(
        lookup_cold_s=round(lookup_cold, 3),
        lookup_warm_s=round(warm_s, 3),
        lookup_warm_runs_s=[round(s, 3) for s, _ in warm],
        lookup_warm_same_word_s=round(again_s, 3),
        lookup_warm_same_answer=again_answer == cold_answer,
        lookup_warm_words=[w for w in WARM_WORDS[: len(warm)]],
        lookup_target_met=bool(warm_s < 1.0),
    )
    emit(result, args.name, not args.no_save)
    shutil.rmtree(scratch, ignore_errors=True)  # the wn dir too, unless --wn-dir named one elsewhere
    return 0


if __name__ == "__main__":
    script_main(main)
