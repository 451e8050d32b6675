"""Word tokenisers: whitespace, NLTK Toktok, Stanza, and an ``auto`` mode choosing between them.

The thesis segments text with Stanza (Mulcaire 2022, §5.3). Stanza's models are a separate
download, so ``auto`` uses Stanza when its tokenizer model for the language is installed and falls
back to NLTK's rule-based ``ToktokTokenizer`` (language-agnostic, no data files) otherwise, and
logs which one ran so a corpus's provenance is never a guess.

Every tokeniser returns tokens free of whitespace: the corpora store one space-separated
sentence per line, so a token with an inner space (Stanza keeps French "10 000" whole) would
split on re-reading; inner whitespace becomes ``_``.

``auto`` depends on what is installed, so ``data prepare`` defaults to ``toktok``: rule-based, the
same tokens on every machine with the same NLTK release (recorded in ``prepare.json``). Toktok
makes every apostrophe a token (``l'homme`` -> ``l ' homme``); a language's ``apostrophe`` setting
(:data:`langpairs.registry.APOSTROPHE_MODES`) changes that for an apostrophe between two letters:
``elision`` keeps it on the left word as UD does (``l' homme``, ``dell' anno``; French and
Italian), ``word`` keeps the word whole (Ukrainian ``сім'я``). Quotes (an apostrophe not between
letters) are always split off.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, Protocol, runtime_checkable

from groc_base.errors import ConfigError, ResourceMissingError

from .registry import APOSTROPHE_MODES, TOKENIZER_MODES, default_registry

__all__ = [
    "SentenceTokenizer",
    "StanzaTokenizer",
    "TOKENIZER_MODES",
    "Tokenizer",
    "WORD_APOSTROPHE_LANGS",
    "ToktokWordTokenizer",
    "WhitespaceTokenizer",
    "default_apostrophe",
    "make_tokenizer",
    "stanza_available",
]

logger = logging.getLogger(__name__)

_INNER_SPACE = re.compile(r"\s+")

# Toktok's quote rule restricted to apostrophes not between two letters ([^\W\d_] is a letter).
_NON_WORD_APOSTROPHE = re.compile(r"(?<![^\W\d_])(['’`])|(['’`])(?![^\W\d_])")
_APOSTROPHE = re.compile(r"['’`]")
_LETTER = re.compile(r"[^\W\d_]")


def _elide(match: re.Match[str]) -> str:
    """Elision: an apostrophe between two letters ends the left word ("l'homme" -> "l' homme");
    any other apostrophe is a token of its own, as in Toktok."""
    text, i = match.string, match.start()
    between = i > 0 and i + 1 < len(text) and _LETTER.match(text[i - 1]) and _LETTER.match(text[i + 1])
    return f"{match.group()} " if between else f" {match.group()} "

#: Languages whose orthography uses the apostrophe as a letter inside words.
WORD_APOSTROPHE_LANGS: frozenset[str] = frozenset({"uk", "be"})


@runtime_checkable
class Tokenizer(Protocol):
    """Anything that turns one string into a list of tokens."""

    def __call__(self, text: str) -> list[str]: ...


@runtime_checkable
class SentenceTokenizer(Tokenizer, Protocol):
    """A :class:`Tokenizer` that can also segment running text into sentences."""

    @property
    def name(self) -> str:
        """Which tokeniser actually runs: ``whitespace``, ``toktok`` or ``stanza``."""
        ...

    def sentences(self, text: str) -> list[list[str]]:
        """Split ``text`` (e.g. a paragraph) into sentences of tokens."""
        ...


def _clean(tokens: list[str]) -> list[str]:
    # Tokens must survive a write/read round trip through space-separated lines.
    return [_INNER_SPACE.sub("_", t.strip()) for t in tokens if t.strip()]


class _PunktSplitter:
    """NLTK Punkt sentence splitter; optionally trained (unsupervised) on a sample of the text.

    Punkt's pretrained models are an NLTK download we do not have; untrained Punkt splits after
    every abbreviation ("до н. е."), so callers with running text pass a sample to learn them.
    """

    def __init__(self, sample: str | None = None) -> None:
        from nltk.tokenize.punkt import PunktSentenceTokenizer, PunktTrainer

        if sample:
            trainer = PunktTrainer()
            trainer.train(sample, finalize=True)
            self._punkt = PunktSentenceTokenizer(trainer.get_params())
        else:
            self._punkt = PunktSentenceTokenizer()

    def __call__(self, text: str) -> list[str]:
        return list(self._punkt.tokenize(text))


class WhitespaceTokenizer:
    """Splits on whitespace: for text that is already tokenised (the prepared corpora)."""

    name = "whitespace"

    def __call__(self, text: str) -> list[str]:
        return text.split()

    def sentences(self, text: str) -> list[list[str]]:
        # Pre-tokenised text is one sentence per line; no segmentation is attempted.
        return [tokens for tokens in (line.split() for line in text.splitlines()) if tokens]


class ToktokWordTokenizer:
    """NLTK's ``ToktokTokenizer`` without its HTML escaping, plus Punkt sentence splitting.

    Toktok (a port of tok-tok.pl) rewrites ``&`` as ``&amp;``, ``|`` as ``&#124;`` and tabs as
    ``&#9;`` -- meant for Moses pipelines, wrong for a language model's vocabulary -- so those
    three rules are dropped; everything else is NLTK's. With ``keep_word_apostrophes`` an
    apostrophe between two letters stays inside the word: in Ukrainian it is a letter of the
    orthography ("сім'я", "п'ять"), where Toktok's split would cut words in three.
    """

    name = "toktok"

    def __init__(self, sentence_sample: str | None = None, *, keep_word_apostrophes: bool = False,
                 apostrophe: str | None = None) -> None:
        from nltk.tokenize.toktok import ToktokTokenizer

        mode = apostrophe or ("word" if keep_word_apostrophes else "split")
        if mode not in APOSTROPHE_MODES:
            raise ConfigError(f"unknown apostrophe mode {mode!r}; use one of {', '.join(APOSTROPHE_MODES)}")
        self.apostrophe = mode
        escapes = {ToktokTokenizer.AMPERCENT, ToktokTokenizer.TAB, ToktokTokenizer.PIPE}
        regexes: list[tuple[Any, Any]] = []
        for rule in ToktokTokenizer.TOKTOK_REGEXES:
            if rule in escapes:
                continue
            if mode == "word" and rule == ToktokTokenizer.PROB_SINGLE_QUOTES:
                rule = (_NON_WORD_APOSTROPHE, r" \1\2 ")
            elif mode == "elision" and rule == ToktokTokenizer.PROB_SINGLE_QUOTES:
                rule = (_APOSTROPHE, _elide)
            regexes.append(rule)
        self._regexes = regexes
        self._sample = sentence_sample
        self._splitter: _PunktSplitter | None = None

    def __call__(self, text: str) -> list[str]:
        for regexp, substitution in self._regexes:
            text = regexp.sub(substitution, text)
        return text.split()

    def sentences(self, text: str) -> list[list[str]]:
        if self._splitter is None:  # lazily: Punkt training costs ~1 s per MB of sample
            self._splitter = _PunktSplitter(self._sample)
        return [tokens for tokens in (self(s) for s in self._splitter(text)) if tokens]


class StanzaTokenizer:
    """Stanza's neural tokenizer (tokens, not multi-word-expanded words) for one language."""

    name = "stanza"

    def __init__(self, pipeline: Any) -> None:
        self._pipeline = pipeline

    def sentences(self, text: str) -> list[list[str]]:
        if not text.strip():
            return []
        doc = self._pipeline(text)
        return [tokens for tokens in (_clean([t.text for t in s.tokens]) for s in doc.sentences) if tokens]

    def __call__(self, text: str) -> list[str]:
        return [token for sentence in self.sentences(text) for token in sentence]


