"""``align --method vecmap`` beside VecMap's own code on its own supervised recipe: same inputs, one thread.

VecMap (Artetxe et al., github.com/artetxem/vecmap) is not part of this project: pass a checkout
of it with ``--vecmap DIR`` (its ``map_embeddings.py`` and ``eval_translation.py`` run as they
are, with the Python running this script). Each program runs in its own process, one after the
other in alternating order (``--repeats``), with every thread pool at one thread; the script
reads each process's CPU seconds (user + system), wall seconds and peak RSS from ``wait4`` and
reports the ratios ours / VecMap's. Two comparisons:

* ``map``: VecMap's ``map_embeddings.py --supervised TRAIN`` (read, normalise unit/center/unit,
  whiten, map, re-weight, de-whiten, write both mapped files) against
  ``polyglot-groc align --method vecmap --train-dict TRAIN --keep-case --max-vocab 0`` (the same
  recipe and vocabulary; it writes ``src.aligned.vec``, ``tgt.vec``, ``W.npy``, ``result.json``);
* ``map+eval``: the above plus ``eval_translation.py`` twice (``--retrieval nn`` and ``csls``: P@1
  by each) against one ``align`` with ``--eval-dict`` (P@1/5/10 by nn and csls under two
  protocols, beside the identical-string, char 3-gram and no-mapping baselines).

The P@1 figures are compared too: with the same recipe and vocabularies, VecMap's accuracy
and ours under the MUSE protocol agree up to ties.

Inputs: ``--src/--tgt/--train/--test`` files, or (default) synthetic ones made here: ``--n``
words of dimension ``--dim`` per side, the target a rotated noisy copy of the source, words
``s<i>`` / ``t<i>`` (lowercase, unique: no reading rule can differ), training pairs for the
first 5000 words, test pairs for the next 1500. Prints one JSON object and saves it under
``benchmarks/results/<date>/align_vs_vecmap.json``; asserts nothing.

    python benchmarks/align_vs_vecmap.py --vecmap /path/to/vecmap --n 100000 --repeats 2
    python benchmarks/align_vs_vecmap.py --vecmap /path/to/vecmap --n 3000 --train-pairs 500 --test-pairs 200 \\
        --no-save    # smoke test, seconds
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import BadInput, add_output_args, emit, run_measured, script_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
#: Every thread pool at one thread, in every process.
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                     "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")}

_GENERATE = r"""
import sys
import numpy as np
n, d, noise, seed, src_path, tgt_path, train_path, test_path, n_train, n_test = sys.argv[1:]
n, d, seed, n_train, n_test = int(n), int(d), int(seed), int(n_train), int(n_test)
rng = np.random.default_rng(seed)
x = rng.standard_normal((n, d)).astype(np.float32)
q, _ = np.linalg.qr(rng.standard_normal((d, d)))
z = (x @ q + float(noise) * rng.standard_normal((n, d))).astype(np.float32)
fmt = " ".join(["%.6f"] * d)
for path, prefix, m in ((src_path, "s", x), (tgt_path, "t", z)):
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"{n} {d}\n")
        for start in range(0, n, 4096):
            block = m[start:start + 4096].tolist()
            f.write("".join(f"{prefix}{start + i} {fmt % tuple(row)}\n" for i, row in enumerate(block)))
with open(train_path, "w", encoding="utf-8") as f:
    f.writelines(f"s{i} t{i}\n" for i in range(n_train))
with open(test_path, "w", encoding="utf-8") as f:
    f.writelines(f"s{i} t{i}\n" for i in range(n_train, n_train + n_test))
"""


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` to its end; its wall and CPU seconds, peak RSS (MiB) and output."""
    return run_measured(cmd, cwd, env, tail=400)


