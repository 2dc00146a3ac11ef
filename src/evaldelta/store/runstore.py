"""The run store: runs kept in an embedded SQLite file, named, listed and read back.

An import is one transaction: a crash or Ctrl-C halfway leaves no part of the run.
The store runs in WAL mode with a busy timeout, so that two processes importing at
once both succeed (one waits for the other), and readers never wait for a writer.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaldelta.errors import RunNotFoundError, StoreError
from evaldelta.model import Run
from evaldelta.pairing.cases import DEFAULT_PASS_THRESHOLD
from evaldelta.store import codec
from evaldelta.store.schema import SCHEMA_VERSION, check_version, migrate, read_version

__all__ = [
    "DEFAULT_STORE",
    "Progress",
    "RunStore",
    "StoredRun",
    "default_name",
    "open_store",
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

_COLUMNS = (
    "id, name, created_at, started_at, finished_at, status, source_format, source_path, "
    "dataset_hash, config, notes, targets, records, cases"
)
#: The figures of :func:`evaldelta.analysis.summary.summarise`, one column each in
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
#: One run's figures, per target in the run's order of targets.
RunFigures = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class StoredRun:
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

    @property
    def label(self) -> str:
        """How the run is named in output: ``before (run 3)``."""
        return f"{self.name} (run {self.id})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "created_at": self.created_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "status": self.status,
            "format": self.format,
            "source": self.source,
            "dataset_hash": self.dataset_hash,
            "config": self.config,
            "notes": self.notes,
            "targets": self.targets,
            "records": self.records,
            "cases": self.cases,
        }


def _json(value: Any) -> str:
    import msgspec

    return msgspec.json.encode(value).decode()


def _from_json(text: str) -> Any:
    import msgspec

    return msgspec.json.decode(text)


def _stored(row: tuple[Any, ...]) -> StoredRun:
    """A row of ``SELECT {_COLUMNS} FROM runs`` as a :class:`StoredRun`."""
    rid, name, created, started, finished, status, fmt, src, dhash, config, notes, targets, n, k = (
        row
    )
    return StoredRun(
        id=rid,
        name=name,
        created_at=created,
        started_at=started,
        finished_at=finished,
        status=status,
        format=fmt,
        source=src,
        dataset_hash=dhash,
        config=_from_json(config),
        notes=notes,
        targets=_from_json(targets),
        records=n,
        cases=k,
    )


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
        raise StoreError("a run's name cannot be empty; give one with --name NAME")
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
    """Runs kept in an SQLite file: add, read back, list, rename, delete.

    A run is referred to by its id (``3`` or ``"3"``) or by its name (the latest run
    of that name)::

        store = RunStore(".evaldelta/runs.db")
        before = store.add_run(evaldelta.load("before.jsonl"), name="before")
        run = store.get_run("before")

    Args:
        path: the store's file; created on first use unless ``create`` is false.
        create: create the store (and its folder) when the file does not exist.
        timeout: seconds to wait for another process's import to finish.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_STORE,
        *,
        create: bool = True,
        timeout: float = BUSY_TIMEOUT,
    ) -> None:
        self.path = Path(path)
        self._name = str(path)
        self._conn = self._open(create, timeout)

    # -- opening ------------------------------------------------------------------

    def _open(self, create: bool, timeout: float) -> sqlite3.Connection:
        where = self._name
        if not self.path.exists():
            if not create:
                raise StoreError(
                    f"no run store at {where}; store a run first with "
                    "`evaldelta runs import FILE`, or choose a store with --store PATH "
                    "or EVALDELTA_STORE"
                )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{where}: cannot create the store's folder ({exc.strerror or exc}); "
                    "choose another place with --store PATH"
                ) from exc
        elif self.path.is_dir():
            raise StoreError(f"{where}: is a folder, not a run store; give the file's path")
        try:
            conn = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{where}: cannot open the run store ({exc})") from exc
        try:
            with self._translated("open"):
                # Look before touching anything: a store of a newer schema is left as it is.
                version = read_version(conn)
                check_version(version, where)
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute("PRAGMA synchronous = NORMAL")
                # A big import grows the write-ahead log; give the space back afterwards.
                conn.execute("PRAGMA journal_size_limit = 67108864")
                if version != SCHEMA_VERSION:
                    # Only a store to build or bring up to date takes the write lock here:
                    # an up-to-date one is read while another process imports (WAL mode,
                    # set once, stays with the file).
                    conn.execute("PRAGMA journal_mode = WAL")
                    migrate(conn, where)
        except BaseException:
            conn.close()
            raise
        return conn

    @contextmanager
    def _translated(self, doing: str) -> Iterator[None]:
        """SQLite's exceptions as :class:`StoreError` saying where and what to do."""
        where = self._name
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if "locked" in text or "busy" in text:
                raise StoreError(
                    f"{where}: the store stayed locked by another process while trying to "
                    f"{doing}; try again when it has finished"
                ) from exc
            if "readonly" in text or "read-only" in text:
                raise StoreError(
                    f"{where}: cannot write to the store ({text}); check the file's "
                    "permissions, or choose another store with --store PATH"
                ) from exc
            raise StoreError(f"{where}: cannot {doing} ({text})") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"{where}: not a run store evaldelta can read ({exc}); choose another "
                "file with --store PATH"
            ) from exc

    @contextmanager
    def _transaction(self, doing: str) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (so a busy store is waited for, not
        failed), rolled back on any exception, KeyboardInterrupt included."""
        conn = self._conn
        with self._translated(doing):
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def close(self) -> None:
        """Close the store's connection."""
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({self._name!r})"

    @property
    def schema_version(self) -> int:
        """The schema version of the store's file."""
        version = read_version(self._conn)
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
    ) -> int:
        """Store ``run`` as it is (all its targets in one stored run); returns its id.

        Args:
            name: the run's name (default: its file's name, without extensions).
            config: settings to record beside those the run declares (these win).
            notes: free text kept with the run.
            progress: told how far the writing has got (see :data:`Progress`).
        """
        counter = _WriteProgress([run], progress)
        with self._transaction("store the run") as conn:
            rid = self._insert(conn, run, name, config, notes, counter)
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
    ) -> list[int]:
        """Store ``run`` as ``evaldelta runs import`` does; returns the new ids.

        A run of several targets becomes one stored run per target, named
        ``NAME/target``, all in one transaction; ``target`` keeps only that one.
        ``progress`` is told how far the writing has got (see :data:`Progress`).
        """
        base = name if name is not None else default_name(run.source)
        if target is not None:
            parts = [(base, run.select_target(target))]
        elif len(run.targets) > 1:
            if run.has_unnamed_target:
                named = ", ".join(run.target_names)
                raise StoreError(
                    f"{run.source}: some records name a target ({named}) and some do not; "
                    "give every record a target, or pick one with --target TARGET"
                )
            parts = [(f"{base}/{t}", run.select_target(t)) for t in run.target_names]
        else:
            parts = [(base, run)]
        counter = _WriteProgress([part for _, part in parts], progress)
        with self._transaction("store the run") as conn:
            ids = [
                self._insert(conn, part, part_name, config, notes, counter)
                for part_name, part in parts
            ]
        counter.finish()
        return ids

    def _insert(
        self,
        conn: sqlite3.Connection,
        run: Run,
        name: str | None,
        config: Mapping[str, Any] | None,
        notes: str | None,
        counter: _WriteProgress,
    ) -> int:
        name = _check_name(name if name is not None else default_name(run.source))
        if len(run) == 0:
            raise StoreError(f"{run.source}: has no records; there is nothing to store")
        merged = {**run.config, **(config or {})}
        source = run.source
        if not source.startswith("<") and os.path.exists(source):
            source = os.path.abspath(source)
        cursor = conn.execute(
            "INSERT INTO runs (name, created_at, started_at, finished_at, status, "
            "source_format, source_path, dataset_hash, config, notes, targets, records, cases) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            ),
        )
        rid = int(cursor.lastrowid or 0)
        conn.executemany(
            "INSERT INTO record_columns (run, name, first, encoding, data) VALUES (?, ?, ?, ?, ?)",
            _rows(rid, counter.count(run, codec.encode_run(run))),
        )
        _keep_summary(conn, rid, _summarise(run, DEFAULT_PASS_THRESHOLD), DEFAULT_PASS_THRESHOLD)
        return rid

    # -- reading --------------------------------------------------------------------

    def info(self, ref: RunRef) -> StoredRun:
        """What the store knows about a run, without reading its records."""
        rid = self.resolve(ref)
        with self._translated("read the run"):
            row = self._conn.execute(f"SELECT {_COLUMNS} FROM runs WHERE id = ?", (rid,)).fetchone()
        if row is None:  # deleted since it was resolved
            raise StoreError(f"run {rid} not found in {self._name}; {LIST_HINT}")
        return _stored(row)

    def get_run(
        self, ref: RunRef, *, keep_text: bool = True, progress: Progress | None = None
    ) -> Run:
        """The stored run ``ref`` names, as a :class:`~evaldelta.model.Run`.

        Its records, status, config, start and end times and input fingerprints are
        those it was stored with, so comparisons apply the same fairness checks as
        on the file. ``keep_text=False`` leaves out inputs, outputs and expected
        answers (faster, and all a comparison needs). ``progress`` is told how many
        bytes of the run's columns have been read, out of how many.
        """
        with self._translated("read the run"):
            # One read transaction: the run cannot be deleted between its two queries.
            self._conn.execute("BEGIN")
            try:
                stored = self.info(ref)
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
                columns: dict[str, list[tuple[str, bytes]]] = {}
                for name, encoding, data in self._conn.execute(
                    f"SELECT name, encoding, data {where} ORDER BY name, first", (stored.id,)
                ):
                    columns.setdefault(name, []).append((encoding, data))
                    if progress is not None:
                        done += len(data)
                        progress(done, total)
            finally:
                self._conn.execute("COMMIT")
        return codec.decode_run(
            columns,
            stored.records,
            source=stored.label,
            format=stored.format,
            status=stored.status,
            config=stored.config,
            started_at=stored.started_at,
            finished_at=stored.finished_at,
        )

    def list_runs(self, name: str | None = None, *, limit: int | None = None) -> list[StoredRun]:
        """The stored runs, newest first; ``name`` a glob (``before*``), ``limit`` how many."""
        query = f"SELECT {_COLUMNS} FROM runs"
        params: list[Any] = []
        if name is not None:
            query += " WHERE name GLOB ?"
            params.append(name)
        query += " ORDER BY id DESC"
        if limit is not None:
            query += " LIMIT ?"
            params.append(max(limit, 0))
        with self._translated("list the runs"):
            return [_stored(row) for row in self._conn.execute(query, params)]

    def summary(self, ref: RunRef, *, pass_threshold: float = DEFAULT_PASS_THRESHOLD) -> RunFigures:
        """The run's figures per target, as :func:`evaldelta.analysis.summary.summarise`
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

        Raises:
            StoreError: no run with one of the ids.
        """
        wanted = list(dict.fromkeys(ids))
        found: dict[int, RunFigures] = {}
        with self._translated("read the runs' summaries"):
            for start in range(0, len(wanted), 500):  # SQLite's limit on parameters
                part = wanted[start : start + 500]
                marks = ", ".join("?" * len(part))
                for row in self._conn.execute(
                    f"SELECT run, {_SUMMARY_COLUMNS} FROM run_summaries "
                    f"WHERE run IN ({marks}) AND pass_threshold = ? ORDER BY run, position",
                    (*part, pass_threshold),
                ):
                    found.setdefault(int(row[0]), []).append(_figures_of(row[1:]))
        missing = [rid for rid in wanted if rid not in found]
        for done, rid in enumerate(missing):
            if progress is not None:
                progress(done, len(missing))
            figures = _summarise(self.get_run(rid, keep_text=False), pass_threshold)
            found[rid] = figures
            if keep and pass_threshold == DEFAULT_PASS_THRESHOLD:
                self._backfill(rid, figures, pass_threshold)
        if progress is not None and missing:
            progress(len(missing), len(missing))
        return {rid: found[rid] for rid in wanted}

    def _backfill(self, rid: int, figures: RunFigures, pass_threshold: float) -> None:
        """Keep the figures of a run stored without them."""
        try:
            with self._transaction("keep the run's summary") as conn:
                if conn.execute("SELECT 1 FROM runs WHERE id = ?", (rid,)).fetchone():
                    _keep_summary(conn, rid, figures, pass_threshold, replace=False)
        except StoreError:
            # Only a cache: a store we cannot write to now (a read-only file, or one
            # another process keeps locked) still answers, and computes the figures
            # again the next time they are asked for.
            pass

    # -- changing -------------------------------------------------------------------

    def delete_run(self, ref: RunRef) -> StoredRun:
        """Delete a run and its records; returns what it was."""
        with self._transaction("delete the run") as conn:
            stored = self.info(ref)
            conn.execute("DELETE FROM runs WHERE id = ?", (stored.id,))
        return stored

    def rename_run(self, ref: RunRef, name: str) -> StoredRun:
        """Give a run a new name; returns it as it now is."""
        _check_name(name)
        with self._transaction("rename the run") as conn:
            stored = self.info(ref)
            conn.execute("UPDATE runs SET name = ? WHERE id = ?", (name, stored.id))
        return self.info(stored.id)


