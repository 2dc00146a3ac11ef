"""The assertions of a suite, checked against one attempt, and the attempt's score.

Each assertion (promptfoo's names, see :data:`~evaldelta.runner._spec.ASSERTION_TYPES`)
gives an :class:`AssertionResult`: a score in [0, 1], whether it passed, and a short
reason in the user's words (``output does not contain "Paris"``). Deterministic
assertions are pass/fail (score 1.0 or 0.0); ``python`` and ``llm-rubric`` may give any
score in between. A ``not-`` prefix turns the score into ``1 - score`` and the verdict
round, except where the check could not be made at all (a latency or cost that is
unknown): that fails either way. A ``python`` function that raises or returns junk
fails no answer: the attempt becomes an infrastructure failure (no score, left out of
the figures, re-run by ``--resume``), since a broken scorer is no regression.

``python`` and ``llm-rubric`` pass when their score reaches the assertion's
``threshold``; without one, when the verdict says so (a judge's ``pass``, a ``python``
function's ``True`` or ``{"pass": ...}``), else at a score of 0.5.

:func:`combine` turns the results into the attempt's score: their weighted mean.

The output an assertion reads as text is the output itself when it is a string, else
its compact JSON (``{"a":1}``).
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evaldelta._plain import picked
from evaldelta.errors import UsageError
from evaldelta.runner._spec import (
    ASSERTION_TYPES,
    AssertionSpec,
    InfraFailure,
    TestCase,
    import_callable,
)
from evaldelta.scorers import NOT_JSON, json_equal, json_value

__all__ = [
    "AssertionResult",
    "Attempt",
    "Grader",
    "Grading",
    "Scored",
    "check",
    "combine",
    "output_text",
]

#: Floating-point noise allowed when a score is compared with a threshold, so that a
#: weighted mean of 0.7 computed as 0.6999999999999999 still reaches 0.7.
_EPS = 1e-9

#: The score ``python`` and ``llm-rubric`` must reach when the assertion sets no
#: threshold and the verdict does not say pass or fail itself.
DEFAULT_SCORE_THRESHOLD = 0.5

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")


@dataclass(frozen=True, slots=True)
class AssertionResult:
    """One assertion checked against one attempt.

    ``metric`` is the name it has in a record's ``scores`` (the spec's ``metric``, else
    its type as written, ``not-contains``); ``score`` is in [0, 1], negation applied.
    """

    metric: str
    score: float
    passed: bool
    reason: str
    weight: float = 1.0
    required: bool = False

    def to_dict(self) -> dict[str, Any]:
        return picked(self, "metric score passed reason weight required")


@dataclass(frozen=True, slots=True)
class Attempt:
    """What the assertions see of one attempt: the target's output (a string, or the
    JSON value a command or function returned), the test it answered, and what it
    cost (``None`` when unknown)."""

    output: Any
    test: TestCase
    latency_ms: float | None = None
    cost_usd: float | None = None


class Grading(Protocol):
    """A judge's verdict on one attempt (:class:`~evaldelta.runner._judge.JudgeVerdict`)."""

    @property
    def score(self) -> float: ...

    @property
    def passed(self) -> bool: ...

    @property
    def reason(self) -> str: ...


class Grader(Protocol):
    """What grades ``llm-rubric``: :class:`~evaldelta.runner._judge.LLMJudge`.

    ``grade`` raises :class:`~evaldelta.runner._spec.InfraFailure` when the judge cannot
    be read; :func:`check` lets it through, and the attempt is lost to infrastructure.
    """

    async def grade(self, rubric: str, attempt: Attempt) -> Grading: ...


@dataclass(frozen=True, slots=True)
class Scored:
    """An attempt's score from its assertions (see :func:`combine`).

    ``scores`` maps each assertion's metric to its score; ``reasons`` holds the
    reasons of the assertions that failed, as ``metric: reason``.
    """

    score: float
    passed: bool
    scores: dict[str, float] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            **picked(self, "score passed"),
            "scores": dict(self.scores),
            "reasons": list(self.reasons),
        }


