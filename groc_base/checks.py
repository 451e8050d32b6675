"""Checks of user-given values and outputs, shared by the library's workflows and the CLI.

One message serves both faces of the toolkit: an option is named the way the user gave it,
``max_vocab=0`` from Python and ``--max-vocab 0`` on the command line (:func:`option`; the CLI
runs every command inside :func:`cli_face`). Outputs are refused before any work when they exist
and ``overwrite`` is not set: a refused call costs nothing and changes nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import numbers
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from groc_base.errors import ArgumentTypeError, ConfigError, InputError

__all__ = ["SettingFlag", "check_input_file", "check_non_negative", "check_output", "check_positive",
           "check_probability", "check_seed", "checked_arguments", "cli_face", "either_face", "flag_name", "in_cli",
           "is_int", "option", "override", "register_setting_flags", "renamed_argument", "setting"]

#: Which face is calling: "python" (the default: a library call) or "cli" (inside :func:`cli_face`).
_FACE: contextvars.ContextVar[str] = contextvars.ContextVar("polyglot_groc_face", default="python")

#: Keywords whose command-line spelling is not ``--`` + the keyword with dashes.
CLI_SPELLING: dict[str, str] = {
    "overrides": "--set", "screen": "--no-screen", "with_related": "--with related", "extra_langs": "--with",
    "dictionary_mode": "--dictionary-mode", "train_dicts": "--train-dict", "eval_dicts": "--eval-dict",
    "datasets": "--dataset", "inputs": "--input", "specs": "--specs", "data_root": "--data",
    "size": "--size", "run_dir": "--run", "rcsls_n_iter": "--rcsls-niter",
    "allow_overlap": "--allow-dictionary-overlap",
}

_UNSET: Any = object()


@contextlib.contextmanager
def cli_face() -> Iterator[None]:
    """Inside this block, :func:`option` names options as command-line flags (the CLI wraps every command)."""
    token = _FACE.set("cli")
    try:
        yield
    finally:
        _FACE.reset(token)


_T = TypeVar("_T")
#: The toolkit's own packages: a deprecation warning points at the first caller outside them.
_OWN_CODE = tuple(str(Path(__file__).resolve().parent.parent / name) + os.sep
                  for name in ("groc_base", "polyglot_groc", "langpairs", "lexicons", "eval"))


def renamed_argument(new: str, old: str, new_value: _T, old_value: _T | None, default: _T) -> _T:
    """The value of a keyword renamed from ``old`` to ``new`` (``new_value``, whose default is ``default``).

    The old name still works, with a ``FutureWarning`` pointing at the caller's line (the Python face of
    the command line's hidden old spellings, ``commands._common.deprecated_alias``); both names with
    different values is an :class:`InputError`.
    """
    import sys
    import warnings

    if old_value is None:
        return new_value
    if new_value != default and new_value != old_value:
        raise InputError(f"{old}={old_value!r} and {new}={new_value!r} disagree; {old} is the old name of {new}: "
                         f"pass {new} alone")
    frame, level = sys._getframe(0), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_OWN_CODE):
        frame, level = frame.f_back, level + 1
    warnings.warn(f"{old}= is deprecated and will be removed in the next release; use {new}=", FutureWarning,
                  stacklevel=level)
    return old_value


def in_cli() -> bool:
    """Whether the current call came through the command line (see :func:`cli_face`)."""
    return _FACE.get() == "cli"


def option(name: str, value: Any = _UNSET) -> str:
    """An option as the user gives it in the current face, optionally with a value.

    ``option("max_vocab")``: ``max_vocab`` from Python, ``--max-vocab`` on the command line;
    ``option("knn", "fast")``: ``knn='fast'`` / ``--knn fast``; ``option("overwrite", True)``:
    ``overwrite=True`` / ``--overwrite`` (a flag). ``name`` is the Python keyword (a ``--flag``
    is accepted too and read as its keyword).
    """
    if name.startswith("--"):
        name = name[2:].replace("-", "_")
    if _FACE.get() == "cli":
        flag = CLI_SPELLING.get(name, "--" + name.replace("_", "-"))
        if value is _UNSET or value is True:
            return flag
        if value is False and flag.startswith("--no-"):
            return flag
        return f"{flag} {value}"
    if value is _UNSET:
        return name
    return f"{name}={value!r}"


@dataclass(frozen=True)
class SettingFlag:
    """How the command line sets one config key: a flag taking the value (``--seed 3``), a switch that
    sets one value (``--no-screen``: ``data.screen = false``), an on/off pair (``--compile``/``--no-compile``)
    or a repeated flag taking a list (``--lexicon A --lexicon B``). Declared by the commands' options
    (``polyglot_groc.commands._options.config_option``), which register it here, so that the library
    names the flag the command line has (:func:`setting`) without importing the command line."""

    flag: str
    #: The pair's off spelling (``--no-compile``); None: not a pair.
    off: str | None = None
    #: A switch: the config value it sets when given (``--no-screen``: False); unset: the flag takes a value.
    sets: Any = _UNSET
    #: A list given as the flag repeated.
    repeat: bool = False

    @property
    def switch(self) -> bool:
        """Whether the flag is a switch that sets one value (``--no-screen``)."""
        return self.sets is not _UNSET

    def spell(self, value: Any) -> str | None:
        """``value`` as this flag (``--seed 3``, ``--no-screen``, ``--lexicon A --lexicon B``); None when the
        flag cannot say it (a switch asked for the value it does not set, an empty list)."""
        if self.off is not None:
            return (self.flag if value else self.off) if isinstance(value, bool) else None
        if self.switch:
            return self.flag if type(value) is type(self.sets) and value == self.sets else None
        if self.repeat and isinstance(value, (list, tuple)):
            return " ".join(f"{self.flag} {v}" for v in value) or None
        return f"{self.flag} {value}"

    def to_config(self, value: Any) -> Any:
        """The parsed flag's value as the config value it stands for; None: the flag was not given."""
        if self.switch:
            return self.sets if value else None
        if self.repeat:
            return list(value) if value else None
        return os.fspath(value) if isinstance(value, os.PathLike) else value


