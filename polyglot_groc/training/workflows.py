"""The training workflows as Python functions: :func:`train`, :func:`resume`, :func:`finetune`.

Each is what the CLI command of that name does (``polyglot-groc train``, ``train --resume``,
``finetune`` are thin faces over them): it checks its arguments before anything is written,
holds the run directory's lock while it writes it, trains with the ordinary
:class:`~polyglot_groc.training.trainer.Trainer`, writes ``result.json`` and returns a frozen
:class:`TrainResult` whose ``to_dict()`` is that file. A run directory written from Python is
the one the CLI writes (config.toml, metrics.jsonl, best.pt, last.pt, result.json), except the
plots: ``curves.png`` and TensorBoard scalars are drawn by the CLI's progress hooks.

Nothing is printed. Progress goes to the optional ``hooks`` (:class:`TrainHooks`), messages to
``logging``. Errors are typed: :class:`~groc_base.errors.ConfigError` (a bad argument or config
value), :class:`~groc_base.errors.InputError` (missing corpus, existing output, a run that cannot
go on; :class:`~polyglot_groc.training.runlock.RunLockedError` when another process writes the
run), :class:`~groc_base.errors.CheckpointError`. Ctrl-C (and SIGTERM inside
:func:`~polyglot_groc.training.interrupts.stop_signals`) raise
:class:`~polyglot_groc.training.interrupts.TrainingInterrupted` once the directory is in order.
A diverged run is not an error: it returns, with ``result.diverged`` set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import check_input_file, option
from groc_base.errors import ConfigError, InputError
from groc_base.fileio import dumps_json
from langpairs.corpus import MultilingualCorpus, check_corpora
from langpairs.registry import load_registry, parse_lang_spec
from polyglot_groc.config import PRESETS, RunConfig, load_config, merge_overrides, to_dict
from polyglot_groc.kind_traits import UNTIE
from polyglot_groc.model.bundle import ModelBundle, bundle_from_payload
from polyglot_groc.model.checkpoint import atomic_write_text, diverged_at, load_checkpoint, train_again_command
from polyglot_groc.model.device import set_threads
from polyglot_groc.model.lexforms import lexicon_for_languages
from polyglot_groc.model.lm import count_parameters, parameter_split
from polyglot_groc.training.data_change import prepare_changed_data, run_data_changes
from polyglot_groc.training.distributed import world_from_env
from polyglot_groc.training.finetune import finetune_trainer
from polyglot_groc.training.fingerprint import FINGERPRINT_NAME
from polyglot_groc.training.interrupts import Terminated, TrainingInterrupted
from polyglot_groc.training.loop import LoopState
from polyglot_groc.training.metrics import read_metrics
from polyglot_groc.training.runlock import RunLock, RunLockedError, describe_owner, lock_holder, locked_run_dir
from polyglot_groc.training.trainer import (
    StepInfo,
    Trainer,
    TrainHooks,
    TrainResult,
    existing_run_message,
    resume_config,
    run_dir_has_content,
)

log = logging.getLogger(__name__)

__all__ = ["PRESETS", "StepInfo", "TrainHooks", "TrainResult", "TrainingInterrupted", "finetune", "load_result",
           "resume", "train"]

#: A file or folder path, as a string or any ``os.PathLike`` (``pathlib.Path``).
PathLike = str | os.PathLike[str]

#: Files a new run removes again when it stops before its first checkpoint in a directory it did not
#: create (curves.png: the CLI's hooks draw it).
NEW_RUN_FILES = ("config.toml", "metrics.jsonl", "curves.png", FINGERPRINT_NAME)


def train(
    *,
    out: PathLike,
    langs: str | Sequence[str] | None = None,
    data: PathLike | None = None,
    model: str | None = None,
    size: str | None = None,
    config: PathLike | RunConfig | None = None,
    overrides: Mapping[str, Any] | None = None,
    with_related: bool = False,
    extra_langs: Sequence[str] = (),
    untie: bool = False,
    max_steps: int | None = None,
    max_epochs: int | None = None,
    max_minutes: float | None = None,
    threads: int | None = None,
    device: str | None = None,
    overwrite: bool = False,
    hooks: TrainHooks | None = None,
    languages: PathLike | None = None,
) -> TrainResult:
    """Train a language model (mono- or polyglot) into the run directory ``out``.

    The configuration is a ``size`` preset (``"small"``, the default: d 64, 2x128 LSTM; or
    ``"paper"``: the thesis model), or ``config``: a TOML file or a ready :class:`RunConfig`
    (taken as it is; its kind's defaults are those it was built with). On top of it come
    ``overrides`` (dotted keys to values, e.g. ``{"model.d": 128, "train.lr": 2e-3}``), then the
    arguments here, which win.

    Args:
        out: The run directory to create (an existing one needs ``overwrite``).
        langs: Language codes, ``["en", "fr"]`` or ``"en,fr"``; None: the config's ``data.langs``.
        data: Corpus root, ``<data>/<lang>/{train,valid,test}.txt``; None: the config's ``data.root``.
        model: Model kind (untied, tied, bilinear, deep-residual, adaptive, conv, elmo, groc,
            groc-lex), with its own output-net defaults; None: the config's.
        size: Preset name, ``"small"`` or ``"paper"``; not with ``config``.
        config: A TOML config file or a :class:`RunConfig`, instead of a preset.
        overrides: Config values by dotted key, applied over the preset or file.
        with_related: Add each language's related language (the thesis's pairs: fr -> en, ...).
        extra_langs: More language codes, added after those.
        untie: Turn the tied kind into untied (separate input and output tables, untied's defaults).
        max_steps, max_epochs, max_minutes: Stop limits (``train.*``; 0 is no limit for steps and minutes).
        threads: CPU threads for torch (``train.threads``; 0: picked from the free cores).
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (``train.device``).
        overwrite: Replace what ``out`` holds.
        hooks: Progress callbacks (:class:`TrainHooks`), e.g. a progress bar.
        languages: A languages TOML file adding languages to the built-in ten (see
            :func:`langpairs.registry.load_registry`); the config's ``[languages]`` win over it. The
            run records the entries it uses (and their related languages'), so evaluating or
            resuming it never needs the file.

    Returns:
        The :class:`TrainResult`; ``result.to_dict()`` is what ``out/result.json`` holds.

    Raises:
        ConfigError: An unknown size, ``size`` with ``config``, a bad config value or language, no corpus.
        CorpusError: A language (say, one ``with_related`` added) has no corpus under ``data``.
        InputError: ``out`` exists (without ``overwrite``), a corpus file is missing, empty or not UTF-8.
        RunLockedError: Another process is writing ``out``.
        TrainingInterrupted: Ctrl-C or SIGTERM stopped training (``resume`` goes on from its checkpoint).
    """
    cfg = _train_config(langs=langs, data=data, model=model, size=size, config=config, overrides=overrides,
                        with_related=with_related, extra_langs=extra_langs, untie=untie, max_steps=max_steps,
                        max_epochs=max_epochs, max_minutes=max_minutes, threads=threads, device=device,
                        languages=languages)
    return _train_run(cfg, Path(out), overwrite=overwrite, hooks=hooks)


def _train_config(*, langs: str | Sequence[str] | None, data: PathLike | None, model: str | None, size: str | None,
                  config: PathLike | RunConfig | None, overrides: Mapping[str, Any] | None, with_related: bool,
                  extra_langs: Sequence[str], untie: bool, max_steps: int | None, max_epochs: int | None,
                  max_minutes: float | None, threads: int | None, device: str | None,
                  languages: PathLike | None = None) -> RunConfig:
    """The new run's config, loaded (and validated) once."""
    if size is not None and size not in PRESETS:
        raise ConfigError(f"{option('size', size)} is unknown; use {' or '.join(PRESETS)}")
    if size is not None and config is not None:
        raise ConfigError(f"{option('size', size)} and {option('config', str(config))} both choose the configuration; "
                          f"pass one of them ({option('size', size)} is {option('config', str(PRESETS[size]))}; add "
                          f"{option('overrides')} to either)")
    # Runs record the absolute data path, so evaluation works from any directory.
    explicit = {"data.root": str(Path(data).resolve()) if data is not None else None, "model.kind": model,
                "train.max_steps": max_steps, "train.max_epochs": max_epochs, "train.max_minutes": max_minutes,
                "train.threads": threads, "train.device": device}
    values = merge_overrides(overrides, explicit)
    if isinstance(config, RunConfig):
        if untie:
            raise ConfigError("untie applies to a config file or preset; a RunConfig is used as built: build it "
                              "with model.kind = 'untied'")
        cfg = load_config(None, values, base=to_dict(config))
    else:
        # Untie turns the kind before its defaults are chosen: untied's, not tied's.
        cfg = load_config(PRESETS[size or "small"] if config is None else config, values,
                          kind_map=UNTIE if untie else None)
    if untie and cfg.model.kind not in UNTIE.values():
        log.warning("%s applies to the tied kind only; %s is kept", option("untie", True), cfg.model.kind)
    # A languages file and the config may define languages ([languages.xx]); the codes are resolved
    # against them.
    registry = load_registry(languages, config=cfg.languages, env=False)
    spec = ",".join(cfg.data.langs) if langs is None else langs if isinstance(langs, str) else ",".join(langs)
    also = ",".join([*(["related"] if with_related else []), *extra_langs]) or None
    codes = parse_lang_spec(spec, also, registry=registry)
    cfg = dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, langs=codes))
    if not cfg.data.root:
        raise ConfigError(f"no corpus given; pass {option('data')} DIR with <DIR>/<lang>/{{train,valid,test}}.txt")
    if cfg.model.init_input:  # before anything is written (a FIFO would block the reader)
        check_input_file(cfg.model.init_input, flag="init_input", what="word2vec file")
    # A language with_related added without a corpus is named as such (not as a missing file).
    check_corpora(Path(cfg.data.root), codes, primary=parse_lang_spec(spec, registry=registry), registry=registry)
    # The run records the registry entries it uses, and their wordnets and fallback settings.
    lexicon = lexicon_for_languages(cfg.model.lexicon, cfg.model.kind, codes, registry)
    cfg = dataclasses.replace(cfg, languages={**cfg.languages, **registry.config_tables(codes)},
                              model=dataclasses.replace(cfg.model, lexicon=lexicon))
    return cfg.validate()


