"""Load a bilm-tf ELMo (``options.json`` + ``lm_weights.hdf5``) into our modules.

The character CNN becomes our :class:`~polyglot_groc.model.surface.SurfaceEncoder` (so a GroC model can
start from ELMo's word encoder) and the forward LSTM stack becomes :class:`ElmoForwardLstm`, a
faithful re-implementation of TensorFlow's ``LSTMCell`` as bilm-tf configures it: one kernel over
``[x, h_prev]`` with gate order (i, j, f, o), ``forget_bias=1.0`` added to the f gate at run time,
the cell clipped to ``cell_clip``, the output projected (``num_proj``) and clipped to ``proj_clip``.
The backward stack (``RNN_1``) is loaded too when the file has it: :meth:`ElmoModel.lm_embeddings`
gives bilm-tf's full ``lm_embeddings`` (both directions, every layer); a left-to-right language
model (GroC initialisation) uses the forward one only.

bilm-tf runs statefully: the LSTM state left by one batch is the initial state of the next, one
state row per batch row ("stream"), and ``<S>``/``</S>`` are added around every sentence. Padded
steps of a shorter sentence neither emit output nor change its state (``tf.nn.dynamic_rnn`` with
``sequence_length``). :meth:`ElmoModel.forward_sentences` reproduces exactly that.

Errors: a missing file or the missing optional ``h5py`` -> :class:`ResourceMissingError`; a
malformed ``options.json`` or an unreadable weights file -> :class:`CheckpointError`; weights that
do not fit the options (missing dataset, wrong shape) or inputs that do not fit the model ->
:class:`ModelError`.
"""

from __future__ import annotations

import importlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from groc_base.checks import check_input_file, is_int
from groc_base.errors import CheckpointError, InputError, ModelError, ResourceMissingError
from groc_base.textio import decode_text
from groc_base.wording import counted
from polyglot_groc.config import PrefixConfig, SurfaceConfig
from polyglot_groc.model.charset import ELMO_BOS_TOKEN, ELMO_EOS_TOKEN, ELMO_N_CHARS, Charset
from polyglot_groc.model.surface import Highway, SurfaceEncoder

logger = logging.getLogger(__name__)

#: TensorFlow's ``LSTMCell`` default, added to the forget-gate pre-activation at run time.
TF_FORGET_BIAS = 1.0
#: bilm-tf supports only these two CNN activations; its highway layers always use relu.
_CNN_ACTIVATIONS = ("relu", "tanh")
_INSTALL_HINT = "pip install 'polyglot-groc[elmo]' (or pip install h5py)"

#: Per layer ``(c, h)``: memory cell (B, dim) and projected output (B, out_dim).
LstmState = tuple[tuple[torch.Tensor, torch.Tensor], ...]
#: The forward and the backward stacks' states of :meth:`ElmoModel.lm_embeddings`.
BiLstmState = tuple[LstmState, LstmState]


# --------------------------------------------------------------------------- options


@dataclass(frozen=True)
class ElmoOptions:
    """bilm-tf's ``options.json``, flattened. Optional keys take bilm-tf's defaults."""

    filters: tuple[tuple[int, int], ...]  # char_cnn.filters: (width, n_filters)
    char_dim: int  # char_cnn.embedding.dim
    n_highway: int  # char_cnn.n_highway (absent -> 0, as in bilm-tf)
    n_characters: int  # char_cnn.n_characters (262 at inference; the file holds one row less)
    max_characters_per_token: int  # char_cnn.max_characters_per_token, incl. BOW/EOW
    activation: str  # char_cnn.activation: relu or tanh
    lstm_dim: int  # lstm.dim: memory cell size
    projection_dim: int  # lstm.projection_dim: token embedding and projected output size
    n_layers: int = 1  # lstm.n_layers
    cell_clip: float | None = None  # lstm.cell_clip
    proj_clip: float | None = None  # lstm.proj_clip
    use_skip_connections: bool = False  # lstm.use_skip_connections

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @property
    def lstm_output_dim(self) -> int:
        """Output size of each LSTM layer: bilm-tf projects only when projection_dim < dim."""
        return self.projection_dim if self.projection_dim < self.lstm_dim else self.lstm_dim

    @property
    def uses_projection(self) -> bool:
        return self.projection_dim < self.lstm_dim

    @property
    def uses_cnn_projection(self) -> bool:
        """bilm-tf projects the CNN output only when its size differs from projection_dim."""
        return self.n_filters != self.projection_dim

    def surface_config(self) -> SurfaceConfig:
        return SurfaceConfig(char_dim=self.char_dim, filters=self.filters, n_highway=self.n_highway,
                             activation=self.activation)


