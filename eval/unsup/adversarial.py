"""MUSE's unsupervised alignment (Conneau, Lample, Ranzato, Denoyer, Jégou 2018, ICLR: "Word
translation without parallel data"), the reference being ``unsupervised.py`` and ``src/trainer.py``
of github.com/facebookresearch/MUSE.

1. Adversarial start: a linear map ``W`` (identity at first) and a discriminator (an MLP, 2
   hidden layers of 2,048 units, leaky ReLU 0.2, input dropout 0.1, sigmoid) that tells mapped
   source words ``W x`` from target words, both drawn uniformly from the ``dis_most_frequent``
   (75,000) most frequent words.  Each iteration trains the discriminator ``dis_steps`` (5) times
   (cross-entropy, labels smoothed by 0.1), then ``W`` once to fool it, each by SGD (lr 0.1) on
   batches of 32 words per side; after every step of ``W``, ``W <- (1 + beta) W - beta W W^T W``
   (beta 0.001) keeps it near orthogonal.  After each epoch (1,000,000 words, 5 epochs) the
   unsupervised criterion (mean cosine of the S2T CSLS dictionary of the top 10,000 words) keeps
   the best ``W``; the map's learning rate decays by 0.98 per epoch and halves from the second time
   the criterion falls; training stops when it is below 1e-6.
2. Refinement: from the best ``W``, ``n_refinement`` (5) rounds of dictionary induction (S2T,
   CSLS k=10, the top 15,000 words) and Procrustes; the criterion keeps the best map over both
   phases.

How this differs from the reference: it runs on CPU through torch (imported when called) in one
process; the refinement and the criterion are :func:`eval.align.align` and
:func:`eval.align.mean_csls_criterion` (exact top-k search; MUSE's are the same computation);
``dis_most_frequent`` None means 75,000 clipped to the vocabularies (MUSE asserts), and an explicit
value above a vocabulary is refused; the random numbers come from one seeded torch generator
(MUSE's ``--seed`` default -1 draws none).  The reference's schedule (5 x 1,000,000 words, 6 MLP
steps of 2 x 2,048 units per batch) takes hours of one CPU core; :meth:`AdversarialConfig.reduced`
is a schedule for a CPU at a reduced vocabulary (say which one you ran wherever you quote it).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from typing import Any

import numpy as np

from eval.align import align, build_dictionary
from eval.knn import _unit_rows
from eval.methods.muse_adversarial import MUSE_MOST_FREQUENT, AdversarialConfig
from eval.unsup.common import MapResult, Timer, check_spaces, map_criterion, normalized_pair, top_words
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["AdversarialConfig", "muse_adversarial"]

def _discriminator(d: int, cfg: AdversarialConfig) -> Any:
    """MUSE's ``Discriminator``: input dropout, ``dis_layers`` hidden layers, one sigmoid output."""
    from torch import nn

    layers: list[nn.Module] = [nn.Dropout(cfg.dis_input_dropout)]
    width = d
    for _ in range(cfg.dis_layers):
        layers += [nn.Linear(width, cfg.dis_hid_dim), nn.LeakyReLU(0.2), nn.Dropout(cfg.dis_dropout)]
        width = cfg.dis_hid_dim
    layers += [nn.Linear(width, 1), nn.Sigmoid()]
    return nn.Sequential(*layers)


