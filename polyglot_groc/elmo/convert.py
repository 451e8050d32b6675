"""Initialise a GroC model from an ELMo-like model (seed 004 §5.5, appendix C.2).

An ELMo-like model has a compositional *input* embedding (the char-CNN surface encoder) and a
*lookup* output embedding with a per-word bias. GroC uses one compositional function for both
sides, so the conversion reuses the input function for the output and drops the lookup table:

* surface encoder (char embedding, convolutions, highways, projection): copied;
* prefix LSTM: copied;
* output residual net: every g_j = 0 (``zero_residual_``), so E_out = E_in at conversion;
* bias net b_v = act(w . e_v + a): neutral, w = 0, so every word gets the same bias act(a);
  ``a`` is chosen so that this constant equals the mean of the old per-word lookup bias;
* lookup output table and lookup bias: dropped.

The bias choice. A constant bias does not change the softmax (it is shift-invariant), so any
``a`` gives the same initial perplexity; the mean keeps the bias on the scale the prefix was
trained with and starts the bias net where the old biases were on average. The activation must
leave ``a`` in its active region, otherwise the bias net never receives a gradient: with
``relu`` that needs a positive mean. When the configured ``model.output.bias_activation``
cannot reach the mean in its active region (relu and a mean <= 0, tanh and |mean| >= 0.99, ...)
the converted model's bias activation is switched to ``identity`` (recorded in its config and
logged). bilm-tf weight files carry no softmax, so weights imported from them use a target
mean of 0, which under ``relu`` also means ``identity``.

A ``bilm`` run can also start from bilm-tf weights, both directions: :func:`elmo_bilm_config` and
:func:`install_bilm_weights` copy the char-CNN and the forward and backward LSTM stacks (with their
projections) into the bilm kind's two prefixes; its lookup softmax (bilm-tf files carry none)
starts from scratch. torch's LSTM cannot clip, so bilm-tf's ``cell_clip``/``proj_clip`` are
dropped: the outputs equal bilm-tf's wherever no clip is reached (:class:`ElmoModel` with the
clips, used by ``lm_embeddings``, equals bilm-tf's reference exactly).

Sources: :func:`convert_elmo_bundle` converts an ``elmo``-kind bundle of this toolkit (pure, no
I/O); :func:`elmo_groc_config` and :func:`install_elmo_weights` build a GroC model around real
bilm-tf weights (``elmo-bytes`` charset, d = ELMo's projection size). :func:`finetune_converted`
evaluates the converted model and finetunes it with the :class:`~polyglot_groc.training.trainer.Trainer`.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from groc_base.checks import option
from groc_base.errors import ConfigError, ModelError
from groc_base.fileio import dumps_json
from langpairs.corpus import MultilingualCorpus
from polyglot_groc.config import RunConfig
from polyglot_groc.elmo.bilm import ElmoModel, ElmoOptions, copy_forward_lstm_into, elmo_prefix_compatible
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.checkpoint import atomic_write_text
from polyglot_groc.model.embedder import GroundedEmbedder
from polyglot_groc.model.outputs import ComputedBias, LookupBias, ResidualOutputNet
from polyglot_groc.model.vocab import UNK, Vocab
from polyglot_groc.training.data import load_corpus, vocab_splits
from polyglot_groc.training.evaluation import evaluate_split
from polyglot_groc.training.trainer import Trainer, TrainHooks, TrainResult

log = logging.getLogger(__name__)

#: Kinds a conversion can produce; groc-lex would also need compiled lexicon forms.
CONVERTIBLE_KINDS = ("groc",)


# --------------------------------------------------------------------------- bias


def _inverse_activation(act: str, mean: float) -> float | None:
    """``a`` with act(a) = mean, inside act's active (non-saturated) region; None if impossible."""
    if act == "identity":
        return mean
    if act == "relu":
        return mean if mean > 0.0 else None  # relu(a) = mean <= 0 only on the dead half
    if act == "tanh":
        return math.atanh(mean) if abs(mean) < 0.99 else None
    if act == "sigmoid":
        return math.log(mean / (1.0 - mean)) if 0.01 < mean < 0.99 else None
    return None  # selu/gelu: not worth inverting; identity is exact


def neutral_bias(mean: float, activation: str) -> tuple[str, float]:
    """The bias activation and the ``a`` that give every word the bias ``mean`` (w = 0).

    Keeps ``activation`` when ``mean`` is reachable in its active region, else switches to
    ``identity`` (logged): see the module docstring.
    """
    a = _inverse_activation(activation, mean)
    if a is not None:
        return activation, a
    log.info("converted bias activation: identity instead of %s, whose active region cannot give the "
             "mean bias %.4g (w = 0, a = %.4g)", activation, mean, mean)
    return "identity", mean


