"""Finetuning a trained run on a new domain (seed 000 §5, low-resource setting).

The vocabulary is extended with the new domain's training words (a new :class:`Vocab`; the old
one is immutable; a lookup model with ``<unk>`` leaves words rarer than ``data.min_count`` to it).
Parameters indexed by word (lookup input/output tables, lookup biases) keep their trained rows
and get freshly initialised rows for the new words, as the seed did; a GroC model has no such
parameters for its output side and composes the new words from characters.

The optimizer starts fresh unless asked (``resume_optimizer``): then the run's Adam state is
carried over. Adam keeps per-parameter moments (``exp_avg``, ``exp_avg_sq``) and a step count;
moments of word-indexed parameters get zero rows for the new words (as if those rows had never
had a gradient), all other state is copied unchanged, and the learning rate continues from the
run's last (possibly decayed) value unless ``lr`` is given.

The new run is an ordinary run directory (``train --resume``, ``evaluate`` and ``runs`` take it);
its config records the parent: absolute path, checkpoint, step and the checkpoint's sha256.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from groc_base.checks import option, override
from groc_base.errors import CheckpointError, ConfigError, InputError
from langpairs.corpus import MultilingualCorpus
from polyglot_groc.config import ParentConfig, RunConfig, load_config, merge_overrides, to_dict
from polyglot_groc.model.bundle import ModelBundle, load_bundle, run_checkpoint_path
from polyglot_groc.model.checkpoint import file_sha256
from polyglot_groc.model.vocab import UNK
from polyglot_groc.training.data import load_corpus, unseen_words
from polyglot_groc.training.trainer import Trainer, TrainHooks, TrainResult, trainable_named_parameters

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_EPOCHS", "FinetuneLanguageError", "FinetunedRun", "extend_bundle", "extend_optimizer_state",
           "finetune_config", "finetune_run", "finetune_trainer", "finetune_words", "parent_record"]


class FinetuneLanguageError(InputError):
    """The finetuning corpus is in a language the run does not know."""


def extend_bundle(bundle: ModelBundle, new_words: dict[str, list[str]], seed: int = 0) -> ModelBundle:
    """A new bundle over ``vocab.extend(new_words)``: trained rows copied, new word rows freshly initialised."""
    vocab = bundle.vocab.extend(new_words)
    n_new = len(vocab) - len(bundle.vocab)
    forms, extra = bundle.forms, bundle.extra_words
    if bundle.forms is not None:
        forms, extra = bundle._forms_for(vocab, n_new)
    torch.manual_seed(seed)  # the new rows' random init is reproducible
    out = ModelBundle.create(bundle.cfg, vocab, bundle.charset, forms, extra, bundle.lexicon_info)
    old = bundle.model.state_dict()
    new = out.model.state_dict()
    for name, tensor in new.items():
        src = old.get(name)
        if src is None:
            continue
        if src.shape == tensor.shape:
            tensor.copy_(src)
        elif src.dim() >= 1 and src.shape[1:] == tensor.shape[1:] and src.shape[0] == len(bundle.vocab) \
                and tensor.shape[0] == len(vocab):
            tensor[: src.shape[0]].copy_(src)  # word-indexed rows: keep the trained ones
        else:
            raise InputError(f"parameter {name} changes shape {tuple(src.shape)} -> {tuple(tensor.shape)} "
                             "when the vocabulary grows; this model kind cannot be finetuned")
    out.model.load_state_dict(new)
    log.info("vocabulary extended by %d words (%s model)", n_new, bundle.model.kind)
    return out


def finetune_words(bundle: ModelBundle, corpus: MultilingualCorpus, min_count: int) -> dict[str, list[str]]:
    """Per language, the new domain's training words the finetuned vocabulary adds (``unseen_words``).

    A lookup-output model with ``<unk>`` adds only new words seen ``min_count`` times or more over
    the languages (``data.min_count``, as when it was trained): the rarer ones train ``<unk>``, which
    the new domain's unseen words are scored with. Words the vocabulary already has (from another
    language) always join the language, and a model without ``<unk>`` (or a GroC one) takes every word.
    """
    words = unseen_words(bundle.vocab, corpus, "train")
    if bundle.model.compositional_output or UNK not in bundle.vocab or min_count <= 1:
        return words
    total: Counter[str] = Counter()
    for lang in corpus.langs:
        total.update(corpus.counts(lang, ("train",)))
    kept = {lang: [w for w in ws if w in bundle.vocab or total[w] >= min_count] for lang, ws in words.items()}
    log.info("data.min_count=%d: %d new training words of the new domain are left to <unk>", min_count,
             sum(len(ws) - len(kept[lang]) for lang, ws in words.items()))
    return kept


def extend_optimizer_state(state: Mapping[str, Any], old: ModelBundle, new: ModelBundle) -> dict[str, Any]:
    """``old``'s Adam ``state_dict`` re-indexed for ``new`` = :func:`extend_bundle` (``old``).

    Unchanged parameters keep their state bit for bit; a word-indexed parameter (first dimension
    ``len(old.vocab)`` -> ``len(new.vocab)``) gets zero moment rows for the new words.
    """
    if not isinstance(state, Mapping) or "state" not in state or "param_groups" not in state:
        raise CheckpointError("the checkpoint's optimizer state is not an optimizer state_dict; "
                              f"finetune without {option('resume_optimizer', True)}")
    before, after = trainable_named_parameters(old.model), trainable_named_parameters(new.model)
    if [n for n, _ in before] != [n for n, _ in after]:
        raise CheckpointError("the finetuned model's parameters differ from the run's; "
                              f"finetune without {option('resume_optimizer', True)}")
    n_old, n_new = len(old.vocab), len(new.vocab)
    per_param: dict[Any, Any] = {}
    for idx, entry in state["state"].items():
        i = int(idx)
        if not 0 <= i < len(before):
            raise CheckpointError(f"optimizer state names parameter {i} of {len(before)}; "
                                  f"finetune without {option('resume_optimizer', True)}")
        name, p_old = before[i]
        p_new = after[i][1]
        grown = p_old.shape != p_new.shape
        if grown and not (p_old.dim() >= 1 and p_old.shape[0] == n_old and p_new.shape[0] == n_new
                          and p_old.shape[1:] == p_new.shape[1:]):
            raise CheckpointError(f"parameter {name} changes shape {tuple(p_old.shape)} -> "
                                  f"{tuple(p_new.shape)}; its optimizer state cannot be carried over")
        out: dict[str, Any] = {}
        for key, value in entry.items():
            if grown and isinstance(value, torch.Tensor) and value.shape == p_old.shape:
                # (n_old, ...) -> (n_new, ...): new words' moments start at zero
                value = torch.cat([value, value.new_zeros((n_new - n_old, *value.shape[1:]))])
            out[key] = value
        per_param[idx] = out
    return {"state": per_param, "param_groups": [dict(g) for g in state["param_groups"]]}


#: Epochs on the new domain when neither ``epochs`` nor ``--set train.max_epochs`` says (seed: 3).
DEFAULT_EPOCHS = 3


@dataclass(frozen=True)
class FinetunedRun:
    """What :func:`finetune_run` did: the training result, the run it started from, the lexicon used."""

    result: TrainResult
    #: ``config.parent`` of the new run: the parent's absolute path, checkpoint, step and sha256.
    parent: dict[str, Any]
    lexicon_info: dict[str, Any]

    @property
    def diverged(self) -> bool:
        return self.result.diverged

    def to_dict(self) -> dict[str, Any]:
        """result.json, as ``train`` writes it, with the parent run."""
        summary = self.result.to_dict()
        if self.lexicon_info:
            summary["lexicon"] = dict(self.lexicon_info)
        summary["parent"] = dict(self.parent)
        return summary


def parent_record(run_dir: Path, which: str, payload: Mapping[str, Any]) -> ParentConfig:
    """The parent of a run finetuned from ``run_dir``'s ``which`` checkpoint (whose ``payload`` it is)."""
    path = run_checkpoint_path(run_dir, which)
    return ParentConfig(run=str(Path(run_dir).resolve()), checkpoint=which, step=int(payload.get("step") or 0),
                        sha256=file_sha256(path))


