"""Scale benchmark of eval.align on random vectors: CSLS retrieval + P@k, dictionary induction.

Defaults are MUSE's evaluation scale: 200k source and 200k target words of dimension 300,
1,500 queries (the size of a ``5000-6500`` test dictionary) with 1-3 gold translations each,
and a ``S2T&T2S`` CSLS refinement dictionary over the top 15k words.  The CSLS P@k evaluation
is timed exactly (``csls_precision_s``) and with ``knn_mode="approximate"``
(``approx_csls_precision_s``); ``supervised_run_s`` is a full supervised run (Procrustes on a
seed dictionary + ``--refine`` refinements + the CSLS evaluation) on a randomly rotated source.  Prints ONE JSON object
with timings and the peak resident set size; it asserts nothing.  Use ``--n``/``--dim`` to run
smaller, and ``OMP_NUM_THREADS`` to choose faiss's thread count.

    OMP_NUM_THREADS=1 python benchmarks/align_scale.py --n 20000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import cast

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import add_output_args, emit, peak_rss_mib, script_main  # noqa: E402
from eval.align import align, build_dictionary, translation_precision  # noqa: E402


def _at(res: dict[str, object]) -> dict[int, float]:
    """P@1/5/10 (percent) of a :func:`translation_precision` report."""
    return {k: round(float(cast(float, res[f"precision_at_{k}"])), 2) for k in (1, 5, 10)}


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000, help="words per side")
    parser.add_argument("--dim", type=int, default=300, help="vector dimension")
    parser.add_argument("--queries", type=int, default=1500, help="source words in the test dictionary")
    parser.add_argument("--max-rank", type=int, default=15000, help="dictionary induction rank limit")
    parser.add_argument("--knn", type=int, default=10, help="CSLS neighbourhood size")
    parser.add_argument("--noise", type=float, default=3.0, help="target = source + noise * N(0, 1)")
    parser.add_argument("--batch-size", type=int, default=4096, help="queries per faiss call")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--refine", type=int, default=5, help="refinement iterations of the supervised run")
    parser.add_argument("--train-pairs", type=int, default=5000, help="seed dictionary size of the supervised run")
    parser.add_argument("--skip-supervised", action="store_true", help="time only the evaluations")
    add_output_args(parser)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    # Generated in float32 and in place: no float64 temporaries at 200k x 300.
    src = rng.standard_normal((args.n, args.dim), dtype=np.float32)  # (n, d) already "mapped"
    tgt = rng.standard_normal((args.n, args.dim), dtype=np.float32)  # (n, d)
    tgt *= np.float32(args.noise)
    tgt += src  # word i of each side are translations
    queries = rng.choice(args.n, size=min(args.queries, args.n), replace=False)  # (q,)
    n_gold = rng.integers(1, 4, size=queries.shape[0])  # 1-3 golds per query
    extra = rng.integers(0, args.n, size=(queries.shape[0], 2))  # random extra golds (rarely right)
    pairs = np.concatenate(
        [
            np.stack([queries, queries], axis=1),
            np.stack([queries[n_gold >= 2], extra[n_gold >= 2, 0]], axis=1),
            np.stack([queries[n_gold >= 3], extra[n_gold >= 3, 1]], axis=1),
        ]
    )  # (pairs, 2)
    data_s = time.perf_counter() - started
    rss_data = peak_rss_mib()

    started = time.perf_counter()
    csls = translation_precision(src, tgt, pairs, method="csls", knn=args.knn, batch_size=args.batch_size)
    csls_s = time.perf_counter() - started

    started = time.perf_counter()
    approx = translation_precision(
        src, tgt, pairs, method="csls", knn=args.knn, batch_size=args.batch_size, knn_mode="approximate"
    )
    approx_s = time.perf_counter() - started

    started = time.perf_counter()
    nn = translation_precision(src, tgt, pairs, method="nn", batch_size=args.batch_size)
    nn_s = time.perf_counter() - started

    started = time.perf_counter()
    dico = build_dictionary(
        src, tgt, method="csls", build="S2T&T2S", max_rank=args.max_rank, knn=args.knn, batch_size=args.batch_size
    )
    build_s = time.perf_counter() - started
    correct = float(np.mean(dico[:, 0] == dico[:, 1])) if dico.shape[0] else None

    supervised: dict[str, object] = {}
    if not args.skip_supervised:
        # Full supervised run on the same data: the source side rotated by a random orthogonal
        # matrix, Procrustes on a seed dictionary of frequent words (none of them test words),
        # args.refine refinements (MUSE's supervised dico_max_rank 10000), then the CSLS evaluation.
        rot, _ = np.linalg.qr(rng.standard_normal((args.dim, args.dim)))
        src_rot = (src @ rot.astype(np.float32)).astype(np.float32)  # (n, d) unaligned source
        train = np.setdiff1d(np.arange(min(args.n, 4 * args.train_pairs)), queries)[: args.train_pairs]
        started = time.perf_counter()
        res = align(src_rot, tgt, np.stack([train, train], axis=1), n_refinement=args.refine,
                    dico_max_rank=10000, knn=args.knn, batch_size=args.batch_size)
        sup = translation_precision(res.map_source(src_rot), res.prepare_target(tgt), pairs, method="csls",
                                    knn=args.knn, batch_size=args.batch_size)
        supervised = {
            "supervised_run_s": round(time.perf_counter() - started, 2),
            "supervised_refinements": args.refine,
            "supervised_best_iteration": res.best_iteration,
            "supervised_csls_precision_at": _at(sup),
        }

    peak = peak_rss_mib()
    report: dict[str, object] = {
        "n": args.n,
        "dim": args.dim,
        "queries": int(queries.shape[0]),
        "pairs": int(pairs.shape[0]),
        "knn": args.knn,
        "max_rank": args.max_rank,
        "threads": faiss.omp_get_max_threads(),
        "data_s": round(data_s, 2),
        "csls_precision_s": round(csls_s, 2),
        "approx_csls_precision_s": round(approx_s, 2),
        "approx_csls_precision_at": _at(approx),
        "nn_precision_s": round(nn_s, 2),
        "build_dictionary_s": round(build_s, 2),
        "csls_precision_at": _at(csls),
        "nn_precision_at": _at(nn),
        "dictionary_size": int(dico.shape[0]),
        "dictionary_correct": round(correct, 4) if correct is not None else None,
        **supervised,
        "load_average_1min": round(os.getloadavg()[0], 2),
        "cpu_count": os.cpu_count(),
        "rss_after_data_mib": round(rss_data, 1),
        "peak_rss_mib": round(peak, 1),
        "peak_rss_under_4gib": peak < 4096,
    }
    emit(report, args.name, not args.no_save)
    return report


if __name__ == "__main__":
    script_main(main)