def _get(section: Mapping[str, Any], key: str, where: str, path: Path, kind: type | tuple[type, ...],
         default: Any = ...) -> Any:
    if key not in section or section[key] is None:
        if default is not ...:
            return default
        raise CheckpointError(f"elmo options {path} lack the key {where}{key}; use the options.json shipped "
                              "with the weights")
    val = section[key]
    # bool is an int subclass: never accept it for a numeric key (and vice versa).
    ok = isinstance(val, kind) and (isinstance(val, bool) == (kind is bool))
    if not ok:
        raise CheckpointError(f"elmo options {path}: {where}{key}={val!r} has the wrong type; expected "
                              f"{getattr(kind, '__name__', kind)}")
    return val


def _section(values: Mapping[str, Any], key: str, path: Path) -> Mapping[str, Any]:
    sec = values.get(key)
    if not isinstance(sec, Mapping):
        raise CheckpointError(f"elmo options {path} lack the table {key!r}; use the options.json shipped with "
                              "the weights")
    return sec


def load_bilm_options(path: str | Path) -> ElmoOptions:
    """Read and check a bilm-tf ``options.json``."""
    path = Path(path)
    if path.exists():  # a FIFO would block the read: refused before it
        check_input_file(path, flag="--elmo-options", what="JSON options file")
    try:
        values = json.loads(decode_text(path.read_bytes(), path, what="elmo options file", error=CheckpointError))
    except FileNotFoundError as exc:
        raise ResourceMissingError(f"elmo options file {path} does not exist; check the path") from exc
    except json.JSONDecodeError as exc:
        raise CheckpointError(f"elmo options file {path} is not valid JSON: {exc}") from exc
    if not isinstance(values, Mapping):
        raise CheckpointError(f"elmo options file {path} must hold a JSON object, got {type(values).__name__}")
    cnn = _section(values, "char_cnn", path)
    lstm = _section(values, "lstm", path)
    emb = _section(cnn, "embedding", path)

    raw_filters = _get(cnn, "filters", "char_cnn.", path, list)
    filters: list[tuple[int, int]] = []
    for f in raw_filters:
        if not isinstance(f, list) or len(f) != 2 or not all(is_int(v) for v in f) or min(f) <= 0:
            raise CheckpointError(f"elmo options {path}: char_cnn.filters entry {f!r} must be [width, n_filters] "
                                  "with positive integers")
        filters.append((f[0], f[1]))
    if not filters:
        raise CheckpointError(f"elmo options {path}: char_cnn.filters is empty; a char-CNN needs filters")

    clip_kind = (int, float)
    cell_clip = lstm.get("cell_clip")
    proj_clip = lstm.get("proj_clip")
    opts = ElmoOptions(
        filters=tuple(filters),
        char_dim=_get(emb, "dim", "char_cnn.embedding.", path, int),
        n_highway=_get(cnn, "n_highway", "char_cnn.", path, int, 0),
        n_characters=_get(cnn, "n_characters", "char_cnn.", path, int),
        max_characters_per_token=_get(cnn, "max_characters_per_token", "char_cnn.", path, int),
        activation=_get(cnn, "activation", "char_cnn.", path, str),
        lstm_dim=_get(lstm, "dim", "lstm.", path, int),
        projection_dim=_get(lstm, "projection_dim", "lstm.", path, int),
        n_layers=_get(lstm, "n_layers", "lstm.", path, int, 1),
        cell_clip=None if cell_clip is None else float(_get(lstm, "cell_clip", "lstm.", path, clip_kind)),
        proj_clip=None if proj_clip is None else float(_get(lstm, "proj_clip", "lstm.", path, clip_kind)),
        use_skip_connections=_get(lstm, "use_skip_connections", "lstm.", path, bool, False),
    )
    if opts.activation not in _CNN_ACTIVATIONS:
        raise CheckpointError(f"elmo options {path}: char_cnn.activation={opts.activation!r} is not supported; "
                              f"bilm-tf uses one of {', '.join(_CNN_ACTIVATIONS)}")
    for name, val in (("char_cnn.embedding.dim", opts.char_dim), ("lstm.dim", opts.lstm_dim),
                      ("lstm.projection_dim", opts.projection_dim), ("lstm.n_layers", opts.n_layers)):
        if val <= 0:
            raise CheckpointError(f"elmo options {path}: {name}={val} must be positive")
    if opts.n_highway < 0:
        raise CheckpointError(f"elmo options {path}: char_cnn.n_highway={opts.n_highway} must be >= 0")
    if opts.n_characters not in (ELMO_N_CHARS - 1, ELMO_N_CHARS):
        # Training-time options say 261, inference-time 262 (the added zero row); nothing else
        # fits the byte charset.
        raise CheckpointError(f"elmo options {path}: char_cnn.n_characters={opts.n_characters} must be "
                              f"{ELMO_N_CHARS} (or {ELMO_N_CHARS - 1}) for bilm-tf byte characters")
    widest = max(w for w, _ in opts.filters)
    if opts.max_characters_per_token < max(widest, 3):
        raise CheckpointError(f"elmo options {path}: char_cnn.max_characters_per_token="
                              f"{opts.max_characters_per_token} must be at least {max(widest, 3)} "
                              "(the widest filter, and 3 for the <S>/</S> tokens)")
    if opts.uses_cnn_projection and opts.n_filters < opts.projection_dim:
        raise CheckpointError(f"elmo options {path}: {opts.n_filters} CNN filters cannot be projected up to "
                              f"lstm.projection_dim={opts.projection_dim}; bilm-tf only projects down")
    for name, clip in (("lstm.cell_clip", opts.cell_clip), ("lstm.proj_clip", opts.proj_clip)):
        if clip is not None and clip <= 0:
            raise CheckpointError(f"elmo options {path}: {name}={clip} must be positive (or absent)")
    return opts


