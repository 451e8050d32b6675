"""Device and precision handling: one place that turns ``auto|cpu|cuda|cuda:N`` into a device.

The model parts never name a device: they follow their parameters (``next(parameters()).device``),
so the same code runs on CPU and CUDA. This module resolves the user's choice, rejects impossible
ones with a one-line :class:`ConfigError` (exit 2 in the CLI), builds the autocast context for
``train.precision``, and applies the CPU thread count (:func:`set_threads`, the one place; the count
a caller leaves open is picked by :mod:`polyglot_groc.model.threads`).
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable, Iterator

import torch

from groc_base.checks import option
from groc_base.errors import ConfigError
from polyglot_groc.config import DEVICE_PATTERN, PRECISIONS, THREADS_MAX
from polyglot_groc.model.threads import ThreadChoice, omp_num_threads, pick_threads, usable_cores

log = logging.getLogger(__name__)

_DEVICE_RE = re.compile(DEVICE_PATTERN)


def check_device_spec(spec: str) -> None:
    """Syntax check only (config validation must not depend on the machine)."""
    if not _DEVICE_RE.match(spec):
        raise ConfigError(f"unknown device {spec!r}; use auto, cpu, cuda or cuda:N")


def resolve_device(spec: str = "auto") -> torch.device:
    """``auto`` -> CUDA when available, else CPU; ``cuda`` without CUDA is an error."""
    check_device_spec(spec)
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"device {spec!r} was requested but CUDA is not available here; "
                              f"use {option('device', 'cpu')} (or auto)")
        dev = torch.device(spec)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ConfigError(f"device {spec!r} does not exist: this machine has {torch.cuda.device_count()} "
                              "CUDA device(s); use cuda:0..")
        return dev
    return torch.device("cpu")


def device_name(device: torch.device) -> str:
    """A readable name, e.g. ``cuda:NVIDIA H100`` or ``cpu``."""
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return device.type


def bf16_supported(device: torch.device) -> bool:
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    return device.type == "cpu"  # CPU autocast supports bfloat16 on every torch we support


def check_precision(precision: str, device: torch.device) -> None:
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown train.precision={precision!r}; use one of {', '.join(PRECISIONS)}")
    if precision == "bf16" and not bf16_supported(device):
        raise ConfigError(f"train.precision=bf16 is not supported on {device_name(device)}; use fp32 or tf32")


def resolve_precision(precision: str, device: torch.device) -> str:
    """The precision ``train.precision`` means on ``device``: ``auto`` is bf16 on a CUDA device that
    supports it (tests/test_cuda.py: within 1% of fp32's perplexity) and fp32 elsewhere, where the
    exact default stays; any other value is itself."""
    check_precision(precision, device)
    if precision != "auto":
        return precision
    return "bf16" if device.type == "cuda" and bf16_supported(device) else "fp32"


def set_matmul_precision(precision: str) -> None:
    """TF32 matmuls/convs on Ampere+ for ``tf32``; exact fp32 otherwise (no-op on CPU)."""
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


@contextlib.contextmanager
def autocast(precision: str, device: torch.device) -> Iterator[None]:
    """bf16 autocast for ``precision == "bf16"``; nothing otherwise.

    Only the encoder and the prefix run inside it: the caller computes logits' log-softmax and the
    loss in fp32 (see :meth:`LanguageModel.forward`).
    """
    if precision != "bf16":
        yield
        return
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
        yield


def maybe_compile(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """``torch.compile(fn)``, falling back to ``fn`` with a logged warning where compile fails.

    Compilation is lazy (it happens at the first call), so the fallback guards the calls too.
    """
    try:
        compiled = torch.compile(fn)
    except Exception as exc:  # compile is unavailable on some platforms / Python versions
        log.warning("torch.compile is unavailable (%s: %s); running eagerly", type(exc).__name__, exc)
        return fn
    state = {"ok": True}

    def run(x: torch.Tensor) -> torch.Tensor:
        if state["ok"]:
            try:
                return compiled(x)  # type: ignore[no-any-return]
            except Exception as exc:  # noqa: BLE001 - any backend failure means: run eagerly
                state["ok"] = False
                log.warning("torch.compile failed (%s: %s); running eagerly", type(exc).__name__, exc)
        return fn(x)

    return run


def set_threads(threads: int) -> ThreadChoice:
    """Use ``threads`` CPU threads for torch's intra-op work and for the BLAS and OpenMP pools
    (NumPy's GEMMs in alignment's k-NN kernel, faiss's heaps); ``0`` picks a count that is safe on a
    busy machine (:func:`~polyglot_groc.model.threads.pick_threads`: ``$OMP_NUM_THREADS`` when set,
    else the cores that other processes leave free). The one place threads are applied
    (``torch.set_num_threads``, and ``threadpoolctl`` for the native pools); the choice and its reason
    are logged and returned.
    """
    top = THREADS_MAX  # train.threads' upper bound
    if not 0 <= threads <= top:
        raise ConfigError(f"{option('threads', threads)} must lie in [0, {top}] (0: pick from the free cores)")
    from threadpoolctl import threadpool_limits

    global _applied
    choice = pick_threads(threads)
    torch.set_num_threads(choice.threads)
    threadpool_limits(limits=choice.threads)  # process-wide, as torch's setting; pools loaded by now
    _applied = choice.threads
    log.info("%s", choice.describe())
    return choice


def use_threads(threads: int | None) -> ThreadChoice | None:
    """:func:`set_threads` for an optional count (the library's workflows take ``threads=None`` by
    default): None picks as 0 does, unless the caller set torch's count itself
    (``torch.set_num_threads``, seen as a count that is neither torch's default nor the last one
    applied here): that is kept (None returned)."""
    if threads is None and _caller_set_threads():
        return None
    return set_threads(threads or 0)


#: The count :func:`set_threads` last applied (None: none yet), to tell it from the caller's own.
_applied: int | None = None


def _caller_set_threads() -> bool:
    current = torch.get_num_threads()
    default = omp_num_threads() or usable_cores()  # what torch starts with (OpenMP's own default)
    return current not in (default, _applied)


def to_cpu(obj: object) -> object:
    """Recursively move tensors to CPU so checkpoints load anywhere (device-independent)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [to_cpu(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(to_cpu(v) for v in obj)
    return obj


__all__ = ["PRECISIONS", "autocast", "bf16_supported", "check_device_spec", "check_precision", "device_name",
           "maybe_compile", "resolve_device", "resolve_precision", "set_matmul_precision", "set_threads", "to_cpu",
           "use_threads", "ThreadChoice"]
