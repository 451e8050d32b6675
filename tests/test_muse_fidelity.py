"""MUSE fidelity (issue 15): vocabulary reading, multiword and cross-lingual similarity, baselines,
best_mapping.pth, approximate CSLS and the align/similarity CLI behaviour."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr
from typer.testing import CliRunner

from eval.align import NeighbourhoodMeans, build_dictionary, csls_topk, translation_precision
from eval.baselines import char_ngram_precision, identical_precision, split_by_identical
from eval.similarity import read_word_pairs, word_similarity
from eval.vectors import read_vec, write_vec
from groc_base.errors import InputError
from polyglot_groc.cli import app

runner = CliRunner()


def test_read_vec_lowercases_and_keeps_first_occurrence(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "v.vec"
    path.write_text("4 2\nParis 1 0\nparis 0 1\nthe 1 1\nTHE 2 2\n", encoding="utf-8")
    with caplog.at_level(logging.INFO):
        words, vecs = read_vec(path, lower=True)
    assert words == ["paris", "the"]
    assert vecs.tolist() == [[1.0, 0.0], [1.0, 1.0]]  # first occurrences win
    # case variants merged by lowercasing are MUSE's rule, not duplicates: said at INFO, no warning
    assert "2 case variant(s) merged" in caplog.text and "duplicate" not in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    words, _ = read_vec(path, lower=False)  # --keep-case: everything kept
    assert words == ["Paris", "paris", "the", "THE"]


def test_similarity_skips_and_counts_multiword_lines(tmp_path: Path) -> None:
    path = tmp_path / "SEMEVAL17_en.txt"
    path.write_text("ice hockey sport 3.5\ncar automobile 3.9\nnew york city 2.0\ngem jewel 3.8\n", encoding="utf-8")
    triples, multi = read_word_pairs(path)
    assert multi == 2
    assert triples == [("car", "automobile", 3.9), ("gem", "jewel", 3.8)]


def test_lookup_order_lowercase_then_capitalized_then_title() -> None:
    words = ["israel", "Israel", "Paris", "New-York"]
    vecs = np.array([[1, 0], [0, 1], [1, 1], [1, -1]], dtype=np.float32)
    triples = [("Israel", "paris", 1.0), ("new-york", "PARIS", 2.0), ("israel", "new-york", 3.0)]
    res = word_similarity(triples, words, vecs, lower=False)
    assert res.found == 3  # israel found lowercase (not Israel), paris as Paris, new-york as Title New-York
    both = word_similarity(triples[:2], words, vecs, lower=False)
    # cos(israel=[1,0], Paris=[1,1]) = 0.707 < cos(New-York, Paris) = 0: rho over 2 pairs is -1
    assert both.rho == pytest.approx(-1.0)


def test_cross_lingual_similarity_equals_scipy_spearman_on_found_pairs() -> None:
    rng = np.random.default_rng(0)
    src_words = [f"s{i}" for i in range(30)]
    tgt_words = [f"t{i}" for i in range(30)]
    sv = rng.standard_normal((30, 5)).astype(np.float32)
    tv = rng.standard_normal((30, 5)).astype(np.float32)
    triples = [(f"s{i}", f"t{(i * 7) % 30}", float(rng.uniform(0, 4))) for i in range(25)]
    triples += [("unknown", "t1", 1.0), ("s1", "nope", 2.0)]
    res = word_similarity(triples, src_words, sv, tgt_words=tgt_words, tgt_vectors=tv)
    assert (res.found, res.not_found) == (25, 2)
    cos = [float(sv[int(a[1:])] @ tv[int(b[1:])] / np.linalg.norm(sv[int(a[1:])]) / np.linalg.norm(tv[int(b[1:])]))
           for a, b, _ in triples[:25]]
    expected = spearmanr([s for *_, s in triples[:25]], cos).correlation
    assert res.rho == pytest.approx(expected, abs=1e-12)


def test_baselines_and_identical_split() -> None:
    src = ["hotel", "taxi", "dog", "house", "7"]
    tgt = ["hotel", "taxis", "perro", "casa", "7", "gato"]
    pairs = np.array([[0, 0], [1, 1], [2, 2], [3, 3], [4, 4]])
    ident = identical_precision(pairs, src, tgt)
    assert ident["correct_at_1"] == 2 and ident["precision_at_10"] == pytest.approx(40.0)  # hotel, 7
    ngram = char_ngram_precision(pairs, src, tgt, ks=(1, 5))
    assert ngram["correct_at_1"] == 3  # hotel, 7 and taxi -> taxis by shared trigrams
    queries, mask = split_by_identical(pairs, src, tgt)
    assert queries.tolist() == [0, 1, 2, 3, 4] and mask.tolist() == [True, False, False, False, True]


def test_approximate_csls_within_tolerance_of_exact() -> None:
    # 20k targets: above PRUNE_MIN_KEYS, so the approximate mode really prunes (bounds from a 5%
    # sample, one re-ranked candidate round) instead of falling back to the full search.
    rng = np.random.default_rng(1)
    n, d = 20_000, 24
    src = rng.standard_normal((n, d)).astype(np.float32)
    tgt = src + 1.0 * rng.standard_normal((n, d)).astype(np.float32)
    q = rng.choice(n, 400, replace=False)
    pairs = np.stack([q, q], axis=1)
    exact = translation_precision(src, tgt, pairs)
    approx = translation_precision(src, tgt, pairs, knn_mode="approximate")
    assert 20.0 < exact["precision_at_1"] < 95.0  # a task where ranking errors would show
    for k in (1, 5, 10):
        assert abs(exact[f"precision_at_{k}"] - approx[f"precision_at_{k}"]) <= 1.0


def _noisy_translations(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit rows; target i is a noisy copy of source i (the align_scale benchmark's data, smaller)."""
    rng = np.random.default_rng(seed)
    src = rng.standard_normal((n, d)).astype(np.float32)
    tgt = src + 1.5 * rng.standard_normal((n, d)).astype(np.float32)
    return _unit(src), _unit(tgt)


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_pruned_csls_equals_full_search() -> None:
    src, tgt = _noisy_translations(8000, 64, seed=3)
    queries = np.arange(0, 8000, 200)
    full = NeighbourhoodMeans(tgt, src, 10, prune=False)
    pruned = NeighbourhoodMeans(tgt, src, 10, prune=True)
    ids_full, scores_full = csls_topk(src, tgt, 10, 10, queries, r_tgt=full, assume_normalized=True)
    ids_pruned, scores_pruned = csls_topk(src, tgt, 10, 10, queries, r_tgt=pruned, assume_normalized=True)
    np.testing.assert_array_equal(ids_pruned, ids_full)
    np.testing.assert_allclose(scores_pruned, scores_full, atol=1e-5)
    assert pruned.exact.sum() < 0.5 * 8000  # the bounds spared most of the full search
    # every exact value equals the full search's, and every other value is a lower bound
    np.testing.assert_allclose(pruned.value[pruned.exact], full.value[pruned.exact], atol=1e-6)
    assert (pruned.value[~pruned.exact] <= full.value[~pruned.exact]).all()


