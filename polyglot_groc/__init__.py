"""polyglot-groc: grounded compositional output language models, mono- and polyglot.

The public API lives in :mod:`polyglot_groc.api`; its names are also attributes of this package,
imported on first use (PEP 562), so ``import polyglot_groc as pg; pg.train(...)`` works while the
command line, which imports this package too, does not pay for torch before it needs it.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: The names of :mod:`polyglot_groc.api` (tests/test_python_api_facade.py keeps the two equal). Only
#: these load the API: a submodule import such as ``from polyglot_groc import model`` never does.
API_NAMES = frozenset({
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
    "curves", "evaluate", "export", "finetune", "freq_bins", "import_wordnet_file", "init_from_elmo",
    "lexicon_coverage", "load_config", "load_registry", "load_result", "parse_overrides", "prepare_language",
    "resume", "similarity", "train", "tune_cache",
})


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        from polyglot_groc import api

        return getattr(api, name)
    raise AttributeError(f"module 'polyglot_groc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API_NAMES])
