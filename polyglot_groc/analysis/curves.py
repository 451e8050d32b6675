"""Training curves: train and validation perplexity against epoch, one PNG for one or more runs.

``runs`` maps a run name to its ``metrics.jsonl`` records (one dict per validation, as the
trainer writes them). Train perplexity is ``exp(train_loss)``; validation perplexity is drawn per
language. matplotlib runs headless (Agg) and the PNG is written atomically.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import check_output
from groc_base.errors import InputError
from groc_base.fileio import atomic_write_bytes, unique_labels
from polyglot_groc.training.metrics import read_metrics  # the one metrics.jsonl reader (re-exported)

__all__ = ["CurvesResult", "check_png_path", "curves", "plot_curves", "read_metrics", "save_png"]


@dataclass(frozen=True)
class CurvesResult:
    """Where :func:`curves` drew which runs; ``labels`` maps each legend label to its run."""

    png: str
    runs: list[str]
    labels: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        """The JSON ``polyglot-groc analyze curves`` prints."""
        return {"png": self.png, "runs": list(self.runs), "labels": dict(self.labels)}


def curves(*, runs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], title: str | None = None,
           overwrite: bool = False) -> CurvesResult:
    """Train and validation perplexity of one or more runs against epoch, in one PNG.

    Args:
        runs: run directories, each with the ``metrics.jsonl`` training writes.
        out: PNG path, ending in ``.png``.
        title: the figure's title.
        overwrite: replace an existing ``out``.

    Returns:
        A :class:`CurvesResult`; its ``to_dict()`` is the JSON ``polyglot-groc analyze curves`` prints.

    Raises:
        InputError: ``out`` is not a ``.png`` or exists without ``overwrite``; a run has no
            ``metrics.jsonl`` or a damaged one.
    """
    out = check_png_path(Path(out))
    check_output(out, overwrite)
    # Legend labels: run names, with parent folders where two runs share one (never one lost).
    labels = unique_labels(list(runs))
    records = {}
    for label, run in zip(labels, runs, strict=True):
        path = Path(run) / "metrics.jsonl"
        if not path.is_file():
            raise InputError(f"{path} is missing; pass run directories written by polyglot-groc train")
        records[label] = read_metrics(path)
    return CurvesResult(png=str(plot_curves(records, out, title)), runs=[str(r) for r in runs],
                        labels=dict(zip(labels, (str(r) for r in runs), strict=True)))


def _finite(x: Any) -> float | None:
    """A float for plotting, or None for a missing/diverged value (null, NaN, Infinity)."""
    if isinstance(x, (int, float)) and math.isfinite(float(x)):
        return float(x)
    return None


def plot_curves(runs: Mapping[str, Sequence[Mapping[str, Any]]], out: Path, title: str | None = None) -> Path:
    """Draw train (dashed) and validation (solid, per language) perplexity against epoch.

    Returns ``out``. Records without an epoch are skipped; perplexities are on a log scale since
    they fall by orders of magnitude early in training.
    """
    if not runs:
        raise InputError("no runs to plot; give at least one run's metrics")
    import matplotlib

    matplotlib.use("Agg")  # headless: no display, ever
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.5), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    drawn = 0
    multi = len(runs) > 1
    for name, records in runs.items():
        prefix = f"{name} " if multi else ""
        rows = [r for r in records if _finite(r.get("epoch")) is not None]
        epochs = [float(r["epoch"]) for r in rows]
        train = [_finite(r.get("train_loss")) for r in rows]
        train_ppl = [math.exp(min(v, 50.0)) if v is not None else math.nan for v in train]
        if any(math.isfinite(v) for v in train_ppl):
            ax.plot(epochs, train_ppl, linestyle="--", marker=".", label=f"{prefix}train")
            drawn += 1
        langs = sorted({lang for r in rows for lang in (r.get("valid_perplexity") or {})})
        for lang in langs:
            vals = [_finite((r.get("valid_perplexity") or {}).get(lang)) for r in rows]
            ys = [v if v is not None else math.nan for v in vals]
            if any(math.isfinite(v) for v in ys):
                ax.plot(epochs, ys, linestyle="-", marker="o", label=f"{prefix}valid {lang}")
                drawn += 1
    if drawn:
        ax.set_yscale("log")
        ax.legend(fontsize="small")
    else:
        ax.text(0.5, 0.5, "no finite perplexities yet", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("epoch")
    ax.set_ylabel("perplexity")
    ax.grid(True, which="both", alpha=0.3)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return save_png(fig, out, dpi=100)


def check_png_path(out: Path, flag: str = "--out") -> Path:
    """``out`` when it names a PNG file; any other suffix is an :class:`InputError`.

    Figures are always PNG: a path ending in .json, .pdf, ... would hold PNG bytes under a
    misleading name, and could be the very file a command writes its JSON to (``fig.json``).
    Check before the work, so a bad path costs nothing.
    """
    out = Path(out)
    if out.suffix.lower() != ".png":
        example = out.with_suffix(".png") if out.name else out / "figure.png"
        raise InputError(f"{flag} {out} does not end in .png; figures are written as PNG: give a .png path "
                         f"such as {example}")
    return out


def png_bytes(fig: Any, dpi: int = 120) -> bytes:
    """A matplotlib figure rendered to PNG, in memory."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def save_png(fig: Any, out: Path, dpi: int = 120) -> Path:
    """Render a matplotlib figure to PNG and write it atomically (never a half-written image)."""
    out = check_png_path(out, "figure path")
    atomic_write_bytes(out, png_bytes(fig, dpi))
    return out
