"""Runs written as they go (``evaldelta eval``): begun, added to an attempt at a time,
finished; read as ``interrupted`` at once when their process dies, and resumed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

import evaldelta
from evaldelta.errors import StoreError
from evaldelta.io._jsonl import from_records
from evaldelta.store import RunStore, StoredSuite, open_store
from evaldelta.store import _codec as codec
from evaldelta.store._liveness import lock_path
from tests.conftest import FIXTURES, REPO
from tests.store.conftest import query, snapshot


def records(n: int = 6, *, target: str = "gpt", attempts: int = 1) -> list[dict[str, Any]]:
    """``n`` cases x ``attempts`` records in agentv's shape."""
    return [
        {
            "test_id": f"case-{i}",
            "target": target,
            "attempt": a,
            "score": round((i * 7 % 10) / 10, 1),
            "passed": (i * 7 % 10) >= 5,
            "latency_ms": 100.0 + i,
            "cost_usd": 0.001 * i,
            "input": f"question {i}",
            "output": f"answer {i}",
            "scores": {"exact": float(i % 2)},
            **({"error": "timeout", "error_kind": "infra"} if i == 3 else {}),
        }
        for i in range(n)
        for a in range(1, attempts + 1)
    ]


def begin(store: RunStore, name: str = "qa/gpt", suite: str | None = "qa", **kw: Any) -> int:
    return store.begin_run(
        name=name,
        suite=suite,
        config={"suite": suite, "seed": 7, **kw.pop("config", {})},
        targets=["gpt"],
        case_order=[f"case-{i}" for i in (2, 0, 1, 3, 5, 4)],
        started_at="2026-03-01T10:00:00Z",
        **kw,
    )


def columns(run: evaldelta.Run) -> dict[str, list[bytes]]:
    """A run's stored form: every column, encoded as the store keeps it."""
    out: dict[str, list[bytes]] = {}
    for chunk in codec.encode_run(run):
        out.setdefault(chunk.name, []).append(chunk.data)
    return out


# -- begin, add, finish --------------------------------------------------------------


def _lock_file_is_there(store: RunStore, rid: int) -> bool | None:
    """Whether an SQLite store's run has its lock file; ``None`` on PostgreSQL (whose
    run locks are the server's advisory locks)."""
    return None if store.path is None else lock_path(store.path, rid).exists()


def test_begin_add_finish_round_trip(store: RunStore, location: str) -> None:
    recs = records(6, attempts=2)
    rid = begin(store)
    begun = store.info(rid)
    assert (begun.status, begun.format, begun.source, begun.records, begun.cases) == (
        "running",
        "evaldelta",
        "<eval>",
        0,
        0,
    )
    assert (begun.suite, begun.targets, begun.dataset_hash) == ("qa", ["gpt"], "")
    assert begun.started_at == "2026-03-01T10:00:00Z"
    assert begun.finished_at is None
    assert _lock_file_is_there(store, rid) in (True, None)
    with RunStore(location) as other:
        assert other.info(rid).status == "running"  # held by this store

    for record in recs[:5]:
        store.add_attempt(rid, record)
    live = store.info(rid)
    assert (live.status, live.records, live.cases) == ("running", 5, 3)
    assert store.attempts(rid) == recs[:5]
    assert len(store.get_run(rid)) == 5
    for record in recs[5:]:
        store.add_attempt(rid, record)

    done = store.finish_run(rid, finished_at="2026-03-01T10:05:00Z")
    assert (done.status, done.records, done.cases, done.targets) == ("complete", 12, 6, ["gpt"])
    assert done.finished_at == "2026-03-01T10:05:00Z"
    assert done.started_at == "2026-03-01T10:00:00Z"
    assert not _lock_file_is_there(store, rid)

    expected = from_records(recs, source=done.label, status="complete", config=done.config)
    back = store.get_run(rid)
    assert columns(back) == columns(expected)
    assert back.records() == expected.records()
    assert (back.status, back.format, back.config) == ("complete", "evaldelta", done.config)
    assert done.dataset_hash == evaldelta.store.dataset_hash(expected)
    from evaldelta.analysis._summary import summarise

    assert store.summary(rid) == summarise(expected)
    assert store.case_order(rid) == ["case-2", "case-0", "case-1", "case-3", "case-5", "case-4"]
    # The journal stays, for the runner's --out and for resuming.
    assert store.attempts(rid) == recs


def test_finishing_keeps_the_latest_of_an_attempt_run_again(store: RunStore) -> None:
    """Resuming runs again the attempts lost to infrastructure: the run keeps the
    later record of each, in the place of the first."""
    recs = records(4)
    rid = begin(store)
    for record in recs:
        store.add_attempt(rid, record)
    again = {**recs[3], "score": 1.0, "passed": True}
    del again["error"], again["error_kind"]
    store.add_attempt(rid, again)
    assert store.info(rid).records == 4
    done = store.finish_run(rid)
    assert done.records == 4
    expected = from_records([*recs[:3], again], source=done.label, config=done.config)
    assert columns(store.get_run(rid)) == columns(expected)
    assert len(store.attempts(rid)) == 5