def _summarise(run: Run, pass_threshold: float) -> RunFigures:
    from evaldelta.analysis.summary import summarise

    return summarise(run, pass_threshold)


def _figures_of(row: Sequence[Any]) -> dict[str, Any]:
    """A row of ``SELECT {_SUMMARY_COLUMNS} FROM run_summaries`` as one target's figures."""
    figures = dict(zip(_FIGURES, row, strict=True))
    figures["attempts_per_case"] = _from_json(figures["attempts_per_case"])
    return figures


def _keep_summary(
    conn: sqlite3.Connection,
    rid: int,
    figures: RunFigures,
    pass_threshold: float,
    *,
    replace: bool = True,
) -> None:
    verb = "INSERT" if replace else "INSERT OR IGNORE"
    marks = ", ".join("?" * (3 + len(_FIGURES)))
    conn.executemany(
        f"{verb} INTO run_summaries (run, position, pass_threshold, {_SUMMARY_COLUMNS}) "
        f"VALUES ({marks})",
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
    for chunk in chunks:
        yield (rid, chunk.name, chunk.first, chunk.encoding, chunk.data)


def open_store(path: str | os.PathLike[str] = DEFAULT_STORE, *, create: bool = True) -> RunStore:
    """Open (and, unless ``create`` is false, create on first use) the run store at ``path``."""
    return RunStore(path, create=create)
