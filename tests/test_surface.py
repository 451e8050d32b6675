from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from polyglot_groc.config import SurfaceConfig
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.surface import Highway, SurfaceEncoder, masked_mean

CFG = SurfaceConfig(char_dim=4, filters=((1, 3), (2, 5), (3, 6)), n_highway=1)


def _enc(n_chars: int = 12, d: int = 8) -> SurfaceEncoder:
    torch.manual_seed(0)
    return SurfaceEncoder(CFG, n_chars, d).eval()


def test_shapes_and_same_word_same_embedding() -> None:
    cs = Charset.from_words(["chat", "chien"], 10)
    enc = _enc(cs.n_chars)
    out = enc(torch.from_numpy(cs.encode(["chat", "chien", "chat"])))
    assert out.shape == (3, 8)
    assert torch.equal(out[0], out[2]) and not torch.allclose(out[0], out[1])


def test_padding_never_wins_the_max() -> None:
    cs = Charset.from_words(["ab"], 12)
    enc = _enc(cs.n_chars)
    # Make the PAD embedding huge: if a pad window could win the max, longer tables would differ.
    with torch.no_grad():
        enc.char_emb.weight[0].fill_(50.0)
    short = torch.from_numpy(Charset.from_words(["ab"], 6).encode(["ab"]))
    long = torch.from_numpy(cs.encode(["ab"]))
    assert torch.allclose(enc(short), enc(long), atol=1e-6)


def test_conv_sees_characters_in_order_transpose_not_view() -> None:
    cs = Charset.from_words(["abc", "cba"], 8)
    enc = _enc(cs.n_chars)
    chars = torch.from_numpy(cs.encode(["abc"]))
    x = enc.char_emb(chars)  # (1, L, C)
    # Reference: width-2 filter applied by hand on consecutive characters.
    conv = enc.convs[1]
    w, b = conv.weight, conv.bias  # (F, C, 2)
    manual = torch.stack([(w[:, :, 0] * x[0, i]).sum(-1) + (w[:, :, 1] * x[0, i + 1]).sum(-1) + b
                          for i in range(x.shape[1] - 1)], dim=1)  # (F, L-1)
    assert torch.allclose(conv(x.transpose(1, 2))[0], manual, atol=1e-5)
    # Reversed spelling gives a different encoding (a view-reshape bug would scramble positions).
    assert not torch.allclose(enc(chars), enc(torch.from_numpy(cs.encode(["cba"]))))


def test_gradients_flow_to_every_parameter() -> None:
    cs = Charset.from_words(["chat", "chien"], 10)
    enc = _enc(cs.n_chars).train()
    enc(torch.from_numpy(cs.encode(["chat", "chien"]))).sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name


def test_highway_starts_carrying() -> None:
    hw = Highway(6)
    assert torch.all(hw.layer.bias[6:] == 1.0)  # carry gate bias


def test_masked_mean_ignores_pads() -> None:
    x = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # (1, 3, 2)
    mask = torch.tensor([[True, True, False]])
    assert torch.allclose(masked_mean(x, mask), torch.tensor([[2.0, 3.0]]))
    assert torch.equal(masked_mean(x, torch.zeros(1, 3, dtype=torch.bool)), torch.zeros(1, 2))


def test_chunked_equals_unchunked() -> None:
    cs = Charset.from_words(["a", "bb", "ccc", "dddd", "eeeee"], 10)
    enc = _enc(cs.n_chars)
    chars = torch.from_numpy(cs.encode(["a", "bb", "ccc", "dddd", "eeeee"]))
    small = SurfaceEncoder(SurfaceConfig(char_dim=4, filters=CFG.filters, chunk_size=2), cs.n_chars, 8).eval()
    small.load_state_dict(enc.state_dict())
    assert torch.allclose(enc(chars), small(chars), atol=1e-6)
    assert F.mse_loss(enc(chars), small(chars)) < 1e-10


