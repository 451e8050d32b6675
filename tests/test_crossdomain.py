"""Open-vocabulary evaluation, caches, finetuning, tune-cache and analyses through the library and CLI."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from polyglot_groc.analysis.workflows import evaluate
from polyglot_groc.cli import app
from polyglot_groc.model.bundle import ModelBundle, load_bundle
from polyglot_groc.training.finetune import finetune_run
from polyglot_groc.training.trainer import Trainer
from tests.conftest import TINY, one_line_exit_2, small_run_config

runner = CliRunner()

#: Target-domain text with words the tiny English training text never has.
OTHER = ("the zebra sees the purple kettle .\nour zebra likes the old kettle .\n"
         "a teacher sees the purple river .\nthe neighbour likes a zebra .\n") * 4


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("xd")
    other = root / "other" / "en"
    other.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (other / f"{split}.txt").write_text(OTHER, encoding="utf-8")
    fr = root / "fr-only" / "fr"
    fr.mkdir(parents=True)
    for split in ("train", "valid", "test"):
        shutil.copyfile(TINY / "fr" / f"{split}.txt", fr / f"{split}.txt")
    out = {"other": root / "other", "fr": root / "fr-only", "root": root}
    for kind in ("groc", "lookup"):
        cfg = small_run_config(kind, "en", ["train.max_steps=2", 'data.vocab_mode="open"'])
        Trainer(cfg, root / kind).fit()
        out[kind] = root / kind
    return out


def _json(res: object) -> dict:
    text = res.stdout  # type: ignore[attr-defined]
    return json.loads(text[text.index("{"):])


@pytest.mark.parametrize("kind", ["groc", "lookup"])
def test_open_vocabulary_evaluation_reports_seen_and_new(runs: dict[str, Path], kind: str) -> None:
    res = runner.invoke(app, ["evaluate", str(runs[kind]), "--data", str(runs["other"]), "--split", "test"])
    assert res.exit_code == 0, res.output
    en = _json(res)["languages"]["en"]
    assert 0 < en["oov_rate"] < 1 and en["tokens"] > 0
    assert all(1 < en[k] < float("inf") for k in ("perplexity", "perplexity_seen", "perplexity_new"))
    # The new words (zebra, purple, kettle) are the hard ones for a barely trained model.
    assert en["perplexity_new"] > en["perplexity_seen"]
    assert (en["uniform_weight"] is None) == (kind == "groc")


def test_caches_help_on_repetitive_text(runs: dict[str, Path]) -> None:
    base = evaluate(run=runs["groc"], data=runs["other"], split="test").to_dict()["languages"]["en"]
    for cache in ("unigram", "neural"):
        cached = evaluate(run=runs["groc"], data=runs["other"], split="test", cache=cache, cache_lambda=0.5,
                          new_word_weight=1.0).to_dict()["languages"]["en"]
        assert cached["perplexity"] < base["perplexity"]  # the text repeats four times


def test_lookup_uniform_weight_given_or_tuned(runs: dict[str, Path]) -> None:
    given = evaluate(run=runs["lookup"], data=runs["other"], split="test", uniform_weight=0.05).languages["en"]
    tuned = evaluate(run=runs["lookup"], data=runs["other"], split="test").languages["en"]
    assert given["uniform_weight"] == 0.05
    # valid == test here and 0.05 is on the grid, so the tuned weight can only be as good or better
    assert tuned["perplexity"] <= given["perplexity"]


@pytest.mark.parametrize("args,needle", [
    (["--cache", "neural", "--cache-lambda", "1.5"], "--cache-lambda"),
    (["--cache", "neural", "--cache-theta", "-1"], "--cache-theta"),
    (["--cache", "neural", "--cache-size", "0"], "--cache-size"),
    (["--cache", "bogus"], "--cache"),
    (["--lexicon-coverage", "1.5"], "[0, 1]"),
])
def test_evaluate_bad_cache_and_coverage_exit_2(runs: dict[str, Path], args: list[str], needle: str) -> None:
    one_line_exit_2(runner.invoke(app, ["evaluate", str(runs["groc"]), "--data", str(runs["other"]), *args]),
                    needle)


def test_lexicon_coverage_needs_groc_lex(runs: dict[str, Path]) -> None:
    one_line_exit_2(runner.invoke(app, ["evaluate", str(runs["groc"]), "--lexicon-coverage", "0.5"]), "groc-lex")


def test_finetune_extends_vocabulary_keeping_trained_rows(runs: dict[str, Path]) -> None:
    out = runs["root"] / "lookup-ft"
    finetune_run(runs["lookup"], runs["other"], out, epochs=1, max_steps=1)
    old, _ = load_bundle(runs["lookup"])
    new, _ = load_bundle(out, "last")
    assert {"zebra", "purple", "kettle"} <= set(new.vocab.words) - set(old.vocab.words)
    assert new.vocab.words[: len(old.vocab)] == old.vocab.words
    # Finetuning moved the weights, so check the copy before training instead.
    from polyglot_groc.training.finetune import extend_bundle
    ext = extend_bundle(old, {"en": ["zebra"]})
    for name, p in old.model.state_dict().items():
        q = ext.model.state_dict()[name]
        assert torch.equal(q[: p.shape[0]], p) if q.shape != p.shape else torch.equal(q, p)
    res = runner.invoke(app, ["evaluate", str(out), "--data", str(runs["other"]), "--checkpoint", "last"])
    assert res.exit_code == 0 and _json(res)["languages"]["en"]["oov_rate"] == 0.0


def _resumed_optimizer(run: Path, out: Path) -> tuple[dict, dict, ModelBundle, ModelBundle]:
    """The run's saved Adam state and the state a finetuning Trainer starts from (vocabulary grown)."""
    from polyglot_groc.training.finetune import extend_bundle, extend_optimizer_state

    old, payload = load_bundle(run)
    new = extend_bundle(old, {"en": ["zebra", "kettle"]})
    state = extend_optimizer_state(payload["optimizer"], old, new)
    trainer = Trainer(new.cfg, out, bundle=new, optimizer_state=state)
    opt = trainer.make_optimizer()
    started = {name: opt.state[p] for (name, _), p in zip(new.model.named_parameters(),
                                                           trainer.trainable_parameters(), strict=True)}
    saved = {name: payload["optimizer"]["state"][i] for i, (name, _) in enumerate(old.model.named_parameters())}
    return saved, started, old, new


