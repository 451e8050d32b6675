"""Fidelity options (seed 000 text vs the released code): each changes what it says and nothing else."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

from polyglot_groc.config import load_config
from polyglot_groc.model.bundle import ModelBundle
from polyglot_groc.model.charset import Charset
from polyglot_groc.model.lm import count_parameters
from polyglot_groc.model.outputs import ComputedBias, LookupBias
from polyglot_groc.model.vocab import Vocab
from polyglot_groc.training.regularizers import ar_tar_penalty
from polyglot_groc.training.trainer import Trainer
from tests.conftest import small_run_config

EN = Counter({"the": 9, "cat": 4, "sleeps": 3, ".": 9, "<eos>": 9, "dog": 2})
PRESETS = Path(__file__).resolve().parent.parent / "polyglot_groc" / "configs"


def _bundle(*extra: str, kind: str = "groc") -> ModelBundle:
    torch.manual_seed(0)
    return ModelBundle.create(small_run_config(kind, extra=list(extra)), Vocab.build({"en": EN}),
                              charset=Charset.from_words(list(EN)))


def test_ar_tar_match_their_definitions() -> None:
    h = torch.tensor([[[1.0, 2.0], [3.0, 5.0]]])  # (B=1, T=2, d=2)
    raw = torch.tensor([[[0.0, 1.0], [2.0, 1.0]]])
    pen = ar_tar_penalty(h, raw, alpha=2.0, beta=1.0)
    assert pen is not None
    # AR: 2 * mean(1, 4, 9, 25) = 19.5; TAR: 1 * mean((2-0)^2, (1-1)^2) = 2.
    assert float(pen) == pytest.approx(19.5 + 2.0)
    assert ar_tar_penalty(h, raw, 0.0, 0.0) is None


def test_lookup_bias_adds_one_parameter_per_word_and_computed_has_none() -> None:
    computed, lookup = _bundle(), _bundle('model.output.bias="lookup"')
    assert isinstance(computed.model.bias, ComputedBias) and isinstance(lookup.model.bias, LookupBias)
    # ComputedBias has d + 1 parameters; the lookup vector one per word.
    assert count_parameters(lookup.model) - count_parameters(computed.model) == len(computed.vocab) - 17
    ids = torch.tensor([0, 1, len(lookup.vocab) + 3])  # a word added after training gets bias 0
    with torch.no_grad():
        lookup.model.bias.b.fill_(1.0)
    assert lookup.model.bias(ids).tolist() == [1.0, 1.0, 0.0]


def test_add_combine_has_no_projection_and_sums_forms() -> None:
    torch.manual_seed(0)
    from polyglot_groc.config import SurfaceConfig
    from polyglot_groc.model.embedder import GroundedEmbedder, LexiconForms

    emb = GroundedEmbedder(SurfaceConfig(filters=((1, 4), (2, 4))), 10, 8, use_lexicon=True, combine="add")
    assert emb.combine is None
    chars = torch.randint(1, 10, (3, 5))
    forms = LexiconForms.empty(3)
    forms.related_ids[0, 0] = 1
    forms.related_mask[0, 0] = True
    emb.set_words(chars, forms)
    out = emb(torch.tensor([0, 2]))
    c = emb.surface(chars[torch.tensor([0, 1, 2])])
    assert torch.allclose(out[0], c[0] + c[1], atol=1e-6) and torch.allclose(out[1], c[2], atol=1e-6)


def test_per_place_dropouts_fall_back_to_dropout() -> None:
    p = _bundle("model.prefix.dropout=0.3", "model.prefix.layer_dropout=0.0",
                "model.prefix.output_dropout=0.5").model.prefix
    assert (p.drop_in.p, p.drop_between.p, p.drop_out.p) == (0.3, 0.0, 0.5)


def test_word_dropout_zeroes_whole_rows_in_training_only() -> None:
    m = _bundle("model.prefix.word_dropout=0.5").model
    table = torch.ones(200, 4)
    torch.manual_seed(1)
    out = m.train()._word_dropout(table)
    rows = out[:, 0]
    assert set(rows.unique().tolist()) == {0.0, 2.0} and torch.all(out == rows[:, None])
    assert torch.equal(m.eval()._word_dropout(table), table)


def test_inputs_after_dropout_reads_the_dropped_output_table() -> None:
    m = _bundle("model.output.dropout=0.5", "model.output.inputs_after_dropout=true").model.train()
    torch.manual_seed(0)
    tables = m.vocab_tables("en")
    assert tables.e_in is tables.e_out  # depth 0: the very same dropped rows
    m2 = _bundle("model.output.dropout=0.5").model.train()
    t2 = m2.vocab_tables("en")
    assert t2.e_in is not None and not torch.equal(t2.e_in, t2.e_out)


def test_training_with_every_released_option_runs_and_logs_train_perplexity(tmp_path: Path) -> None:
    cfg = small_run_config("groc", extra=[
        "train.max_steps=6", "train.eval_every=3", "train.ar_alpha=2.0", "train.tar_beta=1.0",
        'train.bptt_mode="variable"', "train.weight_decay=1.2e-6", 'model.output.bias="computed"',
        'model.output.bias_activation="tanh"', "model.output.bias_dropout=0.2",
        'model.surface.activation="selu"', "model.prefix.word_dropout=0.1",
        "model.output.inputs_after_dropout=true", "train.output_update_prob=0.3"])
    res = Trainer(cfg, tmp_path / "run").fit()
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert res.steps == 6 and len(rows) == 2
    assert all(r["train_perplexity"] > 1.0 and r["valid_perplexity"]["en"] > 1.0 for r in rows)


@pytest.mark.parametrize("name", ["ptb_paper.toml", "ptb_released.toml"])
def test_presets_load_and_validate(name: str) -> None:
    cfg = load_config(PRESETS / name)
    assert cfg.model.kind.startswith("groc") and cfg.train.batch_size == 20 and cfg.train.lr == 0.001


def test_bad_fidelity_values_are_config_errors() -> None:
    from groc_base.errors import ConfigError

    for bad in ('model.output.bias="table"', 'model.lexicon.combine="mul"', 'train.bptt_mode="random"',
                "train.ar_alpha=-1", "model.prefix.word_dropout=1.0"):
        with pytest.raises(ConfigError):
            small_run_config("groc", extra=[bad])
