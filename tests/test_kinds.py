"""Model kinds (seed 000 Table 2 family): forward/backward, |Θ| formulas, screening, registry."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch

from groc_base.errors import ConfigError
from polyglot_groc.config import MODEL_KINDS
from polyglot_groc.kind_traits import COMPOSED_SAMPLED_ABOVE, TABLE_SAMPLED_ABOVE, auto_softmax_help
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.kinds import REGISTRY, DotScorer, KindParts, build_parts, kind
from polyglot_groc.model.lm import count_parameters, parameter_split
from polyglot_groc.model.surface import SurfaceEncoder
from polyglot_groc.model.vocab import Vocab
from tests.conftest import small_run_config

EN = Counter({"the": 9, "cat": 4, "sleeps": 3, ".": 9, "<eos>": 9, "dog": 2, "a": 5, "runs": 2})
FR = Counter({"le": 9, "chat": 4, "dort": 3, ".": 9, "<eos>": 9})
KINDS = ["untied", "tied", "lookup", "bilinear", "deep-residual", "adaptive", "conv"]
EXTRA = ["model.output.depth=2", "model.output.activation=\"selu\"", "model.output.correction=8",
         "model.output.cutoffs=[0.3, 0.6]"]


def _bundle(kind: str, counts: dict[str, Counter[str]], langs: str = "en,fr", extra: list[str] | None = None
            ) -> ModelBundle:
    torch.manual_seed(0)
    vocab = Vocab.build(counts)
    charset = Charset.from_words(list(EN) + list(FR))
    cfg = small_run_config(kind, langs, [*EXTRA, *(extra or [])])
    return ModelBundle.create(cfg, vocab, charset=charset)


def _n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_the_traits_describe_what_the_kind_builds(kind: str) -> None:
    # build_bundle decides <unk> and lexicon compilation, and the softmax its sampling, from the traits
    # before the model exists; what the kind then builds must be what they say.
    traits = REGISTRY[kind].traits
    cfg = small_run_config(kind, "en", EXTRA).model
    small, large = build_parts(cfg, 40, 30), build_parts(cfg, 40, 31)

    def output_side(parts: KindParts) -> int:
        return _n_params(parts.output_embedder) + _n_params(parts.bias) + _n_params(parts.output_net)

    # A composed side has no parameter per word: one more word adds none.
    assert (_n_params(small.input_embedder) == _n_params(large.input_embedder)) == traits.composes_input
    assert (output_side(small) == output_side(large)) == traits.composes_output
    assert isinstance(small.scorer, DotScorer) == traits.samples  # word-by-word scores sample
    assert getattr(small.input_embedder, "use_lexicon", False) == traits.uses_lexicon
    assert not traits.uses_lexicon or traits.composes_output
    # auto's softmax line follows what a full step costs: a char-CNN over every output word samples from
    # 5,000 words on, a table from 50,000 (kind_traits.py).
    spells = any(isinstance(m, SurfaceEncoder) for m in small.output_embedder.modules())
    assert traits.sampled_above == (COMPOSED_SAMPLED_ABOVE if spells else TABLE_SAMPLED_ABOVE)


def test_the_auto_softmax_help_is_read_from_the_traits() -> None:
    from typer.testing import CliRunner

    from polyglot_groc.cli import app

    text = auto_softmax_help()
    assert text == ("above 5,000 words a language for conv, groc and groc-lex, above 50,000 for the other kinds "
                    "(adaptive never samples)")
    res = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "400"})
    assert " ".join(text.split()) in " ".join(res.output.split())


def test_a_kind_missing_its_builder_or_its_traits_is_refused_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc import kind_traits
    from polyglot_groc.model import kinds
    from polyglot_groc.model.kinds import base

    monkeypatch.setitem(base.BUILDERS, "mystery", base.BUILDERS["tied"])
    with pytest.raises(RuntimeError, match=r"\['mystery'\] have no traits: add a KindTraits record"):
        kinds._check_registrations()
    monkeypatch.delitem(base.BUILDERS, "mystery")
    monkeypatch.setattr(kind_traits, "KINDS", (*kind_traits.KINDS, kind_traits.KindTraits("new", "")))
    monkeypatch.setattr(kinds, "KINDS", kind_traits.KINDS)
    with pytest.raises(RuntimeError, match=r"\['new'\] have traits .* but no builder: decorate one with @register"):
        kinds._check_registrations()


def test_every_kind_value_has_a_builder_and_aliases_share_it() -> None:
    assert list(REGISTRY) == list(MODEL_KINDS)
    assert REGISTRY["lookup"] == REGISTRY["tied"]  # the old name of tied builds tied
    with pytest.raises(ConfigError, match="unknown model kind 'tide'; use one of untied, tied, lookup"):
        kind("tide")


@pytest.mark.parametrize("kind", KINDS)
def test_forward_backward_reaches_every_parameter(kind: str) -> None:
    b = _bundle(kind, {"en": EN, "fr": FR})
    m = b.model.train()
    ids = torch.from_numpy(b.vocab.lang_ids("en"))
    inputs = ids[torch.randint(len(ids), (3, 5))]
    targets = ids[torch.randint(len(ids), (3, 5))]
    out = m(inputs, targets, "en", m.init_state(3), return_logits=True)
    assert out.logits is not None and out.logits.shape == (3, 5, len(ids))
    assert out.loss is not None and torch.isfinite(out.loss)
    out.loss.backward()
    # Every parameter gets a gradient except rows of words never used (tables are dense here).
    for name, p in m.named_parameters():
        assert p.grad is not None, name


@pytest.mark.parametrize("kind", KINDS)
def test_log_probabilities_normalise(kind: str) -> None:
    b = _bundle(kind, {"en": EN, "fr": FR})
    m = b.model.eval()
    x = torch.from_numpy(b.vocab.lang_ids("fr"))[None, :4]
    out = m(x, None, "fr", m.init_state(1), return_logits=True)
    assert out.logits is not None
    lp = torch.log_softmax(out.logits, -1)
    assert torch.allclose(lp.exp().sum(-1), torch.ones(1, 4), atol=1e-5)


def test_parameter_count_formulas() -> None:
    en = {"en": EN}
    v = len(Vocab.build(en))
    d = small_run_config("tied").model.d
    tied, untied = _bundle("tied", en, "en"), _bundle("untied", en, "en")
    bil, deep = _bundle("bilinear", en, "en"), _bundle("deep-residual", en, "en")
    tied0 = _bundle("tied", en, "en", ["model.output.depth=0"])
    prefix = parameter_split(tied.model)["prefix"]
    assert parameter_split(tied0.model) == {"embeddings": v * d, "prefix": prefix, "output": v,
                                            "total": v * d + prefix + v}
    assert count_parameters(untied.model) == count_parameters(tied.model) + v * d
    assert count_parameters(bil.model) == count_parameters(tied0.model) + d * d
    assert count_parameters(deep.model) == count_parameters(tied0.model) + 2 * (d * d + d)  # k = 2 layers
    conv = _bundle("conv", en, "en")
    cnn = count_parameters(_bundle("groc", en, "en").model.input_embedder)
    assert parameter_split(conv.model)["embeddings"] == v * d + cnn + v * 8 + 8 * d
    ad = _bundle("adaptive", en, "en")
    # cutoffs 0.3, 0.6 of |V|: bands of d, d/4, d/16 dims; tail projections; one cluster vector per tail band.
    c1, c2 = round(0.3 * v), round(0.6 * v)
    d1, d2 = d // 4, d // 16
    emb = c1 * d + (c2 - c1) * d1 + (v - c2) * d2 + d1 * d + d2 * d
    assert parameter_split(ad.model) == {"embeddings": emb, "prefix": prefix, "output": 2 * d,
                                         "total": emb + prefix + 2 * d}


@pytest.mark.parametrize("kind", KINDS)
def test_screened_equals_unscreened_monolingual(kind: str) -> None:
    b = _bundle(kind, {"en": EN}, "en")
    m = b.model.eval()
    x = torch.from_numpy(b.vocab.lang_ids("en"))[None, :5]
    a = m(x, None, "en", m.init_state(1), return_logits=True).logits
    u = m(x, None, None, m.init_state(1), return_logits=True).logits
    assert a is not None and u is not None
    assert torch.allclose(torch.log_softmax(a, -1), torch.log_softmax(u, -1), atol=1e-6)


@pytest.mark.parametrize("kind", [k for k in KINDS if k != "adaptive"])
def test_screened_scores_are_the_union_scores_restricted(kind: str) -> None:
    """Dot-product kinds: screening removes columns, it does not change the others' scores."""
    b = _bundle(kind, {"en": EN, "fr": FR})
    m = b.model.eval()
    ids = torch.from_numpy(b.vocab.lang_ids("fr"))
    x = ids[None, :4]
    s = m(x, None, "fr", m.init_state(1), return_logits=True).logits
    u = m(x, None, None, m.init_state(1), return_logits=True).logits
    assert s is not None and u is not None
    assert torch.allclose(s, u[..., ids], atol=1e-6)


