"""Evaluate a run: per-language perplexity in-domain, or open-vocabulary on any corpus with caches.

:func:`evaluate` is the one entry point (``polyglot-groc evaluate`` calls it): on the run's own
split it gives the closed-vocabulary perplexity the trainer reports; with another corpus
(``data``), a cache, a new-word weight, a uniform weight or a lexicon coverage it scores the text
over the union of the training vocabulary and the text's words
(:mod:`polyglot_groc.analysis.crossdomain`). Either way the run is loaded once, on ``device``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import check_positive
from groc_base.errors import InputError
from groc_base.fileio import json_safe
from polyglot_groc.model.access import check_run_access, run_access_doc
from polyglot_groc.model.bundle import ModelBundle, load_bundle
from polyglot_groc.model.lm import parameter_split

__all__ = ["EvaluateResult", "evaluate"]


@dataclass(frozen=True)
class EvaluateResult:
    """What :func:`evaluate` found: per-language perplexity, and how it was measured.

    ``perplexity`` maps each language to its perplexity in both settings (``None`` where it is
    infinite or there were no tokens). The in-domain fields (``n_params`` ... ``details``) are set
    when ``open_vocabulary`` is false, the open-vocabulary ones (``data`` ... ``languages``: OOV
    rate, perplexity on seen and new words, the cache checks) when it is true.
    """

    run: str
    split: str
    model: str
    checkpoint: str
    step: int | None
    perplexity: dict[str, float | None]
    open_vocabulary: bool = False
    # in-domain
    n_params: dict[str, int] | None = None
    screen: bool = True
    vocab_mode: str | None = None
    details: dict[str, dict[str, Any]] | None = None
    # open vocabulary
    data: str | None = None
    cache: dict[str, Any] | None = None
    lexicon_coverage: float | None = None
    languages: dict[str, dict[str, Any]] | None = None
    #: Bidirectional kinds (bilm), in-domain: the backward LM's perplexity (right to left, state
    #: carried); ``perplexity`` is always the forward LM's, comparable with the other kinds.
    perplexity_backward: dict[str, float | None] | None = None

    @property
    def scoring(self) -> str:
        """How the perplexities were computed, in words (the JSON's ``scoring``): always exactly, never sampled."""
        over = "each language's own vocabulary" if self.screen else "every word of the run"
        return (f"exact: the full softmax over {over}; a sampled training softmax only samples training steps "
                "(its logged training loss is an estimate, these perplexities are not)")

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc evaluate`` prints (NaN and infinities as ``None``)."""
        if self.open_vocabulary:
            out = {"run": self.run, "data": self.data, "split": self.split, "model": self.model,
                   "checkpoint": self.checkpoint, "step": self.step, "vocab_mode": self.vocab_mode,
                   "cache": self.cache, "lexicon_coverage": self.lexicon_coverage, "languages": self.languages,
                   "scoring": self.scoring}
        else:
            out = {"run": self.run, "split": self.split, "model": self.model, "checkpoint": self.checkpoint,
                   "step": self.step, "n_params": self.n_params, "screen": self.screen,
                   "vocab_mode": self.vocab_mode, "perplexity": self.perplexity, "details": self.details,
                   "scoring": self.scoring}
            if self.perplexity_backward is not None:
                out["perplexity_backward"] = self.perplexity_backward
        return json_safe(out)  # type: ignore[return-value]


@run_access_doc
def evaluate(
    *,
    run: str | os.PathLike[str],
    split: str = "test",
    data: str | os.PathLike[str] | None = None,
    checkpoint: str = "best",
    batch_size: int | None = None,
    screen: bool = True,
    device: str = "auto",
    threads: int | None = None,
    cache: str = "none",
    cache_theta: float = 0.5,
    cache_lambda: float = 0.966,
    cache_size: int = 10_000,
    new_word_weight: float = 1.0,
    uniform_weight: float | None = None,
    lexicon_coverage: float | None = None,
) -> EvaluateResult:
    """Per-language perplexity of a trained run.

    In-domain (the default): ``split`` of the run's own corpus, each language over its own
    vocabulary, as the trainer evaluates. Open vocabulary, as soon as ``data``, a ``cache``, a
    ``new_word_weight`` below 1, a ``uniform_weight`` or a ``lexicon_coverage`` is given: the text
    of ``data`` (default: the run's corpus) is scored over the union of the training vocabulary and
    its own words; compositional (GroC) models embed the new words, lookup models give them
    probability 0 and are interpolated with the uniform distribution; caches are mixed in after.
    Every model kind is scored through its own scorer
    (:meth:`~polyglot_groc.model.lm.LanguageModel.token_logprobs`).

    Args:
        run: run directory written by ``train``.
        split: ``valid`` or ``test`` (in-domain also ``train``).
        data: corpus root (``<lang>/<split>.txt``) to score instead of the run's own.
        {run_access}
        batch_size: parallel streams (in-domain default: the run's ``train.eval_batch_size``;
            open vocabulary: 1, one stream, which the caches read in order).
        screen: score each language over its own vocabulary; ``False``: over every word of the run.
        cache: ``none``, ``unigram`` or ``neural`` (open vocabulary).
        cache_theta: neural cache flattening θ >= 0.
        cache_lambda: model weight λ in [0, 1].
        cache_size: neural cache window.
        new_word_weight: GroC's new words' weight before any cache, in (0, 1] (1: as scored).
        uniform_weight: lookup models' uniform weight in [0, 1); None: tuned on ``data``'s valid.
        lexicon_coverage: groc-lex only: the fraction of lexicon entries kept at inference.

    Returns:
        An :class:`EvaluateResult`; its ``to_dict()`` is the JSON ``polyglot-groc evaluate`` prints.

    Raises:
        InputError: a bad split, batch size, cache setting or coverage, a corpus without the run's
            languages (``CorpusError``), ...; CheckpointError: no such run or checkpoint;
            ConfigError: a device that is not there.
    """
    from polyglot_groc.analysis.crossdomain import CacheSettings, check_coverage

    check_positive(batch_size=batch_size)
    check_run_access(checkpoint=checkpoint, device=device, threads=threads)
    settings = CacheSettings(cache, cache_theta, cache_lambda, cache_size, new_word_weight,
                             uniform_weight or 0.0).validate()
    open_vocabulary = (data is not None or cache != "none" or new_word_weight != 1.0 or uniform_weight is not None
                       or lexicon_coverage is not None)
    allowed = ("valid", "test") if open_vocabulary else ("train", "valid", "test")
    if split not in allowed:
        raise InputError(f"split {split!r} is unknown; use valid or test")
    if uniform_weight is not None:
        from polyglot_groc.analysis.caches import check_cache_params

        check_cache_params(uniform_weight=uniform_weight)
    if lexicon_coverage is not None:
        check_coverage(lexicon_coverage)
    bundle, payload = load_bundle(Path(run), checkpoint, device)  # once, whatever the setting
    if open_vocabulary:
        from polyglot_groc.analysis.crossdomain import evaluate_open

        root = Path(data) if data is not None else Path(bundle.cfg.data.root)
        res = evaluate_open(bundle, payload, run=Path(run), data=root, split=split, settings=settings,
                            checkpoint=checkpoint, n_streams=batch_size or 1, screen=screen,
                            uniform_weight=uniform_weight, lexicon_coverage=lexicon_coverage)
        return EvaluateResult(run=res["run"], split=split, model=res["model"], checkpoint=checkpoint,
                              step=res["step"], open_vocabulary=True,
                              perplexity={lang: r["perplexity"] for lang, r in res["languages"].items()},
                              data=res["data"], cache=res["cache"], lexicon_coverage=lexicon_coverage, screen=screen,
                              languages=res["languages"], vocab_mode=res["vocab_mode"])
    return _in_domain(bundle, payload, Path(run), split, batch_size, checkpoint, screen)


def _in_domain(bundle: ModelBundle, payload: dict[str, Any], run: Path, split: str, batch_size: int | None,
               checkpoint: str, screen: bool) -> EvaluateResult:
    """Closed-vocabulary perplexity of ``split`` of the run's corpus, as the trainer evaluates."""
    from polyglot_groc.analysis.crossdomain import share_outside, training_words, unseen_report
    from polyglot_groc.training.data import load_corpus
    from polyglot_groc.training.evaluation import evaluate_split

    cfg = bundle.cfg
    corpus = load_corpus(cfg.data, (split,), cfg.languages)
    bs = batch_size or cfg.train.eval_batch_size
    results = evaluate_split(bundle, corpus, split, bs, cfg.train.bptt, screen=screen)
    details = {lang: r.to_dict() for lang, r in results.items()}
    if split != "train":  # what share of the scored words training never saw (a closed vocabulary hides it)
        seen = training_words(bundle)
        vocab = set(bundle.vocab.words)
        for lang, entry in details.items():
            tokens = list(corpus.splits[lang][split])
            entry["oov_rate"] = share_outside(tokens, vocab)  # scored as <unk> (lookup) or composed (GroC)
            entry.update(unseen_report(tokens, lang, seen, entry["oov_rate"], cfg.data.vocab_mode,
                                       f"the run's {split} split"))
    backward: dict[str, float | None] | None = None
    if bundle.model.bidirectional:
        back = evaluate_split(bundle, corpus, split, bs, cfg.train.bptt, screen=screen, direction="backward")
        backward = {lang: r.perplexity for lang, r in back.items()}
    return EvaluateResult(run=str(run), split=split, model=cfg.model.kind, checkpoint=checkpoint,
                          perplexity_backward=backward,
                          step=payload.get("step"), perplexity={lang: r.perplexity for lang, r in results.items()},
                          n_params=parameter_split(bundle.model), screen=screen, vocab_mode=cfg.data.vocab_mode,
                          details=details)

