"""The run store the options name, and run references: one place for the commands
that take a stored run wherever they take a results file."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from evaldelta.cli._progress import progress_line
from evaldelta.errors import InputError, StoreError

if TYPE_CHECKING:
    from evaldelta.model import Run
    from evaldelta.store import RunStore

__all__ = [
    "REFERENCE_STORE_HELP",
    "STORE_HELP",
    "open_store_of",
    "run_from_store_file",
    "shown",
    "store_file_ref",
    "store_path",
    "stored_run",
]

STORE_HELP = (
    "the run store: a file, or postgresql://user@host:port/db for a team's "
    "(default: $EVALDELTA_STORE, else .evaldelta/runs.db)"
)
#: ``--store`` of the commands whose RESULTS may be run references.
REFERENCE_STORE_HELP = (
    "run store in which RESULTS that are no file are looked up as run ids or names: a "
    "file, or postgresql://user@host:port/db (default: $EVALDELTA_STORE, else "
    ".evaldelta/runs.db)"
)


def store_path(args: argparse.Namespace) -> str:
    """The store the options name: --store, else $EVALDELTA_STORE, else the default."""
    from evaldelta.store import DEFAULT_STORE

    chosen = getattr(args, "store", None) or os.environ.get("EVALDELTA_STORE")
    return chosen or DEFAULT_STORE


def open_store_of(
    args: argparse.Namespace, *, create: bool = False, reading: bool = False
) -> RunStore:
    """The store the options name, opened (created only when ``create``); for a command
    that only reads (``reading``), read-only when it may not be written."""
    return open_store(store_path(args), create=create, reading=reading)


def shown(path: str) -> str:
    """A store as output names it: a URL without its password."""
    from evaldelta.store import mask_url

    return mask_url(path)


def open_store(path: str, *, create: bool = False, reading: bool = False) -> RunStore:
    """The store at ``path``; read-only for ``reading`` when this user may not write it
    (another user's store, a read-only disk): listing, showing, exporting and comparing
    need no write access. (A PostgreSQL role that may only read needs no such care:
    reading writes nothing to an up-to-date store.)"""
    from evaldelta.store import RunStore, is_url
    from evaldelta.store._runstore import can_write

    readonly = reading and not is_url(path) and os.path.exists(path) and not can_write(path)
    return RunStore(path, create=create, readonly=readonly)


#: The first bytes of every SQLite file: what tells a run store from a results file.
SQLITE_HEADER = b"SQLite format 3\x00"


def is_store_file(path: str) -> bool:
    """Whether ``path`` is an existing file that starts as an SQLite database does."""
    if not os.path.isfile(path):  # a folder, a FIFO (whose open would wait for a writer)
        return False
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def store_file_ref(path: str) -> tuple[str, str | None] | None:
    """A run store named as an input: ``store.db`` (its latest run) or ``store.db:REF``
    (the run of that id or name), as ``(file, ref)``; ``None`` for anything else.

    Only the last ``:`` splits, and only when what comes before it is a store file, so
    that a results file whose name holds a ``:`` is still read as one.
    """
    if is_store_file(path):
        return path, None
    file, sep, ref = path.rpartition(":")
    if sep and file and ref and is_store_file(file):
        return file, ref
    return None


def _check_fields(run: Run, extra_fields: tuple[str, ...]) -> None:
    for name in extra_fields:
        if name not in run.extra:
            raise StoreError(
                f"{run.source} was stored without the field {name!r}; import it again with "
                f"`evaldelta runs import FILE --keep-field {name}` to group cases by it"
            )


def run_from_store_file(
    args: argparse.Namespace,
    path: str,
    ref: str | None,
    extra_fields: tuple[str, ...] = (),
    *,
    keep_text: bool = False,
) -> Run:
    """The run ``ref`` names (an id or a name) in the store file ``path``, or its
    latest run (the highest id) when ``ref`` is ``None``; its source reads
    ``baseline.db:before (run 3)`` so that the output names the store.

    Raises:
        InputError: the store holds no runs, or none that ``ref`` names.
        StoreError: the store cannot be read (one of a newer evaldelta, say).
    """
    from evaldelta.store._runstore import is_id

    listing = f"list its runs with `evaldelta runs list --store {path}`"
    store = open_store(path, reading=True)
    try:
        if ref is None:
            latest = store.list_runs(limit=1)
            if not latest:
                raise InputError(
                    f"{path}: the run store holds no runs; import one with "
                    f"`evaldelta runs import FILE --store {path}`, or give a results file"
                )
            rid = latest[0].id
        else:
            found = store.find(ref)
            if found is None:
                what = f"with id {ref}" if is_id(ref) else f"named {ref!r}"
                raise InputError(f"{path}:{ref}: no run {what} in the run store {path}; {listing}")
            rid = found
        with progress_line(args, f"reading run {rid} of {path}") as line:
            run = store.get_run(rid, keep_text=keep_text, progress=line)
    finally:
        store.close()
    # The store gives ``before (run 3)``; which store it came from is what two differ by.
    run.source = f"{path}:{run.source}"
    _check_fields(run, extra_fields)
    return run


def stored_run(
    args: argparse.Namespace,
    ref: str,
    extra_fields: tuple[str, ...] = (),
    *,
    keep_text: bool = False,
) -> Run | None:
    """The stored run ``ref`` names, for an argument that is no file; ``None`` when
    there is no store to look in (the caller then reports the missing file).

    Raises:
        InputError: there is a store, but no such run in it.
    """
    from evaldelta.store import is_url
    from evaldelta.store._runstore import is_id

    path = store_path(args)
    if not is_url(path) and not os.path.isfile(path):
        return None
    store = open_store_of(args, reading=True)
    try:
        rid = store.find(ref)
        if rid is None:
            what = f"with id {ref}" if is_id(ref) else f"named {ref!r}"
            raise InputError(
                f"{ref}: no such file, and no stored run {what} in {shown(path)}; check the path, "
                "or list stored runs with `evaldelta runs list`"
            )
        with progress_line(args, f"reading run {rid}") as line:
            run = store.get_run(rid, keep_text=keep_text, progress=line)
    finally:
        store.close()
    _check_fields(run, extra_fields)
    return run