def output_text(output: Any) -> str:
    """The output as assertions read it: itself when a string, else compact JSON."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # not a JSON value (a Python target may return anything)
        return str(output)


async def check(
    specs: Sequence[AssertionSpec],
    attempt: Attempt,
    *,
    base_dir: Path,
    judge: Grader | None,
) -> list[AssertionResult]:
    """Check each assertion against the attempt, in order.

    ``base_dir`` is where ``python`` assertions' modules are imported from (the suite's
    folder); ``judge`` grades ``llm-rubric``.

    Raises:
        UsageError: an ``llm-rubric`` without a judge.
        ParseError: at the assertion's line, an assertion that cannot be checked as
            written (an unknown type, a bad pattern or schema, a function that cannot
            be imported, ``latency`` or ``cost`` without a threshold).
        InfraFailure: from the judge, when its reply stays unreadable.
    """
    results: list[AssertionResult] = []
    seen: dict[str, int] = {}
    for spec in specs:
        metric = spec.metric or spec.label
        seen[metric] = seen.get(metric, 0) + 1
        if seen[metric] > 1 and spec.metric is None:
            metric = f"{metric}-{seen[metric]}"
        outcome = await _check_one(spec, attempt, base_dir, judge)
        score, passed, reason = outcome.score, outcome.passed, outcome.reason
        if spec.negate and not outcome.unchecked:
            score, passed = 1.0 - score, not passed
            reason = f"{reason} (negated: must not)" if not passed else f"{reason} (negated)"
        results.append(
            AssertionResult(
                metric=metric,
                score=score,
                passed=passed,
                reason=reason,
                weight=spec.weight,
                required=spec.required,
            )
        )
    return results


def combine(results: Sequence[AssertionResult], threshold: float | None) -> Scored:
    """The attempt's score: the weighted mean of its assertions' scores
    (``sum(w * s) / sum(w)``; the plain mean when every weight is 0).

    It passes when every assertion passed (``threshold`` ``None``), else when its score
    reaches ``threshold`` (1e-9 of floating-point noise allowed). A failed required
    assertion fails the attempt whatever the others say: score 0. An attempt with
    nothing to check passes when it ran: score 1.0, no ``scores``.
    """
    if not results:
        return Scored(score=1.0, passed=True)
    total_weight = sum(r.weight for r in results)
    if total_weight > 0:
        score = sum(r.weight * r.score for r in results) / total_weight
    else:
        score = sum(r.score for r in results) / len(results)
    passed = all(r.passed for r in results) if threshold is None else score >= threshold - _EPS
    if any(r.required and not r.passed for r in results):
        score, passed = 0.0, False
    return Scored(
        score=score,
        passed=passed,
        scores={r.metric: r.score for r in results},
        reasons=[f"{r.metric}: {r.reason}" for r in results if not r.passed],
    )


# --- one assertion -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Outcome:
    """An assertion's result before negation; ``unchecked`` when the check could not be
    made (negation then leaves it failed)."""

    score: float
    passed: bool
    reason: str
    unchecked: bool = False


def _binary(ok: bool, yes: str, no: str) -> _Outcome:
    return _Outcome(1.0 if ok else 0.0, ok, yes if ok else no)


def _unchecked(reason: str) -> _Outcome:
    return _Outcome(0.0, False, reason, unchecked=True)


def _quote(text: str, limit: int = 60) -> str:
    """``text`` quoted for a reason, cut to ``limit`` characters."""
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return json.dumps(text, ensure_ascii=False)


async def _check_one(
    spec: AssertionSpec, attempt: Attempt, base_dir: Path, judge: Grader | None
) -> _Outcome:
    kind = spec.type
    if kind == "python":
        return await _python(spec, attempt, base_dir)
    if kind == "llm-rubric":
        return await _llm_rubric(spec, attempt, judge)
    if kind == "latency":
        return _limit(spec, attempt.latency_ms, "latency", "ms", "latency unknown")
    if kind == "cost":
        return _limit(spec, attempt.cost_usd, "cost", "$", "cost unknown: give the target a price")
    text = output_text(attempt.output)
    if kind == "equals":
        return _equals(spec, attempt.output, text)
    if kind == "contains":
        needle = _text_value(spec)
        return _binary(
            needle in text,
            f"output contains {_quote(needle)}",
            f"output does not contain {_quote(needle)}",
        )
    if kind == "icontains":
        needle = _text_value(spec)
        return _binary(
            needle.casefold() in text.casefold(),
            f"output contains {_quote(needle)} (any case)",
            f"output does not contain {_quote(needle)} (any case)",
        )
    if kind == "contains-any":
        needles = _list_value(spec)
        found = [n for n in needles if n in text]
        shown = ", ".join(_quote(n) for n in needles)
        return _binary(
            bool(found),
            f"output contains {_quote(found[0]) if found else ''}",
            f"output contains none of {shown}",
        )
    if kind == "contains-all":
        needles = _list_value(spec)
        missing = [n for n in needles if n not in text]
        return _binary(
            not missing,
            f"output contains all of {', '.join(_quote(n) for n in needles)}",
            f"output does not contain {', '.join(_quote(n) for n in missing)}",
        )
    if kind == "starts-with":
        prefix = _text_value(spec)
        return _binary(
            text.startswith(prefix),
            f"output starts with {_quote(prefix)}",
            f"output does not start with {_quote(prefix)}",
        )
    if kind == "regex":
        pattern = _text_value(spec)
        match = _compile(spec, pattern).search(text)
        return _binary(
            match is not None,
            f"output matches /{pattern}/ at {_quote(match.group(0)) if match else ''}",
            f"output does not match /{pattern}/",
        )
    if kind == "is-json":
        return _is_json(spec, attempt.output)
    if kind == "numeric":
        return _numeric(spec, attempt.output, text)
    raise spec.where.error(
        f"unknown assertion type {spec.type!r}; use one of {', '.join(ASSERTION_TYPES)} "
        "(each may take a not- prefix)"
    )


def _text_value(spec: AssertionSpec) -> str:
    if spec.value is None or isinstance(spec.value, (Mapping, list)):
        raise spec.where.error(f'{spec.label} needs a text value: write value: "..."')
    return spec.value if isinstance(spec.value, str) else str(spec.value)


def _list_value(spec: AssertionSpec) -> list[str]:
    value = spec.value
    if isinstance(value, str):
        return [value]
    if (
        isinstance(value, (list, tuple))
        and value
        and not any(isinstance(v, (Mapping, list)) or v is None for v in value)
    ):
        return [v if isinstance(v, str) else str(v) for v in value]
    raise spec.where.error(f'{spec.label} needs a list of texts: write value: ["...", "..."]')


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _compile(spec: AssertionSpec, pattern: str) -> re.Pattern[str]:
    try:
        return _regex(pattern)
    except re.error as exc:
        raise spec.where.error(f"regex {pattern!r} does not compile: {exc}") from exc


def _equals(spec: AssertionSpec, output: Any, text: str) -> _Outcome:
    value = spec.value
    if isinstance(value, str):
        return _binary(
            text == value,
            f"output equals {_quote(value)}",
            f"output {_quote(text)} is not {_quote(value)}",
        )
    expected = output_text(value)
    parsed = json_value(output)
    if parsed is NOT_JSON:
        return _Outcome(0.0, False, f"output is not JSON, so not {_quote(expected)}")
    return _binary(
        json_equal(parsed, value),
        f"output equals {_quote(expected)}",
        f"output {_quote(output_text(parsed))} is not {_quote(expected)}",
    )


def _is_json(spec: AssertionSpec, output: Any) -> _Outcome:
    parsed = json_value(output)
    if parsed is NOT_JSON:
        return _Outcome(0.0, False, f"output is not JSON: {_quote(output_text(output))}")
    schema = spec.options.get("schema")
    if schema is None and isinstance(spec.value, Mapping):
        schema = spec.value
    if schema is None:
        return _Outcome(1.0, True, "output is JSON")
    if not isinstance(schema, Mapping):
        raise spec.where.error("is-json's schema must be a mapping (a JSON Schema object)")
    error = _schema_error(spec, schema, parsed)
    if error is None:
        return _Outcome(1.0, True, "output is JSON matching the schema")
    return _Outcome(0.0, False, f"output does not match the schema: {error}")


def _schema_error(spec: AssertionSpec, schema: Mapping[str, Any], instance: Any) -> str | None:
    """The first (most relevant) validation error, as ``path: message``."""
    from jsonschema import exceptions

    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
    except exceptions.SchemaError as exc:
        raise spec.where.error(
            f"is-json's schema is not a valid JSON Schema: {exc.message}"
        ) from exc
    error = exceptions.best_match(validator.iter_errors(instance))
    if error is None:
        return None
    return f"{error.json_path}: {error.message}"


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str) -> Any:
    from jsonschema import validators

    schema = json.loads(schema_json)
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _number(output: Any, text: str) -> float | None:
    """The number the output gives: the whole of it, else the last number in it."""
    if isinstance(output, (int, float)) and not isinstance(output, bool):
        return float(output)
    try:
        return float(text.strip())
    except ValueError:
        pass
    found = _NUMBER.findall(text)
    return float(found[-1]) if found else None


def _numeric(spec: AssertionSpec, output: Any, text: str) -> _Outcome:
    value = spec.value
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise spec.where.error("numeric needs a number value: write value: 42")
    try:
        target = float(value)
    except ValueError as exc:
        raise spec.where.error(f"numeric needs a number value, got {value!r}") from exc
    tol = spec.options.get("abs_tol", 0)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol < 0:
        raise spec.where.error(f"numeric's abs_tol must be a number >= 0, got {tol!r}")
    got = _number(output, text)
    if got is None:
        return _Outcome(0.0, False, f"output has no number: {_quote(text)}")
    within = f" within {tol:g}" if tol else ""
    return _binary(
        math.isfinite(got) and abs(got - target) <= tol,
        f"output {got:g} is {target:g}{within}",
        f"output {got:g} is not {target:g}{within}",
    )


def _limit(spec: AssertionSpec, got: float | None, what: str, unit: str, unknown: str) -> _Outcome:
    """``latency`` and ``cost``: the attempt's figure at most the threshold."""
    if spec.threshold is None:
        example = "threshold: 2000  # ms" if what == "latency" else "threshold: 0.01  # dollars"
        raise spec.where.error(f"{spec.label} needs a threshold: write {example}")
    if got is None or not math.isfinite(got):
        return _unchecked(unknown)
    if unit == "$":
        shown, limit = f"${got:.6g}", f"${spec.threshold:.6g}"
    else:
        shown, limit = f"{got:.0f} ms", f"{spec.threshold:g} ms"
    return _binary(
        got <= spec.threshold,
        f"{what} {shown} is within {limit}",
        f"{what} {shown} is over {limit}",
    )


