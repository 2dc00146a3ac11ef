"""The common model: records in, columns inside, records out."""

from __future__ import annotations

import numpy as np
import pytest

from evaldelta.errors import PairingError
from evaldelta.model import Record, Run, occurrence_rank


def test_records_round_trip() -> None:
    recs = [
        Record(
            "a",
            1.0,
            target="x",
            scores={"exact": 1.0},
            passed=True,
            latency_ms=12.5,
            category="math",
            tags=("t",),
            input="q",
            output="o",
            expected="e",
            metadata={"k": 1},
            error=None,
            safety_failure=True,
            wait_ms=2.0,
            input_tokens=3,
            output_tokens=4,
            cost_usd=0.1,
        ),
        Record("b", 0.0, target="y", error="boom", error_kind="infra", passed=False),
    ]
    run = Run.from_records(recs)
    assert run.records() == [
        recs[0],
        Record("b", 0.0, target="y", error="boom", error_kind="infra", passed=False),
    ]
    assert len(run) == 2
    assert run.target_names == ["x", "y"]
    assert run.scorers == ["exact"]
    assert run[-1].test_id == "b"
    with pytest.raises(IndexError):
        run.record(2)


def test_select_target_renumbers() -> None:
    run = Run.from_records(
        [
            Record("a", 1, target="x", category="c1"),
            Record("b", 0.5, target="y", category="c2"),
            Record("c", 0.25, target="y"),
        ]
    )
    sub = run.select_target("y")
    assert [r.test_id for r in sub] == ["b", "c"]
    assert sub.test_ids == ["b", "c"]
    assert sub.categories == ["c2"]
    assert [r.category for r in sub] == ["c2", None]
    with pytest.raises(PairingError, match=r"no records for target 'z' \(targets present: x, y\)"):
        run.select_target("z")


def test_occurrence_rank() -> None:
    assert occurrence_rank(np.array([7, 3, 7, 7, 3])).tolist() == [1, 1, 2, 3, 2]
    assert occurrence_rank(np.array([], dtype=np.int64)).tolist() == []


def test_an_unknown_target_names_the_targets_present() -> None:
    run = Run.from_records([Record("a", 1, target="x"), Record("a", 0, target="y")], source="m")
    with pytest.raises(PairingError) as err:
        run.target_code("z")
    assert str(err.value) == (
        "m: no records for target 'z' (targets present: x, y); check the name"
    )
    assert err.value.option == "target"
