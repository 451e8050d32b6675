"""plot_curves: a real PNG from metrics records, robust to diverged (null/NaN) values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from groc_base.errors import InputError
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


def test_load_result_reads_the_history_with_the_same_reader(tmp_path: Path) -> None:
    """One metrics.jsonl reader: a damaged record is the same error from load_result as from curves."""
    from polyglot_groc.training.workflows import load_result

    (tmp_path / "metrics.jsonl").write_text('{"epoch": 1, "valid_perplexity": {"en": "high"}}\n')
    with pytest.raises(InputError) as from_curves:
        read_metrics(tmp_path / "metrics.jsonl")
    with pytest.raises(InputError) as from_result:
        load_result(run=tmp_path)
    assert str(from_result.value) == str(from_curves.value)
    assert "not a table of numbers by language; the metrics file is damaged: restore it" in str(from_result.value)


def test_atomic_write_honours_umask(tmp_path: Path) -> None:
    import os

    from groc_base.fileio import atomic_write_bytes

    old = os.umask(0o027)
    try:
        atomic_write_bytes(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert (tmp_path / "f").stat().st_mode & 0o777 == 0o640


def test_unique_labels_disambiguate_same_names_with_parent_folders(tmp_path: Path) -> None:
    from groc_base.fileio import unique_labels

    assert unique_labels(["x/d.txt", "y/d.txt", "z/e.txt"]) == ["x/d.txt", "y/d.txt", "e.txt"]
    assert unique_labels(["a/x/run", "b/x/run", "c/y/run"]) == ["a/x/run", "b/x/run", "y/run"]
    # The same file twice is numbered, not merged; '..' is resolved before comparing.
    assert unique_labels(["/r/a/run", "/r/b/../a/run", "/r/b/run"]) == ["a/run", "a/run#2", "b/run"]
    assert unique_labels([tmp_path]) == [tmp_path.name] and unique_labels([]) == []


def test_curves_keep_runs_with_the_same_name(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from polyglot_groc.cli import app

    runs = [tmp_path / "a" / "run", tmp_path / "b" / "run", tmp_path / "c" / "other"]
    for i, run in enumerate(runs):
        run.mkdir(parents=True)
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _records(2 + i)))
    res = CliRunner().invoke(app, ["analyze", "curves", *map(str, runs), "--out", str(tmp_path / "c.png")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["labels"] == {"a/run": str(runs[0]), "b/run": str(runs[1]), "other": str(runs[2])}
    assert (tmp_path / "c.png").read_bytes()[:8] == PNG


def test_plot_curves_draws_every_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from matplotlib.axes import Axes

    labels: list[str] = []
    real_plot = Axes.plot

    def spy(self: Axes, *args: object, **kwargs: object) -> object:
        labels.append(str(kwargs.get("label")))
        return real_plot(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Axes, "plot", spy)
    plot_curves({"a/run": _records(2), "b/run": _records(2)}, tmp_path / "c.png")
    assert {label.split(" ")[0] for label in labels} == {"a/run", "b/run"}