#: Config keys with a command-line flag of their own (the others are set with ``--set key=value``):
#: registered by the commands' option declarations (:func:`register_setting_flags`), never written here.
SETTING_FLAGS: dict[str, SettingFlag] = {}


def register_setting_flags(flags: Mapping[str, SettingFlag]) -> None:
    """Record which flag sets each config key (the command line calls this as it declares its options).

    Raises:
        ValueError: a key is already registered with another flag (two options would claim it).
    """
    for key, flag in flags.items():
        known = SETTING_FLAGS.setdefault(key, flag)
        if known != flag:
            raise ValueError(f"config key {key} is set by {known.flag} and by {flag.flag}; declare one flag per key")


def setting(key: str, value: Any) -> str:
    """A config setting as the user gives it in the current face: ``--vocab-mode open`` or
    ``--set train.lr=0.001`` on the command line, ``overrides={'data.vocab_mode': 'open'}`` from Python."""
    if _FACE.get() == "cli":
        flag = SETTING_FLAGS.get(key)
        spelled = flag.spell(value) if flag is not None else None
        return spelled or f"--set {key}={value}"
    return f"overrides={{{key!r}: {value!r}}}"


def override(key: str, value: Any) -> str:
    """A config setting given as an override whatever flag sets it: ``--set key=value`` on the command line,
    ``overrides={key: value}`` from Python. For a message about a key that arrived through ``overrides``
    (finetune's and init-from-elmo's ``--set``), where :func:`setting` would name train's flag."""
    return f"--set {key}={value}" if _FACE.get() == "cli" else f"overrides={{{key!r}: {value!r}}}"


def _label(flag: str) -> str:
    """How a check names what it checks: an option (``out``, ``--out``) in the current face, a
    description (``"wordnet file"``) as it is."""
    if flag.startswith("--") or flag.replace("_", "").isalnum():
        return option(flag)
    return flag


def either_face(name: str, value: Any = _UNSET, *, key: str | None = None) -> str:
    """An option named for both faces at once (``select_on='eval'`` / ``--select-on eval``), for text that
    is data (a result's JSON is the same from Python and from the command line); ``key``: a config key
    instead (``overrides={'data.vocab_mode': 'open'}`` / ``--vocab-mode open``)."""
    token = _FACE.set("python")
    try:
        python = setting(key, value) if key is not None else option(name, value)
    finally:
        _FACE.reset(token)
    token = _FACE.set("cli")
    try:
        cli = setting(key, value) if key is not None else option(name, value)
    finally:
        _FACE.reset(token)
    return f"{python} / {cli}"


def flag_name(name: str) -> str:
    """How the keyword ``name`` is given in the current face: ``--max-vocab`` (CLI) or ``max_vocab`` (Python)."""
    return option(name)


def is_int(value: object, *, numpy: bool = False) -> bool:
    """Whether ``value`` is an integer and not a bool (``True`` is an ``int`` in Python, and
    ``max_steps=True`` is a mistake, not 1). ``numpy=True`` accepts numpy's integer scalars too
    (``np.int64`` from an array); without it only Python ints pass (values stored in a config or a
    seed handed to ``random``). The one such check of the repository: use it, not an inline pair."""
    return isinstance(value, numbers.Integral if numpy else int) and not isinstance(value, bool)


