"""A resume on a corpus that changed since the run started: one rule per kind of change, checked first.

:func:`~polyglot_groc.training.fingerprint.data_changes` says which of a run's corpus files differ
from what it recorded; :func:`prepare_changed_data` decides what ``train --resume RUN
--accept-changed-data`` (``resume(accept_changed_data=True)``) does with them, and does everything
that can fail (reading the corpus, growing the vocabulary, encoding every split, re-scoring
best.pt) before the run directory is touched. The rules (docs/reliability.md, "Resume on changed
data"):

* **New words** (in any split the vocabulary is built from: train, valid and test under a closed
  vocabulary, train under an open one) join the vocabulary as ``finetune`` adds them
  (:func:`~polyglot_groc.training.finetune.extend_bundle`): a lookup table gets freshly initialised
  rows and their Adam moments start at zero; GroC composes them from their spelling. An open
  lookup vocabulary with ``<unk>`` adds only words seen ``data.min_count`` times, the rarer ones
  stay ``<unk>``; new validation words of an open vocabulary are scored as ``evaluate`` scores
  unseen words (``<unk>``, or composed). A kind whose vocabulary cannot grow (``adaptive``) is
  refused, naming the file and a new run that works.
* **Removed or edited lines** need nothing more; a training text now shorter than the position
  last.pt reached starts that epoch over (the trainer).
* **A changed validation text**: best.pt is re-scored on it before training goes on, and that
  figure is what later validations must beat (best.pt is replaced only by a better model on the
  same text; the learning-rate schedule compares like with like).
* **A missing file** (a language folder removed or renamed) is refused with or without the flag:
  a resumed run trains every language it started with; ``finetune`` into a new run trains on the
  languages a corpus folder holds. Another ``data.langs`` in config.toml is refused by
  :func:`~polyglot_groc.training.workflows.check_same_run`; a language folder added to the
  corpus root is not read.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groc_base.checks import in_cli, option
from groc_base.errors import CheckpointError, InputError
from langpairs.corpus import MultilingualCorpus, has_corpus
from polyglot_groc.config import RunConfig
from polyglot_groc.kind_traits import kind_traits
from polyglot_groc.model.bundle import ModelBundle, bundle_from_payload
from polyglot_groc.model.checkpoint import load_checkpoint
from polyglot_groc.model.device import resolve_device, set_threads
from polyglot_groc.model.scoring import pooled_nll
from polyglot_groc.training.data import load_corpus, vocab_policy, vocab_splits
from polyglot_groc.training.evaluation import evaluate_split, evaluation_vocab, split_streams
from polyglot_groc.training.finetune import extend_bundle, extend_optimizer_state, new_vocabulary_words
from polyglot_groc.training.fingerprint import DataChange, UnreadableFingerprint, data_changes

log = logging.getLogger(__name__)

__all__ = ["ChangedData", "corpus_splits", "prepare_changed_data", "run_data_changes"]

FLAG = "accept_changed_data"


@dataclass
class ChangedData:
    """What a resume on changed text trains with: read, grown and checked before anything is written."""

    corpus: MultilingualCorpus
    #: last.pt's model, its vocabulary grown by the new words (the same bundle when none).
    bundle: ModelBundle
    #: last.pt's payload with the optimizer state grown to match and, when the validation text
    #: changed, the best figures re-measured on it.
    payload: dict[str, Any]
    #: Lines for the start info's ``changes`` (what the resume did about the data).
    notes: list[str] = field(default_factory=list)


def corpus_splits(cfg: RunConfig) -> tuple[str, ...]:
    """The splits a run reads (and records): a closed vocabulary is built from every split."""
    return ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")


def run_data_changes(run: Path, cfg: RunConfig, *, accept: bool) -> list[DataChange] | None:
    """:func:`data_changes` of ``run``; an unreadable record is refused without ``accept``, and with it
    every file the run reads counts as changed."""
    try:
        return data_changes(run)
    except UnreadableFingerprint as exc:
        if not accept:
            raise InputError(f"{exc}, or pass {option(FLAG, True)} to go on with the corpus as it is now") from exc
        log.warning("%s; going on as %s asks, taking every corpus file as changed", exc, option(FLAG, True))
        root = Path(cfg.data.root)
        return [DataChange(root / lang / f"{split}.txt", lang, split, "may have changed", "its record is unreadable")
                for lang in cfg.data.langs for split in corpus_splits(cfg)]


def _finetune_call(run: Path, data: Path) -> str:
    """The finetune call that goes on from last.pt on ``data`` in a new run, in the current face."""
    if in_cli():
        return f"`polyglot-groc finetune {run} --data {data} --checkpoint last --out NEW`"
    return f"pg.finetune(run={str(run)!r}, data={str(data)!r}, checkpoint='last', out=NEW)"


def _new_run_call(run: Path) -> str:
    """The train call of a new run with ``run``'s config (on the corpus as it is now), in the current face."""
    if in_cli():
        return f"`polyglot-groc train --config {run / 'config.toml'} --out NEW`"
    return f"pg.train(config={str(run / 'config.toml')!r}, out=NEW)"


