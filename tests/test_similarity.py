"""Tests of eval.similarity: reading MUSE similarity files, Spearman, word_similarity."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from eval.similarity import SimilarityResult, read_word_similarity, spearman, word_similarity
from groc_base.errors import InputError


def test_read_word_similarity_tab_and_space(tmp_path: Path) -> None:
    path = tmp_path / "sim.txt"
    path.write_text("car\tautomobile\t3.92\nGem jewel 3.84\n\nmidday  noon\t1e0", encoding="utf-8")
    assert read_word_similarity(path) == [("car", "automobile", 3.92), ("Gem", "jewel", 3.84), ("midday", "noon", 1.0)]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", "no single-word pairs"),
        ("\n\n", "no single-word pairs"),
        ("a b 1.0\nc d\n", "line 2 has 2 fields"),
        ("a b c 1.0\n", "1 multiword lines skipped"),
        ("a b 1.0\nc d high\n", "line 2 has the non-numeric score 'high'"),
        ("a b nan\n", "line 1 has the score 'nan'"),
    ],
)
def test_read_word_similarity_errors(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError, match=match):
        read_word_similarity(path)


def test_read_word_similarity_not_utf8_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("a b 1\ncaf\xe9 bar 2\n".encode("latin-1"))
    with pytest.raises(InputError, match="line 2 is not valid utf-8"):
        read_word_similarity(path)
    with pytest.raises(InputError, match="check the path"):
        read_word_similarity(tmp_path / "missing.txt")


def test_spearman_against_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for n in (2, 3, 10, 57, 500):
        x = rng.integers(0, 6, n).astype(float)  # many ties
        y = x + rng.normal(0, 2, n)
        y[: n // 3] = np.round(y[: n // 3])
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).correlation, abs=1e-12)
        z = rng.normal(size=n)
        assert spearman(z, y) == pytest.approx(stats.spearmanr(z, y).correlation, abs=1e-12)


def test_spearman_hand_values_and_errors() -> None:
    assert spearman([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    # ties: ranks x = (1.5, 1.5, 3), y = (1, 2, 3); centred (-.5, -.5, 1) and (-1, 0, 1):
    # rho = 1.5 / sqrt(1.5 * 2) = sqrt(3) / 2
    assert spearman([5, 5, 7], [1, 2, 3]) == pytest.approx(np.sqrt(3) / 2)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3]))
    with pytest.raises(InputError, match="equally long"):
        spearman([1, 2], [1, 2, 3])
    with pytest.raises(InputError, match="at least 2"):
        spearman([1], [1])


def test_word_similarity_counts_and_cosine() -> None:
    words = ["car", "automobile", "Gem", "jewel", "noon", "zero", "car"]
    vectors = np.array(
        [[1, 0], [1, 0.1], [0, 1], [0.2, 1], [1, 1], [0, 0], [9, 9]], dtype=np.float32
    )  # the duplicate "car" row 6 is ignored: first occurrence wins
    triples = [
        ("car", "automobile", 9.0),  # cos ~ .995
        ("gem", "jewel", 8.0),  # cos ~ .98 (found through lowercasing)
        ("car", "noon", 5.0),  # cos ~ .707
        ("car", "zero", 1.0),  # zero vector: cos 0
        ("car", "bicycle", 7.0),  # not found
    ]
    res = word_similarity(triples, words, vectors)
    assert isinstance(res, SimilarityResult)
    assert (res.found, res.not_found) == (4, 1)
    assert res.rho == pytest.approx(1.0)
    # case-sensitive mode: 'gem' is found through MUSE's capitalize() fallback
    cased = word_similarity(triples, words, vectors, lower=False)
    assert (cased.found, cased.not_found) == (4, 1)
    few = word_similarity([("car", "automobile", 1.0), ("x", "y", 2.0)], words, vectors)
    assert np.isnan(few.rho) and (few.found, few.not_found) == (1, 1)
    with pytest.raises(InputError, match="one vector row per word"):
        word_similarity(triples, words[:3], vectors)


def test_real_wordsim_files() -> None:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set; point it at the shared data directory")
    base = Path(root) / "eval" / "wordsim"
    simlex = read_word_similarity(base / "en" / "EN_SIMLEX-999.txt")
    assert len(simlex) == 999 and simlex[0] == ("old", "new", 1.58)
    es = read_word_similarity(base / "es" / "ES_RG-65.txt")  # utf-8, tab separated, no final newline
    assert len(es) == 65 and all(0.0 <= s <= 4.0 for _, _, s in es)
    assert read_word_similarity(base / "es" / "ES_MC-30.txt")[0] == ("asilo", "manicomio", 3.61)  # spaces
    for path in sorted(base.glob("*/*.txt")):
        assert len(read_word_similarity(path)) >= 30, path
    # a vocabulary covering half the SimLex words: found/not_found follow
    vocab = sorted({w for a, b, _ in simlex for w in (a, b)})[::2]
    vectors = np.random.default_rng(0).standard_normal((len(vocab), 8))
    res = word_similarity(simlex, vocab, vectors)
    known = set(vocab)
    expected_found = sum(1 for a, b, _ in simlex if a in known and b in known)
    assert (res.found, res.not_found) == (expected_found, 999 - expected_found)
    assert -1.0 <= res.rho <= 1.0
