"""Tests of serve/_views.py: the dashboard's view models (``RunsView``, ``RunView``,
``CaseView``, ``AttemptView``), ``page_count``, ``text_of`` (how a text is shown, and
cut) and ``case_views`` (one page of a run's cases with their attempts)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from evaldelta.model import Run
from evaldelta.serve._summary import RunRow, RunSummary
from evaldelta.serve._views import (
    MAX_TEXT,
    AttemptView,
    CaseView,
    RunsView,
    RunView,
    case_views,
    page_count,
    text_of,
)
from evaldelta.store import StoredRun

# -- page_count ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "size", "pages"),
    [
        (0, 50, 1),  # an empty list is still one (empty) page
        (1, 50, 1),
        (49, 50, 1),
        (50, 50, 1),
        (51, 50, 2),
        (100, 50, 2),
        (101, 50, 3),
        (7, 1, 7),
        (0, 1, 1),
        (10_001, 100, 101),
    ],
)
def test_page_count(items: int, size: int, pages: int) -> None:
    assert page_count(items, size) == pages


# -- text_of -----------------------------------------------------------------------------------


def test_max_text() -> None:
    assert MAX_TEXT == 4_000


def test_text_of_none_is_none() -> None:
    assert text_of(None) is None


@pytest.mark.parametrize("text", ["", "Paris", "  spaced  ", "line 1\nline 2", "é ✓ 中文", '"q"'])
def test_text_of_a_string_is_the_string(text: str) -> None:
    assert text_of(text) == text


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (42, "42"),
        (0.5, "0.5"),
        (True, "true"),
        (False, "false"),
        ([], "[]"),
        ({}, "{}"),
        ([1, "a"], '[\n  1,\n  "a"\n]'),
        ({"b": {"c": None}}, '{\n  "b": {\n    "c": null\n  }\n}'),
        ({"city": "Zürich"}, '{\n  "city": "Zürich"\n}'),  # not escaped as \u00fc
        (float("nan"), "NaN"),
    ],
)
def test_text_of_other_values_is_json(value: Any, shown: str) -> None:
    assert text_of(value) == shown


def test_text_of_a_value_json_cannot_hold_is_its_text() -> None:
    # json's default=str: the value becomes a JSON string.
    assert text_of({"when": b"ab"}) == '{\n  "when": "b\'ab\'"\n}'


def test_text_of_a_value_that_refers_to_itself() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    assert text_of(loop) == "[1, [...]]"


def test_text_up_to_the_limit_is_whole() -> None:
    assert text_of("x" * 10, limit=10) == "x" * 10
    assert text_of("y" * MAX_TEXT) == "y" * MAX_TEXT


def test_a_longer_text_is_cut_saying_so() -> None:
    assert text_of("abcdefghijk", limit=10) == "abcdefghij\n… (cut: 11 characters in all)"
    assert text_of("z" * (MAX_TEXT + 1)) == "z" * MAX_TEXT + "\n… (cut: 4,001 characters in all)"
    assert text_of("w" * 1_234_567, limit=3) == "www\n… (cut: 1,234,567 characters in all)"


def test_json_is_cut_as_shown() -> None:
    # {"k": 1} is shown as 12 characters ('{\n  "k": 1\n}'); the cut counts those.
    assert text_of({"k": 1}, limit=3) == "{\n \n… (cut: 12 characters in all)"


# -- the view models ---------------------------------------------------------------------------


def _row(rid: int) -> RunRow:
    return RunRow(
        id=rid,
        name="nightly",
        label=f"nightly (run {rid})",
        when="2026-12-01 10:00",
        target="gpt-4.1",
        model=None,
        cases=3,
        attempts=9,
        status="complete",
        summary=RunSummary(0.5, 0.5, None),
    )


def test_runs_view_defaults() -> None:
    view = RunsView(rows=[_row(1)], matched=1, stored=5, page=1, pages=1, page_size=50)
    assert (view.name, view.target, view.sort, view.order, view.store) == (
        "",
        "",
        "id",
        "desc",
        "",
    )
    assert view.rows == [_row(1)]
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.page = 2  # type: ignore[misc]


def test_run_view() -> None:
    info = StoredRun(
        id=3,
        name="nightly",
        created_at="2026-12-01T10:00:00Z",
        started_at=None,
        finished_at=None,
        status="complete",
        format="jsonl",
        source="r.jsonl",
        dataset_hash="abc",
    )
    view = RunView(
        info=info,
        figures=[{"target": "m", "pass_rate": 0.5}],
        cases=[],
        case_count=0,
        page=1,
        pages=1,
        page_size=50,
        has_texts=False,
    )
    assert view.store == ""
    assert view.info.label == "nightly (run 3)"


def test_case_view_attempts_are_not_shared() -> None:
    first = CaseView("a", None, None, None)
    second = CaseView("b", None, None, None)
    assert first.attempts == []
    assert first.attempts is not second.attempts


# -- case_views --------------------------------------------------------------------------------


def two_target_run() -> Run:
    """Cases b, a, c (in order of first appearance), on targets x and y."""
    return Run.from_columns(
        source="s.jsonl",
        format="jsonl",
        test_id=["b", "a", "b", "a", "c"],
        score=[1.0, 0.25, 0.5, 0.75, 0.0],
        target=["x", "y", "x", "y", "x"],
        attempt=[1, 1, 2, 2, 1],
        latency_ms=[10.0, None, 30.0, 40.0, 50.0],
        cost_usd=[0.1, 0.2, None, 0.4, 0.5],
        category=["k", None, "k", None, "m"],
        passed=[None, None, None, False, None],
        errors={4: "raised ValueError: no"},
        error_kinds={4: "task"},
        safety_failure=[False, False, True, False, False],
        texts={
            "input": ["in b", "in a", "in b", "in a", "in c"],
            "expected": ["exp b", {"n": 1}, "exp b", {"n": 1}, None],
            "output": ["out 1", {"z": 1}, None, "out 4", "out 5"],
        },
    )


def attempt(**values: Any) -> AttemptView:
    fields: dict[str, Any] = {
        "attempt": 1,
        "target": None,
        "score": 1.0,
        "passed": True,
        "latency_ms": None,
        "cost_usd": None,
        "error": None,
        "error_kind": None,
        "safety_failure": False,
        "output": None,
    }
    fields.update(values)
    return AttemptView(**fields)


def test_case_views_of_a_whole_run() -> None:
    cases = case_views(two_target_run(), 0, 50)
    assert cases == [
        CaseView(
            test_id="b",
            category="k",
            input="in b",
            expected="exp b",
            attempts=[
                attempt(
                    attempt=1, target="x", score=1.0, latency_ms=10.0, cost_usd=0.1, output="out 1"
                ),
                attempt(attempt=2, target="x", score=0.5, latency_ms=30.0, safety_failure=True),
            ],
        ),
        CaseView(
            test_id="a",
            category=None,
            input="in a",
            expected='{\n  "n": 1\n}',
            attempts=[
                attempt(
                    attempt=1,
                    target="y",
                    score=0.25,
                    passed=False,
                    cost_usd=0.2,
                    output='{\n  "z": 1\n}',
                ),
                # Its passed flag wins over its score.
                attempt(
                    attempt=2,
                    target="y",
                    score=0.75,
                    passed=False,
                    latency_ms=40.0,
                    cost_usd=0.4,
                    output="out 4",
                ),
            ],
        ),
        CaseView(
            test_id="c",
            category="m",
            input="in c",
            expected=None,
            attempts=[
                attempt(
                    attempt=1,
                    target="x",
                    score=0.0,
                    passed=False,
                    latency_ms=50.0,
                    cost_usd=0.5,
                    error="raised ValueError: no",
                    error_kind="task",
                    output="out 5",
                ),
            ],
        ),
    ]


def test_case_views_page_through_the_cases() -> None:
    run = two_target_run()
    assert [c.test_id for c in case_views(run, 0, 2)] == ["b", "a"]
    assert [c.test_id for c in case_views(run, 2, 2)] == ["c"]
    assert [c.test_id for c in case_views(run, 1, 1)] == ["a"]
    assert [len(c.attempts) for c in case_views(run, 1, 1)] == [2]


@pytest.mark.parametrize(("first", "count"), [(3, 10), (100, 5), (0, 0)])
def test_case_views_past_the_end_or_of_none_are_empty(first: int, count: int) -> None:
    assert case_views(two_target_run(), first, count) == []


def test_case_views_pass_threshold() -> None:
    run = two_target_run()

    def passed(threshold: float) -> list[list[bool]]:
        return [[a.passed for a in c.attempts] for c in case_views(run, 0, 10, threshold)]

    assert passed(0.5) == [[True, True], [False, False], [False]]
    assert passed(0.25) == [[True, True], [True, False], [False]]
    assert passed(0.0) == [[True, True], [True, False], [True]]
    assert passed(1.0) == [[True, False], [False, False], [False]]


def test_one_target_is_not_named_on_each_attempt() -> None:
    run = Run.from_columns(
        source="s.jsonl",
        format="jsonl",
        test_id=["a", "a"],
        score=[1.0, 0.0],
        target=["gpt-4.1", "gpt-4.1"],
    )
    (case,) = case_views(run, 0, 10)
    assert [a.target for a in case.attempts] == [None, None]


def test_attempts_keep_the_runs_order() -> None:
    run = Run.from_columns(
        source="s.jsonl",
        format="jsonl",
        test_id=["a", "b", "a", "a"],
        score=[0.1, 0.2, 0.3, 0.4],
        attempt=[3, 1, 1, 2],
    )
    cases = case_views(run, 0, 10)
    assert [(c.test_id, [(a.attempt, a.score) for a in c.attempts]) for c in cases] == [
        ("a", [(3, 0.1), (1, 0.3), (2, 0.4)]),
        ("b", [(1, 0.2)]),
    ]


def test_a_run_without_texts_or_figures() -> None:
    run = Run.from_columns(source="s.jsonl", format="jsonl", test_id=["a"], score=[0.5])
    assert case_views(run, 0, 10) == [
        CaseView(
            test_id="a",
            category=None,
            input=None,
            expected=None,
            attempts=[attempt(attempt=1, score=0.5, passed=True)],
        )
    ]


def test_long_texts_are_cut() -> None:
    run = Run.from_columns(
        source="s.jsonl",
        format="jsonl",
        test_id=["a"],
        score=[1.0],
        texts={"input": ["q" * 5000], "output": ["o" * 4001]},
    )
    (case,) = case_views(run, 0, 1)
    assert case.input == "q" * MAX_TEXT + "\n… (cut: 5,000 characters in all)"
    assert case.attempts[0].output == "o" * MAX_TEXT + "\n… (cut: 4,001 characters in all)"
    assert case.expected is None


def test_attempt_figures_are_plain_floats_or_none() -> None:
    (case,) = case_views(two_target_run(), 2, 1)
    (only,) = case.attempts
    assert type(only.score) is float
    assert type(only.latency_ms) is float
    assert type(only.attempt) is int
    assert type(only.passed) is bool
    assert type(only.safety_failure) is bool
    assert only.latency_ms is not None
    assert not math.isnan(only.latency_ms)
