"""Checkpoints: plain values and tensors only, a ``format_version``, atomic writes.

Loading always uses ``torch.load(weights_only=True)``: nothing is ever unpickled beyond
tensors, numbers, strings, lists and dicts.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch

from groc_base.errors import CheckpointError
from groc_base.fileio import atomic_write

__all__ = ["atomic_write", "atomic_write_text", "file_sha256", "load_checkpoint", "save_checkpoint"]

FORMAT_VERSION = 1


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def save_checkpoint(path: Path, payload: dict[str, Any]) -> None:
    payload = {"format_version": FORMAT_VERSION, **payload}
    atomic_write(path, lambda f: torch.save(payload, f))


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes (a checkpoint's identity)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_checkpoint(path: Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist; train a run first or check the path")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, EOFError...
        raise CheckpointError(f"checkpoint {path} cannot be read safely ({type(exc).__name__}); "
                              "it is corrupt or not a polyglot-groc checkpoint") from exc
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
