"""Per-token scores go through the model: every kind, every path, one distribution.

:meth:`LanguageModel.token_logprobs` scores targets with the kind's own scorer (for ``adaptive``
the tied adaptive softmax with its bands, not a dot product over its projected table). The
in-domain evaluation, the open-vocabulary one (``evaluate --data``, caches, ``tune-cache``) and
``analyze freq-bins`` must therefore give the same per-token log-probabilities on the same text.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from polyglot_groc.config import MODEL_KINDS
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.kinds import REGISTRY
from polyglot_groc.training.trainer import Trainer
from tests.conftest import small_run_config

#: Every word of valid and test is a training word, so in-domain and open-vocabulary scoring
#: see the same vocabulary and must give the same per-token probabilities.
TEXT = ("the cat sees the old dog .\na dog likes the cat .\nthe old river sees a cat .\n"
        "our cat likes a river .\n") * 5
#: Words the training text never has (zebra, purple, kettle).
UNSEEN = ("the zebra sees the purple kettle .\nour zebra likes the old cat .\n"
          "a dog sees the purple river .\n") * 4
LEXICON_TSV = Path(__file__).resolve().parent / "data" / "lexicon" / "mini-en-fr.tsv"


def corpus(root: Path, text: str) -> Path:
    (root / "en").mkdir(parents=True)
    for split in ("train", "valid", "test"):
        (root / "en" / f"{split}.txt").write_text(text, encoding="utf-8")
    return root


def train_runs(root: Path, kinds: tuple[str, ...]) -> dict[str, Path]:
    """Tiny runs (2 steps, open vocabulary) of ``kinds`` on :data:`TEXT`, a copy of that corpus
    (``other``) and a text with new words (``unseen``)."""
    out = {"data": corpus(root / "data", TEXT), "unseen": corpus(root / "unseen", UNSEEN)}
    out["other"] = root / "other"
    shutil.copytree(out["data"], out["other"])
    for kind in kinds:
        extra = ["train.max_steps=2", f'data.root="{out["data"]}"', 'data.vocab_mode="open"']
        if kind == "groc-lex":
            extra += ['model.lexicon.backend="tsv"', f'model.lexicon.tsv_path="{LEXICON_TSV}"']
        Trainer(small_run_config(kind, "en", extra), root / kind).fit()
        out[kind] = root / kind
    return out


@pytest.fixture(scope="module")
def runs(kind_runs: dict[str, Path]) -> dict[str, Path]:
    return kind_runs  # trained once per session (conftest), also read by test_model_api


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_token_logprobs_are_forwards_loss_for_every_kind(runs: dict[str, Path], kind: str) -> None:
    bundle, _ = load_bundle(runs[kind], device="cpu")
    model = bundle.model.eval()
    ids = torch.from_numpy(bundle.vocab.lang_ids("en"))
    g = torch.Generator().manual_seed(0)
    x, y = ids[torch.randint(len(ids), (2, 6), generator=g)], ids[torch.randint(len(ids), (2, 6), generator=g)]
    with torch.no_grad():
        out = model(x, y, "en", model.init_state(2))
        got = model.token_logprobs(x, y, "en", model.init_state(2), mass_ids=ids[:3])
    assert got.logp.shape == (2, 6) and got.logp.dtype == torch.float64
    assert float(-got.logp.sum()) == pytest.approx(float(out.nll_sum), rel=1e-5)
    assert got.hidden.shape == (2, 6, bundle.cfg.model.d)
    assert got.mass is not None and bool(((got.mass > 0) & (got.mass < 1)).all())
    # A target the screen does not score is -inf, not an error.
    outside = torch.full_like(y, len(bundle.vocab) + 5)
    with torch.no_grad():
        assert bool(torch.isinf(model.token_logprobs(x, outside, "en", model.init_state(2)).logp).all())


def test_adaptive_per_token_log_probabilities_are_its_adaptive_softmax(runs: dict[str, Path]) -> None:
    """Per token, the open-vocabulary path (behind evaluate --data, tune-cache, freq-bins) gives
    what forward's loss is computed on, and not a dot product over the projected table."""
    from langpairs.batching import batchify, bptt_windows
    from polyglot_groc.analysis.crossdomain import load_other_split, score_tokens
    from polyglot_groc.model.screen import screened_logits

    bundle, _ = load_bundle(runs["adaptive"], device="cpu")
    model, bptt = bundle.model.eval(), bundle.cfg.train.bptt
    toks = load_other_split(bundle, runs["other"], "test")["en"]
    scores = score_tokens(bundle, toks, "en", bptt)
    ids = batchify(bundle.vocab.encode(toks), 1)
    ref, dot = [], []
    with torch.no_grad():
        state = model.init_state(1)
        for a, n in bptt_windows(ids.shape[1], bptt):
            x, y = torch.from_numpy(ids[:, a:a + n]), torch.from_numpy(ids[:, a + 1:a + n + 1])
            out = model(x, y, "en", state, return_logits=True)
            state = out.state
            tables = model.vocab_tables("en")
            local = model.screen.local(tables.ids, y)
            assert out.logits is not None and out.hidden is not None
            ref.append(-F.cross_entropy(out.logits[0], local[0], reduction="none"))
            plain = F.log_softmax(screened_logits(out.hidden, tables.e_out, tables.bias), -1)
            dot.append(plain[0].gather(-1, local[0, :, None])[:, 0])
    assert torch.allclose(scores.logp, torch.cat(ref).double(), atol=1e-5)
    assert not torch.allclose(scores.logp, torch.cat(dot).double(), atol=1e-2)  # what was scored before


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_every_kind_scores_the_same_distribution_in_domain_open_and_in_freq_bins(
        runs: dict[str, Path], kind: str) -> None:
    from polyglot_groc.analysis.workflows import evaluate, freq_bins

    run = runs[kind]
    in_domain = evaluate(run=run, split="test", batch_size=1, device="cpu")
    # The same text under another path is open-vocabulary evaluation (no uniform share: no new words).
    opened = evaluate(run=run, data=runs["other"], split="test", batch_size=1, uniform_weight=0.0, device="cpu")
    binned = freq_bins(run_a=run, run_b=runs["tied"], data=runs["other"], device="cpu")
    assert not in_domain.open_vocabulary and opened.open_vocabulary
    ppl = in_domain.perplexity["en"]
    assert ppl is not None and 1 < ppl < math.inf
    assert opened.perplexity["en"] == pytest.approx(ppl, rel=1e-5)
    assert binned.perplexity_a == pytest.approx(ppl, rel=1e-5)
    assert in_domain.details is not None and binned.tokens == in_domain.details["en"]["n_tokens"]


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_every_kind_evaluates_open_vocabulary_with_a_cache(runs: dict[str, Path], kind: str) -> None:
    from polyglot_groc.analysis.workflows import evaluate

    res = evaluate(run=runs[kind], data=runs["unseen"], cache="neural", cache_lambda=0.9, batch_size=2, device="cpu")
    en = res.to_dict()["languages"]["en"]
    assert 0 < en["oov_rate"] < 1 and 1 < en["perplexity_seen"] < math.inf
    assert en["perplexity_no_cache"] is not None and en["cache_check"]["split"] == "valid"
    # Compositional kinds embed the new words; lookup kinds give them a tuned uniform share.
    assert (en["uniform_weight"] is None) == REGISTRY[kind].traits.composes_output
    assert en["perplexity_new"] is not None and en["perplexity_new"] > 1
