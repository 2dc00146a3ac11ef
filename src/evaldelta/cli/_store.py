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

__all__ = ["STORE_HELP", "open_store_of", "store_path", "stored_run"]

STORE_HELP = "the run store (default: $EVALDELTA_STORE, else .evaldelta/runs.db)"


def store_path(args: argparse.Namespace) -> str:
    """The store the options name: --store, else $EVALDELTA_STORE, else the default."""
    from evaldelta.store import DEFAULT_STORE

    chosen = getattr(args, "store", None) or os.environ.get("EVALDELTA_STORE")
    return chosen or DEFAULT_STORE


def open_store_of(args: argparse.Namespace, *, create: bool = False) -> RunStore:
    """The store the options name, opened (created only when ``create``)."""
    from evaldelta.store import RunStore

    return RunStore(store_path(args), create=create)


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
    from evaldelta.store.runstore import is_id

    path = store_path(args)
    if not os.path.isfile(path):
        return None
    store = open_store_of(args)
    try:
        rid = store.find(ref)
        if rid is None:
            what = f"with id {ref}" if is_id(ref) else f"named {ref!r}"
            raise InputError(
                f"{ref}: no such file, and no stored run {what} in {path}; check the path, "
                "or list stored runs with `evaldelta runs list`"
            )
        with progress_line(args, f"reading run {rid}") as line:
            run = store.get_run(rid, keep_text=keep_text, progress=line)
    finally:
        store.close()
    for name in extra_fields:
        if name not in run.extra:
            raise StoreError(
                f"{run.source} was stored without the field {name!r}; import it again with "
                f"`evaldelta runs import FILE --keep-field {name}` to group cases by it"
            )
    return run
