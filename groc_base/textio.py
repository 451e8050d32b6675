"""The one reader of user text: files, compressed files and standard input, decoded as strict UTF-8.

Every reader of text a user gives (corpora, dictionaries, word lists, vector files, similarity
data sets, lexicon tab/TSV files, languages files, ``--input`` files and standard input) decodes
through :func:`decode_text` (or reads through :func:`read_text` / :func:`iter_lines`, built on it),
so invalid bytes always give the same one-line error: the source by name (the file's path, or
"standard input"), the line and byte offset of the first bad byte, the bytes there, and the fix
(``iconv``, shaped for a file, a compressed file or a pipe).

A source is a path (``.gz``, ``.xz`` and ``.bz2`` are decompressed, chosen by the name), ``"-"``
(:data:`STDIN`: the process's standard input, read as bytes) or an open binary stream. A leading
byte-order mark is dropped; ``nfc=True`` NFC-normalises the text, as corpora are (so that "é"
typed two ways is one word). Decoding is strict: Python's ``errors="replace"``/``"ignore"`` would
turn a Latin-1 file into words that exist nowhere else, silently.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import shlex
import sys
import unicodedata
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, cast

from groc_base.errors import GrocError, InputError

__all__ = ["STDIN", "STDIN_NAME", "Source", "decode_text", "iter_lines", "open_bytes", "read_bytes", "read_text",
           "source_label", "utf8_error"]

#: The source name for the process's standard input (as ``--input -``).
STDIN = "-"
#: How standard input is named in messages.
STDIN_NAME = "standard input"

#: What a reader takes: a path, :data:`STDIN`, or an open binary stream.
Source = str | os.PathLike[str] | IO[bytes]

#: Suffix -> (compression name, opener of its binary stream).
_DECOMPRESS: dict[str, tuple[str, Callable[[Path], IO[bytes]]]] = {
    ".gz": ("gzip", lambda p: cast(IO[bytes], gzip.open(p, "rb"))),
    ".xz": ("xz", lambda p: cast(IO[bytes], lzma.open(p, "rb"))),
    ".bz2": ("bzip2", lambda p: cast(IO[bytes], bz2.open(p, "rb"))),
}
_SHOW_BYTES = 4  # bytes shown from the first bad one
_BINARY_PROBE = 8192  # NUL bytes this early mean binary data, not text in another encoding


def _is_stdin(source: object) -> bool:
    return isinstance(source, str) and source == STDIN


def source_label(source: Source | None, what: str = "") -> str:
    """How messages name ``source``: ``"standard input"``, or ``"<what> <path>"`` (``what`` such as
    ``"dictionary file"``; the bare path without it), or a stream's name."""
    if source is None:
        return what or "the text"
    if _is_stdin(source) or source is sys.stdin or source is getattr(sys.stdin, "buffer", None):
        return STDIN_NAME
    if isinstance(source, (str, os.PathLike)):
        name = str(Path(source))
    else:
        raw = getattr(source, "name", None)
        if not isinstance(raw, str) or not raw or raw.startswith("<"):
            return "the input stream"
        name = raw
    return f"{what} {name}" if what else name


def _compression(source: Source | None) -> str | None:
    if isinstance(source, (str, os.PathLike)) and not _is_stdin(source):
        suffix = Path(source).suffix.lower()
        return _DECOMPRESS[suffix][0] if suffix in _DECOMPRESS else None
    return None


def _fix(source: Source | None, data: bytes, start: int) -> str:
    """How to make the source UTF-8, shaped for a pipe, a compressed file or a plain file."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    elif b"\x00" in data[:_BINARY_PROBE]:
        return "it holds NUL bytes, so it looks binary, not text: give UTF-8 text"
    else:
        encoding = "latin1"
    guess = f"({encoding} is a guess: use the encoding it was written in)" if encoding == "latin1" else ""
    iconv = f"iconv -f {encoding} -t utf-8"
    if source is None or not isinstance(source, (str, os.PathLike)):
        return f"convert it to utf-8, e.g. with `{iconv}` {guess}".rstrip()
    if _is_stdin(source):
        return f"pipe it through `{iconv}` first {guess}".rstrip()
    path = Path(source)
    compression = _compression(path)
    if compression is not None:
        tool = compression  # the command line tool of each compression has its name
        inner = Path(path.name[: -len(path.suffix)])  # "a.txt" of "a.txt.gz"
        new = path.with_name(f"{inner.stem}.utf8{inner.suffix}{path.suffix}")
        return (f"re-encode its text as utf-8, e.g. `{tool} -dc {shlex.quote(str(path))} | {iconv} | {tool} > "
                f"{shlex.quote(str(new))}` {guess}").rstrip()
    new = path.with_name(f"{path.stem}.utf8{path.suffix}")
    return f"re-encode it as utf-8, e.g. `{iconv} {shlex.quote(str(path))} > {shlex.quote(str(new))}` {guess}".rstrip()


def utf8_error(data: bytes, exc: UnicodeDecodeError, source: Source | None, *, what: str = "",
               error: type[GrocError] = InputError, first_line: int = 1, first_offset: int = 0) -> GrocError:
    """The one-line error for ``data`` (read from ``source``) failing to decode as UTF-8 at ``exc.start``.

    ``first_line``/``first_offset``: where ``data`` starts in the source, when it is one line or
    one chunk of it (a streaming reader), so the message gives the source's own line and offset.
    """
    line = first_line + data.count(b"\n", 0, exc.start)
    offset = first_offset + exc.start
    where = " of its uncompressed text" if _compression(source) else ""
    return error(f"{source_label(source, what)}: line {line} is not valid utf-8 (byte offset {offset}{where}: "
                 f"{data[exc.start:exc.start + _SHOW_BYTES]!r}); {_fix(source, data, exc.start)}")


def decode_text(data: bytes, source: Source | None, *, what: str = "", error: type[GrocError] = InputError,
                nfc: bool = False, first_line: int = 1, first_offset: int = 0) -> str:
    """``data`` (read from ``source``) decoded as strict UTF-8, a leading byte-order mark dropped,
    NFC-normalised with ``nfc``; invalid bytes raise ``error`` (:func:`utf8_error`)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise utf8_error(data, exc, source, what=what, error=error, first_line=first_line,
                         first_offset=first_offset) from exc
    if first_offset == 0:
        text = text.removeprefix("\ufeff")
    return unicodedata.normalize("NFC", text) if nfc else text


