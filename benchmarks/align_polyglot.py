"""Seed 004 Tables 5.4 / 5.5 (mini): crosslingual alignment and word similarity of polyglot models.

Given polyglot runs trained on the same language pair (GroC and lookup, optionally ELMo and
GroC+lex), for each model:

1. Export both languages' embeddings (``--side``, default OUTPUT, as Table 5.4 uses the polyglot
   models' output embeddings) over each language's vocabulary, most frequent first
   (:func:`polyglot_groc.analysis.export.vocabulary_vectors`: MUSE's lowercase first-occurrence rule
   unless ``--keep-case``, at most ``--max-vocab`` distinct words, as ``polyglot-groc align --run`` and
   ``similarity --run`` read a run). Only vocabulary words are exported, for every model alike, so GroC is
   not credited with words it could compose but lookup cannot embed.
2. Align source onto target with :func:`polyglot_groc.analysis.workflows.align`, the function behind
   ``polyglot-groc align`` (Procrustes on the MUSE train dictionary ``<src>-<tgt>.0-5000.txt``, then
   ``--refine`` CSLS refinement iterations, default 5; the thesis used 10; the iteration is picked by
   the unsupervised mean-CSLS criterion, never the evaluation dictionary), on the exported vectors.
3. Word-translation P@1/5/10 with ``nn`` and ``csls`` retrieval on ``<src>-<tgt>.5000-6500.txt``, with
   the dictionary's found / not-found / unique-source counts, beside the identical-string and
   character 3-gram baselines on the same scored words, each split into words whose gold includes
   the identical string and words whose gold does not (the same ``align`` call). ``table`` gathers
   them: one row per model / retrieval / baseline, ``same_evaluated_words`` (a digest of the
   scored words per model) and, per model, whether its CSLS P@k beats the character n-gram
   baseline on the non-identical words.
   A dictionary none of whose pairs is in the vocabularies is recorded (``error``), not fatal:
   the rest of the benchmark still runs.
4. Word similarity (Spearman rho, :func:`polyglot_groc.analysis.workflows.similarity`, the function
   behind ``polyglot-groc similarity --run``) on every file in ``eval/wordsim/<src>`` and
   ``eval/wordsim/<tgt>``: the in-vocabulary figure for every model (the fair comparison), and for
   compositional models (GroC on either side, ELMo on the input side) the all-pairs-composed figure
   beside it, where unseen words are composed from their characters.

Runs: ``--groc RUN --lookup RUN [--elmo RUN] [--groc-lex RUN]`` (at least one of them), or ``--work DIR`` of
``benchmarks/polyglot_table.py``, whose runs are ``<work>/runs/<kind>_<a>+<b>_<steps>steps``
(languages sorted); ``--steps N`` picks the step budget when several exist. That script trains
lookup and ELMo on two languages only with ``--baseline-polyglot``.

Prints ONE JSON object on stdout (progress and logs go to stderr); it asserts nothing. It also
states the thesis's finding (GroC >= lookup on P@5, Table 5.4, and on rho, Table 5.5) beside
what was measured here; no thesis figure is hard-coded.

    # train the en+es models (lookup/ELMo polyglot runs need --baseline-polyglot; it also trains the
    # es+it rel+tgt and mono runs, which this script does not use), then align:
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/polyglot_table.py --work bench_out/table52 \\
        --targets es --baseline-polyglot --kinds lookup,elmo,groc --memory-steps 0 --reuse
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/align_polyglot.py --work bench_out/table52 \\
        --src en --tgt es --refine 10
    # or name the runs yourself:
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/align_polyglot.py --src en --tgt es \\
        --groc RUN_G --lookup RUN_L [--elmo RUN_E] --refine 10
    # smoke test (seconds; tiny runs on tests/data/tiny, the sample dictionaries; the sample test
    # dictionary has no pair in the tiny vocabularies, which exercises the "not found" path):
    for k in groc lookup; do polyglot-groc train --langs en,fr --data tests/data/tiny --model $k \\
        --out /tmp/ap/runs/${k}_en+fr_2steps --max-steps 2 --threads 1 --overwrite --set model.d=16 \\
        --set model.prefix.hidden=24 --set 'model.surface.filters=[[1,8],[2,8],[3,16]]' \\
        --set train.batch_size=4 --set train.bptt=8 --set train.eval_batch_size=2; done
    mkdir -p /tmp/ap/wordsim/en
    printf 'cat dog 8.5\\ncat fish 4\\nriver garden 2\\napple fish 3.1\\nhouse garden 6\\nhorse dog 7\\n' \\
        > /tmp/ap/wordsim/en/EN_tiny.txt
    printf 'chat chien 8\\nchat poisson 4.2\\nrivière jardin 2.5\\npomme poisson 3\\ncheval chien 7.2\\n' \\
        > /tmp/ap/FR_tiny.txt
    python benchmarks/align_polyglot.py --work /tmp/ap --src en --tgt fr --threads 1 \\
        --train-dict examples/sample/dict.en-fr.txt --eval-dict examples/sample/dict.en-fr.test.txt \\
        --wordsim /tmp/ap/wordsim/en/EN_tiny.txt fr=/tmp/ap/FR_tiny.txt

Cost: loading and exporting is one char-CNN pass over each vocabulary (GroC, ELMo input); the
alignment is faiss k-NN over at most ``--dico-max-rank`` words per refinement iteration. With
1M-word training corpora (vocabularies of ~50-100k words) and d=128 expect a few minutes per
model on a few cores; ``--max-vocab`` bounds it. Memory is a few (vocabulary x d) float32
matrices per model.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import BadInput, add_output_args, emit, peak_rss_mib, script_main  # noqa: E402

log = logging.getLogger("align_polyglot")

DATA_ENV = "POLYGLOT_GROC_DATA"
KINDS = ("groc", "lookup", "elmo", "groc-lex")
KS = (1, 5, 10)
THESIS_CLAIM = (
    "Seed 004 finds GroC >= lookup on crosslingual alignment P@5 of the polyglot models' output "
    "embeddings (Table 5.4) and on monolingual word similarity Spearman rho (Table 5.5). This "
    "benchmark reports what it measures; 'groc_vs_lookup' compares them on the same dictionaries "
    "and files (check the found counts: a comparison on few pairs says little)."
)


def _round(x: float | None, nd: int = 4) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else round(float(x), nd)


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# -- inputs ------------------------------------------------------------------------------------------
def resolve_runs(args: argparse.Namespace) -> dict[str, Path]:
    """Model label -> run directory, from --groc/--lookup/... or polyglot_table.py's --work layout."""
    pair = "+".join(sorted({args.src, args.tgt}))
    runs: dict[str, Path] = {}
    for kind in KINDS:
        given = getattr(args, kind.replace("-", "_"))
        if given is not None:
            runs[kind] = given
            continue
        if args.work is None:
            continue
        root = args.work / "runs"
        if args.steps is not None:
            candidates = [root / f"{kind}_{pair}_{args.steps}steps"]
            candidates = [c for c in candidates if c.is_dir()]
        else:
            candidates = sorted(p for p in root.glob(f"{kind}_{pair}_*steps") if p.is_dir())
        if len(candidates) == 1:
            runs[kind] = candidates[0]
        elif len(candidates) > 1:
            raise BadInput(f"several {kind} runs on {pair} in {root}: "
                           f"{', '.join(c.name for c in candidates)}; pass --steps N or --{kind} RUN")
    if not runs:  # one model is enough to set beside the baselines; GroC vs lookup needs both
        where = f" (none found as {args.work}/runs/<kind>_{pair}_<steps>steps)" if args.work else ""
        raise BadInput(f"pass --groc and/or --lookup RUN, or --work DIR{where}")
    return runs