# --------------------------------------------------------------------------- weights file


def _import_h5py() -> Any:
    try:
        return importlib.import_module("h5py")
    except ImportError as exc:
        raise ResourceMissingError(f"reading elmo weights needs the optional package h5py; {_INSTALL_HINT}") from exc


class _Weights:
    """Shape-checked reads from an open hdf5 file; errors name the dataset and both shapes."""

    def __init__(self, fin: Any, path: Path) -> None:
        self.fin = fin
        self.path = path

    def has(self, name: str) -> bool:
        return name in self.fin

    def read(self, name: str, shape: tuple[int, ...]) -> torch.Tensor:
        if name not in self.fin:
            raise ModelError(f"elmo weights {self.path} have no dataset {name!r} (expected shape {shape}); "
                             "use the options.json that came with these weights")
        ds = self.fin[name]
        got = tuple(getattr(ds, "shape", ()) or ())
        if got != shape:
            raise ModelError(f"elmo weights dataset {name!r} in {self.path} has shape {got} but the options "
                             f"imply {shape}; use the options.json that came with these weights")
        return torch.from_numpy(np.asarray(ds[...], dtype=np.float32))


def _open_weights(weights_path: str | Path) -> tuple[Any, Path]:
    h5py = _import_h5py()
    path = Path(weights_path)
    if not path.exists():
        raise ResourceMissingError(f"elmo weights file {path} does not exist; check the path")
    check_input_file(path, flag="--elmo-weights", what="hdf5 file")
    try:
        return h5py.File(path, "r"), path
    except OSError as exc:
        raise CheckpointError(f"elmo weights file {path} is not a readable hdf5 file: {exc}") from exc


# --------------------------------------------------------------------------- char encoder


