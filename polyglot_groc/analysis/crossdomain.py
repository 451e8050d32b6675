"""Open-vocabulary evaluation on another corpus, with caches (seed 000 §5, "Vocabulary setting").

Text of another domain is scored over the union of the training vocabulary and the test
words. Compositional (GroC) models embed the new words (``groc-lex`` with their lexicon forms,
via :meth:`ModelBundle.with_new_words`); lookup models give them probability 0 and are
interpolated with the uniform distribution over the union. Caches are then mixed in
(:mod:`polyglot_groc.analysis.caches`). The model runs once per text; every setting after that
is arithmetic on per-token vectors, which is what makes the θ/λ grid search cheap.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from langpairs.batching import batchify, bptt_windows
from lexicons.errors import InputError
from polyglot_groc.analysis.caches import (
    check_cache_params,
    downweight_new,
    interpolate_cache,
    neural_cache_logprob,
    uniform_interpolate,
    unigram_cache_logprob,
)
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.kinds import kind
from polyglot_groc.model.screen import screened_logits
from polyglot_groc.training.data import load_corpus

log = logging.getLogger(__name__)

__all__ = ["CacheSettings", "TokenScores", "apply_settings", "load_other_split", "score_tokens", "summarize",
           "tune_uniform_weight"]

UNIFORM_GRID = (0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2)


@dataclass(frozen=True)
class CacheSettings:
    cache: str = "none"  # none | unigram | neural
    theta: float = 0.5
    lam: float = 0.966  # weight of the model (seed convention)
    size: int = 10_000
    new_word_weight: float = 0.1  # GroC only, applied before cache interpolation
    uniform_weight: float = 0.01  # lookup models only

    def validate(self) -> CacheSettings:
        if self.cache not in ("none", "unigram", "neural"):
            raise InputError(f"--cache {self.cache!r} is unknown; use none, unigram or neural")
        check_cache_params(self.theta, self.lam, self.size, self.new_word_weight, self.uniform_weight)
        return self


@dataclass
class TokenScores:
    """Per-token scores of one text, flattened stream by stream in reading order."""
    logp: torch.Tensor  # (N,) float64, log p_model(y_t) over the union (-inf for new words of lookup models)
    new_mass: torch.Tensor  # (N,) float64, model probability on new words
    is_new: torch.Tensor  # (N,) bool, y_t outside the training vocabulary of the language
    targets: torch.Tensor  # (N,) long, ids in the union (new words numbered after the training vocabulary)
    hidden: torch.Tensor  # (N, d) float32
    stream: torch.Tensor  # (N,) long, which contiguous stream each token belongs to
    train_freq: np.ndarray  # (N,) training count of y_t (0 for new words)
    union_size: int
    compositional: bool


def load_other_split(bundle: ModelBundle, data: Path, split: str) -> dict[str, list[str]]:
    """Tokens of ``split`` for each language of the run that ``data`` has; a foreign language is an error."""
    cfg = bundle.cfg
    langs = [p.name for p in sorted(Path(data).iterdir()) if p.is_dir()] if Path(data).is_dir() else []
    if not langs:
        raise InputError(f"{data} has no <lang>/{split}.txt folders; point --data at a prepared corpus directory")
    unknown = [lang for lang in langs if lang not in bundle.vocab.langs]
    if unknown and not [lang for lang in langs if lang in bundle.vocab.langs]:
        raise InputError(f"{data} holds languages {', '.join(unknown)} that the run does not know "
                         f"(it knows {', '.join(bundle.vocab.langs)}); use data in one of those languages")
    langs = [lang for lang in langs if lang in bundle.vocab.langs]
    data_cfg = dataclasses.replace(cfg.data, root=str(data), langs=tuple(langs))
    corpus = load_corpus(data_cfg, (split,), cfg.languages)
    return {lang: list(corpus.splits[lang][split]) for lang in corpus.langs}


def score_tokens(bundle: ModelBundle, tokens: Sequence[str], lang: str, bptt: int, n_streams: int = 1) -> TokenScores:
    """Run the model once over ``tokens`` (the language's own screen, extended by the new words)."""
    vocab = bundle.vocab
    members = set(vocab.words[i] for i in vocab.lang_ids(lang))
    new_words = [w for w in dict.fromkeys(tokens) if w not in members]
    compositional = bundle.model.compositional_output
    model = bundle.model
    if compositional:
        view = bundle.with_new_words({lang: new_words})
    else:
        view = bundle
        if any(w not in vocab for w in new_words) and "<unk>" not in vocab:
            raise InputError(f"the {model.kind} model has no <unk> to read new words with; train it with "
                             "--vocab-mode open")
    # Union ids: the view's ids for known words, then V + k for new words a lookup model cannot hold.
    index = {w: i for i, w in enumerate(view.vocab.words)}
    extra = {w: len(view.vocab) + k for k, w in enumerate(w for w in new_words if w not in index)}
    union_ids = np.array([index[w] if w in index else extra[w] for w in tokens], dtype=np.int64)
    unk = index.get("<unk>", -1)
    input_ids = np.where(union_ids < len(view.vocab), union_ids, unk)
    new_set = set(new_words)
    is_new_tok = np.array([w in new_set for w in tokens], dtype=bool)
    counts = np.asarray(vocab.lang_counts[:, list(vocab.langs).index(lang)] if vocab.lang_counts is not None
                        else vocab.counts)
    train_freq = np.array([counts[vocab.get(w)] if w in members else 0 for w in tokens], dtype=np.int64)

    ins = batchify(input_ids, n_streams)  # (B, L)
    tgt = batchify(union_ids, n_streams)  # (B, L)
    new_b = batchify(is_new_tok.astype(np.int64), n_streams).astype(bool)
    freq_b = batchify(train_freq, n_streams)
    L = ins.shape[1]
    was_training = model.training
    model.eval()
    logps, masses, hiddens = [], [], []
    try:
        with torch.no_grad():
            tables = model.vocab_tables(lang)
            screen_ids = tables.ids  # (V_l,) sorted global ids of the view
            new_cols = torch.from_numpy(np.isin(screen_ids.numpy(), [index[w] for w in new_words if w in index]))
            state = model.init_state(n_streams)
            for a, n in bptt_windows(L, bptt):  # loop over windows; each is one batched forward
                x = torch.from_numpy(ins[:, a:a + n])
                emb = model.embed_inputs(x, tables)  # (B, T, d)
                h, state = model.prefix(emb, state)  # (B, T, d)
                logits = screened_logits(h, tables.e_out, tables.bias)  # (B, T, V_l)
                lsm = F.log_softmax(logits.double(), dim=-1)  # (B, T, V_l)
                y = torch.from_numpy(tgt[:, a + 1:a + n + 1])  # (B, T)
                in_screen = torch.isin(y, screen_ids)  # new words of a lookup model are outside it
                local = model.screen.local(screen_ids, torch.where(in_screen, y, screen_ids[0]))
                lp = lsm.gather(-1, local.unsqueeze(-1)).squeeze(-1)  # (B, T)
                lp = torch.where(in_screen, lp, torch.full_like(lp, -math.inf))
                mass = lsm[..., new_cols].exp().sum(-1) if bool(new_cols.any()) else torch.zeros_like(lp)
                logps.append(lp)
                masses.append(mass)
                hiddens.append(h.float())
    finally:
        model.train(was_training)
        if compositional:
            bundle.install_words()
    # (B, L-1) -> flattened stream by stream
    logp = torch.cat(logps, 1).reshape(-1)
    new_mass = torch.cat(masses, 1).reshape(-1)
    hidden = torch.cat(hiddens, 1).reshape(-1, hiddens[0].shape[-1])
    tg = torch.from_numpy(tgt[:, 1:]).reshape(-1)
    is_new = torch.from_numpy(new_b[:, 1:]).reshape(-1)
    stream = torch.arange(n_streams).repeat_interleave(L - 1)
    union_size = int(tables.ids.numel()) + len(extra)
    return TokenScores(logp, new_mass, is_new, tg, hidden, stream, freq_b[:, 1:].reshape(-1), union_size,
                       compositional)


def apply_settings(scores: TokenScores, s: CacheSettings) -> torch.Tensor:
    """Final per-token log-probabilities under ``s``.  (N,) float64"""
    s.validate()
    logp = scores.logp
    if not scores.compositional:
        logp = uniform_interpolate(logp, scores.union_size, s.uniform_weight)
    if s.cache == "none":
        return logp
    if scores.compositional and s.new_word_weight < 1.0:
        logp = downweight_new(logp, scores.new_mass, scores.is_new, s.new_word_weight)
    parts = []
    for k in range(int(scores.stream.max()) + 1 if scores.stream.numel() else 0):  # a few streams
        m = scores.stream == k
        if s.cache == "unigram":
            lc = unigram_cache_logprob(scores.targets[m])
        else:
            lc = neural_cache_logprob(scores.hidden[m], scores.targets[m], s.theta, s.size)
        parts.append(interpolate_cache(logp[m], lc, s.lam))
    return torch.cat(parts) if parts else logp


def _ppl(lp: torch.Tensor) -> float | None:
    return float(torch.exp(-lp.mean())) if lp.numel() else None


def summarize(scores: TokenScores, lp: torch.Tensor) -> dict[str, Any]:
    n = int(lp.numel())
    return {"tokens": n, "oov_rate": float(scores.is_new.double().mean()) if n else 0.0,
            "union_size": scores.union_size, "perplexity": _ppl(lp),
            "perplexity_seen": _ppl(lp[~scores.is_new]), "perplexity_new": _ppl(lp[scores.is_new])}


def tune_uniform_weight(scores: TokenScores, grid: Sequence[float] = UNIFORM_GRID) -> float:
    """The uniform weight with the lowest perplexity on ``scores`` (validation text)."""
    best = min(grid, key=lambda w: -float(uniform_interpolate(scores.logp, scores.union_size, w).mean()))
    return float(best)


class CoverageError(InputError):
    """A lexicon coverage outside [0, 1] or on a run without a lexicon."""


def with_lexicon_coverage(bundle: ModelBundle, coverage: float) -> ModelBundle:
    """A groc-lex bundle whose lexicon keeps only ``coverage`` of its entries (Table 4, inference row).

    Entries are dropped by the lexicon service's stable word hash, so the same words lose their
    forms on every call. The model parameters are shared with ``bundle``.
    """
    if not 0.0 <= coverage <= 1.0 or math.isnan(coverage):
        raise CoverageError(f"--lexicon-coverage {coverage} is outside [0, 1]; e.g. 0.5 keeps half the entries")
    if not kind(bundle.model.kind).uses_lexicon:
        raise CoverageError(f"--lexicon-coverage needs a groc-lex run; this run is {bundle.model.kind}")
    from polyglot_groc.model.lexforms import compile_forms

    # The run's recorded lexicon (a missing one is an error here: every word's forms are recompiled).
    lex = dataclasses.replace(bundle.cfg.model.lexicon, coverage=coverage)
    compiled = compile_forms(lex, bundle.vocab, recorded=bundle.lexicon_info)
    cfg = dataclasses.replace(bundle.cfg, model=dataclasses.replace(bundle.cfg.model, lexicon=compiled.config))
    out = dataclasses.replace(bundle, cfg=cfg, forms=compiled.forms, extra_words=compiled.extra_words,
                              lexicon_info=compiled.info)
    out.install_words()
    return out


def evaluate_open(run_dir: Path, data: Path, split: str = "test", settings: CacheSettings | None = None,
                  which: str = "best", n_streams: int = 1, uniform_weight: float | None = None,
                  lexicon_coverage: float | None = None) -> dict[str, Any]:
    """Open-vocabulary perplexity of a run on another corpus (JSON-ready).

    ``uniform_weight=None`` tunes it on ``data``'s valid split (lookup models only).
    """
    from polyglot_groc.model.bundle import load_bundle

    if split not in ("valid", "test"):
        raise InputError(f"split {split!r} is unknown; use valid or test")
    s = (settings or CacheSettings()).validate()
    if uniform_weight is not None:
        check_cache_params(uniform_weight=uniform_weight)
    bundle, payload = load_bundle(run_dir, which)
    if lexicon_coverage is not None:
        bundle = with_lexicon_coverage(bundle, lexicon_coverage)
    bptt = bundle.cfg.train.bptt
    texts = load_other_split(bundle, data, split)
    out: dict[str, Any] = {"run": str(run_dir), "data": str(data), "split": split, "model": bundle.model.kind,
                           "checkpoint": which, "step": payload.get("step"), "cache": dataclasses.asdict(s),
                           "lexicon_coverage": lexicon_coverage, "languages": {}}
    for lang, toks in texts.items():
        scores = score_tokens(bundle, toks, lang, bptt, n_streams)
        uw = s.uniform_weight
        if not scores.compositional:
            if uniform_weight is None:
                valid = load_other_split(bundle, data, "valid")[lang] if split != "valid" else toks
                uw = tune_uniform_weight(score_tokens(bundle, valid, lang, bptt, n_streams))
            else:
                uw = uniform_weight
        lp = apply_settings(scores, dataclasses.replace(s, uniform_weight=uw))
        res = summarize(scores, lp)
        res["uniform_weight"] = None if scores.compositional else uw
        out["languages"][lang] = res
    return out
