"""The ``score`` workflow: the log-probability and perplexity of every line of a text under a run.

One call reads the input, loads the run (:func:`~polyglot_groc.analysis.loaded_run.load`) and
asks :meth:`~polyglot_groc.analysis.loaded_run.Model.score_lines`; ``polyglot-groc score`` prints
each line's record as a JSON line.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import option
from groc_base.errors import InputError
from groc_base.fileio import json_safe
from polyglot_groc.analysis.loaded_run import load
from polyglot_groc.analysis.text_scoring import LineScore, perplexity_of

__all__ = ["ScoreResult", "score"]


@dataclass(frozen=True)
class ScoreResult:
    """What :func:`score` measured: one :class:`LineScore` per input line, and the totals."""

    run: str
    lang: str
    model: str
    lines: list[LineScore]

    @property
    def tokens(self) -> int:
        return sum(s.tokens for s in self.lines)

    @property
    def log_prob(self) -> float:
        return float(sum(s.log_prob for s in self.lines if s.log_prob is not None))

    @property
    def perplexity(self) -> float:
        return perplexity_of(self.log_prob, self.tokens)

    def to_dict(self) -> dict[str, Any]:
        """The totals and every line's record (``polyglot-groc score`` prints the lines as JSON lines)."""
        return json_safe({"run": self.run, "lang": self.lang, "model": self.model,  # type: ignore[return-value]
                          "tokens": self.tokens, "log_prob": self.log_prob, "perplexity": self.perplexity,
                          "lines": [s.to_dict() for s in self.lines]})


def score(
    *,
    run: str | os.PathLike[str],
    lang: str,
    input: str | os.PathLike[str] | Sequence[str],
    uniform_weight: float | None = None,
    checkpoint: str = "best",
    device: str = "auto",
    threads: int | None = None,
) -> ScoreResult:
    """Log-probability and perplexity of every line of a text under a run (:meth:`Model.score_lines
    <polyglot_groc.analysis.loaded_run.Model.score_lines>`).

    Each line is a sentence of its own, read from a sentence start; its words and its closing
    ``<eos>`` are scored through the model's own scorer, over the training vocabulary and the new
    words of the whole input, as ``evaluate`` scores a file (composed by GroC; a lookup output
    needs ``uniform_weight``, as ``evaluate``'s open-vocabulary setting mixes in the uniform
    distribution).

    Args:
        run: run directory.
        lang: the language of the text.
        input: a UTF-8 text file (one sentence a line), ``"-"`` for standard input, or the lines themselves.
        uniform_weight: lookup outputs: the uniform distribution's weight in [0, 1) for new words.
        checkpoint: ``best`` or ``last``.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        threads: CPU threads for torch (None or 0: torch's default).

    Returns:
        A :class:`ScoreResult`; ``polyglot-groc score`` prints each line's ``to_dict()`` as a JSON line.

    Raises:
        InputError: a missing, non-UTF-8 or empty input, a language the run lacks, new words for a
            lookup output without ``uniform_weight``; CheckpointError: no such run.
    """
    from polyglot_groc.analysis.caches import check_cache_params

    if uniform_weight is not None:
        check_cache_params(uniform_weight=uniform_weight)
    lines = _read_lines(input)
    if not any(line.strip() for line in lines):
        raise InputError("the input is empty; give at least one line with a word")
    model = load(run, checkpoint=checkpoint, device=device, threads=threads)
    return ScoreResult(run=str(run), lang=lang, model=model.kind,
                       lines=model.score_lines(lines, lang, uniform_weight=uniform_weight))


def _read_lines(input: str | os.PathLike[str] | Sequence[str]) -> list[str]:
    """The lines of a UTF-8 file (checked as ``--input``; ``"-"``: standard input), or the given lines;
    NFC-normalised as the corpora are. Bad bytes are one error naming the source, line and fix."""
    from groc_base.checks import check_input_file
    from groc_base.textio import STDIN, iter_lines, read_text

    if not isinstance(input, (str, os.PathLike)):
        return list(input)
    if str(input) == STDIN:
        return list(iter_lines(STDIN, what="text", nfc=True))
    check_input_file(input, flag="--input")
    return read_text(Path(input), what=f"{option('input')} file", nfc=True).splitlines()
