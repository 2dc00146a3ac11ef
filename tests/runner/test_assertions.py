"""Assertions against one attempt, and the attempt's weighted score."""

from __future__ import annotations

import asyncio
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evaldelta.errors import ParseError, UsageError
from evaldelta.runner._assertions import (
    AssertionResult,
    Attempt,
    Scored,
    check,
    combine,
    output_text,
)
from evaldelta.runner._spec import AssertionSpec, InfraFailure, TestCase, Where

TEST = TestCase(id="t1", input="What is the capital of France?", expected_output="Paris")
_module_ids = itertools.count()


def run(
    specs: list[AssertionSpec],
    output: Any,
    *,
    base_dir: Path | None = None,
    judge: Any = None,
    latency_ms: float | None = None,
    cost_usd: float | None = None,
) -> list[AssertionResult]:
    attempt = Attempt(output=output, test=TEST, latency_ms=latency_ms, cost_usd=cost_usd)
    return asyncio.run(check(specs, attempt, base_dir=base_dir or Path("."), judge=judge))


def one(spec: AssertionSpec, output: Any, **kwargs: Any) -> AssertionResult:
    (result,) = run([spec], output, **kwargs)
    return result


# --- deterministic assertions ---------------------------------------------------------

CASES = [
    # (type, value, options, output, passes, reason)
    ("equals", "Paris", {}, "Paris", True, 'output equals "Paris"'),
    ("equals", "Paris", {}, "Paris.", False, 'output "Paris." is not "Paris"'),
    ("equals", "Paris", {}, " Paris", False, 'output " Paris" is not "Paris"'),
    ("equals", {"a": 1}, {}, '{"a": 1.0}', True, 'output equals "{\\"a\\":1}"'),
    ("equals", {"a": 1}, {}, {"a": 1}, True, 'output equals "{\\"a\\":1}"'),
    ("equals", [1, 2], {}, "[2, 1]", False, 'output "[2,1]" is not "[1,2]"'),
    ("equals", 1, {}, "true", False, 'output "true" is not "1"'),
    ("equals", 42, {}, "forty-two", False, 'output is not JSON, so not "42"'),
    ("contains", "Paris", {}, "It is Paris.", True, 'output contains "Paris"'),
    ("contains", "Paris", {}, "It is paris.", False, 'output does not contain "Paris"'),
    ("contains", "a", {}, {"k": "a"}, True, 'output contains "a"'),  # JSON text of a dict
    ("icontains", "PARIS", {}, "it is paris", True, 'output contains "PARIS" (any case)'),
    ("icontains", "Lyon", {}, "Paris", False, 'output does not contain "Lyon" (any case)'),
    ("contains-any", ["Lyon", "Paris"], {}, "Paris!", True, 'output contains "Paris"'),
    (
        "contains-any",
        ["Lyon", "Nice"],
        {},
        "Paris",
        False,
        'output contains none of "Lyon", "Nice"',
    ),
    ("contains-all", ["a", "b"], {}, "a b", True, 'output contains all of "a", "b"'),
    ("contains-all", ["a", "b", "c"], {}, "a", False, 'output does not contain "b", "c"'),
    ("starts-with", "The", {}, "The end", True, 'output starts with "The"'),
    ("starts-with", "end", {}, "The end", False, 'output does not start with "end"'),
    ("regex", r"\d{3}", {}, "code 1234", True, 'output matches /\\d{3}/ at "123"'),
    ("regex", r"^\d+$", {}, "12a", False, "output does not match /^\\d+$/"),
    ("is-json", None, {}, '{"a": [1]}', True, "output is JSON"),
    ("is-json", None, {}, {"a": 1}, True, "output is JSON"),
    ("is-json", None, {}, "{'a': 1}", False, "output is not JSON: \"{'a': 1}\""),
    (
        "is-json",
        None,
        {"schema": {"type": "object", "required": ["answer"]}},
        '{"answer": "Paris"}',
        True,
        "output is JSON matching the schema",
    ),
    (
        "is-json",
        {"type": "object", "properties": {"n": {"type": "integer"}}},
        {},
        '{"n": "three"}',
        False,
        "output does not match the schema: $.n: 'three' is not of type 'integer'",
    ),
    (
        "is-json",
        None,
        {"schema": {"type": "object", "required": ["answer"]}},
        "{}",
        False,
        "output does not match the schema: $: 'answer' is a required property",
    ),
    ("numeric", 42, {}, " 42\n", True, "output 42 is 42"),
    ("numeric", 42, {}, "The answer is 41, no, 42.", True, "output 42 is 42"),
    ("numeric", 3.14, {"abs_tol": 0.01}, "3.141", True, "output 3.141 is 3.14 within 0.01"),
    (
        "numeric",
        3.14,
        {"abs_tol": 0.0001},
        "3.141",
        False,
        "output 3.141 is not 3.14 within 0.0001",
    ),
    ("numeric", 7, {}, 7, True, "output 7 is 7"),
    ("numeric", 7, {}, "seven", False, 'output has no number: "seven"'),
    ("numeric", -2.5e3, {}, "-2.5e3", True, "output -2500 is -2500"),
]