def test_pruned_dictionary_induction_equals_full_search() -> None:
    src, tgt = _noisy_translations(8000, 64, seed=4)
    for build in ("S2T", "T2S", "S2T&T2S"):
        r_src, r_tgt = NeighbourhoodMeans(src, tgt, prune=True), NeighbourhoodMeans(tgt, src, prune=True)
        pruned = build_dictionary(src, tgt, build=build, max_rank=200, assume_normalized=True, r_src=r_src, r_tgt=r_tgt)
        full = build_dictionary(
            src, tgt, build=build, max_rank=200, assume_normalized=True,
            r_src=NeighbourhoodMeans(src, tgt, prune=False), r_tgt=NeighbourhoodMeans(tgt, src, prune=False),
        )
        np.testing.assert_array_equal(pruned, full)
        assert full.shape[0] > 100
        assert r_src.exact.sum() + r_tgt.exact.sum() < 8000


def test_neighbourhood_means_rejects_a_stale_object() -> None:
    src, tgt = _noisy_translations(300, 8, seed=5)
    stale = NeighbourhoodMeans(tgt[:200], src)
    with pytest.raises(InputError, match="r_tgt was computed for 200 x 300 words"):
        csls_topk(src, tgt, 5, r_tgt=stale)


def _rotation_files(tmp_path: Path) -> np.ndarray:
    rng = np.random.default_rng(0)
    n, d = 300, 8
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    tgt = (src @ q.T).astype(np.float32)
    write_vec(tmp_path / "s.vec", [f"w{i}" for i in range(n)], src)
    write_vec(tmp_path / "t.vec", [f"x{i}" if i % 2 else f"w{i}" for i in range(n)], tgt)
    (tmp_path / "train.txt").write_text("".join(f"w{i} {'x' if i % 2 else 'w'}{i}\n" for i in range(100)),
                                        encoding="utf-8")
    test = "".join(f"w{i}\t{'x' if i % 2 else 'w'}{i}\n" for i in range(200, 300))
    test += "".join(f"zz{i} yy{i}\n" for i in range(200))  # 200 pairs that cannot be scored
    (tmp_path / "test.txt").write_text(test, encoding="utf-8")
    return q


