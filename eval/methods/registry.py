"""The registry of alignment methods: each method one module that declares its config and registers its fit.

A method is a frozen config dataclass (its knobs, each a field) and a fit function, registered
under a name with :func:`register_method` (fairseq's ``@register_model("name", dataclass=Cfg)``
shape)::

    @dataclass(frozen=True)
    class MyConfig(MethodConfig):
        steps: int = knob(3, help="optimisation steps", check="positive_int")

    @register_method("mine", config=MyConfig, recipe="What the reference runs, in words")
    def fit(src, tgt, pairs, config, context):  # -> eval.align.AlignmentResult
        ...

Everything else is derived from that declaration: the names ``align``/``align-many`` accept
(:func:`method_names`), the knobs (:func:`knobs`: ``mine_steps`` from Python, ``--mine-steps`` on
the command line, with their help, defaults and checks), a config built from knob values
(:func:`build_config`), the reference recipe and how a call differs from it (:func:`recipe`).

This module and the method modules import no numpy at module level: the command line reads the
configs to declare its options, and ``lexicon lookup`` must start without numpy. A fit imports
what it needs when it runs.

Starts (where the first dictionary comes from) are a separate registry,
``polyglot_groc.analysis.alignment_starts``: a method with ``needs_dictionary=False`` starts
without one (``--dictionary-mode unsupervised|adversarial``), and any method that takes a
dictionary accepts it from every start (a file, identical strings, a wordnet).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from groc_base.checks import check_non_negative, check_positive, either_face, is_int, option
from groc_base.errors import ArgumentTypeError, ConfigError, InputError

if TYPE_CHECKING:
    import numpy as np

    from eval.align import AlignmentResult

__all__ = ["MUSE_MAX_RANK", "FitContext", "Knob", "Method", "MethodConfig", "Plan", "build_config", "check_fields",
           "dictionary_rank", "get_method", "knob", "knobs", "method_names", "methods", "recipe", "register_method",
           "resolve_normalize"]

#: MUSE's rank limit of induced dictionaries: its supervised runs (a dictionary file) and its others.
MUSE_MAX_RANK = {True: 10000, False: 15000}
#: The metadata key of a field declared with :func:`knob`.
KNOB = "knob"
#: The checks a knob may declare (``check=``), each a predicate and the words that name it.
CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "positive": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0,
                 "a positive number"),
    "non_negative": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                     and v >= 0, "a finite number >= 0"),
    "positive_int": (lambda v: is_int(v, numpy=True) and v >= 1, "a positive integer"),
    "non_negative_int": (lambda v: is_int(v, numpy=True) and v >= 0, "an integer >= 0"),
    "unit": (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= 1.0,
             "a number in [0, 1]"),
}


@dataclass(frozen=True)
class MethodConfig:
    """The base of every method's config: a frozen dataclass of its knobs (:func:`build_config` checks that a
    config given to a method is that method's own)."""


@dataclass(frozen=True)
class KnobInfo:
    """What :func:`knob` declares on a field (see there)."""

    help: str
    name: str | None = None
    check: str | None = None
    show_default: str | None = None
    inert: tuple[Any, ...] = ()
    refuse: str | None = None


def knob(default: Any = dataclasses.MISSING, *, help: str, name: str | None = None, check: str | None = None,
         show_default: str | None = None, inert: Sequence[Any] = (), refuse: str | None = None,
         default_factory: Any = dataclasses.MISSING) -> Any:
    """A config field that is a knob of its method (the field itself, with what the faces need).

    ``help``: one line for ``--help`` (the derived option prefixes ``--method NAME:``); ``name``:
    the keyword and, dashed, the flag (default: the config's ``knob_prefix`` or the method's name,
    then the field: ``rcsls_lr`` / ``--rcsls-lr``; ``""`` names it by the field alone);
    ``check``: one of :data:`CHECKS` (a ``Literal`` type checks its values by itself);
    ``show_default``: the default in words (default: the value); ``inert``: values that ask
    nothing of a method without this knob (``refine=0`` with rcsls: accepted, not refused);
    ``refuse``: the refusal when given to another method, a format with ``{given}``, ``{flag}``,
    ``{owner}``, ``{method}`` and ``{use}`` (default: "``{flag}`` sets up ``{owner}``; it does
    nothing for ``{method}``: ...").
    """
    if check is not None and check not in CHECKS:
        raise ValueError(f"unknown knob check {check!r}; use one of {', '.join(CHECKS)}")
    info = KnobInfo(help=help, name=name, check=check, show_default=show_default, inert=tuple(inert), refuse=refuse)
    return dataclasses.field(default=default, default_factory=default_factory, metadata={KNOB: info})


