"""Training: corpora to id streams, the training loop, and its run directory.

Owns loading the configured corpora, building the vocabulary and the bundle for a run,
batching streams into steps, the optimiser and learning-rate schedule, validation and
checkpointing (``trainer``), evaluation of a split (``evaluation``), and the public workflows
over them: train, resume, finetune (``workflows``).

May import: ``polyglot_groc.model``, ``polyglot_groc.config``, ``lexicons``, ``langpairs``,
``eval``. Must not import ``elmo``, ``analysis``, ``commands`` or ``cli``.
"""
