"""Lexicon backend on NLTK's WordNet reader: PWN WNDB + OMW tab files from an NLTK data directory.

This is the toolchain the original GroC code used (``nltk.corpus.wordnet``), kept for
comparisons.  Layout, as NLTK 3.10 expects it::

    <nltk_data>/corpora/wordnet/{data,index}.{noun,verb,adj,adv}, lexnames, index.sense, *.exc
    <nltk_data>/corpora/<omw>/<project>/wn-data-<iso3>.tab     (<omw> is e.g. omw-2.0)

NLTK refuses data that other accounts can write to; :func:`build_nltk_data` lays out the
shared data this way with private permissions.  The readers are built on explicit paths (no
global ``nltk.data.path`` changes), but the same permission rule is checked here so a setup that
works with this backend also works with plain ``nltk.corpus.wordnet``.  NLTK also reads only
under its data path, so the directory is appended to ``nltk.data.path`` on first use.

Semantics follow NLTK: words are lower-cased, English lookups use NLTK's Morphy, and a word's
synsets come in NLTK's order.  Definitions of non-English words are the language's own gloss
where the tab file has ``<iso3>:def`` lines, else the English gloss of the same (PWN) synset.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import tarfile
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groc_base.errors import InputError, LexiconError, LexiconMissingError
from groc_base.fileio import file_digest
from lexicons.protocol import dedupe_related, display_lemma, normalize_lang, to_iso3
from lexicons.tokenize import tokenize_gloss

__all__ = ["NltkLexicon", "build_nltk_data", "nltk_omw_folder"]

logger = logging.getLogger(__name__)

_DEFAULT_OMW = "omw-2.0"
_WORDNET_FILES = ("data.noun", "index.noun", "lexnames")


def nltk_omw_folder() -> str:
    """The OMW folder name this NLTK reads (``omw-2.0`` in 3.10; set in ``nltk/corpus/__init__``)."""
    try:
        import nltk.corpus

        args = vars(nltk.corpus.wordnet).get("_LazyCorpusLoader__args") or ()
        name = vars(args[0]).get("_LazyCorpusLoader__name") if args else None
        return str(name) if name else _DEFAULT_OMW
    except Exception:  # noqa: BLE001 - private attributes: any change means "use the default"
        return _DEFAULT_OMW


def _writable_by_others(path: Path) -> bool:
    return bool(path.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _make_private(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o644)


def build_nltk_data(data_root: Path | str, dest: Path | str, langs: Sequence[str] = ("en",)) -> Path:
    """Lay out PWN 3.0 and OMW tabs from the shared data root as an NLTK data directory.

    Copies (never links: NLTK refuses links leaving its root) the WNDB files to
    ``<dest>/corpora/wordnet`` and each language's tab file to
    ``<dest>/corpora/<omw>/<project>/``, with permissions NLTK accepts.  Returns ``dest``.
    """
    root, out = Path(data_root).expanduser(), Path(dest).expanduser()
    archive = root / "wordnet" / "pwn-3.0-wndb-lf.tar.xz"
    if not archive.is_file():
        raise LexiconMissingError(f"no {str(archive)!r}; pass the shared data root (POLYGLOT_GROC_DATA)")
    corpora = out / "corpora"
    corpora.mkdir(parents=True, exist_ok=True)
    wordnet_dir = corpora / "wordnet"
    if not (wordnet_dir / "data.noun").is_file():
        with tarfile.open(archive, "r:*") as tar:
            members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith("wordnet/")]
            try:
                tar.extractall(corpora, members=members, filter="data")
            except TypeError:  # Python without extraction filters; members are plain files
                tar.extractall(corpora, members=members)
    omw = corpora / nltk_omw_folder()
    for lang in langs:
        iso3 = to_iso3(lang)
        if iso3 == "eng":
            continue
        tabs = sorted((root / "omw" / "tab").glob(f"*/wn-data-{iso3}.tab"))
        if not tabs:
            raise LexiconMissingError(f"no omw tab file for language {lang!r} under {str(root / 'omw' / 'tab')!r}")
        target = omw / tabs[0].parent.name / tabs[0].name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tabs[0], target)
    _make_private(out)
    return out


class NltkLexicon:
    """PWN + OMW through ``nltk.corpus.reader.WordNetCorpusReader`` on an NLTK data directory.

    Args:
        nltk_data: the NLTK data directory (holding ``corpora/``); default ``$NLTK_DATA``.
        langs: restrict to these languages (default: English plus every OMW tab found).
        omw_folder: OMW folder under ``corpora/`` (default: the one this NLTK reads).
    """

    def __init__(
        self,
        nltk_data: Path | str | None = None,
        langs: Sequence[str] | None = None,
        *,
        omw_folder: str | None = None,
    ) -> None:
        if nltk_data is None:
            env = os.environ.get("NLTK_DATA", "").split(os.pathsep)[0]
            if not env:
                raise LexiconMissingError("no nltk data directory given and NLTK_DATA is not set")
            nltk_data = env
        self.nltk_data = Path(nltk_data).expanduser()
        self.wordnet_dir = self.nltk_data / "corpora" / "wordnet"
        for name in _WORDNET_FILES:
            if not (self.wordnet_dir / name).is_file():
                raise LexiconMissingError(
                    f"no nltk wordnet in {str(self.wordnet_dir)!r} (missing {name}); "
                    "lay one out with lexicons.nltk_backend.build_nltk_data"
                )
        self.omw_dir = self.nltk_data / "corpora" / (omw_folder or nltk_omw_folder())
        tabs = sorted(self.omw_dir.glob("*/wn-data-*.tab")) if self.omw_dir.is_dir() else []
        available = {"en": None} | {normalize_lang(p.stem.rsplit("-", 1)[-1]): p for p in tabs}
        wanted = [normalize_lang(x) for x in langs] if langs is not None else list(available)
        missing = [x for x in wanted if x not in available]
        if missing:
            raise LexiconMissingError(
                f"no omw tab file for {', '.join(missing)} in {str(self.omw_dir)!r}; "
                f"available: {', '.join(sorted(available))}"
            )
        self._langs = sorted(dict.fromkeys(wanted))
        self._tabs = {x: available[x] for x in self._langs if available[x] is not None}
        self._check_permissions()
        self._reader: Any = None
        self._lock = threading.Lock()
        self._specs: list[str] | None = None

    def _check_permissions(self) -> None:
        paths = [self.nltk_data, self.wordnet_dir, *self.wordnet_dir.iterdir()]
        for tab in self._tabs.values():
            if tab is not None:
                paths += [tab, tab.parent, self.omw_dir]
        bad = [p for p in paths if _writable_by_others(p)]
        if bad:
            raise LexiconError(
                f"nltk refuses {str(bad[0])!r}: it is writable by other accounts; "
                f"run chmod -R go-w {str(self.nltk_data)!r}"
            )

    # -- protocol ---------------------------------------------------------------------------

    @property
    def specs(self) -> list[str]:
        if self._specs is None:
            specs = [f"nltk-wordnet@{_hash_files(sorted(self.wordnet_dir.glob('*.*')))}"]
            for lang, tab in sorted(self._tabs.items()):
                if tab is not None:
                    specs.append(f"nltk-omw-{lang}@{_hash_files([tab])}")
            self._specs = specs
        return list(self._specs)

    @property
    def settings(self) -> dict[str, Any]:
        return {"backend": "nltk"}

    def languages(self) -> list[str]:
        return list(self._langs)

    def related(self, word: str, lang: str) -> list[str]:
        iso, synsets = self._synsets(word, lang)
        lemmas: list[str] = []
        for synset in synsets:
            lemmas.extend(display_lemma(n) for n in synset.lemma_names(lang=iso))
            # NLTK keeps pointers in a set (hash order varies between runs): sort by offset, which is
            # also WNDB's data-line order and so the wn backend's order.
            for hyponym in sorted(synset.hyponyms(), key=lambda s: (s.pos(), s.offset())):
                lemmas.extend(display_lemma(n) for n in hyponym.lemma_names(lang=iso))
        return dedupe_related(word, lemmas)

    def definition(self, word: str, lang: str) -> list[str]:
        text, _ = self._gloss(word, lang)
        return tokenize_gloss(text) if text else []

    def definition_lang(self, word: str, lang: str) -> str | None:
        """The language of :meth:`definition`'s gloss: ``lang``'s own where OMW has one, else English."""
        return self._gloss(word, lang)[1]

    def _gloss(self, word: str, lang: str) -> tuple[str | None, str | None]:
        """The first synset's gloss and its language, ``(None, None)`` without one."""
        iso, synsets = self._synsets(word, lang)
        if not synsets:
            return None, None
        first = synsets[0]
        if iso != "eng":
            own = first.definition(lang=iso)
            text = own[0] if isinstance(own, list) and own else own or None
            if text:
                return text, normalize_lang(lang)
        text = first.definition()
        return (text, "en") if text else (None, None)

    # -- internals --------------------------------------------------------------------------

    def _wordnet(self) -> Any:
        if self._reader is None:
            with self._lock:
                if self._reader is None:
                    import nltk.data
                    from nltk.corpus.reader import CorpusReader, WordNetCorpusReader

                    # NLTK 3.10 reads only under its data path (nltk.pathsec): register ours.
                    if str(self.nltk_data) not in nltk.data.path:
                        nltk.data.path.append(str(self.nltk_data))

                    omw = None
                    if self._tabs:
                        omw = CorpusReader(str(self.omw_dir), r".*/wn-data-.*\.tab", encoding="utf8")
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # "multilingual functions not available"
                        try:
                            self._reader = WordNetCorpusReader(str(self.wordnet_dir), omw)
                        except (OSError, ValueError) as exc:  # PermissionError included
                            raise LexiconError(f"nltk cannot read wordnet in {str(self.wordnet_dir)!r}: {exc}") from exc
        return self._reader

    def _synsets(self, word: str, lang: str) -> tuple[str, list[Any]]:
        lang = normalize_lang(lang)
        if lang not in self._langs or not word:
            return to_iso3(lang), []
        iso = to_iso3(lang)
        query = word.replace(" ", "_")
        try:
            return iso, list(self._wordnet().synsets(query, lang=iso))
        except Exception as exc:  # noqa: BLE001 - nltk raises WordNetError / KeyError on odd input
            if isinstance(exc, LexiconError):
                raise
            raise InputError(f"nltk wordnet lookup of {word!r} in {lang!r} failed: {exc}") from exc


def _hash_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode())
        file_digest(path, into=h)
    return h.hexdigest()[:12]
