"""``picked`` and ``dicts``: the plain data of result objects, named once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from evaldelta._plain import dicts, picked


@dataclass
class _Thing:
    a: int
    b: float
    c: str

    def to_dict(self) -> dict[str, Any]:
        return picked(self, "a ~b")


def test_picked_keeps_the_order_renames_and_converts() -> None:
    t = _Thing(1, 0.123456, "x")
    assert picked(t, "c a") == {"c": "x", "a": 1}
    assert list(picked(t, "c b a")) == ["c", "b", "a"]
    assert picked(t, "name=c") == {"name": "x"}
    assert picked(t, "~b a", lambda v: round(v, 2)) == {"b": 0.12, "a": 1}
    assert picked(t, "~rounded=b", lambda v: round(v, 1)) == {"rounded": 0.1}
    # Without a converter a marked value is kept as it is.
    assert picked(t, "~b") == {"b": 0.123456}


def test_picked_names_a_missing_attribute() -> None:
    with pytest.raises(AttributeError, match="nope"):
        picked(_Thing(1, 2.0, "x"), "a nope")


def test_dicts_calls_to_dict_of_each_value_in_order() -> None:
    out = dicts({"z": _Thing(1, 2.0, "x"), "y": _Thing(3, 4.0, "w")})
    assert out == {"z": {"a": 1, "b": 2.0}, "y": {"a": 3, "b": 4.0}}
    assert list(out) == ["z", "y"]
