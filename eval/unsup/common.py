"""What the unsupervised methods share: input checks, the result object, and CSLS helpers.

Every method of :mod:`eval.unsup` takes two spaces ``x`` ``(n_x, d)`` (source) and ``z``
``(n_z, d)`` (target), rows sorted by decreasing frequency as word2vec files are, and returns a
:class:`MapResult` in the convention of :class:`eval.align.AlignmentResult`: the mapped source is
``normalize(x) @ W.T`` and the mapped target ``normalize(z) @ W_tgt.T`` (``W_tgt`` None: the
target stays where it is).  :meth:`MapResult.alignment` is that :class:`~eval.align.AlignmentResult`,
for code that evaluates supervised maps.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.align import AlignmentResult, mean_csls_criterion
from eval.knn import _matrix, _unit_rows, csls_topk
from eval.methods.judging import CRITERION_WORDS
from eval.normalize import normalize_embeddings
from groc_base.checks import option
from groc_base.errors import InputError
from groc_base.fileio import atomic_write, dumps_json

logger = logging.getLogger(__name__)

__all__ = ["MapResult", "check_spaces", "csls_translations", "map_criterion", "normalized_pair", "top_words"]

#: CSLS neighbourhood size of every reference (MUSE's csls_knn_10, VecMap's --csls 10).
CSLS_K = 10


def check_spaces(x: np.ndarray, z: np.ndarray, *, extra_words: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``x`` and ``z`` as finite float32 matrices of one dimension ``d`` with more than
    ``max(d, CSLS_K) + extra_words - 1`` rows each (whitening and Procrustes on induced pairs need
    more words than dimensions, CSLS more than its neighbours) and some non-zero vector; anything
    else raises :class:`InputError` naming the fix."""
    a = _matrix("source vectors", x)
    b = _matrix("target vectors", z)
    if a.shape[1] != b.shape[1]:
        raise InputError(f"source vectors have dimension {a.shape[1]} but target vectors {b.shape[1]}; "
                         "align embeddings of the same size")
    min_words = max(a.shape[1], CSLS_K) + extra_words
    for name, m in (("source", a), ("target", b)):
        if m.shape[0] < min_words:
            raise InputError(f"the {name} vocabulary has {m.shape[0]} words; an unsupervised alignment needs at "
                             f"least {min_words} (more words than dimensions and CSLS neighbours): load more words")
        if not m.any():
            raise InputError(f"every {name} vector is zero; load trained vectors")
    return a, b


def top_words(value: int | None, *, knob: str, reference: str, default: int, n_x: int, n_z: int) -> int:
    """The top words of both sides a setting reads: ``value``, refused above the smaller vocabulary
    (``knob``: its keyword, e.g. ``wp_nmax``; the references clip it silently or crash), or, for None,
    the ``reference``'s ``default`` clipped to the smaller vocabulary."""
    if value is not None and value > min(n_x, n_z):
        raise InputError(f"{option(knob, value)} is larger than the vocabularies ({n_x} source, {n_z} target words); "
                         f"pass at most {min(n_x, n_z)}, or drop it for {reference}'s {default} clipped to the "
                         "vocabulary")
    return int(value) if value is not None else min(default, n_x, n_z)


