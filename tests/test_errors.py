"""The error tree: its docstring draws every class, and the package exports each."""

from __future__ import annotations

import inspect
import re

import evaldelta
from evaldelta import errors


def _error_classes() -> list[type[errors.EvalDeltaError]]:
    return [
        obj
        for _, obj in inspect.getmembers(errors, inspect.isclass)
        if issubclass(obj, errors.EvalDeltaError) and obj.__module__ == errors.__name__
    ]


def test_the_drawing_names_every_error() -> None:
    drawing = errors.__doc__ or ""
    missing = [
        cls.__name__
        for cls in _error_classes()
        if not re.search(rf"^[ │├└─]*{cls.__name__}\b", drawing, re.MULTILINE)
    ]
    assert missing == []


def test_every_error_is_exported() -> None:
    for cls in _error_classes():
        assert getattr(evaldelta, cls.__name__) is cls
        assert cls.__name__ in evaldelta.__all__


def test_an_error_may_name_the_parameter_to_mend() -> None:
    plain = errors.UsageError("threshold must be a number >= 0, got -1")
    assert plain.option is None
    named = errors.StoreError("choose another store with store=PATH", option="store")
    assert (str(named), named.option) == ("choose another store with store=PATH", "store")
    assert errors.ParseError("r.jsonl", 3, "bad").option is None
