"""The main lexicon backend: wordnets installed in a ``wn`` (WN-LMF / SQLite) data directory.

Lexicons are selected by ``wn`` specifiers (``omw-en:3.0+1a2b3c4d``; ``omw-en:3.0`` for any build
of 3.0; just ``omw-en`` when one version is installed) or by language.  Cross-lingual glosses
follow ILI links: a French synset without a French definition gets the definition of the English
synset with the same ILI id (from the English lexicon among the selected ones, else the first
English lexicon installed).

Performance: GroC needs forms for every vocabulary word (100k+), and ``wn``'s object API issues
several SQL queries per word.  So each lexicon is bulk-loaded once, lazily on first use, with a
handful of whole-table queries into plain dicts and lists; every lookup afterwards is a dict
operation.  The bulk queries read ``wn``'s SQLite schema directly (read-only) when the schema
hash is one this ``wn`` release declares compatible, and otherwise fall back to ``wn``'s public
API (correct but slow, and logged).

Word lookup is case-insensitive, like NLTK's ``wordnet.synsets`` (which the original GroC code
used): a word's synsets are those of the lemmas equal to it lower-cased, by part of speech
(n, v, a, r) and then sense number, else those of entries having it as another form.  For
English with ``lemmatize=True`` it follows NLTK further: per part of speech, the word's own
synsets, then those of its irregular base forms (our importer stores WNDB ``*.exc`` entries as
forms), else of the base forms given by the Morphy suffix rules of :mod:`wn.morphy`
(``dogs`` -> ``dog``, ``better`` -> ``good``).

Hyponyms are a synset's ``hyponym`` relations plus the inverse of ``hypernym`` relations
pointing at it (lexicons may store only one direction).  A lexicon without any such relations
(e.g. an expand-style OMW lexicon from ``wn.download``) borrows the structure of the English
lexicon through ILI, like ``wn``'s own cross-lingual traversal.

Borrowing (glosses and hyponym structure through ILI) is a fallback a language may refuse:
``no_fallback`` names the languages whose words get only their own wordnet's glosses and
relations -- what a user language gets unless its registry entry says ``fallback = "en"``
(the built-in languages borrow, as in seed 004 §5.3).

Compiled cache: with ``cache_dir`` (the CLI's ``lexicon lookup`` and ``coverage`` pass
``$POLYGLOT_GROC_CACHE/wordnets``) each lexicon's loaded data, every gloss already tokenised, is
mirrored once into an SQLite file that later processes read row by row
(:mod:`lexicons.wn_mirror`, which says why ``wn``'s own database does not serve a warm lookup as
fast, with the measurements); :meth:`WnLexicon.load` reads it all into memory for bulk use.
Lookup settings (``lemmatize``, gloss lexicons, and the service's limits) are applied after
loading, so they need no key of their own; every lookup is identical with or without the mirror.

``wn`` keeps its data directory in a process-global setting; :func:`wn_data_dir` switches it
only around calls into ``wn`` and restores it, so this module is not thread-safe for ``wn``
writes (reads through SQLite are).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from groc_base.checks import in_cli, is_int, option
from groc_base.errors import InputError, LexiconError, LexiconMissingError
from lexicons.protocol import dedupe_related, display_lemma, normalize_lang
from lexicons.tokenize import tokenize_gloss
from lexicons.wn_data import Installed, LexData, db_path
from lexicons.wn_mirror import CachedColumn, LexiconMirror, db_identity, materialize

__all__ = [
    "WnLexicon",
    "default_wn_dir",
    "installed_lexicons",
    "wn_data_dir",
]

logger = logging.getLogger(__name__)

#: Environment variable naming the wn data directory the toolkit uses.
WN_DIR_ENV = "POLYGLOT_GROC_WN_DIR"
_IMPORT_HINT = "run `polyglot-groc lexicon import` (offline, from POLYGLOT_GROC_DATA) to install wordnets"
_MORPHY_POS = ("n", "v", "a", "r")

Loader = Literal["auto", "sql", "api"]


def default_wn_dir() -> Path:
    """``$POLYGLOT_GROC_WN_DIR``, else ``wn``'s own default (``$WN_DATA_DIR`` or ``~/.wn_data``)."""
    env = os.environ.get(WN_DIR_ENV)
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("WN_DATA_DIR", str(Path.home() / ".wn_data"))).expanduser()


@contextmanager
def wn_data_dir(path: Path | str) -> Iterator[Path]:
    """Point ``wn`` at ``path`` for the duration of the block, then restore its previous setting."""
    import wn

    target = Path(path).expanduser()
    # Read the private field: the public getter creates the directory, and the previous one may be
    # the user's ~/.wn_data, which we must not touch.
    previous = getattr(wn.config, "_data_directory", None)
    wn.config.data_directory = target
    try:
        yield target
    finally:
        if previous is not None:
            wn.config.data_directory = previous


