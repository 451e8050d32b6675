"""Compile lexicon forms for a vocabulary (bridge from ``lexicons.service`` to model tensors)."""

from __future__ import annotations

from typing import Any

from lexicons.errors import LexiconMissingError
from polyglot_groc.config import LexiconConfig
from polyglot_groc.embedder import LexiconForms
from polyglot_groc.vocab import Vocab


def compile_forms(cfg: LexiconConfig, vocab: Vocab) -> tuple[LexiconForms, tuple[str, ...], dict[str, Any]]:
    raise LexiconMissingError("lexicon service not wired yet")
