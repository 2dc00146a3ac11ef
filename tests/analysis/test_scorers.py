"""Per-scorer deltas (``evaldelta.compare_runs``'s figures), against hand-worked cases."""

from __future__ import annotations

import json
import math

import pytest

from evaldelta.analysis._scorers import (
    CaseDiff,
    CostDelta,
    RunComparison,
    ScoreDelta,
    ScorerRegression,
    ScorerSummary,
    compare_scorers,
)
from evaldelta.errors import PairingError, UsageError
from evaldelta.model import Record, Run
from evaldelta.pairing import compare_cases
from evaldelta.pairing._cases import cases


def _compare(base: Run, cand: Run, *args: float, **kwargs: object) -> RunComparison:
    paired = compare_cases(cases(base, label="baseline"), cases(cand, label="candidate"), 0.0)
    return compare_scorers(paired, *args, **kwargs)


def _run(rows: list[tuple[str, dict[str, float]]], **fields: object) -> Run:
    return Run.from_records(Record(tid, 0.5, scores=scores, **fields) for tid, scores in rows)


# The spec's example, worked by hand: 20 cases, scorers "exact" and "factual".
#   exact:   case00 0.80 -> 0.90 (+0.10), case01-07 0.50 -> 0.65 (+0.15 each),
#            case08-09 0.70 -> 0.625 (-0.075 each), case10-19 0.60 -> 0.60.
#            Sum 0.10 + 1.05 - 0.15 = 1.00, mean +0.05; 8 improved, 2 regressed, 10 same.
#   factual: case00 1.00 -> 0.85 (-0.15), case01-09 0.90 -> 0.75 (-0.15 each),
#            case10 0.80 -> 0.70 (-0.10), case11-19 0.50 -> 0.50.
#            Sum -0.15 - 1.35 - 0.10 = -1.60, mean -0.08; 11 regressed, 9 the same.
#   Regression at 0.05: exact +0.05 does not exceed; factual -0.08 < -0.05 does.
SPEC = {
    **{"case00": ((0.80, 0.90), (1.00, 0.85))},
    **{f"case{i:02d}": ((0.50, 0.65), (0.90, 0.75)) for i in range(1, 8)},
    **{f"case{i:02d}": ((0.70, 0.625), (0.90, 0.75)) for i in (8, 9)},
    "case10": ((0.60, 0.60), (0.80, 0.70)),
    **{f"case{i:02d}": ((0.60, 0.60), (0.50, 0.50)) for i in range(11, 20)},
}


def _spec_runs() -> tuple[Run, Run]:
    base = Run.from_records(
        Record(
            tid,
            0.5,
            scores={"exact": e[0], "factual": f[0]},
            latency_ms=1000.0,
            input_tokens=100.0,
            output_tokens=50.0,
            cost_usd=0.002,
        )
        for tid, (e, f) in SPEC.items()
    )
    # The candidate lists its cases in the opposite order: they pair by test id.
    cand = Run.from_records(
        Record(
            tid,
            0.5,
            scores={"exact": e[1], "factual": f[1]},
            latency_ms=850.0,
            input_tokens=120.0,
            output_tokens=40.0,
            cost_usd=0.003,
        )
        for tid, (e, f) in reversed(SPEC.items())
    )
    return base, cand


def test_the_spec_example_by_hand() -> None:
    result = _compare(*_spec_runs())
    assert result.total_cases_compared == 20
    assert result.scorers == ["exact", "factual"]
    assert result.case_diffs[0] == CaseDiff(
        "case00",
        {
            "exact": ScoreDelta(0.8, 0.9, pytest.approx(0.1), "improved"),
            "factual": ScoreDelta(1.0, 0.85, pytest.approx(-0.15), "regressed"),
        },
    )
    assert [d.test_id for d in result.case_diffs] == list(SPEC)
    exact, factual = result.scorer_summaries["exact"], result.scorer_summaries["factual"]
    assert exact.mean_delta == pytest.approx(0.05)
    assert (exact.improved_count, exact.regressed_count, exact.unchanged_count) == (8, 2, 10)
    assert factual.mean_delta == pytest.approx(-0.08)
    assert (factual.improved_count, factual.regressed_count, factual.unchanged_count) == (0, 11, 9)
    assert result.regression.regressed is True
    assert result.regression.details["exact"].exceeds is False
    assert result.regression.details["factual"] == ScorerRegression(
        pytest.approx(-0.08),
        True,
    )
    assert result.regression.scorers == ["factual"]
    assert result.cost_delta == CostDelta(
        latency_delta_ms=-150.0,
        token_in_delta=20.0,
        token_out_delta=-10.0,
        cost_delta_usd=pytest.approx(0.001),
    )
    assert (result.only_in_baseline, result.only_in_candidate, result.warnings) == ([], [], [])


