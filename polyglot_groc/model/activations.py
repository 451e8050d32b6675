"""Named activations, so configs can say ``relu`` or ``selu`` (seed 000 Table 8)."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

_ACTS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "identity": lambda x: x,
    "relu": F.relu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "selu": F.selu,
    "gelu": F.gelu,
}


def _relu_grad_(grad: torch.Tensor, t: torch.Tensor) -> None:
    grad.masked_fill_(t <= 0, 0.0)


def _tanh_grad_(grad: torch.Tensor, t: torch.Tensor) -> None:
    grad.mul_(1.0 - t * t)


def _sigmoid_grad_(grad: torch.Tensor, t: torch.Tensor) -> None:
    grad.mul_(t * (1.0 - t))


def _identity_grad_(grad: torch.Tensor, t: torch.Tensor) -> None:
    return None


#: act'(z) written through t = act(z), applied in place to a gradient: what lets the surface
#: encoder's fused functions keep only activated outputs for backward (with ``IN_PLACE``).
GRAD_FROM_OUTPUT: dict[str, Callable[[torch.Tensor, torch.Tensor], None]] = {
    "relu": _relu_grad_, "tanh": _tanh_grad_, "sigmoid": _sigmoid_grad_, "identity": _identity_grad_,
}
#: The same activations, applied in place; the others have no fused path and run through autograd.
IN_PLACE: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu_, "tanh": torch.tanh_, "sigmoid": torch.sigmoid_, "identity": lambda t: t,
}


def activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    try:
        return _ACTS[name]
    except KeyError as exc:
        raise ValueError(f"unknown activation {name!r}; use one of {', '.join(_ACTS)}") from exc
