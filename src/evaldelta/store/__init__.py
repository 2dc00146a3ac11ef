"""The run store: evaluation runs kept in an embedded SQLite file, or in a PostgreSQL
database a team shares, to name, list and compare later by id or by name.

This package is the only place that imports :mod:`sqlite3` and psycopg (the latter only
when a ``postgresql://`` store is opened, from ``pip install 'evaldelta[postgres]'``)::

    from evaldelta.store import open_store

    store = open_store(".evaldelta/runs.db")      # or open_store("postgresql://ci@db/evals")
    ids = store.import_run(evaldelta.load("results.jsonl"), name="before")
    run = store.get_run("before")       # the latest run of that name, as a Run
    evaldelta.compare(store.get_run(1), store.get_run(2))

    suite = store.find_suite_by_name("qa")   # the runs `evaldelta eval` made of a suite
    baseline, candidate = store.list_runs(suite.id)[-2:]   # a suite's runs: oldest first
"""

from __future__ import annotations

from evaldelta.store._export import export_jsonl
from evaldelta.store._postgres import is_url, mask_url
from evaldelta.store._runstore import (
    DEFAULT_STORE,
    Progress,
    RunStore,
    StoredRun,
    StoredSuite,
    dataset_hash,
    default_name,
    open_store,
    store_exists,
)
from evaldelta.store._schema import SCHEMA_VERSION

__all__ = [
    "DEFAULT_STORE",
    "SCHEMA_VERSION",
    "Progress",
    "RunStore",
    "StoredRun",
    "StoredSuite",
    "dataset_hash",
    "default_name",
    "export_jsonl",
    "is_url",
    "mask_url",
    "open_store",
    "store_exists",
]
