"""The run store: runs kept in an SQLite file or a PostgreSQL database, named, listed
and read back, with the same methods and results on both.

An import is one transaction: a crash or Ctrl-C halfway leaves no part of the run.
Two processes importing at once both succeed, and readers never wait for a writer
(SQLite: WAL mode and a busy timeout, :mod:`evaldelta.store._sqlite`; PostgreSQL: a
server's concurrency, :mod:`evaldelta.store._postgres`). Every query here is written
once; :mod:`evaldelta.store._dialect` says it in each database's words.

A run of ``evaldelta eval`` is written as it goes instead: :meth:`RunStore.begin_run`,
one short transaction per attempt (:meth:`RunStore.add_attempt`, into the run's
journal), then :meth:`RunStore.finish_run` stores it by column like an imported run.
The process running it holds a lock (a lock file beside an SQLite store, an advisory
lock on PostgreSQL), so that a run whose process died reads as ``interrupted`` at once,
with nothing written.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaldelta._plain import FieldsDict
from evaldelta.errors import RunNotFoundError, StoreError
from evaldelta.model import Run
from evaldelta.pairing._cases import DEFAULT_PASS_THRESHOLD
from evaldelta.store import _codec as codec
from evaldelta.store._dialect import Backend, Connection, RunLock
from evaldelta.store._postgres import is_url
from evaldelta.store._schema import SCHEMA_VERSION, read_version
from evaldelta.store._sqlite import SQLiteBackend, can_write

__all__ = [
    "DEFAULT_STORE",
    "Progress",
    "RunStore",
    "StoredRun",
    "StoredSuite",
    "can_write",
    "default_name",
    "open_store",
    "store_exists",
]

#: Where the command line keeps runs unless told otherwise (relative to the current folder).
DEFAULT_STORE = os.path.join(".evaldelta", "runs.db")
#: Seconds a process waits for another one's import to finish before giving up.
BUSY_TIMEOUT = 60.0
#: What to tell a user who needs to see which runs exist.
LIST_HINT = "list runs with `evaldelta runs list`"

RunRef = int | str
#: Told how far a long step has got: ``progress(done, total)``, in units of the step's
#: own (bytes read, columns written); called often, so it should be cheap.
Progress = Callable[[int, int], None]

#: The source format of the runs ``evaldelta eval`` runs (see :meth:`RunStore.begin_run`).
EVAL_FORMAT = "evaldelta"
#: A run whose records are still only in its journal: being run, or its process died.
_JOURNAL_ONLY = f"runs.status = 'running' AND runs.source_format = '{EVAL_FORMAT}'"
#: What :func:`_stored` reads: a run's row, its suite's name, and for a run being run
#: its records and cases counted in its journal (its row has them once it finishes).
_SELECT = (
    "SELECT runs.id, runs.name, runs.created_at, runs.started_at, runs.finished_at, "
    "runs.status, runs.source_format, runs.source_path, runs.dataset_hash, runs.config, "
    "runs.notes, runs.targets, "
    f"CASE WHEN {_JOURNAL_ONLY} THEN (SELECT count(*) FROM (SELECT DISTINCT test_id, "
    "attempt FROM attempts WHERE run = runs.id) AS journal) ELSE runs.records END, "
    f"CASE WHEN {_JOURNAL_ONLY} THEN (SELECT count(DISTINCT test_id) "
    "FROM attempts WHERE run = runs.id) ELSE runs.cases END, "
    "runs.suite, suites.name, runs.sequential "
    "FROM runs LEFT JOIN suites ON suites.id = runs.suite"
)
#: The figures of :func:`evaldelta.analysis._summary.summarise`, one column each in
#: ``run_summaries`` (``attempts_per_case`` as a JSON array).
_FIGURES = (
    "target",
    "cases",
    "attempts",
    "attempts_per_case",
    "errors",
    "infrastructure_failures",
    "pass_rate",
    "mean_score",
    "latency_ms",
    "cost_usd",
    "safety_failures",
)
_SUMMARY_COLUMNS = ", ".join(_FIGURES)
_INSERT_SUMMARY = (
    f"INSERT INTO run_summaries (run, position, pass_threshold, {_SUMMARY_COLUMNS}) "
    f"VALUES ({', '.join('?' * (3 + len(_FIGURES)))})"
)
#: The columns of a run's row that a copy into another store keeps (all but its id).
_RUN_COLUMNS = (
    "name, created_at, started_at, finished_at, status, source_format, source_path, "
    "dataset_hash, config, notes, targets, records, cases, suite, case_order, sequential"
)
#: The columns of ``record_columns`` an import writes, with their PostgreSQL types.
_CHUNK_COLUMNS = (
    ("run", "int8"),
    ("name", "text"),
    ("first", "int8"),
    ("encoding", "text"),
    ("data", "bytea"),
    ("crc", "int8"),
)
#: One run's figures, per target in the run's order of targets.
RunFigures = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class StoredRun(FieldsDict):
    """What the store knows about one run, without its records."""

    id: int
    name: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    status: str
    format: str
    source: str
    dataset_hash: str
    config: dict[str, Any] = field(default_factory=dict)
    notes: str | None = None
    targets: list[str | None] = field(default_factory=list)
    records: int = 0
    cases: int = 0
    suite_id: int | None = None
    suite: str | None = None
    #: How a run of ``evaldelta eval --stop-when-settled`` went (its status is
    #: ``stopped early`` when it settled); ``None`` for any other run.
    sequential: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """How the run is named in output: ``before (run 3)``."""
        return f"{self.name} (run {self.id})"


@dataclass(frozen=True, slots=True)
class StoredSuite(FieldsDict):
    """A suite: the name under which ``evaldelta eval`` keeps the runs of one suite."""

    id: int
    name: str
    created_at: str


def _json(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value).decode()


def _from_json(text: str) -> Any:
    import msgspec

    return msgspec.json.decode(text)


#: The fields of :class:`StoredRun` in the order of :data:`_SELECT`'s columns (the
#: sixth column, the status as written, is read by ``_status``).
_STORED_FIELDS = [
    "id",
    "name",
    "created_at",
    "started_at",
    "finished_at",
    "-",
    "format",
    "source",
    "dataset_hash",
    "config",
    "notes",
    "targets",
    "records",
    "cases",
    "suite_id",
    "suite",
    "sequential",
]
_STORED_JSON = frozenset({"config", "targets", "sequential"})


def _stored(row: tuple[Any, ...], status: str) -> StoredRun:
    """A row of :data:`_SELECT` as a :class:`StoredRun` of that status."""
    values: dict[str, Any] = {"status": status}
    for name, value in zip(_STORED_FIELDS, row, strict=True):
        if name != "-":
            json = name in _STORED_JSON and value is not None
            values[name] = _from_json(value) if json else value
    return StoredRun(**values)


def dataset_hash(run: Run) -> str:
    """sha256 over the sorted test ids and the input fingerprint of each one's first
    record: its first 12 digits are what ``compare`` shows as the dataset hash."""
    import numpy as np

    codes, first = np.unique(run.test_index, return_index=True)
    rows = sorted(
        zip([run.test_ids[c] for c in codes.tolist()], run.input_hash[first].tolist(), strict=True)
    )
    text = "\x01".join(f"{tid}\x00{fp}" for tid, fp in rows)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def default_name(source: str) -> str:
    """A run's name from its file: ``results/baseline.jsonl.gz`` -> ``baseline``."""
    name = Path(source).name
    for suffix in (".gz", ".jsonl", ".json", ".ndjson", ".csv", ".tsv", ".eval"):
        name = name.removesuffix(suffix)
    return name or "run"