def test_to_dict_is_the_spec_shape_in_snake_case() -> None:
    d = json.loads(json.dumps(_compare(*_spec_runs()).to_dict()))
    assert d["case_diffs"][0] == {
        "test_id": "case00",
        "scorer_deltas": {
            "exact": {"baseline": 0.8, "candidate": 0.9, "delta": 0.1, "change": "improved"},
            "factual": {"baseline": 1.0, "candidate": 0.85, "delta": -0.15, "change": "regressed"},
        },
    }
    assert d["scorer_summaries"]["exact"] == {
        "mean_delta": 0.05,
        "improved_count": 8,
        "regressed_count": 2,
        "unchanged_count": 10,
    }
    assert d["cost_delta"] == {
        "latency_delta_ms": -150.0,
        "token_in_delta": 20.0,
        "token_out_delta": -10.0,
        "cost_delta_usd": 0.001,
    }
    assert d["total_cases_compared"] == 20
    assert d["regression"] == {
        "regressed": True,
        "details": {
            "exact": {"mean_delta": 0.05, "exceeds": False},
            "factual": {"mean_delta": -0.08, "exceeds": True},
        },
    }
    assert set(d) >= {"only_in_baseline", "only_in_candidate", "not_run", "warnings"}


def test_case_diffs_are_built_only_when_asked_for() -> None:
    result = _compare(*_spec_runs())
    assert "case_diffs" not in vars(result)
    assert len(result.case_diffs) == 20
    assert result.case_diffs is result.case_diffs  # built once


@pytest.mark.parametrize(
    ("candidate", "change"),
    [
        (0.81, "unchanged"),  # 0.81 - 0.80 computes to 0.010000000000000009
        (0.79, "unchanged"),  # -0.010000000000000009
        (0.8101, "improved"),
        (0.7899, "regressed"),
        (0.80, "unchanged"),
    ],
)
def test_a_delta_of_exactly_the_tolerance_is_unchanged(candidate: float, change: str) -> None:
    result = _compare(_run([("a", {"s": 0.80})]), _run([("a", {"s": candidate})]), 0.01)
    assert result.case_diffs[0].scorer_deltas["s"].change == change


def test_a_tolerance_of_zero_counts_every_change() -> None:
    base = _run([("a", {"s": 0.5}), ("b", {"s": 0.5})])
    cand = _run([("a", {"s": 0.5}), ("b", {"s": 0.51})])
    summary = _compare(base, cand, 0.0).scorer_summaries["s"]
    assert (summary.improved_count, summary.unchanged_count) == (1, 1)


@pytest.mark.parametrize(
    ("candidate", "exceeds"),
    [
        (0.7, False),  # 0.7 - 0.75 computes to -0.050000000000000044: exactly the threshold
        (0.6999, True),
        (0.75, False),
    ],
)
def test_a_mean_drop_of_exactly_the_threshold_is_no_regression(
    candidate: float, exceeds: bool
) -> None:
    result = _compare(_run([("a", {"s": 0.75})]), _run([("a", {"s": candidate})]), 0.01, 0.05)
    assert result.regression.details["s"].exceeds is exceeds
    assert result.regression.regressed is exceeds


def test_mismatched_datasets_compare_the_common_cases() -> None:
    """The spec's numbers: 80 cases compared out of 100 in the baseline and 90 in the
    candidate; the others are listed, and a warning says so."""
    base = _run([(f"t{i:03d}", {"s": 0.5}) for i in range(100)])
    cand = _run([(f"t{i:03d}", {"s": 0.6}) for i in range(20, 110)])
    result = _compare(base, cand)
    assert result.total_cases_compared == 80
    assert result.only_in_baseline == [f"t{i:03d}" for i in range(20)]
    assert result.only_in_candidate == [f"t{i:03d}" for i in range(100, 110)]
    assert result.scorer_summaries["s"] == ScorerSummary(pytest.approx(0.1), 80, 0, 0)
    assert result.warnings == [
        "the runs hold different cases (20 only in the baseline, 10 only in the candidate): "
        "only the 80 cases in both are compared, which may mislead; compare runs of the "
        "same dataset"
    ]