def check_positive(**values: int | float | None) -> None:
    """Counts and sizes must be positive, finite numbers (None = not given)."""
    for name, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or value <= 0:
            raise ConfigError(f"{flag_name(name)}={value} must be a positive number; pass a value above 0 or "
                              "leave it out")


def check_non_negative(**values: int | float | None) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{flag_name(name)}={value} must be a finite number >= 0")


#: Random seeds are 32-bit unsigned: numpy's legacy generator takes nothing else.
SEED_MAX = 2**32 - 1


def check_seed(**values: int | None) -> None:
    """Seeds must be integers in [0, 2^32 - 1] (None = not given)."""
    for name, value in values.items():
        if value is not None and not 0 <= value <= SEED_MAX:
            raise ConfigError(f"{flag_name(name)}={value} is out of range: a seed must lie in [0, {SEED_MAX}]")


def check_probability(**values: float | None) -> None:
    for name, value in values.items():
        if value is None:
            continue
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"{flag_name(name)}={value} must be a probability in [0, 1]")


def check_output(path: str | os.PathLike[str], overwrite: bool, *, directory: bool = False, flag: str = "--out",
                 also: Sequence[str | os.PathLike[str]] = ()) -> None:
    """Refuse to replace an existing output without ``overwrite``, as ``train`` does for its run directory.

    A file output (``directory=False``) is refused if it exists, and so is each path in ``also``
    (files written beside it, such as a JSON next to a PNG); a directory output if it holds
    anything.  Called before any work, so a refused call costs nothing and changes nothing.

    Raises:
        InputError: the output exists (and ``overwrite`` is false), or is a directory where a
            file is wanted (or the other way round).
    """
    path = Path(path)
    flag = _label(flag)
    if directory:
        if path.exists() and not path.is_dir():
            raise InputError(f"{flag} {path} is a file, not a directory; give a directory path")
        held = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
        if held and not overwrite:
            shown = ", ".join(held[:4]) + (", ..." if len(held) > 4 else "")
            raise InputError(f"{flag} {path} already exists and is not empty ({shown}); "
                             f"pass {option('overwrite', True)} to replace its results or choose another {flag}")
        return
    for target in (path, *map(Path, also)):
        if target.is_dir():
            raise InputError(f"{flag} {target} is a directory; give a file path")
        if target.exists() and not overwrite:
            raise InputError(f"{target} already exists; pass {option('overwrite', True)} to replace it or choose "
                             f"another {flag}")


def check_input_file(path: str | os.PathLike[str], *, flag: str, what: str = "file") -> Path:
    """``path`` as a Path if it is an existing regular file (or a symlink to one), else a one-line error.

    A FIFO or a device would block the reader forever (or stream without end), so they are
    refused before anything opens them.

    Raises:
        InputError: missing, a directory, or not a regular file.
    """
    import stat

    path = Path(path)
    flag = _label(flag)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{flag} {path}: no such {what}; check the path") from None
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot read it ({exc.strerror}); "
                         "check the path and its permissions") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{flag} {path} is a directory; give a {what}")
    if not stat.S_ISREG(mode):
        raise InputError(f"{flag} {path} is not a regular file (a FIFO, socket or device); give a {what} on disk")
    return path


# --------------------------------------------------------------------------- argument types of the Python API

_CHECKED_ATTR = "__groc_checked__"


