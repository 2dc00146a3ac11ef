"""The run store's schema, built by ordered migrations, and the checks made on opening.

A store records its schema version in ``schema_version``. Opening a store applies
the migrations it lacks, in order, each version in one transaction; a store written
by a newer evaldelta (a version beyond :data:`SCHEMA_VERSION`) is refused before
anything is written to it.

Runs are rows of ``runs`` (and their summary figures per target rows of
``run_summaries``); their records are kept by column, as in
:class:`~evaldelta.model.Run`: one BLOB per column and chunk of records in
``record_columns``. A row per record would cost a Python object per value on the way
in and out: a million records took 7 s to write and 3 s to read back that way,
against a small fraction of a second by column.

The migrations are SQLite's text, as released; on PostgreSQL each statement is said
in its words by :meth:`~evaldelta.store._dialect.Dialect.ddl` (BIGINT, DOUBLE PRECISION,
BYTEA, an identity for AUTOINCREMENT), so that both databases hold one schema.
"""

from __future__ import annotations

from evaldelta.errors import StoreError
from evaldelta.store._dialect import SQLITE, Connection, Dialect

__all__ = ["MIGRATIONS", "NO_STORE_MEND", "SCHEMA_VERSION", "migrate", "read_version"]

#: How to mend a store that is not there, in the library's words (``option="store"``:
#: the command line names its commands and ``--store`` instead).
NO_STORE_MEND = (
    "store a run first with evaldelta.evaluate() or RunStore(PATH).import_run(), "
    "or choose a store with store=PATH"
)

#: Migration ``i`` (0-based) takes a store from version ``i`` to version ``i + 1``.
#: Append new versions; never edit a released one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    # Version 1: runs and their columns of records.
    (
        """
        CREATE TABLE schema_version (
            version INTEGER NOT NULL
        )
        """,
        """
        CREATE TABLE runs (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused once deleted
            name          TEXT NOT NULL,
            created_at    TEXT NOT NULL,   -- when stored, UTC, ISO 8601
            started_at    TEXT,            -- as the source declares (ISO 8601)
            finished_at   TEXT,
            status        TEXT NOT NULL,   -- complete | interrupted (| running, stopped early)
            source_format TEXT NOT NULL,   -- the reader that read it: jsonl, promptfoo, ...
            source_path   TEXT NOT NULL,
            dataset_hash  TEXT NOT NULL,   -- sha256 over the sorted test ids and inputs
            config        TEXT NOT NULL,   -- JSON object: declared by the file + --config
            notes         TEXT,
            targets       TEXT NOT NULL,   -- JSON array, in order of first appearance
            records       INTEGER NOT NULL,
            cases         INTEGER NOT NULL
        )
        """,
        "CREATE INDEX runs_by_name ON runs (name, id)",
        """
        CREATE TABLE record_columns (
            run      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            name     TEXT NOT NULL,     -- score, attempt, scorer:0, text:input, test_ids, ...
            first    INTEGER NOT NULL,  -- index of the chunk's first record
            encoding TEXT NOT NULL,     -- a numpy dtype ('<f8', '<i4', '|b1') or 'msgpack'
            data     BLOB NOT NULL,
            PRIMARY KEY (run, name, first)
        )
        """,
    ),
    # Version 2: each run's summary figures per target, kept when the run is stored so
    # that listing and showing runs never decodes their records. Runs stored by
    # version 1 have no rows here until their figures are first asked for (then
    # computed from their records and kept).
    (
        """
        CREATE TABLE run_summaries (
            run                     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            position                INTEGER NOT NULL,  -- the target's place in runs.targets
            target                  TEXT,              -- NULL: records that name no target
            pass_threshold          REAL NOT NULL,     -- the score that passes, without a flag
            cases                   INTEGER NOT NULL,
            attempts                INTEGER NOT NULL,
            attempts_per_case       TEXT NOT NULL,     -- JSON array: the distinct counts
            errors                  INTEGER NOT NULL,
            infrastructure_failures INTEGER NOT NULL,
            safety_failures         INTEGER NOT NULL,
            pass_rate               REAL,              -- means over cases; NULL: no case ran
            mean_score              REAL,
            latency_ms              REAL,              -- excluding waits; NULL: not reported
            cost_usd                REAL,              -- the total; NULL: not reported
            PRIMARY KEY (run, position)
        ) WITHOUT ROWID
        """,
    ),
    # Version 3: suites, and runs that `evaldelta eval` writes as they go. A run being
    # run has status 'running' and no record_columns yet: each attempt is appended to
    # its journal, `attempts`, as it finishes (so a crash loses none, and the run can be
    # resumed); when the run finishes its records are built from the journal and stored
    # by column like any other run's. Runs stored before belong to no suite.
    (
        """
        CREATE TABLE suites (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            name       TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL   -- UTC, ISO 8601
        )
        """,
        "ALTER TABLE runs ADD COLUMN suite INTEGER REFERENCES suites (id)",
        # JSON array of test ids, in the seeded order the run took them; NULL: imported.
        "ALTER TABLE runs ADD COLUMN case_order TEXT",
        "CREATE INDEX runs_by_suite ON runs (suite, id)",
        """
        CREATE TABLE attempts (
            run     INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
            seq     INTEGER NOT NULL,  -- 1, 2, ... in the order the attempts finished
            test_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            record  BLOB NOT NULL,     -- the record, a JSON object in agentv's shape
            PRIMARY KEY (run, seq)
        )
        """,
        "CREATE INDEX attempts_by_case ON attempts (run, test_id, attempt)",
    ),
    # Version 4: runs that `evaldelta eval --stop-when-settled` ran against a baseline:
    # how they went (a JSON object: settled or not, the verdict, after how many cases,
    # alpha, margin, what was not spent); status 'stopped early' when they settled.
    ("ALTER TABLE runs ADD COLUMN sequential TEXT",),
    # Version 5: a CRC-32 of every stored chunk, checked when it is read, so that a
    # damaged store is said to be damaged instead of read as other numbers (NULL: a
    # chunk written before version 5, read unchecked).
    ("ALTER TABLE record_columns ADD COLUMN crc INTEGER",),
)

