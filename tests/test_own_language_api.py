"""The bring-your-own-language workflows in the public API: keyword-only, typed, documented, frozen results."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest

import polyglot_groc as pg
from polyglot_groc import api

FUNCTIONS = {api.prepare_language: api.PreparedLanguage, api.import_wordnet_file: api.ImportedWordnet}


@pytest.mark.parametrize("fn", list(FUNCTIONS), ids=lambda f: f.__name__)
def test_workflows_are_keyword_only_typed_and_documented(fn: typing.Callable[..., object]) -> None:
    sig = inspect.signature(fn)
    assert sig.parameters and all(p.kind is p.KEYWORD_ONLY for p in sig.parameters.values())
    hints = typing.get_type_hints(fn)
    assert hints["return"] is FUNCTIONS[fn]  # type: ignore[index]
    assert all(name in hints for name in sig.parameters)
    doc = inspect.getdoc(fn) or ""
    assert all(section in doc for section in ("Args:", "Returns:", "Raises:"))
    documented = doc.split("Args:")[1].split("Returns:")[0]
    assert all(f"{name}:" in documented or f", {name}:" in documented or f"{name}," in documented
               for name in sig.parameters), fn.__name__
    with pytest.raises(TypeError):
        fn("positional")
    result = FUNCTIONS[fn]  # type: ignore[index]
    assert dataclasses.is_dataclass(result) and result.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert callable(getattr(result, "to_dict", None))


def test_the_package_gives_the_same_names() -> None:
    assert pg.prepare_language is api.prepare_language and pg.load_registry is api.load_registry
    assert "train" in pg.__dir__() and "languages" in inspect.signature(pg.train).parameters
