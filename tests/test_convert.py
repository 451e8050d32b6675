"""ELMo -> GroC initialisation: what the conversion preserves, and the init-from-elmo workflow."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from groc_base.errors import ModelError
from langpairs.corpus import MultilingualCorpus
from polyglot_groc.cli import app
from polyglot_groc.elmo.convert import (
    convert_elmo_bundle,
    cover_corpus,
    elmo_groc_config,
    install_elmo_weights,
    neutral_bias,
)
from polyglot_groc.model.bundle import ModelBundle, load_bundle
from polyglot_groc.model.outputs import ComputedBias, LookupBias
from polyglot_groc.training.data import load_corpus
from polyglot_groc.training.trainer import build_bundle, seed_everything
from tests.conftest import TINY, small_run_config

CLI_SMALL = ["--set", "model.d=16", "--set", "model.prefix.hidden=24", "--set",
             "model.surface.filters=[[1,8],[2,8],[3,16]]", "--set", "train.batch_size=4", "--set", "train.bptt=8",
             "--set", "train.eval_batch_size=2", "--set", "train.threads=1"]


def _elmo_bundle(langs: str = "en", extra: list[str] | None = None, bias_mean: float = 0.3) -> ModelBundle:
    """An untrained elmo bundle on the tiny corpus with random (non-zero) weights everywhere."""
    cfg = small_run_config("elmo", langs, extra)
    seed_everything(0)
    bundle = build_bundle(cfg, load_corpus(cfg.data, ("train", "valid", "test")))
    with torch.no_grad():
        for p in bundle.model.parameters():
            p.add_(0.1 * torch.randn_like(p))
        bias = bundle.model.bias
        assert isinstance(bias, LookupBias)
        bias.b.copy_(torch.randn_like(bias.b))
        bias.b.sub_(bias.b.mean() - bias_mean)  # exactly this mean
    return bundle


def _ids(bundle: ModelBundle, words: tuple[str, ...]) -> torch.Tensor:
    return torch.tensor([bundle.vocab.id(w) for w in words], dtype=torch.long)


@pytest.mark.parametrize("langs", ["en", "en,fr"])
def test_conversion_preserves_input_side(langs: str) -> None:
    elmo = _elmo_bundle(langs, ["model.output.depth=2"])
    conv = convert_elmo_bundle(elmo)
    elmo.model.eval()
    conv.model.eval()
    assert conv.cfg.model.kind == "groc" and conv.model.shared_embedding
    assert conv.vocab.words == elmo.vocab.words and conv.vocab.langs == elmo.vocab.langs
    assert conv.charset == elmo.charset
    words = conv.vocab.words
    with torch.no_grad():
        e_old = elmo.model.embed_words(_ids(elmo, words), "input")
        e_new = conv.model.embed_words(_ids(conv, words), "input")
        assert torch.equal(e_old, e_new)
        # Output net is the identity at conversion: output embeddings = input embeddings.
        assert torch.equal(conv.model.embed_words(_ids(conv, words), "output"), e_new)
        assert all(float(p.abs().sum()) == 0.0 for p in conv.model.output_net.parameters())
        # Same prefix: same outputs and states for the same input.
        x = torch.randn(3, 7, elmo.cfg.model.d)
        h_old, s_old = elmo.model.prefix(x, elmo.model.init_state(3))
        h_new, s_new = conv.model.prefix(x, conv.model.init_state(3))
        assert torch.equal(h_old, h_new)
        for (a, b), (c, d) in zip(s_old, s_new, strict=True):
            assert torch.equal(a, c) and torch.equal(b, d)
        # Inside forward, the same input vectors (elmo embeds the batch words, groc the scored vocabulary).
        seq = torch.tensor([[1, 4, 2, 7, 3]])
        lang = elmo.vocab.langs[0]
        screen_ids = conv.model.screen.ids(lang)
        seq = screen_ids[seq.clamp_max(len(screen_ids) - 1)]
        x_old = elmo.model.embed_inputs(seq, elmo.model.vocab_tables(lang))
        x_new = conv.model.embed_inputs(seq, conv.model.vocab_tables(lang))
        assert torch.allclose(x_old, x_new, rtol=0, atol=1e-6)  # batch shapes differ: float rounding only
    # Nothing is shared with the source model.
    conv_ptrs = {p.data_ptr() for p in conv.model.parameters()}
    assert not conv_ptrs & {p.data_ptr() for p in elmo.model.parameters()}


def test_lookup_table_dropped_and_bias_mean_kept() -> None:
    elmo = _elmo_bundle(bias_mean=0.25)
    conv = convert_elmo_bundle(elmo)
    V = len(conv.vocab)
    assert isinstance(conv.model.bias, ComputedBias)
    assert not [k for k, v in conv.model.state_dict().items() if v.dim() and v.shape[0] == V]
    assert conv.cfg.model.output.bias_activation == "relu"  # positive mean: relu kept, a active
    assert float(conv.model.bias.w.bias.detach()) == pytest.approx(0.25, abs=1e-6)
    conv.model.eval()
    tables = conv.model.vocab_tables(None)
    assert float(tables.bias.detach().mean()) == pytest.approx(0.25, abs=1e-5)
    assert torch.allclose(tables.bias, tables.bias[0].expand_as(tables.bias))  # w = 0: neutral
    # The switched config survives a checkpoint round trip.
    again = ModelBundle.from_state(conv.to_state())
    again.model.eval()
    assert torch.equal(again.model.vocab_tables(None).bias, tables.bias)


def test_nonpositive_mean_switches_relu_to_identity(caplog: pytest.LogCaptureFixture) -> None:
    elmo = _elmo_bundle(bias_mean=-0.5)
    with caplog.at_level(logging.INFO, logger="polyglot_groc.elmo.convert"):
        conv = convert_elmo_bundle(elmo)
    assert conv.cfg.model.output.bias_activation == "identity"
    assert "identity instead of relu" in caplog.text
    conv.model.eval()
    assert float(conv.model.vocab_tables(None).bias.detach().mean()) == pytest.approx(-0.5, abs=1e-5)
    assert neutral_bias(0.3, "tanh")[0] == "tanh" and neutral_bias(2.0, "tanh") == ("identity", 2.0)
    act, a = neutral_bias(0.2, "sigmoid")
    assert act == "sigmoid" and torch.sigmoid(torch.tensor(a)).item() == pytest.approx(0.2)


def test_open_vocab_drops_synthetic_unk_and_rejects_non_elmo() -> None:
    elmo = _elmo_bundle(extra=['data.vocab_mode="open"'])
    assert "<unk>" in elmo.vocab
    conv = convert_elmo_bundle(elmo)
    assert "<unk>" not in conv.vocab and len(conv.vocab) == len(elmo.vocab) - 1
    with pytest.raises(ModelError, match="not elmo"):
        convert_elmo_bundle(conv)
    with pytest.raises(ModelError, match="groc-lex"):
        convert_elmo_bundle(elmo, kind="groc-lex")


def test_cover_corpus_adds_words_and_memberships() -> None:
    conv = convert_elmo_bundle(_elmo_bundle("en,fr"))
    en_only = next(w for w, (e, f) in zip(conv.vocab.words, conv.vocab.membership, strict=True) if e and not f)
    corpus = MultilingualCorpus(langs=("en", "fr"), splits={
        "en": {"train": ["zzqx", "the", "<eos>"], "valid": ["the"], "test": ["the"]},
        "fr": {"train": [en_only, "<eos>"], "valid": ["<eos>"], "test": ["<eos>"]}})
    covered = cover_corpus(conv, corpus)
    assert "zzqx" in covered.vocab and covered.vocab.words[: len(conv.vocab)] == conv.vocab.words
    fr = covered.vocab.langs.index("fr")
    assert covered.vocab.membership[covered.vocab.id(en_only), fr]
    assert int(covered.vocab.id(en_only)) in set(covered.model.screen.ids("fr").tolist())
    assert cover_corpus(covered, corpus) is covered


# --------------------------------------------------------------------------- CLI workflow


def test_init_from_elmo_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    elmo_run, groc_run = tmp_path / "elmo", tmp_path / "groc"
    res = runner.invoke(app, ["train", "--data", str(TINY), "--langs", "en,fr", "--model", "elmo", "--out",
                              str(elmo_run), "--max-steps", "3", *CLI_SMALL])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["init-from-elmo", str(elmo_run), "--out", str(groc_run), "--max-steps", "3",
                              "--eval-every", "2", "--threads", "1", "--set", "train.lr=0.002"])
    assert res.exit_code == 0, res.output
    assert "before finetuning: valid perplexity en" in res.output
    records = [json.loads(line) for line in (groc_run / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [0, 2, 3]
    assert records[0]["phase"] == "converted" and set(records[0]["valid_perplexity"]) == {"en", "fr"}
    result = json.loads((groc_run / "result.json").read_text())
    assert result["converted_valid_perplexity"] == records[0]["valid_perplexity"]
    assert result["steps"] == 3 and result["init_from"] == str(elmo_run)
    bundle, payload = load_bundle(groc_run, "last")
    assert bundle.model.kind == "groc" and payload["step"] == 3
    assert bundle.cfg.train.lr == pytest.approx(0.002)  # --set wins over --lr's default
    res = runner.invoke(app, ["evaluate", str(groc_run), "--split", "valid"])
    assert res.exit_code == 0, res.output
    assert set(json.loads(res.stdout)["perplexity"]) == {"en", "fr"}

    # A non-elmo run, conflicting budgets and architecture overrides: exit 2, one line.
    for args, msg in (([str(groc_run)], "is a groc run, not elmo"),
                      ([str(elmo_run), "--max-steps", "2", "--finetune-epochs", "1"], "both given"),
                      ([str(elmo_run), "--set", "model.d=32"], "--set model.d=... is not allowed")):
        res = runner.invoke(app, ["init-from-elmo", *args, "--out", str(tmp_path / "bad")])
        assert res.exit_code == 2, res.output
        assert msg in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert not (tmp_path / "bad").exists()


# --------------------------------------------------------------------------- bilm-tf weights


def _write_bilm(path: Path, rng: np.random.Generator, dim: int, proj: int, n_layers: int = 2) -> Path:
    """A random bilm-tf weights file (forward direction only) in bilm-tf's layout."""
    import h5py

    filters = [[1, 4], [2, 4], [3, 8]]
    n_f, cdim = 16, 4
    with h5py.File(path / "w.hdf5", "w") as f:
        f["char_embed"] = rng.normal(size=(261, cdim)).astype("f4")
        for i, (w, n) in enumerate(filters):
            f[f"CNN/W_cnn_{i}"] = rng.normal(0, 0.3, size=(1, w, cdim, n)).astype("f4")
            f[f"CNN/b_cnn_{i}"] = rng.normal(0, 0.1, size=(n,)).astype("f4")
        for name, shape in (("W_transform", (n_f, n_f)), ("b_transform", (n_f,)), ("W_carry", (n_f, n_f)),
                            ("b_carry", (n_f,))):
            f[f"CNN_high_0/{name}"] = rng.normal(0, 0.2, size=shape).astype("f4")
        if n_f != proj:
            f["CNN_proj/W_proj"] = rng.normal(0, 0.2, size=(n_f, proj)).astype("f4")
            f["CNN_proj/b_proj"] = rng.normal(0, 0.1, size=(proj,)).astype("f4")
        out = proj if proj < dim else dim
        for k in range(n_layers):
            scope = f"RNN_0/RNN/MultiRNNCell/Cell{k}/LSTMCell"
            n_in = proj if k == 0 else out
            f[f"{scope}/W_0"] = rng.normal(0, 0.2, size=(n_in + out, 4 * dim)).astype("f4")
            f[f"{scope}/B"] = rng.normal(0, 0.1, size=(4 * dim,)).astype("f4")
            if proj < dim:
                f[f"{scope}/W_P_0"] = rng.normal(0, 0.2, size=(dim, proj)).astype("f4")
    opts = {"lstm": {"n_layers": n_layers, "projection_dim": proj, "dim": dim},
            "char_cnn": {"embedding": {"dim": cdim}, "filters": filters, "n_highway": 1, "n_characters": 262,
                         "max_characters_per_token": 12, "activation": "relu"}}
    (path / "options.json").write_text(json.dumps(opts))
    return path