def _pos_group(pos: str) -> str:
    # Adjective satellites are adjectives for lookup purposes (WNDB's index.adj mixes them too).
    return "a" if pos == "s" else pos


# --------------------------------------------------------------------------------------------
# Bulk-loaded data of one lexicon
# --------------------------------------------------------------------------------------------


@dataclass
class _RawLexicon:
    """What a reader extracts from the database; keys are reader-specific synset/entry keys."""

    synsets: list[tuple[Any, str, str | None]]  # (key, pos, ili) in lexicon order
    # (lemma, pos, other forms, [(sense rank, synset key)] in sense order)
    entries: list[tuple[str, str, list[str], list[tuple[int, Any]]]]
    members: dict[Any, list[str]]  # synset key -> member lemmas in synset order
    relations: list[tuple[Any, Any, str]]  # (source, target, 'hyponym' | 'hypernym') in stored order
    definitions: dict[Any, str]  # synset key -> first definition


def _ordered_index(rows: list[tuple[str, str, int, int]]) -> dict[str, tuple[int, ...]]:
    """``(key, pos, rank, synset)`` rows in entry order -> key -> synsets, ordered as described in
    :func:`_build`."""
    first_pos: dict[tuple[str, str], int] = {}
    acc: dict[str, list[tuple[int, int, int, int]]] = {}
    for seq, (key, pos, rank, synset) in enumerate(rows):
        group = first_pos.setdefault((key, pos), len(first_pos))
        acc.setdefault(key, []).append((group, rank, seq, synset))
    return {key: tuple(dict.fromkeys(s for *_, s in sorted(items))) for key, items in acc.items()}


def _build(spec: str, lang: str, raw: _RawLexicon) -> LexData:
    number: dict[Any, int] = {}
    synset_pos: list[str] = []
    synset_ili: list[str | None] = []
    members: list[tuple[str, ...]] = []
    definitions: list[str | None] = []
    ili_index: dict[str, int] = {}
    for key, pos, ili in raw.synsets:
        number[key] = len(number)
        synset_pos.append(pos or "")
        synset_ili.append(ili or None)
        members.append(tuple(dict.fromkeys(display_lemma(m) for m in raw.members.get(key, ()))))
        definitions.append(raw.definitions.get(key) or None)
        if ili and ili not in ili_index:
            ili_index[ili] = number[key]
    hyponyms: list[list[int]] = [[] for _ in number]
    inverse: list[list[int]] = [[] for _ in number]
    has_relations = False
    for source, target, rel_type in raw.relations:
        s, t = number.get(source), number.get(target)
        if s is None or t is None:
            continue  # relation into another lexicon: not part of this one's structure
        has_relations = True
        if rel_type == "hyponym":
            hyponyms[s].append(t)
        else:  # hypernym: source is the hyponym of target
            inverse[t].append(s)

    # Index keys can gather several entries: case variants ("north" / "North") and parts of
    # speech.  Order their synsets by part of speech (in entry order), then sense rank (WN-LMF 1.4
    # "n", which our importer sets from WNDB's sense numbers), then entry order.
    lemma_rows: list[tuple[str, str, int, int]] = []
    lower_rows: list[tuple[str, str, int, int]] = []
    form_rows: list[tuple[str, str, int, int]] = []
    for lemma, pos, forms, senses in raw.entries:
        ranked = [(rank, number[k]) for rank, k in senses if k in number]
        if not ranked:
            continue
        lemma = display_lemma(lemma)
        group = _pos_group(pos)
        for rank, s in ranked:
            lemma_rows.append((lemma, group, rank, s))
            lower_rows.append((lemma.lower(), group, rank, s))
            form_rows.extend((display_lemma(form).lower(), group, rank, s) for form in forms)
    from wn.morphy import DETACHMENT_RULES

    return LexData(
        spec=spec, lang=lang, synset_pos=synset_pos, synset_ili=synset_ili, members=members,
        hyponyms=[tuple(dict.fromkeys(h + i)) for h, i in zip(hyponyms, inverse, strict=True)],
        definitions=definitions, has_relations=has_relations,
        lemmas=tuple(dict.fromkeys(row[0] for row in lemma_rows)),
        lower_index=_ordered_index(lower_rows), form_index=_ordered_index(form_rows), ili_index=ili_index,
        morphy_rules={pos: [(rule[0], rule[1]) for rule in rules] for pos, rules in DETACHMENT_RULES.items()},
    )