@pytest.mark.parametrize(("kind", "value", "options", "output", "passes", "reason"), CASES)
def test_deterministic(
    kind: str, value: Any, options: dict[str, Any], output: Any, passes: bool, reason: str
) -> None:
    result = one(AssertionSpec(kind, value, options=options), output)
    assert (result.passed, result.score, result.reason) == (passes, float(passes), reason)
    assert result.metric == kind


@pytest.mark.parametrize(("kind", "value", "options", "output", "passes", "reason"), CASES)
def test_negation_flips(
    kind: str, value: Any, options: dict[str, Any], output: Any, passes: bool, reason: str
) -> None:
    result = one(AssertionSpec(kind, value, negate=True, options=options), output)
    assert result.passed is not passes
    assert result.score == 1.0 - float(passes)
    assert result.metric == f"not-{kind}"
    suffix = " (negated)" if result.passed else " (negated: must not)"
    assert result.reason == reason + suffix


def test_negated_reason_reads() -> None:
    result = one(AssertionSpec("contains", "x", negate=True), "xyz")
    assert result.reason == 'output contains "x" (negated: must not)'


def test_output_text_is_compact_json() -> None:
    assert output_text({"a": [1, "é"]}) == '{"a":[1,"é"]}'
    assert output_text("plain") == "plain"
    assert output_text(object).startswith("<class")  # not JSON: its str()


def test_long_outputs_are_cut_in_reasons() -> None:
    result = one(AssertionSpec("equals", "x"), "y" * 500)
    assert len(result.reason) < 100
    assert "…" in result.reason


# --- latency and cost -------------------------------------------------------------------

LIMITS = [
    # (type, threshold, latency_ms, cost_usd, passes, reason)
    ("latency", 1000, 250.4, None, True, "latency 250 ms is within 1000 ms"),
    ("latency", 1000, 1000.0, None, True, "latency 1000 ms is within 1000 ms"),
    ("latency", 1000, 1500.0, None, False, "latency 1500 ms is over 1000 ms"),
    ("latency", 1000, None, None, False, "latency unknown"),
    ("cost", 0.01, None, 0.002, True, "cost $0.002 is within $0.01"),
    ("cost", 0.01, None, 0.02, False, "cost $0.02 is over $0.01"),
    ("cost", 0.01, None, None, False, "cost unknown: give the target a price"),
]


@pytest.mark.parametrize(("kind", "threshold", "latency", "cost", "passes", "reason"), LIMITS)
def test_limits(
    kind: str,
    threshold: float,
    latency: float | None,
    cost: float | None,
    passes: bool,
    reason: str,
) -> None:
    result = one(AssertionSpec(kind, threshold=threshold), "x", latency_ms=latency, cost_usd=cost)
    assert (result.passed, result.score, result.reason) == (passes, float(passes), reason)


@pytest.mark.parametrize("kind", ["latency", "cost"])
def test_unknown_figure_fails_even_negated(kind: str) -> None:
    result = one(AssertionSpec(kind, threshold=1, negate=True), "x")
    assert (result.passed, result.score) == (False, 0.0)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("latency", "latency needs a threshold: write threshold: 2000  # ms"),
        ("cost", "cost needs a threshold: write threshold: 0.01  # dollars"),
    ],
)
def test_limits_need_a_threshold(kind: str, message: str) -> None:
    with pytest.raises(ParseError, match=message) as info:
        one(AssertionSpec(kind, where=Where("suite.yaml", 9)), "x", latency_ms=1, cost_usd=1)
    assert str(info.value).startswith("suite.yaml:9: ")


