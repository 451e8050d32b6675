"""A small biaffine dependency parser on frozen features (Dozat & Manning 2017), the parsing probe of seed 004 ch. 3.

Input per word: either frozen contextual layers (L, D) mixed by a learned ScalarMix (softmax
weights and a scale γ, as AllenNLP's), or a learned word embedding (the no-LM baseline). A
learned ROOT vector is prepended; a BiLSTM encodes the sentence; an arc MLP and a label MLP
(ReLU) feed a biaffine arc scorer ``s[h, d] = dep_d U head_h + head_h · u`` and a bilinear label
scorer on (dependent, head) pairs. Training: cross-entropy of the gold head of each word and of
its gold relation at the gold head; batches hold as many source as target sentences (target
sentences are drawn again when there are few: seed 004 A.3's stratified sampling). Testing: the
best single-root tree by Chu-Liu/Edmonds (:mod:`polyglot_groc.contextual.mst`), relations by
argmax at the predicted heads. Scores as the CoNLL 2018 script: every syntactic word counts
(punctuation too), relations without subtypes.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from groc_base.errors import InputError
from groc_base.wording import counted
from polyglot_groc.config import check_ranges, ranged
from polyglot_groc.contextual.mst import decode_mst
from polyglot_groc.contextual.treebank import Sentence, universal_relation

log = logging.getLogger(__name__)

__all__ = ["BiaffineParser", "ParserConfig", "ScalarMix", "attachment_scores", "parse", "train_parser"]


@dataclass(frozen=True)
class ParserConfig:
    """The probe's sizes and training budget (small: the probe is trained many times on CPU)."""

    lstm_hidden: int = ranged(128, 1, 4096)  # per direction
    lstm_layers: int = ranged(1, 1, 8)
    arc_mlp: int = ranged(128, 1, 4096)
    label_mlp: int = ranged(64, 1, 4096)
    word_dim: int = ranged(100, 1, 4096)  # the no-LM baseline's embeddings
    dropout: float = ranged(0.3, 0.0, 1.0, hi_open=True)
    lr: float = ranged(2e-3, 0.0, 10.0, lo_open=True)
    epochs: int = ranged(4, 1, 10_000)
    batch_size: int = ranged(32, 1, 100_000)  # sentences; half source, half target when there is a target
    clip: float = ranged(5.0, 0.0, 1e6, lo_open=True)
    #: ScalarMix: RMS-normalise each layer before mixing (see :class:`ScalarMix`). Off by default, as
    #: AllenNLP's ``do_layer_norm``: at the benchmark's budget (150 parser steps) the raw states trained
    #: a better probe (es test LAS 13.1 vs 4.7 with 800 EWT + 100 es trees, one seed).
    normalize_layers: bool = False

    def check(self) -> ParserConfig:
        """``self`` if every value lies in its declared range (config.check_ranges, the one place
        ranges are checked), else one ConfigError naming ``parser.<key>``."""
        check_ranges(self, "parser.")
        return self


