"""The sampled training softmax (model/sampling.py, training/softmax.py): proposals, inclusion
probabilities, exactness when the sample covers the vocabulary, the expected gradient, sparse
updates, the auto rule, and that no evaluation ever samples."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from groc_base.errors import ConfigError, ModelError
from polyglot_groc.config import load_config
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.device import resolve_precision
from polyglot_groc.model.lm import LanguageModel
from polyglot_groc.model.sampling import Candidates, CandidateSampler, Proposal
from polyglot_groc.model.vocab import Vocab
from polyglot_groc.training import softmax as softmax_mod
from polyglot_groc.training.softmax import choose_softmax
from polyglot_groc.training.trainer import Trainer
from tests.conftest import assert_frozen_steps, small_run_config

WORDS = [f"w{i:02d}" for i in range(40)]
COUNTS = Counter({w: 100 - 2 * i for i, w in enumerate(WORDS)} | {"<eos>": 50})
NO_DROPOUT = ["model.prefix.dropout=0", "model.output.dropout=0"]


def _bundle(kind: str, extra: list[str] | None = None) -> ModelBundle:
    torch.manual_seed(0)
    vocab = Vocab.build({"en": COUNTS})
    cfg = small_run_config(kind, extra=[*NO_DROPOUT, *(extra or [])])
    return ModelBundle.create(cfg, vocab, charset=Charset.from_words(list(COUNTS)))


def _batch(b: ModelBundle, words: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.from_numpy(b.vocab.encode(words))[None]  # (1, T+1)
    return ids[:, :-1], ids[:, 1:]


def _sampler(b: ModelBundle, k: int, kind: str = "log-uniform", rank: int = 0) -> CandidateSampler:
    ids = b.model.screen.ids("en").numpy()
    counts = np.array([COUNTS[w] for w in b.vocab.words], dtype=np.int64)
    return CandidateSampler({"en": Proposal.build(ids, counts[ids], kind)}, k, seed=3, rank=rank)


# -- proposals and inclusion ---------------------------------------------------------------------------
def test_log_uniform_proposal_is_zipf_by_frequency_rank() -> None:
    ids = np.array([10, 11, 12, 13])
    p = Proposal.build(ids, np.array([5, 50, 5, 1]), "log-uniform")
    rank = np.array([1, 0, 2, 3])  # 11 most frequent; 10 and 12 tie and the smaller id ranks first
    expected = np.log((rank + 2) / (rank + 1)) / np.log(5)
    assert p.q == pytest.approx(expected / expected.sum())
    assert p.q.sum() == pytest.approx(1.0)


def test_unigram_proposal_gives_unseen_words_the_mass_of_one_occurrence() -> None:
    p = Proposal.build(np.array([0, 1, 2]), np.array([16, 1, 0]), "unigram", alpha=0.5)
    assert p.q == pytest.approx(np.array([4.0, 1.0, 1.0]) / 6.0)
    with pytest.raises(ConfigError, match="sampled_proposal"):
        Proposal.build(np.array([0]), np.array([1]), "zipf")


def test_inclusion_probability_is_the_frequency_of_being_drawn() -> None:
    p = Proposal.build(np.arange(20), np.arange(20, 0, -1), "log-uniform")
    rng = np.random.default_rng(0)
    k, n = 6, 20000
    hits = np.zeros(20)
    for _ in range(n):
        hits[np.unique(p.draw(rng, k))] += 1
    assert hits / n == pytest.approx(np.exp(p.log_inclusion(np.arange(20), k)), abs=0.012)


def test_candidates_hold_the_batch_once_and_correct_only_sampled_words() -> None:
    b = _bundle("tied")
    s = _sampler(b, k=12)
    words = b.vocab.encode(["w00", "w05", "w05", "w39", "<eos>"])
    c = s.draw("en", words, step=7)
    ids = c.ids.numpy()
    assert np.all(np.diff(ids) > 0)  # sorted, each word once (accidental hits merged)
    batch = np.isin(ids, words)
    assert batch.sum() == 4 and np.all(c.log_correction.numpy()[batch] == 0)
    assert np.all(c.log_correction.numpy()[~batch] > 0) and c.n_sampled == int((~batch).sum()) > 0
    again = s.draw("en", words, step=7)
    assert torch.equal(again.ids, c.ids)  # a function of (seed, rank, step): resumes draw the same
    other_rank = _sampler(b, k=12, rank=1).draw("en", words, step=7)
    next_step = s.draw("en", words, step=8)
    assert not torch.equal(other_rank.ids, c.ids) or not torch.equal(next_step.ids, c.ids)


# -- the loss ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["groc", "tied", "untied", "bilm"])
def test_sample_covering_the_vocabulary_is_the_full_softmax(kind: str) -> None:
    b = _bundle(kind)
    m = b.model.train()
    x, y = _batch(b, ["w00", "w03", "w01", "w07", "<eos>", "w00", "w02"])
    cand = _sampler(b, k=len(b.vocab)).draw("en", torch.cat([x, y]).numpy(), step=0)
    assert cand.ids.numel() == len(b.vocab) and not cand.log_correction.any()
    losses, grads = [], []
    for c in (None, cand):
        m.zero_grad(set_to_none=True)
        out = m(x, y, "en", m.init_state(1), candidates=c)
        assert out.loss is not None
        out.loss.backward()
        losses.append(out.loss.detach())
        grads.append({n: p.grad.clone() for n, p in m.named_parameters() if p.grad is not None})
    assert torch.allclose(losses[0], losses[1], atol=1e-6)
    assert grads[0].keys() == grads[1].keys()
    for name, g in grads[0].items():
        assert torch.allclose(g, grads[1][name], atol=1e-6), name


def test_log_q_correction_makes_the_expected_gradient_the_exact_one() -> None:
    """Averaged over many draws, the sampled loss's gradient approaches the full softmax's; without
    the correction it stays far off (on a 41-word vocabulary, 8 draws per step)."""
    b = _bundle("tied")
    m = b.model.train()
    x, y = _batch(b, ["w00", "w01", "w00", "w02"])
    params = [p for p in m.parameters() if p.requires_grad]

    def grad(c: Candidates | None) -> torch.Tensor:
        m.zero_grad(set_to_none=True)
        out = m(x, y, "en", m.init_state(1), candidates=c)
        assert out.loss is not None
        out.loss.backward()
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params])

    exact = grad(None)
    s = _sampler(b, k=8)
    words = torch.cat([x, y]).numpy()
    draws = [s.draw("en", words, step) for step in range(600)]
    corrected = torch.stack([grad(c) for c in draws]).mean(0)
    plain = torch.stack([grad(dataclasses.replace(c, log_correction=torch.zeros_like(c.log_correction)))
                         for c in draws[:150]]).mean(0)

    def rel(g: torch.Tensor) -> float:
        return float((g - exact).norm() / exact.norm())

    assert rel(corrected) < 0.1
    assert rel(plain) > 3 * rel(corrected)


def test_sampled_groc_step_encodes_only_the_candidates() -> None:
    b = _bundle("groc")
    m = b.model.train()
    rows: list[int] = []
    m.input_embedder.surface.register_forward_hook(lambda mod, inp, out: rows.append(inp[0].shape[0]))
    x, y = _batch(b, ["w00", "w01", "w02", "w01"])
    c = _sampler(b, k=5).draw("en", torch.cat([x, y]).numpy(), step=1)
    m(x, y, "en", m.init_state(1), candidates=c)
    assert rows == [c.ids.numel()] and c.ids.numel() < len(b.vocab)


def test_frozen_sampled_steps_train_the_output_net_and_bias_not_the_encoder() -> None:
    """Sparse updates (seed 000 B.4) combine with sampling: a frozen step encodes its candidates
    without a graph; the computed bias and the output net still train."""
    b = _bundle("groc", ["model.output.depth=1"])
    m = b.model.train()
    x, y = _batch(b, ["w00", "w01", "w02", "w01", "<eos>"])
    s = _sampler(b, k=6)
    assert_frozen_steps(m, lambda step: m(x, y, "en", m.init_state(1), update_output=False,
                                          candidates=s.draw("en", torch.cat([x, y]).numpy(), step)))


def test_candidates_are_refused_in_evaluation_and_by_banded_softmaxes() -> None:
    b = _bundle("groc")
    m = b.model.eval()
    x, y = _batch(b, ["w00", "w01", "w02"])
    c = _sampler(b, k=5).draw("en", torch.cat([x, y]).numpy(), step=0)
    with pytest.raises(ModelError, match="training steps only"):
        m(x, y, "en", m.init_state(1), candidates=c)
    a = _bundle("adaptive", ["model.output.cutoffs=[0.5]"]).model.train()
    with pytest.raises(ModelError, match="cannot train on a sampled softmax"):
        a(x, y, "en", a.init_state(1), candidates=c)
    with pytest.raises(ConfigError, match="train.softmax=sampled does not apply"):
        small_run_config("adaptive", extra=["train.softmax=sampled"])


# -- the trainer ---------------------------------------------------------------------------------------
def _with_line(monkeypatch: pytest.MonkeyPatch, line: int) -> None:
    """Every kind's auto line set to ``line`` words (the 40-word test vocabulary sits on either side)."""
    real = softmax_mod.kind_traits
    monkeypatch.setattr(softmax_mod, "kind_traits", lambda kind: dataclasses.replace(real(kind), sampled_above=line))