def wordsim_files(args: argparse.Namespace, root: Path | None) -> tuple[dict[str, list[Path]], list[str]]:
    """Language -> word-similarity files: --wordsim [LANG=]FILE... or eval/wordsim/<lang>/* of the shared data."""
    langs = (args.src, args.tgt)
    files: dict[str, list[Path]] = {lang: [] for lang in langs}
    notes: list[str] = []
    if args.wordsim is not None:
        for item in args.wordsim:
            lang, sep, name = item.partition("=")
            path = Path(name) if sep else Path(item)
            lang = lang if sep else path.parent.name
            if lang not in files:
                raise BadInput(f"--wordsim {item!r}: cannot tell its language; write {args.src}=FILE "
                               f"or {args.tgt}=FILE, or keep it in a folder named after the language")
            files[lang].append(path)
        return files, notes
    for lang in langs:
        folder = root / "eval" / "wordsim" / lang if root is not None else None
        found = sorted(p for p in folder.iterdir() if p.is_file()) if folder is not None and folder.is_dir() else []
        if not found:
            notes.append(f"no word-similarity files for {lang} (looked in {folder})")
        files[lang] = found
    return files, notes


# -- one model ---------------------------------------------------------------------------------------
def export_languages(bundle: Any, langs: Sequence[str], side: str, max_vocab: int | None,
                     lower: bool = True) -> tuple[dict[str, Any], dict[str, int]]:
    """Each language's vocabulary embeddings (most frequent first) on ``side``, read by MUSE's rule
    (lowercase, first occurrence wins, ``max_vocab`` distinct words) exactly as ``align --run``
    reads them; and per language how many casing duplicates the rule dropped."""
    from eval.vectors import first_occurrences
    from polyglot_groc.analysis.export import vocabulary_vectors, vocabulary_words

    exported, dropped = {}, {}
    for lang in langs:
        exported[lang] = vocabulary_vectors(bundle, lang, side, max_vocab, lower)
        kept, rows = first_occurrences(vocabulary_words(bundle, lang), lower, max_vocab)
        dropped[lang] = int(rows[-1]) + 1 - len(kept) if len(kept) else 0
    return exported, dropped


