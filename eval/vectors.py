"""Read and write word vectors in word2vec format: text (``.vec``), binary (``.bin``), compressed.

The text format is a header line ``N D`` followed by ``N`` rows ``word v1 ... vD`` separated by
single spaces; the binary format (word2vec's ``-binary 1``, gensim's ``binary=True``) has the same
header, then per row the word, a space and ``D`` little-endian float32 values (word2vec adds a
newline after each row, gensim does not; both are read).  Either may be gzip, bzip2 or xz
compressed (``.vec.gz``, ``.bin.gz``, ...): the compression is recognised by the file's first
bytes, and binary rows by the ``.bin`` suffix or by a first row that is not text.  These are the
files gensim's ``KeyedVectors.load_word2vec_format`` reads.

The reader is strict where MUSE is lenient: MUSE silently drops undecodable bytes
(``errors='ignore'``) and skips rows of the wrong dimension with a warning, which hides truncated or
corrupted files and shifts every later word's frequency rank.  Here each of those is an
:class:`~groc_base.errors.InputError` naming the file, the line (or row) and the fix.  Duplicate
words are the one leniency kept from MUSE: the first occurrence wins and the rest are counted in
one warning (:func:`first_occurrences` is the same rule for words already in memory).
"""

from __future__ import annotations

import bz2
import gzip
import io
import logging
import lzma
import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NoReturn, cast

import numpy as np

from groc_base.errors import InputError
from groc_base.fileio import atomic_write
from groc_base.textio import utf8_error

logger = logging.getLogger(__name__)

__all__ = ["first_occurrences", "iter_vec", "nudge_zero_rows", "read_vec", "vec_shape", "vocabulary_index",
           "write_vec", "write_vec_chunks"]

# Rows are converted to floats in chunks: one numpy conversion per chunk instead of per row keeps
# reading fast, and a chunk of 300-d rows is a few MB of strings at most.
_CHUNK_ROWS = 4096
# float32 needs 9 significant digits to survive a text round trip bit-for-bit.
_FLOAT32_DIGITS = 9
# First bytes of the compressed formats the reader opens transparently.
_MAGIC: tuple[tuple[bytes, str], ...] = ((b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"))
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz")
# A header line is a few digits; a longer first line is not word2vec at all.
_MAX_HEADER = 256
# Longest word accepted in a binary file, in bytes (fastText's limit is far below).
_MAX_BINARY_WORD = 4096
_NOT_WORD2VEC = ("is not a word2vec file (text .vec or binary .bin: an 'N D' header line, then one row per "
                 "word); fastText .bin models are not word2vec: use the .vec fastText writes beside them")


def vocabulary_index(words: Sequence[str], lower: bool = False) -> dict[str, int]:
    """Map each word to the row of its FIRST occurrence (lowercased first when ``lower``).

    This is the lookup MUSE builds while reading (``word2id``), where a later duplicate never
    replaces an earlier, more frequent word.
    """
    keys = [w.lower() for w in words] if lower else list(words)
    # dict() keeps the last value for a repeated key, so feed it the rows in reverse: the first
    # occurrence is then written last and wins.  Built in C, no Python loop over the vocabulary.
    return dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))


def nudge_zero_rows(vectors: np.ndarray, where: str, *, whole: bool = True) -> int:
    """MUSE's reading rule for null vectors, in place: an all-zero row gets ``v[0] = 0.01``.

    MUSE (``read_txt_embeddings``: ``if np.linalg.norm(vect) == 0: vect[0] = 0.01``) does it so
    that normalising never divides by zero; the nudged word then ranks like any vector along the
    first axis, which changes neighbour lists and P@k.  Every reader here applies it (files, a
    run's vocabulary, vectors in memory), so all routes score the same numbers as MUSE.  Returns
    the number of rows nudged (logged as one warning).  ``whole``: ``vectors`` are a whole
    vocabulary (not one chunk of a file), and if every one is zero there is nothing to align or
    score: InputError naming ``where``.
    """
    if vectors.size == 0:
        return 0
    zero = ~vectors.any(axis=1)  # (n,)
    count = int(zero.sum())
    if whole and count == vectors.shape[0]:
        raise InputError(f"{where}: every vector is zero ({count} words); load trained vectors")
    if count:
        vectors[zero, 0] = np.float32(0.01)
        logger.warning("%s: %d all-zero vector(s) nudged to v[0] = 0.01, as MUSE does", where, count)
    return count