def test_auto_samples_above_the_threshold_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    b = _bundle("groc")
    t = load_config(None, {"train.sampled_k": 8}).train
    _with_line(monkeypatch, 100)
    full = choose_softmax(t, b.model, screen=True)
    assert full.mode == "full" and "at most 100 (auto's line for groc)" in full.reason
    _with_line(monkeypatch, 10)
    chosen = choose_softmax(t, b.model, screen=True)
    assert chosen.sampled and chosen.k == 8 and f"({len(b.vocab)} words) is above 10" in chosen.reason
    covering = choose_softmax(dataclasses.replace(t, sampled_k=1000), b.model, screen=True)
    assert covering.mode == "full" and "covers" in covering.reason
    adaptive = _bundle("adaptive", ["model.output.cutoffs=[0.5]"])
    assert choose_softmax(t, adaptive.model, screen=True).mode == "full"
    assert choose_softmax(dataclasses.replace(t, softmax="full"), b.model, screen=True).mode == "full"


class _Sized:
    """A stand-in for a model of ``kind`` whose one language has ``words`` words (choose_softmax reads no more)."""

    def __init__(self, kind: str, words: int) -> None:
        ids = torch.arange(words)
        self.kind = kind
        self.screen = type("Screen", (), {"lang_ids": {"en": ids}, "all_ids": ids})()


