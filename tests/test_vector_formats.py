"""Every word2vec file gensim reads is read: text or binary, plain, gzip, bzip2 or xz, by every command.

A ``.vec.gz`` or a word2vec ``.bin`` used to be refused as "not valid utf-8"; a binary file of
another kind (a fastText model) is a one-line error naming the format.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
from pathlib import Path

import numpy as np
import pytest
from gensim.models import KeyedVectors
from typer.testing import CliRunner

from eval.vectors import first_occurrences, read_vec, write_vec
from groc_base.errors import InputError
from polyglot_groc.cli import app
from tests.conftest import SMALL, TINY, one_error_line

runner = CliRunner()
WORDS = ["the", "The", "naïve", "日本", "cat", "THE", "dog", "Cat"]


def _vectors(n: int = len(WORDS), d: int = 5, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def _gensim(path: Path, words: list[str], vecs: np.ndarray, binary: bool) -> Path:
    kv = KeyedVectors(vecs.shape[1])
    kv.add_vectors(words, vecs)
    kv.save_word2vec_format(str(path), binary=binary)  # gensim compresses a .gz path itself
    return path


def _c_binary(path: Path, words: list[str], vecs: np.ndarray) -> Path:
    """word2vec.c's layout: a newline after every row (gensim writes none)."""
    rows = b"".join(w.encode() + b" " + v.astype("<f4").tobytes() + b"\n" for w, v in zip(words, vecs, strict=True))
    path.write_bytes(f"{len(words)} {vecs.shape[1]}\n".encode() + rows)
    return path