def _set_neutral_bias(bias: ComputedBias, a: float) -> None:
    with torch.no_grad():
        bias.w.weight.zero_()
        bias.w.bias.fill_(a)


# --------------------------------------------------------------------------- elmo bundle -> groc


def _without_synthetic_unk(vocab: Vocab) -> Vocab:
    """Drop an ``<unk>`` that no corpus produced (count 0): a GroC model scores unseen words
    compositionally, and an open-vocabulary GroC run built from the same data has none."""
    i = vocab.get(UNK)
    if i < 0 or vocab.counts[i] > 0:
        return vocab
    keep = [j for j in range(len(vocab)) if j != i]
    return Vocab(tuple(vocab.words[j] for j in keep), tuple(vocab.counts[j] for j in keep), vocab.langs,
                 vocab.membership[keep], None if vocab.lang_counts is None else vocab.lang_counts[keep],
                 None if vocab.train_counts is None else vocab.train_counts[keep])


def convert_elmo_bundle(elmo: ModelBundle, kind: str = "groc") -> ModelBundle:
    """A GroC bundle initialised from an ``elmo``-kind bundle; ``elmo`` is not modified.

    Same vocabulary (less a synthetic ``<unk>``, see :func:`_without_synthetic_unk`), charset and
    config except ``model.kind`` (and possibly ``model.output.bias_activation``, see the module
    docstring). Works for mono- and polyglot bundles: the screens come from the vocabulary.
    """
    if kind not in CONVERTIBLE_KINDS:
        raise ModelError(f"cannot convert an elmo model into kind {kind!r}; use one of {', '.join(CONVERTIBLE_KINDS)}")
    src = elmo.model
    if src.kind != "elmo":
        raise ModelError(f"the model to convert is a {src.kind} model, not elmo; train one with "
                         f"{option('model', 'elmo')}")
    if not isinstance(src.bias, LookupBias) or not isinstance(src.input_embedder, GroundedEmbedder):
        raise ModelError("the elmo model lacks its char-CNN input or lookup bias; the checkpoint is not an elmo one")

    vocab = _without_synthetic_unk(elmo.vocab)
    if len(vocab) < len(elmo.vocab):
        log.info("dropping the synthetic %s word: the converted model scores unseen words compositionally", UNK)
    with torch.no_grad():
        # Mean over the words the converted model keeps (global ids of the old vocabulary).
        old_ids = torch.tensor([elmo.vocab.id(w) for w in vocab.words], dtype=torch.long)
        mean = float(src.bias.b.detach().cpu()[old_ids].double().mean())
    act, a = neutral_bias(mean, src.cfg.output.bias_activation)

    m = elmo.cfg.model
    model_cfg = dataclasses.replace(m, kind=kind, output=dataclasses.replace(m.output, bias_activation=act))
    cfg = dataclasses.replace(elmo.cfg, model=model_cfg).validate()
    out = ModelBundle.create(cfg, vocab, elmo.charset, elmo.forms, elmo.extra_words, elmo.lexicon_info)
    dst = out.model
    # load_state_dict copies: nothing is shared with the source model.
    dst.input_embedder.load_state_dict(src.input_embedder.state_dict())
    dst.prefix.load_state_dict(src.prefix.state_dict())
    assert isinstance(dst.output_net, ResidualOutputNet)
    dst.output_net.zero_residual_()
    assert isinstance(dst.bias, ComputedBias)
    _set_neutral_bias(dst.bias, a)
    dst.to(next(src.parameters()).device)
    dst.train(src.training)
    dst.invalidate_cache()
    log.info("converted elmo -> %s: surface encoder and prefix copied, output net identity, bias %s(%.4g) "
             "for every word (old mean %.4g), %d-word lookup table dropped", kind, act, a, mean, len(elmo.vocab))
    return out


# --------------------------------------------------------------------------- bilm-tf weights -> groc


@dataclass(frozen=True)
class ElmoImport:
    """How a GroC config was fitted to bilm-tf weights (for reporting)."""

    d: int
    charset_scheme: str
    max_word_len: int
    prefix_copied: bool
    #: Why the prefix could not be copied (None when it was).
    prefix_reason: str | None
    bias_activation: str
    bias_a: float


#: Config keys bilm-tf weights fix; a --set on them would silently change the imported model.
ELMO_FIXED_KEYS = ("model.kind", "model.d", "model.charset", "model.surface.char_dim", "model.surface.filters",
                   "model.surface.n_highway", "model.surface.activation", "model.surface.norm")


