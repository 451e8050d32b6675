"""The analysis workflows of polyglot-groc as Python functions: what the CLI does, one call each.

Every function is keyword-only and typed, checks all its inputs (and refuses an existing output
without ``overwrite``) before it loads a model or writes anything, writes its files atomically,
logs instead of printing, and returns a frozen result whose ``to_dict()`` is exactly the JSON the
matching command prints. The commands are thin faces over them: parse, call, print.

Which command each is the face of, and what it returns: docs/python-api.md (the public names are
listed once, in :data:`polyglot_groc.public.PUBLIC`).

:func:`load` gives the run itself in memory (:class:`Model`: vectors, neighbours, probabilities),
which :func:`neighbours` and :func:`score` use.

Errors are :class:`groc_base.errors.GrocError` subclasses (``InputError`` is also a
``ValueError``); the CLI turns each into one line and exit code 2.
"""

from __future__ import annotations

from polyglot_groc.analysis.alignment import AlignResult, align
from polyglot_groc.analysis.alignment_many import AlignManyResult, align_many
from polyglot_groc.analysis.curves import CurvesResult, curves
from polyglot_groc.analysis.evaluate import EvaluateResult, evaluate
from polyglot_groc.analysis.export import Exported, ExportResult, export
from polyglot_groc.analysis.freqbins import FreqBinsResult, freq_bins
from polyglot_groc.analysis.lexicon import LexiconCoverageResult, lexicon_coverage
from polyglot_groc.analysis.loaded_run import Model, load
from polyglot_groc.analysis.neighbours import NeighboursResult, neighbours
from polyglot_groc.analysis.score import ScoreResult, score
from polyglot_groc.analysis.similarity import WordSimilarityResult, similarity
from polyglot_groc.analysis.tunecache import TuneCacheResult, tune_cache

__all__ = [
    "AlignManyResult", "align_many",
    "AlignResult", "CurvesResult", "EvaluateResult", "ExportResult", "Exported", "FreqBinsResult",
    "LexiconCoverageResult", "TuneCacheResult", "WordSimilarityResult", "align", "curves", "evaluate", "export",
    "freq_bins", "lexicon_coverage", "similarity", "tune_cache",
    "Model", "NeighboursResult", "ScoreResult", "load", "neighbours", "score",
]
