"""Low-resource dependency parsing with polyglot vs aligned monolingual contextual features (seed 004 ch. 3).

Seed 004 Tables 3.4/A.5 (Rosita): a parser trained on English plus |D_target| target trees does
better with features from a polyglot en+target ELMo than from monolingual ELMos aligned by anchors,
and both beat unaligned monolingual features, most of all at small |D_target|. Here, at CPU scale:

1. corpora: ``langpairs.prepare_corpora`` en and the target (``--lm-tokens`` each);
2. three ``bilm`` LMs (same size and steps): mono-en, mono-target, polyglot en+target;
3. anchors of each LM on each language's LM training text; per-layer Procrustes maps target->en
   (MUSE's ``<tgt>-en.0-5000`` dictionary) for the mono pair and within the polyglot LM;
4. features (``--layers all``) of the parser's trees: the first ``--source-trees`` of EWT train
   (mono-en or polyglot), the target's dev set (the pool) and test set (mono, mono+map, polyglot,
   polyglot+map);
5. the probe (biaffine parser, learned ScalarMix) for systems (a) mono, (b) mono+align, (c) polyglot,
   (d) polyglot+align and a word-embedding baseline, at each |D_target| and seed; LAS/UAS on the
   target's test set as the CoNLL 2018 script computes them.

``--quick`` is the test suite's dry run (tiny sizes, seconds). Prints one JSON object and saves it
under ``benchmarks/results/<date>/parsing_probe.json``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import BadInput, add_output_args, emit, script_main  # noqa: E402

UD_FILES = {"es": "es_gsd", "fr": "fr_gsd", "nl": "nl_alpino", "de": "de_gsd"}
SYSTEMS = ("mono", "mono+align", "polyglot", "polyglot+align", "no-lm")


def _args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="es", choices=sorted(UD_FILES))
    ap.add_argument("--work", type=Path, default=Path("work/parsing_probe"), help="cache of corpora, runs, features")
    ap.add_argument("--lm-tokens", type=int, default=120_000, help="LM training tokens per language")
    ap.add_argument("--lm-steps", type=int, default=500,
                    help="training steps of a monolingual LM; the polyglot LM gets this many per language")
    ap.add_argument("--source-trees", type=int, default=1000, help="EWT train trees for the parser")
    ap.add_argument("--n-target", default="0,100,500", help="|D_target| values")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--parser-epochs", type=int, default=3)
    ap.add_argument("--max-test", type=int, default=None, help="score only the first N test trees")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: the test suite's dry run")
    ap.add_argument("--reuse", action="store_true",
                    help="keep the LMs, anchors, maps and features an earlier run left in --work (rerun the probe)")
    add_output_args(ap)
    a = ap.parse_args(argv)
    if a.quick:
        a.lm_tokens, a.lm_steps, a.source_trees, a.n_target, a.seeds, a.parser_epochs = 3000, 4, 30, "0,10", 1, 1
        a.max_test, a.max_pool = 20, 20
    else:
        a.max_pool = None
    try:
        a.n_targets = [int(x) for x in a.n_target.split(",")]
    except ValueError as exc:
        raise BadInput(f"--n-target {a.n_target!r} must be comma-separated integers") from exc
    for name in ("lm_tokens", "lm_steps", "source_trees", "seeds", "parser_epochs", "threads"):
        if getattr(a, name) <= 0:
            raise BadInput(f"--{name.replace('_', '-')} must be positive")
    if any(n < 0 for n in a.n_targets):
        raise BadInput("--n-target values must be >= 0")
    return a


def main(argv: list[str] | None = None) -> dict[str, Any]:
    a = _args(argv)
    data = os.environ.get("POLYGLOT_GROC_DATA")
    if not data:
        raise BadInput("set POLYGLOT_GROC_DATA to the shared data folder")
    import torch

    from langpairs.prepare import prepare_corpora
    from polyglot_groc.api import (
        ParserConfig,
        align_layers,
        anchors,
        evaluate,
        features,
        load_result,
        probe,
        train,
    )

    torch.set_num_threads(a.threads)
    logging.basicConfig(level=logging.WARNING)
    tgt = a.target
    root, work = Path(data), a.work
    ud = root / "text" / "ud"
    source_tb = ud / "en_ewt-ud-train.conllu.gz"
    pool_tb, test_tb = ud / f"{UD_FILES[tgt]}-ud-dev.conllu.gz", ud / f"{UD_FILES[tgt]}-ud-test.conllu.gz"
    started = time.monotonic()
    timing: dict[str, float] = {}

    def tick(stage: str, t0: float) -> None:
        timing[stage] = round(time.monotonic() - t0, 1)

    t0 = time.monotonic()
    corpora = work / "corpora"
    if not (a.reuse and (corpora / "prepare.json").is_file()):
        prepare_corpora(root, corpora, ["en", tgt], a.lm_tokens, max(a.lm_tokens // 20, 500), overwrite=True)
    tick("prepare", t0)

    lm = {"model.d": 64, "model.prefix.hidden": 256, "model.prefix.n_layers": 2, "model.prefix.dropout": 0.2,
          "model.surface.filters": [[1, 16], [2, 16], [3, 32], [4, 32], [5, 32]], "train.batch_size": 16,
          "train.bptt": 20, "train.lr": 0.003,
          # closed: valid words are in the softmax, so validation (and best.pt) follows the LM; in open mode a
          # lookup softmax's <unk> is never a training target and valid perplexity climbs as the LM trains
          "data.vocab_mode": "closed"}
    if a.quick:  # the test suite's dry run: a toy LM
        lm.update({"model.d": 16, "model.prefix.hidden": 24, "model.surface.filters": [[1, 8], [2, 8], [3, 16]],
                   "train.batch_size": 4, "train.bptt": 8})
    runs = {"mono-en": ["en"], f"mono-{tgt}": [tgt], "polyglot": ["en", tgt]}
    lm_info: dict[str, Any] = {}
    t0 = time.monotonic()
    for name, langs in runs.items():
        t1 = time.monotonic()
        done = a.reuse and (work / "runs" / name / "result.json").is_file()
        # Each language gets the same steps (and so about the same tokens) in every LM.
        steps = a.lm_steps * len(langs)
        res = load_result(run=work / "runs" / name) if done else train(
            out=work / "runs" / name, langs=langs, data=corpora, model="bilm", size="small",
            overrides={**lm, "train.eval_every": max(steps // 3, 1)}, max_steps=steps, threads=a.threads,
            overwrite=True)
        d = res.to_dict()
        ev = evaluate(run=work / "runs" / name, split="valid", threads=a.threads).to_dict()
        lm_info[name] = {"valid_perplexity_forward": ev["perplexity"],
                         "valid_perplexity_backward": ev.get("perplexity_backward"), "n_params": d["n_params"],
                         "steps": res.steps, "tokens_per_s": d["tokens_per_s"], "seconds": round(time.monotonic() - t1)}
    tick("lms", t0)

    # Anchors on each language's LM text; per-layer maps target -> en.
    t0 = time.monotonic()
    dico = root / "eval" / "dictionaries" / f"{tgt}-en.0-5000.txt"
    anc = work / "anchors"
    pairs = {"mono": (f"mono-{tgt}", "mono-en"), "polyglot": ("polyglot", "polyglot")}
    maps = {}
    for system, (run_t, run_e) in pairs.items():
        maps[system] = work / "maps" / system
        if a.reuse and (maps[system] / "layer2" / "W.npy").is_file():
            continue
        anchors(run=work / "runs" / run_t, data=corpora, lang=tgt, out=anc / f"{system}-{tgt}", threads=a.threads,
                overwrite=True)
        anchors(run=work / "runs" / run_e, data=corpora, lang="en", out=anc / f"{system}-en", threads=a.threads,
                overwrite=True)
        layer_maps = align_layers(src=anc / f"{system}-{tgt}", tgt=anc / f"{system}-en", out=work / "maps" / system,
                                  train_dict=dico, overwrite=True)
        lm_info[f"{system}-map"] = {"layers": len(layer_maps.layers)}
    tick("anchors+maps", t0)

    # Features of the trees.
    t0 = time.monotonic()
    feats = work / "features"
    feats.mkdir(parents=True, exist_ok=True)
    src_feats = {}
    for system, run in (("mono", "mono-en"), ("polyglot", "polyglot")):
        src_feats[system] = feats / f"{system}-en-train.hdf5"
        if a.reuse and src_feats[system].is_file():
            continue
        features(run=work / "runs" / run, input=source_tb, out=src_feats[system], lang="en",
                 max_sentences=a.source_trees, threads=a.threads, overwrite=True)
    tgt_feats: dict[str, dict[str, Path]] = {}
    for system, run in (("mono", f"mono-{tgt}"), ("polyglot", "polyglot")):
        for aligned in (False, True):
            key = system + ("+align" if aligned else "")
            tgt_feats[key] = {}
            for split, tb in (("pool", pool_tb), ("test", test_tb)):
                path = feats / f"{key}-{tgt}-{split}.hdf5"
                tgt_feats[key][split] = path
                if a.reuse and path.is_file():
                    continue
                features(run=work / "runs" / run, input=tb, out=path, lang=tgt, threads=a.threads, overwrite=True,
                         align=maps[system] if aligned else None,
                         max_sentences=a.max_pool if split == "pool" else a.max_test)
    tick("features", t0)

    # The probe.
    t0 = time.monotonic()
    cfg = ParserConfig(epochs=a.parser_epochs)
    if a.quick:
        cfg = ParserConfig(epochs=1, lstm_hidden=16, arc_mlp=16, label_mlp=8, word_dim=16)
    from polyglot_groc.contextual.treebank import read_conllu

    trees = {"source": read_conllu(source_tb, a.source_trees), "pool": read_conllu(pool_tb, a.max_pool),
             "test": read_conllu(test_tb, a.max_test)}
    from polyglot_groc.contextual.probe import read_features

    loaded = {k: read_features(v) for k, v in src_feats.items()}
    loaded_t = {k: {s: read_features(p) for s, p in v.items()} for k, v in tgt_feats.items()}
    rows: list[dict[str, Any]] = []
    for system in SYSTEMS:
        for n in a.n_targets:
            for seed in range(a.seeds):
                if system == "no-lm":
                    kw: dict[str, Any] = {}
                else:
                    base = system.split("+")[0]
                    kw = {"source_features": loaded[base], "target_features": loaded_t[system]["pool"],
                          "test_features": loaded_t[system]["test"]}
                r = probe(source=trees["source"], target=trees["pool"], test=trees["test"], n_target=n, seed=seed,
                          config=cfg, **kw)
                rows.append({"system": system, "n_target": n, "seed": seed, "las": r.las, "uas": r.uas,
                             "mix": r.mix, "gamma": r.gamma})
                print(f"{system:15s} n={n:4d} seed={seed} LAS {r.las:6.2f} UAS {r.uas:6.2f}", file=sys.stderr)
    tick("probe", t0)

    table: dict[str, dict[str, Any]] = {}
    for system in SYSTEMS:
        table[system] = {}
        for n in a.n_targets:
            got = [r["las"] for r in rows if r["system"] == system and r["n_target"] == n]
            uas = [r["uas"] for r in rows if r["system"] == system and r["n_target"] == n]
            table[system][str(n)] = {"las_mean": round(statistics.mean(got), 2),
                                     "las_sd": round(statistics.stdev(got), 2) if len(got) > 1 else 0.0,
                                     "uas_mean": round(statistics.mean(uas), 2), "las": got}

    def mean_las(system: str, n: int) -> float:
        return float(table[system][str(n)]["las_mean"])

    direction = {str(n): {"polyglot>=mono+align": mean_las("polyglot", n) >= mean_las("mono+align", n),
                          "mono+align>mono": mean_las("mono+align", n) > mean_las("mono", n),
                          "polyglot-mono": round(mean_las("polyglot", n) - mean_las("mono", n), 2)}
                 for n in a.n_targets}
    setup = {"lm": {"kind": "bilm", "d": lm["model.d"], "hidden": lm["model.prefix.hidden"], "layers": 2,
                    "tokens_per_language": a.lm_tokens, "steps_per_language": a.lm_steps, "batch": "16 x 20",
                    "vocab_mode": lm["data.vocab_mode"],
                    "text": "prepare_corpora (Leipzig/NLTK)"},
             "maps": f"Procrustes per layer on anchors, {dico.name}",
             "source": f"first {a.source_trees} trees of en_ewt train", "pool": pool_tb.name, "test": test_tb.name,
             "test_trees": len(trees["test"]), "parser": cfg.__dict__, "seeds": a.seeds, "threads": a.threads}
    return {"benchmark": "parsing_probe", "seed_claim": "seed 004 Tables 3.4/A.5: polyglot >= aligned mono > mono, "
            "largest gains at small |D_target|", "target": tgt, "quick": a.quick, "setup": setup,
            "lms": lm_info, "las": table, "direction": direction, "runs": rows, "seconds": timing,
            "total_seconds": round(time.monotonic() - started, 1)}


if __name__ == "__main__":
    script_main(lambda: emit(main(), name=_args().name, save=not _args().no_save))