def test_compatible_bilm_weights_copy_prefix(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    from polyglot_groc.elmo.bilm import ElmoModel, load_bilm_options

    d = _write_bilm(tmp_path, np.random.default_rng(0), dim=8, proj=8)
    options = load_bilm_options(d / "options.json")
    cfg, info = elmo_groc_config(options, small_run_config("groc"))
    assert info.prefix_copied and cfg.model.d == 8 and cfg.model.prefix.hidden == 8
    assert cfg.model.charset.scheme == "elmo-bytes" and cfg.model.charset.max_word_len == 12
    assert cfg.model.output.bias_activation == "identity"  # no softmax in the file: mean 0, relu would be dead
    bundle = build_bundle(cfg, load_corpus(cfg.data, ("train", "valid", "test")))
    elmo = ElmoModel.from_files(d / "options.json", d / "w.hdf5").eval()
    install_elmo_weights(bundle, elmo, info)
    bundle.model.eval()
    words = bundle.vocab.words
    with torch.no_grad():
        e = bundle.model.embed_words(_ids(bundle, words), "input")
        assert torch.allclose(e, elmo.encode_tokens(words), atol=1e-6)
        x = torch.randn(2, 5, 8)
        h, _ = bundle.model.prefix(x, bundle.model.init_state(2))
        layers, _ = elmo.lstm(x)
        assert torch.allclose(h, layers[-1], atol=1e-5)  # no clipping configured: exact up to float error


def test_bilm_fixture_init_and_finetune(tmp_path: Path, shared_data: Path) -> None:
    pytest.importorskip("h5py")
    from polyglot_groc.elmo.bilm import ElmoModel

    e = shared_data / "elmo"
    out = tmp_path / "real"
    res = CliRunner().invoke(app, [
        "init-from-elmo", "--elmo-options", str(e / "options.json"), "--elmo-weights", str(e / "lm_weights.hdf5"),
        "--data", str(TINY), "--langs", "en", "--out", str(out), "--max-steps", "2", "--set",
        "model.prefix.hidden=24", "--set", "train.batch_size=4", "--set", "train.bptt=8", "--set",
        "train.eval_batch_size=2", "--threads", "1"])
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())
    assert "prefix trained from scratch: elmo's forward lstm projects its 64 cells to 16" in said
    bundle, payload = load_bundle(out, "last")
    assert payload["bundle"]["config"]["model"]["charset"]["scheme"] == "elmo-bytes"
    assert payload["bundle"]["charset"]["scheme"] == "elmo-bytes" and payload["step"] == 2
    assert bundle.cfg.train.lr == pytest.approx(1e-3)  # seed 004 C.2's finetuning rate by default
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert records[0]["step"] == 0 and records[0]["phase"] == "converted" and records[-1]["step"] == 2
    # The surface encoder is ELMo's: before finetuning the embeddings match the fixture model.
    elmo = ElmoModel.from_files(e / "options.json", e / "lm_weights.hdf5").eval()
    cfg, info = elmo_groc_config(elmo.options, small_run_config("groc"))
    fresh = build_bundle(cfg, load_corpus(cfg.data, ("train", "valid", "test")))
    install_elmo_weights(fresh, elmo, info)
    fresh.model.eval()
    with torch.no_grad():
        got = fresh.model.embed_words(_ids(fresh, fresh.vocab.words), "input")
        assert torch.allclose(got, elmo.encode_tokens(fresh.vocab.words), atol=1e-5)