@pytest.mark.parametrize(("kind", "words", "mode"), [
    ("groc", 4_000, "full"), ("groc", 32_000, "sampled"), ("groc-lex", 6_000, "sampled"), ("conv", 10_000, "sampled"),
    ("tied", 32_000, "full"), ("untied", 32_000, "full"), ("deep-residual", 32_000, "full"),
    ("tied", 60_000, "sampled"), ("adaptive", 60_000, "full"),
])
def test_auto_follows_what_a_full_step_costs_per_kind(kind: str, words: int, mode: str) -> None:
    """GroC's full softmax encodes every word each step (1.01 s against 0.077 s sampled at 32k words, issue 46):
    it samples from 5,000 words on; a table kind's full step is one product, and keeps the 50,000-word line."""
    t = load_config(None, {}).train
    assert choose_softmax(t, _Sized(kind, words), screen=True).mode == mode  # type: ignore[arg-type]


def test_a_resumed_run_keeps_the_softmax_it_started_with() -> None:
    t = load_config(None, {}).train
    groc = _Sized("groc", 32_000)
    kept = choose_softmax(t, groc, screen=True, resumed={"mode": "full", "reason": "r"})  # type: ignore[arg-type]
    assert kept.mode == "full" and "as the run chose when it started: r" in kept.reason
    # A checkpoint from before the choice was recorded: the 50,000-word line it started under.
    assert choose_softmax(t, groc, screen=True, resumed={}).mode == "full"  # type: ignore[arg-type]
    assert choose_softmax(t, _Sized("groc", 60_000), screen=True, resumed={}).sampled  # type: ignore[arg-type]


