"""Did an unsupervised alignment work?  A verdict from restarts, said out loud.

An unsupervised method always returns a map; when the two spaces cannot be aligned from their
shape alone (unrelated corpora, too little text, distant languages) the map is a local optimum of
its own objective, and every reference reports it as silently as a good one (P@1 near 0).

The evidence here is **restart agreement**: the same method run again from a perturbed start (a
different seed, and VecMap's unsupervised start over fewer words, or half of the seed
dictionary) must land on the same translations.  A real alignment is one attractor that
different starts find; an alignment of spaces with nothing to align depends on where it started.
For the top ``check_words`` source words, the agreement of a restart is the share whose CSLS
translation under the restart's map is the main map's.  The verdict reads the best agreement
among the restarts:

* ``aligned``: at least ``aligned_agreement`` (0.5): a restart reproduced most translations;
* ``failed``: below ``failed_agreement`` (0.25): no restart agreed on more than a quarter of the words;
* ``doubtful``: in between (part of the dictionary is stable, part is not; check it with a few
  known translations before relying on it).

The thresholds come from measurements (benchmarks/results/2026-11-28/align_unsupervised_synthetic.json:
2,000 x 64 clustered spaces against a rotated, permuted, noised copy): restarts agreed 0.83-0.90
where the map reached P@1 100% (noise 0.1) and 0.57-0.72 where it reached 86.7% (noise 1.0);
two unrelated pairs (Gaussian, clustered) gave at most 0.005.  Real vectors put the line at 0.25, not
lower (align_unsupervised_halves.json, align_unsupervised_pairs*.json; word2vec on the bundle's text):
two halves of the English corpus, P@1 27.4 as supervised Procrustes' 28.8, agreed 0.85-0.86; en-fr at
1M tokens a side agreed 0.19-0.22 while the map was wrong (P@1 0.0 on MUSE's 5000-6500 test pairs,
4.6 on the 500 most frequent dictionary words, 0.6 on ranks 1000-2000): the restarts fell into the
same wrong basin for a fifth of the words at every frequency band, mapping function words onto
function words (for -> d, with -> par, his -> un); en-fr at 3M/1M tokens agreed 0.025; the EN+fr
lookup model's output embeddings 0.18 (P@1 0.4).  And not higher: the EN+fr GroC model's output
embeddings, one space already (P@1 32.4 with no map at all, mostly identical strings), agreed 0.29
at P@1 30.9 (align_polyglot_unsupervised_fr.json): 'doubtful' says what is true there, a map no
better than none on the words that differ.  Between 0.25 and 0.5 agreement alone cannot tell.  Two
other signals are reported but not used, because the same run shows that they do not separate success from failure: the
agreement of the two directions (mutual CSLS nearest neighbours; 0.72 between the unrelated
Gaussian sets, as the map fits whatever it is given, against 0.87 for the aligned noisy copy) and
MUSE's mean-cosine criterion (0.789 for the unrelated clustered pair, 0.837 for the aligned noisy
copy, 0.788 for MUSE's own failed adversarial map of the clean copy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from eval.knn import _unit_rows, csls_topk
from eval.methods.judging import VerdictConfig
from eval.unsup.common import CSLS_K, MapResult, csls_translations
from groc_base.errors import InputError

__all__ = ["STATUSES", "Verdict", "VerdictConfig", "alignment_verdict", "mutual_agreement"]

Status = Literal["aligned", "doubtful", "failed"]
STATUSES: tuple[str, ...] = ("aligned", "doubtful", "failed")


@dataclass(frozen=True)
class Verdict:
    """``status`` (aligned, doubtful or failed), ``reason`` (one sentence) and the ``evidence``."""

    status: Status
    reason: str
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def aligned(self) -> bool:
        return self.status == "aligned"

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, "evidence": self.evidence}


def _translations(result: MapResult, x: np.ndarray, z: np.ndarray, n: int) -> np.ndarray:
    return csls_translations(result.map_source(x), result.prepare_target(z), n)


def mutual_agreement(mapped_src: np.ndarray, tgt: np.ndarray, n: int) -> float:
    """Share of the top ``n`` source words whose CSLS translation's own best source (CSLS, all
    source words) is the word itself: the two directions' dictionaries agree there."""
    src, tgt_u = _unit_rows(mapped_src), _unit_rows(tgt)
    forward = csls_translations(src, tgt_u, n)  # (n,)
    targets, inverse = np.unique(forward, return_inverse=True)
    back, _ = csls_topk(tgt_u, src, 1, CSLS_K, targets, assume_normalized=True)  # (u, 1) best source per target
    return float(np.mean(back[inverse.reshape(-1), 0] == np.arange(forward.shape[0])))


def alignment_verdict(x: np.ndarray, z: np.ndarray, main: MapResult, restarts: Sequence[MapResult],
                      config: VerdictConfig | None = None) -> Verdict:
    """The verdict on ``main`` from its ``restarts`` (the same method from perturbed starts, on the
    same raw spaces ``x`` and ``z``); see the module for the evidence and the thresholds."""
    cfg = config or VerdictConfig()
    if not restarts:
        raise InputError("alignment_verdict got no restarts; run the method again from a perturbed start "
                         "(eval.unsup.fit_unsupervised does) and pass those results")
    n = min(cfg.check_words, np.shape(x)[0])
    reference = _translations(main, x, z, n)
    agreements = [float(np.mean(_translations(r, x, z, n) == reference)) for r in restarts]
    best = max(agreements)
    evidence: dict[str, Any] = {
        "check_words": int(n), "restart_agreement": agreements, "best_agreement": best,
        "thresholds": {"aligned": cfg.aligned_agreement, "failed": cfg.failed_agreement},
        "criterion": main.criterion, "restart_criteria": [r.criterion for r in restarts],
        "mutual_agreement": mutual_agreement(main.map_source(x), main.prepare_target(z), n),
    }
    share = f"{best:.0%} of the top {n} words' translations"
    if best >= cfg.aligned_agreement:
        return Verdict("aligned", f"a restart from another start reproduced {share}", evidence)
    if best < cfg.failed_agreement:
        return Verdict("failed", f"no restart reproduced more than {share}: the dictionary depends on where the "
                       "method started, as an alignment of spaces with nothing in common does", evidence)
    return Verdict("doubtful", f"the best restart reproduced {share} only: part of the dictionary is stable; "
                   "check known translations before relying on it", evidence)