def _stanza_fix(lang: str) -> str:
    return (
        f"on an online machine run `python -c \"import stanza; stanza.download('{lang}', "
        f"processors='tokenize')\"` and copy the stanza_resources folder here (or set "
        f"STANZA_RESOURCES_DIR), or use tokenizer mode 'toktok' or 'auto'"
    )


@functools.cache
def _stanza_pipeline(lang: str) -> Any:
    """Build (once per language) a tokenize-only pipeline; ResourceMissingError when impossible."""
    try:
        import stanza
        from stanza.resources.common import UnknownLanguageError as StanzaUnknownLanguage
    except ImportError as exc:  # stanza is a dependency, but keep the failure actionable
        raise ResourceMissingError(f"stanza is not importable ({exc}); install it with `pip install stanza`") from exc
    try:
        # download_method=None: never touch the network; missing models raise instead.
        return stanza.Pipeline(lang, processors="tokenize", download_method=None)
    except (FileNotFoundError, StanzaUnknownLanguage) as exc:
        # FileNotFoundError covers ResourcesFileNotFoundError, LanguageNotDownloadedError and a
        # missing model file; stanza's UnknownLanguageError a language it has no model for.
        first = " ".join(str(exc).split())
        raise ResourceMissingError(
            f"stanza tokenizer model for {lang!r} is not installed ({first}); {_stanza_fix(lang)}"
        ) from exc


