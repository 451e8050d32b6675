"""Checkpoints: plain values and tensors only, a ``format_version``, atomic writes.

Loading always uses ``torch.load(weights_only=True)``: nothing is ever unpickled beyond
tensors, numbers, strings, lists and dicts.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch

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
        raise CheckpointError(f"checkpoint {path} does not exist; train a run first or check the path") from None
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
                              "polyglot-groc checkpoint); use the run's other checkpoint (best.pt or last.pt) or "
                              "train again") from exc
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
