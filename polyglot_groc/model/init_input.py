"""In-domain input initialisation (Welch et al. 2020, seed 003): input table rows from word vectors.

Words found in the file get its vector; the rest keep the model's random init. Only kinds whose
input embedding is a d-dimensional lookup table can take it (untied, tied, bilinear, deep-residual,
conv). For char-level inputs (elmo, groc, groc-lex) and the banded adaptive input the file is
ignored with a warning: there is no per-word input row to set, and distilling vectors into the
char-CNN is a different method than seed 003's.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from eval.vectors import read_vec
from groc_base.checks import check_input_file, option, setting
from groc_base.errors import InputError
from polyglot_groc.model.embedder import LookupEmbedder
from polyglot_groc.model.lm import LanguageModel
from polyglot_groc.model.vocab import Vocab

log = logging.getLogger(__name__)


def init_input_table(model: LanguageModel, vocab: Vocab, path: Path) -> int:
    """Copy vectors of vocabulary words into the input table; returns how many were found."""
    path = check_input_file(path, flag="--init-input", what="word2vec file")  # a FIFO would block the read
    emb = model.input_embedder
    if not isinstance(emb, LookupEmbedder):
        log.warning("model kind %s has no input lookup table; %s %s initialises nothing "
                    "(use untied, tied, bilinear, deep-residual or conv)", model.kind, option("init_input"), path)
        return 0
    # Seed 003 needs one vector per word: a repeated word is an error (not first-occurrence-wins).
    # Text or binary word2vec, plain or compressed; raises on a lying header, ragged rows, bad utf-8.
    words, vectors = read_vec(path, unique=True)  # (n, D)
    if vectors.shape[1] != emb.weight.shape[1]:
        raise InputError(f"{path} has {vectors.shape[1]}-dimensional vectors but model.d={emb.weight.shape[1]}; "
                         f"pass {setting('model.d', vectors.shape[1])} or regenerate the vectors with "
                         f"{option('dim', vectors.shape[1])}")
    ids = torch.tensor([vocab.get(w) for w in words], dtype=torch.long)  # (n,) -1 = not in vocabulary
    found = ids >= 0
    with torch.no_grad():
        emb.weight[ids[found]] = torch.from_numpy(vectors[found.numpy()]).to(emb.weight)
    n = int(found.sum())
    log.info("%s %s: %d of %d vocabulary words found (%.1f%%); the rest keep their random init",
             option("init_input"), path, n, len(vocab), 100.0 * n / max(len(vocab), 1))
    if model.shared_embedding:
        log.warning("model kind %s ties input and output tables: the vectors initialise both (seed 003 unties; "
                    "pass %s)", model.kind, option("untie", True))
    return n
