"""Test-time caches and open-vocabulary interpolation (seed 000 §5, appendix C.4; Grave et al. 2017).

Everything works on per-token quantities of one test stream, flattened in reading order:

- ``logp``      (N,)   log p_model(y_t | history) of the gold next word over the union vocabulary;
- ``targets``   (N,)   gold next-word ids (any integer ids; only equality is used);
- ``hidden``    (N, d) the hidden state h_t that predicted y_t (neural cache keys and queries);
- ``new_mass``  (N,)   the model's total probability on words absent from training (for down-weighting);
- ``is_new``    (N,)   whether y_t is absent from training.

Only the gold word's probability is ever needed, so no (N, V) matrix is built: a cache's
probability of y_t is a sum over the earlier positions holding the same word.

Mixtures follow the seed's convention: ``lam`` is the weight of the model,
p = lam * p_model + (1 - lam) * p_cache (Grave et al. 2017c's lambda is 1 minus ours).
At the first position the cache is empty and the model is used alone.
"""

from __future__ import annotations

import math

import torch

from groc_base.checks import option
from groc_base.errors import InputError

__all__ = [
    "check_cache_params", "downweight_new", "interpolate_cache", "neural_cache_logprob",
    "uniform_interpolate", "unigram_cache_logprob",
]

NEG_INF = float("-inf")


class CacheParamError(InputError):
    """A cache hyperparameter outside its range."""


def check_cache_params(theta: float | None = None, lam: float | None = None, size: int | None = None,
                       new_word_weight: float | None = None, uniform_weight: float | None = None) -> None:
    """Raise :class:`CacheParamError` naming the first hyperparameter out of range."""
    def bad(name: str, value: object, rng: str) -> CacheParamError:
        return CacheParamError(f"{option(name)} = {value} is out of range; use a value in {rng}")
    if theta is not None and not (math.isfinite(theta) and theta >= 0):
        raise bad("cache_theta", theta, "[0, inf)")
    if lam is not None and not (0.0 <= lam <= 1.0):
        raise bad("cache_lambda", lam, "[0, 1]")
    if size is not None and size < 1:
        raise bad("cache_size", size, "[1, inf)")
    if new_word_weight is not None and not (0.0 < new_word_weight <= 1.0):
        raise bad("new_word_weight", new_word_weight, "(0, 1]")
    if uniform_weight is not None and not (0.0 <= uniform_weight < 1.0):
        raise bad("uniform_weight", uniform_weight, "[0, 1)")


def uniform_interpolate(logp: torch.Tensor, union_size: int | torch.Tensor, weight: float) -> torch.Tensor:
    """log((1 - w) p_model + w / |V_union|): keeps a closed-vocabulary model's perplexity finite.
    ``union_size``: one size, or each token's (N,) (lines scored over their own words)."""
    check_cache_params(uniform_weight=weight)
    if weight == 0.0:
        return logp
    if isinstance(union_size, torch.Tensor):
        log_each = math.log(weight) - torch.log(union_size.to(logp.dtype))  # (N,)
        return torch.logaddexp(logp + math.log1p(-weight), log_each)
    log_u = math.log(weight) - math.log(union_size)
    return torch.logaddexp(logp + math.log1p(-weight), torch.full_like(logp, log_u))


def downweight_new(logp: torch.Tensor, new_mass: torch.Tensor, is_new: torch.Tensor, weight: float) -> torch.Tensor:
    """Scale new words' probabilities by ``weight`` and renormalise (seed §5: dw = 0.1).

    p'(w) = p(w) a(w) / Z with a(w) = weight for new words and 1 otherwise, and
    Z = sum_w p(w) a(w) = 1 - (1 - weight) * new_mass.
    """
    check_cache_params(new_word_weight=weight)
    log_z = torch.log1p(-(1.0 - weight) * new_mass.clamp(0.0, 1.0))  # (N,)
    return logp + is_new.to(logp.dtype) * math.log(weight) - log_z


