"""N-way matrix: order of rows and columns, missing cells, pairwise summaries."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest

from evaldelta.errors import InputError, PairingError, UsageError
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.pairing._matrix import build_matrix as compare_matrix
from tests.conftest import FIXTURES

Jsonl = Callable[..., Path]

COMBINED = FIXTURES / "combined-results.jsonl"
TARGETS = ["gemini-3-flash-preview", "gpt-4.1", "gpt-5-mini"]


def test_matrix_of_the_spec_fixture() -> None:
    m = compare_matrix(load(COMBINED))
    assert m.targets == TARGETS
    assert m.test_ids == ["greeting", "code-generation", "summarization"]
    assert m.scores.tolist() == [[0.9, 0.85, 0.95], [0.7, 0.8, 0.75], [0.85, 0.9, 0.8]]
    assert [(p.baseline, p.candidate) for p in m.pairwise] == [
        (TARGETS[0], TARGETS[1]),
        (TARGETS[0], TARGETS[2]),
        (TARGETS[1], TARGETS[2]),
    ]
    means = [round(p.summary.mean_delta, 3) for p in m.pairwise]
    assert means == [0.033, 0.017, -0.017]  # the spec's deltas
    assert m.regressions == []


def test_baseline_compares_against_each_other_target() -> None:
    m = compare_matrix(load(COMBINED), baseline="gpt-4.1")
    assert [(p.baseline, p.candidate) for p in m.pairwise] == [
        ("gpt-4.1", "gemini-3-flash-preview"),
        ("gpt-4.1", "gpt-5-mini"),
    ]
    assert [p.candidate for p in m.regressions] == ["gemini-3-flash-preview", "gpt-5-mini"]


def test_targets_pick_and_order_columns() -> None:
    m = compare_matrix(load(COMBINED), targets=["gpt-5-mini", "gpt-4.1"])
    assert m.targets == ["gpt-5-mini", "gpt-4.1"]
    assert m.scores[:, 0].tolist() == [0.95, 0.75, 0.8]
    assert len(m.pairwise) == 1
    with pytest.raises(PairingError, match="no records for target 'claude'"):
        compare_matrix(load(COMBINED), targets=["gpt-4.1", "claude"])
    with pytest.raises(UsageError, match=r"target listed more than once: gpt-4\.1"):
        compare_matrix(load(COMBINED), targets=["gpt-4.1", "gpt-4.1"])
    with pytest.raises(
        PairingError, match=r"baseline 'gemini-3-flash-preview' is not among"
    ) as err:
        compare_matrix(
            load(COMBINED), targets=["gpt-4.1", "gpt-5-mini"], baseline="gemini-3-flash-preview"
        )
    assert str(err.value).endswith("(gpt-4.1, gpt-5-mini); add it to targets")
    assert err.value.option == "targets"


def test_missing_cells_and_attempts() -> None:
    run = Run.from_records(
        [
            Record("t2", 1.0, target="b"),
            Record("t1", 0.5, target="a"),
            Record("t1", 1.0, target="a"),
            Record("t1", 0.0, target="b"),
        ]
    )
    m = compare_matrix(run)
    assert m.targets == ["b", "a"]
    assert m.test_ids == ["t2", "t1"]
    assert math.isnan(m.scores[0, 1])
    assert m.attempts.tolist() == [[1, 0], [1, 2]]
    d = m.to_dict()
    assert d["matrix"][0] == {"test_id": "t2", "scores": {"b": 1.0}, "attempts": {"b": 1}}
    assert d["matrix"][1]["scores"] == {"b": 0.0, "a": 0.75}
    assert m.pairwise[0].unmatched_baseline == ["t2"]


def test_rows_follow_selected_targets() -> None:
    run = Run.from_records(
        [Record("only-c", 1, target="c"), Record("x", 1, target="a"), Record("x", 1, target="b")]
    )
    assert compare_matrix(run, targets=["a", "b"]).test_ids == ["x"]


def test_record_without_target_is_refused(jsonl: Jsonl) -> None:
    path = jsonl(
        "r.jsonl", [{"test_id": "a", "target": "x", "score": 1}, {"test_id": "a", "score": 1}]
    )
    with pytest.raises(
        InputError, match=r'r.jsonl:2: record has no "target"; comparing the targets'
    ):
        compare_matrix(load(path))
