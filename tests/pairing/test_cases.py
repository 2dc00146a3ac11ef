"""Cases: the attempts of one test id by one target, averaged."""

from __future__ import annotations

import numpy as np
import pytest

from evaldelta.errors import PairingError
from evaldelta.model import Record, Run
from evaldelta.pairing._cases import case_matrix, cases


def test_case_matrix_means_attempts_and_counts_errors() -> None:
    run = Run.from_records(
        [
            Record("q2", 1.0, target="b"),
            Record("q1", 0.0, target="a", error="timeout"),
            Record("q1", 1.0, target="a"),
            Record("q1", 0.5, target="b"),
        ]
    )
    grid = case_matrix(run, [run.target_code("a"), run.target_code("b")])
    assert grid.targets == ["a", "b"]
    assert grid.test_ids == ["q2", "q1"]  # first appearance among the chosen targets
    assert np.isnan(grid.score[0, 0])
    assert grid.score[1].tolist() == [0.5, 0.5]
    assert grid.attempts.tolist() == [[0, 1], [2, 1]]
    assert grid.errors.tolist() == [[0, 0], [1, 0]]
    assert grid.present.tolist() == [[False, True], [True, True]]


def test_cases_of_one_target() -> None:
    run = Run.from_records([Record("q", 1, target="a"), Record("q", 0, target="b")])
    a = cases(run, "a")
    assert (a.test_ids, a.score.tolist(), a.records) == (["q"], [1.0], 1)
    with pytest.raises(PairingError, match="holds 2 targets"):
        cases(run)


def test_cases_of_a_run_without_targets() -> None:
    run = Run.from_records([Record("q", 1), Record("q", 0), Record("r", 1)])
    c = cases(run)
    assert c.target is None
    assert c.score.tolist() == [0.5, 1.0]
    assert c.attempts.tolist() == [2, 1]