def test_align_writes_muse_mapping_baselines_and_drop_summary(tmp_path: Path) -> None:
    q = _rotation_files(tmp_path)
    (tmp_path / "only.txt").write_text("".join(f"w{i}\n" for i in range(200, 250)), encoding="utf-8")
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
                              "--train-dict", str(tmp_path / "train.txt"), "--eval-dict", str(tmp_path / "test.txt"),
                              "--refine", "1", "--out", str(tmp_path / "out"), "--export-mapped",
                              "--src-lang", "en", "--tgt-lang", "es"])
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["dico_max_rank"] == 10000  # MUSE's supervised default
    assert result["eval_dictionary"]["found"] == 100 and result["eval_dictionary"]["not_found"] == 200
    assert "WARNING: more than half" in res.stderr and "  char 3-grams" in res.stderr
    assert result["baselines"]["identical_string"]["precision_at_1"] == pytest.approx(50.0)
    csls = result["precision"]["csls"]
    assert csls["precision_at_1"] == pytest.approx(100.0)
    assert csls["identical_gold"]["n_queries"] == 50 and csls["non_identical_gold"]["precision_at_1"] == 100.0
    mapping = torch.load(tmp_path / "out" / "best_mapping.pth", weights_only=False)  # as MUSE reloads it
    assert isinstance(mapping, np.ndarray) and np.allclose(mapping, q, atol=1e-4)
    # written without torch, byte for byte what torch.save writes in its legacy format
    import io
    expected = io.BytesIO()
    torch.save(mapping, expected, _use_new_zipfile_serialization=False)
    assert (tmp_path / "out" / "best_mapping.pth").read_bytes() == expected.getvalue()
    assert (tmp_path / "out" / "vectors-en.txt").exists() and (tmp_path / "out" / "vectors-es.txt").exists()
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
                              "--train-dict", str(tmp_path / "train.txt"), "--eval-dict", str(tmp_path / "test.txt"),
                              "--refine", "0", "--eval-words", str(tmp_path / "only.txt"), "--knn", "approximate",
                              "--out", str(tmp_path / "o2")])
    assert res.exit_code == 0, res.output
    result = json.loads((tmp_path / "o2" / "result.json").read_text())
    assert result["eval_dictionary"]["found"] == 50 and result["knn_mode"] == "approximate"


def test_similarity_cli_scores_datasets_independently_and_cross_lingually(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    write_vec(tmp_path / "a.vec", ["Cat", "dog", "bird", "fish"], rng.standard_normal((4, 3)).astype(np.float32))
    write_vec(tmp_path / "b.vec", ["gato", "perro", "pajaro"], rng.standard_normal((3, 3)).astype(np.float32))
    (tmp_path / "good.txt").write_text("cat dog 3\ndog bird 2\nbird fish 1\nice hockey fish 2\n", encoding="utf-8")
    (tmp_path / "bad.txt").write_text("cat dog\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "a.vec"), "--dataset",
                              str(tmp_path / "bad.txt"), "--dataset", str(tmp_path / "good.txt")])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout[res.stdout.index("{"):])["datasets"]
    assert "error" in out["bad.txt"] and out["good.txt"]["found"] == 3 and out["good.txt"]["multiword_skipped"] == 1
    res = runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "a.vec"),
                              "--dataset", str(tmp_path / "bad.txt")])
    assert res.exit_code == 2
    (tmp_path / "x.txt").write_text("cat gato 4\ndog perro 3.5\nbird pajaro 1\nfish gato 0.5\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--src-vectors", str(tmp_path / "a.vec"), "--tgt-vectors",
                              str(tmp_path / "b.vec"), "--dataset", str(tmp_path / "x.txt")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout[res.stdout.index("{"):])["datasets"]["x.txt"]["found"] == 4


def test_export_words_refuses_multiword_lines(tmp_path: Path) -> None:
    from groc_base.errors import InputError
    from polyglot_groc.analysis.export import read_words

    path = tmp_path / "w.txt"
    path.write_text("cat\nice hockey\ndog\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2 holds several tokens"):
        read_words(path)
    assert read_words(path, skip_multiword=True) == ["cat", "dog"]
