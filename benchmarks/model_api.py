"""The in-memory model (``pg.load``) against the file round trips it replaces, timed in one run.

Two ratios on a PTB-size GroC run (trained for a few steps here unless ``--run`` is given: the
speed of embedding and scoring does not depend on how well it is trained):

* ``vectors``: ``model.vectors(words)`` for ``--words`` unseen words (PTB words with a suffix the
  vocabulary lacks, composed from their characters) on a loaded model with an empty cache, against
  ``export(words=...)`` to a ``.vec`` file followed by gensim's ``load_word2vec_format`` (what a
  notebook did before). The two give the same vectors bit for bit (checked, ``identical``).
* ``log_prob``: ``model.log_prob(text)`` of the PTB test set (the file's text, read as the run
  reads it) against ``evaluate(split="test")`` (which also loads the run and the corpus: its
  ``load_seconds`` share is reported as ``model_load_seconds``).

Runs alternate (export, model, export, model, ...) so both see the same machine load; medians
and the ratio of medians are reported.

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/model_api.py --work bench_out/model_api --threads 1

On a machine other processes share, use one thread: the char-CNN's many small GEMMs slow down
several times when OpenMP threads are oversubscribed (measured here: the char-CNN pass over 10k
words took 0.4-0.5 s on one thread and 1.9-5.7 s on two under a load average of 6), which would
time the machine's load rather than the two paths.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    DEFAULT_FILTERS,
    FULL_SOFTMAX,
    BadInput,
    add_device_arg,
    add_output_args,
    device_label,
    emit,
    filters_override,
    peak_rss_mib,
    prepare_ptb,
    script_main,
    shared_data,
)

#: Suffixes that turn PTB words into words the PTB vocabulary lacks (deterministic, word-like).
SUFFIXES = ("ish", "ful", "less", "ness", "ly", "ism", "ized", "ette", "ling", "hood", "ward", "some", "ist",
            "ables", "ified")


def unseen_words(vocabulary: list[str], n: int) -> list[str]:
    """``n`` distinct words outside ``vocabulary``: its words with a suffix, most frequent words first."""
    known = set(vocabulary)
    out: dict[str, None] = {}
    for suffix in SUFFIXES:
        for word in vocabulary:
            if word.isalpha() and word + suffix not in known:
                out.setdefault(word + suffix)
                if len(out) == n:
                    return list(out)
    raise BadInput(f"only {len(out)} unseen words can be made from this vocabulary; ask for fewer with --words")


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = fn()
    return time.perf_counter() - started, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/model_api"))
    ap.add_argument("--run", type=Path, default=None, help="an existing PTB run (default: train one into --work)")
    ap.add_argument("--kind", default="groc", help="model kind of the run trained here")
    ap.add_argument("--steps", type=int, default=2, help="training steps of the run trained here")
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--filters", default=DEFAULT_FILTERS)
    ap.add_argument("--words", type=int, default=10_000, help="unseen words to embed")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of each vectors path")
    ap.add_argument("--score-repeats", type=int, default=2, help="timed runs of evaluate and of log_prob")
    ap.add_argument("--threads", type=int, default=1)
    add_device_arg(ap)
    add_output_args(ap)
    args = ap.parse_args()
    if min(args.words, args.repeats, args.score_repeats, args.steps) < 1:
        raise BadInput("--words, --repeats, --score-repeats and --steps must be positive")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")

    import numpy as np
    from gensim.models import KeyedVectors

    from polyglot_groc.api import Model, evaluate, export, load, train
    from polyglot_groc.config import load_config, merge_overrides
    from polyglot_groc.model.device import set_threads

    set_threads(args.threads)
    corpus = prepare_ptb(shared_data(), args.work / "corpus")
    run = args.run
    if run is None:
        run = args.work / "runs" / args.kind
        cfg = load_config(None, merge_overrides({
            **FULL_SOFTMAX, "data.root": corpus, "data.langs": ["en"], "model.kind": args.kind, "model.d": args.d,
            "model.prefix.hidden": args.hidden, "train.batch_size": 20, "train.bptt": 35,
            "train.max_steps": args.steps, "train.eval_every": 10_000, "train.eval_batch_size": 10,
            "train.threads": args.threads, "train.device": args.device}, filters_override(args.filters)))
        train(config=cfg, out=run, overwrite=True)

    load_s, model = timed(lambda: load(run, device=args.device, threads=args.threads))
    words = unseen_words(model.words("en"), args.words)
    out: dict[str, Any] = {"benchmark": "model_api", "device": device_label(args.device), "threads": args.threads,
                           "run": {"kind": model.kind, "d": model.dim, "vocabulary": len(model.words("en")),
                                   "hidden": model.config.model.prefix.hidden,
                                   "filters": [list(f) for f in model.config.model.surface.filters]},
                           "model_load_seconds": load_s}

    # ---- vectors of unseen words: export + gensim load vs model.vectors (a fresh cache each time)
    file_s, mem_s = [], []
    with tempfile.TemporaryDirectory() as tmp:
        vec = Path(tmp) / "unseen.vec"
        for _ in range(args.repeats):
            t, kv = timed(lambda: (export(run=run, lang="en", words=words, out=vec, overwrite=True,
                                          device=args.device, threads=args.threads),
                                   KeyedVectors.load_word2vec_format(str(vec)))[1])
            file_s.append(t)
            fresh = Model(model.bundle)
            t, got = timed(lambda fresh=fresh: fresh.vectors(words, "en"))
            mem_s.append(t)
        cached_s, _ = timed(lambda: fresh.vectors(words, "en"))
    identical = kv.index_to_key == words and bool(np.array_equal(kv.vectors, got))
    out["vectors"] = {
        "words": len(words), "examples": words[:5], "identical": identical,
        "export_plus_gensim_seconds": file_s, "model_vectors_seconds": mem_s, "model_vectors_cached_seconds": cached_s,
        "speedup": statistics.median(file_s) / statistics.median(mem_s),
        "speedup_worst": min(file_s) / max(mem_s),
    }

    # ---- log-probability of the PTB test set vs evaluate on it
    text = (corpus / "en" / "test.txt").read_text(encoding="utf-8")
    eval_s, score_s = [], []
    for _ in range(args.score_repeats):
        t, ev = timed(lambda: evaluate(run=run, split="test", device=args.device, threads=args.threads))
        eval_s.append(t)
        t, scored = timed(lambda: model.token_log_probs(text, "en"))
        score_s.append(t)
    out["log_prob"] = {
        "tokens_scored": len(scored.tokens), "evaluate_tokens": ev.details["en"]["n_tokens"] if ev.details else None,
        "streams": model.config.train.eval_batch_size, "log_prob": scored.log_prob,
        "perplexity": scored.perplexity, "evaluate_perplexity": ev.perplexity["en"],
        "evaluate_seconds": eval_s, "log_prob_seconds": score_s,
        "ratio": statistics.median(score_s) / statistics.median(eval_s),
        "ratio_worst": max(score_s) / min(eval_s),
    }
    out["peak_rss_mib"] = peak_rss_mib()
    emit(out, args.name, not args.no_save)


if __name__ == "__main__":
    script_main(main)
