"""The ELMo → GroC workflow as a Python function: :func:`init_from_elmo` (``polyglot-groc init-from-elmo``).

Two sources: an ``elmo``-kind run of this toolkit, or bilm-tf weights (``options.json`` and
``lm_weights.hdf5``) with a corpus. Either way the model is converted to GroC, its validation
perplexity measured before finetuning (expected to be astronomically bad, seed 004 Table 5.6;
metrics.jsonl's first line, step 0), then finetuned with the ordinary trainer into an ordinary
GroC run directory with ``result.json``. Nothing is printed: the hooks' ``on_start`` info says
what was converted (``elmo``), ``on_eval`` first gets the converted model's record.

This module imports torch only when the workflow runs, so the CLI can read its defaults cheaply.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groc_base.checks import option, override
from groc_base.errors import ConfigError, InputError
from polyglot_groc.config import ParentConfig, RunConfig, load_config, merge_overrides, to_dict

if TYPE_CHECKING:
    from polyglot_groc.model.bundle import ModelBundle
    from polyglot_groc.training.trainer import TrainHooks, TrainResult

__all__ = ["DEFAULT_FINETUNE_EPOCHS", "DEFAULT_LR", "ElmoInitResult", "init_from_elmo"]

#: Table 5.6's longest finetuning, which matched GroC trained from scratch for 100 epochs.
DEFAULT_FINETUNE_EPOCHS = 40
#: Seed 004 appendix C.2: the best finetuning learning rate of a 10-value search.
DEFAULT_LR = 1e-3

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class ElmoInitResult:
    """What :func:`init_from_elmo` did.

    ``to_dict()`` is the run's result.json: the finetuning's figures, the converted model's
    validation perplexity and NLL before finetuning, where the weights came from, and the parent.
    """

    #: The finetuning run (``parent``: the elmo run's checkpoint, or the weights file).
    train: TrainResult
    #: The converted model's validation record before finetuning (metrics.jsonl's first line).
    converted: dict[str, Any]
    #: Where the model came from: ``init_from`` and, for a run, ``init_checkpoint`` and ``init_step``;
    #: for weights, ``init_options`` and ``charset``; ``bias_activation``, ``prefix_copied`` (and why not).
    source: dict[str, Any]

    @property
    def diverged(self) -> bool:
        return self.train.diverged

    def to_dict(self) -> dict[str, Any]:
        summary = self.train.to_dict()
        parent = summary.pop("parent", None)
        return {**summary, "converted_valid_perplexity": self.converted["valid_perplexity"],
                "converted_valid_nll": self.converted["valid_nll"], **self.source, "parent": parent}


def init_from_elmo(
    *,
    out: PathLike,
    elmo_run: PathLike | None = None,
    checkpoint: str = "best",
    elmo_options: PathLike | None = None,
    elmo_weights: PathLike | None = None,
    data: PathLike | None = None,
    langs: str | Sequence[str] | None = None,
    finetune_epochs: int | None = None,
    max_steps: int | None = None,
    lr: float | None = None,
    eval_every: int | None = None,
    overrides: Mapping[str, Any] | None = None,
    threads: int | None = None,
    device: str | None = None,
    overwrite: bool = False,
    hooks: TrainHooks | None = None,
    model: str = "groc",
) -> ElmoInitResult:
    """Initialise a GroC model from an ELMo-like model, measure it, and finetune it into ``out``.

    Give either ``elmo_run`` (an ``elmo``-kind run directory; its ``checkpoint``, best or last) or
    ``elmo_options`` and ``elmo_weights`` (bilm-tf files) with ``data`` and ``langs``. The budget is
    ``finetune_epochs`` (default 40) or ``max_steps``, at ``lr`` (default 1e-3, seed 004 C.2).

    Args:
        out: The GroC run directory to create (an existing one needs ``overwrite``).
        elmo_run: An elmo run directory; its model and data settings are kept.
        checkpoint: The elmo run's checkpoint, ``"best"`` or ``"last"``.
        elmo_options, elmo_weights: bilm-tf ``options.json`` and ``lm_weights.hdf5`` (needs h5py).
        data: Corpus root (required with weights; default: the elmo run's).
        langs: Languages of ``data`` with weights (default ``en``); an elmo run keeps its own.
        finetune_epochs, max_steps: The finetuning budget (one of them).
        lr: Initial finetuning learning rate.
        eval_every: Validate every N steps (0, the default: every epoch).
        overrides: Config values by dotted key: ``train.*`` only for a run; for weights anything but
            what the weights fix (d, charset, char-CNN sizes). The arguments here win.
        threads, device: ``train.threads`` and ``train.device`` (threads apply to the conversion too).
        overwrite: Replace what ``out`` holds.
        hooks: Progress callbacks (:class:`~polyglot_groc.training.trainer.TrainHooks`).
        model: The run's kind: ``groc`` (the conversion above) or ``bilm`` (bilm-tf weights only: the
            char-CNN and both LSTM stacks copied, clips dropped, the lookup softmax trained from scratch).

    Returns:
        The :class:`ElmoInitResult`; ``to_dict()`` is ``out/result.json``.

    Raises:
        ConfigError: Both sources or none, conflicting budgets, a non-positive number, an override
            the source fixes, weights without ``data``.
        InputError: ``elmo_run`` is not an elmo run, ``out`` exists, a corpus problem.
        RunLockedError: Another process is writing ``out``.
        TrainingInterrupted: Ctrl-C or SIGTERM stopped finetuning (``resume(run=out)`` goes on).
    """
    from polyglot_groc.elmo.convert import converted_trainer
    from polyglot_groc.model.device import set_threads
    from polyglot_groc.training.trainer import existing_run_message, run_dir_has_content
    from polyglot_groc.training.workflows import NEW_RUN_FILES, write_result, writing_run

    defaults, explicit = _train_overrides(finetune_epochs, max_steps, lr, eval_every, threads, device)
    overrides = dict(overrides or {})
    if threads:  # the conversion runs the model too, before the trainer applies train.threads
        set_threads(threads)
    weights_mode = elmo_options is not None or elmo_weights is not None
    if model not in ("groc", "bilm"):
        raise ConfigError(f"{option('model', model)} cannot be initialised from elmo; use groc or bilm")
    if model == "bilm" and elmo_run is not None:
        raise ConfigError(f"a bilm run starts from bilm-tf weights "
                          f"({option('elmo_options')}/{option('elmo_weights')}); "
                          "an elmo run has no backward LSTM")
    if weights_mode and elmo_run is not None:
        raise ConfigError(f"give either an elmo run directory or {option('elmo_options')}/{option('elmo_weights')}, "
                          "not both")
    if not weights_mode and elmo_run is None:
        raise ConfigError(f"nothing to convert; pass an elmo run directory or {option('elmo_options')} and "
                          f"{option('elmo_weights')}")
    if weights_mode:
        bundle, cfg, source, info = _from_weights(elmo_options, elmo_weights, data, langs, overrides, defaults,
                                                  explicit, model)
    else:
        assert elmo_run is not None
        if langs is not None:
            raise ConfigError(f"{option('langs')} applies to {option('elmo_weights')}; an elmo run keeps its "
                              f"own languages")
        bundle, cfg, source, info = _from_run(Path(elmo_run), checkpoint, data, overrides, defaults, explicit)

    out = Path(out)
    if not overwrite and run_dir_has_content(out):  # before the lock: a refused run leaves nothing behind
        raise InputError(existing_run_message(out))
    # One writer; an interrupt says what was kept; a failure before the first checkpoint (no CUDA, a
    # full disk) removes the folder it made, lock included, or the files it wrote into an existing one.
    with writing_run(out, "init-from-elmo", clean=NEW_RUN_FILES) as watch:
        trainer, record = converted_trainer(bundle, cfg, out, overwrite=overwrite, hooks=hooks, report=source,
                                            start_info={"elmo": info})
        watch.trainer = trainer
        train = dataclasses.replace(trainer.fit(), parent=to_dict(cfg.parent))
        result = ElmoInitResult(train, record, dict(source))
        write_result(out, result.to_dict())
    return result


def _train_overrides(finetune_epochs: int | None, max_steps: int | None, lr: float | None,
                     eval_every: int | None, threads: int | None,
                     device: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(defaults, explicit): defaults go under the caller's overrides, the explicit arguments over
    them (as in ``train``), so ``overrides["train.lr"]`` is not undone by ``lr``'s default."""
    if finetune_epochs is not None and max_steps is not None:
        raise ConfigError(f"{option('finetune_epochs')} and {option('max_steps')} both given; pass one of them")
    for name, val in (("finetune_epochs", finetune_epochs), ("max_steps", max_steps), ("lr", lr)):
        if val is not None and val <= 0:
            raise ConfigError(f"{option(name, val)} must be positive")
    if eval_every is not None and eval_every < 0:
        raise ConfigError(f"{option('eval_every', eval_every)} must be >= 0 (0: every epoch)")
    # The elmo run's own budget (steps, minutes) is not the finetuning budget.
    defaults = {"train.lr": DEFAULT_LR, "train.max_minutes": 0.0, "train.max_steps": 0,
                "train.max_epochs": DEFAULT_FINETUNE_EPOCHS}
    explicit: dict[str, Any] = {"train.lr": lr, "train.eval_every": eval_every, "train.threads": threads,
                                "train.device": device}
    if max_steps is not None:
        # max_epochs stays a cap the steps never reach in practice.
        explicit.update({"train.max_steps": max_steps, "train.max_epochs": 1000000})
    if finetune_epochs is not None:
        explicit.update({"train.max_steps": 0, "train.max_epochs": finetune_epochs})
    return defaults, merge_overrides(explicit)


