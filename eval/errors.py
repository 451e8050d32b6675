"""Input errors of the evaluation package.

``eval`` imports none of the toolkit's other packages, so it cannot share the hierarchy in
``lexicons.errors``; the CLI maps :class:`EvalInputError` to exit code 2 like any ``GrocError``.
"""

from __future__ import annotations


class EvalInputError(ValueError):
    """Evaluation input (vectors, dictionary, dataset) is malformed; the message names the fix."""
