"""GroC+lex end to end on the hand-written TSV lexicon (tests/data/lexicon/mini-en-fr.tsv)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from polyglot_groc.analysis.workflows import evaluate
from polyglot_groc.config import load_config, merge_overrides, parse_overrides
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.lexforms import compile_forms
from polyglot_groc.training.data import load_corpus
from polyglot_groc.training.trainer import Trainer, build_bundle
from tests.conftest import SMALL_OVERRIDES, TESTS

TSV = TESTS / "data" / "lexicon" / "mini-en-fr.tsv"
CORPUS = TESTS / "data" / "lexcorpus"


def _cfg(*extra: str):
    return load_config(None, merge_overrides(
        SMALL_OVERRIDES, {"model.kind": "groc-lex", "data.root": CORPUS, "data.langs": ["en", "fr"],
                          "model.lexicon.backend": "tsv", "model.lexicon.tsv_path": TSV,
                          "train.batch_size": 2, "train.bptt": 4, "train.eval_batch_size": 1},
        parse_overrides(extra)))


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POLYGLOT_GROC_CACHE", str(tmp_path / "cache"))


def test_forms_point_at_related_words_and_definitions() -> None:
    cfg = _cfg()
    corpus = load_corpus(cfg.data)
    bundle = build_bundle(cfg, corpus)
    table = list(bundle.vocab.words) + list(bundle.extra_words)
    f = bundle.forms
    assert f is not None
    dog = bundle.vocab.id("dog")
    related = [table[i] for i, m in zip(f.related_ids[dog], f.related_mask[dog], strict=True) if m]
    assert related[:2] == ["domestic dog", "Canis familiaris"]  # at most 3, lexicon order
    assert len(related) == 3
    chien = bundle.vocab.id("chien")
    definition = [table[i] for i, m in zip(f.definition_ids[chien], f.definition_mask[chien], strict=True) if m]
    assert definition[:3] == ["a", "member", "of"]  # English gloss through the shared synset
    assert not f.related_mask[bundle.vocab.id(".")].any()
    # extra (out-of-vocabulary) words are encoded: the char table has their rows
    assert bundle.model.input_embedder.chars.shape[0] == len(table)
    assert bundle.lexicon_info["coverage"]


def test_ablations_and_coverage_drop_forms() -> None:
    corpus = load_corpus(_cfg().data)
    no_rel = build_bundle(_cfg("model.lexicon.use_relations=false"), corpus)
    no_def = build_bundle(_cfg("model.lexicon.use_definitions=false"), corpus)
    none = build_bundle(_cfg("model.lexicon.coverage=0.0"), corpus)
    assert no_rel.forms is not None and not no_rel.forms.related_mask.any() and no_rel.forms.definition_mask.any()
    assert no_def.forms is not None and not no_def.forms.definition_mask.any() and no_def.forms.related_mask.any()
    assert none.forms is not None and not none.forms.related_mask.any() and not none.forms.definition_mask.any()


def test_train_and_evaluate_without_the_lexicon(tmp_path: Path) -> None:
    lexicon = tmp_path / "lexicon.tsv"
    shutil.copyfile(TSV, lexicon)
    Trainer(_cfg("train.max_steps=3", f'model.lexicon.tsv_path="{lexicon}"'), tmp_path / "run").fit()
    bundle, _ = load_bundle(tmp_path / "run")
    assert bundle.forms is not None and bundle.forms.related_mask.any()
    # The forms travel in the checkpoint: evaluation needs no lexicon once it is gone.
    lexicon.unlink()
    res = evaluate(run=tmp_path / "run", split="test")
    assert set(res.perplexity) == {"en", "fr"}


def test_compiled_forms_are_cached(tmp_path: Path) -> None:
    cfg = _cfg()
    corpus = load_corpus(cfg.data)
    vocab = build_bundle(cfg, corpus).vocab
    a, extra_a, _, _ = compile_forms(cfg.model.lexicon, vocab)
    assert any((tmp_path / "cache").rglob("*"))
    b, extra_b, _, _ = compile_forms(cfg.model.lexicon, vocab)
    assert extra_a == extra_b and torch.equal(a.related_ids, b.related_ids)


def _forms_as_words(bundle, word: str) -> tuple[list[str], list[str]]:  # type: ignore[no-untyped-def]
    table = list(bundle.vocab.words) + list(bundle.extra_words)
    f, i = bundle.forms, bundle.vocab.id(word)
    return ([table[j] for j, m in zip(f.related_ids[i], f.related_mask[i], strict=True) if m],
            [table[j] for j, m in zip(f.definition_ids[i], f.definition_mask[i], strict=True) if m])


def test_new_words_get_the_recorded_lexicons_forms_old_words_keep_theirs(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    lexicon = tmp_path / "lexicon.tsv"
    shutil.copyfile(TSV, lexicon)
    cfg = _cfg(f'model.lexicon.tsv_path="{lexicon}"')
    bundle = build_bundle(cfg, load_corpus(cfg.data))
    assert bundle.cfg.model.lexicon.tsv_path == str(lexicon.resolve())
    before = {w: _forms_as_words(bundle, w) for w in bundle.vocab.words}
    view = bundle.with_new_words({"en": ["canid", "goose"]})
    assert {w: _forms_as_words(view, w) for w in bundle.vocab.words} == before
    assert _forms_as_words(view, "canid")[0] == ["canine", "dog", "domestic dog"]
    assert _forms_as_words(view, "goose")[1][:2] == ["web-footed", "long-necked"]
    assert view.model.input_embedder.chars.shape[0] == len(view.vocab) + len(view.extra_words)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    # The lexicon changes after training: the run's words keep the forms they were trained with,
    # new words get the changed lexicon's, and the difference is reported.
    lexicon.write_text(TSV.read_text(encoding="utf-8").replace("a young dog", "a small wolf"), encoding="utf-8")
    view = bundle.with_new_words({"en": ["canid"]})
    assert _forms_as_words(view, "puppy") == before["puppy"]
    assert any("differs" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")
