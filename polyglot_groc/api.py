"""The public Python API: every workflow of the ``polyglot-groc`` command line, one function each.

``import polyglot_groc as pg`` gives the same names (loaded on first use). Each function is
keyword-only and typed, checks its inputs before it loads a model or writes a file, writes
atomically, logs instead of printing, and returns a frozen result whose ``to_dict()`` is the JSON
the matching command prints. The commands are thin faces over these functions, and the
benchmarks call them too: a workflow is written once.

The names are listed once, in :data:`polyglot_groc.public.PUBLIC` (``__all__`` is that list);
docs/python-api.md shows each function with its command and result.

:func:`load` reads a run once; its :class:`Model` gives vectors of any word, neighbours (cosine or
CSLS, across languages), log-probabilities of text and gensim ``KeyedVectors`` from memory.

Training progress: the workflows log at INFO (``logging.basicConfig(level=logging.INFO)`` shows
it); :class:`ProgressBar` is a ready ``hooks`` object drawing the command line's progress bar.

Languages beyond the built-in ten come from a languages TOML file: :func:`load_registry` reads it
(``train(languages=...)`` takes its path and records the entries the run uses).

Configuration: :func:`load_config` reads a TOML file with overrides given as data (dotted keys to
Python values); :func:`parse_overrides` turns the CLI's ``--set key=value`` strings into them.
Errors are :class:`GrocError` subclasses (:class:`InputError`, :class:`ConfigError`, ...); an
argument of the wrong type, or one a function does not take, is an :class:`ArgumentTypeError`
naming it (every function checks its arguments against its annotations before it runs).
"""

# The imports below are the API (__all__ is polyglot_groc.public's list, which ruff cannot read):
# ruff: noqa: F401
from __future__ import annotations

from typing import Any

from groc_base.checks import checked_arguments
from groc_base.errors import ArgumentTypeError, CheckpointError, ConfigError, GrocError, InputError
from langpairs.files import PreparedLanguage, prepare_language
from langpairs.registry import load_registry
from lexicons.user_import import ImportedWordnet, import_wordnet_file
from polyglot_groc.analysis.loaded_run import Model, load
from polyglot_groc.analysis.neighbours import NeighboursResult, neighbours
from polyglot_groc.analysis.score import ScoreResult, score
from polyglot_groc.analysis.text_scoring import LineScore, TextScores
from polyglot_groc.analysis.workflows import (
    AlignManyResult,
    AlignResult,
    CurvesResult,
    EvaluateResult,
    Exported,
    ExportResult,
    FreqBinsResult,
    LexiconCoverageResult,
    TuneCacheResult,
    WordSimilarityResult,
    align,
    align_many,
    curves,
    evaluate,
    export,
    freq_bins,
    lexicon_coverage,
    similarity,
    tune_cache,
)
from polyglot_groc.config import RunConfig, load_config, parse_overrides
from polyglot_groc.contextual.features import (
    AnchorsResult,
    FeaturesResult,
    LayerAlignResult,
    align_layers,
    anchors,
    features,
)
from polyglot_groc.contextual.parser import ParserConfig
from polyglot_groc.contextual.probe import ProbeResult, probe
from polyglot_groc.elmo.workflows import ElmoInitResult, init_from_elmo
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.public import PUBLIC
from polyglot_groc.training.interrupts import TrainingInterrupted
from polyglot_groc.training.progress import ProgressBar
from polyglot_groc.training.trainer import StepInfo, StopTraining, TrainHooks, TrainResult
from polyglot_groc.training.workflows import finetune, load_result, resume, train

# Each function of the list, with its arguments checked against its annotations first: a wrong type
# (``train(langs=5)``) or an unknown keyword is an ArgumentTypeError naming the argument, not a bare
# TypeError from deep inside (groc_base.checks.checked_arguments, the one such check). The workflow
# modules import these classes for type checkers only (the CLI's `align` of vector files never loads
# torch); here they are named, so those annotations can be checked.
_ANNOTATED: dict[str, Any] = {"Exported": Exported, "ModelBundle": ModelBundle}

for _name, _kind in PUBLIC.items():
    if _kind == "function":
        globals()[_name] = checked_arguments(globals()[_name], _ANNOTATED)

__all__ = list(PUBLIC)