def _check_overrides(overrides: Mapping[str, Any], allowed: tuple[str, ...], forbidden: tuple[str, ...],
                     why: str) -> None:
    for key in overrides:
        bad = any(key == f or key.startswith(f + ".") for f in forbidden)
        if bad or (allowed and not any(key == a or key.startswith(a + ".") for a in allowed)):
            raise ConfigError(f"{override(key, '...')} is not allowed here: {why}; drop it")


def _from_run(run: Path, which: str, data: PathLike | None, overrides: Mapping[str, Any],
              defaults: Mapping[str, Any],
              explicit: Mapping[str, Any]) -> tuple[ModelBundle, RunConfig, dict[str, Any], dict[str, Any]]:
    from polyglot_groc.elmo.convert import convert_elmo_bundle
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.training.finetune import parent_record

    elmo, payload = load_bundle(run, which)
    if elmo.model.kind != "elmo":
        raise InputError(f"run {run} is a {elmo.model.kind} run, not elmo; init-from-elmo converts runs trained "
                         f"with {option('model', 'elmo')} (or bilm-tf weights via {option('elmo_options')}/"
                         f"{option('elmo_weights')})")
    # The converted model keeps the elmo model's architecture: only training settings may change.
    _check_overrides(overrides, ("train",), (), "a converted run keeps the elmo run's model and data settings")
    converted = convert_elmo_bundle(elmo)
    base = to_dict(converted.cfg)
    if data is not None:
        base["data"]["root"] = str(data)
    cfg = load_config(None, merge_overrides(defaults, overrides, explicit), base=base)
    cfg = dataclasses.replace(cfg, parent=parent_record(run, which, payload))
    source = {"init_from": str(run.resolve()), "init_checkpoint": which, "init_step": payload.get("step"),
              "bias_activation": cfg.model.output.bias_activation, "prefix_copied": True}
    info = {"source": "run", "bias_activation": cfg.model.output.bias_activation,
            "configured_bias_activation": elmo.cfg.model.output.bias_activation}
    return converted, cfg, source, info


