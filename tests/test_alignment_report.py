"""``evaluate_with_baselines``: baselines split like the model, on the same scored words."""

from __future__ import annotations

import json

import numpy as np
import pytest

from polyglot_groc.analysis.alignment_report import evaluate_with_baselines, summary_lines


def test_baselines_are_split_by_identical_gold_on_the_same_words() -> None:
    src = ["hotel", "taxi", "dog", "house", "7", "cat"]
    tgt = ["hotel", "taxis", "perro", "casa", "7", "gato"]
    pairs = [("hotel", "hotel"), ("taxi", "taxis"), ("dog", "perro"), ("house", "casa"), ("7", "7"), ("cat", "gato")]
    vecs = np.eye(6, dtype=np.float32)  # a perfect model: row i of the source is row i of the target
    stats, precision, baselines = evaluate_with_baselines(pairs, src, tgt, vecs, vecs)
    json.dumps([stats, precision, baselines])  # plain numbers only: no rank arrays leak into the JSON
    ident, ngram = baselines["identical_string"], baselines["char_ngram"]
    for res in (precision["csls"], ident, ngram):
        assert res["identical_gold"]["n_queries"] == 2 and res["non_identical_gold"]["n_queries"] == 4
    assert ident["identical_gold"]["precision_at_1"] == 100.0
    assert ident["non_identical_gold"]["precision_at_10"] == 0.0  # copying cannot translate these
    assert ngram["non_identical_gold"]["precision_at_1"] == pytest.approx(25.0)  # taxi -> taxis only
    assert precision["csls"]["non_identical_gold"]["precision_at_1"] == 100.0
    # the digest names the scored words: a subset gives another one
    sub, *_ = evaluate_with_baselines(pairs, src, tgt, vecs, vecs, eval_words={"hotel", "dog", "cat"})
    assert sub["scored_source_sha256"] != stats["scored_source_sha256"]
    assert any("baseline char 3-grams, non_identical_gold (4)" in line
               for line in summary_lines(stats, precision, baselines))
