"""PostgreSQL behind the run store: every CI job and every teammate on one store.

A store is a database named by a URL, ``postgresql://user@host:port/db``; a bare
``postgresql://`` takes libpq's ``PG*`` variables and ``~/.pgpass``. Its tables live in
the connection's current schema, so one database holds several stores when each URL
names its own (``?options=-csearch_path%3Dteam``).

psycopg 3 (``pip install 'evaldelta[postgres]'``) is imported here only, and only when
such a store is opened. The connection runs in autocommit mode and the store says
``BEGIN`` and ``COMMIT`` itself, as on SQLite; its queries, written with ``?``, go out
with ``%s``. Records are written with ``COPY ... (FORMAT BINARY)`` and read in binary.

A run being run is told alive by a session-level advisory lock held by the connection
of the process running it: the server lets go of it when that connection ends, however
the process ends, and every session sees it in ``pg_locks`` without taking it.

A URL is never shown with its password: messages, ``repr`` and the dashboard show it as
:func:`mask_url` writes it, and the server's own messages are scrubbed of it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from evaldelta.errors import MissingDependencyError, StoreError
from evaldelta.store import _schema as schema
from evaldelta.store._dialect import POSTGRESQL, Backend

if TYPE_CHECKING:
    import psycopg

__all__ = ["INSTALL_HINT", "PostgresBackend", "is_url", "mask_url"]

#: What a URL of a PostgreSQL store starts with (libpq takes both).
SCHEMES = ("postgresql://", "postgres://")
#: What to install for a PostgreSQL store.
INSTALL_HINT = "pip install 'evaldelta[postgres]'"
#: Seconds to wait for the server to answer, unless the URL says (libpq's default: forever).
CONNECT_TIMEOUT = 10
#: What the server is told this connection is (``pg_stat_activity``).
APPLICATION = "evaldelta"

_NETLOC = re.compile(r"^(?P<netloc>[^/?#]*)(?P<tail>.*)$", re.S)
_PASSWORD_PARAM = re.compile(r"(?i)([?&]password=)([^&#]*)")


def is_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL store (``postgresql://...``), not a file."""
    return isinstance(location, str) and location[:13].lower().startswith(SCHEMES)


def _parts(url: str) -> tuple[str, str, str, str | None]:
    """``(scheme://, userinfo or '', hosts and the rest, password or None)`` of a URL."""
    scheme, _, rest = url.partition("://")
    found = _NETLOC.match(rest)
    assert found is not None
    netloc, tail = found["netloc"], found["tail"]
    userinfo, at, hosts = netloc.rpartition("@")
    password = userinfo.partition(":")[2] if at and ":" in userinfo else None
    return scheme + "://", userinfo if at else "", hosts + tail, password


def mask_url(url: str) -> str:
    """``url`` with its password, in the user part or as ``password=``, written ``***``:
    how a store's URL is shown, everywhere."""
    if not is_url(url):
        return url
    scheme, userinfo, rest, password = _parts(url)
    user = userinfo.partition(":")[0]
    if password is not None:
        userinfo = f"{user}:***"
    masked = scheme + (f"{userinfo}@" if userinfo else "") + rest
    return _PASSWORD_PARAM.sub(r"\1***", masked)


def _secrets(url: str) -> list[str]:
    """The passwords written in ``url``, as written and decoded: never to be shown."""
    found = [_parts(url)[3] or ""] + [m.group(2) for m in _PASSWORD_PARAM.finditer(url)]
    secrets = {s for p in found if p for s in (p, unquote(p))}
    return sorted(secrets, key=len, reverse=True)


def _psycopg(where: str) -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise MissingDependencyError(
            f"{where}: a PostgreSQL store needs psycopg, which is not installed: {INSTALL_HINT}",
            option="store",
        ) from exc
    return psycopg