# --- assertions that cannot be checked as written -----------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (AssertionSpec("sounds-nice", "x"), "unknown assertion type 'sounds-nice'; use one of"),
        (AssertionSpec("regex", "(unclosed"), "regex '(unclosed' does not compile"),
        (AssertionSpec("contains"), 'contains needs a text value: write value: "..."'),
        (AssertionSpec("contains-all", []), "contains-all needs a list of texts"),
        (AssertionSpec("numeric", "many"), "numeric needs a number value, got 'many'"),
        (
            AssertionSpec("numeric", 1, options={"abs_tol": -1}),
            "numeric's abs_tol must be a number >= 0, got -1",
        ),
        (
            AssertionSpec("is-json", options={"schema": {"type": "nonsense"}}),
            "is-json's schema is not a valid JSON Schema",
        ),
        (AssertionSpec("python", "no_colon"), "'no_colon' is not \"module:function\""),
    ],
)
def test_bad_assertions_name_their_line(spec: AssertionSpec, message: str) -> None:
    from dataclasses import replace

    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace("$", r"\$")) as info:
        one(replace(spec, where=Where("suite.yaml", 12)), "{}")
    assert (info.value.path, info.value.line) == ("suite.yaml", 12)


def test_contains_any_takes_a_single_text() -> None:
    assert one(AssertionSpec("contains-any", "Paris"), "Paris").passed


# --- python assertions -----------------------------------------------------------------


def _module(tmp_path: Path, body: str) -> str:
    """A module of assertion functions in tmp_path, under a name never used before
    (so that no earlier test's module is found in sys.modules)."""
    name = f"checks_{next(_module_ids)}_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(body, encoding="utf-8")
    return name


CHECKS = """
import asyncio

def is_paris(output, test):
    return output == test["expected_output"]

def half(output, test):
    return 0.5

def low(output, test):
    return 0.2

def graded(output, test):
    return {"score": 0.3, "pass": True, "reason": "close enough"}

def pass_only(output, test):
    return {"pass": False, "reason": "wrong city"}

def score_only(output, test):
    return {"score": 0.9}

def output_only(output):
    return "Paris" in output

async def later(output, test):
    await asyncio.sleep(0)
    return test["id"] == "t1"

def boom(output, test):
    raise ValueError("no city")

def junk(output, test):
    return "yes"

def too_big(output, test):
    return 3

def bad_dict(output, test):
    return {"score": "high"}
"""

PYTHON_CASES = [
    # (function, threshold, passes, score, reason)
    ("is_paris", None, True, 1.0, "{m}:is_paris passed"),
    ("half", None, True, 0.5, "{m}:half scored 0.5 (needs 0.5)"),
    ("half", 0.6, False, 0.5, "{m}:half scored 0.5 (needs 0.6)"),
    ("low", None, False, 0.2, "{m}:low scored 0.2 (needs 0.5)"),
    ("graded", None, True, 0.3, "close enough"),  # an explicit pass wins...
    ("graded", 0.5, False, 0.3, "close enough"),  # ...unless the assertion sets a threshold
    ("pass_only", None, False, 0.0, "wrong city"),
    ("score_only", None, True, 0.9, "{m}:score_only scored 0.9"),
    ("output_only", None, True, 1.0, "{m}:output_only passed"),
    ("later", None, True, 1.0, "{m}:later passed"),
    ("boom", None, False, 0.0, "{m}:boom raised ValueError: no city"),
    ("junk", None, False, 0.0, "{m}:junk returned str, expected bool/number/dict"),
    ("too_big", None, False, 0.0, "{m}:too_big returned 3, expected a score in [0, 1]"),
    (
        "bad_dict",
        None,
        False,
        0.0,
        '{m}:bad_dict returned "{{\\"score\\":\\"high\\"}}", expected '
        '{{"score": 0..1, "pass": true/false, "reason": "..."}}',
    ),
]


#: Checks that cannot score an answer (they raise, or return junk).
CANNOT_SCORE = {"boom", "junk", "too_big", "bad_dict"}


