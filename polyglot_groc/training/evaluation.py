"""Scoring a split during and after training: the vocabulary it is scored over, its id streams, perplexity.

Open-vocabulary GroC models also score the words a split has and the vocabulary lacks (they are
embedded compositionally); lookup models map them to ``<unk>`` when they have one and refuse
otherwise. Used by the trainer's validations and by evaluation commands alike.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import numpy as np

from eval.perplexity import PerplexityResult
from groc_base.errors import InputError
from langpairs.corpus import MultilingualCorpus
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.scoring import evaluate_streams
from polyglot_groc.training.data import encode_stream, unseen_words

log = logging.getLogger(__name__)

__all__ = ["evaluate_split", "evaluation_vocab", "split_streams"]


@contextlib.contextmanager
def evaluation_vocab(bundle: ModelBundle, corpus: MultilingualCorpus, split: str) -> Iterator[ModelBundle]:
    """The bundle to score ``split`` with: open-vocabulary GroC also scores the split's new words.

    The model is shared, so its word tables are restored on exit.
    """
    outside = unseen_words(bundle.vocab, corpus, split)
    unknown = {lang: [w for w in ws if w not in bundle.vocab] for lang, ws in outside.items()}
    if not bundle.model.compositional_output:
        # Lookup tables cannot score new words (they map to <unk>), but a word known from
        # another language can still join this language's screen.
        outside = {lang: [w for w in ws if w in bundle.vocab] for lang, ws in outside.items()}
    if any(outside.values()):
        if bundle.cfg.data.vocab_mode == "closed" and any(unknown.values()):
            log.warning("%d %s words are outside the closed training vocabulary; scoring them compositionally",
                        sum(map(len, unknown.values())), split)
        view = bundle.with_new_words(outside)
        try:
            yield view
        finally:
            bundle.install_words()
        return
    yield bundle


def split_streams(bundle: ModelBundle, corpus: MultilingualCorpus, split: str, n_streams: int) -> dict[str, np.ndarray]:
    """Each language's ``split`` as ids in ``n_streams`` parallel streams, ``(n_streams, T)`` per language.

    A lookup model without ``<unk>`` cannot encode words outside its vocabulary: :class:`InputError`.
    """
    unk = "<unk>" in bundle.vocab and not bundle.model.compositional_output
    if not unk and not bundle.model.compositional_output:
        missing = sum(map(len, unseen_words(bundle.vocab, corpus, split).values()))
        if missing:
            raise InputError(f"{missing} {split} words are outside the {bundle.model.kind} model's vocabulary, "
                             "which has no <unk>; train it with --vocab-mode open or evaluate on its own data")
    return {lang: encode_stream(bundle.vocab, corpus.splits[lang][split], n_streams, unk) for lang in corpus.langs}


def evaluate_split(bundle: ModelBundle, corpus: MultilingualCorpus, split: str,
                   batch_size: int, bptt: int, screen: bool = True,
                   direction: str = "forward") -> dict[str, PerplexityResult]:
    """Per-language perplexity of ``split`` (``batch_size`` parallel streams, windows of ``bptt``),
    scored over the language's screen (``screen``) or the whole vocabulary; ``direction="backward"``
    scores a bidirectional model's backward LM (right to left)."""
    with evaluation_vocab(bundle, corpus, split) as view:
        streams = split_streams(view, corpus, split, batch_size)
        return evaluate_streams(view.model, streams, bptt, screen=screen, direction=direction)