def unsupervised_config(args: argparse.Namespace) -> Any:
    """``--dictionary-mode unsupervised``: VecMap's recipe with the self-learning cutoff and stochastic
    interval given (its defaults, 20,000 words and 50, take hours of one core), the verdict's restarts
    self-learning over ``--restart-cutoff`` words."""
    from eval.methods.judging import VerdictConfig
    from eval.methods.vecmap_self_learning import SelfLearningConfig
    from eval.methods.vecmap_unsupervised import UnsupervisedConfig

    return UnsupervisedConfig(
        self_learning=SelfLearningConfig(vocabulary_cutoff=args.cutoff, stochastic_interval=args.interval),
        verdict=VerdictConfig(restart_cutoff=args.restart_cutoff))


def alignment(exported: dict[str, Any], args: argparse.Namespace, dropped: dict[str, int]) -> dict[str, Any]:
    """:func:`polyglot_groc.analysis.workflows.align` on the exported vocabularies (nothing written);
    a dictionary with no pair in the vocabularies is recorded (``error``), not fatal."""
    from groc_base.errors import InputError
    from polyglot_groc.analysis.workflows import align

    out: dict[str, Any] = {"case_duplicates_dropped": {args.src: dropped[args.src], args.tgt: dropped[args.tgt]}}
    options: dict[str, Any] = dict(
        src=exported[args.src], tgt=exported[args.tgt], src_lang=args.src, tgt_lang=args.tgt,
        max_vocab=args.max_vocab, keep_case=args.keep_case, lenient=args.lenient, eval_words=args.eval_words_set)
    if args.dictionary_mode == "unsupervised":
        # VecMap's --unsupervised through the same align call (no dictionary); its own normalisation.
        options.update(dictionary_mode="unsupervised", method_config=unsupervised_config(args),
                       random_seed=args.random_seed)
    else:
        options.update(train_dict=args.train_dict, refine=args.refine, normalize=args.normalize,
                       dico_build=args.dico_build, dico_max_rank=args.dico_max_rank)
    started = time.perf_counter()
    try:
        res = align(**options, eval_dict=args.eval_dict)
    except InputError as exc:  # no pair of a dictionary is in the vocabularies
        try:  # the evaluation dictionary's fault: keep the alignment, without P@k
            res = align(**options)
        except InputError:  # the train dictionary's: nothing to align on
            out.update({"precision": None, "error": str(exc)})
            return out
        out.update({"precision": None, "eval_dictionary": {"path": str(args.eval_dict), "error": str(exc)},
                    "error": "no pair of the evaluation dictionary is in the vocabularies; no P@k"})
    out["align_seconds"] = _round(time.perf_counter() - started, 2)
    result = res.to_dict()
    result["history"] = [{k: (_round(v, 5) if k == "criterion" else v) for k, v in h.items()}
                         for h in result["history"]]
    return {**result, **out}