@pytest.mark.parametrize(("func", "threshold", "passes", "score", "reason"), PYTHON_CASES)
def test_python(
    tmp_path: Path, func: str, threshold: float | None, passes: bool, score: float, reason: str
) -> None:
    module = _module(tmp_path, CHECKS)
    spec = AssertionSpec("python", f"{module}:{func}", threshold=threshold)
    if func in CANNOT_SCORE:
        # A broken scorer is no answer's failure: the attempt is left out (infra).
        with pytest.raises(InfraFailure) as info:
            one(spec, "Paris", base_dir=tmp_path)
        assert reason.format(m=module) in str(info.value)
        assert "could not score the answer" in str(info.value)
        return
    result = one(spec, "Paris", base_dir=tmp_path)
    assert (result.passed, result.score, result.reason) == (
        passes,
        score,
        reason.format(m=module),
    )


def test_python_gets_the_output_and_the_test(tmp_path: Path) -> None:
    module = _module(
        tmp_path,
        "seen = []\ndef record(output, test):\n    seen.append((output, test))\n    return True\n",
    )
    one(AssertionSpec("python", f"{module}:record"), {"city": "Paris"}, base_dir=tmp_path)
    import sys

    ((output, test),) = sys.modules[module].seen
    assert output == {"city": "Paris"}
    assert test == TEST.to_dict()


@pytest.mark.parametrize("func", ["boom", "junk"])
def test_python_that_cannot_check_is_no_pass_even_negated(tmp_path: Path, func: str) -> None:
    module = _module(tmp_path, CHECKS)
    with pytest.raises(InfraFailure):
        one(AssertionSpec("python", f"{module}:{func}", negate=True), "x", base_dir=tmp_path)


def test_python_negated(tmp_path: Path) -> None:
    module = _module(tmp_path, CHECKS)
    result = one(AssertionSpec("python", f"{module}:low", negate=True), "x", base_dir=tmp_path)
    assert result.passed
    assert result.score == pytest.approx(0.8)


def test_python_missing_function_names_the_line(tmp_path: Path) -> None:
    module = _module(tmp_path, CHECKS)
    spec = AssertionSpec("python", f"{module}:nope", where=Where("suite.yaml", 4))
    with pytest.raises(ParseError, match=f"module '{module}' has no 'nope'") as info:
        one(spec, "x", base_dir=tmp_path)
    assert info.value.line == 4


# --- llm-rubric ------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    score: float
    passed: bool
    reason: str


class FakeJudge:
    def __init__(self, *verdicts: Verdict | Exception) -> None:
        self.verdicts = list(verdicts)
        self.calls: list[tuple[str, Attempt]] = []

    async def grade(self, rubric: str, attempt: Attempt) -> Verdict:
        self.calls.append((rubric, attempt))
        verdict = self.verdicts.pop(0)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict


@pytest.mark.parametrize(
    ("verdict", "threshold", "passes", "reason"),
    [
        (Verdict(0.9, True, "names Paris"), None, True, "names Paris"),
        (Verdict(0.4, False, "vague"), None, False, "vague"),
        (Verdict(0.6, True, ""), 0.8, False, "judge scored 0.6"),
        (Verdict(0.6, False, "meh"), 0.5, True, "meh"),
    ],
)
def test_llm_rubric(verdict: Verdict, threshold: float | None, passes: bool, reason: str) -> None:
    judge = FakeJudge(verdict)
    spec = AssertionSpec("llm-rubric", "Names the capital", threshold=threshold)
    result = one(spec, "Paris", judge=judge)
    assert (result.score, result.passed, result.reason) == (verdict.score, passes, reason)
    ((rubric, attempt),) = judge.calls
    assert rubric == "Names the capital"
    assert attempt.output == "Paris"


def test_llm_rubric_without_a_judge() -> None:
    spec = AssertionSpec("llm-rubric", "Names the capital", where=Where("evals/qa.yaml", 21))
    with pytest.raises(UsageError) as info:
        one(spec, "Paris")
    assert str(info.value) == (
        "llm-rubric at evals/qa.yaml:21 needs a judge: set judge: {target: NAME} in the "
        "suite or pass --judge NAME"
    )


def test_judge_infra_failure_propagates() -> None:
    judge = FakeJudge(InfraFailure("judge reply is not the JSON asked for: 'hm'"))
    with pytest.raises(InfraFailure, match="not the JSON"):
        one(AssertionSpec("llm-rubric", "r"), "x", judge=judge)


# --- check() as a whole ------------------------------------------------------------------


def test_metrics_are_named_and_numbered() -> None:
    specs = [
        AssertionSpec("contains", "a"),
        AssertionSpec("contains", "b"),
        AssertionSpec("contains", "c", negate=True),
        AssertionSpec("regex", "a", metric="has_a"),
    ]
    results = run(specs, "ab")
    assert [r.metric for r in results] == ["contains", "contains-2", "not-contains", "has_a"]
    assert [r.passed for r in results] == [True, True, True, True]