def test_finetune_resume_optimizer_groc_state_is_unchanged(runs: dict[str, Path]) -> None:
    saved, started, old, new = _resumed_optimizer(runs["groc"], runs["root"] / "groc-opt")
    assert len(new.vocab) == len(old.vocab) + 2 and set(saved) == set(started)
    for name, st in saved.items():  # GroC has no word-indexed parameter: every moment bit-identical
        assert set(st) == set(started[name])
        for key, value in st.items():
            assert torch.equal(started[name][key], value), (name, key)


def test_finetune_resume_optimizer_lookup_extends_state(runs: dict[str, Path]) -> None:
    saved, started, old, new = _resumed_optimizer(runs["lookup"], runs["root"] / "lookup-opt")
    n_old, n_new = len(old.vocab), len(new.vocab)
    params = dict(new.model.named_parameters())
    grown = 0
    for name, st in saved.items():
        for key in ("exp_avg", "exp_avg_sq"):
            value, now = st[key], started[name][key]
            assert now.shape == params[name].shape
            if value.shape != now.shape:  # a word-indexed table: old rows kept, new rows zero
                grown += 1
                assert value.shape[0] == n_old and now.shape[0] == n_new
                assert torch.equal(now[:n_old], value) and not now[n_old:].any()
            else:
                assert torch.equal(now, value)
        assert torch.equal(started[name]["step"], st["step"])
    assert grown >= 2  # input and output tables at least
    res = runner.invoke(app, ["finetune", str(runs["lookup"]), "--data", str(runs["other"]), "--out",
                              str(runs["root"] / "lookup-ft-opt"), "--epochs", "1", "--max-steps", "1",
                              "--resume-optimizer"])
    assert res.exit_code == 0, res.output