def _from_weights(options_path: PathLike | None, weights_path: PathLike | None, data: PathLike | None,
                  langs: str | Sequence[str] | None, overrides: Mapping[str, Any], defaults: Mapping[str, Any],
                  explicit: Mapping[str, Any],
                  kind: str = "groc") -> tuple[ModelBundle, RunConfig, dict[str, Any], dict[str, Any]]:
    from langpairs.registry import parse_lang_spec
    from polyglot_groc.elmo.bilm import ElmoModel, load_bilm_options
    from polyglot_groc.elmo.convert import (
        ELMO_FIXED_KEYS,
        elmo_groc_config,
        install_elmo_weights,
    )
    from polyglot_groc.model.checkpoint import file_sha256
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.trainer import build_bundle, seed_everything

    if options_path is None or weights_path is None:
        raise ConfigError(f"bilm-tf weights need both {option('elmo_options')} options.json and "
                          f"{option('elmo_weights')} "
                          "lm_weights.hdf5")
    if data is None:
        raise ConfigError(f"no corpus given; pass {option('data')} DIR with <DIR>/<lang>/{{train,valid,test}}.txt")
    options_path, weights_path = Path(options_path), Path(weights_path)
    _check_overrides(overrides, (), ELMO_FIXED_KEYS, "the elmo weights fix it (d, charset, char-CNN sizes)")
    options = load_bilm_options(options_path)
    spec = "en" if langs is None else langs if isinstance(langs, str) else ",".join(langs)
    lang_codes = parse_lang_spec(spec, None)
    base = load_config(None, merge_overrides(defaults, overrides, {"data.root": str(data), "model.kind": kind,
                                                                    "data.langs": list(lang_codes)}, explicit))
    if kind == "bilm":
        return _bilm_from_weights(options, options_path, weights_path, base, data)
    cfg, imported = elmo_groc_config(options, base)
    splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
    corpus = load_corpus(cfg.data, splits)
    seed_everything(cfg.train.seed)  # a prefix trained from scratch starts from the run's seed
    bundle = build_bundle(cfg, corpus)
    elmo = ElmoModel.from_files(options_path, weights_path)
    install_elmo_weights(bundle, elmo, imported)
    source = {"init_from": str(weights_path.resolve()), "init_options": str(options_path.resolve()),
              "charset": imported.charset_scheme,
              "bias_activation": imported.bias_activation, "prefix_copied": imported.prefix_copied,
              "prefix_reason": imported.prefix_reason}
    info = {"source": "weights", "d": imported.d, "charset": imported.charset_scheme,
            "max_word_len": imported.max_word_len, "vocab": len(bundle.vocab), "data": str(data),
            "prefix_copied": imported.prefix_copied, "prefix_reason": imported.prefix_reason,
            "bias_activation": cfg.model.output.bias_activation,
            "configured_bias_activation": base.model.output.bias_activation}
    # The parent of the new run: the weights file (no run directory, no checkpoint name or step).
    parent = ParentConfig(run=str(weights_path.resolve()), sha256=file_sha256(weights_path))
    return bundle, dataclasses.replace(cfg, parent=parent), source, info


