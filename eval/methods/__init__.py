"""Alignment methods: one module each, registered by name (see :mod:`eval.methods.registry`).

* ``procrustes`` (:mod:`eval.methods.procrustes`): MUSE's supervised script, Procrustes with
  ``refine`` rounds of CSLS dictionary induction, the round chosen by ``select_on``;
* ``rcsls`` (:mod:`eval.methods.rcsls`): fastText's ``align.py``, on unit rows;
* ``vecmap`` (:mod:`eval.methods.vecmap`): VecMap's ``--supervised``; both spaces move;
* ``vecmap-self-learning`` (:mod:`eval.methods.vecmap_self_learning`): VecMap's ``--identical`` /
  ``--semi_supervised``, robust self-learning from any seed;
* ``vecmap-unsupervised`` (:mod:`eval.methods.vecmap_unsupervised`): VecMap's ``--unsupervised``, no dictionary;
* ``muse-adversarial`` (:mod:`eval.methods.muse_adversarial`): MUSE's ``unsupervised.py``, no dictionary;
* ``wasserstein-procrustes`` (:mod:`eval.methods.wasserstein_procrustes`): fastText's ``unsup_align.py``, no
  dictionary.

The last four judge their own map (:mod:`eval.methods.judging`: a verdict from restarts).

Each runs its reference's recipe by default (``normalize=None``: the reference's normalisation)
and :func:`recipe` says in words what the reference does and how a call differs from it.
:func:`~eval.methods.fitting.fit_mapping` fits any of them on arrays. Adding a method: a module
here that declares a frozen config dataclass and registers its fit with
:func:`~eval.methods.registry.register_method`, and its name on the import line below
(docs/internals.md, "Adding an alignment method").

Importing this package imports no numpy (the command line reads the configs to declare its
options); :func:`fit_mapping` is loaded on first use.
"""

from __future__ import annotations

from typing import Any

# The registration line: importing a method module registers it (in this order: --method's help lists them so);
# the methods whose config is imported below register there (muse_adversarial, vecmap_self_learning, ...).
from eval.methods import procrustes, rcsls, vecmap  # noqa: F401
from eval.methods.judging import VerdictConfig
from eval.methods.muse_adversarial import AdversarialConfig
from eval.methods.procrustes import ProcrustesConfig
from eval.methods.rcsls import RcslsConfig
from eval.methods.registry import (
    FitContext,
    Knob,
    Method,
    Plan,
    build_config,
    get_method,
    knob,
    knobs,
    method_names,
    methods,
    recipe,
    register_method,
    resolve_normalize,
)
from eval.methods.vecmap import VecmapConfig
from eval.methods.vecmap_self_learning import SelfLearningConfig, SemiSupervisedConfig
from eval.methods.vecmap_unsupervised import UnsupervisedConfig
from eval.methods.wasserstein_procrustes import WassersteinConfig

__all__ = ["AdversarialConfig", "FitContext", "Knob", "Method", "Plan", "ProcrustesConfig", "RcslsConfig",
           "SelfLearningConfig", "SemiSupervisedConfig", "UnsupervisedConfig", "VecmapConfig", "VerdictConfig",
           "WassersteinConfig",
           "build_config", "fit_mapping", "get_method", "knob", "knobs", "method_names", "methods", "recipe",
           "register_method", "resolve_normalize"]


def __getattr__(name: str) -> Any:
    if name == "fit_mapping":  # NumPy and faiss load with it, not with the registry
        from eval.methods.fitting import fit_mapping

        return fit_mapping
    raise AttributeError(f"module 'eval.methods' has no attribute {name!r}")