def finetune_config(cfg: RunConfig, data: Path, langs: tuple[str, ...], lr: float, epochs: int | None = None,
                    max_steps: int | None = None, overrides: Mapping[str, Any] | None = None) -> RunConfig:
    """The finetuned run's config: ``cfg`` on ``data`` (open vocabulary), validated every epoch.

    Precedence as in ``train``: defaults (``DEFAULT_EPOCHS`` epochs, no step or time cap, the
    given ``lr``), then ``overrides`` (dotted ``train.*`` keys only: the model and data settings
    are the run's), then the explicit ``epochs`` and ``max_steps``.
    """
    for key in overrides or {}:
        if key != "train" and not key.startswith("train."):
            raise ConfigError(f"{override(key, '...')} is not allowed in finetune: the finetuned run keeps the "
                              f"run's model and "
                              "data settings; set train.* only")
    base = to_dict(cfg)
    base["data"].update(root=str(Path(data).resolve()), langs=list(langs), vocab_mode="open")
    # The run's own budget (epochs, steps, minutes) is not the finetuning budget.
    base["train"].update(max_epochs=DEFAULT_EPOCHS, max_steps=0, max_minutes=0.0, eval_every=0, lr=lr)
    explicit = {"train.max_epochs": epochs, "train.max_steps": max_steps}
    return load_config(None, merge_overrides(overrides, explicit), base=base)


