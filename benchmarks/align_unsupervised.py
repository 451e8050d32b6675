"""Alignment without a dictionary (``eval.unsup``): synthetic, English halves, real pairs beside VecMap and MUSE.

Five parts (``--parts``; the first three by default), every figure from one run of this script:

* ``synthetic``: clustered Gaussian spaces (``--syn-n`` x ``--syn-dim``) against a rotated copy whose
  rows are shuffled as frequency ranks are between languages, plus noise: VecMap's unsupervised
  recipe (ours) with its restarts and verdict, and MUSE's adversarial start (ours, reduced
  schedule); then two unrelated pairs (Gaussian, clustered) for the verdict.
* ``halves``: word2vec vectors (``polyglot_groc.training.pretrain.pretrain_vectors``: skip-gram,
  ``--dim``, ``--epochs``, min count 3, one worker) from two disjoint halves of the bundle's
  English text (every other sentence of Leipzig eng_wikipedia + Brown, lowercased ``\\w+``
  tokens); gold = identical words: of the 6,500 most frequent words the halves share, a random
  1,500 test and the other 5,000 train (words of rank 5,000-6,500 alone are too noisy in vectors
  from 1.2M tokens: supervised Procrustes P@1 4.2% on them). Unsupervised P@1 beside supervised
  Procrustes (no refinement and MUSE's 5 refinements) on the 5,000 training pairs; MUSE's
  adversarial start too.
* ``pairs``: en-fr, en-es, en-nl vectors trained the same way on each language's running text
  (``--max-tokens``; see ``benchmarks/align_methods.py``), VecMap's own
  ``map_embeddings.py --unsupervised`` (a checkout given with ``--vecmap DIR``, never part of this
  project; without it that side is skipped and the JSON says so) and ours on the same files, the
  same ``--cutoff`` and ``--interval`` (``--vocabulary_cutoff``/``--stochastic_interval``), each in
  its own process at one thread, alternating which goes first; CPU seconds from ``wait4``, peak
  RSS from each process's own VmHWM; both mapped spaces (the files each wrote) scored by one
  evaluator, MUSE's protocol (CSLS and nn P@1 on the ``5000-6500`` dictionary). Our verdict
  (restarts) runs in a third process, timed apart.

* ``muse`` (with ``--muse DIR``, a checkout of github.com/facebookresearch/MUSE): MUSE's own
  ``unsupervised.py`` (``--cuda False``, run as it is but for two shims for today's Python and torch,
  see ``_MUSE``) beside ours (``muse_adversarial``) on ``--muse-on`` (the halves and/or pairs), the
  same reduced schedule on both sides (``--muse-epochs`` x ``--muse-epoch-size`` words, a
  discriminator of 2 x ``--muse-hid-dim``; ``--dis_most_frequent`` the smaller vocabulary, 5
  refinements), each in its own process at one thread, alternating which goes first; both exported
  spaces scored by one evaluator, and MUSE's own log (its criteria, its P@1) kept beside.

* ``wasserstein`` (with ``--fasttext DIR``, a checkout of github.com/facebookresearch/fastText):
  its ``alignment/unsup_align.py`` beside ours (``wasserstein_procrustes``) on ``--wp-on``, the same
  schedule (``--wp-epochs``, ``--wp-iterations``, ``--wp-nmax``), the same way (own processes, one
  thread, alternating, one evaluator), and fastText's own printed P@1 kept beside.

VecMap's default schedule (``--stochastic_interval 50``: at least 255 iterations, ~22 s each at
20,000 words) takes hours of one core; the defaults here (8,000 words, interval 3) shorten it for
both sides alike, and our verdict's restarts self-learn over ``--restart-cutoff`` (4,000) words.
Vectors are cached in ``bench_out/align_unsupervised/`` (git-ignored). Prints one JSON object and
saves it under ``benchmarks/results/<date>/align_unsupervised.json``; asserts nothing.

    POLYGLOT_GROC_DATA=../shared/data nice -n 10 python benchmarks/align_unsupervised.py --vecmap DIR --threads 1
    POLYGLOT_GROC_DATA=../shared/data nice -n 10 python benchmarks/align_unsupervised.py --parts muse --muse DIR \\
        --muse-on halves,en-fr,en-nl --muse-epochs 3 --muse-epoch-size 250000 --threads 1
    python benchmarks/align_unsupervised.py --parts synthetic --syn-n 1000 --syn-dim 32 --no-save   # smoke, ~1 min
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import BadInput, add_output_args, emit, peak_rss_mib, run_measured, script_main, shared_data  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench_out" / "align_unsupervised"
PAIRS = ("en-fr", "en-es", "en-nl")
PARTS = ("synthetic", "halves", "pairs", "muse", "wasserstein")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS")

#: A reference script run as it is (``python -c _RUN SCRIPT ARGS...`` in its directory: runpy, so that its
#: own imports resolve there), then this process's peak RSS on stderr. VecMap's map_embeddings.py and
#: fastText's alignment/unsup_align.py run through it unchanged.
_RUN = r"""
import runpy, sys
sys.argv = sys.argv[1:]
sys.path.insert(0, ".")
runpy.run_path(sys.argv[0], run_name="__main__")
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print("VMHWM_KB", line.split()[1], file=sys.stderr)
"""
_VECMAP = _FASTTEXT = _RUN

#: MUSE's unsupervised.py through :data:`_RUN` on today's Python and torch. Two shims, nothing of MUSE
#: changed: ``inspect.getargspec`` (gone since Python 3.11; MUSE reads an optimizer's argument names with
#: it) is ``getfullargspec``, whose first field is the same list; and torch.load's weights-only unpickler
#: (the default since torch 2.6) is allowed the numpy array types, because MUSE saves its best map as a
#: numpy array and reloads the file it wrote.
_MUSE = r"""
import inspect
import numpy as np, torch
if not hasattr(inspect, "getargspec"):
    inspect.getargspec = inspect.getfullargspec
