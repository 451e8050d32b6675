"""The toolkit's base: one error hierarchy, atomic file writing and JSON output, one reader of user
text (:mod:`groc_base.textio`: strict UTF-8, errors naming the source and the fix), the on-disk
cache, and the checks of user-given numbers and outputs.

Every other package may import it (``lexicons``, ``langpairs``, ``eval``, ``polyglot_groc``); it
imports none of them, nor anything heavier than :mod:`filelock`. Keeping these modules here
lets ``lexicons`` be about lexicons, ``eval`` share the errors the CLI maps to exit code 2, and the
library's workflows refuse an existing output with the CLI's own words.
"""
