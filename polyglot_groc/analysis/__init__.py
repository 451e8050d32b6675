"""What users do with a trained run: evaluate it, analyse it, export and align its embeddings.

The public workflows live in :mod:`polyglot_groc.analysis.workflows` (``evaluate``,
``tune_cache``, ``freq_bins``, ``curves``, ``export``, ``align``, ``similarity``,
``lexicon_coverage``, ``neighbours``, ``score``), one function per command. Each module here owns
one workflow and its helpers: per-language perplexity in-domain and open-vocabulary with caches
(``evaluate``, ``crossdomain``, ``caches``, ``tunecache``), frequency bins, curves, embedding
export, alignment and similarity, lexicon coverage, and a run in memory: ``loaded_run`` (``load``
and its ``Model``, over export's embedding) with its jobs in ``neighbour_search`` (cosine and
CSLS), ``aligned_space`` (an ``align`` result replayed on the run), ``text_scoring`` (the
open-vocabulary scorer) and ``keyed_vectors`` (gensim ``KeyedVectors`` that compose unseen
words), and the ``neighbours`` and ``score`` workflows over it. ``seen_words`` says which words
training read, so that no lookup table's untrained row is served as an answer. Alignment and
similarity maths live in ``eval``; this package only feeds it arrays.

May import: ``polyglot_groc.model``, ``polyglot_groc.training``, ``polyglot_groc.config`` and the
sibling packages. Must not import ``elmo``, ``commands`` or ``cli``.
"""
