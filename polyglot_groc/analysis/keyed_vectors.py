"""A run's vectors as gensim ``KeyedVectors`` that keep composing words the keys lack.

:meth:`Model.to_keyed_vectors <polyglot_groc.analysis.loaded_run.Model.to_keyed_vectors>` hands
gensim users a :class:`RunKeyedVectors`: a ``KeyedVectors`` subclass holding the vocabulary's
vectors as keys, so ``most_similar``, ``similarity``, ``doesnt_match``, ``evaluate_word_analogies``,
``save_word2vec_format`` and the rest of gensim work unchanged. On a compositional side (GroC) a
word outside the keys is composed through the run, as gensim's ``FastTextKeyedVectors`` builds an
out-of-vocabulary word from its n-grams, with the same contract:

* ``kv[word]`` / ``kv.get_vector(word, norm=...)``: any word the run can embed (the run's
  :meth:`Model.vector <polyglot_groc.analysis.loaded_run.Model.vector>`, cached there);
* ``word in kv``: True for every word that gets a vector (keys, and words the run can compose),
  as ``FastTextKeyedVectors``; ``kv.has_index_for(word)`` / ``word in kv.key_to_index`` say whether
  it is a key (those are the words ``most_similar`` ranks);
* gensim's ``most_similar(positive=[...], negative=[...])`` accepts composed words in the query.

On a lookup side nothing is composed: a word outside the keys raises the run's
:class:`~polyglot_groc.analysis.seen_words.NoVectorError` (a ``KeyError``, as gensim's).
Saved (``kv.save``), pickled or copied it is a plain ``KeyedVectors`` of its keys (the run stays in
memory, not in the file), so gensim loads it without this toolkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from gensim.models import KeyedVectors

from groc_base.errors import InputError

if TYPE_CHECKING:
    from polyglot_groc.analysis.loaded_run import Model

__all__ = ["RunKeyedVectors"]

#: The attributes that tie the vectors to a loaded run: not saved, pickled or copied.
_RUN_ATTRS = ("_run_model", "lang", "side")


class RunKeyedVectors(KeyedVectors):  # type: ignore[misc]  # gensim has no type hints
    """gensim ``KeyedVectors`` of one language and side of a loaded run (see the module's docstring).

    ``model``: the :class:`~polyglot_groc.analysis.loaded_run.Model`; ``lang``, ``side``: whose
    vectors these are. The keys are added by the caller (``add_vectors``).
    """

    def __init__(self, model: Model, lang: str, side: str, *, vector_size: int, count: int = 0) -> None:
        super().__init__(vector_size, count=count, dtype=np.float32)
        self._run_model: Model | None = model
        self.lang = lang
        self.side = side

    @property
    def composes(self) -> bool:
        """Whether words outside the keys get a vector (composed by the run: a compositional side)."""
        return self._run_model is not None and self._run_model.composes(self.side)

    def get_vector(self, key: Any, norm: bool = False) -> np.ndarray:
        """The key's vector, or (a word outside the keys) the run's: composed on a compositional side, the
        run's refusal (a ``KeyError``) on a lookup side.  -> (d,) float32, read-only"""
        if self._run_model is None or not isinstance(key, str) or self.has_index_for(key):
            return super().get_vector(key, norm=norm)
        vec = self._run_model.vector(key, self.lang, self.side)  # (d,) a copy, raises NoVectorError
        if norm:
            length = float(np.linalg.norm(vec))
            if length == 0.0:
                raise InputError(f"{key!r} has a zero vector; it cannot be normalised")
            vec = vec / length
        vec.setflags(write=False)  # as gensim's rows: not to be changed in place
        return vec

    def __contains__(self, key: Any) -> bool:
        """Whether ``key`` gets a vector: a key, or a word the run composes (``FastTextKeyedVectors``'s rule)."""
        if self.has_index_for(key):
            return True
        return self.composes and self._run_model is not None and self._run_model.can_embed(key, self.lang, self.side)

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        """Pickle (``save``, ``copy``) as a plain ``KeyedVectors`` of the keys: the run is not saved with them."""
        state = {k: v for k, v in self.__dict__.items() if k not in _RUN_ATTRS}
        return (object.__new__, (KeyedVectors,), state)
