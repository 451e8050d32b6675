"""The convergence protocol, shortened: a few PTB lines, 2 epochs, tiny models (seconds)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(os.environ.get("POLYGLOT_GROC_DATA", "/nonexistent"))


@pytest.mark.skipif(not (DATA / "text" / "ptb").is_dir(), reason="needs POLYGLOT_GROC_DATA with text/ptb")
def test_shortened_protocol_writes_curves_for_every_kind(tmp_path: Path) -> None:
    from benchmarks.ptb_convergence import main

    args = ["--work", str(tmp_path), "--models", "tied,untied,groc", "--train-lines", "60",
                "--eval-lines", "15", "--epochs", "2", "--hidden", "16", "--d", "8", "--filters", "1:4,2:4",
                "--batch-size", "4", "--bptt", "10", "--threads", "1", "--no-save",
                # Two spawned workers: the path a GPU run takes (a forked child cannot use CUDA).
                "--jobs", "2", "--device", "cpu",
                "--variant", 'groc-lookup-bias=groc;model.output.bias="lookup"']
    out = main(args)
    assert out["device"] == "cpu"
    # untied exists since the output-embedding family landed: every requested kind is trained.
    assert set(out["models"]) == {"tied", "untied", "groc", "groc-lookup-bias"}
    for m in out["models"].values():
        assert len(m["valid_curve"]) == len(m["train_curve"]) == 2
        assert m["final_valid"] > 1 and m["test"] > 1 and m["params"] > 0
    # The per-word bias adds |V| parameters to the same GroC model.
    assert out["models"]["groc-lookup-bias"]["params"] > out["models"]["groc"]["params"]
    assert (tmp_path / "ptb_convergence.png").stat().st_size > 0
    assert all((tmp_path / "runs" / m / "protocol.json").is_file() for m in out["models"])

    # --resume: finished models are read back; one whose protocol.json is missing (as after the
    # wall-clock cap) continues from last.pt, which here is already at its epoch budget.
    (tmp_path / "runs" / "groc" / "protocol.json").unlink()
    serial = [*args, "--jobs", "1"]  # the later calls in this process: no spawn cost
    # Settings that change only speed or memory (here the encoder's chunk size) may differ.
    again = main([*serial, "--resume", "--set", "model.surface.chunk_size=3"])
    assert again["models"]["tied"] == out["models"]["tied"]
    g0, g1 = out["models"]["groc"], again["models"]["groc"]
    assert g1["resumed"] and g1["steps"] == g0["steps"] and g1["valid_curve"] == g0["valid_curve"]
    assert g1["final_valid"] == g0["final_valid"] and g1["test"] == g0["test"]
    # --collect trains nothing: the same figures again, and a model never trained is an error.
    (tmp_path / "runs" / "groc" / "protocol.json").unlink()
    collected = main([*serial, "--collect"])["models"]["groc"]
    assert collected["steps"] == g0["steps"] and collected["valid_curve"] == g0["valid_curve"]
    assert collected["stop_reason"] == "max_epochs" and collected["test"] == g0["test"]
    with pytest.raises(SystemExit, match="no run to collect"):
        main([*serial, "--collect", "--models", "groc-lex"])
    with pytest.raises(SystemExit, match="another configuration"):
        main([*serial, "--resume", "--lr", "0.01"])


def test_benchmark_device_label_names_the_device_and_rejects_bad_specs() -> None:
    import torch

    from benchmarks.common import device_label

    assert device_label("cpu") == "cpu"
    assert device_label("auto") == ("cpu" if not torch.cuda.is_available() else device_label("cuda"))
    with pytest.raises(SystemExit, match="--device gpu0"):
        device_label("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit, match="--device cuda"):
            device_label("cuda")


def test_benchmark_bad_input_is_one_line_and_exit_status_2(tmp_path: Path) -> None:
    """Benchmarks follow the CLI's rule: bad input is one line on stderr and exit 2, from the
    script's own checks (BadInput) and from the toolkit's input errors alike."""
    import pickle
    import subprocess
    import sys

    from benchmarks.common import BadInput

    # --jobs workers raise it in another process: it must survive pickling with its code.
    again = pickle.loads(pickle.dumps(BadInput("--variant 'x': write NAME=KIND")))
    assert isinstance(again, BadInput) and again.code == 2 and str(again) == "error: --variant 'x': write NAME=KIND"
    root = Path(__file__).resolve().parent.parent
    cases = [
        ("align_polyglot.py", ["--src", "en", "--tgt", "en", "--work", str(tmp_path)]),  # the script's check
        ("throughput.py", ["--device", "gpu0", "--work", str(tmp_path)]),  # the toolkit's ConfigError
        ("throughput.py", ["--models", "lookup,bogus", "--work", str(tmp_path)]),  # checked before the data is made
        ("ptb_convergence.py", ["--variant", "no-kind", "--work", str(tmp_path)]),  # likewise
        ("output_family.py", ["--filters", "1:x", "--work", str(tmp_path)]),  # likewise
    ]
    for script, argv in cases:
        done = subprocess.run([sys.executable, str(root / "benchmarks" / script), *argv],
                              capture_output=True, text=True, timeout=120)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, (script, done.stderr[-2000:])
        assert len(lines) == 1 and lines[0].startswith("error: "), (script, done.stderr[-2000:])
    assert not any(tmp_path.iterdir())  # nothing written


def test_seed_orderings_pair_models_by_kind() -> None:
    from benchmarks.ptb_convergence import seed_orderings

    def m(kind: str, curve: list[float], test: float, p: float = 1.0) -> dict:
        return {"kind": kind, "epochs": [1.0, 2.0, 3.0, 3.5][:len(curve)], "valid_curve": curve,
                "final_valid": min(curve), "test": test, "output_update_prob": p}

    res = seed_orderings({
        "tied": m("lookup", [700.0, 500.0, 400.0], 300.0),  # the protocol's tied is kind "lookup" (an alias)
        "untied": m("untied", [650.0, 520.0, 450.0], 350.0),
        "groc-full": m("groc", [720.0, 480.0, 390.0, 380.0], 310.0),  # behind at epoch 1 only: that is allowed
        "groc-p0.3": m("groc", [800.0, 510.0, 395.0], 320.0, p=0.3),
        "groc-lex": m("groc-lex", [710.0, 470.0, 375.0], 305.0),
    })
    assert res["groc-full < tied"] == {"valid": True, "test": False, "every_epoch_from_2": True}
    assert res["groc-p0.3 < tied"] == {"valid": True, "test": False, "every_epoch_from_2": False}
    assert res["groc-lex < groc-full"] == {"valid": True, "test": True, "every_epoch_from_2": True}
    assert "groc-lex < groc-p0.3" not in res  # another sparse-update p: not the seed's comparison
    assert res["tied < untied"] == {"valid": True, "test": True, "every_epoch_from_2": True}
