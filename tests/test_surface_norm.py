"""``model.surface.norm``: the layer norm after the char-CNN's projection, the elmo kinds' default.

Without it an ELMo-like model (char-CNN input, lookup output) never left the unigram plateau at the
thesis' vocabulary: its input vectors grew onto one shared direction and saturated the first LSTM
layer (docs/results.md, "ELMo-like"). These tests pin what the option builds, that runs stored
before it load as they were trained, that bilm-tf weights never get one, and that the elmo kind
learns a context-dependent text with it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from groc_base.errors import ConfigError
from polyglot_groc.config import load_config, to_dict
from polyglot_groc.model.bundle import load_bundle
from polyglot_groc.model.checkpoint import load_checkpoint, save_checkpoint
from polyglot_groc.model.kinds import REGISTRY, build_parts
from polyglot_groc.model.surface import SurfaceEncoder
from polyglot_groc.training.trainer import Trainer
from tests.conftest import small_run_config


def _surface(module: torch.nn.Module) -> SurfaceEncoder | None:
    return next((m for m in module.modules() if isinstance(m, SurfaceEncoder)), None)


@pytest.mark.parametrize("kind", sorted(REGISTRY))
def test_the_elmo_kinds_norm_their_char_cnn_and_no_other_kind_does(kind: str) -> None:
    cfg = small_run_config(kind, "en").model
    enc = _surface(build_parts(cfg, 40, 30).input_embedder)
    if not REGISTRY[kind].traits.composes_input:
        assert enc is None
        return
    assert enc is not None
    expected = "layer" if kind in ("elmo", "bilm") else "none"
    assert cfg.surface.norm == expected
    assert (enc.norm is not None) == (expected == "layer")


def test_the_norm_gives_each_vector_zero_mean_and_unit_variance_and_passes_gradients() -> None:
    cfg = small_run_config("elmo", "en").model
    torch.manual_seed(0)
    enc = SurfaceEncoder(cfg.surface, 30, cfg.d)
    chars = torch.randint(3, 30, (12, 7))  # (N, L): no padding
    out = enc(chars)  # (N, d)
    assert out.shape == (12, cfg.d)
    # At init the gain is 1 and the bias 0: each word's vector is standardised over its d values.
    assert torch.allclose(out.mean(dim=1), torch.zeros(12), atol=1e-5)
    assert torch.allclose(out.var(dim=1, unbiased=False), torch.ones(12), atol=1e-3)
    out.pow(2).sum().backward()
    assert enc.norm is not None and enc.norm.weight.grad is not None
    assert enc.char_emb.weight.grad is not None and enc.char_emb.weight.grad.abs().sum() > 0


def test_a_bad_norm_is_refused_naming_the_key_and_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"model.surface.norm='batch' must be one of none, layer"):
        small_run_config("elmo", "en", {"model.surface.norm": "batch"})


def test_the_option_overrides_the_kind_default_both_ways() -> None:
    assert small_run_config("elmo", "en", {"model.surface.norm": "none"}).model.surface.norm == "none"
    assert small_run_config("groc", "en", {"model.surface.norm": "layer"}).model.surface.norm == "layer"


def test_an_elmo_run_stored_before_the_option_loads_as_it_was_trained(tmp_path: Path) -> None:
    run = tmp_path / "old-elmo"
    cfg = small_run_config("elmo", "en", {"model.surface.norm": "none", "train.max_steps": 2,
                                          "train.eval_every": 0, "train.log_every": 0})
    Trainer(cfg, run).fit()
    before, _ = load_bundle(run, "last")
    # What a run written before the key existed holds: neither config.toml nor the checkpoints have it.
    text = (run / "config.toml").read_text(encoding="utf-8")
    (run / "config.toml").write_text(text.replace('norm = "none"\n', ""), encoding="utf-8")
    assert "norm =" not in (run / "config.toml").read_text(encoding="utf-8")
    for name in ("last.pt", "best.pt"):
        if (run / name).is_file():
            payload = load_checkpoint(run / name)
            del payload["bundle"]["config"]["model"]["surface"]["norm"]
            save_checkpoint(run / name, payload)
    old, _ = load_bundle(run, "last")
    assert old.cfg.model.surface.norm == "none"  # not today's elmo default
    enc = _surface(old.model.input_embedder)
    assert enc is not None and enc.norm is None
    ids = torch.arange(min(6, len(old.vocab)))
    with torch.no_grad():
        assert torch.equal(old.model.input_embedder(ids), before.model.input_embedder(ids))
    # A config file of yours (not a stored run) gets today's default for the kind.
    values = to_dict(cfg)
    del values["model"]["surface"]["norm"]
    path = tmp_path / "mine.toml"
    path.write_text(text.replace('norm = "none"\n', ""), encoding="utf-8")
    assert load_config(path).model.surface.norm == "layer"
    assert load_config(path, stored=True).model.surface.norm == "none"


def _successor_corpus(root: Path, n_words: int = 40, lines: int = 160, length: int = 12) -> Path:
    """A language whose next word is a fixed function of the current one (w_i -> w_{(7i+3) mod n}),
    each line starting at a random word: the unigram perplexity is about n, the true one 1. A model
    whose inputs tell words apart learns it; one whose inputs collapse stays near n."""
    import random

    rng = random.Random(0)
    words = [f"w{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(n_words)]

    def line() -> str:
        i, out = rng.randrange(n_words), []
        for _ in range(length):
            out.append(words[i])
            i = (7 * i + 3) % n_words
        return " ".join(out)

    d = root / "en"
    d.mkdir(parents=True)
    for split, n in (("train", lines), ("valid", 20), ("test", 20)):
        (d / f"{split}.txt").write_text("\n".join(line() for _ in range(n)) + "\n", encoding="utf-8")
    return root


def test_the_elmo_kind_learns_what_its_inputs_say(tmp_path: Path) -> None:
    root = _successor_corpus(tmp_path / "data")
    cfg = small_run_config("elmo", "en", {"data.root": str(root), "data.tokenize": "whitespace",
                                          "train.max_steps": 300, "train.eval_every": 300, "train.log_every": 0,
                                          "train.lr": 0.01, "train.softmax": "full", "model.prefix.dropout": 0.0,
                                          "model.output.dropout": 0.0, "train.seed": 0})
    result = Trainer(cfg, tmp_path / "run").fit()
    valid = result.history[-1]["valid_perplexity"]["en"]
    # 40 words (+ <eos>): a unigram model scores about 41, reading the current word about 1; this small
    # model gets to ~11 in 300 steps (tied: ~6). Half the unigram perplexity says it reads its inputs.
    assert valid < 20.0, f"the elmo kind did not learn the successor function: valid perplexity {valid:.1f}"
