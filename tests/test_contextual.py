"""Contextual features (AllenNLP elmo HDF5 layout), anchors, per-layer maps, the CoNLL-U reader and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import SMALL_OVERRIDES, TINY, one_error_line
from typer.testing import CliRunner

from polyglot_groc.cli import app
from polyglot_groc.contextual.features import anchors, features, mix_layers, sentence_layers
from polyglot_groc.contextual.treebank import read_conllu, universal_relation
from polyglot_groc.model.bundle import load_bundle

h5py = pytest.importorskip("h5py")

CONLLU = """# sent_id = 1
1-2\tdel\t_\t_\t_\t_\t_\t_\t_\t_
1\tde\tde\tADP\t_\t_\t3\tcase\t_\t_
2\tel\tel\tDET\t_\t_\t3\tdet\t_\t_
3\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_
3.1\tgone\t_\t_\t_\t_\t_\t_\t_\t_
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

1\tthe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t0\troot\t_\t_
3\tsees\tsee\tVERB\t_\t_\t2\tacl:relcl\t_\t_
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    import polyglot_groc.api as pg

    root = tmp_path_factory.mktemp("ctx")
    out = {}
    for kind, langs in (("bilm", "en,fr"), ("groc", "en")):
        pg.train(out=root / kind, langs=langs, data=TINY, model=kind, overrides=SMALL_OVERRIDES, max_steps=4,
                 threads=1)
        out[kind] = root / kind
    return out


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    with h5py.File(path, "r") as fin:
        data = {k: fin[k][...] for k in fin if k != "sentence_to_index"}
        index = json.loads(fin["sentence_to_index"][0])
    return data, index


def test_conllu_reader_skips_ranges_and_empty_nodes(tmp_path: Path) -> None:
    path = tmp_path / "t.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    trees = read_conllu(path)
    assert [t.words for t in trees] == [("de", "el", "cat", "."), ("the", "cat", "sees")]
    assert trees[0].heads == (3, 3, 0, 3) and trees[1].deprels[2] == "acl:relcl"
    assert universal_relation("acl:relcl") == "acl"


def test_features_layout_and_layers(runs: dict[str, Path], tmp_path: Path) -> None:
    conllu = tmp_path / "t.conllu"
    conllu.write_text(CONLLU, encoding="utf-8")
    res = features(run=runs["bilm"], input=conllu, out=tmp_path / "all.hdf5", lang="en", threads=1)
    assert (res.n_sentences, res.n_tokens, res.n_layers, res.dim) == (2, 7, 3, 32)
    data, index = _read(tmp_path / "all.hdf5")
    assert index == {"de el cat .": "0", "the cat sees": "1"}
    assert data["0"].shape == (3, 4, 32) and data["0"].dtype == np.float32 and data["1"].shape == (3, 3, 32)
    # Layer 0 is the token embedding duplicated to the LSTM width, as ELMo's.
    assert np.array_equal(data["1"][0, :, :16], data["1"][0, :, 16:])
    # Forward half: the forward LM over "<eos> the cat sees"; backward half: the backward LM over
    # "<eos> sees cat the", read back into sentence order.
    bundle, _ = load_bundle(runs["bilm"])
    ids = torch.from_numpy(bundle.vocab.encode(["<eos>", "the", "cat", "sees"])).unsqueeze(0)
    back = torch.from_numpy(bundle.vocab.encode(["<eos>", "sees", "cat", "the"])).unsqueeze(0)
    with torch.no_grad():
        fwd = bundle.model.layer_outputs(ids)
        bwd = bundle.model.layer_outputs(back, "backward")
    for j in (1, 2):
        assert np.allclose(data["1"][j, :, :16], fwd[j][0, 1:].numpy(), atol=1e-6)
        assert np.allclose(data["1"][j, :, 16:], bwd[j][0, 1:].flip(0).numpy(), atol=1e-6)
    # top, average and a mix of the same sentences.
    for layers in ("top", "average"):
        features(run=runs["bilm"], input=conllu, out=tmp_path / f"{layers}.hdf5", lang="en", layers=layers)
    top, _ = _read(tmp_path / "top.hdf5")
    avg, _ = _read(tmp_path / "average.hdf5")
    assert np.allclose(top["0"], data["0"][-1]) and np.allclose(avg["0"], data["0"].mean(0), atol=1e-6)
    features(run=runs["bilm"], input=conllu, out=tmp_path / "mix.hdf5", lang="en", mix=[0.0, 1.0, 2.0], gamma=0.5)
    mixed, _ = _read(tmp_path / "mix.hdf5")
    w = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    assert np.allclose(mixed["1"], 0.5 * np.tensordot(w, data["1"], axes=1), atol=1e-5)
    assert np.allclose(mix_layers(data["1"], [0, 0, 0]), data["1"].mean(0), atol=1e-6)


