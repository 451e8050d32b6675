"""Bring your own language: does a related language help a low-resource language GroC has never seen?

From files alone, with the toolkit's public functions:

1. Cebuano (``ceb``), which the built-in registry does not know, is defined in a user languages
   TOML written here (name, iso3, script, family, related = ["tl"]) and loaded with
   :func:`langpairs.load_registry`.
2. Its corpus is its Universal Declaration of Human Rights from the data bundle
   (``text/nltk_data/udhr2.zip``, ~2,060 tokens, one paragraph per line), prepared with
   :func:`langpairs.prepare_language` (toktok, split 80/10/10 by tokens, held-out text last).
   The related language, Tagalog, is prepared the same way from a file: the first lines of
   ``text/palito/wiki_parallel.tl`` (human translations of English Wikipedia sentences) up to
   ``--related-tokens`` training tokens plus ``--related-eval`` tokens each for valid and test.
   ``--with-english`` adds English the same way (``text/leipzig/eng_wikipedia_2016_10K``).
3. GroC and the tied lookup LM (``tied``) are trained through the public API
   (:func:`polyglot_groc.api.train` with ``languages=`` the TOML file) at the SAME budget
   (``--steps`` steps, same sizes, seed, lr), on ``ceb`` alone (mono) and on ``ceb+tl``
   (rel+tgt; ``ceb+en`` and ``ceb+tl+en`` with ``--with-english``), under each schedule of
   ``--schedules``: ``proportional`` (the thesis's: batches in proportion to each language's text,
   so Cebuano gets ~1/13 of a ceb+tl model's steps) and ``temperature`` (``--temperature`` T:
   shares ∝ n^(1/T), so Cebuano gets more).
4. Per-language TEST perplexity of each model from its best checkpoint (chosen on the pooled
   validation NLL of its languages, as in training), language-screened, closed vocabulary
   (train+valid+test words of the run's languages), for every seed of ``--seeds``; the JSON gives
   each run and, per model, the mean over seeds and the change of Cebuano's perplexity against
   mono of the same kind (negative: the related language helped).

Prints ONE JSON object (saved under ``benchmarks/results/<date>/own_language.json``); it asserts
nothing. CPU sizes by default (d 64, hidden 128, char-CNN 1:16..6:32, batch 8 x 20 tokens, 600
steps, validation every 50, seeds 0,1,2): about 3.5 minutes per seed on one busy core (a GroC
ceb+tl step ~0.15 s, a mono step ~0.03 s; tied models are ~5x faster).

    POLYGLOT_GROC_DATA=../shared/data nice python benchmarks/own_language.py --work bench_out/own_language
    # smoke test (~30 s on one core):
    POLYGLOT_GROC_DATA=../shared/data python benchmarks/own_language.py --work /tmp/ol --steps 4 \\
        --eval-every 2 --related-tokens 2000 --related-eval 300 --seeds 0 --schedules proportional --no-save
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import statistics
import sys
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import FULL_SOFTMAX, BadInput, add_output_args, emit, parse_filters, script_main  # noqa: E402

log = logging.getLogger("own_language")
DATA_ENV = "POLYGLOT_GROC_DATA"
KINDS = ("groc", "tied")
SCHEDULES = ("proportional", "temperature")
TARGET = "ceb"

LANGUAGES_TOML = """# Written by benchmarks/own_language.py: a language the built-in registry does not know.
[languages.ceb]
name = "Cebuano"
iso3 = "ceb"
script = "Latin"
family = "Central Philippine"
related = ["tl"]
"""

UDHR = "text/nltk_data/udhr2.zip"
RELATED_TEXT = "text/palito/wiki_parallel.tl"
ENGLISH_TEXT = "text/leipzig/eng_wikipedia_2016_10K-sentences.txt"


def _round(x: float | None, nd: int = 2) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), nd)


# -- corpora from files ------------------------------------------------------------------------------
def _slice(source: Path, out: Path, tokens: int, leipzig: bool = False) -> Path:
    """The first lines of ``source`` holding about ``tokens`` whitespace tokens (a file to prepare)."""
    lines: list[str] = []
    count = 0
    with source.open(encoding="utf-8") as fh:
        for line in fh:
            text = line.split("\t", 1)[1] if leipzig and "\t" in line else line
            if not text.strip():
                continue
            lines.append(text.strip())
            count += len(text.split())
            if count >= tokens:
                break
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def prepare(root: Path, work: Path, registry: Any, related_tokens: int, related_eval: int,
            english: bool) -> dict[str, Any]:
    """ceb from the UDHR file, tl (and en) from slices of the bundle's text; the prepare.json entries."""
    from langpairs import prepare_language

    files = work / "files"
    files.mkdir(parents=True, exist_ok=True)
    udhr = files / "ceb-udhr.txt"
    try:
        udhr.write_bytes(zipfile.ZipFile(root / UDHR).read("udhr2/ceb.txt"))
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise BadInput(f"cannot read udhr2/ceb.txt from {root / UDHR} ({exc}); point {DATA_ENV} at the data "
                       f"bundle") from exc
    corpora = work / "corpora"
    out: dict[str, Any] = {}
    res = prepare_language(lang=TARGET, inputs=[udhr], out=corpora, registry=registry, text="paragraphs",
                           valid=0.1, test=0.1, overwrite=True)
    out[TARGET] = res.entry
    # ~1.15 toktok tokens per whitespace token on this text: slice a little more than needed.
    need = related_tokens + 2 * related_eval
    sources = [("tl", root / RELATED_TEXT, False)] + ([("en", root / ENGLISH_TEXT, True)] if english else [])
    for lang, source, leipzig in sources:
        if not source.is_file():
            raise BadInput(f"{source} does not exist; point {DATA_ENV} at the data bundle")
        sliced = _slice(source, files / f"{lang}.txt", need, leipzig)
        res = prepare_language(lang=lang, inputs=[sliced], out=corpora, registry=registry, text="lines",
                               valid=related_eval, test=related_eval, overwrite=True)
        out[lang] = res.entry
    return out


