"""AWD-LSTM activation regularisers (Merity et al. 2018), as in the released GroC code.

AR penalises the magnitude of the prefix's *dropped* top output, TAR the change of its *raw*
top output between consecutive time steps; both are means over all elements (AWD's ``.pow(2).mean()``).
"""

from __future__ import annotations

import torch


def activation_regularisation(hidden: torch.Tensor, alpha: float) -> torch.Tensor:
    """alpha * mean(h^2) over the dropped top output.  hidden: (B, T, d) -> ()"""
    return alpha * hidden.pow(2).mean()


def temporal_activation_regularisation(hidden_raw: torch.Tensor, beta: float) -> torch.Tensor:
    """beta * mean((h_t - h_{t-1})^2) over the raw top output.  hidden_raw: (B, T, d) -> ()"""
    if hidden_raw.shape[1] < 2:
        return hidden_raw.new_zeros(())
    return beta * (hidden_raw[:, 1:] - hidden_raw[:, :-1]).pow(2).mean()


def ar_tar_penalty(hidden: torch.Tensor | None, hidden_raw: torch.Tensor | None,
                   alpha: float, beta: float) -> torch.Tensor | None:
    """The summed penalty to add to the loss, or None when both are off (or outputs missing)."""
    terms = []
    if alpha > 0 and hidden is not None:
        terms.append(activation_regularisation(hidden, alpha))
    if beta > 0 and hidden_raw is not None:
        terms.append(temporal_activation_regularisation(hidden_raw, beta))
    if not terms:
        return None
    return torch.stack(terms).sum()
