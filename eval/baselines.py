"""Model-free translation baselines for word-translation P@k, and the identical/non-identical split.

MUSE test dictionaries list many words as their own translation (numbers, names, loanwords,
cognates), and a polyglot vocabulary gives one vector to a string shared by two languages, so a
model can score by copying.  These baselines say how much of a P@k needs no model at all:

* **identical string**: translate each test word to itself when that string is a target word;
* **character n-grams**: the target word with the most similar bag of character n-grams
  (cosine of binary n-gram count vectors, ``<`` and ``>`` marking word boundaries), searched
  over the same target vocabulary with a sparse matrix product.

Both are scored exactly like :func:`eval.align.translation_precision`: unique source words of the
test pairs, correct at ``k`` when any gold target is among the top ``k``, percent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from groc_base.errors import InputError

logger = logging.getLogger(__name__)

__all__ = ["MISS", "best_gold_rank", "char_ngram_matrix", "char_ngram_precision", "char_ngram_ranks",
           "identical_precision", "identical_ranks", "split_by_identical"]

#: The rank of a query none of whose gold targets was found: a miss at every cut-off.
MISS = np.iinfo(np.int64).max

# Queries per sparse product: a dense (batch, n_targets) float32 block of ~50 MB at 200k targets.
_NGRAM_BATCH = 64


def _gold_by_query(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unique query rows ``(q,)`` and, per pair, the index of its query ``(n_pairs,)``."""
    queries, inverse = np.unique(pairs[:, 0], return_inverse=True)
    return queries, inverse.reshape(-1)


def _precision(best_rank: np.ndarray, ks: Sequence[int], name: str, queries: np.ndarray | None = None
               ) -> dict[str, object]:
    """P@k from each query's best gold rank; with ``queries``, also ``best_rank`` and ``queries``
    (as :func:`eval.align.translation_precision` with ``return_ranks``) for a split by query."""
    result: dict[str, object] = {"method": name, "n_queries": int(best_rank.shape[0])}
    for k in ks:
        correct = int((best_rank < k).sum())
        result[f"precision_at_{k}"] = 100.0 * correct / max(1, best_rank.shape[0])
        result[f"correct_at_{k}"] = correct
    if queries is not None:
        result["best_rank"], result["queries"] = best_rank, queries
    return result


def _best_rank(top: np.ndarray, pairs: np.ndarray, inverse: np.ndarray, n_queries: int) -> np.ndarray:
    """Best rank of any gold target in each query's candidate list ``top`` ``(q, k)``; a huge rank if none."""
    miss = np.iinfo(np.int64).max  # a miss stays a miss at every cut-off, even beyond the list's length
    hits = top[inverse] == pairs[:, 1:2]  # (n_pairs, k)
    pair_rank = np.where(hits.any(axis=1), hits.argmax(axis=1), miss)  # (n_pairs,)
    best = np.full(n_queries, miss, dtype=np.int64)
    np.minimum.at(best, inverse, pair_rank)
    return best


def best_gold_rank(top: np.ndarray, gold: np.ndarray, n_queries: int) -> np.ndarray:
    """Each query's best rank of a gold target in its candidate list ``top`` ``(q, k)`` (:data:`MISS` if none).

    ``gold`` ``(m, 2)``: (query index, target row) for every gold target that is a candidate at all.
    """
    best = np.full(n_queries, MISS, dtype=np.int64)
    if gold.shape[0] == 0:
        return best
    hits = top[gold[:, 0]] == gold[:, 1:2]  # (m, k)
    pair_rank = np.where(hits.any(axis=1), hits.argmax(axis=1), MISS)  # (m,)
    np.minimum.at(best, gold[:, 0], pair_rank)
    return best


def identical_ranks(query_words: Sequence[str], tgt_words: Sequence[str], gold: np.ndarray) -> np.ndarray:
    """Best rank ``(q,)`` of the identical-string guess: rank 0 where the query's own string is a target
    word and one of its gold targets, else :data:`MISS`. ``gold`` as in :func:`best_gold_rank`."""
    tgt_index = {w: i for i, w in reversed(list(enumerate(tgt_words)))}
    guess = np.fromiter((tgt_index.get(w, -1) for w in query_words), dtype=np.int64, count=len(query_words))
    return best_gold_rank(guess[:, None], np.asarray(gold, dtype=np.int64).reshape(-1, 2), len(query_words))


def char_ngram_ranks(query_words: Sequence[str], tgt_words: Sequence[str], golds: Sequence[np.ndarray],
                     limits: Sequence[int], k: int = 10, n: int = 3) -> list[np.ndarray]:
    """Best gold rank ``(q,)`` of the character n-gram baseline, once per candidate set.

    The candidates of set ``i`` are the first ``limits[i]`` target words (a vocabulary and the
    same vocabulary extended by more words share one n-gram matrix and one product per query
    block); ``golds[i]`` its gold pairs as in :func:`best_gold_rank`.
    """
    targets, vocab = char_ngram_matrix(tgt_words, n)
    query_m, _ = char_ngram_matrix(list(query_words), n, vocabulary=vocab)
    targets_t = targets.T.tocsr()  # (features, n_tgt)
    tops = [np.empty((len(query_words), min(k, limit)), dtype=np.int64) for limit in limits]
    for start in range(0, len(query_words), _NGRAM_BATCH):
        block = (query_m[start : start + _NGRAM_BATCH] @ targets_t).toarray()  # (b, n_tgt)
        for top, limit in zip(tops, limits, strict=True):
            kk = top.shape[1]
            if kk == 0:
                continue
            sub = block[:, :limit]  # (b, limit)
            part = np.argpartition(-sub, kk - 1, axis=1)[:, :kk]  # (b, kk) unordered
            order = np.argsort(-np.take_along_axis(sub, part, axis=1), axis=1, kind="stable")
            top[start : start + block.shape[0]] = np.take_along_axis(part, order, axis=1)
    return [best_gold_rank(top, np.asarray(gold, dtype=np.int64).reshape(-1, 2), len(query_words))
            for top, gold in zip(tops, golds, strict=True)]


