"""polyglot-groc: grounded compositional output language models, mono- and polyglot."""

__version__ = "0.1.0"
