"""The bidirectional ELMo-like LM (``--model bilm``) and bilm-tf's backward direction.

bilm-tf's fixture (``../shared/data/elmo``) holds, per stream k and sentence i, the top layer's
forward (row 0) and backward (row 1) outputs; :meth:`ElmoModel.lm_embeddings` must give both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SMALL_OVERRIDES, TINY, small_model_config

from groc_base.errors import ModelError
from polyglot_groc.model.lm import LanguageModel

TOL = 1e-5


@pytest.fixture(scope="module")
def elmo_dir() -> Path:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set; point it at the shared data dir to run the elmo fixture tests")
    return Path(root) / "elmo"


def test_both_directions_match_bilm_tf(elmo_dir: Path) -> None:
    h5py = pytest.importorskip("h5py")
    from polyglot_groc.elmo.bilm import ElmoModel

    model = ElmoModel.from_files(elmo_dir / "options.json", elmo_dir / "lm_weights.hdf5").eval()
    assert model.backward is not None
    raw = json.loads((elmo_dir / "lm_embeddings_sentences.json").read_text(encoding="utf-8"))
    sentences = [[s.strip().split() for s in stream] for stream in raw]
    expected = []
    for k in range(3):
        with h5py.File(elmo_dir / f"lm_embeddings_{k}.hdf5", "r") as fin:
            expected.append([fin[str(i)][...] for i in range(10)])  # (2, T, 16): forward, backward
    state = None
    worst = {"forward": 0.0, "backward": 0.0}
    with torch.no_grad():
        for i in range(10):
            out, state = model.lm_embeddings([sentences[k][i] for k in range(3)], state)
            fwd_only, _ = model.forward_sentences([sentences[0][i]]) if i == 0 else (None, None)
            for k in range(3):
                T = len(sentences[k][i])
                assert out[k].shape == (3, T, 32)
                top = out[k][-1].numpy()
                worst["forward"] = max(worst["forward"], float(np.abs(top[:, :16] - expected[k][i][0]).max()))
                worst["backward"] = max(worst["backward"], float(np.abs(top[:, 16:] - expected[k][i][1]).max()))
                # Layer 0 is the char-CNN output twice, as ELMo's.
                assert torch.equal(out[k][0, :, :16], out[k][0, :, 16:])
            if fwd_only is not None:  # the forward half is forward_sentences' output
                assert torch.allclose(out[0][:, :, :16], fwd_only[0], atol=1e-6)
    assert worst["forward"] < TOL and worst["backward"] < TOL, worst


def _bilm(seed: int = 0) -> LanguageModel:
    torch.manual_seed(seed)
    cfg = small_model_config("bilm")
    n_words = 30
    lang_ids = {"en": torch.arange(n_words)}
    model = LanguageModel(cfg, n_chars=12, n_words=n_words, lang_ids=lang_ids)
    chars = torch.randint(1, 12, (n_words, 6))
    model.set_words(chars, None, lang_ids)
    return model


def test_bilm_shapes_gradients_and_loss() -> None:
    model = _bilm()
    assert model.bidirectional and model.backward_prefix is not None
    assert model.prefix.output_sizes == [16, 16]  # every layer projected to d (hidden 24 -> 16)
    seq = torch.randint(0, 30, (3, 9))
    inputs, targets = seq[:, :-1], seq[:, 1:]
    model.train()
    out = model(inputs, targets, "en", model.init_state(3))
    assert out.loss is not None and out.nll_sum_backward is not None
    out.loss.backward()
    for name, prefix in (("forward", model.prefix), ("backward", model.backward_prefix)):
        grads = [p.grad for p in prefix.parameters()]
        assert all(g is not None and g.abs().sum() > 0 for g in grads), name
    model.eval()
    with torch.no_grad():
        both = model(inputs, targets, "en", model.init_state(3))
        fwd = model(inputs, targets, "en", model.init_state(3), direction="forward")
        # The backward LM on the window read right to left, from its own zero state.
        bwd = model(targets.flip(1), inputs.flip(1), "en", model.init_state(3, "backward"), direction="backward")
    assert fwd.nll_sum_backward is None
    assert torch.allclose(both.nll_sum, fwd.nll_sum)
    assert torch.allclose(both.nll_sum_backward, bwd.nll_sum)
    assert both.loss is not None
    assert torch.allclose(both.loss, (fwd.nll_sum + bwd.nll_sum) / (2 * targets.numel()))


def test_layer_outputs_and_direction_errors() -> None:
    model = _bilm().eval()
    ids = torch.randint(0, 30, (2, 5))
    with torch.no_grad():
        fwd = model.layer_outputs(ids)
        bwd = model.layer_outputs(ids.flip(1), "backward")
    assert [tuple(t.shape) for t in fwd] == [(2, 5, 16)] * 3 == [tuple(t.shape) for t in bwd]
    assert torch.allclose(fwd[0], bwd[0].flip(1))  # the same char-CNN embeddings
    torch.manual_seed(0)
    one_way = LanguageModel(small_model_config("elmo"), 12, 30, {"en": torch.arange(30)})
    with pytest.raises(ModelError, match="bidirectional"):
        one_way.init_state(2, "backward")


def test_bilm_trains_saves_reloads_and_resumes(tmp_path: Path) -> None:
    import polyglot_groc.api as pg
    from polyglot_groc.model.bundle import load_bundle

    res = pg.train(out=tmp_path / "run", langs="en,fr", data=TINY, model="bilm", overrides=SMALL_OVERRIDES,
                   max_steps=6, threads=1)
    assert res.steps == 6 and not res.diverged
    record = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[-1])
    assert set(record["valid_perplexity_backward"]) == {"en", "fr"}
    bundle, _ = load_bundle(tmp_path / "run", "last")
    again, _ = load_bundle(tmp_path / "run", "last")
    ids = torch.from_numpy(bundle.vocab.encode(["the", "cat", "the"])).unsqueeze(0)
    with torch.no_grad():
        a = bundle.model.layer_outputs(ids.flip(1), "backward")
        b = again.model.layer_outputs(ids.flip(1), "backward")
    assert all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
    ev = pg.evaluate(run=tmp_path / "run", split="valid").to_dict()
    assert set(ev["perplexity_backward"]) == {"en", "fr"}
    assert ev["perplexity"] != ev["perplexity_backward"]
    more = pg.resume(run=tmp_path / "run", max_steps=8)
    assert more.steps == 8


def test_bilm_run_from_bilm_tf_weights_reads_both_directions(elmo_dir: Path, tmp_path: Path) -> None:
    """init-from-elmo --model bilm: char-CNN and both stacks copied; with bilm-tf's clips switched off
    in the reference reader, every layer of both directions is equal (torch's LSTM cannot clip)."""
    pytest.importorskip("h5py")
    import polyglot_groc.api as pg
    from polyglot_groc.elmo.bilm import ElmoModel
    from polyglot_groc.model.bundle import load_bundle

    res = pg.init_from_elmo(out=tmp_path / "run", elmo_options=elmo_dir / "options.json",
                            elmo_weights=elmo_dir / "lm_weights.hdf5", data=TINY, langs="en", max_steps=1,
                            lr=1e-12, threads=1, model="bilm")
    assert res.source["directions"] == 2 and res.source["clips_dropped"]
    bundle, _ = load_bundle(tmp_path / "run", "last")
    assert bundle.model.kind == "bilm" and bundle.cfg.model.d == 16 and bundle.cfg.model.prefix.hidden == 64
    ref = ElmoModel.from_files(elmo_dir / "options.json", elmo_dir / "lm_weights.hdf5").eval()
    for stack in (ref.lstm, ref.backward):
        assert stack is not None
        stack.cell_clip = stack.proj_clip = None
    sentence = ["The", "cat", "sat", "on", "the", "mat", "."]
    view = bundle.with_new_words({"en": ["<S>", "</S>", *sentence]})
    ids = torch.from_numpy(view.vocab.encode(["<S>", *sentence, "</S>"])).unsqueeze(0)
    with torch.no_grad():
        fwd = view.model.layer_outputs(ids)
        bwd = view.model.layer_outputs(ids.flip(1), "backward")
        want, _ = ref.lm_embeddings([sentence])
    n = len(sentence)
    for j in range(3):
        got = torch.cat([fwd[j][0, 1 : n + 1], bwd[j][0].flip(0)[1 : n + 1]], dim=-1)
        assert torch.allclose(got, want[0][j], atol=1e-5), j
    with pytest.raises(Exception, match="bilm-tf weights"):
        pg.init_from_elmo(out=tmp_path / "x", elmo_run=tmp_path / "run", model="bilm")