torch.serialization.add_safe_globals([np._core.multiarray._reconstruct, np.ndarray, np.dtype,
                                      type(np.dtype("float32"))])
""" + _RUN
#: MUSE's model-selection criterion, the key of its log lines.
_MUSE_CRITERION = "mean_cosine-csls_knn_10-S2T-10000"


# --------------------------------------------------------------------------------------------
# configs, shared by the parent and the worker processes
# --------------------------------------------------------------------------------------------


def _unsup_config(cutoff: int | None, interval: int, unsup_vocab: int | None) -> Any:
    from eval.unsup import SelfLearningConfig, UnsupervisedConfig

    return UnsupervisedConfig(unsupervised_vocab=unsup_vocab,
                              self_learning=SelfLearningConfig(vocabulary_cutoff=cutoff, stochastic_interval=interval))


def _muse_config(args: argparse.Namespace, most_frequent: int | None = None) -> Any:
    from eval.unsup import AdversarialConfig

    return AdversarialConfig.reduced(n_epochs=args.muse_epochs, epoch_size=args.muse_epoch_size,
                                     dis_hid_dim=args.muse_hid_dim, dis_most_frequent=most_frequent)


def _limit_threads(threads: int, *, torch: bool = True) -> None:
    """BLAS/OpenMP pools (and torch's, where MUSE runs: the workers never import torch, ~180 MiB)."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)
    if torch:
        import torch as torch_module

        torch_module.set_num_threads(threads)


def _p_at_1(mapped: np.ndarray, target: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    from eval.align import translation_precision

    out: dict[str, float] = {}
    for method in ("csls", "nn"):
        res = translation_precision(mapped, target, gold, method=method, ks=(1,))  # type: ignore[arg-type]
        out[f"{method}_p@1"] = round(float(res["precision_at_1"]), 2)  # type: ignore[arg-type]
    out["queries"] = int(res["n_queries"])  # type: ignore[call-overload]
    return out


def _verdict_config(restarts: int, restart_cutoff: int | None) -> Any:
    from eval.unsup import VerdictConfig

    return VerdictConfig(restarts=restarts, restart_cutoff=restart_cutoff)


def _logging() -> None:
    """Progress on stderr: each self-learning iteration and epoch (the JSON goes to stdout)."""
    import logging

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("eval.unsup").setLevel(logging.INFO)


def _fit_summary(fit: Any, seconds: float) -> dict[str, Any]:
    res = fit.result
    return {"criterion": round(res.criterion, 5), "iterations": len(res.history), "seconds": round(seconds, 1),
            "verdict": fit.verdict.status, "verdict_reason": fit.verdict.reason,
            "restart_agreement": [round(a, 4) for a in fit.verdict.evidence["restart_agreement"]],
            "mutual_agreement": round(fit.verdict.evidence["mutual_agreement"], 4),
            "restart_criteria": [round(c, 5) for c in fit.verdict.evidence["restart_criteria"]]}


# --------------------------------------------------------------------------------------------
# (a) synthetic
# --------------------------------------------------------------------------------------------


def _clustered(seed: int, n: int, d: int, clusters: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((clusters, d)) * np.linspace(2.0, 0.5, d)
    return (centers[rng.integers(0, clusters, n)] + 0.6 * rng.standard_normal((n, d))).astype(np.float32)


def _shuffled_copy(x: np.ndarray, noise: float, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``x`` rotated, rows moved by ~3% of the vocabulary in rank, plus noise; and the gold pairs."""
    rng = np.random.default_rng(seed)
    n, d = x.shape
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    order = np.argsort(np.arange(n) + 0.03 * n * rng.standard_normal(n), kind="stable")
    return (x[order] @ q + noise * rng.standard_normal((n, d))).astype(np.float32), np.stack([order, np.arange(n)], 1)


def _synthetic(args: argparse.Namespace) -> dict[str, Any]:
    from eval.unsup import fit_unsupervised, muse_adversarial

    n, d = args.syn_n, args.syn_dim
    cfg = _unsup_config(None, args.interval, None)
    x = _clustered(0, n, d)
    out: dict[str, Any] = {"n": n, "dim": d, "clusters": 40, "interval": args.interval}
    for noise in args.syn_noise:
        z, gold = _shuffled_copy(x, noise)
        started = time.perf_counter()
        fit = fit_unsupervised(x, z, config=cfg, seed=0)
        row = _fit_summary(fit, time.perf_counter() - started)
        row.update(_p_at_1(fit.result.map_source(x), fit.result.prepare_target(z), gold))
        out[f"related_noise_{noise}"] = row
        print("synthetic", noise, row, file=sys.stderr, flush=True)
    z, gold = _shuffled_copy(x, args.syn_noise[0])
    if args.muse_epochs > 0:
        started = time.perf_counter()
        adv = muse_adversarial(x, z, _muse_config(args), seed=0)
        out["muse_adversarial"] = {"noise": args.syn_noise[0], "criterion": round(adv.criterion, 5),
                                   "seconds": round(time.perf_counter() - started, 1),
                                   "epoch_criteria": [round(h["criterion"], 5) for h in adv.history],
                                   **_p_at_1(adv.map_source(x), adv.prepare_target(z), gold)}
        print("synthetic muse", out["muse_adversarial"], file=sys.stderr, flush=True)
    rng = np.random.default_rng(9)
    unrelated = {"gaussian": (rng.standard_normal((n, d)).astype(np.float32),
                              rng.standard_normal((n, d)).astype(np.float32)),
                 "clustered": (x, _clustered(5, n, d))}
    for name, (a, b) in unrelated.items():
        started = time.perf_counter()
        out[f"unrelated_{name}"] = _fit_summary(fit_unsupervised(a, b, config=cfg, seed=0),
                                                time.perf_counter() - started)
        print("synthetic unrelated", name, out[f"unrelated_{name}"], file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------------------------
# vectors
# --------------------------------------------------------------------------------------------


def _train(sentences: list[list[str]], path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """word2vec skip-gram vectors of ``sentences`` at ``path`` (cached); their figures."""
    from polyglot_groc.training.pretrain import pretrain_vectors

    tokens = sum(map(len, sentences))
    info: dict[str, Any] = {"file": path.name, "sentences": len(sentences), "tokens": tokens}
    if not path.exists():
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=path.parent) as tmp:
            text = Path(tmp) / "text.txt"
            text.write_text("\n".join(" ".join(s) for s in sentences) + "\n", encoding="utf-8")
            pretrain_vectors([text], path, algorithm="word2vec", dim=args.dim, epochs=args.epochs, min_count=3,
                             seed=0, threads=1)
        info["train_seconds"] = round(time.perf_counter() - started, 1)
    with open(path, encoding="utf-8") as f:
        info["words"] = int(f.readline().split()[0])
    return info


def _sentences(data: Path, lang: str, max_tokens: int) -> list[list[str]]:
    from benchmarks.align_methods import sentences

    return sentences(data, lang, max_tokens)


# --------------------------------------------------------------------------------------------
# (b) English against English
# --------------------------------------------------------------------------------------------


def _halves_split(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """The two halves' vectors (trained once, cached), their files and words, and the gold: of the
    most frequent words both halves know, ``test_pairs`` drawn at random and the rest train."""
    from eval.align import identical_pairs
    from eval.vectors import read_vec

    text = _sentences(data, "en", args.halves_tokens)
    info = {}
    paths = []
    for half in (0, 1):
        path = CACHE / f"en-half{half}.d{args.dim}.t{args.halves_tokens}.e{args.epochs}.vec"
        info[f"half{half}"] = _train(text[half::2], path, args)
        paths.append(path)
    (a_words, a), (b_words, b) = read_vec(paths[0]), read_vec(paths[1])
    common = identical_pairs(a_words, b_words)  # (n, 2) sorted by the first half's frequency rank
    # Test and training pairs drawn from the same most frequent common words, disjoint.
    drawn = np.random.default_rng(0).permutation(min(common.shape[0], args.train_pairs + args.test_pairs))
    return {"info": info, "paths": paths, "words": (a_words, b_words), "vectors": (a, b),
            "common": common, "train": common[np.sort(drawn[args.test_pairs :])],
            "test": common[np.sort(drawn[: args.test_pairs])]}


def _halves(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    from eval.methods import ProcrustesConfig, fit_mapping
    from eval.unsup import fit_unsupervised, muse_adversarial

    split = _halves_split(args, data)
    info, common, train, test = split["info"], split["common"], split["train"], split["test"]
    a, b = split["vectors"]
    out: dict[str, Any] = {"vectors": info, "common_words": int(common.shape[0]), "train_pairs": int(train.shape[0]),
                           "test_pairs": int(test.shape[0]), "cutoff": args.cutoff, "interval": args.interval,
                           "restart_cutoff": args.restart_cutoff}
    started = time.perf_counter()
    fit = fit_unsupervised(a, b, config=_unsup_config(args.cutoff, args.interval, args.unsup_vocab), seed=0,
                           verdict=_verdict_config(max(1, args.restarts), args.restart_cutoff))
    out["vecmap_unsupervised"] = {**_fit_summary(fit, time.perf_counter() - started),
                                  **_p_at_1(fit.result.map_source(a), fit.result.prepare_target(b), test)}
    print("halves unsupervised", out["vecmap_unsupervised"], file=sys.stderr, flush=True)
    for refine in (0, 5):
        started = time.perf_counter()
        sup = fit_mapping(a, b, train, method="procrustes", config=ProcrustesConfig(refine=refine))
        out[f"procrustes_refine{refine}"] = {"seconds": round(time.perf_counter() - started, 1),
                                             **_p_at_1(sup.map_source(a), sup.prepare_target(b), test)}
    if args.muse_epochs > 0:
        started = time.perf_counter()
        adv = muse_adversarial(a, b, _muse_config(args), seed=0)
        out["muse_adversarial"] = {"criterion": round(adv.criterion, 5),
                                   "seconds": round(time.perf_counter() - started, 1),
                                   "epoch_criteria": [round(h["criterion"], 5) for h in adv.history],
                                   **_p_at_1(adv.map_source(a), adv.prepare_target(b), test)}
    print("halves", {k: v for k, v in out.items() if k != "vecmap_unsupervised"}, file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------------------------
# (c) real pairs beside VecMap's own code
# --------------------------------------------------------------------------------------------


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` to its end: CPU and wall seconds, its own peak RSS (the line it prints), output."""
    run = run_measured(cmd, cwd, env)
    stderr = run.pop("stderr")
    peak = [line.split()[1] for line in stderr.splitlines() if line.startswith("VMHWM_KB")]
    return {**run, "peak_rss_mib": round(int(peak[-1]) / 1024, 1) if peak else None,
            "iterations": sum(line.startswith("ITERATION") for line in stderr.splitlines())}


def _worker(argv: list[str]) -> None:
    """``--worker ours|verdict JSON``: our side of one pair in its own process (see :func:`_pairs`)."""
    from eval.unsup import MapResult, fit_unsupervised, vecmap_unsupervised
    from eval.vectors import read_vec, write_vec

    kind, spec = argv[0], json.loads(argv[1])
    _logging()
    _limit_threads(spec["threads"], torch=kind == "muse")
    src_words, x = read_vec(spec["src"])
    tgt_words, z = read_vec(spec["tgt"])
    if kind == "muse":
        _worker_muse(spec, src_words, x, tgt_words, z)
        return
    if kind == "wasserstein":
        _worker_wasserstein(spec, src_words, x, tgt_words, z)
        return
    cfg = _unsup_config(spec["cutoff"], spec["interval"], spec["unsup_vocab"])
    seed_pairs = None
    if spec.get("start") == "identical":  # VecMap's --identical: every word both vocabularies spell alike
        from eval.align import identical_pairs
        from eval.unsup import vecmap_self_learning

        seed_pairs = identical_pairs(src_words, tgt_words)
    if kind == "ours":
        res = (vecmap_unsupervised(x, z, cfg, seed=0) if seed_pairs is None else
               vecmap_self_learning(x, z, seed_pairs, cfg.self_learning, seed=0, method="vecmap-identical"))
        write_vec(spec["out_src"], src_words, res.map_source(x))
        write_vec(spec["out_tgt"], tgt_words, res.prepare_target(z))
        res.save(spec["result"])
        report: dict[str, Any] = {"criterion": res.criterion, "iterations": len(res.history),
                                  "seconds": res.seconds}
    else:
        main = MapResult.load(spec["result"])
        if seed_pairs is None:
            fit = fit_unsupervised(x, z, config=cfg, seed=0, main=main,
                                   verdict=_verdict_config(spec["restarts"], spec["restart_cutoff"]))
        else:
            fit = fit_unsupervised(x, z, method="vecmap-self-learning", config=cfg.self_learning, seed=0,
                                   seed_pairs=seed_pairs, main=main,
                                   verdict=_verdict_config(spec["restarts"], spec["restart_cutoff"]))
        report = fit.verdict.to_dict()
        report["restart_iterations"] = [len(r.history) for r in fit.restarts]
    print(json.dumps(report, default=float))
    print("VMHWM_KB", int(peak_rss_mib() * 1024), file=sys.stderr)


def _report(spec: dict[str, Any], res: Any, src_words: list[str], x: np.ndarray, tgt_words: list[str],
            z: np.ndarray) -> None:
    """A side-by-side worker's output: both mapped spaces written where ``spec`` says, the criteria and
    phase seconds on stdout, this process's peak RSS on stderr."""
    from eval.vectors import write_vec

    write_vec(spec["out_src"], src_words, res.map_source(x))
    write_vec(spec["out_tgt"], tgt_words, res.prepare_target(z))
    print(json.dumps({"criterion": res.criterion, "criteria": [h["criterion"] for h in res.history],
                      "seconds": res.seconds}, default=float))
    print("VMHWM_KB", int(peak_rss_mib() * 1024), file=sys.stderr)


def _worker_muse(spec: dict[str, Any], src_words: list[str], x: np.ndarray, tgt_words: list[str],
                 z: np.ndarray) -> None:
    """``--worker muse``: our ``muse_adversarial`` on one pair, MUSE's schedule as ``spec`` gives it;
    the mapped spaces written where MUSE's export would be, the criteria on stdout."""
    from eval.unsup import AdversarialConfig, muse_adversarial

    cfg = AdversarialConfig.reduced(n_epochs=spec["n_epochs"], epoch_size=spec["epoch_size"],
                                    dis_hid_dim=spec["dis_hid_dim"], dis_most_frequent=spec["words"])
    res = muse_adversarial(x, z, cfg, seed=spec["seed"])
    _report(spec, res, src_words, x, tgt_words, z)


def _worker_wasserstein(spec: dict[str, Any], src_words: list[str], x: np.ndarray, tgt_words: list[str],
                        z: np.ndarray) -> None:
    """``--worker wasserstein``: our ``wasserstein_procrustes`` on one pair, fastText's schedule as ``spec``
    gives it, the first 200,000 words as fastText reads; the mapped spaces written, the criteria on stdout."""
    from eval.unsup import WassersteinConfig, wasserstein_procrustes

    cfg = WassersteinConfig(n_epochs=spec["nepoch"], n_iterations=spec["niter"], nmax=spec["words"],
                            batch_size=spec["bsz"], lr=spec["lr"], reg=spec["reg"])
    x, z, src_words, tgt_words = x[:200_000], z[:200_000], src_words[:200_000], tgt_words[:200_000]
    res = wasserstein_procrustes(x, z, cfg, seed=spec["seed"])
    _report(spec, res, src_words, x, tgt_words, z)


def _evaluate(src_file: Path, tgt_file: Path, test: Path) -> dict[str, Any]:
    """MUSE's protocol on two mapped files: test pairs with both words known, CSLS and nn P@1."""
    from eval.align import pairs_to_indices
    from eval.vectors import read_vec
    from langpairs.dictionaries import read_dictionary

    src_words, src = read_vec(src_file)
    tgt_words, tgt = read_vec(tgt_file)
    gold, stats = pairs_to_indices(read_dictionary(test), src_words, tgt_words)
    return {**_p_at_1(src, tgt, gold), "pairs_found": stats["found"]}


def _pairs(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    env = {**os.environ, **{v: str(args.threads) for v in THREAD_VARS}, "PYTHONPATH": str(ROOT)}
    vectors: dict[str, Any] = {}
    files: dict[str, Path] = {}
    for lang in sorted({lang for pair in args.pairs for lang in pair.split("-")}):
        files[lang] = CACHE / f"{lang}.d{args.dim}.t{args.max_tokens}.e{args.epochs}.vec"
        vectors[lang] = _train(_sentences(data, lang, args.max_tokens), files[lang], args)
    out: dict[str, Any] = {"vectors": vectors, "start": args.start, "cutoff": args.cutoff, "interval": args.interval,
                           "restart_cutoff": args.restart_cutoff,
                           "unsupervised_vocab": args.unsup_vocab, "threads": args.threads, "rows": {}}
    if args.vecmap is None:
        out["vecmap_reference"] = "not run: pass --vecmap DIR, a checkout of github.com/artetxem/vecmap"
    dicts = data / "eval" / "dictionaries"
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        work = Path(tmp)
        for index, pair in enumerate(args.pairs):
            s, t = pair.split("-")
            test = dicts / f"{pair}.5000-6500.txt"
            row: dict[str, Any] = {}
            spec = {"src": str(files[s]), "tgt": str(files[t]), "start": args.start,
                    "cutoff": args.cutoff, "interval": args.interval,
                    "unsup_vocab": args.unsup_vocab, "threads": args.threads, "restarts": args.restarts,
                    "restart_cutoff": args.restart_cutoff,
                    "out_src": str(work / "o.src.vec"), "out_tgt": str(work / "o.tgt.vec"),
                    "result": str(work / "ours.npz")}
            order = ["vecmap", "ours"] if index % 2 == 0 else ["ours", "vecmap"]
            for who in order:
                if who == "vecmap" and args.vecmap is not None:
                    cmd = [sys.executable, "-c", _VECMAP, "map_embeddings.py", f"--{args.start}", spec["src"],
                           spec["tgt"], str(work / "v.src.vec"), str(work / "v.tgt.vec"), "--vocabulary_cutoff",
                           str(args.cutoff), "--stochastic_interval", str(args.interval), "--seed", "0", "-v"]
                    if args.unsup_vocab is not None and args.start == "unsupervised":
                        cmd += ["--unsupervised_vocab", str(args.unsup_vocab)]
                    run = _run(cmd, args.vecmap, env)  # "iterations": VecMap's -v lines
                    run.pop("stdout")
                    row["vecmap"] = {**run, **_evaluate(work / "v.src.vec", work / "v.tgt.vec", test)}
                elif who == "ours":
                    run = _run([sys.executable, str(Path(__file__).resolve()), "--worker", "ours", json.dumps(spec)],
                               ROOT, env)
                    report = json.loads(run.pop("stdout"))
                    run.pop("iterations")
                    row["ours"] = {**run, "criterion": round(report["criterion"], 5),
                                   "iterations": report["iterations"],
                                   "phase_seconds": {k: round(v, 2) for k, v in report["seconds"].items()},
                                   **_evaluate(work / "o.src.vec", work / "o.tgt.vec", test)}
            if args.restarts > 0:
                run = _run([sys.executable, str(Path(__file__).resolve()), "--worker", "verdict", json.dumps(spec)],
                           ROOT, env)
                row["ours_verdict"] = {**{k: v for k, v in run.items() if k not in ("stdout", "iterations")},
                                       **json.loads(run["stdout"])}
            if "vecmap" in row:
                row["ratio_ours_vecmap"] = {m: round(row["ours"][m] / row["vecmap"][m], 3)
                                            for m in ("cpu_s", "wall_s", "peak_rss_mib") if row["vecmap"][m]}
                row["csls_p@1_ours_minus_vecmap"] = round(row["ours"]["csls_p@1"] - row["vecmap"]["csls_p@1"], 2)
            out["rows"][pair] = row
            print(pair, json.dumps(row), file=sys.stderr, flush=True)
    return out


# --------------------------------------------------------------------------------------------
# (d), (e) MUSE's adversarial start and Wasserstein-Procrustes beside their references' own code
# --------------------------------------------------------------------------------------------


def _muse_log(exp: Path) -> dict[str, Any]:
    """MUSE's own account of its run (``train.log``'s ``__log__`` lines): every epoch's and
    refinement's criterion, and its own P@1 at the map it keeps (the best criterion, its rule)."""
    entries = [json.loads(line.split("__log__:", 1)[1]) for line in
               (exp / "train.log").read_text(encoding="utf-8").splitlines() if "__log__:" in line]
    best = max(entries, key=lambda e: e[_MUSE_CRITERION])
    return {"criterion": round(best[_MUSE_CRITERION], 5),
            "criteria": [round(e[_MUSE_CRITERION], 5) for e in entries],
            "reported_csls_p@1": round(best["precision_at_1-csls_knn_10"], 2),
            "reported_nn_p@1": round(best["precision_at_1-nn"], 2)}


#: One target of a side-by-side part: source and target files, the test dictionary, the two language names.
Target = tuple[Path, Path, Path, str, str]


def _targets(args: argparse.Namespace, data: Path, work: Path, names: list[str]) -> dict[str, Target]:
    """Each target (``halves`` or a pair): source and target files, the test dictionary, language names."""
    targets: dict[str, Target] = {}
    for name in names:
        if name == "halves":  # gold = the halves' test words, written as a dictionary of identical pairs
            split = _halves_split(args, data)
            a_words, _ = split["words"]
            test = work / "halves.test.txt"
            test.write_text("".join(f"{a_words[i]} {a_words[i]}\n" for i in split["test"][:, 0]), encoding="utf-8")
            targets[name] = (split["paths"][0], split["paths"][1], test, "half0", "half1")
        else:
            s, t = name.split("-")
            files = {}
            for lang in (s, t):
                files[lang] = CACHE / f"{lang}.d{args.dim}.t{args.max_tokens}.e{args.epochs}.vec"
                _train(_sentences(data, lang, args.max_tokens), files[lang], args)
            targets[name] = (files[s], files[t], data / "eval" / "dictionaries" / f"{name}.5000-6500.txt", s, t)
    return targets


#: A reference's side of one run: (run name, target, the words limit, seed, work dir, env) -> its row.
Reference = Callable[[str, Target, int, int, Path, dict[str, str]], dict[str, Any]]


def _side_by_side(args: argparse.Namespace, data: Path, *, names: list[str], reference: str, run_reference: Reference,
                  worker: str, schedule: dict[str, Any], limit: tuple[str, int]) -> dict[str, Any]:
    """A reference's own code and ours (``--worker WORKER``) on each target, each in its own process at
    ``--threads``, the same ``schedule``, alternating which goes first; both written spaces scored by
    :func:`_evaluate`; the ratios ours/reference of CPU, wall and peak memory; every ``--seeds`` seed on
    both sides (rows ``NAME``, or ``NAME seed S`` for other seeds than 0 alone). ``limit``: the name and
    default of the words both sides draw from, clipped to the smaller vocabulary (the references assert
    or index past it)."""
    env = {**os.environ, **{v: str(args.threads) for v in THREAD_VARS}, "PYTHONPATH": str(ROOT)}
    out: dict[str, Any] = {"schedule": schedule, "threads": args.threads, "rows": {}}
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        work = Path(tmp)
        runs = [(name, target, seed) for name, target in _targets(args, data, work, names).items()
                for seed in args.seeds]
        for index, (name, target, seed) in enumerate(runs):
            if args.seeds != [0]:
                name = f"{name} seed {seed}"
            src, tgt, test = target[:3]
            sizes = [int(path.open(encoding="utf-8").readline().split()[0]) for path in (src, tgt)]
            words = min(limit[1], *sizes)
            row: dict[str, Any] = {"source": src.name, "target": tgt.name, "test": test.name, "words": sizes,
                                   limit[0]: words}
            for who in ([reference, "ours"] if index % 2 == 0 else ["ours", reference]):
                if who == reference:
                    row[reference] = run_reference(name, target, words, seed, work, env)
                    continue
                spec = {"src": str(src), "tgt": str(tgt), "threads": args.threads, "words": words, "seed": seed,
                        **schedule,
                        "out_src": str(work / "o.src.vec"), "out_tgt": str(work / "o.tgt.vec")}
                run = _run([sys.executable, str(Path(__file__).resolve()), "--worker", worker, json.dumps(spec)],
                           ROOT, env)
                report = json.loads(run.pop("stdout"))
                run.pop("iterations")
                row["ours"] = {**run, "criterion": round(report["criterion"], 5),
                               "criteria": [round(c, 5) for c in report["criteria"]],
                               "phase_seconds": {k: round(v, 2) for k, v in report["seconds"].items()},
                               **_evaluate(work / "o.src.vec", work / "o.tgt.vec", test)}
            row[f"ratio_ours_{reference}"] = {m: round(row["ours"][m] / row[reference][m], 3)
                                              for m in ("cpu_s", "wall_s", "peak_rss_mib") if row[reference][m]}
            row[f"csls_p@1_ours_minus_{reference}"] = round(row["ours"]["csls_p@1"] - row[reference]["csls_p@1"], 2)
            out["rows"][name] = row
            print(worker, name, json.dumps(row), file=sys.stderr, flush=True)
    return out


def _muse(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """MUSE's ``unsupervised.py`` (the checkout ``--muse``) beside ours (``muse_adversarial``). MUSE
    evaluates P@1 (nn, CSLS), both criteria and its discriminator after every epoch and refinement, as it
    always does; ours computes the criterion alone: that work is in MUSE's CPU seconds."""
    from eval.methods.muse_adversarial import MUSE_MOST_FREQUENT

    def run_muse(name: str, target: Target, words: int, seed: int, work: Path, env: dict[str, str]) -> dict[str, Any]:
        src, tgt, test, s, t = target
        name = name.replace(" ", "-")  # MUSE's experiment directory
        cmd = [sys.executable, "-c", _MUSE, "unsupervised.py", "--cuda", "False", "--seed", str(seed),
               "--src_lang", s, "--tgt_lang", t, "--src_emb", str(src), "--tgt_emb", str(tgt),
               "--emb_dim", str(args.dim), "--dis_most_frequent", str(words),
               "--n_epochs", str(args.muse_epochs), "--epoch_size", str(args.muse_epoch_size),
               "--dis_hid_dim", str(args.muse_hid_dim), "--dico_eval", str(test),
               "--exp_path", str(work), "--exp_name", "muse", "--exp_id", name, "--export", "txt"]
        run = _run(cmd, args.muse, env)
        for key in ("stdout", "iterations"):
            run.pop(key)
        exp = work / "muse" / name
        return {**run, **_muse_log(exp), **_evaluate(exp / f"vectors-{s}.txt", exp / f"vectors-{t}.txt", test)}

    schedule = {"n_epochs": args.muse_epochs, "epoch_size": args.muse_epoch_size, "dis_hid_dim": args.muse_hid_dim,
                "n_refinement": 5, "dico_max_rank": 15000}
    return _side_by_side(args, data, names=args.muse_on, reference="muse", run_reference=run_muse, worker="muse",
                         schedule=schedule, limit=("dis_most_frequent", MUSE_MOST_FREQUENT))


def _wasserstein(args: argparse.Namespace, data: Path) -> dict[str, Any]:
    """fastText's ``alignment/unsup_align.py`` (the checkout ``--fasttext``) beside ours
    (``wasserstein_procrustes``). fastText also scores its map on the test dictionary (nn P@1) and prints
    its transport objective after every epoch (a 5,000-word Sinkhorn solve): that work is in its CPU
    seconds; ours computes MUSE's criterion after every epoch instead."""

    def run_fasttext(name: str, target: Target, words: int, seed: int, work: Path,
                     env: dict[str, str]) -> dict[str, Any]:
        src, tgt, test = target[:3]
        cmd = [sys.executable, "-c", _FASTTEXT, "unsup_align.py", "--model_src", str(src), "--model_tgt", str(tgt),
               "--lexicon", str(test), "--output_src", str(work / "f.src.vec"), "--output_tgt",
               str(work / "f.tgt.vec"), "--nepoch", str(args.wp_epochs), "--niter", str(args.wp_iterations),
               "--nmax", str(words), "--seed", str(seed)]
        run = _run(cmd, args.fasttext / "alignment", env)
        printed = [line for line in run.pop("stdout").splitlines() if line.startswith("Precision@1")]
        run.pop("iterations")
        reported = round(100 * float(printed[-1].split(":")[1]), 2) if printed else None  # a fraction
        return {**run, "reported_nn_p@1": reported, **_evaluate(work / "f.src.vec", work / "f.tgt.vec", test)}

    schedule = {"nepoch": args.wp_epochs, "niter": args.wp_iterations, "nmax": args.wp_nmax, "bsz": 500,
                "lr": 500.0, "reg": 0.05}
    return _side_by_side(args, data, names=args.wp_on, reference="fasttext", run_reference=run_fasttext,
                         worker="wasserstein", schedule=schedule, limit=("nmax", args.wp_nmax))


def _target_names(flag: str, value: str) -> list[str]:
    """The targets a side-by-side part runs on (``--muse-on``, ``--wp-on``): ``halves`` and/or pairs."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    bad = [n for n in names if n != "halves" and n not in PAIRS]
    if bad or not names:
        raise BadInput(f"{flag} {','.join(bad) or 'empty'}: use halves and/or {', '.join(PAIRS)}")
    return names


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _worker(sys.argv[2:])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="synthetic,halves,pairs", help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument("--vecmap", type=Path, default=None, help="a checkout of github.com/artetxem/vecmap")
    ap.add_argument("--muse", type=Path, default=None, help="part muse: a checkout of github.com/facebookresearch/MUSE")
    ap.add_argument("--muse-on", default="halves,en-fr", help="part muse: 'halves' and/or language pairs")
    ap.add_argument("--muse-hid-dim", type=int, default=512, help="part muse: --dis_hid_dim, both sides")
    ap.add_argument("--fasttext", type=Path, default=None,
                    help="part wasserstein: a checkout of github.com/facebookresearch/fastText")
    ap.add_argument("--wp-on", default="halves,en-fr", help="part wasserstein: 'halves' and/or language pairs")
    ap.add_argument("--seeds", default="0", help="parts muse and wasserstein: comma-separated seeds, each run on "
                                                 "both sides")
    ap.add_argument("--wp-epochs", type=int, default=5, help="part wasserstein: --nepoch, both sides")
    ap.add_argument("--wp-iterations", type=int, default=5000, help="part wasserstein: --niter, both sides")
    ap.add_argument("--wp-nmax", type=int, default=20000, help="part wasserstein: --nmax (clipped), both sides")
    ap.add_argument("--pairs", default=",".join(PAIRS))
    ap.add_argument("--start", choices=("unsupervised", "identical"), default="unsupervised",
                    help="pairs: VecMap's --unsupervised, or its --identical (self-learning from the words both "
                         "vocabularies spell alike), on both sides")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cutoff", type=int, default=8000, help="self-learning words per side, both sides")
    ap.add_argument("--restart-cutoff", type=int, default=4000, help="self-learning words of the verdict's restarts")
    ap.add_argument("--interval", type=int, default=3, help="--stochastic_interval, both sides (VecMap: 50)")
    ap.add_argument("--unsup-vocab", type=int, default=None, help="--unsupervised_vocab (default VecMap's 4000)")
    ap.add_argument("--restarts", type=int, default=2, help="restarts of our verdict (0: no verdict)")
    ap.add_argument("--dim", type=int, default=300)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=1_500_000, help="training tokens per language (pairs)")
    ap.add_argument("--halves-tokens", type=int, default=2_400_000, help="English tokens split into the two halves")
    ap.add_argument("--train-pairs", type=int, default=5000)
    ap.add_argument("--test-pairs", type=int, default=1500)
    ap.add_argument("--syn-n", type=int, default=2000)
    ap.add_argument("--syn-dim", type=int, default=64)
    ap.add_argument("--syn-noise", default="0.1,1.0", help="noise levels of the related synthetic copies")
    ap.add_argument("--muse-epochs", type=int, default=2, help="MUSE adversarial epochs (0: skip MUSE)")
    ap.add_argument("--muse-epoch-size", type=int, default=100_000, help="words per MUSE adversarial epoch")
    add_output_args(ap)
    args = ap.parse_args()
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    args.pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    if not parts or any(p not in PARTS for p in parts):
        raise BadInput(f"--parts {args.parts!r}: use a comma-separated subset of {', '.join(PARTS)}")
    if args.vecmap is not None:
        args.vecmap = args.vecmap.resolve()
        if not (args.vecmap / "map_embeddings.py").is_file():
            raise BadInput(f"--vecmap {args.vecmap}: no map_embeddings.py; pass a checkout of "
                           "github.com/artetxem/vecmap")
    if "muse" in parts:
        if args.muse is None or not (args.muse.resolve() / "unsupervised.py").is_file():
            raise BadInput(f"--muse {args.muse}: part muse needs a checkout of github.com/facebookresearch/MUSE "
                           "(its unsupervised.py)")
        args.muse = args.muse.resolve()
        if args.muse_epochs < 1:
            raise BadInput("--muse-epochs must be at least 1 for part muse")
        args.muse_on = _target_names("--muse-on", args.muse_on)
    try:
        args.seeds = [int(v) for v in args.seeds.split(",")]
    except ValueError as exc:
        raise BadInput(f"--seeds {args.seeds!r}: give comma-separated integers >= 0, e.g. 0,1,2") from exc
    if not args.seeds or min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds):
        raise BadInput(f"--seeds {args.seeds}: give distinct integers >= 0, e.g. 0,1,2")
    if "wasserstein" in parts:
        if args.fasttext is None or not (args.fasttext.resolve() / "alignment" / "unsup_align.py").is_file():
            raise BadInput(f"--fasttext {args.fasttext}: part wasserstein needs a checkout of "
                           "github.com/facebookresearch/fastText (its alignment/unsup_align.py)")
        args.fasttext = args.fasttext.resolve()
        args.wp_on = _target_names("--wp-on", args.wp_on)
    for name in ("threads", "cutoff", "restart_cutoff", "interval", "dim", "epochs", "syn_n", "syn_dim",
                 "muse_hid_dim", "wp_epochs", "wp_iterations", "wp_nmax"):
        if getattr(args, name) < 1:
            raise BadInput(f"--{name.replace('_', '-')} must be at least 1")
    try:
        args.syn_noise = [float(v) for v in args.syn_noise.split(",")]
    except ValueError as exc:
        raise BadInput(f"--syn-noise {args.syn_noise!r}: give comma-separated numbers, e.g. 0.1,1.0") from exc
    _limit_threads(args.threads)
    _logging()
    CACHE.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    result: dict[str, Any] = {"threads": args.threads, "machine": f"{os.cpu_count()} cores, shared",
                              "load_average_before": [round(v, 2) for v in os.getloadavg()],
                              "muse_schedule": {"n_epochs": args.muse_epochs, "epoch_size": args.muse_epoch_size,
                                                "dis_hid_dim": args.muse_hid_dim}}
    if "synthetic" in parts:
        result["synthetic"] = _synthetic(args)
    if {"halves", "pairs", "muse", "wasserstein"} & set(parts):
        data = shared_data()
        if "halves" in parts:
            result["halves"] = _halves(args, data)
        if "pairs" in parts:
            result["pairs"] = _pairs(args, data)
        if "muse" in parts:
            result["muse"] = _muse(args, data)
        if "wasserstein" in parts:
            result["wasserstein"] = _wasserstein(args, data)
    result["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    result["wall_seconds"] = round(time.perf_counter() - started, 1)
    emit(result, name=args.name, save=not args.no_save)


if __name__ == "__main__":
    script_main(main)
