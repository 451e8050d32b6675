"""Word-translation evaluation with honest baselines, as reported by ``align``.

Beside the model's P@k (nn and csls) this reports, on exactly the same scored test words:
the identical-string baseline, the character n-gram baseline, and the model's P@k split into
test words whose gold includes the identical string and words whose gold does not (copying
cannot score on the latter).  Test pairs that cannot be scored are counted by reason.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from eval.align import KnnMode, pairs_to_indices, translation_precision
from eval.baselines import char_ngram_precision, identical_precision, split_by_identical

logger = logging.getLogger(__name__)

__all__ = ["evaluate_with_baselines", "protocol_lines", "protocols_table", "summary_lines"]

KS = (1, 5, 10)


def _split_precision(result: dict[str, Any], queries: np.ndarray, identical: np.ndarray) -> dict[str, Any]:
    """P@k of ``result`` (from ``translation_precision(..., return_ranks=True)``) on the two halves."""
    ranks = np.asarray(result.pop("best_rank"))
    order_q = np.asarray(result.pop("queries"))
    if not np.array_equal(order_q, queries):
        raise AssertionError("queries of the model and of the split differ")  # both are np.unique of one column
    split: dict[str, Any] = {}
    for name, mask in (("identical_gold", identical), ("non_identical_gold", ~identical)):
        n = int(mask.sum())
        at = {f"precision_at_{k}": (100.0 * float((ranks[mask] < k).sum()) / n if n else None) for k in KS}
        split[name] = {"n_queries": n, **at}
    return split


def evaluate_with_baselines(
    pairs: Sequence[tuple[str, str]],
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    mapped: np.ndarray,
    target: np.ndarray,
    *,
    lower: bool = True,
    eval_words: set[str] | None = None,
    knn_mode: KnnMode = "exact",
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(dictionary stats, model precision per method, baselines)`` on the scorable test pairs."""
    stats: dict[str, Any] = {}
    if eval_words is not None:
        wanted = {w.lower() for w in eval_words} if lower else eval_words
        kept = [p for p in pairs if (p[0].lower() if lower else p[0]) in wanted]
        stats["not_in_eval_words"] = len(pairs) - len(kept)
        pairs = kept
    indices, found = pairs_to_indices(pairs, src_words, tgt_words, lower=lower)
    stats.update(found)
    # fastText's protocol divides by every distinct test source word, scorable or not.
    stats["unique_source_all"] = len({(a.lower() if lower else a) for a, _ in pairs})
    stats["dropped_reasons"] = {
        "source word not in the source vocabulary": found["not_found_source"],
        "target word not in the target vocabulary": found["not_found_target"],
    }
    if eval_words is not None:
        stats["dropped_reasons"]["source word not in --eval-words"] = stats["not_in_eval_words"]
    queries, identical = split_by_identical(indices, src_words, tgt_words)
    # Which words were scored, in one line: equal digests = two results on the same test words.
    scored = "\n".join(sorted({src_words[q] for q in queries.tolist()}))
    stats["scored_source_sha256"] = hashlib.sha256(scored.encode("utf-8")).hexdigest()[:16]
    precision: dict[str, Any] = {}
    for method in ("nn", "csls"):
        res = translation_precision(mapped, target, indices, method=method, knn_mode=knn_mode,  # type: ignore[arg-type]
                                    return_ranks=True)
        split = _split_precision(res, queries, identical)
        precision[method] = {**res, **split}
    # The baselines are split like the model, so "non_identical_gold" compares all three on the
    # words that copying cannot translate.
    baselines: dict[str, Any] = {}
    for name, baseline in (("identical_string", identical_precision), ("char_ngram", char_ngram_precision)):
        res = baseline(indices, src_words, tgt_words, KS, return_ranks=True)
        split = _split_precision(res, queries, identical)  # pops the ranks: JSON keeps numbers only
        baselines[name] = {**res, **split}
    baselines["identical_gold_share"] = float(identical.mean())
    return stats, precision, baselines