def similarity(bundle: Any, exported: dict[str, Any], files: dict[str, list[Path]],
               args: argparse.Namespace) -> dict[str, Any]:
    """:func:`polyglot_groc.analysis.workflows.similarity` of each language's files, on the exported
    vocabulary (and, for a compositional side, every pair composed)."""
    from groc_base.errors import InputError
    from groc_base.fileio import unique_labels
    from polyglot_groc.analysis.workflows import similarity as word_similarity

    results: dict[str, Any] = {}
    for lang, paths in files.items():
        if not paths:
            continue
        # Two files with one name (a/EN_RG-65.txt, b/EN_RG-65.txt) keep a key each.
        keys = {label: f"{lang}/{label}" for label in unique_labels(paths)}
        try:
            got = word_similarity(datasets=paths, run=bundle, lang=lang, vectors=exported[lang], side=args.side,
                                  keep_case=args.keep_case).datasets
        except InputError as exc:  # no file could be scored
            log.error("[%s] word similarity failed: %s", bundle.model.kind, exc)
            results.update({key: {"lang": lang, "error": _error_text(exc)} for key in keys.values()})
            continue
        for label, entry in got.items():
            if "error" in entry:
                results[keys[label]] = {"lang": lang, "error": entry["error"]}
                continue
            inv = entry["in_vocabulary"]
            record: dict[str, Any] = {"lang": lang, "pairs": inv["found"] + inv["not_found"], "in_vocabulary": {
                "rho": _round(inv["rho"]), "found": inv["found"], "not_found": inv["not_found"]}}
            if "all_pairs_composed" in entry:
                comp = entry["all_pairs_composed"]
                record["all_pairs_composed"] = {"rho": _round(comp["rho"]), "found": comp["found"],
                                                "not_found": comp["not_found"],
                                                "composed_unseen": comp["composed_unseen"]}
            results[keys[label]] = record
    return results


def evaluate_model(label: str, run: Path, files: dict[str, list[Path]], args: argparse.Namespace) -> dict[str, Any]:
    from polyglot_groc.model.bundle import load_bundle

    started = time.perf_counter()
    record: dict[str, Any] = {"run": str(run)}
    bundle, _ = load_bundle(run, args.checkpoint)
    model = bundle.model
    record.update({"kind": model.kind, "langs": list(bundle.vocab.langs), "d": int(bundle.cfg.model.d),
                   "compositional_side": bool(model.compositional_output if args.side == "output"
                                              else model.compositional_input)})
    if model.kind != label:
        record["note"] = f"passed as --{label} but the run is a {model.kind} model"
    t0 = time.perf_counter()
    exported, dropped = export_languages(bundle, (args.src, args.tgt), args.side, args.max_vocab,
                                         lower=not args.keep_case)
    record["export"] = {lang: {"words": len(e.words), "missing": len(e.missing)} for lang, e in exported.items()}
    record["export_seconds"] = _round(time.perf_counter() - t0, 2)
    log.info("[%s] exported %s", label, ", ".join(f"{k} {v['words']} words" for k, v in record["export"].items()))
    try:
        record["alignment"] = alignment(exported, args, dropped)
    except Exception as exc:  # keep the similarity figures and the other models
        log.error("[%s] alignment failed: %s\n%s", label, exc, traceback.format_exc())
        record["alignment"] = {"error": _error_text(exc)}
    record["similarity"] = similarity(bundle, exported, files, args)
    record["seconds"] = _round(time.perf_counter() - started, 2)
    return record