def test_runs_without_named_scorers_compare_their_overall_score() -> None:
    base = Run.from_records([Record("a", 0.5), Record("b", 0.9)])
    cand = Run.from_records([Record("a", 0.75), Record("b", 0.9)])
    result = _compare(base, cand)
    assert result.scorers == ["score"]
    assert result.scorer_summaries["score"] == ScorerSummary(0.125, 1, 0, 1)
    assert result.cost_delta == CostDelta(None, None, None, None)
    assert result.to_dict()["cost_delta"]["latency_delta_ms"] is None


def test_attempts_are_averaged_per_case_first() -> None:
    base = Run.from_records([Record("a", 0, scores={"s": 0.2}), Record("a", 0, scores={"s": 0.4})])
    cand = Run.from_records([Record("a", 0, scores={"s": 0.6})])
    (diff,) = _compare(base, cand).case_diffs
    assert diff.scorer_deltas["s"].baseline == pytest.approx(0.3)
    assert diff.scorer_deltas["s"].delta == pytest.approx(0.3)


def test_a_scorer_missing_on_a_case_leaves_that_case_out_for_it() -> None:
    base = _run([("a", {"s": 0.5, "t": 0.5}), ("b", {"s": 0.5, "t": 0.5})])
    cand = _run([("a", {"s": 0.7, "t": 0.5}), ("b", {"s": 0.7})])
    result = _compare(base, cand)
    assert result.scorer_summaries["t"] == ScorerSummary(0.0, 0, 0, 1)
    assert list(result.case_diffs[1].scorer_deltas) == ["s"]


def test_only_the_scorers_both_runs_have() -> None:
    base = _run([("a", {"s": 0.5, "only_base": 1.0})])
    cand = _run([("a", {"s": 0.6, "only_cand": 1.0})])
    assert _compare(base, cand).scorers == ["s"]


def test_no_scorer_in_common_is_an_error() -> None:
    base = _run([("a", {"exact": 0.5})])
    cand = Run.from_records([Record("a", 0.5)])
    with pytest.raises(PairingError) as err:
        _compare(base, cand)
    assert str(err.value) == (
        "baseline and candidate share no scorer (baseline: exact; candidate: score); compare "
        "runs scored by the same scorers, or compare their overall scores with "
        "evaldelta.compare()"
    )


def test_no_case_in_common_is_an_error() -> None:
    with pytest.raises(PairingError) as err:
        _compare(_run([("a", {"s": 0.5})]), _run([("b", {"s": 0.5}), ("c", {"s": 0.5})]))
    assert str(err.value) == (
        "baseline and candidate have no case in common that ran on both sides (1 and 2 "
        "cases); compare runs of the same dataset"
    )


def test_cases_lost_to_infrastructure_failures_are_left_out() -> None:
    base = _run([("a", {"s": 0.5}), ("b", {"s": 0.5})])
    cand = Run.from_records(
        [
            Record("a", 0.9, scores={"s": 0.9}),
            Record("b", 0.0, error="rate limited", error_kind="infra"),
        ]
    )
    result = _compare(base, cand)
    assert (result.total_cases_compared, result.not_run) == (1, ["b"])
    assert result.warnings == [
        "1 cases in both runs failed to run on one side (infrastructure failures) and are left out"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-0.01, 0.05), "tolerance must be a number >= 0 (e.g. 0.05), got -0.01"),
        ((math.nan, 0.05), "tolerance must be a number >= 0 (e.g. 0.05), got nan"),
        ((0.01, math.inf), "regression_threshold must be a number >= 0 (e.g. 0.05), got inf"),
        ((0.01, "0.05"), "regression_threshold must be a number >= 0 (e.g. 0.05), got '0.05'"),
        ((True, 0.05), "tolerance must be a number >= 0 (e.g. 0.05), got True"),
    ],
)
def test_bad_options(args: tuple[float, float], message: str) -> None:
    with pytest.raises(UsageError) as err:
        _compare(*_spec_runs(), *args)
    assert str(err.value) == message


def test_chosen_scorers() -> None:
    result = _compare(*_spec_runs(), scorers=["factual"])
    assert list(result.scorer_summaries) == ["factual"]
    with pytest.raises(PairingError) as err:
        _compare(*_spec_runs(), scorers=["judge"])
    assert str(err.value) == "baseline: no scorer named 'judge' (scorers present: exact, factual)"