def _occurrence_rank(targets: torch.Tensor) -> torch.Tensor:
    """For each position t, how many earlier positions hold the same word (vectorised, no loop)."""
    n = targets.numel()
    pos = torch.arange(n, device=targets.device)
    # Stable sort by word id keeps reading order inside each word's group.
    order = torch.sort(targets, stable=True).indices  # (N,)
    sorted_t = targets[order]
    is_start = torch.ones(n, dtype=torch.bool, device=targets.device)
    is_start[1:] = sorted_t[1:] != sorted_t[:-1]
    # Index of the first member of each group, carried forward with cummax.
    group_start = torch.where(is_start, pos, torch.zeros_like(pos)).cummax(0).values
    rank = torch.empty_like(pos)
    rank[order] = pos - group_start
    return rank


def unigram_cache_logprob(targets: torch.Tensor) -> torch.Tensor:
    """log p_cache(y_t) = log(count of y_t in y_<t / t); -inf where never seen or t = 0.  (N,)"""
    n = targets.numel()
    counts = _occurrence_rank(targets).to(torch.float64)  # (N,)
    hist = torch.arange(n, dtype=torch.float64, device=targets.device)
    out = torch.full((n,), NEG_INF, dtype=torch.float64, device=targets.device)
    ok = counts > 0
    out[ok] = torch.log(counts[ok]) - torch.log(hist[ok])
    return out


def neural_cache_logprob(hidden: torch.Tensor, targets: torch.Tensor, theta: float, size: int,
                         chunk: int = 512) -> torch.Tensor:
    """Grave et al. (2017c) continuous cache: log p_cache(y_t | h_t) over the last ``size`` positions.

    p_cache(w) = sum_{i in W(t), y_i = w} exp(theta h_t.h_i) / sum_{i in W(t)} exp(theta h_t.h_i),
    W(t) = {i : t - size <= i < t}. Queries are processed in chunks of ``chunk`` rows, each
    against its own key window, as batched matrix products.  (N,) float64, -inf when w not in W(t).
    """
    check_cache_params(theta=theta, size=size)
    n = targets.numel()
    h = hidden.to(torch.float64)
    out = torch.full((n,), NEG_INF, dtype=torch.float64, device=hidden.device)
    for a in range(0, n, chunk):  # loop over chunks of time steps, not tokens
        b = min(a + chunk, n)
        k0 = max(0, a - size)
        q = h[a:b]  # (C, d)
        keys = h[k0:b]  # (K, d)
        scores = theta * (q @ keys.T)  # (C, K)
        t_idx = torch.arange(a, b, device=h.device)[:, None]  # (C, 1)
        i_idx = torch.arange(k0, b, device=h.device)[None, :]  # (1, K)
        in_window = (i_idx < t_idx) & (i_idx >= t_idx - size)  # (C, K)
        scores = scores.masked_fill(~in_window, NEG_INF)
        same = in_window & (targets[k0:b][None, :] == targets[a:b][:, None])  # (C, K)
        log_norm = torch.logsumexp(scores, dim=1)  # (C,)
        log_hit = torch.logsumexp(scores.masked_fill(~same, NEG_INF), dim=1)  # (C,)
        res = log_hit - log_norm
        res[~in_window.any(dim=1)] = NEG_INF  # empty window at t = 0
        out[a:b] = res
    return out


def interpolate_cache(logp_model: torch.Tensor, logp_cache: torch.Tensor, lam: float) -> torch.Tensor:
    """log(lam p_model + (1 - lam) p_cache); the first position (empty cache) keeps the model alone."""
    check_cache_params(lam=lam)
    lm = logp_model.to(torch.float64)
    if lam == 1.0:
        return lm
    if lam == 0.0:
        mixed = logp_cache.clone()
    else:
        mixed = torch.logaddexp(lm + math.log(lam), logp_cache + math.log1p(-lam))
    if mixed.numel():
        mixed[0] = lm[0]
    return mixed
