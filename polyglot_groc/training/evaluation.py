"""Scoring a split during and after training: the vocabulary it is scored over, its id streams, perplexity.

Open-vocabulary GroC models also score the words a split has and the vocabulary lacks (they are
embedded compositionally); lookup models map them to ``<unk>`` when they have one and refuse
otherwise. Used by the trainer's validations and by evaluation commands alike.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch

from eval.perplexity import PerplexityResult
from groc_base.checks import setting
from groc_base.errors import InputError
from groc_base.wording import agree, counted
from langpairs.corpus import MultilingualCorpus
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.scoring import evaluate_streams
from polyglot_groc.training.data import encode_stream, unseen_words

log = logging.getLogger(__name__)

__all__ = ["estimate_evaluation_seconds", "evaluate_split", "evaluation_vocab", "split_streams"]


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
            n = sum(map(len, unknown.values()))
            log.warning("%s %s outside the closed training vocabulary; scoring them compositionally",
                        counted(n, f"{split} word"), agree(n, "is", "are"))
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
            raise InputError(f"{counted(missing, f'{split} word')} {agree(missing, 'is', 'are')} outside the "
                             f"{bundle.model.kind} model's vocabulary, which has no <unk>; train it with "
                             f"{setting('data.vocab_mode', 'open')} or evaluate on its own data")
    return {lang: encode_stream(bundle.vocab, corpus.splits[lang][split], n_streams, unk) for lang in corpus.langs}


def evaluate_split(bundle: ModelBundle, corpus: MultilingualCorpus, split: str,
                   batch_size: int, bptt: int, screen: bool = True,
                   direction: str = "forward",
                   progress: Callable[[int, int], None] | None = None) -> dict[str, PerplexityResult]:
    """Per-language perplexity of ``split`` (``batch_size`` parallel streams, windows of ``bptt``),
    scored over the language's screen (``screen``) or the whole vocabulary; ``direction="backward"``
    scores a bidirectional model's backward LM (right to left). ``progress(done, total)``: called with
    the target tokens scored so far and in all, once before the first window and after each."""
    with evaluation_vocab(bundle, corpus, split) as view:
        streams = split_streams(view, corpus, split, batch_size)
        tick = None if progress is None else _counting(progress, sum(s.shape[0] * max(s.shape[1] - 1, 0)
                                                                     for s in streams.values()))
        return evaluate_streams(view.model, streams, bptt, screen=screen, direction=direction, progress=tick)


def _counting(progress: Callable[[int, int], None], total: int) -> Callable[[int], None]:
    """A per-window ``tick(tokens)`` that reports ``progress(done, total)``; reports ``(0, total)`` now."""
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        progress(min(done[0], total), total)

    progress(0, total)
    return tick


def estimate_evaluation_seconds(bundle: ModelBundle, corpus: MultilingualCorpus, split: str, batch_size: int,
                                bptt: int, screen: bool = True, windows: int = 3) -> float:
    """Seconds an :func:`evaluate_split` of ``split`` will take, from timing its first ``windows`` windows
    in each language: the first carries the one-time costs (the output table's encoding), the others
    the cost of a window, which the language's remaining windows are charged at. Costs a few windows."""
    began = time.perf_counter()
    total = 0.0
    with evaluation_vocab(bundle, corpus, split) as view:
        streams = split_streams(view, corpus, split, batch_size)
        sync = torch.cuda.synchronize if view.model.device.type == "cuda" else (lambda: None)
        setup = time.perf_counter() - began
        for lang, stream in streams.items():
            n_windows = max(1, math.ceil((stream.shape[1] - 1) / bptt))
            head = stream[:, : min(stream.shape[1], windows * bptt + 1)]
            stamps = [time.perf_counter()]

            def stamp(_: int, stamps: list[float] = stamps) -> None:
                sync()  # a CUDA window's work is queued: wait for it, or the stamps time the launches
                stamps.append(time.perf_counter())

            evaluate_streams(view.model, {lang: head}, bptt, screen=screen, progress=stamp)
            first = stamps[1] - stamps[0]
            per_window = (stamps[-1] - stamps[1]) / (len(stamps) - 2) if len(stamps) > 2 else first
            total += first + per_window * (n_windows - 1)
    return setup + total
