"""prepare_corpora: budgets, held-out tail, disjoint splits, atomic reproducible output, manifest."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from groc_base.errors import CorpusError, UnknownLanguageError
from langpairs.corpus import EOS, MultilingualCorpus
from langpairs.prepare import MANIFEST_NAME, prepare_corpora


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _synthetic_root(tmp_path: Path) -> Path:
    text = tmp_path / "data" / "text"
    (text / "leipzig").mkdir(parents=True)
    (text / "palito").mkdir()
    # Leipzig-like: a random sample stored alphabetically sorted, 10K/30K overlapping.
    words = [f"w{i:03d}" for i in range(400)]
    sentences = sorted(f"{w} is word number {i} ." for i, w in enumerate(words))
    for name, part in (("10K", sentences[:250]), ("30K", sentences[200:])):
        body = "".join(f"{i}\t{s}\n" for i, s in enumerate(part, start=1))
        (text / "leipzig" / f"eng_wikipedia_2016_{name}-sentences.txt").write_text(body, encoding="utf-8")
    # Running text in document order, with a repeated sentence.
    lines = [f"Pangungusap {i} ito." for i in range(300)] + ["Pangungusap 5 ito."]
    (text / "palito" / "wiki_parallel.tl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path / "data"


def test_prepare_synthetic(tmp_path: Path) -> None:
    root = _synthetic_root(tmp_path)
    out = tmp_path / "out"
    manifest = prepare_corpora(root, out, ["tl", "en"], train_tokens=600, eval_tokens=100, tokenize="toktok")
    for lang in ("en", "tl"):
        entry = manifest["languages"][lang]
        splits = {s: _lines(out / lang / f"{s}.txt") for s in ("train", "valid", "test")}
        for split, budget in (("train", 600), ("valid", 100), ("test", 100)):
            assert abs(entry["splits"][split]["tokens"] - budget) <= 6  # within one sentence
            assert entry["splits"][split]["tokens"] == sum(len(x.split()) for x in splits[split])
        sets = [set(v) for v in splits.values()]
        assert not (sets[0] & sets[1] or sets[0] & sets[2] or sets[1] & sets[2])
        assert all(len(v) == len(set(v)) for v in splits.values())
    tl = {s: _lines(out / "tl" / f"{s}.txt") for s in ("train", "valid", "test")}
    # document order: valid follows train, test comes last
    assert tl["train"][0] == "Pangungusap 0 ito ." and tl["valid"][0] == f"Pangungusap {len(tl['train'])} ito ."
    en_train = _lines(out / "en" / "train.txt")
    # Leipzig's alphabetical order is not kept (else train would be w000, w001, ...)
    assert en_train != sorted(en_train)
    assert manifest["languages"]["en"]["duplicates_dropped"] == 50  # the 10K/30K overlap
    assert json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")) == manifest
    assert not list(out.rglob("*.tmp"))
    corpus = MultilingualCorpus.load(out, ["en", "tl"])
    assert corpus.splits["tl"]["test"][-1] == EOS


def test_prepare_short_source_shrinks_proportionally(tmp_path: Path) -> None:
    root = _synthetic_root(tmp_path)
    manifest = prepare_corpora(root, tmp_path / "out", ["tl"], train_tokens=10_000, eval_tokens=1_000)
    entry = manifest["languages"]["tl"]
    assert entry["short"] is True
    tokens = {s: v["tokens"] for s, v in entry["splits"].items()}
    assert tokens["train"] > 8 * tokens["valid"] and tokens["valid"] > 0 and tokens["test"] > 0


def test_prepare_rejects_unknown_language_and_bad_root(tmp_path: Path) -> None:
    with pytest.raises(UnknownLanguageError, match="'pt'"):
        prepare_corpora(tmp_path, tmp_path / "out", ["en", "pt"])
    with pytest.raises(CorpusError, match="POLYGLOT_GROC_DATA"):
        prepare_corpora(tmp_path, tmp_path / "out", ["en"])


def test_prepare_real_data_two_languages(tmp_path: Path) -> None:
    data = os.environ.get("POLYGLOT_GROC_DATA")
    if not data:
        pytest.skip("POLYGLOT_GROC_DATA is not set (point it at the shared data folder)")
    out = tmp_path / "out"
    kwargs = {"train_tokens": 20_000, "eval_tokens": 2_000}
    first = prepare_corpora(Path(data), out, ["en", "uk"], **kwargs)
    for lang in ("en", "uk"):
        entry = first["languages"][lang]
        assert entry["tokenizer"] in ("toktok", "stanza")
        assert abs(entry["splits"]["train"]["tokens"] - 20_000) < 300
        assert abs(entry["splits"]["test"]["tokens"] - 2_000) < 300
        lines = {s: set(_lines(out / lang / f"{s}.txt")) for s in ("train", "valid", "test")}
        assert not (lines["train"] & lines["valid"] or lines["train"] & lines["test"] or lines["valid"] & lines["test"])
    assert first["languages"]["uk"]["sentence_splitter"] is not None
    assert not any(line.startswith("=") for line in _lines(out / "uk" / "train.txt"))  # titles skipped
    again = prepare_corpora(Path(data), tmp_path / "again", ["en", "uk"], **kwargs)
    assert again == first  # reproducible, byte for byte (the manifest holds SHA-256 digests)
