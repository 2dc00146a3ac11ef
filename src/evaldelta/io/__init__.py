"""Readers: one module per input format, and a registry that sniffs and picks.

Adding a format is one module, one line in :data:`READERS` and one fixture. The module
meets :class:`~evaldelta.io._reader.ReaderModule` (``tests/io/test_contract.py``
holds every registered one to it):

- ``NAME``: the name users give to ``--input-format``;
- ``sniff(path, head) -> bool``: whether the file is in this format, from its path
  and its first 64 KiB (gunzipped). ``path`` may be a directory (``head`` is then
  ``b""``): a reader may claim a folder of files (lm-evaluation-harness does);
- ``read(path, *, keep_text=True, extra_fields=(), mapping=None) -> Run``, written
  as ``@reader def read(path, options)`` with the shared layer (``_reader.py``).
  ``mapping`` (``--map``) maps the common model's fields onto the file's columns or
  JSON paths; readers of fixed formats ignore it, and a reader whose registry line
  names a ``mapped`` module hands a mapped file to that module instead.

Sniffing tries the readers in order, most specific first: a generic reader
(JSONL, CSV) comes last.

The layer below the readers: ``_source.py`` (a file's bytes, gzip, run directories,
the input fingerprint), ``_errors.py`` (msgspec's errors in the user's words),
``_registry.py`` (the readers by name, sniffing, :func:`load`),
``_reader.py`` (the contract, and decoding a document or JSON Lines), ``_agentv.py``
(agentv's statuses and columns, for ``jsonl`` and ``mapped``) and ``_jsonl_fast.py``
(the plain path of the JSONL reader), ``_duckdb.py`` (the DuckDB engine: large files
read and grouped per case in SQL, imported only then) and ``_parquet.py`` (Parquet files
of records, read and written through DuckDB).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaldelta.model import Run

from evaldelta.io._registry import READERS, Reader, formats, load
from evaldelta.io._source import ENGINE, LIMITS, Engine, Limits


def write_parquet(run: Run, path: str | os.PathLike[str]) -> int:
    """Write ``run`` to a Parquet file of records (see :mod:`evaldelta.io._parquet`),
    which every command reads back; returns the number of records written."""
    from evaldelta.io._parquet import write_parquet as write

    return write(run, Path(path))


__all__ = [
    "ENGINE",
    "LIMITS",
    "READERS",
    "Engine",
    "Limits",
    "Reader",
    "formats",
    "load",
    "write_parquet",
]