def identical_precision(
    pairs: np.ndarray, src_words: Sequence[str], tgt_words: Sequence[str], ks: Sequence[int] = (1, 5, 10),
    return_ranks: bool = False,
) -> dict[str, object]:
    """P@k of translating each test word to the identical target string (one candidate, so P@k is flat).

    ``pairs`` ``(n, 2)`` are row indices into ``src_words`` / ``tgt_words`` (as from
    :func:`eval.align.pairs_to_indices`); a query whose string is not a target word is a miss.
    ``return_ranks`` adds each query's best gold rank (``best_rank``; a huge number for a miss)
    and the query rows (``queries``), as :func:`eval.align.translation_precision` does.
    """
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if arr.shape[0] == 0:
        raise InputError("no test pairs for the identical-string baseline")
    queries, inverse = _gold_by_query(arr)
    tgt_index = {w: i for i, w in reversed(list(enumerate(tgt_words)))}
    guess = np.fromiter((tgt_index.get(src_words[q], -1) for q in queries), dtype=np.int64, count=len(queries))
    best = _best_rank(guess[:, None], arr, inverse, len(queries))
    return _precision(best, ks, "identical_string", queries if return_ranks else None)


def split_by_identical(
    pairs: np.ndarray, src_words: Sequence[str], tgt_words: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """Unique query rows ``(q,)`` and a mask ``(q,)``: True where a gold target IS the query's string."""
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    queries, inverse = _gold_by_query(arr)
    same = np.fromiter(
        (src_words[s] == tgt_words[t] for s, t in arr.tolist()), dtype=bool, count=arr.shape[0]
    )  # (n_pairs,)
    mask = np.zeros(len(queries), dtype=bool)
    np.logical_or.at(mask, inverse, same)
    return queries, mask


def char_ngram_matrix(words: Sequence[str], n: int = 3, vocabulary: dict[str, int] | None = None) -> tuple[
    sp.csr_matrix, dict[str, int]
]:
    """Binary ``(len(words), features)`` CSR matrix of character n-grams, rows L2-normalised.

    With ``vocabulary`` given, n-grams outside it are ignored (queries against target features).
    """
    if n < 1:
        raise InputError(f"n={n}; character n-grams need n >= 1")
    grow = vocabulary is None
    vocab: dict[str, int] = {} if vocabulary is None else vocabulary
    indptr = [0]
    indices: list[int] = []
    for word in words:
        padded = f"<{word}>"
        grams = {padded[i : i + n] for i in range(max(1, len(padded) - n + 1))}
        for gram in grams:
            col = vocab.get(gram)
            if col is None and grow:
                col = vocab[gram] = len(vocab)
            if col is not None:
                indices.append(col)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    shape = (len(words), len(vocab))
    matrix = sp.csr_matrix((data, np.asarray(indices, dtype=np.int64), np.asarray(indptr)), shape=shape)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).reshape(-1))  # (rows,)
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ matrix, dtype=np.float32), vocab


def char_ngram_precision(
    pairs: np.ndarray,
    src_words: Sequence[str],
    tgt_words: Sequence[str],
    ks: Sequence[int] = (1, 5, 10),
    n: int = 3,
    return_ranks: bool = False,
) -> dict[str, object]:
    """P@k of the nearest target words by character n-gram cosine (see the module docstring);
    ``return_ranks`` as in :func:`identical_precision`."""
    arr = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if arr.shape[0] == 0:
        raise InputError("no test pairs for the character n-gram baseline")
    queries, inverse = _gold_by_query(arr)
    k_max = min(max(ks), len(tgt_words))
    targets, vocab = char_ngram_matrix(tgt_words, n)
    query_m, _ = char_ngram_matrix([src_words[q] for q in queries], n, vocabulary=vocab)
    targets_t = targets.T.tocsr()  # (features, n_tgt)
    top = np.empty((len(queries), k_max), dtype=np.int64)
    for start in range(0, len(queries), _NGRAM_BATCH):
        block = (query_m[start : start + _NGRAM_BATCH] @ targets_t).toarray()  # (b, n_tgt)
        part = np.argpartition(-block, k_max - 1, axis=1)[:, :k_max]  # (b, k_max) unordered
        order = np.argsort(-np.take_along_axis(block, part, axis=1), axis=1, kind="stable")
        top[start : start + block.shape[0]] = np.take_along_axis(part, order, axis=1)
    best = _best_rank(top, arr, inverse, len(queries))
    result = _precision(best, ks, f"char_{n}gram", queries if return_ranks else None)
    logger.info("char %d-gram baseline over %d targets: P@1 %.2f", n, len(tgt_words), result["precision_at_1"])
    return result
