"""Nothing lost, nothing silently wrong (issue 26): one test per kind of failure, each reproduced.

- config values: every numeric key declares a range; random out-of-range values (hypothesis) are
  always exit 2 and one line, through the API and through ``train --set``;
- checkpoints: missing tensors, other shapes, unreadable vs corrupt files are one line in
  evaluate, export and resume;
- resume: a last.pt of another kind or a config.toml edited outside the stop limits is refused,
  naming the key;
- divergence: the message names the checkpoint that is good (none before the first, best.pt when
  last.pt was already NaN);
- all-or-none outputs under a SIGKILL (a subprocess killed mid-write), two concurrent writers
  (two processes) and a full disk (ENOSPC injected into fsync, where a real full disk fails);
- runs show/list on damaged records; torchrun errors from rank 0 only; FIFOs refused.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from groc_base.errors import CheckpointError, ConfigError
from polyglot_groc.cli import app
from polyglot_groc.config import EACH, PAIRS, RANGE, Range, RunConfig, load_config
from tests.conftest import SMALL, SMALL_OVERRIDES, TESTS, TINY, one_error_line

runner = CliRunner()
SETS = [x for s in SMALL for x in ("--set", s)]
REPO = TESTS.parent


def _train_args(out: Path, *more: str) -> list[str]:
    return ["train", "--langs", "en", "--data", str(TINY), "--out", str(out), "--threads", "1", *SETS, *more]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny groc run and a tiny tied run (2 steps each), trained once for the module."""
    from polyglot_groc.training.workflows import train

    root = tmp_path_factory.mktemp("rel-runs")
    out = {}
    for kind in ("groc", "tied"):
        train(out=root / kind, langs="en", data=TINY, model=kind, overrides=SMALL_OVERRIDES, max_steps=2,
              threads=1)
        out[kind] = root / kind
    return out


def _copy(run: Path, tmp_path: Path, name: str = "copy") -> Path:
    dst = tmp_path / name
    shutil.copytree(run, dst, ignore=shutil.ignore_patterns(".lock*"))
    return dst


# --------------------------------------------------------------------------- config ranges


def _ranged_fields(cfg: Any = None, where: str = "") -> Iterator[tuple[str, dataclasses.Field[Any], Any]]:
    cfg = RunConfig() if cfg is None else cfg
    for f in dataclasses.fields(cfg):
        val = getattr(cfg, f.name)
        if dataclasses.is_dataclass(val):
            yield from _ranged_fields(val, f"{where}{f.name}.")
        else:
            yield f"{where}{f.name}", f, val


def test_every_numeric_config_key_declares_its_range() -> None:
    """A new numeric key without a range fails here (the bilm config included, once nested in RunConfig)."""
    missing = []
    for key, f, val in _ranged_fields():
        numeric = isinstance(val, (int, float)) and not isinstance(val, bool)
        numbers = isinstance(val, tuple) and any(isinstance(v, (int, float, tuple)) for v in val)
        if numeric and not isinstance(f.metadata.get(RANGE), Range):
            missing.append(key)
        if numbers and not (f.metadata.get(EACH) or f.metadata.get(PAIRS)):
            missing.append(key)
        if numeric:
            assert val in f.metadata[RANGE], f"{key}'s default {val} is outside its own range"
    assert not missing, f"numeric config keys without a declared range: {missing}"


#: (dotted key, range, integer?) of every ranged scalar key.
RANGED = [(key, f.metadata[RANGE], isinstance(val, int)) for key, f, val in _ranged_fields()
          if RANGE in f.metadata]


@st.composite
def out_of_range(draw: st.DrawFn) -> tuple[str, Any]:
    key, rng, integer = draw(st.sampled_from(RANGED))
    below = draw(st.booleans())
    if integer:
        lo = int(rng.lo) - (0 if rng.lo_open else 1)
        hi = int(rng.hi) + (0 if rng.hi_open else 1)
        value = draw(st.integers(min_value=-(2**62), max_value=lo) if below else st.integers(min_value=hi,
                                                                                                  max_value=2**62))
        return key, value
    special = draw(st.sampled_from([None, math.nan, math.inf, -math.inf]))
    if special is not None:
        return key, special
    if below:
        return key, draw(st.floats(max_value=rng.lo, exclude_max=not rng.lo_open, min_value=-1e300))
    return key, draw(st.floats(min_value=rng.hi, exclude_min=not rng.hi_open, max_value=1e300))


