"""Readers: one module per input format, and a registry that sniffs and picks.

Adding a format is one module with ``NAME``, ``sniff(head) -> bool`` and
``read(path, keep_text=...) -> Run``, plus one line in :data:`READERS`.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from evaldelta.errors import UnknownFormatError
from evaldelta.io import jsonl
from evaldelta.io._source import read_bytes, resolve
from evaldelta.model import Run

__all__ = ["READERS", "formats", "load"]


class Reader(NamedTuple):
    name: str
    sniff: Callable[[bytes], bool]
    read: Callable[..., Run]


#: Every reader, in the order sniffing tries them.
READERS: tuple[Reader, ...] = (Reader(jsonl.NAME, jsonl.sniff, jsonl.read),)


def formats() -> list[str]:
    """Names accepted by ``load(..., format=NAME)``."""
    return [r.name for r in READERS]


def load(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    keep_text: bool = True,
    extra_fields: Sequence[str] = (),
) -> Run:
    """Read a results file (or a run directory) into a :class:`~evaldelta.model.Run`.

    Args:
        path: a results file, a ``.gz`` of one, or a run directory holding ``index.jsonl``.
        format: force a reader by name instead of sniffing the content.
        keep_text: keep inputs, outputs and expected answers (costs memory on big runs).
        extra_fields: further per-record fields to keep, in ``run.extra`` (e.g. a
            document id to cluster cases by).
    """
    file = resolve(path)
    if format is not None:
        for reader in READERS:
            if reader.name == format:
                return reader.read(file, keep_text=keep_text, extra_fields=extra_fields)
        raise UnknownFormatError(
            f"unknown input format {format!r}; choose one of: {', '.join(formats())}"
        )
    head = _head(file)
    if not head.strip():
        return jsonl.read(file, keep_text=keep_text)  # reports the empty file
    for reader in READERS:
        if reader.sniff(head):
            return reader.read(file, keep_text=keep_text, extra_fields=extra_fields)
    start = head.lstrip()[:1]
    if start in (b"[", b"{"):
        what = "a JSON array" if start == b"[" else "one pretty-printed JSON document"
        raise UnknownFormatError(
            f"{file}: is {what}, not JSON Lines; write one JSON object per line "
            f"(supported formats: {', '.join(formats())})"
        )
    shown = head.lstrip()[:20].decode("utf-8", errors="replace")
    raise UnknownFormatError(
        f"{file}: not a results file evaldelta can read (it starts with {shown!r}); "
        f"supported formats: {', '.join(formats())} (force one with --input-format)"
    )


def _head(file: Path, size: int = 65536) -> bytes:
    """The first bytes of the (gunzipped) content, for sniffing."""
    try:
        with open(file, "rb") as fh:
            head = fh.read(size)
    except OSError:
        return read_bytes(file)  # raises the error that names the file
    if head[:2] == b"\x1f\x8b":
        try:
            with gzip.open(file, "rb") as gz:
                head = gz.read(size)
        except (OSError, EOFError, zlib.error):
            return read_bytes(file)  # raises the error that names the file
    return head.removeprefix(b"\xef\xbb\xbf")
