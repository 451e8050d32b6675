"""Lexicon protocol, backends (wn, NLTK, TSV), OMW import and the cached form service."""
