"""The parsing probe as a workflow: train the biaffine parser on a source treebank (+ a few target trees)
with frozen features read from :func:`~polyglot_groc.contextual.features.features` HDF5 files (or on
learned word embeddings), and score it on the target's test trees (seed 004 §3.7, Tables 3.4/A.5)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import check_non_negative, option
from groc_base.errors import InputError
from groc_base.wording import counted
from polyglot_groc.contextual.parser import ParserConfig, attachment_scores, parse, train_parser
from polyglot_groc.contextual.treebank import Sentence, read_conllu

__all__ = ["ProbeResult", "probe", "read_features"]

PathLike = str | os.PathLike[str]


def read_features(path: PathLike, n_sentences: int | None = None) -> list[np.ndarray]:
    """The per-sentence arrays of a features HDF5 file, in sentence order: (L, T, D) each (``--layers all``)."""
    from polyglot_groc.contextual.features import _import_h5py

    h5py = _import_h5py()
    path = Path(path)
    if not path.is_file():
        raise InputError(f"features file {path} does not exist; write it with polyglot-groc features")
    try:
        with h5py.File(path, "r") as fin:
            n = len(fin) - ("sentence_to_index" in fin)
            n = n if n_sentences is None else min(n, n_sentences)
            out = [np.asarray(fin[str(i)][...], dtype=np.float32) for i in range(n)]
    except (OSError, KeyError) as exc:
        raise InputError(f"features file {path} is not a features HDF5 file: {exc}") from exc
    if out and out[0].ndim != 3:
        raise InputError(f"features file {path} holds (T, D) arrays; the probe mixes the layers itself, so write "
                         f"it with {option('layers', 'all')}")
    return out


@dataclass(frozen=True)
class ProbeResult:
    """UAS/LAS (percent, CoNLL 2018 style) of one probe run, and what it was trained on."""

    uas: float
    las: float
    words: int
    n_source: int
    n_target: int
    seed: int
    mix: list[float] | None = None
    gamma: float | None = None
    config: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"uas": self.uas, "las": self.las, "words": self.words, "n_source": self.n_source,
                "n_target": self.n_target, "seed": self.seed, "mix": self.mix, "gamma": self.gamma,
                "config": self.config}


def _trees(t: PathLike | list[Sentence], limit: int | None = None) -> list[Sentence]:
    return read_conllu(t, limit) if isinstance(t, (str, os.PathLike)) else list(t)[:limit]


def probe(
    *,
    source: PathLike | list[Sentence],
    test: PathLike | list[Sentence],
    target: PathLike | list[Sentence] | None = None,
    source_features: PathLike | list[np.ndarray] | None = None,
    target_features: PathLike | list[np.ndarray] | None = None,
    test_features: PathLike | list[np.ndarray] | None = None,
    n_source: int | None = None,
    n_target: int = 0,
    seed: int = 0,
    config: ParserConfig | None = None,
    device: str = "cpu",
) -> ProbeResult:
    """Train the parsing probe and score it on ``test``.

    Args:
        source: Source treebank (CoNLL-U path or trees), e.g. English EWT train.
        test: The target's test treebank.
        target: The target's training pool; ``n_target`` trees are drawn from it (by ``seed``).
        source_features, target_features, test_features: Features of the same files (HDF5 from
            ``features --layers all``, or arrays (L, T, D)); all None: the no-LM baseline (word embeddings).
        n_source: Use the first N source trees (None: all).
        n_target: Target training trees (0: zero-target transfer).
        seed: Parser initialisation, batch order and the target draw.
        config: Parser sizes and budget (:class:`ParserConfig`).
        device: Torch device.

    Returns:
        A :class:`ProbeResult`.

    Raises:
        InputError: missing or mismatched trees and features, a bad size.
    """
    check_non_negative(n_target=n_target)
    baseline = source_features is None and test_features is None
    if not baseline and (source_features is None or test_features is None or
                         (n_target > 0 and target_features is None)):
        raise InputError("give features for the source, the test trees and (with n_target > 0) the target pool, "
                         "or none of them for the word-embedding baseline")
    src = _trees(source, n_source)
    tst = _trees(test)
    pool: list[Sentence] = _trees(target) if target is not None and n_target > 0 else []
    if n_target > len(pool):
        raise InputError(f"n_target={n_target} but the target pool has {counted(len(pool), 'tree')}")
    pick = sorted(np.random.default_rng(seed).choice(len(pool), size=n_target, replace=False)) if n_target else []
    tgt = [pool[i] for i in pick]

    def feats(f: PathLike | list[np.ndarray] | None, n: int | None) -> list[np.ndarray] | None:
        if f is None:
            return None
        return read_features(f, n) if isinstance(f, (str, os.PathLike)) else list(f)[:n]

    src_x = feats(source_features, len(src))
    tst_x = feats(test_features, len(tst))
    tgt_x = None
    if tgt:
        all_t = feats(target_features, None)
        assert all_t is not None or baseline
        tgt_x = [all_t[i] for i in pick] if all_t is not None else None
    parser = train_parser(src, src_x, tgt, tgt_x, cfg=config, seed=seed, device=device)
    scores = attachment_scores(tst, parse(parser, tst, tst_x))
    mix = gamma = None
    if parser.model.mix is not None:
        import torch

        mix = [round(float(w), 4) for w in torch.softmax(parser.model.mix.weights.detach(), 0)]
        gamma = round(float(parser.model.mix.gamma.detach()), 4)
    cfg = parser.model.cfg
    return ProbeResult(round(scores["uas"], 2), round(scores["las"], 2), int(scores["words"]), len(src), len(tgt),
                       seed, mix, gamma, dict(cfg.__dict__))
