"""On-disk caches of the toolkit: where they live, and the lock under which an entry is built.

Cache entries are written atomically (temp file + rename) while holding a :mod:`filelock` lock
beside them, so concurrent processes build an entry once and readers never see half a file.  A
damaged entry is reported (a warning) and rebuilt: a cache is never the user's error.

It lives in ``groc_base`` so the cache root is defined once, for ``lexicons`` and
``polyglot_groc`` alike.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["CACHE_ENV", "cache_lock", "default_cache_root"]

logger = logging.getLogger(__name__)

#: Environment variable naming the toolkit's cache root.
CACHE_ENV = "POLYGLOT_GROC_CACHE"
#: Seconds to wait for another process that is building the same entry.
LOCK_TIMEOUT_S = 600.0


def default_cache_root() -> Path:
    """``$POLYGLOT_GROC_CACHE``, else ``~/.cache/polyglot-groc``."""
    root = os.environ.get(CACHE_ENV) or str(Path.home() / ".cache" / "polyglot-groc")
    return Path(root).expanduser()


@contextmanager
def cache_lock(lock_path: Path, timeout: float = LOCK_TIMEOUT_S) -> Iterator[bool]:
    """Hold the file lock ``lock_path`` for the block; yields ``False`` (and logs why) when it cannot
    be taken, in which case the caller should build without writing the cache."""
    from filelock import FileLock, Timeout

    try:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(lock_path), timeout=timeout)
        lock.acquire()
    except Timeout:
        logger.warning("another process holds %s for over %.0fs; building without the cache", lock_path, timeout)
        yield False
        return
    except OSError as exc:
        logger.warning("cannot lock %s (%s); building without the cache", lock_path, exc)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