def _synset_key(data: LexData, synset: int) -> tuple[str, str | int]:
    """What makes two synsets "the same" for translation: the ILI id, else the synset itself."""
    ili = data.synset_ili[synset]
    # Specs contain ':', so the "ili" tag cannot collide with a spec.
    return ("ili", ili) if ili else (data.spec, synset)


# --------------------------------------------------------------------------------------------
# Readers: direct SQL (fast) and wn's public API (fallback)
# --------------------------------------------------------------------------------------------


def _connect_ro(wn_dir: Path) -> sqlite3.Connection:
    path = db_path(wn_dir)
    if not path.is_file():
        raise LexiconMissingError(f"no wordnet database in {str(wn_dir)!r}; {_IMPORT_HINT}")
    try:
        # Read-only URI: a lookup must never create or migrate the user's database.
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
    except sqlite3.Error as exc:
        raise LexiconError(f"cannot open wordnet database {str(path)!r}: {exc}") from exc


def _schema_is_known(conn: sqlite3.Connection) -> bool:
    try:
        from wn import _db  # private, so guarded: a wn upgrade just selects the API loader

        return _db.schema_hash(conn) in _db.COMPATIBLE_SCHEMA_HASHES
    except Exception as exc:  # noqa: BLE001 - any failure means "not known", not an error
        logger.debug("cannot check wn schema hash: %s", exc)
        return False


def _list_installed(conn: sqlite3.Connection) -> list[Installed]:
    try:
        rows = conn.execute("SELECT rowid, id, version, language, label FROM lexicons ORDER BY rowid").fetchall()
    except sqlite3.Error as exc:
        raise LexiconError(f"cannot list lexicons in the wordnet database: {exc}") from exc
    return [Installed(int(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4] or "")) for r in rows]


def _read_sql(conn: sqlite3.Connection, lex: Installed) -> _RawLexicon:
    rowid = lex.rowid
    q = conn.execute
    synsets = [
        (r[0], r[1], r[2])
        for r in q(
            "SELECT s.rowid, s.pos, i.id FROM synsets AS s LEFT JOIN ilis AS i ON i.rowid = s.ili_rowid "
            "WHERE s.lexicon_rowid = ? ORDER BY s.rowid",
            (rowid,),
        )
    ]
    lemmas: dict[int, str] = {}
    forms: dict[int, list[str]] = {}
    for entry, form, rank in q(
        "SELECT entry_rowid, form, rank FROM forms WHERE lexicon_rowid = ? ORDER BY entry_rowid, rank, rowid",
        (rowid,),
    ):
        if rank == 0 and entry not in lemmas:
            lemmas[entry] = form
        else:
            forms.setdefault(entry, []).append(form)
    sense_rows = q(
        "SELECT s.rowid, s.entry_rowid, s.entry_rank, s.synset_rowid, s.synset_rank FROM senses AS s "
        "WHERE s.lexicon_rowid = ? AND s.rowid NOT IN (SELECT sense_rowid FROM unlexicalized_senses)",
        (rowid,),
    ).fetchall()
    by_entry: dict[int, list[tuple[int, int, int]]] = {}
    by_synset: dict[int, list[tuple[int, int, int]]] = {}
    for sense, entry, entry_rank, synset, synset_rank in sense_rows:
        by_entry.setdefault(entry, []).append((entry_rank or 0, sense, synset))
        by_synset.setdefault(synset, []).append((synset_rank or 0, sense, entry))
    entry_pos = dict(q("SELECT rowid, pos FROM entries WHERE lexicon_rowid = ?", (rowid,)).fetchall())
    entries = []
    for entry in sorted(lemmas):
        senses = sorted(by_entry.get(entry, ()))
        entries.append(
            (lemmas[entry], str(entry_pos.get(entry, "")), forms.get(entry, []), [(s[0], s[2]) for s in senses])
        )
    members = {synset: [lemmas[e] for _, _, e in sorted(rows) if e in lemmas] for synset, rows in by_synset.items()}
    relations = [
        (r[0], r[1], r[2])
        for r in q(
            "SELECT r.source_rowid, r.target_rowid, t.type FROM synset_relations AS r "
            "JOIN relation_types AS t ON t.rowid = r.type_rowid "
            "WHERE r.lexicon_rowid = ? AND t.type IN ('hyponym', 'hypernym') ORDER BY r.rowid",
            (rowid,),
        )
    ]
    definitions: dict[int, str] = {}
    for synset, text in q(
        "SELECT synset_rowid, definition FROM definitions WHERE lexicon_rowid = ? ORDER BY rowid", (rowid,)
    ):
        if text and synset not in definitions:
            definitions[synset] = text
    return _RawLexicon(synsets, entries, members, relations, definitions)


