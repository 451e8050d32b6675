"""Alignment methods on real in-domain vectors: procrustes, rcsls, vecmap, with and without iterative normalisation.

1. Vectors: fastText skip-gram (gensim, d=300, 5 epochs, window 5, min count 3, one worker) on
   each language's running text in the shared data (Leipzig Wikipedia/news sentences first, then
   en: Brown, es/nl: CoNLL-2002), lowercased, ``\\w+`` tokens, capped at ``--max-tokens``; cached
   in ``bench_out/align_methods/`` (git-ignored) and reused.
2. For en-fr, en-es, en-nl: ``polyglot_groc.align`` with the MUSE ``0-5000`` training and
   ``5000-6500`` test dictionaries, for every method (``procrustes`` without refinement, the RCSLS
   paper's baseline; ``rcsls``; ``vecmap``; with ``--refine-rounds N`` also MUSE's refined
   procrustes) x normalisation (``""`` and ``iternorm``),
   each in a fresh process so its time and peak RSS (VmHWM) are its own.  P@1/5/10 (CSLS; nn
   P@1 too) under MUSE's protocol (scorable pairs) and fastText's (every test source word), with
   coverage.
3. RCSLS at scale: ``--scale-pairs`` training pairs, ``--scale-neg`` negatives per side,
   d=300 (random unit vectors, the target a noisy copy of the source), ``--scale-steps`` full-batch
   steps; per-step seconds and the process's peak RSS, against the reference's two dense
   float64 (n x negatives) score matrices.

Prints one JSON object and saves it under ``benchmarks/results/<date>/align_methods.json``;
asserts nothing.  Timings are wall-clock on a shared machine.

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/align_methods.py
"""

from __future__ import annotations

import argparse
import concurrent.futures
import io
import multiprocessing
import os
import re
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import BadInput, add_output_args, emit, peak_rss_mib, script_main, shared_data  # noqa: E402
from groc_base.fileio import atomic_write, write_json  # noqa: E402

CACHE = Path(__file__).resolve().parent.parent / "bench_out" / "align_methods"
PAIRS = ("en-fr", "en-es", "en-nl")
#: "procrustes" is the RCSLS paper's baseline (Procrustes on the training pairs, CSLS retrieval);
#: "procrustes-refine" adds MUSE's CSLS refinement rounds (--refine-rounds; off by default for time).
METHODS: tuple[tuple[str, dict[str, int]], ...] = (("procrustes", {"refine": 0}), ("rcsls", {}), ("vecmap", {}))
NORMS = ("", "iternorm")

LANGS = ("en", "fr", "es", "nl")
_TOKEN = re.compile(r"\w+", re.UNICODE)  # letters/digits; punctuation and apostrophes split words

_LEIPZIG = {"en": ("eng_wikipedia_2016",), "fr": ("fra_wikipedia_2010", "fra_newscrawl_2014"),
            "es": ("spa_wikipedia_2016",), "nl": ("nld_wikipedia_2016",)}
_CONLL = {"es": ("esp.train", "esp.testa", "esp.testb"), "nl": ("ned.train", "ned.testa", "ned.testb")}


def _leipzig(text: Path, lang: str) -> Iterator[str]:
    seen: set[str] = set()  # the 10K and 30K samples overlap
    for corpus in _LEIPZIG[lang]:
        for path in sorted((text / "leipzig").glob(f"{corpus}_*-sentences.txt")):
            for line in path.read_text(encoding="utf-8").splitlines():
                sentence = line.split("\t", 1)[-1]
                if sentence not in seen:
                    seen.add(sentence)
                    yield sentence


def _extra(text: Path, lang: str) -> Iterator[str]:
    if lang == "en":
        with zipfile.ZipFile(text / "nltk_data" / "brown.zip") as zf:
            for name in sorted(n for n in zf.namelist() if re.fullmatch(r"brown/c[a-r]\d\d", n)):
                for line in zf.read(name).decode("utf-8").splitlines():
                    if line.strip():
                        yield " ".join(tok.rsplit("/", 1)[0] for tok in line.split())
    elif lang in _CONLL:
        with zipfile.ZipFile(text / "nltk_data" / "conll2002.zip") as zf:
            for name in _CONLL[lang]:
                words: list[str] = []
                raw = zf.read(f"conll2002/{name}").decode("latin-1")
                for line in io.StringIO(raw):
                    parts = line.split()
                    if parts and parts[0] != "-DOCSTART-":
                        words.append(parts[0])
                    elif words:
                        yield " ".join(words)
                        words = []


def sentences(data: Path, lang: str, max_tokens: int) -> list[list[str]]:
    """Lowercased token lists of ``lang``'s text, at most ``max_tokens`` tokens in all."""
    text = data / "text"
    out: list[list[str]] = []
    total = 0
    for source in (_leipzig(text, lang), _extra(text, lang)):
        for sentence in source:
            tokens = _TOKEN.findall(sentence.lower())
            if tokens:
                out.append(tokens)
                total += len(tokens)
                if total >= max_tokens:
                    return out
    return out