def _accuracy(text: str) -> float:
    found = re.search(r"Accuracy:\s*([0-9.]+)%", text)
    if not found:
        raise BadInput(f"eval_translation.py printed no accuracy: {text.strip()[-200:]}")
    return float(found.group(1))


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vecmap", type=Path, required=True, help="a checkout of github.com/artetxem/vecmap")
    ap.add_argument("--src", type=Path, help="source vectors (word2vec text); default: synthetic")
    ap.add_argument("--tgt", type=Path, help="target vectors (word2vec text)")
    ap.add_argument("--train", type=Path, help="training dictionary")
    ap.add_argument("--test", type=Path, help="test dictionary")
    ap.add_argument("--n", type=int, default=100_000, help="synthetic: words per side")
    ap.add_argument("--dim", type=int, default=300, help="synthetic: dimension")
    ap.add_argument("--noise", type=float, default=1.0, help="synthetic: noise added to the rotated copy")
    ap.add_argument("--train-pairs", type=int, default=5000)
    ap.add_argument("--test-pairs", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=1, help="runs of each program, alternating; medians reported")
    ap.add_argument("--skip-eval", action="store_true", help="only the map comparison")
    ap.add_argument("--work", type=Path, default=None, help="folder for the inputs and outputs (default: a temp dir)")
    add_output_args(ap)
    args = ap.parse_args()
    for name in ("map_embeddings.py", "eval_translation.py", "embeddings.py"):
        if not (args.vecmap / name).is_file():
            raise BadInput(f"--vecmap {args.vecmap}: no {name}; pass a checkout of github.com/artetxem/vecmap")
    given = [args.src, args.tgt, args.train, args.test]
    if any(given) and not all(given):
        raise BadInput("give all of --src, --tgt, --train and --test, or none (synthetic inputs)")
    if args.repeats < 1 or args.n < args.train_pairs + args.test_pairs:
        raise BadInput("--repeats must be >= 1 and --n at least --train-pairs + --test-pairs")
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory(dir=args.work) as tmp:
        work = Path(tmp)
        if all(given):
            src, tgt, train, test = (p.resolve() for p in given)  # type: ignore[union-attr]
            inputs: dict[str, Any] = {"src": str(src), "tgt": str(tgt), "train": str(train), "test": str(test)}
        else:
            src, tgt, train, test = work / "src.vec", work / "tgt.vec", work / "train.txt", work / "test.txt"
            gen = _run([sys.executable, "-c", _GENERATE, str(args.n), str(args.dim), str(args.noise), "0", str(src),
                        str(tgt), str(train), str(test), str(args.train_pairs), str(args.test_pairs)], work, env)
            inputs = {"synthetic": True, "n": args.n, "dim": args.dim, "noise": args.noise,
                      "train_pairs": args.train_pairs, "test_pairs": args.test_pairs,
                      "generate_s": gen["wall_s"]}
        inputs["src_mib"] = round(src.stat().st_size / 2**20, 1)
        vecmap_map = [sys.executable, "map_embeddings.py", "--supervised", str(train), str(src), str(tgt),
                      str(work / "v.src.vec"), str(work / "v.tgt.vec")]
        ours_common = [sys.executable, "-m", "polyglot_groc", "align", "--src", str(src), "--tgt", str(tgt),
                       "--train-dict", str(train), "--method", "vecmap", "--keep-case", "--max-vocab", "0",
                       "--overwrite"]
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in ("vecmap_map", "ours_map", "vecmap_eval_nn",
                                                                 "vecmap_eval_csls", "ours_map_eval")}
        load_before = os.getloadavg()
        for rep in range(args.repeats):
            order = ["vecmap", "ours"] if rep % 2 == 0 else ["ours", "vecmap"]
            for who in order:
                if who == "vecmap":
                    runs["vecmap_map"].append(_run(vecmap_map, args.vecmap, env))
                    if not args.skip_eval:
                        for retrieval in ("nn", "csls"):
                            runs[f"vecmap_eval_{retrieval}"].append(_run(
                                [sys.executable, "eval_translation.py", str(work / "v.src.vec"),
                                 str(work / "v.tgt.vec"), "-d", str(test), "--retrieval", retrieval],
                                args.vecmap, env))
                else:
                    runs["ours_map"].append(_run([*ours_common, "--out", str(work / "ours-map")], work, env))
                    if not args.skip_eval:
                        runs["ours_map_eval"].append(_run([*ours_common, "--eval-dict", str(test), "--out",
                                                           str(work / "ours-eval")], work, env))
        load_after = os.getloadavg()
        summary: dict[str, Any] = {}
        for key, got in runs.items():
            if got:
                summary[key] = {m: _median(got, m) for m in ("cpu_s", "wall_s", "peak_rss_mib")}
        result: dict[str, Any] = {
            "inputs": inputs, "repeats": args.repeats, "threads": 1, "python": sys.version.split()[0],
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in load_after], "runs": summary,
            "ratio_map": {m: round(summary["ours_map"][m] / summary["vecmap_map"][m], 3)
                          for m in ("cpu_s", "wall_s", "peak_rss_mib")},
        }
        if not args.skip_eval:
            import json

            vecmap_total = {m: summary["vecmap_map"][m] + summary["vecmap_eval_nn"][m] + summary["vecmap_eval_csls"][m]
                            for m in ("cpu_s", "wall_s")}
            result["vecmap_map_eval_total"] = {m: round(v, 2) for m, v in vecmap_total.items()}
            result["ratio_map_eval"] = {m: round(summary["ours_map_eval"][m] / vecmap_total[m], 3)
                                        for m in ("cpu_s", "wall_s")}
            result["ratio_map_eval"]["peak_rss_mib"] = round(
                summary["ours_map_eval"]["peak_rss_mib"]
                / max(summary[k]["peak_rss_mib"] for k in ("vecmap_map", "vecmap_eval_nn", "vecmap_eval_csls")), 3)
            ours = json.loads(runs["ours_map_eval"][-1]["stdout"])
            result["precision_at_1"] = {
                "vecmap_nn": _accuracy(runs["vecmap_eval_nn"][-1]["stdout"]),
                "vecmap_csls": _accuracy(runs["vecmap_eval_csls"][-1]["stdout"]),
                "ours_nn_muse_protocol": round(ours["protocols"]["muse"]["nn"]["precision_at_1"], 2),
                "ours_csls_muse_protocol": round(ours["protocols"]["muse"]["csls"]["precision_at_1"], 2),
            }
            result["ours_reference"] = ours["reference"]
    emit(result, name=args.name, save=not args.no_save)


if __name__ == "__main__":
    script_main(main)
