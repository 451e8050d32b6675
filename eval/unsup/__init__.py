"""Alignment without a dictionary, and the evidence whether it worked.

* :func:`vecmap_unsupervised`, :func:`vecmap_self_learning` (:mod:`eval.unsup.selflearn`): VecMap's
  robust self-learning, from its unsupervised start or from a seed (identical words, a lexicon, a
  small dictionary);
* :func:`muse_adversarial` (:mod:`eval.unsup.adversarial`): MUSE's adversarial start and
  Procrustes refinement (torch, imported when called);
* :func:`wasserstein_procrustes` (:mod:`eval.unsup.wasserstein`): fastText's convex start and stochastic
  Wasserstein-Procrustes (POT, imported when called);
* :func:`alignment_verdict` (:mod:`eval.unsup.verdict`): aligned, doubtful or failed, from restarts;
* :func:`fit_unsupervised` (:mod:`eval.unsup.run`): a method, its restarts and its verdict in one
  call, with :func:`recipe` naming the reference and how the call differs.

Every method returns a :class:`MapResult`; importing this package does not import torch.
"""

from eval.unsup.adversarial import AdversarialConfig, muse_adversarial
from eval.unsup.common import MapResult
from eval.unsup.run import REFERENCE_RECIPES, UNSUPERVISED_METHODS, UnsupervisedFit, fit_unsupervised, recipe
from eval.unsup.selflearn import (
    SelfLearningConfig,
    UnsupervisedConfig,
    similarity_init,
    vecmap_self_learning,
    vecmap_unsupervised,
)
from eval.unsup.verdict import STATUSES, Verdict, VerdictConfig, alignment_verdict, mutual_agreement
from eval.unsup.wasserstein import WassersteinConfig, convex_init, wasserstein_procrustes

__all__ = [
    "REFERENCE_RECIPES",
    "STATUSES",
    "UNSUPERVISED_METHODS",
    "AdversarialConfig",
    "MapResult",
    "SelfLearningConfig",
    "UnsupervisedConfig",
    "UnsupervisedFit",
    "Verdict",
    "VerdictConfig",
    "WassersteinConfig",
    "alignment_verdict",
    "convex_init",
    "fit_unsupervised",
    "muse_adversarial",
    "mutual_agreement",
    "recipe",
    "similarity_init",
    "vecmap_self_learning",
    "vecmap_unsupervised",
    "wasserstein_procrustes",
]
