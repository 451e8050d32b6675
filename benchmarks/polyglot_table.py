"""Mini Table 5.2 (seed 004 §5.4): mono vs polyglot lookup / ELMo / GroC perplexity on real text.

1. Corpora: ``<work>/corpora/<lang>/{train,valid,test}.txt`` from the shared text with
   :func:`langpairs.prepare.prepare_corpora` (a fixed token budget per language, default
   200k train / 20k valid / 20k test; the thesis used 1M words of wiki40b). Languages already
   prepared into ``<work>/corpora`` with the same budget and unchanged files are not redone.
2. For each target in ``--targets`` (default fr,es,nl,uk; ``all`` = the ten of Table 5.1) it
   trains, at an EQUAL budget (same ``--steps``, seed and sizes for every model):

   ========================  =======================================================
   ``lookup (mono)``         tied lookup embeddings, target only
   ``elmo (mono)``           char-CNN input, lookup output, target only
   ``groc (mono)``           char-CNN input and output (surface form only)
   ``groc (EN+tgt)``         GroC on English + target (not for target en)
   ``groc (rel+tgt)``        GroC on the Table 5.1 partner + target (en's partner is fr)
   ``groc-lex (mono)``       GroC + relational/definitional forms, when ``--lexicon``
   ``groc-lex (EN+tgt)``     is given and the target has an OMW lexicon (fr nl it es id)
   ========================  =======================================================

   ``--baseline-polyglot`` adds ``lookup``/``elmo`` EN+tgt and rel+tgt (the rest of the table).
   A model is trained once per language set: ``groc`` on en+fr serves fr's EN+tgt and rel+tgt
   and en's rel+tgt. Each run has its own directory ``<work>/runs/<kind>_<langs>_<steps>steps``
   (config.toml, metrics.jsonl, best.pt, bench_result.json); ``--reuse`` keeps a finished run
   whose config is unchanged.
3. Perplexity = TEST perplexity of the target language, from the best checkpoint (pooled
   validation NLL over the run's languages picks it), language-screened as in training.
   The vocabulary is closed (train+valid+test words of the run's languages; thesis: train+dev),
   so every model scores the same events and lookup models need no ``<unk>``.
4. Memory: for one polyglot pair (``--memory-pair``, default the first target and its related
   language) a few GroC training steps run with ``data.screen=true`` and ``false``, each in a
   separate subprocess, so that process's peak RSS is the peak of that setting alone (VmHWM:
   Linux carries ``ru_maxrss`` over ``exec`` from the parent, so the child's ``ru_maxrss`` is
   also given but is at least the parent's size). Reported with ``|V_lang|`` per language,
   ``|V_union|``, the RSS before the first step, and seconds per step of each setting.

Step budget (``--polyglot-steps-mode``): a polyglot model's batches are split across its
languages by the proportional schedule (each language's share = its share of batches per
epoch, ~1/2 here).

* ``equal_total`` (default): every model takes ``--steps`` steps in all, i.e. the same
  compute; the target gets only ~half of them in a two-language model (the thesis's setting:
  same number of epochs, so the polyglot model also sees the other language's text on top).
* ``equal_target``: a polyglot model takes as many steps as it needs for the TARGET to get
  ``--steps`` batches (about twice the compute); the same target data exposure as mono.

Defaults are sized for CPUs: the GroC step runs the char-CNN over the whole language
vocabulary (~25-40k words at 200k tokens) forwards and backwards, so d=128, prefix hidden 256,
filters 1:32,2:32,3:64,4:64,5:64,6:64, batch 32, BPTT 35, 300 steps, validation every 100
steps, lr 0.002, dropout 0.2 (the thesis's 1024 units, dropout 0.65 and lr 0.001 are for
100-epoch runs). ``--max-minutes`` (default 180) caps each run (a run stopped by it gets fewer
steps than the others: its ``stop_reason`` and a note say so). ``--output-update-prob`` < 1
enables seed 000 B.4's sparse output updates for GroC (fewer char-CNN passes per step).

Cost: one GroC step at these defaults on French (200k tokens, |V| = 33,944) took ~15 CPU-seconds
(26 s wall on 2 busy shared cores; lookup/ELMo steps skip that char-CNN). The default four targets
train 11 GroC models (4 mono + 7 polyglot) of 300 steps, i.e. roughly 14 CPU-hours in GroC steps
plus validations; ``--targets all`` trains 23 (about 2x that). Use more cores (``--threads``), fewer
``--steps`` or ``--output-update-prob`` to shrink it, and ``--reuse`` to resume after a stop.

Prints ONE JSON object on stdout (progress and logs go to stderr); it asserts nothing.

    POLYGLOT_GROC_DATA=../shared/data python benchmarks/polyglot_table.py --work bench_out/table52
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/polyglot_table.py --work bench_out/table52 \\
        --targets all --reuse
    # + lexicon-grounded GroC: install the wordnets offline, then pass the specs it prints
    # (English first, then the targets'; `polyglot-groc lexicon info` lists them again):
    polyglot-groc lexicon import --langs en,fr,nl,it,es,id
    ... --lexicon SPEC_EN SPEC_FR SPEC_ES ... [--wn-dir DIR]
    # smoke test (about a minute on one core):
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/polyglot_table.py --work /tmp/t52 --targets fr \\
        --train-tokens 20000 --eval-tokens 2000 --steps 5 --eval-every 5 --d 16 --hidden 24 \\
        --filters 1:8,2:8,3:16 --batch-size 8 --bptt 10 --threads 1 --memory-steps 2
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    DEFAULT_FILTERS,
    FULL_SOFTMAX,
    BadInput,
    add_output_args,
    emit,
    parse_filters,
    peak_rss_mib,
    ru_maxrss_mib,
    script_main,
)
from groc_base.fileio import file_digest, write_json  # noqa: E402

log = logging.getLogger("polyglot_table")

ALL_TARGETS = ("en", "fr", "de", "nl", "it", "es", "id", "tl", "uk", "ru")
DEFAULT_TARGETS = ("fr", "es", "nl", "uk")
#: Targets with an OMW wordnet for groc-lex rows (seed 004 §5.3 evaluates +lex for EN+tgt only).
LEX_TARGETS = ("fr", "nl", "it", "es", "id")
DATA_ENV = "POLYGLOT_GROC_DATA"


# -- small helpers -------------------------------------------------------------------------------
def _round(x: float | None, nd: int = 2) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), nd)


# -- corpora ---------------------------------------------------------------------------------------
def prepare(data_root: Path, out: Path, langs: Sequence[str], train_tokens: int, eval_tokens: int,
            tokenize: str) -> dict[str, Any]:
    """Prepare the languages not already in ``out`` with this budget; the manifest's entries for ``langs``."""
    from langpairs.prepare import MANIFEST_NAME, prepare_corpora

    budget = {"train": train_tokens, "valid": eval_tokens, "test": eval_tokens}
    manifest_path = out / MANIFEST_NAME
    existing: dict[str, Any] = {}
    if manifest_path.is_file():
        try:
            existing = json.loads(manifest_path.read_text(encoding="utf-8")).get("languages", {})
        except (OSError, ValueError):
            existing = {}

    def fresh(lang: str) -> bool:
        entry = existing.get(lang)
        if not entry or entry.get("budget") != budget:
            return False
        # prepare_corpora is deterministic, so unchanged files (same digests) need no redo.
        files = {out / lang / f"{s}.txt": info["sha256"] for s, info in entry["splits"].items()}
        return all(path.is_file() and file_digest(path).hexdigest() == digest for path, digest in files.items())

    todo = [lang for lang in langs if not fresh(lang)]
    if todo:
        log.info("preparing %s (%d train / %d eval tokens each)", ",".join(todo), train_tokens, eval_tokens)
        existing = prepare_corpora(data_root, out, todo, train_tokens, eval_tokens, tokenize=tokenize)["languages"]
    else:
        log.info("corpora for %s already prepared in %s", ",".join(langs), out)
    return {lang: existing[lang] for lang in langs}