def _fill_char_encoder(enc: SurfaceEncoder, options: ElmoOptions, w: _Weights) -> None:
    dim, n_f = options.char_dim, options.n_filters
    with torch.no_grad():
        # bilm-tf's file has no row for the mask id 0; it prepends a zero row at load time
        # (so do we: row 0 of char_emb is PAD, already zero and never updated).
        emb = w.read("char_embed", (ELMO_N_CHARS - 1, dim))
        enc.char_emb.weight.zero_()
        enc.char_emb.weight[1:] = emb
        for i, ((width, num), conv) in enumerate(zip(options.filters, enc.convs, strict=True)):
            assert isinstance(conv, nn.Conv1d) and conv.bias is not None
            kernel = w.read(f"CNN/W_cnn_{i}", (1, width, dim, num))  # TF conv2d: (1, width, in, out)
            conv.weight.copy_(kernel[0].permute(2, 1, 0))  # -> torch Conv1d: (out, in, width)
            conv.bias.copy_(w.read(f"CNN/b_cnn_{i}", (num,)))
        for k, hw in enumerate(enc.highways):
            assert isinstance(hw, Highway)
            scope = f"CNN_high_{k}"
            w_t = w.read(f"{scope}/W_transform", (n_f, n_f))  # TF: x @ W, (in, out)
            b_t = w.read(f"{scope}/b_transform", (n_f,))
            w_c = w.read(f"{scope}/W_carry", (n_f, n_f))
            b_c = w.read(f"{scope}/b_carry", (n_f,))
            # TF's "carry" gate c multiplies the *transform*: y = c*relu(.) + (1-c)*x. Our gate g
            # multiplies x, so g = 1 - c = sigmoid(-(W_c x + b_c)): negate weight and bias.
            hw.layer.weight[:n_f] = w_t.T
            hw.layer.bias[:n_f] = b_t
            hw.layer.weight[n_f:] = -w_c.T
            hw.layer.bias[n_f:] = -b_c
        if options.uses_cnn_projection:
            enc.proj.weight.copy_(w.read("CNN_proj/W_proj", (n_f, options.projection_dim)).T)
            enc.proj.bias.copy_(w.read("CNN_proj/b_proj", (options.projection_dim,)))
        else:
            # bilm-tf has no projection when the filters already have the right size.
            enc.proj.weight.copy_(torch.eye(n_f))
            enc.proj.bias.zero_()


def load_elmo_char_encoder(options: ElmoOptions, weights_path: str | Path) -> SurfaceEncoder:
    """bilm-tf's char-CNN (+ highways + projection) as our SurfaceEncoder with the exact weights.

    The encoder expects ``Charset.elmo_bytes(options.max_characters_per_token)`` ids; words are
    padded with the learned pad character, so no window is masked, exactly as in bilm-tf.
    """
    fin, path = _open_weights(weights_path)
    with fin:
        enc = _char_encoder_from(options, _Weights(fin, path))
    logger.debug("loaded elmo char encoder from %s", path)
    return enc


def _char_encoder_from(options: ElmoOptions, w: _Weights) -> SurfaceEncoder:
    # bilm-tf's highway transform is always relu, whatever the CNN activation.
    enc = SurfaceEncoder(options.surface_config(), n_chars=ELMO_N_CHARS, d=options.projection_dim,
                         highway_act="relu")
    _fill_char_encoder(enc, options, w)
    return enc


# --------------------------------------------------------------------------- forward LSTM