def _pg(sql: str) -> str:
    """A query written for SQLite (``?``) as psycopg takes it (``%s``, ``%%``)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    """The one row a query gives."""
    row = cursor.fetchone()
    assert row is not None
    return row


def _int4(value: int) -> int:
    """``value`` folded into a signed 32-bit integer (an advisory lock's key)."""
    return ((value + 2**31) % 2**32) - 2**31


class _Connection:
    """A psycopg connection with :class:`sqlite3.Connection`'s interface, as the
    store uses it: ``?`` placeholders, results read in binary."""

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> psycopg.Cursor[Any]:
        cursor = self.raw.cursor(binary=True)
        # Always a sequence (even empty): then psycopg reads %% as %.
        cursor.execute(_pg(sql), tuple(parameters))
        return cursor

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> psycopg.Cursor[Any]:
        cursor = self.raw.cursor(binary=True)
        cursor.executemany(_pg(sql), parameters)
        return cursor

    def copy_rows(
        self, table: str, columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]]
    ) -> None:
        """Write ``rows`` into ``table`` by ``COPY ... FROM STDIN (FORMAT BINARY)``."""
        names = ", ".join(name for name, _ in columns)
        sql = f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)"
        with self.raw.cursor() as cursor, cursor.copy(sql) as copy:
            copy.set_types([kind for _, kind in columns])
            for row in rows:
                copy.write_row(row)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()


class _AdvisoryLock:
    """This session's hold on a run's advisory lock, until :meth:`release`."""

    def __init__(self, conn: _Connection, key: int, rid: int) -> None:
        self.conn, self.key, self.rid = conn, key, rid
        self.held = True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        if self.conn.raw.closed:
            return  # gone with the connection
        # A connection that broke meanwhile has let go of it on the server.
        with contextlib.suppress(Exception):
            self.conn.execute(
                "SELECT pg_advisory_unlock(?::integer, ?::integer)", (self.key, _int4(self.rid))
            )