def is_id(ref: str) -> bool:
    """Whether ``ref`` names a run by its id: ASCII digits only ("3", not "²" or "three")."""
    return ref.isascii() and ref.isdigit()


def _check_name(name: str) -> str:
    if not name or not name.strip():
        raise StoreError("a run's name cannot be empty; give one with name=NAME", option="name")
    if is_id(name):
        raise StoreError(
            f"a run cannot be named {name!r}: a number refers to a run by id; "
            "choose a name with a letter in it"
        )
    return name


def _now() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class RunStore:
    """Runs kept in an SQLite file or a PostgreSQL database: add, read back, list,
    rename, delete.

    A run is referred to by its id (``3`` or ``"3"``) or by its name (the latest run
    of that name)::

        store = RunStore(".evaldelta/runs.db")       # or RunStore("postgresql://ci@db/evals")
        before = store.add_run(evaldelta.load("before.jsonl"), name="before")
        run = store.get_run("before")

    Args:
        path: the store's file, created on first use unless ``create`` is false; or a
            PostgreSQL URL, ``postgresql://user@host:port/db`` (a bare ``postgresql://``
            takes libpq's ``PG*`` variables), whose tables are made on first use
            (needs ``pip install 'evaldelta[postgres]'``).
        create: create the store (and its folder) when there is none.
        timeout: seconds to wait for another process's import to finish.
        readonly: open it for reading only: a store on a read-only disk, or another
            user's, can be listed, shown, exported and compared; anything that writes
            raises :class:`StoreError`. Never created nor brought up to date. (SQLite's
            ``mode=ro``, or ``immutable=1`` when not even its write-ahead log's files can
            be made; PostgreSQL's read-only transactions.)
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_STORE,
        *,
        create: bool = True,
        timeout: float = BUSY_TIMEOUT,
        readonly: bool = False,
    ) -> None:
        self.readonly = readonly
        #: The runs this store is running (see :meth:`begin_run`), by id: their locks.
        self._locks: dict[int, RunLock] = {}
        self._db: Backend
        if is_url(path):
            from evaldelta.store._postgres import PostgresBackend

            self._db = PostgresBackend(str(path), create=create, timeout=timeout, readonly=readonly)
        else:
            self._db = SQLiteBackend(path, create=create, timeout=timeout, readonly=readonly)
        #: The store's SQLite file; ``None`` for a PostgreSQL store.
        self.path = self._db.path
        #: How the store is named in messages: its path, or its URL without the password.
        self.location = self._db.where
        self._name = self.location
        self._conn: Connection = self._db.conn
        self._dialect = self._db.dialect

    @property
    def backend(self) -> str:
        """The database the store lives in: ``sqlite`` or ``postgresql``."""
        return self._dialect.name

    @contextmanager
    def _translated(self, doing: str) -> Iterator[None]:
        """The database's exceptions as :class:`StoreError` saying where and what to do."""
        with self._db.translated(doing):
            yield

    @contextmanager
    def _transaction(self, doing: str) -> Iterator[Connection]:
        """One write transaction, taken at once (so a busy store is waited for, not
        failed), rolled back on any exception, KeyboardInterrupt included."""
        conn = self._conn
        with self._translated(doing):
            conn.execute(self._dialect.begin_write)
            try:
                yield conn
            except BaseException:
                # SQLite rolls back by itself on some errors (a full disk): then there is
                # nothing left to roll back, and the first error is the one to say.
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close the store's connection. Runs begun and not finished are let go of:
        from now on they read as ``interrupted``, and can be resumed."""
        for lock in self._locks.values():
            lock.release()
        self._locks.clear()
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({self._name!r})"

    @property
    def schema_version(self) -> int:
        """The schema version of the store."""
        version = read_version(self._conn, self._dialect)
        return version if version is not None else SCHEMA_VERSION

    # -- references -----------------------------------------------------------------

    def resolve(self, ref: RunRef) -> int:
        """The id of the run ``ref`` names: an id, or a name (the latest run of that name).

        Raises:
            StoreError: no such run.
        """
        with self._translated("look up a run"):
            if isinstance(ref, int) or is_id(ref):
                rid = int(ref)
                if self._conn.execute("SELECT 1 FROM runs WHERE id = ?", (rid,)).fetchone():
                    return rid
                raise RunNotFoundError(f"run {rid} not found in {self._name}; {LIST_HINT}")
            row = self._conn.execute("SELECT max(id) FROM runs WHERE name = ?", (ref,)).fetchone()
        if row is None or row[0] is None:
            raise RunNotFoundError(f"no run named {ref!r} in {self._name}; {LIST_HINT}")
        return int(row[0])

    def find(self, ref: RunRef) -> int | None:
        """The id of the run ``ref`` names, or ``None`` when there is none (a store
        that cannot be read still raises :class:`StoreError`)."""
        try:
            return self.resolve(ref)
        except RunNotFoundError:
            return None

    # -- adding ---------------------------------------------------------------------

    def add_run(
        self,
        run: Run,
        *,
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        notes: str | None = None,
        progress: Progress | None = None,
        suite: str | None = None,
    ) -> int:
        """Store ``run`` as it is (all its targets in one stored run); returns its id.

        Args:
            name: the run's name (default: its file's name, without extensions).
            config: settings to record beside those the run declares (these win).
            notes: free text kept with the run.
            progress: told how far the writing has got (see :data:`Progress`).
            suite: the suite the run belongs to (made when there is none of that name).
        """
        counter = _WriteProgress([run], progress)
        with self._transaction("store the run") as conn:
            suite_id = None if suite is None else _suite_id(conn, suite)
            rid = self._insert(conn, run, name, config, notes, counter, suite_id)
        counter.finish()
        return rid

    def import_run(
        self,
        run: Run,
        *,
        name: str | None = None,
        target: str | None = None,
        config: Mapping[str, Any] | None = None,
        notes: str | None = None,
        progress: Progress | None = None,
        suite: str | None = None,
    ) -> list[int]:
        """Store ``run`` as ``evaldelta runs import`` does; returns the new ids.

        A run of several targets becomes one stored run per target, named
        ``NAME/target``, all in one transaction; ``target`` keeps only that one.
        ``progress`` is told how far the writing has got (see :data:`Progress`);
        ``suite`` names the suite the runs belong to (made when there is none).
        """
        base = name if name is not None else default_name(run.source)
        if target is not None:
            parts = [(base, run.select_target(target))]
        elif len(run.targets) > 1:
            if run.has_unnamed_target:
                named = ", ".join(run.target_names)
                raise StoreError(
                    f"{run.source}: some records name a target ({named}) and some do not; "
                    "give every record a target, or pick one with target=TARGET",
                    option="target",
                )
            parts = [(f"{base}/{t}", run.select_target(t)) for t in run.target_names]
        else:
            parts = [(base, run)]
        counter = _WriteProgress([part for _, part in parts], progress)
        with self._transaction("store the run") as conn:
            suite_id = None if suite is None else _suite_id(conn, suite)
            ids = [
                self._insert(conn, part, part_name, config, notes, counter, suite_id)
                for part_name, part in parts
            ]
        counter.finish()
        return ids

    def _insert(
        self,
        conn: Connection,
        run: Run,
        name: str | None,
        config: Mapping[str, Any] | None,
        notes: str | None,
        counter: _WriteProgress,
        suite_id: int | None = None,
    ) -> int:
        name = _check_name(name if name is not None else default_name(run.source))
        if len(run) == 0:
            raise StoreError(f"{run.source}: has no records; there is nothing to store")
        merged = {**run.config, **(config or {})}
        source = run.source
        if not source.startswith("<") and os.path.exists(source):
            source = os.path.abspath(source)
        rid = self._dialect.insert(
            conn,
            "INSERT INTO runs (name, created_at, started_at, finished_at, status, "
            "source_format, source_path, dataset_hash, config, notes, targets, records, cases, "
            "suite) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                name,
                _now(),
                run.started_at,
                run.finished_at,
                run.status,
                run.format,
                source,
                dataset_hash(run),
                _json(merged),
                notes,
                _json(run.targets),
                len(run),
                len(run.test_ids),
                suite_id,
            ),
        )
        self._dialect.bulk_insert(
            conn,
            "record_columns",
            _CHUNK_COLUMNS,
            _rows(rid, counter.count(run, codec.encode_run(run))),
        )
        _keep_summary(conn, rid, _summarise(run, DEFAULT_PASS_THRESHOLD), DEFAULT_PASS_THRESHOLD)
        return rid

    # -- reading --------------------------------------------------------------------

    def _status(self, row: tuple[Any, ...]) -> str:
        """The status a row of :data:`_SELECT` reads as: a run left ``running`` by a
        process that is gone is ``interrupted``, told by its lock and without writing."""
        rid, status, fmt = row[0], row[5], row[6]
        if status != "running" or fmt != EVAL_FORMAT or rid in self._locks:
            return str(status)
        return "running" if self._db.run_is_held(rid) else "interrupted"

    def _read(self, rid: int) -> tuple[StoredRun, bool]:
        """The run with id ``rid``, and whether its records are only in its journal."""
        with self._translated("read the run"):
            row = self._conn.execute(f"{_SELECT} WHERE runs.id = ?", (rid,)).fetchone()
        if row is None:  # deleted since it was resolved
            raise RunNotFoundError(f"run {rid} not found in {self._name}; {LIST_HINT}")
        return _stored(row, self._status(row)), row[5] == "running" and row[6] == EVAL_FORMAT

    def info(self, ref: RunRef) -> StoredRun:
        """What the store knows about a run, without reading its records.

        A run being run (``running``) counts the records and cases in its journal so
        far; one whose process has died reads as ``interrupted``.
        """
        return self._read(self.resolve(ref))[0]

    def get_run(
        self, ref: RunRef, *, keep_text: bool = True, progress: Progress | None = None
    ) -> Run:
        """The stored run ``ref`` names, as a :class:`~evaldelta.model.Run`.

        Its records, status, config, start and end times and input fingerprints are
        those it was stored with, so comparisons apply the same fairness checks as
        on the file. ``keep_text=False`` leaves out inputs, outputs and expected
        answers (faster, and all a comparison needs). ``progress`` is told how many
        bytes of the run's columns have been read, out of how many.

        A run not finished (being run, or its process died) is read from its journal:
        its attempts so far, status ``running`` or ``interrupted``.
        """
        records: list[dict[str, Any]] = []
        columns: dict[str, list[tuple[int, str, bytes]]] = {}
        with self._translated("read the run"):
            # One read transaction: the run cannot be deleted between its two queries.
            self._conn.execute(self._dialect.begin_read)
            try:
                stored, journal_only = self._read(self.resolve(ref))
                if journal_only:
                    records = self._attempts(stored.id)
                else:
                    columns = self._columns(stored, keep_text, progress)
                order = self._case_order(stored.id)
            finally:
                self._conn.execute("COMMIT")
        if journal_only:
            run = self._journal_run(stored, records, keep_text=keep_text)
        else:
            try:
                run = codec.decode_run(
                    columns,
                    stored.records,
                    source=stored.label,
                    format=stored.format,
                    status=stored.status,
                    config=stored.config,
                    started_at=stored.started_at,
                    finished_at=stored.finished_at,
                )
            except codec.DamagedColumnError as exc:
                raise self._db.damaged(f"run {stored.id}'s {exc}") from None
            except (ValueError, TypeError, KeyError, IndexError) as exc:
                # msgspec's DecodeError is a ValueError; numpy's too, for a torn array.
                raise self._db.damaged(
                    f"run {stored.id}'s records do not decode ({type(exc).__name__}: {exc})"
                ) from None
        run.case_order = order
        run.sequential = stored.sequential
        return run

    def _columns(
        self, stored: StoredRun, keep_text: bool, progress: Progress | None
    ) -> dict[str, list[tuple[int, str, bytes]]]:
        where = "FROM record_columns WHERE run = ?"
        if not keep_text:
            where += " AND name NOT LIKE 'text%'"
        total = done = 0
        if progress is not None:
            # SQLite knows a BLOB's length without reading it.
            row = self._conn.execute(
                f"SELECT coalesce(sum(length(data)), 0) {where}", (stored.id,)
            ).fetchone()
            total = int(row[0])
            progress(0, total)
        import zlib

        columns: dict[str, list[tuple[int, str, bytes]]] = {}
        for name, first, encoding, data, crc in self._conn.execute(
            f"SELECT name, first, encoding, data, crc {where} ORDER BY name, first", (stored.id,)
        ):
            if crc is not None and zlib.crc32(data) != crc:
                raise self._db.damaged(f"run {stored.id}'s column {name!r} fails its checksum")
            columns.setdefault(name, []).append((first, encoding, data))
            if progress is not None:
                done += len(data)
                progress(done, total)
        return columns

    def _journal_run(
        self,
        stored: StoredRun,
        records: Sequence[Mapping[str, Any]],
        *,
        keep_text: bool = True,
        status: str | None = None,
    ) -> Run:
        """The run of a journal's records, as ``from_records`` reads them."""
        from evaldelta.io._jsonl import from_records

        status = status or stored.status
        records = latest_attempts(records)
        if not records:
            return codec.decode_run(
                {},
                0,
                source=stored.label,
                format=stored.format,
                status=status,
                config=stored.config,
                started_at=stored.started_at,
                finished_at=stored.finished_at,
            )
        run = from_records(
            records, source=stored.label, keep_text=keep_text, status=status, config=stored.config
        )
        run.format = stored.format
        run.started_at = stored.started_at or run.started_at
        run.finished_at = stored.finished_at
        return run

    def list_runs(
        self,
        suite_id: int | None = None,
        *,
        name: str | None = None,
        pattern: str | None = None,
        limit: int | None = None,
    ) -> list[StoredRun]:
        """The stored runs: those of one suite, oldest first, or all of them, newest first.

        Args:
            suite_id: a suite's id (``store.find_suite_by_name("qa").id``): only its
                runs, **oldest first**, so that ``runs[-2], runs[-1]`` are the one
                before the latest and the latest.
            name: only runs of exactly this name (``qa[v2]`` is a name, not a glob).
            pattern: only runs whose name matches this glob (``before*``, ``qa-[01]``).
            limit: how many: the newest ``limit`` (still oldest first for a suite).

        Raises:
            TypeError: a name given as ``suite_id``.
            StoreError: no suite with that id.
        """
        if suite_id is not None and (isinstance(suite_id, bool) or not isinstance(suite_id, int)):
            raise TypeError(
                "list_runs(suite_id) takes a suite's integer id "
                f"(find_suite_by_name(name).id), got {suite_id!r}; pass name=... to list "
                "runs by name"
            )
        conditions: list[str] = []
        params: list[Any] = []
        if suite_id is not None:
            conditions.append("runs.suite = ?")
            params.append(suite_id)
        if name is not None:
            conditions.append("runs.name = ?")
            params.append(name)
        if pattern is not None:
            conditions.append(self._dialect.name_glob)
            params.append(self._dialect.glob(pattern))
        query = _SELECT
        if conditions:
            query += " WHERE " + " AND ".join(conditions)
        query += " ORDER BY runs.id DESC"
        if limit is not None:
            query += " LIMIT ?"
            params.append(max(limit, 0))
        with self._translated("list the runs"):
            if (
                suite_id is not None
                and not self._conn.execute(
                    "SELECT 1 FROM suites WHERE id = ?", (suite_id,)
                ).fetchone()
            ):
                raise StoreError(
                    f"no suite with id {suite_id} in {self._name}; find a suite's id with "
                    "find_suite_by_name(name), or list them with list_suites()"
                )
            runs = [_stored(row, self._status(row)) for row in self._conn.execute(query, params)]
        return runs[::-1] if suite_id is not None else runs

    def case_order(self, ref: RunRef) -> list[str] | None:
        """The test ids in the seeded order ``evaldelta eval`` took them for the run;
        ``None`` for a run imported from a file."""
        rid = self.resolve(ref)
        with self._translated("read the run"):
            return self._case_order(rid)

    def _case_order(self, rid: int) -> list[str] | None:
        row = self._conn.execute("SELECT case_order FROM runs WHERE id = ?", (rid,)).fetchone()
        if row is None or row[0] is None:
            return None
        order: list[str] = _from_json(row[0])
        return order

    def summary(self, ref: RunRef, *, pass_threshold: float = DEFAULT_PASS_THRESHOLD) -> RunFigures:
        """The run's figures per target, as :func:`evaldelta.analysis._summary.summarise`
        gives them, read from the store (see :meth:`summaries`)."""
        rid = self.resolve(ref)
        return self.summaries([rid], pass_threshold=pass_threshold)[rid]

    def summaries(
        self,
        ids: Sequence[int],
        *,
        pass_threshold: float = DEFAULT_PASS_THRESHOLD,
        progress: Progress | None = None,
        keep: bool = True,
    ) -> dict[int, RunFigures]:
        """The figures per target of the runs with these ids, by id, read from the store
        without decoding their records.

        Runs stored before the store kept figures (schema version 1), and any pass
        threshold but the default, have them computed from their records; for the
        default threshold they are then kept, so that this happens once per run
        (unless ``keep`` is false: a reader that must not write, such as the
        dashboard). ``progress`` is told how many of those runs have been read, out of how many.
        A run not finished has its figures computed from its journal each time, and
        never kept: they would go stale with its next attempt.

        Raises:
            StoreError: no run with one of the ids.
        """
        wanted = list(dict.fromkeys(ids))
        found: dict[int, RunFigures] = {}
        unfinished: set[int] = set()
        with self._translated("read the runs' summaries"):
            for start in range(0, len(wanted), 500):  # SQLite's limit on parameters
                part = wanted[start : start + 500]
                marks = ", ".join("?" * len(part))
                unfinished.update(
                    int(row[0])
                    for row in self._conn.execute(
                        f"SELECT id FROM runs WHERE id IN ({marks}) AND {_JOURNAL_ONLY}", part
                    )
                )
                for row in self._conn.execute(
                    f"SELECT run, {_SUMMARY_COLUMNS} FROM run_summaries "
                    f"WHERE run IN ({marks}) AND pass_threshold = ? ORDER BY run, position",
                    (*part, pass_threshold),
                ):
                    if int(row[0]) not in unfinished:
                        found.setdefault(int(row[0]), []).append(_figures_of(row[1:]))
        missing = [rid for rid in wanted if rid not in found]
        for done, rid in enumerate(missing):
            if progress is not None:
                progress(done, len(missing))
            figures = _summarise(self.get_run(rid, keep_text=False), pass_threshold)
            found[rid] = figures
            if keep and pass_threshold == DEFAULT_PASS_THRESHOLD and rid not in unfinished:
                self._backfill(rid, figures, pass_threshold)
        if progress is not None and missing:
            progress(len(missing), len(missing))
        return {rid: found[rid] for rid in wanted}

    def _backfill(self, rid: int, figures: RunFigures, pass_threshold: float) -> None:
        """Keep the figures of a run stored without them."""
        try:
            with self._transaction("keep the run's summary") as conn:
                # Not for a run reopened meanwhile: its figures are changing.
                if conn.execute(
                    f"SELECT 1 FROM runs WHERE id = ? AND NOT ({_JOURNAL_ONLY})", (rid,)
                ).fetchone():
                    _keep_summary(conn, rid, figures, pass_threshold, replace=False)
        except StoreError:
            # Only a cache: a store we cannot write to now (a read-only file, or one
            # another process keeps locked) still answers, and computes the figures
            # again the next time they are asked for.
            pass

    # -- suites ---------------------------------------------------------------------

    def find_suite_by_name(self, name: str) -> StoredSuite | None:
        """The suite called ``name``, or ``None`` when there is none."""
        with self._translated("look up a suite"):
            row = self._conn.execute(
                "SELECT id, name, created_at FROM suites WHERE name = ?", (name,)
            ).fetchone()
        return None if row is None else StoredSuite(*row)

    def suite(self, name: str) -> StoredSuite:
        """The suite called ``name``, made when there is none yet (two processes making
        it at once get the same one)."""
        with self._transaction("make the suite") as conn:
            suite_id = _suite_id(conn, name)
            row = conn.execute(
                "SELECT id, name, created_at FROM suites WHERE id = ?", (suite_id,)
            ).fetchone()
        return StoredSuite(*row)

    def list_suites(self) -> list[StoredSuite]:
        """Every suite, by name."""
        with self._translated("list the suites"):
            order = f"ORDER BY name{self._dialect.bytewise}"
            rows = self._conn.execute(f"SELECT id, name, created_at FROM suites {order}")
            return [StoredSuite(*row) for row in rows]

    # -- runs being run ---------------------------------------------------------------

    def begin_run(
        self,
        *,
        name: str,
        suite: str | None,
        config: Mapping[str, Any],
        targets: Sequence[str],
        case_order: Sequence[str],
        started_at: str | None = None,
        source: str = "<eval>",
    ) -> int:
        """Start a run that ``evaldelta eval`` writes as it goes; returns its id.

        The run has status ``running`` and no records until :meth:`add_attempt` adds
        them, one attempt at a time, to its journal; :meth:`finish_run` then stores it
        like any other run. While this store is open and the run not finished, this
        process holds the run's lock (a file beside the store, ``<store>.locks/``): a
        run whose process died reads as ``interrupted`` from then on, and can be
        taken up again with :meth:`reopen_run`.

        Args:
            name: the run's name.
            suite: the suite it belongs to (made when there is none of that name).
            config: the run's settings, kept as its config.
            targets: the targets it runs, in order.
            case_order: the test ids in the order the run takes them.
            started_at: when it started (ISO 8601; default: now).
            source: what the run reads as having come from.
        """
        _check_name(name)
        lock: RunLock | None = None
        try:
            with self._transaction("begin the run") as conn:
                suite_id = None if suite is None else _suite_id(conn, suite)
                rid = self._dialect.insert(
                    conn,
                    "INSERT INTO runs (name, created_at, started_at, finished_at, status, "
                    "source_format, source_path, dataset_hash, config, notes, targets, records, "
                    "cases, suite, case_order) "
                    "VALUES (?, ?, ?, NULL, 'running', ?, ?, '', ?, NULL, ?, 0, 0, ?, ?)",
                    (
                        name,
                        _now(),
                        started_at or _now(),
                        EVAL_FORMAT,
                        source,
                        _json(dict(config)),
                        _json(list(targets)),
                        suite_id,
                        _json(list(case_order)),
                    ),
                )
                # Held before the run can be seen: nobody reads it as interrupted meanwhile.
                lock = self._lock(rid)
                if lock is None:  # a lock file left by a run of this id: ids are never reused
                    raise StoreError(self._busy(rid))
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        self._locks[rid] = lock
        return rid

    def add_attempt(self, rid: int, record: Mapping[str, Any]) -> None:
        """Add one attempt's record (a JSON object in agentv's shape: ``test_id``,
        ``attempt``, ``target``, ``score``, ...) to the journal of run ``rid``, which
        this store began or reopened; kept at once, in its own transaction."""
        import msgspec

        if rid not in self._locks:
            raise StoreError(
                f"run {rid} is not being run by this store; begin it with begin_run(), or "
                "take it up again with reopen_run(), before adding attempts to it"
            )
        test_id, attempt = record.get("test_id"), record.get("attempt")
        if (
            not isinstance(test_id, str)
            or isinstance(attempt, bool)
            or not isinstance(attempt, int)
        ):
            raise StoreError(
                f'run {rid}: an attempt\'s record needs "test_id" (a string) and '
                f'"attempt" (an integer), got test_id={test_id!r}, attempt={attempt!r}; '
                "set both before adding it"
            )
        try:
            data = msgspec.json.encode(record)
        except (TypeError, ValueError, OverflowError) as exc:
            raise StoreError(
                f"run {rid}: the record of case {test_id!r}, attempt {attempt}, is not "
                f"JSON ({exc}); give it only strings, numbers, booleans, None, lists and dicts"
            ) from exc
        with self._transaction("keep the attempt") as conn:
            conn.execute(
                "INSERT INTO attempts (run, seq, test_id, attempt, record) "
                "SELECT ?, coalesce(max(seq), 0) + 1, ?, ?, ? FROM attempts WHERE run = ?",
                (rid, test_id, attempt, data, rid),
            )

    def attempts(self, ref: RunRef) -> list[dict[str, Any]]:
        """The records in the run's journal, in the order they were added (a case's
        attempt run again on resuming is there twice; the run keeps the later one).
        Empty for a run imported from a file."""
        return self._attempts(self.resolve(ref))

    def _attempts(self, rid: int) -> list[dict[str, Any]]:
        import msgspec

        decode = msgspec.json.Decoder(dict[str, Any]).decode
        with self._translated("read the run's attempts"):
            rows = self._conn.execute(
                "SELECT record FROM attempts WHERE run = ? ORDER BY seq", (rid,)
            ).fetchall()
        return [decode(row[0]) for row in rows]

    def reopen_run(self, ref: RunRef) -> StoredRun:
        """Take up a run of ``evaldelta eval`` again, to resume it: its status is
        ``running`` again, and :meth:`add_attempt` adds to its journal.

        Raises:
            StoreError: the run was imported, not run here, or another live process
                is running it.
        """
        rid = self.resolve(ref)
        stored, _ = self._read(rid)
        if stored.format != EVAL_FORMAT:
            raise StoreError(
                f"run {rid} ({stored.name}) was imported from {stored.source}, not run by "
                "`evaldelta eval`; only a suite's runs can be resumed"
            )
        if rid not in self._locks:
            lock = self._lock(rid)
            if lock is None:
                raise StoreError(self._busy(rid))
            self._locks[rid] = lock
        try:
            with self._transaction("reopen the run") as conn:
                # Its records are its journal's again until it finishes.
                conn.execute(
                    "UPDATE runs SET status = 'running', finished_at = NULL, sequential = NULL "
                    "WHERE id = ?",
                    (rid,),
                )
                conn.execute("DELETE FROM record_columns WHERE run = ?", (rid,))
                conn.execute("DELETE FROM run_summaries WHERE run = ?", (rid,))
        except BaseException:
            self._locks.pop(rid).release()
            raise
        return self.info(rid)

    def finish_run(
        self,
        rid: int,
        status: str = "complete",
        *,
        finished_at: str | None = None,
        sequential: Mapping[str, Any] | None = None,
    ) -> StoredRun:
        """Finish a run begun with :meth:`begin_run` (or reopened): its records are
        built from its journal, as :func:`evaldelta.io._jsonl.from_records` reads them
        (the latest of an attempt run twice), and stored by column with its figures,
        in one transaction; its lock is let go of. Returns the run as it now is.

        Args:
            status: ``complete``; ``interrupted`` for a run stopped before its end;
                ``stopped early`` for one stopped once its comparison was settled.
            finished_at: when it finished (ISO 8601; default: now).
            sequential: how a run of ``--stop-when-settled`` went (a JSON object:
                settled, verdict, cases, alpha, margin, what was not spent); required
                with the status ``stopped early``.

        Raises:
            StoreError: another live process is running it.
        """
        if status not in ("complete", "interrupted", "stopped early"):
            raise StoreError(
                f"finish_run(status={status!r}): a run finishes complete, interrupted or "
                "stopped early"
            )
        if status == "stopped early" and sequential is None:
            raise StoreError(
                "finish_run: a run finishes 'stopped early' with sequential={...} (how it stopped)"
            )
        if rid not in self._locks:
            self.reopen_run(rid)
        with self._transaction("finish the run") as conn:
            stored, _ = self._read(rid)
            records = self._attempts(rid)
            conn.execute("DELETE FROM record_columns WHERE run = ?", (rid,))
            conn.execute("DELETE FROM run_summaries WHERE run = ?", (rid,))
            ended = finished_at or _now()
            if records:
                run = self._journal_run(stored, records, status=status)
                self._dialect.bulk_insert(
                    conn, "record_columns", _CHUNK_COLUMNS, _rows(rid, codec.encode_run(run))
                )
                _keep_summary(
                    conn, rid, _summarise(run, DEFAULT_PASS_THRESHOLD), DEFAULT_PASS_THRESHOLD
                )
                facts: tuple[Any, ...] = (
                    len(run),
                    len(run.test_ids),
                    _json(run.targets),
                    dataset_hash(run),
                    run.started_at,
                )
            else:
                facts = (0, 0, _json(stored.targets), "", stored.started_at)
            conn.execute(
                "UPDATE runs SET records = ?, cases = ?, targets = ?, dataset_hash = ?, "
                "started_at = ?, status = ?, finished_at = ?, sequential = ? WHERE id = ?",
                (
                    *facts,
                    status,
                    ended,
                    None if sequential is None else _json(dict(sequential)),
                    rid,
                ),
            )
        self._locks.pop(rid).release()
        return self.info(rid)

    def _lock(self, rid: int) -> RunLock | None:
        return self._db.lock_run(rid)

    def _busy(self, rid: int) -> str:
        return f"run {rid} is still running in another process; wait for it, or stop it first"

    # -- copying between stores -------------------------------------------------------

    def copy_run(self, ref: RunRef, target: RunStore) -> tuple[StoredRun, bool]:
        """Copy a run into another store (SQLite or PostgreSQL, either way), as it is:
        its name, config, status, notes, times, suite, case order, figures, journal and
        every stored column, byte for byte (each chunk's checksum checked on the way).

        A run already there (the same name, time of storing, source and dataset) is not
        copied again. Returns the run as the target holds it, and whether it was copied.

        Raises:
            StoreError: no such run, or another live process is running it.
        """
        import zlib

        if target is self or target.location == self.location:
            raise StoreError(
                f"cannot copy run {ref} of {self.location} into the same store; "
                "name another store to copy it to"
            )
        with self._translated("read the run"):
            self._conn.execute(self._dialect.begin_read)
            try:
                stored, _ = self._read(self.resolve(ref))
                if stored.status == "running":
                    raise StoreError(
                        f"run {stored.id} is still running in another process; wait for it "
                        "to finish, then copy it"
                    )
                row = self._conn.execute(
                    f"SELECT {_RUN_COLUMNS} FROM runs WHERE id = ?", (stored.id,)
                ).fetchone()
                copied = dict(zip(_RUN_COLUMNS.split(", "), row, strict=True))
                existing = target.find_copy(copied)
                if existing is not None:
                    self._conn.execute("COMMIT")
                    return target.info(existing), False
                summaries = self._conn.execute(
                    f"SELECT position, pass_threshold, {_SUMMARY_COLUMNS} FROM run_summaries "
                    "WHERE run = ? ORDER BY position",
                    (stored.id,),
                ).fetchall()
                attempts = self._conn.execute(
                    "SELECT seq, test_id, attempt, record FROM attempts WHERE run = ? ORDER BY seq",
                    (stored.id,),
                ).fetchall()
                chunks = self._conn.execute(
                    "SELECT name, first, encoding, data, crc FROM record_columns WHERE run = ? "
                    "ORDER BY name, first",
                    (stored.id,),
                )

                def checked() -> Iterator[tuple[Any, ...]]:
                    for name, first, encoding, data, crc in chunks:
                        data = bytes(data)
                        actual = zlib.crc32(data)
                        if crc is not None and actual != crc:
                            raise self._db.damaged(
                                f"run {stored.id}'s column {name!r} fails its checksum"
                            )
                        yield name, first, encoding, data, actual

                rid = target._paste(copied, stored.suite, summaries, attempts, checked())
            finally:
                if self._conn.in_transaction:
                    self._conn.execute("COMMIT")
        return target.info(rid), True

    def find_copy(self, run: Mapping[str, Any]) -> int | None:
        """The id of a run that is ``run`` (a row of ``runs`` from another store) copied
        here: the same name, time of storing, source and dataset."""
        with self._translated("look up a run"):
            row = self._conn.execute(
                "SELECT max(id) FROM runs WHERE name = ? AND created_at = ? AND source_path = ? "
                "AND dataset_hash = ? AND records = ?",
                tuple(
                    run[k] for k in ("name", "created_at", "source_path", "dataset_hash", "records")
                ),
            ).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _paste(
        self,
        run: Mapping[str, Any],
        suite: str | None,
        summaries: Sequence[Sequence[Any]],
        attempts: Sequence[Sequence[Any]],
        chunks: Iterable[tuple[Any, ...]],
    ) -> int:
        """Store a run copied from another store, in one transaction; returns its id here."""
        columns = [c for c in _RUN_COLUMNS.split(", ") if c != "suite"]
        with self._transaction("store the copied run") as conn:
            suite_id = None if suite is None else _suite_id(conn, suite)
            rid = self._dialect.insert(
                conn,
                f"INSERT INTO runs ({', '.join(columns)}, suite) "
                f"VALUES ({', '.join('?' * (len(columns) + 1))})",
                [*(run[c] for c in columns), suite_id],
            )
            self._dialect.bulk_insert(
                conn, "record_columns", _CHUNK_COLUMNS, ((rid, *chunk) for chunk in chunks)
            )
            conn.executemany(_INSERT_SUMMARY, [(rid, *row) for row in summaries])
            conn.executemany(
                "INSERT INTO attempts (run, seq, test_id, attempt, record) VALUES (?, ?, ?, ?, ?)",
                [
                    (rid, seq, test_id, attempt, bytes(record))
                    for seq, test_id, attempt, record in attempts
                ],
            )
        return rid

    # -- changing -------------------------------------------------------------------

    def delete_run(self, ref: RunRef) -> StoredRun:
        """Delete a run, its records and its journal; returns what it was.

        Raises:
            StoreError: the run is being run by another live process.
        """
        with self._transaction("delete the run") as conn:
            stored = self.info(ref)
            if stored.status == "running" and stored.id not in self._locks:
                raise StoreError(self._busy(stored.id))
            conn.execute("DELETE FROM runs WHERE id = ?", (stored.id,))
        lock = self._locks.pop(stored.id, None)
        if lock is not None:
            lock.release()
        else:
            self._db.forget_run(stored.id)
        return stored

    def rename_run(self, ref: RunRef, name: str) -> StoredRun:
        """Give a run a new name; returns it as it now is."""
        _check_name(name)
        with self._transaction("rename the run") as conn:
            stored = self.info(ref)
            conn.execute("UPDATE runs SET name = ? WHERE id = ?", (name, stored.id))
        return self.info(stored.id)


