"""Pairwise comparison: pairing by test id, deltas, outcomes, summary."""

from __future__ import annotations

import numpy as np
import pytest

from evaldelta.errors import PairingError, UsageError
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.pairing._pairwise import classify, pair
from tests.conftest import FIXTURES


def run_of(scores: dict[str, float | list[float]], target: str | None = None) -> Run:
    recs = []
    for tid, s in scores.items():
        for v in s if isinstance(s, list) else [s]:
            recs.append(Record(tid, v, target=target))
    return Run.from_records(recs, source="mem")


def test_spec_example_numbers() -> None:
    # The first spec's table: 0.70->0.90 win, 0.85->0.80 tie, 0.90->0.75 loss, mean +0.000.
    c = pair(load(FIXTURES / "baseline.jsonl"), load(FIXTURES / "candidate.jsonl"))
    assert [(m.test_id, m.outcome) for m in c.matched()] == [
        ("safety-check", "win"),
        ("accuracy-test", "tie"),
        ("latency-eval", "loss"),
    ]
    s = c.summary
    assert (s.total, s.matched, s.wins, s.losses, s.ties) == (6, 3, 1, 1, 1)
    assert s.mean_delta == 0.0  # 1.1e-16 of float noise is zero
    assert c.status == "neutral"
    assert not c.regressed


@pytest.mark.parametrize(
    ("delta", "threshold", "outcome"),
    [
        (0.95 - 0.85, 0.1, "win"),  # 0.0999999... is a win at 0.1
        (0.85 - 0.95, 0.1, "loss"),
        (0.1 - 1e-6, 0.1, "tie"),
        (0.0, 0.0, "tie"),  # no change is never a win, even at threshold 0
        (1e-12, 0.0, "tie"),
        (0.01, 0.0, "win"),
        (-0.3, 0.5, "tie"),
    ],
)
def test_classify(delta: float, threshold: float, outcome: str) -> None:
    assert classify(delta, threshold) == outcome


def test_vectorised_classification_matches_scalar() -> None:
    rng = np.random.default_rng(0)
    base = rng.choice([0.0, 0.05, 0.1, 0.15, 0.85, 0.95, 1.0], size=500)
    cand = rng.choice([0.0, 0.05, 0.1, 0.15, 0.85, 0.95, 1.0], size=500)
    c = pair(
        run_of(dict(zip(map(str, range(500)), base, strict=True))),
        run_of(dict(zip(map(str, range(500)), cand, strict=True))),
        0.1,
    )
    assert [m.outcome for m in c.matched()] == [classify(d, 0.1) for d in (cand - base)]


def test_attempts_are_averaged_not_last_row() -> None:
    c = pair(run_of({"a": [1.0, 0.0, 1.0], "b": 0.5}), run_of({"a": 0.0, "b": [0.5, 1.0]}))
    (a, b) = c.matched()
    assert (a.score1, a.attempts1, a.score2, a.attempts2) == (pytest.approx(2 / 3), 3, 0.0, 1)
    assert (b.score2, b.attempts2) == (0.75, 2)
    assert c.max_attempts == 3


def test_unmatched_are_counted_and_named() -> None:
    c = pair(run_of({"a": 1, "b": 1, "only-base": 1}), run_of({"b": 0, "a": 1, "new": 1}))
    assert c.test_ids == ["a", "b"]  # baseline order
    assert c.unmatched_baseline == ["only-base"]
    assert c.unmatched_candidate == ["new"]
    d = c.to_dict()
    assert d["unmatched"] == {
        "file1": 1,
        "file2": 1,
        "file1_ids": ["only-base"],
        "file2_ids": ["new"],
    }
    assert d["summary"]["total"] == 6


def test_errors_count_and_score_zero() -> None:
    base = Run.from_records([Record("a", 0.0, error="timeout"), Record("b", 1)])
    cand = Run.from_records([Record("a", 1), Record("b", 1)])
    c = pair(base, cand)
    assert c.summary.errors1 == 1
    assert c.to_dict()["summary"]["errors"] == {"file1": 1, "file2": 0}
    assert c.to_dict()["matched"][0]["errors1"] == 1


def test_no_common_cases() -> None:
    c = pair(run_of({"a": 1}), run_of({"b": 1}))
    assert c.test_ids == []
    assert c.summary.mean_delta == 0.0


def test_to_dict_has_the_spec_fields() -> None:
    c = pair(run_of({"case-1": 0.7}), run_of({"case-1": 0.9}))
    d = c.to_dict()
    assert d["matched"] == [
        {
            "test_id": "case-1",
            "score1": 0.7,
            "score2": 0.9,
            "delta": 0.2,
            "outcome": "win",
            "attempts1": 1,
            "attempts2": 1,
            "errors1": 0,
            "errors2": 0,
        }
    ]
    assert d["unmatched"]["file1"] == 0
    assert d["unmatched"]["file2"] == 0
    assert {
        k: d["summary"][k] for k in ("total", "matched", "wins", "losses", "ties", "mean_delta")
    } == {"total": 2, "matched": 1, "wins": 1, "losses": 0, "ties": 0, "mean_delta": 0.2}


def test_targets_of_one_combined_run() -> None:
    run = Run.from_records(
        [Record("a", 0.5, target="x"), Record("a", 0.9, target="y"), Record("b", 1, target="x")]
    )
    c = pair(run, run, baseline_target="x", candidate_target="y")
    assert (c.baseline, c.candidate) == ("x", "y")
    assert c.unmatched_baseline == ["b"]
    with pytest.raises(
        PairingError, match=r"holds 2 targets \(x, y\); choose one to compare"
    ) as err:
        pair(run, run_of({"a": 1}))
    assert str(err.value).endswith(
        "choose one to compare (baseline_target=TARGET / candidate_target=TARGET)"
    )
    assert err.value.option == "baseline_target"


def test_negative_threshold_is_refused() -> None:
    with pytest.raises(UsageError, match=r"threshold must be a number >= 0, got -0\.1"):
        pair(run_of({"a": 1}), run_of({"a": 1}), -0.1)
    with pytest.raises(UsageError):
        pair(run_of({"a": 1}), run_of({"a": 1}), float("nan"))
