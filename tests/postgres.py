"""A throwaway PostgreSQL server for the tests, and a fresh store on it per test.

The server is ``$EVALDELTA_TEST_POSTGRESQL`` (a URL) when set; else one that
``pg_virtualenv -t`` (Debian's ``postgresql-common``) starts for the test session: a
temporary cluster on a loopback port, dropped when the session ends, as root and as any
other user. ``make test`` installs Debian's ``postgresql`` when it is missing.

Without a server (nor psycopg), the PostgreSQL leg of each test is skipped and says
why; where ``CI`` is set it fails instead, so that a green run cannot hide it.

Each store is a schema of its own in the server's database, named in its URL
(``?options=-csearch_path%3Dstore_N``): a new store costs a ``CREATE SCHEMA``.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest

#: A URL of a server to test against instead of starting one.
ENV_URL = "EVALDELTA_TEST_POSTGRESQL"
#: The line the helper inside pg_virtualenv prints its environment on.
MARK = "EVALDELTA-PG-ENV "
#: Runs inside pg_virtualenv: tells the PG* variables, then holds the cluster until
#: its standard input closes (the test session ended, or died).
HOLDER = (
    "import json, os, sys\n"
    "env = {k: v for k, v in os.environ.items() if k.startswith('PG')}\n"
    f"print({MARK!r} + json.dumps(env), flush=True)\n"
    "sys.stdin.read()\n"
)


@dataclass
class Server:
    """A PostgreSQL server to make stores on."""

    #: Its libpq variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE).
    env: dict[str, str]
    process: subprocess.Popen[str] | None = None
    _count: Any = field(default_factory=itertools.count)

    @property
    def url(self) -> str:
        """The URL of its database, password included."""
        e = self.env
        password = f":{quote(e['PGPASSWORD'], safe='')}" if e.get("PGPASSWORD") else ""
        return (
            f"postgresql://{quote(e.get('PGUSER', 'postgres'), safe='')}{password}@"
            f"{e.get('PGHOST', 'localhost')}:{e.get('PGPORT', '5432')}/"
            f"{quote(e.get('PGDATABASE', 'postgres'), safe='')}"
        )

    def admin(self) -> Any:
        """A connection as the server's superuser, in autocommit mode."""
        import psycopg

        return psycopg.connect(self.url, autocommit=True)

    def new_schema(self) -> str:
        name = f"store_{os.getpid()}_{next(self._count)}"
        with self.admin() as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return name

    def store_url(self, schema: str | None = None, *, user: str | None = None) -> str:
        """The URL of a store in ``schema`` (a new one by default)."""
        schema = schema or self.new_schema()
        url = self.url
        if user is not None:
            url = url.replace(url.split("://", 1)[1].split("@", 1)[0], user, 1)
        return f"{url}?options=-csearch_path%3D{schema}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()


def start() -> Server | str:
    """A server to test against, or why there is none."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]', as make test does)"
    given = os.environ.get(ENV_URL)
    if given:
        import psycopg

        info = psycopg.conninfo.conninfo_to_dict(given)
        names = {"host": "PGHOST", "port": "PGPORT", "user": "PGUSER"}
        names.update(password="PGPASSWORD", dbname="PGDATABASE")
        return Server({names[k]: str(v) for k, v in info.items() if k in names})
    virtualenv = shutil.which("pg_virtualenv")
    if virtualenv is None:
        return (
            "no PostgreSQL server: Debian's postgresql is not installed (make test installs "
            f"it), and {ENV_URL} names none"
        )
    proc = subprocess.Popen(
        [virtualenv, "-t", "--", sys.executable, "-c", HOLDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:
        if line.startswith(MARK):
            return Server(json.loads(line[len(MARK) :]), proc)
        said.append(line.rstrip())
    proc.wait()
    return f"pg_virtualenv could not start a server: {' / '.join(said[-5:])}"


def unavailable(reason: str) -> None:
    """Skip the PostgreSQL leg, saying why; fail it where ``CI`` is set."""
    if os.environ.get("CI"):
        pytest.fail(f"PostgreSQL leg: {reason} (CI is set: it must run)", pytrace=False)
    pytest.skip(f"PostgreSQL leg: {reason}")
