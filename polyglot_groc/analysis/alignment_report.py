"""Word-translation evaluation with honest baselines, as reported by ``align`` and ``align-many``.

A P@k means little without the figures that need no model: MUSE test dictionaries list many
words as their own translation (numbers, names, loanwords, cognates), and a polyglot model gives
one string one vector in both languages, so copying or not mapping at all can score high.  So
EVERY protocol (the word set a P@k is computed on) carries its own baselines, computed on
exactly its words and its candidate targets:

* ``muse``: the test source words with a pair whose two words are in the vocabularies
  (MUSE's ``get_word_translation_accuracy``);
* ``fasttext``: every distinct test source word; one that cannot be scored counts as wrong
  (fastText's ``alignment`` evaluation), with the ``coverage``;
* ``composed`` (a run only): every test source word, the words missing from the vocabularies
  composed by the model and added to the candidates.

For each: the model's P@k (nn, csls), the baselines ``identical_string`` (translate a word to
itself when that string is a candidate), ``char_ngram`` (the candidate with the most similar
character 3-grams) and ``no_mapping`` (the same retrieval on the spaces before the mapping: the
unmapped identity; for a run with a shared encoder, what the model scores without any
alignment), and everything split into test words whose gold translations include the word
itself (``identical_gold``) and the others (``non_identical_gold``: copying cannot score there).
Test pairs that cannot be scored are counted by one reason each, so the reasons add up.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eval.align import KnnMode, pairs_to_indices, translation_precision
from eval.baselines import MISS, char_ngram_ranks, identical_ranks
from eval.vectors import vocabulary_index
from groc_base.checks import option
from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["OVERLAP_LIMIT", "OVERLAP_WARN", "PROTOCOL_LABELS", "Side", "check_overlap", "dictionary_overlap",
           "evaluate_protocols", "overlap_lines", "report_lines", "verdict_lines"]

KS = (1, 5, 10)
#: The rows of every protocol, in print order: (key, label).
ROWS = (("csls", "model csls"), ("nn", "model nn"), ("no_mapping_csls", "no mapping, csls"),
        ("no_mapping_nn", "no mapping, nn"), ("identical_string", "identical string"),
        ("char_ngram", "char 3-grams"))
PROTOCOL_LABELS = {"muse": "MUSE protocol", "fasttext": "fastText protocol", "composed": "composed"}
#: The share of test pairs that may also be training pairs before an evaluation is refused
#: (``allow_overlap`` / ``--allow-dictionary-overlap`` lifts it).
OVERLAP_LIMIT = 0.05
#: From this share on, a shared pair is warned about (MUSE's own X-Y 0-5000 and X-Y 5000-6500 files share
#: 0-2 of ~2,500 pairs, reversed: counted and reported, not worth a warning on every run).
OVERLAP_WARN = 0.01


@dataclass(frozen=True)
class Side:
    """One side of a scored space: its words, their vectors as retrieval sees them (mapped, or the
    prepared target), and the same words' vectors before the mapping (None: no ``no_mapping``)."""

    words: Sequence[str]
    vectors: np.ndarray
    unmapped: np.ndarray | None = None