def _read_api(wn_dir: Path, lex: Installed) -> _RawLexicon:
    import wn

    with wn_data_dir(wn_dir):
        w = wn.Wordnet(lexicon=lex.spec, expand="")
        synsets = []
        members: dict[Any, list[str]] = {}
        relations: list[tuple[Any, Any, str]] = []
        definitions: dict[Any, str] = {}
        for ss in w.synsets():
            synsets.append((ss.id, ss.pos, ss.ili))
            members[ss.id] = ss.lemmas()
            for rel_type, targets in ss.relations("hyponym", "hypernym").items():
                relations.extend((ss.id, t.id, rel_type) for t in targets)
            text = ss.definition()
            if text:
                definitions[ss.id] = text
        entries = []
        for word in w.words():
            lemma, *others = word.forms()
            # wn's API does not expose the stored sense rank; sense order is the rank.
            senses = [(i, s.synset().id) for i, s in enumerate(word.senses(), 1)]
            entries.append((lemma, word.pos, others, senses))
    return _RawLexicon(synsets, entries, members, relations, definitions)


def installed_lexicons(wn_dir: Path | str | None = None) -> list[dict[str, Any]]:
    """Installed lexicons with language and synset / entry / sense counts (one query each)."""
    wn_dir = Path(wn_dir) if wn_dir is not None else default_wn_dir()
    conn = _connect_ro(wn_dir)
    try:
        out = []
        counts: dict[str, dict[int, int]] = {}
        for table in ("synsets", "entries", "senses"):
            rows = conn.execute(f"SELECT lexicon_rowid, COUNT(*) FROM {table} GROUP BY lexicon_rowid")
            counts[table] = {int(r[0]): int(r[1]) for r in rows}
        for lex in _list_installed(conn):
            out.append(
                {
                    "spec": lex.spec,
                    "id": lex.id,
                    "version": lex.version,
                    "language": normalize_lang(lex.language),
                    "label": lex.label,
                    "synsets": counts["synsets"].get(lex.rowid, 0),
                    "words": counts["entries"].get(lex.rowid, 0),
                    "senses": counts["senses"].get(lex.rowid, 0),
                }
            )
        return out
    except sqlite3.Error as exc:
        raise LexiconError(f"cannot read the wordnet database in {str(wn_dir)!r}: {exc}") from exc
    finally:
        conn.close()


# --------------------------------------------------------------------------------------------
# The backend
# --------------------------------------------------------------------------------------------


def _split_specs(specs: Sequence[str] | str) -> list[str]:
    items = specs.split() if isinstance(specs, str) else [s for spec in specs for s in spec.split()]
    return [s for s in items if s]


def _version_matches(wanted: str, version: str) -> bool:
    """``3.0`` names every build of 3.0 (``3.0+1a2b3c4d``, what ``lexicon import`` installs): the
    part after ``+`` is build metadata, as in semantic versions."""
    return wanted in ("", "*", version) or ("+" not in wanted and version.split("+", 1)[0] == wanted)


def _resolve(spec: str, installed: list[Installed], wn_dir: Path) -> list[Installed]:
    """The installed lexicons ``spec`` names: ``id`` (the installed version), ``id:version`` (a
    version without ``+build`` matches its builds), ``id:*`` (every version) or ``*`` (all)."""
    if spec == "*":
        return list(installed)
    lex_id, _, version = spec.partition(":")
    matches = [x for x in installed if x.id == lex_id and _version_matches(version, x.version)]
    if not matches:
        have = ", ".join(x.spec for x in installed) or "none"
        same_id = [x.spec for x in installed if x.id == lex_id]
        fix = (f"pass {lex_id} (the installed version) or {same_id[0]}" if same_id else
               "pass one of those (the id alone, e.g. omw-en, picks the installed version)" if installed else "")
        raise LexiconMissingError(
            f"lexicon {spec!r} is not installed in {str(wn_dir)!r} (installed: {have}); "
            f"{fix + ', or ' if fix else ''}{_IMPORT_HINT}"
        )
    if len(matches) > 1 and version != "*":
        raise LexiconError(
            f"lexicon {spec!r} is ambiguous in {str(wn_dir)!r}; name one version: {', '.join(x.spec for x in matches)}"
        )
    return matches