def latest_attempts(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A journal's records with each (test id, target, attempt) once: the latest, in
    the place of the first (resuming runs again the attempts lost to infrastructure)."""
    position: dict[tuple[Any, Any, Any], int] = {}
    out: list[dict[str, Any]] = []
    for record in records:
        key = (record.get("test_id"), record.get("target"), record.get("attempt"))
        at = position.get(key)
        if at is None:
            position[key] = len(out)
            out.append(dict(record))
        else:
            out[at] = dict(record)
    return out


def _suite_id(conn: Connection, name: str) -> int:
    """The id of the suite called ``name``, made when there is none (in the caller's
    write transaction)."""
    if not isinstance(name, str) or not name.strip():
        raise StoreError(f"a suite's name cannot be empty, got {name!r}; give the suite a name")
    conn.execute(
        "INSERT INTO suites (name, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (name, _now()),
    )
    row = conn.execute("SELECT id FROM suites WHERE name = ?", (name,)).fetchone()
    return int(row[0])


def _summarise(run: Run, pass_threshold: float) -> RunFigures:
    from evaldelta.analysis._summary import summarise

    return summarise(run, pass_threshold)


def _figures_of(row: Sequence[Any]) -> dict[str, Any]:
    """A row of ``SELECT {_SUMMARY_COLUMNS} FROM run_summaries`` as one target's figures."""
    figures = dict(zip(_FIGURES, row, strict=True))
    figures["attempts_per_case"] = _from_json(figures["attempts_per_case"])
    return figures


def _keep_summary(
    conn: Connection,
    rid: int,
    figures: RunFigures,
    pass_threshold: float,
    *,
    replace: bool = True,
) -> None:
    keep_first = "" if replace else " ON CONFLICT DO NOTHING"
    conn.executemany(
        _INSERT_SUMMARY + keep_first,
        [
            (
                rid,
                position,
                pass_threshold,
                *(_json(f[key]) if key == "attempts_per_case" else f[key] for key in _FIGURES),
            )
            for position, f in enumerate(figures)
        ],
    )


class _WriteProgress:
    """Counts the columns an import has written, to tell ``progress`` how far it has got.

    The unit is one column of one record: a run of ``n`` records and ``k`` stored
    columns is ``n * k`` of them, and a chunk counts as done once the next is asked for.
    """

    def __init__(self, runs: Sequence[Run], progress: Progress | None) -> None:
        self.progress = progress
        self.total = (
            sum(len(r) * len(codec.column_names(r)) for r in runs) if progress is not None else 0
        )
        self.done = 0

    def count(self, run: Run, chunks: Iterable[codec.Chunk]) -> Iterator[codec.Chunk]:
        if self.progress is None:
            yield from chunks
            return
        n, base, column, last = len(run), self.done, -1, None
        for chunk in chunks:
            if chunk.name != last:
                column, last = column + 1, chunk.name
            self.progress(base + column * n + chunk.first, self.total)
            yield chunk
        self.done = base + (column + 1) * n

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(self.total, self.total)


def _rows(rid: int, chunks: Iterable[codec.Chunk]) -> Iterator[tuple[Any, ...]]:
    import zlib

    for chunk in chunks:
        yield (rid, chunk.name, chunk.first, chunk.encoding, chunk.data, zlib.crc32(chunk.data))


def store_exists(path: str | os.PathLike[str]) -> bool:
    """Whether there is a run store at ``path``: a file, or a PostgreSQL database (its
    schema) that holds one. Makes none."""
    if not is_url(path):
        return os.path.exists(path)
    from evaldelta.store._postgres import PostgresBackend

    return PostgresBackend.holds_store(str(path))


def open_store(path: str | os.PathLike[str] = DEFAULT_STORE, *, create: bool = True) -> RunStore:
    """Open (and, unless ``create`` is false, create on first use) the run store at ``path``."""
    return RunStore(path, create=create)
