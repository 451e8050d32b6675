"""The stages' figures, drawn from their JSON."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from groc_base.fileio import atomic_write


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    atomic_write(path, functools.partial(fig.savefig, format="png"))
    plt.close(fig)


def plot_bars(groups: dict[str, dict[str, float | None]], path: Path, ylabel: str, line: float | None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5), dpi=80)
    models = list(dict.fromkeys(m for g in groups.values() for m in g))
    width = 0.8 / max(len(models), 1)
    for i, model in enumerate(models):
        xs = [j + i * width for j in range(len(groups))]
        ax.bar(xs, [g.get(model) or 0.0 for g in groups.values()], width, label=model)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(groups))], list(groups), fontsize=7)
    if line is not None:
        ax.axhline(line, color="k", lw=0.8, ls="--")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7)
    _save(fig, path)


def plot_curves(curves: dict[str, list[tuple[int, float]]], path: Path, ylabel: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5), dpi=80)
    for name, points in curves.items():
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=name)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    _save(fig, path)


