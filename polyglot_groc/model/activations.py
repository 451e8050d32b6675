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


def activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    try:
        return _ACTS[name]
    except KeyError as exc:
        raise ValueError(f"unknown activation {name!r}; use one of {', '.join(_ACTS)}") from exc