class PostgresBackend(Backend):
    """A store in a PostgreSQL database, opened (built, migrated) as :class:`RunStore` asks.

    Args:
        url: ``postgresql://[user[:password]@][host][:port][/database][?param=value...]``.
        timeout: seconds a write waits for a row another process keeps locked.
    """

    dialect = POSTGRESQL
    conn: _Connection

    def __init__(self, url: str, *, create: bool, timeout: float, readonly: bool) -> None:
        self.where = mask_url(url)
        self.readonly = readonly
        self._secrets = _secrets(url)
        raw = self._connect(url)
        self.conn = _Connection(raw)
        try:
            with self.translated("open the store"):
                self._key = self._prepare(timeout)
                version = schema.read_version(self.conn, POSTGRESQL)
                schema.check_version(version, self.where, dialect=POSTGRESQL)
                if version == 0 and (not create or readonly):
                    # An empty schema: none to read, and none to be made when reading only.
                    raise StoreError(
                        f"no run store at {self.where}; {schema.NO_STORE_MEND}", option="store"
                    )
                if version != schema.SCHEMA_VERSION:
                    if readonly:
                        raise schema.outdated(self.where, version)
                    schema.migrate(self.conn, self.where, dialect=POSTGRESQL)
        except BaseException:
            raw.close()
            raise

    def _connect(self, url: str) -> psycopg.Connection[Any]:
        pg = _psycopg(self.where)
        extra: dict[str, Any] = {"autocommit": True, "application_name": APPLICATION}
        try:
            given = pg.conninfo.conninfo_to_dict(url)
            if "connect_timeout" not in given:
                extra["connect_timeout"] = CONNECT_TIMEOUT
            raw: psycopg.Connection[Any] = pg.connect(url, **extra)
        except pg.Error as exc:
            raise StoreError(
                f"{self.where}: cannot connect to the run store ({self._text(exc)}); check "
                "the URL, that the server is up, and the role's password (in the URL, "
                "PGPASSWORD or ~/.pgpass)",
                option="store",
            ) from None
        return raw

    @classmethod
    def holds_store(cls, url: str) -> bool:
        """Whether the database (its schema) at ``url`` holds a run store; builds none."""
        probe = cls.__new__(cls)
        probe.where, probe.readonly, probe._secrets = mask_url(url), True, _secrets(url)
        probe.conn = _Connection(probe._connect(url))
        try:
            with probe.translated("open the store"):
                return schema.read_version(probe.conn, POSTGRESQL) != 0
        finally:
            probe.close()

    def _prepare(self, timeout: float) -> int:
        """Set the session up; returns the key of the store's run locks (its schema's)."""
        conn = self.conn
        conn.execute("SELECT set_config('lock_timeout', ?, false)", (f"{int(timeout * 1000)}ms",))
        if self.readonly:
            conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        current, key = _one(
            conn.execute("SELECT current_schema(), hashtext('evaldelta runs ' || current_schema())")
        )
        if current is None:
            raise StoreError(
                f"{self.where}: there is no schema to keep the store in (no schema of the "
                "search_path exists); create it, or name one that exists in the URL "
                "(?options=-csearch_path%3DNAME)",
                option="store",
            )
        return int(key)

    def _text(self, exc: BaseException) -> str:
        """The first line of the server's (or libpq's) message, without any password."""
        lines = str(exc).strip().splitlines()
        text = lines[0].strip() if lines else type(exc).__name__
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text.removesuffix(".")

    @contextmanager
    def translated(self, doing: str) -> Iterator[None]:
        """psycopg's exceptions as :class:`StoreError` saying where and what to do."""
        import psycopg

        try:
            yield
        except psycopg.Error as exc:
            message, option = self._explained(exc, doing)
            raise StoreError(f"{self.where}: {message}", option=option) from None

    def _explained(self, exc: BaseException, doing: str) -> tuple[str, str | None]:
        """What the server's error means for a user, and the parameter to mend, if any."""
        code = getattr(exc, "sqlstate", None) or ""
        text = self._text(exc)
        if code == "42501":
            return (
                f"this role cannot write to the store ({text}), so it cannot {doing}; ask "
                "the store's owner for INSERT, UPDATE and DELETE on its tables, or use a "
                "role that has them",
                "store",
            )
        if code == "25006":
            return f"opened for reading only, so it cannot {doing}; open it to write", "store"
        if code in ("55P03", "40P01", "40001"):
            return (
                f"the store stayed locked by another process while trying to {doing}; try "
                "again when it has finished",
                None,
            )
        if code.startswith("53"):
            return (
                f"the server is out of resources ({text}) while trying to {doing}; nothing "
                "was stored: free some space on the server and try again",
                "store",
            )
        if code in ("22021", "22P05"):
            return (
                f"cannot {doing}: PostgreSQL cannot keep a text that holds a NUL character "
                f"({text}); remove it from names, notes and config",
                None,
            )
        if code.startswith(("08", "57P")) or (not code and "connection" in text.lower()):
            return (
                f"the connection to the server was lost while trying to {doing} ({text}); "
                "a write under way was not stored: check the server, and try again",
                "store",
            )
        if code in ("42P01", "42703"):
            return (
                f"not a run store evaldelta can read ({text}); choose another database or "
                "schema with store=URL",
                "store",
            )
        return f"cannot {doing} ({text})", None

    def lock_run(self, rid: int) -> _AdvisoryLock | None:
        (took,) = _one(
            self.conn.execute(
                "SELECT pg_try_advisory_lock(?::integer, ?::integer)", (self._key, _int4(rid))
            )
        )
        return _AdvisoryLock(self.conn, self._key, rid) if took else None

    def run_is_held(self, rid: int) -> bool:
        # pg_locks shows the keys as unsigned 32-bit numbers.
        row = _one(
            self.conn.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                "AND objsubid = 2 AND classid::bigint = ? AND objid::bigint = ?)",
                (self._key % 2**32, _int4(rid) % 2**32),
            )
        )
        return bool(row[0])
