"""Helpers shared by the benchmark scripts (not part of the installed packages).

Every benchmark prints one JSON object and saves it as ``benchmarks/results/<date>/<name>.json``
through :func:`emit`; budgets shared by the PTB scripts come from :func:`add_ptb_training_args`.
Benchmarks use the toolkit's public names only.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn

from groc_base.fileio import atomic_write_bytes, json_text, write_json


class BadInput(SystemExit):
    """A benchmark's bad input: :func:`script_main` prints ``error: <message>`` (one line) and exits with
    status 2, as the ``polyglot-groc`` CLI does. It pickles (``--jobs`` workers raise it too)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)  # args = (message,): how pickle rebuilds it
        self.code = 2

    def __str__(self) -> str:
        return f"error: {' '.join(str(self.args[0]).split())}"


def script_main(main: Callable[[], object]) -> NoReturn:
    """A benchmark script's entry point: bad input (:class:`BadInput`, or the toolkit's own input
    errors: a bad override, a missing wordnet) is one line on stderr and exit status 2."""
    from groc_base.errors import GrocError

    try:
        rc = main()
    except BadInput as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    except GrocError as exc:
        print(BadInput(str(exc)), file=sys.stderr)
        raise SystemExit(2) from None
    raise SystemExit(rc if isinstance(rc, int) else 0)


def shared_data() -> Path:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root or not Path(root).is_dir():
        sys.exit("error: set POLYGLOT_GROC_DATA to the shared data directory (../shared/data)")
    return Path(root)


def prepare_ptb(data_root: Path, out: Path) -> Path:
    """PTB (Mikolov's version) as <out>/en/{train,valid,test}.txt; returns the corpus root."""
    dst = out / "en"
    dst.mkdir(parents=True, exist_ok=True)
    for split in ("train", "valid", "test"):
        target = dst / f"{split}.txt"
        if not target.exists():
            with gzip.open(data_root / "text" / "ptb" / f"ptb.{split}.txt.gz", "rt", encoding="utf-8") as f:
                lines = [" ".join(line.split()) for line in f]
            atomic_write_bytes(target, ("\n".join(line for line in lines if line) + "\n").encode("utf-8"))
    return out


def ru_maxrss_mib() -> float:
    """``getrusage``'s peak RSS in MiB (Linux reports KiB, macOS bytes)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def peak_rss_mib() -> float:
    """This process's peak resident set size in MiB.

    Linux keeps ``ru_maxrss`` across ``exec``: a child started by ``subprocess`` reports at least
    the parent's RSS at spawn time. VmHWM is the high-water mark of the process's own address
    space, so it is the clean number; other systems fall back to ``ru_maxrss``.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return ru_maxrss_mib()


RESULTS = Path(__file__).resolve().parent / "results"

#: The training softmax of the seeds' reproductions (PTB, WikiText-2) and of every benchmark whose recorded
#: figures were trained on it: pinned, because ``train.softmax = "auto"`` now samples a char-CNN output kind
#: (groc, groc-lex, conv) above 5,000 words a language (polyglot_groc/kind_traits.py, issue 46), where these
#: ran full under the earlier 50,000-word line; a changed default must not change them. ``--set
#: train.softmax=...`` still overrides it.
FULL_SOFTMAX: dict[str, Any] = {"train.softmax": "full"}


def result_path(name: str, day: str | None = None) -> Path:
    """``benchmarks/results/<YYYY-MM-DD>/<name>.json`` (today, UTC, unless ``day`` is given)."""
    day = day or datetime.datetime.now(datetime.UTC).date().isoformat()
    return RESULTS / day / f"{name}.json"


def emit(obj: dict[str, Any], name: str | None = None, save: bool = True) -> Path | None:
    """Print the benchmark's one JSON object on stdout and save it under ``results/<date>/``.

    The text is :func:`groc_base.fileio.json_text`: strict JSON where a NaN or an infinity is the
    string "nan", "inf" or "-inf" (the result files' one policy: nothing lost); the file is written
    by :func:`groc_base.fileio.write_json` (atomically). ``name`` defaults to the calling script's
    stem. Returns the path written (None with ``save=False``).
    """
    print(json_text(obj))
    if not save:
        return None
    if name is None:
        name = Path(sys.argv[0]).stem or "benchmark"
    path = result_path(name)
    write_json(path, obj)
    print(f"saved {path}", file=sys.stderr)
    return path


def add_output_args(ap: argparse.ArgumentParser) -> None:
    """``--name`` (result file stem) and ``--no-save`` shared by every benchmark."""
    ap.add_argument("--name", default=None, help="result file name under benchmarks/results/<date>/ "
                    "(default: the script's name)")
    ap.add_argument("--no-save", action="store_true", help="print the JSON only")


def add_device_arg(ap: argparse.ArgumentParser) -> None:
    """``--device auto|cpu|cuda|cuda:N``: where the benchmark trains (``train.device``)."""
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N (auto: CUDA when available)")


def device_label(spec: str) -> str:
    """The JSON's top-level ``device`` (e.g. ``cuda:NVIDIA H100``) for ``--device spec``; exits on a bad spec."""
    from groc_base.errors import ConfigError
    from polyglot_groc.model.device import device_name, resolve_device

    try:
        return device_name(resolve_device(spec))
    except ConfigError as exc:
        raise BadInput(f"--device {spec}: {exc}") from exc


#: CPU-friendly char-CNN for benchmarks (the model default is 32/32/64/128/256/512).
DEFAULT_FILTERS = "1:32,2:32,3:64,4:64,5:64,6:64"


def parse_filters(text: str) -> list[list[int]]:
    """``--filters 1:32,2:32`` -> [[1, 32], [2, 32]]; exits with a one-line error otherwise."""
    try:
        pairs = [[int(x) for x in item.split(":")] for item in text.split(",") if item.strip()]
    except ValueError as exc:
        raise BadInput(f"--filters {text!r}: write width:count pairs, e.g. {DEFAULT_FILTERS}") from exc
    if not pairs or any(len(p) != 2 or min(p) < 1 for p in pairs):
        raise BadInput(f"--filters {text!r}: write width:count pairs, e.g. {DEFAULT_FILTERS}")
    return pairs


def check_models(names: list[str], known: Iterable[str]) -> None:
    """``--models``: every name must be one the script knows (BadInput naming the others)."""
    known = list(known)
    unknown = [m for m in names if m not in known]
    if unknown:
        raise BadInput(f"unknown --models {','.join(unknown)}; use a subset of {','.join(known)}")


def filters_override(text: str) -> dict[str, Any]:
    """``--filters 1:32,2:32`` as the config override ``{"model.surface.filters": [[1, 32], [2, 32]]}``."""
    return {"model.surface.filters": parse_filters(text)}


def add_ptb_training_args(ap: argparse.ArgumentParser) -> None:
    """The training budget flags the PTB benchmarks share, so their budgets stay comparable."""
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--bptt", type=int, default=35)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--dropout", type=float, default=0.2)
    ap.add_argument("--lr", type=float, default=0.002)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output-update-prob", type=float, default=1.0)


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str], tail: int = 600) -> dict[str, Any]:
    """Run ``cmd`` to its end in a child process: its wall and CPU seconds (the child's own, from
    ``wait4``), peak RSS in MiB (``ru_maxrss``), stdout and stderr; a failure is :class:`BadInput`
    naming the command and the last ``tail`` characters of its stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise BadInput(f"{' '.join(cmd[:4])} ... failed (exit {code}): {stderr.strip()[-tail:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "stdout": stdout, "stderr": stderr}
