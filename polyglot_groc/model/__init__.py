"""Model parts: everything a forward pass touches, and nothing about how it is trained.

Owns the character set and vocabulary, the surface encoder (char-CNN + highway + projection),
the embedders (lookup and grounded, with lexicon forms), the output nets and biases, the LSTM
prefix, the language screen, the language model that wires them, the perplexity scoring of
streams, the compiled lexicon forms, and the run bundle with its checkpoint format.

May import: ``polyglot_groc.config``, ``lexicons``, ``langpairs``, ``eval``, torch and numpy.
Must not import ``training``, ``elmo``, ``analysis``, ``commands`` or ``cli``
(``tests/test_architecture.py`` checks this).
"""
