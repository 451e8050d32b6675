"""In-domain word vectors for input initialisation (Welch et al. 2020, seed 003), trained with gensim.

The training text is the corpus's train split (plus optional extra text files), one sentence per
line, whitespace tokens, so the vectors' words are exactly the model's vocabulary tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval.vectors import write_vec
from groc_base.checks import check_positive, check_seed, option
from groc_base.errors import ConfigError, InputError, ResourceMissingError
from groc_base.textio import read_text
from polyglot_groc.config import D_MAX, THREADS_MAX
from polyglot_groc.model.threads import pick_threads

log = logging.getLogger(__name__)

ALGORITHMS = ("word2vec", "fasttext")


def read_sentences(paths: Sequence[Path]) -> list[list[str]]:
    sentences: list[list[str]] = []
    for path in paths:
        text = read_text(Path(path), what="text file")
        sentences += [line.split() for line in text.splitlines() if line.strip()]
    return sentences


def pretrain_vectors(texts: Sequence[Path], out: Path, algorithm: str = "word2vec", dim: int = 256,
                     epochs: int = 5, window: int = 5, min_count: int = 1, seed: int = 0,
                     threads: int = 1) -> int:
    """Train skip-gram vectors (word2vec or fastText) and write them as a .vec file; returns #words.

    ``threads``: gensim's worker threads. One (the default) gives the same vectors on every run with
    the same ``seed``; more are faster but the order in which the workers update the vectors varies,
    and so do the vectors (gensim's documented limit). 0 picks from the free cores
    (:func:`~polyglot_groc.model.threads.pick_threads`), as the other workflows' ``threads=0`` does.
    """
    if algorithm not in ALGORITHMS:
        raise InputError(f"unknown algorithm {algorithm!r}; use word2vec or fasttext")
    # Checked here, not in the command, so the benchmarks calling this get the same one-line errors.
    check_positive(dim=dim, epochs=epochs)
    if dim > D_MAX:
        raise ConfigError(f"{option('dim', dim)} is out of range: vectors for train's init_input have model.d's "
                          f"size, at "
                          f"most {D_MAX}")
    check_seed(seed=seed)
    if not 0 <= threads <= THREADS_MAX:
        raise ConfigError(f"{option('threads', threads)} must lie in [0, {THREADS_MAX}] (0: pick from the free cores)")
    if threads == 0:
        threads = pick_threads(0).threads
    log.info("gensim with %d worker thread%s", threads, "" if threads == 1 else "s")
    sentences = read_sentences(texts)
    if not sentences:
        raise InputError(f"no text in {', '.join(map(str, texts))}; give a corpus with a train split")
    try:
        from gensim.models import FastText, Word2Vec
    except ImportError as exc:  # a dependency, but a trimmed install may lack it
        raise ResourceMissingError("pretrain-vectors needs gensim; pip install 'gensim>=4.3'") from exc

    cls = Word2Vec if algorithm == "word2vec" else FastText
    model = cls(sentences=sentences, vector_size=dim, window=window, min_count=min_count, sg=1,
                epochs=epochs, seed=seed, workers=threads)
    words = list(model.wv.index_to_key)
    vectors = np.asarray(model.wv.vectors, dtype=np.float32)  # (n, dim)
    write_vec(out, words, vectors)
    log.info("%s: %d words x %d dims from %d sentences -> %s", algorithm, len(words), dim, len(sentences), out)
    return len(words)
