"""Helpers of the run store's tests: a store on each backend (an SQLite file in a
temporary folder, a schema of the throwaway PostgreSQL server), and small runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaldelta.model import Run
from evaldelta.store import RunStore, open_store


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "runs.db"


#: The databases every store test runs on.
BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, store_path: Path) -> str:
    """Where a new store is: an SQLite file, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(store_path)
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def store(location: str) -> Iterator[RunStore]:
    with open_store(location) as s:
        yield s


def query(location: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` (``?`` placeholders) in the store at ``location``, read by a
    connection of its own."""
    with RunStore(location, create=False) as other:
        return [tuple(row) for row in other._conn.execute(sql, params)]


def snapshot(location: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of the store: to tell that nothing was written."""
    tables = ("runs", "record_columns", "run_summaries", "suites", "attempts", "schema_version")
    return {t: sorted(query(location, f"SELECT * FROM {t}"), key=repr) for t in tables}


def synthetic_run(cases: int, *, attempts: int = 1, targets: int = 1, seed: int = 0) -> Run:
    """A run of ``cases x attempts x targets`` records, every optional column filled."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = cases * attempts * targets
    case = np.repeat(np.arange(cases), attempts * targets)
    score = rng.random(n).round(3)
    return Run.from_columns(
        source="synthetic.jsonl",
        format="jsonl",
        test_id=[f"case-{i:06d}" for i in case.tolist()],
        target=[f"model-{j}" for j in np.tile(np.repeat(np.arange(targets), attempts), cases)],
        score=score.tolist(),
        passed=(score >= 0.5).tolist(),
        latency_ms=rng.integers(100, 2000, n).astype(float).tolist(),
        cost_usd=(rng.random(n) / 1000).tolist(),
        category=[("easy", "hard")[i % 2] for i in case.tolist()],
        scorer_scores={"exact": score.round().tolist(), "judge": score.tolist()},
        errors={7: "timeout"} if n > 7 else {},
        error_kinds={7: "infra"} if n > 7 else {},
        input_hash=(case + 1).tolist(),
        config={"model": "m", "temperature": 0.2},
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T01:00:00Z",
    )
