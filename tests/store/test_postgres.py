"""The PostgreSQL backend's own behaviours: URLs and their passwords, psycopg missing,
a server out of reach, a role that may only read, libpq's variables, a missing schema.
(Every other store test runs on PostgreSQL too: see ``location`` in conftest.py.)"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import evaldelta
from evaldelta.errors import MissingDependencyError, StoreError
from evaldelta.serve import Dashboard
from evaldelta.store import RunStore, is_url, mask_url, open_store
from tests.conftest import FIXTURES, REPO, run_evaldelta

PASSWORD = "s3cret-pw"
READER_PASSWORD = "r3ader-pw"


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("postgresql://ci:s3cret@db:5432/evals", "postgresql://ci:***@db:5432/evals"),
        (
            "postgres://ci:p%40ss@db/evals?sslmode=require",
            "postgres://ci:***@db/evals?sslmode=require",
        ),
        ("postgresql://ci@db/evals", "postgresql://ci@db/evals"),
        ("postgresql://", "postgresql://"),
        (
            "postgresql://db/evals?user=ci&password=s3cret",
            "postgresql://db/evals?user=ci&password=***",
        ),
        ("postgresql://a:b@h1:1,h2:2/x?Password=c", "postgresql://a:***@h1:1,h2:2/x?Password=***"),
        (".evaldelta/runs.db", ".evaldelta/runs.db"),
    ],
)
def test_a_url_is_shown_without_its_password(url: str, masked: str) -> None:
    assert mask_url(url) == masked
    assert is_url(url) == url.startswith("postgres")


def test_without_psycopg_one_line_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['psycopg'] = None\n"
        "from evaldelta.cli import main\n"
        f"sys.exit(main(['runs', 'list', '--store', 'postgresql://ci:{PASSWORD}@db/evals']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr == (
        "evaldelta: error: postgresql://ci:***@db/evals: a PostgreSQL store needs psycopg, "
        "which is not installed: pip install 'evaldelta[postgres]'\n"
    )


def test_the_library_names_the_extra_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDependencyError) as err:
        RunStore("postgresql://ci@db/evals")
    assert "pip install 'evaldelta[postgres]'" in str(err.value)
    assert err.value.option == "store"


def test_a_server_out_of_reach_is_named_without_the_password() -> None:
    url = f"postgresql://ci:{PASSWORD}@127.0.0.1:1/evals"
    with pytest.raises(StoreError) as err:
        RunStore(url)
    message = str(err.value)
    assert message.startswith(
        "postgresql://ci:***@127.0.0.1:1/evals: cannot connect to the run store ("
    )
    assert message.endswith(
        "); check the URL, that the server is up, and the role's password (in the URL, "
        "PGPASSWORD or ~/.pgpass)"
    )
    assert PASSWORD not in message
    assert err.value.option == "store"
    # Nor in what --debug shows.
    result = run_evaldelta("runs", "list", "--store", url, "--debug")
    assert result.code != 0
    assert PASSWORD not in result.out + result.err


# -- on a server --------------------------------------------------------------------


def _with_password(server: Any, schema: str) -> str:
    """The store's URL as a role with a password in it (the server's own superuser's
    password is in the URL as the tests build it; a role of our own makes sure)."""
    with server.admin() as conn:
        conn.execute(f"CREATE ROLE writer_{schema} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
    return server.store_url(schema, user=f"writer_{schema}:{PASSWORD}")


def test_a_password_never_shows(postgres_server: Any, tmp_path: Any) -> None:
    schema = postgres_server.new_schema()
    url = _with_password(postgres_server, schema)
    baseline = FIXTURES / "baseline.jsonl"
    candidate = FIXTURES / "candidate.jsonl"
    outputs = []
    for args in (
        ("runs", "import", baseline, "--name", "before", "--config", "prompt=v1"),
        ("runs", "import", candidate, "--name", "after"),
        ("runs", "list"),
        ("runs", "list", "--suite", "nope"),
        ("runs", "show", "before"),
        ("runs", "show", "nope"),
        ("runs", "show", "before", "--json"),
        ("compare", "before", "after"),
        ("gate", "before", "after"),
        ("runs", "export", "before", "-o", tmp_path / "out.jsonl"),
        ("runs", "push", "before", "--to", tmp_path / "copy.db"),
        ("runs", "pull", "1", "--from", tmp_path / "copy.db"),
        ("eval", REPO / "examples" / "offline-agent" / "suite.yaml", "--target", "v1"),
        ("eval", REPO / "examples" / "offline-agent" / "suite.yaml", "--target", "v1"),
    ):
        result = run_evaldelta(*args, "--store", url)
        outputs.append(result.out + result.err)
    text = "\n".join(outputs)
    assert PASSWORD not in text
    assert f"postgresql://writer_{schema}:***@" in text  # named, masked
    assert "Stored run 1: before" in text
    with open_store(url) as store:
        assert repr(store) == f"RunStore({mask_url(url)!r})"
        assert PASSWORD not in repr(store) + store.location
        for info in store.list_runs():
            assert PASSWORD not in repr(info.to_dict())
    dash = Dashboard(url)
    try:
        page = dash.handle("GET", "/", "127.0.0.1")
        assert page.status == 200
        assert mask_url(url) in page.text.replace("&amp;", "&")
        assert PASSWORD not in page.text
        missing = dash.handle("GET", "/runs/99", "127.0.0.1")
        assert missing.status == 404
        assert PASSWORD not in missing.text
    finally:
        dash.close()


@pytest.fixture
def reader_url(postgres_server: Any) -> str:
    """A store of two runs, and the URL of a role that may only SELECT from it."""
    schema = postgres_server.new_schema()
    owner = postgres_server.store_url(schema)
    with open_store(owner) as store:
        store.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="before")
        store.add_run(evaldelta.load(FIXTURES / "candidate.jsonl"), name="after")
    role = f"reader_{schema}"
    with postgres_server.admin() as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{READER_PASSWORD}'")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}")
    url: str = postgres_server.store_url(schema, user=f"{role}:{READER_PASSWORD}")
    return url


def test_a_role_that_may_only_read_lists_shows_compares_and_serves(reader_url: str) -> None:
    listed = run_evaldelta("runs", "list", "--store", reader_url)
    assert listed.code == 0, listed.err
    assert "before" in listed.out
    assert "after" in listed.out
    shown = run_evaldelta("runs", "show", "before", "--store", reader_url)
    assert shown.code == 0, shown.err
    compared = run_evaldelta("compare", "before", "after", "--store", reader_url)
    assert compared.code in (0, 1), compared.err
    assert "Verdict" in compared.out or "verdict" in compared.out.lower()
    dash = Dashboard(reader_url)
    try:
        assert dash.check() == 2
        for page in ("/", "/runs/1", "/compare?baseline=1&candidate=2"):
            assert dash.handle("GET", page, "127.0.0.1").status == 200, page
    finally:
        dash.close()


def test_a_role_that_may_only_read_cannot_import(reader_url: str) -> None:
    result = run_evaldelta(
        "runs", "import", FIXTURES / "baseline.jsonl", "--name", "x", "--store", reader_url
    )
    assert result.code == 2
    assert result.out == ""
    assert result.err.startswith(
        f"evaldelta: error: {mask_url(reader_url)}: this role cannot write to the store ("
    )
    assert result.err.endswith(
        "), so it cannot store the run; ask the store's owner for INSERT, UPDATE and DELETE "
        "on its tables, or use a role that has them\n"
    )
    assert len(result.err.splitlines()) == 1
    assert READER_PASSWORD not in result.err
    for args in (("runs", "rm", "before"), ("runs", "rename", "before", "b")):
        refused = run_evaldelta(*args, "--store", reader_url)
        assert refused.code == 2
        assert "this role cannot write to the store" in refused.err
    with RunStore(reader_url) as store:
        assert [r.name for r in store.list_runs()] == ["after", "before"]


def test_a_bare_url_takes_libpqs_variables(postgres_server: Any) -> None:
    schema = postgres_server.new_schema()
    env = {**postgres_server.env, "PGOPTIONS": f"-csearch_path={schema}"}
    imported = run_evaldelta(
        "runs", "import", FIXTURES / "baseline.jsonl", "--store", "postgresql://", env=env
    )
    assert imported.code == 0, imported.err
    assert imported.out == "Stored run 1: baseline (3 cases, 3 records)\n"
    listed = run_evaldelta("runs", "list", env={**env, "EVALDELTA_STORE": "postgresql://"})
    assert listed.code == 0, listed.err
    assert "baseline" in listed.out
    with open_store(postgres_server.store_url(schema)) as store:
        assert [r.name for r in store.list_runs()] == ["baseline"]


def test_a_schema_that_does_not_exist_is_named(postgres_server: Any) -> None:
    url = postgres_server.store_url("no_such_schema")
    with pytest.raises(StoreError) as err:
        RunStore(url)
    assert str(err.value) == (
        f"{mask_url(url)}: there is no schema to keep the store in (no schema of the "
        "search_path exists); create it, or name one that exists in the URL "
        "(?options=-csearch_path%3DNAME)"
    )


def test_an_empty_database_is_no_store_until_one_is_stored(postgres_url: str) -> None:
    listed = run_evaldelta("runs", "list", "--store", postgres_url)
    assert listed.code == 0, listed.err
    assert listed.out == (
        f"No runs stored in {mask_url(postgres_url)} yet; run a suite with `evaldelta eval "
        "SUITE`, or store a results file with `evaldelta runs import FILE`.\n"
    )
    with pytest.raises(StoreError) as err:
        RunStore(postgres_url, create=False)
    assert str(err.value).startswith(f"no run store at {mask_url(postgres_url)}; ")
    compared = run_evaldelta("compare", "before", "after", "--store", postgres_url)
    assert compared.code == 2
    assert f"no run store at {mask_url(postgres_url)}" in compared.err


def test_an_empty_schema_opened_for_reading_only_is_no_store(postgres_url: str) -> None:
    """Not "a store of an older evaldelta (schema 0)", and nothing made."""
    with pytest.raises(StoreError) as err:
        RunStore(postgres_url, readonly=True)
    assert str(err.value) == (
        f"no run store at {mask_url(postgres_url)}; store a run first with "
        "evaldelta.evaluate() or RunStore(PATH).import_run(), or choose a store with store=PATH"
    )
    assert err.value.option == "store"
    with RunStore(postgres_url) as store:  # made only now
        assert store.list_runs() == []


def test_a_schema_of_other_tables_is_refused(postgres_server: Any) -> None:
    schema = postgres_server.new_schema()
    with postgres_server.admin() as conn:
        conn.execute(f"CREATE TABLE {schema}.users (name TEXT)")
    url = postgres_server.store_url(schema)
    with pytest.raises(StoreError) as err:
        RunStore(url)
    assert str(err.value) == (
        f"{mask_url(url)}: is a PostgreSQL schema that holds tables but not an evaldelta "
        "run store (it has no schema_version table); choose another database or schema"
    )


def test_the_tables_are_postgresqls_own_types(postgres_url: str, postgres_server: Any) -> None:
    """64-bit integers (a CRC-32 passes 2**31), double precision, bytea, an identity."""
    open_store(postgres_url).close()
    schema = postgres_url.rsplit("%3D", 1)[1]
    with postgres_server.admin() as conn:
        types = dict(
            conn.execute(
                "SELECT table_name || '.' || column_name, data_type FROM "
                "information_schema.columns WHERE table_schema = %s",
                (schema,),
            ).fetchall()
        )
        identity = conn.execute(
            "SELECT is_identity FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'runs' AND column_name = 'id'",
            (schema,),
        ).fetchone()
    assert types["record_columns.crc"] == "bigint"
    assert types["record_columns.data"] == "bytea"
    assert types["run_summaries.pass_rate"] == "double precision"
    assert types["runs.id"] == "bigint"
    assert identity == ("YES",)