# -- training -----------------------------------------------------------------------------------------
class _Hooks:
    def __init__(self, name: str) -> None:
        self.name = name

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        log.info("[%s] %s steps, vocabulary %s, %s steps/epoch", self.name, total_steps, info["vocab"],
                 info["steps_per_epoch"])

    def on_step(self, info: Any) -> None:
        pass

    def on_eval(self, record: Mapping[str, Any]) -> None:
        ppl = ", ".join(f"{k} {v:.1f}" for k, v in record["valid_perplexity"].items())
        log.info("[%s] step %d: valid ppl %s", self.name, record["step"], ppl)


def train_and_test(overrides: Mapping[str, Any], run_dir: Path, languages: Path) -> dict[str, Any]:
    """Train one model through the public API (the languages file defines ceb), then test it."""
    from polyglot_groc.api import evaluate, load_config, train

    cfg = load_config(None, overrides)
    started = time.monotonic()
    result = train(config=cfg, out=run_dir, overwrite=True, hooks=_Hooks(run_dir.name), languages=languages)
    seconds = time.monotonic() - started
    test = evaluate(run=run_dir, split="test", checkpoint="best", screen=True, device="cpu").to_dict()
    best = min(result.history, key=lambda r: r["valid_nll"]) if result.history else {}
    last = result.history[-1] if result.history else {}
    return {
        "kind": cfg.model.kind, "langs": list(cfg.data.langs), "schedule": cfg.data.schedule,
        "seed": cfg.train.seed, "steps": result.steps, "stop_reason": result.stop_reason,
        "best_step": best.get("step"), "lang_batches": last.get("lang_batches", {}),
        "test_perplexity": {lang: _round(p) for lang, p in test["perplexity"].items()},
        "best_valid_perplexity": {lang: _round(p) for lang, p in result.best_valid.items()},
        "n_params": result.n_params, "train_seconds": _round(seconds, 1),
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=Path("bench_out/own_language"), help="corpora/ and runs/ go here")
    ap.add_argument("--data-root", type=Path, default=None, help=f"data bundle (default ${DATA_ENV})")
    ap.add_argument("--related-tokens", type=int, default=20_000, help="Tagalog (and English) training tokens")
    ap.add_argument("--related-eval", type=int, default=2_000, help="Tagalog (and English) valid and test tokens")
    ap.add_argument("--with-english", action="store_true", help="also ceb+en and ceb+tl+en")
    ap.add_argument("--kinds", default=",".join(KINDS), help="groc,tied")
    ap.add_argument("--schedules", default=",".join(SCHEDULES), help="proportional,temperature")
    ap.add_argument("--temperature", type=float, default=5.0, help="T of the temperature schedule")
    ap.add_argument("--steps", type=int, default=600, help="training steps of every model (the equal budget)")
    ap.add_argument("--eval-every", type=int, default=50, help="validate (and keep the best checkpoint) every N")
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated seeds; each model is trained once per seed")
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--filters", default="1:16,2:16,3:32,4:32,5:32,6:32")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--bptt", type=int, default=20)
    ap.add_argument("--lr", type=float, default=0.003)
    ap.add_argument("--dropout", type=float, default=0.3)
    ap.add_argument("--threads", type=int, default=1)
    add_output_args(ap)
    return ap.parse_args(argv)


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not value > 0:
            raise BadInput(f"--{name.replace('_', '-')} {value} must be positive")


