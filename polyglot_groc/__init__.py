"""polyglot-groc: grounded compositional output language models, mono- and polyglot.

The public API lives in :mod:`polyglot_groc.api`; its names are also attributes of this package,
imported on first use (PEP 562), so ``import polyglot_groc as pg; pg.train(...)`` works while the
command line, which imports this package too, does not pay for torch before it needs it.
"""

from __future__ import annotations

from typing import Any

from polyglot_groc.model.threads import prefer_passive_wait
from polyglot_groc.public import PUBLIC

# Before anything loads torch (and with it OpenMP, which reads this once): waiting threads sleep rather
# than spin, so a busy machine's cores are not burnt by spinning (polyglot_groc/model/threads.py).
prefer_passive_wait()

__version__ = "0.1.0"

#: The names of :mod:`polyglot_groc.api` (its list, :data:`polyglot_groc.public.PUBLIC`). Only these load
#: the API: a submodule import such as ``from polyglot_groc import model`` never does.
API_NAMES = frozenset(PUBLIC)


def __getattr__(name: str) -> Any:
    if name in API_NAMES:
        from polyglot_groc import api

        return getattr(api, name)
    raise AttributeError(f"module 'polyglot_groc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API_NAMES])
