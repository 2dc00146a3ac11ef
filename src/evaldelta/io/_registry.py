"""The registry of readers: which module reads which format, sniffing a file's format,
and :func:`load`."""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from evaldelta.errors import ParseError, UnknownFormatError
from evaldelta.io._source import LIMITS, RUN_DIR_INDEXES, engine_takes, read_bytes, resolve
from evaldelta.model import Run

if TYPE_CHECKING:
    from evaldelta.io._reader import ReaderModule

__all__ = ["READERS", "Reader", "formats", "load"]


class Reader(NamedTuple):
    """A reader by name and module; the module is imported only when it is needed,
    so that start-up does not pay for formats the file is not in. ``mapped``: the
    module that reads a file of this format whose fields ``--map`` places."""

    name: str
    module: str
    mapped: str | None = None

    def load_module(self, mapping: bool = False) -> ReaderModule:
        """The module that reads this format (the ``mapped`` one for a ``mapping``)."""
        import importlib

        name = self.mapped if mapping and self.mapped else self.module
        return cast("ReaderModule", importlib.import_module(name))

    def sniff(self, path: Path, head: bytes) -> bool:
        return bool(self.load_module().sniff(path, head))

    def read(self, path: Path, **options: Any) -> Run:
        return self.load_module(bool(options.get("mapping"))).read(path, **options)


#: Every reader, in the order sniffing tries them (generic ones last).
READERS: tuple[Reader, ...] = (
    Reader("inspect", "evaldelta.io._inspect_ai"),
    Reader("lm-eval", "evaldelta.io._lm_eval"),
    Reader("promptfoo", "evaldelta.io._promptfoo"),
    Reader("deepeval", "evaldelta.io._deepeval"),
    Reader("openai-evals", "evaldelta.io._openai_evals"),
    Reader("parquet", "evaldelta.io._parquet"),
    Reader("csv", "evaldelta.io._csv"),
    Reader("jsonl", "evaldelta.io._jsonl", mapped="evaldelta.io._mapped"),
)
_JSONL = READERS[-1]


def formats() -> list[str]:
    """Names accepted by ``load(..., format=NAME)``."""
    return [r.name for r in READERS]


def _plainly_agentv(head: bytes) -> bool:
    """The common case, recognised without loading any other reader: JSON Lines whose
    first record names a test id the agentv way (and is no lm-eval sample)."""
    first = head.lstrip()[:4096].split(b"\n", 1)[0]
    others = (b'"doc_id"', b'"datasource_item_id"', b'"testIdx"', b'"sample_id"')
    return (
        first.startswith(b"{")
        and (b'"test_id"' in first or b'"testId"' in first)
        and not any(marker in first for marker in others)
    )