@settings(max_examples=300, deadline=None)
@given(out_of_range())
def test_out_of_range_values_are_a_config_error_naming_the_key(case: tuple[str, Any]) -> None:
    key, value = case
    with pytest.raises(ConfigError) as info:
        load_config(None, {key: value})
    assert key in str(info.value) and "\n" not in str(info.value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=out_of_range())
def test_out_of_range_values_are_exit_2_and_one_line_from_train_set(case: tuple[str, Any], tmp_path: Path) -> None:
    key, value = case
    text = repr(value) if isinstance(value, float) else str(value)
    out = tmp_path / "never"
    # No flag that sets a key (--threads would win over --set train.threads).
    args = ["train", "--langs", "en", "--data", str(TINY), "--out", str(out), *SETS, "--set", f"{key}={text}"]
    line = one_error_line(runner.invoke(app, args))
    assert key in line, line
    assert not out.exists()


@pytest.mark.parametrize("args, needle", [
    (["--set", "model.surface.filters=[]"], "model.surface.filters"),
    (["--set", "model.surface.filters=[[0, 8]]"], "model.surface.filters"),
    (["--set", "model.surface.filters=[[2, -1]]"], "model.surface.filters"),
    (["--set", "model.surface.filters=[1, 2]"], "model.surface.filters"),
    (["--set", "model.surface.char_dim=0"], "model.surface.char_dim"),
    (["--set", "model.surface.chunk_size=0"], "model.surface.chunk_size"),
    (["--set", "model.surface.n_highway=-1"], "model.surface.n_highway"),
    (["--set", "model.output.depth=-1"], "model.output.depth"),
    (["--seed", "-1"], "train.seed"),
    (["--seed", str(2**32)], "train.seed"),
    (["--set", "train.lr=1e300"], "train.lr"),
    (["--set", "model.output.cutoffs=[0.5, -1]"], "model.output.cutoffs"),
])
def test_the_reported_config_values_are_one_line(args: list[str], needle: str, tmp_path: Path) -> None:
    line = one_error_line(runner.invoke(app, _train_args(tmp_path / "r", *args)))
    assert needle in line and "Traceback" not in line
    assert not (tmp_path / "r").exists()


def test_threads_beyond_their_range_are_one_line(runs: dict[str, Path]) -> None:
    line = one_error_line(runner.invoke(app, ["evaluate", str(runs["groc"]), "--threads", str(10**12)]))
    assert "--threads" in line


def test_a_huge_bin_count_is_refused_not_built() -> None:
    from groc_base.errors import InputError
    from polyglot_groc.analysis.freqbins import MAX_BINS, bin_edges

    assert len(bin_edges(50, MAX_BINS)) == MAX_BINS + 1
    with pytest.raises(InputError, match="bin count"):
        bin_edges(50, 10**12)  # built its edges for ever before


def test_a_model_too_large_to_allocate_says_what_it_would_need(tmp_path: Path) -> None:
    line = one_error_line(runner.invoke(app, _train_args(tmp_path / "r", "--set", "model.d=1000000")))
    assert "does not fit in memory" in line and "GiB" in line and "parameters" in line
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------- checkpoints


def _edit_checkpoint(path: Path, edit: Any) -> None:
    payload = torch.load(path, weights_only=True)
    edit(payload["bundle"]["model_state"])
    torch.save(payload, path)


def _drop_first(state: dict[str, torch.Tensor]) -> None:
    del state[next(iter(state))]


def _reshape_first(state: dict[str, torch.Tensor]) -> None:
    key = next(iter(state))
    state[key] = torch.zeros(3, 5, 7)


@pytest.mark.parametrize("edit, needle", [(_drop_first, "missing"), (_reshape_first, "another shape")])
def test_a_checkpoint_that_does_not_fit_its_model_is_one_line_everywhere(
        runs: dict[str, Path], tmp_path: Path, edit: Any, needle: str) -> None:
    run = _copy(runs["groc"], tmp_path)
    for name in ("best.pt", "last.pt"):
        _edit_checkpoint(run / name, edit)
    for args in (["evaluate", str(run), "--threads", "1"],
                 ["export", str(run), "--lang", "en", "--vocab", "--out", str(tmp_path / "x.vec")],
                 ["train", "--resume", str(run), "--max-steps", "4"]):
        line = one_error_line(runner.invoke(app, args))
        assert needle in line and "does not fit the model" in line, (args, line)
    assert not (tmp_path / "x.vec").exists()


