"""The public names of the Python API, listed once.

Everything else derives from this list: ``polyglot_groc.api.__all__``, the run-time argument check
``api`` wraps every function with, the package's attributes (``import polyglot_groc as pg; pg.train``,
loaded on first use) and the check of the tables in docs/python-api.md (tests/test_docs.py). Nothing
here imports anything, so ``import polyglot_groc`` stays light.

A new public name: its line here, its import in ``api.py`` (the line type checkers read) and its row in
docs/python-api.md.
"""

from __future__ import annotations

from typing import Literal

#: name -> what it is: a "function" (its arguments are checked against its annotations before it runs)
#: or a "type" (a result, a config, a hook, an error: what the functions take, return and raise).
#: In the order docs/python-api.md lists them.
PUBLIC: dict[str, Literal["function", "type"]] = {
    # functions: the workflows (one per command) and their helpers
    "prepare_language": "function", "import_wordnet_file": "function", "load_registry": "function",
    "train": "function", "resume": "function", "finetune": "function", "load_result": "function",
    "load_config": "function", "parse_overrides": "function", "init_from_elmo": "function", "evaluate": "function",
    "tune_cache": "function", "freq_bins": "function", "curves": "function", "export": "function",
    "align": "function", "align_many": "function", "similarity": "function", "lexicon_coverage": "function",
    "features": "function", "anchors": "function", "align_layers": "function", "probe": "function",
    "load": "function", "neighbours": "function", "score": "function",
    # types: the frozen results (to_dict() is the command's JSON) ...
    "PreparedLanguage": "type", "ImportedWordnet": "type", "TrainResult": "type", "ElmoInitResult": "type",
    "EvaluateResult": "type", "TuneCacheResult": "type", "FreqBinsResult": "type", "CurvesResult": "type",
    "ExportResult": "type", "AlignResult": "type", "AlignManyResult": "type", "WordSimilarityResult": "type",
    "LexiconCoverageResult": "type", "FeaturesResult": "type", "AnchorsResult": "type", "LayerAlignResult": "type",
    "ProbeResult": "type", "NeighboursResult": "type", "ScoreResult": "type",
    # ... a run in memory, configs, words and vectors, training hooks ...
    "Model": "type", "TextScores": "type", "LineScore": "type", "RunConfig": "type", "ParserConfig": "type",
    "Exported": "type", "TrainHooks": "type", "StepInfo": "type", "StopTraining": "type", "ProgressBar": "type",
    "TrainingInterrupted": "type",
    # ... and the errors
    "GrocError": "type", "InputError": "type", "ConfigError": "type", "CheckpointError": "type",
    "ArgumentTypeError": "type",
}
