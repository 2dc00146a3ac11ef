"""``evaldelta power`` end to end."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Result, write_jsonl

Cli = Callable[..., Result]


def test_cases_needed(evaldelta: Cli) -> None:
    r = evaldelta("power", "--baseline-rate", "0.80", "--effect", "0.03")
    assert r.code == 0, r.err
    assert r.out.startswith(
        "To detect +3.0 points (80.0% -> 83.0%) at alpha 0.05 with power 0.8: 2,626 cases."
    )
    assert "      +3p         2,626" in r.out
    data = json.loads(
        evaldelta("power", "--baseline-rate", "0.8", "--effect", "0.03", "--json").out
    )
    assert data["cases_needed"]["cases"] == 2626
    assert [row["effect"] for row in data["table"]] == [0.01, 0.02, 0.03, 0.05, 0.1]


def test_a_drop_and_correlation(evaldelta: Cli) -> None:
    drop = json.loads(
        evaldelta("power", "--baseline-rate", "0.8", "--effect", "-0.05", "--json").out
    )
    correlated = json.loads(
        evaldelta(
            "power", "--baseline-rate", "0.8", "--effect", "-0.05", "--correlation", "0.5", "--json"
        ).out
    )
    assert correlated["cases_needed"]["cases"] < drop["cases_needed"]["cases"]
    assert all(row["effect"] < 0 for row in drop["table"])


def test_minimum_detectable_effect(evaldelta: Cli) -> None:
    r = evaldelta("power", "--baseline-rate", "0.80", "--cases", "2626")
    assert r.code == 0
    assert r.out.startswith(
        "With 2,626 cases, the smallest change detectable at alpha 0.05 with power 0.8 is +3.0"
    )


def test_from_two_runs(evaldelta: Cli, tmp_path: Path) -> None:
    base = write_jsonl(
        tmp_path / "b.jsonl", [{"test_id": f"q{i}", "score": (i % 3) / 2} for i in range(60)]
    )
    cand = write_jsonl(
        tmp_path / "c.jsonl", [{"test_id": f"q{i}", "score": ((i + 1) % 3) / 2} for i in range(60)]
    )
    r = evaldelta("power", base, cand)
    assert r.code == 0, r.err
    assert r.out.startswith("From 60 common cases: score variance")
    assert "smallest detectable change in mean score is" in r.out


def test_bad_values(evaldelta: Cli) -> None:
    r = evaldelta("power", "--baseline-rate", "1.2", "--effect", "0.03")
    assert r.code == 2
    assert r.err.startswith("evaldelta: error: baseline_rate must be")
    r = evaldelta("power", "--effect", "0.03")
    assert (r.code, "give --baseline-rate P" in r.err) == (2, True)
    r = evaldelta("power", "--baseline-rate", "0.8", "--effect", "0.03", "--cases", "10")
    assert (r.code, "not both" in r.err) == (2, True)


def test_runs_without_variance_say_the_correlation_is_unknown(
    evaldelta: Cli, tmp_path: Path
) -> None:
    flat = write_jsonl(
        tmp_path / "flat.jsonl", [{"test_id": f"q{i}", "score": 0.5} for i in range(30)]
    )
    varied = write_jsonl(
        tmp_path / "varied.jsonl",
        [{"test_id": f"q{i}", "score": 0.5 if i % 2 else 0.6} for i in range(30)],
    )
    r = evaldelta("power", flat, varied)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert "correlation unknown" in lines[0]
    assert lines[1] == (
        "Note: the correlation cannot be estimated: the baseline's scores do not vary; taken as 0."
    )
    data = json.loads(evaldelta("power", flat, varied, "--format", "json").out)
    assert data["correlation"] is None
    assert data["notes"] == [
        "the correlation cannot be estimated: the baseline's scores do not vary; taken as 0"
    ]
    # A file with itself: the differences do not vary, so no +0.0000 detectable change.
    same = evaldelta("power", varied, varied)
    assert "correlation 1.00, taken as 0" in same.out
    assert "+0.0000" not in same.out
    assert "the per-case differences do not vary" in same.out
    # Nothing varies anywhere: nothing to plan from, said in one line.
    none = evaldelta("power", flat, flat)
    assert none.code == 2
    assert none.err.strip() == (
        "evaldelta: error: the scores do not vary in either run (30 common cases), so they "
        "say nothing about how large a change could be seen; give --baseline-rate and "
        "--effect instead"
    )
