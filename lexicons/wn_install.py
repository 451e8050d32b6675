"""Writing a ``wn`` data folder: one import at a time, and all of it or nothing.

``wn`` adds a lexicon to its SQLite database in place. A second process that opens the database
while the first is creating it reads a half-made schema (``wn`` then says "Wn's schema has
changed", which is not so), and an add that fails half-way (a sense naming a synset the file does
not define) leaves a database behind. So every import of the toolkit goes through
:func:`writing_wordnets`, which

* holds the folder's lock (``<wn_dir>/.import.lock``, :mod:`filelock`): a second import into the
  same folder waits for the first (and says so), then finds the first one's lexicons installed;
* gives the import a copy of ``wn.db`` (SQLite's backup API) in a temporary folder beside it
  (:func:`groc_base.fileio.make_temp_dir`), and renames the copy over ``wn.db`` only when the
  whole import succeeded: readers see the old database or the new one, never half of one;
* on any failure (a bad file, a full disk, an exception) leaves ``wn.db`` as it was, and removes
  a wn folder the import created; a killed import's temporary is swept by the next import.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from groc_base.fileio import make_temp_dir, named_for_user, removing_new_dirs, sweep_folder

__all__ = ["LOCK_NAME", "describe_lmf_errors", "sqlite_os_error", "writing_wordnets"]

logger = logging.getLogger(__name__)

#: The lock file every import into a wn folder holds.
LOCK_NAME = ".import.lock"
_DB = "wn.db"


def sqlite_os_error(exc: sqlite3.Error, path: Path) -> OSError | None:
    """The OSError a SQLite failure stands for (a full disk, an I/O or permission error), naming
    ``path``; None for other SQLite errors (a constraint the data broke)."""
    text = str(exc).lower()
    for needle, code in (("disk is full", errno.ENOSPC), ("disk i/o error", errno.EIO),
                         ("readonly database", errno.EROFS), ("unable to open database", errno.EACCES)):
        if needle in text:
            return OSError(code, os.strerror(code), str(path))
    return None


def _close_wn_connections() -> None:
    """Close ``wn``'s pooled connections: the database file they point at is about to be replaced."""
    try:
        from wn import _db  # private: a wn without it simply has nothing to close

        _db.clear_connections()
    except Exception:  # noqa: BLE001 - closing is best effort
        pass


def _copy_db(src: Path, dst: Path) -> None:
    """A consistent copy of the SQLite database ``src`` at ``dst`` (SQLite's online backup)."""
    source = sqlite3.connect(f"{src.resolve().as_uri()}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(str(dst))
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def writing_wordnets(wn_dir: Path) -> Iterator[Path]:
    """Yield a temporary ``wn`` data folder holding a copy of ``wn_dir``'s database; publish it on success.

    The caller points ``wn`` at the yielded folder (:func:`lexicons.wn_backend.wn_data_dir`) for
    its adds and removes, and writes any other files (the LMF copies) into ``wn_dir`` itself. See
    the module docstring for the lock and the all-or-nothing rule.

    Raises:
        OSError: ``wn_dir`` cannot be written (full disk, read-only, permissions), naming
            ``wn_dir/wn.db`` (or ``wn_dir``), never the temporary folder.
    """
    wn_dir = Path(wn_dir).expanduser()
    created = not wn_dir.exists()
    with removing_new_dirs(wn_dir.parent):
        try:
            wn_dir.mkdir(parents=True, exist_ok=True)
            with _import_lock(wn_dir):
                sweep_folder(wn_dir)  # what killed imports left
                sweep_folder(wn_dir / "lmf")
                with _database_copy(wn_dir) as tmp:
                    yield tmp
        except BaseException:
            if created:  # a failed first import leaves no folder (and no empty database) behind
                shutil.rmtree(wn_dir, ignore_errors=True)
            raise


@contextmanager
def _import_lock(wn_dir: Path) -> Iterator[None]:
    """Hold ``wn_dir``'s import lock; a second import waits for the first, and says so."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(wn_dir / LOCK_NAME), is_singleton=False)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.warning("another lexicon import is writing %s; waiting for it to finish", wn_dir)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


@contextmanager
def _database_copy(wn_dir: Path) -> Iterator[Path]:
    """A temporary folder with a copy of ``wn_dir/wn.db``, renamed over it when the block succeeds."""
    db = wn_dir / _DB
    tmp = make_temp_dir(wn_dir, _DB)
    try:
        if db.is_file():
            _copy_db(db, tmp / _DB)
        yield tmp
        _close_wn_connections()
        if (tmp / _DB).is_file():
            _fsync(tmp / _DB)
            os.replace(tmp / _DB, db)
            _fsync(wn_dir)
    except sqlite3.Error as exc:
        as_os = sqlite_os_error(exc, db)
        if as_os is None:
            raise
        raise as_os from exc
    except OSError as exc:
        renamed = named_for_user(exc, tmp, wn_dir)
        if renamed is exc:
            raise
        raise renamed from exc
    finally:
        _close_wn_connections()
        shutil.rmtree(tmp, ignore_errors=True)


def describe_lmf_errors(path: Path, limit: int = 2) -> str | None:
    """What ``wn``'s validator finds wrong with the WN-LMF file ``path`` (its ``E`` checks: duplicate
    ids, a sense naming a missing synset, a relation to a missing target), in a few words; None when
    it finds nothing or cannot read the file."""
    try:
        import wn.lmf
        import wn.validate
        from wn.util import ProgressHandler

        resource = wn.lmf.load(path, progress_handler=ProgressHandler)
    except Exception:  # noqa: BLE001 - the caller reports the original error then
        return None
    found: list[str] = []
    for lexicon in resource.get("lexicons", []):
        if lexicon.get("extends"):
            continue
        report = wn.validate.validate(lexicon, select=("E",), progress_handler=ProgressHandler)
        for code, check in report.items():
            items = check.get("items") or {}
            for item, detail in list(items.items())[:limit]:
                extra = ", ".join(f"{k} {v!r}" for k, v in (detail or {}).items())
                found.append(f"{code} {check['message']}: {item!r}" + (f" ({extra})" if extra else ""))
            if len(items) > limit:
                found.append(f"{code}: {len(items) - limit} more")
    return "; ".join(found[: limit + 1]) or None