def dictionary_overlap(train: Sequence[tuple[str, str]], test: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """How many distinct test pairs ``(a, b)`` are training pairs, as ``(a, b)`` or reversed ``(b, a)``.

    Both lists as read (lowercased when the vocabularies are, a reversed dictionary already
    flipped). The reversed direction matters: MUSE's en-X 5000-6500 test file shares about a fifth
    of its pairs with the X-en 0-5000 training file read the other way round.
    """
    seen = set(train)
    pairs = set(test)
    same = sum(1 for p in pairs if p in seen)
    flipped = sum(1 for a, b in pairs if (a, b) not in seen and (b, a) in seen)
    n = len(pairs)
    return {"pairs": same + flipped, "same_direction": same, "reversed": flipped, "test_pairs": n,
            "share": (same + flipped) / n if n else 0.0, "limit": OVERLAP_LIMIT}


def check_overlap(train: Sequence[tuple[str, str]], test: Sequence[tuple[str, str]], *, allow: bool,
                  what: str) -> dict[str, Any]:
    """:func:`dictionary_overlap` of ``train`` and ``test`` (``what`` names them in the messages), warned
    about from :data:`OVERLAP_WARN` on and refused above :data:`OVERLAP_LIMIT` unless ``allow``: a P@k
    on pairs the map was fitted on measures memory, not translation.

    Raises:
        InputError: more than :data:`OVERLAP_LIMIT` of the test pairs are training pairs, without ``allow``.
    """
    found = dictionary_overlap(train, test)
    found["allowed"] = allow
    if found["share"] < OVERLAP_WARN:
        return found
    said = (f"{what}: {found['pairs']} of the {found['test_pairs']} test pairs ({100 * found['share']:.1f}%) are "
            f"training pairs ({found['same_direction']} as written, {found['reversed']} reversed)")
    if found["share"] > OVERLAP_LIMIT and not allow:
        raise InputError(f"{said}, above the {100 * OVERLAP_LIMIT:.0f}% an evaluation allows: their P@k measures "
                         "what the map was fitted on; use disjoint dictionaries (MUSE's 0-5000 to train and "
                         f"5000-6500 to test, in one direction), or pass {option('allow_overlap', True)} to score "
                         "anyway")
    logger.warning("%s; their P@k partly measures what the map was fitted on", said)
    return found


def _queries(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], dict[str, int], np.ndarray]:
    """The distinct test source words (sorted), their index, and which have themselves among their golds."""
    words = sorted({a for a, _ in pairs})
    index = {w: i for i, w in enumerate(words)}
    identical = np.zeros(len(words), dtype=bool)
    same = [index[a] for a, b in pairs if a == b]
    identical[same] = True
    return words, index, identical


def _gold(pairs: Sequence[tuple[str, str]], qindex: dict[str, int], tgt_words: Sequence[str],
          lower: bool) -> np.ndarray:
    """``(m, 2)`` (query index, target row) of every gold target among the candidates."""
    tgt_index = vocabulary_index(tgt_words, lower)
    rows = [(qindex[a], tgt_index[b]) for a, b in pairs if b in tgt_index]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def _retrieval_ranks(pairs: Sequence[tuple[str, str]], src: Side, tgt: Side, qindex: dict[str, int],
                     lower: bool, knn_mode: KnnMode, no_mapping: Sequence[str] = ("nn", "csls"),
                     ) -> tuple[dict[str, np.ndarray], np.ndarray, dict[str, int]]:
    """Best gold rank of every query for nn and csls (and, for the ``no_mapping`` retrievals, on the
    unmapped spaces), the mask of scorable queries, and the dictionary's coverage counts. A query
    that cannot be scored is a MISS."""
    n_q = len(qindex)
    scorable = np.zeros(n_q, dtype=bool)
    ranks: dict[str, np.ndarray] = {}
    try:
        indices, stats = pairs_to_indices(pairs, src.words, tgt.words, lower=lower)
    except InputError:
        if n_q == 0:
            raise
        stats = {"pairs": len(pairs), "found": 0}
        indices = None
    spaces: list[tuple[str, np.ndarray, np.ndarray, tuple[str, ...]]] = [("", src.vectors, tgt.vectors, ("nn", "csls"))]
    if src.unmapped is not None and tgt.unmapped is not None and no_mapping:
        spaces.append(("no_mapping_", src.unmapped, tgt.unmapped, tuple(no_mapping)))
    for prefix, s_vecs, t_vecs, methods in spaces:
        for method in methods:
            best = np.full(n_q, MISS, dtype=np.int64)
            if indices is not None:
                res = translation_precision(s_vecs, t_vecs, indices, method=method, knn_mode=knn_mode,  # type: ignore[arg-type]
                                            return_ranks=True)
                rows = np.asarray(res["queries"])
                at = np.fromiter((qindex[(src.words[r].lower() if lower else src.words[r])] for r in rows.tolist()),
                                 dtype=np.int64, count=rows.shape[0])
                found = np.asarray(res["best_rank"])
                best[at] = np.where(found < max(KS), found, MISS)
                scorable[at] = True
            ranks[prefix + method] = best
    return ranks, scorable, stats


def _precision(rank: np.ndarray, mask: np.ndarray) -> dict[str, float | None]:
    n = int(mask.sum())
    return {f"precision_at_{k}": (100.0 * int((rank[mask] < k).sum()) / n if n else None) for k in KS}


