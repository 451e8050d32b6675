"""A compiled, row-readable copy of each wordnet lexicon: the wn backend's on-disk mirror.

With ``cache_dir`` (the CLI's ``lexicon lookup`` and ``coverage`` pass
``$POLYGLOT_GROC_CACHE/wordnets``), each lexicon's bulk-loaded data, with every definition
already tokenised, is written once to ``<cache_dir>/<spec>-<db>-<key>-<crc32>.wnlex``, an SQLite
file (one row per synset, one per index key; written to a temp file and renamed, under a file
lock, :mod:`groc_base.cache`). Later processes check its crc32 and read only the rows a lookup
touches, so a warm lookup needs neither the database scan nor NLTK nor ``wn``;
:func:`materialize` reads it all into memory for bulk use. The key is the database's identity
(resolved path, size, mtime and inode of ``wn.db`` and of its WAL file), the lexicon's row, id,
version and language, the loader and the ``wn``, NLTK, Python and cache-format versions:
re-importing a wordnet or upgrading a tokeniser gives a new key, so a stale file is never read
(older files of the same lexicon and database are removed when a new one is written). The data
is exactly what a fresh build gives, so every lookup is identical with or without the mirror.

Why a second database beside ``wn``'s own (measured on PWN 3.0, ``lexicon import --langs en``,
a fresh process per ``polyglot-groc lexicon lookup dog --lang en``, a loaded 2-core machine):

* ``wn.db``'s own indexes (``forms.form``/``normalized_form``, ``senses`` by entry and synset,
  ``synset_relations`` by source and target, ``definitions`` by synset) serve the lookup's
  queries -- synsets in sense order, Morphy base forms, members, hyponyms, the gloss -- in about
  3 ms, and the process without the gloss's tokens takes 0.25-0.32 s. But the lookup prints the
  gloss's tokens, and tokenising it needs NLTK's Toktok tokeniser, whose import costs 0.80-0.98 s:
  1.27-1.49 s a lookup, over the 0.5 s a warm lookup should take. The mirror stores the tokens, so
  a warm lookup reads a few rows and imports neither NLTK nor ``wn``: 0.32-0.54 s (Python and the
  CLI's imports are about 0.25 s of it).
* Bulk use (compiling a vocabulary's forms, ``lexicon coverage``) loads a whole lexicon: 1.4 s
  from the mirror against 6.0 s from ``wn.db`` (whole-table queries), then 0.8 s against 4.1 s
  for related words and definitions of 20,000 lemmas (every gloss tokenised once, in advance).
* Building the mirror is the first call after an import: 18.8 s for PWN (every gloss tokenised).

So the mirror stays, in this module of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import marshal
import re
import sqlite3
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from groc_base.cache import cache_lock
from groc_base.fileio import write_then_rename
from lexicons.wn_data import Installed, LexData, db_path

__all__ = ["CachedColumn", "CachedIndex", "LexiconMirror", "db_identity", "materialize"]

logger = logging.getLogger(__name__)

#: Bumped whenever the cached lexicon data changes layout or meaning for the same database.
_CACHE_FORMAT = 1
_CACHE_SUFFIX = ".wnlex"


# Index kinds in the cache's ``idx`` table.
_LOWER, _FORM, _ILI = 0, 1, 2
_CACHE_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE synsets (id INTEGER PRIMARY KEY, pos TEXT NOT NULL, ili TEXT, members BLOB NOT NULL,
                      hyponyms BLOB NOT NULL, definition TEXT, tokens TEXT);
CREATE TABLE lemmas (id INTEGER PRIMARY KEY, lemma TEXT NOT NULL);
CREATE TABLE idx (kind INTEGER NOT NULL, key TEXT NOT NULL, value BLOB NOT NULL);
"""


class CachedColumn(Sequence[Any]):
    """One column of a cache table, read row by row on demand: a lookup touches a few rows, so a
    warm process never loads the whole lexicon.  ``decode`` turns a stored value back into the
    in-memory one (marshal for tuples)."""

    def __init__(self, conn: sqlite3.Connection, table: str, column: str, n: int,
                 decode: Callable[[Any], Any] | None = None) -> None:
        self._conn, self._n, self._decode = conn, n, decode
        self._sql = f"SELECT {column} FROM {table} WHERE id = ?"
        self._all = f"SELECT {column} FROM {table} ORDER BY id"

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        value = self._conn.execute(self._sql, (i,)).fetchone()[0]
        return value if self._decode is None else self._decode(value)

    def __iter__(self) -> Iterator[Any]:
        for (value,) in self._conn.execute(self._all):
            yield value if self._decode is None else self._decode(value)

    def materialize(self) -> list[Any]:
        return list(self)


