"""What a run was trained on: a fingerprint of its corpus files, checked before a resume changes anything.

A run's ``last.pt`` holds the batcher's position in the training text; resuming it on other text
(a corpus edited in place, shrunk or grown since) would continue "exactly" on different data,
silently, or fail deep inside with a batcher position that no longer fits. So a run records, when
it starts, the size and SHA-256 of every split file it read (``data-fingerprint.json`` in the run
directory), and :func:`data_changes` compares them with the files as they are now before
:func:`~polyglot_groc.training.workflows.resume` writes anything. What a resume then does with
each kind of change (refuse it, or with ``accept_changed_data`` go on: grow the vocabulary, re-score
best.pt) is :mod:`polyglot_groc.training.data_change`'s; the run then records the new fingerprint.
A run written before fingerprints existed resumes as before, with a warning that its data could not
be checked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.errors import InputError
from groc_base.fileio import atomic_write_bytes, dumps_json, file_digest
from langpairs.corpus import find_split

log = logging.getLogger(__name__)

__all__ = ["FINGERPRINT_NAME", "DataChange", "UnreadableFingerprint", "check_data", "data_changes", "data_fingerprint",
           "record_data"]

#: The file in a run directory that records its data.
FINGERPRINT_NAME = "data-fingerprint.json"
FINGERPRINT_FORMAT = 1


def _file_entry(path: Path) -> dict[str, Any]:
    size = path.stat().st_size
    return {"bytes": size, "sha256": file_digest(path).hexdigest()}


def data_fingerprint(root: Path, splits: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """Size and SHA-256 of each split file a run reads: ``splits`` maps a language to its split names
    (``<root>/<lang>/<split>.txt``, or ``.conllu``, as the corpus loader finds them)."""
    root = Path(root).resolve()
    files: dict[str, Any] = {}
    for lang, names in splits.items():
        for split in names:
            path = find_split(root, lang, split)
            files[path.relative_to(root).as_posix()] = _file_entry(path)
    return {"format": FINGERPRINT_FORMAT, "root": str(root), "files": files}


def record_data(run_dir: Path, root: Path, splits: Mapping[str, Iterable[str]]) -> dict[str, Any]:
    """Write ``run_dir/data-fingerprint.json`` for the files the run reads; return it."""
    fingerprint = data_fingerprint(root, splits)
    atomic_write_bytes(Path(run_dir) / FINGERPRINT_NAME, (dumps_json(fingerprint, indent=2) + "\n").encode())
    return fingerprint


def _describe(entry: Mapping[str, Any]) -> str:
    return f"{entry['bytes']:,} bytes, sha256 {str(entry['sha256'])[:12]}"


class UnreadableFingerprint(InputError):
    """A run's ``data-fingerprint.json`` cannot be read, so its data cannot be compared."""


@dataclass(frozen=True)
class DataChange:
    """One corpus file of a run that is not as the run recorded it (:func:`data_changes`)."""

    #: The file, absolute (``<root>/<lang>/<split>.txt``).
    path: Path
    lang: str
    #: ``train``, ``valid`` or ``test``.
    split: str
    #: ``grew``, ``shrank``, ``was edited in place`` or ``is missing``.
    how: str
    #: What the run recorded and what is there now, in words (empty for a missing file).
    detail: str = ""

    @property
    def missing(self) -> bool:
        return self.how == "is missing"

    def describe(self) -> str:
        """``/data/en/train.txt grew since the run started (1,869 bytes, sha256 311495b21380 then, ...)``."""
        if self.missing:
            return f"{self.path} is missing"
        return f"{self.path} {self.how} since the run started ({self.detail})"


def _recorded(run_dir: Path, path: Path) -> tuple[Path, dict[str, dict[str, Any]]]:
    """The corpus root and ``{relative path: {bytes, sha256}}`` that ``path`` (a fingerprint) records."""
    recorded = json.loads(path.read_text(encoding="utf-8"))
    root = Path(recorded["root"])
    files = {str(rel): {"bytes": int(entry["bytes"]), "sha256": str(entry["sha256"])}
             for rel, entry in dict(recorded["files"]).items()}
    return root, files


def data_changes(run_dir: Path) -> list[DataChange] | None:
    """The corpus files of ``run_dir`` that changed since it started (empty: none did), or None when the
    run records no fingerprint (an older polyglot-groc wrote it: logged, the data cannot be checked).

    Raises:
        InputError: the record is unreadable.
    """
    run_dir = Path(run_dir)
    path = run_dir / FINGERPRINT_NAME
    if not path.is_file():
        log.warning("run %s records no fingerprint of its corpus (an older polyglot-groc wrote it): whether the "
                    "data changed since it started cannot be checked", run_dir)
        return None
    try:
        root, files = _recorded(run_dir, path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UnreadableFingerprint(f"{path} is unreadable ({type(exc).__name__}: {exc}), so the run's data cannot "
                                    "be checked; restore it from a copy of the run") from exc
    changes: list[DataChange] = []
    for rel, entry in files.items():
        current = root / rel
        lang, split = Path(rel).parts[0], Path(rel).name.split(".")[0]
        if not current.is_file():
            changes.append(DataChange(current, lang, split, "is missing"))
            continue
        now: dict[str, Any] = {"bytes": current.stat().st_size}
        if now["bytes"] == entry["bytes"]:
            now = _file_entry(current)
        if now["bytes"] != entry["bytes"] or now.get("sha256", entry["sha256"]) != entry["sha256"]:
            how = "shrank" if now["bytes"] < entry["bytes"] else "grew" if now["bytes"] > entry["bytes"] \
                else "was edited in place"
            detail = f"{_describe(entry)} then, {now['bytes']:,} bytes now"
            changes.append(DataChange(current, lang, split, how, detail))
    return changes


def check_data(run_dir: Path, *, accept: bool = False) -> bool:
    """Whether the files ``run_dir`` recorded changed: False when they are as they were, or cannot be
    checked (no record: logged); True when they changed and ``accept`` is set.

    Only the comparison: what a resume then does with changed text (and what it refuses even with
    ``accept``) is :func:`polyglot_groc.training.data_change.prepare_changed_data`'s.

    Raises:
        InputError: a recorded file changed or is missing (without ``accept``), the record is unreadable.
    """
    changes = data_changes(run_dir)
    if not changes:
        return False
    if accept:
        return True
    more = f" (and {len(changes) - 1} more file(s))" if len(changes) > 1 else ""
    raise InputError(f"run {run_dir} was trained on other data: {changes[0].describe()}{more}; --resume continues "
                     "exactly only on the same text: put the original file back")
