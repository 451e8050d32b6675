"""``wasserstein-procrustes``: fastText's ``alignment/unsup_align.py`` (Grave, Joulin, Berthet 2019,
AISTATS), the method of ``--dictionary-mode wasserstein``: a convex-relaxation start, then stochastic
optimal-transport Procrustes; no dictionary; judged by restarts (the start over fewer words, another seed).

The maths is :mod:`eval.unsup.wasserstein` (POT's Sinkhorn, imported when the fit runs); this module
declares the knobs (``--wp-*``) and registers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from eval.methods.judging import CRITERION_WORDS, VerdictConfig, fit_judged, script_differences
from eval.methods.registry import FitContext, MethodConfig, check_fields, knob, register_method
from groc_base.checks import is_int
from groc_base.errors import ConfigError, InputError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["FASTTEXT_INIT_WORDS", "FASTTEXT_NMAX", "WassersteinConfig"]

#: unsup_align.py's convex start matches the top 2,500 words of each side.
FASTTEXT_INIT_WORDS = 2500
#: unsup_align.py's --nmax: the stochastic phase draws among the top 20,000 words.
FASTTEXT_NMAX = 20_000


@dataclass(frozen=True)
class WassersteinConfig(MethodConfig):
    """``unsup_align.py``'s defaults; ranges checked once, here (the knobs on their fields)."""

    knob_prefix: ClassVar[str] = "wp"

    #: The normalisation :mod:`eval.unsup` applies to raw arrays (the reference: unit, center, unit).
    normalize: tuple[str, ...] = ("renorm", "center", "renorm")
    init_words: int | None = knob(
        None, check="positive_int", show_default="fastText's 2500, clipped to the vocabularies",
        help="the convex start matches the top N words of each side (unsup_align.py: 2500); above a vocabulary: "
             "refused")
    init_iterations: int = knob(100, check="positive_int", help="Frank-Wolfe steps of the convex start")
    init_sqrt: bool = True
    n_epochs: int = knob(5, check="non_negative_int", help="stochastic epochs (unsup_align.py's --nepoch)")
    n_iterations: int = knob(5000, check="positive_int", help="batches of the first epoch, divided by 4 each epoch "
                                                              "(--niter)")
    batch_size: int = knob(500, check="positive_int", help="words per side of the first epoch's batches, doubled "
                                                           "each epoch (--bsz)")
    lr: float = knob(500.0, check="positive", help="step size of the map's gradient (--lr)")
    nmax: int | None = knob(None, check="positive_int", show_default="fastText's 20000, clipped to the vocabularies",
                            help="batches are drawn among the top N words (--nmax); above a vocabulary: refused")
    reg: float = knob(0.05, check="positive", help="entropic regularisation of every Sinkhorn transport (--reg)")
    stop_threshold: float = 1e-3
    criterion_words: int = CRITERION_WORDS
    verdict: VerdictConfig = field(default_factory=VerdictConfig)

    def __post_init__(self) -> None:
        check_fields(self)
        if not isinstance(self.init_sqrt, bool):
            raise ConfigError(f"init_sqrt={self.init_sqrt!r}; pass True or False")
        if not (is_int(self.criterion_words) and self.criterion_words >= 1):
            raise ConfigError(f"criterion_words={self.criterion_words!r}; pass an integer >= 1")
        if not (isinstance(self.stop_threshold, (int, float)) and self.stop_threshold > 0):
            raise ConfigError(f"stop_threshold={self.stop_threshold!r}; pass a number > 0")
        for name in ("init_words", "nmax"):
            value = getattr(self, name)
            if value is not None and value < 2:
                raise ConfigError(f"{name}={value}; pass at least 2 words, or None for fastText's default")
        from eval.normalize import parse_normalize  # numpy: at construction, not at import

        try:
            object.__setattr__(self, "normalize", parse_normalize(self.normalize))
        except InputError as exc:
            raise ConfigError(str(exc)) from None


def _differences(cfg: WassersteinConfig, context: FitContext) -> list[str]:
    return script_differences(cfg, context, reference="fastText", lowercases=False, always=[
        "POT's Sinkhorn in float32 in the stochastic phase; the start's gradient through the (n, d) factors (the "
        "same numbers; 6.7x fewer operations at 2500 words x 300 dimensions); one seeded numpy generator "
        "(fastText: seed 1111); progress by MUSE's criterion after each epoch (fastText prints its transport "
        "objective)"])


@register_method(
    "wasserstein-procrustes", config=WassersteinConfig,
    summary="fastText's unsup_align.py: convex start + stochastic Wasserstein-Procrustes, no dictionary, judged",
    recipe=("fastText alignment/unsup_align.py: normalise unit, center, unit; a convex-relaxation start on the top "
            "2500 words (square-rooted spectra, 100 Frank-Wolfe steps of Sinkhorn transports, reg 0.05) and its "
            "Procrustes map; then 5 epochs of minibatch optimal transport among the top 20000 words (5000 batches "
            "of 500 words, batches doubled and their count divided by 4 each epoch; Sinkhorn reg 0.05, gradient "
            "step lr 500, projection onto the orthogonal matrices); the last map"),
    normalize=("renorm", "center", "renorm"), needs_dictionary=False, judges=True, differences=_differences,
    dico_max_rank=lambda cfg: cfg.nmax or FASTTEXT_NMAX,
    selection=lambda cfg: "the last stochastic epoch's map (fastText's rule; no selection)")
def fit(src: np.ndarray, tgt: np.ndarray, pairs: np.ndarray | None, config: Any,
        context: FitContext) -> AlignmentResult:
    return fit_judged("wasserstein-procrustes", src, tgt, None, config, config.verdict, context)