def first_occurrences(
    words: Sequence[str], lower: bool = False, max_vocab: int | None = None
) -> tuple[list[str], np.ndarray]:
    """MUSE's vocabulary rule for words in frequency order, as :func:`read_vec` applies it to a file.

    Returns ``(kept, rows)``: the distinct words (lowercased when ``lower``) in order of first
    occurrence, at most ``max_vocab`` of them, and ``rows`` ``(len(kept),)`` int64, the position
    of each one's first occurrence in ``words`` (whose vector a reader keeps).  Exporting a
    vocabulary to a ``.vec`` and reading it back with ``read_vec(max_vocab, lower)`` keeps exactly
    ``[words[r] for r in rows]``'s vectors under these names.
    """
    if max_vocab is not None and max_vocab < 1:
        raise InputError(f"max_vocab={max_vocab}; pass a positive number or None for all words")
    kept: dict[str, int] = {}
    for i, word in enumerate(words):
        key = word.lower() if lower else word
        if key not in kept:
            kept[key] = i
            if max_vocab is not None and len(kept) >= max_vocab:
                break
    return list(kept), np.fromiter(kept.values(), dtype=np.int64, count=len(kept))


def _parse_header(path: Path, raw: bytes) -> tuple[int, int]:
    if len(raw) >= _MAX_HEADER and not raw.endswith(b"\n"):
        raise InputError(f"{path} {_NOT_WORD2VEC}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Undecodable bytes in a header of two numbers: a binary file of some other kind.
        raise InputError(f"{path}: line 1 is not an 'N D' header (byte {exc.start} is not text); "
                             f"{path.name} {_NOT_WORD2VEC}") from exc
    fields = text.split()
    try:
        if len(fields) != 2:
            raise ValueError(text)
        count, dim = int(fields[0]), int(fields[1])
    except ValueError as exc:
        raise InputError(
            f"{path}: line 1 must be the header 'N D' (word count and dimension), got {text.strip()[:60]!r}; "
            "add the header (glove files have none: prepend '<rows> <dim>')"
        ) from exc
    if count < 1 or dim < 1:
        raise InputError(
            f"{path}: line 1 declares {count} words of dimension {dim}; both must be positive, fix the header"
        )
    return count, dim


def _convert_chunk(path: Path, rests: list[str], line_numbers: list[int], words: list[str], dim: int) -> np.ndarray:
    """Parse the value parts of ``len(line_numbers)`` text rows into a float32 block ``(rows, dim)``.

    NumPy's C parser (``np.loadtxt``) reads the block and checks that every row has as many
    values as the first; only when that fails (or the width is not ``dim``) are the rows checked
    one by one, to name the first bad line and what is wrong with it.
    """
    try:
        block = np.loadtxt(rests, dtype=np.float32, comments=None, ndmin=2)  # (rows, dim)
        if block.shape != (len(line_numbers), dim):
            raise ValueError(f"shape {block.shape}")
    except ValueError as exc:
        _check_rows(path, rests, line_numbers, words, dim)
        raise InputError(f"{path}: unparsable values near line {line_numbers[0]}; {exc}") from exc
    finite = np.isfinite(block).all(axis=1)  # (rows,)
    if not finite.all():
        lineno = line_numbers[int(np.argmin(finite))]
        raise InputError(f"{path}: line {lineno} contains nan or inf; remove or retrain that vector")
    return block


def _check_rows(path: Path, rests: list[str], line_numbers: list[int], words: list[str], dim: int) -> None:
    """The slow path of :func:`_convert_chunk`: raise for the first row with the wrong number of
    values or a value that is not a number (returns when every row is well formed)."""
    for rest, lineno, word in zip(rests, line_numbers, words, strict=True):
        values = rest.split()
        if len(values) != dim:
            raise InputError(
                f"{path}: line {lineno} (word {word[:40]!r}) has {len(values)} values but the header "
                f"says {dim}; the file is truncated or the word contains a space, regenerate it"
            )
        for token in values:
            try:
                float(token)
            except ValueError:
                raise InputError(
                    f"{path}: line {lineno} has the non-numeric value {token[:40]!r}; "
                    "each row must be a word followed by numbers"
                ) from None


def _open(path: Path) -> tuple[IO[bytes], str | None]:
    """The file's bytes, decompressed when its first bytes say gzip, bzip2 or xz."""
    try:
        with path.open("rb") as probe:
            magic = probe.read(6)
        compression = next((name for prefix, name in _MAGIC if magic.startswith(prefix)), None)
        if compression == "gzip":
            return cast(IO[bytes], gzip.open(path, "rb")), compression
        if compression == "bzip2":
            return bz2.open(path, "rb"), compression
        if compression == "xz":
            return lzma.open(path, "rb"), compression
        return path.open("rb"), None
    except OSError as exc:
        raise InputError(f"cannot open vector file {path}: {exc.strerror}; check the path") from exc


def _looks_binary(path: Path, stream: IO[bytes], dim: int) -> bool:
    """Binary rows: the ``.bin`` suffix (under any compression suffix), else a first row that is not text.

    A text row is printable utf-8 up to its newline; ``dim`` raw float32 values almost never are.
    A ``.bin`` file whose first row is a valid text row is read as text.
    """
    start = stream.tell()
    probe = stream.read(1 << 16)
    stream.seek(start)
    first = probe.split(b"\n", 1)[0].rstrip(b"\r")
    try:
        text = first.decode("utf-8")
    except UnicodeDecodeError:
        return True
    if any(ch < " " and ch != "\t" for ch in text):
        return True
    suffixes = [s.lower() for s in path.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSED_SUFFIXES:
        suffixes.pop()
    if suffixes[-1:] != [".bin"]:
        return False
    fields = text.split()
    try:
        [float(v) for v in fields[1:]]
    except ValueError:
        return True
    return len(fields) != dim + 1


class _Rows:
    """MUSE's reading rule applied row by row: lowercase (``lower``), first occurrence wins,
    stop after ``max_vocab`` distinct words; ``unique`` makes a repeated word an error instead.

    Two kinds of skipped rows are told apart: a word written twice (a real duplicate: warned
    about) and a case variant merged by ``lower`` (``The`` after ``the``: MUSE's rule, what every
    cased vocabulary gives, the toolkit's own exports included; counted at INFO only)."""

    def __init__(self, path: Path, lower: bool, max_vocab: int | None, unique: bool) -> None:
        self.path, self.lower, self.max_vocab, self.unique = path, lower, max_vocab, unique
        self.kept = 0
        self.seen: set[str] = set()
        self.written: set[str] = set()  # the words as written (only with lower): tells duplicates from case variants
        self.duplicates = 0
        self.examples: list[str] = []
        self.case_variants = 0
        self.case_examples: list[str] = []

    def keep(self, word: str, where: str) -> str | None:
        """The word as kept (lowercased with ``lower``), or None when this row is a later duplicate."""
        if self.unique and word in self.seen:
            raise InputError(f"{self.path}: {where} repeats the word {word[:40]!r}; this use needs one "
                                 "vector per word: deduplicate the file (or regenerate it)")
        written = word
        if self.lower:
            word = word.lower()
        if word in self.seen:
            if self.lower and written not in self.written:
                self.written.add(written)
                self.case_variants += 1
                if len(self.case_examples) < 5:
                    self.case_examples.append(written)
                return None
            self.duplicates += 1
            if len(self.examples) < 5:
                self.examples.append(written)
            return None
        self.seen.add(word)
        if self.lower:
            self.written.add(written)
        self.kept += 1
        return word

    @property
    def full(self) -> bool:
        return self.max_vocab is not None and self.kept >= self.max_vocab

    def log_duplicates(self) -> None:
        if self.case_variants:
            logger.info("%s: %d case variant(s) merged into their first (most frequent) casing, as MUSE reads "
                        "(e.g. %s)", self.path, self.case_variants, ", ".join(repr(w) for w in self.case_examples))
        if self.duplicates:
            logger.warning("%s: %d duplicate word(s) skipped, first occurrence kept (e.g. %s)", self.path,
                           self.duplicates, ", ".join(repr(w) for w in self.examples))


#: One chunk of a vector file: the kept words and their vectors ``(len(words), D)`` float32.
Chunk = tuple[list[str], np.ndarray]


def _text_chunks(path: Path, handle: IO[bytes], count: int, dim: int, rows: _Rows,
                 chunk_rows: int) -> Iterator[Chunk]:
    rests: list[str] = []  # the value part of each kept row, parsed a chunk at a time
    words: list[str] = []  # kept (lowercased) words
    given: list[str] = []  # the same words as written, for messages
    pending_lines: list[int] = []
    n_rows = 0
    first_blank: int | None = None

    def fail(message: str) -> NoReturn:
        # A malformed row earlier in the pending chunk is named first, as a row-by-row reader would.
        _check_rows(path, rests, pending_lines, given, dim)
        raise InputError(message)

    # Binary handles split on b"\n" only: a word holding another unicode line separator
    # (fastText vocabularies have some) stays on its row.
    for lineno, raw in enumerate(handle, start=2):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            _check_rows(path, rests, pending_lines, given, dim)
            # tell() is the position after this row, in the uncompressed stream: the row starts len(raw) before.
            raise utf8_error(raw, exc, path, what="vector file", first_line=lineno,
                             first_offset=handle.tell() - len(raw)) from exc
        line = line.rstrip("\r\n")
        if not line.strip():
            # Blank lines are tolerated only at the end of the file (editors add them).
            if first_blank is None:
                first_blank = lineno
            continue
        if first_blank is not None:
            fail(f"{path}: line {first_blank} is blank inside the data; delete it")
        word, _, rest = line.partition(" ")
        if not word:
            fail(f"{path}: line {lineno} starts with a space (empty word); remove it")
        n_rows += 1
        if n_rows > count:
            fail(f"{path}: line {lineno} is row {n_rows} but the header declares {count} words; fix the header count")
        if rows.unique and word in rows.seen:
            _check_rows(path, rests, pending_lines, given, dim)
        kept = rows.keep(word, f"line {lineno}")
        if kept is None:  # a later duplicate: not kept, but it must still have dim values
            if len(rest.split()) != dim:
                _check_rows(path, [rest], [lineno], [word], dim)
            continue
        words.append(kept)
        given.append(word)
        rests.append(rest)
        pending_lines.append(lineno)
        if len(pending_lines) == chunk_rows:
            yield words, _convert_chunk(path, rests, pending_lines, given, dim)
            rests, words, given, pending_lines = [], [], [], []
        if rows.full:
            break
    else:
        if n_rows != count:
            fail(f"{path}: the header declares {count} words but the file has {n_rows} rows; "
                 f"fix the header to '{n_rows} {dim}' or re-export the file")
    if pending_lines:
        yield words, _convert_chunk(path, rests, pending_lines, given, dim)


def _binary_rows(path: Path, handle: IO[bytes], count: int, dim: int) -> Iterator[tuple[int, bytes, bytes]]:
    """``(row number, word bytes, dim * 4 value bytes)`` of a binary file, checking its layout."""
    width = 4 * dim
    buf = b""
    pos = 0
    eof = False

    def fill(n: int) -> bool:
        """Make ``n`` bytes available from ``pos``; False at the end of the file."""
        nonlocal buf, pos, eof
        while len(buf) - pos < n and not eof:
            chunk = handle.read(max(1 << 20, n))
            if not chunk:
                eof = True
                break
            buf = buf[pos:] + chunk
            pos = 0
        return len(buf) - pos >= n

    for row in range(1, count + 1):
        while fill(1) and buf[pos : pos + 1] in (b"\n", b"\r"):  # word2vec ends rows with a newline
            pos += 1
        if not fill(1):
            raise InputError(f"{path}: the header declares {count} words but the file ends after {row - 1} "
                                 "rows; the file is truncated: fix the header count or re-export it")
        end = buf.find(b" ", pos, pos + _MAX_BINARY_WORD + 1)
        while end < 0 and not eof and len(buf) - pos <= _MAX_BINARY_WORD:
            fill(len(buf) - pos + 1)
            end = buf.find(b" ", pos, pos + _MAX_BINARY_WORD + 1)
        if end < 0:
            raise InputError(f"{path}: binary row {row} has no word followed by a space; {path.name} "
                                 f"{_NOT_WORD2VEC}")
        word = buf[pos:end]
        pos = end + 1
        if not fill(width):
            raise InputError(f"{path}: binary row {row} ends after {len(buf) - pos} of its {width} value bytes; "
                                 "the file is truncated or its header's dimension is wrong: re-export it")
        yield row, word, buf[pos : pos + width]
        pos += width
    rest = buf[pos:] + (b"" if eof else handle.read(_MAX_HEADER))
    if rest.strip():
        raise InputError(f"{path}: more data follows the {count} rows the header declares; "
                             "fix the header count or re-export the file")


def _binary_block(path: Path, kept: list[bytes], row_numbers: list[int], words: list[str], dim: int) -> np.ndarray:
    block = np.frombuffer(b"".join(kept), dtype="<f4").astype(np.float32).reshape(len(kept), dim)  # (n, D)
    finite = np.isfinite(block).all(axis=1)  # (n,)
    if not finite.all():
        i = int(np.argmin(finite))
        raise InputError(f"{path}: binary row {row_numbers[i]} (word {words[i][:40]!r}) contains nan "
                             "or inf; remove or retrain that vector")
    return block


def _binary_chunks(path: Path, handle: IO[bytes], count: int, dim: int, rows: _Rows,
                   chunk_rows: int) -> Iterator[Chunk]:
    kept: list[bytes] = []
    words: list[str] = []
    row_numbers: list[int] = []
    for n_rows, raw_word, values in _binary_rows(path, handle, count, dim):
        try:
            word = raw_word.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: the word of binary row {n_rows} is not valid utf-8 (byte {exc.start}); "
                                 "re-export the file with utf-8 words") from exc
        if not word or word.split() != [word]:
            raise InputError(f"{path}: the word of binary row {n_rows} ({word[:40]!r}) is empty or holds "
                                 f"whitespace; {path.name} {_NOT_WORD2VEC}")
        kept_word = rows.keep(word, f"binary row {n_rows}")
        if kept_word is None:
            continue
        words.append(kept_word)
        kept.append(values)
        row_numbers.append(n_rows)
        if len(kept) == chunk_rows:
            yield words, _binary_block(path, kept, row_numbers, words, dim)
            kept, words, row_numbers = [], [], []
        if rows.full:
            break
    if kept:
        yield words, _binary_block(path, kept, row_numbers, words, dim)


_READ_ERRORS = (OSError, EOFError, zlib.error, lzma.LZMAError)


def _decompress_error(path: Path, compression: str, exc: BaseException) -> InputError:
    return InputError(f"{path}: cannot decompress its {compression} data ({exc}); the file is damaged "
                      "or truncated: download or export it again")


def _guarded(chunks: Iterator[Chunk], path: Path, compression: str | None) -> Iterator[Chunk]:
    """``chunks``, a damaged compressed stream turned into one :class:`InputError`."""
    try:
        yield from chunks
    except _READ_ERRORS as exc:
        if compression is None:
            raise
        raise _decompress_error(path, compression, exc) from exc


@contextmanager
def _opened(path: Path, lower: bool, max_vocab: int | None, unique: bool,
            chunk_rows: int) -> Iterator[tuple[int, int, bool, str | None, Iterator[Chunk]]]:
    """``path`` open: ``(count, dim, binary, compression, chunks)``; duplicates are logged on exit."""
    handle, compression = _open(path)
    rows = _Rows(path, lower, max_vocab, unique)
    with handle:
        try:
            header = handle.readline(_MAX_HEADER)
            if not header:
                raise InputError(f"{path} is empty; expected a word2vec file with an 'N D' header")
            count, dim = _parse_header(path, header)
            binary = _looks_binary(path, handle, dim)
        except _READ_ERRORS as exc:
            if compression is None:
                raise
            raise _decompress_error(path, compression, exc) from exc
        read = _binary_chunks if binary else _text_chunks
        yield count, dim, binary, compression, _guarded(read(path, handle, count, dim, rows, chunk_rows),
                                                       path, compression)
    rows.log_duplicates()


def _capacity(path: Path, count: int, dim: int, max_vocab: int | None, compression: str | None) -> int:
    """Rows to preallocate: the header's count, capped by ``max_vocab`` and, for a plain file, by
    what its size can hold (a text row needs at least ``2 * dim`` bytes), so a lying header cannot
    make the reader reserve more than the file could fill."""
    rows = count if max_vocab is None else min(count, max_vocab)
    if compression is None:
        rows = min(rows, path.stat().st_size // (2 * dim) + 1)
    return max(rows, 0)


def read_vec(
    path: str | os.PathLike[str], max_vocab: int | None = None, lower: bool = False, *, unique: bool = False
) -> tuple[list[str], np.ndarray]:
    """Read a word2vec file (text or binary, plain or compressed); returns ``(words, vectors)`` with
    vectors float32 ``(n, D)``.

    ``max_vocab`` keeps the first ``max_vocab`` distinct words (files are frequency-sorted, so these
    are the most frequent ones) and stops reading there, like MUSE's ``--max_vocab``.  ``lower``
    lowercases words before the duplicate check, like MUSE's training and evaluation reading;
    ``unique`` makes a repeated word an error (for uses that need one vector per word).  The
    header count is checked against the rows only when the file is read to its end.  Memory: the
    float32 matrix is allocated once (``min(N, max_vocab)`` rows) and filled chunk by chunk, never
    a list of rows; :func:`iter_vec` reads a file of any size in bounded memory.
    """
    path = Path(path)
    if max_vocab is not None and max_vocab < 1:
        raise InputError(f"max_vocab={max_vocab} for {path}; pass a positive number or None for all words")
    words: list[str] = []
    with _opened(path, lower, max_vocab, unique, _CHUNK_ROWS) as (count, dim, binary, compression, chunks):
        try:
            out = np.empty((_capacity(path, count, dim, max_vocab, compression), dim), dtype=np.float32)  # (cap, D)
        except MemoryError:  # a compressed file's header may claim any count: grow as rows come instead
            out = np.empty((min(count, 1 << 16), dim), dtype=np.float32)
        n = 0
        for chunk_words, block in chunks:
            if n + block.shape[0] > out.shape[0]:  # only if the size estimate was short: grow
                out = np.resize(out, (max(n + block.shape[0], 2 * out.shape[0]), dim))
            out[n : n + block.shape[0]] = block
            words.extend(chunk_words)
            n += block.shape[0]
    vectors = out[:n]  # (n, D) a view: n is the capacity unless duplicates or the file came up short
    nudge_zero_rows(vectors, str(path))
    logger.info("read %d words of dimension %d from %s%s%s", len(words), dim, path,
                " (binary)" if binary else "", f" ({compression})" if compression else "")
    return words, vectors


def vec_shape(path: str | os.PathLike[str]) -> tuple[int, int]:
    """The ``(N, D)`` a word2vec file's header declares (only the header is read)."""
    path = Path(path)
    with _opened(path, False, None, False, _CHUNK_ROWS) as (count, dim, *_):
        return count, dim


def iter_vec(
    path: str | os.PathLike[str], *, lower: bool = False, max_vocab: int | None = None,
    chunk_rows: int = _CHUNK_ROWS,
) -> Iterator[Chunk]:
    """The rows of a word2vec file as ``(words, vectors (k, D) float32)`` chunks of at most ``chunk_rows``.

    The rules of :func:`read_vec` (``lower``, first occurrence wins, ``max_vocab`` distinct words,
    null rows nudged), but only one chunk is in memory at a time (plus the set of words seen, for
    duplicates): a 2.5M x 300 file streams through in a few MB of vectors.  This is how MUSE's
    ``full_vocab`` export reads (``lower=False``, no ``max_vocab``).
    """
    path = Path(path)
    if max_vocab is not None and max_vocab < 1:
        raise InputError(f"max_vocab={max_vocab} for {path}; pass a positive number or None for all words")
    chunk_rows = max(1, int(chunk_rows))
    with _opened(path, lower, max_vocab, False, chunk_rows) as (*_, chunks):
        for words, block in chunks:
            nudge_zero_rows(block, str(path), whole=False)
            yield words, block


def write_vec(
    path: str | os.PathLike[str],
    words: Sequence[str],
    vectors: np.ndarray,
    *,
    digits: int = _FLOAT32_DIGITS,
) -> None:
    """Write ``words`` and ``vectors`` ``(n, D)`` in word2vec text format, atomically.

    The file is written to a temporary file in the same directory and renamed over ``path``
    (:func:`groc_base.fileio.atomic_write`), so readers never see half a file.  The default 9 significant digits
    reproduce float32 values exactly; MUSE, fastText and gensim read the result (``N D`` header,
    single spaces, ``\\n`` line ends).  A path ending in ``.gz`` is written gzip-compressed
    (gensim and :func:`read_vec` read it; MUSE needs it unpacked).
    """
    path = Path(path)
    matrix = np.asarray(vectors)
    if matrix.ndim != 2:
        raise InputError(f"vectors for {path} must be a 2-d (words, dim) array, got shape {matrix.shape}")
    if len(words) != matrix.shape[0]:
        raise InputError(f"{len(words)} words but {matrix.shape[0]} vectors for {path}; pass one vector per word")
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise InputError(f"nothing to write to {path}: shape {matrix.shape}; pass at least one word")
    if not np.issubdtype(matrix.dtype, np.number) or not np.isfinite(matrix).all():
        raise InputError(f"vectors for {path} contain nan, inf or non-numbers; fix them before writing")
    if not 1 <= digits <= 17:
        raise InputError(f"digits={digits}; pass a precision between 1 and 17 (9 keeps float32 exact)")
    # str.split() == [w] holds exactly for non-empty words without any (unicode) whitespace.
    bad = next((w for w in words if not isinstance(w, str) or w.split() != [w]), None)
    if bad is not None:
        raise InputError(
            f"word {bad!r} is empty or contains whitespace and cannot be written to {path}; "
            "replace the whitespace (e.g. with '_') or drop the word"
        )
    if len(set(words)) != len(words):
        logger.warning("%s: the word list has duplicates; readers will keep only the first", path)

    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"directory {directory} does not exist; create it before writing {path}")
    row_format = " ".join([f"%.{digits}g"] * matrix.shape[1])
    gzipped = path.suffix.lower() == ".gz"
    def write(raw: IO[bytes]) -> None:
        # A .gz path gets gzip (mtime 0: the same vectors give the same bytes).
        packed = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) if gzipped else None
        out = io.TextIOWrapper(packed or raw, encoding="utf-8", newline="\n")
        out.write(f"{matrix.shape[0]} {matrix.shape[1]}\n")
        for start in range(0, matrix.shape[0], _CHUNK_ROWS):
            block = matrix[start : start + _CHUNK_ROWS].tolist()  # python floats print exactly
            out.write(
                "".join(
                    f"{word} {row_format % tuple(row)}\n"
                    for word, row in zip(words[start : start + _CHUNK_ROWS], block, strict=True)
                )
            )
        out.flush()
        out.detach()  # raw belongs to atomic_write
        if packed is not None:
            packed.close()  # writes the gzip trailer (raw stays open)

    # Temp file beside path, fsync, rename; the file gets open()'s permissions (0666 minus the umask).
    atomic_write(path, write)
    logger.info("wrote %d vectors of dimension %d to %s", matrix.shape[0], matrix.shape[1], path)


