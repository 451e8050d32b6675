"""A corpus from the user's own files: ``<out>/<lang>/{train,valid,test}.txt`` + ``<out>/prepare.json``.

:func:`prepare_language` is what ``polyglot-groc data prepare --lang xx --input FILE...`` runs. It
takes any language the registry knows (the built-in ten, or one from a languages file, see
:func:`langpairs.registry.load_registry`) and files in three shapes:

* plain text (``.txt`` or any other name, optionally ``.gz``), read as ``text="lines"`` (one
  sentence per line), ``"paragraphs"`` (one paragraph per line, split into sentences) or
  ``"running"`` (running text whose paragraphs are separated by blank lines; the lines of a
  paragraph are joined, so hard-wrapped text works). The choice is explicit: nothing is guessed.
* CoNLL-U (``.conllu``, ``.conllu.gz``): the FORM column of the syntactic words, so multiword-token
  ranges (``1-2``) and empty nodes (``1.1``) are skipped; the file is already tokenised, so the
  tokeniser does not touch it.

Text is decoded as strict UTF-8 and NFC-normalised. The tokeniser is named, recorded and by
default the language's (``toktok`` unless its registry entry says otherwise), so the same files
give the same corpus on every machine; ``auto`` is refused here because what it runs depends on
which Stanza models are installed.

Plain text is inspected before it is tokenised, because scraped and downloaded text carries more
than words: Leipzig's ``id<TAB>sentence`` lines (the shared data's own format), HTML/XML markup
(``<b>12</b>`` verse numbers, ``&amp;``, whole web pages: read by a parser, :mod:`langpairs.markup`,
which keeps corpus placeholders such as ``<unk>``), and metadata header lines at the top of a file
or block (``Title: ...``, ``Author: ...``). ``clean`` chooses what is removed: by default only
Leipzig ids (unambiguous); ``markup`` and ``headers`` on request. Whatever is found and kept is
logged as a warning with its count and the option that removes it, markup-like text left after
markup was removed is a warning with its count, and the manifest records both.

Splits are deterministic: units (sentences with ``split_by="line"``, documents with
``"document"``) keep their order, or are put in a seeded hash order with ``shuffle``; train comes
first, then valid, then test, cut by cumulative tokens (a unit belongs where its middle token
falls). ``valid``/``test`` are fractions of the tokens (``0 < f < 1``) or token counts (``>= 1``).
A *document* is a block of lines between blank lines in plain text, a ``# newdoc`` section in
CoNLL-U, and never spans two files. ``dedupe`` drops a sentence seen before (in any split), so no
sentence is in two splits.

Several languages can be prepared into one ``out``, one call each: a language's folder is built in a
temporary folder and renamed into place, and ``prepare.json`` is updated under a lock, so parallel
calls for different languages do not lose each other's entries. An existing language is replaced
only with ``overwrite=True``. Bad input (unknown language, empty / binary / non-UTF-8 file,
impossible split) raises before anything is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import json
import logging
import os
import re
import shutil
import zlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import is_int, option
from groc_base.errors import ConfigError, CorpusError
from groc_base.fileio import (
    atomic_write_bytes,
    make_temp_dir,
    named_for_user,
    publish_dir,
    removing_new_dirs,
    sweep_folder,
    sweep_stale_temporaries,
    write_then_rename,
)
from groc_base.textio import decode_text
from groc_base.wording import counted

from .corpus import SPLITS, check_token_lengths
from .markup import count_markup, strip_markup
from .registry import Language, LanguageRegistry, load_registry
from .tokenize import SentenceTokenizer, make_tokenizer

__all__ = [
    "CLEANING",
    "SPLIT_BY",
    "TEXT_FORMATS",
    "CleanedText",
    "clean_text",
    "PreparedLanguage",
    "SplitStats",
    "manifest_lock",
    "parse_split_size",
    "prepare_language",
]

logger = logging.getLogger(__name__)

MANIFEST_NAME = "prepare.json"
MANIFEST_FORMAT = 1  # the same manifest as langpairs.prepare: one file, entries per language
#: The lock file beside the manifest (see :func:`manifest_lock`).
LOCK_NAME = ".prepare.lock"

#: How plain-text input is read (CoNLL-U is recognised by its name).
TEXT_FORMATS: tuple[str, ...] = ("lines", "paragraphs", "running")
#: What the train/valid/test cut keeps whole.
SPLIT_BY: tuple[str, ...] = ("line", "document")
#: Tokenisers prepare_language accepts (``auto`` is machine-dependent, see the module docstring).
PREPARE_TOKENIZERS: tuple[str, ...] = ("toktok", "stanza", "whitespace")

#: What ``clean`` may remove from plain text: Leipzig sentence ids, HTML/XML markup, header lines.
CLEANING: tuple[str, ...] = ("ids", "markup", "headers")
#: Removed unless told otherwise: Leipzig ids are unambiguous (every line ``<number><TAB>``).
DEFAULT_CLEANING: tuple[str, ...] = ("ids",)

_LEIPZIG_LINE = re.compile(r"^\d+\t")
#: A metadata header line: a short capitalised key, a colon, a value ("Title: ...", "Release Date: ...").
_HEADER = re.compile(r"^[^\W\d_][\w'/-]*(?: [\w'/-]+){0,3}:[ \t]+\S")

_CONLLU_SUFFIXES = (".conllu", ".conllu.gz")
_PUNKT_SAMPLE_MAX_CHARS = 1_000_000
_BINARY_PROBE = 8192


# -- results ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SplitStats:
    """Counts of one written split (tokens without ``<eos>``)."""

    sentences: int
    tokens: int
    types: int
    sha256: str

    @property
    def type_token_ratio(self) -> float:
        return self.types / self.tokens if self.tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"sentences": self.sentences, "tokens": self.tokens, "types": self.types,
                "type_token_ratio": round(self.type_token_ratio, 4), "sha256": self.sha256}


@dataclass(frozen=True)
class PreparedLanguage:
    """What :func:`prepare_language` wrote: ``directory`` holds the splits, ``manifest`` is ``prepare.json``."""

    lang: str
    out: Path
    directory: Path
    manifest: Path
    splits: Mapping[str, SplitStats]
    #: The language's ``prepare.json`` entry (settings, inputs with sha256, counts).
    entry: Mapping[str, Any] = field(repr=False)

    @property
    def type_token_ratio(self) -> float:
        """Types / tokens over all three splits together."""
        return float(self.entry["counts"]["type_token_ratio"])

    def to_dict(self) -> dict[str, Any]:
        return {"lang": self.lang, "out": str(self.out), "directory": str(self.directory),
                "manifest": str(self.manifest), **json.loads(json.dumps(self.entry))}


# -- options ------------------------------------------------------------------------------------------
def parse_split_size(value: str | float | int, name: str = "valid") -> float | int:
    """``"0.1"`` -> 0.1 (a fraction of the tokens), ``"2000"`` -> 2000 (tokens); else :class:`ConfigError`."""
    flag = f"--{name}"
    usage = f"{flag} {value!r}: give a fraction between 0 and 1 (e.g. 0.1) or a whole number of tokens (e.g. 2000)"
    number: float | int
    if isinstance(value, bool):
        raise ConfigError(usage)
    if isinstance(value, str):
        text = value.strip()
        try:
            number = int(text) if text.isdigit() else float(text)
        except ValueError:
            raise ConfigError(usage) from None
    elif isinstance(value, (int, float)):
        number = value
    else:
        raise ConfigError(usage)
    if isinstance(number, float):
        if 0.0 < number < 1.0:
            return number
        raise ConfigError(usage)
    if number >= 1:
        return number
    raise ConfigError(usage)


# -- reading ------------------------------------------------------------------------------------------
@dataclass
class _Input:
    path: Path
    kind: str  # "conllu" or the text format
    raw: bytes  # as stored (gzip-compressed for .gz)
    text: str  # decoded, NFC


def _read_input(path: Path, text_format: str) -> _Input:
    """Checked contents of one input; every problem is a one-line :class:`CorpusError` naming the fix."""
    if not path.exists():
        raise CorpusError(f"input {path} does not exist; check the path")
    if not path.is_file():
        raise CorpusError(f"input {path} is not a file; give text (.txt), .conllu or .gz files")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"cannot read input {path} ({exc.strerror or exc}); check its permissions") from exc
    data = raw
    if path.name.endswith(".gz"):
        try:
            data = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise CorpusError(f"input {path} is not a valid gzip file ({exc}); re-compress it or give the "
                              f"uncompressed file") from exc
    if b"\x00" in data[:_BINARY_PROBE] or b"\x00" in data:
        raise CorpusError(f"input {path} looks binary (it holds NUL bytes), not text; give UTF-8 text, "
                          f".conllu or .gz files")
    text = decode_text(data, path, what="input", error=CorpusError, nfc=True)
    if not text.strip():
        raise CorpusError(f"input {path} is empty; give a file with text in it")
    check_token_lengths(text, f"input {path}")
    kind = "conllu" if path.name.endswith(_CONLLU_SUFFIXES) else text_format
    return _Input(path, kind, raw, text)


def parse_cleaning(clean: str | Sequence[str] | None) -> tuple[str, ...]:
    """``clean`` as a tuple of :data:`CLEANING` names (None: :data:`DEFAULT_CLEANING`; ``none``: nothing;
    ``all``: everything); a comma-separated string or a sequence."""
    if clean is None:
        return DEFAULT_CLEANING
    names = [c.strip() for c in clean.split(",")] if isinstance(clean, str) else [str(c).strip() for c in clean]
    names = [c for c in names if c]
    if names == ["none"]:
        return ()
    if names == ["all"]:
        return CLEANING
    bad = [c for c in names if c not in CLEANING]
    if bad:
        raise ConfigError(f"{option('clean', ','.join(names))}: {bad[0]!r} is unknown; use a comma-separated list of "
                          f"{', '.join(CLEANING)}, or all, or none")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class CleanedText:
    """What :func:`clean_text` made of a text, and what it found (counts per :data:`CLEANING` kind)."""

    #: The text with the asked-for kinds removed.
    text: str
    #: What was found of each kind, removed or not (kinds not found are absent).
    found: dict[str, int]
    #: The first piece found of each kind, as written (at most 60 characters).
    examples: dict[str, str]
    #: Markup-like pieces still in ``text`` after markup was removed (escaped markup such as
    #: ``&lt;b&gt;``, now ``<b>``, or broken tags); empty unless ``markup`` was cleaned.
    remaining: dict[str, int] = field(default_factory=dict)
    #: The first remaining piece of each kind.
    remaining_examples: dict[str, str] = field(default_factory=dict)
    #: Corpus placeholders (``<unk>``, ``<eos>``, ...) recognised as words, never as markup.
    placeholders: int = 0


def clean_text(text: str, clean: Sequence[str] = DEFAULT_CLEANING) -> CleanedText:
    """``text`` with the ``clean`` kinds removed, and what was found of each kind (:class:`CleanedText`).

    ``ids``: Leipzig's leading ``<number><TAB>`` when EVERY non-blank line has one (counted in
    lines); ``markup``: HTML/XML markup, read by a parser (:func:`langpairs.markup.strip_markup`:
    script and style with their content, comments, CDATA, doctype and tags removed, character
    references decoded, block elements ending paragraphs; corpus placeholders such as ``<unk>``
    kept and never counted), counted in tags, comments, declarations and references; ``headers``:
    metadata lines (``Key: value``) heading the text or a blank-line block, counted in lines. Kinds
    not in ``clean`` are counted and left in place.
    """
    found: dict[str, int] = {}
    examples: dict[str, str] = {}
    lines = text.split("\n")
    nonblank = [line for line in lines if line.strip()]
    if nonblank and all(_LEIPZIG_LINE.match(line) for line in nonblank):
        found["ids"] = len(nonblank)
        examples["ids"] = nonblank[0][:60]
        if "ids" in clean:
            lines = [_LEIPZIG_LINE.sub("", line) for line in lines]
    # Header runs: consecutive "Key: value" lines heading the text or a blank-line block, at most 20
    # each; when they make up most of the text it is dialogue or a glossary, not metadata.
    heads: list[int] = []
    run: list[int] = []
    at_start = True
    for i, line in enumerate(lines + [""]):
        if at_start and line.strip() and _HEADER.match(line.strip()):
            run.append(i)
            continue
        if run and len(run) <= 20:
            heads.extend(run)
        run = []
        at_start = not line.strip()
    if heads and 2 * len(heads) > len(nonblank):
        heads = []
    if heads:
        found["headers"] = len(heads)
        examples["headers"] = lines[heads[0]].strip()[:60]
        if "headers" in clean:
            drop = set(heads)
            lines = [line for i, line in enumerate(lines) if i not in drop]
    text = "\n".join(lines)
    remaining: dict[str, int] = {}
    remaining_examples: dict[str, str] = {}
    if "markup" in clean:
        markup = strip_markup(text)
        text, n, example, placeholders = markup.text, markup.found, markup.example, markup.placeholders
        if markup.remaining:
            remaining["markup"] = markup.remaining
            remaining_examples["markup"] = markup.remaining_example
    else:
        n, example, placeholders = count_markup(text)
    if n:
        found["markup"] = n
        examples["markup"] = example
    return CleanedText(text, found, examples, remaining, remaining_examples, placeholders)


_WHAT = {"ids": "Leipzig sentence ids", "markup": "HTML/XML tags or entities", "headers": "metadata header lines"}


def _report_cleaning(path: Path, result: CleanedText, cleaning: Sequence[str]) -> dict[str, dict[str, int]]:
    """Log what cleaning ``path`` removed and kept; its manifest entry ``{"removed": ..., "kept": ...}``.

    ``kept`` holds the kinds found but not asked to be removed, and markup-like text that is left
    after markup was removed (escaped markup, broken tags): each is warned about with its count.
    """
    removed = {k: n for k, n in result.found.items() if k in cleaning}
    left = {k: n for k, n in result.found.items() if k not in cleaning}
    if removed:
        logger.info("input %s: removed %s", path, ", ".join(f"{n} {_WHAT[k]}" for k, n in removed.items()))
    if result.placeholders:
        logger.info("input %s: %d corpus placeholders (such as <unk>) are words, not markup: kept", path,
                    result.placeholders)
    if left:
        logger.warning("input %s holds %s, kept as text; remove them with %s", path,
                       "; ".join(f"{n} {_WHAT[k]} (e.g. {result.examples[k]!r})" for k, n in left.items()),
                       option("clean", ",".join(k for k in CLEANING if k in left or k in cleaning)))
    for kind, n in result.remaining.items():
        logger.warning("input %s: %d markup-like pieces remain after removing markup (e.g. %r), kept as text: "
                       "escaped markup in the source (&lt;b&gt; is text that reads <b>) or broken tags; edit the "
                       "input if they are not text", path, n, result.remaining_examples[kind])
        left[kind] = left.get(kind, 0) + n
    return {"removed": removed, "kept": left}


def _blocks(text: str) -> Iterator[list[str]]:
    """Groups of non-blank lines separated by blank lines (stripped)."""
    block: list[str] = []
    for line in text.splitlines():
        if line.strip():
            block.append(line.strip())
        elif block:
            yield block
            block = []
    if block:
        yield block


def _conllu_documents(text: str, path: Path) -> list[list[list[str]]]:
    """Documents (``# newdoc`` sections) of sentences of syntactic-word FORMs."""
    docs: list[list[list[str]]] = [[]]
    sentence: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if sentence:
                docs[-1].append(sentence)
                sentence = []
            continue
        if line.startswith("#"):
            if line[1:].strip().startswith("newdoc") and not sentence and docs[-1]:
                docs.append([])
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise CorpusError(f"{path} line {lineno}: {len(cols)} tab-separated fields, conll-u needs 10; fix the "
                              f"line, or give the file as plain text without the .conllu name")
        if "-" in cols[0] or "." in cols[0]:  # multiword-token range / empty node
            continue
        form = "_".join(cols[1].split())
        if form:
            sentence.append(form)
    if sentence:
        docs[-1].append(sentence)
    return [d for d in docs if d]


def _documents(item: _Input, tokenizer: SentenceTokenizer | None) -> list[list[list[str]]]:
    """The input as documents of tokenised sentences."""
    if item.kind == "conllu":
        return _conllu_documents(item.text, item.path)
    assert tokenizer is not None
    docs: list[list[list[str]]] = []
    for block in _blocks(item.text):
        if item.kind == "lines":
            sentences = [tokenizer(line) for line in block]
        elif item.kind == "paragraphs":
            sentences = [s for line in block for s in tokenizer.sentences(line)]
        else:  # running: the block is one paragraph, hard-wrapped
            sentences = tokenizer.sentences(" ".join(block))
        sentences = [s for s in sentences if s]
        if sentences:
            docs.append(sentences)
    return docs


# -- splitting ----------------------------------------------------------------------------------------
def _hash_order(n: int, keys: Sequence[str], seed: int) -> list[int]:
    # A seeded order that is the same on every platform and Python version (no random module state).
    def key(i: int) -> bytes:
        return hashlib.blake2b(f"{seed}\x00{i}\x00{keys[i]}".encode(), digest_size=8).digest()

    return sorted(range(n), key=key)


def _assign(counts: Sequence[int], valid: float | int, test: float | int) -> np.ndarray:
    """Split index per unit (0 train, 1 valid, 2 test): contiguous, by cumulative tokens."""
    c = np.asarray(counts, dtype=np.float64)  # (U,)
    total = float(c.sum())
    v = valid * total if isinstance(valid, float) else float(valid)
    t = test * total if isinstance(test, float) else float(test)
    if v + t >= total:
        raise ConfigError(f"{option('valid')} and {option('test')} ask for {v + t:.0f} held-out tokens but the "
                          f"input has only {total:.0f}; ask for fewer (e.g. {option('valid', 0.1)} "
                          f"{option('test', 0.1)}) or add text")
    mid = np.cumsum(c) - c / 2  # (U,) a unit belongs where its middle token falls
    bounds = np.asarray([total - v - t, total - t])  # (2,) end of train, end of valid
    index = np.searchsorted(bounds, mid, side="right")  # (U,) in {0, 1, 2}
    # A split asked for gets at least one unit when there are units enough (small sizes, long units).
    if len(index) >= 3:
        if not (index == 2).any():
            index[-1] = 2
        if not (index == 1).any():
            first_test = int(np.argmax(index == 2))
            if first_test >= 2:
                index[first_test - 1] = 1
    return index


# -- the language folder and the manifest ----------------------------------------------------------------
@contextlib.contextmanager
def manifest_lock(out: Path) -> Iterator[None]:
    """An exclusive lock on ``out/.prepare.lock`` while the manifest is read, changed and written."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / LOCK_NAME, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"format": MANIFEST_FORMAT, "tool": "langpairs.prepare", "languages": {}}
    except (OSError, ValueError) as exc:
        raise CorpusError(f"{path} is unreadable ({exc}); move it away (the corpora next to it stay "
                          f"usable) or choose another {option('out')}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT \
            or not isinstance(manifest.get("languages"), dict):
        raise CorpusError(f"{path} is not a polyglot-groc prepare.json (format {MANIFEST_FORMAT}); move it away "
                          f"or choose another {option('out')}")
    return manifest


def _check_free(out: Path, lang: str, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"{option('out')} {out} is a file, not a folder; give a folder path")
    target = out / lang
    in_manifest = lang in _read_manifest(out / MANIFEST_NAME).get("languages", {}) if out.is_dir() else False
    if (target.exists() or in_manifest) and not overwrite:
        raise ConfigError(f"{target} already holds language {lang!r}; pass {option('overwrite', True)} to replace it, "
                          f"or choose another {option('out')}")


def _install_dir(tmp: Path, target: Path) -> None:
    """Rename the finished folder ``tmp`` to ``target``, replacing an old one (kept aside until then)."""
    publish_dir(tmp, target, overwrite=True)


def _sweep(out: Path, codes: Sequence[str]) -> None:
    """Remove what killed writers left in ``out``: temporaries of any name whose writer is gone,
    and older versions' ``.<code>.*.tmp`` folders of these languages."""
    sweep_folder(out)
    for code in codes:
        sweep_stale_temporaries(out / code)


def _write_manifest_then(tmp_manifest: Path, text: bytes, temps: Mapping[str, Path], out: Path) -> Path:
    """``fill`` of the manifest's write_then_rename: the manifest is written and synced first (a full
    disk fails here, with nothing in place yet), then each language folder is renamed into place."""
    with tmp_manifest.open("wb") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    for code, tmp in temps.items():
        _install_dir(tmp, out / code)
    return out / MANIFEST_NAME


def _toolkit_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("polyglot-groc")
    except PackageNotFoundError:
        return "unknown"


def _library_versions(tokenizer: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    names = {"toktok": ("nltk",), "stanza": ("stanza",), "whitespace": ()}[tokenizer]
    out: dict[str, str] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "unknown"
    return out


def _write_language(tmp: Path, code: str, language: Language, split_sentences: Mapping[str, list[list[str]]],
                    per_input: list[dict[str, Any]], text: str, tok: SentenceTokenizer | None, mode: str,
                    splitter: str | None, split_by: str, valid_size: float | int, test_size: float | int,
                    shuffle: bool, seed: int, dedupe: bool, cleaning: Sequence[str], duplicates: int,
                    n_units: int) -> tuple[dict[str, SplitStats], dict[str, Any]]:
    """Write the three splits into the temporary folder ``tmp``; their counts and the manifest entry."""
    stats: dict[str, SplitStats] = {}
    for split in SPLITS:
        sentences = split_sentences[split]
        data = ("\n".join(" ".join(s) for s in sentences) + "\n").encode("utf-8")
        atomic_write_bytes(tmp / f"{split}.txt", data)
        types = len(Counter(t for s in sentences for t in s))
        stats[split] = SplitStats(len(sentences), sum(len(s) for s in sentences), types,
                                  hashlib.sha256(data).hexdigest())
    all_types = len({t for split in SPLITS for s in split_sentences[split] for t in s})
    all_tokens = sum(s.tokens for s in stats.values())
    entry: dict[str, Any] = {
        "tool": "langpairs.files.prepare_language",
        "toolkit_version": _toolkit_version(),
        "language": {"code": code, **language.to_table()},
        "inputs": per_input,
        "text": text,
        "nfc": True,
        "tokenizer": {"name": tok.name if tok is not None else mode,
                      "apostrophe": language.apostrophe if mode == "toktok" else None,
                      "sentence_splitter": splitter, "versions": _library_versions(mode),
                      "applies_to": "text inputs (conll-u is read as its syntactic words)"},
        "split": {"by": split_by, "valid": valid_size, "test": test_size, "order": "seeded hash" if shuffle
                  else "text order (held-out last)", "shuffle": shuffle, "seed": seed, "units": n_units},
        "dedupe": dedupe,
        "clean": list(cleaning),
        "duplicates_dropped": duplicates,
        "counts": {"sentences": sum(s.sentences for s in stats.values()), "tokens": all_tokens,
                   "types": all_types, "type_token_ratio": round(all_types / all_tokens, 4)},
        "splits": {split: s.to_dict() for split, s in stats.items()},
    }
    return stats, entry


# -- the workflow ------------------------------------------------------------------------------------
def prepare_language(
    *,
    lang: str,
    inputs: Sequence[Path | str],
    out: Path | str,
    registry: LanguageRegistry | None = None,
    text: str = "lines",
    tokenizer: str | None = None,
    split_by: str = "line",
    valid: float | int | str = 0.1,
    test: float | int | str = 0.1,
    shuffle: bool = False,
    seed: int = 0,
    dedupe: bool = False,
    clean: str | Sequence[str] | None = None,
    overwrite: bool = False,
) -> PreparedLanguage:
    """Tokenise ``inputs`` (text or CoNLL-U, plain or ``.gz``) into ``out/<lang>/{train,valid,test}.txt``.

    Args:
        lang: a code the registry knows (built in, or from a languages file), or its ISO 639-3/639-2
            code or English name (``tgl``, ``Tagalog``).
        inputs: the files, read in the order given.
        out: the corpus folder; ``out/prepare.json`` gets (or updates) this language's entry.
        registry: the languages (default :func:`langpairs.registry.load_registry`: built-in plus
            ``$POLYGLOT_GROC_LANGUAGES``).
        text: how plain text is read: ``lines`` (a sentence per line), ``paragraphs`` (a paragraph
            per line) or ``running`` (paragraphs between blank lines).
        tokenizer: ``toktok``, ``stanza`` or ``whitespace``; default the language's registry entry.
        split_by: ``line`` (sentences) or ``document`` (blank-line blocks / CoNLL-U ``# newdoc``).
        valid, test: fractions of the tokens (``0.1``) or token counts (``2000``).
        shuffle, seed: put the units in a seeded hash order before cutting (default: text order,
            held-out text last).
        dedupe: drop repeated sentences (the first is kept).
        clean: what to remove from plain text before tokenising (:func:`clean_text`): a list (or
            comma-separated string) of ``ids`` (Leipzig's leading sentence ids), ``markup`` (HTML/XML
            read by a parser, :mod:`langpairs.markup`; placeholders such as ``<unk>`` kept), ``headers``
            (``Key: value`` metadata lines heading the text or a block); ``all`` or ``none``. Default:
            ``ids`` only; markup and headers found and kept, and markup-like text left after removing
            markup, are warned about with their counts.
        overwrite: replace ``out/<lang>`` if it exists.

    Returns:
        The written splits' counts and the ``prepare.json`` entry (:class:`PreparedLanguage`);
        ``to_dict()`` is what ``polyglot-groc data prepare --lang ... --full`` prints.

    Raises:
        UnknownLanguageError: ``lang`` is not in the registry (the message says how to add it).
        ConfigError: a bad option (text, split_by, tokenizer, sizes, seed), no inputs, or ``out``
            already holding ``lang`` without ``overwrite``.
        CorpusError: an input that is missing, empty, binary, not UTF-8, a broken gzip or CoNLL-U
            file; a split that would come out empty.
        ResourceMissingError: ``tokenizer="stanza"`` without its model installed.
    """
    registry = registry if registry is not None else load_registry()
    language = registry.resolve(lang)  # a code, or its ISO 639-3/639-2 code or name ("tgl", "Tagalog")
    code = language.code
    if text not in TEXT_FORMATS:
        raise ConfigError(f"{option('text', text)} is unknown; use lines (a sentence per line), paragraphs (a "
                          "paragraph per line) or running (paragraphs between blank lines)")
    if split_by not in SPLIT_BY:
        raise ConfigError(f"{option('split_by', split_by)} is unknown; use line or document")
    mode = tokenizer if tokenizer is not None else language.tokenizer
    if mode == "auto":
        raise ConfigError("tokenizer 'auto' gives different corpora depending on which stanza models are installed; "
                          "name one: toktok (the default, rule-based), stanza or whitespace (pre-tokenised text)")
    if mode not in PREPARE_TOKENIZERS:
        raise ConfigError(f"{option('tokenizer', mode)} is unknown; use {', '.join(PREPARE_TOKENIZERS)}")
    valid_size, test_size = parse_split_size(valid, "valid"), parse_split_size(test, "test")
    cleaning = parse_cleaning(clean)
    if not is_int(seed):
        raise ConfigError(f"{option('seed', seed)} must be an integer")
    if isinstance(inputs, (str, Path)):
        inputs = [inputs]
    paths = [Path(p).expanduser() for p in inputs]
    if not paths:
        raise ConfigError(f"no input files; pass {option('inputs')} FILE (text, .conllu or .gz), one or more")
    seen_paths: set[Path] = set()
    for path in paths:
        if path.resolve() in seen_paths:
            raise ConfigError(f"input {path} is given twice; give each file once")
        seen_paths.add(path.resolve())
    out = Path(out).expanduser()
    _check_free(out, code, overwrite)

    items = [_read_input(path, text) for path in paths]
    cleaned: dict[Path, dict[str, Any]] = {}
    for item in items:
        if item.kind == "conllu":
            continue
        result = clean_text(item.text, cleaning)
        item.text = result.text
        cleaned[item.path] = _report_cleaning(item.path, result, cleaning)
    plain = [i for i in items if i.kind != "conllu"]
    tok: SentenceTokenizer | None = None
    splitter: str | None = None
    if plain:
        sample = None
        if mode == "toktok" and text != "lines":
            sample = "\n".join(i.text for i in plain)[:_PUNKT_SAMPLE_MAX_CHARS]
            splitter = f"nltk punkt trained on the first {len(sample)} characters of the input"
        elif mode == "stanza" and text != "lines":
            splitter = "stanza"
        tok = make_tokenizer(code, mode, stanza_lang=language.stanza_lang, sentence_sample=sample,
                             apostrophe=language.apostrophe)

    # Units: sentences (split_by line) or documents, each a list of sentences.
    units: list[list[list[str]]] = []
    seen: set[tuple[str, ...]] = set()
    duplicates = 0
    per_input: list[dict[str, Any]] = []
    for item in items:
        docs = _documents(item, tok)
        n_sent = n_tok = 0
        for doc in docs:
            kept: list[list[str]] = []
            for sentence in doc:
                key = tuple(sentence)
                if dedupe and key in seen:
                    duplicates += 1
                    continue
                seen.add(key)
                kept.append(sentence)
                n_sent += 1
                n_tok += len(sentence)
            if not kept:
                continue
            if split_by == "document":
                units.append(kept)
            else:
                units.extend([s] for s in kept)
        if n_tok == 0:
            raise CorpusError(f"input {item.path} has no "
                              f"tokens{' left after ' + option('dedupe', True) if dedupe else ''}; "
                              f"give a file with text in it")
        per_input.append({"path": str(item.path.resolve()), "sha256": hashlib.sha256(item.raw).hexdigest(),
                          "bytes": len(item.raw), "format": item.kind if item.kind == "conllu" else f"text/{item.kind}",
                          "sentences": n_sent, "tokens": n_tok,
                          **({"cleaning": cleaned[item.path]} if item.path in cleaned else {})})

    order = list(range(len(units)))
    if shuffle:
        order = _hash_order(len(units), [" ".join(" ".join(s) for s in u) for u in units], seed)
    units = [units[i] for i in order]
    counts = [sum(len(s) for s in u) for u in units]
    assignment = _assign(counts, valid_size, test_size)
    split_sentences: dict[str, list[list[str]]] = {s: [] for s in SPLITS}
    for unit, index in zip(units, assignment, strict=True):
        split_sentences[SPLITS[int(index)]].extend(unit)
    unit_name = "documents" if split_by == "document" else "sentences"
    for split in SPLITS:
        if not split_sentences[split]:
            fix = (f"use {option('split_by', 'line')}, or give more documents" if split_by == "document"
                   else f"give more text, or larger {option('valid')}/{option('test')}")
            raise CorpusError(f"{code}: the {split} split came out empty ({len(units)} {unit_name}, "
                              f"{counted(sum(counts), 'token')}); {fix}")

    # Write the folder beside its final place, then rename it in (and the manifest under a lock). A new
    # --out this call made goes again if it fails; nothing is in place until the manifest is written.
    with removing_new_dirs(out, litter=(LOCK_NAME,)):
        out.mkdir(parents=True, exist_ok=True)
        _sweep(out, [code])
        tmp = make_temp_dir(out, code)
        try:
            stats, entry = _write_language(tmp, code, language, split_sentences, per_input, text, tok, mode,
                                           splitter, split_by, valid_size, test_size, shuffle, seed, dedupe,
                                           cleaning, duplicates, len(units))
            with manifest_lock(out):
                _check_free(out, code, overwrite)  # another process may have prepared it meanwhile
                manifest_path = out / MANIFEST_NAME
                manifest = _read_manifest(manifest_path)
                manifest["languages"][code] = entry
                data = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
                write_then_rename(out, MANIFEST_NAME,
                                  lambda tmp_manifest: _write_manifest_then(tmp_manifest, data, {code: tmp}, out))
        except OSError as exc:  # a full disk: name the user's file, not the temporary folder's
            renamed = named_for_user(exc, tmp, out / code)
            if renamed is exc:
                raise
            raise renamed from exc
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    logger.info("%s: train %d / valid %d / test %d tokens (%s) in %s", code, stats["train"].tokens,
                stats["valid"].tokens, stats["test"].tokens, mode, out / code)
    return PreparedLanguage(code, out, out / code, out / MANIFEST_NAME, stats, entry)

