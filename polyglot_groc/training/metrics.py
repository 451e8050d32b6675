"""A run's ``metrics.jsonl``: one JSON record per validation, as the trainer writes it; the one reader.

Every reader of a run's history (``load_result``, ``curves``, ``runs``, the CLI's resumed curves)
reads it here, so a damaged file is the same one-line ``InputError`` everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groc_base.errors import InputError
from groc_base.fileio import read_bytes

__all__ = ["read_metrics"]


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (blank lines skipped); a bad line raises ``InputError``
    naming the file and line (not JSON, not an object, or a field that is not a number or a table of
    numbers by language)."""
    records: list[dict[str, Any]] = []
    text = read_bytes(Path(path), "metrics file", InputError).decode("utf-8", errors="replace")
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{no} is not a JSON record ({exc.msg}); the metrics file is damaged: restore "
                             "it, or move it away") from exc
        if not isinstance(rec, dict):
            raise InputError(f"{path}:{no} is {type(rec).__name__} {line.strip()[:40]!r}, not a JSON object; the "
                             "metrics file is damaged: restore it, or move it away")
        _check_record(rec, f"{path}:{no}")
        records.append(rec)
    return records


#: The record fields readers compute with, and what each must be: a number (null: diverged), or a
#: table of numbers by language.
_NUMBERS = ("step", "epoch", "lr", "train_loss", "train_perplexity", "valid_nll", "tokens", "tokens_per_s",
            "elapsed_s")
_TABLES = ("valid_perplexity", "valid_tokens", "lang_batches")


def _check_record(rec: Mapping[str, Any], where: str) -> None:
    def number(x: Any) -> bool:
        return x is None or (isinstance(x, (int, float)) and not isinstance(x, bool))

    for key in _NUMBERS:
        if key in rec and not number(rec[key]):
            raise InputError(f"{where}: {key} is {rec[key]!r}, not a number; the metrics file is damaged: "
                             "restore it, or move it away")
    for key in _TABLES:
        if key in rec and not (isinstance(rec[key], dict) and all(number(v) for v in rec[key].values())):
            raise InputError(f"{where}: {key} is {rec[key]!r}, not a table of numbers by language; the metrics "
                             "file is damaged: restore it, or move it away")
