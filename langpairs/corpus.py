"""Reading per-language corpora: ``<root>/<lang>/{train,valid,test}.{txt,conllu}``.

Plain text is one sentence per line; CoNLL-U contributes its FORM column (multi-word-token
ranges ``1-2`` and empty nodes ``1.1`` skipped, so each syntactic word appears once). Files must
be UTF-8; text is NFC-normalised so that "é" typed two ways is one vocabulary entry, and every
sentence ends with :data:`EOS`, as in AWD-LSTM's word-level corpora.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from groc_base.checks import in_cli, option
from groc_base.errors import CorpusError, GrocError, UnknownLanguageError
from groc_base.textio import decode_text, read_text

from .registry import LanguageRegistry, default_registry
from .tokenize import Tokenizer, make_tokenizer

__all__ = [
    "EOS",
    "SPLITS",
    "MultilingualCorpus",
    "check_corpora",
    "decode_utf8",
    "find_split",
    "has_corpus",
    "read_split",
    "text_sentences",
]

logger = logging.getLogger(__name__)

EOS = "<eos>"
SPLITS: tuple[str, ...] = ("train", "valid", "test")

# Preference order when several files exist for a split: plain text first (the prepared form),
# then CoNLL-U; gzipped variants (how the UD files are shipped) last.
_SUFFIXES: tuple[str, ...] = (".txt", ".conllu", ".txt.gz", ".conllu.gz")

#: The longest word, in characters, a corpus may hold (docs/internals.md, "Limits"). Real words are far
#: shorter (the char-CNN reads at most ``model.charset.max_word_len`` of them anyway); a longer token is
#: a line that was never tokenised text: a run without spaces, a URL list, base64, binary data.
MAX_WORD_CHARS = 1000
_TOO_LONG = re.compile(r"\S{" + str(MAX_WORD_CHARS + 1) + "}")


def check_token_lengths(text: str, source: object) -> None:
    """Refuse ``text`` (the contents of ``source``, a file) if any whitespace-free run in it is longer
    than :data:`MAX_WORD_CHARS`: no tokeniser makes words of such a run. One regex scan, in C."""
    found = _TOO_LONG.search(text)
    if found is None:
        return
    start = text.rfind("\n", 0, found.start()) + 1
    end = text.find("\n", found.start())
    run = re.match(r"\S+", text[found.start():end if end >= 0 else len(text)])
    length = len(run.group(0)) if run else MAX_WORD_CHARS + 1
    line = text.count("\n", 0, start) + 1
    raise CorpusError(f"{source}:{line} holds a token of {length:,} characters ({found.group(0)[:24]!r}...), more "
                      f"than the {MAX_WORD_CHARS:,} a word may have: that line is not tokenised text (a run "
                      "without spaces, a URL list, base64 or binary data); remove or split that line")


def decode_utf8(data: bytes, path: Path | str, error: type[GrocError] = CorpusError) -> str:
    """Strictly decode ``data`` read from ``path`` as UTF-8 (a leading BOM is dropped), NFC-normalised:
    :func:`groc_base.textio.decode_text` with ``nfc=True``, the corpora's reading (its error names
    the file, the line, the byte offset and the ``iconv`` that fixes it)."""
    return decode_text(data, path, error=error, nfc=True)


def _space_free(form: str) -> str:
    # UD allows spaces inside FORM (e.g. French "10 000"); the flat token stream and the
    # one-sentence-per-line files cannot, so inner whitespace becomes "_".
    return "_".join(form.split())


def _conllu_sentences(text: str, path: Path) -> Iterable[list[str]]:
    sentence: list[str] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            if sentence:
                yield sentence
                sentence = []
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) != 10:
            raise CorpusError(
                f"{path} line {lineno}: {len(cols)} tab-separated fields, conll-u needs 10; "
                f"fix the line or convert the file to one sentence per line (.txt)"
            )
        token_id = cols[0]
        if "-" in token_id or "." in token_id:  # multi-word-token range / empty node
            continue
        form = _space_free(cols[1])
        if form:
            sentence.append(form)
    if sentence:
        yield sentence


def _text_sentences(text: str, tokenizer: Tokenizer | None) -> Iterable[list[str]]:
    for line in text.splitlines():
        if not line.strip():  # blank lines are not sentences (and would add bare <eos>)
            continue
        tokens = tokenizer(line) if tokenizer is not None else line.split()
        if tokens:
            yield tokens


def text_sentences(text: str, tokenizer: Tokenizer | None = None) -> list[list[str]]:
    """The sentences of ``text`` as a ``.txt`` split is read: NFC-normalised, one sentence per
    non-blank line, tokenised with ``tokenizer`` (whitespace when ``None``), each ending with
    :data:`EOS`; a text without tokens gives ``[]``."""
    return [[*tokens, EOS] for tokens in _text_sentences(unicodedata.normalize("NFC", text), tokenizer)]


def read_split(path: Path, tokenizer: Tokenizer | None = None) -> list[list[str]]:
    """Sentences of one split file, each ending with :data:`EOS`.

    ``.txt`` lines are tokenised with ``tokenizer`` (whitespace when ``None``); ``.conllu`` is
    already tokenised, so ``tokenizer`` is ignored for it. Missing, non-UTF-8 or token-free files
    raise :class:`CorpusError`.
    """
    path = Path(path)
    text = read_text(path, what="corpus file", error=CorpusError, nfc=True)
    check_token_lengths(text, path)
    is_conllu = path.name.endswith((".conllu", ".conllu.gz"))
    sentences = [[*tokens, EOS] for tokens in _conllu_sentences(text, path)] if is_conllu \
        else text_sentences(text, tokenizer)
    if not sentences:
        raise CorpusError(f"corpus file {path} contains no tokens; fill it with one sentence per line")
    return sentences


def find_split(root: Path, lang: str, split: str) -> Path:
    """The file for ``split`` of ``lang`` under ``root``: ``.txt`` if present, else ``.conllu``."""
    directory = Path(root) / lang
    candidates = [directory / f"{split}{suffix}" for suffix in _SUFFIXES]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise CorpusError(
        f"no {split} split for {lang!r}: expected {candidates[0]} (or {split}.conllu); check the corpus "
        f"root, or prepare it with {prepare_hint(lang, root)}"
    )


def prepare_hint(lang: str, root: object) -> str:
    """How to prepare ``lang``'s corpus from one's own files, in the face the user is in."""
    if in_cli():
        return f"`polyglot-groc data prepare --lang {lang} --input FILE... --out {root}`"
    return f"pg.prepare_language(lang={lang!r}, inputs=[FILE, ...], out={str(root)!r})"


def has_corpus(root: Path, lang: str) -> bool:
    """Whether ``root`` holds a train split for ``lang`` (``.txt``, ``.conllu``, or gzipped)."""
    return any((Path(root) / lang / f"train{suffix}").is_file() for suffix in _SUFFIXES)


def check_corpora(root: Path, codes: Sequence[str], *, primary: Sequence[str] = (),
                  registry: LanguageRegistry | None = None) -> None:
    """Every language in ``codes`` has a train split under ``root``; else one :class:`CorpusError` line.

    A language that is not in ``primary`` but is the related language of one that is (what
    ``--with related`` added) is named as such, with the two ways out: prepare its corpus, or pick
    the partner with ``--with CODE``.
    """
    registry = registry if registry is not None else default_registry()
    for code in codes:
        if has_corpus(root, code):
            continue
        from .prepare import SOURCES  # prepare imports this module

        how = prepare_hint(code, root)
        if code in SOURCES and in_cli():
            how = f"`polyglot-groc data prepare --langs {code} --out {root}` (shared text) or {how}"
        owners = [p for p in primary if code in registry.partners(p)] if code not in primary else []
        if owners:
            raise CorpusError(
                f"{code!r} is the related language of {owners[0]!r} ({option('with_related', True)}) but has no corpus "
                f"in {root} (no {Path(root) / code / 'train.txt'}); prepare it with {how}, or name another partner "
                f"with {option('extra_langs', 'CODE')}"
            )
        raise CorpusError(f"language {code!r} has no corpus in {root} (no {Path(root) / code / 'train.txt'}); "
                          f"prepare it with {how}, or pass another {option('data')}")


@dataclass(frozen=True)
class MultilingualCorpus:
    """Flat token streams per language and split (``<eos>`` after every sentence)."""

    langs: tuple[str, ...]
    splits: dict[str, dict[str, list[str]]]  # lang -> split -> flat token list incl. <eos>

    @classmethod
    def load(
        cls,
        root: Path,
        langs: Sequence[str],
        splits: Sequence[str] = SPLITS,
        tokenize: str = "whitespace",
    ) -> MultilingualCorpus:
        """Read ``splits`` of every language in ``langs`` from ``root`` (tokeniser mode ``tokenize``)."""
        if isinstance(langs, str):  # "en,fr" would otherwise be read as the codes "e", "n", ...
            langs = [code for code in langs.split(",") if code.strip()]
        codes = tuple(dict.fromkeys(code.strip() for code in langs))
        if not codes:
            raise CorpusError(f"no languages to load from {root}; pass codes such as ('en', 'fr')")
        wanted = tuple(dict.fromkeys(splits))
        if not wanted:
            raise CorpusError(f"no splits to load from {root}; pass e.g. ('train', 'valid', 'test')")
        data: dict[str, dict[str, list[str]]] = {}
        for lang in codes:
            # Whitespace needs no tokenizer object: read_split's default path is the fast one.
            tokenizer = None if tokenize == "whitespace" else make_tokenizer(lang, tokenize)
            data[lang] = {}
            for split in wanted:
                path = find_split(Path(root), lang, split)
                sentences = read_split(path, tokenizer)
                data[lang][split] = [token for sentence in sentences for token in sentence]
                logger.info(
                    "%s %s: %d sentences, %d tokens (incl. %s) from %s",
                    lang, split, len(sentences), len(data[lang][split]), EOS, path,
                )
        return cls(langs=codes, splits=data)

    def _split(self, lang: str, split: str) -> list[str]:
        if lang not in self.splits:
            raise UnknownLanguageError(
                f"language {lang!r} is not in this corpus (loaded: {', '.join(self.langs)}); "
                f"pass it to MultilingualCorpus.load"
            )
        try:
            return self.splits[lang][split]
        except KeyError as exc:
            raise CorpusError(
                f"split {split!r} of {lang!r} is not loaded (loaded: {', '.join(self.splits[lang])}); "
                f"pass it in MultilingualCorpus.load(splits=...)"
            ) from exc

    def counts(self, lang: str, splits: Sequence[str] = ("train",)) -> Counter[str]:
        """Token frequencies of ``lang`` over ``splits`` (``<eos>`` included), e.g. for a vocabulary."""
        if isinstance(splits, str):
            splits = (splits,)
        counter: Counter[str] = Counter()
        for split in splits:
            counter.update(self._split(lang, split))
        return counter

    def n_tokens(self, lang: str, split: str) -> int:
        """Number of tokens (``<eos>`` included) in ``split`` of ``lang``."""
        return len(self._split(lang, split))