def test_weight_and_required_are_carried() -> None:
    (result,) = run([AssertionSpec("contains", "a", weight=2.5, required=True)], "a")
    assert (result.weight, result.required) == (2.5, True)


# --- combine() ---------------------------------------------------------------------------


def r(score: float, passed: bool, weight: float = 1.0, required: bool = False) -> AssertionResult:
    return AssertionResult(f"m{score}{weight}", score, passed, "why", weight, required)


COMBINE = [
    # (results, threshold, score, passed)
    ([], None, 1.0, True),
    ([], 0.9, 1.0, True),
    ([r(1, True), r(0, False)], None, 0.5, False),
    ([r(1, True), r(0, False)], 0.5, 0.5, True),
    ([r(1, True), r(0, False)], 0.6, 0.5, False),
    ([r(1, True, 3), r(0, False, 1)], 0.75, 0.75, True),  # (3*1 + 1*0) / 4
    ([r(1, True, 0), r(0, False, 0)], None, 0.5, False),  # all weights 0: plain mean
    ([r(1, True, 0), r(0.5, True, 2)], None, 0.5, True),  # weight 0 counts for nothing
    ([r(1, True), r(1, True), r(0, False, required=True)], 0.5, 0.0, False),
    ([r(1, True, required=True), r(0, False)], 0.5, 0.5, True),  # required and passed
    ([r(0.7, True), r(0.7, True), r(0.7, True)], 0.7, 0.7, True),  # 1e-9 of noise allowed
]


@pytest.mark.parametrize(("results", "threshold", "score", "passed"), COMBINE)
def test_combine(
    results: list[AssertionResult], threshold: float | None, score: float, passed: bool
) -> None:
    scored = combine(results, threshold)
    assert scored.score == pytest.approx(score)
    assert scored.passed is passed


def test_combine_scores_and_reasons() -> None:
    results = run(
        [AssertionSpec("contains", "Paris"), AssertionSpec("contains", "Lyon", weight=3)],
        "Paris",
    )
    scored = combine(results, None)
    assert scored == Scored(
        score=0.25,
        passed=False,
        scores={"contains": 1.0, "contains-2": 0.0},
        reasons=['contains-2: output does not contain "Lyon"'],
    )
    assert scored.to_dict()["scores"] == {"contains": 1.0, "contains-2": 0.0}


def test_nothing_to_check_passes() -> None:
    assert combine([], None) == Scored(score=1.0, passed=True, scores={}, reasons=[])


# --- scorers given as functions (evaluate()'s dataset shape) ---------------------------


def _exact(*, output: Any, expected: Any) -> bool:
    return bool(output == expected)


def _positional(answer: Any, target: Any) -> float:
    return 0.75


async def _later(*, input: Any, output: Any) -> dict[str, Any]:
    return {"score": 0.1, "reason": f"{input} -> {output}"}


def _boom(output: Any, expected: Any) -> float:
    raise KeyError("k")


@pytest.mark.parametrize(
    ("fn", "metric", "passes", "score", "reason"),
    [
        (_exact, "exact", True, 1.0, "exact passed"),
        (_exact, None, True, 1.0, "_exact passed"),
        (_positional, "close", True, 0.75, "close scored 0.75 (needs 0.5)"),
        (_later, "later", False, 0.1, "What is the capital of France? -> Paris"),
        (_boom, "boom", False, 0.0, "boom raised KeyError: 'k'"),
    ],
)
def test_scorer_functions(
    fn: Any, metric: str | None, passes: bool, score: float, reason: str
) -> None:
    spec = AssertionSpec("python", fn, metric=metric)
    if "raised" in reason:
        with pytest.raises(InfraFailure, match=re.escape(reason)):
            one(spec, "Paris")
        return
    result = one(spec, "Paris")
    assert (result.passed, result.score, result.reason) == (passes, score, reason)


def test_scorer_function_that_cannot_be_called() -> None:
    def three(a: Any, b: Any, c: Any) -> float:
        return 1.0

    spec = AssertionSpec("python", three, metric="three", where=Where("<evaluate>"))
    with pytest.raises(UsageError, match=r"^<evaluate>: scorer .*three cannot be called"):
        one(spec, "Paris")
