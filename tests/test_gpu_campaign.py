"""benchmarks/gpu_campaign.py on CPU: every stage's dry run, the ledger rules, the device commands.

The dry run of each stage (``run STAGE --dry-run``) calls the same benchmark functions as the GPU
stage with toy sizes on toy slices of the shared data (``prepare --toy``), in a fresh process that
refuses to import the packages the GPU machine lacks and the stage does not carry
(``--block-missing``), so the campaign cannot rot and its wheel lists stay complete. The dry runs
go two at a time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from benchmarks import gpu_campaign as gc
from benchmarks.common import script_main

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "gpu_campaign.py"
DATA = Path(os.environ.get("POLYGLOT_GROC_DATA", "/nonexistent"))
needs_data = pytest.mark.skipif(not (DATA / "text" / "ptb").is_dir(),
                                reason="needs POLYGLOT_GROC_DATA (the shared data) for the toy slices")
#: Which benchmark scripts each stage must call (the real stage calls the same ones).
SCRIPTS = {"cuda-tests": {"pytest"}, "throughput": {"benchmarks/throughput.py"},
           "thesis-align": {"benchmarks/polyglot_table.py", "benchmarks/align_polyglot.py"},
           "ptb-paper": {"benchmarks/ptb_convergence.py"}, "elmo-init": {"benchmarks/elmo_init.py"},
           "family": {"benchmarks/output_family.py"}}


def _env(camp: Path, ledger: Path, results: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "GPU_CAMPAIGN_DIR": str(camp),
            "GPU_CAMPAIGN_LEDGER": str(ledger), "GPU_CAMPAIGN_RESULTS": str(results), "POLYGLOT_GROC_DATA": str(DATA)}


def _cli(*argv: str | Path) -> tuple[int, dict[str, Any] | None, str]:
    """Run ``gpu_campaign.main`` as its script does (script_main): exit code, JSON printed, stderr."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        script_main(lambda: gc.main([str(a) for a in argv]))
    text = out.getvalue()
    obj = json.loads(text[text.index("{"):]) if "{" in text else None
    return int(exc.value.code or 0), obj, err.getvalue()