def normalized_pair(x: np.ndarray, z: np.ndarray, ops: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Both spaces through the chain ``ops`` (new float32 arrays; no copy without a chain)."""
    if not ops:
        return x, z
    return (np.ascontiguousarray(normalize_embeddings(x, ops), dtype=np.float32),
            np.ascontiguousarray(normalize_embeddings(z, ops), dtype=np.float32))


#: Source rows per block of the criterion's search: 1,024 x 10,000 candidates is a 40 MiB block. On an
#: en-fr map (22k words a side, loaded: 122 MiB) the criterion alone peaks at 284 MiB with it and 302 with
#: the search's default (4,096); the rest of its peak is the CSLS sweep's slab (eval.knn.SWEEP_FLOATS).
CRITERION_BATCH = 1024


def map_criterion(mapped_src: np.ndarray, tgt: np.ndarray, *, n_words: int = CRITERION_WORDS) -> float:
    """MUSE's unsupervised criterion of a map: the mean cosine of the S2T CSLS dictionary of the
    top ``n_words`` words (:func:`eval.align.mean_csls_criterion`); ``-inf`` for an empty one."""
    return mean_csls_criterion(_unit_rows(mapped_src), _unit_rows(tgt), n_src=n_words, assume_normalized=True,
                               batch_size=CRITERION_BATCH)


def csls_translations(mapped_src: np.ndarray, tgt: np.ndarray, n_words: int, *,
                      backward: bool = False) -> np.ndarray:
    """The CSLS best target of each of the top ``n_words`` source rows (``backward``: the best source
    of each of the top target rows), searched among every row of the other side; ``(n_words,)``."""
    a, b = (_unit_rows(tgt), _unit_rows(mapped_src)) if backward else (_unit_rows(mapped_src), _unit_rows(tgt))
    rows = np.arange(min(n_words, a.shape[0]))
    ids, _ = csls_topk(a, b, 1, CSLS_K, rows, assume_normalized=True)
    return ids[:, 0]


@dataclass(frozen=True)
class MapResult:
    """An unsupervised (or self-learned) alignment.

    ``W`` ``(d', d)``: the mapped source is ``normalize(x) @ W.T``; ``W_tgt`` ``(d', d)`` or None:
    the mapped target is ``normalize(z) @ W_tgt.T`` (None: ``normalize(z)`` itself), with
    ``normalize`` the chain the method applied first.  ``dictionary`` ``(n, 2)`` holds
    (source row, target row) pairs: those the final map was fitted on (VecMap), or the S2T CSLS
    dictionary the returned map induces (MUSE); ``seed_dictionary`` the start (the unsupervised
    initialisation's, or the caller's seed).  ``history`` has one dict per
    iteration (``iteration``, ``objective``, ``dictionary_size``, ``seconds`` and the method's
    own keys), ``criterion`` is MUSE's unsupervised mean-CSLS cosine of the returned map,
    ``seconds`` the time of each phase, ``config`` the settings (a dict, for the JSON).
    """

    method: str
    W: np.ndarray
    W_tgt: np.ndarray | None
    normalize: tuple[str, ...]
    dictionary: np.ndarray
    seed_dictionary: np.ndarray
    criterion: float
    history: list[dict[str, Any]] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    seed: int | None = None
    config: dict[str, Any] = field(default_factory=dict)

    def map_source(self, x: np.ndarray) -> np.ndarray:
        """``normalize(x) @ W.T`` ``(n, d')``."""
        return (normalize_embeddings(x, self.normalize) if self.normalize else np.asarray(x)) @ self.W.T

    def prepare_target(self, z: np.ndarray) -> np.ndarray:
        """``normalize(z)``, then ``@ W_tgt.T`` where the target moves ``(n, d')``."""
        out = normalize_embeddings(z, self.normalize) if self.normalize else np.asarray(z)
        return out if self.W_tgt is None else out @ self.W_tgt.T

    def alignment(self) -> AlignmentResult:
        """The same map as an :class:`~eval.align.AlignmentResult` (its history: this one's, the
        criterion in the last entry, which is the one returned)."""
        history = [dict(h) for h in self.history] or [{"iteration": 0}]
        history[-1]["criterion"] = self.criterion
        return AlignmentResult(W=self.W, best_iteration=len(history) - 1, history=history,
                               normalize=self.normalize, W_tgt=self.W_tgt, method=self.method,
                               select_on="last")

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole result to one ``.npz`` file, atomically (the arrays, and the rest as JSON)."""
        meta = {"method": self.method, "normalize": list(self.normalize), "criterion": self.criterion,
                "history": self.history, "seconds": self.seconds, "seed": self.seed, "config": self.config}
        arrays = {"W": self.W, "dictionary": self.dictionary, "seed_dictionary": self.seed_dictionary,
                  "meta": np.array(dumps_json(meta))}
        if self.W_tgt is not None:
            arrays["W_tgt"] = self.W_tgt
        atomic_write(Path(path), lambda fh: np.savez(fh, **arrays))  # type: ignore[arg-type]

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> MapResult:
        """The result :meth:`save` wrote; InputError naming the file when it is not one."""
        try:
            with np.load(Path(path), allow_pickle=False) as f:
                meta = json.loads(str(f["meta"]))
                return cls(method=meta["method"], W=f["W"], W_tgt=f["W_tgt"] if "W_tgt" in f.files else None,
                           normalize=tuple(meta["normalize"]), dictionary=f["dictionary"],
                           seed_dictionary=f["seed_dictionary"],
                           criterion=-math.inf if meta["criterion"] is None else float(meta["criterion"]),
                           history=meta["history"], seconds=meta["seconds"], seed=meta["seed"], config=meta["config"])
        except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(f"{path} is not a saved MapResult ({exc}); pass the file MapResult.save wrote") from None

    def summary(self) -> dict[str, Any]:
        """The JSON-ready facts: method, criterion, dictionary sizes, iterations, seconds, seed, config."""
        return {"method": self.method, "criterion": self.criterion, "seed": self.seed,
                "normalize": ",".join(self.normalize) or "none",
                "seed_dictionary_size": int(self.seed_dictionary.shape[0]),
                "dictionary_size": int(self.dictionary.shape[0]), "iterations": len(self.history),
                "seconds": {k: round(v, 3) for k, v in self.seconds.items()}, "config": self.config}


class Timer:
    """Seconds per named phase, accumulated (``with timer("init"): ...``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._name = ""
        self._started = 0.0

    def __call__(self, name: str) -> Timer:
        self._name = name
        return self

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.seconds[self._name] = self.seconds.get(self._name, 0.0) + time.perf_counter() - self._started
