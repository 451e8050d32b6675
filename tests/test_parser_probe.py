"""The parsing probe: Chu-Liu/Edmonds against brute force, the biaffine parser's gradients, LAS on a toy
treebank, CoNLL 2018-style scores, and the probe workflow's checks."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from groc_base.errors import InputError
from polyglot_groc.contextual.mst import chu_liu_edmonds, decode_mst, tree_score
from polyglot_groc.contextual.parser import (
    BiaffineParser,
    ParserConfig,
    ScalarMix,
    attachment_scores,
    parse,
    train_parser,
)
from polyglot_groc.contextual.probe import probe
from polyglot_groc.contextual.treebank import Sentence


def _is_tree(heads: tuple[int, ...]) -> bool:
    for d in range(1, len(heads) + 1):
        seen, v = set(), d
        while v != 0:
            if v in seen:
                return False
            seen.add(v)
            v = heads[v - 1]
    return True


def test_mst_matches_brute_force_on_small_graphs() -> None:
    rng = np.random.default_rng(0)
    for _ in range(150):
        n = int(rng.integers(1, 6))
        s = rng.normal(size=(n + 1, n + 1))
        best_any = best_one = -np.inf
        for h in itertools.product(range(n + 1), repeat=n):
            if any(h[i] == i + 1 for i in range(n)) or not _is_tree(h):
                continue
            score = sum(s[h[i], i + 1] for i in range(n))
            best_any = max(best_any, score)
            if sum(x == 0 for x in h) == 1:
                best_one = max(best_one, score)
        got = decode_mst(s)
        assert sum(got == 0) == 1 and _is_tree(tuple(int(x) for x in got))
        assert tree_score(s, np.r_[-1, got]) == pytest.approx(best_one)
        assert tree_score(s, chu_liu_edmonds(s)) == pytest.approx(best_any)


def test_scalar_mix_and_parser_gradients() -> None:
    torch.manual_seed(0)
    mix = ScalarMix(3)
    layers = torch.randn(2, 4, 3, 5)
    assert torch.allclose(mix(layers), layers.mean(2), atol=1e-6)  # zero weights: the average, gamma 1
    # RMS normalisation: invariant to each vector's scale and to an orthogonal map of a layer.
    normed = ScalarMix(3, normalize=True)
    q, _ = torch.linalg.qr(torch.randn(5, 5))
    scaled = layers * torch.tensor([1.0, 50.0, 0.1]).view(1, 1, 3, 1)
    assert torch.allclose(normed(scaled), normed(layers), atol=1e-3)
    assert torch.allclose(normed(layers @ q.T), normed(layers) @ q.T, atol=1e-5)
    cfg = ParserConfig(lstm_hidden=8, arc_mlp=6, label_mlp=4, dropout=0.0)
    parser = BiaffineParser(cfg, n_labels=3, n_layers=3, feature_dim=5)
    lengths = torch.tensor([4, 2])
    heads = torch.tensor([[2, 0, 2, 3], [0, 1, -1, -1]])
    labels = torch.tensor([[0, 1, 2, 0], [1, 2, -1, -1]])
    arcs, _, _ = parser(layers, lengths)
    assert arcs.shape == (2, 5, 5) and torch.isinf(arcs[1, 3:, :]).all()  # padding heads masked
    parser.loss(layers, lengths, heads, labels).backward()
    for name, p in parser.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert mix is not parser.mix and parser.mix is not None and parser.mix.weights.grad.abs().sum() > 0


def _toy_treebank(n: int, rng: np.random.Generator) -> list[Sentence]:
    """'the ADJ NOUN VERB the NOUN .': a fixed shape with varying words."""
    adjs, nouns, verbs = ["big", "small", "old"], ["cat", "dog", "bird", "fish"], ["sees", "likes", "feeds"]
    out = []
    for _ in range(n):
        words = ("the", str(rng.choice(adjs)), str(rng.choice(nouns)), str(rng.choice(verbs)), "the",
                 str(rng.choice(nouns)), ".")
        out.append(Sentence(words, (3, 3, 4, 0, 6, 4, 4), ("det", "amod", "nsubj", "root", "det", "obj", "punct")))
    return out


def test_parser_learns_a_toy_treebank() -> None:
    rng = np.random.default_rng(0)
    train, test = _toy_treebank(60, rng), _toy_treebank(10, rng)
    cfg = ParserConfig(lstm_hidden=32, arc_mlp=32, label_mlp=16, word_dim=16, epochs=15, batch_size=8, lr=5e-3)
    parser = train_parser(train, None, cfg=cfg, seed=0)  # the no-LM baseline: learned word embeddings
    scores = attachment_scores(test, parse(parser, test))
    assert scores["words"] == 70 and scores["las"] >= 95.0 and scores["uas"] >= scores["las"]
    # Features: one-hot word identity as a 2-layer "LM" (layer 1 = identity, layer 0 = noise).
    vocab = {w: i for i, w in enumerate(sorted({w for s in train + test for w in s.words}))}

    def feats(trees: list[Sentence]) -> list[np.ndarray]:
        out = []
        for s in trees:
            x = np.zeros((2, len(s.words), len(vocab)), np.float32)
            x[0] = rng.normal(size=x[0].shape)
            x[1, np.arange(len(s.words)), [vocab[w] for w in s.words]] = 1.0
            out.append(x)
        return out

    res = probe(source=train[:40], target=train[40:], test=test, source_features=feats(train[:40]),
                target_features=feats(train[40:]), test_features=feats(test), n_target=10, seed=1, config=cfg)
    assert res.n_target == 10 and res.las >= 95.0 and res.mix is not None and len(res.mix) == 2


def test_attachment_scores_as_conll_2018() -> None:
    gold = [Sentence(("a", "b", "."), (2, 0, 2), ("nsubj:pass", "root", "punct"))]
    # Subtypes are stripped; punctuation counts.
    assert attachment_scores(gold, [([2, 0, 2], ["nsubj", "root", "punct"])]) == {"uas": 100.0, "las": 100.0,
                                                                                  "words": 3}
    s = attachment_scores(gold, [([2, 0, 1], ["obj", "root", "punct"])])
    assert s["uas"] == pytest.approx(200 / 3) and s["las"] == pytest.approx(100 / 3)
    with pytest.raises(InputError):
        attachment_scores(gold, [])


def test_probe_checks_its_inputs(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    trees = _toy_treebank(5, rng)
    with pytest.raises(InputError, match="features for the source"):
        probe(source=trees, test=trees, source_features=[np.zeros((2, 7, 3), np.float32)] * 5)
    with pytest.raises(InputError, match="pool has 0"):
        probe(source=trees, test=trees, n_target=3)
    with pytest.raises(InputError, match="tokens"):
        probe(source=trees, test=trees, source_features=[np.zeros((2, 6, 3), np.float32)] * 5,
              test_features=[np.zeros((2, 6, 3), np.float32)] * 5)
    with pytest.raises(InputError, match="does not exist"):
        probe(source=tmp_path / "none.conllu", test=trees)
