"""``evaluate_protocols``: every protocol's P@k beside its own baselines, on its own words."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from polyglot_groc.analysis.alignment_report import Side, evaluate_protocols, report_lines

SRC = ["hotel", "taxi", "dog", "house", "7", "cat"]
TGT = ["hotel", "taxis", "perro", "casa", "7", "gato"]
PAIRS = [("hotel", "hotel"), ("taxi", "taxis"), ("dog", "perro"), ("house", "casa"), ("7", "7"), ("cat", "gato")]


def test_baselines_are_split_by_identical_gold_on_the_same_words() -> None:
    vecs = np.eye(6, dtype=np.float32)  # a perfect model: row i of the source is row i of the target
    stats, precision, baselines, protocols = evaluate_protocols(PAIRS, Side(SRC, vecs), Side(TGT, vecs))
    json.dumps([stats, precision, baselines, protocols])  # plain numbers only: no rank arrays leak into the JSON
    ident, ngram = baselines["identical_string"], baselines["char_ngram"]
    for res in (precision["csls"], ident, ngram):
        assert res["identical_gold"]["n_queries"] == 2 and res["non_identical_gold"]["n_queries"] == 4
    assert ident["identical_gold"]["precision_at_1"] == 100.0
    assert ident["non_identical_gold"]["precision_at_10"] == 0.0  # copying cannot translate these
    assert ngram["non_identical_gold"]["precision_at_1"] == pytest.approx(25.0)  # taxi -> taxis only
    assert precision["csls"]["non_identical_gold"]["precision_at_1"] == 100.0
    # the digest names the scored words: a subset gives another one
    sub, *_ = evaluate_protocols(PAIRS, Side(SRC, vecs), Side(TGT, vecs), eval_words={"hotel", "dog", "cat"})
    assert sub["scored_source_sha256"] != stats["scored_source_sha256"]
    assert sum(sub["dropped_reasons"].values()) == 3
    lines = report_lines(stats, protocols)
    assert any(line.startswith("  char 3-grams") and "25.0" in line for line in lines)


def test_every_protocol_has_its_own_baselines_and_a_shared_space_its_no_mapping_figure() -> None:
    """The sample of issue 38: a polyglot run gives one string one vector on both sides, so with no
    mapping at all identical test words score 100; each protocol reports that, and the baselines,
    on its own words (here fastText's has two more words, unscorable: its baselines differ)."""
    rng = np.random.default_rng(0)
    shared = rng.standard_normal((6, 8)).astype(np.float32)
    src_vecs, tgt_vecs = shared.copy(), shared.copy()
    tgt_vecs[[1, 2, 3, 5]] = rng.standard_normal((4, 8))  # only the identical strings share a vector
    mapped = src_vecs @ np.linalg.qr(rng.standard_normal((8, 8)))[0]  # a useless map
    pairs = [*PAIRS, ("zebra", "cebra"), ("hotels", "hotels")]  # two source words in no vocabulary
    stats, _, _, proto = evaluate_protocols(pairs, Side(SRC, mapped, src_vecs), Side(TGT, tgt_vecs, tgt_vecs))
    muse, fast = proto["muse"], proto["fasttext"]
    assert (muse["n_queries"], fast["n_queries"]) == (6, 8) and fast["coverage"] == pytest.approx(6 / 8)
    for entry, n, n_identical in ((muse, 6, 2), (fast, 8, 3)):
        nomap = entry["baselines"]["no_mapping"]["csls"]
        assert nomap["precision_at_1"] == pytest.approx(100.0 * 2 / n)  # hotel and 7, unmapped
        ident = entry["split"]["identical_gold"]
        assert ident["n_queries"] == n_identical  # fastText's words add 'hotels', in no vocabulary
        assert ident["baselines"]["no_mapping"]["csls"]["precision_at_1"] == pytest.approx(100.0 * 2 / n_identical)
        assert entry["split"]["non_identical_gold"]["baselines"]["identical_string"]["precision_at_1"] == 0.0
    # fastText's words include 'hotels': the identical guess is no candidate (not a target word)
    assert muse["baselines"]["identical_string"]["precision_at_1"] == pytest.approx(100 * 2 / 6)
    assert fast["baselines"]["identical_string"]["precision_at_1"] == pytest.approx(100 * 2 / 8)
    # the drop reasons are one per dropped pair, so they add up
    assert stats["pairs"] - stats["found"] == sum(stats["dropped_reasons"].values()) == 2
    assert stats["dropped_reasons"]["neither word in the vocabularies"] == 2
    text = "\n".join(report_lines(stats, proto))
    assert "no mapping, csls" in text and "NOTE: no mapping at all" in text
    assert "fastText protocol: all 8 test source words" in text


def test_composed_protocol_scores_its_baselines_over_its_extended_candidates() -> None:
    vecs = np.eye(6, dtype=np.float32)
    ext_t = Side([*TGT, "cebra"], np.vstack([vecs, np.eye(6, dtype=np.float32)[:1]]))
    ext_s = Side([*SRC, "zebra"], np.vstack([vecs, np.eye(6, dtype=np.float32)[:1]]))
    pairs = [*PAIRS, ("zebra", "cebra")]
    *_, proto = evaluate_protocols(pairs, Side(SRC, vecs), Side(TGT, vecs),
                                   composed=(ext_s, ext_t, {"composed_source_words": 1, "composed_target_words": 1}))
    comp = proto["composed"]
    assert comp["n_queries"] == 7 and comp["coverage"] == 1.0 and comp["composed_target_words"] == 1
    # 'zebra' -> 'cebra' is found by char 3-grams only among the composed protocol's candidates
    assert comp["baselines"]["char_ngram"]["precision_at_1"] > proto["fasttext"]["baselines"]["char_ngram"][
        "precision_at_1"]


def test_dictionary_overlap_counts_test_pairs_that_are_training_pairs_either_way(
        caplog: pytest.LogCaptureFixture) -> None:
    """MUSE's X-en 0-5000 read against en-X 5000-6500 shares pairs the other way round: both count."""
    from groc_base.errors import InputError
    from polyglot_groc.analysis.alignment_report import OVERLAP_LIMIT, check_overlap, dictionary_overlap

    train = [("chat", "cat"), ("chien", "dog"), ("maison", "house")]
    test = [("chat", "cat"), ("dog", "chien"), ("arbre", "tree"), ("arbre", "tree"), ("eau", "water")]
    found = dictionary_overlap(train, test)
    assert (found["pairs"], found["same_direction"], found["reversed"], found["test_pairs"]) == (2, 1, 1, 4)
    assert found["share"] == pytest.approx(0.5) and found["limit"] == OVERLAP_LIMIT
    with pytest.raises(InputError, match=r"2 of the 4 test pairs \(50.0%\) are training pairs.*allow_overlap=True"):
        check_overlap(train, test, allow=False, what="test.txt and train.txt")
    with caplog.at_level("WARNING"):
        allowed = check_overlap(train, test, allow=True, what="test.txt and train.txt")
    assert allowed["allowed"] is True and "1 reversed" in caplog.text
    caplog.clear()
    none = check_overlap(train, [("arbre", "tree")], allow=False, what="x")
    assert none["pairs"] == 0 and caplog.text == ""


def test_the_report_says_scored_of_asked_for_every_protocol_the_overlap_and_the_columns() -> None:
    from polyglot_groc.analysis.alignment_report import dictionary_overlap

    vecs = np.eye(6, dtype=np.float32)
    pairs = [*PAIRS, *[(f"nope{i}", f"nada{i}") for i in range(10)]]  # 10 of 16 test words in no vocabulary
    stats, _, _, proto = evaluate_protocols(pairs, Side(SRC, vecs, vecs), Side(TGT, vecs, vecs), no_mapping=("nn",))
    stats["train_overlap"] = dictionary_overlap([("dog", "perro")], pairs)
    text = "\n".join(report_lines(stats, proto))
    assert "MUSE protocol: the 6 test source words with a pair in both vocabularies (6 of 16 test source words " \
           "scored: coverage 37.5%)" in text
    assert "fastText protocol: all 16 test source words, the unscorable ones counted wrong (6 of 16" in text
    assert "WARNING: more than half of the test pairs were dropped (10 of 16)" in text
    assert "test pairs that are training pairs (either direction): 1 of 16 (6.2%)" in text
    assert "other gold = the rest, where only a mapping can score" in text
    assert all(row in text for row in ("model csls", "model nn", "no mapping, nn", "identical string"))


@pytest.mark.skipif(not os.environ.get("POLYGLOT_GROC_DATA"), reason="POLYGLOT_GROC_DATA is not set; point it at "
                    "the shared data directory")
def test_muse_dictionaries_overlap_when_read_in_opposite_directions(caplog: pytest.LogCaptureFixture) -> None:
    """The bundle's MUSE files: X-en 0-5000 against en-X 5000-6500 share a fifth of the test pairs (refused);
    one direction's two files share 0-2 pairs (reported, no warning)."""
    from pathlib import Path

    from groc_base.errors import InputError
    from langpairs.dictionaries import read_dictionary
    from polyglot_groc.analysis.alignment_report import check_overlap, dictionary_overlap

    root = Path(os.environ["POLYGLOT_GROC_DATA"]) / "eval" / "dictionaries"
    test = read_dictionary(root / "en-fr.5000-6500.txt")
    crossed = dictionary_overlap(read_dictionary(root / "fr-en.0-5000.txt"), test)
    assert (crossed["pairs"], crossed["test_pairs"]) == (595, 2943) and crossed["reversed"] == 459
    with pytest.raises(InputError, match="595 of the 2943 test pairs"):
        check_overlap(read_dictionary(root / "fr-en.0-5000.txt"), test, allow=False, what="fr-en vs en-fr")
    with caplog.at_level("WARNING"):
        same = check_overlap(read_dictionary(root / "en-fr.0-5000.txt"), test, allow=False, what="en-fr")
    assert same["pairs"] == 2 and caplog.text == ""
