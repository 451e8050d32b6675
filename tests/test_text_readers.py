"""Every reader of user text decodes through groc_base.textio: bad bytes give one line naming the source and fix.

One case per reader family (corpora plain and gzipped, ``data prepare`` inputs, dictionaries, word
lists, vector text files, similarity data sets, lexicon TSV and OMW tab files, languages files,
``score``'s input file, pretraining texts, treebanks, the lexicon coverage corpus, elmo options,
standard input), each fed a Latin-1 file: the error is a GrocError, one line, names the file (or
"standard input"), the line and byte offset, and says how to convert it.
"""

from __future__ import annotations

import gzip
import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groc_base.errors import GrocError
from groc_base.textio import STDIN, decode_text, iter_lines, read_text

LATIN1 = "caf\u00e9 cr\u00e8me".encode("latin-1")  # b"caf\xe9 cr\xe8me": \xe9 is not utf-8 here


def _write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def _corpus(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from langpairs.corpus import read_split

    path = _write(tmp / "en" / "train.txt", b"the cat sat\n" + LATIN1 + b"\n")
    return path, lambda: read_split(path)


def _corpus_gz(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from langpairs.corpus import MultilingualCorpus

    for split in ("train", "valid", "test"):
        _write(tmp / "en" / f"{split}.txt.gz", b"the cat sat\n" + LATIN1 + b"\n")
    return tmp / "en" / "train.txt.gz", lambda: MultilingualCorpus.load(tmp, ["en"])


def _prepare_input(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from langpairs.files import prepare_language

    path = _write(tmp / "mine.txt", b"the cat sat\n" * 5 + LATIN1 + b"\n")
    return path, lambda: prepare_language(lang="en", inputs=[path], out=tmp / "out")


def _dictionary(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from langpairs.dictionaries import read_dictionary

    path = _write(tmp / "en-fr.txt", b"cat chat\n" + LATIN1 + b"\n")
    return path, lambda: read_dictionary(path)


def _word_list(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from polyglot_groc.analysis.export import read_words

    path = _write(tmp / "words.txt", b"cat\n" + LATIN1.split()[0] + b"\n")
    return path, lambda: read_words(path)


def _vectors(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from eval.vectors import read_vec

    path = _write(tmp / "v.vec", b"2 2\ncat 1 2\n" + LATIN1.split()[0] + b" 3 4\n")
    return path, lambda: read_vec(path)


def _similarity(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from eval.similarity import read_word_pairs

    path = _write(tmp / "EN_RG-65.txt", b"cat dog 1.0\n" + LATIN1 + b" 2.0\n")
    return path, lambda: read_word_pairs(path)


def _tsv_lexicon(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from lexicons.tsv_backend import TsvLexicon

    path = _write(tmp / "lex.tsv", b"fr\tchat\trelated\tchaton\nfr\t" + LATIN1.split()[0] + b"\tdefinition\tx\n")
    return path, lambda: TsvLexicon(path)


def _omw_tab(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from lexicons.omw_import import read_tab

    path = _write(tmp / "wn-data-fra.tab", b"02121620-n\tfra:lemma\tchat\n02121620-n\tfra:lemma\t" + LATIN1 + b"\n")
    return path, lambda: read_tab(path, "fra")


def _languages_file(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from langpairs.registry import read_languages_file

    path = _write(tmp / "languages.toml", b'[languages.pam]\nname = "' + LATIN1 + b'"\n')
    return path, lambda: read_languages_file(path)


def _score_input(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from polyglot_groc.analysis.score import score

    path = _write(tmp / "sentences.txt", b"the cat\n" + LATIN1 + b"\n")
    return path, lambda: score(run=tmp / "no-run", lang="en", input=path)  # the input is read before the run


def _pretrain_texts(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from polyglot_groc.training.pretrain import read_sentences

    path = _write(tmp / "text.txt", b"the cat\n" + LATIN1 + b"\n")
    return path, lambda: read_sentences([path])


def _treebank(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from polyglot_groc.contextual.treebank import read_conllu

    path = _write(tmp / "fr.conllu", b"1\t" + LATIN1.split()[0] + b"\t_\tNOUN\t_\t_\t0\troot\t_\t_\n\n")
    return path, lambda: read_conllu(path)


def _lexicon_coverage_corpus(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from polyglot_groc.analysis.lexicon import lexicon_coverage

    tsv = _write(tmp / "lex.tsv", b"en\tcat\trelated\tkitten\n")
    path = _write(tmp / "data" / "en" / "train.txt.gz", b"the cat\n" + LATIN1 + b"\n")
    return path, lambda: lexicon_coverage(data=tmp / "data", langs=["en"], backend="tsv", tsv=tsv)


def _elmo_options(tmp: Path) -> tuple[Path, Callable[[], Any]]:
    from polyglot_groc.elmo.bilm import load_bilm_options

    path = _write(tmp / "options.json", b'{"name": "' + LATIN1 + b'"}')
    return path, lambda: load_bilm_options(path)


READERS = {f.__name__.strip("_"): f for f in (
    _corpus, _corpus_gz, _prepare_input, _dictionary, _word_list, _vectors, _similarity, _tsv_lexicon, _omw_tab,
    _languages_file, _score_input, _pretrain_texts, _treebank, _lexicon_coverage_corpus, _elmo_options)}


def _check(message: str, source: str) -> None:
    assert "\n" not in message, message
    assert source in message and "is not valid utf-8 (byte offset" in message, message
    assert "iconv -f latin1 -t utf-8" in message, message


@pytest.mark.parametrize("family", list(READERS))
def test_each_reader_names_the_file_and_the_fix(family: str, tmp_path: Path) -> None:
    path, read = READERS[family](tmp_path)
    with pytest.raises(GrocError) as info:
        read()
    _check(str(info.value), str(path))
    if path.name.endswith(".gz"):  # the fix decompresses, converts and compresses again
        assert "gzip -dc" in str(info.value) and "of its uncompressed text" in str(info.value)


@pytest.mark.parametrize("whole", [True, False])
def test_standard_input_is_named(whole: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # What `score RUN --input -` (and any reader of "-") gets: bytes on stdin, as a pipe gives them.
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"good line\n" + LATIN1 + b"\n")))
    with pytest.raises(GrocError) as info:
        read_text(STDIN) if whole else list(iter_lines(STDIN))
    message = str(info.value)
    assert message.startswith("standard input: line 2 is not valid utf-8 (byte offset 13: b'\\xe9 cr'); "), message
    assert "pipe it through `iconv -f latin1 -t utf-8` first" in message and "\n" not in message


def test_streamed_lines_report_the_line_and_offset_far_in(tmp_path: Path) -> None:
    path = _write(tmp_path / "big.txt", b"ok\n" * 100_000 + LATIN1 + b"\n")
    lines = iter_lines(path, what="corpus file")
    with pytest.raises(GrocError, match=r"corpus file .*big.txt: line 100001 is not valid utf-8 \(byte offset 300003:"):
        for _ in lines:
            pass


def test_binary_data_is_called_binary() -> None:
    with pytest.raises(GrocError, match=r"the input stream: line 1 .* NUL bytes, so it looks binary"):
        read_text(io.BytesIO(b"\x00\x01\xa9\xff"))


def test_good_text_reads_the_same_every_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = "\ufeffe\u0301t\u00e9\r\nsecond\nno newline at the end".encode()
    plain, packed = _write(tmp_path / "a.txt", data), _write(tmp_path / "a.txt.gz", data)
    expected = ["\u00e9t\u00e9", "second", "no newline at the end"]  # BOM dropped, NFC, \r\n and \n ends
    for source in (plain, packed, io.BytesIO(data)):
        assert list(iter_lines(source, nfc=True)) == expected
    assert read_text(packed, nfc=True).splitlines() == expected
    assert decode_text(data, plain, nfc=True).splitlines() == expected
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert list(iter_lines(STDIN, nfc=True)) == expected


# -- the guard: no other decoder of text ------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
#: Files that decode bytes or read text files themselves, and why that is not user text bypassing the reader.
DECODERS_ALLOWED = {
    "groc_base/textio.py": "the reader itself",
    "eval/vectors.py": "binary word2vec rows and format sniffing; its text rows' bad bytes go through utf8_error",
    "lexicons/user_import.py": "sniffs the first 4 KB to pick a reader (errors='replace' only chooses the format)",
    # The toolkit's own outputs (manifests, run records, metrics), which it wrote as UTF-8 itself.
    "langpairs/files.py": "prepare.json", "langpairs/prepare.py": "prepare.json",
    "lexicons/service.py": "the lexicon cache's meta json", "polyglot_groc/training/runlock.py": "the run's owner file",
    "polyglot_groc/training/fingerprint.py": "data-fingerprint.json", "polyglot_groc/training/workflows.py": "metrics",
    "polyglot_groc/analysis/alignment.py": "result.json", "polyglot_groc/analysis/curves.py": "metrics.jsonl",
    "polyglot_groc/training/metrics.py": "metrics.jsonl",
    "polyglot_groc/model/checkpoint.py": "result.json (whether the run diverged)",
    "polyglot_groc/model/threads.py": "/proc/loadavg, /proc/self/stat, /proc/uptime (the kernel's ASCII)",
}


def _decoding_calls(path: Path) -> list[str]:
    """``.decode(...)``, ``.read_text(...)`` and text-mode ``open(...)`` calls in ``path`` (line: source)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        method = node.func.attr if isinstance(node.func, ast.Attribute) else ""  # bytes.decode, Path.read_text
        name = method or getattr(node.func, "id", "")
        text_mode = any(isinstance(a, ast.Constant) and a.value in ("r", "rt") for a in node.args) or any(
            k.arg == "encoding" for k in node.keywords)
        if method in ("decode", "read_text", "get_text_stream") or (name == "open" and text_mode):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_no_reader_of_user_text_bypasses_textio() -> None:
    # The CLI's commands (polyglot_groc/commands) are left out while they are rewritten: their one reader
    # of standard input is routed through groc_base.textio.iter_lines at the merge.
    files = [p for pkg in ("groc_base", "langpairs", "lexicons", "eval", "polyglot_groc")
             for p in sorted((ROOT / pkg).rglob("*.py")) if "commands" not in p.relative_to(ROOT).parts]
    bypass = [call for path in files if str(path.relative_to(ROOT)) not in DECODERS_ALLOWED
              for call in _decoding_calls(path)]
    assert bypass == []


def test_score_reads_standard_input_through_the_one_reader(tmp_path: Path) -> None:
    """`score RUN --lang en` with bad bytes on standard input: one line naming standard input and the fix,
    exit 2 (the input is read before the run is loaded)."""
    from typer.testing import CliRunner

    from polyglot_groc.cli import app

    for data, fix in ((b"caf\xe9 au lait\n", "iconv -f latin1 -t utf-8"), (b"abc \xa9\x00\n", "binary")):
        res = CliRunner().invoke(app, ["score", str(tmp_path / "no-run"), "--lang", "en"], input=data)
        assert res.exit_code == 2, res.output
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert len(lines) == 1 and "standard input" in lines[0] and fix in lines[0], res.output
