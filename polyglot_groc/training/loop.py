"""The training loop's state: what it carries from step to step, and the running loss on the device.

:class:`LoopState` is everything a step or an evaluation changes that a resumed run needs to go on
exactly as if it had never stopped; ``last.pt`` holds it (:meth:`LoopState.to_checkpoint`) beside
the model, the optimizer, the batcher and the global RNG states, which the trainer saves itself.
The checkpoint keys are those of every earlier version, so old checkpoints still resume.

:class:`RunningLoss` is per process and never saved: the loss summed on the device between two
reads, so that the loop syncs with the host only at log points and evaluations.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from groc_base.errors import CheckpointError
from polyglot_groc.config import TrainConfig
from polyglot_groc.model.prefix import State
from polyglot_groc.training.distributed import DistContext

__all__ = ["LoopState", "RunningLoss"]


@dataclass
class LoopState:
    """What the training loop carries across steps and evaluations (totals over the whole run,
    across resumes), saved in every checkpoint so that a resumed run continues exactly.

    The schedule (lr decay after ``train.lr_patience`` evaluations without improvement, early stop
    after ``train.stop_patience``) moves at scheduled evaluations only; the evaluation a stop adds
    between them saves the model but leaves ``best_nll``, ``bad_evals``, ``lr`` and the running loss
    alone, so a run stopped there resumes as if it had not stopped.
    """

    #: The learning rate the schedule has reached (a variable-length window scales it for its step only).
    lr: float
    #: Sparse output updates (``train.output_update_prob``): one coin per step, its own generator.
    update_rng: np.random.Generator
    step: int = 0
    #: Target tokens trained on (all ranks) and seconds spent in training steps (not validation).
    tokens: int = 0
    train_time: float = 0.0
    #: The schedule's best validation NLL (scheduled evaluations) and the best of every evaluation
    #: (what best.pt holds); evaluations since the schedule's best without improving on it.
    best_nll: float = math.inf
    best_ckpt_nll: float = math.inf
    bad_evals: int = 0
    #: Per-language validation perplexity of best.pt and of the last evaluation.
    best_valid: dict[str, float] = field(default_factory=dict)
    last_valid: dict[str, float] = field(default_factory=dict)
    #: Training loss read from the device since the last scheduled evaluation: sum of step means, steps.
    loss_acc: float = 0.0
    loss_n: int = 0
    #: Batches trained per language (the language mix).
    lang_batches: Counter[str] = field(default_factory=Counter)
    #: Each language's LSTM state carried into its next window: per layer (h, c), each
    #: (1, streams, hidden). A language starts from zeros, and again after its stream wraps.
    lstm_states: dict[str, State] = field(default_factory=dict)

    @classmethod
    def start(cls, t: TrainConfig) -> LoopState:
        """The state before a new run's first step."""
        return cls(lr=t.lr, update_rng=np.random.default_rng(t.seed + 1))

    def epoch(self, steps_per_epoch: int) -> float:
        return self.step / steps_per_epoch

    def to_checkpoint(self, steps_per_epoch: int) -> dict[str, Any]:
        """This state as checkpoint entries (tensors where they are; the trainer moves them to CPU).

        The keys and value types are the checkpoint format every version wrote: ``lstm_states`` as
        ``{lang: [[h, c], ...]}``, ``update_rng`` as the JSON of the generator's state.
        """
        return {"step": self.step, "epoch": self.epoch(steps_per_epoch), "steps_per_epoch": steps_per_epoch,
                "best_nll": self.best_nll, "best_ckpt_nll": self.best_ckpt_nll, "bad_evals": self.bad_evals,
                "lr": self.lr, "valid": dict(self.last_valid), "best_valid": dict(self.best_valid),
                "tokens": self.tokens, "train_time": self.train_time, "loss_acc": self.loss_acc,
                "loss_n": self.loss_n, "lang_batches": dict(self.lang_batches),
                "lstm_states": {k: [[h, c] for h, c in st] for k, st in self.lstm_states.items()},
                "update_rng": json.dumps(self.update_rng.bit_generator.state)}

    @classmethod
    def from_checkpoint(cls, payload: Mapping[str, Any], device: torch.device | str = "cpu", *,
                        source: str = "the checkpoint") -> LoopState:
        """The state a checkpoint holds, LSTM states on ``device`` (``source`` names it in errors).

        Reads every version's checkpoints: ``best_ckpt_nll``, ``loss_acc`` and ``loss_n`` are absent
        from the oldest (every evaluation was scheduled then, and the running loss started afresh).
        Raises :class:`CheckpointError` when the resume state is missing or malformed.
        """
        try:
            rng = np.random.default_rng()
            rng.bit_generator.state = json.loads(payload["update_rng"])
            best_nll = float(payload["best_nll"])
            return cls(
                lr=float(payload["lr"]), update_rng=rng, step=int(payload["step"]), tokens=int(payload["tokens"]),
                train_time=float(payload["train_time"]), best_nll=best_nll,
                best_ckpt_nll=float(payload.get("best_ckpt_nll", best_nll)), bad_evals=int(payload["bad_evals"]),
                best_valid=dict(payload["best_valid"]), last_valid=dict(payload["valid"]),
                loss_acc=float(payload.get("loss_acc", 0.0)), loss_n=int(payload.get("loss_n", 0)),
                lang_batches=Counter({k: int(v) for k, v in payload["lang_batches"].items()}),
                lstm_states={k: [(h.to(device), c.to(device)) for h, c in st]
                             for k, st in payload["lstm_states"].items()})
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CheckpointError(f"{source} lacks resume state ({exc!r}); it was written by an older "
                                  "polyglot-groc: start a new run") from exc


class RunningLoss:
    """The training loss summed on the device since the last read; reading it is the loop's only host sync.

    Per process and never checkpointed: a read moves the sum into the run's :class:`LoopState`
    (``loss_acc``, ``loss_n``). ``last`` is the mean shown with each step: the last read, or
    before a process's first read a peek at steps 1, 2, 4, 8, ... (one sync each, sums untouched,
    so the logged loss does not depend on how often it was peeked at).
    """

    def __init__(self, device: torch.device, dist: DistContext) -> None:
        self.device, self.dist = device, dist
        self.total = torch.zeros((), device=device)  # 0-dim sum of step losses since the last read
        self.count = 0
        self.last = math.nan
        self.reads = 0
        self.steps = 0  # steps made by this process (not before a resume)

    def add(self, loss: torch.Tensor) -> None:
        self.total = self.total + loss.detach()
        self.count += 1
        self.steps += 1

    def read(self, state: LoopState) -> bool:
        """Move the sum into ``state``; False when it is not finite (training diverged; ``state`` untouched)."""
        if self.count == 0:
            return True
        self.reads += 1
        if self.dist.enabled:  # the global batch's loss: mean over ranks (a sync at log points only)
            torch.distributed.all_reduce(self.total)
            self.total /= self.dist.world
        total = float(self.total)
        if not math.isfinite(total):
            return False
        state.loss_acc += total
        state.loss_n += self.count
        self.last = total / self.count
        self.total, self.count = torch.zeros((), device=self.device), 0
        return True

    def peek_early(self) -> None:
        """Before this process's first read, show the running mean at its steps 1, 2, 4, 8, ..."""
        if not self.reads and self.steps & (self.steps - 1) == 0 and self.count:
            self.last = float(self.total) / self.count