def _prefix_mismatch(options: ElmoOptions) -> str | None:
    if options.use_skip_connections:
        return "elmo's forward lstm uses skip connections, which the prefix lstm lacks"
    if options.uses_projection:
        return (f"elmo's forward lstm projects its {options.lstm_dim} cells to {options.projection_dim}, "
                "which the prefix lstm (nn.LSTM without proj_size) cannot hold")
    if options.lstm_output_dim != options.projection_dim:
        return (f"elmo's forward lstm outputs {options.lstm_output_dim} values but its token embeddings have "
                f"{options.projection_dim}; the prefix must output d")
    return None


def elmo_groc_config(options: ElmoOptions, base: RunConfig) -> tuple[RunConfig, ElmoImport]:
    """``base`` with what the ELMo weights fix: kind groc, d = projection dim, the elmo-bytes
    charset (never switched silently), the char-CNN sizes, and ELMo's prefix shape when its forward
    LSTM fits the prefix (otherwise ``base``'s prefix, trained from scratch)."""
    m = base.model
    surface = dataclasses.replace(m.surface, char_dim=options.char_dim, filters=options.filters,
                                  n_highway=options.n_highway, activation=options.activation,
                                  norm="none")  # bilm-tf has no norm after its projection
    charset = dataclasses.replace(m.charset, scheme="elmo-bytes", max_word_len=options.max_characters_per_token)
    d = options.projection_dim
    elmo_prefix = dataclasses.replace(m.prefix, n_layers=options.n_layers, hidden=options.lstm_dim)
    copied = elmo_prefix_compatible(options, elmo_prefix, d)
    reason = None if copied else (_prefix_mismatch(options) or "elmo's forward lstm does not fit the prefix lstm")
    # bilm-tf files have no softmax: no old bias to match, target mean 0 (see the module docstring).
    act, a = neutral_bias(0.0, m.output.bias_activation)
    model_cfg = dataclasses.replace(
        m, kind="groc", d=d, charset=charset, surface=surface, prefix=elmo_prefix if copied else m.prefix,
        output=dataclasses.replace(m.output, bias_activation=act),
    )
    cfg = dataclasses.replace(base, model=model_cfg).validate()
    return cfg, ElmoImport(d, "elmo-bytes", options.max_characters_per_token, copied, reason, act, a)


def _copy_char_encoder(model: Any, elmo: ElmoModel, builder: str) -> None:
    """Load ELMo's char-CNN into the model's surface encoder (the input embedder of groc and bilm
    runs alike); a mismatch is one ModelError naming the config ``builder`` that makes them fit."""
    emb = model.input_embedder
    assert isinstance(emb, GroundedEmbedder)
    try:
        emb.surface.load_state_dict(elmo.char_encoder.state_dict())
    except RuntimeError as exc:
        raise ModelError(f"the elmo char encoder does not fit the model's surface encoder ({exc}); "
                         f"build the config with {builder}") from exc


def install_elmo_weights(bundle: ModelBundle, elmo: ElmoModel, info: ElmoImport) -> None:
    """Copy ELMo's char-CNN (and forward LSTM when ``info.prefix_copied``) into a GroC bundle
    built from :func:`elmo_groc_config`'s config; make the output net identity and the bias neutral."""
    model = bundle.model
    if model.kind != "groc" or bundle.charset.scheme != "elmo-bytes":
        raise ModelError(f"elmo weights go into a groc model with the elmo-bytes charset, not a {model.kind} model "
                         f"with {bundle.charset.scheme}; build it from elmo_groc_config")
    _copy_char_encoder(model, elmo, "elmo_groc_config")
    if info.prefix_copied:
        copy_forward_lstm_into(list(model.prefix.layers), elmo.lstm)  # type: ignore[arg-type]
    else:
        log.info("prefix trained from scratch: %s", info.prefix_reason)
    assert isinstance(model.output_net, ResidualOutputNet)
    model.output_net.zero_residual_()
    assert isinstance(model.bias, ComputedBias)
    _set_neutral_bias(model.bias, info.bias_a)
    model.invalidate_cache()