# -- comparison --------------------------------------------------------------------------------------
def groc_vs_lookup(models: dict[str, Any]) -> dict[str, Any]:
    """Measured GroC - lookup on P@5 (per retrieval) and in-vocabulary rho (per file)."""
    g, lk = models.get("groc", {}), models.get("lookup", {})
    out: dict[str, Any] = {}

    def p5(rec: dict[str, Any], method: str) -> tuple[float | None, int | None]:
        prec = (rec.get("alignment") or {}).get("precision") or {}
        entry = prec.get(method) or {}
        return entry.get("precision_at_5"), entry.get("n_queries")

    for method in ("nn", "csls"):
        (a, na), (b, nb) = p5(g, method), p5(lk, method)
        out[f"p_at_5_{method}"] = {
            "groc": a, "lookup": b, "queries": {"groc": na, "lookup": nb},
            "groc_minus_lookup": _round(a - b, 2) if a is not None and b is not None else None,
            "groc_ge_lookup": (a >= b) if a is not None and b is not None else None}
    rho: dict[str, Any] = {}
    for key, entry in (g.get("similarity") or {}).items():
        a = (entry.get("in_vocabulary") or {}).get("rho")
        other = (lk.get("similarity") or {}).get(key) or {}
        b = (other.get("in_vocabulary") or {}).get("rho")
        rho[key] = {"groc": a, "lookup": b,
                    "found": {"groc": (entry.get("in_vocabulary") or {}).get("found"),
                              "lookup": (other.get("in_vocabulary") or {}).get("found")},
                    "groc_ge_lookup": (a >= b) if a is not None and b is not None else None}
    out["rho_in_vocabulary"] = rho
    verdicts = [v["groc_ge_lookup"] for v in [out["p_at_5_nn"], out["p_at_5_csls"], *rho.values()]
                if v["groc_ge_lookup"] is not None]
    out["comparable"] = len(verdicts)
    out["groc_ge_lookup_count"] = sum(verdicts)
    return out


def results_table(models: dict[str, Any]) -> dict[str, Any]:
    """P@k of every model beside both baselines, all and on non-identical-gold words, per model's
    scored words; ``same_evaluated_words`` says whether every model was scored on the same words
    (then the baselines, which depend only on the words and the vocabularies, are one set)."""
    rows: list[dict[str, Any]] = []
    digests: dict[str, Any] = {}
    verdict: dict[str, Any] = {}
    for label, rec in models.items():
        ali = rec.get("alignment") or {}
        prec, base, dico = ali.get("precision"), ali.get("baselines"), ali.get("eval_dictionary") or {}
        if not prec or not base:
            continue
        digests[label] = dico.get("scored_source_sha256")
        entries = [(label, "csls", prec["csls"]), (label, "nn", prec["nn"]),
                   ("identical string", "-", base["identical_string"]), ("char 3-gram", "-", base["char_ngram"])]
        for name, method, res in entries:
            non_id = res.get("non_identical_gold") or {}
            rows.append({
                "words_of": label, "model": name, "retrieval": method, "n_queries": res.get("n_queries"),
                **{f"p_at_{k}": _round(res.get(f"precision_at_{k}"), 2) for k in KS},
                "n_non_identical": non_id.get("n_queries"),
                **{f"non_identical_p_at_{k}": _round(non_id.get(f"precision_at_{k}"), 2) for k in KS},
            })
        ngram = (base["char_ngram"].get("non_identical_gold") or {})
        model = prec["csls"].get("non_identical_gold") or {}
        verdict[label] = {
            f"p_at_{k}": {"model_csls": _round(model.get(f"precision_at_{k}"), 2),
                          "char_ngram": _round(ngram.get(f"precision_at_{k}"), 2),
                          "model_beats_char_ngram": (model[f"precision_at_{k}"] > ngram[f"precision_at_{k}"])
                          if model.get(f"precision_at_{k}") is not None
                          and ngram.get(f"precision_at_{k}") is not None else None}
            for k in KS}
    values = [d for d in digests.values() if d]
    return {"rows": rows, "scored_source_sha256": digests,
            "same_evaluated_words": bool(values) and len(values) == len(digests) and len(set(values)) == 1,
            "non_identical_model_vs_char_ngram": verdict}