def finetune_run(run_dir: Path, data: Path, out: Path, epochs: int | None = None, which: str = "best",
                 overwrite: bool = False, lr: float | None = None, max_steps: int | None = None,
                 resume_optimizer: bool = False, overrides: Mapping[str, Any] | None = None,
                 hooks: TrainHooks | None = None) -> FinetunedRun:
    """Train ``run_dir``'s model for ``epochs`` more epochs on ``data`` into ``out``.

    ``out`` becomes an ordinary run directory (config.toml, metrics.jsonl, best.pt, last.pt) whose
    config records the parent run (``parent``). The optimizer is fresh unless
    ``resume_optimizer`` (see the module docstring). ``overrides``: dotted ``train.*`` keys to
    values, see :func:`finetune_config`. No run lock and no result.json: the workflow
    :func:`polyglot_groc.training.workflows.finetune` adds those.
    """
    trainer = finetune_trainer(run_dir, data, out, epochs, which, overwrite, lr, max_steps, resume_optimizer,
                               overrides, hooks)
    result = trainer.fit()
    return FinetunedRun(result, to_dict(trainer.cfg.parent), dict(trainer.bundle.lexicon_info))


def finetune_trainer(run_dir: Path, data: Path, out: Path, epochs: int | None = None, which: str = "best",
                     overwrite: bool = False, lr: float | None = None, max_steps: int | None = None,
                     resume_optimizer: bool = False, overrides: Mapping[str, Any] | None = None,
                     hooks: TrainHooks | None = None) -> Trainer:
    """The :class:`Trainer` of :func:`finetune_run` (same arguments), ready to ``fit()``: the run's
    bundle grown by the new domain's words, the finetuning config (recording its parent), the
    optimizer state carried over if asked; ``out`` prepared."""
    if epochs is not None and epochs < 1:
        raise InputError(f"{option('epochs', epochs)} must be at least 1")
    if max_steps is not None and max_steps < 0:
        raise InputError(f"{option('max_steps', max_steps)} must be >= 0 (0: epochs only)")
    if Path(out).resolve() == Path(run_dir).resolve():
        raise InputError(f"{option('out')} {out} is the run being finetuned; choose a new directory for the "
                         f"finetuned run")
    bundle, payload = load_bundle(run_dir, which)
    if resume_optimizer and not isinstance(payload.get("optimizer"), Mapping):
        raise CheckpointError(f"{run_dir}'s {which} checkpoint has no optimizer state to resume; "
                              f"finetune without {option('resume_optimizer', True)}")
    data = Path(data)
    present = sorted(p.name for p in data.iterdir() if p.is_dir()) if data.is_dir() else []
    if not present:
        raise InputError(f"{data} has no <lang>/train.txt folders; point {option('data')} at a prepared corpus "
                         f"directory")
    langs = tuple(lang for lang in present if lang in bundle.vocab.langs)
    if not langs:
        raise FinetuneLanguageError(f"{data} holds {', '.join(present)}, which the run does not know "
                                    f"(it knows {', '.join(bundle.vocab.langs)}); finetune on one of those")
    cfg = bundle.cfg
    if lr is None:  # a resumed optimizer continues the run's lr schedule (decayed or not)
        lr = float(payload.get("lr", cfg.train.lr)) if resume_optimizer else cfg.train.lr
    new_cfg = finetune_config(cfg, data, langs, lr, epochs, max_steps, overrides)
    new_cfg = dataclasses.replace(new_cfg, parent=parent_record(run_dir, which, payload))
    corpus = load_corpus(new_cfg.data, ("train", "valid"), cfg.languages)
    new_words = finetune_words(bundle, corpus, new_cfg.data.min_count)
    extended = extend_bundle(bundle, new_words, seed=cfg.train.seed)
    opt_state = extend_optimizer_state(payload["optimizer"], bundle, extended) if resume_optimizer else None
    if opt_state is not None:
        log.info("resuming the optimizer state of %s (lr %g)", run_dir, new_cfg.train.lr)
    # What the finetuned run has read in training: the parent's training text and this one's.
    seen = extended.vocab.with_training({lang: corpus.counts(lang, ("train",)) for lang in corpus.langs})
    extended = dataclasses.replace(extended, cfg=new_cfg, vocab=seen)
    return Trainer(new_cfg, out, overwrite=overwrite, hooks=hooks, corpus=corpus, bundle=extended,
                   optimizer_state=opt_state)