def test_checkpoints_record_the_choice_and_a_resume_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.model.checkpoint import load_checkpoint
    from polyglot_groc.training.workflows import resume

    cfg = small_run_config("groc", "en", ["train.sampled_k=4", "train.max_steps=2"])
    Trainer(cfg, tmp_path / "run").fit()
    payload = load_checkpoint(tmp_path / "run" / "last.pt")
    assert payload["softmax"]["mode"] == "full"
    _with_line(monkeypatch, 5)  # a rule that would now sample this run
    res = resume(run=tmp_path / "run", max_steps=4)
    assert res.steps == 4 and res.softmax["mode"] == "full" and "when it started" in res.softmax["reason"]


def test_sampled_training_never_samples_an_evaluation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[bool, bool]] = []
    real = LanguageModel.forward

    def spy(self: LanguageModel, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append((self.training, kwargs.get("candidates") is not None))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(LanguageModel, "forward", spy)
    cfg = small_run_config("groc", "en,fr", ["train.softmax=sampled", "train.sampled_k=6", "train.max_steps=6",
                                            "train.eval_every=3", "train.output_update_prob=0.5"])
    res = Trainer(cfg, tmp_path / "run").fit()
    assert {s for s in seen if s[0]} == {(True, True)}  # every training step sampled ...
    assert {s for s in seen if not s[0]} == {(False, False)}  # ... and no evaluation did
    out = json.loads((tmp_path / "run" / "result.json").read_text()) if (tmp_path / "run" / "result.json").exists() \
        else res.to_dict()
    assert out["softmax"] == {"mode": "sampled", "reason": "train.softmax=sampled", "largest_vocab": res.softmax[
        "largest_vocab"], "k": 6, "proposal": "log-uniform"}


def test_precision_auto_is_bf16_on_cuda_with_bf16_and_fp32_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    from polyglot_groc.model import device as device_mod

    assert resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert resolve_precision("tf32", torch.device("cpu")) == "tf32"
    monkeypatch.setattr(device_mod, "bf16_supported", lambda dev: True)
    assert resolve_precision("auto", torch.device("cuda")) == "bf16"
    monkeypatch.setattr(device_mod, "bf16_supported", lambda dev: dev.type == "cpu")
    assert resolve_precision("auto", torch.device("cuda")) == "fp32"


def test_a_hook_can_stop_a_run_which_is_then_validated_and_checkpointed(tmp_path: Path) -> None:
    import polyglot_groc as pg

    class StopAtThree:
        def on_start(self, total_steps: int | None, info: object) -> None:
            pass

        def on_step(self, info: pg.StepInfo) -> None:
            if info.step == 3:
                raise pg.StopTraining("budget spent")

        def on_eval(self, record: object) -> None:
            pass

    cfg = small_run_config("tied", extra=["train.max_steps=50", "train.eval_every=20"])
    res = pg.train(out=tmp_path / "run", config=cfg, hooks=StopAtThree())
    assert (res.steps, res.stop_reason) == (3, "stopped")
    assert [r["step"] for r in res.history] == [3] and (tmp_path / "run" / "best.pt").is_file()
    assert json.loads((tmp_path / "run" / "result.json").read_text())["stop_reason"] == "stopped"