def load(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    keep_text: bool = True,
    extra_fields: Sequence[str] = (),
    mapping: Mapping[str, str] | None = None,
    grouped: float | None = None,
) -> Run:
    """Read a results file (or a run directory) into a :class:`~evaldelta.model.Run`.

    Args:
        path: a results file, a ``.gz`` of one, or a run directory.
        format: force a reader by name instead of sniffing the content.
        keep_text: keep inputs, outputs and expected answers (costs memory on big runs).
        extra_fields: further per-record fields to keep, in ``run.extra`` (e.g. a
            document id to cluster cases by).
        mapping: field of the common model -> column or JSON path in the file
            (``--map test_id=question_id,score=correct``).
        grouped: a pass threshold, to let a large file be read already grouped per case
            at it (by the DuckDB engine, see :mod:`evaldelta.io._duckdb`): the run then
            holds one row per case and target, with its :class:`~evaldelta.model.CaseTotals`,
            and compares exactly as the records would. Only with ``keep_text=False`` and
            no ``extra_fields`` or ``mapping``; a file the engine does not take is read
            as records all the same.
    """
    options: dict[str, Any] = {"keep_text": keep_text, "extra_fields": extra_fields}
    if mapping:
        options["mapping"] = dict(mapping)
    p = Path(path)
    if format is not None:
        for reader in READERS:
            if reader.name == format:
                target = p if p.is_dir() and reader.sniff(p, b"") else resolve(p)
                return reader.read(target, **options)
        raise UnknownFormatError(
            f"unknown input format {format!r}; choose one of: {', '.join(formats())}"
        )
    if p.is_dir() and not any((p / name).is_file() for name in RUN_DIR_INDEXES):
        for reader in READERS:
            if reader.sniff(p, b""):
                return reader.read(p, **options)
    file = resolve(p)
    head = _head(file)
    if grouped is not None and not keep_text and not extra_fields and not mapping:
        run = _read_grouped(file, head, grouped)
        if run is not None:
            return run
    if not head.strip() or (not mapping and _plainly_agentv(head)):
        return _JSONL.read(file, **options)  # (an empty file is reported there)
    for reader in READERS:
        if reader.sniff(file, head):
            if reader is not _JSONL or mapping:
                return reader.read(file, **options)
            try:
                return reader.read(file, **options)
            except ParseError as exc:
                fields = _first_record_fields(head) if exc.line == 1 else None
                if fields is None or fields & _JSONL_FIELDS:
                    raise
                raise UnknownFormatError(_no_known_fields(file, fields)) from exc
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
        f"supported formats: {', '.join(formats())} (force one with --input-format, or "
        "map a CSV's or a JSONL's own fields with --map test_id=...,score=...)"
    )


def _read_grouped(file: Path, head: bytes, pass_threshold: float) -> Run | None:
    """The run of a large agentv JSONL file read grouped by the DuckDB engine; ``None``
    when the engine does not take the file, or leaves it to the plain path."""
    if not engine_takes(file) or not _plainly_agentv(head):
        return None
    from evaldelta.io import _duckdb

    with open(file, "rb") as fh:
        gzip = fh.read(2) == b"\x1f\x8b"
    if gzip and file.stat().st_size * 1032 > LIMITS.unpacked_bytes:
        return None  # it may unpack past the limit, which only the plain path enforces
    from evaldelta.io._jsonl import check_repeated_keys_head

    check_repeated_keys_head(str(file), head)
    try:
        return _duckdb.grouped_jsonl(file, head, pass_threshold, gzip=gzip)
    except _duckdb.FallbackError:
        return None


#: Every field the JSONL reader reads: a first record with none of them is in no format
#: evaldelta knows, rather than an agentv file with one bad record.
_JSONL_FIELDS = frozenset(
    {
        "test_id", "eval_id", "testId", "target", "score", "scores", "passed", "attempt",
        "category", "tags", "latency_ms", "duration_ms", "wait_ms", "trace", "token_usage",
        "input_tokens", "output_tokens", "prompt_tokens", "completion_tokens", "cost_usd",
        "error", "execution_status", "error_kind", "safety_failure", "input", "output",
        "answer", "expected", "expected_output", "metadata",
    }
)  # fmt: skip


def _first_record_fields(head: bytes) -> frozenset[str] | None:
    """The keys of the file's first record, or ``None`` when it is no JSON object."""
    import json

    first = head.lstrip().split(b"\n", 1)[0]
    try:
        record = json.loads(first)
    except (ValueError, RecursionError):
        return None
    return frozenset(record) if isinstance(record, dict) else None


def _no_known_fields(file: Path, fields: frozenset[str]) -> str:
    """The message for a JSON Lines file whose first record no reader recognises."""
    found = ", ".join(f'"{name}"' for name in sorted(fields)) or "none"
    return (
        f"{file}:1: not a results file evaldelta can read: the first record has none of "
        f"the fields of any format evaldelta reads (fields found: {found}); formats "
        f"tried: {', '.join(formats())}; force one with --input-format FORMAT, or name "
        "this file's own fields with --map FIELD=NAME (e.g. --map test_id=id,score=correct)"
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