def test_batching_does_not_change_features(runs: dict[str, Path]) -> None:
    bundle, _ = load_bundle(runs["bilm"])
    sents = [["the", "cat"], ["a", "bird", "sees", "the", "small", "river", "."], ["unseenword", "the"]]
    one = [x for s in sents for x in sentence_layers(bundle, [s], "en", batch_size=1)]
    batched = list(sentence_layers(bundle, sents, "en", batch_size=3))
    assert all(np.allclose(a, b, atol=1e-5) for a, b in zip(one, batched, strict=True))


def test_forward_only_runs_and_maps(runs: dict[str, Path], tmp_path: Path) -> None:
    text = tmp_path / "s.txt"
    text.write_text("the cat sees a bird .\n\nthe old house .\n", encoding="utf-8")
    res = features(run=runs["groc"], input=text, out=tmp_path / "g.hdf5")
    # groc: d 16, LSTM 24 then 16: layers zero-padded to the widest (24).
    assert (res.n_sentences, res.n_layers, res.dim) == (2, 3, 24)
    data, _ = _read(tmp_path / "g.hdf5")
    assert np.all(data["0"][0, :, 16:] == 0) and np.all(data["0"][2, :, 16:] == 0)
    # --align: layer j mapped by W(j) before anything else.
    rng = np.random.default_rng(0)
    maps = tmp_path / "maps"
    Ws = [rng.normal(size=(24, 24)).astype(np.float32) for _ in range(3)]
    for j, W in enumerate(Ws):
        (maps / f"layer{j}").mkdir(parents=True)
        np.save(maps / f"layer{j}" / "W.npy", W)
    features(run=runs["groc"], input=text, out=tmp_path / "ga.hdf5", align=maps)
    aligned, _ = _read(tmp_path / "ga.hdf5")
    for j in range(3):
        assert np.allclose(aligned["1"][j], data["1"][j] @ Ws[j].T, atol=1e-4)


def test_anchors_are_type_means_and_align_layers(runs: dict[str, Path], tmp_path: Path) -> None:
    from eval.vectors import read_vec
    from polyglot_groc.contextual.features import align_layers, read_sentences

    res = anchors(run=runs["bilm"], data=TINY, lang="en", split="test", out=tmp_path / "a")
    assert res.n_layers == 3 and res.dim == 32 and len(res.norms) == 3
    assert json.loads((tmp_path / "a" / "norms.json").read_text()) == {f"layer{j}": n for j, n in
                                                                      enumerate(res.norms)}
    sents = read_sentences(TINY / "en" / "test.txt")
    bundle, _ = load_bundle(runs["bilm"])
    vecs = [v for v in sentence_layers(bundle, sents, "en")]
    occ = [v[1][i] for s, v in zip(sents, vecs, strict=True) for i, w in enumerate(s) if w == "cat"]
    words, layer1 = read_vec(tmp_path / "a" / "layer1.vec")
    assert words[0] == max(set(words), key=lambda w: sum(s.count(w) for s in sents))  # most frequent first
    assert np.allclose(layer1[words.index("cat")], np.mean(occ, axis=0), atol=1e-5)
    # Aligning a run's anchors onto themselves with an identity dictionary maps each anchor onto itself
    # (24 words in 32 dimensions: W is the identity on their span).
    dico = tmp_path / "dico.txt"
    dico.write_text("".join(f"{w} {w}\n" for w in words), encoding="utf-8")
    out = align_layers(src=tmp_path / "a", tgt=tmp_path / "a", out=tmp_path / "maps", train_dict=dico)
    assert len(out.layers) == 3
    for j in range(3):
        _, A = read_vec(tmp_path / "a" / f"layer{j}.vec")
        W = np.load(tmp_path / "maps" / f"layer{j}" / "W.npy")
        assert np.allclose(A @ W.T, A, atol=1e-3 * np.abs(A).max())