#: The version this evaldelta writes.
SCHEMA_VERSION = len(MIGRATIONS)


def read_version(conn: Connection, dialect: Dialect = SQLITE) -> int | None:
    """The store's schema version: 0 for an empty database, ``None`` for a database
    that holds tables but is no run store."""
    tables = dialect.tables(conn)
    if "schema_version" not in tables:
        return 0 if not tables else None
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def check_version(
    version: int | None, path: str, latest: int = SCHEMA_VERSION, dialect: Dialect = SQLITE
) -> None:
    """Refuse a database that is no run store, or one written by a newer evaldelta."""
    if version is None:
        what, other = (
            ("a SQLite database", "another file with store=PATH")
            if dialect is SQLITE
            else ("a PostgreSQL schema that holds tables", "another database or schema")
        )
        raise StoreError(
            f"{path}: is {what} but not an evaldelta run store (it has no "
            f"schema_version table); choose {other}",
            option="store",
        )
    if version > latest:
        raise StoreError(
            f"{path}: written by a newer evaldelta (store schema version {version}; this "
            f"evaldelta knows up to {latest}); upgrade evaldelta (pip install -U evaldelta) "
            "to use it, or choose another store with store=PATH. The store was not changed.",
            option="store",
        )


def outdated(path: str, version: int | None) -> StoreError:
    """The error for a store of an older schema opened for reading only."""
    return StoreError(
        f"{path}: the store is of an older evaldelta (schema {version}) and must be "
        "brought up to date before it can be read; open it once with write access "
        "(evaldelta runs list --store PATH)",
        option="store",
    )


def migrate(
    conn: Connection,
    path: str,
    migrations: tuple[tuple[str, ...], ...] = MIGRATIONS,
    dialect: Dialect = SQLITE,
) -> int:
    """Bring the store up to date, one transaction per version; returns the version.

    The version is read again under the write lock (SQLite's; on PostgreSQL an
    advisory lock), so that two processes opening a new or old store at once
    migrate it once.
    """
    latest = len(migrations)
    for _ in range(latest + 1):
        conn.execute(dialect.begin_write)
        try:
            dialect.lock_migrations(conn)
            version = read_version(conn, dialect)
            check_version(version, path, latest, dialect)
            assert version is not None
            if version == latest:
                conn.execute("COMMIT")
                return version
            for statement in migrations[version]:
                conn.execute(dialect.ddl(statement))
            if version == 0:
                conn.execute("INSERT INTO schema_version (version) VALUES (1)")
            else:
                conn.execute("UPDATE schema_version SET version = ?", (version + 1,))
            conn.execute("COMMIT")
        except BaseException:
            # SQLite rolls back by itself on some errors (a full disk); the first error is
            # the one to say.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    return latest
