"""The SQLite backend (:mod:`evaldelta.store._sqlite`): opening a store (created with
its folders, its pragmas, 64 KiB pages and WAL; an up-to-date one opened without the
write lock), opening it for reading only (``mode=ro``, then ``immutable=1``), what it
refuses and the exact message of each refusal (no store, a folder, a folder that cannot
be made, a file that is no store, an empty one read only, a newer or older schema),
SQLite's errors as :class:`~evaldelta.errors.StoreError` (locked, disk full, read-only,
damaged), whether a store may be written, and the lock files of the runs it runs."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from evaldelta.cli._main import error_message
from evaldelta.errors import StoreError
from evaldelta.store import _sqlite
from evaldelta.store._dialect import SQLITE
from evaldelta.store._liveness import RunLock, lock_path
from evaldelta.store._schema import MIGRATIONS, SCHEMA_VERSION, migrate, read_version
from evaldelta.store._sqlite import PAGE_SIZE, SQLiteBackend, can_write

NO_STORE = (
    "store a run first with evaldelta.evaluate() or RunStore(PATH).import_run(), "
    "or choose a store with store=PATH"
)
#: ``NO_STORE`` as the command line says it.
NO_STORE_CLI = (
    "store a run first with `evaldelta eval SUITE` or `evaldelta runs import FILE`, "
    "or choose a store with --store PATH or EVALDELTA_STORE"
)
DAMAGED_MEND = (
    "; export the runs that still read (evaldelta runs export ID --store PATH), then "
    "restore the store from a copy"
)


def open_backend(
    path: str | os.PathLike[str],
    *,
    create: bool = True,
    timeout: float = 1.0,
    readonly: bool = False,
) -> SQLiteBackend:
    return SQLiteBackend(path, create=create, timeout=timeout, readonly=readonly)


def made(path: Path) -> Path:
    """A store at ``path``, up to date, closed."""
    open_backend(path).close()
    return path


def built(path: Path, versions: int, *, page_size: int | None = None) -> Path:
    """A database of the first ``versions`` migrations, made without the backend (so in
    SQLite's default journal mode, and page size unless given)."""
    conn = sqlite3.connect(path, isolation_level=None)
    if page_size is not None:
        conn.execute(f"PRAGMA page_size = {page_size}")
    migrate(conn, str(path), MIGRATIONS[:versions])
    conn.close()
    return path


def pragma(conn: sqlite3.Connection, name: str) -> Any:
    return conn.execute(f"PRAGMA {name}").fetchone()[0]


def refused(**kwargs: Any) -> StoreError:
    with pytest.raises(StoreError) as err:
        open_backend(**kwargs)
    return err.value


# -- creating and opening ---------------------------------------------------------------------


def test_a_new_store_is_made_with_its_folders(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "runs.db"
    backend = open_backend(path)
    try:
        assert path.is_file()
        assert (backend.path, backend.where, backend.readonly) == (path, str(path), False)
        assert backend.dialect is SQLITE
        assert read_version(backend.conn) == SCHEMA_VERSION == len(MIGRATIONS)
        assert backend.conn.isolation_level is None  # the store says BEGIN and COMMIT
        assert backend.conn.in_transaction is False
    finally:
        backend.close()


def test_a_new_store_has_its_pragmas(tmp_path: Path) -> None:
    backend = open_backend(tmp_path / "runs.db")
    try:
        conn = backend.conn
        assert pragma(conn, "foreign_keys") == 1
        assert pragma(conn, "synchronous") == 1  # NORMAL
        assert pragma(conn, "journal_size_limit") == 67108864
        assert pragma(conn, "journal_mode") == "wal"
        assert pragma(conn, "page_size") == PAGE_SIZE == 65536
        assert pragma(conn, "query_only") == 0
    finally:
        backend.close()


def test_a_store_keeps_its_page_size_and_wal_mode_when_reopened(tmp_path: Path) -> None:
    path = made(tmp_path / "runs.db")
    other = sqlite3.connect(path)
    try:
        # Stored in the file: seen by a connection that set nothing.
        assert pragma(other, "page_size") == 65536
        assert pragma(other, "journal_mode") == "wal"
    finally:
        other.close()
    backend = open_backend(path)
    try:
        assert pragma(backend.conn, "page_size") == 65536
        # Per connection, so set again on every opening.
        assert pragma(backend.conn, "foreign_keys") == 1
        assert pragma(backend.conn, "synchronous") == 1
    finally:
        backend.close()


def test_an_old_store_is_migrated_into_wal_and_keeps_its_pages(tmp_path: Path) -> None:
    path = built(tmp_path / "old.db", 1, page_size=4096)
    conn = sqlite3.connect(path)
    assert pragma(conn, "journal_mode") == "delete"
    conn.close()
    backend = open_backend(path)
    try:
        assert read_version(backend.conn) == SCHEMA_VERSION
        assert pragma(backend.conn, "journal_mode") == "wal"
        # A page size is chosen once, when the file is made (and WAL fixes it).
        assert pragma(backend.conn, "page_size") == 4096
    finally:
        backend.close()


def test_an_up_to_date_store_is_opened_without_the_write_lock(tmp_path: Path) -> None:
    path = made(tmp_path / "runs.db")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        backend = open_backend(path, timeout=0.05)
        assert read_version(backend.conn) == SCHEMA_VERSION
        backend.close()
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_an_up_to_date_store_is_left_in_its_journal_mode(tmp_path: Path) -> None:
    """WAL is set when a store is made or migrated, never on a store already up to
    date (that would take the write lock at every opening)."""
    path = built(tmp_path / "runs.db", SCHEMA_VERSION)
    backend = open_backend(path)
    try:
        assert pragma(backend.conn, "journal_mode") == "delete"
    finally:
        backend.close()


def test_a_store_to_migrate_while_another_process_writes_stays_locked(tmp_path: Path) -> None:
    path = built(tmp_path / "old.db", 1)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        err = refused(path=path, timeout=0.05)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert str(err) == (
        f"{path}: the store stayed locked by another process while trying to open the "
        "store; try again when it has finished"
    )
    assert err.option is None
    assert isinstance(err.__cause__, sqlite3.OperationalError)
    conn = sqlite3.connect(path)
    assert read_version(conn) == 1  # left as it was
    conn.close()


def test_the_store_is_named_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    backend = open_backend("runs.db")
    try:
        assert backend.where == "runs.db"
        assert backend.path == Path("runs.db")
    finally:
        backend.close()
    assert (tmp_path / "runs.db").is_file()


def test_close_closes_the_connection(tmp_path: Path) -> None:
    backend = open_backend(tmp_path / "runs.db")
    backend.close()
    with pytest.raises(sqlite3.ProgrammingError, match=r"^Cannot operate on a closed database\.$"):
        backend.conn.execute("SELECT 1")


# -- what is refused on opening ---------------------------------------------------------------


@pytest.mark.parametrize("readonly", [False, True])
def test_no_store_is_made_when_not_asked_to(tmp_path: Path, readonly: bool) -> None:
    path = tmp_path / "missing" / "runs.db"
    err = refused(path=path, create=False, readonly=readonly)
    assert str(err) == f"no run store at {path}; {NO_STORE}"
    assert err.option == "store"
    assert not path.parent.exists()


def test_a_read_only_opening_never_makes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    err = refused(path=path, create=True, readonly=True)
    assert str(err) == f"no run store at {path}; {NO_STORE}"
    assert not path.exists()


@pytest.mark.parametrize("readonly", [False, True])
def test_a_folder_is_refused(tmp_path: Path, readonly: bool) -> None:
    err = refused(path=tmp_path, readonly=readonly)
    assert (
        str(err)
        == f"{tmp_path}: is a folder, not a run store; give the file's path with store=PATH"
    )
    assert err.option == "store"
    assert error_message(err) == (
        f"{tmp_path}: is a folder, not a run store; give the file's path with --store PATH"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("readonly", [False, True])
def test_a_named_pipe_is_refused_without_being_opened(tmp_path: Path, readonly: bool) -> None:
    pipe = tmp_path / "runs.db"
    os.mkfifo(pipe)  # opening it would wait for a writer, or fail as a disk I/O error
    err = refused(path=pipe, readonly=readonly)
    assert str(err) == (
        f"{pipe}: is not a regular file, not a run store; give the file's path with store=PATH"
    )
    assert err.option == "store"


def test_an_empty_file_opened_for_writing_becomes_a_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    path.touch()
    backend = open_backend(path, create=False)
    try:
        assert read_version(backend.conn) == SCHEMA_VERSION
    finally:
        backend.close()


@pytest.mark.parametrize("empty", ["file", "database"])
def test_an_empty_file_opened_for_reading_only_is_no_store_yet(tmp_path: Path, empty: str) -> None:
    """Not "a store of an older evaldelta (schema 0)": opened for writing, the file
    would become a new store, as a missing one would; so it is named as no store yet."""
    path = tmp_path / "runs.db"
    if empty == "file":
        path.touch()
        what = "an empty file"
    else:
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (a TEXT)")
        conn.execute("DROP TABLE t")
        conn.close()
        assert path.stat().st_size > 0
        what = "an empty SQLite database"
    before = path.read_bytes()
    err = refused(path=path, create=False, readonly=True)
    assert str(err) == f"{path}: is {what}, not a run store yet; {NO_STORE}"
    assert err.option == "store"
    assert error_message(err) == f"{path}: is {what}, not a run store yet; {NO_STORE_CLI}"
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"]


@pytest.mark.parametrize(
    ("below", "reason"),
    [
        (("file", "runs.db"), "File exists"),
        (("file", "sub", "runs.db"), "Not a directory"),
    ],
)
def test_a_folder_that_cannot_be_made_is_named(
    tmp_path: Path, below: tuple[str, ...], reason: str
) -> None:
    (tmp_path / "file").write_text("not a folder\n", encoding="utf-8")
    path = tmp_path.joinpath(*below)
    err = refused(path=path)
    assert str(err) == (
        f"{path}: cannot create the store's folder ({reason}); choose another place with store=PATH"
    )
    assert err.option == "store"
    assert isinstance(err.__cause__, OSError)
    assert (tmp_path / "file").read_text(encoding="utf-8") == "not a folder\n"


@pytest.mark.parametrize("readonly", [False, True])
def test_a_file_that_is_no_database_is_refused_and_left_alone(
    tmp_path: Path, readonly: bool
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_text('{"test_id": "a", "score": 1}\n' * 100, encoding="utf-8")
    before = path.read_bytes()
    err = refused(path=path, readonly=readonly)
    assert str(err) == (
        f"{path}: not a run store evaldelta can read (file is not a database); choose "
        "another file with store=PATH"
    )
    assert err.option == "store"
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.jsonl"]


@pytest.mark.parametrize("readonly", [False, True])
def test_another_sqlite_database_is_refused_and_left_alone(tmp_path: Path, readonly: bool) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    err = refused(path=path, readonly=readonly)
    assert str(err) == (
        f"{path}: is a SQLite database but not an evaldelta run store (it has no "
        "schema_version table); choose another file with store=PATH"
    )
    assert err.option == "store"
    assert path.read_bytes() == before


@pytest.mark.parametrize("readonly", [False, True])
def test_a_store_of_a_newer_evaldelta_is_refused_and_left_alone(
    tmp_path: Path, readonly: bool
) -> None:
    path = built(tmp_path / "newer.db", SCHEMA_VERSION)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    before = path.read_bytes()
    err = refused(path=path, readonly=readonly)
    assert str(err) == (
        f"{path}: written by a newer evaldelta (store schema version {SCHEMA_VERSION + 1}; "
        f"this evaldelta knows up to {SCHEMA_VERSION}); upgrade evaldelta (pip install -U "
        "evaldelta) to use it, or choose another store with store=PATH. "
        "The store was not changed."
    )
    assert err.option == "store"
    assert path.read_bytes() == before
    assert not Path(f"{path}-wal").exists()


def test_an_older_store_opened_for_reading_only_is_refused_and_left_alone(
    tmp_path: Path,
) -> None:
    path = built(tmp_path / "old.db", 2)
    before = path.read_bytes()
    err = refused(path=path, readonly=True)
    assert str(err) == (
        f"{path}: the store is of an older evaldelta (schema 2) and must be brought up to "
        "date before it can be read; open it once with write access (evaldelta runs list "
        "--store PATH)"
    )
    assert err.option == "store"
    assert path.read_bytes() == before


# -- reading only --------------------------------------------------------------------------------


def test_a_store_opened_for_reading_only_reads_and_refuses_writes(tmp_path: Path) -> None:
    path = made(tmp_path / "runs.db")
    backend = open_backend(path, readonly=True, create=False)
    try:
        assert backend.readonly
        assert pragma(backend.conn, "query_only") == 1
        assert read_version(backend.conn) == SCHEMA_VERSION
        with pytest.raises(StoreError) as err, backend.translated("delete the run"):
            backend.conn.execute("DELETE FROM runs")
        assert str(err.value) == (
            f"{path}: opened for reading only (no write access to it or its folder), so it "
            "cannot delete the run; ask for write access, or copy the store"
        )
        assert err.value.option == "store"
    finally:
        backend.close()


def test_a_path_with_uri_characters_is_opened_for_reading(tmp_path: Path) -> None:
    """The path goes into a ``file:`` URI: ``?``, ``#``, ``%`` and spaces are quoted."""
    folder = tmp_path / "a b#c?d%e&f=g"
    folder.mkdir()
    path = made(folder / "runs %41.db")
    backend = open_backend(path, readonly=True)
    try:
        assert read_version(backend.conn) == SCHEMA_VERSION
        assert backend.where == str(path)
    finally:
        backend.close()


def spy_connect(
    monkeypatch: pytest.MonkeyPatch, fails: Callable[[str], bool]
) -> list[tuple[str, bool]]:
    """Record what ``sqlite3.connect`` is asked to open; refuse what ``fails`` says."""
    real = sqlite3.connect
    asked: list[tuple[str, bool]] = []

    def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        asked.append((str(database), bool(kwargs.get("uri"))))
        if fails(str(database)):
            raise sqlite3.OperationalError("unable to open database file")
        return real(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return asked


def test_reading_only_falls_back_to_an_immutable_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where SQLite may not make the shared-memory file beside the store (a folder no
    one may write to), ``mode=ro`` cannot open it: it is opened as immutable instead."""
    path = made(tmp_path / "runs.db")
    asked = spy_connect(monkeypatch, lambda uri: not uri.endswith("&immutable=1"))
    backend = open_backend(path, readonly=True)
    try:
        assert read_version(backend.conn) == SCHEMA_VERSION
        assert pragma(backend.conn, "query_only") == 1
    finally:
        backend.close()
    base = f"file:{quote(str(path.resolve()))}?mode=ro"
    assert asked == [(base, True), (base + "&immutable=1", True)]


def test_reading_only_names_the_last_failure_when_neither_way_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = made(tmp_path / "runs.db")
    asked = spy_connect(monkeypatch, lambda uri: True)
    err = refused(path=path, readonly=True)
    assert str(err) == (
        f"{path}: cannot open the run store (unable to open database file); check the "
        "file's permissions, or choose another store with store=PATH"
    )
    assert err.option == "store"
    assert len(asked) == 2


def test_a_store_sqlite_cannot_open_for_writing_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = made(tmp_path / "runs.db")
    spy_connect(monkeypatch, lambda path: True)
    err = refused(path=path)
    assert str(err) == (
        f"{path}: cannot open the run store (unable to open database file); check the "
        "file's permissions, or choose another store with store=PATH"
    )
    assert err.option == "store"
    assert isinstance(err.__cause__, sqlite3.OperationalError)
    assert error_message(err) == (
        f"{path}: cannot open the run store (unable to open database file); check the "
        "file's permissions, or choose another store with --store PATH"
    )


# -- SQLite's errors as StoreError --------------------------------------------------------------


def translated(backend: SQLiteBackend, doing: str, exc: BaseException) -> StoreError:
    """What ``exc``, raised inside ``backend.translated(doing)``, comes out as."""
    with pytest.raises(StoreError) as err, backend.translated(doing):
        raise exc
    assert err.value.__cause__ is exc
    return err.value


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[SQLiteBackend]:
    b = open_backend(tmp_path / "runs.db")
    yield b
    b.close()


@pytest.mark.parametrize(
    ("text", "message", "option"),
    [
        (
            "database is locked",
            "the store stayed locked by another process while trying to store the run; try "
            "again when it has finished",
            None,
        ),
        (
            "database table is locked: runs",
            "the store stayed locked by another process while trying to store the run; try "
            "again when it has finished",
            None,
        ),
        (
            "database or disk is full",
            "the disk is full while trying to store the run; nothing was stored: free some "
            "space (or check the disk) and try again",
            "store",
        ),
        (
            "disk I/O error",
            "the disk could not be written (full, past the file size limit, or failing) "
            "while trying to store the run; nothing was stored: free some space (or check "
            "the disk) and try again",
            "store",
        ),
        (
            "attempt to write a readonly database",
            "cannot write to the store (attempt to write a readonly database); check the "
            "file's permissions, or choose another store with store=PATH",
            "store",
        ),
        # A file this process may write: not a matter of permissions.
        (
            "unable to open database file",
            "cannot store the run (unable to open database file)",
            None,
        ),
        ("no such table: runs", "cannot store the run (no such table: runs)", None),
    ],
)
def test_operational_errors_say_what_to_do(
    backend: SQLiteBackend, text: str, message: str, option: str | None
) -> None:
    err = translated(backend, "store the run", sqlite3.OperationalError(text))
    assert str(err) == f"{backend.where}: {message}"
    assert err.option == option


def test_a_file_that_cannot_be_opened_for_want_of_permission_says_so(
    backend: SQLiteBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_sqlite, "can_write", lambda path: False)
    err = translated(
        backend, "store the run", sqlite3.OperationalError("unable to open database file")
    )
    assert str(err) == (
        f"{backend.where}: cannot write to the store (unable to open database file); check "
        "the file's permissions, or choose another store with store=PATH"
    )
    assert err.option == "store"


def test_a_read_only_store_says_it_was_opened_for_reading(
    backend: SQLiteBackend,
) -> None:
    backend.readonly = True
    err = translated(
        backend, "rename the run", sqlite3.OperationalError("attempt to write a readonly database")
    )
    assert str(err) == (
        f"{backend.where}: opened for reading only (no write access to it or its folder), so "
        "it cannot rename the run; ask for write access, or copy the store"
    )
    assert err.option == "store"


@pytest.mark.parametrize(
    "text", ["database disk image is malformed", "malformed database schema (runs)", "corrupt"]
)
def test_damage_is_said_to_be_damage(backend: SQLiteBackend, text: str) -> None:
    err = translated(backend, "read the run", sqlite3.DatabaseError(text))
    assert str(err) == f"{backend.where}: the store is damaged: {text}{DAMAGED_MEND}"
    assert err.option == "store"


def test_another_database_error_says_the_file_is_no_store(backend: SQLiteBackend) -> None:
    err = translated(backend, "read the run", sqlite3.DatabaseError("file is not a database"))
    assert str(err) == (
        f"{backend.where}: not a run store evaldelta can read (file is not a database); "
        "choose another file with store=PATH"
    )
    assert err.option == "store"


def test_other_exceptions_pass_through(backend: SQLiteBackend) -> None:
    with pytest.raises(ValueError, match=r"^not SQLite's$"), backend.translated("read the run"):
        raise ValueError("not SQLite's")
    with backend.translated("read the run"):
        pass  # and nothing happens without one


def test_a_write_while_another_process_writes_stays_locked(tmp_path: Path) -> None:
    path = made(tmp_path / "runs.db")
    backend = open_backend(path, timeout=0.05)
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError) as err, backend.translated("delete the run"):
            backend.conn.execute("BEGIN IMMEDIATE")
    finally:
        writer.execute("ROLLBACK")
        writer.close()
        backend.close()
    assert str(err.value) == (
        f"{path}: the store stayed locked by another process while trying to delete the "
        "run; try again when it has finished"
    )
    assert err.value.option is None


def test_a_page_written_over_is_said_to_be_damage(tmp_path: Path) -> None:
    path = made(tmp_path / "runs.db")
    conn = sqlite3.connect(path)
    (root,) = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()
    conn.close()
    assert not Path(f"{path}-wal").exists()  # all in the file itself
    with path.open("r+b") as f:
        f.seek((root - 1) * PAGE_SIZE)
        f.write(b"\xff" * 64)  # the header of the runs table's first page
    backend = open_backend(path)
    try:
        with pytest.raises(StoreError) as err, backend.translated("list the runs"):
            backend.conn.execute("SELECT * FROM runs").fetchall()
    finally:
        backend.close()
    assert str(err.value) == (
        f"{path}: the store is damaged: database disk image is malformed{DAMAGED_MEND}"
    )


# -- may it be written --------------------------------------------------------------------------


def test_can_write_a_store_this_process_made(tmp_path: Path) -> None:
    assert can_write(made(tmp_path / "runs.db"))
    assert can_write(str(tmp_path / "runs.db"))
    assert not can_write(tmp_path / "missing.db")  # no file to write


def test_can_write_asks_for_the_file_and_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[tuple[Path, int]] = []
    answers = {tmp_path / "runs.db": True, tmp_path: False}

    def access(path: Any, mode: int) -> bool:
        asked.append((Path(path), mode))
        return answers[Path(path)]

    monkeypatch.setattr(os, "access", access)
    # The file may be written, but not its folder, where the write-ahead log goes.
    assert can_write(tmp_path / "runs.db") is False
    assert asked == [(tmp_path / "runs.db", os.W_OK), (tmp_path, os.W_OK | os.X_OK)]
    asked.clear()
    monkeypatch.chdir(tmp_path)
    answers = {Path("runs.db"): True, Path("."): True}
    assert can_write("runs.db") is True  # a bare name: its folder is the current one
    assert asked == [(Path("runs.db"), os.W_OK), (Path("."), os.W_OK | os.X_OK)]


# -- the locks of the runs it runs --------------------------------------------------------------


def test_a_runs_lock_is_a_file_beside_the_store(backend: SQLiteBackend) -> None:
    assert backend.path is not None
    lock = backend.lock_run(3)
    assert isinstance(lock, RunLock)
    try:
        assert lock.path == backend.path.with_name("runs.db.locks") / "run-3.lock"
        assert lock.path.read_text() == f"{os.getpid()}\n"
        assert backend.run_is_held(3)
        assert not backend.run_is_held(4)
    finally:
        lock.release()
    assert not backend.run_is_held(3)
    assert not lock.path.exists()


def test_a_run_already_held_is_not_taken_again(backend: SQLiteBackend) -> None:
    lock = backend.lock_run(5)
    assert lock is not None
    try:
        assert backend.lock_run(5) is None
    finally:
        lock.release()


def test_forgetting_a_run_removes_the_lock_file_its_dead_process_left(
    backend: SQLiteBackend,
) -> None:
    assert backend.path is not None
    left = lock_path(backend.path, 7)
    left.parent.mkdir()
    left.write_text("12345\n")
    backend.forget_run(7)
    assert not left.exists()
    backend.forget_run(7)  # nothing left: nothing to do
    assert sorted(left.parent.iterdir()) == []


def test_a_lock_that_cannot_be_made_is_named(backend: SQLiteBackend) -> None:
    assert backend.path is not None
    locks = backend.path.with_name("runs.db.locks")
    locks.write_text("a file where the folder of locks goes\n")
    with pytest.raises(StoreError) as err:
        backend.lock_run(2)
    assert str(err.value) == (
        f"{locks / 'run-2.lock'}: cannot make the lock of run 2 (File exists); check the "
        "permissions of the store's folder, or choose another store with store=PATH"
    )
    assert err.value.option == "store"
    assert isinstance(err.value.__cause__, FileExistsError)