@dataclass(frozen=True)
class Knob:
    """One knob of a method's config as the user gives it: ``rcsls_n_iter`` (Python) / ``--rcsls-niter``."""

    name: str
    #: The field's path in the config (nested configs: ``("final", "whiten")``).
    path: tuple[str, ...]
    #: ``bool``, ``int``, ``float`` or ``str``.
    kind: type
    default: Any
    #: The values a ``Literal`` field takes (empty: any value of ``kind``).
    choices: tuple[Any, ...]
    optional: bool
    info: KnobInfo
    #: The method whose config declares it.
    owner: str

    def given(self, value: Any) -> bool:
        """Whether ``value`` was given (None is not; False is not for a switch whose default is False)."""
        return value is not None and not (self.kind is bool and self.default is False and value is False)

    def check(self, value: Any, name: str | None = None) -> None:
        """Refuse a value out of this knob's range, naming it as ``name`` (default: the knob in the
        current face: ``--rcsls-lr`` / ``rcsls_lr``)."""
        flag = option(name or self.name)
        if value is None and self.optional:
            return
        if self.choices:
            if value not in self.choices:
                listed = [f"{c} (default)" if c == self.default else str(c) for c in self.choices]
                raise InputError(f"{option(name or self.name, value)} is unknown; use "
                                 f"{', '.join(listed[:-1])} or {listed[-1]}")
            return
        if self.kind is bool:
            if not isinstance(value, bool):
                raise ArgumentTypeError(f"{flag}={value!r} must be True or False")
            return
        if self.info.check in ("positive", "non_negative") and isinstance(value, (int, float)):
            # The phrases of groc_base.checks (ConfigError, an InputError): one wording for every count.
            (check_positive if self.info.check == "positive" else check_non_negative)(**{name or self.name: value})
        if self.info.check is not None and not CHECKS[self.info.check][0](value):
            raise InputError(f"{flag}={value!r} must be {CHECKS[self.info.check][1]}")
        if self.kind is int and not is_int(value, numpy=True):
            raise ArgumentTypeError(f"{flag}={value!r} must be an integer")
        if self.kind is float and not (isinstance(value, (int, float)) and not isinstance(value, bool)):
            raise ArgumentTypeError(f"{flag}={value!r} must be a number")

    def refusal(self, value: Any, method: str) -> str:
        """The error for this knob given to ``method``, which does not have it."""
        given = option(self.name, value) if self.kind is not bool else option(self.name)
        words = self.info.refuse or "{flag} sets up {owner}; it does nothing for {method}: add {use} or drop {flag}"
        return words.format(given=given, flag=option(self.name), owner=self.owner, method=method,
                            use=option("method", self.owner))


@dataclass(frozen=True)
class FitContext:
    """What a fit needs beyond its method's knobs: the run's search settings and where its dictionary came from.

    ``select_pairs``: the evaluation pairs ``(n, 2)``, only for a method whose config selects on
    them (procrustes ``select_on="eval"``); ``criterion``: also score the map by the unsupervised
    mean-CSLS criterion (a method that selects by it always does); ``supervised``: the dictionary
    came from a file (MUSE's supervised defaults) rather than from identical strings, a wordnet
    or no dictionary at all; ``lowercase``/``max_vocab``: how the vocabularies were read (the
    recipe's differences name them); ``seed``: the random seed of a method that draws;
    ``normalize``: the chain the spaces went through (a method that normalises more than the
    spaces repeats it there: VecMap's unsupervised start, its sorted similarity rows);
    ``keep_target``: the target must stay where it is (``align-many``'s pivot), for a method that
    can leave it (:attr:`Method.keeps_pivot`).
    """

    knn_mode: str = "exact"
    batch_size: int | None = None  # None: eval.knn's DEFAULT_BATCH_SIZE
    criterion: bool = False
    criterion_n_src: int = 10000
    select_pairs: np.ndarray | None = None
    supervised: bool = True
    lowercase: bool = True
    max_vocab: int | None = 200_000
    seed: int = 0
    normalize: tuple[str, ...] = ()
    keep_target: bool = False


