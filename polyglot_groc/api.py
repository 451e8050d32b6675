"""The public Python API: every workflow of the ``polyglot-groc`` command line, one function each.

``import polyglot_groc as pg`` gives the same names (loaded on first use). Each function is
keyword-only and typed, checks its inputs before it loads a model or writes a file, writes
atomically, logs instead of printing, and returns a frozen result whose ``to_dict()`` is the JSON
the matching command prints. The commands are thin faces over these functions, and the
benchmarks call them too: a workflow is written once.

==========================  =====================================  ==============================
function                    command                                result
==========================  =====================================  ==============================
:func:`train`               ``train``                              :class:`TrainResult`
:func:`resume`              ``train --resume``                     :class:`TrainResult`
:func:`finetune`            ``finetune``                           :class:`TrainResult`
:func:`load_result`         ``runs show`` (a run's result)         :class:`TrainResult`
:func:`init_from_elmo`      ``init-from-elmo``                     :class:`ElmoInitResult`
:func:`evaluate`            ``evaluate``                           :class:`EvaluateResult`
:func:`tune_cache`          ``tune-cache``                         :class:`TuneCacheResult`
:func:`freq_bins`           ``analyze freq-bins``                  :class:`FreqBinsResult`
:func:`curves`              ``analyze curves``                     :class:`CurvesResult`
:func:`export`              ``export``                             :class:`ExportResult`
:func:`align`               ``align``                              :class:`AlignResult`
:func:`align_many`          ``align-many``                         :class:`AlignManyResult`
:func:`similarity`          ``similarity``                         :class:`WordSimilarityResult`
:func:`lexicon_coverage`    ``lexicon coverage``                   :class:`LexiconCoverageResult`
:func:`prepare_language`    ``data prepare --lang xx --input F``   :class:`PreparedLanguage`
:func:`import_wordnet_file` ``lexicon import FILE``                :class:`ImportedWordnet`
:func:`features`            ``features``                           :class:`FeaturesResult`
:func:`anchors`             ``anchors``                            :class:`AnchorsResult`
:func:`align_layers`        ``align-layers``                       :class:`LayerAlignResult`
:func:`probe`               ``probe``                              :class:`ProbeResult`
:func:`load`                (a run in memory, for Python)          :class:`Model`
:func:`neighbours`          ``neighbours``                         :class:`NeighboursResult`
:func:`score`               ``score``                              :class:`ScoreResult`
==========================  =====================================  ==============================

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
from polyglot_groc.training.interrupts import TrainingInterrupted
from polyglot_groc.training.progress import ProgressBar
from polyglot_groc.training.trainer import StepInfo, StopTraining, TrainHooks, TrainResult
from polyglot_groc.training.workflows import finetune, load_result, resume, train

# The functions above, each with its arguments checked against its annotations first: a wrong type
# (``train(langs=5)``) or an unknown keyword is an ArgumentTypeError naming the argument, not a bare
# TypeError from deep inside (groc_base.checks.checked_arguments, the one such check). The alignment
# modules import these classes for type checkers only (the CLI's `align` of vector files never loads
# torch); here they are named (Side only at align's first call), so their annotations can be checked.


_ANNOTATED: dict[str, Any] = {"Exported": Exported, "ModelBundle": ModelBundle}


def _alignment_annotated() -> dict[str, Any]:
    """``_ANNOTATED`` and the alignment's ``Side``, loaded at align's first call, not here: its module
    loads faiss (eval.knn), which training never needs and a bare GPU machine may lack."""
    from polyglot_groc.analysis.alignment_report import Side

    return {**_ANNOTATED, "Side": Side}


train = checked_arguments(train, _ANNOTATED)
resume = checked_arguments(resume, _ANNOTATED)
finetune = checked_arguments(finetune, _ANNOTATED)
load_result = checked_arguments(load_result, _ANNOTATED)
init_from_elmo = checked_arguments(init_from_elmo, _ANNOTATED)
evaluate = checked_arguments(evaluate, _ANNOTATED)
tune_cache = checked_arguments(tune_cache, _ANNOTATED)
freq_bins = checked_arguments(freq_bins, _ANNOTATED)
curves = checked_arguments(curves, _ANNOTATED)
export = checked_arguments(export, _ANNOTATED)
align = checked_arguments(align, _alignment_annotated)
align_many = checked_arguments(align_many, _alignment_annotated)
similarity = checked_arguments(similarity, _ANNOTATED)
lexicon_coverage = checked_arguments(lexicon_coverage, _ANNOTATED)
prepare_language = checked_arguments(prepare_language, _ANNOTATED)
import_wordnet_file = checked_arguments(import_wordnet_file, _ANNOTATED)
features = checked_arguments(features, _ANNOTATED)
anchors = checked_arguments(anchors, _ANNOTATED)
align_layers = checked_arguments(align_layers, _ANNOTATED)
probe = checked_arguments(probe, _ANNOTATED)
load_config = checked_arguments(load_config, _ANNOTATED)
load_registry = checked_arguments(load_registry, _ANNOTATED)
parse_overrides = checked_arguments(parse_overrides, _ANNOTATED)
load = checked_arguments(load, _ANNOTATED)
neighbours = checked_arguments(neighbours, _ANNOTATED)
score = checked_arguments(score, _ANNOTATED)

__all__ = [
    "AlignManyResult",
    "AnchorsResult", "FeaturesResult", "LayerAlignResult", "ParserConfig", "ProbeResult", "align_layers", "anchors",
    "features", "probe",
    "AlignResult", "ArgumentTypeError", "CheckpointError", "ConfigError", "CurvesResult", "ElmoInitResult",
    "EvaluateResult",
    "ExportResult", "Exported", "FreqBinsResult", "GrocError", "ImportedWordnet", "InputError",
    "LexiconCoverageResult", "PreparedLanguage", "ProgressBar", "RunConfig",
    "LineScore", "Model", "NeighboursResult", "ScoreResult", "TextScores", "load", "neighbours", "score",
    "StepInfo", "StopTraining", "TrainHooks", "TrainResult", "TrainingInterrupted", "TuneCacheResult",
    "WordSimilarityResult",
    "align", "align_many",
    "curves", "evaluate", "export", "finetune", "freq_bins", "init_from_elmo", "lexicon_coverage",
    "import_wordnet_file", "load_config", "load_registry", "load_result", "parse_overrides", "prepare_language",
    "resume", "similarity", "train", "tune_cache",
]
