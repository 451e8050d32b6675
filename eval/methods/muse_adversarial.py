"""``muse-adversarial``: MUSE's ``unsupervised.py`` (Conneau et al. 2018, ICLR), the method of
``--dictionary-mode adversarial``: an adversarial start, Procrustes refinement, the best map by the
unsupervised criterion; judged by restarts (other seeds).

The maths is :mod:`eval.unsup.adversarial` (torch, imported when the fit runs); this module declares the
knobs (``--muse-*``) and registers it. The reference's schedule takes hours of one CPU core;
:meth:`AdversarialConfig.reduced` (``--muse-dis-hid-dim 512 --muse-n-epochs 3 --muse-epoch-size 250000``)
is a CPU schedule, best with ``--max-vocab`` or ``--muse-dis-most-frequent`` reduced too.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from eval.methods.judging import CRITERION_WORDS, VerdictConfig, fit_judged, script_differences
from eval.methods.registry import FitContext, MethodConfig, check_fields, knob, register_method
from groc_base.checks import is_int
from groc_base.errors import ConfigError, InputError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["MUSE_MOST_FREQUENT", "AdversarialConfig"]

#: MUSE's --dis_most_frequent.
MUSE_MOST_FREQUENT = 75_000


@dataclass(frozen=True)
class AdversarialConfig(MethodConfig):
    """MUSE ``unsupervised.py``'s defaults; ranges checked once, here (the knobs on their fields)."""

    knob_prefix: ClassVar[str] = "muse"

    #: The normalisation :mod:`eval.unsup` applies to raw arrays (MUSE: ``--normalize_embeddings ""``).
    normalize: tuple[str, ...] = ()
    dis_layers: int = 2
    dis_hid_dim: int = knob(2048, check="positive_int", help="discriminator hidden units (MUSE's --dis_hid_dim)")
    dis_dropout: float = 0.0
    dis_input_dropout: float = 0.1
    dis_steps: int = knob(5, check="positive_int", help="discriminator steps per map step (MUSE's --dis_steps)")
    dis_lambda: float = 1.0
    dis_most_frequent: int | None = knob(
        None, check="positive_int", show_default="MUSE's 75000, clipped to the vocabularies",
        help="the discriminator sees the top N words of each side (MUSE's --dis_most_frequent); above a "
             "vocabulary: refused")
    dis_smooth: float = 0.1
    dis_clip_weights: float = 0.0
    n_epochs: int = knob(5, check="non_negative_int", help="adversarial epochs (MUSE's --n_epochs)")
    epoch_size: int = knob(1_000_000, check="positive_int", help="words per epoch (MUSE's --epoch_size)")
    batch_size: int = knob(32, check="positive_int", help="words per side and batch (MUSE's --batch_size)")
    map_lr: float = knob(0.1, check="positive", help="SGD learning rate of the map (MUSE's --map_optimizer sgd,lr=)")
    dis_lr: float = knob(0.1, check="positive", help="SGD learning rate of the discriminator")
    lr_decay: float = 0.98
    min_lr: float = 1e-6
    lr_shrink: float = 0.5
    map_beta: float = 0.001
    n_refinement: int = knob(5, check="non_negative_int", help="Procrustes refinements after the adversarial "
                                                               "start (MUSE's --n_refinement)")
    dico_max_rank: int = knob(15_000, check="positive_int", help="refinement dictionaries among the top N words "
                                                                 "(MUSE's --dico_max_rank)")
    criterion_words: int = CRITERION_WORDS
    verdict: VerdictConfig = field(default_factory=VerdictConfig)

    def __post_init__(self) -> None:
        check_fields(self)
        for name, least in (("dis_layers", 0), ("criterion_words", 1)):
            value = getattr(self, name)
            if not is_int(value) or value < least:
                raise ConfigError(f"{name}={value!r}; pass an integer >= {least}")
        for name, low, high in (("dis_dropout", 0.0, 0.99), ("dis_input_dropout", 0.0, 0.99),
                                ("dis_smooth", 0.0, 0.49), ("dis_clip_weights", 0.0, 1e6), ("dis_lambda", 0.0, 1e6),
                                ("lr_decay", 0.0, 1.0), ("min_lr", 0.0, 1.0), ("lr_shrink", 0.0, 1.0),
                                ("map_beta", 0.0, 1.0)):
            value = getattr(self, name)
            if not (is_int(value) or isinstance(value, float)) or not low <= value <= high:
                raise ConfigError(f"{name}={value!r}; pass a number in [{low}, {high}]")
        for name in ("dis_lambda", "lr_decay", "lr_shrink"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name}={getattr(self, name)!r}; pass a number > 0")
        from eval.normalize import parse_normalize  # numpy: at construction, not at import

        try:
            object.__setattr__(self, "normalize", parse_normalize(self.normalize))
        except InputError as exc:
            raise ConfigError(str(exc)) from None

    @classmethod
    def reduced(cls, **changes: Any) -> AdversarialConfig:
        """A CPU schedule: a discriminator of 2 x 512 units, 3 epochs of 250,000 words, the rest
        MUSE's (about 1/20 of the reference's MLP work); ``changes`` override any field."""
        return dataclasses.replace(cls(dis_hid_dim=512, n_epochs=3, epoch_size=250_000), **changes)


def _differences(cfg: AdversarialConfig, context: FitContext) -> list[str]:
    return script_differences(cfg, context, reference="MUSE", lowercases=True, always=[
        "one seeded torch generator on the CPU (MUSE: unseeded by default, on a GPU); refinement and criterion "
        "through eval.align (exact CSLS search)"])


@register_method(
    "muse-adversarial", config=AdversarialConfig,
    summary="MUSE's unsupervised.py: adversarial start + Procrustes refinement, no dictionary, judged",
    recipe=("MUSE unsupervised.py: no normalisation; a linear map (identity start) against a discriminator (2 x 2048 "
            "units, input dropout 0.1, smoothing 0.1) on the 75000 most frequent words, SGD lr 0.1, batches of 32, "
            "5 discriminator steps per map step, orthogonalisation beta 0.001, 5 epochs of 1000000 words, lr decay "
            "0.98 and shrink 0.5; then 5 Procrustes refinements on S2T CSLS dictionaries of the top 15000 words; the "
            "map with the best mean-cosine CSLS criterion (top 10000 words) over both phases"),
    needs_dictionary=False, judges=True, differences=_differences, dico_max_rank=lambda cfg: cfg.dico_max_rank,
    selection=lambda cfg: "the best unsupervised mean CSLS cosine over the adversarial epochs and the refinements "
                          "(MUSE's rule)")
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    return fit_judged("muse-adversarial", src, tgt, None, config, config.verdict, context)