def summary_lines(stats: dict[str, Any], precision: dict[str, Any], baselines: dict[str, Any]) -> list[str]:
    """Human-readable summary printed by ``align`` (stderr): coverage, drops and every P@k."""
    total = stats["pairs"] + stats.get("not_in_eval_words", 0)
    dropped = total - stats["found"]
    lines = [f"test pairs: {stats['found']} scored, {dropped} dropped of {total} "
             f"({stats['unique_source']} unique source words scored)"]
    lines += [f"  dropped: {n} {why}" for why, n in stats["dropped_reasons"].items() if n]
    if dropped * 2 > total:
        lines.append(f"WARNING: more than half of the test pairs were dropped ({dropped} of {total}); "
                     "P@k describes only the scored words")

    def row(name: str, res: dict[str, Any]) -> str:
        return f"  {name:<40} " + "  ".join(f"P@{k} {res[f'precision_at_{k}']:6.2f}" for k in KS)

    lines.append("word translation (percent):")
    for method in ("nn", "csls"):
        lines.append(row(f"model {method}", precision[method]))
    lines.append(row("baseline identical string", baselines["identical_string"]))
    lines.append(row("baseline char 3-grams", baselines["char_ngram"]))
    csls = precision["csls"]
    for part in ("identical_gold", "non_identical_gold"):
        if csls[part]["n_queries"]:
            lines.append(row(f"model csls, {part} ({csls[part]['n_queries']})", csls[part]))
    part_res = baselines["char_ngram"].get("non_identical_gold")
    if part_res and part_res["n_queries"]:
        lines.append(row(f"baseline char 3-grams, non_identical_gold ({part_res['n_queries']})", part_res))
    return lines


def protocols_table(stats: dict[str, Any], precision: dict[str, Any],
                    composed: dict[str, Any] | None = None) -> dict[str, Any]:
    """P@k under both evaluation protocols, per retrieval, with coverage (and the composed figure).

    ``muse``: MUSE's ``get_word_translation_accuracy``, queries are the test source words with at
    least one pair whose two words are in the vocabularies (the figure in ``precision``).
    ``fasttext``: fastText's ``alignment`` evaluation, every distinct test source word counts and
    a word that cannot be scored is an error: P@k(fastText) = P@k(MUSE) x coverage.
    ``composed`` (runs only): every test source word, the missing ones composed by the model.
    """
    total = int(stats["unique_source_all"])
    scored = int(stats["unique_source"])
    table: dict[str, Any] = {"muse": {"n_queries": scored}, "fasttext": {"n_queries": total,
                                                                         "coverage": scored / total if total else 0.0}}
    for method in ("nn", "csls"):
        res = precision[method]
        table["muse"][method] = {f"precision_at_{k}": res[f"precision_at_{k}"] for k in KS}
        table["fasttext"][method] = {f"precision_at_{k}": (100.0 * res[f"correct_at_{k}"] / total if total else 0.0)
                                     for k in KS}
    if composed is not None:
        table["composed"] = {"n_queries": composed["n_queries"], "coverage": composed["coverage"],
                             "composed_source_words": composed["composed_source_words"],
                             "composed_target_words": composed["composed_target_words"],
                             "csls": {f"precision_at_{k}": composed[f"precision_at_{k}"] for k in KS}}
    return table


def protocol_lines(protocols: dict[str, Any] | None) -> list[str]:
    """The protocol rows of ``align``'s stderr summary (CSLS P@k under each protocol, with coverage)."""
    if not protocols:
        return []
    lines = ["protocols (csls, percent):"]
    names = {"muse": "MUSE (scorable pairs only)", "fasttext": "fastText (all test words)",
             "composed": "composed (all test words, missing ones composed)"}
    for key, label in names.items():
        if key in protocols:
            entry = protocols[key]
            cover = f"coverage {100.0 * entry['coverage']:5.1f}%" if "coverage" in entry else "scorable only"
            at = "  ".join(f"P@{k} {entry['csls'][f'precision_at_{k}']:6.2f}" for k in KS)
            lines.append(f"  {label:<40} {at}  ({entry['n_queries']} words, {cover})")
    return lines