def test_checkpointed_chunks_give_the_same_gradients() -> None:
    # cfg.checkpoint recomputes each chunk's forward in backward: the fused char-CNN and highway
    # must give the same gradients that way as when their saved tensors are kept.
    words = ["a", "bb", "ccc", "dddd", "eeeee", "abab", "xxxxxxx"]
    cs = Charset.from_words(words, 10)
    chars = torch.from_numpy(cs.encode(words))
    torch.manual_seed(2)
    plain = SurfaceEncoder(CFG, cs.n_chars, 8)
    recomputed = SurfaceEncoder(dataclasses.replace(CFG, chunk_size=3, checkpoint=True), cs.n_chars, 8)
    recomputed.load_state_dict(plain.state_dict())
    w = torch.randn(len(words), 8)
    (plain(chars) * w).sum().backward()
    (recomputed(chars) * w).sum().backward()
    for (name, a), (_, b) in zip(plain.named_parameters(), recomputed.named_parameters(), strict=True):
        assert a.grad is not None and b.grad is not None, name
        assert torch.allclose(a.grad, b.grad, atol=1e-5), name


def _reference_masked_encode(enc: SurfaceEncoder, chars: torch.Tensor) -> torch.Tensor:
    """The straightforward formulation: full-width convolutions with pad windows masked to -inf."""
    x = enc.char_emb(chars).transpose(1, 2)
    valid = chars != 0
    pooled = []
    for w, conv in zip(enc.widths, enc.convs, strict=True):
        y = conv(x)
        win = valid.unfold(1, w, 1).all(dim=-1)
        win[:, 0] = True
        pooled.append(enc.act(y.masked_fill(~win.unsqueeze(1), float("-inf")).amax(dim=2)))
    h = torch.cat(pooled, dim=1)
    for hw in enc.highways:
        h = hw(h)
    return enc.proj(h)


def test_length_bucketing_equals_masked_reference() -> None:
    words = ["a", "bb", "ccc", "dddd", "abcdefghij", "b", "cab", "abcdefghijklmnopqrstuvwxyz", "é"]
    cs = Charset.from_words(words, 12)
    enc = _enc(cs.n_chars)
    chars = torch.from_numpy(cs.encode(words))
    assert torch.allclose(enc(chars), _reference_masked_encode(enc, chars), atol=1e-5)


def _highway_by_autograd(hw: Highway, x: torch.Tensor) -> torch.Tensor:
    """The highway formula through autograd's own ops: the reference for the fused path."""
    transform, gate = hw.layer(x).chunk(2, dim=-1)
    g = torch.sigmoid(gate)
    return g * x + (1.0 - g) * hw.act(transform)


@pytest.mark.parametrize("act", ["relu", "tanh", "sigmoid", "identity"])
def test_fused_highway_equals_the_autograd_formula(act: str) -> None:
    torch.manual_seed(1)
    hw = Highway(16, act)
    x = torch.randn(40, 16, requires_grad=True)
    assert hw.fused_for(x)
    w = torch.randn(40, 16)
    y = hw(x)
    grads = torch.autograd.grad((y * w).sum(), [x, hw.layer.weight, hw.layer.bias])
    y_ref = _highway_by_autograd(hw, x)
    refs = torch.autograd.grad((y_ref * w).sum(), [x, hw.layer.weight, hw.layer.bias])
    assert torch.allclose(y, y_ref, atol=1e-6)
    for got, ref in zip(grads, refs, strict=True):
        assert torch.allclose(got, ref, atol=1e-5), act


def test_fused_highway_is_left_to_autograd_under_autocast_and_other_activations() -> None:
    x = torch.randn(8, 6, requires_grad=True)
    assert not Highway(6, "selu").fused_for(x)  # no in-place derivative for selu: autograd's path
    hw = Highway(6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not hw.fused_for(x)
        y = hw(x)
    y.sum().backward()  # the autocast path still trains, and agrees with fp32 to bf16's precision
    assert x.grad is not None and hw.layer.weight.grad is not None
    assert torch.allclose(y, hw(x), atol=0.05) and not torch.equal(y, hw(x))