def test_adaptive_screens_within_each_band() -> None:
    """The French screen renormalises each band over French words only; unused bands get no cluster."""
    b = _bundle("adaptive", {"en": EN, "fr": FR})
    m = b.model.eval()
    ids = torch.from_numpy(b.vocab.lang_ids("fr"))
    lp = m(ids[None, :3], None, "fr", m.init_state(1), return_logits=True).logits
    assert lp is not None
    assert torch.allclose(lp.exp().sum(-1), torch.ones(1, 3), atol=1e-5)


def test_old_lookup_checkpoint_state_loads_into_tied() -> None:
    old = _bundle("lookup", {"en": EN}, "en")
    new = _bundle("tied", {"en": EN}, "en")
    new.model.load_state_dict(old.model.state_dict())
    assert set(old.model.state_dict()) == set(new.model.state_dict())


@pytest.mark.parametrize("kind", ["untied", "bilinear", "deep-residual", "adaptive", "conv"])
def test_polyglot_training_and_checkpoint_reload(kind: str, tmp_path: Path) -> None:
    from polyglot_groc.model.bundle import load_bundle
    from polyglot_groc.training.trainer import Trainer

    cfg = small_run_config(kind, "en,fr", [*EXTRA, "train.max_steps=2", "train.eval_every=2"])
    tr = Trainer(cfg, tmp_path / "run")
    res = tr.fit()
    assert set(res.best_valid) == {"en", "fr"} and res.n_params_split["total"] == res.n_params
    loaded, _ = load_bundle(tmp_path / "run", "last")
    x = torch.from_numpy(loaded.vocab.lang_ids("fr"))[None, :3]
    tr.model.eval()
    a = tr.model(x, None, "fr", tr.model.init_state(1), return_logits=True).logits
    b = loaded.model(x, None, "fr", loaded.model.init_state(1), return_logits=True).logits
    assert a is not None and b is not None and torch.equal(a, b)


