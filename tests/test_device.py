"""Device handling, the padded char-CNN, long-word truncation and bf16 precision (issue 11), on CPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from groc_base.errors import ConfigError
from polyglot_groc.cli import app
from polyglot_groc.config import SurfaceConfig, load_config
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.device import check_precision, resolve_device
from polyglot_groc.model.surface import SurfaceEncoder
from polyglot_groc.training.evaluation import evaluate_split
from polyglot_groc.training.trainer import Trainer
from tests.conftest import small_run_config

LONG = ["Auseinandersetzung", "Auseinandersetzungen", "Donaudampfschifffahrtsgesellschaftskapitänsmütze",
        "Donaudampfschifffahrtsgesellschaftskapitänsmützen", "a", "ab", "die", "Haus", "Häuser",
        "x" * 70, "x" * 71, "y" * 5 + "z" * 60]


def _encoders(impl_a: str, impl_b: str) -> tuple[SurfaceEncoder, SurfaceEncoder]:
    torch.manual_seed(0)
    cfg = SurfaceConfig(filters=((1, 4), (2, 4), (3, 8), (6, 8)), impl=impl_a)
    a = SurfaceEncoder(cfg, 120, 12)
    b = SurfaceEncoder(dataclasses.replace(cfg, impl=impl_b), 120, 12)
    b.load_state_dict(a.state_dict())
    return a, b


@pytest.mark.parametrize("max_len", [8, 40])  # 40: several length buckets, 8: one block, many cut words
def test_padded_and_grouped_give_same_embeddings_and_gradients(max_len: int) -> None:
    charset = Charset.from_words(LONG, max_len)
    chars = torch.from_numpy(charset.encode(LONG))
    assert charset.n_truncated(LONG) > 0  # truncated words are part of the check
    grouped, padded = _encoders("grouped", "padded")
    ea, eb = grouped(chars), padded(chars)
    assert torch.allclose(ea, eb, atol=1e-5, rtol=0)
    w = torch.randn_like(ea)
    (ea * w).sum().backward()
    (eb * w).sum().backward()
    for (name, pa), (_, pb) in zip(grouped.named_parameters(), padded.named_parameters(), strict=True):
        assert pa.grad is not None and pb.grad is not None, name
        assert torch.allclose(pa.grad, pb.grad, atol=1e-5, rtol=0), name


@pytest.mark.parametrize("act", ["relu", "selu"])  # relu: applied inside the fused pass; selu: by autograd after
def test_fused_grouped_pass_matches_padded_in_train_eval_and_bf16(act: str) -> None:
    charset = Charset.from_words(LONG, 40)
    chars = torch.from_numpy(charset.encode(LONG))
    torch.manual_seed(3)
    cfg = SurfaceConfig(filters=((1, 4), (2, 4), (3, 8), (6, 8)), activation=act, impl="grouped")
    grouped = SurfaceEncoder(cfg, charset.n_chars, 12)
    padded = SurfaceEncoder(dataclasses.replace(cfg, impl="padded"), charset.n_chars, 12)
    padded.load_state_dict(grouped.state_dict())
    e = grouped(chars)
    e.sum().backward()
    assert torch.allclose(e, padded(chars), atol=1e-5)
    assert grouped.char_emb.weight.grad is not None
    assert torch.equal(grouped.char_emb.weight.grad[0], torch.zeros(grouped.cfg.char_dim))  # PAD never trains
    with torch.no_grad():  # evaluation keeps nothing for backward and gives the same vectors
        assert torch.equal(grouped(chars), e.detach())
    with torch.autocast("cpu", dtype=torch.bfloat16):  # the GEMMs run in bf16, as Conv1d's would
        eb = grouped(chars)
    grouped.zero_grad()
    eb.float().sum().backward()
    assert torch.allclose(eb.float(), e.detach(), atol=0.1) and not torch.equal(eb.float(), e.detach())
    for name, param in grouped.named_parameters():
        assert param.grad is not None and param.grad.dtype == torch.float32, name


def test_auto_impl_rule_is_per_device() -> None:
    enc, _ = _encoders("auto", "auto")
    assert enc.impl_for(torch.device("cpu")) == "grouped"
    assert enc.impl_for(torch.device("cuda")) == "padded"


def test_distinct_vocabulary_words_keep_distinct_char_rows() -> None:
    # x*70 and x*71 differ only in the middle: prefix+suffix cannot separate them (documented limit).
    words = [w for w in LONG if w != "x" * 71]
    for max_len in (50, 12):  # the default, and one that truncates most of the words
        charset = Charset.from_words(words, max_len)
        rows = {tuple(r) for r in charset.encode(words).tolist()}
        assert len(rows) == len(set(words)), max_len
    prefix_only = dataclasses.replace(Charset.from_words(words, 12), truncate="prefix")
    assert len({tuple(r) for r in prefix_only.encode(words).tolist()}) < len(words)  # what "ends" fixes
    # Prefix + suffix: the inflected ending survives truncation.
    table = Charset.from_words(LONG, 12).encode(["Auseinandersetzungen"])[0]
    assert Charset.from_words(LONG, 12).encode(["ngen"])[0][1:5].tolist() == table[7:11].tolist()


def test_old_charset_state_keeps_prefix_truncation() -> None:
    new = Charset.from_words(LONG, 10)
    old_state = {k: v for k, v in new.to_state().items() if k != "truncate"}  # written before "ends"
    old = Charset.from_state(old_state)
    assert old.truncate == "prefix" and Charset.from_state(new.to_state()).truncate == "ends"
    row = old.encode(["Auseinandersetzungen"])[0]
    assert row[1:9].tolist() == old.encode(["Auseinan"])[0][1:9].tolist()


def test_bad_devices_and_precisions_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown device"):
        resolve_device("gpu")
    with pytest.raises(ConfigError, match="unknown device"):
        load_config(None, {"train.device": "tpu:0"})
    with pytest.raises(ConfigError, match="precision"):
        load_config(None, {"train.precision": "fp16"})
    assert resolve_device("cpu") == torch.device("cpu")
    check_precision("bf16", torch.device("cpu"))  # CPU autocast supports bf16
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="CUDA is not available"):
            resolve_device("cuda:0")
        assert resolve_device("auto") == torch.device("cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_cli_train_device_cuda_without_cuda_exits_2_and_writes_nothing(tmp_path: Path, tiny_data: Path) -> None:
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["train", "--data", str(tiny_data), "--out", str(out), "--model", "groc",
                                   "--device", "cuda", "--max-steps", "1"])
    assert res.exit_code == 2, res.output
    assert "CUDA is not available" in res.output and "\n" not in res.output.strip()
    assert not out.exists()


def test_bf16_perplexity_within_one_percent_of_fp32_and_checkpoint_is_cpu(tmp_path: Path) -> None:
    cfg = small_run_config("groc", "en", ["train.max_steps=6", "train.eval_every=6", "train.device=\"cpu\"",
                                          "train.log_every=4"])
    trainer = Trainer(cfg, tmp_path / "run")
    result = trainer.fit()
    assert result.history[-1]["train_loss"] > 0  # the device-side running loss was read back
    bundle, payload = load_bundle(tmp_path / "run", "last", device="cpu")
    assert all(v.device.type == "cpu" for v in payload["bundle"]["model_state"].values())
    fp32 = evaluate_split(bundle, trainer.corpus, "valid", 2, 8)
    bundle.model.autocast_dtype = torch.bfloat16
    bf16 = evaluate_split(bundle, trainer.corpus, "valid", 2, 8)
    for lang, r in fp32.items():
        assert bf16[lang].perplexity == pytest.approx(r.perplexity, rel=0.01)
        assert bf16[lang].perplexity != r.perplexity  # bf16 really ran


def test_compile_falls_back_with_a_warning(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from polyglot_groc.model import device

    def broken(fn: object) -> object:
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(device.torch, "compile", broken)
    enc, _ = _encoders("padded", "padded")
    chars = torch.from_numpy(Charset.from_words(LONG, 20).encode(LONG))
    eager = enc.encode_fn(chars)
    enc.use_compiler(device.maybe_compile)
    assert torch.equal(enc.encode_fn(chars), eager)
    assert "torch.compile is unavailable" in caplog.text


def test_cli_precision_and_compile_flags_reach_the_config(tmp_path: Path, tiny_data: Path) -> None:
    bad = CliRunner().invoke(app, ["train", "--data", str(tiny_data), "--out", str(tmp_path / "bad"),
                                   "--precision", "fp16", "--max-steps", "1"])
    assert bad.exit_code == 2 and "train.precision='fp16'" in bad.output
    assert not (tmp_path / "bad").exists()
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["train", "--data", str(tiny_data), "--out", str(out), "--model", "lookup",
                                   "--precision", "bf16", "--no-compile", "--max-steps", "1", "--device", "cpu",
                                   "--set", "model.d=16", "--set", "model.prefix.hidden=16",
                                   "--set", "train.batch_size=2", "--set", "train.bptt=5"])
    assert res.exit_code == 0, res.output
    from polyglot_groc.config import load_config

    cfg = load_config(out / "config.toml")
    assert cfg.train.precision == "bf16" and cfg.train.compile is False