def write_vec_chunks(
    path: str | os.PathLike[str],
    chunks: Iterable[Chunk],
    dim: int,
    *,
    digits: int = _FLOAT32_DIGITS,
) -> int:
    """Write ``(words, vectors (k, D))`` chunks as one word2vec text file, atomically; returns the rows written.

    For outputs larger than memory (a 2.5M-word export): only one chunk is held at a time.  The
    row count is known only at the end, so the header is written as a fixed-width placeholder
    and filled in before the rename: ``N D`` followed by spaces, which MUSE, fastText, gensim and
    :func:`read_vec` read as any header.  Plain text only (a ``.gz`` cannot be patched in place:
    use :func:`write_vec`).  Each chunk is checked as :func:`write_vec` checks its input.
    """
    path = Path(path)
    if path.suffix.lower() in _COMPRESSED_SUFFIXES:
        raise InputError(f"{path}: a streamed export is written as plain text; drop the {path.suffix} suffix")
    if not 1 <= digits <= 17:
        raise InputError(f"digits={digits}; pass a precision between 1 and 17 (9 keeps float32 exact)")
    row_format = " ".join([f"%.{digits}g"] * dim)
    placeholder = f"{'0':<20} {dim}\n"
    written = 0

    def write(raw: IO[bytes]) -> None:
        nonlocal written
        out = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        out.write(placeholder)
        for words, vectors in chunks:
            block = np.asarray(vectors)
            if block.ndim != 2 or block.shape != (len(words), dim):
                raise InputError(f"a chunk for {path} has {len(words)} words and vectors of shape {block.shape}; "
                                 f"pass one row of dimension {dim} per word")
            if not np.isfinite(block).all():
                raise InputError(f"vectors for {path} contain nan or inf; fix them before writing")
            bad = next((w for w in words if not isinstance(w, str) or w.split() != [w]), None)
            if bad is not None:
                raise InputError(f"word {bad!r} is empty or contains whitespace and cannot be written to {path}; "
                                 "replace the whitespace (e.g. with '_') or drop the word")
            rows = block.tolist()  # python floats print exactly
            out.write("".join(f"{word} {row_format % tuple(row)}\n" for word, row in zip(words, rows, strict=True)))
            written += len(words)
        if written == 0:
            raise InputError(f"nothing to write to {path}; pass at least one word")
        out.flush()
        header = f"{written} {dim}"
        out.seek(0)
        out.write(header.ljust(len(placeholder) - 1) + "\n")  # same length: the rows stay where they are
        out.flush()
        out.detach()  # raw belongs to atomic_write

    atomic_write(path, write)
    logger.info("wrote %d vectors of dimension %d to %s (streamed)", written, dim, path)
    return written
