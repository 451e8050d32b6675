"""The public API: one façade (polyglot_groc.api, also the package's attributes), an example script that
uses it end to end, and keyword-only, documented workflow functions returning result objects."""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import polyglot_groc
from polyglot_groc import api

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ("train", "resume", "finetune", "load_result", "init_from_elmo", "evaluate", "tune_cache", "freq_bins",
             "curves", "export", "align", "align_many", "similarity", "lexicon_coverage", "features", "anchors",
             "align_layers", "probe")


def test_the_package_exposes_exactly_the_api() -> None:
    """One list of public names (polyglot_groc.public): the package's attributes and api's, each function
    behind the argument check and each type a class."""
    from polyglot_groc.public import PUBLIC

    assert api.__all__ == list(PUBLIC) and polyglot_groc.API_NAMES == set(PUBLIC)
    for name, kind in PUBLIC.items():
        assert getattr(polyglot_groc, name) is getattr(api, name)
        obj = getattr(api, name)
        if kind == "function":
            assert getattr(obj, "__groc_checked__", False) and not isinstance(obj, type), name
        else:
            assert isinstance(obj, type), name


def test_every_workflow_is_keyword_only_typed_documented_and_returns_a_frozen_result() -> None:
    for name in WORKFLOWS:
        fn = getattr(api, name)
        sig = inspect.signature(fn)
        assert all(p.kind is p.KEYWORD_ONLY for p in sig.parameters.values()), name
        assert all(p.annotation is not p.empty for p in sig.parameters.values()), name
        assert fn.__doc__ and len(fn.__doc__.split()) > 20, name
        result = sig.return_annotation
        result = getattr(api, result) if isinstance(result, str) else result
        assert dataclasses.is_dataclass(result) and result.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
        assert callable(getattr(result, "to_dict", None)), name


def test_the_example_script_trains_evaluates_exports_and_aligns(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "python_api.py"), "--out", str(tmp_path / "ex"),
                           "--steps", "8", "--threads", "1"], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["steps"] == 8
    assert set(summary["test_perplexity"]) == {"en", "fr"}
    assert all(math.isfinite(v) for v in summary["open_vocabulary"].values())
    assert summary["exported"]["unseen_composed"] >= 1
    assert 0.0 <= summary["align_p_at_1_csls"] <= 100.0
    for name in ("en.vec", "fr.vec", "unseen.fr.vec", "align/result.json"):
        assert (tmp_path / "ex" / name).is_file(), name
