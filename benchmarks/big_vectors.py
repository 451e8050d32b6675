"""Vectors of any size in bounded memory: a synthetic 2.5M x 300 ``.vec`` aligned and fully exported.

Writes (once, cached under ``--cache``) a source file of ``--n`` words of dimension ``--dim`` and
a target file of ``--tgt-n`` words (the first source words rotated by a random orthogonal matrix,
plus noise), a seed dictionary (pairs 0-4999) and a test dictionary (5000-6499), then runs
``polyglot_groc.api.align`` on them as ``polyglot-groc align --export-mapped`` does: the
``--max-vocab`` most frequent words of each side are aligned (Procrustes + ``--refine``
refinements + the P@k evaluation), and EVERY word of both files is mapped and written to
``vectors-<lang>.txt`` in chunks, as MUSE's export does (``full_vocab``).  Reports the times, the
peak RSS of this process (VmHWM; the files are generated in a child process so it does not count)
and MUSE's loader arithmetic for the same file: ``read_txt_embeddings(full_vocab=True)`` keeps a
list of float64 rows, concatenates them (float64) and converts to float32.

    python benchmarks/big_vectors.py                 # 2.5M x 300, ~15-25 min on 2 busy cores
    python benchmarks/big_vectors.py --n 300000      # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import add_output_args, emit, peak_rss_mib, script_main  # noqa: E402
from groc_base.fileio import write_json  # noqa: E402

GIB = 1024**3

# Run in a child process: writes the two files and the dictionaries in chunks, quantised to
# 3 decimals so each value is formatted by a table lookup (seconds per million rows).
_GENERATE = r"""
import sys
import numpy as np
n, tgt_n, dim, seed, src_path, tgt_path, train_path, test_path = sys.argv[1:]
n, tgt_n, dim, seed = int(n), int(tgt_n), int(dim), int(seed)
rng = np.random.default_rng(seed)
table = np.array([f"{v / 1000:.3f}" for v in range(-20000, 20001)], dtype=object)  # value -> text
rot, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
rot = rot.astype(np.float32)
step = 8192

def write(path, count, words, make):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{count} {dim}\n")
        for start in range(0, count, step):
            block = make(start, min(count, start + step))  # (k, dim) float32
            codes = np.clip(np.rint(block * 1000), -20000, 20000).astype(np.int64) + 20000
            text = table[codes]
            fh.write("".join(f"{words(start + i)} {' '.join(row)}\n" for i, row in enumerate(text)))

def src_rows(a, b):
    return np.random.default_rng((seed, a)).standard_normal((b - a, dim), dtype=np.float32)

write(src_path, n, lambda i: f"w{i}", src_rows)
write(tgt_path, tgt_n, lambda i: f"t{i}",
      lambda a, b: src_rows(a, b) @ rot + 0.3 * np.random.default_rng((seed, a, 1)).standard_normal(
          (b - a, dim), dtype=np.float32))
with open(train_path, "w", encoding="utf-8") as fh:
    fh.writelines(f"w{i} t{i}\n" for i in range(5000))
with open(test_path, "w", encoding="utf-8") as fh:
    fh.writelines(f"w{i} t{i}\n" for i in range(5000, 6500))
"""


def _generate(args: argparse.Namespace, files: dict[str, Path]) -> float:
    stamp = files["src"].parent / "done.json"
    wanted = {"n": args.n, "tgt_n": args.tgt_n, "dim": args.dim, "seed": args.seed}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted and all(p.exists() for p in files.values()):
        return 0.0
    started = time.perf_counter()
    files["src"].parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", _GENERATE, str(args.n), str(args.tgt_n), str(args.dim), str(args.seed),
                    *(str(files[k]) for k in ("src", "tgt", "train", "test"))], check=True)
    write_json(stamp, wanted)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2_500_000, help="source words (rows of the big .vec)")
    parser.add_argument("--tgt-n", type=int, default=200_000, help="target words")
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--max-vocab", type=int, default=200_000, help="words per side that are aligned")
    parser.add_argument("--refine", type=int, default=1, help="refinement iterations")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/polyglot-groc-big-vectors"),
                        help="folder for the generated files (several GB; --keep leaves them there)")
    parser.add_argument("--keep", action="store_true", help="keep the generated inputs and the export")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/faiss threads")
    add_output_args(parser)
    args = parser.parse_args(argv)

    import faiss
    from threadpoolctl import threadpool_limits

    from polyglot_groc.api import align

    faiss.omp_set_num_threads(args.threads)  # faiss's heaps
    threadpool_limits(limits=args.threads, user_api="blas")  # NumPy's BLAS: the k-NN GEMMs
    cache = args.cache / f"n{args.n}-t{args.tgt_n}-d{args.dim}-s{args.seed}"
    files = {"src": cache / "src.vec", "tgt": cache / "tgt.vec", "train": cache / "train.txt",
             "test": cache / "test.txt"}
    generate_s = _generate(args, files)
    out = args.cache / "out"
    rss_before = peak_rss_mib()
    started = time.perf_counter()
    res = align(src=files["src"], tgt=files["tgt"], train_dict=files["train"], eval_dict=files["test"],
                refine=args.refine, max_vocab=args.max_vocab, src_lang="xx", tgt_lang="yy", out=out,
                overwrite=True, export_mapped=True, threads=args.threads)
    align_s = time.perf_counter() - started
    peak = peak_rss_mib()
    with open(out / "vectors-xx.txt", encoding="utf-8") as fh:
        exported_rows = int(fh.readline().split()[0])
    export_bytes = (out / "vectors-xx.txt").stat().st_size
    precision = res.precision or {}
    # MUSE's read_txt_embeddings(full_vocab=True) for its export: a list of float64 rows
    # (np.fromstring), np.concatenate of them (float64), then torch's float() (float32); the list
    # and the concatenation are alive together.
    f64 = args.n * args.dim * 8 / GIB
    report: dict[str, object] = {
        "n": args.n, "tgt_n": args.tgt_n, "dim": args.dim, "max_vocab": args.max_vocab, "refine": args.refine,
        "threads": args.threads, "generate_s": round(generate_s, 1),
        "src_file_gib": round(files["src"].stat().st_size / GIB, 2),
        "align_and_export_s": round(align_s, 1),
        "exported_src_rows": exported_rows, "exported_src_gib": round(export_bytes / GIB, 2),
        "csls_precision_at_1": round(float(precision.get("csls", {}).get("precision_at_1", float("nan"))), 2),
        "peak_rss_mib": round(peak, 1), "rss_before_align_mib": round(rss_before, 1),
        "peak_rss_under_2gib": peak < 2048,
        "muse_loader_gib": {"float64_rows_list": round(f64, 2), "float64_concatenated": round(f64, 2),
                            "float32_tensor": round(f64 / 2, 2), "peak_estimate": round(2 * f64, 2)},
        "load_average_1min": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count(),
    }
    if not args.keep:
        shutil.rmtree(args.cache, ignore_errors=True)
    emit(report, args.name, not args.no_save)
    return report


if __name__ == "__main__":
    script_main(main)
