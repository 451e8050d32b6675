"""Tests of eval.align: hand-computed CSLS, P@k any-gold rule, Procrustes, refinement, errors.

A dense reference (``_muse_*``) re-implements MUSE's maths with full score matrices on tiny
inputs; the batched faiss code must agree with it exactly.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from eval.align import (
    AlignmentResult,
    align,
    build_dictionary,
    csls_topk,
    identical_pairs,
    mean_csls_criterion,
    mean_knn_similarity,
    nn_topk,
    normalize_embeddings,
    pairs_to_indices,
    procrustes,
    translation_precision,
)
from groc_base.errors import InputError

# --------------------------------------------------------------------------------------------
# dense MUSE reference (full matrices; only for tiny inputs)
# --------------------------------------------------------------------------------------------


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _muse_csls_matrix(src: np.ndarray, tgt: np.ndarray, knn: int) -> np.ndarray:
    cos = _unit(src).astype(np.float64) @ _unit(tgt).astype(np.float64).T  # (n, m)
    r_t = np.sort(cos, axis=1)[:, -knn:].mean(axis=1)  # (n,)
    r_s = np.sort(cos, axis=0)[-knn:, :].mean(axis=0)  # (m,)
    return 2 * cos - r_t[:, None] - r_s[None, :]


def _muse_build(src: np.ndarray, tgt: np.ndarray, method: str, build: str, max_rank: int, knn: int) -> set:
    scores = _muse_csls_matrix(src, tgt, knn) if method == "csls" else _unit(src) @ _unit(tgt).T
    s2t = {(i, int(scores[i].argmax())) for i in range(max_rank) if scores[i].argmax() < max_rank}
    t2s = {(int(scores[:, j].argmax()), j) for j in range(max_rank) if scores[:, j].argmax() < max_rank}
    return {"S2T": s2t, "T2S": t2s, "S2T|T2S": s2t | t2s, "S2T&T2S": s2t & t2s}[build]


def _random_orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))  # (d, d), Haar-distributed


# --------------------------------------------------------------------------------------------
# CSLS by hand
# --------------------------------------------------------------------------------------------

# Mapped sources x1=(1,0), x2=(.6,.8), x3=(.8,.6); targets y1=(1,0), y2=(-.6,.8), y3=(.8,-.6).
# cos(x, y):      y1     y2     y3
#          x1    1.0   -0.6    0.8
#          x2    0.6    0.28   0.0
#          x3    0.8    0.0    0.28
# knn = 2:  r_T(x1) = (1+.8)/2 = .9,  r_T(x2) = (.6+.28)/2 = .44, r_T(x3) = (.8+.28)/2 = .54
#           r_S(y1) = (1+.8)/2 = .9,  r_S(y2) = (.28+0)/2 = .14,  r_S(y3) = (.8+.28)/2 = .54
# CSLS = 2cos - r_T - r_S:
#          x1    2-.9-.9 = .2     -1.2-.9-.14 = -2.24   1.6-.9-.54 = .16
#          x2    1.2-.44-.9 = -.14   .56-.44-.14 = -.02    0-.44-.54 = -.98
#          x3    1.6-.54-.9 = .16    0-.54-.14 = -.68      .56-.54-.54 = -.52
# y1 is a hub: it is every source's nearest neighbour, but CSLS sends x2 to y2.
HAND_SRC = np.array([[1.0, 0.0], [0.6, 0.8], [0.8, 0.6]], dtype=np.float32)
HAND_TGT = np.array([[1.0, 0.0], [-0.6, 0.8], [0.8, -0.6]], dtype=np.float32)
HAND_CSLS = np.array([[0.2, -2.24, 0.16], [-0.14, -0.02, -0.98], [0.16, -0.68, -0.52]])


def test_csls_hand_computed_3x3() -> None:
    np.testing.assert_allclose(mean_knn_similarity(HAND_SRC, HAND_TGT, k=2), [0.9, 0.44, 0.54], atol=1e-6)
    np.testing.assert_allclose(mean_knn_similarity(HAND_TGT, HAND_SRC, k=2), [0.9, 0.14, 0.54], atol=1e-6)
    ids, scores = csls_topk(HAND_SRC, HAND_TGT, k_top=3, knn=2)
    assert ids.tolist() == [[0, 2, 1], [1, 0, 2], [0, 2, 1]]
    np.testing.assert_allclose(scores, np.take_along_axis(HAND_CSLS, ids, axis=1), atol=1e-6)
    # plain cosine: the hub y1 wins everywhere
    nn_ids, nn_scores = nn_topk(HAND_SRC, HAND_TGT, k_top=1)
    assert nn_ids[:, 0].tolist() == [0, 0, 0]
    np.testing.assert_allclose(nn_scores[:, 0], [1.0, 0.6, 0.8], atol=1e-6)
    # one query row, precomputed r values give the same answer
    ids_row, scores_row = csls_topk(
        HAND_SRC, HAND_TGT, 2, knn=2, src_rows=[1], r_src=np.array([0.9, 0.44, 0.54]), r_tgt=np.array([0.9, 0.14, 0.54])
    )
    assert ids_row.tolist() == [[1, 0]]
    np.testing.assert_allclose(scores_row, [[-0.02, -0.14]], atol=1e-6)


def test_csls_and_build_match_dense_reference() -> None:
    rng = np.random.default_rng(0)
    src = rng.standard_normal((60, 8)).astype(np.float32)
    tgt = rng.standard_normal((50, 8)).astype(np.float32)
    dense = _muse_csls_matrix(src, tgt, knn=5)
    ids, scores = csls_topk(src, tgt, k_top=4, knn=5, batch_size=7)
    np.testing.assert_array_equal(ids, np.argsort(-dense, axis=1)[:, :4])
    np.testing.assert_allclose(scores, -np.sort(-dense, axis=1)[:, :4], atol=1e-5)
    r = mean_knn_similarity(src, tgt, k=5, batch_size=3)
    np.testing.assert_allclose(r, np.sort(_unit(src) @ _unit(tgt).T, axis=1)[:, -5:].mean(axis=1), atol=1e-6)
    for method in ("csls", "nn"):
        for build in ("S2T", "T2S", "S2T|T2S", "S2T&T2S"):
            got = build_dictionary(src, tgt, method=method, build=build, max_rank=30, knn=5, batch_size=4)
            assert got.dtype == np.int64 and got.shape[1] == 2
            assert {tuple(p) for p in got.tolist()} == _muse_build(src, tgt, method, build, 30, 5)
            assert got.max() < 30
    # criterion = mean cosine of the S2T csls pairs of the top n_src words
    pairs = build_dictionary(src, tgt, "csls", "S2T", max_rank=40, knn=5)
    expected = float((_unit(src)[pairs[:, 0]] * _unit(tgt)[pairs[:, 1]]).sum(axis=1).mean())
    assert mean_csls_criterion(src, tgt, n_src=40, knn=5) == pytest.approx(expected, abs=1e-6)


def test_build_dictionary_intersection_on_hand_example() -> None:
    # S2T (csls, knn=2): x1->y1, x2->y2, x3->y1.  T2S: column argmax of HAND_CSLS:
    # y1->x1 (.2), y2->x2 (-.02), y3->x1 (.16).  Intersection: (0,0), (1,1).
    assert build_dictionary(HAND_SRC, HAND_TGT, build="S2T", knn=2).tolist() == [[0, 0], [1, 1], [2, 0]]
    assert build_dictionary(HAND_SRC, HAND_TGT, build="T2S", knn=2).tolist() == [[0, 0], [0, 2], [1, 1]]
    assert build_dictionary(HAND_SRC, HAND_TGT, knn=2).tolist() == [[0, 0], [1, 1]]
    # max_rank=1 keeps only pairs inside the top word of each side
    assert build_dictionary(HAND_SRC, HAND_TGT, build="S2T|T2S", max_rank=1, knn=2).tolist() == [[0, 0]]


# --------------------------------------------------------------------------------------------
# precision@k
# --------------------------------------------------------------------------------------------


def test_translation_precision_any_gold_rule() -> None:
    tgt = np.eye(6, dtype=np.float32)  # target j = e_j
    # query 0 ranks targets 0,1,2,3,4,5; query 1 ranks 5,4,3,...; query 2 ranks 2,0,...
    src = np.array([[6, 5, 4, 3, 2, 1], [1, 2, 3, 4, 5, 6], [5, 1, 6, 0, 0, 0]], dtype=np.float32)
    pairs = np.array(
        [
            [0, 3],  # rank 3 ...
            [0, 1],  # ... and rank 1: any gold counts, best is rank 1 -> correct from k=2
            [1, 5],  # rank 0 -> correct at 1
            [1, 5],  # duplicate pair: still one query
            [2, 4],  # rank >= 3 -> wrong at 1 and 2, correct at 5
        ]
    )
    res = translation_precision(src, tgt, pairs, method="nn", ks=(1, 2, 5))
    assert res["n_pairs"] == 5 and res["n_queries"] == 3 and res["method"] == "nn"
    assert (res["correct_at_1"], res["correct_at_2"], res["correct_at_5"]) == (1, 2, 3)
    assert res["precision_at_1"] == pytest.approx(100 / 3)
    assert res["precision_at_2"] == pytest.approx(200 / 3)
    assert res["precision_at_5"] == pytest.approx(100.0)
    # k larger than the target vocabulary: everything is retrieved
    assert translation_precision(src, tgt, pairs, method="nn", ks=(10,))["precision_at_10"] == 100.0


def test_translation_precision_csls_hand_example() -> None:
    # CSLS top-1 (knn=2): x1->y1, x2->y2, x3->y1; x2's gold y1 is at rank 2 (score -.14).
    pairs = np.array([[0, 0], [1, 0], [2, 2], [2, 0]])
    res = translation_precision(HAND_SRC, HAND_TGT, pairs, method="csls", ks=(1, 2), knn=2)
    assert res["method"] == "csls_knn_2" and res["n_queries"] == 3
    assert (res["correct_at_1"], res["correct_at_2"]) == (2, 3)
    nn = translation_precision(HAND_SRC, HAND_TGT, pairs, method="nn", ks=(1,), knn=2)
    assert nn["correct_at_1"] == 3  # every gold list contains the hub y1


def test_translation_precision_matches_dense_reference() -> None:
    rng = np.random.default_rng(1)
    tgt = rng.standard_normal((80, 10)).astype(np.float32)
    src = (tgt + 0.8 * rng.standard_normal((80, 10))).astype(np.float32)
    pairs = np.array([[i, i] for i in range(0, 80, 2)] + [[i, (i + 7) % 80] for i in range(0, 80, 4)])
    res = translation_precision(src, tgt, pairs, ks=(1, 5, 10), knn=10)
    dense = _muse_csls_matrix(src, tgt, knn=10)
    top = np.argsort(-dense, axis=1)[:, :10]
    for k in (1, 5, 10):
        hit: dict[int, int] = {}
        for s, t in pairs.tolist():  # MUSE's per-pair loop
            hit[s] = min(hit.get(s, 0) + int(t in top[s, :k]), 1)
        assert res[f"precision_at_{k}"] == pytest.approx(100 * np.mean(list(hit.values())))


# --------------------------------------------------------------------------------------------
# Procrustes and refinement
# --------------------------------------------------------------------------------------------


def test_procrustes_recovers_rotation() -> None:
    rng = np.random.default_rng(2)
    q = _random_orthogonal(16, rng)
    a = rng.standard_normal((100, 16))
    w = procrustes(a, a @ q.T)
    np.testing.assert_allclose(w, q, atol=1e-10)
    # 90-degree rotation by hand: A = I, B = rows of R^T, W = R
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])
    np.testing.assert_allclose(procrustes(np.eye(2), np.eye(2) @ rot.T), rot, atol=1e-12)
    assert procrustes(a.astype(np.float32), (a @ q.T).astype(np.float32)).dtype == np.float32


def test_procrustes_bad_input() -> None:
    with pytest.raises(InputError, match="shape"):
        procrustes(np.ones((4, 3)), np.ones((4, 5)))
    with pytest.raises(InputError, match="no dictionary pairs"):
        procrustes(np.ones((0, 3)), np.ones((0, 3)))
    with pytest.raises(InputError, match="nan"):
        procrustes(np.full((2, 2), np.nan), np.ones((2, 2)))


def test_align_recovers_rotation_with_refinement() -> None:
    rng = np.random.default_rng(3)
    n, d = 400, 16
    q = _random_orthogonal(d, rng).astype(np.float32)
    src = rng.standard_normal((n, d)).astype(np.float32)
    perm = rng.permutation(n)
    tgt = np.empty_like(src)
    tgt[perm] = src @ q.T + 0.01 * rng.standard_normal((n, d)).astype(np.float32)  # src i <-> tgt perm[i]
    # a poor seed: 20 correct pairs and 20 wrong ones
    good = np.stack([np.arange(20), perm[:20]], axis=1)
    bad = np.stack([np.arange(20, 40), perm[rng.permutation(np.arange(20, 40))]], axis=1)
    seed = np.concatenate([good, bad])
    result = align(src, tgt, seed, n_refinement=3, dico_max_rank=n, knn=5, criterion_n_src=n)
    assert isinstance(result, AlignmentResult)
    assert [h["iteration"] for h in result.history] == [0, 1, 2, 3]
    assert result.history[0]["dictionary_size"] == 40
    criteria = [h["criterion"] for h in result.history]
    assert result.best_iteration == int(np.argmax(criteria)) >= 1
    assert criteria[result.best_iteration] > criteria[0]
    np.testing.assert_allclose(result.W, q, atol=2e-3)
    mapped = result.map_source(src)
    res = translation_precision(mapped, result.prepare_target(tgt), np.stack([np.arange(n), perm], axis=1))
    assert res["precision_at_1"] == 100.0


def test_align_with_normalisation_and_history_is_gold_free() -> None:
    rng = np.random.default_rng(4)
    n, d = 300, 12
    q = _random_orthogonal(d, rng).astype(np.float32)
    src = (rng.standard_normal((n, d)) + 2.0).astype(np.float32)  # off-centre cloud
    tgt = (src - src.mean(axis=0)) @ q.T
    seed = np.stack([np.arange(30), np.arange(30)], axis=1)
    result = align(src, tgt, seed, n_refinement=1, normalize=("center", "renorm"), dico_max_rank=n, knn=5)
    assert result.normalize == ("center", "renorm")
    np.testing.assert_allclose(result.W, q, atol=1e-4)
    res = translation_precision(result.map_source(src), result.prepare_target(tgt), np.stack([np.arange(n)] * 2, 1))
    assert res["precision_at_1"] == 100.0
    assert set(result.history[0]) == {"iteration", "dictionary_size", "criterion"}


def test_align_bad_input() -> None:
    x = np.ones((5, 3), dtype=np.float32)
    with pytest.raises(InputError, match="dimension"):
        align(x, np.ones((5, 4)), np.array([[0, 0]]))
    with pytest.raises(InputError, match="outside"):
        align(x, x, np.array([[0, 9]]))
    with pytest.raises(InputError, match="empty"):
        align(x, x, np.zeros((0, 2), dtype=np.int64))
    with pytest.raises(InputError, match="dictionary build"):
        align(x, x, np.array([[0, 0]]), dico_build="S2T+T2S")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="retrieval method"):
        align(x, x, np.array([[0, 0]]), method="invsm")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# normalisation, kNN, error paths
# --------------------------------------------------------------------------------------------


def test_normalize_embeddings() -> None:
    x = np.array([[1.0, 2.0], [3.0, 2.0], [2.0, 2.0]], dtype=np.float32)
    centred = normalize_embeddings(x, ["center"])
    np.testing.assert_allclose(centred, [[-1, 0], [1, 0], [0, 0]])
    both = normalize_embeddings(x, ("center", "renorm"))
    np.testing.assert_allclose(both, [[-1, 0], [1, 0], [0, 0]])  # zero row stays zero, no nan
    np.testing.assert_allclose(normalize_embeddings(x, "renorm,center"), normalize_embeddings(x, ["renorm", "center"]))
    assert normalize_embeddings(x, ()) is not x and x[0, 0] == 1.0  # new array, input untouched
    with pytest.raises(InputError, match="unknown normalisation 'whiten'"):
        normalize_embeddings(x, ["whiten"])


def test_knn_and_topk_bad_input() -> None:
    a = np.ones((4, 3), dtype=np.float32)
    with pytest.raises(InputError, match="dimension"):
        mean_knn_similarity(a, np.ones((4, 2)))
    with pytest.raises(InputError, match="nan"):
        csls_topk(np.full((2, 3), np.nan), a, 1)
    with pytest.raises(InputError, match="k=0"):
        mean_knn_similarity(a, a, k=0)
    with pytest.raises(InputError, match="src_rows"):
        nn_topk(a, a, 1, src_rows=[7])
    with pytest.raises(InputError, match="2-d"):
        nn_topk(np.ones(3), a, 1)
    with pytest.raises(InputError, match="r_tgt"):
        csls_topk(a, a, 1, r_tgt=np.zeros(2))
    # k larger than the key set is clipped, not garbage
    assert mean_knn_similarity(a, a[:2], k=10).shape == (4,)
    with pytest.raises(InputError, match="shape"):
        translation_precision(a, a, np.array([0, 1]))
    with pytest.raises(InputError, match="integer"):
        translation_precision(a, a, np.array([[0.0, 1.0]]))
    with pytest.raises(InputError, match="max_rank"):
        build_dictionary(a, a, max_rank=-1)


# --------------------------------------------------------------------------------------------
# word pairs to indices
# --------------------------------------------------------------------------------------------


def test_pairs_to_indices_stats_and_order() -> None:
    src_words = ["the", "cat", "The", "dog", "house"]
    tgt_words = ["el", "gato", "perro", "casa"]
    pairs = [("dog", "perro"), ("cat", "gato"), ("THE", "el"), ("the", "la"), ("bird", "pajaro"), ("cat", "gato")]
    idx, stats = pairs_to_indices(pairs, src_words, tgt_words)
    assert idx.tolist() == [[0, 0], [1, 1], [1, 1], [3, 2]]  # sorted by source row, "The" -> row 0
    assert stats == {
        "pairs": 6,
        "found": 4,
        "not_found": 2,
        "not_found_source": 1,
        "not_found_target": 2,
        "unique_source": 3,
    }
    cased, _ = pairs_to_indices([("The", "el")], src_words, tgt_words, lower=False)
    assert cased.tolist() == [[2, 0]]
    with pytest.raises(InputError, match="language direction"):
        pairs_to_indices([("perro", "dog")], src_words, tgt_words)
    with pytest.raises(InputError, match="no pairs"):
        pairs_to_indices([], src_words, tgt_words)


def test_identical_pairs() -> None:
    got = identical_pairs(["a", "b", "c", "a", "x"], ["c", "y", "a", "a"])
    assert got.tolist() == [[0, 2], [2, 0]]
    with pytest.raises(InputError, match="identical"):
        identical_pairs(["a"], ["b"])


# --------------------------------------------------------------------------------------------
# real MUSE dictionary (needs POLYGLOT_GROC_DATA)
# --------------------------------------------------------------------------------------------


def _read_muse_dictionary(path: Path) -> list[tuple[str, str]]:
    """Minimal MUSE dictionary reader: 'src tgt' per line, tab OR space separated."""
    pairs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        assert len(fields) == 2, line
        pairs.append((fields[0], fields[1]))
    return pairs


def test_real_muse_dictionary_roundtrip() -> None:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set; point it at the shared data directory")
    path = Path(root) / "eval" / "dictionaries" / "en-fr.0-5000.txt"
    pairs = _read_muse_dictionary(path)
    assert len(pairs) == 10872 and len({s for s, _ in pairs}) == 5000  # the MANIFEST's counts
    src_words = list(dict.fromkeys(s for s, _ in pairs))
    tgt_words = list(dict.fromkeys(t for _, t in pairs))
    idx, stats = pairs_to_indices(pairs, src_words, tgt_words)
    assert stats["found"] == len(pairs) and stats["unique_source"] == 5000
    # vectors that put every source word exactly on its first gold translation
    rng = np.random.default_rng(5)
    tgt = rng.standard_normal((len(tgt_words), 32)).astype(np.float32)
    first_gold = {}
    for s, t in idx.tolist():
        first_gold.setdefault(s, t)
    src = tgt[[first_gold[i] for i in range(len(src_words))]]
    res = translation_precision(src, tgt, idx, method="nn", ks=(1,))
    assert res["n_queries"] == 5000 and res["precision_at_1"] == 100.0