def _missing_refusal(run: Path, cfg: RunConfig, missing: Sequence[DataChange]) -> InputError:
    """A file the run reads is gone: no flag makes a resume go on without it."""
    first = missing[0]
    more = f" (and {len(missing) - 1} more file(s))" if len(missing) > 1 else ""
    root = Path(cfg.data.root)
    gone = sorted({c.lang for c in missing if not has_corpus(root, c.lang)})
    kept = [lang for lang in cfg.data.langs if lang not in gone]
    if gone and kept:  # a language left the corpus folder: finetune trains on the languages it holds
        fix = (f"put it back (a resumed run trains every language it started with: "
               f"{', '.join(cfg.data.langs)}), or go on from last.pt with {', '.join(kept)} only in a new run: "
               + _finetune_call(run, root))
    else:
        fix = "put it back: a resumed run reads every file it was trained on"
    return InputError(f"run {run} cannot go on: {first.describe()}{more}; {fix}")


def _growth_refusal(run: Path, cfg: RunConfig, new_words: Mapping[str, Sequence[str]],
                    changes: Sequence[DataChange]) -> InputError:
    """A kind whose vocabulary cannot grow, on text with new words: a new run on the new text works."""
    lang = next(lang for lang, ws in new_words.items() if ws)
    where = next((c.path for c in changes if c.lang == lang), changes[0].path)
    n = sum(map(len, new_words.values()))
    return InputError(
        f"run {run} cannot go on with the changed text: {where} brings {n} word(s) its vocabulary lacks (e.g. "
        f"{new_words[lang][0]!r}), and the vocabulary of this {cfg.model.kind} run cannot grow (its softmax bands are "
        f"fractions of it); put the original file back, or train a new run on the new text: "
        + _new_run_call(run))


def _refusal(run: Path, changes: Sequence[DataChange], what: str) -> InputError:
    """A change without the flag: name it, and what the flag would do about it."""
    more = f" (and {len(changes) - 1} more file(s))" if len(changes) > 1 else ""
    return InputError(f"run {run} was trained on other data: {changes[0].describe()}{more}; --resume continues "
                      f"exactly only on the same text: put the original file back, or pass {option(FLAG, True)} "
                      f"to go on with the text as it is now ({what})")


def _consequences(changes: Sequence[DataChange], new_words: Mapping[str, Sequence[str]]) -> list[str]:
    """What going on does about ``changes``, in words (the refusal says it, the resume reports it)."""
    out = []
    n_new = sum(map(len, new_words.values()))
    if n_new:
        out.append(f"{n_new} new word(s) join the vocabulary")
    if any(c.split == "valid" for c in changes):
        out.append("best.pt is re-scored on the new validation text")
    if any(c.split == "train" for c in changes):
        out.append("training reads the new text")
    return out or ["the vocabulary is as it was"]