def test_unreadable_is_not_called_corrupt(runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(runs["groc"], tmp_path)
    (run / "best.pt").write_bytes((run / "best.pt").read_bytes()[:200])  # truncated
    line = one_error_line(runner.invoke(app, ["evaluate", str(run)]))
    assert "is corrupt" in line
    (run / "best.pt").unlink()
    os.mkfifo(run / "best.pt")  # would block torch.load forever
    line = one_error_line(runner.invoke(app, ["evaluate", str(run)]))
    assert "not a regular file" in line and "corrupt" not in line
    if os.geteuid() != 0:  # root reads whatever the mode says
        (run / "best.pt").unlink()
        shutil.copy(runs["groc"] / "best.pt", run / "best.pt")
        (run / "best.pt").chmod(0)
        try:
            line = one_error_line(runner.invoke(app, ["evaluate", str(run)]))
        finally:
            (run / "best.pt").chmod(0o644)
        assert "cannot be read" in line and "corrupt" not in line


def test_a_payload_without_its_model_is_a_checkpoint_error(tmp_path: Path) -> None:
    from polyglot_groc.model.bundle import bundle_from_payload

    with pytest.raises(CheckpointError, match="lacks its model"):
        bundle_from_payload({"format_version": 1}, tmp_path / "x.pt")


# --------------------------------------------------------------------------- resume


def test_resume_refuses_a_checkpoint_of_another_kind(runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(runs["groc"], tmp_path)
    shutil.copy(runs["tied"] / "last.pt", run / "last.pt")
    line = one_error_line(runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4"]))
    assert "model.kind = 'tied' in last.pt, 'groc' in config.toml" in line, line


@pytest.mark.parametrize("key, old, new", [
    ("model.d", "d = 16", "d = 32"),
    ("train.lr", "lr = 0.005", "lr = 0.05"),
    ("train.batch_size", "batch_size = 4", "batch_size = 6"),
])
def test_resume_refuses_a_changed_config_key_naming_it(runs: dict[str, Path], tmp_path: Path, key: str, old: str,
                                                      new: str) -> None:
    run = _copy(runs["groc"], tmp_path)
    text = (run / "config.toml").read_text(encoding="utf-8")
    assert f"\n{old}\n" in text
    (run / "config.toml").write_text(text.replace(f"\n{old}\n", f"\n{new}\n", 1), encoding="utf-8")
    before = (run / "last.pt").read_bytes()
    line = one_error_line(runner.invoke(app, ["train", "--resume", str(run), "--max-steps", "4"]))
    assert key in line and "cannot be resumed" in line, line
    assert (run / "last.pt").read_bytes() == before  # nothing trained, nothing written


def test_resume_honours_the_stop_limits_in_config_toml(runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(runs["groc"], tmp_path)
    text = (run / "config.toml").read_text(encoding="utf-8")
    (run / "config.toml").write_text(text.replace("\nmax_steps = 2\n", "\nmax_steps = 3\n", 1), encoding="utf-8")
    (run / "result.json").unlink()  # as if killed after its checkpoint
    res = runner.invoke(app, ["train", "--resume", str(run)])
    assert res.exit_code == 0, res.output
    assert json.loads((run / "result.json").read_text())["steps"] == 3


# --------------------------------------------------------------------------- divergence


def _nan_loss_from(monkeypatch: pytest.MonkeyPatch, first_bad: int) -> None:
    from polyglot_groc.model.lm import LanguageModel

    real = LanguageModel.forward
    calls = {"n": 0}

    def forward(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        out = real(self, *args, **kwargs)
        if self.training:
            calls["n"] += 1
            if calls["n"] >= first_bad and out.loss is not None:
                out.loss = out.loss * float("nan")
        return out

    monkeypatch.setattr(LanguageModel, "forward", forward)


def test_divergence_before_the_first_checkpoint_names_no_checkpoint(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _nan_loss_from(monkeypatch, 1)
    res = runner.invoke(app, _train_args(tmp_path / "r", "--max-steps", "6", "--set", "train.eval_every=4"))
    assert res.exit_code == 3, res.output
    assert "nothing was kept" in res.stderr and "last.pt is the last good state" not in res.stderr
    assert not (tmp_path / "r" / "last.pt").exists()


def test_a_nan_validation_is_no_good_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A finite loss with a NaN validation perplexity stops as diverged and writes no checkpoint."""
    import polyglot_groc.training.trainer as trainer_module

    real = trainer_module.pooled_nll
    calls = {"n": 0}

    def pooled(results: Any) -> float:
        calls["n"] += 1
        return float("nan") if calls["n"] >= 2 else real(results)

    monkeypatch.setattr(trainer_module, "pooled_nll", pooled)
    res = runner.invoke(app, _train_args(tmp_path / "r", "--max-steps", "8", "--set", "train.eval_every=2"))
    assert res.exit_code == 3, res.output
    assert "last.pt (step 2) is the last good state" in res.stderr, res.stderr
    payload = torch.load(tmp_path / "r" / "last.pt", weights_only=True)
    assert payload["step"] == 2


def test_a_huge_lr_in_range_is_the_documented_exit_3_beyond_it_exit_2(tmp_path: Path) -> None:
    """train.lr=1000 (the top of its range) blows the loss up: exit 3, as documented; 1e300 is refused."""
    res = runner.invoke(app, _train_args(tmp_path / "r", "--max-steps", "10", "--set", "train.lr=1000",
                                         "--set", "train.clip=0", "--set", "train.eval_every=10"))
    assert res.exit_code == 3, res.output
    assert "training diverged at step 10" in res.stderr and "Traceback" not in res.output
    line = one_error_line(runner.invoke(app, _train_args(tmp_path / "s", "--set", "train.lr=1e300")))
    assert "train.lr" in line and "(0, 1000]" in line


def test_a_nan_last_checkpoint_is_never_called_good(tmp_path: Path) -> None:
    """Runs written before the check above may hold a last.pt whose validation was NaN: best.pt is named."""
    from polyglot_groc.training.trainer import TrainResult

    for name in ("last.pt", "best.pt"):
        (tmp_path / name).write_bytes(b"x")
    history = [{"step": 2, "valid_nll": 3.0}, {"step": 4, "valid_nll": None}]
    result = TrainResult(tmp_path, 5, 1.0, "diverged", 10, 1.0, 1.0, {}, {}, history)
    line = result.divergence_report()
    assert "last.pt (step 4) already had a non-finite validation perplexity" in line
    assert "best.pt (step 2) is the last good state" in line


# --------------------------------------------------------------------------- all or none: kill, concurrency, disk


def _shared_text(tmp_path: Path) -> Path:
    palito = tmp_path / "shared" / "text" / "palito"
    palito.mkdir(parents=True)
    lines = [f"Ang bahay {i} ay malaki ." for i in range(300)]
    (palito / "wiki_parallel.tl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "shared"


#: ``data prepare`` in a subprocess that stops after writing train.txt: it touches $MARK, then waits
#: for $GO to exist (or is killed there).
PAUSED_PREPARE = """
import os, sys, time
import langpairs.prepare as p
real = p.atomic_write_bytes
def paused(path, data):
    real(path, data)
    if path.name == "train.txt":
        open(os.environ["MARK"], "w").close()
        while not os.path.exists(os.environ["GO"]):
            time.sleep(0.05)
p.atomic_write_bytes = paused
from polyglot_groc.cli import app
app(sys.argv[1:], prog_name="polyglot-groc")
"""


def _paused_prepare(tmp_path: Path, shared: Path, out: Path) -> tuple[subprocess.Popen[str], Path, Path]:
    mark, go = tmp_path / "mark", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MARK": str(mark), "GO": str(go), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-c", PAUSED_PREPARE, "data", "prepare", "--langs", "tl", "--data",
                             str(shared), "--out", str(out), "--train-tokens", "300", "--eval-tokens", "50"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not mark.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the subprocess never reached its pause"
        time.sleep(0.05)
    return proc, mark, go


def _prepare(shared: Path, out: Path, *more: str) -> Any:
    return runner.invoke(app, ["data", "prepare", "--langs", "tl", "--data", str(shared), "--out", str(out),
                               "--train-tokens", "300", "--eval-tokens", "50", *more])


def test_data_prepare_killed_mid_write_leaves_nothing_and_the_rerun_sweeps(tmp_path: Path) -> None:
    shared, out = _shared_text(tmp_path), tmp_path / "corpora"
    proc, _, _ = _paused_prepare(tmp_path, shared, out)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert not (out / "tl").exists() and not (out / "prepare.json").exists()
    assert [p.name for p in out.iterdir() if ".tmp" in p.name]  # the killed writer's folder
    res = _prepare(shared, out)  # no --overwrite needed: nothing was published
    assert res.exit_code == 0, res.output
    assert (out / "tl" / "train.txt").is_file() and "tl" in json.loads((out / "prepare.json").read_text())["languages"]
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


def test_two_concurrent_data_prepares_cannot_mix(tmp_path: Path) -> None:
    shared, out = _shared_text(tmp_path), tmp_path / "corpora"
    proc, _, go = _paused_prepare(tmp_path, shared, out)
    try:
        second = _prepare(shared, out)  # runs to the end while the first is paused mid-write
        assert second.exit_code == 0, second.output
        published = (out / "tl" / "train.txt").read_bytes()
    finally:
        go.touch()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "written by another process" in lines[0], err
    assert (out / "tl" / "train.txt").read_bytes() == published
    assert not [p for p in out.iterdir() if ".tmp" in p.name]


@pytest.fixture
def full_disk_after(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``full_disk_after(n)``: every fsync after the first n fails with ENOSPC (where a full disk fails
    a delayed-allocation file system); the OSError names no file, as a real one does."""
    import groc_base.fileio as fileio

    real = os.fsync

    def arm(n: int) -> None:
        calls = {"n": 0}

        def fsync(fd: int) -> None:
            calls["n"] += 1
            if calls["n"] > n:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(fd)

        monkeypatch.setattr(fileio.os, "fsync", fsync)

    return arm


def test_data_prepare_on_a_full_disk_leaves_the_output_as_it_was(tmp_path: Path, full_disk_after: Any) -> None:
    shared, out = _shared_text(tmp_path), tmp_path / "corpora"
    full_disk_after(1)  # train.txt is written, valid.txt is not
    line = one_error_line(_prepare(shared, out))
    assert "disk is full" in line and "valid.txt" in line and "unknown path" not in line and ".tmp" not in line
    assert not (out / "tl").exists() and not (out / "prepare.json").exists()
    full_disk_after(10**6)
    assert _prepare(shared, out).exit_code == 0  # the re-run is not refused


def test_train_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path, full_disk_after: Any) -> None:
    full_disk_after(4)  # config.toml, data-fingerprint.json, metrics.jsonl and curves.png written, last.pt not
    res = runner.invoke(app, _train_args(tmp_path / "r", "--max-steps", "2"))
    assert res.exit_code == 2, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and res.stderr.strip().splitlines()[-1] == errors[0], res.stderr  # after the progress
    assert "last.pt" in errors[0] and "disk is full" in errors[0] and "unknown path" not in errors[0]
    assert ".tmp" not in errors[0]
    assert not (tmp_path / "r").exists()  # stopped before its first checkpoint: nothing left


def test_os_errors_without_a_path_never_say_unknown_path() -> None:
    from polyglot_groc.commands._common import os_error_message

    message = os_error_message(OSError(errno.ENOSPC, "No space left on device"))
    assert "unknown path" not in message and "disk is full" in message


@pytest.fixture(scope="module")
def elmo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from polyglot_groc.training.workflows import train

    out = tmp_path_factory.mktemp("rel-elmo") / "elmo"
    train(out=out, langs="en", data=TINY, model="elmo", overrides=SMALL_OVERRIDES, max_steps=2, threads=1)
    return out


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_init_from_elmo_without_cuda_leaves_no_lock(elmo_run: Path, tmp_path: Path) -> None:
    line = one_error_line(runner.invoke(app, ["init-from-elmo", str(elmo_run), "--out", str(tmp_path / "g"),
                                              "--device", "cuda", "--max-steps", "2"]))
    assert "cuda" in line.lower()
    assert not (tmp_path / "g").exists()


def test_init_from_elmo_on_a_full_disk_leaves_no_lock(elmo_run: Path, tmp_path: Path, full_disk_after: Any) -> None:
    full_disk_after(0)
    line = one_error_line(runner.invoke(app, ["init-from-elmo", str(elmo_run), "--out", str(tmp_path / "g"),
                                              "--max-steps", "2", "--threads", "1"]))
    assert "disk is full" in line
    assert not (tmp_path / "g").exists()


# --------------------------------------------------------------------------- runs show / list


@pytest.mark.parametrize("text", ["null", "[]", '{"best_valid_perplexity": 3}'])
def test_runs_show_names_a_damaged_result(runs: dict[str, Path], tmp_path: Path, text: str) -> None:
    run = _copy(runs["groc"], tmp_path)
    (run / "result.json").write_text(text, encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["runs", "show", str(run)]))
    assert "result.json" in line and "damaged" in line


@pytest.mark.parametrize("text", ["null", "[]", "{}"])
def test_load_result_names_a_damaged_result(runs: dict[str, Path], tmp_path: Path, text: str) -> None:
    from groc_base.errors import InputError
    from polyglot_groc.training.workflows import load_result

    run = _copy(runs["groc"], tmp_path)
    (run / "result.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="result.json is not a run's result"):
        load_result(run=run)


def test_runs_show_names_a_damaged_metrics_line(runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(runs["groc"], tmp_path)
    record = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    record["valid_nll"] = "low"
    (run / "metrics.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    line = one_error_line(runner.invoke(app, ["runs", "show", str(run)]))
    assert "metrics.jsonl:1" in line and "valid_nll" in line


def test_runs_list_names_a_broken_run_and_lists_the_others(runs: dict[str, Path], tmp_path: Path) -> None:
    _copy(runs["groc"], tmp_path / "all", "good")
    bad = _copy(runs["tied"], tmp_path / "all", "bad")
    (bad / "config.toml").write_text("[model\n", encoding="utf-8")
    res = runner.invoke(app, ["runs", "list", str(tmp_path / "all"), "--json"])
    assert res.exit_code == 0, res.output
    listed = {Path(r["run"]).name: r for r in json.loads(res.stdout)}
    assert listed["good"]["status"] == "finished" and listed["bad"]["status"].startswith("damaged")
    assert "warning:" in res.stderr and str(bad / "config.toml") in res.stderr


# --------------------------------------------------------------------------- torchrun, FIFOs


@pytest.mark.parametrize("rank", ["0", "1"])
def test_a_batch_that_does_not_divide_is_said_once_by_rank_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            rank: str) -> None:
    monkeypatch.setenv("RANK", rank)
    monkeypatch.setenv("WORLD_SIZE", "2")
    res = runner.invoke(app, _train_args(tmp_path / "r", "--set", "train.batch_size=3", "--device", "cpu"))
    assert res.exit_code == 2, res.output
    if rank == "0":
        assert "does not divide" in one_error_line(res)
    else:
        assert not res.stderr.strip(), res.stderr  # rank 0 says it
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("flag", ["--config", "--languages", "--init-input"])
def test_a_fifo_input_is_refused_at_once(tmp_path: Path, flag: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = one_error_line(runner.invoke(app, _train_args(tmp_path / "r", flag, str(fifo))))
    assert "not a regular file" in line
    assert not (tmp_path / "r").exists()


# --------------------------------------------------------------------------- the documentation


def test_the_documented_ranges_are_the_code_s() -> None:
    from polyglot_groc.config import range_table

    doc = (REPO / "docs" / "internals.md").read_text(encoding="utf-8")
    table = doc.split("<!-- config-ranges:start -->", 1)[1].split("<!-- config-ranges:end -->", 1)[0]
    rows = table.strip().splitlines()[2:]
    assert rows == [f"| `{key}` | `{default}` | {allowed} |" for key, default, allowed in range_table()]


def test_the_reliability_doc_states_the_resume_rule_the_code_applies() -> None:
    from polyglot_groc.training.workflows import RESUMABLE_KEYS

    section = (REPO / "docs" / "reliability.md").read_text(encoding="utf-8")
    for key in RESUMABLE_KEYS:
        assert f"`{key.removeprefix('train.')}`" in section or f"`{key}`" in section, key
    assert "tests/test_reliability.py" in section
