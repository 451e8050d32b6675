"""The repository's one atomic JSON writer (``groc_base.fileio.write_json``), its NaN policy, and the
one chunked sha256 (``file_digest``): what the benchmarks and the GPU campaign write through."""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
from pathlib import Path

import pytest

from groc_base.fileio import file_digest, json_text, write_json


def _strict(text: str) -> object:
    """``json.loads`` that refuses the NaN/Infinity tokens Python would otherwise accept."""

    def refuse(token: str) -> object:
        raise ValueError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_floats_are_strings_that_keep_which_they_were(tmp_path: Path) -> None:
    obj = {"ppl": math.inf, "loss": -math.inf, "nll": math.nan, "ok": 1.5, "rows": [(math.nan, 2)], "é": None}
    write_json(tmp_path / "new" / "r.json", obj)
    text = (tmp_path / "new" / "r.json").read_text(encoding="utf-8")
    assert text == json_text(obj) + "\n" and '"é"' in text  # non-ASCII as written, one trailing newline
    assert _strict(text) == {"ppl": "inf", "loss": "-inf", "nll": "nan", "ok": 1.5, "rows": [["nan", 2]], "é": None}
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["r.json"]  # no temporary left


def _writer(path: str, value: int, times: int) -> None:
    for _ in range(times):
        write_json(Path(path), {"writer": value, "payload": [value] * 20_000})


def test_two_writers_of_one_file_never_leave_half_of_one(tmp_path: Path) -> None:
    """Each writer has its own temporary (the old ``emit`` shared ``.<name>.tmp``): a reader sees one
    writer's whole file, never a mix, and nothing is left beside it."""
    path = tmp_path / "r.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), v, 12)) for v in (1, 2)]
    for p in procs:
        p.start()
    seen = set()
    while any(p.is_alive() for p in procs):
        if path.exists():
            obj = _strict(path.read_text(encoding="utf-8"))
            assert isinstance(obj, dict) and obj["payload"] == [obj["writer"]] * 20_000
            seen.add(obj["writer"])
    for p in procs:
        p.join()
        assert p.exitcode == 0
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"] and seen and seen <= {1, 2}


def test_emit_prints_and_saves_the_same_strict_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import common

    monkeypatch.setattr(common, "RESULTS", tmp_path)
    path = common.emit({"valid_perplexity": math.inf}, "diverged")  # the old emit raised ValueError here
    assert path is not None and path.parent.parent == tmp_path
    printed = capsys.readouterr().out
    assert path.read_text(encoding="utf-8") == printed and _strict(printed) == {"valid_perplexity": "inf"}


def test_file_digest_is_sha256_and_extends_a_hash_over_several_files(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(bytes(range(256)) * 5000)  # over hashlib.file_digest's 256 KiB buffer
    b.write_bytes(b"")
    assert file_digest(a).hexdigest() == hashlib.sha256(a.read_bytes()).hexdigest()
    h = hashlib.sha256(b"prefix")
    assert file_digest(b, into=file_digest(a, into=h)) is h
    assert h.hexdigest() == hashlib.sha256(b"prefix" + a.read_bytes()).hexdigest()