# -- main --------------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groc", type=Path, default=None, help="GroC run trained on src+tgt")
    ap.add_argument("--lookup", type=Path, default=None, help="Lookup run trained on src+tgt")
    ap.add_argument("--elmo", type=Path, default=None, help="ELMo run trained on src+tgt (optional)")
    ap.add_argument("--groc-lex", type=Path, default=None, help="GroC+lex run trained on src+tgt (optional)")
    ap.add_argument("--work", type=Path, default=None,
                    help="polyglot_table.py working folder: runs not named are <work>/runs/<kind>_<a>+<b>_<N>steps")
    ap.add_argument("--steps", type=int, default=None, help="With --work: the step budget N of the runs to use")
    ap.add_argument("--src", default="en", help="Source language (dictionary side 1)")
    ap.add_argument("--tgt", default="es", help="Target language (dictionary side 2)")
    ap.add_argument("--side", choices=("input", "output"), default="output",
                    help="Embeddings to evaluate (Table 5.4: output)")
    ap.add_argument("--checkpoint", choices=("best", "last"), default="best")
    ap.add_argument("--max-vocab", type=int, default=200_000, help="At most N most frequent words per language")
    ap.add_argument("--data-root", type=Path, default=None, help=f"Shared data folder (default ${DATA_ENV})")
    ap.add_argument("--train-dict", type=Path, default=None,
                    help="Seed dictionary (default <data>/eval/dictionaries/<src>-<tgt>.0-5000.txt)")
    ap.add_argument("--eval-dict", type=Path, default=None,
                    help="Evaluation dictionary (default <data>/eval/dictionaries/<src>-<tgt>.5000-6500.txt)")
    ap.add_argument("--wordsim", nargs="+", default=None, metavar="[LANG=]FILE",
                    help="Word-similarity files (default every file in <data>/eval/wordsim/<src> and <tgt>); "
                         "the language is LANG= or the file's folder name")
    ap.add_argument("--dictionary-mode", choices=("dictionary", "unsupervised"), default="dictionary",
                    help="dictionary: Procrustes on --train-dict with --refine rounds (Table 5.4); unsupervised: "
                         "no dictionary, VecMap's --unsupervised with its verdict (issue 47)")
    ap.add_argument("--cutoff", type=int, default=4000,
                    help="unsupervised: self-learning words per side (VecMap --vocabulary_cutoff; its default 20000)")
    ap.add_argument("--interval", type=int, default=3,
                    help="unsupervised: VecMap --stochastic_interval (its default 50)")
    ap.add_argument("--restart-cutoff", type=int, default=2000, help="unsupervised: the verdict's restarts' cutoff")
    ap.add_argument("--random-seed", type=int, default=0, help="unsupervised: the seed (restarts: seed + 1, ...)")
    ap.add_argument("--refine", type=int, default=5, help="Refinement iterations (thesis: 10)")
    ap.add_argument("--normalize", default="", help="e.g. center,renorm (applied to both sides)")
    ap.add_argument("--dico-build", default="S2T&T2S", help="S2T | T2S | S2T|T2S | S2T&T2S")
    ap.add_argument("--dico-max-rank", type=int, default=10000, help="MUSE's supervised default")
    ap.add_argument("--keep-case", action="store_true",
                    help="Keep every exported word as written (MUSE's full_vocab); default lowercases, first wins")
    ap.add_argument("--lenient", action="store_true", help="Skip malformed dictionary lines")
    ap.add_argument("--threads", type=int, default=0, help="torch and faiss threads (0: their defaults)")
    add_output_args(ap)
    ap.add_argument("--eval-words", type=Path, default=None,
                    help="Evaluate only these source words (one per line): every model on the same words")
    args = ap.parse_args(argv)
    args.eval_words_set = (set(args.eval_words.read_text(encoding="utf-8").split())
                           if args.eval_words is not None else None)
    return args


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result = run(args)
    emit(result, args.name, not args.no_save)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    started = time.monotonic()
    if args.src == args.tgt:
        raise BadInput("--src and --tgt must differ")
    if args.refine < 0:
        raise BadInput("--refine must be 0 or more")
    root = args.data_root or (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else None)
    if root is not None and not root.is_dir():
        raise BadInput(f"data root {root} is not a folder")
    dicts = root / "eval" / "dictionaries" if root is not None else None
    needed = [("eval_dict", "5000-6500")]
    if args.dictionary_mode == "unsupervised":
        if args.train_dict is not None:
            raise BadInput("--dictionary-mode unsupervised aligns without a dictionary; drop --train-dict, or use "
                           "--dictionary-mode dictionary")
    else:
        needed.insert(0, ("train_dict", "0-5000"))
    for attr, suffix in needed:
        if getattr(args, attr) is None:
            if dicts is None:
                raise BadInput(f"pass --{attr.replace('_', '-')} FILE, or set {DATA_ENV} / --data-root")
            setattr(args, attr, dicts / f"{args.src}-{args.tgt}.{suffix}.txt")
        if not getattr(args, attr).is_file():
            raise BadInput(f"dictionary {getattr(args, attr)} does not exist; "
                           f"check --src/--tgt (MUSE has en-es, en-fr, en-nl and the reverse) or the path")
    if args.wordsim is None and root is None:
        raise BadInput(f"pass --wordsim FILE..., or set {DATA_ENV} / --data-root")
    if args.threads > 0:
        import faiss
        import torch
        from threadpoolctl import threadpool_limits

        torch.set_num_threads(args.threads)
        faiss.omp_set_num_threads(args.threads)  # faiss's heaps
        threadpool_limits(limits=args.threads, user_api="blas")  # NumPy's BLAS: the k-NN GEMMs
    runs = resolve_runs(args)
    files, notes = wordsim_files(args, root)
    notes += [f"no {k} run: groc_vs_lookup has no comparison" for k in ("groc", "lookup") if k not in runs]

    models: dict[str, Any] = {}
    for label, run in runs.items():
        log.info("=== %s: %s", label, run)
        try:
            models[label] = evaluate_model(label, run, files, args)
        except Exception as exc:  # a missing/broken run or a language the run lacks
            log.error("[%s] failed: %s\n%s", label, exc, traceback.format_exc())
            models[label] = {"run": str(run), "error": _error_text(exc)}
            notes.append(f"{label} failed: {_error_text(exc)}")
    for label, rec in models.items():
        err = (rec.get("alignment") or {}).get("error")
        if err:
            notes.append(f"{label}: {err}")
    table = results_table(models)
    if len(table["scored_source_sha256"]) > 1 and not table["same_evaluated_words"]:
        notes.append("the models were scored on different test words (their vocabularies differ): compare "
                     "each with the baselines on its own words, or pass --eval-words FILE")
    if args.side == "output":
        notes.append("lookup and ELMo output embeddings are tables: only their vocabularies are evaluated; "
                     "'all_pairs_composed' is given for GroC, whose output side composes any word")

    return {
        "benchmark": "align_polyglot (seed 004 Tables 5.4/5.5, mini)",
        "config": {
            "src": args.src, "tgt": args.tgt, "side": args.side, "checkpoint": args.checkpoint,
            "max_vocab": args.max_vocab, "eval_dict": str(args.eval_dict), "dictionary_mode": args.dictionary_mode,
            **({"train_dict": str(args.train_dict)} if args.dictionary_mode == "dictionary" else
               {"cutoff": args.cutoff, "interval": args.interval, "restart_cutoff": args.restart_cutoff,
                "random_seed": args.random_seed}),
            "refine": args.refine, "normalize": args.normalize, "dico_build": args.dico_build,
            "dico_max_rank": args.dico_max_rank, "lower": not args.keep_case, "ks": list(KS),
            "selection": ("unsupervised mean CSLS cosine (never the evaluation dictionary)"
                          if args.dictionary_mode == "dictionary" else "VecMap's last self-learning iteration"),
            "wordsim": {lang: [str(p) for p in paths] for lang, paths in files.items()},
            "runs": {k: str(v) for k, v in runs.items()}, "threads": args.threads,
        },
        "models": models,
        "groc_vs_lookup": groc_vs_lookup(models),
        "table": table,
        "thesis": THESIS_CLAIM,
        "timings": {"total_s": _round(time.monotonic() - started, 1), "peak_rss_mib": _round(peak_rss_mib(), 1)},
        "notes": list(dict.fromkeys(notes)),
    }


if __name__ == "__main__":
    script_main(main)
