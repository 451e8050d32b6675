"""plot_curves: a real PNG from metrics records, robust to diverged (null/NaN) values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from lexicons.errors import InputError
from polyglot_groc.analysis.curves import plot_curves, read_metrics

PNG = b"\x89PNG\r\n\x1a\n"


def _records(n: int) -> list[dict]:
    return [{"epoch": i + 1, "train_loss": 5.0 - 0.3 * i,
             "valid_perplexity": {"en": 120.0 - 10 * i, "fr": 150.0 - 9 * i}} for i in range(n)]


def test_plot_curves_writes_png(tmp_path: Path) -> None:
    out = plot_curves({"a": _records(3), "b": _records(2)}, tmp_path / "c.png", title="t")
    assert out == tmp_path / "c.png"
    assert out.read_bytes()[:8] == PNG
    assert [p.name for p in tmp_path.iterdir()] == ["c.png"]  # no temp file left


def test_plot_curves_tolerates_diverged_values(tmp_path: Path) -> None:
    recs = _records(2) + [{"epoch": 3, "train_loss": None, "valid_perplexity": {"en": None, "fr": math.nan}}]
    assert plot_curves({"r": recs}, tmp_path / "c.png").read_bytes()[:8] == PNG


def test_plot_curves_rejects_no_runs(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        plot_curves({}, tmp_path / "c.png")


def test_read_metrics_roundtrip_and_damage(tmp_path: Path) -> None:
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"epoch": 1, "train_loss": 4.0}\n\n{"epoch": 2}\n')
    assert [r["epoch"] for r in read_metrics(p)] == [1, 2]
    p.write_text('{"epoch": 1\n')
    with pytest.raises(InputError, match="metrics.jsonl:1"):
        read_metrics(p)


def test_atomic_write_honours_umask(tmp_path: Path) -> None:
    import os

    from lexicons.fileio import atomic_write_bytes

    old = os.umask(0o027)
    try:
        atomic_write_bytes(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640
