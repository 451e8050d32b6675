"""Where an alignment's first dictionary comes from: the starts of ``--dictionary-mode``, registered by name.

Without ``train_dict``, ``align`` starts from ``dictionary_mode``: ``identical`` (the strings the
two vocabularies share) or ``lexicon`` (words of a wordnet synset). A start either gives seed
pairs, which every method that fits a dictionary accepts (procrustes, rcsls, vecmap; VecMap's
self-learning, its ``--identical`` and ``--semi_supervised`` recipes), or gives none
(``pairs=None``): an unsupervised start, which runs its own method (``default_method``; one
registered with ``needs_dictionary=False`` in :mod:`eval.methods`) on the two spaces alone.
``unsupervised`` (VecMap's ``--unsupervised``), ``adversarial`` (MUSE's ``unsupervised.py``) and
``wasserstein`` (fastText's ``unsup_align.py``) are such starts. Registering one
(``register_start(Start(name, help, pairs=None, default_method=...))``) makes it a ``--dictionary-mode``
value of ``align`` and ``align-many`` (docs/internals.md, "Adding an alignment method").

Torch- and numpy-free at import: the command line lists the starts in its help.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from groc_base.checks import option
from groc_base.errors import InputError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Start", "StartInputs", "get_start", "lexicon_seed", "method_for", "no_dictionary", "register_start",
           "start_names"]


@dataclass(frozen=True)
class StartInputs:
    """What a start may read: the two vocabularies as read, their languages and the wordnet options."""

    src_words: list[str]
    tgt_words: list[str]
    src_lang: str | None = None
    tgt_lang: str | None = None
    lexicon: list[str] | None = None
    wn_dir: str | os.PathLike[str] | None = None


@dataclass(frozen=True)
class Start:
    """A registered start: ``pairs`` gives the seed pairs ``(n, 2)`` (rows of the two vocabularies), or is
    None for a start without a dictionary, whose ``default_method`` then maps the spaces alone."""

    name: str
    help: str
    pairs: Callable[[StartInputs], np.ndarray] | None
    default_method: str = "procrustes"


_STARTS: dict[str, Start] = {}


def register_start(start: Start) -> Start:
    if start.name in _STARTS:
        raise ValueError(f"alignment start {start.name!r} is registered twice")
    _STARTS[start.name] = start
    return start


def start_names() -> tuple[str, ...]:
    return tuple(_STARTS)


def no_dictionary() -> str:
    """The error's fix when no dictionary was given: every way to give or make one."""
    modes = [option("dictionary_mode", name) for name in _STARTS]
    ways = [option("train_dict"), *modes]
    return f"pass {', '.join(ways[:-1])} or {ways[-1]}"


def get_start(name: str) -> Start:
    """The start ``name``; an unknown one is the error of a call without a dictionary (it names them all)."""
    if name not in _STARTS:
        raise InputError(f"no seed dictionary: {no_dictionary()}")
    return _STARTS[name]


def method_for(method: str | None, dictionary_mode: str | None, train_dict: object) -> str:
    """The method a call runs: ``method``, else its start's own (``procrustes`` for a dictionary; a start
    without one keeps its method beside a dictionary, which the call then refuses by name)."""
    if method:
        return method
    if dictionary_mode in _STARTS and (train_dict is None or _STARTS[dictionary_mode].pairs is None):
        return _STARTS[dictionary_mode].default_method
    return "procrustes"


def _identical(inputs: StartInputs) -> np.ndarray:
    from eval.align import identical_pairs

    pairs = identical_pairs(inputs.src_words, inputs.tgt_words)
    if len(pairs) == 0:
        raise InputError(f"no identical strings in the two vocabularies; pass {option('train_dict')} "
                         f"or {option('dictionary_mode', 'lexicon')}")
    return pairs


def lexicon_seed(src_words: list[str], tgt_words: list[str], src_lang: str | None, tgt_lang: str | None,
                 specs: list[str] | None, wn_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
    """Seed pairs ``(n, 2)``: words of the two languages that share a synset (ILI) in the lexicon."""
    import numpy as np

    from lexicons.service import open_lexicon

    if not src_lang or not tgt_lang:
        raise InputError(f"{option('dictionary_mode', 'lexicon')} needs {option('src_lang')} and {option('tgt_lang')}")
    lex = open_lexicon("wn", specs=specs or None, langs=None if specs else [src_lang, tgt_lang],
                       wn_dir=Path(wn_dir) if wn_dir is not None else None)
    translate = getattr(lex, "translation_pairs", None)
    if translate is None:
        raise InputError(f"the {type(lex).__name__} backend cannot derive cross-lingual pairs; pass "
                         f"{option('train_dict')}")
    pairs = translate(src_words, src_lang, tgt_words, tgt_lang)
    src_index = {w: i for i, w in reversed(list(enumerate(src_words)))}
    tgt_index = {w: i for i, w in reversed(list(enumerate(tgt_words)))}
    rows = np.array([(src_index[s], tgt_index[t]) for s, t in pairs], dtype=np.int64).reshape(-1, 2)
    if len(rows) == 0:
        raise InputError(f"the lexicon links no {src_lang} word to a {tgt_lang} word of these vocabularies")
    return rows


register_start(Start("identical", "the strings both vocabularies share", _identical))
register_start(Start("lexicon", "words sharing a wordnet synset (with --src-lang and --tgt-lang)",
                     lambda i: lexicon_seed(i.src_words, i.tgt_words, i.src_lang, i.tgt_lang, i.lexicon, i.wn_dir)))
register_start(Start("unsupervised", "no dictionary: VecMap's robust self-learning (--unsupervised), judged",
                     pairs=None, default_method="vecmap-unsupervised"))
register_start(Start("adversarial", "no dictionary: MUSE's adversarial start and refinement, judged",
                     pairs=None, default_method="muse-adversarial"))
register_start(Start("wasserstein", "no dictionary: fastText's convex start and Wasserstein-Procrustes, judged",
                     pairs=None, default_method="wasserstein-procrustes"))