def resume(
    *,
    run: PathLike,
    max_steps: int | None = None,
    max_epochs: int | None = None,
    max_minutes: float | None = None,
    threads: int | None = None,
    device: str | None = None,
    precision: str | None = None,
    compile: bool | None = None,
    log_every: int | None = None,
    accept_changed_data: bool = False,
    hooks: TrainHooks | None = None,
) -> TrainResult:
    """Continue ``run`` exactly where its ``last.pt`` left it, with its own config and data.

    Steps and epochs are totals for the run: a larger ``max_steps`` or ``max_epochs`` extends it,
    finished or not (a limit not given that would stop it first is lifted). The other arguments
    change how this invocation runs. Every change is written to the run's config.toml, and the
    hooks' ``on_start`` info lists them (``changes``).

    Args:
        run: The run directory (written by :func:`train`, :func:`finetune` or the CLI).
        max_steps, max_epochs: New totals for the run, beyond the step it has reached.
        max_minutes: Stop after this many minutes of this invocation (0: no limit).
        threads, device, precision, compile, log_every: ``train.*`` settings for this invocation on.
        accept_changed_data: Go on although a corpus file changed since the run started (it
            recorded their sizes and SHA-256, :mod:`polyglot_groc.training.fingerprint`), by the
            rules of :mod:`polyglot_groc.training.data_change`: new words join the vocabulary as
            ``finetune`` adds them, a changed validation text re-scores best.pt first, a missing
            file is refused. The run then records the new fingerprint. Without it any change is refused.
        hooks: Progress callbacks (:class:`TrainHooks`).

    Returns:
        The :class:`TrainResult` of the whole run; ``to_dict()`` is its new ``result.json``.

    Raises:
        InputError: ``run`` is no run or stopped before its first checkpoint; it stopped early, or
            finished and no larger limit was given, or a limit does not extend it; its corpus
            changed since it started (without ``accept_changed_data``), or a file of it is missing,
            or it brings new words a kind whose vocabulary cannot grow (adaptive) would need.
        RunLockedError: Another process is training ``run``.
        ConfigError: A bad setting. CheckpointError: ``last.pt`` cannot be resumed.
        TrainingInterrupted: Ctrl-C or SIGTERM stopped it again.
    """
    run = Path(run).resolve()
    holder = lock_holder(run)  # before "is it a run?": a run still before its first checkpoint is one
    if holder is not None:
        raise RunLockedError(f"run {run} is being trained by {describe_owner(holder)}; wait for it to finish, "
                             "or stop it (Ctrl-C, or kill the pid) and resume then")
    if not (run / "last.pt").is_file() or not (run / "config.toml").is_file():
        raise InputError(_not_resumable(run))
    try:
        cfg = load_config(run / "config.toml", stored=True)
    except ConfigError as exc:
        raise ConfigError(f"run {run}: its config.toml is not a valid config ({exc}); put back the value the run "
                          "was trained with") from exc
    payload = load_checkpoint(run / "last.pt")
    bundle = bundle_from_payload(payload, run / "last.pt")
    check_same_run(cfg, bundle.cfg, run)
    # The corpus as the run recorded it, before anything is written (config.toml included): a change
    # is refused, or (accepted) read, the vocabulary grown and every split encoded here already.
    changed = run_data_changes(run, cfg, accept=accept_changed_data)
    cfg, changes = resume_config(cfg, payload, run, max_steps=max_steps, max_epochs=max_epochs,
                                 max_minutes=max_minutes, finished=(run / "result.json").is_file())
    runtime: dict[str, Any] = {"threads": threads, "device": device, "precision": precision, "compile": compile,
                               "log_every": log_every}
    runtime = {k: v for k, v in runtime.items() if v is not None and v != getattr(cfg.train, k)}
    if runtime:
        changes += [f"train.{k} {getattr(cfg.train, k)} -> {v}" for k, v in runtime.items()]
        cfg = dataclasses.replace(cfg, train=dataclasses.replace(cfg.train, **runtime)).validate()
    corpus = None
    prepared = prepare_changed_data(run, cfg, bundle, payload, changed, accept=accept_changed_data) \
        if changed else None
    if prepared is not None:
        bundle, payload, corpus = prepared.bundle, prepared.payload, prepared.corpus
        changes += prepared.notes
    bundle.cfg = dataclasses.replace(bundle.cfg, train=cfg.train)  # the checkpoints then record the new limits
    return _train_run(cfg, run, payload=payload, bundle=bundle, hooks=hooks, start_info={"changes": changes},
                      data_changed=prepared is not None, corpus=corpus)