def _row(ranks: dict[str, np.ndarray], key: str, mask: np.ndarray) -> dict[str, Any]:
    return _precision(ranks[key], mask)


def _entry(ranks: dict[str, np.ndarray], mask: np.ndarray, identical: np.ndarray) -> dict[str, Any]:
    """One protocol's P@k, its baselines and the identical / non-identical split, on the queries in ``mask``."""

    def block(m: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {"n_queries": int(m.sum())}
        for key in ("nn", "csls"):
            out[key] = _row(ranks, key, m)
        out["baselines"] = {name: _row(ranks, name, m) for name in ("identical_string", "char_ngram")}
        unmapped = [method for method in ("nn", "csls") if f"no_mapping_{method}" in ranks]
        if unmapped:
            out["baselines"]["no_mapping"] = {method: _row(ranks, f"no_mapping_{method}", m) for method in unmapped}
        return out

    entry = block(mask)
    n = int(mask.sum())
    entry["identical_gold_share"] = float(identical[mask].sum()) / n if n else 0.0
    entry["split"] = {"identical_gold": block(mask & identical), "non_identical_gold": block(mask & ~identical)}
    return entry


def _legacy(ranks: dict[str, np.ndarray], mask: np.ndarray, identical: np.ndarray, key: str, name: str,
            n_pairs: int | None = None) -> dict[str, Any]:
    """The top-level ``precision`` / ``baselines`` entries (MUSE's words): P@k, correct counts and the split."""
    n = int(mask.sum())
    out: dict[str, Any] = {"method": name, "n_queries": n}
    if n_pairs is not None:
        out["n_pairs"] = n_pairs
    for k in KS:
        correct = int((ranks[key][mask] < k).sum())
        out[f"precision_at_{k}"] = 100.0 * correct / n if n else 0.0
        out[f"correct_at_{k}"] = correct
    for part, m in (("identical_gold", mask & identical), ("non_identical_gold", mask & ~identical)):
        out[part] = {"n_queries": int(m.sum()), **_precision(ranks[key], m)}
    return out


def evaluate_protocols(
    pairs: Sequence[tuple[str, str]],
    src: Side,
    tgt: Side,
    *,
    lower: bool = True,
    eval_words: set[str] | None = None,
    knn_mode: KnnMode = "exact",
    composed: tuple[Side, Side, dict[str, int]] | None = None,
    no_mapping: Sequence[str] = ("nn", "csls"),
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(dictionary stats, precision, baselines, protocols)`` of a mapped space on the test ``pairs``.

    ``src``/``tgt``: the vocabularies' spaces (with ``unmapped`` vectors, the ``no_mapping``
    baseline too, by the retrievals in ``no_mapping``: a CSLS search over a large vocabulary costs
    as much as the model's, so a caller may ask for ``("nn",)`` only). ``composed``: the spaces
    extended by the composed test words (their words appended after the vocabulary's) and
    ``{"composed_source_words": n, "composed_target_words": m}``.
    ``precision`` and ``baselines`` are MUSE's protocol (kept at the top level of the JSON);
    ``protocols`` holds every protocol with its own baselines and split (see the module docstring).

    Raises:
        InputError: no test pair has both words in the vocabularies.
    """
    stats: dict[str, Any] = {}
    if lower:
        pairs = [(a.lower(), b.lower()) for a, b in pairs]
    total_pairs = len(pairs)
    if eval_words is not None:
        wanted = {w.lower() for w in eval_words} if lower else set(eval_words)
        pairs = [p for p in pairs if p[0] in wanted]
        stats["not_in_eval_words"] = total_pairs - len(pairs)
        if not pairs:
            raise InputError(f"none of the {total_pairs} test pairs has its source word in "
                             f"{option('eval_words')}; check that list against the dictionary")
    qwords, qindex, identical = _queries(pairs)
    ranks, scorable, found = _retrieval_ranks(pairs, src, tgt, qindex, lower, knn_mode, no_mapping)
    if not scorable.any():  # as pairs_to_indices says it: none of the pairs can be scored
        pairs_to_indices(pairs, src.words, tgt.words, lower=lower)
    stats.update(found)
    src_index = vocabulary_index(src.words, lower)
    tgt_index = vocabulary_index(tgt.words, lower)
    src_in = np.fromiter((a in src_index for a, _ in pairs), dtype=bool, count=len(pairs))
    tgt_in = np.fromiter((b in tgt_index for _, b in pairs), dtype=bool, count=len(pairs))
    # One reason per dropped pair, so that the reasons add up to the pairs dropped.
    reasons = {"source word not in the source vocabulary": int((~src_in & tgt_in).sum()),
               "target word not in the target vocabulary": int((src_in & ~tgt_in).sum()),
               "neither word in the vocabularies": int((~src_in & ~tgt_in).sum())}
    if eval_words is not None:
        reasons["source word not in the eval_words list"] = stats["not_in_eval_words"]
    stats["dropped_reasons"] = reasons
    stats["unique_source_all"] = len(qwords)
    scored = "\n".join(w for w, ok in zip(qwords, scorable.tolist(), strict=True) if ok)
    # Which words were scored, in one line: equal digests = two results on the same test words.
    stats["scored_source_sha256"] = hashlib.sha256(scored.encode("utf-8")).hexdigest()[:16]

    spaces: list[tuple[Side, Side]] = [(src, tgt)]
    if composed is not None:
        spaces.append((composed[0], composed[1]))
    # The baselines of every space from one n-gram matrix over the longest candidate list (a
    # composed target side is the vocabulary with the composed words appended).
    golds = [_gold(pairs, qindex, t.words, lower) for _, t in spaces]
    longest = max((t for _, t in spaces), key=lambda t: len(t.words)).words
    ngram = char_ngram_ranks(qwords, longest, golds, [len(t.words) for _, t in spaces], k=max(KS))
    ranks["identical_string"] = identical_ranks(qwords, tgt.words, golds[0])
    ranks["char_ngram"] = ngram[0]

    every = np.ones(len(qwords), dtype=bool)
    protocols: dict[str, Any] = {"muse": _entry(ranks, scorable, identical)}
    protocols["fasttext"] = {**_entry(ranks, every, identical), "coverage": float(scorable.mean())}
    if composed is not None:
        c_src, c_tgt, counts = composed
        c_ranks, c_scorable, _ = _retrieval_ranks(pairs, c_src, c_tgt, qindex, lower, knn_mode, no_mapping)
        c_ranks["identical_string"] = identical_ranks(qwords, c_tgt.words, golds[1])
        c_ranks["char_ngram"] = ngram[1]
        protocols["composed"] = {**_entry(c_ranks, every, identical), "coverage": float(c_scorable.mean()),
                                 **counts}
    precision = {method: _legacy(ranks, scorable, identical, method, "nn" if method == "nn" else "csls_knn_10",
                                 n_pairs=int(found.get("found", 0)))
                 for method in ("nn", "csls")}
    baselines: dict[str, Any] = {name: _legacy(ranks, scorable, identical, name, label)
                                 for name, label in (("identical_string", "identical_string"),
                                                     ("char_ngram", "char_3gram"))}
    baselines["identical_gold_share"] = protocols["muse"]["identical_gold_share"]
    return stats, precision, baselines, protocols


def _cells(block: dict[str, Any], key: str) -> str:
    if key in ("nn", "csls"):
        res = block[key]
    elif key.startswith("no_mapping_"):
        res = block["baselines"].get("no_mapping", {}).get(key.removeprefix("no_mapping_"))
        if res is None:
            return ""
    else:
        res = block["baselines"][key]
    values = [res[f"precision_at_{k}"] for k in KS]
    return " / ".join("  -  " if v is None else f"{v:5.1f}" for v in values)


def verdict_lines(verdict: dict[str, Any] | None) -> list[str]:
    """The line a method that judges its own map prints first (none without a verdict)."""
    if verdict is None:
        return []
    crit = verdict.get("criterion") or {}
    measured = f"; {crit['name']} {crit['value']:.4f}" if crit.get("name") and crit.get("value") is not None else ""
    return [f"verdict: {verdict['status']} ({verdict.get('reason', '')}{measured})"]


def overlap_lines(overlap: dict[str, Any] | None) -> list[str]:
    """How many test pairs are training pairs (either direction); a warning line from :data:`OVERLAP_WARN` on."""
    if overlap is None:
        return []
    n, total = overlap["pairs"], overlap["test_pairs"]
    line = (f"test pairs that are training pairs (either direction): {n} of {total}"
            f" ({100 * overlap['share']:.1f}%)")
    if overlap["share"] < OVERLAP_WARN:
        return [line]
    return [line, f"WARNING: {n} test pairs were training pairs ({overlap['same_direction']} as written, "
                  f"{overlap['reversed']} reversed); their P@k partly measures what the map was fitted on"]


#: What the three columns of every protocol's table are.
COLUMNS = ("columns: all = the protocol's test words; identical gold = the words whose gold translations include "
           "the word itself (copying it scores there); other gold = the rest, where only a mapping can score")


def report_lines(stats: dict[str, Any], protocols: dict[str, Any]) -> list[str]:
    """The summary ``align`` and ``align-many`` print on stderr: the dictionary's coverage and why pairs
    were dropped, its overlap with the training dictionary, then one table per protocol: the model
    (csls and nn) and every baseline (no mapping, identical string, char 3-grams) on that protocol's
    own words, on all of them and split by whether the word's gold translations include itself; each
    protocol says how many of the test source words it scored (scored / asked)."""
    total = stats["pairs"] + stats.get("not_in_eval_words", 0)
    dropped = total - stats["found"]
    asked = stats["unique_source_all"]
    lines = [f"test pairs: {stats['found']} scored, {dropped} dropped of {total} "
             f"({stats['unique_source']} of {asked} test source words scorable)"]
    lines += [f"  dropped: {n} {why}" for why, n in stats["dropped_reasons"].items() if n]
    if dropped * 2 > total:
        lines.append(f"WARNING: more than half of the test pairs were dropped ({dropped} of {total}); "
                     "the MUSE protocol's P@k describes only the scored words")
    lines += overlap_lines(stats.get("train_overlap"))
    lines.append("word translation P@1 / P@5 / P@10 (percent); each protocol's baselines are on its own words:")
    lines.append(COLUMNS)
    for key, label in PROTOCOL_LABELS.items():
        entry = protocols.get(key)
        if entry is None:
            continue
        split = entry["split"]
        n_id, n_other = split["identical_gold"]["n_queries"], split["non_identical_gold"]["n_queries"]
        n = entry["n_queries"]
        what = {"muse": f"the {n} test source words with a pair in both vocabularies",
                "fasttext": f"all {n} test source words, the unscorable ones counted wrong",
                "composed": f"all {n} test source words, the missing ones composed by the model"}[key]
        share = entry.get("coverage", n / asked if asked else 0.0)
        scored = round(share * asked)
        notes = [f"{scored} of {asked} test source words scored: coverage {100.0 * share:.1f}%"]
        if key == "composed":
            notes.append(f"{entry.get('composed_source_words', 0)} source and {entry.get('composed_target_words', 0)} "
                         "target words composed")
        lines.append(f"{label}: {what} ({'; '.join(notes)})")
        lines.append(f"  {'':<20} {'all (' + str(n) + ')':<22} {'identical gold (' + str(n_id) + ')':<22} "
                     f"{'other gold (' + str(n_other) + ')'}")
        for row, name in ROWS:
            cells = [_cells(entry, row), _cells(split["identical_gold"], row), _cells(split["non_identical_gold"], row)]
            if not cells[0]:
                continue
            lines.append(f"  {name:<20} " + " ".join(f"{c:<22}" for c in cells).rstrip())
        share = entry.get("identical_gold_share", 0.0)
        unmapped = entry["baselines"].get("no_mapping", {})
        retrieval = "csls" if "csls" in unmapped else "nn"
        nomap = unmapped.get(retrieval, {}).get("precision_at_1")
        model = entry[retrieval]["precision_at_1"]
        if nomap is not None and model is not None and nomap >= model:
            lines.append(f"  NOTE: no mapping at all scores {nomap:.1f} P@1 ({retrieval}) here, the aligned model "
                         f"{model:.1f}: "
                         f"{100 * share:.0f}% of these words have themselves as a translation; compare on "
                         "'other gold'")
    return lines