def test_a_run_finished_without_attempts(store: RunStore) -> None:
    rid = begin(store)
    done = store.finish_run(rid, "interrupted")
    assert (done.status, done.records, done.cases, done.dataset_hash) == (
        "interrupted",
        0,
        0,
        "",
    )
    assert len(store.get_run(rid)) == 0
    assert store.summary(rid) == []


def test_add_attempt_is_cheap(store: RunStore) -> None:
    rid = begin(store)
    recs = records(500)
    started = time.perf_counter()
    for record in recs:
        store.add_attempt(rid, record)
    elapsed = time.perf_counter() - started
    assert elapsed < 2.5, f"500 attempts took {elapsed:.2f}s"
    assert store.info(rid).records == 500


def test_bad_attempts_are_refused(store: RunStore) -> None:
    rid = begin(store)
    with pytest.raises(StoreError) as err:
        store.add_attempt(rid, {"test_id": "a", "score": 1.0})
    assert str(err.value) == (
        f'run {rid}: an attempt\'s record needs "test_id" (a string) and "attempt" (an '
        "integer), got test_id='a', attempt=None; set both before adding it"
    )
    with pytest.raises(StoreError) as err:
        store.add_attempt(rid, {"test_id": "a", "attempt": 1, "output": object()})
    assert str(err.value).startswith(f"run {rid}: the record of case 'a', attempt 1, is not JSON (")
    other = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="imported")
    with pytest.raises(StoreError) as err:
        store.add_attempt(other, records(1)[0])
    assert str(err.value) == (
        f"run {other} is not being run by this store; begin it with begin_run(), or take it "
        "up again with reopen_run(), before adding attempts to it"
    )
    with pytest.raises(StoreError) as err:
        store.finish_run(rid, "running")
    assert str(err.value) == (
        "finish_run(status='running'): a run finishes complete, interrupted or stopped early"
    )
    assert store.attempts(rid) == []


def test_an_imported_run_cannot_be_reopened(store: RunStore) -> None:
    rid = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="imported")
    with pytest.raises(StoreError) as err:
        store.reopen_run(rid)
    assert str(err.value) == (
        f"run {rid} (imported) was imported from {FIXTURES / 'baseline.jsonl'}, not run by "
        "`evaldelta eval`; only a suite's runs can be resumed"
    )


def test_delete_removes_the_journal_and_the_lock(store: RunStore, location: str) -> None:
    rid = begin(store)
    store.add_attempt(rid, records(1)[0])
    store.delete_run(rid)
    assert not _lock_file_is_there(store, rid)
    assert query(location, "SELECT count(*) FROM attempts") == [(0,)]
    again = begin(store)  # the lock of the deleted run was let go of, on both backends
    assert store.info(again).status == "running"


# -- processes that die, and processes that live ---------------------------------------

#: Begins a run, adds three attempts, then is killed (or sleeps, holding the run).
WORKER = textwrap.dedent(
    """
    import os, signal, sys, time
    from evaldelta.store import open_store
    from tests.store.test_live_runs import begin, records

    store = open_store(sys.argv[1])
    rid = begin(store)
    for record in records(3):
        store.add_attempt(rid, record)
    print(rid, flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(60)
    """
)


def _worker(location: str, how: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, location, how],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line, proc.stderr.read() if proc.stderr else ""
    return proc, int(line)


def test_a_run_whose_process_was_killed_reads_as_interrupted(location: str) -> None:
    proc, rid = _worker(location, "kill")
    proc.communicate(timeout=30)
    assert proc.returncode == -9
    before = snapshot(location)

    with open_store(location) as store:
        info = store.info(rid)
        assert (info.status, info.records, info.cases) == ("interrupted", 3, 3)
        assert [r.status for r in store.list_runs()] == ["interrupted"]
        suite = store.find_suite_by_name("qa")
        assert suite is not None
        assert store.list_runs(suite.id)[0].status == "interrupted"
        run = store.get_run(rid)
        assert run.status == "interrupted"
        expected = from_records(records(3), source=info.label, config=info.config)
        assert run.records() == expected.records()
        from evaldelta.analysis._summary import summarise

        assert store.summaries([rid]) == {rid: summarise(expected)}
        assert query(location, "SELECT count(*) FROM run_summaries") == [(0,)]
        assert query(location, "SELECT status FROM runs") == [("running",)]
    # Nothing was written.
    assert snapshot(location) == before


