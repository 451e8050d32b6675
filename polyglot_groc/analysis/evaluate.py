"""Evaluate a run directory on a split: per-language perplexity."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from groc_base.errors import InputError
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.lm import parameter_split
from polyglot_groc.training.data import load_corpus
from polyglot_groc.training.trainer import evaluate_split


def evaluate_run(run_dir: Path, split: str = "test", data: Path | None = None, batch_size: int | None = None,
                 which: str = "best", screen: bool = True, device: str = "cpu") -> dict[str, Any]:
    if split not in ("train", "valid", "test"):
        raise InputError(f"split {split!r} is unknown; use valid or test")
    bundle, payload = load_bundle(run_dir, which, device)
    cfg = bundle.cfg
    data_cfg = dataclasses.replace(cfg.data, root=str(data)) if data is not None else cfg.data
    corpus = load_corpus(data_cfg, (split,), cfg.languages)
    bs = batch_size or cfg.train.eval_batch_size
    results = evaluate_split(bundle, corpus, split, bs, cfg.train.bptt, screen=screen)
    return {
        "run": str(run_dir), "split": split, "model": cfg.model.kind, "checkpoint": which,
        "step": payload.get("step"), "n_params": parameter_split(bundle.model), "screen": screen,
        "vocab_mode": cfg.data.vocab_mode,
        "perplexity": {lang: r.perplexity for lang, r in results.items()},
        "details": {lang: r.to_dict() for lang, r in results.items()},
    }