def _compress(path: Path, kind: str) -> Path:
    data = path.read_bytes()
    out = path.with_name(path.name + {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz"}[kind])
    out.write_bytes({"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[kind](data))
    return out


@pytest.mark.parametrize("make", ["text", "text.gz", "gensim.bin", "gensim.bin.gz", "c.bin", "c.bin.bz2",
                                  "text.xz", "bin-named-vec", "text-named-bin"])
def test_every_format_reads_like_gensim_and_like_text(tmp_path: Path, make: str) -> None:
    vecs = _vectors()
    if make == "text":
        path = tmp_path / "v.vec"
        write_vec(path, WORDS, vecs)
    elif make == "text.gz":
        path = tmp_path / "v.vec.gz"
        write_vec(path, WORDS, vecs)  # write_vec compresses a .gz path
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    elif make == "text.xz":
        write_vec(tmp_path / "v.vec", WORDS, vecs)
        path = _compress(tmp_path / "v.vec", "xz")
    elif make == "gensim.bin":
        path = _gensim(tmp_path / "v.bin", WORDS, vecs, binary=True)
    elif make == "gensim.bin.gz":
        path = _gensim(tmp_path / "v.bin.gz", WORDS, vecs, binary=True)
    elif make == "c.bin":
        path = _c_binary(tmp_path / "v.bin", WORDS, vecs)
    elif make == "c.bin.bz2":
        path = _compress(_c_binary(tmp_path / "v.bin", WORDS, vecs), "bzip2")
    elif make == "bin-named-vec":  # the content decides, not only the name
        path = _c_binary(tmp_path / "v.vec", WORDS, vecs)
    else:
        path = tmp_path / "v.bin"
        write_vec(tmp_path / "t.vec", WORDS, vecs)
        path.write_bytes((tmp_path / "t.vec").read_bytes())
    words, got = read_vec(path)
    assert words == WORDS
    np.testing.assert_array_equal(got, vecs)
    if make not in ("bin-named-vec", "text-named-bin", "text.xz", "c.bin.bz2"):
        kv = KeyedVectors.load_word2vec_format(str(path), binary=".bin" in path.name)
        assert list(kv.index_to_key) == words
        np.testing.assert_array_equal(kv.vectors, got)
    # MUSE's rule (lowercase, first occurrence wins, max_vocab distinct words) is the same in every format.
    low, low_vecs = read_vec(path, lower=True, max_vocab=3)
    kept, rows = first_occurrences(WORDS, lower=True, max_vocab=3)
    assert low == kept == ["the", "naïve", "日本"]
    np.testing.assert_array_equal(low_vecs, vecs[rows])
    # unique: a repeated word is an error (the exact string; "the" and "The" are two words).
    assert read_vec(path, unique=True)[0] == WORDS
    with pytest.raises(InputError, match="row 3 repeats the word 'a'"):
        read_vec(_c_binary(tmp_path / "dup.bin", ["a", "b", "a"], _vectors(3)), unique=True)


def test_first_occurrences_rule() -> None:
    assert first_occurrences(["a", "B", "b", "A", "c"], lower=True) == (["a", "b", "c"], pytest.approx([0, 1, 4]))
    words, rows = first_occurrences(["a", "B", "b", "A", "c"], lower=False, max_vocab=2)
    assert words == ["a", "B"] and rows.tolist() == [0, 1]
    with pytest.raises(InputError, match="max_vocab=0"):
        first_occurrences(["a"], max_vocab=0)


@pytest.mark.parametrize(("content", "match"), [
    # fastText's .bin starts with a magic int32, not an 'N D' header
    (np.array([793712314, 12], dtype="<i4").tobytes() + bytes(range(256)) * 4, "not a word2vec file.*fastText"),
    (b"\x89PNG\r\n\x1a\n" + bytes(300), "not a word2vec file"),
    (b"2 3\n" + b"a " + np.ones(3, "<f4").tobytes() + b"b " + np.ones(2, "<f4").tobytes(), "binary row 2 ends after"),
    (b"3 2\n" + b"a " + np.ones(2, "<f4").tobytes(), "declares 3 words but the file ends after 1 rows"),
    (b"1 2\n" + b"a " + np.ones(2, "<f4").tobytes() + b"b " + np.ones(2, "<f4").tobytes(), "more data follows"),
    (b"1 2\n" + b"a " + np.array([1, np.nan], "<f4").tobytes(), "binary row 1 .word 'a'. contains nan"),
    (b"1 2\n" + b"\xff\xfe " + np.ones(2, "<f4").tobytes(), "word of binary row 1 is not valid utf-8"),
    (b"1 2\n" + b"x" * 5000, "no word followed by a space"),
])
def test_bad_binary_files_are_one_line_errors(tmp_path: Path, content: bytes, match: str) -> None:
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    with pytest.raises(InputError, match=match) as info:
        read_vec(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
    assert "utf-8; re-encode" not in str(info.value)


def test_damaged_gzip_is_named(tmp_path: Path) -> None:
    write_vec(tmp_path / "v.vec.gz", [f"w{i}" for i in range(400)], _vectors(400))
    data = (tmp_path / "v.vec.gz").read_bytes()
    (tmp_path / "cut.vec.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cannot decompress its gzip data.*damaged or truncated"):
        read_vec(tmp_path / "cut.vec.gz")


def test_align_and_similarity_read_gz_and_bin(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    n, d = 80, 6
    src = rng.standard_normal((n, d)).astype(np.float32)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    write_vec(tmp_path / "s.vec.gz", [f"w{i}" for i in range(n)], src)
    _gensim(tmp_path / "t.bin", [f"x{i}" for i in range(n)], (src @ q.T).astype(np.float32), binary=True)
    (tmp_path / "d.txt").write_text("".join(f"w{i} x{i}\n" for i in range(30)), encoding="utf-8")
    (tmp_path / "e.txt").write_text("".join(f"w{i} x{i}\n" for i in range(40, 80)), encoding="utf-8")
    res = runner.invoke(app, ["align", "--src", str(tmp_path / "s.vec.gz"), "--tgt", str(tmp_path / "t.bin"),
                              "--train-dict", str(tmp_path / "d.txt"), "--eval-dict", str(tmp_path / "e.txt"),
                              "--refine", "1", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "out" / "result.json").read_text())["precision"]["nn"]["precision_at_1"] == 100.0
    (tmp_path / "sim.txt").write_text("w1 w2 1\nw3 w4 2\nw5 w9 3\n", encoding="utf-8")
    res = runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "s.vec.gz"), "--dataset",
                              str(tmp_path / "sim.txt")])
    assert res.exit_code == 0 and json.loads(res.stdout)["datasets"]["sim.txt"]["found"] == 3, res.output
    # t.bin holds x0..x79: none of the pairs, so no rho (one line, exit 2)
    line = one_error_line(runner.invoke(app, ["similarity", "--vectors", str(tmp_path / "t.bin"), "--dataset",
                                              str(tmp_path / "sim.txt")]))
    assert "only 0 of its 3 pairs" in line
    (tmp_path / "ft.bin").write_bytes(np.array([793712314, 12], dtype="<i4").tobytes() + bytes(200))
    line = one_error_line(runner.invoke(app, ["align", "--src", str(tmp_path / "ft.bin"), "--tgt",
                                              str(tmp_path / "t.bin"), "--train-dict", str(tmp_path / "d.txt"),
                                              "--out", str(tmp_path / "out2")]))
    assert "not a word2vec file" in line and "ft.bin" in line


def test_train_init_input_reads_bin_gz(tmp_path: Path) -> None:
    words = (TINY / "en" / "train.txt").read_text(encoding="utf-8").split()[:5]
    words = list(dict.fromkeys(words))
    vec = _gensim(tmp_path / "en.bin.gz", words, _vectors(len(words), 16), binary=True)
    sets = [x for s in SMALL for x in ("--set", s)]
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r"),
                              "--model", "tied", "--untie", "--init-input", str(vec), "--freeze-input",
                              "--max-steps", "1", *sets])
    assert res.exit_code == 0, res.output
    dup = _c_binary(tmp_path / "dup.bin", [words[0], words[0]], _vectors(2, 16))
    res = runner.invoke(app, ["train", "--langs", "en", "--data", str(TINY), "--out", str(tmp_path / "r2"),
                              "--model", "tied", "--untie", "--init-input", str(dup), "--max-steps", "1", *sets])
    assert res.exit_code == 2 and "repeats the word" in res.output and "deduplicate" in res.output
