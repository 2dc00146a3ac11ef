"""The ready-made scorers of evaldelta.scorers, and how any scorer is called."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evaldelta.scorers import (
    acall_scorer,
    call_scorer,
    exact_match,
    includes,
    json_match,
    levenshtein,
    regex,
)


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("Paris", "Paris", 1.0),
        ("  Paris\n", "Paris", 1.0),
        ("paris", "Paris", 0.0),
        ("Paris.", "Paris", 0.0),
        ("42", 42, 1.0),
        ("42.0", 42, 1.0),
        (42, "42", 1.0),
        ("true", 1, 0.0),  # JSON: true is not 1
        ('{"a": 1, "b": [2]}', {"b": [2], "a": 1}, 1.0),
        ({"a": 1}, {"a": 2}, 0.0),
        ("Paris", 42, 0.0),
        (None, None, 1.0),
    ],
)
def test_exact_match(output: Any, expected: Any, score: float) -> None:
    assert exact_match(output=output, expected=expected) == score


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ("It is Paris.", "Paris", 1.0),
        ("It is paris.", "Paris", 0.0),
        ("Paris and Lyon", ["Paris", "Lyon", "Nice", "Lille"], 0.5),
        ("anything", [], 1.0),
        ({"city": "Paris"}, "Paris", 1.0),  # a JSON output is read as its text
        ("answer: 42", 42, 1.0),
    ],
)
def test_includes(output: Any, expected: Any, score: float) -> None:
    assert includes(output=output, expected=expected) == score


@pytest.mark.parametrize(
    ("pattern", "output", "score"),
    [
        (r"\d+", "code 123", 1.0),
        (r"^\d+$", "code 123", 0.0),
        (r"paris", "Paris", 0.0),
    ],
)
def test_regex(pattern: str, output: str, score: float) -> None:
    assert regex(pattern)(output=output, expected=None) == score


def test_regex_flags_and_name() -> None:
    import re

    scorer = regex("paris", re.IGNORECASE)
    assert scorer(output="PARIS") == 1.0
    assert scorer.__name__ == "regex('paris')"
    with pytest.raises(re.error):
        regex("(unclosed")


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        # Hand-worked distances: kitten -> sitting is k->s, e->i, +g = 3 edits over 7.
        ("kitten", "sitting", 1 - 3 / 7),
        ("sitting", "kitten", 1 - 3 / 7),
        ("flaw", "lawn", 1 - 2 / 4),  # -f, +n
        ("", "", 1.0),
        ("", "abc", 0.0),
        ("abc", "abc", 1.0),
        ("abc", "xyz", 0.0),
        ("Saturday", "Sunday", 1 - 3 / 8),  # -a, -t, r->n
        ("gumbo", "gambol", 1 - 2 / 6),  # u->a, +l
    ],
)
def test_levenshtein(output: str, expected: str, score: float) -> None:
    assert levenshtein(output=output, expected=expected) == pytest.approx(score)


@pytest.mark.parametrize(
    ("output", "expected", "score"),
    [
        ('{"a": 1, "b": 2, "c": 3}', {"a": 1, "b": 2}, 1.0),
        ('{"a": 1, "b": 5}', {"a": 1, "b": 2}, 0.5),
        ({"a": 1}, '{"a": 1, "b": 2, "c": 3, "d": 4}', 0.25),
        ('{"a": {"x": 1}}', {"a": {"x": 1.0}}, 1.0),
        ('{"a": {"x": 1, "y": 2}}', {"a": {"x": 1}}, 0.0),  # top-level values compare exactly
        ("[1, 2]", {"a": 1}, 0.0),
        ("{}", {}, 1.0),
        ("[1, 2]", [1, 2], 1.0),
        ("[1, 2]", "[2, 1]", 0.0),
        ("Paris", "Paris", 0.0),  # an output that is not JSON
        ('"Paris"', "Paris", 1.0),  # the JSON string "Paris"
        ("not json", {"a": 1}, 0.0),
    ],
)
def test_json_match(output: Any, expected: Any, score: float) -> None:
    assert json_match(output=output, expected=expected) == score


# --- call_scorer -----------------------------------------------------------------------


def by_keyword(*, output: Any, expected: Any) -> float:
    return float(output == expected)


def by_name_all(input: Any, output: Any, expected: Any) -> bool:
    return bool(input == "q" and output == expected)


def by_position(answer: Any, target: Any) -> bool:
    return bool(answer == target)


def only_output(text: Any) -> float:
    return 1.0 if text else 0.0


def with_kwargs(**kwargs: Any) -> dict[str, Any]:
    return {"score": 1.0 if set(kwargs) == {"input", "output", "expected"} else 0.0}


def expected_first(expected: Any, output: Any) -> float:
    return float((expected, output) == ("A", "A"))


def too_many(a: Any, b: Any, c: Any) -> float:
    return 1.0


def returns_text(output: Any, expected: Any) -> str:
    return "good"


def returns_big(output: Any, expected: Any) -> float:
    return 2.0


def returns_dict_without_score(output: Any, expected: Any) -> dict[str, Any]:
    return {"pass": True}


async def async_scorer(*, output: Any, expected: Any) -> float:
    await asyncio.sleep(0)
    return float(output == expected)


@pytest.mark.parametrize(
    ("fn", "score"),
    [
        (exact_match, 1.0),
        (levenshtein, 1.0),
        (by_keyword, 1.0),
        (by_name_all, 1.0),
        (by_position, 1.0),
        (only_output, 1.0),
        (with_kwargs, 1.0),
        (expected_first, 1.0),
        (lambda output, expected: output == expected, 1.0),
        (lambda output: {"score": 0.25}, 0.25),
        (regex("A"), 1.0),
    ],
)
def test_call_scorer(fn: Any, score: float) -> None:
    assert call_scorer(fn, input="q", output="A", expected="A") == score


@pytest.mark.parametrize(
    ("fn", "error", "message"),
    [
        (too_many, TypeError, r"scorer too_many cannot be called: .* it takes \(a, b, c\)"),
        (returns_text, TypeError, "scorer returns_text returned str, expected a number"),
        (returns_big, ValueError, r"scorer returns_big returned 2.0, expected a score in \[0, 1\]"),
        (returns_dict_without_score, TypeError, "returned a mapping without 'score'"),
        (async_scorer, TypeError, r"scorer async_scorer is async: call it with acall_scorer\(\)"),
    ],
)
def test_call_scorer_refuses(fn: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call_scorer(fn, input="q", output="A", expected="A")


def test_acall_scorer() -> None:
    assert asyncio.run(acall_scorer(async_scorer, input=None, output="A", expected="A")) == 1.0
    assert asyncio.run(acall_scorer(by_position, input=None, output="A", expected="B")) == 0.0


def test_bind_scorer_refuses_before_any_call() -> None:
    from evaldelta.scorers import bind_scorer

    with pytest.raises(TypeError, match="cannot be called"):
        bind_scorer(too_many)
    assert bind_scorer(by_name_all)("q", "A", "A") is True
