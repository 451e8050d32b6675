"""What users do with a trained run: evaluate it and export its embeddings.

Owns per-language perplexity of a saved run on any split (``evaluate``) and embedding export
for any word, seen or unseen (``export``). Alignment and similarity maths live in ``eval``;
this package only feeds it arrays.

May import: ``polyglot_groc.model``, ``polyglot_groc.training``, ``polyglot_groc.config`` and the
sibling packages. Must not import ``elmo``, ``commands`` or ``cli``.
"""