def train_vectors(data: Path, lang: str, cache: Path, *, max_tokens: int, epochs: int, dim: int = 300,
                  min_count: int = 3, bucket: int = 200_000, seed: int = 0) -> tuple[Path, dict[str, Any]]:
    """``lang``'s vectors (trained now, or the cached file) and the training figures."""
    from gensim.models import FastText

    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"{lang}.d{dim}.t{max_tokens}.e{epochs}.vec"
    started = time.perf_counter()
    sents = sentences(data, lang, max_tokens)
    tokens = sum(map(len, sents))
    if path.exists():
        with open(path, encoding="utf-8") as f:
            n_words = int(f.readline().split()[0])
        return path, {"tokens": tokens, "sentences": len(sents), "words": n_words, "cached": True}
    # fastText skip-gram (sg=1) with gensim's defaults (window 5, n-grams 3-6), one worker; bucket
    # 200k instead of 2M keeps the n-gram table at 240 MB.
    model = FastText(sentences=sents, vector_size=dim, window=5, min_count=min_count, sg=1, epochs=epochs,
                     seed=seed, workers=1, bucket=bucket)
    words = list(model.wv.index_to_key)  # most frequent first, as .vec files are
    vectors = np.asarray(model.wv.vectors, dtype=np.float32)  # (n, dim)

    def write(fh: IO[bytes]) -> None:  # line by line: the text of 200k vectors is hundreds of MB
        fh.write(f"{len(words)} {dim}\n".encode())
        for word, row in zip(words, vectors, strict=True):
            fh.write((word + " " + " ".join(f"{x:.5f}" for x in row) + "\n").encode("utf-8"))

    atomic_write(path, write)
    return path, {"tokens": tokens, "sentences": len(sents), "words": len(words),
                  "train_seconds": round(time.perf_counter() - started, 1), "cached": False}




def _align_one(src: str, tgt: str, train: str, test: str, method: str, normalize: str, threads: int,
               max_vocab: int) -> dict[str, Any]:
    """One ``polyglot_groc.align`` run (in its own process): figures, seconds and peak RSS."""
    import polyglot_groc as pg

    base, _, rounds = method.partition("-refine")  # procrustes-refine5: MUSE's refinement, 5 rounds
    extra = {"refine": int(rounds)} if rounds else dict(METHODS)[base]
    started = time.perf_counter()
    res = pg.align(src=src, tgt=tgt, train_dict=train, eval_dict=test, method=base, normalize=normalize or "none",
                   threads=threads, max_vocab=max_vocab, criterion=True, **extra)
    seconds = time.perf_counter() - started
    out = res.to_dict()
    proto = out["protocols"]
    return {
        "method": method, "normalize": normalize or "none", "seconds": round(seconds, 2),
        "peak_rss_mib": round(peak_rss_mib(), 1), "src_words": out["src_words"], "tgt_words": out["tgt_words"],
        "train_pairs_found": out["train_dictionary"]["found"], "best_iteration": out["best_iteration"],
        "criterion": round(float(out["history"][out["best_iteration"]]["criterion"]), 5),
        "muse": {"n_queries": proto["muse"]["n_queries"],
                 **{f"csls_p@{k}": round(proto["muse"]["csls"][f"precision_at_{k}"], 2) for k in (1, 5, 10)},
                 "nn_p@1": round(proto["muse"]["nn"]["precision_at_1"], 2)},
        "fasttext": {"n_queries": proto["fasttext"]["n_queries"], "coverage": round(proto["fasttext"]["coverage"], 4),
                     **{f"csls_p@{k}": round(proto["fasttext"]["csls"][f"precision_at_{k}"], 2) for k in (1, 5, 10)},
                     "nn_p@1": round(proto["fasttext"]["nn"]["precision_at_1"], 2)},
    }


def _rcsls_scale(n_pairs: int, n_neg: int, dim: int, steps: int, threads: int, seed: int) -> dict[str, Any]:
    """RCSLS full-batch steps at scale (in its own process): per-step seconds and peak RSS."""
    import torch

    from eval.rcsls import RcslsConfig, rcsls

    torch.set_num_threads(threads)
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((n_neg, dim), dtype=np.float32)  # (m, d)
    src /= np.linalg.norm(src, axis=1, keepdims=True)
    tgt = rng.standard_normal((n_neg, dim), dtype=np.float32)  # (m, d): unrelated words ...
    tgt[:n_pairs] = src[:n_pairs] + 0.5 * rng.standard_normal((n_pairs, dim), dtype=np.float32)  # ... and translations
    tgt /= np.linalg.norm(tgt, axis=1, keepdims=True)
    pairs = np.stack([np.arange(n_pairs), np.arange(n_pairs)], axis=1)  # (n, 2)
    rss_data = peak_rss_mib()
    started = time.perf_counter()
    res = rcsls(src, tgt, pairs, np.eye(dim, dtype=np.float32), RcslsConfig(n_iter=steps, max_neg=n_neg))
    return {
        "pairs": n_pairs, "negatives_per_side": n_neg, "dim": dim, "threads": threads,
        "step_seconds": [round(float(h["seconds"]), 2) for h in res.history],
        "full_searches_after_step": [int(h["full_searches"]) for h in res.history],
        "loss": [round(float(h["loss"]), 6) for h in res.history],
        "total_seconds": round(time.perf_counter() - started, 2),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "rss_of_the_two_vector_sets_mib": round(rss_data, 1),
        "reference_dense_score_matrices_gib": round(2 * n_pairs * n_neg * 8 / 2**30, 1),
    }


