"""benchmarks/thesis_scale.py at tiny size: a model its CPU cap stopped, continued in a new process,
ends exactly where one uninterrupted run ends; the report's tables and claims read the protocols."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "tests" / "data" / "tiny"


def _overrides() -> dict[str, Any]:
    return {"data.root": str(TINY), "data.tokenize": "whitespace", "data.vocab_mode": "closed",
            "model.d": 8, "model.prefix.hidden": 12, "model.surface.filters": [[1, 4], [2, 4]],
            "model.surface.char_dim": 4, "train.batch_size": 4, "train.bptt": 6, "train.eval_batch_size": 2,
            "train.max_epochs": 3, "train.max_steps": 0, "train.eval_every": 0, "train.checkpoint_minutes": 0.0,
            "train.threads": 1, "train.device": "cpu", "train.log_every": 0, "train.lr_patience": 50,
            "train.stop_patience": 50, "train.softmax": "sampled", "train.sampled_k": 16, "train.seed": 3}


SPEC = {"name": "groc_en+fr", "kind": "groc", "langs": ["en", "fr"], "target": "fr", "setting": "EN+tgt"}


def test_a_capped_model_continued_in_a_new_process_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    from benchmarks.thesis_scale import train_model

    whole = train_model(dict(SPEC), _overrides(), str(tmp_path / "a"), 0.0, False)
    assert whole["stop_reason"] == "max_epochs" and whole["epochs"] == pytest.approx(3.0)

    # A cap of a microsecond stops the run after its first step: validated, checkpointed, reported.
    capped = train_model(dict(SPEC), _overrides(), str(tmp_path / "b"), 1e-6, False)
    assert capped["stop_reason"] == "cpu_cap" and capped["steps"] < whole["steps"]
    stored = json.loads((tmp_path / "b" / "runs" / "groc_en+fr" / "protocol.json").read_text())
    assert stored["stop_reason"] == "cpu_cap"

    # A new process, no cap: it goes on from last.pt to the same end.
    code = (f"import json, sys; sys.path.insert(0, {str(REPO)!r}); from benchmarks.thesis_scale import train_model; "
            f"print(json.dumps(train_model({dict(SPEC)!r}, json.loads({json.dumps(_overrides())!r}), "
            f"{str(tmp_path / 'b')!r}, 0.0, False)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    resumed = json.loads(proc.stdout.strip().splitlines()[-1])
    assert resumed["stop_reason"] == "max_epochs" and resumed["steps"] == whole["steps"]
    assert resumed["curve"]["valid_pooled"] == whole["curve"]["valid_pooled"]
    assert resumed["test_perplexity"] == whole["test_perplexity"]
    assert resumed["cpu_seconds"] > capped["cpu_seconds"]  # the first invocation's CPU is counted in
    a = torch.load(tmp_path / "a" / "runs" / "groc_en+fr" / "best.pt", weights_only=True)["bundle"]["model_state"]
    b = torch.load(tmp_path / "b" / "runs" / "groc_en+fr" / "best.pt", weights_only=True)["bundle"]["model_state"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    # A finished model is read back, not retrained; collect reports it as it stands.
    again = train_model(dict(SPEC), _overrides(), str(tmp_path / "b"), 0.0, False)
    assert again == resumed
    assert train_model(dict(SPEC), _overrides(), str(tmp_path / "b"), 0.0, True) == resumed


def test_claims_say_reproduced_reversed_or_not_measurable() -> None:
    from benchmarks.thesis_scale import claims

    t52 = {"groc_mono": {"ours": 200.0}, "elmo_mono": {"ours": 220.0}, "lookup_mono": {"ours": 300.0},
           "groc_en": {"ours": 190.0}, "elmo_en": {"ours": 230.0}, "lookup_en": {"ours": 280.0},
           "groc-lex_en": {"ours": None}}
    ali = {"groc": {"csls_p5": 40.0, "char3gram_p5": 30.0}, "lookup": {"csls_p5": 45.0}}
    t56 = {"finetune_to_scratch": {"step_ratio": 0.5, "cpu_ratio": 0.6, "cpu_ratio_incl_elmo_training": 1.4}}
    out = {c["claim"].split(": ", 1)[1]: c["verdict"] for c in claims(t52, ali, t56, "fr")}
    assert out["GroC < ELMo-like < lookup (test perplexity)"] == "reproduced"
    assert out["polyglot EN+fr < mono, per kind"] == "partly"  # elmo 230 > 220
    assert out["GroC+lex < GroC (EN+fr)"] == "not measurable"
    assert out["GroC p@5 above lookup's and above the char 3-gram baseline"] == "reversed"
    assert out["ELMo-init reaches scratch GroC in fewer steps"] == "reproduced"


def test_a_run_recording_its_lexicon_resolved_is_continued_under_the_same_request() -> None:
    """A groc-lex run records the gloss wordnets it chose and its wn folder made absolute; the
    request that started it leaves them empty, and must still count as the same configuration."""
    import dataclasses

    from benchmarks.thesis_scale import _as_requested, _what_it_computes
    from polyglot_groc.config import load_config, merge_overrides

    asked = load_config(None, merge_overrides(_overrides(), {
        "model.kind": "groc-lex", "model.lexicon.backend": "wn", "model.lexicon.specs": ["omw-en:3.0"]}))
    lex = dataclasses.replace(asked.model.lexicon, gloss_specs=("omw-en:3.0",), wn_dir="/abs/wn")
    recorded = dataclasses.replace(asked, model=dataclasses.replace(asked.model, lexicon=lex))
    assert _what_it_computes(recorded) != _what_it_computes(asked)  # what the check used to compare
    assert _what_it_computes(_as_requested(recorded, asked)) == _what_it_computes(asked)
    other = load_config(None, merge_overrides(_overrides(), {
        "model.kind": "groc-lex", "model.lexicon.backend": "wn", "model.lexicon.specs": ["omw-en:3.0"],
        "model.d": 16}))
    assert _what_it_computes(_as_requested(recorded, other)) != _what_it_computes(other)


def test_an_earlier_reports_alignment_is_reused_only_for_the_same_checkpoints(tmp_path: Path) -> None:
    from benchmarks.common import BadInput
    from benchmarks.thesis_scale import earlier_alignment

    detail = {"models": {"groc": {"alignment": {"protocols": {}}}, "lookup": {"alignment": {"protocols": {}}}}}
    earlier = {"models": {"groc_en+fr": {"best_step": 100}, "lookup_en+fr": {"best_step": 40}},
               "tables": {"fr": {"alignment_detail": detail}}}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(earlier), encoding="utf-8")
    # A model the earlier report did not align (elmo2groc) may have trained since: it is not in Table 5.4.
    now = {"groc_en+fr": {"best_step": 100}, "lookup_en+fr": {"best_step": 40}, "elmo2groc_en+fr": {"best_step": 9}}
    got = earlier_alignment(path, "fr", now)
    assert got["models"] == detail["models"] and got["reused_from"] == str(path)
    with pytest.raises(BadInput, match=r"groc_en\+fr was aligned at best step 100, its best step is now 120"):
        earlier_alignment(path, "fr", {**now, "groc_en+fr": {"best_step": 120}})
    with pytest.raises(BadInput, match="not a thesis_scale report with target es"):
        earlier_alignment(path, "es", now)