def run(args: argparse.Namespace) -> dict[str, Any]:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    root = args.data_root or (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else None)
    if root is None or not root.is_dir():
        raise BadInput(f"pass --data-root or set {DATA_ENV} to the data bundle folder (../shared/data)")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    schedules = [s.strip() for s in args.schedules.split(",") if s.strip()]
    if not kinds or set(kinds) - set(KINDS):
        raise BadInput(f"--kinds {args.kinds!r}: choose from {','.join(KINDS)}")
    if not schedules or set(schedules) - set(SCHEDULES):
        raise BadInput(f"--schedules {args.schedules!r}: choose from {','.join(SCHEDULES)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise BadInput(f"--seeds {args.seeds!r}: give comma-separated integers, e.g. 0,1,2") from None
    if not seeds:
        raise BadInput("--seeds needs at least one seed, e.g. --seeds 0")
    _positive(steps=args.steps, eval_every=args.eval_every, related_tokens=args.related_tokens,
              related_eval=args.related_eval, temperature=args.temperature)
    filters = parse_filters(args.filters)

    from langpairs import load_registry

    args.work.mkdir(parents=True, exist_ok=True)
    languages_file = args.work / "languages.toml"
    languages_file.write_text(LANGUAGES_TOML, encoding="utf-8")
    registry = load_registry(languages_file, env=False)
    if TARGET in load_registry(env=False):
        raise BadInput(f"{TARGET} is built in now; this benchmark is about a language the registry does not know")
    started = time.monotonic()
    corpora = prepare(root, args.work, registry, args.related_tokens, args.related_eval, args.with_english)
    prepare_seconds = time.monotonic() - started

    settings = {"mono": (TARGET,), "rel+tgt": (TARGET, "tl")}
    if args.with_english:
        settings.update({"EN+tgt": (TARGET, "en"), "rel+EN+tgt": (TARGET, "tl", "en")})
    common: dict[str, Any] = {
        **FULL_SOFTMAX, "data.root": str(args.work / "corpora"), "data.vocab_mode": "closed", "data.screen": True,
        "model.d": args.d, "model.prefix.hidden": args.hidden, "model.prefix.dropout": args.dropout,
        "model.surface.filters": filters, "train.batch_size": args.batch_size, "train.bptt": args.bptt,
        "train.lr": args.lr, "train.eval_every": args.eval_every, "train.max_steps": args.steps,
        "train.max_epochs": 100000, "train.threads": args.threads, "data.temperature": args.temperature,
    }

    runs: list[dict[str, Any]] = []
    for kind in kinds:
        for setting, langs in settings.items():
            for schedule in (schedules if len(langs) > 1 else ["-"]):
                for seed in seeds:
                    name = f"{kind}_{'+'.join(langs)}_{schedule}_seed{seed}"
                    overrides = {**common, "model.kind": kind, "data.langs": list(langs), "train.seed": seed,
                                 "data.schedule": schedule if schedule != "-" else "proportional"}
                    log.info("=== %s", name)
                    # The run records ceb's entry from the languages file, as `train --languages` does.
                    record = train_and_test(overrides, args.work / "runs" / name, languages_file)
                    runs.append({**record, "name": name, "setting": setting, "schedule": schedule})

    # Per model (kind, setting, schedule): mean test perplexity over seeds, and ceb's change against mono.
    summary: dict[str, dict[str, Any]] = {}
    for run in runs:
        label = f"{run['kind']} {run['setting']}" + (f" ({run['schedule']})" if run["schedule"] != "-" else "")
        entry = summary.setdefault(label, {"kind": run["kind"], "setting": run["setting"],
                                           "schedule": run["schedule"], "per_seed": {}})
        entry["per_seed"][str(run["seed"])] = run["test_perplexity"]
    for entry in summary.values():
        run_langs = list(next(iter(entry["per_seed"].values())))
        entry["test_perplexity_mean"] = {
            lang: _round(statistics.fmean(p[lang] for p in entry["per_seed"].values())) for lang in run_langs}
        ceb = [p[TARGET] for p in entry["per_seed"].values()]
        entry[f"{TARGET}_test_perplexity_sd"] = _round(statistics.stdev(ceb)) if len(ceb) > 1 else None
    for entry in summary.values():
        mono = summary.get(f"{entry['kind']} mono")
        if mono is not None and entry is not mono:
            m, p = mono["test_perplexity_mean"][TARGET], entry["test_perplexity_mean"][TARGET]
            entry[f"{TARGET}_change_vs_mono_pct"] = _round(100.0 * (p - m) / m, 1)
            wins = sum(entry["per_seed"][s][TARGET] < mono["per_seed"][s][TARGET] for s in entry["per_seed"])
            entry[f"{TARGET}_seeds_better_than_mono"] = f"{wins}/{len(entry['per_seed'])}"

    import torch

    return {
        "benchmark": "own_language: a user-defined low-resource language (Cebuano), mono vs polyglot",
        "device": "cpu", "torch_threads": torch.get_num_threads(),
        "config": {
            "target": TARGET, "languages_file": LANGUAGES_TOML, "settings": {k: list(v) for k, v in settings.items()},
            "kinds": kinds, "schedules": schedules, "temperature": args.temperature, "steps": args.steps,
            "eval_every": args.eval_every, "seeds": seeds, "d": args.d, "hidden": args.hidden, "filters": filters,
            "batch_size": args.batch_size, "bptt": args.bptt, "lr": args.lr, "dropout": args.dropout,
            "vocab_mode": "closed", "screen": True,
            "metric": "test perplexity per language, best checkpoint (pooled valid NLL), screened",
            "sources": {TARGET: f"{UDHR}:udhr2/ceb.txt", "tl": RELATED_TEXT,
                        **({"en": ENGLISH_TEXT} if args.with_english else {})},
        },
        "corpora": {lang: {"tokenizer": e["tokenizer"]["name"], "input_sha256": e["inputs"][0]["sha256"],
                           **{s: {k: v[k] for k in ("sentences", "tokens", "types")} for s, v in e["splits"].items()}}
                    for lang, e in corpora.items()},
        "summary": summary,
        "runs": runs,
        "seconds": {"prepare": _round(prepare_seconds, 1), "total": _round(time.monotonic() - started, 1)},
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    emit(run(args), args.name, not args.no_save)
    return 0


if __name__ == "__main__":
    script_main(main)