def _not_resumable(run: Path) -> str:
    """Why ``run`` (without a config.toml or last.pt file) cannot be resumed, and a fix that loses nothing.

    Only a run that never wrote a checkpoint is safe to train again with ``--overwrite``; where
    ``best.pt`` or ``result.json`` exists, last.pt was lost or damaged after the fact and the
    checkpoints left are named instead.
    """
    last, config = run / "last.pt", run / "config.toml"
    if not config.is_file():
        if not run.is_dir() or not any(run.iterdir()):
            return f"{run} is not a run directory (no config.toml and last.pt to resume from); train it first " \
                   "(without resuming)"
        return f"{run} has no config.toml, so it cannot be resumed; restore config.toml from a copy of the run " \
               "(its checkpoints are kept as they are)"
    kept = [name for name in ("best.pt", "result.json") if (run / name).is_file()]
    if os.path.lexists(last) and not last.is_file():
        what = "a directory" if last.is_dir() else "not a regular file"
        fix = ("restore last.pt from a copy of the run, or move it away and copy best.pt to last.pt to go on "
               "from the best checkpoint" if (run / "best.pt").is_file() else "restore last.pt from a copy of the run")
        return f"run {run}: last.pt is {what}, so there is nothing to resume from; {fix} (best.pt and the other " \
               "files are kept as they are)"
    step = diverged_at(run)
    if "best.pt" not in kept and step is not None:  # no checkpoint was ever written: none to restore
        return f"run {run} diverged at step {step}, before its first checkpoint, so there is nothing to resume; " \
               f"train it again with a lower train.lr (or train.clip): {train_again_command(run, lower_lr=True)}"
    if kept:
        fix = ("copy best.pt to last.pt to go on from the best checkpoint, or restore last.pt from a copy"
               if "best.pt" in kept else "restore last.pt from a copy of the run")
        are = "are" if len(kept) > 1 else "is"
        return f"run {run} has no last.pt ({', '.join(kept)} {are} there), so there is nothing to resume from; {fix}"
    return f"run {run} stopped before its first checkpoint, so there is nothing to resume; train it again: " \
           f"{train_again_command(run)} (it holds only its config.toml and metrics)"