def test_finetune_resume_optimizer_without_state_exit_2(runs: dict[str, Path]) -> None:
    from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint

    bare = runs["root"] / "groc-no-opt"
    shutil.copytree(runs["groc"], bare)
    payload = load_checkpoint(bare / "best.pt")
    del payload["optimizer"]
    save_checkpoint(bare / "best.pt", {k: v for k, v in payload.items() if k != "format_version"})
    out = runs["root"] / "ft-no-opt"
    res = runner.invoke(app, ["finetune", str(bare), "--data", str(runs["other"]), "--out", str(out),
                              "--resume-optimizer"])
    one_line_exit_2(res, "no optimizer state")
    assert not out.exists() or not any(p for p in out.iterdir() if not p.name.startswith(".lock"))


def test_finetune_in_unknown_language_exit_2(runs: dict[str, Path]) -> None:
    res = runner.invoke(app, ["finetune", str(runs["groc"]), "--data", str(runs["fr"]),
                              "--out", str(runs["root"] / "ft-fr")])
    one_line_exit_2(res, "does not know")


def test_tune_cache_grid_and_heatmap(runs: dict[str, Path]) -> None:
    png = runs["root"] / "tune.png"
    res = runner.invoke(app, ["tune-cache", str(runs["groc"]), "--data", str(runs["other"]), "--out", str(png)])
    assert res.exit_code == 0, res.output
    out = _json(res)
    grid = out["perplexity"]
    assert len(grid) == 5 and len(grid[0]) == 5 and out["lambdas"][0] == 0.833 and out["lambdas"][-1] == 0.966
    # No cache is a candidate: the best is the lowest of the whole grid and of no cache.
    every = [v for g in out["perplexity_by_new_word_weight"].values() for row in g for v in row]
    assert out["best_cached"]["perplexity"] == min(every) == min(min(r) for r in grid)
    assert out["best"]["perplexity"] == min(min(every), out["perplexity_no_cache"])
    assert out["new_word_weights"] == [0.1, 0.3, 0.5, 0.7, 0.9, 1.0] and out["perplexity_no_cache"] > 0
    assert out["cache_helps"] == (out["best"]["cache"] == "neural") and isinstance(out["on_edge"], dict)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_tune_cache_grids_from_the_command_line(runs: dict[str, Path]) -> None:
    png = runs["root"] / "tune2.png"
    args = ["tune-cache", str(runs["groc"]), "--data", str(runs["other"]), "--out", str(png)]
    res = runner.invoke(app, [*args, "--thetas", "1,0.5", "--lambdas", "0.5,0.99", "--new-word-weight", "1"])
    assert res.exit_code == 0, res.output
    out = _json(res)
    assert out["thetas"] == [0.5, 1.0] and out["lambdas"] == [0.5, 0.99] and out["new_word_weights"] == [1.0]
    assert "new_word_weight" not in out["on_edge"]  # one value: fixed, not tuned
    # The text repeats four times: a neural cache beats no cache.
    assert out["best"]["cache"] == "neural" and out["evaluate_args"][:2] == ["--cache", "neural"]
    for bad, needle in ((["--lambdas", "0.5,x"], "--lambdas"), (["--lambdas", "1.5"], "--lambdas"),
                        (["--thetas", ","], "--thetas"), (["--new-word-weights", "0"], "--new-word-weights"),
                        (["--new-word-weight", "0.1", "--new-word-weights", "0.1,1"], "not both")):
        # --overwrite: the PNG of the good call above exists; the grids are what is checked here.
        one_line_exit_2(runner.invoke(app, [*args, "--overwrite", *bad]), needle)


