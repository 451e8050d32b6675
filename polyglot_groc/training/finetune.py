"""Finetuning a trained run on a new domain (seed 000 §5, low-resource setting).

The vocabulary is extended with the new domain's training words (a new :class:`Vocab`; the old
one is immutable). Parameters indexed by word (lookup input/output tables, lookup biases) keep
their trained rows and get freshly initialised rows for the new words, as the seed did; a GroC
model has no such parameters for its output side and composes the new words from characters.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import torch

from lexicons.errors import InputError
from polyglot_groc.model.bundle import ModelBundle, load_bundle
from polyglot_groc.training.data import load_corpus, unseen_words
from polyglot_groc.training.trainer import Trainer, TrainResult

log = logging.getLogger(__name__)

__all__ = ["FinetuneLanguageError", "extend_bundle", "finetune_run"]


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


def finetune_run(run_dir: Path, data: Path, out: Path, epochs: int = 3, which: str = "best",
                 overwrite: bool = False, lr: float | None = None, max_steps: int = 0) -> TrainResult:
    """Train ``run_dir``'s model for ``epochs`` more epochs on ``data`` (fresh optimizer) into ``out``."""
    if epochs < 1:
        raise InputError(f"--epochs {epochs} must be at least 1")
    bundle, _ = load_bundle(run_dir, which)
    data = Path(data)
    present = sorted(p.name for p in data.iterdir() if p.is_dir()) if data.is_dir() else []
    if not present:
        raise InputError(f"{data} has no <lang>/train.txt folders; point --data at a prepared corpus directory")
    langs = tuple(lang for lang in present if lang in bundle.vocab.langs)
    if not langs:
        raise FinetuneLanguageError(f"{data} holds {', '.join(present)}, which the run does not know "
                                    f"(it knows {', '.join(bundle.vocab.langs)}); finetune on one of those")
    cfg = bundle.cfg
    train_cfg = dataclasses.replace(cfg.train, max_epochs=epochs, max_steps=max_steps, eval_every=0,
                                    lr=lr if lr is not None else cfg.train.lr)
    data_cfg = dataclasses.replace(cfg.data, root=str(data), langs=langs, vocab_mode="open")
    new_cfg = dataclasses.replace(cfg, data=data_cfg, train=train_cfg)
    corpus = load_corpus(data_cfg, ("train", "valid"), cfg.languages)
    new_words = unseen_words(bundle.vocab, corpus, "train")
    extended = extend_bundle(bundle, new_words, seed=cfg.train.seed)
    extended = dataclasses.replace(extended, cfg=new_cfg)
    return Trainer(new_cfg, out, overwrite=overwrite, corpus=corpus, bundle=extended).fit()
