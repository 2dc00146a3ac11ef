"""Plain data of a result object, named once: ``picked(self, "a b=c ~d", clean)``.

Every result type has a ``to_dict`` for JSON; most of its keys are attributes of the
same name. :func:`picked` builds that part from one line naming them, in order, so a
type's JSON shape is read in one place instead of a column of ``"x": self.x`` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import lru_cache
from typing import Any, Protocol

__all__ = ["FieldsDict", "dicts", "fields_dict", "picked"]


@lru_cache(maxsize=256)
def _parse(spec: str) -> tuple[tuple[str, str, bool], ...]:
    out = []
    for token in spec.split():
        convert = token.startswith("~")
        key, _, attr = token.lstrip("~").partition("=")
        out.append((key, attr or key, convert))
    return tuple(out)


def picked(obj: object, spec: str, convert: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """``{key: obj.attr}`` for each space-separated token of ``spec``, in order.

    A token ``key`` reads the attribute of that name, ``key=attr`` another one; a token
    starting with ``~`` passes the value through ``convert`` (e.g. rounding floats).
    """
    out: dict[str, Any] = {}
    for key, attr, conv in _parse(spec):
        value = getattr(obj, attr)
        out[key] = convert(value) if conv and convert is not None else value
    return out


class _HasDict(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def dicts(mapping: Mapping[str, _HasDict]) -> dict[str, dict[str, Any]]:
    """``{name: value.to_dict()}`` for each entry of ``mapping``, in order."""
    return {name: value.to_dict() for name, value in mapping.items()}


def fields_dict(obj: Any, convert: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Every field of the dataclass ``obj``, in order: a value with a ``to_dict`` as
    its dict, a float through ``convert`` when one is given, anything else as it is."""
    out: dict[str, Any] = {}
    for f in fields(obj):
        value = getattr(obj, f.name)
        if hasattr(value, "to_dict"):
            value = value.to_dict()
        elif convert is not None and isinstance(value, float):
            value = convert(value)
        out[f.name] = value
    return out


class FieldsDict:
    """A dataclass whose JSON is every field, in order (:func:`fields_dict`)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self)