#: The config keys a resumed run may change (in config.toml or with resume's arguments): how far it
#: goes and how this invocation runs. Any other difference between config.toml and last.pt would
#: silently train another model, or crash, so it is refused.
RESUMABLE_KEYS = frozenset(f"train.{k}" for k in ("max_steps", "max_epochs", "max_minutes", "threads", "device",
                                                  "precision", "compile", "log_every", "checkpoint_minutes"))


def _flat(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, val in values.items():
        if isinstance(val, Mapping) and key != "languages":
            out.update(_flat(val, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = val
    return out


def check_same_run(stored: RunConfig, checkpoint: RunConfig, run: Path) -> None:
    """``run``'s config.toml (``stored``) and its last.pt's config must describe the same run.

    Only :data:`RESUMABLE_KEYS` may differ. Anything else (another model kind, ``model.d``,
    ``train.lr``, ``train.batch_size``...) is an :class:`InputError` naming every changed key.
    """
    mine, theirs = _flat(to_dict(stored)), _flat(to_dict(checkpoint))
    changed = sorted((k for k in set(mine) | set(theirs) if k not in RESUMABLE_KEYS and mine.get(k) != theirs.get(k)),
                     key=lambda k: (k != "model.kind", k))  # another model first
    if not changed:
        return
    shown = "; ".join(f"{k} = {theirs.get(k)!r} in last.pt, {mine.get(k)!r} in config.toml" for k in changed[:3])
    more = f" (and {len(changed) - 3} more)" if len(changed) > 3 else ""
    raise InputError(f"run {run} cannot be resumed as it is: {shown}{more}; resuming continues the model last.pt "
                     "holds, and only train.max_steps/max_epochs/max_minutes/threads/device/precision/compile/"
                     "log_every/checkpoint_minutes may change: put the value back in config.toml, or start a new "
                     f"run with {option('config', str(run / 'config.toml'))} {option('out', 'NEW')}")


def _train_run(cfg: RunConfig, out: Path, *, overwrite: bool = False, payload: Mapping[str, Any] | None = None,
               bundle: ModelBundle | None = None, hooks: TrainHooks | None = None,
               start_info: Mapping[str, Any] | None = None, data_changed: bool = False,
               corpus: MultilingualCorpus | None = None) -> TrainResult:
    """Lock the run directory, train, write result.json; on an early error leave nothing behind."""
    # Under torchrun only rank 0 owns the run directory (lock, checks, result.json); the other
    # ranks train beside it and write nothing.
    main_rank = world_from_env()[0] == 0
    if main_rank and payload is None and not overwrite and run_dir_has_content(out):
        # Checked before taking the lock, so a refused run leaves not even a lock file behind.
        raise InputError(existing_run_message(out))
    kept = int(payload["step"]) if payload is not None else None
    with writing_run(out, "resume" if payload is not None else "train", kept=kept, owner=main_rank,
                  clean=NEW_RUN_FILES if payload is None else ()) as watch:
        trainer = watch.trainer = Trainer(cfg, out, overwrite=overwrite, hooks=hooks, bundle=bundle, resume=payload,
                                          start_info=start_info, data_changed=data_changed, corpus=corpus)
        result = dataclasses.replace(trainer.fit(), lexicon=dict(trainer.bundle.lexicon_info))
        if main_rank:
            write_result(out, result.to_dict())
    return result


def finetune(
    *,
    run: PathLike,
    data: PathLike,
    out: PathLike,
    epochs: int | None = None,
    max_steps: int | None = None,
    max_minutes: float | None = None,
    lr: float | None = None,
    resume_optimizer: bool = False,
    checkpoint: str = "best",
    overrides: Mapping[str, Any] | None = None,
    threads: int | None = None,
    device: str | None = None,
    log_every: int | None = None,
    overwrite: bool = False,
    hooks: TrainHooks | None = None,
) -> TrainResult:
    """Finetune a trained run on a new domain into the new run directory ``out``.

    The vocabulary grows by the new domain's training words (open vocabulary; word-indexed
    parameters get new rows); the model and data settings stay the run's. ``out`` is an ordinary
    run (:func:`resume` and ``evaluate`` take it) whose config records its parent.

    Args:
        run: The trained run directory.
        data: Corpus root of the new domain, ``<data>/<lang>/{train,valid}.txt`` in languages the run knows.
        out: The new run directory (not ``run``; an existing one needs ``overwrite``).
        epochs: Epochs on the new domain (default 3, or ``overrides["train.max_epochs"]``).
        max_steps: Stop after this many steps (default: epochs only).
        max_minutes: Stop after this many minutes.
        lr: Learning rate (default: the run's; with ``resume_optimizer`` its last, decayed one).
        resume_optimizer: Carry the run's Adam state over (new words' moments start at 0).
        checkpoint: The run's checkpoint to start from, ``"best"`` or ``"last"``.
        overrides: ``train.*`` values by dotted key (the arguments here win).
        threads, device, log_every: ``train.*`` settings (default: the run's).
        overwrite: Replace what ``out`` holds.
        hooks: Progress callbacks (:class:`TrainHooks`).

    Returns:
        The :class:`TrainResult`, with ``parent`` (the run it started from) set.

    Raises:
        InputError: ``out`` is ``run`` or exists, ``data`` holds no language the run knows, bad numbers.
        ConfigError: An override outside ``train.*`` or a bad value. CheckpointError: the checkpoint
            cannot be read, or holds no optimizer state to resume.
        RunLockedError: Another process is writing ``out``.
        TrainingInterrupted: Ctrl-C or SIGTERM stopped it (``resume(run=out)`` goes on).
    """
    out = Path(out)
    if out.resolve() == Path(run).resolve():
        raise InputError(f"{option('out')} {out} is the run being finetuned; choose a new directory for the "
                         f"finetuned run")
    if not overwrite and run_dir_has_content(out):  # before the lock: a refused run leaves nothing behind
        raise InputError(existing_run_message(out))
    if threads:  # the run's model is loaded and grown before the trainer applies train.threads
        set_threads(threads)
    explicit = {"train.threads": threads, "train.device": device, "train.max_minutes": max_minutes,
                "train.log_every": log_every}
    with writing_run(out, "finetune", clean=NEW_RUN_FILES) as watch:
        trainer = watch.trainer = finetune_trainer(
            Path(run), Path(data), out, epochs, checkpoint, overwrite=overwrite, lr=lr, max_steps=max_steps,
            resume_optimizer=resume_optimizer, overrides=merge_overrides(overrides, explicit), hooks=hooks)
        result = dataclasses.replace(trainer.fit(), lexicon=dict(trainer.bundle.lexicon_info),
                                     parent=to_dict(trainer.cfg.parent))
        write_result(out, result.to_dict())
    return result


def load_result(*, run: PathLike) -> TrainResult:
    """What a run directory holds, as a :class:`TrainResult`, without training.

    From ``result.json`` when a session ended (its stop reason, counts and perplexities), else
    from ``last.pt`` for a run stopped before it could write one (killed): then ``stop_reason`` is
    ``"interrupted"``. ``history`` comes from metrics.jsonl either way.

    Raises:
        InputError: ``run`` has neither result.json nor last.pt. CheckpointError: last.pt cannot be read.
    """
    run = Path(run)
    metrics = run / "metrics.jsonl"
    history = read_metrics(metrics) if metrics.is_file() else []
    if (run / "result.json").is_file():
        try:
            r = json.loads((run / "result.json").read_text(encoding="utf-8"))
            return TrainResult(run, int(r["steps"]), float(r["epochs"]), r["stop_reason"], int(r["n_params"]),
                               float(r["tokens_per_s"]), float(r["train_seconds"]), dict(r["best_valid_perplexity"]),
                               dict(r["last_valid_perplexity"]), history, dict(r.get("n_params_split") or {}),
                               dict(r.get("lexicon") or {}), r.get("parent"), unk=dict(r.get("unk") or {}),
                               softmax=dict(r.get("softmax") or {}), threads=dict(r.get("threads") or {}))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"{run / 'result.json'} is not a run's result ({type(exc).__name__}: {exc}); it is "
                             "damaged: move it away (the run then reads as interrupted; its checkpoints are "
                             "kept)") from exc
    if not (run / "last.pt").is_file():
        raise InputError(f"{run} holds no result.json and no last.pt; train it first")
    payload = load_checkpoint(run / "last.pt")
    state = LoopState.from_checkpoint(payload, source=f"checkpoint {run / 'last.pt'}")
    bundle = bundle_from_payload(payload, run / "last.pt")
    spe = int(payload.get("steps_per_epoch") or 0)
    return TrainResult(run, state.step, state.epoch(spe) if spe else float(payload.get("epoch", 0.0)),
                       "interrupted", count_parameters(bundle.model), state.tokens / max(state.train_time, 1e-9),
                       state.train_time, state.best_valid, state.last_valid, history,
                       parameter_split(bundle.model), dict(bundle.lexicon_info))


# --------------------------------------------------------------------------- shared by the workflows (elmo's too)


@dataclass
class RunWatch:
    """What an interrupted workflow reports: set ``trainer`` once there is one."""

    #: The step last.pt held when the workflow started (a resumed run), None for a new run.
    kept: int | None = None
    trainer: Trainer | None = None

    def step(self) -> int | None:
        state = self.trainer.state if self.trainer is not None else None
        return state.step if state is not None else None

    def checkpoint_step(self) -> int | None:
        return self.trainer.checkpoint_step if self.trainer is not None else self.kept


@contextlib.contextmanager
def writing_run(out: Path, command: str, *, kept: int | None = None, owner: bool = True,
                clean: Sequence[str] = (), cleanup: bool = True) -> Iterator[RunWatch]:
    """For the workflows: write the run directory ``out`` for ``command``.

    Holds its lock (``owner``; other torchrun ranks do not), removes a run that stops before its
    first checkpoint (``cleanup``: what it created, or the ``clean`` files), and turns Ctrl-C /
    SIGTERM into :class:`TrainingInterrupted` after that. Set ``watch.trainer`` once there is one.
    """
    watch = RunWatch(kept)
    lock: contextlib.AbstractContextManager[Any]
    if not owner:
        lock = contextlib.nullcontext()
    elif cleanup:
        lock = locked_run_dir(out, command, clean)
    else:
        lock = RunLock(out, command)
    try:
        with lock:
            yield watch
    except TrainingInterrupted:
        raise
    except (KeyboardInterrupt, Terminated) as exc:
        signal = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
        raise TrainingInterrupted(out, signal, watch.step(), watch.checkpoint_step()) from exc


def write_result(out: Path, summary: Mapping[str, Any]) -> None:
    """``out/result.json``, written atomically (a run's record that it ended, and how)."""
    atomic_write_text(Path(out) / "result.json", dumps_json(summary, indent=2) + "\n")