def stanza_available(lang: str) -> bool:
    """Whether a Stanza tokenizer for ``lang`` can be built offline (the result is cached)."""
    try:
        _stanza_pipeline(lang)
    except ResourceMissingError:
        return False
    return True


def _stanza_code(lang: str, stanza_lang: str | None) -> str:
    if stanza_lang:
        return stanza_lang
    registry = default_registry()
    if lang in registry:
        return registry.get(lang).stanza_lang or lang
    return lang


def default_apostrophe(lang: str) -> str:
    """The apostrophe mode of ``lang`` when none is given: the built-in registry's, else ``split``."""
    if lang in WORD_APOSTROPHE_LANGS:
        return "word"
    registry = default_registry()
    return registry.get(lang).apostrophe if lang in registry else "split"


def _toktok(lang: str, sentence_sample: str | None, apostrophe: str | None = None) -> ToktokWordTokenizer:
    return ToktokWordTokenizer(sentence_sample, apostrophe=apostrophe or default_apostrophe(lang))


def make_tokenizer(
    lang: str,
    mode: str = "whitespace",
    *,
    stanza_lang: str | None = None,
    sentence_sample: str | None = None,
    apostrophe: str | None = None,
) -> SentenceTokenizer:
    """A tokenizer for ``lang``.

    ``mode``: ``whitespace`` (pre-tokenised text), ``toktok`` (NLTK Toktok), ``stanza`` (Stanza
    models required; :class:`ResourceMissingError` naming ``stanza.download`` otherwise) or
    ``auto`` (Stanza when its model for ``lang`` is installed, else Toktok; logged).
    ``stanza_lang`` overrides the Stanza code (default: the registry's, else ``lang``);
    ``sentence_sample`` is text to train the Punkt sentence splitter the Toktok fallback uses;
    ``apostrophe`` is Toktok's apostrophe mode (default: :func:`default_apostrophe`).
    """
    if mode not in TOKENIZER_MODES:
        raise ConfigError(f"unknown tokenizer mode {mode!r}; use one of {', '.join(TOKENIZER_MODES)}")
    if mode == "whitespace":
        return WhitespaceTokenizer()
    if mode == "toktok":
        return _toktok(lang, sentence_sample, apostrophe)
    code = _stanza_code(lang, stanza_lang)
    if mode == "stanza":
        tokenizer: SentenceTokenizer = StanzaTokenizer(_stanza_pipeline(code))
        logger.info("tokenizer for %s: stanza", lang)
        return tokenizer
    try:
        tokenizer = StanzaTokenizer(_stanza_pipeline(code))
    except ResourceMissingError:
        logger.info(
            "tokenizer for %s: toktok (nltk); stanza's model for %r is not installed "
            "(stanza.download(%r) on an online machine to use it)", lang, code, code,
        )
        return _toktok(lang, sentence_sample, apostrophe)
    logger.info("tokenizer for %s: stanza", lang)
    return tokenizer
