"""Build ``<out>/<lang>/{train,valid,test}.txt`` for the thesis's ten languages from the shared text.

Mulcaire (2022, §5.3) samples ~1M training and ~100k held-out words per language from wiki40b,
segmented with Stanza. wiki40b is not available offline, so this samples a fixed token budget
per language (default 200k / 20k / 20k) from the sources in ``$POLYGLOT_GROC_DATA/text`` (see
:data:`SOURCES` and that folder's MANIFESTs), tokenised with ``make_tokenizer(lang, "toktok")`` by
default (``"auto"`` uses Stanza where its models are installed, so its corpora differ between
machines; the manifest records which ran). Text in other languages, or the user's own text:
:func:`langpairs.files.prepare_language`.

Reproducibility and leakage rules:

* Sources are read in a fixed order (a language's groups in :data:`SOURCES` order, files sorted
  by name) and only until the budget is met, so the output depends only on the data, the
  budgets and the tokenizer (with ``auto``, on whether Stanza's models are installed, which the
  manifest records).
* Leipzig files are *random* sentence samples stored alphabetically sorted, so "the last part"
  of such a file would be sentences starting with "Z"; their sentences are put in a fixed
  pseudo-random order (by BLAKE2 hash of the text) first. Running text (Wikipedia articles,
  Tagalog Wikipedia translations, novels) keeps document order.
* Valid and test are the last part of each source group's consumed text (test last), in
  proportion to the group's share, so held-out text comes after the training text and has
  the training text's source mix.
* A sentence (as tokenised) is used at most once per language, so no sentence is in two
  splits; duplicates (e.g. between Leipzig 10K and 30K samples) are counted in the manifest.

A call is all or none: each language is written into a temporary folder beside its place and the
folders are renamed in with ``prepare.json`` last, so a full disk, an error or a kill leaves
``out`` as it was (a killed call's temporary folders are removed by the next). ``prepare.json``
records sources, tokenizer, per-split sentence/token counts and SHA-256 digests.
"""

from __future__ import annotations

import hashlib
import json
import logging
import lzma
import re
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from groc_base.checks import is_int, option
from groc_base.errors import ConfigError, CorpusError, UnknownLanguageError
from groc_base.fileio import atomic_write_bytes, make_temp_dir, named_for_user, removing_new_dirs, write_then_rename
from groc_base.textio import decode_text
from groc_base.wording import counted

from .corpus import EOS, SPLITS, prepare_hint
from .files import LOCK_NAME, _sweep, _write_manifest_then, manifest_lock
from .tokenize import SentenceTokenizer, make_tokenizer

__all__ = ["MANIFEST_NAME", "SOURCES", "SourceGroup", "prepare_corpora"]

logger = logging.getLogger(__name__)

MANIFEST_NAME = "prepare.json"
MANIFEST_FORMAT = 1

# Punkt learns a language's abbreviations (so "до н. е." does not end a sentence) from the start
# of its running text: about as much as will be consumed (~8 characters a token), at most 1M
# characters (training costs ~1 s per 600k).
_PUNKT_SAMPLE_MAX_CHARS = 1_000_000
_PUNKT_SAMPLE_MIN_CHARS = 200_000
_CHARS_PER_TOKEN = 8


@dataclass(frozen=True)
class SourceGroup:
    """Files read as one source: ``kind`` says how a line becomes text units."""

    name: str
    kind: str  # "leipzig" (id<TAB>sentence), "lines", "ukwiki" (= Title =), "ruslit" (### title)
    patterns: tuple[str, ...]  # globs relative to the text folder
    shuffle: bool = False  # hash-order the units (Leipzig: random samples stored sorted)
    paragraphs: bool = False  # units are paragraphs: split into sentences
    files: tuple[str, ...] = field(default=(), compare=False)


def _leipzig(corpus: str) -> SourceGroup:
    # One group per Leipzig corpus: its 10K and 30K samples overlap and are deduplicated together.
    return SourceGroup(f"leipzig/{corpus}", "leipzig", (f"leipzig/{corpus}_*-sentences.txt",), shuffle=True)