class ElmoForwardLstm(nn.Module):
    """bilm-tf's forward LSTM stack (TF ``LSTMCell`` with clipping and projection), stateful.

    Weights are stored as in TF but transposed to torch's (out, in) layout; gate order stays
    (i, j, f, o) and the forget bias is added at run time, so the parameters are the file's.
    """

    def __init__(self, input_dim: int, lstm_dim: int, projection_dim: int, n_layers: int = 1,
                 cell_clip: float | None = None, proj_clip: float | None = None,
                 use_skip_connections: bool = False, forget_bias: float = TF_FORGET_BIAS) -> None:
        super().__init__()
        self.input_dim = input_dim
        self.lstm_dim = lstm_dim
        self.use_projection = projection_dim < lstm_dim
        self.output_dim = projection_dim if self.use_projection else lstm_dim
        self.n_layers = n_layers
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = use_skip_connections
        self.forget_bias = forget_bias
        H, P = lstm_dim, self.output_dim
        in_dims = [input_dim] + [P] * (n_layers - 1)
        self.weight_ih = nn.ParameterList(nn.Parameter(torch.zeros(4 * H, d)) for d in in_dims)  # (4H, in)
        self.weight_hh = nn.ParameterList(nn.Parameter(torch.zeros(4 * H, P)) for _ in in_dims)  # (4H, P)
        self.bias = nn.ParameterList(nn.Parameter(torch.zeros(4 * H)) for _ in in_dims)  # (4H,)
        # (P, H) projection; an empty list when bilm-tf has none (projection_dim >= dim).
        self.weight_proj = nn.ParameterList(
            nn.Parameter(torch.zeros(P, H)) for _ in in_dims if self.use_projection
        )

    @classmethod
    def from_options(cls, options: ElmoOptions) -> ElmoForwardLstm:
        return cls(options.projection_dim, options.lstm_dim, options.projection_dim, options.n_layers,
                   options.cell_clip, options.proj_clip, options.use_skip_connections)

    def load_bilm_weights(self, w: _Weights, direction: int = 0) -> None:
        """Copy ``RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell/{W_0,B,W_P_0}``."""
        H, P = self.lstm_dim, self.output_dim
        with torch.no_grad():
            for k in range(self.n_layers):
                scope = f"RNN_{direction}/RNN/MultiRNNCell/Cell{k}/LSTMCell"
                n_in = self.weight_ih[k].shape[1]
                kernel = w.read(f"{scope}/W_0", (n_in + P, 4 * H))  # TF: [x, h_prev] @ W_0
                self.weight_ih[k].copy_(kernel[:n_in].T)
                self.weight_hh[k].copy_(kernel[n_in:].T)
                self.bias[k].copy_(w.read(f"{scope}/B", (4 * H,)))
                if self.use_projection:
                    self.weight_proj[k].copy_(w.read(f"{scope}/W_P_0", (H, P)).T)

    def initial_state(self, batch_size: int) -> LstmState:
        ref = self.bias[0]
        return tuple(
            (ref.new_zeros(batch_size, self.lstm_dim), ref.new_zeros(batch_size, self.output_dim))
            for _ in range(self.n_layers)
        )

    def _check_state(self, state: LstmState, batch: int) -> None:
        if len(state) != self.n_layers:
            raise ModelError(f"elmo lstm state has {counted(len(state), 'layer')}, the model {self.n_layers}; pass "
                             "the state this model returned (or None)")
        for c, h in state:
            if c.shape != (batch, self.lstm_dim) or h.shape != (batch, self.output_dim):
                raise ModelError(f"elmo lstm state shapes {tuple(c.shape)}/{tuple(h.shape)} do not fit batch size "
                                 f"{batch} (expected {(batch, self.lstm_dim)}/{(batch, self.output_dim)}); keep "
                                 "the batch size fixed across stateful calls or pass state=None")

    def forward(self, x: torch.Tensor, state: LstmState | None = None,
                lengths: torch.Tensor | None = None) -> tuple[list[torch.Tensor], LstmState]:
        """Run the stack over ``x`` (B, T, input_dim) from ``state`` (zeros if None).

        ``lengths`` (B,) marks the valid prefix of each row: steps past it output zeros and leave
        that row's state untouched, as ``tf.nn.dynamic_rnn(sequence_length=...)`` does, so the
        returned state is each row's state after its last real step.
        Returns the output of every layer, each (B, T, output_dim), and the new state.
        """
        if x.dim() != 3 or x.shape[2] != self.input_dim:
            raise ModelError(f"elmo lstm input has shape {tuple(x.shape)}; expected (batch, time, {self.input_dim})")
        B, T, _ = x.shape
        if state is None:
            state = self.initial_state(B)
        self._check_state(state, B)
        keep: torch.Tensor | None = None
        if lengths is not None:
            steps = torch.arange(T, device=x.device)
            keep = (steps.unsqueeze(0) < lengths.to(x.device).unsqueeze(1)).unsqueeze(-1)  # (B, T, 1)
        outputs: list[torch.Tensor] = []
        new_state: list[tuple[torch.Tensor, torch.Tensor]] = []
        layer_in = x
        for k in range(self.n_layers):
            out, (c, h) = self._layer(k, layer_in, state[k], keep)
            if self.use_skip_connections and k > 0:
                # TF ResidualWrapper on layers above the first: the output (not the state) gets the input.
                out = out + layer_in
                if keep is not None:
                    out = out * keep
            outputs.append(out)
            new_state.append((c, h))
            layer_in = out
        return outputs, tuple(new_state)

    def _layer(self, k: int, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor],
               keep: torch.Tensor | None) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        c, h = state  # (B, H), (B, P)
        w_hh = self.weight_hh[k]
        proj = self.weight_proj[k] if self.use_projection else None
        # Input contributions for all steps in one matmul; only the recurrence is a time loop.
        xw = F.linear(x, self.weight_ih[k], self.bias[k])  # (B, T, 4H)
        outs = []
        for t in range(x.shape[1]):
            z = xw[:, t] + h @ w_hh.T  # (B, 4H)
            i, j, f, o = z.chunk(4, dim=-1)  # TF order: input, candidate, forget, output
            c_new = torch.sigmoid(f + self.forget_bias) * c + torch.sigmoid(i) * torch.tanh(j)
            if self.cell_clip is not None:
                c_new = c_new.clamp(-self.cell_clip, self.cell_clip)
            m = torch.sigmoid(o) * torch.tanh(c_new)  # (B, H)
            if proj is not None:
                m = m @ proj.T  # (B, P)
                if self.proj_clip is not None:
                    m = m.clamp(-self.proj_clip, self.proj_clip)
            if keep is not None:
                kt = keep[:, t]  # (B, 1)
                c = torch.where(kt, c_new, c)
                h = torch.where(kt, m, h)
                m = m * kt
            else:
                c, h = c_new, m
            outs.append(m)
        out = torch.stack(outs, dim=1) if outs else x.new_zeros(x.shape[0], 0, self.output_dim)
        return out, (c, h)