class CachedIndex(Mapping[str, Any]):
    """One index (lower-cased lemmas, other forms or ILI ids) of the cache, read key by key."""

    def __init__(self, conn: sqlite3.Connection, kind: int, decode: Callable[[Any], Any] | None = None) -> None:
        self._conn, self._kind, self._decode = conn, kind, decode

    def __getitem__(self, key: str) -> Any:
        row = self._conn.execute("SELECT value FROM idx WHERE kind = ? AND key = ?", (self._kind, key)).fetchone()
        if row is None:
            raise KeyError(key)
        return row[0] if self._decode is None else self._decode(row[0])

    def __iter__(self) -> Iterator[str]:
        for (key,) in self._conn.execute("SELECT key FROM idx WHERE kind = ? ORDER BY rowid", (self._kind,)):
            yield key

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM idx WHERE kind = ?", (self._kind,)).fetchone()[0])

    def materialize(self) -> dict[str, Any]:
        rows = self._conn.execute("SELECT key, value FROM idx WHERE kind = ? ORDER BY rowid", (self._kind,))
        return dict(rows) if self._decode is None else {k: self._decode(v) for k, v in rows}


def materialize(data: LexData) -> LexData:
    """An in-memory copy of cache-backed data (one scan per table): for bulk use, where per-row
    reads would cost more than loading everything once."""
    values = {f.name: getattr(data, f.name) for f in fields(LexData)}
    for name, value in values.items():
        if isinstance(value, CachedColumn | CachedIndex):
            values[name] = value.materialize()
    return LexData(**values)


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "none"


def db_identity(wn_dir: Path) -> list[list[int] | None]:
    """What changes whenever the database does: size, mtime and inode of wn.db and its WAL file."""
    db = db_path(wn_dir)
    out: list[list[int] | None] = []
    for path in (db, db.with_name(db.name + "-wal")):
        try:
            st = path.stat()
        except FileNotFoundError:
            out.append(None)
            continue
        out.append([st.st_size, st.st_mtime_ns, st.st_ino])
    return out


def _file_crc(path: Path) -> int:
    with path.open("rb") as fh:
        crc = 0
        while chunk := fh.read(1 << 22):
            crc = zlib.crc32(chunk, crc)
    return crc


def _write_cache_db(path_prefix: Path, data: LexData, key: str) -> Path:
    """Write ``data`` to ``<path_prefix>-<crc32>.wnlex`` atomically (temp file, fsync, rename).

    The file's crc32 is in its name, so one rename publishes file and checksum together and a
    damaged file (bit flips, truncation) is detected before SQLite reads it.
    """
    tokens = data.definition_tokens
    assert tokens is not None

    def fill(tmp: Path) -> Path:
        conn = sqlite3.connect(tmp)
        try:
            conn.executescript("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;" + _CACHE_SCHEMA)
            meta = {"format": str(_CACHE_FORMAT), "key": key, "spec": data.spec, "lang": data.lang,
                    "has_relations": json.dumps(data.has_relations), "num_synsets": str(data.num_synsets),
                    "num_lemmas": str(len(data.lemmas)),
                    "morphy_rules": json.dumps({k: list(v) for k, v in data.morphy_rules.items()})}
            conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            conn.executemany(
                "INSERT INTO synsets VALUES (?, ?, ?, ?, ?, ?, ?)",
                zip(range(data.num_synsets), data.synset_pos, data.synset_ili, map(marshal.dumps, data.members),
                    map(marshal.dumps, data.hyponyms), data.definitions, tokens, strict=True),
            )
            conn.executemany("INSERT INTO lemmas VALUES (?, ?)", enumerate(data.lemmas))
            for kind, index in ((_LOWER, data.lower_index), (_FORM, data.form_index)):
                conn.executemany("INSERT INTO idx VALUES (?, ?, ?)",
                                 ((kind, k, marshal.dumps(v)) for k, v in index.items()))
            conn.executemany("INSERT INTO idx VALUES (?, ?, ?)", ((_ILI, k, v) for k, v in data.ili_index.items()))
            conn.execute("CREATE UNIQUE INDEX idx_key ON idx (kind, key)")
            conn.commit()
        finally:
            conn.close()
        return path_prefix.with_name(f"{path_prefix.name}-{_file_crc(tmp):08x}{_CACHE_SUFFIX}")

    return write_then_rename(path_prefix.parent, path_prefix.name, fill, mode=0o644)