def _describe_hint(name: str, fn: Callable[..., Any], hint: Any) -> str:
    raw = fn.__annotations__.get(name)
    return raw if isinstance(raw, str) else getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _resolved_hints(fn: Callable[..., Any],
                    names: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """``fn``'s parameter annotations evaluated, with ``names`` for those its module imports for type
    checkers only (each on its own: one that still cannot be resolved is left out and its argument is
    not checked). ``names`` may be a function giving them, called here (at the first call of ``fn``)."""
    import typing

    if callable(names):
        names = names()

    try:
        return dict(typing.get_type_hints(fn, localns=dict(names or {})))
    except Exception:  # noqa: BLE001 - fall back to one annotation at a time
        pass
    out: dict[str, Any] = {}
    namespace = {**getattr(fn, "__globals__", {}), **(names or {})}
    for name, raw in fn.__annotations__.items():
        try:
            out[name] = eval(raw, namespace) if isinstance(raw, str) else raw  # noqa: S307 - annotations only
        except Exception:  # noqa: BLE001
            continue
    return out


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the annotation ``hint`` (unions, Optional, Literal, containers with their
    items, callables, ABCs and classes; numbers by the numeric tower, a bool is not an int). What
    cannot be checked at run time (a protocol, a type variable) fits."""
    import collections.abc as abc
    import types
    import typing

    if hint is Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value is None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(_matches(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if origin is typing.Annotated:
        return _matches(value, args[0])
    if hint is bool:
        return isinstance(value, bool) or type(value).__name__ == "bool_"
    if hint is int:
        return is_int(value, numpy=True)
    if hint is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if origin in (abc.Callable,) or hint is abc.Callable:
        return callable(value)
    if origin in (abc.Sequence, list, tuple, abc.Iterable, abc.Collection, set, frozenset, abc.Set):
        container = {abc.Sequence: abc.Sequence, abc.Iterable: abc.Iterable, abc.Collection: abc.Collection,
                     abc.Set: abc.Set}.get(origin, origin)
        if type(value).__name__ == "ndarray":  # numpy arrays stand for sequences of numbers
            return True
        if isinstance(value, (str, bytes)) or not isinstance(value, container):  # a lone string is no list
            return False
        if origin is abc.Iterable and not isinstance(value, abc.Collection):
            return True  # a generator: checking its items would consume it
        fixed = origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis)
        if fixed:  # tuple[int, str]: one item per position
            return len(args) == len(value) and all(_matches(v, a) for v, a in zip(value, args, strict=False))
        item = args[0] if args else Any
        return all(_matches(v, item) for v in value)
    if origin in (abc.Mapping, dict, abc.MutableMapping):
        if not isinstance(value, abc.Mapping):
            return False
        key, item = args if len(args) == 2 else (Any, Any)
        return all(_matches(k, key) and _matches(v, item) for k, v in value.items())
    if origin is type:
        return isinstance(value, type)
    if origin is not None and isinstance(origin, type):
        return isinstance(value, origin)  # os.PathLike[str], other generic classes
    if isinstance(hint, type):
        if getattr(hint, "_is_protocol", False) and not getattr(hint, "_is_runtime_protocol", False):
            return True
        return isinstance(value, hint)
    return True  # a TypeVar, a string annotation that did not resolve, ...


_F = TypeVar("_F", bound=Callable[..., Any])


def checked_arguments(fn: _F, names: Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None = None) -> _F:
    """``fn`` with its arguments checked against its annotations before it runs: the Python API's
    one argument check. A value of the wrong type (``train(langs=5)``), an unknown keyword or a
    positional argument to a keyword-only function is an :class:`ArgumentTypeError` (a
    ``GrocError`` and a ``TypeError``) naming the argument and the type it takes, where Python or
    the function's body would raise a bare ``TypeError`` or ``AttributeError`` from deep inside.
    ``names``: the classes ``fn``'s annotations name but its module imports for type checkers only
    (``if TYPE_CHECKING:``, to keep torch out of a path that never needs it), or a function giving
    them at ``fn``'s first call (so that importing the API loads none of their modules)."""
    import functools
    import inspect

    if getattr(fn, _CHECKED_ATTR, False):
        return fn
    signature = inspect.signature(fn)
    hints: dict[str, Any] | None = None

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal hints
        name = fn.__name__
        try:
            bound = signature.bind_partial(*args, **kwargs)
        except TypeError as exc:
            import difflib

            unknown = [k for k in kwargs if k not in signature.parameters]
            if unknown:
                close = difflib.get_close_matches(unknown[0], list(signature.parameters), n=1)
                fix = f"did you mean {close[0]}=?" if close else f"it takes {', '.join(signature.parameters)}"
                raise ArgumentTypeError(f"{name}() takes no argument {unknown[0]!r}; {fix}") from None
            raise ArgumentTypeError(f"{name}(): {exc}; pass the arguments by keyword, e.g. "
                                    f"{name}({next(iter(signature.parameters), 'x')}=...)") from None
        if hints is None:
            hints = _resolved_hints(fn, names)
        for arg, value in bound.arguments.items():
            hint = hints.get(arg)
            if hint is None or signature.parameters[arg].kind in (inspect.Parameter.VAR_POSITIONAL,
                                                                   inspect.Parameter.VAR_KEYWORD):
                continue
            if not _matches(value, hint):
                shown = repr(value)
                shown = shown if len(shown) <= 60 else shown[:57] + "..."
                fix = f"pass a list, e.g. {arg}=[{shown}]" if isinstance(value, str) else f"see help({name})"
                raise ArgumentTypeError(f"{name}(): {arg} must be {_describe_hint(arg, fn, hint)}, got "
                                        f"{type(value).__name__} {shown}; {fix}")
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:  # a required argument left out
            raise ArgumentTypeError(f"{name}(): {exc}; see help({name})") from None
        return fn(*args, **kwargs)

    setattr(wrapper, _CHECKED_ATTR, True)
    return wrapper  # type: ignore[return-value]
