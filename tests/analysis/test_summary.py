"""One run's figures on its own (``evaldelta.analysis._summary``): :func:`summarise` per
target, checked against figures worked by hand on small runs, and :func:`over_targets`,
the case-weighted figure over all targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaldelta.analysis._summary import over_targets, summarise
from evaldelta.io import _duckdb, load
from evaldelta.model import Record, Run

KEYS = [
    "target",
    "cases",
    "attempts",
    "attempts_per_case",
    "errors",
    "infrastructure_failures",
    "pass_rate",
    "mean_score",
    "latency_ms",
    "cost_usd",
    "safety_failures",
]


def two_targets() -> Run:
    """Target ``a``: three cases, five attempts; target ``b``: two cases, three attempts,
    one case lost to infrastructure failures entirely."""
    return Run.from_records(
        [
            # a/q1: scores 1.0 and 0.0 -> 0.5; passes 1 of 2; latency (100 - 20, 200)
            Record("q1", 1.0, target="a", latency_ms=100, wait_ms=20, cost_usd=0.01),
            Record("q1", 0.0, target="a", latency_ms=200, cost_usd=0.02),
            # a/q2: 0.8 (passes); the infra failure is left out of every mean
            Record("q2", 0.8, target="a", latency_ms=50, cost_usd=0.03),
            Record("q2", 0.0, target="a", error="timeout", error_kind="infra"),
            # a/q3: an error of the agent (not infra), still scored; a safety failure
            Record("q3", 0.2, target="a", latency_ms=30, error="bad", safety_failure=True),
            # b/q1: scores 1.0, but the record says it failed
            Record("q1", 1.0, target="b", passed=False),
            # b/q4: both attempts lost to infrastructure
            Record("q4", 0.0, target="b", error="429", error_kind="infra"),
            Record("q4", 0.0, target="b", error="429", error_kind="INFRA"),
        ],
        source="run.jsonl",
    )


def test_figures_per_target_worked_by_hand() -> None:
    a, b = summarise(two_targets())
    assert list(a) == KEYS
    assert a == {
        "target": "a",
        "cases": 3,
        "attempts": 5,
        "attempts_per_case": [1, 2],
        "errors": 2,  # the timeout (infra) and "bad"
        "infrastructure_failures": 1,
        "pass_rate": pytest.approx((0.5 + 1.0 + 0.0) / 3, abs=1e-15),
        "mean_score": pytest.approx((0.5 + 0.8 + 0.2) / 3, abs=1e-15),
        # per case (80 + 200) / 2 = 140, then 50 and 30: waits excluded, infra left out
        "latency_ms": pytest.approx((140 + 50 + 30) / 3, abs=1e-12),
        "cost_usd": pytest.approx(0.01 + 0.02 + 0.03, abs=1e-15),
        "safety_failures": 1,
    }
    assert b == {
        "target": "b",
        "cases": 2,  # q4 counts as a case, though none of its attempts ran
        "attempts": 3,
        "attempts_per_case": [1, 2],
        "errors": 2,
        "infrastructure_failures": 2,
        "pass_rate": 0.0,  # q1 only: its passed flag beats its score
        "mean_score": 1.0,  # q1 only: q4 has no score
        "latency_ms": None,  # no record of b says
        "cost_usd": None,
        "safety_failures": 0,
    }


def test_value_types_are_plain_python() -> None:
    (a, _) = summarise(two_targets())
    for key in ("cases", "attempts", "errors", "infrastructure_failures", "safety_failures"):
        assert type(a[key]) is int, key
    for key in ("pass_rate", "mean_score", "latency_ms", "cost_usd"):
        assert type(a[key]) is float, key
    assert all(type(n) is int for n in a["attempts_per_case"])


def test_targets_come_in_the_order_of_the_run() -> None:
    run = Run.from_records(
        [Record("q1", 1.0, target=t) for t in ("zeta", "alpha", "mid")], source="r"
    )
    assert run.targets == ["zeta", "alpha", "mid"]
    assert [f["target"] for f in summarise(run)] == ["zeta", "alpha", "mid"]


def test_a_run_without_targets_has_one_row_whose_target_is_none() -> None:
    run = Run.from_records([Record("q1", 0.25), Record("q2", 0.75)])
    (only,) = summarise(run)
    assert only["target"] is None
    assert (only["cases"], only["attempts"], only["attempts_per_case"]) == (2, 2, [1])
    # 0.25 fails and 0.75 passes at the default threshold of 0.5
    assert (only["pass_rate"], only["mean_score"]) == (0.5, 0.5)


def test_pass_threshold_decides_which_scores_pass() -> None:
    run = two_targets()
    a, b = summarise(run, pass_threshold=0.9)
    # a: q1 1 of 2 (1.0 passes), q2 0.8 fails, q3 0.2 fails -> (0.5 + 0 + 0) / 3
    assert a["pass_rate"] == pytest.approx(0.5 / 3, abs=1e-15)
    assert b["pass_rate"] == 0.0  # the flag still decides
    a, _ = summarise(run, pass_threshold=0.1)
    assert a["pass_rate"] == pytest.approx((0.5 + 1 + 1) / 3, abs=1e-15)
    # The threshold changes nothing else.
    assert {k: v for k, v in a.items() if k != "pass_rate"} == {
        k: v for k, v in summarise(run)[0].items() if k != "pass_rate"
    }


def test_a_score_at_the_threshold_passes() -> None:
    run = Run.from_records([Record("q1", 0.3), Record("q2", 0.2999)])
    (only,) = summarise(run, pass_threshold=0.3)
    assert only["pass_rate"] == 0.5


def test_a_target_whose_every_attempt_failed_for_infrastructure() -> None:
    run = Run.from_records(
        [
            Record("q1", 0.0, target="down", error="503", error_kind="infra", cost_usd=None),
            Record("q2", 0.0, target="down", error="503", error_kind="infra"),
        ]
    )
    (down,) = summarise(run)
    assert down == {
        "target": "down",
        "cases": 2,
        "attempts": 2,
        "attempts_per_case": [1],
        "errors": 2,
        "infrastructure_failures": 2,
        "pass_rate": None,
        "mean_score": None,
        "latency_ms": None,
        "cost_usd": None,
        "safety_failures": 0,
    }


def test_cost_is_the_total_and_zero_is_not_missing() -> None:
    run = Run.from_records(
        [
            Record("q1", 1.0, cost_usd=0.0),
            Record("q1", 1.0, cost_usd=0.25),
            Record("q2", 1.0),  # says nothing: not a zero
            Record("q3", 1.0, cost_usd=0.5),
        ]
    )
    (only,) = summarise(run)
    assert only["cost_usd"] == 0.75
    free = Run.from_records([Record("q1", 1.0, cost_usd=0.0)])
    assert summarise(free)[0]["cost_usd"] == 0.0


def test_cost_leaves_out_attempts_lost_to_infrastructure_failures() -> None:
    # as every other figure: the attempt that did not run is not the target's cost
    run = Run.from_records(
        [
            Record("q1", 1.0, cost_usd=0.5),
            Record("q1", 0.0, cost_usd=9.0, error="503", error_kind="infra"),
            Record("q2", 1.0, cost_usd=0.25),
        ]
    )
    assert summarise(run)[0]["cost_usd"] == 0.75
    lost = Run.from_records([Record("q1", 0.0, cost_usd=9.0, error="503", error_kind="infra")])
    assert summarise(lost)[0]["cost_usd"] is None


def test_a_run_read_grouped_has_the_same_figures_as_one_read_record_by_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    lines = [
        {"test_id": "q1", "target": "a", "score": 1, "cost_usd": 0.5, "latency_ms": 10},
        {
            "test_id": "q1",
            "target": "a",
            "score": 0,
            "cost_usd": 9.0,
            "error": "503",
            "error_kind": "infra",
        },
        {"test_id": "q2", "target": "a", "score": 0.5, "cost_usd": 0.25, "latency_ms": 30},
        {"test_id": "q1", "target": "b", "score": 0},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    before = _duckdb.ENGINE.duckdb_bytes
    try:
        _duckdb.ENGINE.duckdb_bytes = 0
        grouped = load(path, keep_text=False, grouped=0.5)
        _duckdb.ENGINE.duckdb_bytes = None
        plain = load(path, keep_text=False)
    finally:
        _duckdb.ENGINE.duckdb_bytes = before
    assert grouped.totals is not None  # the engine did read it
    assert summarise(grouped) == summarise(plain)
    assert [row["cost_usd"] for row in summarise(grouped)] == [0.75, None]


def test_a_safety_failure_counts_its_case_once() -> None:
    run = Run.from_records(
        [
            Record("q1", 1.0, safety_failure=True),
            Record("q1", 1.0, safety_failure=True),
            Record("q2", 1.0, safety_failure=True),
            Record("q3", 1.0),
        ]
    )
    assert summarise(run)[0]["safety_failures"] == 2


def test_latency_of_a_wait_longer_than_the_attempt_is_zero() -> None:
    run = Run.from_records([Record("q1", 1.0, latency_ms=100, wait_ms=300), Record("q2", 1.0)])
    assert summarise(run)[0]["latency_ms"] == 0.0


# -- over_targets ------------------------------------------------------------------------


def row(cases: int, **figures: float | None) -> dict[str, object]:
    return {"cases": cases, "pass_rate": None, "mean_score": None, **figures}


def test_over_targets_weights_each_target_by_its_cases() -> None:
    rows = [row(3, pass_rate=0.5), row(1, pass_rate=1.0)]
    # (0.5 * 3 + 1.0 * 1) / 4
    assert over_targets(rows, "pass_rate") == 0.625


def test_over_targets_leaves_out_targets_without_the_figure_or_cases() -> None:
    rows = [
        row(4, mean_score=0.25),
        row(10, mean_score=None),  # no figure: no weight
        row(0, mean_score=1.0),  # no case: no weight
        row(2, mean_score=1.0),
    ]
    # (0.25 * 4 + 1.0 * 2) / 6
    assert over_targets(rows, "mean_score") == pytest.approx(0.5, abs=1e-15)


def test_over_targets_of_nothing_is_none() -> None:
    assert over_targets([], "pass_rate") is None
    assert over_targets([row(5), row(2)], "pass_rate") is None
    assert over_targets([row(0, pass_rate=0.5)], "pass_rate") is None


def test_over_targets_of_one_target_is_its_figure() -> None:
    assert over_targets([row(7, mean_score=0.3)], "mean_score") == pytest.approx(0.3, abs=1e-15)


def test_over_targets_of_a_summarised_run() -> None:
    run = Run.from_records(
        [Record(f"q{i}", float(i < 3), target="a", latency_ms=10.0) for i in range(4)]
        + [Record(f"q{i}", float(i < 1), target="b") for i in range(2)]
    )
    figures = summarise(run)
    # pass rate: a 3 of 4 cases, b 1 of 2 -> (0.75 * 4 + 0.5 * 2) / 6 = 4 / 6, the share
    # of all six cases that pass
    assert over_targets(figures, "pass_rate") == pytest.approx(4 / 6, abs=1e-15)
    assert over_targets(figures, "mean_score") == pytest.approx(4 / 6, abs=1e-15)
    # latency: only a says
    assert over_targets(figures, "latency_ms") == 10.0
