"""data.min_count: open vocabularies of lookup-output kinds leave rare training words to a trained ``<unk>``.

Without a cutoff every training word is in the vocabulary, ``<unk>`` is never a training target,
and the validation words it stands for get ever lower probability (perplexity climbs and best.pt
stays at the first validation). Closed vocabularies and GroC kinds keep every word.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from groc_base.errors import ConfigError, InputError
from polyglot_groc.cli import app
from polyglot_groc.config import dump_toml, load_config, to_dict
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint
from polyglot_groc.model.vocab import UNK, Vocab
from polyglot_groc.training.data import load_corpus
from polyglot_groc.training.evaluation import split_streams
from polyglot_groc.training.finetune import finetune_words
from polyglot_groc.training.trainer import Trainer, build_bundle
from polyglot_groc.training.workflows import load_result, resume
from tests.conftest import RecordingHooks, one_line_exit_2, small_run_config

#: Words of the fixture's training text; every ``rareN`` occurs once, ``pair`` twice.
COMMON = ["the cat sees the dog .", "a dog sees the cat .", "the dog eats .", "a cat eats the fish ."]


def _corpus(root: Path, langs: tuple[str, ...] = ("en",)) -> Path:
    """Training text of frequent words with 12 hapaxes (``rare<lang>N``) and one word seen twice;
    validation text with 12 words training never saw, in the places the hapaxes had."""
    for lang in langs:
        d = root / lang
        d.mkdir(parents=True)
        train = [COMMON[i % len(COMMON)] for i in range(48)]
        train += [f"the cat sees the rare{lang}{i} ." for i in range(12)] + ["the pair eats .", "a pair eats ."]
        valid = [COMMON[i % len(COMMON)] for i in range(6)] + [f"the cat sees the new{lang}{i} ." for i in range(12)]
        (d / "train.txt").write_text("\n".join(train) + "\n", encoding="utf-8")
        (d / "valid.txt").write_text("\n".join(valid) + "\n", encoding="utf-8")
        (d / "test.txt").write_text("\n".join(valid) + "\n", encoding="utf-8")
    return root


def _config(root: Path, kind: str, more: dict[str, Any] | None = None) -> Any:
    return small_run_config(kind, "en", {"data.root": str(root), "data.vocab_mode": "open", **(more or {})})


# --------------------------------------------------------------------------- the vocabulary


def test_build_leaves_rare_words_to_unk_ranked_by_the_tokens_it_stands_for() -> None:
    counts = {"en": Counter({"the": 5, "cat": 2, "x": 1, "y": 1, "z": 1}), "fr": Counter({"le": 4, "cat": 1, "w": 1})}
    v = Vocab.build(counts, add_unk=True, min_count=2)
    # "cat" is kept on its total (2 + 1); x, y, z, w (one each) become <unk>: 4 targets, tied with "le".
    assert v.words == ("the", UNK, "le", "cat")
    assert v.counts[v.id(UNK)] == 0  # its own count: the corpus never writes <unk>
    assert v.membership[v.id("cat")].tolist() == [True, True] and v.membership[v.id(UNK)].all()
    assert list(v.encode(["the", "x", "w"], unk=True)) == [v.id("the"), v.id(UNK), v.id(UNK)]
    # min_count=1 is the vocabulary without a cutoff, id for id.
    same, plain = Vocab.build(counts, add_unk=True, min_count=1), Vocab.build(counts, add_unk=True)
    assert same.fingerprint() == plain.fingerprint() and same.counts == plain.counts
    with pytest.raises(ValueError, match="add_unk"):
        Vocab.build(counts, min_count=2)


def test_a_corpus_unk_keeps_its_count_and_gains_the_rare_tokens() -> None:
    v = Vocab.build({"en": Counter({"the": 9, UNK: 3, "a": 4, "x": 1, "y": 1})}, add_unk=True, min_count=2)
    assert v.words == ("the", UNK, "a") and v.counts == (9, 3, 4)


@pytest.mark.parametrize("kind", ["tied", "elmo"])
def test_lookup_kind_open_vocabulary_trains_unk(tmp_path: Path, kind: str) -> None:
    cfg = _config(_corpus(tmp_path / "data"), kind)
    assert cfg.data.min_count == 2  # the default
    corpus = load_corpus(cfg.data, ("train", "valid"))
    bundle = build_bundle(cfg, corpus)
    vocab = bundle.vocab
    assert not any(w.startswith("rare") for w in vocab.words) and "pair" in vocab and UNK in vocab
    streams = split_streams(bundle, corpus, "train", 4)
    assert int(np.count_nonzero(streams["en"] == vocab.id(UNK))) == 12  # every hapax is an <unk> target


@pytest.mark.parametrize("kind, mode", [("groc", "open"), ("tied", "closed"), ("elmo", "closed")])
def test_groc_kinds_and_closed_vocabularies_keep_every_word(tmp_path: Path, kind: str, mode: str) -> None:
    cfg = _config(_corpus(tmp_path / "data"), kind, {"data.vocab_mode": mode, "data.min_count": 5})
    corpus = load_corpus(cfg.data)
    vocab = build_bundle(cfg, corpus).vocab
    splits = ("train",) if mode == "open" else ("train", "valid", "test")
    assert set(vocab.words) == set(corpus.counts("en", splits)) and UNK not in vocab


# --------------------------------------------------------------------------- training


def _unk_logprob(run: Path) -> tuple[float, float]:
    """Mean log p(<unk>) where validation has a word outside the vocabulary, and the run's last
    validation perplexity (last.pt)."""
    bundle, _ = load_bundle(run, "last")
    model = bundle.model.eval()
    corpus = load_corpus(bundle.cfg.data, ("train", "valid"))
    ids = torch.from_numpy(bundle.vocab.encode(corpus.splits["en"]["valid"], unk=True))[None]
    with torch.no_grad():
        lp = model.token_logprobs(ids[:, :-1], ids[:, 1:], "en", model.init_state(1)).logp
    at_unk = ids[:, 1:] == bundle.vocab.id(UNK)
    assert int(at_unk.sum()) == 12
    return float(lp[at_unk].mean()), load_result(run=run).last_valid["en"]


def test_min_count_trains_unk_for_unseen_validation_words(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = _corpus(tmp_path / "data")
    steps = {"train.max_steps": 40, "train.eval_every": 20, "train.log_every": 0}
    with caplog.at_level(logging.INFO, logger="polyglot_groc.training.trainer"):
        cut = Trainer(_config(root, "tied", steps), tmp_path / "cut").fit()
    assert cut.unk == {"min_count": 2, "dropped_words": 12, "unk_tokens": cut.unk["unk_tokens"],
                       "unk_share": cut.unk["unk_share"]}
    assert 0 < cut.unk["unk_tokens"] <= 12 and 0 < cut.unk["unk_share"] < 0.1
    assert "12 training word types are outside the vocabulary" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="polyglot_groc.training.trainer"):
        full = Trainer(_config(root, "tied", {**steps, "data.min_count": 1}), tmp_path / "full").fit()
    assert full.unk["dropped_words"] == 0 and full.unk["unk_tokens"] == 0
    assert "set data.min_count to 2 or more" in caplog.text  # the untrained <unk> is named
    from polyglot_groc.training.workflows import write_result

    for run, result in ((tmp_path / "cut", cut), (tmp_path / "full", full)):
        write_result(run, result.to_dict())
    (cut_lp, cut_ppl), (full_lp, full_ppl) = _unk_logprob(tmp_path / "cut"), _unk_logprob(tmp_path / "full")
    assert np.isfinite(cut_ppl) and np.isfinite(full_ppl)
    # A trained <unk> gives the unseen words far more probability (nats), and validation a lower perplexity.
    assert cut_lp > full_lp + 1.0, (cut_lp, full_lp)
    assert cut_ppl < full_ppl
    assert load_result(run=tmp_path / "cut").unk == cut.unk  # result.json holds the report


def test_on_start_info_reports_unk_and_groc_runs_report_nothing(tmp_path: Path) -> None:
    root = _corpus(tmp_path / "data")
    hooks = RecordingHooks()
    steps = {"train.max_steps": 1, "train.log_every": 0}
    Trainer(_config(root, "elmo", steps), tmp_path / "elmo", hooks=hooks).fit()
    groc = Trainer(_config(root, "groc", steps), tmp_path / "groc", hooks=hooks).fit()
    assert hooks.starts[0]["unk"]["dropped_words"] == 12 and hooks.starts[1]["unk"] == {}
    assert "unk" not in groc.to_dict()


def test_finetuning_leaves_rare_new_words_to_unk(tmp_path: Path) -> None:
    cfg = _config(_corpus(tmp_path / "data"), "tied", {"train.max_steps": 1})
    bundle = build_bundle(cfg, load_corpus(cfg.data, ("train", "valid")))
    new = load_corpus(dataclasses.replace(cfg.data, root=str(_corpus(tmp_path / "new", ("en",)))), ("train",))
    # The new domain: the same text, whose hapaxes the vocabulary does not know either.
    assert finetune_words(bundle, new, 2) == {"en": []}
    assert len(finetune_words(bundle, new, 1)["en"]) == 12
    groc = build_bundle(_config(tmp_path / "data", "groc"), load_corpus(cfg.data, ("train",)))
    assert finetune_words(groc, new, 2) == {"en": []}  # it has them all already


def test_a_finetuned_lookup_run_trains_unk_on_the_new_domain_s_rare_words(tmp_path: Path) -> None:
    from polyglot_groc.training.workflows import finetune

    run = tmp_path / "run"
    Trainer(_config(_corpus(tmp_path / "data"), "tied", {"train.max_steps": 2, "train.log_every": 0}), run).fit()
    new = tmp_path / "new" / "en"
    new.mkdir(parents=True)
    text = "the cat sees the twice .\nthe dog sees the twice .\nthe dog sees the once .\n" + COMMON[0] + "\n"
    for split in ("train", "valid"):
        (new / f"{split}.txt").write_text(text, encoding="utf-8")
    result = finetune(run=run, data=tmp_path / "new", out=tmp_path / "ft", epochs=1)
    bundle, _ = load_bundle(tmp_path / "ft", "last")
    assert "twice" in bundle.vocab and "once" not in bundle.vocab
    assert result.unk["dropped_words"] == 1 and result.unk["unk_tokens"] >= 1
    assert load_result(run=tmp_path / "ft").unk == result.unk


def test_an_elmo_model_with_a_cutoff_converts_to_groc_with_every_word(tmp_path: Path) -> None:
    from polyglot_groc.elmo.convert import convert_elmo_bundle, cover_corpus

    cfg = _config(_corpus(tmp_path / "data"), "elmo")
    corpus = load_corpus(cfg.data, ("train", "valid"))
    elmo = build_bundle(cfg, corpus)
    groc = convert_elmo_bundle(elmo)
    assert UNK not in groc.vocab  # synthetic: the cutoff's tokens do not make it a corpus word
    covered = cover_corpus(groc, corpus)
    assert set(covered.vocab.words) == set(corpus.counts("en", ("train",)))  # the rare words are back


# --------------------------------------------------------------------------- runs stored before the key


def _strip_min_count(run: Path) -> None:
    """Make ``run`` look as written before data.min_count existed (config.toml and checkpoints)."""
    text = (run / "config.toml").read_text(encoding="utf-8")
    (run / "config.toml").write_text("\n".join(line for line in text.splitlines()
                                               if not line.startswith("min_count")) + "\n", encoding="utf-8")
    for name in ("last.pt", "best.pt"):
        payload = load_checkpoint(run / name)
        del payload["bundle"]["config"]["data"]["min_count"]
        save_checkpoint(run / name, payload)


def test_a_run_stored_without_the_key_resumes_as_it_was_trained(tmp_path: Path) -> None:
    run = tmp_path / "old"
    cfg = _config(_corpus(tmp_path / "data"), "tied", {"train.max_steps": 4, "train.eval_every": 2,
                                                       "train.log_every": 0, "data.min_count": 1})
    Trainer(cfg, run).fit()
    before, _ = load_bundle(run, "last")
    _strip_min_count(run)
    assert "min_count" not in (run / "config.toml").read_text(encoding="utf-8")
    old, _ = load_bundle(run, "last")
    assert old.cfg.data.min_count == 1  # no cutoff, as it was trained
    assert old.vocab.fingerprint() == before.vocab.fingerprint() and len(old.vocab) == 22 + 1  # every word, <unk>
    result = resume(run=run, max_steps=6)
    assert result.steps == 6 and result.unk["min_count"] == 1 and result.unk["dropped_words"] == 0
    assert load_config(run / "config.toml").data.min_count == 1  # now written down
    after, _ = load_bundle(run, "last")
    assert after.vocab.fingerprint() == before.vocab.fingerprint() and after.cfg.data.min_count == 1


def test_a_config_toml_without_the_key_beside_a_checkpoint_with_another_value_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    Trainer(_config(_corpus(tmp_path / "data"), "tied", {"train.max_steps": 2, "data.min_count": 3}), run).fit()
    text = (run / "config.toml").read_text(encoding="utf-8")
    (run / "config.toml").write_text(text.replace("min_count = 3\n", ""), encoding="utf-8")
    with pytest.raises(InputError, match="data.min_count = 3 in last.pt, 1 in config.toml"):
        resume(run=run, max_steps=4)


def test_a_new_config_without_the_key_gets_the_default(tmp_path: Path) -> None:
    values = to_dict(small_run_config())
    del values["data"]["min_count"]
    path = tmp_path / "c.toml"
    cfg = load_config(None, base=values)
    path.write_text(dump_toml(cfg).replace("min_count = 2\n", ""), encoding="utf-8")
    # A config file of yours gets today's default; a run's stored one reads as the run was trained.
    assert load_config(path).data.min_count == 2 and load_config(path, stored=True).data.min_count == 1


# --------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("value, needle", [(0, "data.min_count=0 is out of range"), (-3, "data.min_count=-3"),
                                           (1.5, "data.min_count=1.5 must be an integer"),
                                           ("two", "data.min_count='two' must be an integer"),
                                           (True, "data.min_count=True must be an integer")])
def test_bad_min_count_is_a_one_line_config_error(value: object, needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(None, {"data.min_count": value})
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_bad_min_count_from_the_command_line_is_exit_2(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["train", "--langs", "en", "--data", str(_corpus(tmp_path / "data")), "--out",
                                   str(tmp_path / "r"), "--set", "data.min_count=0"])
    one_line_exit_2(res, "data.min_count=0 is out of range")
    assert not (tmp_path / "r").exists()
