"""The runs list's rows: what each shows, how they filter and sort, and the summaries
computed once."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from evaldelta.serve._summary import (
    RunRow,
    RunSummary,
    SummaryCache,
    filter_rows,
    row_of,
    sort_rows,
    summary_of,
)
from evaldelta.store import StoredRun, open_store
from tests.serve.stores import tiny_runs
from tests.store.conftest import synthetic_run


def info(**changes: object) -> StoredRun:
    base = StoredRun(
        id=1,
        name="before",
        created_at="2026-12-01T10:00:00Z",
        started_at=None,
        finished_at=None,
        status="complete",
        format="jsonl",
        source="before.jsonl",
        dataset_hash="ab" * 32,
        config={},
        targets=["gpt-4.1"],
        records=6,
        cases=3,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("started", "when"),
    [
        (None, "2026-12-01 10:00"),  # when it was stored
        ("2026-11-30T09:15:00Z", "2026-11-30 09:15"),
        ("2026-11-30T09:15:00.123Z", "2026-11-30 09:15"),
        ("2026-11-30T11:15:00+02:00", "2026-11-30 09:15"),  # shown in UTC
        ("2026-11-30 09:15", "2026-11-30 09:15"),  # no zone: as it is
        ("last tuesday", "2026-12-01 10:00"),  # unreadable: when it was stored
    ],
)
def test_when_a_run_ran(started: str | None, when: str) -> None:
    assert row_of(info(started_at=started)).when == when


def test_target_and_model() -> None:
    row = row_of(info(targets=[None], config={"model": "gpt-4.1", "temperature": 0}))
    assert (row.target, row.model) == ("", "gpt-4.1")
    row = row_of(info(targets=["a", "b"], config={"model": ""}))
    assert (row.target, row.model) == ("a, b", None)
    assert row_of(info(config={"model": 4})).model == "4"


def test_summary_of_weighs_targets_by_cases() -> None:
    figures = [
        {"cases": 30, "pass_rate": 1.0, "mean_score": 0.5, "cost_usd": 1.5},
        {"cases": 10, "pass_rate": 0.0, "mean_score": None, "cost_usd": None},
        {"cases": 0, "pass_rate": None, "mean_score": None, "cost_usd": 0.25},
    ]
    assert summary_of(figures) == RunSummary(pass_rate=0.75, mean_score=0.5, cost_usd=1.75)
    assert summary_of([]) == RunSummary(None, None, None)


def _row(rid: int, name: str, pass_rate: float | None, target: str = "t") -> RunRow:
    return RunRow(
        id=rid,
        name=name,
        label=f"{name} (run {rid})",
        when="2026-12-01 10:00",
        target=target,
        model=None,
        cases=3,
        attempts=3,
        status="complete",
        summary=RunSummary(pass_rate, None, None),
    )


def test_sort_puts_missing_values_last_and_ties_newest_first() -> None:
    rows = [_row(1, "a", 0.5), _row(2, "B", None), _row(3, "c", 0.5), _row(4, "d", 0.9)]
    assert [r.id for r in sort_rows(rows, "pass_rate", "desc")] == [4, 3, 1, 2]
    assert [r.id for r in sort_rows(rows, "pass_rate", "asc")] == [3, 1, 4, 2]
    assert [r.id for r in sort_rows(rows, "name", "asc")] == [1, 2, 3, 4]  # ignoring case
    assert [r.id for r in sort_rows(rows, "cases", "asc")] == [4, 3, 2, 1]


def test_filter_ignores_case_and_spaces() -> None:
    rows = [_row(1, "Nightly-GPT", 0.5, "gpt-4.1"), _row(2, "weekly", 0.5, "Claude")]
    assert [r.id for r in filter_rows(rows, " nightly ")] == [1]
    assert [r.id for r in filter_rows(rows, target="CLAUDE")] == [2]
    assert [r.id for r in filter_rows(rows, "night", "claude")] == []
    assert [r.id for r in filter_rows(rows)] == [1, 2]


def test_the_cache_reads_each_run_once(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    tiny_runs(path, 12)
    cache = SummaryCache()
    with open_store(path) as store:
        infos = store.list_runs()
        first = cache.fill(store, infos[:5])
        assert cache.computed == 5
        again = cache.fill(store, infos)
        assert cache.computed == 12
        assert {k: again[k] for k in first} == first
        cache.fill(store, infos)
        assert cache.computed == 12
        # Run 4 (i = 3): scores 1, 0, 0.3 -> one case of three passes.
        four = again[4]
        assert four.pass_rate == pytest.approx(1 / 3)
        assert four.mean_score == pytest.approx(1.3 / 3)
        assert four.cost_usd == pytest.approx(0.009)


def test_the_cache_knows_a_store_made_anew(tmp_path: Path) -> None:
    """Ids start again at 1 in a new store: its run 1 is not the old run 1."""
    path = tmp_path / "runs.db"
    cache = SummaryCache()
    with open_store(path) as store:
        store.add_run(synthetic_run(4), name="old")
        old = cache.fill(store, store.list_runs())[1]
    path.unlink()
    with open_store(path) as store:
        store.add_run(synthetic_run(9, seed=3), name="new")
        new = cache.fill(store, store.list_runs())[1]
    assert cache.computed == 2
    assert old != new


def test_a_run_deleted_meanwhile_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    tiny_runs(path, 3)
    cache = SummaryCache()
    with open_store(path) as store:
        infos = store.list_runs()
        store.delete_run(2)
        assert sorted(cache.fill(store, infos)) == [1, 3]