def test_evaluate_cache_defaults_leave_new_words_alone_and_check_on_valid(
        runs: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    plain = evaluate(run=runs["groc"], data=runs["other"], split="test").languages["en"]
    assert "perplexity_no_cache" not in plain and "cache_check" not in plain
    # λ = 1: the cache has no weight, so nothing changes (a hidden 0.1 new-word weight used to).
    same = evaluate(run=runs["groc"], data=runs["other"], split="test", cache="neural",
                    cache_lambda=1.0).languages["en"]
    assert same["perplexity"] == pytest.approx(plain["perplexity"]) == same["perplexity_no_cache"]
    assert same["perplexity_new"] == pytest.approx(plain["perplexity_new"])
    res = runner.invoke(app, ["evaluate", str(runs["groc"]), "--data", str(runs["other"]), "--cache", "neural"])
    assert res.exit_code == 0, res.output
    en = _json(res)["languages"]["en"]
    assert _json(res)["cache"]["new_word_weight"] == 1.0
    assert en["perplexity_no_cache"] == pytest.approx(plain["perplexity"]) and en["cache_check"]["split"] == "valid"
    assert en["cache_check"]["helps"] and en["perplexity"] < en["perplexity_no_cache"]  # the text repeats
    # A setting worse than no cache on the valid split is a warning (λ = 0: the cache alone).
    with caplog.at_level("WARNING", logger="polyglot_groc.analysis.crossdomain"):
        bad = evaluate(run=runs["groc"], data=runs["other"], split="test", cache="unigram",
                       cache_lambda=0.0).to_dict()
    assert bad["languages"]["en"]["cache_check"]["helps"] is False
    assert "worse than" in caplog.text and "tune-cache" in caplog.text
    # --new-word-weight alone is open-vocabulary evaluation too (on the run's own data), with the same check.
    res = runner.invoke(app, ["evaluate", str(runs["groc"]), "--new-word-weight", "0.5"])
    assert res.exit_code == 0, res.output
    assert _json(res)["cache"]["new_word_weight"] == 0.5 and "cache_check" in _json(res)["languages"]["en"]


def test_freq_bins_and_curves(runs: dict[str, Path]) -> None:
    png = runs["root"] / "fb.png"
    res = runner.invoke(app, ["analyze", "freq-bins", str(runs["groc"]), str(runs["lookup"]),
                              "--data", str(TINY), "--out", str(png), "--bin-width", "5", "--bins", "3"])
    assert res.exit_code == 0, res.output
    bins = _json(res)["bins"]
    assert [b["bin"] for b in bins] == ["1-5", "6-10", "11+"]
    assert sum(b["n_tokens"] for b in bins) == _json(res)["tokens"]
    # Every token is in a bin here, so the shares add up to log(binned ppl a / binned ppl b), and the
    # binned perplexities are the models' perplexities over the whole text.
    out = _json(res)
    assert "ppl_a" not in out and out["unit"] == "nats per token"
    ratio = math.log(out["binned_perplexity_a"] / out["binned_perplexity_b"])
    assert sum(b["share"] for b in bins) == pytest.approx(ratio, abs=1e-6) and out["mean_diff"] == pytest.approx(ratio)
    assert out["perplexity_a"] == pytest.approx(out["binned_perplexity_a"])
    assert out["perplexity_b"] == pytest.approx(out["binned_perplexity_b"])
    assert out["json"] == str(png.with_suffix(".json")) and json.loads(png.with_suffix(".json").read_text()) == out
    assert png.read_bytes()[:4] == b"\x89PNG"
    cpng = runs["root"] / "curves.png"
    res = runner.invoke(app, ["analyze", "curves", str(runs["groc"]), str(runs["lookup"]), "--out", str(cpng)])
    assert res.exit_code == 0, res.output
    assert cpng.read_bytes()[:4] == b"\x89PNG"


def test_freq_bins_binned_and_full_perplexities_are_told_apart(runs: dict[str, Path]) -> None:
    from polyglot_groc.analysis.workflows import freq_bins

    # A lookup model gives the new words (zebra, kettle, ...) probability 0: they are left out of
    # the bins, so the binned perplexities are not the models' perplexities over the text.
    out = freq_bins(run_a=runs["groc"], run_b=runs["lookup"], data=runs["other"], split="test", bin_width=5,
                    bins=3).to_dict()
    assert 0 < out["tokens_binned"] < out["tokens"]
    assert sum(b["n_tokens"] for b in out["bins"]) == out["tokens_binned"]
    assert out["zero_probability_tokens_a"] == 0 and out["zero_probability_tokens_b"] > 0
    assert out["perplexity_b"] is None and 1 < out["perplexity_a"] != out["binned_perplexity_a"]
    assert all(1 < out[k] < float("inf") for k in ("binned_perplexity_a", "binned_perplexity_b"))


@pytest.mark.parametrize("name", ["fig.json", "fig.pdf", "fig"])
def test_freq_bins_out_must_be_png_nothing_written(runs: dict[str, Path], tmp_path: Path, name: str) -> None:
    # fig.json used to get the PNG and then the JSON over it: one output clobbered the other.
    res = runner.invoke(app, ["analyze", "freq-bins", str(runs["groc"]), str(runs["lookup"]),
                              "--data", str(TINY), "--out", str(tmp_path / name)])
    one_line_exit_2(res, ".png")
    assert list(tmp_path.iterdir()) == []
    res = runner.invoke(app, ["analyze", "curves", str(runs["groc"]), "--out", str(tmp_path / name)])
    one_line_exit_2(res, ".png")
    res = runner.invoke(app, ["tune-cache", str(runs["groc"]), "--data", str(runs["other"]),
                              "--out", str(tmp_path / name)])
    one_line_exit_2(res, ".png")
    assert list(tmp_path.iterdir()) == []


def test_freq_bins_different_vocabularies_exit_2(runs: dict[str, Path]) -> None:
    ft = runs["root"] / "groc-ft"
    finetune_run(runs["groc"], runs["other"], ft, epochs=1, max_steps=1)
    res = runner.invoke(app, ["analyze", "freq-bins", str(runs["groc"]), str(ft), "--data", str(TINY),
                              "--out", str(runs["root"] / "x.png")])
    one_line_exit_2(res, "different vocabularies")


def test_inference_lexicon_coverage_drops_forms_deterministically(tmp_path: Path) -> None:
    from polyglot_groc.analysis.crossdomain import with_lexicon_coverage
    from tests.test_lexforms import _cfg

    Trainer(_cfg("train.max_steps=1"), tmp_path / "lex").fit()
    bundle, _ = load_bundle(tmp_path / "lex")
    assert bundle.forms is not None and bundle.forms.related_mask.any()
    none = with_lexicon_coverage(bundle, 0.0)
    assert none.forms is not None and not none.forms.related_mask.any() and not none.forms.definition_mask.any()
    half_a = with_lexicon_coverage(bundle, 0.5).forms
    half_b = with_lexicon_coverage(bundle, 0.5).forms
    assert half_a is not None and half_b is not None and torch.equal(half_a.related_mask, half_b.related_mask)
    full = evaluate(run=tmp_path / "lex", data=Path(bundle.cfg.data.root), lexicon_coverage=1.0).to_dict()
    zero = evaluate(run=tmp_path / "lex", data=Path(bundle.cfg.data.root), lexicon_coverage=0.0).to_dict()
    assert full["languages"]["en"]["perplexity"] != zero["languages"]["en"]["perplexity"]


def test_crossdomain_preset_is_deterministic(shared_data: Path, tmp_path: Path) -> None:
    args = ["data", "prepare", "--preset", "crossdomain-en", "--data", str(shared_data),
            "--train-tokens", "3000", "--eval-tokens", "500", "--finetune-tokens", "1000"]
    a = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    b = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert a.exit_code == 0 and b.exit_code == 0, a.output
    man = _json(a)
    assert set(man["domains"]) == {"source", "near", "far-fiction", "far-wiki", "far-web"}
    for dom, info in man["domains"].items():
        assert 0 <= info["test_oov_percent"] <= 100 and info["tokens"]["test"] >= 500
        for split in ("train", "valid", "test"):
            pa = tmp_path / "a" / dom / "en" / f"{split}.txt"
            assert pa.read_bytes() == (tmp_path / "b" / dom / "en" / f"{split}.txt").read_bytes()
    # Case and punctuation are kept.
    text = (tmp_path / "a" / "far-wiki" / "en" / "test.txt").read_text(encoding="utf-8")
    assert any(c.isupper() for c in text) and "," in text
    bad = runner.invoke(app, ["data", "prepare", "--preset", "nope", "--data", str(shared_data),
                              "--out", str(tmp_path / "c")])
    one_line_exit_2(bad, "crossdomain-en")