# --------------------------------------------------------------------------- whole model


class ElmoModel(nn.Module):
    """Char encoder + forward LSTM of a bilm-tf ELMo, run over sentences statefully."""

    def __init__(self, options: ElmoOptions, char_encoder: SurfaceEncoder, lstm: ElmoForwardLstm,
                 backward: ElmoForwardLstm | None = None) -> None:
        super().__init__()
        self.options = options
        self.char_encoder = char_encoder
        self.lstm = lstm
        #: bilm-tf's backward stack (``RNN_1``); None when the weights file holds the forward one only.
        self.backward = backward
        self.charset = Charset.elmo_bytes(options.max_characters_per_token)

    @classmethod
    def from_files(cls, options_json: str | Path, weights_hdf5: str | Path) -> ElmoModel:
        options = load_bilm_options(options_json)
        fin, path = _open_weights(weights_hdf5)
        with fin:
            w = _Weights(fin, path)
            enc = _char_encoder_from(options, w)
            lstm = ElmoForwardLstm.from_options(options)
            lstm.load_bilm_weights(w, direction=0)
            backward = None
            if w.has("RNN_1"):
                backward = ElmoForwardLstm.from_options(options)
                backward.load_bilm_weights(w, direction=1)
        logger.debug("loaded elmo (%d lstm layers, dim %d, proj %d, %s) from %s", options.n_layers,
                     options.lstm_dim, options.projection_dim,
                     "both directions" if backward is not None else "forward only", path)
        return cls(options, enc, lstm, backward)

    def encode_tokens(self, tokens: Sequence[str]) -> torch.Tensor:
        """Char-CNN embeddings of ``tokens`` (no sentence markers added).  -> (N, d)"""
        dev = self.lstm.bias[0].device
        chars = torch.from_numpy(self.charset.encode(list(tokens))).to(dev)  # (N, L)
        return self.char_encoder(chars)

    def forward_sentences(self, sentences: Sequence[Sequence[str]], state: LstmState | None = None,
                          ) -> tuple[list[torch.Tensor], LstmState]:
        """Run one batch: sentence ``b`` continues stream ``b`` of ``state`` (zeros if None).

        Each sentence is wrapped in ``<S>``/``</S>`` as bilm-tf's Batcher does (a literal ``<S>``
        token inside a sentence is encoded as the boundary token too, as bilm-tf's vocabulary
        lookup does). Returns, per sentence, a (1 + n_layers, T_b, d) tensor: the char-CNN token
        embeddings then each forward LSTM layer, with the boundary positions dropped (bilm-tf's
        ``lm_embeddings``, forward half), and the state to pass to the next call.
        """
        if isinstance(sentences, str) or not all(
            not isinstance(s, str) and all(isinstance(t, str) for t in s) for s in sentences
        ):
            raise InputError("elmo sentences must be a list of token lists (e.g. [['Hello', '.']]), not strings; "
                             "split each sentence into tokens first")
        B = len(sentences)
        if B == 0:
            return [], state if state is not None else self.lstm.initial_state(0)
        x, lengths = self._embedded_batch(sentences)
        layers, new_state = self.lstm(x, state, torch.tensor(lengths, device=x.device))
        stacked = torch.stack([x, *layers], dim=1)  # (B, 1 + n_layers, T, d)
        out = [stacked[b, :, 1 : n - 1] for b, n in enumerate(lengths)]
        return out, new_state

    def _embedded_batch(self, sentences: Sequence[Sequence[str]]) -> tuple[torch.Tensor, list[int]]:
        """The char-CNN embeddings of the sentences with ``<S>``/``</S>``, zero-padded: (B, T, d), lengths."""
        B = len(sentences)
        lengths = [len(s) + 2 for s in sentences]  # + <S> and </S>
        T = max(lengths)
        flat = [tok for s in sentences for tok in (ELMO_BOS_TOKEN, *s, ELMO_EOS_TOKEN)]
        emb = self.encode_tokens(flat)  # (N, d), N = sum(lengths)
        # Scatter the flat token rows into a zero-padded (B, T, d) batch.
        rows = np.repeat(np.arange(B), lengths)
        cols = np.concatenate([np.arange(n) for n in lengths])
        x = emb.new_zeros(B * T, emb.shape[1])
        x = x.index_copy(0, torch.from_numpy(rows * T + cols).to(emb.device), emb).view(B, T, -1)
        return x, lengths

    def lm_embeddings(self, sentences: Sequence[Sequence[str]], state: BiLstmState | None = None,
                      ) -> tuple[list[torch.Tensor], BiLstmState]:
        """bilm-tf's ``lm_embeddings`` of one batch: per sentence (1 + n_layers, T_b, 2 * d).

        Layer 0 is the char-CNN embedding twice (``[e; e]``), layer j the forward and the backward
        outputs of LSTM layer j side by side, boundary positions dropped. The backward stack reads
        each sentence (with ``<S>``/``</S>``) right to left (``tf.reverse_sequence`` within its
        length) and, like the forward one, carries its state per stream from batch to batch.
        """
        if self.backward is None:
            raise ModelError("these elmo weights hold no backward LSTM (RNN_1); lm_embeddings needs both "
                             "directions — use forward_sentences for the forward half")
        if isinstance(sentences, str) or not all(
            not isinstance(s, str) and all(isinstance(t, str) for t in s) for s in sentences
        ):
            raise InputError("elmo sentences must be a list of token lists (e.g. [['Hello', '.']]), not strings; "
                             "split each sentence into tokens first")
        fwd_state, bwd_state = state if state is not None else (None, None)
        if not sentences:
            return [], (fwd_state or self.lstm.initial_state(0), bwd_state or self.backward.initial_state(0))
        x, lengths = self._embedded_batch(sentences)
        B, T, _ = x.shape
        len_t = torch.tensor(lengths, device=x.device)
        fwd, fwd_state = self.lstm(x, fwd_state, len_t)
        # Position t of row b reads position n_b - 1 - t (padding stays where it is).
        steps = torch.arange(T, device=x.device).unsqueeze(0)  # (1, T)
        rev = torch.where(steps < len_t.unsqueeze(1), len_t.unsqueeze(1) - 1 - steps, steps)  # (B, T)
        gather = rev.unsqueeze(-1).expand(B, T, x.shape[2])
        bwd_rev, bwd_state = self.backward(x.gather(1, gather), bwd_state, len_t)
        bwd = [h.gather(1, rev.unsqueeze(-1).expand_as(h)) for h in bwd_rev]  # back to reading order
        layers = [torch.cat([x, x], dim=-1)] + [torch.cat([f, b], dim=-1) for f, b in zip(fwd, bwd, strict=True)]
        stacked = torch.stack(layers, dim=1)  # (B, 1 + n_layers, T, 2d)
        return [stacked[b, :, 1 : n - 1] for b, n in enumerate(lengths)], (fwd_state, bwd_state)