class WnLexicon:
    """Wordnets from a ``wn`` data directory, bulk-loaded into dicts on first use.

    Args:
        specs: ``wn`` lexicon specifiers (a list or one space-separated string); ``"*"`` selects
            all installed lexicons.  Mutually exclusive with ``langs``.
        langs: select every installed lexicon in these languages instead.
        wn_dir: the ``wn`` data directory (default :func:`default_wn_dir`).
        gloss_specs: lexicons whose definitions are used, through ILI, for synsets without a
            definition in their own language; default: the English lexicons among the selected
            ones, else the first English lexicon installed.
        lemmatize: for English, fall back to Morphy's suffix rules when a word has no entry.
        cache_dir: keep each lexicon's loaded data here (see the module docstring); ``None``: no
            disk cache (every process loads from the database, and tokenises glosses lazily).
        loader: ``"sql"`` reads ``wn``'s tables directly, ``"api"`` uses ``wn``'s object API,
            ``"auto"`` picks SQL when the schema is one this ``wn`` release knows.
        missing_ok: with ``langs``, skip languages without an installed wordnet instead of
            failing (as long as one language has one).
        no_fallback: languages whose synsets never borrow a gloss or hyponyms from
            ``gloss_specs`` (nor an ILI definition): only their own wordnet's.
        lang_specs: with ``langs``, the specifiers to use for some of them (e.g. a user language's
            registry ``wordnets``) instead of every installed lexicon in that language.
    """

    def __init__(
        self,
        specs: Sequence[str] | str | None = None,
        *,
        langs: Sequence[str] | None = None,
        wn_dir: Path | str | None = None,
        gloss_specs: Sequence[str] | str | None = None,
        lemmatize: bool = True,
        loader: Loader = "auto",
        missing_ok: bool = False,
        cache_dir: Path | str | None = None,
        no_fallback: Sequence[str] = (),
        lang_specs: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        if specs is not None and langs is not None:
            raise InputError("give wordnet lexicons either by specs or by langs, not both")
        if lang_specs and langs is None:
            raise InputError("lang_specs picks lexicons for some of langs; give langs too (or name every lexicon "
                             "in specs)")
        self._no_fallback = frozenset(normalize_lang(x) for x in no_fallback)
        if loader not in ("auto", "sql", "api"):
            raise InputError(f"unknown wn loader {loader!r}; use 'auto', 'sql' or 'api'")
        self.wn_dir = Path(wn_dir).expanduser() if wn_dir is not None else default_wn_dir()
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self.lemmatize = lemmatize
        self._conn = _connect_ro(self.wn_dir)
        installed = _list_installed(self._conn)
        if specs is not None:
            chosen = [lex for spec in _split_specs(specs) for lex in _resolve(spec, installed, self.wn_dir)]
        else:
            wanted = [normalize_lang(x) for x in (langs or [])]
            given = {normalize_lang(k): list(v) for k, v in (lang_specs or {}).items() if v}
            extra = sorted(set(given) - set(wanted))
            if extra:
                raise InputError(f"lang_specs names language(s) {', '.join(extra)} that are not among "
                                 f"{', '.join(wanted)}; give them in langs too")
            chosen = [x for x in installed if langs is None or
                      (normalize_lang(x.language) in wanted and normalize_lang(x.language) not in given)]
            for lang, lang_spec in given.items():
                for lex in (lex for spec in lang_spec for lex in _resolve(spec, installed, self.wn_dir)):
                    if normalize_lang(lex.language) != lang:
                        raise InputError(f"lexicon {lex.spec} is in language {lex.language!r}, not {lang!r}; name a "
                                         f"{lang} wordnet for {lang} (`polyglot-groc lexicon info` lists them)")
                    chosen.append(lex)
            missing = [lang for lang in wanted if not any(normalize_lang(x.language) == lang for x in chosen)]
            if missing and missing_ok and chosen:
                # Polyglot runs mix languages with and without wordnets: the others get no forms.
                logger.info("no wordnet for %s; those words get surface forms only", ", ".join(missing))
            elif missing:
                have = ", ".join(f"{x.spec} [{normalize_lang(x.language)}]" for x in installed) or "none"
                raise LexiconMissingError(
                    f"no wordnet for language(s) {', '.join(missing)} in {str(self.wn_dir)!r} "
                    f"(installed: {have}); {_IMPORT_HINT}"
                )
        if not chosen:
            raise LexiconMissingError(f"no lexicons installed in {str(self.wn_dir)!r}; {_IMPORT_HINT}")
        self._chosen = list(dict.fromkeys(chosen))
        if gloss_specs is not None:
            gloss = [lex for s in _split_specs(gloss_specs) for lex in _resolve(s, installed, self.wn_dir)]
        else:
            gloss = [x for x in self._chosen if normalize_lang(x.language) == "en"]
            if not gloss:
                gloss = [x for x in installed if normalize_lang(x.language) == "en"][:1]
        self._gloss = list(dict.fromkeys(gloss))
        # "auto" is resolved on the first database read (checking the schema imports wn, which a
        # process that loads everything from the cache does not need).
        self._loader_requested: Loader = loader
        self._loader: Loader = loader
        self._data: dict[str, LexData] = {}
        self._ili_defs: dict[str, str] | None = None
        self._gloss_tokens: dict[tuple[str, int], tuple[list[str], str | None]] = {}
        self._lock = threading.Lock()
        self._mirror = (LexiconMirror(self.cache_dir, self.wn_dir, loader) if self.cache_dir is not None
                        else None)

    # -- protocol ---------------------------------------------------------------------------

    @property
    def specs(self) -> list[str]:
        return [x.spec for x in dict.fromkeys(self._chosen + self._gloss)]

    @property
    def gloss_specs(self) -> list[str]:
        """The lexicons whose glosses serve synsets without one in their own language (through ILI)."""
        return [x.spec for x in self._gloss]

    @property
    def settings(self) -> dict[str, Any]:
        """Lookup behaviour that changes results without changing ``specs`` (for cache keys)."""
        settings: dict[str, Any] = {"backend": "wn", "lemmatize": self.lemmatize,
                                    "gloss": [x.spec for x in self._gloss]}
        if self._no_fallback:  # only when set: runs recorded before the option compare equal
            settings["no_fallback"] = sorted(self._no_fallback)
        return settings

    @property
    def source(self) -> dict[str, Any]:
        """The database read, as it is now (resolved folder; size, mtime, inode of ``wn.db`` and its WAL).

        Part of compiled-forms cache keys (:class:`lexicons.service.LexiconService`): specs name a
        lexicon version, not its content, so forms cached from another folder or an earlier import
        of the same ``id:version`` are never served.
        """
        return {"wn_dir": str(self.wn_dir.resolve()), "db": db_identity(self.wn_dir)}

    @property
    def selected_specs(self) -> list[str]:
        """The selected lexicons' specs (``id:version``), without the gloss-only ones.

        ``WnLexicon(selected_specs, gloss_specs=settings["gloss"], wn_dir=wn_dir)`` reopens this
        very selection, whatever ``specs``/``langs`` chose it and whatever was installed since.
        """
        return [x.spec for x in self._chosen]

    def languages(self) -> list[str]:
        return sorted({normalize_lang(x.language) for x in self._chosen})

    def related(self, word: str, lang: str) -> list[str]:
        lemmas: list[str] = []
        for data in self._lexicons_for(lang):
            for s in self._lookup(data, word):
                lemmas.extend(data.members[s])
                for h in self._hyponyms(data, s):
                    lemmas.extend(data.members[h])
        return dedupe_related(word, lemmas)

    def definition(self, word: str, lang: str) -> list[str]:
        for data in self._lexicons_for(lang):
            synsets = self._lookup(data, word)
            if synsets:
                return list(self._gloss_of(data, synsets[0]))
        return []

    def definition_lang(self, word: str, lang: str) -> str | None:
        """The language of :meth:`definition`'s gloss: ``lang``'s own, or that of the lexicon it was
        borrowed from through ILI (English; ILI's own definitions are English); None without one."""
        for data in self._lexicons_for(lang):
            synsets = self._lookup(data, word)
            if synsets:
                return self._gloss_entry(data, synsets[0])[1]
        return None

    # -- extras -----------------------------------------------------------------------------

    def translation_pairs(
        self,
        src_words: Sequence[str],
        src_lang: str,
        tgt_words: Sequence[str],
        tgt_lang: str,
        max_per_word: int | None = 3,
        *,
        inflected: bool = False,
    ) -> list[tuple[str, str]]:
        """Word pairs ``(s, t)``, ``s`` from ``src_words`` and ``t`` from ``tgt_words``, that have
        senses in the same synset: linked through the ILI across lexicons (how French synsets reach
        English glosses), or the very synset within one lexicon.

        A seed dictionary for aligning embeddings (``polyglot-groc align --seed lexicon``).  Words
        are matched case-insensitively like :meth:`related` and returned as given.  Order: source
        words in input order; per source word, its synsets in the backend's sense order; per
        synset, target words for which it is a higher-ranked sense first, then in input order
        (usually frequency order).  At most ``max_per_word`` targets per source word (``None``:
        all): the first senses are the frequent ones, the tail is mostly noise for a seed.

        By default only lemmas match (a word has senses only as a lemma): with ``inflected=True``
        other forms and Morphy base forms match too, as in :meth:`related`, which pairs ``dogs``
        with ``chien`` -- inflection mismatches a Procrustes seed is better without.  In one
        language the pairs are synonyms, without the word itself.
        """
        if max_per_word is not None and (not is_int(max_per_word) or max_per_word < 1):
            raise InputError(f"max_per_word must be a positive integer or None, got {max_per_word!r}")
        src_lex, tgt_lex = self._lexicons_for(src_lang), self._lexicons_for(tgt_lang)
        for lang, lexes in ((src_lang, src_lex), (tgt_lang, tgt_lex)):
            if not lexes:
                selected = ", ".join(x.spec for x in self._chosen)
                raise LexiconMissingError(
                    f"no wordnet for language {lang!r} among the selected lexicons ({selected}); "
                    f"select one (e.g. {option('lexicon', 'SPEC')}) or install it with "
                    + (f"`polyglot-groc lexicon import --langs {lang}`" if in_cli() else
                       f"lexicons.omw_import.import_omw(langs=[{lang!r}])")
                )
        same_lang = normalize_lang(src_lang) == normalize_lang(tgt_lang)

        # Inverse index over the target vocabulary, built once: synset key -> (sense rank, input
        # position, word).  Keys are ILI ids where a synset has one, else the synset itself.
        by_key: dict[tuple[str, str | int], list[tuple[int, int, str]]] = {}
        seen: set[str] = set()
        for j, t in enumerate(tgt_words):
            if t in seen:
                continue
            seen.add(t)
            rank = 0
            for data in tgt_lex:
                for s in self._senses(data, t, inflected):
                    by_key.setdefault(_synset_key(data, s), []).append((rank, j, t))
                    rank += 1
        ordered = {k: [t for *_, t in sorted(v)] for k, v in by_key.items()}

        pairs: list[tuple[str, str]] = []
        seen.clear()
        for word in src_words:
            if word in seen:
                continue
            seen.add(word)
            own = word.casefold()
            chosen: dict[str, None] = {}
            for data in src_lex:
                for s in self._senses(data, word, inflected):
                    for t in ordered.get(_synset_key(data, s), ()):
                        if not (same_lang and t.casefold() == own):
                            chosen.setdefault(t)
                    if max_per_word is not None and len(chosen) >= max_per_word:
                        break
            targets = list(chosen)[:max_per_word] if max_per_word is not None else list(chosen)
            pairs.extend((word, t) for t in targets)
        return pairs

    def load(self) -> None:
        """Bulk-load every selected lexicon now (otherwise it happens on first lookup); data from
        the disk cache is read into memory, which bulk use (compiling a vocabulary) wants."""
        for lex in self._chosen + self._gloss:
            data = self._get(lex)
            if isinstance(data.synset_pos, CachedColumn):
                with self._lock:
                    self._data[lex.spec] = materialize(data)

    def synset_count(self, lang: str) -> int:
        """Number of synsets of the selected lexicons in ``lang``."""
        return sum(d.num_synsets for d in self._lexicons_for(lang))

    def lemma_count(self, lang: str) -> int:
        """Number of distinct lemmas of the selected lexicons in ``lang``."""
        return len({k for d in self._lexicons_for(lang) for k in d.lemmas})

    def lemmas(self, lang: str) -> list[str]:
        """Every lemma of the selected lexicons in ``lang``, in lexicon order (for benchmarks)."""
        return list(dict.fromkeys(k for d in self._lexicons_for(lang) for k in d.lemmas))

    def close(self) -> None:
        """Close the read-only database connection (loaded data stays usable; data read row by row
        from the disk cache does not, so call :meth:`load` first to keep using it)."""
        self._conn.close()
        if self._mirror is not None:
            self._mirror.close()

    def __enter__(self) -> WnLexicon:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"WnLexicon({self.specs!r}, wn_dir={str(self.wn_dir)!r})"

    # -- internals --------------------------------------------------------------------------

    def _get(self, lex: Installed) -> LexData:
        data = self._data.get(lex.spec)
        if data is not None:
            return data
        with self._lock:
            data = self._data.get(lex.spec)
            if data is None:
                data = (self._build_data(lex) if self._mirror is None
                        else self._mirror.data(lex, lambda: self._build_data(lex)))
                self._data[lex.spec] = data
        return data

    def _build_data(self, lex: Installed) -> LexData:
        """Read one lexicon from the database and index it."""
        if self._loader == "auto":
            self._loader = "sql" if _schema_is_known(self._conn) else "api"
            if self._loader == "api":
                logger.warning("unknown wn database schema; loading lexicons through wn's (slow) API")
        # Progress at INFO (the CLI shows it): the first read of a large lexicon takes tens of seconds;
        # later ones come from the disk cache.
        logger.info("reading %s from %s and indexing it (once; cached after)...", lex.spec, self.wn_dir)
        started = time.perf_counter()
        try:
            raw = _read_sql(self._conn, lex) if self._loader == "sql" else _read_api(self.wn_dir, lex)
        except sqlite3.Error as exc:
            raise LexiconError(f"cannot read lexicon {lex.spec!r} from {str(self.wn_dir)!r}: {exc}") from exc
        data = _build(lex.spec, normalize_lang(lex.language), raw)
        logger.info("loaded %s: %d synsets, %d lemmas in %.1fs", lex.spec, data.num_synsets, len(data.lemmas),
                    time.perf_counter() - started)
        return data

    def _lexicons_for(self, lang: str) -> list[LexData]:
        lang = normalize_lang(lang)
        return [self._get(x) for x in self._chosen if normalize_lang(x.language) == lang]

    def _lookup(self, data: LexData, word: str) -> tuple[int, ...]:
        low = word.lower()
        hit = data.lower_index.get(low, ())
        if not hit and "_" in word:  # WordNet-style multiword spelling of a lemma stored with spaces
            return self._lookup(data, display_lemma(word))
        if self.lemmatize and data.lang == "en":
            return self._morphy(data, low, hit)
        return hit or data.form_index.get(low, ())

    def _senses(self, data: LexData, word: str, inflected: bool) -> tuple[int, ...]:
        """Synsets of ``word`` as a lemma (case-insensitive, ``_`` read as a space), or with
        ``inflected`` everything :meth:`_lookup` finds (other forms, Morphy)."""
        if inflected:
            return self._lookup(data, word)
        hit = data.lower_index.get(word.lower(), ())
        if not hit and "_" in word:
            hit = data.lower_index.get(display_lemma(word).lower(), ())
        return hit

    @staticmethod
    def _morphy(data: LexData, low: str, base: tuple[int, ...]) -> tuple[int, ...]:
        """NLTK's ``wordnet.synsets`` order: per part of speech, the word's own synsets, then those
        of its irregular base forms if it has any, else of its Morphy suffix-rule base forms."""
        irregular = data.form_index.get(low, ())
        found: list[int] = []
        for pos in _MORPHY_POS:
            found.extend(s for s in base if _pos_group(data.synset_pos[s]) == pos)
            exceptions = [s for s in irregular if _pos_group(data.synset_pos[s]) == pos]
            if exceptions:
                found.extend(exceptions)
                continue
            for suffix, repl in data.morphy_rules.get(pos, []):
                if low.endswith(suffix) and len(suffix) < len(low):
                    candidate = low[: -len(suffix)] + repl
                    found.extend(
                        s for s in data.lower_index.get(candidate, ()) if _pos_group(data.synset_pos[s]) == pos
                    )
        return tuple(dict.fromkeys(found))

    def _hyponyms(self, data: LexData, synset: int) -> tuple[int, ...]:
        if data.has_relations:
            return data.hyponyms[synset]
        ili = data.synset_ili[synset]
        if not ili or data.lang in self._no_fallback:
            return ()
        # No structure of its own: borrow the English one through ILI (wn's "expand" behaviour).
        out: list[int] = []
        for lex in self._gloss:
            gloss = self._get(lex)
            if gloss is data or not gloss.has_relations:
                continue
            g = gloss.ili_index.get(ili)
            if g is None:
                continue
            for h in gloss.hyponyms[g]:
                h_ili = gloss.synset_ili[h]
                local = data.ili_index.get(h_ili) if h_ili else None
                if local is not None:
                    out.append(local)
        return tuple(dict.fromkeys(out))

    def _gloss_of(self, data: LexData, synset: int) -> list[str]:
        return self._gloss_entry(data, synset)[0]

    def _gloss_entry(self, data: LexData, synset: int) -> tuple[list[str], str | None]:
        """The synset's gloss tokens and their language (None where there is no gloss)."""
        key = (data.spec, synset)
        entry = self._gloss_tokens.get(key)
        if entry is None:
            source, s = data, synset
            ili = data.synset_ili[synset]
            if data.lang in self._no_fallback:
                ili = ""  # its own gloss or none: no English one through ILI
            if not data.definitions[synset] and ili:
                for lex in self._gloss:
                    gloss = self._get(lex)
                    g = gloss.ili_index.get(ili)
                    if g is not None and gloss.definitions[g]:
                        source, s = gloss, g
                        break
            if source.definitions[s]:
                entry = (source.gloss_tokens(s), source.lang)  # pre-tokenised when loaded from the cache
            else:
                text = self._ili_definitions().get(ili) if ili else None
                entry = (tokenize_gloss(text), "en") if text else ([], None)  # ILI definitions are English
            self._gloss_tokens[key] = entry
        return entry

    def _ili_definitions(self) -> dict[str, str]:
        if self._ili_defs is None:
            try:
                rows = self._conn.execute(
                    "SELECT id, definition FROM ilis WHERE definition IS NOT NULL AND definition != ''"
                ).fetchall()
            except sqlite3.Error as exc:
                logger.debug("no ILI definitions: %s", exc)
                rows = []
            self._ili_defs = {str(r[0]): str(r[1]) for r in rows}
        return self._ili_defs