def test_cli_features_and_bad_input(runs: dict[str, Path], tmp_path: Path) -> None:
    runner = CliRunner()
    text = tmp_path / "s.txt"
    text.write_text("the cat sees a bird .\n", encoding="utf-8")
    ok = runner.invoke(app, ["features", str(runs["bilm"]), "--input", str(text), "--out", str(tmp_path / "f.hdf5"),
                             "--lang", "en", "--layers", "top"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["n_tokens"] == 6
    out = str(tmp_path / "bad.hdf5")
    base = ["features", str(runs["bilm"]), "--input", str(text), "--out", out]
    cases = [
        (base + ["--lang", "en", "--layers", "middle"], "--layers"),
        (base + ["--lang", "en", "--mix", "1,2"], "--mix has 2 weights"),
        (base + ["--lang", "en", "--mix", "1,x,2"], "--mix"),
        (base + ["--lang", "en", "--gamma", "0"], "--gamma"),
        (base, "--lang"),
        (["features", str(runs["bilm"]), "--input", str(tmp_path / "none.txt"), "--out", out, "--lang", "en"],
         "does not exist"),
        (["features", str(runs["bilm"]), "--input", str(text), "--out", str(tmp_path / "f.hdf5"), "--lang", "en"],
         "already exists"),
        (base + ["--lang", "en", "--align", str(tmp_path)], "W.npy"),
    ]
    for args, needle in cases:
        line = one_error_line(runner.invoke(app, args))
        assert needle in line, (args, line)
    assert not Path(out).exists() and not list(tmp_path.glob(".bad.hdf5*"))  # nothing half-written
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    one_error_line(runner.invoke(app, ["features", str(runs["bilm"]), "--input", str(empty), "--out", out,
                                       "--lang", "en"]))
    bad_anchor = runner.invoke(app, ["anchors", str(runs["bilm"]), "--data", str(tmp_path), "--out",
                                     str(tmp_path / "anc"), "--lang", "en"])
    assert "no train split" in one_error_line(bad_anchor)
    assert not (tmp_path / "anc").exists()
    bad_layers = runner.invoke(app, ["align-layers", "--src", str(tmp_path), "--tgt", str(tmp_path), "--train-dict",
                                     str(text), "--out", str(tmp_path / "maps")])
    assert "layer*.vec" in one_error_line(bad_layers)
    conllu = tmp_path / "t.conllu"
    conllu.write_text(CONLLU, encoding="utf-8")
    bad_probe = runner.invoke(app, ["probe", "--source", str(conllu), "--test", str(conllu), "--source-features",
                                    str(tmp_path / "f.hdf5")])
    assert "features for the source" in one_error_line(bad_probe)
    bad_tree = tmp_path / "bad.conllu"
    bad_tree.write_text("1\tx\t_\t_\t_\t_\tnope\troot\t_\t_\n", encoding="utf-8")
    assert "HEAD" in one_error_line(runner.invoke(app, ["probe", "--source", str(bad_tree), "--test", str(conllu)]))
    ok_probe = runner.invoke(app, ["probe", "--source", str(conllu), "--test", str(conllu), "--epochs", "1"])
    assert ok_probe.exit_code == 0, ok_probe.output
    assert json.loads(ok_probe.stdout)["words"] == 7
