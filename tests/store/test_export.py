"""A stored run exported as JSON Lines reads back into the same records."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest

import evaldelta
from evaldelta.model import Record, Run
from evaldelta.store import RunStore, export_jsonl
from tests.conftest import FIXTURES
from tests.store.conftest import synthetic_run
from tests.store.test_runstore import FIXTURE_FILES


def _without_lines(records: list[Record]) -> list[Record]:
    """Records apart from their line numbers, which are those of the new file."""
    return [dataclasses.replace(r, line=None) for r in records]


def _exported(run: Run, path: Path) -> Run:
    with open(path, "wb") as fh:
        assert export_jsonl(run, fh) == len(run)
    return evaldelta.load(path, keep_text=True)


@pytest.mark.parametrize("rel", FIXTURE_FILES)
def test_export_reads_back_identically(rel: str, store: RunStore, tmp_path: Path) -> None:
    stored = store.get_run(store.add_run(evaldelta.load(FIXTURES / rel), name="r"))
    again = _exported(stored, tmp_path / "export.jsonl")
    assert _without_lines(again.records()) == _without_lines(stored.records())
    assert (again.status, again.config, again.started_at) == (
        stored.status,
        stored.config,
        stored.started_at,
    )
    if len(stored) > 1 and stored.finished_at is not None:
        assert again.finished_at == stored.finished_at


def test_export_of_a_big_run_in_batches(store: RunStore, tmp_path: Path) -> None:
    run = synthetic_run(12_000, targets=2)  # more than one batch of 10,000 records
    stored = store.get_run(store.add_run(run, config={"prompt": "v3"}))
    again = _exported(stored, tmp_path / "big.jsonl")
    assert _without_lines(again.records()) == _without_lines(stored.records())
    assert again.config == {"model": "m", "temperature": 0.2, "prompt": "v3"}
    assert (again.started_at, again.finished_at) == (stored.started_at, stored.finished_at)


def test_exported_lines() -> None:
    run = Run.from_columns(
        source="x.jsonl",
        format="jsonl",
        test_id=["a", "a"],
        target=["m", "m"],
        score=[1.0, 0.0],
        passed=[True, None],
        latency_ms=[12.5, None],
        errors={1: "boom"},
        error_kinds={1: "infra"},
        safety_failure=[False, True],
        category=["easy", None],
        tags={0: ("x", "y")},
        scorer_scores={"exact": [1.0, None]},
        texts={"input": ["q", "q"], "output": ["yes", None], "metadata": [{"k": 1}, None]},
        status="interrupted",
        config={"model": "m"},
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:01:00Z",
    )
    out = io.BytesIO()
    export_jsonl(run, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines == [
        {
            "test_id": "a",
            "target": "m",
            "attempt": 1,
            "score": 1.0,
            "passed": True,
            "scores": {"exact": 1.0},
            "latency_ms": 12.5,
            "category": "easy",
            "tags": ["x", "y"],
            "input": "q",
            "output": "yes",
            "metadata": {"k": 1},
            "config": {"model": "m"},
            "run_status": "interrupted",
            "timestamp": "2026-01-01T00:00:00Z",
        },
        {
            "test_id": "a",
            "target": "m",
            "attempt": 2,
            "score": 0.0,
            "error": "boom",
            "error_kind": "infra",
            "safety_failure": True,
            "input": "q",
            "timestamp": "2026-01-01T00:01:00Z",
        },
    ]


def test_export_tells_how_many_records_are_written(store: RunStore) -> None:
    run = synthetic_run(25_000)
    calls: list[tuple[int, int]] = []
    export_jsonl(run, io.BytesIO(), progress=lambda done, total: calls.append((done, total)))
    assert calls == [(10_000, 25_000), (20_000, 25_000), (25_000, 25_000)]