def test_a_run_another_live_process_runs_reads_as_running(location: str) -> None:
    proc, rid = _worker(location, "sleep")
    try:
        with open_store(location) as store:
            assert store.info(rid).status == "running"
            assert store.get_run(rid).status == "running"
            with pytest.raises(StoreError) as err:
                store.reopen_run(rid)
            assert str(err.value) == (
                f"run {rid} is still running in another process; wait for it, or stop it first"
            )
            with pytest.raises(StoreError) as err:
                store.finish_run(rid)
            assert "is still running in another process" in str(err.value)
            with pytest.raises(StoreError) as err:
                store.delete_run(rid)
            assert "is still running in another process" in str(err.value)
            assert store.info(rid).status == "running"
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    with open_store(location) as store:
        assert store.info(rid).status == "interrupted"


def test_a_killed_run_is_resumed_and_finished(location: str) -> None:
    proc, rid = _worker(location, "kill")
    proc.communicate(timeout=30)
    recs = records(6)
    with open_store(location) as store:
        reopened = store.reopen_run(rid)
        assert reopened.status == "running"
        for record in recs[3:]:
            store.add_attempt(rid, record)
        done = store.finish_run(rid)
        assert (done.status, done.records, done.cases) == ("complete", 6, 6)
        expected = from_records(recs, source=done.label, config=done.config)
        assert columns(store.get_run(rid)) == columns(expected)


def test_a_finished_run_reopened_reads_from_its_journal_again(store: RunStore) -> None:
    recs = records(4)
    rid = begin(store)
    for record in recs[:2]:
        store.add_attempt(rid, record)
    store.finish_run(rid, "interrupted")
    assert store.summary(rid)[0]["cases"] == 2
    store.reopen_run(rid)
    assert store.info(rid).status == "running"
    store.add_attempt(rid, recs[2])
    # Not the figures kept when it finished: they are stale now, and none are kept.
    assert store.summary(rid)[0]["cases"] == 3
    assert len(store.get_run(rid)) == 3
    assert store.finish_run(rid).records == 3


def test_closing_the_store_lets_go_of_its_runs(location: str) -> None:
    with open_store(location) as store:
        rid = begin(store)
        store.add_attempt(rid, records(1)[0])
        # Another store, in this same process, sees it held.
        with open_store(location) as other:
            assert other.info(rid).status == "running"
    assert not _lock_file_is_there(store, rid)
    with open_store(location) as store:
        assert store.info(rid).status == "interrupted"


# -- suites ---------------------------------------------------------------------------


def test_suites_are_made_once_and_found_by_name(store: RunStore) -> None:
    assert store.find_suite_by_name("qa") is None
    qa = store.suite("qa")
    assert isinstance(qa, StoredSuite)
    assert store.suite("qa") == qa
    assert store.find_suite_by_name("qa") == qa
    assert qa.to_dict() == {"id": qa.id, "name": "qa", "created_at": qa.created_at}
    other = store.suite("other")
    assert store.list_suites() == [other, qa]
    with pytest.raises(StoreError) as err:
        store.suite("  ")
    assert str(err.value) == "a suite's name cannot be empty, got '  '; give the suite a name"


def test_a_suites_runs_oldest_first(store: RunStore) -> None:
    ids = []
    for i in range(4):
        rid = begin(store, name=f"qa-{i}")
        store.add_attempt(rid, records(1)[0])
        store.finish_run(rid)
        ids.append(rid)
    imported = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="qa-x")
    elsewhere = begin(store, name="other", suite="other")
    suite = store.find_suite_by_name("qa")
    assert suite is not None

    runs = store.list_runs(suite.id)
    assert [r.id for r in runs] == ids
    baseline, candidate = runs[-2:]
    assert (baseline.id, candidate.id) == (ids[2], ids[3])
    assert [r.id for r in store.list_runs(suite.id, limit=2)] == ids[2:]
    assert [r.id for r in store.list_runs(suite.id, pattern="qa-[01]")] == ids[:2]
    assert {r.suite for r in runs} == {"qa"}
    assert {r.suite_id for r in runs} == {suite.id}
    assert runs[0].to_dict()["suite"] == "qa"
    assert runs[0].to_dict()["suite_id"] == suite.id
    # Without a suite: every run, newest first, as before.
    assert [r.id for r in store.list_runs()] == [elsewhere, imported, *ids[::-1]]
    assert store.info(imported).suite is None


def test_a_name_given_as_suite_id_is_refused(store: RunStore) -> None:
    with pytest.raises(TypeError) as err:
        store.list_runs("qa-eval")  # type: ignore[arg-type]
    assert str(err.value) == (
        "list_runs(suite_id) takes a suite's integer id (find_suite_by_name(name).id), got "
        "'qa-eval'; pass name=... to list runs by name"
    )
    with pytest.raises(StoreError) as serr:
        store.list_runs(42)
    assert str(serr.value) == (
        f"no suite with id 42 in {store._name}; find a suite's id with "
        "find_suite_by_name(name), or list them with list_suites()"
    )


def test_an_imported_run_can_be_filed_under_a_suite(store: RunStore) -> None:
    (rid,) = store.import_run(evaldelta.load(FIXTURES / "baseline.jsonl"), suite="qa")
    assert store.info(rid).suite == "qa"
    assert store.case_order(rid) is None
