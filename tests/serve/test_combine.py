"""Stored runs as one combined run for the matrix: each run a target, nothing lost."""

from __future__ import annotations

import math

import pytest

from evaldelta.api import compare, compare_matrix
from evaldelta.errors import PairingError
from evaldelta.model import Record, Run
from evaldelta.serve._combine import combine_runs
from tests.serve.stores import make_run
from tests.store.conftest import synthetic_run


def test_each_run_becomes_a_target() -> None:
    runs = [make_run(0.5, seed=1), make_run(0.9, seed=2), make_run(0.2, seed=3)]
    combined = combine_runs(runs, ["a (run 1)", "b (run 2)", "c (run 3)"], source="runs 1, 2, 3")
    assert combined.targets == ["a (run 1)", "b (run 2)", "c (run 3)"]
    assert len(combined) == sum(len(r) for r in runs)
    assert combined.source == "runs 1, 2, 3"
    for j, run in enumerate(runs):
        mine = combined.select_target(combined.targets[j])
        assert mine.test_ids == run.test_ids
        assert mine.score.tolist() == run.score.tolist()
        assert mine.attempt.tolist() == run.attempt.tolist()
        assert mine.cost_usd.tolist() == run.cost_usd.tolist()
        assert mine.input_hash.tolist() == run.input_hash.tolist()
        assert [mine.record(i).category for i in range(len(mine))] == [
            run.record(i).category for i in range(len(run))
        ]
        assert mine.texts is not None
        assert run.texts is not None
        assert mine.texts["output"] == run.texts["output"]


def test_the_matrix_agrees_with_each_pairwise_comparison() -> None:
    runs = [make_run(0.5, seed=1), make_run(0.9, seed=2), make_run(0.2, seed=3)]
    labels = ["a", "b", "c"]
    matrix = compare_matrix(combine_runs(runs, labels, source="runs"), labels, "a")
    for pair, candidate in zip(matrix.pairwise, runs[1:], strict=True):
        alone = compare(runs[0], candidate)
        assert pair.summary.mean_delta == pytest.approx(alone.summary.mean_delta)
        assert (pair.summary.wins, pair.summary.losses) == (
            alone.summary.wins,
            alone.summary.losses,
        )
        assert pair.analysis is not None
        assert alone.analysis is not None
        assert pair.analysis.verdict.kind == alone.analysis.verdict.kind


def test_what_a_run_lacks_stays_absent() -> None:
    plain = Run.from_records(
        [Record("q1", 1.0, category="math"), Record("q2", 0.0)], source="plain"
    )
    rich = Run.from_records(
        [
            Record("q2", 0.5, scores={"judge": 0.5}, output="hi", error="boom", error_kind="infra"),
            Record("q3", 1.0, scores={"judge": 1.0}, output="yo", tags=("x",)),
        ],
        source="rich",
    )
    combined = combine_runs([plain, rich], ["plain", "rich"], source="both")
    assert combined.test_ids == ["q1", "q2", "q3"]
    records = combined.records()
    assert [r.target for r in records] == ["plain", "plain", "rich", "rich"]
    assert [r.test_id for r in records] == ["q1", "q2", "q2", "q3"]
    assert [r.category for r in records] == ["math", None, None, None]
    assert [r.output for r in records] == [None, None, "hi", "yo"]
    assert [r.scores.get("judge") for r in records] == [None, None, 0.5, 1.0]
    assert [r.error for r in records] == [None, None, "boom", None]
    assert records[2].error_kind == "infra"
    assert records[3].tags == ("x",)
    assert math.isnan(combined.latency_ms[0])


def test_an_interrupted_run_makes_the_whole_interrupted() -> None:
    runs = [make_run(0.5, seed=1), make_run(0.5, seed=2, status="interrupted")]
    assert combine_runs(runs, ["a", "b"], source="s").status == "interrupted"
    assert combine_runs(runs[:1], ["a"], source="s").status == "complete"


def test_a_run_of_several_targets_is_refused() -> None:
    with pytest.raises(PairingError) as caught:
        combine_runs([make_run(0.5, seed=1), synthetic_run(3, targets=2)], ["a", "b"], source="s")
    assert str(caught.value) == (
        "b holds records of 2 targets (model-0, model-1); compare runs of one target each "
        "(`evaldelta runs import` stores one run per target)"
    )


def test_labels_must_be_one_per_run() -> None:
    with pytest.raises(ValueError, match="one distinct label per run"):
        combine_runs([make_run(0.5, seed=1), make_run(0.5, seed=2)], ["a", "a"], source="s")
