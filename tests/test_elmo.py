"""ELMo loading: options parsing, weight conversion, and bilm-tf's own numerical fixture.

The fixture (allenai/bilm-tf tests/fixtures/model) is a tiny random-weight ELMo with reference
outputs: for stream k and sentence i, ``lm_embeddings_{k}.hdf5["i"]`` is (2, T, 16), the top
LSTM layer's forward (0) and backward (1) outputs. bilm-tf produced them with batches of the
three streams' i-th sentences, LSTM state carried across batches.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn as nn

from groc_base.errors import CheckpointError, InputError, ModelError, ResourceMissingError
from polyglot_groc.config import PrefixConfig
from polyglot_groc.elmo.bilm import (
    ElmoForwardLstm,
    ElmoModel,
    ElmoOptions,
    copy_forward_lstm_into,
    elmo_prefix_compatible,
    load_bilm_options,
    load_elmo_char_encoder,
)
from polyglot_groc.model.prefix import LSTMPrefix

TOL = 1e-5


@pytest.fixture(scope="module")
def elmo_dir() -> Path:
    root = os.environ.get("POLYGLOT_GROC_DATA")
    if not root:
        pytest.skip("POLYGLOT_GROC_DATA is not set; point it at the shared data dir to run the elmo fixture tests")
    path = Path(root) / "elmo"
    assert (path / "lm_weights.hdf5").is_file(), f"{path} lacks the bilm-tf fixture"
    return path


@pytest.fixture(scope="module")
def h5py():  # noqa: ANN201 - the module
    return pytest.importorskip("h5py")


@pytest.fixture(scope="module")
def model(elmo_dir: Path, h5py) -> ElmoModel:
    return ElmoModel.from_files(elmo_dir / "options.json", elmo_dir / "lm_weights.hdf5").eval()


@pytest.fixture(scope="module")
def fixture_data(elmo_dir: Path, h5py) -> tuple[list[list[list[str]]], list[list[np.ndarray]]]:
    """Tokenised sentences [stream][i] and the expected forward top-layer outputs [stream][i]."""
    raw = json.loads((elmo_dir / "lm_embeddings_sentences.json").read_text(encoding="utf-8"))
    sentences = [[s.strip().split() for s in stream] for stream in raw]
    expected = []
    for k in range(len(sentences)):
        with h5py.File(elmo_dir / f"lm_embeddings_{k}.hdf5", "r") as fin:
            expected.append([fin[str(i)][0] for i in range(len(sentences[k]))])  # (T, 16) forward half
    return sentences, expected


def _run_streams(model: ElmoModel, sentences: list[list[list[str]]], stateful: bool = True) -> list[list[np.ndarray]]:
    """Batch the streams' i-th sentences together, as bilm-tf's test does."""
    n_streams, n_sent = len(sentences), len(sentences[0])
    got: list[list[np.ndarray]] = [[] for _ in range(n_streams)]
    state = None
    with torch.no_grad():
        for i in range(n_sent):
            out, new_state = model.forward_sentences([sentences[k][i] for k in range(n_streams)], state)
            state = new_state if stateful else None
            for k in range(n_streams):
                got[k].append(out[k][-1].numpy())  # top layer, (T, 16)
    return got


# --------------------------------------------------------------------------- the fixture


def test_forward_matches_bilm_tf(model: ElmoModel, fixture_data) -> None:
    sentences, expected = fixture_data
    assert [len(s) for s in sentences] == [10, 10, 10]
    got = _run_streams(model, sentences)
    worst = 0.0
    for k in range(3):
        for i in range(10):
            assert got[k][i].shape == expected[k][i].shape == (len(sentences[k][i]), 16)
            worst = max(worst, float(np.abs(got[k][i] - expected[k][i]).max()))
    assert worst < TOL, f"max abs diff {worst:.3g} to bilm-tf's reference"


def test_state_is_per_stream_and_matters(model: ElmoModel, fixture_data) -> None:
    sentences, expected = fixture_data
    # One stream alone, batch size 1: padding in the 3-stream batch must not have touched its state.
    state = None
    with torch.no_grad():
        for i in range(10):
            out, state = model.forward_sentences([sentences[1][i]], state)
            assert np.abs(out[0][-1].numpy() - expected[1][i]).max() < TOL
    # Without the carried state, later sentences are wrong: the fixture really tests statefulness.
    stateless = _run_streams(model, sentences, stateful=False)
    assert np.abs(stateless[0][0] - expected[0][0]).max() < TOL  # first batch starts from zeros anyway
    assert max(np.abs(stateless[0][i] - expected[0][i]).max() for i in range(1, 10)) > 1e-2


def test_clipping_is_active_in_fixture(model: ElmoModel, fixture_data) -> None:
    # The reference reaches cell_clip=3, so dropping the clip must break the match.
    sentences, expected = fixture_data
    clip = model.lstm.cell_clip
    try:
        model.lstm.cell_clip = None
        got = _run_streams(model, sentences)
    finally:
        model.lstm.cell_clip = clip
    assert max(np.abs(got[k][i] - expected[k][i]).max() for k in range(3) for i in range(10)) > TOL


def test_output_layout_and_token_embeddings(model: ElmoModel, elmo_dir: Path) -> None:
    enc = load_elmo_char_encoder(model.options, elmo_dir / "lm_weights.hdf5")
    tokens = ["Hello", "<S>", "naïve", ""]
    chars = model.charset.encode(tokens)
    assert (chars != 0).all()  # learned pad char: no window is masked, as in bilm-tf
    with torch.no_grad():
        out, state = model.forward_sentences([tokens, ["x"]])
        emb = enc(torch.from_numpy(chars))
    assert out[0].shape == (3, 4, 16) and out[1].shape == (3, 1, 16)
    assert torch.allclose(out[0][0], emb, atol=1e-6)  # layer 0 = char-CNN embeddings of the tokens
    assert [tuple(c.shape) for c, _ in state] == [(2, 64), (2, 64)]
    assert enc.char_emb.weight[0].abs().sum() == 0  # prepended zero row for the mask id


def test_input_and_state_errors(model: ElmoModel) -> None:
    with pytest.raises(InputError, match="token lists"):
        model.forward_sentences(["a plain string sentence"])  # type: ignore[list-item]
    with torch.no_grad():
        _, state = model.forward_sentences([["a"], ["b"]])
        with pytest.raises(ModelError, match="batch size 3"):
            model.forward_sentences([["a"], ["b"], ["c"]], state)
        out, state0 = model.forward_sentences([])
    assert out == [] and state0[0][0].shape == (0, 64)


# --------------------------------------------------------------------------- options


def test_load_options(elmo_dir: Path) -> None:
    opts = load_bilm_options(elmo_dir / "options.json")
    assert opts == ElmoOptions(filters=((1, 4), (2, 8), (3, 16), (4, 32), (5, 64)), char_dim=4, n_highway=2,
                               n_characters=262, max_characters_per_token=50, activation="relu", lstm_dim=64,
                               projection_dim=16, n_layers=2, cell_clip=3.0, proj_clip=3.0,
                               use_skip_connections=False)
    assert opts.n_filters == 124 and opts.uses_projection and opts.uses_cnn_projection


def _options_dict() -> dict:
    return {"lstm": {"cell_clip": 3, "use_skip_connections": False, "n_layers": 2, "proj_clip": 3,
                     "projection_dim": 16, "dim": 64},
            "char_cnn": {"embedding": {"dim": 4}, "filters": [[1, 4], [2, 8], [3, 16], [4, 32], [5, 64]],
                         "n_highway": 2, "n_characters": 262, "max_characters_per_token": 50, "activation": "relu"}}


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda o: o["lstm"].pop("dim"), "lack the key lstm.dim"),
        (lambda o: o.pop("char_cnn"), "lack the table 'char_cnn'"),
        (lambda o: o["char_cnn"].update(filters=[[1, "4"]]), "filters entry"),
        (lambda o: o["lstm"].update(projection_dim="16"), "projection_dim='16' has the wrong type"),
        (lambda o: o["lstm"].update(use_skip_connections=1), "use_skip_connections=1 has the wrong type"),
        (lambda o: o["char_cnn"].update(activation="selu"), "activation='selu' is not supported"),
        (lambda o: o["char_cnn"].update(n_characters=300), "n_characters=300"),
    ],
)
def test_options_errors(tmp_path: Path, edit, match: str) -> None:
    opts = _options_dict()
    edit(opts)
    path = tmp_path / "options.json"
    path.write_text(json.dumps(opts), encoding="utf-8")
    with pytest.raises(CheckpointError, match=match) as info:
        load_bilm_options(path)
    assert "\n" not in str(info.value)


def test_options_defaults_and_file_errors(tmp_path: Path) -> None:
    opts = _options_dict()
    for key in ("n_layers", "cell_clip", "proj_clip", "use_skip_connections"):
        del opts["lstm"][key]
    path = tmp_path / "options.json"
    path.write_text(json.dumps(opts), encoding="utf-8")
    loaded = load_bilm_options(path)
    assert (loaded.n_layers, loaded.cell_clip, loaded.proj_clip, loaded.use_skip_connections) == (1, None, None, False)
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(CheckpointError, match="not valid JSON"):
        load_bilm_options(path)
    with pytest.raises(ResourceMissingError, match="does not exist"):
        load_bilm_options(tmp_path / "nope.json")


# --------------------------------------------------------------------------- weights errors


def test_missing_h5py_gives_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "h5py", None)  # makes `import h5py` raise ImportError
    opts = ElmoOptions(filters=((1, 4),), char_dim=4, n_highway=0, n_characters=262, max_characters_per_token=10,
                       activation="relu", lstm_dim=8, projection_dim=4)
    with pytest.raises(ResourceMissingError, match=r"pip install 'polyglot-groc\[elmo\]'") as info:
        load_elmo_char_encoder(opts, tmp_path / "lm_weights.hdf5")
    assert "\n" not in str(info.value)


def test_options_weights_mismatch(tmp_path: Path, elmo_dir: Path, h5py) -> None:
    opts = _options_dict()
    opts["char_cnn"]["filters"][0] = [1, 5]  # the file has 4 width-1 filters
    path = tmp_path / "options.json"
    path.write_text(json.dumps(opts), encoding="utf-8")
    with pytest.raises(ModelError, match=r"'CNN/W_cnn_0'.*\(1, 1, 4, 4\).*\(1, 1, 4, 5\)"):
        ElmoModel.from_files(path, elmo_dir / "lm_weights.hdf5")


@pytest.mark.parametrize(
    ("name", "replacement", "match"),
    [
        ("CNN_high_1/W_carry", None, r"no dataset 'CNN_high_1/W_carry'"),
        ("RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0", np.zeros((64, 8), np.float32),
         r"'RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_P_0'.*\(64, 8\).*\(64, 16\)"),
        ("char_embed", np.zeros((262, 4), np.float32), r"'char_embed'.*\(262, 4\).*\(261, 4\)"),
    ],
)
def test_modified_weights_file(tmp_path: Path, elmo_dir: Path, h5py, name: str, replacement, match: str) -> None:
    weights = tmp_path / "lm_weights.hdf5"
    shutil.copyfile(elmo_dir / "lm_weights.hdf5", weights)  # copyfile: not the read-only mode
    with h5py.File(weights, "r+") as fout:
        del fout[name]
        if replacement is not None:
            fout.create_dataset(name, data=replacement)
    with pytest.raises(ModelError, match=match):
        ElmoModel.from_files(elmo_dir / "options.json", weights)


def test_unreadable_weights(tmp_path: Path, elmo_dir: Path, h5py) -> None:
    opts = load_bilm_options(elmo_dir / "options.json")
    bad = tmp_path / "lm_weights.hdf5"
    bad.write_bytes(b"not an hdf5 file")
    with pytest.raises(CheckpointError, match="not a readable hdf5"):
        load_elmo_char_encoder(opts, bad)
    with pytest.raises(ResourceMissingError, match="does not exist"):
        load_elmo_char_encoder(opts, tmp_path / "missing.hdf5")


# --------------------------------------------------------------------------- lstm variants


def test_skip_connections_add_layer_input() -> None:
    torch.manual_seed(0)
    plain = ElmoForwardLstm(6, 12, 6, n_layers=2, cell_clip=3.0, proj_clip=3.0)
    with torch.no_grad():
        for p in plain.parameters():
            p.uniform_(-0.5, 0.5)
    skip = ElmoForwardLstm(6, 12, 6, n_layers=2, cell_clip=3.0, proj_clip=3.0, use_skip_connections=True)
    skip.load_state_dict(plain.state_dict())
    x = torch.randn(2, 5, 6)
    lengths = torch.tensor([5, 3])
    with torch.no_grad():
        (a0, a1), sa = plain(x, lengths=lengths)
        (b0, b1), sb = skip(x, lengths=lengths)
    assert torch.equal(a0, b0)
    assert torch.allclose(b1, a1 + a0, atol=1e-6)  # residual on the output of layers above the first
    assert all(torch.equal(p, q) for (c1, h1), (c2, h2) in zip(sa, sb, strict=True) for p, q in ((c1, c2), (h1, h2)))
    assert (b1[1, 3:] == 0).all()  # padded steps emit zeros


def test_no_projection_when_dims_equal() -> None:
    lstm = ElmoForwardLstm(4, 8, 8, n_layers=2)
    assert not lstm.use_projection and len(lstm.weight_proj) == 0
    outs, state = lstm(torch.randn(3, 2, 4))
    assert [tuple(o.shape) for o in outs] == [(3, 2, 8), (3, 2, 8)]
    assert tuple(state[1][1].shape) == (3, 8)


# --------------------------------------------------------------------------- copy into our prefix


def test_copy_into_torch_lstm(model: ElmoModel, fixture_data) -> None:
    # The fixture projects 64 -> 16, which LSTMPrefix (no proj_size) cannot hold; hand-built
    # proj_size layers can.
    assert not elmo_prefix_compatible(model.options, PrefixConfig(n_layers=2, hidden=64), d=16)
    layers = [nn.LSTM(16, 64, proj_size=16, batch_first=True) for _ in range(2)]
    copy_forward_lstm_into(layers, model.lstm)
    sentences, _ = fixture_data
    with torch.no_grad():
        x = model.encode_tokens(["<S>", *sentences[0][0], "</S>"]).unsqueeze(0)  # (1, T, 16)
        y = x
        for layer in layers:
            y, _ = layer(y)
        clip = model.lstm.cell_clip
        try:
            # torch's LSTM does not clip: compare with the clip off (it is reached in this fixture).
            model.lstm.cell_clip = None
            outs, _ = model.lstm(x)
        finally:
            model.lstm.cell_clip = clip
    assert torch.allclose(y, outs[-1], atol=TOL)
    with pytest.raises(ModelError, match="prefix layer 1"):
        copy_forward_lstm_into([layers[0], nn.LSTM(16, 64, batch_first=True)], model.lstm)
    with pytest.raises(ModelError, match="n_layers=2"):
        copy_forward_lstm_into(layers[:1], model.lstm)


def test_copy_into_our_prefix() -> None:
    """An unprojected ELMo-shaped LSTM copied into LSTMPrefix computes the same function."""
    opts = ElmoOptions(filters=((1, 8),), char_dim=4, n_highway=0, n_characters=262, max_characters_per_token=10,
                       activation="relu", lstm_dim=8, projection_dim=8, n_layers=2)
    cfg = PrefixConfig(n_layers=2, hidden=8, dropout=0.0)
    assert elmo_prefix_compatible(opts, cfg, d=8)
    assert not elmo_prefix_compatible(opts, PrefixConfig(n_layers=2, hidden=16), d=8)
    assert not elmo_prefix_compatible(opts, PrefixConfig(n_layers=3, hidden=8), d=8)
    torch.manual_seed(0)
    lstm = ElmoForwardLstm.from_options(opts)
    with torch.no_grad():
        for p in lstm.parameters():
            p.uniform_(-0.5, 0.5)
    prefix = LSTMPrefix(cfg, d=8).eval()
    copy_forward_lstm_into(list(prefix.layers), lstm)  # type: ignore[arg-type]
    x = torch.randn(3, 7, 8)
    with torch.no_grad():
        y, pstate = prefix(x, prefix.init_state(3))
        outs, estate = lstm(x)
    assert torch.allclose(y, outs[-1], atol=TOL)
    for (h, c), (ec, eh) in zip(pstate, estate, strict=True):  # prefix state is (h, c), (1, B, H)
        assert torch.allclose(h[0], eh, atol=TOL) and torch.allclose(c[0], ec, atol=TOL)
