"""A config file's values as a benchmark script's flags, and the toy sizes of the dry run."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from typing import Any

from benchmarks.campaign.stages import CONFIGS, SAMPLED, TOY_SAMPLED_K


def _filters(filters: Iterable[Sequence[int]]) -> str:
    return ",".join(f"{w}:{n}" for w, n in filters)


def _flat(obj: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def config_sizes(toml: str, flags: dict[str, str], skip: Iterable[str] = ()) -> tuple[Any, list[str]]:
    """A config file's values as a script's flags: ``flags`` maps config keys to flag names; every
    other key that differs from the toolkit default (bar ``skip``) becomes ``--set key=value``."""
    from polyglot_groc.config import load_config

    cfg = load_config(CONFIGS / toml)
    values, defaults = _flat(dataclasses.asdict(cfg)), _flat(dataclasses.asdict(load_config(None)))
    argv: list[str] = []
    for key, flag in flags.items():
        value = values[key]
        if flag == "--filters":
            argv += [flag, _filters(value)]
        elif value is True:
            argv.append(flag)
        else:
            argv += [flag, str(value)]
    skipped = set(flags) | set(skip)
    for key, value in values.items():
        if key not in skipped and value != defaults[key]:
            argv += ["--set", f"{key}={json.dumps(list(value) if isinstance(value, tuple) else value)}"]
    return cfg, argv


#: The toy sizes every training stage uses in the dry run (instead of the config's).
TOY: dict[str, Any] = {"d": 16, "hidden": 24, "filters": "1:8,2:8,3:16", "batch_size": 4, "bptt": 8}


def override(argv: list[str], values: dict[str, Any]) -> list[str]:
    """``argv`` with the given flags' values replaced (or appended)."""
    out = list(argv)
    for flag, value in values.items():
        if flag in out:
            out[out.index(flag) + 1] = str(value)
        else:
            out += [flag, str(value)]
    return out


def toy_flags(argv: list[str]) -> list[str]:
    return override(argv, {"--d": TOY["d"], "--hidden": TOY["hidden"], "--filters": TOY["filters"],
                            "--batch-size": TOY["batch_size"], "--bptt": TOY["bptt"]})


def sets(values: dict[str, Any]) -> list[str]:
    return [x for k, v in values.items() for x in ("--set", f"{k}={json.dumps(v)}")]


def sampled_softmax(toy: bool) -> dict[str, Any]:
    """The thesis-scale stages' sampled training softmax (with a toy k in a dry run)."""
    return {**SAMPLED, "train.sampled_k": TOY_SAMPLED_K} if toy else dict(SAMPLED)

