"""Seed 004 chapter 5 at the thesis' data scale, trained until validation stops improving, on CPU.

Tables 5.2 (perplexity: lookup, ELMo-like, GroC, mono and EN+tgt, GroC+lex EN+tgt) and 5.6
(ELMo -> GroC initialisation) on ~1M training tokens a language, every model trained to
convergence (early stopping) under a per-model CPU cap, two models at a time; the alignment and
similarity tables (5.4, 5.5) are computed from the EN+tgt models by ``--stage report``.

Stages (``--stage``, default ``train``):

``train``
    Prepare the corpora (``langpairs.prepare``: ``--train-tokens``/``--eval-tokens`` a language),
    then train every model of the plan that is not finished, ``--jobs`` at a time, each in its own
    process with ``--threads`` threads. A model is finished when it stopped early (validation
    stopped improving for ``--stop-patience`` epochs; the learning rate is divided by 10 after
    ``--lr-patience``), or when it used its CPU cap (``--cpu-minutes``, training and validation
    CPU of every invocation together). A model its cap stopped continues exactly from its
    ``last.pt`` in a later invocation with a larger cap; one killed (or stopped by Ctrl-C)
    continues from its last checkpoint. A finished model is read back, never retrained. Each
    model ends with ``protocol.json`` in its run folder: curve, steps, epochs, CPU seconds, test
    perplexity from the best checkpoint, ``converged`` (the last two validations within 1%), and
    the commit of the code that trained it.
``collect``
    Train nothing; report every model as it stands (unfinished ones from their last checkpoint).

The plan, for each target T of ``--targets`` (seed 004 Table 5.2 and 5.6 columns):
``lookup_T``, ``lookup_en+T``, ``elmo_T``, ``elmo_en+T``, ``groc_T``, ``groc_en+T``,
``groc-lex_en+T`` (with ``--lexicon``), and ``elmo2groc_en+T``: the ``elmo_en+T`` model's input
char-CNN as GroC's output (``init_from_elmo``), measured before finetuning, then finetuned under
the same stopping rule and cap. ``--models`` keeps a subset (names as above).

Every kind trains with the sampled softmax (``train.softmax = "sampled"``, 4096 log-uniform draws:
the campaign's setting); every perplexity reported is the exact full softmax over the language's
vocabulary (closed: train+valid+test words, as the thesis' train+dev), language-screened.

Runs live under ``--work`` (outside the clone: start this script from a worktree pinned to one
commit, so other work never changes the code under a running model). The result JSON (``emit``)
never holds checkpoints; it names each model's commit.

    git worktree add --detach ../thesis-wt HEAD
    cd ../thesis-wt && POLYGLOT_GROC_DATA=../shared/data nohup python benchmarks/thesis_scale.py \\
        --work ../thesis-work --targets fr --lexicon omw-en:1.4 omw-fr:1.4 --wn-dir ../thesis-work/wn \\
        --jobs 2 --threads 1 --cpu-minutes 60 > ../thesis-work/train.log 2>&1 &
    # later, or after a stop: the same command continues; --stage collect reports as it stands
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.common import (  # noqa: E402
    DEFAULT_FILTERS,
    BadInput,
    add_output_args,
    emit,
    parse_filters,
    result_path,
    script_main,
)

log = logging.getLogger("thesis_scale")

REPO = Path(__file__).resolve().parent.parent
DATA_ENV = "POLYGLOT_GROC_DATA"
KINDS = ("lookup", "elmo", "groc", "groc-lex", "elmo2groc")
#: Seed 004 Table 5.2 (test perplexity, models trained to convergence on 1M tokens of wiki40b).
THESIS_TABLE_5_2: dict[str, dict[str, float]] = {
    "fr": {"lookup_mono": 274, "lookup_en": 239, "elmo_mono": 197, "elmo_en": 194, "groc_mono": 186,
           "groc_en": 181, "groc-lex_en": 173},
    "es": {"lookup_mono": 345, "lookup_en": 292, "elmo_mono": 236, "elmo_en": 232, "groc_mono": 211,
           "groc_en": 206, "groc-lex_en": 215},
    "nl": {"lookup_mono": 388, "lookup_en": 355, "elmo_mono": 266, "elmo_en": 261, "groc_mono": 257,
           "groc_en": 253, "groc-lex_en": 250},
}
#: Seed 004 Table 5.6: starter ELMo (EN+tgt), equivalent GroC, ELMo->GroC no ft / 1 / 5 / 40 epochs.
THESIS_TABLE_5_6: dict[str, dict[str, float]] = {
    "fr": {"starter_elmo": 194, "equiv_groc": 179, "no_ft": 1.55e19, "ft_1": 313, "ft_5": 234, "ft_40": 176},
    "es": {"starter_elmo": 232, "equiv_groc": 206, "no_ft": 1.31e23, "ft_1": 360, "ft_5": 285, "ft_40": 205},
}


# -- the plan ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """One model of the plan: ``kind`` on ``langs``; ``parent`` names the run it starts from."""

    name: str
    kind: str
    langs: tuple[str, ...]
    target: str
    setting: str  # "mono" | "EN+tgt"
    parent: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "langs": list(self.langs)}


def model_name(kind: str, langs: Sequence[str]) -> str:
    return f"{kind}_{'+'.join(langs)}"


def make_plan(targets: Sequence[str], lexicon: bool) -> list[ModelSpec]:
    """The models for ``targets``, most expensive first within a target (so two workers stay busy)."""
    plan: list[ModelSpec] = []
    for tgt in targets:
        pair = tuple(sorted({"en", tgt}))
        elmo_pair = model_name("elmo", pair)
        rows = [("elmo", pair, "EN+tgt", ""), ("groc", pair, "EN+tgt", "")]
        if lexicon:
            rows.append(("groc-lex", pair, "EN+tgt", ""))
        rows += [("lookup", pair, "EN+tgt", ""), ("groc", (tgt,), "mono", ""), ("elmo", (tgt,), "mono", ""),
                 ("lookup", (tgt,), "mono", ""), ("elmo2groc", pair, "EN+tgt", elmo_pair)]
        for kind, langs, setting, parent in rows:
            plan.append(ModelSpec(model_name(kind, langs), kind, langs, tgt, setting, parent))
    return list({m.name: m for m in plan}.values())


# -- CPU accounting ------------------------------------------------------------------------------
CPU_FILE = "cpu.json"


def cpu_spent(run_dir: Path, step: int | None = None) -> float:
    """CPU seconds the run had spent when it reached ``step`` (default: its last record)."""
    path = run_dir / CPU_FILE
    if not path.is_file():
        return 0.0
    marks = json.loads(path.read_text(encoding="utf-8"))["marks"]
    if step is not None:
        marks = [m for m in marks if m["step"] <= step]
    return float(marks[-1]["cpu_s"]) if marks else 0.0


class CpuCap:
    """Trainer hooks: this process's CPU time (training and validation) on top of what the run spent
    before its checkpoint (``cpu.json``), written at every validation; at ``cap_s`` the run stops
    (``StopTraining``: validated, checkpointed, resumable exactly).

    The marks are written at validations because a resume starts from the checkpoint a validation
    wrote: CPU spent after it, by a process that was then killed, produced nothing the run keeps.
    """

    def __init__(self, run_dir: Path, cap_s: float, start_step: int) -> None:
        self.run_dir, self.cap_s = run_dir, cap_s
        self.before = cpu_spent(run_dir, start_step)
        path = run_dir / CPU_FILE
        marks = json.loads(path.read_text(encoding="utf-8"))["marks"] if path.is_file() else []
        self.marks = [m for m in marks if m["step"] <= start_step]
        self.started = time.process_time()

    def spent(self) -> float:
        return self.before + time.process_time() - self.started

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        pass

    def on_step(self, info: Any) -> None:
        import polyglot_groc as pg

        if self.cap_s and self.spent() >= self.cap_s:
            raise pg.StopTraining(f"CPU cap of {self.cap_s / 60:.0f} minutes reached")

    def on_eval(self, record: Mapping[str, Any]) -> None:
        from groc_base.fileio import atomic_write_bytes, dumps_json

        self.marks.append({"step": int(record["step"]), "cpu_s": round(self.spent(), 2)})
        atomic_write_bytes(self.run_dir / CPU_FILE, (dumps_json({"marks": self.marks}) + "\n").encode("utf-8"))


# -- one model (worker process) ------------------------------------------------------------------
def _commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=False)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True,
                           text=True, check=False)
    return proc.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "") if proc.returncode == 0 else "unknown"


def _what_it_computes(cfg: Any) -> dict[str, Any]:
    """The config without what an invocation may change (its budget, threads, device)."""
    train = dataclasses.replace(cfg.train, threads=0, device="auto", max_minutes=0.0, log_every=1,
                                checkpoint_minutes=0.0)
    return dataclasses.asdict(dataclasses.replace(cfg, train=train, parent=type(cfg.parent)()))


def _as_requested(stored: Any, requested: Any) -> Any:
    """``stored`` (a run's recorded config) with the lexicon fields ``requested`` leaves to the run
    put back as requested: a run records its lexicon resolved (the gloss wordnets it chose, its data
    folder made absolute: ``lexforms.resolved_config``), which a request that leaves them empty
    does not repeat; without this a groc-lex model could never be continued."""
    lex, want = stored.model.lexicon, requested.model.lexicon
    left = {f: getattr(want, f) for f in ("specs", "gloss_specs", "wn_dir", "nltk_data", "tsv_path")
            if hasattr(want, f) and not getattr(want, f)}
    model = dataclasses.replace(stored.model, lexicon=dataclasses.replace(lex, **left))
    return dataclasses.replace(stored, model=model)


def converged(curve: Sequence[float]) -> bool:
    """The issue's test: the last two validations within 1% of each other."""
    return len(curve) >= 2 and abs(curve[-1] / curve[-2] - 1.0) <= 0.01


def _scheduled(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The schedule's validations: the end-of-epoch ones, not those a stop or a wall-clock checkpoint added."""
    return [r for r in history if r.get("scheduled", True) and r.get("phase") != "converted"]


def _ppl(nll: float) -> float | None:
    return round(math.exp(nll), 2) if nll < 700 else None


def model_report(spec: ModelSpec, run_dir: Path, res: Any, cap_s: float, commit: str,
                 test: Mapping[str, float] | None) -> dict[str, Any]:
    """What the tables need of one model (every figure from its files: the history is metrics.jsonl,
    which also holds a converted model's record from before finetuning)."""
    import polyglot_groc as pg

    history = list(pg.load_result(run=run_dir).history)
    sched = _scheduled(history)
    pooled = [_ppl(float(r["valid_nll"])) for r in sched]
    tgt_curve = [round(float(r["valid_perplexity"][spec.target]), 2) for r in sched]
    cpu = cpu_spent(run_dir)
    corpus_tokens = {}
    manifest = run_dir.parent.parent / "corpora" / "prepare.json"
    if manifest.is_file():
        langs = json.loads(manifest.read_text(encoding="utf-8"))["languages"]
        corpus_tokens = {lang: langs[lang]["splits"]["train"]["tokens"] for lang in spec.langs if lang in langs}
    best = min(history, key=lambda r: float(r["valid_nll"])) if history else {}
    stop = res.stop_reason
    if stop == "stopped" and cap_s and cpu >= cap_s - 1:
        stop = "cpu_cap"
    out: dict[str, Any] = {
        **spec.to_dict(), "commit": commit, "train_tokens": corpus_tokens,
        "steps": res.steps, "epochs": round(float(res.epochs), 3), "stop_reason": stop,
        "cpu_seconds": round(cpu, 1), "cpu_cap_seconds": cap_s, "n_params": res.n_params,
        "tokens_per_s": round(float(res.tokens_per_s), 1),
        "best_step": best.get("step"), "best_epoch": best.get("epoch"),
        # The validation early stopping read (--valid-tokens: a sample of the valid split), at the best step.
        "valid_perplexity": {k: round(float(v), 2) for k, v in (best.get("valid_perplexity") or {}).items()},
        "valid_tokens": best.get("valid_tokens"),
        "test_perplexity": {k: round(float(v), 2) for k, v in (test or {}).items()},
        "converged": converged([p for p in tgt_curve if p is not None]),
        "curve": {"step": [int(r["step"]) for r in sched], "epoch": [r["epoch"] for r in sched],
                  "lr": [r["lr"] for r in sched], "valid_pooled": pooled, f"valid_{spec.target}": tgt_curve,
                  "train_perplexity": [round(float(r["train_perplexity"]), 2) for r in sched],
                  "cpu_s": [m["cpu_s"] for m in _marks_at(run_dir, [int(r["step"]) for r in sched])]},
    }
    converted = [r for r in history if r.get("phase") == "converted"]
    if converted:  # elmo2groc: the converted model before any finetuning
        out["no_finetune"] = {"valid_nll": float(converted[0]["valid_nll"]),
                              "parent_step": converted[0].get("init_step"),
                              "valid_perplexity": {k: float(v) for k, v in converted[0]["valid_perplexity"].items()}}
    return out


def _marks_at(run_dir: Path, steps: Sequence[int]) -> list[dict[str, Any]]:
    path = run_dir / CPU_FILE
    marks = json.loads(path.read_text(encoding="utf-8"))["marks"] if path.is_file() else []
    by_step: dict[int, dict[str, Any]] = {}
    for m in marks:  # the last mark at a step: a resumed run may have validated it twice
        by_step[int(m["step"])] = m
    return [by_step.get(s, {"step": s, "cpu_s": None}) for s in steps]


def train_model(spec_dict: dict[str, Any], overrides: dict[str, Any], work: str, cap_s: float,
                collect: bool) -> dict[str, Any]:
    """Train (or continue, or read back) one model in this process; its report.

    Finished (``protocol.json`` with this cap or a smaller one that it did not reach): read back.
    Stopped by its cap, a kill or Ctrl-C (``last.pt``): continued exactly under the new cap.
    New: trained from scratch (``elmo2groc``: converted from its parent's best checkpoint first).
    ``collect`` trains nothing and reports an unfinished model as it stands.
    """
    import polyglot_groc as pg
    from groc_base.fileio import atomic_write_bytes, dumps_json
    from polyglot_groc.config import load_config, merge_overrides

    spec = ModelSpec(**{**spec_dict, "langs": tuple(spec_dict["langs"])})
    run_dir = Path(work) / "runs" / spec.name
    protocol = run_dir / "protocol.json"
    commit = _commit()
    if spec.kind == "elmo2groc":
        cfg = None  # the converted run's config comes from its parent
    else:
        cfg = load_config(None, merge_overrides(overrides, {"model.kind": spec.kind, "data.langs": list(spec.langs)}))
    if protocol.is_file():
        done = json.loads(protocol.read_text(encoding="utf-8"))
        # A model its cap stopped goes on under a larger cap, or none (0).
        capped_again = done["stop_reason"] == "cpu_cap" and (not cap_s or cap_s > float(done["cpu_cap_seconds"]))
        if collect or not capped_again:
            return dict(done)
    if (run_dir / "last.pt").is_file():
        stored = load_config(run_dir / "config.toml")
        if cfg is not None and _what_it_computes(_as_requested(stored, cfg)) != _what_it_computes(cfg):
            raise BadInput(f"{run_dir} was trained with another configuration; use the flags of the first "
                           "invocation, or a new --work")
        res = pg.load_result(run=run_dir)
        if not collect and res.stop_reason in ("stopped", "interrupted", "max_minutes"):
            log.info("[%s] continuing from step %d (%.0f CPU s spent)", spec.name, res.steps, cpu_spent(run_dir))
            res = pg.resume(run=run_dir, threads=int(overrides.get("train.threads", 1)),
                            hooks=CpuCap(run_dir, cap_s, res.steps))
    elif collect:
        return {**spec.to_dict(), "stop_reason": "not started"}
    elif spec.kind == "elmo2groc":
        parent = Path(work) / "runs" / spec.parent
        train_keys = {k: v for k, v in overrides.items() if k.startswith("train.")}
        res = pg.init_from_elmo(out=run_dir, elmo_run=parent, checkpoint="best", lr=1e-3, finetune_epochs=1000,
                                eval_every=0, overrides=train_keys, threads=int(overrides.get("train.threads", 1)),
                                overwrite=True, hooks=CpuCap(run_dir, cap_s, 0)).train
    else:
        assert cfg is not None
        res = pg.train(config=cfg, out=run_dir, overwrite=True, hooks=CpuCap(run_dir, cap_s, 0))
    unfinished = res.stop_reason in ("interrupted", "max_minutes") or (
        res.stop_reason == "stopped" and not (cap_s and cpu_spent(run_dir) >= cap_s - 1))
    test = None
    if (run_dir / "best.pt").is_file():
        test = pg.evaluate(run=run_dir, split="test", checkpoint="best", device="cpu",
                           threads=int(overrides.get("train.threads", 1))).to_dict()["perplexity"]
    report = model_report(spec, run_dir, res, cap_s, commit, test)
    if unfinished:
        report["stop_reason"] = f"unfinished ({res.stop_reason})"
    elif not collect:
        atomic_write_bytes(protocol, (dumps_json(report, indent=1) + "\n").encode("utf-8"))
    log.info("[%s] %s after %d steps (%.2f epochs, %.0f CPU s); test %s", spec.name, report["stop_reason"],
             report["steps"], report["epochs"], report["cpu_seconds"], report["test_perplexity"])
    return report


def _worker_init(threads: int) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(process)d %(name)s %(message)s")


# -- corpora: the validation sample early stopping reads ----------------------------------------
def early_stop_corpora(corpora: Path, out: Path, langs: Sequence[str], valid_tokens: int) -> Path:
    """``out/<lang>/{train,valid,test}.txt``: train and test as prepared, valid an evenly spaced sample of
    the prepared valid lines with about ``valid_tokens`` tokens (0: all of them).

    Early stopping validates every epoch with the exact softmax over the language's vocabulary, which
    at ~80k words and 100k tokens costs about a third of an epoch's training CPU; a 20k-token sample
    decides when to stop as well for a fifth of that. Every k-th line keeps the source groups'
    proportions (valid.txt holds each group's part in turn). Test perplexity stays the full test split.
    """
    from groc_base.fileio import atomic_write_bytes

    for lang in langs:
        for split in ("train", "valid", "test"):
            data = (corpora / lang / f"{split}.txt").read_bytes()
            if split == "valid" and valid_tokens:
                lines = data.decode("utf-8").splitlines()
                total = sum(len(line.split()) for line in lines)
                every = max(1, math.ceil(total / valid_tokens))
                data = ("\n".join(lines[::every]) + "\n").encode("utf-8")
            target = out / lang / f"{split}.txt"
            if not target.is_file() or target.read_bytes() != data:
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_bytes(target, data)
    return out


# -- report: the thesis' tables beside ours -------------------------------------------------------
def _get(models: Mapping[str, Any], kind: str, langs: Sequence[str]) -> dict[str, Any]:
    m = models.get(model_name(kind, langs)) or {}
    return m if m.get("test_perplexity") else {}


def _status(m: Mapping[str, Any]) -> dict[str, Any]:
    return {k: m.get(k) for k in ("steps", "epochs", "cpu_seconds", "stop_reason", "converged", "best_epoch")}


def table_5_2(models: Mapping[str, Any], target: str) -> dict[str, Any]:
    """Test perplexity of the target for every row of Table 5.2 we trained, beside the thesis'."""
    pair = tuple(sorted({"en", target}))
    thesis = THESIS_TABLE_5_2.get(target, {})
    rows: dict[str, Any] = {}
    for kind in ("lookup", "elmo", "groc", "groc-lex"):
        for setting, langs in (("mono", (target,)), ("en", pair)):
            if kind == "groc-lex" and setting == "mono":
                continue
            m = _get(models, kind, langs)
            rows[f"{kind}_{setting}"] = {"ours": m.get("test_perplexity", {}).get(target),
                                         "thesis": thesis.get(f"{kind}_{setting}"), **_status(m)}
    return rows


def _interp_step(curve: Sequence[tuple[float, float, float | None]], target_nll: float) -> tuple[float, float] | None:
    """(step, CPU seconds) where a curve of (step, nll, cpu) first reaches ``target_nll`` (linear in NLL)."""
    prev = None
    for step, nll, cpu in curve:
        if nll <= target_nll:
            if prev is None:
                return float(step), float(cpu or 0.0)
            frac = (prev[1] - target_nll) / (prev[1] - nll)
            c0, c1 = prev[2] or 0.0, cpu or 0.0
            return prev[0] + frac * (step - prev[0]), c0 + frac * (c1 - c0)
        prev = (step, nll, cpu)
    return None


def table_5_6(models: Mapping[str, Any], target: str, random_valid: float | None) -> dict[str, Any]:
    """ELMo -> GroC: the converted model before and during finetuning, and what it costs to reach the
    from-scratch GroC's best validation (pooled NLL of both languages, the stopping criterion)."""
    pair = tuple(sorted({"en", target}))
    elmo, scratch, ft = (_get(models, k, pair) for k in ("elmo", "groc", "elmo2groc"))
    out: dict[str, Any] = {"thesis": THESIS_TABLE_5_6.get(target), "random_no_train_valid": random_valid}
    if not (elmo and scratch and ft):
        out["missing"] = [n for n, m in (("elmo", elmo), ("groc", scratch), ("elmo2groc", ft)) if not m]
        return out
    curve = ft["curve"]
    by_epoch = dict(zip(curve["epoch"], curve[f"valid_{target}"], strict=True))
    first_epoch = lambda e: next((v for ep, v in by_epoch.items() if ep >= e), None)  # noqa: E731
    out.update({
        "starter_elmo_test": elmo["test_perplexity"][target], "equiv_groc_test": scratch["test_perplexity"][target],
        "no_ft_valid": (ft.get("no_finetune") or {}).get("valid_perplexity", {}).get(target),
        "ft_1_epoch_valid": first_epoch(1.0), "ft_5_epochs_valid": first_epoch(5.0),
        "ft_final_test": ft["test_perplexity"][target], "ft": _status(ft), "scratch": _status(scratch),
        "elmo": _status(elmo)})
    # Scratch's best pooled validation, and where each curve first reaches it.
    s_curve = scratch["curve"]
    s_nll = [math.log(p) for p in s_curve["valid_pooled"]]
    best = min(range(len(s_nll)), key=s_nll.__getitem__)
    scratch_at = (float(s_curve["step"][best]), float(s_curve["cpu_s"][best] or 0.0))
    no_ft = ft.get("no_finetune") or {}
    ft_points = [(0.0, float(no_ft.get("valid_nll", math.inf)), 0.0)] if no_ft else []
    ft_points += [(float(s), math.log(p), c) for s, p, c in zip(curve["step"], curve["valid_pooled"], curve["cpu_s"],
                                                                strict=True)]
    reached = _interp_step(ft_points, s_nll[best])
    out["scratch_best"] = {"step": scratch_at[0], "cpu_s": scratch_at[1], "valid_pooled": s_curve["valid_pooled"][best]}
    if reached is None:
        out["finetune_to_scratch"] = "not reached"
    else:
        elmo_cpu = float(elmo.get("cpu_seconds") or 0.0)
        out["finetune_to_scratch"] = {
            "steps": round(reached[0], 1), "cpu_s": round(reached[1], 1),
            "step_ratio": round(reached[0] / scratch_at[0], 4), "cpu_ratio": round(reached[1] / scratch_at[1], 4),
            "cpu_ratio_incl_elmo_training": round((reached[1] + elmo_cpu) / scratch_at[1], 4)}
    return out


def random_groc_valid(work: Path, target: str) -> float | None:
    """Valid perplexity of the target under an untrained GroC of the EN+tgt model's config ("random (no train)")."""
    from polyglot_groc.config import load_config
    from polyglot_groc.elmo.convert import converted_record
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.trainer import build_bundle, seed_everything

    run = work / "runs" / model_name("groc", sorted({"en", target}))
    if not (run / "config.toml").is_file():
        return None
    cfg = load_config(run / "config.toml")
    corpus = load_corpus(cfg.data, ("train", "valid", "test"), cfg.languages)
    seed_everything(cfg.train.seed)
    return float(converted_record(build_bundle(cfg, corpus), corpus, cfg)["valid_perplexity"][target])


def tables_5_4_5_5(work: Path, target: str, args: argparse.Namespace,
                   models: Mapping[str, Any]) -> dict[str, Any]:
    """Supervised MUSE (Procrustes, 10 refinements, CSLS) on the EN+tgt models' output embeddings, with the
    identical-string, char 3-gram and no-mapping baselines and word similarity: benchmarks/align_polyglot.
    Only the reported ``models`` (``--models``) that have a best checkpoint are aligned."""
    from benchmarks import align_polyglot

    pair = "+".join(sorted({"en", target}))
    argv = ["--src", "en", "--tgt", target, "--refine", "10", "--threads", str(args.threads), "--no-save"]
    found = False
    for kind in ("groc", "lookup", "elmo", "groc-lex"):
        run = work / "runs" / f"{kind}_{pair}"
        if f"{kind}_{pair}" in models and (run / "best.pt").is_file():
            argv += [f"--{kind}", str(run)]
            found = True
    if not found:
        return {"missing": f"no EN+{target} run"}
    # Every model is asked the same queries: the English words training saw (a lookup model has no
    # trained row for a word only valid/test hold, and align leaves untrained rows out).
    seen = work / "eval-words-en.txt"
    if not seen.is_file():
        from groc_base.fileio import atomic_write_bytes
        from groc_base.textio import read_text

        words = sorted(set(read_text(work / "corpora" / "en" / "train.txt").split()))
        atomic_write_bytes(seen, ("\n".join(words) + "\n").encode("utf-8"))
    argv += ["--eval-words", str(seen)]
    if args.data_root is not None:
        argv += ["--data-root", str(args.data_root)]
    return align_polyglot.run(align_polyglot.parse_args(argv))


def earlier_alignment(path: Path, target: str, models: Mapping[str, Any]) -> dict[str, Any]:
    """Tables 5.4/5.5 of an earlier report (``--alignment-from``), kept only if every model it aligned is
    the same checkpoint now (its best step): a model trained on since then is aligned again, not reused."""
    from groc_base.textio import read_text

    try:
        earlier = json.loads(read_text(path))
        block, before = earlier["tables"][target]["alignment_detail"], earlier["models"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BadInput(f"--alignment-from {path}: not a thesis_scale report with target {target} ({exc}); "
                       "pass the JSON a --stage report run saved") from exc
    for label in (block.get("models") or {}):
        name = f"{label}_{'+'.join(sorted({'en', target}))}"
        now, then = (models.get(name) or {}).get("best_step"), (before.get(name) or {}).get("best_step")
        if now is None or now != then:
            raise BadInput(f"--alignment-from {path}: {name} was aligned at best step {then}, its best step is now "
                           f"{now}; drop --alignment-from to align it again")
    return {**block, "reused_from": str(path)}


def _p(block: Mapping[str, Any], label: str, row: tuple[str, str], k: int, part: str = "") -> float | None:
    for r in block.get("table", {}).get("rows", []):
        if r["words_of"] == label and (r["model"], r["retrieval"]) == row:
            return r.get(f"{part}p_at_{k}")
    return None


def alignment_rows(block: Mapping[str, Any]) -> dict[str, Any]:
    """P@1/P@5 (CSLS) per model, with the baselines on each model's scored words and the identical split."""
    out: dict[str, Any] = {}
    for label, rec in (block.get("models") or {}).items():
        ali = rec.get("alignment") or {}
        muse_base = ((ali.get("protocols") or {}).get("muse") or {}).get("baselines") or {}
        row: dict[str, Any] = {"n_queries": (ali.get("eval_dictionary") or {}).get("found")}
        for k in (1, 5):
            row[f"csls_p{k}"] = _p(block, label, (label, "csls"), k)
            row[f"csls_p{k}_non_identical"] = _p(block, label, (label, "csls"), k, "non_identical_")
            row[f"identical_string_p{k}"] = _p(block, label, ("identical string", "-"), k)
            row[f"char3gram_p{k}"] = _p(block, label, ("char 3-gram", "-"), k)
            row[f"char3gram_p{k}_non_identical"] = _p(block, label, ("char 3-gram", "-"), k, "non_identical_")
            for method, res in (muse_base.get("no_mapping") or {}).items():  # the spaces before the mapping
                if res.get(f"precision_at_{k}") is not None:
                    row[f"no_mapping_{method}_p{k}"] = round(float(res[f"precision_at_{k}"]), 2)
        row["similarity"] = {key: (v.get("in_vocabulary") or {}).get("rho") for key, v in
                             (rec.get("similarity") or {}).items()}
        out[label] = row
    return out


def claims(t52: Mapping[str, Any], ali: Mapping[str, Any], t56: Mapping[str, Any], target: str) -> list[dict[str, str]]:
    """One line per thesis claim: reproduced, reversed, partly, or not measurable here (and why)."""
    out: list[dict[str, str]] = []

    def ours(row: str) -> float | None:
        return t52.get(row, {}).get("ours")

    def verdict(pairs: Sequence[tuple[str, str]], claim: str) -> None:
        known = [(a, b, ours(a), ours(b)) for a, b in pairs]
        measured = [(a, b, x, y) for a, b, x, y in known if x is not None and y is not None]
        if not measured:
            out.append({"claim": claim, "verdict": "not measurable", "why": "models missing"})
            return
        held = [x < y for _, _, x, y in measured]
        v = "reproduced" if all(held) else "reversed" if not any(held) else "partly"
        why = "; ".join(f"{a} {x:.1f} {'<' if x < y else '>='} {b} {y:.1f}" for a, b, x, y in measured)
        out.append({"claim": claim, "verdict": v, "why": why})

    verdict([("groc_mono", "elmo_mono"), ("elmo_mono", "lookup_mono"), ("groc_en", "elmo_en"),
             ("elmo_en", "lookup_en")], f"{target}: GroC < ELMo-like < lookup (test perplexity)")
    verdict([("lookup_en", "lookup_mono"), ("elmo_en", "elmo_mono"), ("groc_en", "groc_mono")],
            f"{target}: polyglot EN+{target} < mono, per kind")
    verdict([("groc-lex_en", "groc_en")], f"{target}: GroC+lex < GroC (EN+{target})")
    g, lk = ali.get("groc", {}), ali.get("lookup", {})
    if g.get("csls_p5") is not None and lk.get("csls_p5") is not None:
        above_lookup, above_ngram = g["csls_p5"] > lk["csls_p5"], g["csls_p5"] > (g.get("char3gram_p5") or 0.0)
        v = "reproduced" if above_lookup and above_ngram else "reversed" if not above_lookup else "partly"
        out.append({"claim": f"en-{target}: GroC p@5 above lookup's and above the char 3-gram baseline",
                    "verdict": v, "why": f"GroC {g['csls_p5']}, lookup {lk['csls_p5']}, char 3-gram on GroC's "
                                         f"words {g.get('char3gram_p5')}"})
    else:
        out.append({"claim": f"en-{target}: GroC p@5 above lookup's and the char 3-gram baseline",
                    "verdict": "not measurable", "why": "alignment missing"})
    reach = t56.get("finetune_to_scratch")
    if isinstance(reach, dict):
        v = "reproduced" if reach["step_ratio"] < 1 else "reversed"
        out.append({"claim": f"EN+{target}: ELMo-init reaches scratch GroC in fewer steps", "verdict": v,
                    "why": f"finetuning needs {reach['step_ratio']:.2f}x scratch's steps ({reach['cpu_ratio']:.2f}x "
                           f"its CPU; {reach['cpu_ratio_incl_elmo_training']:.2f}x with the ELMo training)"})
    else:
        out.append({"claim": f"EN+{target}: ELMo-init reaches scratch GroC in fewer steps",
                    "verdict": "reversed" if reach == "not reached" else "not measurable",
                    "why": "the finetuned model never reached scratch GroC's best validation" if reach == "not reached"
                    else f"missing: {t56.get('missing')}"})
    return out


def plot_curves(models: Mapping[str, Any], target: str, path: Path) -> None:
    """Validation perplexity of the target by epoch and by CPU hour, one line a model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), dpi=90)
    for name, m in models.items():
        curve = m.get("curve") or {}
        ys = curve.get(f"valid_{target}") or []
        if not ys:
            continue
        axes[0].plot(curve["epoch"], ys, marker="o", ms=2, label=name)
        cpu = [c / 3600 if c is not None else math.nan for c in curve["cpu_s"]]
        axes[1].plot(cpu, ys, marker="o", ms=2, label=name)
    for ax, xlabel in zip(axes, ("epoch", "CPU hours (training + validation)"), strict=True):
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"valid perplexity ({target})")
        ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"thesis scale, target {target}: validation curves (exact softmax)")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)


def report(models: Mapping[str, Any], targets: Sequence[str], args: argparse.Namespace,
           out_png: Path | None) -> dict[str, Any]:
    """Tables 5.2, 5.4/5.5, 5.6 and the claims, per target; a PNG of the curves beside the JSON."""
    per_target: dict[str, Any] = {}
    for tgt in targets:
        t52 = table_5_2(models, tgt)
        ali_block = (earlier_alignment(args.alignment_from, tgt, models) if args.alignment_from is not None
                     else {"skipped": True} if args.skip_alignment else tables_5_4_5_5(args.work, tgt, args, models))
        ali = alignment_rows(ali_block)
        t56 = table_5_6(models, tgt, None if args.skip_random else random_groc_valid(args.work, tgt))
        per_target[tgt] = {"table_5_2": t52, "table_5_4_5_5": ali, "table_5_6": t56,
                           "claims": claims(t52, ali, t56, tgt), "alignment_detail": ali_block}
        if out_png is not None:
            plot_curves({n: m for n, m in models.items() if tgt in (m.get("langs") or [])}, tgt,
                        out_png.with_name(f"{out_png.stem}_{tgt}.png"))
    return per_target


# -- driver --------------------------------------------------------------------------------------
def common_overrides(args: argparse.Namespace, corpora: Path) -> dict[str, Any]:
    from polyglot_groc.config import merge_overrides, parse_overrides

    return merge_overrides({
        "data.root": str(corpora), "data.tokenize": "whitespace", "data.vocab_mode": "closed",
        "data.screen": True, "data.schedule": "proportional",
        "model.d": args.d, "model.prefix.hidden": args.hidden, "model.prefix.n_layers": args.layers,
        "model.prefix.dropout": args.dropout, "model.output.dropout": args.output_dropout,
        "model.surface.filters": parse_filters(args.filters), "model.surface.char_dim": 16,
        "model.lexicon.specs": list(args.lexicon or []), "model.lexicon.backend": "wn",
        "model.lexicon.wn_dir": str(args.wn_dir or ""),
        "train.batch_size": args.batch_size, "train.bptt": args.bptt, "train.eval_batch_size": 10,
        "train.lr": args.lr, "train.eval_every": 0, "train.lr_patience": args.lr_patience,
        "train.stop_patience": args.stop_patience, "train.max_epochs": 1000, "train.max_steps": 0,
        "train.max_minutes": 0.0, "train.checkpoint_minutes": 0.0, "train.threads": args.threads,
        "train.seed": args.seed, "train.device": "cpu", "train.log_every": 500,
        "train.softmax": "sampled", "train.sampled_k": 4096, "train.sampled_proposal": "log-uniform",
    }, parse_overrides(args.set))


def train_all(plan: Sequence[ModelSpec], overrides: dict[str, Any], args: argparse.Namespace,
              collect: bool) -> dict[str, dict[str, Any]]:
    """Every model, ``--jobs`` at a time, a model after its parent; reports in plan order."""
    cap_s = 60.0 * args.cpu_minutes
    done: dict[str, dict[str, Any]] = {}
    pending = list(plan)
    names = {m.name for m in plan}
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter per worker: no state shared
    with ProcessPoolExecutor(max_workers=max(1, args.jobs), mp_context=ctx, initializer=_worker_init,
                             initargs=(args.threads,)) as pool:
        running: dict[Future[dict[str, Any]], str] = {}
        while pending or running:
            for spec in list(pending):
                if len(running) >= max(1, args.jobs):
                    break
                if spec.parent and spec.parent in names and spec.parent not in done:
                    continue  # its parent trains first
                pending.remove(spec)
                if spec.parent in done and "error" in done[spec.parent]:
                    done[spec.name] = {**spec.to_dict(), "error": f"its parent {spec.parent} failed"}
                    continue
                log.info("=== %s (%s, %s)", spec.name, spec.kind, "+".join(spec.langs))
                running[pool.submit(train_model, spec.to_dict(), overrides, str(args.work), cap_s, collect)] = spec.name
            if not running:
                raise BadInput(f"models {', '.join(m.name for m in pending)} wait for parents not in --models")
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in finished:
                name = running.pop(future)
                try:
                    done[name] = future.result()
                except (Exception, BadInput) as exc:  # one failing model must not lose the others
                    # (BadInput is a SystemExit: uncaught, it would stop this loop and leave the
                    # pool's shutdown waiting on the other model's whole training)
                    log.exception("[%s] failed", name)
                    done[name] = {"name": name, "error": f"{type(exc).__name__}: {exc}"}
    return {m.name: done[m.name] for m in plan}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, required=True, help="work folder (outside the clone): corpora/, runs/")
    ap.add_argument("--stage", choices=("train", "collect", "report"), default="train",
                    help="train (and continue) the models; collect: report them as they stand, training "
                         "nothing; report: collect, then align (Tables 5.4/5.5) and write the tables")
    ap.add_argument("--skip-alignment", action="store_true", help="report: leave out Tables 5.4/5.5")
    ap.add_argument("--alignment-from", type=Path, default=None, metavar="JSON",
                    help="report: Tables 5.4/5.5 from an earlier report's JSON, if every model it aligned has "
                         "the same best checkpoint now (refused otherwise)")
    ap.add_argument("--skip-random", action="store_true", help="report: leave out the untrained GroC's perplexity")
    ap.add_argument("--targets", default="fr", help="target languages, comma-separated (each also with en)")
    ap.add_argument("--models", default="", help="a subset of the plan's model names (default: all)")
    ap.add_argument("--data-root", type=Path, default=None, help=f"shared data folder (default ${DATA_ENV})")
    ap.add_argument("--train-tokens", type=int, default=1_000_000)
    ap.add_argument("--eval-tokens", type=int, default=100_000)
    ap.add_argument("--valid-tokens", type=int, default=20_000,
                    help="validate (early stopping) on an evenly spaced sample of about N valid tokens a language "
                         "(0: the whole valid split); test perplexity is always the whole test split")
    ap.add_argument("--cpu-minutes", type=float, default=90.0, help="CPU cap per model (training + validation)")
    ap.add_argument("--lr-patience", type=int, default=2, help="epochs without improvement before lr /10")
    ap.add_argument("--stop-patience", type=int, default=3, help="epochs without improvement before stopping")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--output-dropout", type=float, default=0.2)
    ap.add_argument("--filters", default=DEFAULT_FILTERS)
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--lr", type=float, default=0.002)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lexicon", nargs="+", default=None, metavar="SPEC", help="wordnet specs for groc-lex")
    ap.add_argument("--wn-dir", type=Path, default=None, help="wn data folder holding those wordnets")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    add_output_args(ap)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(process)d %(name)s %(message)s")
    from benchmarks.polyglot_table import prepare

    root = args.data_root or (Path(os.environ[DATA_ENV]) if os.environ.get(DATA_ENV) else None)
    if args.stage == "train" and (root is None or not root.is_dir()):
        raise BadInput(f"pass --data-root or set {DATA_ENV} to the shared data folder (../shared/data)")
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    if not targets or "en" in targets:
        raise BadInput(f"--targets {args.targets!r}: non-English target languages, e.g. fr,es")
    plan = make_plan(targets, bool(args.lexicon))
    if args.models:
        wanted = [m.strip() for m in args.models.split(",") if m.strip()]
        unknown = sorted(set(wanted) - {m.name for m in plan})
        if unknown:
            raise BadInput(f"--models: {', '.join(unknown)} not in the plan ({', '.join(m.name for m in plan)})")
        plan = [m for m in plan if m.name in wanted]
    args.work = args.work.resolve()
    corpora = args.work / "corpora"
    langs = sorted({lang for m in plan for lang in m.langs})
    manifest: dict[str, Any] = {}
    if args.stage == "train":
        assert root is not None
        manifest = prepare(root, corpora, langs, args.train_tokens, args.eval_tokens, "auto")
    training_root = args.work / f"corpora-valid{args.valid_tokens}" if args.valid_tokens else corpora
    if args.stage == "train" and args.valid_tokens:
        early_stop_corpora(corpora, training_root, langs, args.valid_tokens)
    overrides = common_overrides(args, training_root)
    started = time.time()
    models = train_all(plan, overrides, args, collect=args.stage != "train")
    tables = None
    if args.stage == "report":
        png = None if args.no_save else result_path(args.name or "thesis_scale").with_suffix(".png")
        if png is not None:
            png.parent.mkdir(parents=True, exist_ok=True)
        tables = report(models, targets, args, png)
    return {
        "benchmark": "thesis_scale", "stage": args.stage, "driver_commit": _commit(), "work": str(args.work),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "corpora": {lang: {"short": e["short"], **{s: v["tokens"] for s, v in e["splits"].items()}}
                    for lang, e in manifest.items()},
        "models": models, "tables": tables, "wall_seconds": round(time.time() - started, 1),
    }


def run_main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    result = main(argv)
    args = parse_args(argv)
    emit(result, args.name or "thesis_scale", not args.no_save)
    return result


if __name__ == "__main__":
    script_main(run_main)