def _open_cache_db(path: Path, key: str, spec: str) -> tuple[LexData, sqlite3.Connection]:
    """Cache-backed data from ``path`` and its connection; ``ValueError`` when the file is damaged
    or not this lexicon's."""
    crc = path.name[: -len(_CACHE_SUFFIX)].rsplit("-", 1)[-1]
    if f"{_file_crc(path):08x}" != crc:
        raise ValueError("checksum mismatch")
    # immutable: the file never changes after its rename, so SQLite needs no locks or journal.
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)
    try:
        meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        if meta.get("format") != str(_CACHE_FORMAT) or meta.get("key") != key or meta.get("spec") != spec:
            raise ValueError("written for another database, lexicon or format")
        n, n_lemmas = int(meta["num_synsets"]), int(meta["num_lemmas"])
        rules = {pos: [(r[0], r[1]) for r in rows] for pos, rows in json.loads(meta["morphy_rules"]).items()}
    except (sqlite3.Error, KeyError, TypeError, ValueError) as exc:  # JSONDecodeError is a ValueError
        conn.close()
        raise ValueError(str(exc) if isinstance(exc, ValueError) else f"unreadable: {exc}") from exc
    data = LexData(
        spec=spec, lang=meta["lang"],
        synset_pos=CachedColumn(conn, "synsets", "pos", n),
        synset_ili=CachedColumn(conn, "synsets", "ili", n),
        members=CachedColumn(conn, "synsets", "members", n, marshal.loads),
        hyponyms=CachedColumn(conn, "synsets", "hyponyms", n, marshal.loads),
        definitions=CachedColumn(conn, "synsets", "definition", n),
        has_relations=bool(json.loads(meta["has_relations"])),
        lemmas=CachedColumn(conn, "lemmas", "lemma", n_lemmas),
        lower_index=CachedIndex(conn, _LOWER, marshal.loads),
        form_index=CachedIndex(conn, _FORM, marshal.loads),
        ili_index=CachedIndex(conn, _ILI),
        morphy_rules=rules,
        definition_tokens=CachedColumn(conn, "synsets", "tokens", n),
    )
    return data, conn


class LexiconMirror:
    """The mirror files of one ``wn`` data folder's lexicons under ``cache_dir``.

    :meth:`data` returns a lexicon's data read row by row from its mirror file, building the file
    first (once, under a file lock, so concurrent processes do not build it twice) when there is
    none for the database as it is now. ``loader`` (the backend's requested loader) is part of the
    key. The open files' connections are kept in ``connections`` and closed by :meth:`close`.
    """

    def __init__(self, cache_dir: Path, wn_dir: Path, loader: str) -> None:
        self.cache_dir = cache_dir
        self.wn_dir = wn_dir
        self.loader = loader
        self.connections: list[sqlite3.Connection] = []

    def close(self) -> None:
        for conn in self.connections:
            conn.close()

    def _cache_prefix(self, lex: Installed, identity: list[list[int] | None]) -> tuple[Path, str]:
        """``(cache file name without its checksum, key)`` of ``lex`` for the database state ``identity``."""
        db = str(db_path(self.wn_dir).resolve())
        payload = {
            "format": _CACHE_FORMAT, "python": list(sys.version_info[:2]), "marshal": marshal.version,
            "db": db, "db_state": identity, "lexicon": [lex.rowid, lex.id, lex.version, lex.language],
            "loader": self.loader, "wn": _dist_version("wn"), "nltk": _dist_version("nltk"),
        }
        key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]
        return self.cache_dir / f"{self._cache_stem(lex)}-{key}", key

    def _cache_stem(self, lex: Installed) -> str:
        """File name prefix shared by every cache of ``lex`` from this database (one lock per stem)."""
        db = str(db_path(self.wn_dir).resolve())
        return f"{re.sub(r'[^A-Za-z0-9._+-]+', '_', lex.spec)}-{hashlib.sha256(db.encode()).hexdigest()[:8]}"

    def _read_cached(self, prefix: Path, key: str, lex: Installed) -> LexData | None:
        """The cache-backed data, or None (missing; damaged: then warned about and removed)."""
        for path in sorted(prefix.parent.glob(f"{prefix.name}-*{_CACHE_SUFFIX}")):
            try:
                data, conn = _open_cache_db(path, key, lex.spec)
            except (OSError, ValueError, sqlite3.Error) as exc:
                logger.warning("damaged wordnet cache %s (%s); rebuilding it", path, exc)
                path.unlink(missing_ok=True)
                continue
            logger.info("loaded %s from the cache %s", lex.spec, path)
            self.connections.append(conn)
            return data
        return None

    def data(self, lex: Installed, build: Callable[[], LexData]) -> LexData:
        """The lexicon's data from the cache, else built from the database and cached (once, under
        a file lock, so concurrent processes do not build it twice)."""
        identity = db_identity(self.wn_dir)
        prefix, key = self._cache_prefix(lex, identity)
        data = self._read_cached(prefix, key, lex)
        if data is not None:
            return data
        stem = self._cache_stem(lex)
        with cache_lock(self.cache_dir / f"{stem}.lock") as locked:
            if locked:  # another process may have built it while we waited
                data = self._read_cached(prefix, key, lex)
                if data is not None:
                    return data
            data = build()
            # Write only if the database did not change while it was read (else the key is stale).
            if locked and db_identity(self.wn_dir) == identity:
                data.tokenize_definitions()  # every gloss, once, so that cached lookups need no NLTK
                try:
                    path = _write_cache_db(prefix, data, key)
                except (OSError, sqlite3.Error) as exc:
                    logger.warning("could not write the wordnet cache in %s: %s", self.cache_dir, exc)
                else:
                    logger.info("cached %s in %s", lex.spec, path)
                    for old in self.cache_dir.glob(f"{stem}-*{_CACHE_SUFFIX}"):
                        if old != path:  # an earlier state of the same database: never valid again
                            old.unlink(missing_ok=True)
        return data