#: Source groups per language, in order of preference (Wikipedia first, news only to fill the budget).
SOURCES: dict[str, tuple[SourceGroup, ...]] = {
    "en": (_leipzig("eng_wikipedia_2016"),),
    "fr": (_leipzig("fra_wikipedia_2010"), _leipzig("fra_newscrawl_2014")),
    "de": (_leipzig("deu_wikipedia_2016"), _leipzig("deu_newscrawl_2017")),
    "nl": (_leipzig("nld_wikipedia_2016"),),
    "it": (_leipzig("ita_wikipedia_2016"),),
    "es": (_leipzig("spa_wikipedia_2016"),),
    "id": (_leipzig("ind_news_2008"),),
    "tl": (SourceGroup("palito/wiki_parallel.tl", "lines", ("palito/wiki_parallel.tl",)),),
    "uk": (SourceGroup("ukwiki", "ukwiki", ("ukwiki/*.txt", "ukwiki/*.txt.xz"), paragraphs=True),),
    "ru": (SourceGroup("ruslit", "ruslit", ("ruslit/prose_*.txt", "ruslit/prose_*.txt.xz"), paragraphs=True),),
}

_UKWIKI_TITLE = re.compile(r"^=+\s.*\s=+$")
_HAS_LETTER = re.compile(r"[^\W\d_]")  # chapter numbers and "* * *" are not text


# -- reading ----------------------------------------------------------------------------------
def _text_root(data_root: Path) -> Path:
    data_root = Path(data_root)
    for candidate in (data_root / "text", data_root):
        if (candidate / "leipzig").is_dir() or (candidate / "palito").is_dir():
            return candidate
    raise CorpusError(
        f"{data_root} holds no text/leipzig or text/palito folder; point {option('data_root')} at the shared data "
        f"folder ($POLYGLOT_GROC_DATA)"
    )


def _resolve(group: SourceGroup, text_root: Path) -> SourceGroup:
    files = sorted({str(p.relative_to(text_root)) for pattern in group.patterns for p in text_root.glob(pattern)})
    if not files:
        raise CorpusError(
            f"no files match {', '.join(group.patterns)} under {text_root}; check the shared data folder "
            f"(see its MANIFEST-more-text.txt)"
        )
    return SourceGroup(group.name, group.kind, group.patterns, group.shuffle, group.paragraphs, tuple(files))


def _read_text(path: Path) -> str:
    try:
        data = lzma.decompress(path.read_bytes()) if path.name.endswith(".xz") else path.read_bytes()
    except (OSError, lzma.LZMAError) as exc:
        raise CorpusError(f"cannot read source {path} ({exc}); check the shared data folder") from exc
    return decode_text(data, path, what="source", error=CorpusError, nfc=True)  # strict UTF-8 + NFC


def _units(group: SourceGroup, text_root: Path) -> Iterator[str]:
    """Text units (sentences or paragraphs) of a group, in file and line order."""
    for name in group.files:
        path = text_root / name
        for lineno, raw in enumerate(_read_text(path).splitlines(), start=1):
            line = raw.strip()
            if not line:
                continue
            if group.kind == "leipzig":
                sid, tab, line = line.partition("\t")
                if not tab:
                    raise CorpusError(f"{path} line {lineno}: expected 'id<TAB>sentence'; is this a leipzig file?")
                line = line.strip()
            elif group.kind == "ukwiki" and _UKWIKI_TITLE.match(line):
                continue
            elif group.kind == "ruslit" and line.startswith(("### ", "## ")):
                continue
            if line and _HAS_LETTER.search(line):
                yield line


def _hash_order(units: list[str]) -> list[str]:
    # Fixed pseudo-random order independent of PYTHONHASHSEED, platform and file order.
    return sorted(units, key=lambda u: hashlib.blake2b(u.encode("utf-8"), digest_size=8).digest())


# -- sampling -----------------------------------------------------------------------------------
@dataclass
class _Collected:
    group: SourceGroup
    lines: list[str] = field(default_factory=list)  # tokenised sentences, space-joined
    counts: list[int] = field(default_factory=list)  # tokens per line (no <eos>)


def _collect(
    groups: Sequence[SourceGroup], text_root: Path, tokenizer: SentenceTokenizer, need: int
) -> tuple[list[_Collected], int]:
    """Tokenised, globally deduplicated sentences from ``groups`` in order until ``need`` tokens."""
    seen: set[str] = set()
    duplicates = 0
    total = 0
    collected: list[_Collected] = []
    for group in groups:
        if total >= need:
            break
        units = list(_units(group, text_root))
        if group.shuffle:
            unique = list(dict.fromkeys(units))  # the 10K and 30K samples of a corpus overlap
            duplicates += len(units) - len(unique)
            units = _hash_order(unique)
        bucket = _Collected(group)
        collected.append(bucket)
        for unit in units:
            sentences = tokenizer.sentences(unit) if group.paragraphs else [tokenizer(unit)]
            for tokens in sentences:
                if not tokens:
                    continue
                line = " ".join(tokens)
                if line in seen:
                    duplicates += 1
                    continue
                seen.add(line)
                bucket.lines.append(line)
                bucket.counts.append(len(tokens))
                total += len(tokens)
                if total >= need:
                    break
            if total >= need:
                break
    return collected, duplicates


