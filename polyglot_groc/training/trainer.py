"""Training loop: monolingual batches from a language schedule, stateful BPTT, Adam, checkpoints.

AWD-LSTM-style batching (parallel streams, BPTT windows, hidden state detached but carried
across windows), one carried state per language so each language's perplexity matches a
monolingual evaluation. Learning rate divided by 10 after ``lr_patience`` evaluations without
improvement, early stop after ``stop_patience`` (seed 000 B.1, seed 004 C.1).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from groc_base.checks import in_cli, option
from groc_base.errors import CheckpointError, InputError
from groc_base.fileio import dumps_json, sweep_folder
from groc_base.wording import agree, counted
from langpairs.batching import LanguageSchedule, MultilingualBatcher, epoch_restart
from langpairs.corpus import MultilingualCorpus
from polyglot_groc.config import RunConfig, dump_toml
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.checkpoint import atomic_write_text, rng_state, save_checkpoint, set_rng_state
from polyglot_groc.model.device import (
    check_precision,
    device_name,
    maybe_compile,
    resolve_device,
    resolve_precision,
    set_matmul_precision,
    set_threads,
    to_cpu,
)
from polyglot_groc.model.embedder import LexiconForms
from polyglot_groc.model.init_input import init_input_table
from polyglot_groc.model.lexforms import compile_forms
from polyglot_groc.model.lm import LanguageModel, count_parameters, parameter_split
from polyglot_groc.model.prefix import detach_state
from polyglot_groc.model.sampling import CandidateSampler
from polyglot_groc.model.scoring import pooled_nll
from polyglot_groc.model.threads import ThreadChoice
from polyglot_groc.model.vocab import UNK
from polyglot_groc.training import distributed
from polyglot_groc.training.data import build_vocab, load_corpus, unk_report, vocab_policy
from polyglot_groc.training.distributed import local_device
from polyglot_groc.training.evaluation import estimate_evaluation_seconds, evaluate_split, split_streams
from polyglot_groc.training.fingerprint import FINGERPRINT_NAME, record_data
from polyglot_groc.training.loop import LoopState, RunningLoss
from polyglot_groc.training.progress import eta_seconds, format_eta
from polyglot_groc.training.regularizers import ar_tar_penalty
from polyglot_groc.training.softmax import SoftmaxChoice, choose_softmax, make_sampler
from polyglot_groc.training.speed import SpeedWatch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepInfo:
    step: int
    epoch: float
    lang: str
    loss: float
    lr: float
    tokens_per_s: float
    #: Batches seen so far per language (the language mix). ``loss`` is the running training loss:
    #: the mean over the steps up to the last read of the device (every ``train.log_every`` steps
    #: and at evaluations); before the first read of a run (or of a resumed run) it is peeked at
    #: steps 1, 2, 4, 8, ..., so it is never NaN once a step was made (unless training diverged).
    lang_batches: dict[str, int]
    #: This step is a log point (``train.log_every``): print, plot, write TensorBoard scalars.
    logged: bool = False


@dataclass(frozen=True)
class TrainResult:
    """What a training run did: its steps, why it stopped, its size, speed and validation perplexities.

    ``to_dict()`` is the run's ``result.json`` (what ``polyglot-groc train`` prints).
    """

    run_dir: Path
    steps: int
    epochs: float
    #: max_steps | max_epochs | max_minutes | early_stopping | stopped (a hook raised StopTraining) |
    #: diverged (see :attr:`diverged`);
    #: "interrupted" from :func:`~polyglot_groc.training.workflows.load_result` of a killed run.
    stop_reason: str
    n_params: int
    tokens_per_s: float
    train_seconds: float
    #: Per-language validation perplexity of best.pt, and of the last validation.
    best_valid: dict[str, float]
    last_valid: dict[str, float]
    #: Every validation record (metrics.jsonl), a resumed run's earlier ones included.
    history: list[dict[str, Any]] = field(default_factory=list)
    #: |Θ| split: embeddings / prefix / output / total (seed 000 Table 2).
    n_params_split: dict[str, int] = field(default_factory=dict)
    #: The lexicon a groc-lex run used (resolved lexicons, coverage, ...); empty for other kinds.
    lexicon: dict[str, Any] = field(default_factory=dict)
    #: The run a finetuned run started from (its config's ``parent``: path, checkpoint, step, sha256);
    #: None for a run trained from scratch (or resumed: result.json then says what ``train`` says).
    parent: dict[str, Any] | None = None
    #: The step last.pt holds when training ended (None: none written, or not known); not in result.json.
    checkpoint_step: int | None = None
    #: What ``<unk>`` stands for in training, for a lookup-output model that has one
    #: (:func:`~polyglot_groc.training.data.unk_report`: ``min_count``, ``dropped_words``,
    #: ``unk_tokens``, ``unk_share``); empty for other models.
    unk: dict[str, Any] = field(default_factory=dict)
    #: The training softmax and why (:meth:`~polyglot_groc.training.softmax.SoftmaxChoice.to_dict`:
    #: ``mode`` full | sampled, ``reason``, ``largest_vocab``, and ``k``, ``proposal`` when sampled).
    softmax: dict[str, Any] = field(default_factory=dict)
    #: The CPU threads the run used and why (:meth:`~polyglot_groc.model.threads.ThreadChoice.to_dict`:
    #: ``threads``, ``reason``, ``auto``, ``cores``, ``load``, ``wait_policy``), and ``slowdown``, the
    #: warning given when training's speed collapsed (:class:`~polyglot_groc.training.speed.SpeedWatch`).
    threads: dict[str, Any] = field(default_factory=dict)

    @property
    def diverged(self) -> bool:
        """The loss (or the validation perplexity) became non-finite: training stopped there.
        :meth:`divergence_report` says which checkpoint, if any, is the last good state."""
        return self.stop_reason == "diverged"

    def divergence_report(self, fix: str = "train.lr or train.clip") -> str:
        """One line for a diverged run: where it stopped and which checkpoint (if any) is good to use.

        last.pt is named the last good state only when it exists and its validation perplexity was
        finite; else best.pt where it exists (it never holds a non-finite one), else nothing was kept.
        """
        run = Path(self.run_dir)
        finite = [r for r in self.history if _finite_record(r)]
        head = f"training diverged at step {self.steps} (non-finite loss or perplexity); lower {fix}"
        if not (run / "last.pt").is_file():
            return f"{head} and train again: it stopped before its first checkpoint, so nothing was kept"
        saved = [r for r in self.history if r.get("step") == self.checkpoint_step]
        last = saved[-1] if saved else self.history[-1] if self.history else None
        if last is not None and not _finite_record(last):
            if (run / "best.pt").is_file() and finite:
                best = min(finite, key=lambda r: r["valid_nll"])
                return (f"{head}: last.pt (step {last.get('step')}) already had a non-finite validation perplexity; "
                        f"best.pt (step {best.get('step')}) is the last good state: finetune from it or train again")
            return f"{head} and train again: no checkpoint has a finite validation perplexity"
        step = self.checkpoint_step if self.checkpoint_step is not None else finite[-1].get("step") if finite else None
        at = f" (step {step})" if step is not None else ""
        how = (f"`polyglot-groc finetune {run} --checkpoint last --lr LR --data DATA --out NEW`" if in_cli()
               else f"pg.finetune(run={str(run)!r}, checkpoint='last', lr=LR, data=DATA, out=NEW)")
        return f"{head}: last.pt{at} is the last good state; continue from it with a lower lr by {how}, or train again"

    def to_dict(self) -> dict[str, Any]:
        """The JSON of result.json (perplexities as numbers, rounded times)."""
        out = {"run_dir": str(Path(self.run_dir).resolve()), "steps": self.steps, "epochs": round(self.epochs, 4),
               "diverged": self.diverged,
               "stop_reason": self.stop_reason, "n_params": self.n_params, "n_params_split": self.n_params_split,
               "tokens_per_s": round(self.tokens_per_s, 1), "train_seconds": round(self.train_seconds, 1),
               "best_valid_perplexity": self.best_valid, "last_valid_perplexity": self.last_valid}
        if self.lexicon:
            out["lexicon"] = dict(self.lexicon)
        if self.parent is not None:
            out["parent"] = dict(self.parent)
        if self.unk:
            out["unk"] = dict(self.unk)
        if self.softmax:
            out["softmax"] = dict(self.softmax)
        if self.threads:
            out["threads"] = dict(self.threads)
        return out


def _finite_record(record: Mapping[str, Any]) -> bool:
    """A validation record whose pooled nll and every perplexity are finite numbers (JSON null: not)."""
    values = [record.get("valid_nll"), *(record.get("valid_perplexity") or {}).values()]
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


class TrainHooks(Protocol):
    """Progress of a training run, for a progress bar, a logger or a notebook widget (all optional to act on).

    ``on_start(total_steps, info)``: before the first step; ``info`` holds ``n_params``,
    ``n_params_split``, ``vocab``, ``langs``, ``kind``, ``start_step``, ``steps_per_epoch``, ``config``
    (the run's :class:`RunConfig`), ``unk`` (as :attr:`TrainResult.unk`) and what the workflow adds
    (``changes`` on resume, ``elmo`` for a converted model). ``on_step(StepInfo)``: after every step.
    ``on_eval(record)``: after every validation, with its metrics.jsonl record. Optional:
    ``on_eval_progress(done, total)`` during a validation (target tokens scored so far, in all; the
    backward pass of a bilm counts again from 0), for a validation of minutes. ``on_step`` may raise
    :class:`StopTraining` to end the run there as a limit would (validated, checkpointed, result
    written; ``stop_reason`` "stopped"); any other exception raised by a hook stops training at once.
    """

    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None: ...
    def on_step(self, info: StepInfo) -> None: ...
    def on_eval(self, record: Mapping[str, Any]) -> None: ...


class StopTraining(Exception):  # noqa: N818 - a request, not an error
    """Raised by a hook's ``on_step`` to end the run after that step, as a limit would: the model is
    validated and checkpointed and the result written, with ``stop_reason`` "stopped" (a budget of
    CPU time, a notebook's stop button). A stopped run resumes like one stopped by ``max_minutes``."""


class _NoHooks:
    def on_start(self, total_steps: int | None, info: Mapping[str, Any]) -> None:
        pass

    def on_step(self, info: StepInfo) -> None:
        pass

    def on_eval(self, record: Mapping[str, Any]) -> None:
        pass


def run_dir_has_content(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds anything but the run lock (.lock, .lock.owner, taken before it is prepared)."""
    run_dir = Path(run_dir)
    return run_dir.is_dir() and any(not p.name.startswith(".lock") for p in run_dir.iterdir())


#: What ``--overwrite`` deletes from an existing run directory (other files in it are left alone).
RUN_FILES = ("best.pt", "last.pt", "metrics.jsonl", "config.toml", "result.json", FINGERPRINT_NAME)


def existing_run_message(run_dir: Path) -> str:
    """The refusal of a new run into the non-empty ``run_dir``, saying what ``overwrite`` would delete
    and, for a run with a checkpoint, how to go on with it instead (options named for the calling face)."""
    run_dir = Path(run_dir)
    held = [name for name in RUN_FILES if (run_dir / name).exists()]
    out, overwrite = option("out"), option("overwrite", True)
    if (run_dir / "last.pt").is_file() and (run_dir / "config.toml").is_file():
        go_on = f"polyglot-groc train --resume {run_dir}" if in_cli() else f"resume(run={str(run_dir)!r})"
        return (f"run directory {run_dir} already exists and holds a run ({', '.join(held)}); continue it with "
                f"`{go_on}`, choose another {out}, or pass {overwrite} to delete its checkpoints and train anew")
    if held:
        return (f"run directory {run_dir} already exists ({', '.join(held)}); choose another {out}, or pass "
                f"{overwrite} to delete those files and train anew")
    return (f"run directory {run_dir} already exists and holds other files; choose another {out}, or pass "
            f"{overwrite} to train into it anyway (its other files are kept: nothing is deleted)")


def resume_config(cfg: RunConfig, payload: Mapping[str, Any], run_dir: Path, *, max_steps: int | None = None,
                  max_epochs: int | None = None, max_minutes: float | None = None,
                  finished: bool = False) -> tuple[RunConfig, list[str]]:
    """The config to resume ``run_dir`` (its ``last.pt`` is ``payload``) with new stop limits, and the
    changes in words (``train.max_steps 60 -> 120``).

    Steps and epochs are totals for the run (minutes count per invocation). A given limit must lie
    beyond the step the run has reached; a limit not given that would stop the run before a given
    one is lifted (and reported). ``finished``: the run completed before (its result.json is there).
    Raises :class:`InputError` when the run cannot go on: it stopped early, or it finished at its
    limits and none was raised (the message says how to extend it).
    """
    t = cfg.train
    step = int(payload.get("step", 0))
    epoch = float(payload.get("epoch", 0.0))
    spe = payload.get("steps_per_epoch") or (round(step / epoch) if epoch > 0 else None)
    extending = max_steps is not None or max_epochs is not None
    if int(payload.get("bad_evals", 0)) >= t.stop_patience and (extending or finished):
        raise InputError(f"run {run_dir} stopped early at step {step} (no validation improvement for "
                         f"train.stop_patience={t.stop_patience} evaluations), so more steps or epochs cannot extend "
                         "it; start a new run, e.g. with a lower train.lr or a larger train.stop_patience")
    if max_steps is not None and max_steps <= step:
        raise InputError(f"{option('max_steps', max_steps)} does not extend run {run_dir}, which is at step {step} "
                         f"already; pass a larger {option('max_steps')}, e.g. {2 * step}")
    if max_epochs is not None and spe and max_epochs * spe <= step:
        raise InputError(f"{option('max_epochs', max_epochs)} does not extend run {run_dir}, which is at epoch "
                         f"{epoch:.2f} already; pass a larger {option('max_epochs')}, e.g. {math.floor(epoch) + 1}")
    new = {"max_steps": t.max_steps, "max_epochs": t.max_epochs, "max_minutes": t.max_minutes}
    if max_steps is not None:
        new["max_steps"] = max_steps
        if max_epochs is None and spe and spe * t.max_epochs < max_steps:
            new["max_epochs"] = math.ceil(max_steps / spe)  # so the epoch cap does not stop it first
    if max_epochs is not None:
        new["max_epochs"] = max_epochs
        if max_steps is None and t.max_steps and spe and t.max_steps < max_epochs * spe:
            new["max_steps"] = 0  # off: the step cap would stop it first
    if max_minutes is not None:
        new["max_minutes"] = max_minutes
    at_limit = bool((new["max_steps"] and step >= new["max_steps"]) or (spe and step >= spe * new["max_epochs"]))
    if finished and at_limit:
        by_steps = bool(t.max_steps and step >= t.max_steps)
        limit = f"train.max_steps={t.max_steps}" if by_steps else f"train.max_epochs={t.max_epochs}"
        limits = [("max_steps", 2 * step)] if by_steps else [("max_epochs", 2 * t.max_epochs), ("max_steps", 2 * step)]
        if in_cli():
            how = " or ".join(f"polyglot-groc train --resume {run_dir} {option(k, v)}" for k, v in limits)
        else:
            how = " or ".join(f"pg.resume(run={str(run_dir)!r}, {k}={v})" for k, v in limits)
        raise InputError(f"run {run_dir} already finished at step {step} ({limit}); to train it further resume it "
                         f"with a larger limit, e.g. {how}")
    changes = [f"train.{k} {getattr(t, k):g} -> {v:g}" for k, v in new.items() if v != getattr(t, k)]
    if not changes:
        return cfg, []
    return dataclasses.replace(cfg, train=dataclasses.replace(t, **new)).validate(), changes  # type: ignore[arg-type]


def prepare_run_dir(run_dir: Path, overwrite: bool) -> None:
    run_dir = Path(run_dir)
    if run_dir_has_content(run_dir):
        if not overwrite:
            raise InputError(existing_run_message(run_dir))
        for name in RUN_FILES:
            (run_dir / name).unlink(missing_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)


def place_model(model: LanguageModel, t: Any, device: torch.device) -> torch.device:
    """Move ``model`` to ``device`` and apply ``train.precision`` (``auto`` resolved for the device) and
    ``train.compile``."""
    precision = resolve_precision(t.precision, device)
    set_matmul_precision(precision)
    model.to(device)
    model.autocast_dtype = torch.bfloat16 if precision == "bf16" else None
    surface = getattr(model.input_embedder, "surface", None)
    if t.compile and surface is not None:
        surface.use_compiler(maybe_compile)
    auto = " (train.precision=auto)" if t.precision == "auto" else ""
    log.info("training on %s, precision %s%s%s", device_name(device), precision, auto,
             ", compiled" if t.compile else "")
    return device


def remove_temp_files(run_dir: Path) -> None:
    """Temp files of atomic writes left by a killed process (:func:`groc_base.fileio.sweep_folder`;
    under the run lock, older versions' ``.<name>.<random>.tmp`` files too, whatever their age)."""
    if Path(run_dir).is_dir():
        sweep_folder(run_dir)
        for tmp in Path(run_dir).glob(".*.tmp"):
            tmp.unlink(missing_ok=True)


def trainable_named_parameters(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    """``(name, parameter)`` of every trainable parameter, in the optimizer's order (its state's indices)."""
    return [(n, p) for n, p in model.named_parameters() if p.requires_grad]


def check_optimizer_shapes(optimizer: torch.optim.Optimizer, params: list[torch.nn.Parameter], where: str,
                           fix: str) -> None:
    """The loaded Adam state must match the parameters' shapes (``load_state_dict`` checks counts only;
    a mismatch would fail inside the first ``optimizer.step()`` with a traceback)."""
    for i, p in enumerate(params):
        for key, value in optimizer.state.get(p, {}).items():
            if isinstance(value, torch.Tensor) and value.dim() > 0 and value.shape != p.shape:
                raise CheckpointError(f"{where}: optimizer state {key} of parameter {i} has shape "
                                      f"{tuple(value.shape)}, the parameter {tuple(p.shape)}; {fix}")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_bundle(cfg: RunConfig, corpus: MultilingualCorpus) -> ModelBundle:
    """Vocabulary, lexicon forms and a freshly initialised model for ``cfg``."""
    traits = kind_traits(cfg.model.kind)
    add_unk, min_count = vocab_policy(cfg.data, traits.composes_output)
    vocab = build_vocab(corpus, cfg.data.vocab_mode, add_unk, min_count)
    forms: LexiconForms | None = None
    extra: tuple[str, ...] = ()
    info: dict[str, Any] = {}
    if traits.uses_lexicon:
        compiled = compile_forms(cfg.model.lexicon, vocab)
        forms, extra, info = compiled.forms, compiled.extra_words, compiled.info
        # The run records the lexicon as found (resolved specs, absolute folder), not the environment's choice.
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, lexicon=compiled.config))
    bundle = ModelBundle.create(cfg, vocab, forms=forms, extra_words=extra, lexicon_info=info)
    if cfg.model.init_input:
        init_input_table(bundle.model, vocab, Path(cfg.model.init_input))
    return bundle


class Trainer:
    def __init__(self, cfg: RunConfig, run_dir: Path, *, overwrite: bool = False,
                 hooks: TrainHooks | None = None, corpus: MultilingualCorpus | None = None,
                 bundle: ModelBundle | None = None, resume: Mapping[str, Any] | None = None,
                 optimizer_state: Mapping[str, Any] | None = None,
                 start_info: Mapping[str, Any] | None = None, data_changed: bool = False) -> None:
        """``resume``: the ``last.pt`` payload of an interrupted run in ``run_dir`` (with its bundle).

        ``optimizer_state``: an Adam ``state_dict`` to start from instead of a fresh optimizer
        (``finetune --resume-optimizer``); it must match :meth:`trainable_parameters` in order and
        shape. Its learning rate and weight decay are replaced by ``cfg.train``'s.
        ``start_info``: more entries for the info ``hooks.on_start`` receives (the workflows say
        there what they changed or converted).
        ``data_changed``: a resumed run's corpus changed and the user accepted it
        (:func:`~polyglot_groc.training.fingerprint.check_data`): a batcher position that no longer
        fits starts the epoch over, and the run records the new data's fingerprint.
        """
        # The run stores its config: paths in it are absolute, so evaluation works from any directory.
        cfg = self.cfg = cfg.validate().absolute_paths()
        self.run_dir = Path(run_dir)
        self.hooks: TrainHooks = hooks or _NoHooks()
        # An impossible device, precision or process count fails before anything is written.
        requested = resolve_device(cfg.train.device)
        device = local_device(requested)  # under torchrun: this rank's CUDA device
        check_precision(cfg.train.precision, device)
        self.dist = distributed.setup(requested, cfg.train.batch_size)
        self.resume = resume
        self.data_changed = data_changed
        self.optimizer_state = optimizer_state
        self.start_info = dict(start_info or {})
        #: The loop's state while :meth:`fit` runs and after (None before): the step reached, for instance.
        self.state: LoopState | None = None
        if self.dist.is_main:  # rank 0 alone writes the run directory
            if resume is None:
                prepare_run_dir(self.run_dir, overwrite)
            remove_temp_files(self.run_dir)
        seed_everything(cfg.train.seed)
        #: The CPU threads and why (train.threads, 0: picked from the free cores); re-picked when speed collapses.
        self.threads: ThreadChoice = set_threads(cfg.train.threads)
        self.slowdown: str | None = None
        # A closed vocabulary is built from train+valid+test (the seeds' setup); open from train only.
        splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
        self.corpus = corpus if corpus is not None else load_corpus(cfg.data, splits, cfg.languages)
        bundle = bundle if bundle is not None else build_bundle(cfg, self.corpus)
        # The checkpoints store the bundle's config: the run's own, with the model as built.
        self.cfg = dataclasses.replace(cfg, model=bundle.cfg.model).absolute_paths()
        self.bundle = dataclasses.replace(bundle, cfg=self.cfg) if bundle.cfg != self.cfg else bundle
        self.model = self.bundle.model
        self.device = place_model(self.model, cfg.train, device)
        if self.dist.enabled and cfg.train.shard_vocab and self.model.compositional_output:
            self.model.vocab_encoder = distributed.sharded_encoder(self.model.output_embedder, self.dist)
        n_cut = self.bundle.charset.n_truncated([*self.bundle.vocab.words, *self.bundle.extra_words])
        log.info("%s longer than model.charset.max_word_len=%d %s prefix+suffix",
                 counted(n_cut, "vocabulary word"), self.bundle.charset.max_word_len, agree(n_cut, "keeps", "keep"))
        self.metrics_lines: list[str] = []
        #: The step that ``last.pt`` holds (None: no checkpoint yet), for an interrupted run's report.
        self.checkpoint_step: int | None = int(resume["step"]) if resume is not None else None

    def trainable_parameters(self) -> list[torch.nn.Parameter]:
        """The optimizer's parameters, in its order (frozen ones, ``model.freeze_input``, left out)."""
        return [p for _, p in trainable_named_parameters(self.model)]

    def make_optimizer(self) -> torch.optim.Optimizer:
        """Adam over :meth:`trainable_parameters`, fresh or from ``optimizer_state``."""
        t = self.cfg.train
        # Frozen parameters stay out of the optimizer: no decay, no update.
        params = self.trainable_parameters()
        optimizer = torch.optim.Adam(params, lr=t.lr, weight_decay=t.weight_decay)
        if self.optimizer_state is not None:
            state = self.optimizer_state
            try:
                optimizer.load_state_dict(state)  # type: ignore[arg-type]
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckpointError(f"the optimizer state does not fit this model ({exc}); "
                                      "finetune without --resume-optimizer") from exc
            check_optimizer_shapes(optimizer, params, "the optimizer state", "finetune without --resume-optimizer")
            # The run's config decides the schedule from here (finetune picks the resumed lr).
            for g in optimizer.param_groups:
                g["lr"], g["weight_decay"] = t.lr, t.weight_decay
        return optimizer

    def _save(self, names: tuple[str, ...], optimizer: torch.optim.Optimizer, extra: Mapping[str, Any]) -> None:
        if not self.dist.is_main:
            return
        # CPU tensors only: a GPU run resumes or evaluates on CPU and the other way round.
        cpu_extra = to_cpu(dict(extra))
        assert isinstance(cpu_extra, dict)
        payload = {"bundle": self.bundle.to_state(), "optimizer": to_cpu(optimizer.state_dict()),
                   "rng": rng_state(), "metrics_lines": list(self.metrics_lines), **cpu_extra}
        for name in names:  # each written atomically (best.pt is never a copy made in place)
            save_checkpoint(self.run_dir / name, payload)
        self.checkpoint_step = int(extra["step"])

    def fit(self) -> TrainResult:
        """Train until a limit (steps, epochs, minutes), early stopping or divergence; validate and
        checkpoint on the way (``train.eval_every``, and once more where a limit stops the run)."""
        loop = self._open_loop()
        state = self.state = self._restore(loop) if self.resume is not None else LoopState.start(self.cfg.train)
        self._record()  # after a resume's state is restored: a resume refused there changes nothing
        loss = RunningLoss(self.device, self.dist)
        stop_reason = self._run(loop, state, loss)
        return TrainResult(self.run_dir, state.step, state.epoch(loop.steps_per_epoch), stop_reason, loop.n_params,
                           state.tokens / max(state.train_time, 1e-9), state.train_time, state.best_valid,
                           state.last_valid, loop.history, loop.n_params_split, checkpoint_step=self.checkpoint_step,
                           unk=loop.unk, softmax=loop.softmax.to_dict(), threads=self.threads_record())

    def threads_record(self) -> dict[str, Any]:
        """``result.json``'s ``threads``: the choice in force at the end, and the slowdown warning if one was given."""
        out = self.threads.to_dict()
        if self.slowdown:
            out["slowdown"] = self.slowdown
        return out

    def _record(self) -> None:
        """Write config.toml (on resume too: its limits may have been extended, see resume_config) and,
        for a new run or accepted new data, the fingerprint of the corpus files it reads."""
        if not self.dist.is_main:
            return
        atomic_write_text(self.run_dir / "config.toml", dump_toml(self.cfg))
        if self.resume is None or self.data_changed:
            record_data(self.run_dir, Path(self.cfg.data.root), {lang: list(self.corpus.splits[lang])
                                                                 for lang in self.corpus.langs})

    def _open_loop(self) -> _Loop:
        """Batch the training streams, make the optimizer, tell the hooks."""
        cfg, t = self.cfg, self.cfg.train
        # Per language (t.batch_size, T) ids; the batcher cuts t.bptt-long windows from them.
        train_streams = split_streams(self.bundle, self.corpus, "train", t.batch_size)
        windows = MultilingualBatcher.window_counts(train_streams, t.bptt)
        schedule = LanguageSchedule(windows, mode=cfg.data.schedule, temperature=cfg.data.temperature, seed=t.seed)
        batcher = MultilingualBatcher(train_streams, t.bptt, schedule,
                                      variable_seed=t.seed if t.bptt_mode == "variable" else None)
        # A resumed run keeps the softmax it started with (its checkpoints record it; {}: an older checkpoint).
        resumed = dict(self.resume.get("softmax") or {}) if self.resume is not None else None
        choice = choose_softmax(t, self.model, cfg.data.screen, resumed)
        loop = _Loop(batcher=batcher, optimizer=self.make_optimizer(), steps_per_epoch=sum(windows.values()),
                     n_params=count_parameters(self.model), n_params_split=parameter_split(self.model),
                     started=time.monotonic(), unk=self._unk_report(train_streams), softmax=choice,
                     sampler=make_sampler(choice, t, self.model, train_streams, cfg.data.screen, self.dist.rank))
        split, model = loop.n_params_split, self.model
        total = t.max_steps or loop.steps_per_epoch * t.max_epochs
        self.hooks.on_start(total, {"n_params": loop.n_params, "n_params_split": split, "vocab": len(self.bundle.vocab),
                                    "langs": list(self.corpus.langs), "kind": model.kind,
                                    "start_step": int(self.resume["step"]) if self.resume is not None else 0,
                                    "steps_per_epoch": loop.steps_per_epoch, "config": cfg, "unk": dict(loop.unk),
                                    "softmax": choice.to_dict(), "threads": self.threads.to_dict(),
                                    **self.start_info})
        log.info("%s", choice.describe())
        log.info("model %s: %d parameters (embeddings %d, prefix %d, output %d), vocabulary %d, "
                 "%d steps per epoch", model.kind, loop.n_params, split["embeddings"], split["prefix"],
                 split["output"], len(self.bundle.vocab), loop.steps_per_epoch)
        return loop

    def _unk_report(self, train_streams: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """:func:`unk_report` of a lookup-output model with ``<unk>`` (else empty), logged."""
        if self.model.compositional_output or UNK not in self.bundle.vocab:
            return {}
        composes = kind_traits(self.cfg.model.kind).composes_output
        report = unk_report(self.bundle.vocab, self.corpus, train_streams, vocab_policy(self.cfg.data, composes)[1])
        log.info("data.min_count=%d: %d training word types are outside the vocabulary; %.2f%% of the training "
                 "tokens are <unk>", report["min_count"], report["dropped_words"], 100 * report["unk_share"])
        if not report["unk_tokens"] and self.cfg.data.vocab_mode == "open":
            # Unseen validation words are scored with <unk>, whose row training then only pushes down.
            log.warning("no training token is <unk>, so <unk> is not trained and words outside the vocabulary "
                        "get ever lower probability; set data.min_count to 2 or more")
        return report

    def _restore(self, loop: _Loop) -> LoopState:
        """The loop as ``last.pt`` left it: its state, the optimizer, the batcher, the RNGs, the metrics."""
        r = self.resume
        assert r is not None
        where = f"checkpoint {self.run_dir / 'last.pt'}"
        state = LoopState.from_checkpoint(r, self.device, source=where)
        try:
            loop.optimizer.load_state_dict(r["optimizer"])
            check_optimizer_shapes(loop.optimizer, self.trainable_parameters(), where,
                                   "it is damaged: resume from a copy of the run, or start a new run")
            try:
                loop.batcher.load_state_dict(r["batcher"])
            except CheckpointError:
                if not self.data_changed:
                    raise
                log.warning("the changed corpus is shorter than the position last.pt reached in it: this epoch "
                            "starts over at its first window")
                loop.batcher.load_state_dict(epoch_restart(r["batcher"]))
            self.metrics_lines = list(r["metrics_lines"])
            loop.history = [json.loads(line) for line in self.metrics_lines]
        except (KeyError, TypeError, ValueError) as exc:
            raise CheckpointError(f"{where} lacks resume state ({exc!r}); it was written by an older "
                                  "polyglot-groc: start a new run") from exc
        set_rng_state(r["rng"])  # last: building the optimizer and batcher must not move it
        log.info("resuming %s at step %d", self.run_dir, state.step)
        return state

    def _checkpoint_due(self, loop: _Loop, log_point: bool) -> bool:
        """A wall-clock checkpoint is due: ``train.checkpoint_minutes`` since the last evaluation (the first
        after at most one minute, so a run interrupted early still keeps its work), and at least nine times
        the last evaluation's own duration, so validating stays under a tenth of the time.

        Under torchrun every rank must validate at the same step (the validation and the loss read
        are collective), so there rank 0's clock decides, at log points only (``train.log_every``)."""
        minutes = self.cfg.train.checkpoint_minutes
        if not minutes or (self.dist.enabled and not log_point):
            return False
        interval = 60.0 * minutes if loop.last_checkpoint else min(60.0, 60.0 * minutes)
        since = loop.last_checkpoint or loop.started
        due = time.monotonic() - since >= max(interval, 9.0 * loop.last_eval_seconds)
        if self.dist.enabled:
            flag = torch.tensor([1.0 if due else 0.0], device=self.device)
            torch.distributed.broadcast(flag, src=0)
            due = bool(flag.item())
        return due

    def _run(self, loop: _Loop, state: LoopState, loss: RunningLoss) -> str:
        """Step until a stop; returns the stop reason. Ends with an evaluation at the last step
        (unless one was just made, or the loss diverged: then last.pt stays the last good state).
        Between the scheduled evaluations, a wall-clock checkpoint (``train.checkpoint_minutes``)
        validates and saves without moving the schedule."""
        t, spe = self.cfg.train, loop.steps_per_epoch
        evaluated_at = state.step if self.resume is not None else -1
        # A run that had already stopped early (killed after its last checkpoint, or resumed to
        # collect it) must not train past the point where it stopped.
        if self.resume is not None and state.bad_evals >= t.stop_patience:
            log.info("%s had already stopped early at step %d; nothing to resume", self.run_dir, state.step)
            return "early_stopping"
        self.model.train()
        loop.start_step, loop.start_train_time = state.step, state.train_time
        if t.max_minutes:
            loop.validation_estimate = self._estimate_validation()
        # On CPU only: a CUDA step's time is not measured synchronously, and it needs no CPU threads.
        speed = SpeedWatch() if self.device.type == "cpu" else None
        stop_reason = ""
        while not stop_reason:
            stop_reason = self._limit_reached(loop, state)
            if stop_reason:
                break
            lang = self._train_step(loop, state, loss)
            if speed is not None and (warning := speed.update(state.step, state.tokens, state.train_time)):
                self._slowed(warning)
            due = (t.eval_every and state.step % t.eval_every == 0) or (not t.eval_every and state.step % spe == 0)
            log_point = bool(t.log_every) and state.step % t.log_every == 0
            timed = not due and self._checkpoint_due(loop, log_point)
            if (log_point or due or timed) and self._diverged(state, loss):
                # Stop without evaluating a broken model; the last checkpoint stays the last good one.
                return "diverged"
            loss.peek_early()
            try:
                self.hooks.on_step(StepInfo(state.step, state.epoch(spe), lang, loss.last, state.lr,
                                            state.tokens / max(state.train_time, 1e-9), dict(state.lang_batches),
                                            log_point))
            except StopTraining as stop:
                log.info("a hook stopped training after step %d%s", state.step, f" ({stop})" if str(stop) else "")
                stop_reason = "stopped"
            if log_point or (state.step - loop.start_step) in (1, 10):  # early lines: a slow run is not silent
                self._log_progress(loop, state, loss)
            if due or timed:
                evaluated_at = state.step
                stop_reason = self._evaluate_and_checkpoint(loop, state, loss, scheduled=bool(due)) or stop_reason
        if evaluated_at != state.step:
            if self._diverged(state, loss):  # since the last read: keep the last good checkpoint
                return "diverged"
            return self._evaluate_and_checkpoint(loop, state, loss, scheduled=False) or stop_reason
        return stop_reason

    def _estimate_validation(self) -> float:
        """Seconds a validation (and its checkpoint) will take, timed on the first windows of the valid split
        (:func:`~polyglot_groc.training.evaluation.estimate_evaluation_seconds`), for ``train.max_minutes``."""
        t = self.cfg.train
        seconds = estimate_evaluation_seconds(self.bundle, self.corpus, "valid", t.eval_batch_size, t.bptt,
                                              screen=self.cfg.data.screen)
        if self.model.bidirectional:  # the backward LM is validated too
            seconds *= 2
        if self.dist.enabled:  # every rank keeps the same reserve: the slowest rank's estimate
            value = torch.tensor([seconds], device=self.device)
            torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
            seconds = float(value.item())
        log.info("a validation will take about %s (timed on its first windows): train.max_minutes keeps that long "
                 "for the last one", format_eta(seconds))
        return seconds

    def _validation_progress(self, step: int, estimate: float) -> Callable[[int, int], None]:
        """The ``progress(done, total)`` of a validation: the hooks' optional ``on_eval_progress``, and an
        INFO line every 30 s of a long one, so a validation of minutes is never silent."""
        hook = getattr(self.hooks, "on_eval_progress", None)
        began = time.monotonic()
        last = [began]
        if estimate >= 30:
            log.info("validating at step %d (about %s)", step, format_eta(estimate))

        def progress(done: int, total: int) -> None:
            if hook is not None:
                hook(done, total)
            now = time.monotonic()
            if now - last[0] >= 30 and total:
                last[0] = now
                left = (now - began) * (total - done) / done if done else None
                log.info("validating at step %d: %d%% of %s tokens, %s left", step, 100 * done // total,
                         f"{total:,}", format_eta(left))

        return progress

    def _slowed(self, warning: str) -> None:
        """Training's speed collapsed: say so (a warning, and result.json's ``threads.slowdown``) and, where
        the thread count was picked here, pick it again from the load now; else name the fix."""
        before = self.threads
        if before.auto:
            self.threads = set_threads(0)
        if self.threads.threads < before.threads:
            what = f"now {counted(self.threads.threads, 'thread')} instead of {before.threads} ({self.threads.reason})"
        elif before.threads > 1:
            what = f"fewer threads may help: {option('threads', 1)}"
        else:
            what = "it already runs on one thread"
        self.slowdown = f"{warning}; {what}"
        log.warning("%s", self.slowdown)

    def _log_progress(self, loop: _Loop, state: LoopState, loss: RunningLoss) -> None:
        """The INFO line of a log point: step, epoch, running loss, lr, speed and the time left
        (by the step budget at this speed, capped by ``train.max_minutes``)."""
        t = self.cfg.train
        total = t.max_steps or loop.steps_per_epoch * t.max_epochs
        eta = eta_seconds(state.step, total, loop.start_step, time.monotonic() - loop.started, t.max_minutes)
        ppl = math.exp(min(loss.last, 50.0))
        # A sampled softmax's training loss estimates the full one; validation perplexities are exact.
        what = f"sampled loss {loss.last:.3f}, ppl ~{ppl:,.1f} (sampled-softmax estimate)" if loop.softmax.sampled \
            else f"loss {loss.last:.3f}, ppl {ppl:,.1f}"
        speed = state.tokens / max(state.train_time, 1e-9)
        log.info("step %s/%s (epoch %.2f): %s, lr %.3g, %s tokens/s, ETA %s", f"{state.step:,}", f"{total:,}",
                 state.epoch(loop.steps_per_epoch), what, state.lr, f"{speed:,.0f}", format_eta(eta))

    def _limit_reached(self, loop: _Loop, state: LoopState) -> str:
        """The limit that stops the run before its next step ("" while none does).

        ``train.max_minutes`` counts this invocation's wall time, validations included: the run stops when
        one more step and the final validation (as long as the last one took, or the estimate made before
        the first) would not fit, after at least one step."""
        t = self.cfg.train
        if t.max_steps and state.step >= t.max_steps:
            return "max_steps"
        if t.max_minutes and state.step > loop.start_step:
            per_step = (state.train_time - loop.start_train_time) / (state.step - loop.start_step)
            reserve = (loop.last_validation_seconds or loop.validation_estimate) + per_step
            if time.monotonic() - loop.started + reserve >= 60 * t.max_minutes:
                return "max_minutes"
        if state.step >= loop.steps_per_epoch * t.max_epochs:
            return "max_epochs"
        return ""

    def _train_step(self, loop: _Loop, state: LoopState, loss: RunningLoss) -> str:
        """One optimizer step on the next batch; returns its language."""
        t, model, optimizer = self.cfg.train, self.model, loop.optimizer
        tick = time.perf_counter()
        batch = loop.batcher.next_batch()  # one language; inputs and targets (streams, window) ids
        lang = batch.lang
        # Sparse updates (seed 000 B.4): the whole output embedding function is updated w.p. p.
        update_output = t.output_update_prob >= 1.0 or state.update_rng.random() < t.output_update_prob
        rows = self.dist.rows(batch.inputs.shape[0])  # this rank's streams (all of them alone)
        carried = state.lstm_states.get(lang) or model.init_state(rows.stop - rows.start)
        screen = lang if self.cfg.data.screen else None
        candidates = None
        if loop.sampler is not None:  # this step's words + this rank's negatives, drawn on the host
            words = np.concatenate([batch.inputs[rows].ravel(), batch.targets[rows].ravel()])
            candidates = loop.sampler.draw(screen, words, state.step).to(self.device)
        out = model(torch.from_numpy(batch.inputs[rows]).to(self.device, non_blocking=True),
                    torch.from_numpy(batch.targets[rows]).to(self.device, non_blocking=True),
                    screen, carried, update_output=update_output, candidates=candidates)
        assert out.loss is not None  # mean NLL of the window's targets
        optimizer.zero_grad(set_to_none=True)
        penalty = ar_tar_penalty(out.hidden, out.hidden_raw, t.ar_alpha, t.tar_beta)
        (out.loss if penalty is None else out.loss + penalty).backward()
        if self.dist.enabled:
            distributed.average_gradients(list(model.parameters()), self.dist.world)
        if t.bptt_mode == "variable":  # AWD: a window's lr scales with its length
            for g in optimizer.param_groups:
                g["lr"] = state.lr * batch.inputs.shape[1] / t.bptt
        if t.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), t.clip)
        optimizer.step()
        if t.bptt_mode == "variable":
            for g in optimizer.param_groups:
                g["lr"] = state.lr
        if batch.epoch_end:  # the stream starts over: so does its hidden state
            state.lstm_states.pop(lang, None)
        else:
            state.lstm_states[lang] = detach_state(out.state)
        state.train_time += time.perf_counter() - tick
        state.step += 1
        state.tokens += out.n_tokens * self.dist.world
        state.lang_batches[lang] += 1
        loss.add(out.loss)
        return lang

    def _diverged(self, state: LoopState, loss: RunningLoss) -> bool:
        """Read the running loss; True (and logged) when it is not finite."""
        if loss.read(state):
            return False
        log.error("training diverged by step %d (non-finite loss); lower train.lr or train.clip", state.step)
        return True

    def _evaluate_and_checkpoint(self, loop: _Loop, state: LoopState, loss: RunningLoss,
                                 scheduled: bool = True) -> str:
        """Validate, log, checkpoint; the stop reason: "early_stopping" when it triggers, "diverged" when
        the validation perplexity is not finite (then no checkpoint is written: last.pt and best.pt
        stay the last good states), else "".

        The evaluation a stop adds between scheduled ones (a wall-clock or step cap) saves the
        model (last.pt, and best.pt if it is the best yet) but leaves the schedule as it was:
        the patience count, the lr, the schedule's best and the running training loss. So a
        run stopped there and resumed continues exactly as one that was never stopped.
        """
        cfg, t = self.cfg, self.cfg.train
        began = time.monotonic()
        progress = self._validation_progress(state.step, loop.last_validation_seconds or loop.validation_estimate)
        # Callers read the running loss first (_diverged), so loss_acc covers every step.
        results = evaluate_split(self.bundle, self.corpus, "valid", t.eval_batch_size, t.bptt, screen=cfg.data.screen,
                                 progress=progress)
        nll = pooled_nll(results)
        state.last_valid = {lang: r.perplexity for lang, r in results.items()}
        improved = nll < state.best_ckpt_nll  # a new best.pt
        mean_loss = state.loss_acc / max(state.loss_n, 1)
        record = {"step": state.step, "epoch": round(state.epoch(loop.steps_per_epoch), 4), "lr": state.lr,
                  "train_loss": mean_loss,
                  # Mean over the steps since the last evaluation, with dropout on (AWD's train ppl).
                  "train_perplexity": math.exp(min(mean_loss, 50.0)), "valid_nll": nll,
                  "valid_perplexity": state.last_valid, "valid_tokens": {k: r.n_tokens for k, r in results.items()},
                  "eval_batch_size": t.eval_batch_size, "tokens": state.tokens,
                  "tokens_per_s": state.tokens / max(state.train_time, 1e-9),
                  "elapsed_s": time.monotonic() - loop.started,
                  "lang_batches": dict(state.lang_batches), "improved": improved, "scheduled": scheduled}
        if self.model.bidirectional:  # bilm: the backward LM too (selection stays on the forward NLL)
            back = evaluate_split(self.bundle, self.corpus, "valid", t.eval_batch_size, t.bptt, screen=cfg.data.screen,
                                  direction="backward", progress=progress)
            record["valid_perplexity_backward"] = {lang: r.perplexity for lang, r in back.items()}
        if scheduled:
            state.loss_acc, state.loss_n = 0.0, 0
        loop.last_eval_seconds = time.monotonic() - began
        loop.last_checkpoint = time.monotonic()
        log.info("step %d: validation perplexity %s (%s, %.1fs)", state.step,
                 ", ".join(f"{k} {v:.2f}" for k, v in state.last_valid.items()),
                 "scheduled" if scheduled else "checkpoint", loop.last_eval_seconds)
        loop.history.append(record)
        self.metrics_lines.append(dumps_json(record))
        if self.dist.is_main:
            atomic_write_text(self.run_dir / "metrics.jsonl", "\n".join(self.metrics_lines) + "\n")
        self.hooks.on_eval(record)
        if not (math.isfinite(nll) and all(math.isfinite(p) for p in state.last_valid.values())):
            # A perplexity that overflows (a loss above ~709 nats a token) is as diverged as a NaN one.
            log.error("training diverged by step %d (non-finite validation perplexity); no checkpoint written",
                      state.step)
            return "diverged"
        if improved:
            state.best_ckpt_nll, state.best_valid = nll, dict(state.last_valid)
        if scheduled and nll < state.best_nll:
            state.best_nll, state.bad_evals = nll, 0
        elif scheduled:
            state.bad_evals += 1
            if state.bad_evals % t.lr_patience == 0:
                state.lr *= t.lr_factor
                for g in loop.optimizer.param_groups:
                    g["lr"] = state.lr
                log.info("no improvement for %d evaluations: learning rate now %g", state.bad_evals, state.lr)
        # Everything the loop carries, so that a resume continues exactly (_restore reads it back).
        extra = {**state.to_checkpoint(loop.steps_per_epoch), "batcher": loop.batcher.state_dict(),
                 "softmax": loop.softmax.to_dict()}
        self._save(("last.pt", "best.pt") if improved else ("last.pt",), loop.optimizer, extra)
        loop.last_validation_seconds = time.monotonic() - began  # the checkpoint's writing too
        return "early_stopping" if scheduled and state.bad_evals >= t.stop_patience else ""


@dataclass
class _Loop:
    """What one :meth:`Trainer.fit` call works with besides the run's :class:`LoopState`: built anew by
    every process (the batcher's and optimizer's states come back from the checkpoint on resume)."""

    batcher: MultilingualBatcher
    optimizer: torch.optim.Optimizer
    #: Batches in one pass over every language's training stream.
    steps_per_epoch: int
    n_params: int
    n_params_split: dict[str, int]
    #: time.monotonic() when this process started the loop (train.max_minutes counts from it).
    started: float
    #: Every validation record of the run (metrics.jsonl), the resumed ones included.
    history: list[dict[str, Any]] = field(default_factory=list)
    #: What <unk> stands for in the training streams (:meth:`Trainer._unk_report`).
    unk: dict[str, Any] = field(default_factory=dict)
    #: The training softmax (train.softmax resolved) and, when it samples, the candidate sampler.
    softmax: SoftmaxChoice = field(default_factory=lambda: SoftmaxChoice("full", "train.softmax=full", 0))
    sampler: CandidateSampler | None = None
    #: time.monotonic() at the last evaluation (0: none yet in this process) and how long it took,
    #: for the wall-clock checkpoints (``train.checkpoint_minutes``).
    last_checkpoint: float = 0.0
    last_eval_seconds: float = 0.0
    #: The step this process started from (0, or where a resumed run was), for the time left, and the
    #: run's training seconds then (the steps' own time in this process is the difference).
    start_step: int = 0
    start_train_time: float = 0.0
    #: Seconds the last validation and its checkpoint took in this process (0: none yet), and the estimate
    #: made before the first when ``train.max_minutes`` is set: the budget keeps that long for the last one.
    last_validation_seconds: float = 0.0
    validation_estimate: float = 0.0
