"""Multi-process data-parallel training under ``torchrun`` (torch.distributed; gloo on CPU, NCCL on CUDA).

Every rank builds the same model from the same seed and reads the same batch schedule; rank r
trains on its slice of the batch's parallel streams (rows ``r*B/N .. (r+1)*B/N``). After backward
the gradients are averaged over ranks with one all-reduce per step, which is what DDP does; it is
done explicitly here because a GroC step's parameter set changes between full and frozen
(sparse-update) steps, which DDP's bucketed hooks do not allow without unused-parameter scans.
Rank 0 alone writes the run directory, logs and checkpoints.

GroC's per-step vocabulary encoding is sharded: each rank encodes 1/N of the scored ids and the
rows are exchanged with the autograd-aware ``torch.distributed.nn.functional.all_gather`` (its
backward sums every rank's gradient into the shard's owner, so after the all-reduce mean the
encoder gradient equals the single-process one). ``train.shard_vocab = false`` encodes redundantly.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.distributed as dist

from groc_base.errors import ConfigError


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world: int = 1

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def rows(self, batch_size: int) -> slice:
        """This rank's slice of the batch's streams."""
        per = batch_size // self.world
        return slice(self.rank * per, (self.rank + 1) * per)


def world_from_env() -> tuple[int, int]:
    """(rank, world size) as torchrun sets them; (0, 1) outside torchrun."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def check_world(batch_size: int, world: int) -> None:
    if world > 1 and batch_size % world:
        raise ConfigError(f"train.batch_size={batch_size} does not divide over {world} processes; "
                          f"use a multiple of {world} or change --nproc_per_node")


def setup(device: torch.device, batch_size: int) -> DistContext:
    """Join the torchrun process group (if any) and pick this rank's CUDA device."""
    rank, world = world_from_env()
    check_world(batch_size, world)
    if world == 1:
        return DistContext()
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return DistContext(dist.get_rank(), dist.get_world_size())


def local_device(device: torch.device) -> torch.device:
    """Under torchrun, ``cuda`` means this process's GPU (LOCAL_RANK)."""
    if device.type == "cuda" and device.index is None and "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]))
    return device


def average_gradients(params: list[torch.nn.Parameter], world: int) -> None:
    """Mean of every gradient over ranks, in one flat all-reduce.

    Parameters without a gradient (the frozen embedder of a sparse-update step) stay without one,
    as in a single process, so the optimizer skips them there too; every rank draws the same
    full/frozen decision, so all ranks reduce the same list.
    """
    live = [p for p in params if p.grad is not None]
    if not live:
        return
    flat = torch.cat([p.grad.reshape(-1) for p in live if p.grad is not None])
    dist.all_reduce(flat)
    flat /= world
    offset = 0
    for p in live:
        n = p.numel()
        p.grad = flat[offset : offset + n].view_as(p).clone()
        offset += n


def sharded_encoder(encode: Callable[[torch.Tensor], torch.Tensor],
                    ctx: DistContext) -> Callable[[torch.Tensor], torch.Tensor]:
    """``encode`` over ids, each rank encoding a contiguous 1/N slice, rows all-gathered with autograd."""
    from torch.distributed.nn.functional import all_gather

    def run(ids: torch.Tensor) -> torch.Tensor:  # (V,) -> (V, d)
        n = ids.numel()
        per = -(-n // ctx.world)  # ceil: every rank gathers the same shape
        padded = torch.cat([ids, ids[:1].expand(per * ctx.world - n)]) if per * ctx.world > n else ids
        mine = encode(padded[ctx.rank * per : (ctx.rank + 1) * per])  # (per, d)
        return torch.cat(all_gather(mine), dim=0)[:n]

    return run


__all__ = ["DistContext", "average_gradients", "check_world", "local_device", "setup", "sharded_encoder",
           "world_from_env"]