def _adversarial(x: np.ndarray, z: np.ndarray, cfg: AdversarialConfig, most_frequent: int, seed: int | None,
                 history: list[dict[str, Any]]) -> tuple[np.ndarray, float]:
    """The adversarial phase on the normalised spaces; the best ``W`` ``(d, d)`` by the criterion and
    that criterion (one history entry per epoch)."""
    import torch
    from torch.nn import functional as F

    d = x.shape[1]
    xs = torch.from_numpy(np.ascontiguousarray(x[:most_frequent]))  # (mf, d)
    zs = torch.from_numpy(np.ascontiguousarray(z[:most_frequent]))  # (mf, d)
    best_w, best = np.eye(d, dtype=np.float32), -math.inf
    with torch.random.fork_rng(devices=[]):  # the caller's global torch RNG is left as it was
        if seed is not None:
            torch.manual_seed(seed)
        mapping = torch.nn.Linear(d, d, bias=False)
        with torch.no_grad():
            mapping.weight.copy_(torch.eye(d))
        disc = _discriminator(d, cfg)
        map_opt = torch.optim.SGD(mapping.parameters(), lr=cfg.map_lr)
        dis_opt = torch.optim.SGD(disc.parameters(), lr=cfg.dis_lr)
        bs = cfg.batch_size
        target = torch.cat([torch.full((bs,), 1.0 - cfg.dis_smooth), torch.full((bs,), cfg.dis_smooth)])  # (2 bs,)
        decrease_lr = False

        def batch(grad: bool) -> torch.Tensor:
            src = xs[torch.randint(most_frequent, (bs,))]  # (bs, d)
            tgt = zs[torch.randint(most_frequent, (bs,))]
            mapped = mapping(src) if grad else mapping(src).detach()
            return torch.cat([mapped, tgt])  # (2 bs, d)

        for epoch in range(cfg.n_epochs):
            started, losses = time.perf_counter(), []
            for _ in range(0, cfg.epoch_size, bs):
                disc.train()
                for _ in range(cfg.dis_steps):
                    loss = F.binary_cross_entropy(disc(batch(False)).view(-1), target)
                    dis_opt.zero_grad()
                    loss.backward()
                    dis_opt.step()
                    losses.append(loss.item())
                    if cfg.dis_clip_weights > 0:
                        with torch.no_grad():
                            for p in disc.parameters():
                                p.clamp_(-cfg.dis_clip_weights, cfg.dis_clip_weights)
                disc.eval()
                fool = cfg.dis_lambda * F.binary_cross_entropy(disc(batch(True)).view(-1), 1.0 - target)
                map_opt.zero_grad()
                fool.backward()
                map_opt.step()
                with torch.no_grad():  # MUSE's orthogonalize()
                    w = mapping.weight
                    w.copy_((1 + cfg.map_beta) * w - cfg.map_beta * w @ (w.T @ w))
            w_now = mapping.weight.detach().numpy().copy()  # (d, d): mapped = x @ w.T
            if not np.isfinite(w_now).all():
                raise InputError("the adversarial map diverged (nan); lower map_lr or normalise the vectors")
            criterion = map_criterion(x @ w_now.T, z, n_words=cfg.criterion_words)
            lr = map_opt.param_groups[0]["lr"]
            history.append({"phase": "adversarial", "iteration": epoch, "criterion": criterion,
                            "discriminator_loss": float(np.mean(losses)), "map_lr": lr,
                            "seconds": time.perf_counter() - started})
            logger.info("adversarial epoch %d: discriminator loss %.4f, criterion %.5f (%.1fs)", epoch,
                        history[-1]["discriminator_loss"], criterion, history[-1]["seconds"])
            if criterion > best:
                best_w, best = w_now, criterion
            # MUSE's update_lr: decay every epoch; shrink from the second epoch whose criterion fell.
            lr = max(cfg.min_lr, lr * cfg.lr_decay)
            if cfg.lr_shrink < 1 and criterion < best:
                if decrease_lr:
                    lr *= cfg.lr_shrink
                decrease_lr = True
            for group in map_opt.param_groups:
                group["lr"] = lr
            if lr < cfg.min_lr:
                logger.info("map learning rate below %g: adversarial training stops", cfg.min_lr)
                break
    return best_w, best


def _s2t(x: np.ndarray, z: np.ndarray, w: np.ndarray, cfg: AdversarialConfig) -> np.ndarray:
    """MUSE's refinement dictionary of the map ``w``: S2T by CSLS among the top ``dico_max_rank`` words."""
    return build_dictionary(_unit_rows(x @ w.T), _unit_rows(z), method="csls", build="S2T",
                            max_rank=cfg.dico_max_rank, assume_normalized=True)


def muse_adversarial(x: np.ndarray, z: np.ndarray, config: AdversarialConfig | None = None, *,
                     seed: int | None = 0, normalized: tuple[str, ...] | None = None) -> MapResult:
    """MUSE's ``unsupervised.py`` on the raw spaces ``x`` ``(n_x, d)`` and ``z`` ``(n_z, d)``:
    the adversarial start, then Procrustes refinement; the map with the best unsupervised
    criterion over both phases (see the module's text for the differences from the reference).
    ``seed`` makes a run repeatable on one machine and thread count; ``normalized``: the chain ``x`` and
    ``z`` went through already (not applied again; the result's ``normalize`` is then empty)."""
    cfg = config or AdversarialConfig()
    x32, z32 = check_spaces(x, z)
    most_frequent = top_words(cfg.dis_most_frequent, knob="muse_dis_most_frequent", reference="MUSE",
                              default=MUSE_MOST_FREQUENT, n_x=x32.shape[0], n_z=z32.shape[0])
    timer = Timer()
    history: list[dict[str, Any]] = []
    ops = cfg.normalize if normalized is None else ()
    with timer("normalize"):
        xn, zn = normalized_pair(x32, z32, ops)
    with timer("adversarial"):
        w, criterion = _adversarial(xn, zn, cfg, most_frequent, seed, history)
    with timer("refinement"):
        start = _s2t(xn, zn, w, cfg)
        if cfg.n_refinement > 0 and start.shape[0] > 0:
            refined = align(xn, zn, start, n_refinement=cfg.n_refinement - 1, dico_build="S2T",
                            dico_max_rank=cfg.dico_max_rank, criterion_n_src=cfg.criterion_words)
            for h in refined.history:
                history.append({"phase": "refinement", **h})
            if refined.best_criterion > criterion:
                w, criterion = np.asarray(refined.W, dtype=np.float32), refined.best_criterion
        dictionary = _s2t(xn, zn, w, cfg)
    logger.info("muse adversarial: criterion %.5f", criterion)
    chain = cfg.normalize if normalized is None else tuple(normalized)
    config_dict = {**dataclasses.asdict(cfg), "normalize": ",".join(chain) or "none",
                   "dis_most_frequent": most_frequent}
    config_dict.pop("verdict", None)
    return MapResult(method="muse-adversarial", W=np.ascontiguousarray(w, dtype=np.float32), W_tgt=None,
                     normalize=ops, dictionary=dictionary, seed_dictionary=start, criterion=criterion,
                     history=history, seconds=timer.seconds, seed=seed, config=config_dict)