@pytest.fixture(scope="module")
def dry(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``prepare --toy``, then every stage's dry run, two processes at a time; cuda-tests goes through
    ``run --background`` and ``poll`` (the path a long GPU stage can take)."""
    if not (DATA / "text" / "ptb").is_dir():
        pytest.skip("needs POLYGLOT_GROC_DATA (the shared data) for the toy slices")
    root = tmp_path_factory.mktemp("campaign")
    camp, ledger, results = root / "camp", root / "ledger.json", root / "results"
    ledger.write_text((gc.RESULTS / "gpu_campaign_ledger.json").read_text(encoding="utf-8"), encoding="utf-8")
    env = _env(camp, ledger, results)
    script = [sys.executable, str(SCRIPT)]
    background = subprocess.run([*script, "run", "cuda-tests", "--dry-run", "--background"], env=env,
                                capture_output=True, text=True, check=False)
    prep = subprocess.run([*script, "prepare", "--toy"], env=env, capture_output=True, text=True, check=False)
    assert prep.returncode == 0, prep.stderr[-3000:]
    codes: dict[str, int] = {}
    todo = [s for s in gc.STAGES if s != "cuda-tests"]
    running: dict[str, tuple[subprocess.Popen[bytes], Any]] = {}
    while todo or running:
        while todo and len(running) < 2:
            stage = todo.pop(0)
            log = open(root / f"{stage}.log", "wb")  # noqa: SIM115 - closed when the process ends
            running[stage] = (subprocess.Popen([*script, "run", stage, "--dry-run", "--block-missing",
                                                "--out", str(root / "out" / stage)], env=env, stdout=log,
                                               stderr=subprocess.STDOUT), log)
        for stage, (proc, log) in list(running.items()):
            if proc.poll() is not None:
                codes[stage] = proc.returncode
                log.close()
                del running[stage]
        time.sleep(0.2)
    poll = subprocess.run([*script, "poll", "cuda-tests", "--dry-run", "--wait", "300", "--out",
                           str(root / "out" / "cuda-tests")], env=env, capture_output=True, text=True, check=False)
    (root / "cuda-tests.log").write_text(poll.stdout + poll.stderr, encoding="utf-8")
    codes["cuda-tests"] = poll.returncode
    return {"root": root, "camp": camp, "ledger": ledger, "results": results, "codes": codes, "prepare": prep.stdout,
            "background": background, "poll": poll}


@needs_data
@pytest.mark.parametrize("stage", list(gc.STAGES))
def test_dry_run_of_each_stage_writes_the_real_stages_keys(dry: dict[str, Any], stage: str) -> None:
    log = (dry["root"] / f"{stage}.log").read_text(encoding="utf-8", errors="replace")
    assert dry["codes"][stage] == 0, log[-4000:]
    out = dry["root"] / "out" / stage
    result = json.loads((out / f"{stage}.json").read_text(encoding="utf-8"))
    assert tuple(result) == gc.RESULT_KEYS
    assert set(result["summary"]) == set(gc.SUMMARY_KEYS[stage]) and result["summary"]["ok"] is True
    c = result["campaign"]
    assert c["dry_run"] is True and c["device"] == "cpu" and c["cuda_device_name"] is None
    assert c["device_command"] == gc.device_command(gc.STAGES[stage]) and c["carry"] == gc.STAGES[stage].carry
    assert all((out / name).is_file() and (out / name).stat().st_size > 0 for name in c["files"])
    assert {i["script"] for i in result["invocations"]} == SCRIPTS[stage]
    s = result["summary"]
    if stage == "cuda-tests":  # every cuda case is collected by -m cuda and skips on CPU
        assert s["skipped"] == len(s["tests"]) > 0 and s["passed"] == s["failed"] == s["error"] == 0
    elif stage == "throughput":
        assert set(s["configs"]) == set(gc.THROUGHPUT_CONFIGS)
        for label, conf in s["configs"].items():
            assert set(conf["train_tokens_per_s"]) == set(gc.THROUGHPUT_CONFIGS[label][3]), label
            assert conf["groc_over_lookup_train"] > 0 and isinstance(conf["target_met"], bool)
        assert s["configs"]["fp32"]["train_ratio_to_lookup"]["groc-lex"] > 0  # the carried wordnet worked
        assert {i["argv"][i["argv"].index("--size") + 1] for i in result["invocations"]} == {"paper"}
    elif stage == "thesis-align":
        for tgt in gc.ALIGN_TARGETS:
            runs = s["table_5_2_test_perplexity"][f"en+{tgt}"]
            assert set(runs) == {"groc", "lookup"}
            assert all(set(r["test_perplexity"]) == {"en", tgt} for r in runs.values())
            rows = s["table_5_4_alignment"][f"en-{tgt}"]["rows"]
            assert {"identical string", "char 3-gram"} <= {r["model"] for r in rows}
            assert all("non_identical_p_at_5" in r for r in rows)
    elif stage == "ptb-paper":
        assert set(s["models"]) == {"tied", "groc", "groc-lex"} and s["unfinished"] == []
        argv = result["invocations"][0]["argv"]
        assert {"--early-stopping", "--resume", "--lexicon", "--max-minutes"} <= set(argv)
        assert (out / "ptb-paper.png").stat().st_size > 0
    elif stage == "elmo-init":
        assert s["budget"] == 4 and s["groc_scratch"]["B"] is not None
    elif stage == "family":
        from benchmarks.output_family import ROWS

        assert set(s["models"]) == set(ROWS) and "| groc |" in (out / "family.md").read_text(encoding="utf-8")


@needs_data
def test_dry_runs_never_touch_the_ledger_and_cannot_be_recorded(dry: dict[str, Any]) -> None:
    committed = (gc.RESULTS / "gpu_campaign_ledger.json").read_text(encoding="utf-8")
    assert dry["ledger"].read_text(encoding="utf-8") == committed
    code, _, err = _cli("--ledger", dry["ledger"], "--results", dry["results"], "record",
                        dry["root"] / "out" / "family")
    assert code == 2 and err.startswith("error: family: a run on cpu (dry run: True) cannot mark a GPU stage done")
    assert "\n" not in err.strip() and dry["ledger"].read_text(encoding="utf-8") == committed
    assert not dry["results"].exists()


@needs_data
def test_record_files_a_cuda_run_and_next_moves_on(dry: dict[str, Any], tmp_path: Path) -> None:
    """The GPU path's bookkeeping on CPU: a result as a CUDA run writes it is filed and marks its stage."""
    src = dry["root"] / "out" / "cuda-tests" / "cuda-tests.json"
    result = json.loads(src.read_text(encoding="utf-8"))
    result["campaign"].update(dry_run=False, device="cuda:NVIDIA H100 80GB HBM3",
                              cuda_device_name="NVIDIA H100 80GB HBM3")
    result["summary"].update(passed=6, skipped=0)
    folder = tmp_path / "files_at"
    folder.mkdir()
    (folder / "cuda-tests.json").write_text(json.dumps(result), encoding="utf-8")
    ledger, results = tmp_path / "ledger.json", tmp_path / "results"
    code, status, _ = _cli("--ledger", ledger, "status")
    assert code == 0 and status is not None and status["next"] == "cuda-tests"
    code, out, err = _cli("--ledger", ledger, "--results", results, "record", folder)
    assert code == 0, err
    assert out is not None and out["recorded"][0]["status"] == "done" and out["next"] == "throughput"
    day = result["campaign"]["finished"][:10]
    assert (results / day / "gpu_campaign_cuda-tests.json").is_file()
    entry = json.loads(ledger.read_text(encoding="utf-8"))["stages"]["cuda-tests"]
    assert entry["device"] == "NVIDIA H100 80GB HBM3" and entry["command"] == result["campaign"]["device_command"]
    assert entry["files"] == [str(results / day / "gpu_campaign_cuda-tests.json")] and len(entry["runs"]) == 1
    code, nxt, _ = _cli("--ledger", ledger, "next")
    assert code == 0 and nxt is not None and nxt["next"] == "throughput"
    assert nxt["carry"] == gc.STAGES["throughput"].carry
    # Recording the same run again keeps one run; a failed GPU run is "failed", not done, and not next.
    result["summary"]["ok"] = False
    result["campaign"]["finished"] = "2026-01-02T00:00:00+00:00"
    (folder / "cuda-tests.json").write_text(json.dumps(result), encoding="utf-8")
    assert _cli("--ledger", ledger, "--results", results, "record", folder)[0] == 0
    stages = json.loads(ledger.read_text(encoding="utf-8"))["stages"]
    assert stages["cuda-tests"]["status"] == "failed" and len(stages["cuda-tests"]["runs"]) == 2
    assert _cli("--ledger", ledger, "reset", "cuda-tests")[1] == {"stage": "cuda-tests", "status": "pending"}
    assert _cli("--ledger", ledger, "status")[1]["next"] == "cuda-tests"  # type: ignore[index]


@needs_data
def test_background_run_is_collected_by_poll(dry: dict[str, Any]) -> None:
    assert dry["background"].returncode == 0, dry["background"].stderr[-2000:]
    started = json.loads(dry["background"].stdout)
    assert started["background_pid"] > 0 and "poll cuda-tests" in started["poll"]
    assert dry["poll"].returncode == 0, dry["poll"].stderr[-2000:]
    polled = json.loads(dry["poll"].stdout)
    assert polled["finished"] is True and polled["files"] == ["cuda-tests.json"]
    out = dry["root"] / "out" / "cuda-tests"
    assert json.loads((out / "cuda-tests.json").read_text(encoding="utf-8"))["campaign"]["dry_run"] is True
    assert "skipped" in (out / "cuda-tests.log").read_text(encoding="utf-8")


@needs_data
def test_throughput_skips_the_configs_a_call_has_no_time_for(dry: dict[str, Any], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("POLYGLOT_GROC_DATA", "POLYGLOT_GROC_CACHE", "POLYGLOT_GROC_WN_DIR"):  # run sets them
        monkeypatch.setenv(key, os.environ.get(key, ""))
    out = gc.main(["--campaign-dir", str(dry["camp"]), "--ledger", str(tmp_path / "l.json"), "run", "throughput",
                   "--dry-run", "--minutes", "0", "--out", str(tmp_path), "--work", str(tmp_path / "work")])
    configs = out["summary"]["configs"]
    first, *rest = gc.THROUGHPUT_CONFIGS
    assert "skipped" not in configs[first] and all("out of time" in configs[k]["skipped"] for k in rest)
    assert out["summary"]["target_met_everywhere"] is False and (tmp_path / "throughput.png").is_file()


@needs_data
def test_prepare_reports_sizes_and_refuses_an_over_size_carry(dry: dict[str, Any], tmp_path: Path) -> None:
    report = json.loads(dry["prepare"])
    assert report["toy"] is True and set(report["stages"]) == set(gc.STAGES)
    assert report["stages"]["throughput"]["wheel_plan"]["wn"] == gc.pinned_versions(ROOT / "constraints.txt")["wn"]
    info = json.loads((dry["camp"] / "toy" / "data" / "elmo-init" / "slices.json").read_text(encoding="utf-8"))
    assert set(info["slices"]["corpora"]) == {"en", "es"}
    code, _, err = _cli("--campaign-dir", tmp_path, "prepare", "family", "--toy", "--data-root", DATA,
                        "--carry-limit-mib", "0.001")
    assert code == 2 and err.startswith("error: carry over the device tool's limit: family ") and "MiB" in err
    assert "\n" not in err.strip()


def test_a_stage_that_crashes_still_writes_its_json_and_records_as_failed(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("POLYGLOT_GROC_DATA", "POLYGLOT_GROC_CACHE", "POLYGLOT_GROC_WN_DIR"):  # run sets them
        monkeypatch.setenv(key, os.environ.get(key, ""))

    def boom(ctx: gc.Ctx) -> tuple[dict[str, Any], dict[str, Any]]:
        ctx.invocations.append({"script": "pytest", "argv": [], "seconds": 1.0})
        raise RuntimeError("device lost")

    monkeypatch.setitem(gc.RUNNERS, "cuda-tests", boom)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="device lost"):
        gc.main(["--campaign-dir", str(tmp_path), "--ledger", str(tmp_path / "l.json"), "run", "cuda-tests",
                 "--dry-run", "--out", str(out)])
    result = json.loads((out / "cuda-tests.json").read_text(encoding="utf-8"))
    assert result["summary"] == {"ok": False, "error": "RuntimeError: device lost"}
    assert "device lost" in result["results"]["traceback"] and result["invocations"][0]["script"] == "pytest"
    assert not (tmp_path / "l.json").exists()  # a dry run, even a failed one, leaves the ledger alone
    result["campaign"].update(dry_run=False, device="cuda:NVIDIA H100", cuda_device_name="NVIDIA H100")
    (out / "cuda-tests.json").write_text(json.dumps(result), encoding="utf-8")
    code, rec, _ = _cli("--ledger", tmp_path / "l.json", "--results", tmp_path / "r", "record", out)
    assert code == 0 and rec is not None and rec["recorded"][0]["status"] == "failed"
    assert rec["next"] == "throughput"  # a failed stage waits for `reset`, it is not retried blindly


def test_bad_input_is_one_error_line_and_exit_2(tmp_path: Path) -> None:
    for argv in (["run", "warp-drive", "--dry-run"], ["commands", "nope"], ["reset", "nope"],
                 ["prepare", "nope", "--toy"]):
        code, _, err = _cli("--campaign-dir", tmp_path, "--ledger", tmp_path / "l.json", *argv)
        assert code == 2 and err.startswith("error: unknown stage") and "\n" not in err.strip(), argv
    code, _, err = _cli("--campaign-dir", tmp_path, "run", "family", "--dry-run", "--out", tmp_path / "o")
    assert code == 2 and err.startswith("error: missing prepared data") and "prepare family --toy" in err
    code, _, err = _cli("--campaign-dir", tmp_path, "record", tmp_path)
    assert code == 2 and err.startswith("error: ") and "no gpu_campaign stage result" in err
    if not torch.cuda.is_available():
        code, _, err = _cli("--campaign-dir", tmp_path, "--ledger", tmp_path / "l.json", "run", "cuda-tests")
        assert code == 2 and "needs CUDA" in err and not (tmp_path / "l.json").exists()


def test_device_commands_install_the_carried_wheels_and_fit_the_tool() -> None:
    prefix = "python3 -m pip install -q --no-index --no-deps --target /tmp/site .campaign/whl/{}/*.whl && " \
             "export PYTHONPATH=/tmp/site:$PWD && "
    for stage in gc.STAGES.values():
        command = gc.device_command(stage)
        assert len(command) <= gc.COMMAND_MAX_CHARS and "$OUT" in command
        assert command.endswith(f"python3 benchmarks/gpu_campaign.py run {stage.name} --out $OUT")
        if stage.packages:
            assert command.startswith(prefix.format(stage.name)) and f".campaign/whl/{stage.name}" in stage.carry
        else:
            assert command.startswith("export PYTHONPATH=$PWD && ")
        assert len(stage.carry) <= 8 and all(p.startswith(".campaign/") for p in stage.carry)
    code, out, _ = _cli("commands", "ptb-paper")
    assert code == 0 and out is not None and "poll ptb-paper" in out["stages"][0]["background_command"]
    assert gc.parse_args(["--prepare", "family", "--toy"]).command == "prepare"


def test_wheel_plans_carry_only_what_the_gpu_machine_lacks() -> None:
    pins = gc.pinned_versions(ROOT / "constraints.txt")
    present = gc.requirement_closure(gc.GPU_HAS)
    for stage in gc.STAGES.values():
        plan = gc.wheel_plan(stage)
        assert set(stage.packages) <= set(plan) and not set(plan) & set(present), stage.name
        assert all(v == pins[n] for n, v in plan.items() if n in pins), stage.name
    assert {"wn", "httpx", "nltk", "regex"} <= set(gc.wheel_plan(gc.STAGES["ptb-paper"]))
    assert {"torch", "numpy", "scipy"} <= set(present)
    assert gc.wheel_plan(gc.STAGES["thesis-align"]) == {"faiss-cpu": pins["faiss-cpu"]}
    cmd = gc.pip_download_command({"wn": "1.1.1"}, Path("/x"))
    joined = " ".join(cmd[1:])
    assert joined.startswith("-m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp "
                             "--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 "
                             "--platform manylinux2014_x86_64 -d /x wn==1.1.1")


def test_committed_ledger_lists_every_stage_and_marks_only_cuda_runs_done() -> None:
    ledger = json.loads((gc.RESULTS / "gpu_campaign_ledger.json").read_text(encoding="utf-8"))
    assert list(ledger["stages"]) == list(gc.STAGES)
    for name, entry in ledger["stages"].items():
        assert entry["status"] in ("pending", "done", "failed"), name
        if entry["status"] != "pending":
            assert entry["device"] and all(r["device"] for r in entry["runs"]), name
