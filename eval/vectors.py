"""Read and write word vectors in word2vec text format (``.vec``), as MUSE and fastText do.

The format is a header line ``N D`` followed by ``N`` rows ``word v1 ... vD`` separated by single
spaces.  The reader is strict where MUSE is lenient: MUSE silently drops undecodable bytes
(``errors='ignore'``) and skips rows of the wrong dimension with a warning, which hides truncated or
corrupted files and shifts every later word's frequency rank.  Here each of those is an
:class:`~eval.errors.EvalInputError` naming the file, the line and the fix.  Duplicate words are the
one leniency kept from MUSE: the first occurrence wins and the rest are counted in one warning.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eval.errors import EvalInputError

logger = logging.getLogger(__name__)

__all__ = ["read_vec", "write_vec", "vocabulary_index"]

# Rows are converted to floats in chunks: one numpy conversion per chunk instead of per row keeps
# reading fast, and a chunk of 300-d rows is a few MB of strings at most.
_CHUNK_ROWS = 4096
# float32 needs 9 significant digits to survive a text round trip bit-for-bit.
_FLOAT32_DIGITS = 9


def vocabulary_index(words: Sequence[str], lower: bool = False) -> dict[str, int]:
    """Map each word to the row of its FIRST occurrence (lowercased first when ``lower``).

    This is the lookup MUSE builds while reading (``word2id``), where a later duplicate never
    replaces an earlier, more frequent word.
    """
    keys = [w.lower() for w in words] if lower else list(words)
    # dict() keeps the last value for a repeated key, so feed it the rows in reverse: the first
    # occurrence is then written last and wins.  Built in C, no Python loop over the vocabulary.
    return dict(zip(reversed(keys), range(len(keys) - 1, -1, -1), strict=True))


def _parse_header(path: Path, raw: bytes) -> tuple[int, int]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise EvalInputError(
            f"{path}: line 1 is not valid utf-8 (byte {exc.start}); re-encode the file as utf-8"
        ) from exc
    fields = text.split()
    try:
        if len(fields) != 2:
            raise ValueError(text)
        count, dim = int(fields[0]), int(fields[1])
    except ValueError as exc:
        raise EvalInputError(
            f"{path}: line 1 must be the header 'N D' (word count and dimension), got {text.strip()[:60]!r}; "
            "add the header (glove files have none: prepend '<rows> <dim>')"
        ) from exc
    if count < 1 or dim < 1:
        raise EvalInputError(
            f"{path}: line 1 declares {count} words of dimension {dim}; both must be positive, fix the header"
        )
    return count, dim


def _convert_chunk(path: Path, fields: list[str], line_numbers: list[int], dim: int) -> np.ndarray:
    """Turn the whitespace-split values of ``len(line_numbers)`` rows into a float32 block."""
    try:
        block = np.array(fields, dtype=np.float32).reshape(len(line_numbers), dim)  # (rows, dim)
    except ValueError as exc:
        # Slow path, only on error: find the row holding the token numpy could not parse.
        for row, lineno in enumerate(line_numbers):
            for token in fields[row * dim : (row + 1) * dim]:
                try:
                    float(token)
                except ValueError:
                    raise EvalInputError(
                        f"{path}: line {lineno} has the non-numeric value {token[:40]!r}; "
                        "each row must be a word followed by numbers"
                    ) from exc
        raise EvalInputError(f"{path}: unparsable values near line {line_numbers[0]}; {exc}") from exc
    finite = np.isfinite(block).all(axis=1)  # (rows,)
    if not finite.all():
        lineno = line_numbers[int(np.argmin(finite))]
        raise EvalInputError(f"{path}: line {lineno} contains nan or inf; remove or retrain that vector")
    return block


def read_vec(
    path: str | os.PathLike[str], max_vocab: int | None = None, lower: bool = False
) -> tuple[list[str], np.ndarray]:
    """Read a word2vec text file; returns ``(words, vectors)`` with vectors float32 ``(n, D)``.

    ``max_vocab`` keeps the first ``max_vocab`` distinct words (files are frequency-sorted, so these
    are the most frequent ones) and stops reading there, like MUSE's ``--max_vocab``.  ``lower``
    lowercases words before the duplicate check, like MUSE without ``full_vocab``.  The header
    count is checked against the rows only when the file is read to its end.
    """
    path = Path(path)
    if max_vocab is not None and max_vocab < 1:
        raise EvalInputError(f"max_vocab={max_vocab} for {path}; pass a positive number or None for all words")
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise EvalInputError(f"cannot open vector file {path}: {exc.strerror}; check the path") from exc

    words: list[str] = []
    seen: set[str] = set()
    blocks: list[np.ndarray] = []
    fields: list[str] = []
    pending_lines: list[int] = []
    duplicates = 0
    duplicate_examples: list[str] = []
    rows = 0
    first_blank: int | None = None
    reached_end = True

    with handle:
        header = handle.readline()
        if not header:
            raise EvalInputError(f"{path} is empty; expected a word2vec text file with an 'N D' header")
        count, dim = _parse_header(path, header)
        # Binary handles split on b"\n" only: a word holding another unicode line separator
        # (fastText vocabularies have some) stays on its row.
        for lineno, raw in enumerate(handle, start=2):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise EvalInputError(
                    f"{path}: line {lineno} is not valid utf-8 (byte {exc.start}); re-encode the file as utf-8"
                ) from exc
            line = line.rstrip("\r\n")
            if not line.strip():
                # Blank lines are tolerated only at the end of the file (editors add them).
                if first_blank is None:
                    first_blank = lineno
                continue
            if first_blank is not None:
                raise EvalInputError(f"{path}: line {first_blank} is blank inside the data; delete it")
            word, _, rest = line.partition(" ")
            values = rest.split()
            if not word:
                raise EvalInputError(f"{path}: line {lineno} starts with a space (empty word); remove it")
            if len(values) != dim:
                raise EvalInputError(
                    f"{path}: line {lineno} (word {word[:40]!r}) has {len(values)} values but the header "
                    f"says {dim}; the file is truncated or the word contains a space, regenerate it"
                )
            rows += 1
            if rows > count:
                raise EvalInputError(
                    f"{path}: line {lineno} is row {rows} but the header declares {count} words; fix the header count"
                )
            if lower:
                word = word.lower()
            if word in seen:
                duplicates += 1
                if len(duplicate_examples) < 5:
                    duplicate_examples.append(word)
                continue
            seen.add(word)
            words.append(word)
            fields.extend(values)
            pending_lines.append(lineno)
            if len(pending_lines) == _CHUNK_ROWS:
                blocks.append(_convert_chunk(path, fields, pending_lines, dim))
                fields, pending_lines = [], []
            if max_vocab is not None and len(words) >= max_vocab:
                reached_end = False
                break
    if pending_lines:
        blocks.append(_convert_chunk(path, fields, pending_lines, dim))

    if reached_end and rows != count:
        raise EvalInputError(
            f"{path}: the header declares {count} words but the file has {rows} rows; "
            f"fix the header to '{rows} {dim}' or re-export the file"
        )
    if duplicates:
        logger.warning(
            "%s: %d duplicate word(s) skipped, first occurrence kept (e.g. %s)",
            path,
            duplicates,
            ", ".join(repr(w) for w in duplicate_examples),
        )
    vectors = np.concatenate(blocks, axis=0) if blocks else np.zeros((0, dim), dtype=np.float32)  # (n, D)
    zero = int((~vectors.any(axis=1)).sum())
    if zero:
        # MUSE nudges null vectors (vect[0] = 0.01); we keep the data and let the cosine code treat
        # a zero vector as similar to nothing.
        logger.warning("%s: %d all-zero vector(s); they have cosine 0 with every word", path, zero)
    logger.info("read %d words of dimension %d from %s", len(words), dim, path)
    return words, vectors


def write_vec(
    path: str | os.PathLike[str],
    words: Sequence[str],
    vectors: np.ndarray,
    *,
    digits: int = _FLOAT32_DIGITS,
) -> None:
    """Write ``words`` and ``vectors`` ``(n, D)`` in word2vec text format, atomically.

    The file is written to a temporary file in the same directory and moved over ``path`` with
    :func:`os.replace`, so readers never see half a file.  The default 9 significant digits
    reproduce float32 values exactly; MUSE, fastText and gensim read the result (``N D`` header,
    single spaces, ``\\n`` line ends).
    """
    path = Path(path)
    matrix = np.asarray(vectors)
    if matrix.ndim != 2:
        raise EvalInputError(f"vectors for {path} must be a 2-d (words, dim) array, got shape {matrix.shape}")
    if len(words) != matrix.shape[0]:
        raise EvalInputError(f"{len(words)} words but {matrix.shape[0]} vectors for {path}; pass one vector per word")
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise EvalInputError(f"nothing to write to {path}: shape {matrix.shape}; pass at least one word")
    if not np.issubdtype(matrix.dtype, np.number) or not np.isfinite(matrix).all():
        raise EvalInputError(f"vectors for {path} contain nan, inf or non-numbers; fix them before writing")
    if not 1 <= digits <= 17:
        raise EvalInputError(f"digits={digits}; pass a precision between 1 and 17 (9 keeps float32 exact)")
    # str.split() == [w] holds exactly for non-empty words without any (unicode) whitespace.
    bad = next((w for w in words if not isinstance(w, str) or w.split() != [w]), None)
    if bad is not None:
        raise EvalInputError(
            f"word {bad!r} is empty or contains whitespace and cannot be written to {path}; "
            "replace the whitespace (e.g. with '_') or drop the word"
        )
    if len(set(words)) != len(words):
        logger.warning("%s: the word list has duplicates; readers will keep only the first", path)

    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise EvalInputError(f"directory {directory} does not exist; create it before writing {path}")
    row_format = " ".join([f"%.{digits}g"] * matrix.shape[1])
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
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
            os.fsync(out.fileno())
        # mkstemp creates 0600 files; give the result the usual permissions of a data file.
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except OSError:
            pass
        raise
    logger.info("wrote %d vectors of dimension %d to %s", matrix.shape[0], matrix.shape[1], path)
