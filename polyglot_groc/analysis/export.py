"""Word embeddings out of a trained model, for any word a compositional model can embed.

GroC embeds every word from its characters (and lexicon forms), seen in training or not;
lookup tables can only embed their vocabulary, and the words they cannot embed are reported.
A lookup table's rows of vocabulary words training never saw (a closed vocabulary's valid and
test words) are untrained: they are left out unless asked for (:mod:`~polyglot_groc.analysis.seen_words`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

from eval.vectors import first_occurrences
from groc_base.checks import option
from groc_base.errors import InputError
from groc_base.wording import agree, counted
from polyglot_groc.analysis.seen_words import composes, untrained_rows
from polyglot_groc.model.access import check_run_access, run_access_doc
from polyglot_groc.model.bundle import ModelBundle

log = logging.getLogger(__name__)

#: Tokens that are not words: left out of ``--vocab`` exports.
SPECIAL_TOKENS = frozenset({"<eos>", "<unk>"})


@dataclass(frozen=True)
class Exported:
    words: list[str]
    vectors: np.ndarray  # (n, d) float32
    #: Words asked for that this model cannot embed (lookup tables and words outside their vocabulary).
    missing: list[str]
    #: How many exported words were outside the vocabulary (composed from characters).
    composed: int
    #: Composed words made only of characters the model never saw (see :func:`unknown_script_words`).
    unknown_characters: list[str] = field(default_factory=list)
    #: Words asked for whose lookup row is untrained (in the vocabulary, never seen in training): left out.
    untrained: list[str] = field(default_factory=list)


def check_language(bundle: ModelBundle, lang: str) -> None:
    """``lang`` must be one of the run's languages (InputError naming them otherwise)."""
    if lang not in bundle.vocab.langs:
        raise InputError(f"language {lang!r} is not in this run; it has {', '.join(bundle.vocab.langs)}")


def resolve_language(bundle: ModelBundle, lang: str | None) -> str:
    """``lang`` (checked), or a one-language run's language when it is None; for a polyglot run an error
    naming ``lang`` the way the caller gives it (``lang=`` or ``--lang``)."""
    if lang is not None:
        check_language(bundle, lang)
        return lang
    langs = bundle.vocab.langs
    if len(langs) != 1:
        raise InputError(f"this run has {len(langs)} languages ({', '.join(langs)}); say which with "
                         f"{option('lang', langs[0])}")
    return langs[0]


def vocabulary_words(bundle: ModelBundle, lang: str, max_vocab: int | None = None, *, side: str = "input",
                     allow_untrained: bool = False) -> list[str]:
    """``lang``'s vocabulary, most frequent first, without special tokens, and without the words whose
    ``side`` row is untrained (a lookup side's words training never saw) unless ``allow_untrained``."""
    check_language(bundle, lang)
    ranked = bundle.vocab.lang_ranked_ids(lang)  # (V_lang,)
    untrained = None if allow_untrained else untrained_rows(bundle, side)
    if untrained is not None:
        ranked = ranked[~untrained[ranked]]
    words = [bundle.vocab.words[i] for i in ranked if bundle.vocab.words[i] not in SPECIAL_TOKENS]
    return words[:max_vocab] if max_vocab else words


#: Words per forward pass when embedding.
EMBED_BATCH = 4096


