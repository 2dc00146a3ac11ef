"""The store's schema: created on first use, migrated in order, refused when newer."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.analysis._summary import summarise
from evaldelta.errors import StoreError
from evaldelta.store import SCHEMA_VERSION, RunStore, open_store
from evaldelta.store._schema import MIGRATIONS, migrate, read_version
from evaldelta.store._sqlite import PAGE_SIZE
from tests.conftest import FIXTURES
from tests.store.conftest import query

STORE_V1 = Path(__file__).parent / "fixtures" / "store-v1.sql"
STORE_V2 = Path(__file__).parent / "fixtures" / "store-v2.sql"


def _version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("SELECT version FROM schema_version").fetchone()[0])
    finally:
        conn.close()


def _from_dump(path: Path, dump: Path = STORE_V1) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(dump.read_text(encoding="utf-8"))
    conn.close()
    return path


def test_created_on_first_use(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "runs.db"
    with open_store(path) as store:
        assert store.list_runs() == []
    assert path.is_file()
    assert _version(path) == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # Large pages: a chunk of records is written in a few system calls, not hundreds.
    assert conn.execute("PRAGMA page_size").fetchone()[0] == PAGE_SIZE == 65536
    conn.close()


def test_not_created_when_only_reading(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with pytest.raises(StoreError) as err:
        RunStore(path, create=False)
    assert str(err.value) == (
        f"no run store at {path}; store a run first with evaldelta.evaluate() or "
        "RunStore(PATH).import_run(), or choose a store with store=PATH"
    )
    assert err.value.option == "store"
    assert not path.exists()


def test_opening_twice_migrates_once(store_path: Path) -> None:
    open_store(store_path).close()
    open_store(store_path).close()
    conn = sqlite3.connect(store_path)
    assert conn.execute("SELECT count(*) FROM schema_version").fetchone()[0] == 1
    conn.close()


def test_foreign_keys_are_on(store_path: Path) -> None:
    """SQLite's are off unless asked for (PostgreSQL's are always on)."""
    with open_store(store_path) as store:
        assert store._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(path)
    try:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        conn.close()


def _summary_rows(path: Path) -> list[tuple[int, int, str | None, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT run, position, target, cases FROM run_summaries ORDER BY run, position"
        ).fetchall()
    finally:
        conn.close()


def test_the_fixture_is_schema_version_1(tmp_path: Path) -> None:
    """The fixture really is the older schema: version 1, without the tables of 2."""
    path = _from_dump(tmp_path / "old.db")
    assert SCHEMA_VERSION == 5
    assert _version(path) == 1
    assert _tables(path) == {"schema_version", "runs", "record_columns", "sqlite_sequence"}


def test_store_from_schema_version_1_is_read(tmp_path: Path) -> None:
    """A store written by schema version 1 (a dump kept as a fixture) opens, is brought
    up to date, and gives back the runs it held."""
    path = _from_dump(tmp_path / "old.db")
    with open_store(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 5
        assert "run_summaries" in _tables(path)
        runs = store.list_runs()
        assert [(r.id, r.name, r.config) for r in runs] == [
            (2, "after", {"prompt": "v2"}),
            (1, "before", {"prompt": "v1"}),
        ]
        assert (
            store.get_run("before").records()
            == evaldelta.load(FIXTURES / "baseline.jsonl").records()
        )
        assert store.get_run(2).records() == evaldelta.load(FIXTURES / "candidate.jsonl").records()
        assert store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="again") == 3
    assert _version(path) == SCHEMA_VERSION


def test_runs_of_schema_version_1_get_their_figures_once(tmp_path: Path) -> None:
    """Runs stored by version 1 have no summary rows: their figures are computed from
    their records when first asked for, then kept; a new run has them from the start."""
    path = _from_dump(tmp_path / "old.db")
    with open_store(path) as store:
        assert _summary_rows(path) == []
        new = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="new")
        assert _summary_rows(path) == [(new, 0, "support-agent", 3)]

        expected = summarise(evaldelta.load(FIXTURES / "candidate.jsonl"))
        assert store.summary("after") == expected
        assert _summary_rows(path) == [(2, 0, "support-agent", 3), (new, 0, "support-agent", 3)]
        assert store.summaries([1, 2, new]) == {
            1: summarise(store.get_run(1)),
            2: expected,
            new: summarise(store.get_run(new)),
        }
        assert len(_summary_rows(path)) == 3

        # Read from the table now, not from the records: they are not looked at again.
        conn = sqlite3.connect(path)
        conn.execute("DELETE FROM record_columns WHERE run = 2")
        conn.commit()
        conn.close()
        assert store.summary(2) == expected


def test_figures_for_another_pass_threshold_are_computed_not_kept(tmp_path: Path) -> None:
    path = _from_dump(tmp_path / "old.db")
    with open_store(path) as store:
        strict = store.summary(1, pass_threshold=0.95)
        assert strict == summarise(store.get_run(1), 0.95)
        assert strict != store.summary(1)
        assert [row[:2] for row in _summary_rows(path)] == [(1, 0)]


def test_figures_are_given_when_they_cannot_be_kept(tmp_path: Path) -> None:
    """Keeping computed figures is a cache: while another process holds the write lock
    (or the file is read-only), the figures are still given, and kept next time."""
    path = _from_dump(tmp_path / "old.db")
    with RunStore(path, timeout=0.05) as store:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            assert store.summary(1) == summarise(store.get_run(1))
            assert _summary_rows(path) == []
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert store.summary(1) == summarise(store.get_run(1))
        assert [row[:2] for row in _summary_rows(path)] == [(1, 0)]


def test_migrations_apply_in_order_and_keep_the_runs(tmp_path: Path) -> None:
    """A later version is applied on top of an older store, once, without losing runs."""
    path = _from_dump(tmp_path / "old.db")
    later = (
        *MIGRATIONS,
        ("ALTER TABLE runs ADD COLUMN owner TEXT", "UPDATE runs SET owner = 'ci'"),
        ("CREATE INDEX runs_by_owner ON runs (owner)",),
    )
    conn = sqlite3.connect(path, isolation_level=None)
    assert read_version(conn) == 1
    assert migrate(conn, str(path), later) == len(later)
    assert migrate(conn, str(path), later) == len(later)  # nothing left to do
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(len(later),)]
    assert conn.execute("SELECT name, owner FROM runs ORDER BY id").fetchall() == [
        ("before", "ci"),
        ("after", "ci"),
    ]
    conn.close()


def test_a_failed_migration_changes_nothing(tmp_path: Path) -> None:
    path = _from_dump(tmp_path / "old.db")
    broken = (*MIGRATIONS, ("ALTER TABLE runs ADD COLUMN owner TEXT", "THIS IS NOT SQL"))
    conn = sqlite3.connect(path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError):
        migrate(conn, str(path), broken)
    # Each version is one transaction: those before were made, the broken one changed nothing.
    assert read_version(conn) == SCHEMA_VERSION
    assert "owner" not in [row[1] for row in conn.execute("PRAGMA table_info(runs)")]
    conn.close()


def test_newer_schema_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = _from_dump(tmp_path / "newer.db")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    before = path.read_bytes()

    with pytest.raises(StoreError) as err:
        open_store(path)
    assert str(err.value) == (
        f"{path}: written by a newer evaldelta (store schema version {SCHEMA_VERSION + 1}; "
        f"this evaldelta knows up to {SCHEMA_VERSION}); upgrade evaldelta (pip install -U "
        "evaldelta) to use it, or choose another store with store=PATH. "
        "The store was not changed."
    )
    assert err.value.option == "store"
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists()


def test_other_sqlite_database_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as err:
        open_store(path)
    assert str(err.value) == (
        f"{path}: is a SQLite database but not an evaldelta run store (it has no "
        "schema_version table); choose another file with store=PATH"
    )
    assert err.value.option == "store"
    assert path.read_bytes() == before


def test_a_file_that_is_no_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"test_id": "a", "score": 1}\n' * 100, encoding="utf-8")
    before = path.read_bytes()
    with pytest.raises(StoreError) as err:
        open_store(path)
    assert str(err.value).startswith(f"{path}: not a run store evaldelta can read (")
    assert str(err.value).endswith("); choose another file with store=PATH")
    assert err.value.option == "store"
    assert path.read_bytes() == before


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as err:
        open_store(tmp_path)
    assert str(err.value) == (
        f"{tmp_path}: is a folder, not a run store; give the file's path with store=PATH"
    )


def test_a_reader_that_must_not_write_gets_the_figures_without_keeping_them(
    tmp_path: Path,
) -> None:
    """``keep=False`` (the dashboard's read-only reading): the same figures, nothing
    written back."""
    path = _from_dump(tmp_path / "old.db")
    with open_store(path) as store:
        before = path.read_bytes()
        got = store.summaries([1, 2], keep=False)
        assert got == {1: summarise(store.get_run(1)), 2: summarise(store.get_run(2))}
        assert _summary_rows(path) == []
        assert path.read_bytes() == before


def test_the_second_fixture_is_schema_version_2(tmp_path: Path) -> None:
    """The fixture of version 2 (made by that version's evaldelta): runs and their
    figures, no suites, no journal."""
    path = _from_dump(tmp_path / "v2.db", STORE_V2)
    assert _version(path) == 2
    assert _tables(path) == {
        "schema_version",
        "runs",
        "record_columns",
        "run_summaries",
        "sqlite_sequence",
    }


def test_store_from_schema_version_2_is_read(tmp_path: Path) -> None:
    """A store of version 2 opens and is brought to version 3: its runs intact, in no
    suite, without a case order or a journal, and their figures still kept."""
    path = _from_dump(tmp_path / "v2.db", STORE_V2)
    kept = _summary_rows(path)
    with open_store(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 5
        assert {"suites", "attempts"} <= _tables(path)
        runs = store.list_runs()
        assert [(r.id, r.name, r.status, r.suite_id, r.suite) for r in runs] == [
            (2, "after", "complete", None, None),
            (1, "before", "complete", None, None),
        ]
        assert runs[1].to_dict()["suite"] is None
        assert store.case_order(1) is None
        assert store.attempts(1) == []
        assert store.list_suites() == []
        assert (
            store.get_run("before").records()
            == evaldelta.load(FIXTURES / "baseline.jsonl").records()
        )
        assert store.get_run(2).records() == evaldelta.load(FIXTURES / "candidate.jsonl").records()
        assert store.summary(2) == summarise(evaldelta.load(FIXTURES / "candidate.jsonl"))
        assert _summary_rows(path) == kept
        # New runs of version 3 beside them.
        assert store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), suite="qa") == 3
        assert store.info(3).suite == "qa"
    assert _version(path) == SCHEMA_VERSION
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT id, suite, case_order FROM runs ORDER BY id").fetchall() == [
        (1, None, None),
        (2, None, None),
        (3, 1, None),
    ]
    conn.close()


def test_store_from_schema_version_3_is_read(tmp_path: Path) -> None:
    """A store of version 3 (before runs could stop early) gains the column, and its runs
    read as not stopped early; a run of it can then finish stopped early."""
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, str(path), MIGRATIONS[:3]) == 3
    conn.close()
    with open_store(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 5
        rid = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="old")
        assert store.info(rid).sequential is None
        assert store.get_run(rid).sequential is None
        live = store.begin_run(
            name="seq", suite="qa", config={}, targets=["t"], case_order=["a", "b"]
        )
        store.add_attempt(live, {"test_id": "a", "target": "t", "attempt": 1, "score": 1.0})
        how = {"verdict": "Better", "after": 1, "of": 2, "reason": "settled Better"}
        done = store.finish_run(live, "stopped early", sequential=how)
        assert done.status == "stopped early"
        assert done.sequential == how
        run = store.get_run(live)
        assert run.sequential == how
        assert run.case_order == ["a", "b"]
        assert run.status == "stopped early"


# -- on both backends ------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_store_of_each_older_version_is_brought_up_to_date(location: str, version: int) -> None:
    """A store built by the first ``version`` migrations (on SQLite as on PostgreSQL)
    opens at the latest version, and stores and reads runs."""
    with open_store(location) as fresh:
        dialect = fresh._dialect
    wipe(location)
    conn = raw_connection(location)
    try:
        assert migrate(conn, location, MIGRATIONS[:version], dialect) == version
        assert read_version(conn, dialect) == version
    finally:
        conn.close()
    with open_store(location) as store:
        assert store.schema_version == SCHEMA_VERSION
        rid = store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="new", suite="qa")
        assert store.get_run(rid).records() == evaldelta.load(FIXTURES / "baseline.jsonl").records()
    assert query(location, "SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]


def test_a_store_of_a_newer_evaldelta_is_refused_on_both(location: str) -> None:
    open_store(location).close()
    with RunStore(location) as store:
        store._conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    with pytest.raises(StoreError) as err:
        open_store(location)
    assert "written by a newer evaldelta" in str(err.value)
    assert query_raw(location, "SELECT version FROM schema_version") == [(SCHEMA_VERSION + 1,)]


#: Migrates a store built by MIGRATIONS[:1] to a later schema whose one step is slow,
#: after the go file appears; prints the version it found on opening and the one it left.
MIGRATOR = """
import os, sys, time
from evaldelta.store import _schema
from evaldelta.store._dialect import POSTGRESQL, SQLITE
from tests.store.test_schema import raw_connection

location, go = sys.argv[1], sys.argv[2]
dialect = POSTGRESQL if location.startswith("postgresql") else SQLITE
later = (*_schema.MIGRATIONS, ("ALTER TABLE runs ADD COLUMN owner TEXT",))
original = dialect.ddl

def slow(statement):
    if "owner" in statement:
        time.sleep(0.5)  # inside the migrating transaction, holding the lock
    return original(statement)

dialect.ddl = slow
conn = raw_connection(location)
while not os.path.exists(go):
    time.sleep(0.005)
print(_schema.migrate(conn, location, later, dialect), flush=True)
conn.close()
"""


def test_two_processes_migrating_an_old_store_at_once_migrate_it_once(
    location: str, tmp_path: Path
) -> None:
    """Two jobs open a store of schema 1 at once: one migrates it under the lock (SQLite's
    write lock, PostgreSQL's advisory lock), the other waits, then finds it up to date."""
    import subprocess
    import sys

    from tests.conftest import REPO

    with open_store(location) as store:
        dialect = store._dialect
    wipe(location)
    conn = raw_connection(location)
    migrate(conn, location, MIGRATIONS[:1], dialect)
    conn.close()
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATOR, location, str(go)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    go.touch()
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out == f"{SCHEMA_VERSION + 1}\n"
    assert query_raw(location, "SELECT version FROM schema_version") == [(SCHEMA_VERSION + 1,)]
    assert query_raw(location, "SELECT count(owner) FROM runs") == [(0,)]


def raw_connection(location: str) -> Any:
    """A connection to the store's database as the store's own code sees one, without
    opening (or migrating) the store."""
    if location.startswith("postgresql"):
        import psycopg

        from evaldelta.store._postgres import _Connection

        return _Connection(psycopg.connect(location, autocommit=True))
    return sqlite3.connect(location, isolation_level=None)


def query_raw(location: str, sql: str) -> list[tuple[Any, ...]]:
    conn = raw_connection(location)
    try:
        return [tuple(row) for row in conn.execute(sql).fetchall()]
    finally:
        conn.close()


def wipe(location: str) -> None:
    """Take every table of the store away: its file (SQLite), or its schema's tables."""
    if not location.startswith("postgresql"):
        for suffix in ("", "-wal", "-shm"):
            Path(location + suffix).unlink(missing_ok=True)
        return
    conn = raw_connection(location)
    try:
        for table in ("attempts", "run_summaries", "record_columns", "runs", "suites"):
            conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute("DROP TABLE IF EXISTS schema_version")
    finally:
        conn.close()
