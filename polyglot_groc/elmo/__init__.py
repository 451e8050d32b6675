"""The ELMo family: the bilm-tf compatible character model and the ELMo → GroC conversion.

Owns reading bilm-tf options and weights (``bilm``), turning an ELMo-like run or published
weights into a GroC run that is then finetuned (``convert``), and that whole workflow as one
public function, ``workflows.init_from_elmo``.

May import: ``polyglot_groc.model``, ``polyglot_groc.training``, ``polyglot_groc.config`` and the
sibling packages. Must not import ``analysis``, ``commands`` or ``cli``.
"""
