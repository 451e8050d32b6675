"""The toolkit's base: one error hierarchy, atomic file writing and JSON output, the on-disk cache.

Every other package may import it (``lexicons``, ``langpairs``, ``eval``, ``polyglot_groc``); it
imports none of them, nor anything heavier than :mod:`filelock`. Keeping these three modules here
lets ``lexicons`` be about lexicons and ``eval`` share the errors the CLI maps to exit code 2.
"""