def _split_group(counts: list[int], fractions: tuple[float, float]) -> np.ndarray:
    """Split index (0 train, 1 valid, 2 test) per sentence: contiguous, by cumulative tokens."""
    c = np.asarray(counts, dtype=np.float64)  # (S,)
    mid = np.cumsum(c) - c / 2  # (S,) a sentence belongs where its middle token falls
    bounds = np.asarray(fractions) * c.sum()  # (2,) end of train, end of valid
    return np.searchsorted(bounds, mid, side="right")  # (S,) in {0, 1, 2}


def _punkt_sample(groups: Sequence[SourceGroup], text_root: Path, chars: int) -> str | None:
    parts: list[str] = []
    size = 0
    for group in groups:
        if not group.paragraphs:
            continue
        for unit in _units(group, text_root):
            parts.append(unit)
            size += len(unit) + 1
            if size >= chars:
                return "\n".join(parts)
    return "\n".join(parts) or None


# -- writing --------------------------------------------------------------------------------------
def _load_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("ignoring unreadable %s (%s); it will be rewritten", path, exc)
        return {}
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        return {}
    return manifest


def _prepare_language(
    lang: str, text_root: Path, folder: Path, budgets: dict[str, int], tokenize: str
) -> dict[str, Any]:
    """Sample, tokenise and split ``lang``'s text into ``folder/{train,valid,test}.txt``; its manifest entry."""
    groups = [_resolve(g, text_root) for g in SOURCES[lang]]
    need = sum(budgets.values())
    sample = None
    if tokenize in ("auto", "toktok"):
        chars = min(_PUNKT_SAMPLE_MAX_CHARS, max(_PUNKT_SAMPLE_MIN_CHARS, _CHARS_PER_TOKEN * need))
        sample = _punkt_sample(groups, text_root, chars)
    tokenizer = make_tokenizer(lang, tokenize, sentence_sample=sample)
    collected, duplicates = _collect(groups, text_root, tokenizer, need)
    got = sum(sum(b.counts) for b in collected)
    short = got < need
    if short:
        logger.warning(
            "%s: sources give only %d of the %d tokens asked for; splits shrink proportionally", lang, got, need
        )
    fractions = (budgets["train"] / need, (budgets["train"] + budgets["valid"]) / need)

    split_lines: dict[str, list[str]] = {split: [] for split in SPLITS}
    split_tokens = dict.fromkeys(SPLITS, 0)
    sources: list[dict[str, Any]] = []
    for bucket in collected:
        assignment = _split_group(bucket.counts, fractions) if bucket.lines else np.zeros(0, dtype=np.int64)
        counts = np.asarray(bucket.counts, dtype=np.int64)
        per_split: dict[str, int] = {}
        for index, split in enumerate(SPLITS):
            mask = assignment == index
            split_lines[split].extend(line for line, keep in zip(bucket.lines, mask, strict=True) if keep)
            tokens = int(counts[mask].sum())
            split_tokens[split] += tokens
            per_split[split] = tokens
        sources.append(
            {
                "name": bucket.group.name,
                "files": [f"text/{name}" for name in bucket.group.files],
                "order": "blake2b-hash (random sample stored sorted)" if bucket.group.shuffle else "document",
                "sentences": len(bucket.lines),
                "tokens": int(counts.sum()),
                "tokens_per_split": per_split,
            }
        )

    splits: dict[str, Any] = {}
    for split in SPLITS:
        if not split_lines[split]:
            raise CorpusError(
                f"{lang}: the {split} split came out empty ({counted(got, 'token')} available); lower the budgets"
            )
        data = ("\n".join(split_lines[split]) + "\n").encode("utf-8")
        atomic_write_bytes(folder / f"{split}.txt", data)
        n_sent = len(split_lines[split])
        splits[split] = {
            "sentences": n_sent,
            "tokens": split_tokens[split],
            f"tokens_with_{EOS.strip('<>')}": split_tokens[split] + n_sent,
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    logger.info(
        "%s: train %d / valid %d / test %d tokens (%s), %d duplicate sentences dropped",
        lang, split_tokens["train"], split_tokens["valid"], split_tokens["test"], tokenizer.name, duplicates,
    )
    splitter = None
    if any(g.paragraphs for g in groups):
        splitter = "stanza" if tokenizer.name == "stanza" else f"nltk punkt trained on {len(sample or '')} chars"
    return {
        "tokenizer": tokenizer.name,
        "sentence_splitter": splitter,
        "budget": dict(budgets),
        "short": short,
        "duplicates_dropped": duplicates,
        "sources": sources,
        "splits": splits,
    }


def prepare_corpora(
    data_root: Path,
    out: Path,
    langs: Sequence[str],
    train_tokens: int = 200_000,
    eval_tokens: int = 20_000,
    *,
    tokenize: str = "toktok",
    overwrite: bool = True,
) -> dict[str, Any]:
    """Write ``out/<lang>/{train,valid,test}.txt`` and ``out/prepare.json``; return the manifest.

    ``data_root`` is the shared data folder (``$POLYGLOT_GROC_DATA``; its ``text`` folder is
    used). Budgets count tokens without ``<eos>``: ``train_tokens`` for train and
    ``eval_tokens`` each for valid and test. Re-running with the same arguments rewrites
    byte-identical files; the manifest keeps entries of languages prepared earlier into ``out``.
    With ``overwrite=False`` an existing split file of a requested language is an error, raised
    before anything is written.
    """
    if isinstance(langs, str):
        langs = [code for code in langs.split(",") if code.strip()]
    codes = list(dict.fromkeys(code.strip().lower() for code in langs))
    if not codes:
        raise ConfigError(f"no languages to prepare; pass codes from {', '.join(SOURCES)}")
    unknown = [code for code in codes if code not in SOURCES]
    if unknown:
        raise UnknownLanguageError(
            f"the shared text has no source for language(s) {', '.join(map(repr, unknown))} (it has "
            f"{', '.join(SOURCES)}); prepare your own text with {prepare_hint(unknown[0], 'DIR')} (a new language "
            f"also needs a languages file: {option('languages', 'FILE')})"
        )
    for name, value in (("train_tokens", train_tokens), ("eval_tokens", eval_tokens)):
        if not is_int(value) or value < 1:
            raise ConfigError(f"{name} must be a positive integer, got {value!r}")
    text_root = _text_root(Path(data_root))
    out = Path(out)
    if not overwrite:
        existing = [out / lang / f"{split}.txt" for lang in codes for split in SPLITS
                    if (out / lang / f"{split}.txt").exists()]
        if existing:
            raise ConfigError(f"{existing[0]} already exists ({len(existing)} corpus files would be replaced); "
                              f"pass {option('overwrite', True)} or choose another {option('out')}")
    budgets = {"train": train_tokens, "valid": eval_tokens, "test": eval_tokens}

    manifest_path = out / MANIFEST_NAME
    # All or none: every language is written into a temporary folder beside its place (a full
    # disk or an error there leaves `out` as it was), the manifest into a temporary file; then
    # the folders are renamed into place and the manifest last, under the manifest lock. A new
    # `out` this call made goes again when it fails (a refused tokenizer, a full disk).
    temps: dict[str, Path] = {}
    with removing_new_dirs(out, litter=(LOCK_NAME,)):
        out.mkdir(parents=True, exist_ok=True)
        _sweep(out, codes)  # what killed runs left
        try:
            entries: dict[str, Any] = {}
            for lang in codes:
                temps[lang] = make_temp_dir(out, lang)
                try:
                    entries[lang] = _prepare_language(lang, text_root, temps[lang], budgets, tokenize)
                except OSError as exc:  # a full disk: name the user's file, not the temporary folder's
                    renamed = named_for_user(exc, temps[lang], out / lang)
                    if renamed is exc:
                        raise
                    raise renamed from exc
            # Read, change and write the manifest under the lock prepare_language takes too, so parallel
            # calls preparing other languages into `out` keep each other's entries.
            with manifest_lock(out):
                taken = [lang for lang in codes if (out / lang).exists()]
                if taken and not overwrite:  # another process prepared it while this one ran
                    raise ConfigError(f"{out / taken[0]} was written by another process while this one ran (it is "
                                      f"kept); choose another {option('out')}, or run again with "
                                      f"{option('overwrite', True)} to replace it")
                manifest = _load_manifest(manifest_path)
                languages: dict[str, Any] = {**dict(manifest.get("languages", {})), **entries}
                manifest = {"format": MANIFEST_FORMAT, "tool": "langpairs.prepare", "languages": languages}
                text = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
                write_then_rename(out, MANIFEST_NAME,
                                  lambda tmp_manifest: _write_manifest_then(tmp_manifest, text, temps, out))
        finally:
            for tmp in temps.values():
                shutil.rmtree(tmp, ignore_errors=True)
    return manifest