def prepare_changed_data(run: Path, cfg: RunConfig, bundle: ModelBundle, payload: Mapping[str, Any],
                         changes: Sequence[DataChange], *, accept: bool) -> ChangedData:
    """Apply the module's rules to ``changes`` of ``run`` (``cfg`` its config, ``bundle`` and
    ``payload`` its last.pt) without writing anything; refuse what cannot go on.

    Raises:
        InputError: a file is missing; the text changed and ``accept`` is not set; new words for a kind
            whose vocabulary cannot grow; a split that still cannot be encoded.
        CheckpointError: last.pt's optimizer state does not fit its model.
    """
    missing = [c for c in changes if c.missing]
    if missing:
        raise _missing_refusal(run, cfg, missing)
    corpus = load_corpus(cfg.data, corpus_splits(cfg), cfg.languages)
    traits = kind_traits(cfg.model.kind)
    min_count = vocab_policy(cfg.data, traits.composes_output)[1]
    splits = vocab_splits(cfg.data.vocab_mode, corpus_splits(cfg))
    new_words = {lang: ws for lang, ws in new_vocabulary_words(bundle, corpus, splits, min_count).items() if ws}
    if new_words and not traits.grows_vocabulary:
        raise _growth_refusal(run, cfg, new_words, changes)
    notes = _consequences(changes, new_words)
    if not accept:
        raise _refusal(run, changes, "; ".join(notes))
    more = f" (and {len(changes) - 1} more file(s))" if len(changes) > 1 else ""
    log.warning("run %s: %s%s; going on with the new text as %s asks: %s", run, changes[0].describe(), more,
                option(FLAG, True), "; ".join(notes))
    out = dict(payload)
    grown = bundle
    if new_words:
        grown = extend_bundle(bundle, new_words, seed=cfg.train.seed)
        if isinstance(payload.get("optimizer"), Mapping):
            out["optimizer"] = extend_optimizer_state(payload["optimizer"], bundle, grown)
    _check_encodable(grown, corpus, cfg)
    if any(c.split == "valid" for c in changes):
        out.update(_rescore_best(run, cfg, corpus, min_count, splits))
    return ChangedData(corpus, grown, out, [f"data: {n}" for n in notes])


def _check_encodable(bundle: ModelBundle, corpus: MultilingualCorpus, cfg: RunConfig) -> None:
    """Every split training reads must encode now (training text, validation text): before the run is written."""
    split_streams(bundle, corpus, "train", cfg.train.batch_size)
    with evaluation_vocab(bundle, corpus, "valid") as view:
        split_streams(view, corpus, "valid", cfg.train.eval_batch_size)


def _rescore_best(run: Path, cfg: RunConfig, corpus: MultilingualCorpus, min_count: int,
                  splits: Sequence[str]) -> dict[str, Any]:
    """best.pt's validation figures on the new validation text: what later validations must beat.

    Without a readable best.pt the figures start afresh (the next validation writes best.pt).
    """
    path = run / "best.pt"
    fresh = {"best_nll": math.inf, "best_ckpt_nll": math.inf, "best_valid": {}}
    if not path.is_file():
        log.warning("run %s has no best.pt to re-score on the new validation text: the next validation writes one",
                    run)
        return fresh
    try:
        best = bundle_from_payload(load_checkpoint(path), path)
    except CheckpointError as exc:
        log.warning("best.pt of run %s cannot be read (%s): the next validation on the new text replaces it", run, exc)
        return fresh
    grow = {lang: ws for lang, ws in new_vocabulary_words(best, corpus, splits, min_count).items() if ws}
    if grow:
        best = extend_bundle(best, grow, seed=cfg.train.seed)
    best = dataclasses.replace(best, cfg=dataclasses.replace(best.cfg, data=cfg.data))
    set_threads(cfg.train.threads)
    best.model.to(resolve_device(cfg.train.device))
    results = evaluate_split(best, corpus, "valid", cfg.train.eval_batch_size, cfg.train.bptt, screen=cfg.data.screen)
    nll = pooled_nll(results)
    perplexities = {lang: r.perplexity for lang, r in results.items()}
    log.warning("the validation text changed: best.pt scores %s on it; later validations are compared with that",
                ", ".join(f"{k} {v:.2f}" for k, v in perplexities.items()))
    return {"best_nll": nll, "best_ckpt_nll": nll, "best_valid": perplexities}