# --------------------------------------------------------------------------- into our prefix


def elmo_prefix_compatible(options: ElmoOptions, prefix_cfg: PrefixConfig, d: int) -> bool:
    """Whether ELMo's forward LSTM fits :class:`polyglot_groc.model.prefix.LSTMPrefix` of this config.

    ``LSTMPrefix`` builds ``nn.LSTM(sizes[k], sizes[k + 1])`` with sizes ``[d, hidden, ..., hidden,
    d]`` and no ``proj_size``; ELMo's layer k is an LSTM of ``lstm.dim`` units from its input
    (``projection_dim`` for the first layer) to its output. So the layer counts must agree, ELMo
    must not project (``projection_dim >= dim``: true of none of the published models, which
    project 4096 -> 512), its output must be our ``d`` (and so must its token embedding), the
    prefix's ``hidden`` must be ELMo's dim, and ELMo must not use skip connections (the prefix
    has none). :func:`copy_forward_lstm_into` also accepts hand-built ``proj_size`` layers.
    """
    if options.use_skip_connections or prefix_cfg.n_layers != options.n_layers or options.uses_projection:
        return False
    sizes = [d] + [prefix_cfg.hidden] * (prefix_cfg.n_layers - 1) + [d]  # LSTMPrefix's layer sizes
    elmo_in = [options.projection_dim] + [options.lstm_output_dim] * (options.n_layers - 1)
    prefix_shapes = [(sizes[k], sizes[k + 1]) for k in range(prefix_cfg.n_layers)]
    elmo_shapes = [(n_in, options.lstm_dim) for n_in in elmo_in]
    return prefix_shapes == elmo_shapes