class ScalarMix(nn.Module):
    """``gamma * sum_j softmax(w)_j h_j`` (AllenNLP's ScalarMix).

    ``normalize``: each layer's vector is divided by its root mean square first (AllenNLP's
    ``do_layer_norm`` in spirit; an RMS rather than a mean/variance norm, so that a layer mapped by an
    orthogonal W(j) is normalised exactly as before the map). Raw LM states can be large (char-CNN
    outputs of norm ~90 in the benchmark's LMs).
    """

    def __init__(self, n_layers: int, normalize: bool = False) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(()))
        self.normalize = normalize

    def forward(self, layers: torch.Tensor) -> torch.Tensor:  # (B, T, L, D) -> (B, T, D)
        if self.normalize:
            layers = layers * torch.rsqrt(layers.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.gamma * torch.einsum("btld,l->btd", layers, F.softmax(self.weights, dim=0))


class BiaffineParser(nn.Module):
    """Arc and label scores of padded sentences; ``features`` (B, T, L, D) or ``word_ids`` (B, T)."""

    def __init__(self, cfg: ParserConfig, n_labels: int, n_layers: int = 0, feature_dim: int = 0,
                 n_words: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        if (n_layers > 0) == (n_words > 0):
            raise InputError("a parser reads either features (n_layers, feature_dim) or words (n_words)")
        self.mix = ScalarMix(n_layers, cfg.normalize_layers) if n_layers else None
        self.words = nn.Embedding(n_words, cfg.word_dim) if n_words else None
        dim = feature_dim if n_layers else cfg.word_dim
        self.root = nn.Parameter(torch.randn(dim) * 0.1)
        self.drop = nn.Dropout(cfg.dropout)
        self.lstm = nn.LSTM(dim, cfg.lstm_hidden, num_layers=cfg.lstm_layers, batch_first=True, bidirectional=True,
                            dropout=cfg.dropout if cfg.lstm_layers > 1 else 0.0)
        enc = 2 * cfg.lstm_hidden
        self.arc_dep = nn.Linear(enc, cfg.arc_mlp)
        self.arc_head = nn.Linear(enc, cfg.arc_mlp)
        self.lab_dep = nn.Linear(enc, cfg.label_mlp)
        self.lab_head = nn.Linear(enc, cfg.label_mlp)
        self.arc_U = nn.Parameter(torch.zeros(cfg.arc_mlp, cfg.arc_mlp))
        self.arc_u = nn.Parameter(torch.zeros(cfg.arc_mlp))
        self.lab_U = nn.Parameter(torch.zeros(n_labels, cfg.label_mlp, cfg.label_mlp))
        self.lab_W = nn.Linear(2 * cfg.label_mlp, n_labels)

    def encode(self, inputs: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B, T, L, D) features or (B, T) ids, lengths (B,) -> (B, 1 + T, 2H) with ROOT at 0."""
        if self.mix is not None:
            x = self.mix(inputs)  # (B, T, D)
        else:
            assert self.words is not None
            x = self.words(inputs)  # (B, T, E)
        root = self.root.expand(x.shape[0], 1, -1)
        x = self.drop(torch.cat([root, x], dim=1))  # (B, 1 + T, D)
        packed = nn.utils.rnn.pack_padded_sequence(x, (lengths + 1).cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.lstm(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        return self.drop(h)

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Arc scores (B, 1+T, 1+T) as ``[b, head, dep]`` (padding heads at -inf), and the label MLP outputs."""
        h = self.encode(inputs, lengths)
        dep = self.drop(F.relu(self.arc_dep(h)))  # (B, N, A)
        head = self.drop(F.relu(self.arc_head(h)))  # (B, N, A)
        arcs = torch.einsum("bha,ac,bdc->bhd", head, self.arc_U, dep) + (head @ self.arc_u).unsqueeze(-1)
        n = h.shape[1]
        valid = torch.arange(n, device=h.device).unsqueeze(0) <= lengths.unsqueeze(1)  # (B, N) incl. ROOT
        arcs = arcs.masked_fill(~valid.unsqueeze(2), -math.inf)
        ldep = self.drop(F.relu(self.lab_dep(h)))  # (B, N, M)
        lhead = self.drop(F.relu(self.lab_head(h)))  # (B, N, M)
        return arcs, ldep, lhead

    def label_scores(self, ldep: torch.Tensor, lhead: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """Relation scores of each word (positions 1..T) at ``heads`` (B, T).  -> (B, T, n_labels)"""
        d = ldep[:, 1:]  # (B, T, M)
        hh = lhead.gather(1, heads.unsqueeze(-1).expand(-1, -1, lhead.shape[-1]))  # (B, T, M)
        bil = torch.einsum("btm,lmn,btn->btl", d, self.lab_U, hh)
        return bil + self.lab_W(torch.cat([d, hh], dim=-1))

    def loss(self, inputs: torch.Tensor, lengths: torch.Tensor, heads: torch.Tensor, labels: torch.Tensor
             ) -> torch.Tensor:
        """Mean arc + label cross-entropy over the real words; heads/labels (B, T), -1 on padding."""
        arcs, ldep, lhead = self(inputs, lengths)
        mask = heads >= 0  # (B, T)
        arc_logits = arcs[:, :, 1:].transpose(1, 2)  # (B, T, N): each word's head scores
        arc_loss = F.cross_entropy(arc_logits[mask], heads[mask])
        lab = self.label_scores(ldep, lhead, heads.clamp(min=0))
        lab_loss = F.cross_entropy(lab[mask], labels[mask])
        return arc_loss + lab_loss


@dataclass(frozen=True)
class _Data:
    inputs: list[np.ndarray]  # per sentence: (L, T, D) features or (T,) word ids
    heads: list[np.ndarray]  # (T,) int
    labels: list[np.ndarray]  # (T,) int


def _batch(data: _Data, rows: Sequence[int], device: torch.device) -> tuple[torch.Tensor, ...]:
    lengths = torch.tensor([len(data.heads[i]) for i in rows])
    T = int(lengths.max())
    first = data.inputs[rows[0]]
    if first.ndim == 3:  # features: (L, T, D) -> (B, T, L, D)
        x = np.zeros((len(rows), T, first.shape[0], first.shape[2]), dtype=np.float32)
        for b, i in enumerate(rows):
            x[b, : lengths[b]] = data.inputs[i].transpose(1, 0, 2)
        inputs = torch.from_numpy(x)
    else:
        ids = np.zeros((len(rows), T), dtype=np.int64)
        for b, i in enumerate(rows):
            ids[b, : lengths[b]] = data.inputs[i]
        inputs = torch.from_numpy(ids)
    heads = torch.full((len(rows), T), -1, dtype=torch.long)
    labels = torch.full((len(rows), T), -1, dtype=torch.long)
    for b, i in enumerate(rows):
        heads[b, : lengths[b]] = torch.from_numpy(data.heads[i])
        labels[b, : lengths[b]] = torch.from_numpy(data.labels[i])
    return inputs.to(device), lengths.to(device), heads.to(device), labels.to(device)


def _data(sentences: Sequence[Sentence], inputs: Sequence[np.ndarray], label_index: dict[str, int]) -> _Data:
    if len(sentences) != len(inputs):
        raise InputError(f"{counted(len(sentences), 'tree')} but {counted(len(inputs), 'feature array')}; extract "
                         "features from the "
                         "same CoNLL-U file")
    for s, x in zip(sentences, inputs, strict=True):
        n = x.shape[1] if x.ndim == 3 else x.shape[0]
        if n != len(s.words):
            raise InputError(f"a tree has {counted(len(s.words), 'word')} but its features {counted(n, 'token')}; "
                             "extract features from "
                             "the same CoNLL-U file (syntactic words)")
    heads = [np.asarray(s.heads, dtype=np.int64) for s in sentences]
    labels = [np.asarray([label_index.get(universal_relation(r), 0) for r in s.deprels], dtype=np.int64)
              for s in sentences]
    return _Data(list(inputs), heads, labels)


@dataclass
class TrainedParser:
    """A trained probe and what it needs to parse."""

    model: BiaffineParser
    labels: list[str]
    vocab: dict[str, int] | None  # the baseline's word ids (0 = unknown)


def word_inputs(sentences: Sequence[Sentence], vocab: dict[str, int]) -> list[np.ndarray]:
    """Word ids for the no-LM baseline (lowercased; 0 for unknown words)."""
    return [np.asarray([vocab.get(w.lower(), 0) for w in s.words], dtype=np.int64) for s in sentences]


def build_vocab(sentences: Sequence[Sentence], min_count: int = 2) -> dict[str, int]:
    from collections import Counter

    counts = Counter(w.lower() for s in sentences for w in s.words)
    return {w: i + 1 for i, w in enumerate(w for w, c in counts.most_common() if c >= min_count)}


def train_parser(source: Sequence[Sentence], source_inputs: Sequence[np.ndarray] | None,
                 target: Sequence[Sentence] = (), target_inputs: Sequence[np.ndarray] | None = None, *,
                 cfg: ParserConfig | None = None, seed: int = 0, device: str = "cpu") -> TrainedParser:
    """Train the probe on ``source`` (and ``target``, mixed half and half in every batch).

    ``*_inputs``: per sentence float32 (L, T, D) layers; ``None`` for both: the no-LM baseline
    (word embeddings learned from the training words seen twice or more).
    """
    cfg = (cfg or ParserConfig()).check()
    if not source:
        raise InputError("the parser needs source training trees")
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    dev = torch.device(device)
    labels = sorted({universal_relation(r) for s in (*source, *target) for r in s.deprels})
    label_index = {r: i for i, r in enumerate(labels)}
    vocab = None
    if source_inputs is None:
        vocab = build_vocab([*source, *target])
        source_inputs = word_inputs(source, vocab)
        target_inputs = word_inputs(target, vocab)
        model = BiaffineParser(cfg, len(labels), n_words=len(vocab) + 1)
    else:
        first = source_inputs[0]
        model = BiaffineParser(cfg, len(labels), n_layers=first.shape[0], feature_dim=first.shape[2])
    model.to(dev)
    src = _data(source, source_inputs, label_index)
    tgt = _data(target, target_inputs or [], label_index) if target else None
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr, betas=(0.9, 0.9))
    half = cfg.batch_size // 2 if tgt is not None else cfg.batch_size
    model.train()
    for epoch in range(cfg.epochs):
        order = rng.permutation(len(source))
        total, n = 0.0, 0
        for start in range(0, len(order), max(half, 1)):
            rows = [int(i) for i in order[start : start + half]]
            parts = [_batch(src, rows, dev)]
            if tgt is not None:  # as many target sentences, drawn with replacement when there are few
                trows = [int(i) for i in rng.choice(len(target), size=len(rows), replace=len(target) < len(rows))]
                parts.append(_batch(tgt, trows, dev))
            opt.zero_grad(set_to_none=True)
            loss = sum(model.loss(*p) for p in parts) / len(parts)
            assert isinstance(loss, torch.Tensor)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            opt.step()
            total += float(loss.detach())
            n += 1
        log.info("parser epoch %d: loss %.4f", epoch + 1, total / max(n, 1))
    model.eval()
    return TrainedParser(model, labels, vocab)


def parse(parser: TrainedParser, sentences: Sequence[Sentence], inputs: Sequence[np.ndarray] | None = None,
          batch_size: int = 64) -> list[tuple[np.ndarray, list[str]]]:
    """Predicted (heads, relations) per sentence: the best single-root tree, relations at its heads."""
    model = parser.model
    dev = next(model.parameters()).device
    if inputs is None:
        if parser.vocab is None:
            raise InputError("this parser reads features; pass them")
        inputs = word_inputs(sentences, parser.vocab)
    data = _data(sentences, inputs, {r: i for i, r in enumerate(parser.labels)})
    out: list[tuple[np.ndarray, list[str]]] = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(sentences), batch_size):
            rows = list(range(start, min(start + batch_size, len(sentences))))
            x, lengths, _, _ = _batch(data, rows, dev)
            arcs, ldep, lhead = model(x, lengths)
            logp = F.log_softmax(arcs, dim=1).cpu().numpy()  # each dependent's distribution over heads
            pred = torch.zeros(len(rows), int(lengths.max()), dtype=torch.long)
            for b in range(len(rows)):
                n = int(lengths[b])
                pred[b, :n] = torch.from_numpy(decode_mst(logp[b, : n + 1, : n + 1]))
            lab = model.label_scores(ldep, lhead, pred.to(dev)).argmax(-1).cpu().numpy()
            for b in range(len(rows)):
                n = int(lengths[b])
                out.append((pred[b, :n].numpy(), [parser.labels[k] for k in lab[b, :n]]))
    return out


def attachment_scores(gold: Sequence[Sentence], predicted: Sequence[tuple[Sequence[int] | np.ndarray, Sequence[str]]]
                      ) -> dict[str, float]:
    """UAS and LAS (percent) as the CoNLL 2018 script on gold words: every word, relations without subtypes."""
    if len(gold) != len(predicted):
        raise InputError(f"{len(gold)} gold trees but {len(predicted)} predicted")
    words = heads_ok = both_ok = 0
    for g, (ph, pr) in zip(gold, predicted, strict=True):
        if len(ph) != len(g.heads):
            raise InputError("a predicted tree has another number of words than its gold tree")
        for gh, gr, h, r in zip(g.heads, g.deprels, ph, pr, strict=True):
            words += 1
            if int(h) == gh:
                heads_ok += 1
                both_ok += universal_relation(r) == universal_relation(gr)
    return {"uas": 100.0 * heads_ok / max(words, 1), "las": 100.0 * both_ok / max(words, 1), "words": words}