@dataclass(frozen=True)
class Plan:
    """What a method's :attr:`Method.check` sees before anything is read: the other options of the call."""

    eval_dictionary: bool
    supervised: bool
    #: The call maps onto a shared pivot (``align-many``): the target must stay where it is.
    pivot: bool = False


#: ``fit(src, tgt, pairs, config, context)``: the spaces already through the normalisation chain
#: (``(n_src, d)``, ``(n_tgt, d)`` float32: the call's ``normalize``, else :attr:`Method.normalize`;
#: a method whose own code normalises, as ``eval.unsup``'s configs do with their ``normalize`` field,
#: registers that chain as ``normalize=`` and runs its code with the config's chain emptied),
#: ``pairs`` ``(n, 2)`` checked row indices (None for a method that starts without a dictionary);
#: returns the map as an :class:`eval.align.AlignmentResult` (its ``normalize`` is set by the
#: caller; ``verdict`` for a method that judges its own map; ``context.seed`` for one that draws).
FitFunction = Callable[["np.ndarray", "np.ndarray", "np.ndarray | None", Any, FitContext], "AlignmentResult"]


@dataclass(frozen=True)
class Method:
    """A registered method: its name, config class, fit, and what the reports say about it."""

    name: str
    config: type
    fit: FitFunction
    #: What the reference runs, in words (the JSON's ``reference.recipe``).
    recipe: str
    #: One line for ``--method``'s help.
    summary: str = ""
    #: The reference's normalisation of both spaces, applied when the call gives none.
    normalize: tuple[str, ...] = ()
    #: A step the chain must end with (rcsls: its loss is defined on unit rows).
    ends_with: str | None = None
    #: How a call with this config differs from the reference, beyond the normalisation, in words.
    differences: Callable[[Any, FitContext], list[str]] | None = None
    #: How the map returned was chosen, in words (the JSON's ``selection``); None: no rounds to choose from.
    selection: Callable[[Any], str] | None = None
    #: Rules across options, checked before anything is read (procrustes' ``select_on="eval"`` needs an
    #: evaluation dictionary); raises InputError naming the fix.
    check: Callable[[Any, Plan], None] | None = None
    #: Whether the fit reads the evaluation pairs (``FitContext.select_pairs``): procrustes selecting on them.
    uses_eval_pairs: Callable[[Any], bool] | None = None
    #: Both spaces move (vecmap): languages cannot share one pivot.
    moves_target: bool = False
    #: For a method that moves the target: whether ``config`` leaves it in place when the call asks
    #: (``FitContext.keep_target``, ``align-many``); None: never (vecmap).
    keeps_pivot: Callable[[Any], bool] | None = None
    #: The fit returns a verdict on its own map (``AlignmentResult.verdict``): what ``require_aligned`` reads.
    judges: bool = False
    #: False: the method starts without a dictionary (an unsupervised start).
    needs_dictionary: bool = True
    #: The rank limit of the method's own dictionary induction, when its config has one (MUSE's
    #: default otherwise: 10000 with a dictionary file, 15000 without).
    dico_max_rank: Callable[[Any], int | None] | None = None

    def moves(self, config: Any, *, pivot: bool) -> bool:
        """Whether ``config`` moves the target space in a call that maps onto a shared pivot (``pivot``) or not."""
        if not self.moves_target:
            return False
        return not (pivot and self.keeps_pivot is not None and self.keeps_pivot(config))

    def selection_words(self, config: Any) -> str:
        return self.selection(config) if self.selection else f"none ({self.name} has no refinement rounds)"


_REGISTRY: dict[str, Method] = {}


def register_method(name: str, *, config: type, recipe: str, **traits: Any) -> Callable[[FitFunction], FitFunction]:
    """Register the decorated fit function as method ``name`` with its ``config`` class (see the module).

    Raises:
        ValueError: ``name`` is registered already, or ``config`` is not a frozen dataclass.
    """
    if name in _REGISTRY:
        raise ValueError(f"alignment method {name!r} is registered twice")
    if not (isinstance(config, type) and issubclass(config, MethodConfig)
            and config.__dataclass_params__.frozen):  # type: ignore[attr-defined]
        raise ValueError(f"{name}: the config {config!r} must be a frozen dataclass subclassing MethodConfig")

    def register(fit: FitFunction) -> FitFunction:
        _REGISTRY[name] = Method(name=name, config=config, fit=fit, recipe=recipe, **traits)
        _knobs_of.cache_clear()
        return fit

    return register