def _bilm_from_weights(options: Any, options_path: Path, weights_path: Path, base: RunConfig,
                       data: PathLike) -> tuple[ModelBundle, RunConfig, dict[str, Any], dict[str, Any]]:
    """A ``bilm`` bundle holding bilm-tf's char-CNN and both LSTM stacks (its softmax from scratch)."""
    from polyglot_groc.elmo.bilm import ElmoModel
    from polyglot_groc.elmo.convert import elmo_bilm_config, install_bilm_weights
    from polyglot_groc.model.checkpoint import file_sha256
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.trainer import build_bundle, seed_everything

    cfg = elmo_bilm_config(options, base)
    splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
    corpus = load_corpus(cfg.data, splits)
    seed_everything(cfg.train.seed)  # the softmax starts from the run's seed
    bundle = build_bundle(cfg, corpus)
    elmo = ElmoModel.from_files(options_path, weights_path)
    install_bilm_weights(bundle, elmo)
    clipped = elmo.lstm.cell_clip is not None or elmo.lstm.proj_clip is not None
    source = {"init_from": str(weights_path.resolve()), "init_options": str(options_path.resolve()),
              "charset": "elmo-bytes", "directions": 2, "clips_dropped": clipped}
    info = {"source": "weights", "kind": "bilm", "d": cfg.model.d, "charset": "elmo-bytes",
            "max_word_len": cfg.model.charset.max_word_len, "vocab": len(bundle.vocab), "data": str(data),
            "directions": 2, "clips_dropped": clipped, "prefix_copied": True, "prefix_reason": None,
            "bias_activation": cfg.model.output.bias_activation,
            "configured_bias_activation": cfg.model.output.bias_activation}
    parent = ParentConfig(run=str(weights_path.resolve()), sha256=file_sha256(weights_path))
    return bundle, dataclasses.replace(cfg, parent=parent), source, info