def _in_process(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a fresh spawned process, so its peak RSS is its own."""
    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(fn, *args).result()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", default=",".join(PAIRS),
                    help="language pairs, e.g. en-fr,en-es,en-nl ('': only the RCSLS scale part)")
    ap.add_argument("--max-tokens", type=int, default=1_500_000, help="training tokens per language")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--max-vocab", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale-pairs", type=int, default=5000)
    ap.add_argument("--scale-neg", type=int, default=200_000)
    ap.add_argument("--scale-dim", type=int, default=300)
    ap.add_argument("--scale-steps", type=int, default=3, help="RCSLS steps at scale (0: skip that part)")
    ap.add_argument("--refine-rounds", type=int, default=0,
                    help="also run procrustes with this many MUSE refinement rounds (0: skip; slow)")
    ap.add_argument("--seed", type=int, default=0)
    add_output_args(ap)
    args = ap.parse_args(argv)
    pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    if args.refine_rounds < 0 or args.scale_steps < 0:
        raise BadInput("--refine-rounds and --scale-steps must be 0 or more")
    for pair in pairs:
        if len(pair.split("-")) != 2 or any(lang not in LANGS for lang in pair.split("-")):
            raise BadInput(f"--pairs {pair!r}: use src-tgt pairs of {', '.join(LANGS)}, e.g. en-fr")
    data = shared_data()
    dicts = data / "eval" / "dictionaries"
    result: dict[str, Any] = {"vectors": {}, "pairs": {}, "settings": {
        "max_tokens": args.max_tokens, "epochs": args.epochs, "dim": 300, "algorithm": "gensim FastText sg=1",
        "max_vocab": args.max_vocab, "threads": args.threads, "machine": f"{os.cpu_count()} cores, shared"}}
    vec: dict[str, str] = {}
    for lang in sorted({lang for pair in pairs for lang in pair.split("-")}):
        path, info = train_vectors(data, lang, CACHE, max_tokens=args.max_tokens, epochs=args.epochs)
        vec[lang] = str(path)
        result["vectors"][lang] = {"file": path.name, **info}
    for pair in pairs:
        s, t = pair.split("-")
        rows = []
        methods = [m for m, _ in METHODS] + ([f"procrustes-refine{args.refine_rounds}"] if args.refine_rounds else [])
        for method in methods:
            for norm in NORMS:
                rows.append(_in_process(_align_one, vec[s], vec[t], str(dicts / f"{pair}.0-5000.txt"),
                                        str(dicts / f"{pair}.5000-6500.txt"), method, norm, args.threads,
                                        args.max_vocab))
                print(pair, rows[-1], file=sys.stderr, flush=True)
            result["pairs"][pair] = rows
            # progress beside the vector cache (git-ignored): a long run that is stopped keeps its rows
            write_json(CACHE / "progress.json", result)
    # The bar: RCSLS >= Procrustes-CSLS + 2 P@1 (MUSE protocol) on at least two pairs.
    verdict = {}
    for pair, rows in result["pairs"].items():
        at = {(r["method"], r["normalize"]): r["muse"]["csls_p@1"] for r in rows}
        verdict[pair] = {"rcsls_minus_procrustes_p@1": round(at[("rcsls", "none")] - at[("procrustes", "none")], 2),
                         "rcsls_iternorm_minus_procrustes_iternorm_p@1":
                             round(at[("rcsls", "iternorm")] - at[("procrustes", "iternorm")], 2)}
    if verdict:  # `--pairs ""` runs only the scale part
        result["rcsls_vs_procrustes"] = verdict
        result["rcsls_plus_2_on_two_pairs"] = sum(v["rcsls_minus_procrustes_p@1"] >= 2.0
                                                  for v in verdict.values()) >= 2
    if args.scale_steps > 0:
        result["rcsls_scale"] = _in_process(_rcsls_scale, args.scale_pairs, args.scale_neg, args.scale_dim,
                                            args.scale_steps, args.threads, args.seed)
    emit(result, args.name or "align_methods", save=not args.no_save)
    return result


if __name__ == "__main__":
    script_main(lambda: main())
