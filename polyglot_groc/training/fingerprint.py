"""What a run was trained on: a fingerprint of its corpus files, checked before a resume changes anything.

A run's ``last.pt`` holds the batcher's position in the training text; resuming it on other text
(a corpus edited in place, shrunk or grown since) would continue "exactly" on different data,
silently, or fail deep inside with a batcher position that no longer fits. So a run records, when
it starts, the size and SHA-256 of every split file it read (``data-fingerprint.json`` in the run
directory), and :func:`check_data` compares them with the files as they are now before
:func:`~polyglot_groc.training.workflows.resume` writes anything. A change is refused in one line
naming the file; ``accept_changed_data`` (``train --resume RUN --accept-changed-data``) goes on with
the new text deliberately, and the run then records the new fingerprint. A run written before
fingerprints existed resumes as before, with a warning that its data could not be checked.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from groc_base.errors import InputError
from groc_base.fileio import atomic_write_bytes, dumps_json, file_digest
from langpairs.corpus import find_split

log = logging.getLogger(__name__)

__all__ = ["FINGERPRINT_NAME", "check_data", "data_fingerprint", "record_data"]

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


def check_data(run_dir: Path, *, accept: bool = False) -> bool:
    """Whether the files ``run_dir`` recorded are as they were; refuse a change unless ``accept``.

    Returns True when the data changed and ``accept`` is set (the caller then goes on with the new
    text and records its fingerprint), False when it is unchanged or cannot be checked (a run
    written before fingerprints: logged).

    Raises:
        InputError: a recorded file changed, is missing, or the record is unreadable (without ``accept``).
    """
    run_dir = Path(run_dir)
    path = run_dir / FINGERPRINT_NAME
    flag = "--accept-changed-data"
    if not path.is_file():
        log.warning("run %s records no fingerprint of its corpus (an older polyglot-groc wrote it): whether the "
                    "data changed since it started cannot be checked", run_dir)
        return False
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        root = Path(recorded["root"])
        files: dict[str, Any] = {str(rel): {"bytes": int(entry["bytes"]), "sha256": str(entry["sha256"])}
                                 for rel, entry in dict(recorded["files"]).items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if accept:
            log.warning("%s is unreadable (%s); going on as %s asks", path, exc, flag)
            return True
        raise InputError(f"{path} is unreadable ({type(exc).__name__}: {exc}), so the run's data cannot be "
                         f"checked; restore it from a copy of the run, or pass {flag} to go on with the corpus as "
                         "it is") from exc
    changes: list[str] = []
    for rel, entry in files.items():
        current = root / rel
        if not current.is_file():
            changes.append(f"{current} is missing")
            continue
        now: dict[str, Any] = {"bytes": current.stat().st_size}
        if now["bytes"] == int(entry["bytes"]):
            now = _file_entry(current)
        if now["bytes"] != int(entry["bytes"]) or now.get("sha256", entry["sha256"]) != entry["sha256"]:
            how = "shrank" if now["bytes"] < int(entry["bytes"]) else "grew" if now["bytes"] > int(entry["bytes"]) \
                else "was edited in place"
            changes.append(f"{current} {how} since the run started ({_describe(entry)} then, "
                           f"{now['bytes']:,} bytes now)")
    if not changes:
        return False
    more = f" (and {len(changes) - 1} more file(s))" if len(changes) > 1 else ""
    if accept:
        log.warning("run %s: %s%s; going on with the new text as %s asks (the position in the epoch is kept where "
                    "it still fits)", run_dir, changes[0], more, flag)
        return True
    raise InputError(f"run {run_dir} was trained on other data: {changes[0]}{more}; --resume continues exactly only "
                     f"on the same text: put the original file back, or pass {flag} to go on with the text as it "
                     "is now")
