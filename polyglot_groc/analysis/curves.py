"""Training curves of one or more runs in one PNG (train loss and validation perplexity by step)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from lexicons.errors import InputError
from lexicons.fileio import atomic_write_bytes

__all__ = ["plot_curves"]


def plot_curves(runs: Mapping[str, Sequence[Mapping[str, Any]]], out: Path, title: str | None = None) -> Path:
    """``runs``: name -> metrics.jsonl records (keys step, epoch, train_loss, valid_perplexity{lang: ppl})."""
    if not runs or not any(runs.values()):
        raise InputError("no evaluation records to plot; train the runs past their first evaluation")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_l, ax_p) = plt.subplots(1, 2, figsize=(10, 4))
    for name, recs in runs.items():
        steps = [r["step"] for r in recs]
        ax_l.plot(steps, [r.get("train_loss", float("nan")) for r in recs], marker=".", label=name)
        langs = sorted({lang for r in recs for lang in r.get("valid_perplexity", {})})
        for lang in langs:
            ax_p.plot(steps, [r.get("valid_perplexity", {}).get(lang, float("nan")) for r in recs], marker=".",
                      label=f"{name} ({lang})" if len(langs) > 1 else name)
    ax_l.set_xlabel("step")
    ax_l.set_ylabel("train loss")
    ax_p.set_xlabel("step")
    ax_p.set_ylabel("valid perplexity")
    ax_p.set_yscale("log")
    ax_l.legend(fontsize=8)
    ax_p.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out, buf.getvalue())
    return out
