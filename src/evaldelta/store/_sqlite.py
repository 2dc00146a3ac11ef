"""An SQLite file behind the run store: one machine's runs.

The store runs in WAL mode with a busy timeout, so that two processes importing at once
both succeed (one waits for the other), and readers never wait for a writer. A run being
run is told alive by its lock file (:mod:`evaldelta.store._liveness`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evaldelta.errors import StoreError
from evaldelta.store import _liveness as liveness
from evaldelta.store._dialect import SQLITE, Backend
from evaldelta.store._schema import (
    NO_STORE_MEND,
    SCHEMA_VERSION,
    check_version,
    migrate,
    outdated,
    read_version,
)

__all__ = ["PAGE_SIZE", "SQLiteBackend", "can_write"]

#: The page size of a new store: SQLite's largest. Records are kept as compressed chunks
#: of hundreds of KiB, which SQLite writes page by page, one system call a page: at its
#: default of 4 KiB a million-record import made 366,000 writes and 183,000 reads.
PAGE_SIZE = 65536


def can_write(path: str | os.PathLike[str]) -> bool:
    """Whether this process may write the store at ``path`` and its folder (where
    SQLite keeps the write-ahead log): else it is to be opened for reading only."""
    p = Path(path)
    folder = p.parent if str(p.parent) else Path(".")
    return os.access(p, os.W_OK) and os.access(folder, os.W_OK | os.X_OK)


def _not_a_file(where: str, path: Path) -> StoreError:
    """A store path that exists but is a folder, a named pipe, a device, ..."""
    what = "a folder" if path.is_dir() else "not a regular file"
    return StoreError(
        f"{where}: is {what}, not a run store; give the file's path with store=PATH",
        option="store",
    )


def _cannot_open(where: str, exc: sqlite3.Error | None) -> StoreError:
    return StoreError(
        f"{where}: cannot open the run store ({exc}); check the file's permissions, or "
        "choose another store with store=PATH",
        option="store",
    )


class SQLiteBackend(Backend):
    """The store's SQLite file, opened (created, migrated) as :class:`RunStore` asks."""

    dialect = SQLITE

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool, timeout: float, readonly: bool
    ) -> None:
        self.path = Path(path)
        self.where = str(path)
        self.readonly = readonly
        self.conn: sqlite3.Connection = (
            self._open_readonly(timeout) if readonly else self._open(create, timeout)
        )

    def _open(self, create: bool, timeout: float) -> sqlite3.Connection:
        where, path = self.where, Path(self.where)
        if not path.exists():
            if not create:
                raise StoreError(f"no run store at {where}; {NO_STORE_MEND}", option="store")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"{where}: cannot create the store's folder ({exc.strerror or exc}); "
                    "choose another place with store=PATH",
                    option="store",
                ) from exc
        elif not path.is_file():
            raise _not_a_file(where, path)
        try:
            # One connection per store, used by one thread at a time: ``evaluate()`` from a
            # running event loop (Jupyter) runs the engine in a thread of its own.
            conn = sqlite3.connect(
                path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise _cannot_open(where, exc) from exc
        try:
            with self.translated("open the store"):
                # Look before touching anything: a store of a newer schema is left as it is.
                version = read_version(conn)
                check_version(version, where)
                conn.execute("PRAGMA foreign_keys = ON")
                conn.execute("PRAGMA synchronous = NORMAL")
                # A big import grows the write-ahead log; give the space back afterwards.
                conn.execute("PRAGMA journal_size_limit = 67108864")
                if version == 0:
                    conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
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

    def _open_readonly(self, timeout: float) -> sqlite3.Connection:
        """The store for reading only: ``mode=ro`` where SQLite may make the write-ahead
        log's shared-memory file, else ``immutable=1`` (a folder no one may write to,
        where no writer can be either)."""
        from urllib.parse import quote

        where, path = self.where, Path(self.where)
        if not path.exists():
            raise StoreError(f"no run store at {where}; {NO_STORE_MEND}", option="store")
        if not path.is_file():
            raise _not_a_file(where, path)
        base = f"file:{quote(str(path.resolve()))}?mode=ro"
        last: sqlite3.Error | None = None
        for uri in (base, base + "&immutable=1"):
            try:
                conn = sqlite3.connect(
                    uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
                )
            except sqlite3.Error as exc:
                last = exc
                continue
            try:
                with self.translated("open the store"):
                    version = read_version(conn)
            except StoreError:
                conn.close()
                if uri.endswith("immutable=1"):
                    raise
                continue
            try:
                check_version(version, where)
                if version == 0:
                    # A database of no tables yet: opened for writing, it would become a
                    # new store (as a missing file would); there is none to read yet.
                    what = (
                        "an empty file" if path.stat().st_size == 0 else "an empty SQLite database"
                    )
                    raise StoreError(
                        f"{where}: is {what}, not a run store yet; {NO_STORE_MEND}",
                        option="store",
                    )
                if version != SCHEMA_VERSION:
                    raise outdated(where, version)
                conn.execute("PRAGMA query_only = ON")
            except BaseException:
                conn.close()
                raise
            return conn
        raise _cannot_open(where, last)

    @contextmanager
    def translated(self, doing: str) -> Iterator[None]:
        """SQLite's exceptions as :class:`StoreError` saying where and what to do."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            message, option = self._explained(str(exc), doing)
            raise StoreError(f"{self.where}: {message}", option=option) from exc
        except sqlite3.DatabaseError as exc:
            if "malformed" in str(exc) or "corrupt" in str(exc):
                raise self.damaged(str(exc)) from exc
            raise StoreError(
                f"{self.where}: not a run store evaldelta can read ({exc}); choose another "
                "file with store=PATH",
                option="store",
            ) from exc

    def _explained(self, text: str, doing: str) -> tuple[str, str | None]:
        """What SQLite's ``text`` means for a user, and the parameter to mend, if any."""
        if "locked" in text or "busy" in text:
            return (
                f"the store stayed locked by another process while trying to {doing}; try "
                "again when it has finished",
                None,
            )
        if "disk is full" in text or "disk I/O error" in text:
            cause = (
                "the disk is full"
                if "full" in text
                else "the disk could not be written (full, past the file size limit, or failing)"
            )
            return (
                f"{cause} while trying to {doing}; nothing was stored: free some space (or "
                "check the disk) and try again",
                "store",
            )
        path = Path(self.where)
        unwritable = "unable to open" in text and path.exists() and not can_write(path)
        if "readonly" in text or "read-only" in text or unwritable:
            if self.readonly:
                return (
                    "opened for reading only (no write access to it or its folder), so it "
                    f"cannot {doing}; ask for write access, or copy the store",
                    "store",
                )
            return (
                f"cannot write to the store ({text}); check the file's permissions, or "
                "choose another store with store=PATH",
                "store",
            )
        return f"cannot {doing} ({text})", None

    def lock_run(self, rid: int) -> liveness.RunLock | None:
        path = liveness.lock_path(Path(self.where), rid)
        try:
            return liveness.acquire(path)
        except OSError as exc:
            raise StoreError(
                f"{path}: cannot make the lock of run {rid} ({exc.strerror or exc}); check "
                "the permissions of the store's folder, or choose another store with store=PATH",
                option="store",
            ) from exc

    def run_is_held(self, rid: int) -> bool:
        return liveness.is_held(liveness.lock_path(Path(self.where), rid))

    def forget_run(self, rid: int) -> None:
        # A run whose process died leaves its lock file behind.
        liveness.lock_path(Path(self.where), rid).unlink(missing_ok=True)