def copy_forward_lstm_into(prefix_lstm_layers: Sequence[nn.LSTM], lstm: ElmoForwardLstm) -> None:
    """Copy ELMo's forward LSTM into single-layer ``torch.nn.LSTM`` modules, one per ELMo layer.

    Gates are reordered from TF's (i, j, f, o) to torch's (i, f, g, o) and TF's run-time forget
    bias is folded into ``bias_ih``. Approximation: torch's LSTM cannot clip, so ``cell_clip``
    and ``proj_clip`` are dropped; outputs agree exactly while no clip is reached and drift
    apart where ELMo would have clipped.
    """
    if len(prefix_lstm_layers) != lstm.n_layers:
        raise ModelError(f"the prefix has {len(prefix_lstm_layers)} lstm layers but elmo has {lstm.n_layers}; "
                         f"set model.prefix.n_layers={lstm.n_layers}")
    H, P = lstm.lstm_dim, lstm.output_dim
    proj = P if lstm.use_projection else 0
    for k, layer in enumerate(prefix_lstm_layers):
        n_in = lstm.weight_ih[k].shape[1]
        got = (layer.input_size, layer.hidden_size, layer.proj_size, layer.num_layers, layer.bidirectional,
               layer.bias)
        want = (n_in, H, proj, 1, False, True)
        if got != want:
            raise ModelError(f"prefix layer {k} is nn.LSTM(input_size, hidden_size, proj_size, num_layers, "
                             f"bidirectional, bias)={got} but elmo needs {want}; build the prefix to match")
    if lstm.use_skip_connections:
        raise ModelError("elmo uses skip connections, which the prefix lstm stack lacks; it cannot be copied")
    if lstm.cell_clip is not None or lstm.proj_clip is not None:
        logger.info("copying elmo lstm without its cell_clip=%s/proj_clip=%s: torch's LSTM does not clip",
                    lstm.cell_clip, lstm.proj_clip)
    # TF blocks (i, j, f, o) -> torch blocks (i, f, g=j, o).
    order = torch.cat([torch.arange(b * H, (b + 1) * H) for b in (0, 2, 1, 3)])
    with torch.no_grad():
        for k, layer in enumerate(prefix_lstm_layers):
            bias = lstm.bias[k].clone()
            bias[2 * H : 3 * H] += lstm.forget_bias  # fold TF's run-time forget bias
            _lstm_param(layer, "weight_ih_l0").copy_(lstm.weight_ih[k][order])
            _lstm_param(layer, "weight_hh_l0").copy_(lstm.weight_hh[k][order])
            _lstm_param(layer, "bias_ih_l0").copy_(bias[order])
            _lstm_param(layer, "bias_hh_l0").zero_()
            if lstm.use_projection:
                _lstm_param(layer, "weight_hr_l0").copy_(lstm.weight_proj[k])


def _lstm_param(layer: nn.LSTM, name: str) -> torch.Tensor:
    # nn.LSTM registers its weights by name at run time; typed access for mypy.
    param = getattr(layer, name)
    assert isinstance(param, torch.Tensor)
    return param


__all__ = [
    "BiLstmState",
    "ElmoForwardLstm",
    "ElmoModel",
    "ElmoOptions",
    "LstmState",
    "copy_forward_lstm_into",
    "elmo_prefix_compatible",
    "load_bilm_options",
    "load_elmo_char_encoder",
]
