"""Maximum spanning arborescence (Chu-Liu/Edmonds) for dependency decoding, with a single root.

``scores[h, d]`` is the score of head ``h`` for dependent ``d`` over nodes ``0..n`` (0 is the root);
:func:`decode_mst` returns the heads of ``1..n`` maximising the summed score of a tree in which
exactly one word attaches to the root (UD's rule). Chu-Liu/Edmonds is exact for the unconstrained
arborescence; when its tree has several root children, every word is tried as the one root child
(the root's other arcs removed) and the best of those trees is kept, which is exact for the
single-root problem (n more runs, only for the sentences that need them).
"""

from __future__ import annotations

import numpy as np

__all__ = ["chu_liu_edmonds", "decode_mst", "tree_score"]


def _find_cycle(heads: np.ndarray) -> list[int] | None:
    """A cycle of the head graph (node 0 has no head), or None."""
    n = heads.shape[0]
    color = np.zeros(n, dtype=np.int8)  # 0 new, 1 on the current path, 2 done
    for start in range(1, n):
        if color[start]:
            continue
        path = []
        v = start
        while v > 0 and color[v] == 0:
            color[v] = 1
            path.append(v)
            v = int(heads[v])
        if v > 0 and color[v] == 1:  # closed a loop on this path
            return path[path.index(v):]
        for u in path:
            color[u] = 2
    return None


def chu_liu_edmonds(scores: np.ndarray) -> np.ndarray:
    """Heads (``heads[0] = -1``) of the maximum spanning arborescence rooted at node 0.  (n+1, n+1) -> (n+1,)"""
    s = np.array(scores, dtype=np.float64)
    n = s.shape[0]
    np.fill_diagonal(s, -np.inf)
    s[:, 0] = -np.inf
    heads = s.argmax(axis=0)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = np.zeros(n, dtype=bool)
    in_cycle[cycle] = True
    rest = np.flatnonzero(~in_cycle)  # includes the root 0, first
    m = rest.size + 1  # the contracted cycle is node m - 1
    c = m - 1
    sub = np.full((m, m), -np.inf)
    sub[: m - 1, : m - 1] = s[np.ix_(rest, rest)]
    cyc = np.array(cycle)
    # Entering the cycle at node v from u: s[u, v] - s[head(v), v] (the cycle arc it replaces).
    enter = s[np.ix_(rest, cyc)] - s[heads[cyc], cyc][None, :]  # (|rest|, |C|)
    enter_at = enter.argmax(axis=1)
    sub[: m - 1, c] = enter.max(axis=1)
    leave = s[np.ix_(cyc, rest)]  # (|C|, |rest|)
    leave_from = leave.argmax(axis=0)
    sub[c, : m - 1] = leave.max(axis=0)
    sub_heads = chu_liu_edmonds(sub)
    out = heads.copy()
    for k, v in enumerate(rest):
        if k == 0:
            continue
        h = sub_heads[k]
        out[v] = cyc[leave_from[k]] if h == c else rest[h]
    u = sub_heads[c]  # the contracted node's head, in `rest`
    out[cyc[enter_at[u]]] = rest[u]
    return out


def tree_score(scores: np.ndarray, heads: np.ndarray) -> float:
    """Summed ``scores[heads[d], d]`` over the words ``d = 1..n``."""
    d = np.arange(1, scores.shape[0])
    return float(np.asarray(scores, dtype=np.float64)[heads[1:], d].sum())


def decode_mst(scores: np.ndarray) -> np.ndarray:
    """The best single-root tree's heads of words ``1..n`` (0 = root).  (n+1, n+1) -> (n,)"""
    s = np.asarray(scores, dtype=np.float64)
    heads = chu_liu_edmonds(s)
    roots = np.flatnonzero(heads[1:] == 0) + 1
    if roots.size <= 1:
        return heads[1:]
    best, best_score = heads, -np.inf
    for r in range(1, s.shape[0]):
        t = s.copy()
        keep = t[0, r]
        t[0, :] = -np.inf
        t[0, r] = keep
        cand = chu_liu_edmonds(t)
        score = tree_score(s, cand)
        if score > best_score:
            best, best_score = cand, score
    return best[1:]