def vocabulary_vectors(bundle: ModelBundle, lang: str, side: str = "input", max_vocab: int | None = None,
                       lower: bool = True, batch_size: int = EMBED_BATCH, allow_untrained: bool = False) -> Exported:
    """``lang``'s vocabulary as ``read_vec(max_vocab=, lower=)`` reads what ``export --vocab`` writes.

    MUSE's vocabulary rule (:func:`eval.vectors.first_occurrences`): words most frequent first,
    lowercased when ``lower`` with the first (most frequent) casing's vector kept, at most
    ``max_vocab`` distinct words.  The words are embedded in the very batches ``export --vocab``
    uses (a prefix of the vocabulary in whole batches), so every vector is bit for bit the one in
    the exported file: aligning or scoring a run directly and through its export give the same
    words and the same numbers. The vocabulary is :func:`vocabulary_words`' (untrained lookup rows
    left out unless ``allow_untrained``), as ``export --vocab`` writes it.
    """
    words = vocabulary_words(bundle, lang, side=side, allow_untrained=allow_untrained)
    kept, rows = first_occurrences(words, lower=lower, max_vocab=max_vocab)
    if not kept:
        raise InputError(f"language {lang!r} of this run has no words to embed")
    end = min(len(words), -(-(int(rows[-1]) + 1) // batch_size) * batch_size)
    out = embed(bundle, lang, words[:end], side=side, batch_size=batch_size, allow_untrained=True)
    if out.words != words[:end]:  # vocabulary words are always embeddable; guard the row mapping anyway
        raise InputError(f"{len(out.missing)} vocabulary words of {lang!r} could not be embedded")
    return Exported(kept, np.ascontiguousarray(out.vectors[rows]), [], 0)


def embed(bundle: ModelBundle, lang: str, words: Sequence[str], side: str = "input",
          batch_size: int = EMBED_BATCH, allow_untrained: bool = False) -> Exported:
    """Embeddings of ``words`` on the model's ``side`` ("input" or "output").

    Words a lookup side cannot embed are left out and reported: ``missing`` (outside its
    vocabulary) and ``untrained`` (in it, but never seen in training: their rows are untrained;
    kept when ``allow_untrained``).
    """
    check_side(side)
    check_language(bundle, lang)
    words = list(dict.fromkeys(words))
    if any(len(w.split()) != 1 for w in words):
        bad = next(w for w in words if len(w.split()) != 1)
        raise InputError(f"word {bad!r} is empty or contains whitespace; .vec files hold one token per line")
    model = bundle.model
    compositional = composes(bundle, side)
    untrained: list[str] = []
    mask = None if allow_untrained else untrained_rows(bundle, side)
    if mask is not None:
        at = np.fromiter((bundle.vocab.get(w) for w in words), dtype=np.int64, count=len(words))  # (n,) -1: none
        flagged = (at >= 0) & mask[np.maximum(at, 0)]
        if flagged.any():
            untrained = [w for w, f in zip(words, flagged.tolist(), strict=True) if f]
            words = [w for w, f in zip(words, flagged.tolist(), strict=True) if not f]
            log.warning("left out %d of the words asked (e.g. %s): in the %s model's vocabulary but never seen in "
                        "training, so their %s rows are untrained; %s keeps them", len(untrained),
                        ", ".join(untrained[:5]), model.kind, side, option("allow_untrained", True))
    unseen = [w for w in words if w not in bundle.vocab]
    missing: list[str] = []
    view = bundle
    if unseen and compositional:
        view = bundle.with_new_words({lang: unseen})
    elif unseen:
        missing = unseen
        log.warning("%s %s outside the %s model's vocabulary and %s no %s embedding", counted(len(unseen), "word"),
                    agree(len(unseen), "is", "are"), model.kind, agree(len(unseen), "has", "have"), side)
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
    blind = unknown_script_words(bundle, unseen) if compositional else []
    if blind:
        log.warning("%d of the %d composed words are made only of characters this model never saw (e.g. %s): "
                    "each is spelled with the one unknown-character symbol, so they collapse to a few vectors "
                    "that differ only by word length; train on text of that script to embed them",
                    len(blind), composed, ", ".join(blind[:5]))
    return Exported(keep, vectors, missing, composed, blind, untrained)


def check_side(side: str) -> None:
    """``side`` must be ``input`` or ``output``."""
    if side not in ("input", "output"):
        raise InputError(f"side {side!r} is unknown; use input or output")


def unknown_script_words(bundle: ModelBundle, words: Sequence[str]) -> list[str]:
    """The ``words`` none of whose characters is in the model's character inventory.

    A compositional model spells an unseen character with one shared symbol, so all such words
    of one length get the same character input (653 Persian words through an English-French
    model gave 5 distinct vectors); only a lexicon form, where the model has one, tells them
    apart. Byte-level charsets (ELMo) see every character and return none.
    """
    if bundle.charset.scheme != "unicode" or not words:
        return []
    known = set(bundle.charset.chars)
    return [w for w in words if known.isdisjoint(w)]


def read_words(path: str | os.PathLike[str], skip_multiword: bool = False) -> list[str]:
    """One word per line of a UTF-8 file; a line with several tokens is an error unless ``skip_multiword``.

    Raises:
        InputError: the file is missing, not UTF-8, empty, or (without ``skip_multiword``) holds
            a line with several tokens.
    """
    from groc_base.textio import read_text

    path = Path(path)
    lines = [line.split() for line in read_text(path, what="word list", nfc=True).splitlines()]
    multi = [i for i, fields in enumerate(lines, start=1) if len(fields) > 1]
    if multi and not skip_multiword:
        raise InputError(f"{path}: line {multi[0]} holds several tokens ({' '.join(lines[multi[0] - 1])[:60]!r}; "
                         f"{len(multi)} such lines); .vec files hold one token per word: split the phrase, "
                         f"or pass {option('skip_multiword', True)} to leave those lines out")
    if multi:
        log.warning("%s: %d multiword line(s) skipped (%s)", path, len(multi), option("skip_multiword", True))
    words = [fields[0] for fields in lines if len(fields) == 1]
    if not words:
        raise InputError(f"word list {path} is empty; put one word per line")
    return words


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export` wrote: how many of the requested words, how many composed from their spelling.

    ``missing`` counts the words this model cannot embed (a lookup table and a word outside its
    vocabulary); ``missing_examples`` names up to ten of them. ``untrained`` counts the listed
    words left out because their lookup row is untrained (in the vocabulary, never seen in
    training); the vocabulary's own such words are left out of ``vocab=True`` without a count here.
    """

    model: str
    lang: str
    side: str
    requested: int
    exported: int
    composed_unseen: int
    missing: int
    missing_examples: list[str]
    out: str
    dim: int
    #: Composed words made only of characters the model never saw: they collapse to a few vectors.
    unknown_characters: int = 0
    unknown_characters_examples: list[str] = field(default_factory=list)
    #: Listed words left out because their lookup row is untrained (``allow_untrained`` keeps them).
    untrained: int = 0
    untrained_examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc export`` prints."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@run_access_doc
def export(
    *,
    run: str | os.PathLike[str],
    out: str | os.PathLike[str],
    lang: str | None = None,
    words: str | os.PathLike[str] | Sequence[str] | None = None,
    vocab: bool = False,
    side: str = "input",
    max_vocab: int | None = None,
    checkpoint: str = "best",
    skip_multiword: bool = False,
    overwrite: bool = False,
    allow_untrained: bool = False,
    device: str = "auto",
    threads: int | None = None,
) -> ExportResult:
    """Write word embeddings of a run in word2vec text format (MUSE, fastText and gensim read it).

    Words are written unchanged (no lowercasing); ``vocab=True`` writes the language's vocabulary
    most frequent first, so MUSE's lowercase first-occurrence rule keeps each word's most
    frequent casing. ``vocab`` and ``words`` together write the vocabulary, then the listed words
    it lacks (e.g. a test dictionary's unseen words, composed by GroC). A compositional side
    (GroC) embeds any word; a lookup table only its vocabulary (the others are counted in
    ``missing``), and not the words of it training never saw, whose rows are untrained (left out
    of the vocabulary, counted in ``untrained`` when listed; ``allow_untrained`` writes them).
    Composed words made only of characters the model never saw are counted in
    ``unknown_characters`` (with a warning): they collapse to a few vectors. The file is written
    atomically.

    Args:
        run: run directory.
        lang: the language whose words to embed (default: a one-language run's).
        out: the ``.vec`` path (``.gz`` is written compressed).
        words: a file with one word per line, or the words themselves (a list).
        vocab: export the language's vocabulary (at least one of ``words`` and ``vocab``).
        side: ``input`` or ``output`` embeddings.
        max_vocab: keep the first N words (with ``vocab``: the N most frequent of the vocabulary,
            the listed ``words`` it lacks then follow).
        {run_access}
        skip_multiword: with a ``words`` file, leave out lines with several tokens instead of failing.
        overwrite: replace an existing ``out``.
        allow_untrained: write the untrained lookup rows of vocabulary words training never saw too.

    Returns:
        An :class:`ExportResult`; its ``to_dict()`` is the JSON ``polyglot-groc export`` prints.

    Raises:
        InputError: neither ``words`` nor ``vocab``, an existing ``out`` without
            ``overwrite``, a bad word list, a language the run lacks, no word embeddable.
    """
    from eval.vectors import write_vec
    from groc_base.checks import check_input_file, check_output, check_positive
    from polyglot_groc.model.bundle import load_bundle

    check_positive(max_vocab=max_vocab)
    check_run_access(checkpoint=checkpoint, device=device, threads=threads)
    if words is None and not vocab:
        raise InputError(f"pass {option('words')} FILE, {option('vocab', True)}, or both (the vocabulary, then "
                         f"the listed "
                         "words it lacks)")
    check_output(Path(out), overwrite)
    if isinstance(words, (str, os.PathLike)):
        check_input_file(words, flag="words")  # a FIFO would block the reader forever
        wanted: list[str] | None = read_words(words, skip_multiword)
    else:
        wanted = list(words) if words is not None else None
    if wanted is not None and max_vocab and not vocab:
        wanted = wanted[:max_vocab]
    bundle, _ = load_bundle(Path(run), checkpoint, device)
    lang = resolve_language(bundle, lang)
    asked = vocabulary_words(bundle, lang, max_vocab, side=side, allow_untrained=allow_untrained) if vocab else []
    if vocab:
        _note_untrained(bundle, lang, side, allow_untrained)
    if wanted is not None:
        have = set(asked)
        asked += [w for w in dict.fromkeys(wanted) if w not in have]
    got = embed(bundle, lang, asked, side=side, allow_untrained=allow_untrained)
    if not got.words:
        raise InputError(f"none of the requested words can be embedded by this {bundle.model.kind} model")
    write_vec(Path(out), got.words, got.vectors)
    return ExportResult(model=bundle.model.kind, lang=lang, side=side, requested=len(asked),
                        exported=len(got.words), composed_unseen=got.composed, missing=len(got.missing),
                        missing_examples=got.missing[:10], out=str(out), dim=int(got.vectors.shape[1]),
                        unknown_characters=len(got.unknown_characters),
                        unknown_characters_examples=got.unknown_characters[:10], untrained=len(got.untrained),
                        untrained_examples=got.untrained[:10])


def _note_untrained(bundle: ModelBundle, lang: str, side: str, allow_untrained: bool) -> None:
    """Say how many words of ``lang``'s vocabulary a lookup ``side`` leaves out (or, allowed, writes) untrained."""
    mask = untrained_rows(bundle, side)
    n = 0 if mask is None else int(mask[bundle.vocab.lang_ids(lang)].sum())
    if n and allow_untrained:
        log.warning("the vocabulary of %s holds words training never saw (%d): their %s rows are untrained and "
                    "written as asked", lang, n, side)
    elif n:
        log.info("the vocabulary of %s holds words training never saw (%d: a closed vocabulary's valid and test "
                 "words): their %s rows are untrained and left out; %s writes them", lang, n, side,
                 option("allow_untrained", True))