async def _python(spec: AssertionSpec, attempt: Attempt, base_dir: Path) -> _Outcome:
    """``value: "module:function"`` is called ``(output, test)`` (the test as
    :meth:`~evaldelta.runner._spec.TestCase.to_dict` gives it), or ``(output)`` when it
    takes one parameter; a function given directly (a scorer of
    :func:`evaldelta.evaluate`) is called as :func:`evaldelta.scorers.call_scorer`
    describes, with ``input``, ``output`` and ``expected``."""
    test = attempt.test
    call: Callable[[], Any]
    if isinstance(spec.value, str):
        ref = spec.value
        func = import_callable(ref, base_dir, spec.where)
        context = test.to_dict()
        if _takes_one(func):
            call = functools.partial(func, attempt.output)
        else:
            call = functools.partial(func, attempt.output, context)
    elif callable(spec.value):
        from evaldelta.scorers import bind_scorer

        ref = spec.metric or str(getattr(spec.value, "__name__", "scorer"))
        try:
            bound = bind_scorer(spec.value)
        except TypeError as exc:
            raise UsageError(f"{spec.where}: {exc}") from exc
        call = functools.partial(bound, test.input, attempt.output, test.expected_output)
    else:
        raise spec.where.error('python needs value: "module:function"')
    try:
        result = call()
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:
        raise _scorer_failed(spec, f"{ref} raised {type(exc).__name__}: {exc}") from exc
    outcome = _from_value(result, spec.threshold, ref)
    if outcome.unchecked:
        raise _scorer_failed(spec, outcome.reason)
    return outcome


