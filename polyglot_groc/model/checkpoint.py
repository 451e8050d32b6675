"""Checkpoints: plain values and tensors only, a ``format_version``, atomic writes.

Loading always uses ``torch.load(weights_only=True)``: nothing is ever unpickled beyond
tensors, numbers, strings, lists and dicts.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import torch

from groc_base.checks import in_cli, option
from groc_base.errors import CheckpointError
from groc_base.fileio import atomic_write, file_digest

__all__ = ["atomic_write", "atomic_write_text", "file_sha256", "load_checkpoint", "save_checkpoint"]

FORMAT_VERSION = 1


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    """Write ``payload`` (with the format version) to ``path`` atomically.

    Serialised in memory first: torch.save's own file writer turns a full disk into a RuntimeError
    without a path, while a plain write raises ``OSError(ENOSPC)`` naming ``path`` (the CLI's one-line
    "disk is full" error); the previous file stays whole either way.
    """
    payload = {"format_version": FORMAT_VERSION, **payload}
    buf = io.BytesIO()
    torch.save(payload, buf)
    atomic_write(path, lambda f: f.write(buf.getbuffer()))


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes (a checkpoint's identity)."""
    return file_digest(path).hexdigest()


def diverged_at(run_dir: Path) -> int | None:
    """The step ``run_dir``'s training diverged at, as its result.json says (None: it did not, or no
    readable result.json says so)."""
    try:
        result = json.loads((Path(run_dir) / "result.json").read_text(encoding="utf-8"))
        return int(result["steps"]) if result.get("diverged") else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def train_again_command(run_dir: Path, lower_lr: bool = False) -> str:
    """Training ``run_dir`` anew with its own config, in the current face (``lower_lr``: with a lower
    learning rate to fill in). Only for a run that holds no checkpoint: ``overwrite`` loses nothing."""
    run_dir = Path(run_dir)
    config = run_dir / "config.toml"
    if in_cli():
        lr = " --set train.lr=LR" if lower_lr else ""
        return (f"`polyglot-groc train --config {config}{lr} --out {run_dir} --overwrite` (it replaces the run "
                "folder, which holds no checkpoint)")
    lr = ", overrides={'train.lr': LR}" if lower_lr else ""
    return (f"pg.train(config={str(config)!r}{lr}, out={str(run_dir)!r}, overwrite=True) (it replaces the run "
            "folder, which holds no checkpoint)")


def missing_checkpoint_message(path: Path) -> str:
    """Why the checkpoint ``path`` is not there and what works instead: the run's other checkpoint, training
    again (a run that diverged or stopped before its first checkpoint), or checking the path."""
    path = Path(path)
    run = path.parent
    other = {"best.pt": "last", "last.pt": "best"}.get(path.name)
    if other is not None and (run / f"{other}.pt").is_file():
        return f"run {run} has no {path.name} ({other}.pt is there); use {option('checkpoint', other)}"
    if other is not None and (run / "config.toml").is_file():
        step = diverged_at(run)
        if step is not None:
            return (f"run {run} has no checkpoint: training diverged at step {step}, before its first one; train it "
                    f"again with a lower train.lr (or train.clip): {train_again_command(run, lower_lr=True)}")
        return (f"run {run} has no checkpoint yet: it stopped (or is still training) before its first validation; "
                f"wait for it, or train it again: {train_again_command(run)}")
    return f"checkpoint {path} does not exist; train a run first or check the path"


def damaged_checkpoint_fix(path: Path) -> str:
    """The fix a message about the damaged checkpoint ``path`` offers: the run's other checkpoint where
    it is there (best.pt for last.pt and the other way round), else training again."""
    path = Path(path)
    other = {"best.pt": "last.pt", "last.pt": "best.pt"}.get(path.name)
    if other is not None and (path.parent / other).is_file():
        return f"use the run's other checkpoint, {path.parent / other}, or train again"
    return "train again"


def load_checkpoint(path: Path) -> dict[str, Any]:
    """The payload of the checkpoint file ``path``, read safely (tensors and plain values only).

    The messages tell apart a file that cannot be *read* (missing, permissions, a FIFO or a
    folder, an I/O error: the file may be fine) from one whose bytes are *corrupt* (truncated,
    not a torch file, not a polyglot-groc checkpoint).

    Raises:
        CheckpointError: missing, unreadable, corrupt, or of another format version.
    """
    import stat

    path = Path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise CheckpointError(missing_checkpoint_message(path)) from None
    except OSError as exc:
        raise CheckpointError(f"checkpoint {path} cannot be read ({exc.strerror}); check the path and its "
                              "permissions") from None
    if not stat.S_ISREG(mode):
        what = "a directory" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, socket or device)"
        raise CheckpointError(f"checkpoint {path} is {what}; give the run's best.pt or last.pt")
    try:
        with path.open("rb") as fh:
            data = fh.read()
    except OSError as exc:  # permissions, an I/O error: the bytes on disk may well be fine
        raise CheckpointError(f"checkpoint {path} cannot be read ({exc.strerror or exc}); check its permissions "
                              "and the disk, then try again") from None
    try:
        payload = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, EOFError...
        raise CheckpointError(f"checkpoint {path} is corrupt ({type(exc).__name__}: it is truncated or not a "
                              f"polyglot-groc checkpoint); {damaged_checkpoint_fix(path)}") from exc
    if not isinstance(payload, dict) or "format_version" not in payload:
        raise CheckpointError(f"checkpoint {path} has no format_version; it is not a polyglot-groc checkpoint")
    if payload["format_version"] != FORMAT_VERSION:
        raise CheckpointError(f"checkpoint {path} has format_version {payload['format_version']}, "
                              f"this polyglot-groc reads {FORMAT_VERSION}; use a matching version")
    return payload


def rng_state() -> dict[str, Any]:
    import random

    import numpy as np

    np_state: Any = np.random.get_state()
    py_state: Any = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "numpy_keys": torch.from_numpy(np.asarray(np_state[1], dtype=np.int64)),
        "numpy_pos": int(np_state[2]),
        "python": [int(x) for x in py_state[1]],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    import random

    import numpy as np

    torch.set_rng_state(state["torch"])
    np.random.set_state(("MT19937", state["numpy_keys"].numpy().astype(np.uint32), state["numpy_pos"], 0, 0.0))
    random.setstate((3, tuple(state["python"]), None))
