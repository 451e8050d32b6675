"""Installing a user's own wordnet file: WN-LMF XML (``wn``'s own format) or an OMW tab file.

``polyglot-groc lexicon import FILE`` runs :func:`import_wordnet_file`:

* **WN-LMF** (``.xml``, ``.xml.gz``, or any file ``wn.lmf.is_lmf`` recognises) is handed to
  ``wn.add`` as it is; its lexicons are installed under the specifiers ``wn`` reports
  (``id:version`` from the file's ``<Lexicon id=... version=...>``).
* An **OMW tab file** (``offset-pos<TAB>iso3:lemma<TAB>lemma``, PWN 3.0 offsets) is converted to
  WN-LMF by :mod:`lexicons.omw_import`'s converter, with the ILI map (``ili-map-pwn30.tab``)
  linking its synsets to ILI ids, so glosses and hyponyms can be borrowed from English where the
  user's language allows it (``fallback = "en"``). With Princeton WordNet 3.0 at hand (the
  shared data's ``wordnet/``), its hyponym relations and sense order are used too; without it
  the synsets have no relations of their own. It is installed as ``omw-<lang>:3.0+<hash>`` (the
  hash covers the inputs, so changed data gets a new specifier), replacing older builds.

Nothing is installed from a file that fails to parse; an already installed ``id:version`` is
reported as such (``force`` reinstalls it).
"""

from __future__ import annotations

import gzip
import logging
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groc_base.checks import check_input_file, option
from groc_base.errors import InputError, LexiconError, LexiconFormatError
from lexicons.omw_import import import_tab_file
from lexicons.wn_backend import default_wn_dir, installed_lexicons, wn_data_dir
from lexicons.wn_install import describe_lmf_errors, sqlite_os_error, writing_wordnets

__all__ = ["ImportedWordnet", "import_wordnet_file"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImportedWordnet:
    """What :func:`import_wordnet_file` did: the specifiers to name in ``--lexicon`` / ``wordnets``."""

    source: Path
    format: str  # "wn-lmf" or "omw-tab"
    wn_dir: Path
    #: ``id:version`` of every lexicon in the file, as ``wn`` reports it.
    specs: tuple[str, ...]
    #: Their languages, in the same order.
    languages: tuple[str, ...]
    #: Those that were installed already (and left alone: pass ``force`` to reinstall).
    already_installed: tuple[str, ...]
    #: Whether PWN 3.0 supplied relations and sense order (OMW tab only).
    pwn_relations: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"source": str(self.source), "format": self.format, "wn_dir": str(self.wn_dir),
                "installed": list(self.specs), "languages": list(self.languages),
                "already_installed": list(self.already_installed), "pwn_relations": self.pwn_relations}


def _head(path: Path) -> bytes:
    try:
        with (gzip.open(path, "rb") if path.name.endswith(".gz") else path.open("rb")) as fh:
            return fh.read(4096)
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read wordnet file {path} ({exc}); check the file") from exc


def _kind(path: Path) -> str:
    head = _head(path)
    if b"\x00" in head:
        raise LexiconFormatError(f"wordnet file {path} looks binary; give WN-LMF XML (.xml, .xml.gz) or an OMW tab "
                                 f"file (.tab)")
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"<?xml") or b"<LexicalResource" in head:
        return "wn-lmf"
    first = next((line for line in stripped.decode("utf-8", "replace").splitlines()
                  if line.strip() and not line.startswith("#")), "")
    cols = first.split("\t")
    if len(cols) >= 3 and len(cols[0]) >= 10 and cols[0][8:9] == "-" and cols[0][:8].isdigit():
        return "omw-tab"
    if not stripped:
        raise LexiconFormatError(f"wordnet file {path} is empty; give WN-LMF XML or an OMW tab file")
    raise LexiconFormatError(f"wordnet file {path} is neither WN-LMF XML (<LexicalResource>) nor an OMW tab file "
                             f"(offset-pos<TAB>iso3:lemma<TAB>lemma); convert it to one of those")