def methods() -> dict[str, Method]:
    """Every registered method by name, in registration order."""
    import eval.methods  # noqa: F401 - the package's import registers every method module

    return dict(_REGISTRY)


def dictionary_rank(method: Method, config: Any, supervised: bool) -> int:
    """The rank limit of ``method``'s induced dictionaries with ``config``: its own setting, else MUSE's
    (10000 with a dictionary file, 15000 without); what the JSON's ``dico_max_rank`` reports."""
    own = method.dico_max_rank(config) if method.dico_max_rank is not None else None
    return int(own) if own is not None else MUSE_MAX_RANK[supervised]


def method_names(*, where: Callable[[Method], bool] | None = None) -> tuple[str, ...]:
    return tuple(name for name, m in methods().items() if where is None or where(m))


def get_method(name: str) -> Method:
    """The method ``name``; an unknown name is an InputError listing the methods."""
    known = methods()
    if name not in known:
        raise InputError(f"unknown alignment method {name!r}; use one of {', '.join(known)}")
    return known[name]


# -- knobs ---------------------------------------------------------------------------------------------------


def _scalar(hint: Any) -> tuple[type, tuple[Any, ...], bool] | None:
    """(kind, choices, optional) of a field type a flag can take; None for anything else (tuples, dicts)."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            return None
        hint = args[0]
    if typing.get_origin(hint) is typing.Literal:
        choices = typing.get_args(hint)
        return type(choices[0]), choices, optional
    if hint in (bool, int, float, str):
        return hint, (), optional
    return None


def _walk(cls: type, prefix: str, path: tuple[str, ...], owner: str) -> Iterator[Knob]:
    hints = typing.get_type_hints(cls)
    prefix = getattr(cls, "knob_prefix", prefix)
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if dataclasses.is_dataclass(hint):  # a nested config: its knobs, under its own prefix
            yield from _walk(hint, prefix, (*path, f.name), owner)  # type: ignore[arg-type]
            continue
        info = f.metadata.get(KNOB)
        scalar = _scalar(hint)
        if info is None or scalar is None:
            continue  # Python-only (tuples, mappings) or not declared as a knob
        kind, choices, optional = scalar
        default = f.default_factory() if callable(f.default_factory) else f.default
        name = info.name if info.name is not None else f"{prefix}_{f.name}"
        yield Knob(name=name or f.name, path=(*path, f.name), kind=kind, default=default, choices=choices,
                   optional=optional, info=info, owner=owner)


@functools.cache
def _knobs_of(method: str) -> tuple[Knob, ...]:
    spec = get_method(method)
    return tuple(_walk(spec.config, method.replace("-", "_"), (), method))


def knobs(method: str | None = None) -> dict[str, list[Knob]]:
    """Knob name -> its declarations (one per method that has it), for ``method`` or every method.

    Two methods may share a knob (a nested config: VecMap's final step inside self-learning); one
    flag then sets it in whichever method runs. Raises ValueError if they disagree on its type.
    """
    out: dict[str, list[Knob]] = {}
    for name in ([method] if method else list(methods())):
        for k in _knobs_of(name):
            same = out.setdefault(k.name, [])
            if same and (same[0].kind, same[0].choices) != (k.kind, k.choices):
                raise ValueError(f"knob {k.name} is a {same[0].kind.__name__} in {same[0].owner} but a "
                                 f"{k.kind.__name__} in {k.owner}; give one of them another name")
            same.append(k)
    return out


def check_fields(config: Any) -> None:
    """Refuse a config whose knob fields are out of their declared ranges (a config's ``__post_init__``
    calls this: the ranges are declared once, on the fields), naming the field (ConfigError, an InputError)."""
    for f in dataclasses.fields(config):
        info = f.metadata.get(KNOB)
        if info is None:
            continue
        scalar = _scalar(typing.get_type_hints(type(config))[f.name])
        if scalar is None:
            continue
        kind, choices, optional = scalar
        value = getattr(config, f.name)
        if value is None and optional:
            continue
        if choices and value not in choices:
            raise ConfigError(f"{f.name}={value!r} is unknown; use {', '.join(map(str, choices[:-1]))} or "
                              f"{choices[-1]}")
        if info.check is not None and not CHECKS[info.check][0](value):
            raise ConfigError(f"{f.name}={value!r}; pass {CHECKS[info.check][1]}")
        if kind is bool and not isinstance(value, bool):
            raise ConfigError(f"{f.name}={value!r}; pass True or False")


def _replace(config: Any, values: Mapping[tuple[str, ...], Any]) -> Any:
    """``config`` with the fields at ``values``' paths set, all at once (one ``replace`` per nested config, so
    that a rule across fields sees the new values together: no whitening and no de-whitening)."""
    own = {path[0]: value for path, value in values.items() if len(path) == 1}
    nested: dict[str, dict[tuple[str, ...], Any]] = {}
    for path, value in values.items():
        if len(path) > 1:
            nested.setdefault(path[0], {})[path[1:]] = value
    own.update({name: _replace(getattr(config, name), inner) for name, inner in nested.items()})
    return dataclasses.replace(config, **own) if own else config


def build_config(method: str, config: Any | None = None, values: Mapping[str, Any] | None = None) -> Any:
    """``method``'s config: ``config`` (None: the defaults) with the knobs given in ``values`` set.

    ``values`` maps knob names (``rcsls_lr``) to values, None (or a switch's False) for not given;
    a knob of another method is refused (:meth:`Knob.refusal`) unless its value is inert, a value
    out of range names the knob. Raises ArgumentTypeError when ``config`` is another method's.
    """
    spec = get_method(method)
    cfg = spec.config() if config is None else config
    if not isinstance(cfg, spec.config):
        raise ArgumentTypeError(f"method_config is a {type(cfg).__name__}; {option('method', method)} takes a "
                                f"{spec.config.__name__}")
    mine = knobs(method)
    every = knobs()
    changes: dict[tuple[str, ...], Any] = {}
    for name, value in (values or {}).items():
        declared = mine.get(name) or every.get(name)
        if declared is None:
            raise ArgumentTypeError(f"{name} is no knob of any alignment method; the knobs are "
                                    f"{', '.join(sorted(every))}")
        if not declared[0].given(value):
            continue
        if name not in mine:
            if value in declared[0].info.inert:
                continue
            raise InputError(declared[0].refusal(value, method))
        declared[0].check(value)
        changes.update({k.path: value for k in declared})  # a shared knob sets every field that declares it
    return _replace(cfg, changes)


def resolve_normalize(method: str, normalize: Sequence[str] | str | None) -> tuple[str, ...]:
    """The chain ``method`` applies: ``normalize`` as given (``"none"`` or ``""``: nothing), or its
    reference's (:attr:`Method.normalize`) when None; a method with :attr:`Method.ends_with` gets that
    step appended when the chain does not end with it (rcsls: ``renorm``)."""
    from eval.normalize import parse_normalize

    spec = get_method(method)
    ops = spec.normalize if normalize is None else parse_normalize(normalize)
    if spec.ends_with and (not ops or ops[-1] != spec.ends_with):
        ops = (*ops, spec.ends_with)
    return tuple(ops)


def casing_difference(context: FitContext, *, reference_lowercases: bool) -> list[str]:
    """How this call read the words' case, where it differs from the reference's (MUSE lowercases;
    VecMap and fastText keep every word as written), naming the option that restores the reference's."""
    if context.lowercase and not reference_lowercases:
        return ["words lowercased, the first casing kept (MUSE's rule; the reference keeps every word as "
                f"written: {either_face('keep_case', True)})"]
    if not context.lowercase and reference_lowercases:
        return [f"every word kept as written (MUSE lowercases: drop {either_face('keep_case', True)})"]
    return []


def recipe(method: str, config: Any, ops: Sequence[str], context: FitContext) -> dict[str, Any]:
    """``{"recipe": what the reference runs, "differences": [how this call differs, in words]}``.

    The differences name the option that restores the reference's behaviour where there is one:
    the normalisation first, then the method's own (:attr:`Method.differences`: its knobs, and how
    the vocabularies were read: MUSE lowercases and reads the first 200000 words, VecMap and
    fastText keep the case, and VecMap reads every word).
    """
    spec = get_method(method)
    diffs: list[str] = []
    if tuple(ops) != spec.normalize:
        reference = ",".join(spec.normalize) or "none"
        diffs.append(f"normalisation {','.join(ops) or 'none'} (the reference: {reference})")
    if spec.differences is not None:
        diffs += spec.differences(config, context)
    return {"recipe": spec.recipe, "differences": diffs}
