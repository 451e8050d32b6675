"""Contextual representations of a trained run (seed 004 ch. 3): token features, anchors, a parsing probe.

``features`` writes each sentence's layer states (ELMo's layers: the input embedding, then each
LSTM layer; a ``bilm`` run's forward and backward outputs side by side) to HDF5 in AllenNLP's
``elmo`` layout; ``anchors`` averages them per word type (Schuster et al. 2019) so that the
existing ``align`` workflow can map each layer into another run's space; ``probe`` trains a small
biaffine dependency parser on frozen features (:mod:`polyglot_groc.contextual.parser`).

May import: ``polyglot_groc.model``, ``polyglot_groc.training``, ``polyglot_groc.analysis``,
``polyglot_groc.config`` and the sibling packages. Must not import ``elmo``, ``api``, ``commands``
or ``cli``.
"""