def _add_lmf(path: Path, wn_dir: Path, force: bool) -> ImportedWordnet:
    import wn
    import wn.lmf
    from wn.util import ProgressHandler  # the silent base class: the library never prints

    if not wn.lmf.is_lmf(path):
        raise LexiconFormatError(f"wordnet file {path} is XML but not WN-LMF as wn reads it: it needs the line "
                                 f"<!DOCTYPE LexicalResource SYSTEM \"http://globalwordnet.github.io/schemas/"
                                 f"WN-LMF-1.1.dtd\"> (1.0-1.4) after <?xml ...?>")
    try:
        infos = wn.lmf.scan_lexicons(path)
    except Exception as exc:  # noqa: BLE001 - XML, LMF and I/O errors all mean "not a readable LMF file"
        raise LexiconFormatError(f"wordnet file {path} is not readable WN-LMF ({' '.join(str(exc).split())[:200]}); "
                                 f"check it against the WN-LMF DTD") from exc
    if not infos:
        raise LexiconFormatError(f"wordnet file {path} holds no <Lexicon>; a WN-LMF file needs at least one")
    specs = [f"{x['id']}:{x['version']}" for x in infos]
    # One import at a time into wn_dir, all or nothing: wn works on a copy of wn.db that replaces it
    # only when every lexicon of the file was added (lexicons.wn_install).
    with writing_wordnets(wn_dir) as db_dir:
        installed = {x["spec"] for x in installed_lexicons(db_dir)} if (db_dir / "wn.db").is_file() else set()
        already = [s for s in specs if s in installed]
        with wn_data_dir(db_dir):
            if force:
                for spec in already:
                    wn.remove(spec, progress_handler=ProgressHandler)
            try:
                wn.add(path, progress_handler=None)
            except sqlite3.Error as exc:
                if sqlite_os_error(exc, wn_dir) is not None:
                    raise  # a full disk: writing_wordnets names the user's wn.db
                problem = describe_lmf_errors(path) or " ".join(str(exc).split())[:240]
                raise LexiconFormatError(f"wn could not add {path}: {problem}; fix the file (WN-LMF 1.0-1.4), "
                                         f"{wn_dir} is left as it was") from exc
            except (wn.Error, OSError, ValueError) as exc:
                cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""  # e.g. the XML parser's line
                raise LexiconFormatError(f"wn could not add {path}: {' '.join((str(exc) + cause).split())[:240]}; "
                                         f"fix the file (WN-LMF 1.0-1.4)") from exc
        rows = {x["spec"]: x for x in installed_lexicons(db_dir)}
        empty = [s for s in specs if s in rows and not rows[s]["synsets"]]
        if empty:  # nothing to look a word up in: refused before it replaces wn.db
            raise LexiconFormatError(f"wordnet file {path}: lexicon {empty[0]} has no synsets, so no word would get "
                                     f"anything from it; add <Synset> elements (and senses pointing at them)")
    missing = [s for s in specs if s not in rows]
    if missing:
        raise LexiconError(f"wn did not install {', '.join(missing)} from {path}; run `polyglot-groc lexicon info` "
                           f"to see what is installed")
    return ImportedWordnet(path, "wn-lmf", wn_dir, tuple(specs), tuple(str(rows[s]["language"]) for s in specs),
                           tuple([] if force else already))


def import_wordnet_file(
    *,
    path: Path | str,
    wn_dir: Path | str | None = None,
    lang: str | None = None,
    ili_map: Path | str | None = None,
    data_root: Path | str | None = None,
    force: bool = False,
) -> ImportedWordnet:
    """Install a WN-LMF XML file or an OMW tab file into the ``wn`` data directory ``wn_dir``.

    Args:
        path: the wordnet file.
        wn_dir: the ``wn`` data directory (default :func:`lexicons.wn_backend.default_wn_dir`).
        lang: OMW tab only: the language code (default: the file's iso3 header or labels).
        ili_map: OMW tab only: ``ili-map-pwn30.tab`` (default ``<data_root>/omw/ili-map-pwn30.tab``).
        data_root: OMW tab only: the shared data root, for the ILI map and PWN 3.0's relations.
        force: reinstall lexicons that are installed already.

    Returns:
        An :class:`ImportedWordnet`: the specifiers installed (as ``wn`` reports them) and their
        languages; ``to_dict()`` is what ``polyglot-groc lexicon import FILE`` prints.

    Raises:
        InputError: ``path`` does not exist; ``lang``/``ili_map`` given for a WN-LMF file.
        LexiconFormatError: the file is neither WN-LMF nor an OMW tab file, or ``wn`` cannot read it.
        LexiconMissingError: an OMW tab file without its ILI map.
    """
    source = Path(path).expanduser()
    if not source.exists():
        raise InputError(f"wordnet file {source} does not exist; check the path")
    check_input_file(source, flag="wordnet file", what="WN-LMF XML or OMW tab file")  # a FIFO would block
    where = Path(wn_dir).expanduser() if wn_dir is not None else default_wn_dir()
    kind = _kind(source)
    if kind == "wn-lmf":
        if lang is not None or ili_map is not None:
            raise InputError(f"{option('lang')} and {option('ili_map')} are for omw tab files; a WN-LMF file "
                             f"names its language and "
                             "ILI ids itself")
        return _add_lmf(source, where, force)
    spec, code, already, pwn = import_tab_file(source, where, lang=lang, ili_map=ili_map, data_root=data_root,
                                               force=force)
    return ImportedWordnet(source, "omw-tab", where, (spec,), (code,), (spec,) if already else (), pwn)
