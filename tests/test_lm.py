from __future__ import annotations

from collections import Counter

import pytest
import torch

from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.embedder import LexiconForms
from polyglot_groc.model.lm import count_parameters
from polyglot_groc.model.vocab import Vocab
from tests.conftest import assert_frozen_steps, small_run_config

EN = Counter({"the": 9, "cat": 4, "sleeps": 3, ".": 9, "<eos>": 9, "dog": 2})
FR = Counter({"le": 9, "chat": 4, "dort": 3, ".": 9, "<eos>": 9})


def _bundle(kind: str, counts: dict[str, Counter[str]], langs: str = "en,fr") -> ModelBundle:
    torch.manual_seed(0)
    vocab = Vocab.build(counts)
    forms = LexiconForms.empty(len(vocab)) if kind == "groc-lex" else None
    if kind == "groc-lex" and "chat" in vocab:
        forms = LexiconForms.empty(len(vocab))
        forms.related_ids[vocab.id("cat"), 0] = vocab.id("chat")
        forms.related_mask[vocab.id("cat"), 0] = True
        forms.definition_ids[vocab.id("dog"), :2] = torch.tensor([vocab.id("the"), vocab.id("cat")])
        forms.definition_mask[vocab.id("dog"), :2] = True
    # One charset for every vocabulary: character inventories are data, the vocabulary size is not.
    charset = Charset.from_words(list(EN) + list(FR) + ["w0123456789"])
    return ModelBundle.create(small_run_config(kind, langs), vocab, charset=charset, forms=forms)


@pytest.mark.parametrize("kind", ["groc", "groc-lex"])
def test_parameter_count_does_not_depend_on_vocabulary(kind: str) -> None:
    small = _bundle(kind, {"en": EN})
    big = _bundle(kind, {"en": EN + Counter({f"w{i}": 1 for i in range(500)}), "fr": FR})
    assert count_parameters(small.model) == count_parameters(big.model)


def test_lookup_parameters_grow_with_vocabulary() -> None:
    a = _bundle("lookup", {"en": EN})
    b = _bundle("lookup", {"en": EN, "fr": FR})
    assert count_parameters(b.model) > count_parameters(a.model)


@pytest.mark.parametrize("kind", ["lookup", "elmo", "groc", "groc-lex"])
def test_screened_logits_cover_exactly_the_language_vocabulary(kind: str) -> None:
    b = _bundle(kind, {"en": EN, "fr": FR})
    m = b.model.eval()
    fr_ids = torch.from_numpy(b.vocab.encode(["le", "chat", "dort"]))
    x = fr_ids[None, :2]
    y = fr_ids[None, 1:]
    out = m(x, y, "fr", m.init_state(1), return_logits=True)
    assert out.logits is not None and out.logits.shape == (1, 2, len(FR))
    assert torch.equal(m.screen.ids("fr"), torch.from_numpy(b.vocab.lang_ids("fr")))
    full = m(x, y, None, m.init_state(1), return_logits=True)
    assert full.logits is not None and full.logits.shape[-1] == len(b.vocab)
    # Screening renormalises over fewer words: the target's probability can only grow.
    assert out.nll_sum <= full.nll_sum + 1e-5


def test_polyglot_evaluation_equals_restricted_model() -> None:
    """GroC's parameters are vocabulary-free: a polyglot model scored on fr with screening equals the
    same parameters installed on a French-only vocabulary."""
    poly = _bundle("groc", {"en": EN, "fr": FR}).model.eval()
    mono_b = _bundle("groc", {"fr": FR}, langs="fr")
    mono = mono_b.model
    mono.load_state_dict(poly.state_dict())
    mono.eval()
    words = ["le", "chat", "dort", ".", "<eos>", "le", "chat"]
    vp = Vocab.build({"en": EN, "fr": FR})
    xp = torch.from_numpy(vp.encode(words))[None]
    xm = torch.from_numpy(mono_b.vocab.encode(words))[None]
    a = poly(xp[:, :-1], xp[:, 1:], "fr", poly.init_state(1))
    b = mono(xm[:, :-1], xm[:, 1:], "fr", mono.init_state(1))
    # Python floats: pytest 9.2's approx cannot take 0-d tensors.
    assert float(a.nll_sum) == pytest.approx(float(b.nll_sum), rel=1e-5)


