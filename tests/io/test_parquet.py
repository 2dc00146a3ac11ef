"""Parquet files of records: a run written and read back is the same run, column for
column; a file from another writer (a data lake's) reads; a file that is not one is
named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import evaldelta
from evaldelta.errors import ParseError
from evaldelta.io import load, write_parquet
from evaldelta.model import Run
from tests.conftest import FIXTURES, REPO

#: Every run the fixtures give, in every format evaldelta reads.
SOURCES = [
    FIXTURES / "combined-results.jsonl",
    FIXTURES / "baseline.jsonl",
    FIXTURES / "csv" / "results.csv",
    FIXTURES / "csv" / "scorers.tsv",
    *sorted((FIXTURES / "inspect_ai").glob("*.json")),
    *sorted((FIXTURES / "promptfoo").glob("*.json*")),
    *sorted((FIXTURES / "deepeval").glob("*.json")),
    REPO / "examples" / "agent-versions" / "after.jsonl",
    REPO / "examples" / "store-ci" / "tuesday.jsonl",
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def assert_same_run(back: Run, run: Run) -> None:
    """Every column of the common model, and the run's own facts, are equal."""
    for name in Run.__slots__:
        if name in ("source", "format", "lines", "extra", "totals"):
            continue
        assert _same(getattr(back, name), getattr(run, name)), name


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_a_run_comes_back_column_for_column(tmp_path: Path, source: Path) -> None:
    run = load(source)
    path = tmp_path / "run.parquet"
    assert write_parquet(run, path) == len(run)
    back = load(path)
    assert back.format == "parquet"
    assert_same_run(back, run)
    for target in run.target_names or [None]:
        comparison = evaldelta.compare(run, back, baseline_target=target, candidate_target=target)
        assert comparison.summary.ties == comparison.summary.matched > 0
        assert comparison.summary.mean_delta == 0


def test_without_text_the_input_fingerprints_still_come_back(tmp_path: Path) -> None:
    run = load(REPO / "examples" / "agent-versions" / "before.jsonl", keep_text=False)
    write_parquet(run, tmp_path / "run.parquet")
    back = load(tmp_path / "run.parquet", keep_text=False)
    assert back.texts is None
    assert_same_run(back, run)


def test_a_stopped_run_keeps_its_order_and_story(tmp_path: Path) -> None:
    run = load(FIXTURES / "combined-results.jsonl")
    run.status = "stopped early"
    run.case_order = list(reversed(run.test_ids))
    run.sequential = {"settled": True, "after": 2, "verdict": "Better"}
    run.config = {"model": "m", "temperature": 0.5}
    write_parquet(run, tmp_path / "run.parquet")
    back = load(tmp_path / "run.parquet")
    assert (back.status, back.case_order, back.sequential, back.config) == (
        run.status,
        run.case_order,
        run.sequential,
        run.config,
    )


def _duck(sql: str) -> None:
    from evaldelta.io._duckdb import connect

    with connect() as con:
        con.execute(sql)


def test_a_data_lakes_file_reads(tmp_path: Path) -> None:
    """Another writer's file: scores as a map, the input as plain text, no metadata."""
    path = tmp_path / "lake.parquet"
    _duck(
        f"""COPY (SELECT * FROM (VALUES
            ('q1', 'a', 1.0, MAP {{'exact': 1.0}}, 'What is 2+2?', 120),
            ('q1', 'a', NULL, MAP {{'exact': 0.0, 'judge': 0.5}}, 'What is 2+2?', 80),
            ('q2', 'b', 0.25, NULL, NULL, NULL)
        ) t(test_id, target, score, scores, input, latency_ms))
        TO '{path}' (FORMAT parquet)"""
    )
    run = load(path)
    assert run.test_ids == ["q1", "q2"]
    assert run.targets == ["a", "b"]
    assert run.scorers == ["exact", "judge"]
    assert run.score.tolist() == [1.0, 0.25, 0.25]  # a missing score: its scorers' mean
    assert run.latency_ms[0] == 120
    assert np.isnan(run.latency_ms[2])
    assert run.texts is not None
    assert run.texts["input"][0] == "What is 2+2?"
    assert run.input_hash[0] == run.input_hash[1] != 0
    assert run.input_hash[2] == 0
    assert run.attempt.tolist() == [1, 2, 1]


@pytest.mark.parametrize(
    ("select", "message"),
    [
        ("SELECT 'q1' AS id, 1.0 AS score", 'has no "test_id" column'),
        ("SELECT 'q1' AS test_id, 'high' AS score", 'column "score" must hold a number'),
        ("SELECT 'q1' AS test_id", 'has neither a "score" nor a "scores" column'),
        ("SELECT 1 AS test_id, 1.0 AS score", 'column "test_id" must hold a text'),
        ("SELECT 'q1' AS test_id, 1.0 AS score, 1.5 AS attempt", 'column "attempt" must hold'),
        ("SELECT NULL::VARCHAR AS test_id, 1.0 AS score", 'row 1 has no "test_id"'),
        ("SELECT 'q1' AS test_id, NULL::DOUBLE AS score", "row 1 ('q1') has no \"score\""),
        ("SELECT '' AS test_id, 1.0 AS score", 'row 1: "test_id" is empty'),
        ("SELECT 'q1' AS test_id, 1.0 AS score WHERE false", "has no records"),
        ("SELECT 'q1' AS test_id, 'nan'::DOUBLE AS score", '"score" must be a finite number'),
    ],
)
def test_a_bad_file_is_named(tmp_path: Path, select: str, message: str) -> None:
    path = tmp_path / "bad.parquet"
    _duck(f"COPY ({select}) TO '{path}' (FORMAT parquet)")
    with pytest.raises(evaldelta.InputError) as caught:
        load(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_damaged_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    path.write_bytes(b"PAR1" + b"\x00" * 100)
    with pytest.raises(ParseError, match=r"broken\.parquet: is not a readable Parquet file"):
        load(path)


def test_a_file_that_cannot_be_written_is_named(tmp_path: Path) -> None:
    run = load(FIXTURES / "baseline.jsonl")
    with pytest.raises(evaldelta.InputError, match="cannot write the Parquet file"):
        write_parquet(run, tmp_path / "no" / "such" / "folder" / "run.parquet")


def test_the_fixture_is_the_run_it_was_written_from() -> None:
    """``tests/fixtures/parquet/before.parquet``: ``examples/agent-versions/before.jsonl``
    written by ``write_parquet`` (``runs export --format parquet`` writes the same)."""
    back = load(FIXTURES / "parquet" / "before.parquet")
    assert_same_run(back, load(REPO / "examples" / "agent-versions" / "before.jsonl"))


def test_a_stored_run_exported_comes_back_column_for_column(tmp_path: Path) -> None:
    """What ``runs export --format parquet`` writes: the run as the store gives it back."""
    from evaldelta.store import open_store

    with open_store(tmp_path / "runs.db") as store:
        for source in (
            FIXTURES / "combined-results.jsonl",
            REPO / "examples" / "agent-versions" / "after.jsonl",
        ):
            for run_id in store.import_run(load(source), name="r"):
                stored = store.get_run(run_id, keep_text=True)
                write_parquet(stored, tmp_path / "run.parquet")
                assert_same_run(load(tmp_path / "run.parquet"), stored)
