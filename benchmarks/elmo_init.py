"""Mini Table 5.6 (seed 004 §5.5): is ELMo -> GroC initialisation cheaper than GroC from scratch?

Runs, on one corpus and one step budget B (all runs share the corpus, sizes, seed and
evaluation interval, so the learning-rate schedules see the same number of evaluations):

1. an ``elmo`` model (char-CNN input, lookup output) for B steps: "starter (ELMo)";
2. a randomly initialised GroC model, not trained: "random (no train)";
3. the ELMo model converted to GroC (:func:`polyglot_groc.elmo.convert.convert_elmo_bundle`),
   validated before finetuning ("no ft"), then finetuned for B steps with validation at
   B/4, B/2 and B (and every ``B / --evals`` steps: the finetuning curve);
4. GroC from scratch for 2B steps, validated at B and 2B ("equiv. GroC").

The headline number: the finetuning steps ELMo->GroC needs to reach GroC-from-scratch@B's pooled
validation perplexity, linearly interpolated in log-perplexity between validation points,
divided by B ("not reached" when the curve never gets there). ``total_ratio`` adds the B ELMo
pretraining steps; ``seconds`` gives the wall-clock cost of each phase (ELMo steps are cheaper:
its softmax looks up the output table instead of encoding every word).

Prints ONE JSON object on stdout (progress and logs go to stderr). Sized to run in about 15
minutes on 2 CPU cores with e.g. ``--d 128 --hidden 256 --filters 1:32,2:32,3:64,4:128`` and a
budget of a few hundred steps on a ~100k-token corpus; the cost is about 4B training steps plus
(B/evals)*4 validations. Smoke test::

    python benchmarks/elmo_init.py --data tests/data/tiny --langs en,fr --budget 8 --out /tmp/ei \\
        --d 16 --hidden 24 --filters 1:8,2:8,3:16 --batch-size 4 --bptt 8 --eval-batch-size 2 --overwrite
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from benchmarks.common import add_output_args, emit, filters_override, script_main  # noqa: E402
from polyglot_groc.config import RunConfig, load_config, merge_overrides, parse_overrides  # noqa: E402
from polyglot_groc.elmo.convert import converted_record  # noqa: E402
from polyglot_groc.elmo.workflows import init_from_elmo  # noqa: E402
from polyglot_groc.training.data import load_corpus  # noqa: E402
from polyglot_groc.training.trainer import build_bundle, seed_everything  # noqa: E402
from polyglot_groc.training.workflows import train  # noqa: E402

log = logging.getLogger("elmo_init")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--data", type=Path, required=True, help="corpus root <data>/<lang>/{train,valid,test}.txt")
    p.add_argument("--langs", default="en,es", help="comma-separated language codes")
    p.add_argument("--budget", type=int, required=True, help="B: training steps of the ELMo run")
    p.add_argument("--out", type=Path, required=True, help="directory for the four runs")
    p.add_argument("--evals", type=int, default=8, help="validations per B steps (a multiple of 4)")
    p.add_argument("--lr", type=float, default=1e-3, help="finetuning learning rate (seed 004 C.2)")
    p.add_argument("--d", type=int, default=128, help="embedding size")
    p.add_argument("--hidden", type=int, default=256, help="prefix LSTM hidden size")
    p.add_argument("--layers", type=int, default=2, help="prefix LSTM layers")
    p.add_argument("--filters", default="1:32,2:32,3:64,4:128", help="char-CNN width:count,...")
    p.add_argument("--char-dim", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--eval-batch-size", type=int, default=10)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", dest="overrides", action="append", default=[], help="extra config override")
    p.add_argument("--overwrite", action="store_true", help="replace existing run directories under --out")
    p.add_argument("--verbose", action="store_true", help="log progress to stderr")
    add_output_args(p)
    args = p.parse_args(argv)
    if args.budget <= 0 or args.evals <= 0 or args.evals % 4 or args.budget % args.evals:
        p.error(f"--budget {args.budget} must be a positive multiple of --evals {args.evals}, itself a multiple "
                "of 4 (so B/4 and B/2 are validation points)")
    return args


def base_config(args: argparse.Namespace) -> RunConfig:
    return load_config(None, merge_overrides({
        "data.root": args.data, "data.langs": [c.strip() for c in args.langs.split(",") if c.strip()],
        "model.d": args.d, "model.prefix.hidden": args.hidden, "model.prefix.n_layers": args.layers,
        **filters_override(args.filters), "model.surface.char_dim": args.char_dim,
        "train.batch_size": args.batch_size, "train.bptt": args.bptt, "train.eval_batch_size": args.eval_batch_size,
        "train.threads": args.threads, "train.seed": args.seed, "train.max_epochs": 1000000, "train.max_minutes": 0.0,
    }, parse_overrides(args.overrides)))


def with_train(cfg: RunConfig, kind: str | None = None, **train: Any) -> RunConfig:
    model = dataclasses.replace(cfg.model, kind=kind) if kind else cfg.model
    return dataclasses.replace(cfg, model=model, train=dataclasses.replace(cfg.train, **train)).validate()


def point(record: dict[str, Any]) -> dict[str, Any]:
    nll = float(record["valid_nll"])
    return {"step": int(record["step"]), "valid_nll": round(nll, 5), "pooled_perplexity": _ppl(nll),
            "valid_perplexity": {k: _num(v) for k, v in record["valid_perplexity"].items()}}


def _ppl(nll: float) -> float | str:
    return _num(math.exp(nll) if nll < 700 else math.inf)


def _num(x: float) -> float | str:
    """JSON-safe: an overflowing perplexity is reported as the string "inf", never dropped."""
    return float(f"{x:.6g}") if math.isfinite(x) else "inf"


def at(curve: list[dict[str, Any]], step: int) -> dict[str, Any] | None:
    return next((p for p in curve if p["step"] == step), None)


def steps_to_reach(curve: list[dict[str, Any]], target_nll: float) -> float | None:
    """First step where the curve's pooled NLL reaches ``target_nll`` (linear between points)."""
    prev = None
    for p in curve:
        if p["valid_nll"] <= target_nll:
            if prev is None:
                return float(p["step"])
            # Linear in NLL = log-perplexity between the two validations around the crossing.
            frac = (prev["valid_nll"] - target_nll) / (prev["valid_nll"] - p["valid_nll"])
            return prev["step"] + frac * (p["step"] - prev["step"])
        prev = p
    return None