@contextmanager
def open_bytes(source: Source, *, what: str = "file", error: type[GrocError] = InputError) -> Iterator[IO[bytes]]:
    """``source`` as a binary stream: a path (decompressed by its ``.gz``/``.xz``/``.bz2`` suffix),
    :data:`STDIN` (the process's standard input, as bytes), or an open binary stream (not closed
    here). A missing or unreadable path raises ``error`` naming it."""
    if _is_stdin(source):
        # A text stdin without a byte buffer (replaced by a caller) is read as it is: its lines are str.
        yield cast(IO[bytes], getattr(sys.stdin, "buffer", sys.stdin))
        return
    if not isinstance(source, (str, os.PathLike)):
        yield source
        return
    path = Path(source)
    suffix = path.suffix.lower()
    try:
        handle = _DECOMPRESS[suffix][1](path) if suffix in _DECOMPRESS else path.open("rb")
    except FileNotFoundError as exc:
        raise error(f"{what} {path} does not exist; check the path") from exc
    except OSError as exc:
        raise error(f"cannot read {what} {path} ({exc.strerror or exc}); check the file and its permissions") from exc
    with handle:
        yield handle


def _read_all(handle: IO[bytes], source: Source, what: str, error: type[GrocError]) -> bytes:
    try:
        data = handle.read()
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        compression = _compression(source)
        if compression is not None:
            raise error(f"{source_label(source, what)} is not valid {compression} data ({exc}); re-compress it or "
                        "give the uncompressed file") from exc
        raise error(f"cannot read {source_label(source, what)} ({exc}); check the file and its permissions") from exc
    return data if isinstance(data, bytes) else data.encode("utf-8")  # a text stdin: already decoded


def read_bytes(path: Source, what: str, error: type[GrocError] = InputError) -> bytes:
    """The bytes of ``path`` (decompressed for ``.gz``/``.xz``/``.bz2``; :data:`STDIN` reads standard
    input); a missing, unreadable or damaged file raises ``error`` naming it."""
    source = Path(path) if isinstance(path, os.PathLike) else path
    with open_bytes(source, what=what, error=error) as handle:
        return _read_all(handle, source, what, error)


def read_text(source: Source, *, what: str = "file", error: type[GrocError] = InputError, nfc: bool = False) -> str:
    """The whole text of ``source`` (a path, :data:`STDIN` or a binary stream), strictly decoded
    (:func:`decode_text`). One C-speed decode; for unbounded input prefer :func:`iter_lines`."""
    return decode_text(read_bytes(source, what, error), source, what=what, error=error, nfc=nfc)


def iter_lines(source: Source, *, what: str = "file", error: type[GrocError] = InputError,
               nfc: bool = False) -> Iterator[str]:
    """The lines of ``source`` one at a time (memory bounded by the longest line), without their
    ``\\n`` or ``\\r\\n``; each line is decoded as it is read, so a bad byte is reported with its
    line and offset even when it comes after gigabytes of good text. Lines split on ``\\n`` only,
    so a Unicode line separator inside a line stays in it."""
    with open_bytes(source, what=what, error=error) as handle:
        offset = 0
        lineno = 0
        try:
            for raw in handle:
                lineno += 1
                if isinstance(raw, str):  # a text stdin (replaced by a caller): already decoded
                    line = (raw[:-1] if raw.endswith("\n") else raw).removesuffix("\r")
                    yield unicodedata.normalize("NFC", line) if nfc else line
                    continue
                text = decode_text(raw, source, what=what, error=error, nfc=nfc, first_line=lineno,
                                   first_offset=offset)
                offset += len(raw)
                yield (text[:-1] if text.endswith("\n") else text).removesuffix("\r")
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            compression = _compression(source)
            kind = f"valid {compression} data" if compression else "readable"
            raise error(f"{source_label(source, what)} is not {kind} after line {lineno} ({exc}); "
                        "check or re-create the file") from exc
