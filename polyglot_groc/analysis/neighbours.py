"""The ``neighbours`` workflow: a run's nearest words of any word, within a language or across two.

One call loads the run (:func:`~polyglot_groc.analysis.loaded_run.load`), applies an alignment
when one is given, and asks :meth:`~polyglot_groc.analysis.loaded_run.Model.most_similar`;
``polyglot-groc neighbours`` prints the result's ``to_dict()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

from groc_base.fileio import json_safe
from polyglot_groc.analysis.alignment import AlignResult, read_alignment
from polyglot_groc.analysis.export import check_side, resolve_language
from polyglot_groc.analysis.loaded_run import load
from polyglot_groc.analysis.neighbour_search import check_method

__all__ = ["NeighboursResult", "neighbours"]


@dataclass(frozen=True)
class NeighboursResult:
    """What :func:`neighbours` found: the query, where it searched, and the neighbours best first.

    ``composed`` says whether the query word is outside its language's vocabulary (embedded from
    its spelling); ``aligned`` whether an alignment's space was searched; ``allow_untrained``
    whether untrained lookup rows (vocabulary words training never saw) were allowed.
    """

    run: str
    word: str
    lang: str
    among: str
    method: str
    side: str
    composed: bool
    aligned: bool
    neighbours: list[tuple[str, float]]
    allow_untrained: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc neighbours`` prints."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["neighbours"] = [{"word": w, "score": s} for w, s in self.neighbours]
        return json_safe(out)  # type: ignore[return-value]


def neighbours(
    *,
    run: str | os.PathLike[str],
    word: str,
    lang: str | None = None,
    among: str | None = None,
    topn: int = 10,
    method: str = "cosine",
    side: str = "input",
    alignment: str | os.PathLike[str] | AlignResult | None = None,
    allow_untrained: bool = False,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> NeighboursResult:
    """The nearest words of ``word`` (in ``lang``) among a language's vocabulary, from a run.

    Any word, composed from its spelling where the run never saw it (a compositional side); a
    lookup side refuses, and leaves out of the vocabulary searched, the words training never saw
    (their rows are untrained) unless ``allow_untrained``. ``among`` is the language searched
    (default ``lang``); another language of a polyglot run is searched in the run's shared space,
    or in an ``align`` result's when ``alignment`` (its directory or the result) is given.
    :meth:`Model.most_similar <polyglot_groc.analysis.loaded_run.Model.most_similar>` does the work.

    Args:
        run: run directory.
        word: the query word.
        lang: its language (default: a one-language run's).
        among: the language whose vocabulary is searched (default: ``lang``).
        topn: how many neighbours.
        method: ``cosine`` or ``csls``.
        side: ``input`` or ``output`` embeddings.
        alignment: an ``align --out`` directory or :class:`AlignResult` relating ``lang`` and ``among``.
        allow_untrained: serve the untrained lookup rows of vocabulary words training never saw.
        checkpoint: ``best`` or ``last``.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        threads: CPU threads for torch (None or 0: picked from the free cores).

    Returns:
        A :class:`NeighboursResult`; its ``to_dict()`` is the JSON ``polyglot-groc neighbours`` prints.

    Raises:
        InputError: a language the run lacks (or none given for a polyglot run), a word it cannot
            embed or an untrained one, a bad ``method`` or ``topn``, an alignment of other languages
            or of another run; CheckpointError: no such run.
    """
    check_method(method)  # the cheap checks before the run is loaded
    check_side(side)
    if isinstance(alignment, (str, os.PathLike)):
        alignment = read_alignment(alignment)  # before the run is loaded: a bad directory fails fast
    model = load(run, checkpoint=checkpoint, device=device, threads=threads)
    lang = resolve_language(model.bundle, lang)
    if alignment is not None:
        model.apply_alignment(alignment)
    other = among or lang
    found = model.most_similar(word, lang, topn, among=other, method=method, side=side,
                               allow_untrained=allow_untrained)
    aligned = model.alignment is not None and model.alignment.relates(lang, other)
    return NeighboursResult(run=str(run), word=word, lang=lang, among=other, method=method, side=side,
                            composed=word not in model.bundle.vocab, aligned=aligned, neighbours=found,
                            allow_untrained=allow_untrained)
