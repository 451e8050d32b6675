"""Word embeddings out of a trained model, for any word a compositional model can embed.

GroC embeds every word from its characters (and lexicon forms), seen in training or not;
lookup tables can only embed their vocabulary, and the words they cannot embed are reported.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from eval.vectors import first_occurrences
from groc_base.errors import InputError
from polyglot_groc.model.bundle import ModelBundle

log = logging.getLogger(__name__)

#: Tokens that are not words: left out of ``--vocab`` exports.
SPECIAL_TOKENS = frozenset({"<eos>", "<unk>"})


@dataclass(frozen=True)
class Exported:
    words: list[str]
    vectors: np.ndarray  # (n, d) float32
    #: Words asked for that this model cannot embed (lookup tables and unseen words).
    missing: list[str]
    #: How many exported words were outside the training vocabulary (composed from characters).
    composed: int


def vocabulary_words(bundle: ModelBundle, lang: str, max_vocab: int | None = None) -> list[str]:
    """``lang``'s vocabulary, most frequent first, without special tokens."""
    if lang not in bundle.vocab.langs:
        raise InputError(f"language {lang!r} is not in this run; it has {', '.join(bundle.vocab.langs)}")
    ranked = bundle.vocab.lang_ranked_ids(lang)
    words = [bundle.vocab.words[i] for i in ranked if bundle.vocab.words[i] not in SPECIAL_TOKENS]
    return words[:max_vocab] if max_vocab else words


#: Words per forward pass when embedding.
EMBED_BATCH = 4096


def vocabulary_vectors(bundle: ModelBundle, lang: str, side: str = "input", max_vocab: int | None = None,
                       lower: bool = True, batch_size: int = EMBED_BATCH) -> Exported:
    """``lang``'s vocabulary as ``read_vec(max_vocab=, lower=)`` reads what ``export --vocab`` writes.

    MUSE's vocabulary rule (:func:`eval.vectors.first_occurrences`): words most frequent first,
    lowercased when ``lower`` with the first (most frequent) casing's vector kept, at most
    ``max_vocab`` distinct words.  The words are embedded in the very batches ``export --vocab``
    uses (a prefix of the vocabulary in whole batches), so every vector is bit for bit the one in
    the exported file: aligning or scoring a run directly and through its export give the same
    words and the same numbers.
    """
    words = vocabulary_words(bundle, lang)
    kept, rows = first_occurrences(words, lower=lower, max_vocab=max_vocab)
    if not kept:
        raise InputError(f"language {lang!r} of this run has no words to embed")
    end = min(len(words), -(-(int(rows[-1]) + 1) // batch_size) * batch_size)
    out = embed(bundle, lang, words[:end], side=side, batch_size=batch_size)
    if out.words != words[:end]:  # vocabulary words are always embeddable; guard the row mapping anyway
        raise InputError(f"{len(out.missing)} vocabulary words of {lang!r} could not be embedded")
    return Exported(kept, np.ascontiguousarray(out.vectors[rows]), [], 0)


def embed(bundle: ModelBundle, lang: str, words: Sequence[str], side: str = "input",
          batch_size: int = EMBED_BATCH) -> Exported:
    """Embeddings of ``words`` on the model's ``side`` ("input" or "output")."""
    if side not in ("input", "output"):
        raise InputError(f"side {side!r} is unknown; use input or output")
    if lang not in bundle.vocab.langs:
        raise InputError(f"language {lang!r} is not in this run; it has {', '.join(bundle.vocab.langs)}")
    words = list(dict.fromkeys(words))
    if any(len(w.split()) != 1 for w in words):
        bad = next(w for w in words if len(w.split()) != 1)
        raise InputError(f"word {bad!r} is empty or contains whitespace; .vec files hold one token per line")
    model = bundle.model
    compositional = model.compositional_input if side == "input" else model.compositional_output
    unseen = [w for w in words if w not in bundle.vocab]
    missing: list[str] = []
    view = bundle
    if unseen and compositional:
        view = bundle.with_new_words({lang: unseen})
    elif unseen:
        missing = unseen
        log.warning("%d words are outside the %s model's vocabulary and have no %s embedding",
                    len(unseen), model.kind, side)
    keep = [w for w in words if w in view.vocab]
    ids = torch.from_numpy(view.vocab.encode(keep)).to(model.device)
    model.eval()
    try:
        with torch.no_grad():
            chunks = [model.embed_words(ids[i : i + batch_size], side=side) for i in range(0, len(keep), batch_size)]
    finally:
        if view is not bundle:
            bundle.install_words()  # the model is shared: restore the training vocabulary's tables
    empty = np.zeros((0, model.cfg.d), np.float32)
    vectors = torch.cat(chunks).float().cpu().numpy().astype(np.float32) if chunks else empty
    composed = len(unseen) if compositional else 0
    return Exported(keep, vectors, missing, composed)