def test_same_word_same_embedding_input_and_output_share_function() -> None:
    b = _bundle("groc", {"en": EN, "fr": FR})
    m = b.model.eval()
    ids = torch.from_numpy(b.vocab.encode(["cat", "cat", "."]))
    e = m.embed_words(ids)
    # Equal up to rounding: with several threads a batched conv may sum two rows in different orders.
    assert torch.allclose(e[0], e[1], rtol=1e-6, atol=1e-7)
    t = m.vocab_tables("en")
    local = m.screen.local(t.ids, ids[:1])
    assert t.e_in is not None and torch.allclose(t.e_in[local[0]], e[0])


def test_eval_cache_invalidated_on_weight_change_and_train() -> None:
    m = _bundle("groc", {"en": EN}).model.eval()
    t1 = m.vocab_tables("en")
    assert m.vocab_tables("en") is t1  # cached in eval
    with torch.no_grad():
        m.bias.w.bias.add_(1.0)  # an in-place weight change
    t2 = m.vocab_tables("en")
    assert t2 is not t1 and not torch.allclose(t2.bias, t1.bias)
    m.train()
    m.eval()
    assert m.vocab_tables("en") is not t2


def test_groc_lex_forms_change_embedding_and_get_gradients() -> None:
    lex = _bundle("groc-lex", {"en": EN, "fr": FR})
    m = lex.model.train()
    ids = torch.from_numpy(lex.vocab.encode(["the", "cat", "sleeps", "dog", "<eos>"]))[None]
    out = m(ids[:, :-1], ids[:, 1:], "en", m.init_state(1))
    assert out.loss is not None
    out.loss.backward()
    assert m.input_embedder.combine.weight.grad is not None
    # r/d slots are used: zeroing the combine columns for r and d changes "cat" and "dog" only.
    m.eval()
    with torch.no_grad():
        e = m.embed_words(torch.from_numpy(lex.vocab.encode(["cat", "dog", "the"])))
        m.input_embedder.combine.weight[:, 16:] = 0
        e0 = m.embed_words(torch.from_numpy(lex.vocab.encode(["cat", "dog", "the"])))
    assert not torch.allclose(e[0], e0[0]) and not torch.allclose(e[1], e0[1])
    assert torch.allclose(e[2], e0[2])


def test_frozen_steps_reuse_embedder_table_until_update() -> None:
    b = _bundle("groc", {"en": EN})
    m = b.model.train()
    calls = []
    m.input_embedder.surface.register_forward_hook(lambda mod, inp, out: calls.append(inp[0].shape[0]))
    ids = torch.from_numpy(b.vocab.encode(["the", "cat", "sleeps", "."]))[None]
    st = m.init_state(1)
    m(ids[:, :-1], ids[:, 1:], "en", st, update_output=False)
    m(ids[:, :-1], ids[:, 1:], "en", st, update_output=False)
    assert len(calls) == 1  # second frozen step: cache hit
    with torch.no_grad():
        m.input_embedder.surface.proj.weight.mul_(1.01)
    m(ids[:, :-1], ids[:, 1:], "en", st, update_output=False)
    assert len(calls) == 2


def test_frozen_steps_train_output_net_and_bias_but_not_char_encoder() -> None:
    """Seed 000 §3.4/B.4 with p = 0: the char-CNN never changes, the output net and bias do."""
    torch.manual_seed(0)
    cfg = small_run_config("groc", extra=["model.output.depth=1"])
    vocab = Vocab.build({"en": EN})
    b = ModelBundle.create(cfg, vocab, charset=Charset.from_words(list(EN)))
    m = b.model.train()
    ids = torch.from_numpy(b.vocab.encode(["the", "cat", "sleeps", ".", "<eos>", "the", "dog"]))[None]
    # p = 0: every step is a frozen step
    changed = assert_frozen_steps(m, lambda _: m(ids[:, :-1], ids[:, 1:], "en", m.init_state(1), update_output=False))
    assert any(n.startswith("prefix.") for n in changed)


def test_work_scales_with_language_vocabulary_not_union() -> None:
    """Counting test: the char encoder sees exactly |V_lang| words per screened step."""
    b = _bundle("groc", {"en": EN, "fr": FR})
    m = b.model.train()
    rows: list[int] = []
    m.input_embedder.surface.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    ids = torch.from_numpy(b.vocab.encode(["le", "chat", "dort", "."]))[None]
    m(ids[:, :-1], ids[:, 1:], "fr", m.init_state(1))
    m(ids[:, :-1], ids[:, 1:], None, m.init_state(1))
    assert rows == [len(FR), len(b.vocab)]
