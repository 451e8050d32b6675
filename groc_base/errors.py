"""The toolkit's one error hierarchy.

It lives in ``groc_base``, under every other package (``lexicons``, ``langpairs``, ``eval``,
``polyglot_groc``), so each raises the same types, where the problem is found; the CLI maps every
:class:`GrocError` to one line on stderr and exit code 2. ``InputError`` is also a ``ValueError``.

Messages are lowercase, name the offending value, and say how to fix it.
"""

from __future__ import annotations


class GrocError(Exception):
    """Base of every error raised for bad input or a missing resource (CLI exit code 2)."""


class InputError(GrocError, ValueError):
    """A user-supplied value or file is malformed."""


class ConfigError(InputError):
    """A configuration value or override is malformed."""


class ArgumentTypeError(ConfigError, TypeError):
    """A Python API function got an argument of the wrong type, or one it does not take (also a
    ``TypeError``, what Python itself raises for such calls)."""


class UnalignedError(GrocError):
    """An alignment that judges its own map found it doubtful or failed, and the caller required it aligned
    (``require_aligned``, ``--require-aligned``)."""


class CorpusError(InputError):
    """A corpus file is missing, empty, not UTF-8, or malformed."""


class UnknownLanguageError(InputError):
    """A language code is not in the registry."""


class DictionaryError(InputError):
    """A bilingual dictionary file is malformed or covers nothing."""


class LexiconError(GrocError):
    """A lexicon backend failed or returned malformed data."""


class LexiconMissingError(LexiconError):
    """A requested lexicon is not installed."""


class ResourceMissingError(GrocError):
    """An optional resource (model, package, download) is not available offline."""


class CheckpointError(GrocError):
    """A checkpoint or run directory is missing, malformed, or of an unknown format."""


class ModelError(GrocError):
    """Model inputs or weights do not fit together (dimension mismatch, bad word length)."""


class LexiconDownloadError(ResourceMissingError, LexiconMissingError):
    """A wordnet download failed (offline, or an unknown project); import the offline copies instead."""


class LexiconFormatError(LexiconError, InputError):
    """A user lexicon file (TSV) is malformed; the message names the file and line."""