def _scorer_failed(spec: AssertionSpec, reason: str) -> InfraFailure:
    """A ``python`` check that could not score the answer: the scorer's fault, not the
    agent's, so the attempt is left out of the figures (as an infrastructure failure)
    rather than scored 0, which would look like a regression."""
    return InfraFailure(
        f"{spec.where}: the python assertion could not score the answer: {reason}; fix the "
        "scorer, then run the suite again with --resume"
    )


def _takes_one(func: Any) -> bool:
    """Whether ``func`` takes the output only (not the test as well)."""
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):  # a builtin without a signature: give it both
        return False
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) == 1


def _from_value(result: Any, threshold: float | None, ref: str) -> _Outcome:
    """A ``python`` function's return value as a result: a bool, a score in [0, 1], or
    ``{"score", "pass", "reason"}`` (an explicit ``pass`` wins unless the assertion
    sets a threshold)."""
    bar = DEFAULT_SCORE_THRESHOLD if threshold is None else threshold
    if isinstance(result, bool):
        return _binary(result, f"{ref} passed", f"{ref} failed")
    if isinstance(result, (int, float)):
        if not (math.isfinite(result) and 0.0 <= result <= 1.0):
            return _unchecked(f"{ref} returned {result!r}, expected a score in [0, 1]")
        score = float(result)
        return _Outcome(score, score >= bar - _EPS, f"{ref} scored {score:.3g} (needs {bar:g})")
    if isinstance(result, Mapping):
        score_v, pass_v, reason_v = result.get("score"), result.get("pass"), result.get("reason")
        bad = (
            (score_v is None and pass_v is None)
            or (
                score_v is not None
                and (isinstance(score_v, bool) or not isinstance(score_v, (int, float)))
            )
            or (pass_v is not None and not isinstance(pass_v, bool))
        )
        if bad:
            return _unchecked(
                f"{ref} returned {_quote(output_text(result))}, expected "
                '{"score": 0..1, "pass": true/false, "reason": "..."}'
            )
        if score_v is not None and not (math.isfinite(score_v) and 0.0 <= score_v <= 1.0):
            return _unchecked(f"{ref} returned score {score_v!r}, expected a score in [0, 1]")
        score = float(score_v) if score_v is not None else (1.0 if pass_v else 0.0)
        explicit = threshold is None and pass_v is not None
        passed = bool(pass_v) if explicit else score >= bar - _EPS
        reason = str(reason_v) if reason_v else f"{ref} scored {score:.3g}"
        return _Outcome(score, passed, reason)
    shown = type(result).__name__ if result is not None else "None"
    return _unchecked(f"{ref} returned {shown}, expected bool/number/dict")


async def _llm_rubric(spec: AssertionSpec, attempt: Attempt, judge: Grader | None) -> _Outcome:
    if judge is None:
        raise UsageError(
            f"llm-rubric at {spec.where} needs a judge: set judge: {{target: NAME}} in the "
            "suite or pass --judge NAME"
        )
    rubric = spec.value if isinstance(spec.value, str) else output_text(spec.value)
    if not rubric:
        raise spec.where.error('llm-rubric needs a rubric: write value: "..."')
    verdict = await judge.grade(rubric, attempt)
    score = min(1.0, max(0.0, float(verdict.score)))
    passed = verdict.passed if spec.threshold is None else score >= spec.threshold - _EPS
    reason = verdict.reason or f"judge scored {score:.3g}"
    return _Outcome(score, passed, reason)