#: The trainings of one run, in order; ``progress`` hears of each as it ends.
PHASES = ("elmo", "finetune", "groc_scratch")


def run(args: argparse.Namespace, *,
        progress: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """The experiment; ``progress(phase, figures)`` is called after each of :data:`PHASES` with that
    training's steps, stop reason, seconds and curve, so a caller keeps what finished if the rest
    is stopped."""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    B = args.budget

    def report(phase: str, res: Any, curve: list[dict[str, Any]], **extra: Any) -> None:
        if progress is not None:
            progress(phase, {"steps": res.steps, "stop_reason": res.stop_reason, "seconds": round(seconds[phase], 1),
                             "train_seconds": round(res.train_seconds, 1), "n_params": res.n_params,
                             "curve": curve, **extra})
    every = B // args.evals
    out = Path(args.out)
    cfg = base_config(args)
    seconds: dict[str, float] = {}

    tick = time.monotonic()
    elmo_cfg = with_train(cfg, "elmo", max_steps=B, eval_every=every)
    elmo_res = train(config=elmo_cfg, out=out / "elmo", overwrite=args.overwrite)
    seconds["elmo"] = time.monotonic() - tick
    elmo_curve = [point(r) for r in elmo_res.history]
    report("elmo", elmo_res, elmo_curve)

    # Random GroC, not trained: the "random (no train)" column.
    groc_cfg = with_train(cfg, "groc", max_steps=2 * B, eval_every=every)
    splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
    corpus = load_corpus(groc_cfg.data, splits)
    seed_everything(args.seed)
    random_rec = point(converted_record(build_bundle(groc_cfg, corpus), corpus, groc_cfg))

    # ELMo -> GroC from the elmo run's best checkpoint, finetuned for B steps with the same
    # validation points (its training settings are the elmo run's, at --lr).
    tick = time.monotonic()
    ft = init_from_elmo(out=out / "elmo2groc", elmo_run=out / "elmo", checkpoint="best", max_steps=B, lr=args.lr,
                        eval_every=every, threads=args.threads, overwrite=args.overwrite)
    seconds["finetune"] = time.monotonic() - tick
    ft_curve = [point(ft.converted)] + [point(r) for r in ft.train.history if r.get("phase") != "converted"]
    report("finetune", ft.train, ft_curve, random_groc_no_train=random_rec)

    tick = time.monotonic()
    scratch_res = train(config=groc_cfg, out=out / "groc", overwrite=args.overwrite)
    seconds["groc_scratch"] = time.monotonic() - tick
    scratch_curve = [point(r) for r in scratch_res.history]
    report("groc_scratch", scratch_res, scratch_curve)

    scratch_b = at(scratch_curve, B)
    needed = steps_to_reach(ft_curve, scratch_b["valid_nll"]) if scratch_b else None
    return {
        "benchmark": "elmo_init", "data": str(args.data), "langs": list(cfg.data.langs), "budget": B,
        "eval_every": every, "finetune_lr": args.lr,
        "sizes": {"d": args.d, "hidden": args.hidden, "layers": args.layers, "filters": args.filters,
                  "char_dim": args.char_dim, "batch_size": args.batch_size, "bptt": args.bptt},
        "n_params": {"elmo": elmo_res.n_params, "groc": scratch_res.n_params},
        "starter_elmo": at(elmo_curve, B) or (elmo_curve[-1] if elmo_curve else None),
        "random_groc_no_train": random_rec,
        "elmo_to_groc_no_ft": ft_curve[0],
        "elmo_to_groc_ft": {label: at(ft_curve, s) for label, s in
                            (("B/4", B // 4), ("B/2", B // 2), ("B", B))},
        "groc_scratch": {"B": scratch_b, "2B": at(scratch_curve, 2 * B)},
        "finetune_steps_to_match_scratch_at_B": round(needed, 2) if needed is not None else "not reached",
        "ratio_finetune_to_scratch": round(needed / B, 4) if needed is not None else "not reached",
        "total_ratio_incl_elmo_pretraining": round((B + needed) / B, 4) if needed is not None else "not reached",
        "stop_reasons": {"elmo": elmo_res.stop_reason, "finetune": ft.train.stop_reason,
                         "groc_scratch": scratch_res.stop_reason},
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "curves": {"elmo": elmo_curve, "elmo_to_groc": ft_curve, "groc_scratch": scratch_curve},
    }


def main(argv: Sequence[str] | None = None, *,
         progress: Callable[[str, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    out = run(args, progress=progress)
    emit(out, args.name, not args.no_save)
    return out


if __name__ == "__main__":
    script_main(main)