def elmo_bilm_config(options: ElmoOptions, base: RunConfig) -> RunConfig:
    """``base`` with what bilm-tf weights fix for a ``bilm`` run: d = projection dim, ELMo's LSTM sizes
    (``hidden`` = its cells, projected to d), the elmo-bytes charset and the char-CNN (relu highways)."""
    if options.use_skip_connections:
        raise ConfigError("these elmo weights use skip connections between LSTM layers, which the bilm kind's "
                          "stacks lack; they cannot be loaded into a bilm run")
    if options.lstm_dim < options.projection_dim:
        raise ConfigError(f"elmo's LSTM has {options.lstm_dim} cells, fewer than its projection_dim "
                          f"{options.projection_dim}; bilm-tf then outputs {options.lstm_dim} values, which the "
                          "bilm kind (every layer d wide) cannot hold")
    m = base.model
    surface = dataclasses.replace(m.surface, char_dim=options.char_dim, filters=options.filters,
                                  n_highway=options.n_highway, activation=options.activation, highway_activation="relu",
                                  norm="none")  # bilm-tf has no norm after its projection
    charset = dataclasses.replace(m.charset, scheme="elmo-bytes", max_word_len=options.max_characters_per_token)
    prefix = dataclasses.replace(m.prefix, n_layers=options.n_layers, hidden=options.lstm_dim)
    model_cfg = dataclasses.replace(m, kind="bilm", d=options.projection_dim, charset=charset, surface=surface,
                                    prefix=prefix)
    return dataclasses.replace(base, model=model_cfg).validate()


def install_bilm_weights(bundle: ModelBundle, elmo: ElmoModel) -> None:
    """Copy bilm-tf's char-CNN and both LSTM stacks into a ``bilm`` bundle built from :func:`elmo_bilm_config`."""
    model = bundle.model
    if model.kind != "bilm" or bundle.charset.scheme != "elmo-bytes" or model.backward_prefix is None:
        raise ModelError(f"bilm-tf weights go into a bilm model with the elmo-bytes charset, not a {model.kind} "
                         f"model with {bundle.charset.scheme}; build it from elmo_bilm_config")
    if elmo.backward is None:
        raise ModelError("these elmo weights hold no backward LSTM (RNN_1); a bilm run needs both directions")
    _copy_char_encoder(model, elmo, "elmo_bilm_config")
    copy_forward_lstm_into(list(model.prefix.layers), elmo.lstm)  # type: ignore[arg-type]
    copy_forward_lstm_into(list(model.backward_prefix.layers), elmo.backward)  # type: ignore[arg-type]
    model.invalidate_cache()


# --------------------------------------------------------------------------- evaluate + finetune


@dataclass(frozen=True)
class FinetuneResult:
    #: The validation record of the converted model before any finetuning (metrics.jsonl line 1).
    converted: dict[str, Any]
    train: TrainResult

    def to_dict(self) -> dict[str, Any]:
        return {**self.train.to_dict(), "converted_valid_perplexity": self.converted["valid_perplexity"],
                "converted_valid_nll": self.converted["valid_nll"]}


def converted_record(bundle: ModelBundle, corpus: MultilingualCorpus, cfg: RunConfig) -> dict[str, Any]:
    """Validation perplexity before finetuning, as a step-0 metrics record (trainer's keys)."""
    from polyglot_groc.model.scoring import pooled_nll

    t = cfg.train
    results = evaluate_split(bundle, corpus, "valid", t.eval_batch_size, t.bptt, screen=cfg.data.screen)
    return {"step": 0, "epoch": 0.0, "phase": "converted", "lr": t.lr, "train_loss": None,
            "valid_nll": pooled_nll(results), "valid_perplexity": {k: r.perplexity for k, r in results.items()},
            "valid_tokens": {k: r.n_tokens for k, r in results.items()}, "eval_batch_size": t.eval_batch_size,
            "tokens": 0, "improved": False}


def cover_corpus(bundle: ModelBundle, corpus: MultilingualCorpus) -> ModelBundle:
    """``bundle`` whose vocabulary holds every corpus word its vocabulary mode needs, each as a
    word of its language (a GroC model embeds any word; the finetuning data may differ from the
    ELMo model's). Unchanged when nothing is missing; otherwise a new bundle sharing the model,
    whose word tables are reinstalled (``bundle``'s own tables are then stale).
    """
    vocab = bundle.vocab
    for lang in corpus.langs:
        if lang not in vocab.langs:
            raise ConfigError(f"language {lang!r} is not one of the model's ({', '.join(vocab.langs)}); "
                              "finetune on the languages the elmo model was trained on")
    words = list(vocab.words)
    index = {w: i for i, w in enumerate(words)}
    marks: list[tuple[int, int]] = []  # (word row, language column) to set
    for lang in corpus.langs:
        j = vocab.langs.index(lang)
        splits = vocab_splits(bundle.cfg.data.vocab_mode, tuple(corpus.splits[lang]))
        for w in dict.fromkeys(w for s in splits for w in corpus.splits[lang][s]):
            i = index.get(w)
            if i is None:
                i = index[w] = len(words)
                words.append(w)
            if i >= len(vocab) or not vocab.membership[i, j]:
                marks.append((i, j))
    if not marks:
        return bundle
    # Same-language membership matters too: a word known only as English is not scored for French.
    membership = np.zeros((len(words), len(vocab.langs)), dtype=bool)
    membership[: len(vocab)] = vocab.membership
    rows, cols = zip(*marks, strict=True)
    membership[list(rows), list(cols)] = True
    n_new = len(words) - len(vocab)
    log.info("finetuning corpus: %d new words and %d new word-language pairs added to the vocabulary "
             "(embedded compositionally)", n_new, len(marks) - n_new)
    padded = None if vocab.train_counts is None else np.concatenate(
        [vocab.train_counts, np.zeros((n_new, len(vocab.langs)), dtype=np.int64)])
    new_vocab = Vocab(tuple(words), vocab.counts + (0,) * n_new, vocab.langs, membership, train_counts=padded)
    out = dataclasses.replace(bundle, vocab=new_vocab)
    out.install_words()
    return out


