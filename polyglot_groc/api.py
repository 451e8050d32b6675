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
==========================  =====================================  ==============================

Training progress: the workflows log at INFO (``logging.basicConfig(level=logging.INFO)`` shows
it); :class:`ProgressBar` is a ready ``hooks`` object drawing the command line's progress bar.

Languages beyond the built-in ten come from a languages TOML file: :func:`load_registry` reads it
(``train(languages=...)`` takes its path and records the entries the run uses).

Configuration: :func:`load_config` reads a TOML file with overrides given as data (dotted keys to
Python values); :func:`parse_overrides` turns the CLI's ``--set key=value`` strings into them.
Errors are :class:`GrocError` subclasses (:class:`InputError`, :class:`ConfigError`, ...).
"""

from __future__ import annotations

from groc_base.errors import CheckpointError, ConfigError, GrocError, InputError
from langpairs.files import PreparedLanguage, prepare_language
from langpairs.registry import load_registry
from lexicons.user_import import ImportedWordnet, import_wordnet_file
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
from polyglot_groc.training.interrupts import TrainingInterrupted
from polyglot_groc.training.progress import ProgressBar
from polyglot_groc.training.trainer import StepInfo, TrainHooks, TrainResult
from polyglot_groc.training.workflows import finetune, load_result, resume, train

__all__ = [
    "AlignManyResult",
    "AnchorsResult", "FeaturesResult", "LayerAlignResult", "ParserConfig", "ProbeResult", "align_layers", "anchors",
    "features", "probe",
    "AlignResult", "CheckpointError", "ConfigError", "CurvesResult", "ElmoInitResult", "EvaluateResult",
    "ExportResult", "Exported", "FreqBinsResult", "GrocError", "ImportedWordnet", "InputError",
    "LexiconCoverageResult", "PreparedLanguage", "ProgressBar", "RunConfig",
    "StepInfo", "TrainHooks", "TrainResult", "TrainingInterrupted", "TuneCacheResult", "WordSimilarityResult",
    "align", "align_many",
    "curves", "evaluate", "export", "finetune", "freq_bins", "init_from_elmo", "lexicon_coverage",
    "import_wordnet_file", "load_config", "load_registry", "load_result", "parse_overrides", "prepare_language",
    "resume", "similarity", "train", "tune_cache",
]
