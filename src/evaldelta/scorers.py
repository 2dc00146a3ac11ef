"""Ready-made scorers for :func:`evaldelta.evaluate` in Python, and the rule by which
any scorer is called.

A scorer grades one answer: it is called with ``output`` (what the task returned),
``expected`` (the dataset row's expected answer) and ``input`` (the row's input), by
name, and returns a score in [0, 1]::

    from evaldelta import evaluate
    from evaldelta.scorers import exact_match, includes, levenshtein, regex

    result = evaluate(
        name="qa-eval",
        model="gpt-4o",
        dataset=[{"input": "Capital of France?", "expected": "Paris"}],
        task=answer,
        scorers={
            "exact": exact_match,
            "mentions": includes,
            "close": levenshtein,
            "has_digit": regex(r"\\d"),
            "short": lambda output, expected: float(len(output) < 200),
        },
    )

Your own scorers may be written either way: with keyword parameters named among
``input``, ``output`` and ``expected``, or with two positional parameters
``(output, expected)``; they may return a float, a bool or ``{"score": ...}``. See
:func:`call_scorer`.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "Scorer",
    "acall_scorer",
    "bind_scorer",
    "call_scorer",
    "exact_match",
    "includes",
    "json_equal",
    "json_match",
    "json_value",
    "levenshtein",
    "regex",
]

#: A scorer: called as ``scorer(output=..., expected=..., input=...)``, returns [0, 1].
Scorer = Callable[..., Any]

_NAMES = ("input", "output", "expected")
#: What :func:`json_value` gives for a string that is not JSON.
NOT_JSON = object()


def exact_match(*, output: Any, expected: Any, input: Any = None) -> float:
    """1.0 when the output is the expected answer, else 0.0: as text, surrounding
    whitespace ignored; as JSON values when either is not a string (``"42"`` matches
    ``42``, ``'{"a": 1}'`` matches ``{"a": 1}``)."""
    if not isinstance(output, str) or not isinstance(expected, str):
        got, want = json_value(output), json_value(expected)
        if got is not NOT_JSON and want is not NOT_JSON:
            return float(json_equal(got, want))
    return float(_text(output).strip() == _text(expected).strip())


def includes(*, output: Any, expected: Any, input: Any = None) -> float:
    """1.0 when the expected text is in the output (case counts), else 0.0; for a list
    of expected texts, the fraction of them found (an empty list: 1.0)."""
    text = _text(output)
    if isinstance(expected, (list, tuple)):
        if not expected:
            return 1.0
        return sum(_text(e) in text for e in expected) / len(expected)
    return float(_text(expected) in text)


def regex(pattern: str, flags: int = 0) -> Scorer:
    """A scorer that gives 1.0 when ``pattern`` is found in the output
    (``re.search``), else 0.0. The pattern compiles now, so a bad one fails at once."""
    compiled = re.compile(pattern, flags)

    def scorer(*, output: Any, expected: Any = None, input: Any = None) -> float:
        return float(compiled.search(_text(output)) is not None)

    scorer.__name__ = scorer.__qualname__ = f"regex({pattern!r})"
    return scorer


def levenshtein(*, output: Any, expected: Any, input: Any = None) -> float:
    """Normalised Levenshtein similarity, ``1 - distance / max(len(a), len(b))``
    (insertions, deletions and substitutions cost 1; two empty texts: 1.0)."""
    a, b = _text(output), _text(expected)
    longest = max(len(a), len(b))
    if longest == 0:
        return 1.0
    return 1.0 - _distance(a, b) / longest


def json_match(*, output: Any, expected: Any, input: Any = None) -> float:
    """How far the output, read as JSON, matches the expected value: for an object,
    the fraction of the expected object's top-level keys whose values the output has
    exactly (an empty object: 1.0 when the output is an object); otherwise 1.0 when
    equal as JSON values. An output that is not JSON scores 0.0.

    A string ``expected`` is read as JSON when it parses, else taken as the string.
    """
    got = json_value(output)
    if got is NOT_JSON:
        return 0.0
    want = json_value(expected)
    if want is NOT_JSON:
        want = expected
    if isinstance(want, Mapping):
        if not isinstance(got, Mapping):
            return 0.0
        if not want:
            return 1.0
        return sum(k in got and json_equal(got[k], v) for k, v in want.items()) / len(want)
    return float(json_equal(got, want))


def call_scorer(fn: Scorer, *, input: Any, output: Any, expected: Any) -> float:
    """Call a scorer however it is written, and read its score.

    Parameters named ``input``, ``output`` or ``expected`` (or ``**kwargs``) get those by
    name; otherwise a function of exactly two positional parameters is called
    ``fn(output, expected)``, one of one ``fn(output)``. It may return a number in
    [0, 1], a bool (1.0 or 0.0) or a mapping with ``"score"``.

    Raises:
        TypeError: a scorer that cannot be called so, an async scorer (use
            :func:`acall_scorer`), or one returning something else.
        ValueError: a score that is not in [0, 1].
    """
    result = _invoke(fn, input=input, output=output, expected=expected)
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):  # do not leave a never-awaited coroutine behind
            close()
        raise TypeError(f"scorer {_name(fn)} is async: call it with acall_scorer()")
    return _score(fn, result)


async def acall_scorer(fn: Scorer, *, input: Any, output: Any, expected: Any) -> float:
    """:func:`call_scorer` for a scorer that may be async (its result is awaited)."""
    result = _invoke(fn, input=input, output=output, expected=expected)
    if inspect.isawaitable(result):
        result = await result
    return _score(fn, result)


def bind_scorer(fn: Scorer) -> Callable[[Any, Any, Any], Any]:
    """``fn`` as a function of ``(input, output, expected)`` that returns its raw result
    (awaitable when ``fn`` is async), called as :func:`call_scorer` describes.

    Raises:
        TypeError: a scorer that cannot be called so (said now, before any call).
    """
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature
        return lambda input, output, expected: fn(output, expected)
    by_name = {
        p.name
        for p in params
        if p.name in _NAMES and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    required = {
        p.name
        for p in params
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    if (by_name or var_kw) and required <= by_name:
        names = _NAMES if var_kw else tuple(n for n in _NAMES if n in by_name)

        def by_keyword(input: Any, output: Any, expected: Any) -> Any:
            values = {"input": input, "output": output, "expected": expected}
            return fn(**{n: values[n] for n in names})

        return by_keyword
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required_kw = [p for p in params if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if not required_kw:
        if len(positional) == 2:
            return lambda input, output, expected: fn(output, expected)
        if len(positional) == 1:
            return lambda input, output, expected: fn(output)
    raise TypeError(
        f"scorer {_name(fn)} cannot be called: give it parameters named among input, "
        "output and expected (def score(*, output, expected): ...), or two positional "
        f"parameters (output, expected); it takes {_signature(fn)}"
    )


def _invoke(fn: Scorer, *, input: Any, output: Any, expected: Any) -> Any:
    return bind_scorer(fn)(input, output, expected)


def _score(fn: Scorer, result: Any) -> float:
    if isinstance(result, Mapping):
        if "score" not in result:
            raise TypeError(f"scorer {_name(fn)} returned a mapping without 'score'")
        result = result["score"]
    if isinstance(result, bool):
        return 1.0 if result else 0.0
    if not isinstance(result, (int, float)):
        raise TypeError(
            f"scorer {_name(fn)} returned {type(result).__name__}, "
            "expected a number in [0, 1], a bool or {'score': ...}"
        )
    if not (math.isfinite(result) and 0.0 <= result <= 1.0):
        raise ValueError(f"scorer {_name(fn)} returned {result!r}, expected a score in [0, 1]")
    return float(result)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


def _signature(fn: Any) -> str:
    """``fn``'s parameters without their annotations: ``(a, b, c)``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return "(?)"
    params = [p.replace(annotation=p.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=sig.empty))


def _distance(a: str, b: str) -> int:
    """Levenshtein distance (Wagner–Fischer), two rows of the table at a time."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(
                min(
                    previous[j] + 1,  # deletion
                    current[j - 1] + 1,  # insertion
                    previous[j - 1] + (ca != cb),  # substitution
                )
            )
        previous = current
    return previous[-1]


def _text(value: Any) -> str:
    """A value as text: a string as is, ``None`` as "", else its compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)


def json_value(value: Any) -> Any:
    """A value as JSON: a string parsed (``NOT_JSON`` when it does not), else as is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return NOT_JSON


def json_equal(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1 == 1.0``, but ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (Mapping, list, tuple)) or isinstance(b, (Mapping, list, tuple)):
        return False
    return bool(a == b)