def finetune_converted(bundle: ModelBundle, cfg: RunConfig, run_dir: Path, *,
                       corpus: MultilingualCorpus | None = None, overwrite: bool = False,
                       hooks: TrainHooks | None = None,
                       report: Mapping[str, Any] | None = None) -> FinetuneResult:
    """Evaluate a converted GroC bundle on valid, then finetune it into an ordinary run directory.

    ``cfg`` must keep ``bundle``'s model config (only data/train settings may differ). The
    converted model's record is metrics.jsonl's first line (step 0, ``"phase": "converted"``);
    the Trainer rewrites the file from its ``metrics_lines``, which start with that record.
    ``report`` entries are added to the step-0 record (e.g. where the model came from), which
    ``hooks.on_eval`` receives first. No run lock and no result.json: the workflow
    :func:`polyglot_groc.elmo.workflows.init_from_elmo` adds those.
    """
    trainer, record = converted_trainer(bundle, cfg, run_dir, corpus=corpus, overwrite=overwrite, hooks=hooks,
                                        report=report)
    return FinetuneResult(record, trainer.fit())


def converted_trainer(bundle: ModelBundle, cfg: RunConfig, run_dir: Path, *,
                      corpus: MultilingualCorpus | None = None, overwrite: bool = False,
                      hooks: TrainHooks | None = None, report: Mapping[str, Any] | None = None,
                      start_info: Mapping[str, Any] | None = None) -> tuple[Trainer, dict[str, Any]]:
    """:func:`finetune_converted` up to training: the :class:`Trainer` (``run_dir`` prepared) and the
    converted model's step-0 record, already in metrics.jsonl and given to ``hooks.on_eval``.
    ``start_info``: more entries for ``hooks.on_start``."""
    cfg = cfg.validate()
    if cfg.model != bundle.cfg.model:
        raise ConfigError("finetuning may change train and data settings only, not the converted model's "
                          "config; drop the model.* overrides")
    splits = ("train", "valid", "test") if cfg.data.vocab_mode == "closed" else ("train", "valid")
    corpus = corpus if corpus is not None else load_corpus(cfg.data, splits)
    bundle = cover_corpus(dataclasses.replace(bundle, cfg=cfg), corpus)
    # What the finetuned run has read in training: the elmo model's training text and this one's.
    seen = bundle.vocab.with_training({lang: corpus.counts(lang, ("train",)) for lang in corpus.langs})
    bundle = dataclasses.replace(bundle, vocab=seen)
    # The Trainer prepares (or refuses) the run directory before the costly evaluation.
    trainer = Trainer(cfg, run_dir, overwrite=overwrite, hooks=hooks, corpus=corpus, bundle=bundle,
                      start_info=start_info)
    record = {**converted_record(bundle, corpus, cfg), **dict(report or {})}
    log.info("converted model before finetuning: valid perplexity %s",
             ", ".join(f"{k} {v:.4g}" for k, v in record["valid_perplexity"].items()))
    trainer.metrics_lines.append(dumps_json(record))
    atomic_write_text(Path(run_dir) / "metrics.jsonl", "\n".join(trainer.metrics_lines) + "\n")
    if hooks is not None:
        hooks.on_eval(record)
    return trainer, record


__all__ = [
    "CONVERTIBLE_KINDS",
    "ELMO_FIXED_KEYS",
    "ElmoImport",
    "FinetuneResult",
    "convert_elmo_bundle",
    "converted_record",
    "converted_trainer",
    "cover_corpus",
    "elmo_bilm_config",
    "elmo_groc_config",
    "finetune_converted",
    "install_bilm_weights",
    "install_elmo_weights",
    "neutral_bias",
]