def test_adaptive_lookup_is_masked_not_selected_and_edges_are_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.model.kinds.adaptive import AdaptiveEmbedder, AdaptiveScorer

    torch.manual_seed(0)
    emb = AdaptiveEmbedder(20, 8, (0.25, 0.6), 2.0, 0.1)
    ids = torch.tensor([0, 19, 5, 12, 4, 13, 0])
    expected = []
    for i in ids.tolist():  # the definition, word by word
        b = 0 if i < 5 else 1 if i < 12 else 2
        expected.append(emb.projs[b](emb.tables[b][i - int(emb.starts[b])]))
    assert torch.allclose(emb(ids), torch.stack(expected), atol=1e-6)
    scorer = AdaptiveScorer(emb, 8)
    screen = torch.tensor([1, 3, 6, 7, 15])
    assert scorer.band_edges(screen) == [0, 2, 4, 5]

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("band edges were recomputed (a host sync per step on GPU)")

    monkeypatch.setattr(torch, "searchsorted", no_search)
    h = torch.randn(2, 3, 8)
    logp = scorer(h, screen, emb(screen), torch.zeros(5))  # (2, 3, 5)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(2, 3), atol=1e-5)


def test_adaptive_scores_each_band_in_its_own_dimension() -> None:
    """(h P_b) . E_b[v] is the definition h . e_v, and the dropout mask on h is the output dropout."""
    from polyglot_groc.model.kinds.adaptive import AdaptiveEmbedder, AdaptiveScorer

    torch.manual_seed(0)
    emb = AdaptiveEmbedder(40, 16, (0.2, 0.7), 4.0, 0.1)
    scorer = AdaptiveScorer(emb, 16, dropout=0.5)
    screen = torch.tensor([0, 2, 7, 8, 9, 20, 27, 28, 33, 39])  # a language's ids: every band, gaps

    def reference(h: torch.Tensor, e: torch.Tensor) -> torch.Tensor:  # the full-width definition
        scores, edge = h @ e.T, scorer.band_edges(screen)  # (B, T, V_l)
        head = torch.log_softmax(torch.cat([scores[..., :edge[1]], scorer.clusters(h)], -1), -1)
        parts = [head[..., :edge[1]]]
        for b in (1, 2):
            band = torch.log_softmax(scores[..., edge[b]:edge[b + 1]], -1)
            parts.append(band + head[..., edge[1] + b - 1:edge[1] + b])
        return torch.cat(parts, -1)

    h = torch.randn(3, 5, 16)
    scorer.eval()
    assert torch.allclose(scorer(h, screen, emb(screen), torch.zeros(10)), reference(h, emb(screen)), atol=1e-5)
    scorer.train()
    torch.manual_seed(1)
    got = scorer(h, screen, emb(screen), torch.zeros(10))
    torch.manual_seed(1)  # the scorer's (1, d) mask, shared by every position
    mask = torch.empty(1, 16).bernoulli_(0.5) / 0.5
    assert torch.allclose(got, reference(h * mask, emb(screen)), atol=1e-5)
    assert torch.allclose(torch.logsumexp(got, -1), torch.zeros(3, 5), atol=1e-5)


def test_adaptive_refuses_inputs_after_dropout() -> None:
    from groc_base.errors import ConfigError

    with pytest.raises(ConfigError, match="inputs_after_dropout"):
        _bundle("adaptive", {"en": EN}, "en", ["model.output.inputs_after_dropout=true"])
