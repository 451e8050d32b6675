"""``polyglot-groc runs list DIR`` / ``runs show RUN``: what is in run directories, at a glance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from groc_base.errors import GrocError
from polyglot_groc.commands._common import cli_errors, console, print_json, warn

app = typer.Typer(name="runs", help="Summarise run directories.", no_args_is_help=True,
                  context_settings={"help_option_names": ["-h", "--help"], "show_default": True})


def summarize_run(run: Path) -> dict[str, Any]:
    """Model, languages, data, progress and perplexities of one run directory (any state, even killed)."""
    from groc_base.errors import ConfigError, InputError
    from polyglot_groc.analysis.curves import read_metrics
    from polyglot_groc.config import load_config

    if not (run / "config.toml").is_file():
        raise InputError(f"{run} is not a run directory (no config.toml); give a folder written by train")
    try:
        cfg = load_config(run / "config.toml", stored=True)
    except ConfigError as exc:
        raise ConfigError(f"{run / 'config.toml'}: {exc}") from exc
    records = read_metrics(run / "metrics.jsonl") if (run / "metrics.jsonl").is_file() else []
    result: dict[str, Any] = {}
    if (run / "result.json").is_file():
        try:
            result = json.loads((run / "result.json").read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"{run / 'result.json'} is not valid JSON ({exc}); it is damaged: move it away (the "
                             "run then shows as interrupted; its checkpoints are kept)") from exc
        if not isinstance(result, dict) or not all(isinstance(result.get(k, {}), dict) for k in (
                "best_valid_perplexity", "last_valid_perplexity")):
            raise InputError(f"{run / 'result.json'} is not a run's result (a JSON object with perplexity tables); "
                             "it is damaged: move it away (the run then shows as interrupted; its checkpoints are "
                             "kept)")
    last = records[-1] if records else {}
    best = min(records, key=lambda r: r.get("valid_nll") or float("inf")) if records else {}
    status = ("diverged" if result.get("diverged") else "finished") if result else (
        "interrupted (resume with train --resume)" if (run / "last.pt").is_file() else "no checkpoint")
    return {"run": str(run), "status": status, "model": cfg.model.kind, "langs": list(cfg.data.langs),
            "data": cfg.data.root, "steps": result.get("steps", last.get("step")),
            "epoch": last.get("epoch"), "stop_reason": result.get("stop_reason"),
            "best_valid_perplexity": result.get("best_valid_perplexity") or best.get("valid_perplexity"),
            "last_valid_perplexity": last.get("valid_perplexity"),
            "checkpoints": sorted(p.name for p in run.glob("*.pt")),
            # finetune's runs name the run they started from (config [parent]).
            "parent": cfg.parent.run or None}


@app.command("list")
@cli_errors
def list_runs(
    root: Annotated[Path, typer.Argument(help="Folder holding run directories (searched recursively)")] = Path("runs"),
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table")] = False,
) -> None:
    """One line per run directory under ROOT."""
    from groc_base.errors import InputError

    if not root.is_dir():
        raise InputError(f"{root} is not a folder; give the folder that holds your runs")
    runs = []
    for path in sorted(root.rglob("config.toml")):
        try:
            runs.append(summarize_run(path.parent))
        except GrocError as exc:  # one damaged run must not hide the others: it is listed, and named
            warn(str(exc))
            runs.append({"run": str(path.parent), "status": "damaged (see the warning)", "model": None, "langs": [],
                         "steps": None, "best_valid_perplexity": None, "error": str(exc)})
    if as_json:
        print_json(runs)
        return
    from rich.table import Table

    table = Table()
    # A run's path is what the other commands take: folded onto more lines when long, never cut.
    table.add_column("run", overflow="fold", min_width=min(60, max((len(r["run"]) for r in runs), default=3)))
    for col in ("status", "model", "langs", "steps"):
        table.add_column(col, overflow="fold")
    table.add_column("best valid ppl", overflow="fold")
    for r in runs:
        best = r["best_valid_perplexity"] or {}
        table.add_row(r["run"], r["status"], r["model"] or "?", ",".join(r["langs"]), str(r["steps"] or 0),
                      " ".join(f"{k}:{v:.1f}" for k, v in best.items() if isinstance(v, (int, float))))
    console.print(table)


@app.command("show")
@cli_errors
def show_run(run: Annotated[Path, typer.Argument(help="Run directory")]) -> None:
    """A run's summary as JSON."""
    print_json(summarize_run(run))