def train_windows(root: Path, langs: Sequence[str], batch_size: int, bptt: int) -> dict[str, int]:
    """Batches per epoch per language, exactly as the trainer's schedule sizes them."""
    from langpairs.batching import bptt_windows
    from langpairs.corpus import MultilingualCorpus

    corpus = MultilingualCorpus.load(root, list(langs), splits=("train",))
    # Stream length after batchify: the tail that does not divide into batch_size streams is dropped.
    return {lang: len(bptt_windows(corpus.n_tokens(lang, "train") // batch_size, bptt)) for lang in langs}


def schedule_steps(windows: Mapping[str, int], target: str, steps: int, mode: str) -> tuple[int, int]:
    """(total steps, target batches among them) under the proportional schedule.

    ``equal_total``: ``steps`` in all. ``equal_target``: the first step count at which the
    target has had ``steps`` batches. Simulated with the trainer's own schedule class, so the
    counts are exact, not rounded shares.
    """
    from langpairs.batching import LanguageSchedule

    schedule = LanguageSchedule(dict(windows), mode="proportional")
    total = hits = 0
    while (total < steps) if mode == "equal_total" else (hits < steps):
        hits += schedule.next() == target
        total += 1
    return total, hits


# -- one training run --------------------------------------------------------------------------------
class ProgressHooks:
    """Trainer hooks that log to stderr every ``every`` steps and on each validation."""

    def __init__(self, name: str, every: int) -> None:
        self.name, self.every = name, max(every, 1)

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        log.info("[%s] %s steps, %s parameters, vocabulary %s, %s steps/epoch", self.name, total_steps,
                 f"{info['n_params']:,}", f"{info['vocab']:,}", info["steps_per_epoch"])

    def on_step(self, info: Any) -> None:
        if info.step % self.every == 0:
            log.info("[%s] step %d (%s) loss %.3f, %.0f tok/s", self.name, info.step, info.lang, info.loss,
                     info.tokens_per_s)

    def on_eval(self, record: Mapping[str, Any]) -> None:
        ppl = ", ".join(f"{k} {v:.1f}" for k, v in record["valid_perplexity"].items())
        log.info("[%s] step %d: valid ppl %s", self.name, record["step"], ppl)


def run_config(common: Mapping[str, Any], kind: str, langs: Sequence[str], steps: int,
               extra: Mapping[str, Any]) -> Any:
    from polyglot_groc.config import load_config, merge_overrides

    return load_config(None, merge_overrides(common, {"model.kind": kind, "data.langs": list(langs),
                                                      "train.max_steps": steps}, extra))


def _stored_config_is(path: Path, cfg: Any) -> bool:
    """Whether a run's config.toml holds ``cfg``: its values, not its text (an older writer laid the
    same config out differently); an unreadable one holds nothing."""
    from groc_base.errors import ConfigError
    from polyglot_groc.config import load_config

    try:
        return bool(load_config(path, stored=True) == cfg)
    except ConfigError:
        return False


def train_and_test(cfg: Any, run_dir: Path, reuse: bool, log_every: int) -> dict[str, Any]:
    """Train one model, then test perplexity of all its languages from the best checkpoint."""
    from polyglot_groc.analysis.workflows import evaluate
    from polyglot_groc.training.workflows import train

    record_path = run_dir / "bench_result.json"
    if reuse and record_path.is_file() and (run_dir / "config.toml").is_file():
        if _stored_config_is(run_dir / "config.toml", cfg):
            log.info("[%s] reusing the finished run (same config)", run_dir.name)
            return {**json.loads(record_path.read_text(encoding="utf-8")), "reused": True}
    started = time.monotonic()
    result = train(config=cfg, out=run_dir, overwrite=True, hooks=ProgressHooks(run_dir.name, log_every))
    train_wall = time.monotonic() - started
    started = time.monotonic()
    # On the training device (a GPU tests a 139k-word GroC in seconds, its CPU took ~20 s a model).
    test = evaluate(run=run_dir, split="test", checkpoint="best", screen=cfg.data.screen,
                    device=cfg.train.device).to_dict()
    test_wall = time.monotonic() - started
    last = result.history[-1] if result.history else {}
    best = min(result.history, key=lambda r: r["valid_nll"]) if result.history else {}
    record = {
        "run_dir": str(run_dir), "kind": cfg.model.kind, "langs": list(cfg.data.langs),
        "steps": result.steps, "stop_reason": result.stop_reason, "lang_batches": last.get("lang_batches", {}),
        "best_step": best.get("step"), "n_params": result.n_params,
        "test_perplexity": {lang: _round(p) for lang, p in test["perplexity"].items()},
        "best_valid_perplexity": {lang: _round(p) for lang, p in result.best_valid.items()},
        "train_seconds": _round(result.train_seconds, 1),
        "seconds_per_step": _round(result.train_seconds / max(result.steps, 1), 3),
        "tokens_per_s": _round(result.tokens_per_s, 0),
        "wall_seconds": {"train_incl_validation": _round(train_wall, 1), "test": _round(test_wall, 1)},
    }
    write_json(record_path, record)
    return record


# -- memory probe (child process) ------------------------------------------------------------------
class _ProbeDone(Exception):
    """Raised from the step hook: the probe needs training steps only, not the final validation."""


class _ProbeHooks:
    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.rss_after_step: list[float] = []
        self.step_started = time.perf_counter()
        self.step_seconds: list[float] = []

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        self.step_started = time.perf_counter()

    def on_step(self, info: Any) -> None:
        now = time.perf_counter()
        self.step_seconds.append(now - self.step_started)
        self.rss_after_step.append(peak_rss_mib())
        self.step_started = now
        if info.step >= self.steps:
            raise _ProbeDone

    def on_eval(self, record: Mapping[str, Any]) -> None:
        pass


def memory_probe(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Run in a fresh process: a few GroC steps with one screen setting; peak RSS of this process."""
    import torch

    from polyglot_groc.config import load_config
    from polyglot_groc.training.trainer import Trainer

    baseline = peak_rss_mib()  # interpreter + torch + this module
    cfg = load_config(None, spec["overrides"])
    hooks = _ProbeHooks(int(spec["steps"]))
    trainer = Trainer(cfg, Path(spec["run_dir"]), overwrite=True, hooks=hooks)
    setup = peak_rss_mib()  # + corpus, vocabulary and model
    vocab = trainer.bundle.vocab
    try:
        trainer.fit()
    except _ProbeDone:
        pass
    per_lang = {lang: int(vocab.membership[:, j].sum()) for j, lang in enumerate(vocab.langs)}
    # The first step includes one-off allocations (optimizer state, caches): report the rest too.
    steady = hooks.step_seconds[1:] or hooks.step_seconds
    return {
        "screen": cfg.data.screen, "langs": list(cfg.data.langs), "steps": len(hooks.step_seconds),
        "torch_threads": torch.get_num_threads(),
        "V_lang": per_lang, "V_union": len(vocab),
        "peak_rss_mib": _round(peak_rss_mib(), 1),
        "ru_maxrss_mib": _round(ru_maxrss_mib(), 1),  # includes the parent's RSS at spawn (see above)
        "rss_before_training_mib": _round(setup, 1), "rss_after_imports_mib": _round(baseline, 1),
        "training_increase_mib": _round(peak_rss_mib() - setup, 1),
        "seconds_per_step": _round(sum(steady) / max(len(steady), 1), 3),
        "first_step_seconds": _round(hooks.step_seconds[0], 3) if hooks.step_seconds else None,
    }


def run_memory_probe(overrides: Mapping[str, Any], run_dir: Path, steps: int) -> dict[str, Any]:
    spec = {"overrides": dict(overrides), "run_dir": str(run_dir), "steps": steps}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-probe", json.dumps(spec)]
    started = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=None, text=True, check=False)
    if proc.returncode != 0:
        return {"error": f"memory probe exited with {proc.returncode} (see stderr above)"}
    try:  # stdout holds only the child's JSON object (its logs go to stderr)
        result: dict[str, Any] = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError as exc:
        return {"error": f"memory probe printed no JSON object ({exc})"}
    result["wall_seconds"] = _round(time.monotonic() - started, 1)
    return result


# -- the benchmark ------------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/polyglot_table"),
                    help="Working folder: corpora/ and runs/ go here")
    ap.add_argument("--data-root", type=Path, default=None, help=f"Shared data folder (default ${DATA_ENV})")
    ap.add_argument("--targets", default=",".join(DEFAULT_TARGETS), help="Comma-separated targets, or 'all'")
    ap.add_argument("--train-tokens", type=int, default=200_000, help="Training tokens per language")
    ap.add_argument("--eval-tokens", type=int, default=20_000, help="Valid and test tokens per language (each)")
    ap.add_argument("--tokenize", default="auto", help="Tokeniser for preparing: auto | stanza | toktok")
    ap.add_argument("--steps", type=int, default=300, help="Training steps per model (the equal budget)")
    ap.add_argument("--polyglot-steps-mode", choices=("equal_total", "equal_target"), default="equal_total",
                    help="equal_total: polyglot models take --steps in all; equal_target: enough for the "
                         "target to get --steps batches")
    ap.add_argument("--eval-every", type=int, default=100, help="Validate (and checkpoint) every N steps")
    ap.add_argument("--d", type=int, default=128, help="Embedding size")
    ap.add_argument("--hidden", type=int, default=256, help="Prefix LSTM hidden size")
    ap.add_argument("--layers", type=int, default=2, help="Prefix LSTM layers")
    ap.add_argument("--filters", default=DEFAULT_FILTERS, help="Char-CNN width:count pairs")
    ap.add_argument("--char-dim", type=int, default=16, help="Character embedding size")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--eval-batch-size", type=int, default=10)
    ap.add_argument("--lr", type=float, default=0.002)
    ap.add_argument("--dropout", type=float, default=0.2, help="Prefix (hidden unit) dropout")
    ap.add_argument("--output-dropout", type=float, default=0.2, help="Dropout on output embeddings")
    ap.add_argument("--output-update-prob", type=float, default=1.0,
                    help="GroC: probability of a full output-embedding update per step (seed 000 B.4)")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: picked from the free cores)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-minutes", type=float, default=180.0, help="Safety cap per training run (0: none)")
    ap.add_argument("--kinds", default="lookup,elmo,groc,groc-lex", help="Model kinds to train")
    ap.add_argument("--settings", default="mono,EN+tgt,rel+tgt",
                    help="Language settings to train per target (e.g. EN+tgt for the alignment runs only)")
    ap.add_argument("--baseline-polyglot", action="store_true",
                    help="Also train lookup and elmo EN+tgt / rel+tgt (Table 5.2's other columns)")
    ap.add_argument("--lexicon", nargs="+", default=None, metavar="SPEC",
                    help="Lexicon specs for groc-lex (e.g. omw-en omw-fr, as `polyglot-groc lexicon info` lists them); "
                         "without it groc-lex is skipped")
    ap.add_argument("--lexicon-backend", default="wn", help="Lexicon backend for groc-lex: wn, nltk or tsv")
    ap.add_argument("--wn-dir", default="", help="wn data folder for groc-lex (default: wn's own)")
    ap.add_argument("--memory-pair", default=None,
                    help="Polyglot pair for the memory probe, e.g. en,fr (default: first target + related)")
    ap.add_argument("--memory-steps", type=int, default=3, help="GroC steps per memory probe (0: skip)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="Extra config override for every run, e.g. --set model.prefix.n_layers=1")
    ap.add_argument("--reuse", action="store_true", help="Keep finished runs whose config is unchanged")
    ap.add_argument("--memory-probe", default=None, help=argparse.SUPPRESS)  # internal: child process
    add_output_args(ap)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result = run(args)
    emit(result, args.name, not args.no_save)
    return result


def run(args: argparse.Namespace) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    if args.memory_probe is not None:
        return memory_probe(json.loads(args.memory_probe))

    from groc_base.errors import GrocError
    from langpairs.registry import RELATED
    from polyglot_groc.config import merge_overrides, parse_overrides

    started_all = time.monotonic()
    root = args.data_root or (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else None)
    if root is None or not root.is_dir():
        raise BadInput(f"pass --data-root or set {DATA_ENV} to the shared data folder (../shared/data)")
    targets = list(ALL_TARGETS) if args.targets.strip() == "all" else [
        t.strip().lower() for t in args.targets.split(",") if t.strip()]
    unknown = [t for t in targets if t not in ALL_TARGETS]
    if unknown or not targets:
        raise BadInput(f"unknown target(s) {unknown or args.targets!r}; use {','.join(ALL_TARGETS)} or all")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in ("lookup", "elmo", "groc", "groc-lex") for k in kinds):
        raise BadInput(f"--kinds {args.kinds!r}: choose from lookup,elmo,groc,groc-lex")
    wanted = {x.strip() for x in args.settings.split(",") if x.strip()}
    if not wanted or wanted - {"mono", "EN+tgt", "rel+tgt"}:
        raise BadInput(f"--settings {args.settings!r}: choose from mono,EN+tgt,rel+tgt")
    filters = parse_filters(args.filters)
    if args.memory_pair:
        memory_pair = [x.strip() for x in args.memory_pair.split(",") if x.strip()]
    else:
        memory_pair = [targets[0], RELATED[targets[0]]]
    notes: list[str] = []

    # Languages: the targets, English for EN+tgt, each target's related language for rel+tgt and the
    # memory pair when it is probed; only those are prepared (or must already be, on a machine
    # without the shared text, as the GPU campaign's).
    needed = list(dict.fromkeys([*targets, *(["en"] if "EN+tgt" in wanted else []),
                                 *(RELATED[t] for t in targets if "rel+tgt" in wanted),
                                 *(memory_pair if args.memory_steps > 0 else [])]))
    corpora_dir = args.work / "corpora"
    t0 = time.monotonic()
    corpora = prepare(root, corpora_dir, needed, args.train_tokens, args.eval_tokens, args.tokenize)
    prepare_s = time.monotonic() - t0
    for lang, entry in corpora.items():
        if entry["short"]:
            notes.append(f"{lang}: the sources gave fewer tokens than the budget; its splits shrank")

    common = merge_overrides({
        **FULL_SOFTMAX, "data.root": str(corpora_dir), "data.tokenize": "whitespace", "data.vocab_mode": "closed",
        "data.screen": True, "data.schedule": "proportional",
        "model.d": args.d, "model.prefix.hidden": args.hidden, "model.prefix.n_layers": args.layers,
        "model.prefix.dropout": args.dropout, "model.output.dropout": args.output_dropout,
        "model.surface.filters": filters, "model.surface.char_dim": args.char_dim,
        "train.batch_size": args.batch_size, "train.bptt": args.bptt,
        "train.eval_batch_size": args.eval_batch_size, "train.lr": args.lr,
        "train.eval_every": args.eval_every, "train.threads": args.threads, "train.seed": args.seed,
        "train.max_minutes": args.max_minutes, "train.max_epochs": 1000,
    }, parse_overrides(args.set))
    lexicon = {"model.lexicon.specs": list(args.lexicon or []), "model.lexicon.backend": args.lexicon_backend,
               "model.lexicon.wn_dir": args.wn_dir}

    # Plan: (target, row label, kind, language set); a language set is trained once per kind/steps.
    windows_cache: dict[tuple[str, ...], dict[str, int]] = {}

    def windows(langs: tuple[str, ...]) -> dict[str, int]:
        if langs not in windows_cache:
            windows_cache[langs] = train_windows(corpora_dir, langs, args.batch_size, args.bptt)
        return windows_cache[langs]

    plan: list[tuple[str, str, str, tuple[str, ...]]] = []
    for tgt in targets:
        settings: list[tuple[str, tuple[str, ...]]] = [("mono", (tgt,))]
        if tgt != "en":
            settings.append(("EN+tgt", tuple(sorted({"en", tgt}))))
        settings.append(("rel+tgt", tuple(sorted({RELATED[tgt], tgt}))))
        settings = [s for s in settings if s[0] in wanted]
        for kind in kinds:
            for name, langs in settings:
                if kind in ("lookup", "elmo") and name != "mono" and not args.baseline_polyglot:
                    continue
                if kind == "groc-lex":
                    if name == "rel+tgt":
                        continue  # seed 004 evaluates +lex for EN+tgt only
                    if tgt not in LEX_TARGETS:
                        continue
                    if not args.lexicon:
                        continue
                plan.append((tgt, f"{kind} ({name})", kind, langs))
    if "groc-lex" in kinds:
        lex_targets = [t for t in targets if t in LEX_TARGETS]
        if not args.lexicon and lex_targets:
            notes.append(f"groc-lex skipped for {','.join(lex_targets)}: no --lexicon SPEC given")
        skipped = [t for t in targets if t not in LEX_TARGETS]
        if skipped:
            notes.append(f"groc-lex not run for {','.join(skipped)}: no OMW lexicon (only {','.join(LEX_TARGETS)})")

    rows: dict[str, dict[str, float | None]] = {tgt: {} for tgt in targets}
    budget: dict[str, dict[str, Any]] = {tgt: {} for tgt in targets}
    runs: dict[str, dict[str, Any]] = {}
    for tgt, label, kind, langs in plan:
        if len(langs) == 1:
            total, target_steps = args.steps, args.steps
        else:
            total, target_steps = schedule_steps(windows(langs), tgt, args.steps, args.polyglot_steps_mode)
        name = f"{kind}_{'+'.join(langs)}_{total}steps"
        if name not in runs:
            extra = {"train.output_update_prob": args.output_update_prob} if kind.startswith("groc") else {}
            if kind == "groc-lex":
                extra.update(lexicon)
            run_dir = args.work / "runs" / name
            log.info("=== %s (target %s, %s): %d steps", name, tgt, label, total)
            try:
                cfg = run_config(common, kind, langs, total, extra)
                runs[name] = train_and_test(cfg, run_dir, args.reuse, max(args.steps // 10, 1))
            except Exception as exc:  # one failing model (e.g. a missing lexicon) must not lose the table
                # A user error (GrocError: no wordnet, bad config) is one line; anything else is a bug.
                detail = "" if isinstance(exc, GrocError) else "\n" + traceback.format_exc()
                log.error("[%s] failed: %s%s", name, exc, detail)
                runs[name] = {"run_dir": str(run_dir), "kind": kind, "langs": list(langs), "error": str(exc)}
                notes.append(f"{name} failed ({type(exc).__name__}): {exc}")
            if runs[name].get("stop_reason") == "max_minutes":
                notes.append(f"{name} hit --max-minutes after {runs[name]['steps']} of {total} steps: "
                             f"not an equal budget")
        run = runs[name]
        rows[tgt][label] = run.get("test_perplexity", {}).get(tgt)
        budget[tgt][label] = {"run": name, "total_steps": total, "target_steps": target_steps,
                              "steps_done": run.get("steps"),
                              "target_batches_done": run.get("lang_batches", {}).get(tgt)}
        if "error" in run:
            budget[tgt][label]["error"] = run["error"]
        if label.endswith("(rel+tgt)") and tgt == "fr":
            notes.append("fr: rel+tgt is en+fr, the same run as EN+tgt")

    # Average over non-English targets, per model, where every such target has a number.
    average: dict[str, float | None] = {}
    non_en = [t for t in targets if t != "en"]
    for label in dict.fromkeys(label for t in non_en for label in rows[t]):
        values = [v for t in non_en if (v := rows[t].get(label)) is not None]
        if non_en and len(values) == len(non_en):
            average[label] = _round(sum(values) / len(values))

    # Memory with and without language screening, each setting in a fresh process.
    pair = tuple(sorted(memory_pair))
    memory: dict[str, Any] = {"pair": list(pair), "steps": args.memory_steps,
                              "measure": "VmHWM of a fresh child process per setting (ru_maxrss also given)"}
    if args.memory_steps > 0:
        base = merge_overrides(common, {"model.kind": "groc", "data.langs": list(pair),
                                        "train.max_steps": args.memory_steps + 1, "train.max_minutes": 0,
                                        "train.output_update_prob": args.output_update_prob})
        for screen in (True, False):
            key = "screen" if screen else "no_screen"
            log.info("=== memory probe %s, %s", "+".join(pair), key)
            memory[key] = run_memory_probe(merge_overrides(base, {"data.screen": screen}),
                                           args.work / "runs" / f"memprobe_{'+'.join(pair)}_{key}", args.memory_steps)
        on, off = memory.get("screen", {}), memory.get("no_screen", {})
        if "peak_rss_mib" in on and "peak_rss_mib" in off:
            memory["V_lang"], memory["V_union"] = on["V_lang"], on["V_union"]
            memory["peak_ratio_no_screen_over_screen"] = _round(off["peak_rss_mib"] / on["peak_rss_mib"], 3)
            memory["training_increase_ratio"] = _round(
                off["training_increase_mib"] / max(on["training_increase_mib"], 1e-9), 3)

    per_kind: dict[str, list[float]] = {}
    for run in runs.values():
        if run.get("seconds_per_step") is not None:
            per_kind.setdefault(f"{run['kind']} ({len(run['langs'])} lang)", []).append(run["seconds_per_step"])
    report = {
        "benchmark": "polyglot_table (seed 004 Table 5.2, mini)",
        "config": {
            "targets": targets, "steps": args.steps, "polyglot_steps_mode": args.polyglot_steps_mode,
            "budget_tokens": {"train": args.train_tokens, "valid": args.eval_tokens, "test": args.eval_tokens},
            "d": args.d, "hidden": args.hidden, "layers": args.layers, "filters": filters,
            "char_dim": args.char_dim, "batch_size": args.batch_size, "bptt": args.bptt,
            "eval_batch_size": args.eval_batch_size, "eval_every": args.eval_every, "lr": args.lr,
            "dropout": args.dropout, "output_dropout": args.output_dropout,
            "output_update_prob": args.output_update_prob, "seed": args.seed, "threads": args.threads,
            "max_minutes_per_run": args.max_minutes, "kinds": kinds, "baseline_polyglot": args.baseline_polyglot,
            "lexicon": args.lexicon, "vocab_mode": "closed", "screen": True, "schedule": "proportional",
            "extra_overrides": args.set, "work": str(args.work),
            "metric": "test perplexity of the target language, best checkpoint, screened",
        },
        "corpora": {lang: {"tokenizer": e["tokenizer"], "short": e["short"],
                           **{s: v["tokens"] for s, v in e["splits"].items()}} for lang, e in corpora.items()},
        "rows": rows,
        "average_non_en": average,
        "step_budget": budget,
        "runs": runs,
        "timings": {
            "prepare_s": _round(prepare_s, 1), "total_s": _round(time.monotonic() - started_all, 1),
            "seconds_per_step_by_kind": {k: _round(sum(v) / len(v), 3) for k, v in per_kind.items()},
        },
        "memory": memory,
        "notes": list(dict.fromkeys(notes)),
    }
    return report


if __name__ == "__main__":
    script_main(main)
