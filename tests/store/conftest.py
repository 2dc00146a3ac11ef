"""Helpers of the run store's tests: a store in a temporary folder, and small runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evaldelta.model import Run
from evaldelta.store import RunStore, open_store


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store" / "runs.db"


@pytest.fixture
def store(store_path: Path) -> Iterator[RunStore]:
    with open_store(store_path) as s:
        yield s


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
