"""Vectors of any size (issue 28): preallocated reading, streamed reading and writing, MUSE's
full-vocabulary export of --export-mapped."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from eval.vectors import iter_vec, read_vec, vec_shape, write_vec, write_vec_chunks
from groc_base.errors import InputError
from polyglot_groc.analysis.alignment import export_full_vocabulary, training_means
from polyglot_groc.cli import app

runner = CliRunner()
WORDS = ["The", "the", "cat", "Cat", "sat", "mat", "THE", "dog"]


def _binary(path: Path, words: list[str], vecs: np.ndarray) -> None:
    with open(path, "wb") as fh:
        fh.write(f"{len(words)} {vecs.shape[1]}\n".encode())
        for w, row in zip(words, vecs, strict=True):
            fh.write(w.encode() + b" " + row.astype("<f4").tobytes() + b"\n")


@pytest.mark.parametrize("kind", ["vec", "vec.gz", "bin"])
def test_iter_vec_chunks_equal_read_vec(tmp_path: Path, kind: str) -> None:
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((len(WORDS), 3)).astype(np.float32)
    vecs[5] = 0.0  # nudged on both routes
    path = tmp_path / f"v.{kind}"
    if kind == "bin":
        _binary(path, WORDS, vecs)
    else:
        write_vec(path, WORDS, vecs)
    assert vec_shape(path) == (8, 3)
    for lower, max_vocab in ((False, None), (True, None), (True, 3), (False, 5)):
        words, full = read_vec(path, lower=lower, max_vocab=max_vocab)
        chunks = list(iter_vec(path, lower=lower, max_vocab=max_vocab, chunk_rows=2))
        assert all(len(w) <= 2 for w, _ in chunks)
        assert [w for ws, _ in chunks for w in ws] == words
        np.testing.assert_array_equal(np.concatenate([b for _, b in chunks]), full)
    assert read_vec(path)[1][5].tolist() == [np.float32(0.01), 0.0, 0.0]


def test_a_header_claiming_too_many_rows_is_one_error_not_an_allocation(tmp_path: Path) -> None:
    path = tmp_path / "lie.vec"
    path.write_text("1000000000000 3\na 1 2 3\n", encoding="utf-8")
    with pytest.raises(InputError, match="declares 1000000000000 words but the file has 1 rows"):
        read_vec(path)
    packed = tmp_path / "lie.vec.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    with pytest.raises(InputError, match="declares 1000000000000 words"):
        read_vec(packed)


def test_streaming_holds_one_chunk_not_the_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n, d = 8_000, 256
    vecs = rng.standard_normal((n, d)).astype(np.float32)  # 8.2 MB of float32
    words = [f"w{i}" for i in range(n)]
    write_vec(tmp_path / "big.vec", words, vecs)
    tracemalloc.start()
    try:
        total = 0.0
        for _, block in iter_vec(tmp_path / "big.vec", chunk_rows=64):
            total += float(block[:, 0].sum())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == pytest.approx(float(vecs[:, 0].astype(np.float64).sum()), rel=1e-4)
    assert peak < vecs.nbytes / 3, peak  # the set of words seen and one chunk, never the matrix
    # written back in chunks: the same file a reader expects, the header patched to the count
    written = write_vec_chunks(tmp_path / "copy.vec", iter_vec(tmp_path / "big.vec", chunk_rows=5000), d)
    assert written == n
    header = (tmp_path / "copy.vec").open("rb").readline()
    assert header.split() == [b"8000", b"256"]
    back_words, back = read_vec(tmp_path / "copy.vec")
    assert back_words == words and np.array_equal(back, vecs)
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load_word2vec_format(str(tmp_path / "copy.vec"), binary=False, limit=10)
    assert np.allclose(kv["w3"], vecs[3])


def test_write_vec_chunks_refuses_bad_chunks(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="plain text"):
        write_vec_chunks(tmp_path / "x.vec.gz", [], 2)
    with pytest.raises(InputError, match="nothing to write"):
        write_vec_chunks(tmp_path / "x.vec", [], 2)
    with pytest.raises(InputError, match="whitespace"):
        write_vec_chunks(tmp_path / "x.vec", [(["a b"], np.ones((1, 2), np.float32))], 2)
    with pytest.raises(InputError, match="shape"):
        write_vec_chunks(tmp_path / "x.vec", [(["a"], np.ones((1, 3), np.float32))], 2)
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no temporary left


def test_export_full_vocabulary_is_muses_export(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    vecs = rng.standard_normal((len(WORDS), 4)).astype(np.float32)
    write_vec(tmp_path / "s.vec", WORDS, vecs)
    train_words, train = read_vec(tmp_path / "s.vec", lower=True, max_vocab=3)  # the, cat, sat
    w = np.linalg.qr(rng.standard_normal((4, 4)))[0].astype(np.float32)
    ops = "renorm,center,renorm"
    n = export_full_vocabulary(tmp_path / "s.vec", tmp_path / "out.vec", normalize=ops,
                               means=training_means(train, ops), W=w, chunk_rows=3)
    words, got = read_vec(tmp_path / "out.vec")
    assert n == 8 and words == WORDS  # every row, case kept (full_vocab)
    # MUSE: normalize_embeddings(emb, types, mean=<training mean>), then the mapping, row by row
    unit = train / np.linalg.norm(train, axis=1, keepdims=True)
    mean = unit.mean(axis=0)
    x = vecs / np.linalg.norm(vecs, axis=1, keepdims=True) - mean
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.testing.assert_allclose(got, x @ w.T, atol=1e-6)
    with pytest.raises(InputError, match="cannot stream the normalisation"):
        training_means(train, "renorm,iternorm")  # iterated over the training vocabulary


def test_align_export_mapped_writes_every_word_of_the_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    n, d = 120, 6
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    words = [f"w{i}" for i in range(n)]
    words[50] = "W0"  # a casing of w0: skipped by the lowercased training read, kept by the export
    write_vec(tmp_path / "s.vec", words, src)
    write_vec(tmp_path / "t.vec", [f"x{i}" for i in range(n)], (src @ q.T).astype(np.float32))
    (tmp_path / "d.txt").write_text("".join(f"w{i} x{i}\n" for i in range(40)), encoding="utf-8")
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"),
                              "--train-dict", str(tmp_path / "d.txt"), "--refine", "0", "--export-mapped",
                              "--max-vocab", "80", "--normalize", "center", "--src-lang", "en", "--tgt-lang", "es",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    full_words, full = read_vec(tmp_path / "o" / "vectors-en.txt")
    aligned_words, aligned = read_vec(tmp_path / "o" / "src.aligned.vec")
    assert full_words == words and len(aligned_words) == 80
    np.testing.assert_allclose(full[:50], aligned[:50], atol=1e-5)  # the same rows, mapped alike
    assert read_vec(tmp_path / "o" / "vectors-es.txt")[1].shape == (n, d)


def test_align_export_mapped_moves_the_target_too_with_vecmap_and_refuses_iternorm(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    n, d = 90, 6
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    write_vec(tmp_path / "s.vec", [f"w{i}" for i in range(n)], src)
    write_vec(tmp_path / "t.vec", [f"x{i}" for i in range(n)], (src @ q.T).astype(np.float32))
    (tmp_path / "d.txt").write_text("".join(f"w{i} x{i}\n" for i in range(40)), encoding="utf-8")
    base = ["align", "--src", str(tmp_path / "s.vec"), "--tgt", str(tmp_path / "t.vec"), "--train-dict",
            str(tmp_path / "d.txt"), "--export-mapped", "--src-lang", "en", "--tgt-lang", "es"]
    res = runner.invoke(app, [*base, "--method", "vecmap", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    # the full export of each side equals the aligned spaces (every word is in the vocabulary here)
    for full_name, aligned_name in (("vectors-en.txt", "src.aligned.vec"), ("vectors-es.txt", "tgt.vec")):
        np.testing.assert_allclose(read_vec(tmp_path / "o" / full_name)[1], read_vec(tmp_path / "o" / aligned_name)[1],
                                   atol=1e-4)
    res = runner.invoke(app, [*base, "--normalize", "iternorm", "--out", str(tmp_path / "o2")])
    assert res.exit_code == 2 and "cannot stream" in res.output and not (tmp_path / "o2").exists()
