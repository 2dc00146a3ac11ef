"""Reader for JSON Lines results: agentv's format and any file shaped like it.

One JSON object per line, one line per attempt. Fields read (first one present wins):

- test id: ``test_id``, ``eval_id``, ``testId``
- ``target``, ``score`` (a number), ``passed``, ``attempt``, ``category``, ``tags``
- ``scores``: agentv's list of ``{"name", "score", ...}`` or a mapping name -> score;
  when a record has no ``score``, its score is the mean of these
- latency: ``latency_ms``, ``duration_ms``, ``trace.duration_ms``; ``wait_ms``
- tokens: ``token_usage`` / ``trace.token_usage`` (``input``/``output``, or the
  ``input_tokens``/``prompt_tokens`` spellings), or top-level ``input_tokens``
- cost: ``cost_usd``, ``trace.cost_usd``
- errors: ``error`` (any non-empty value), or an ``execution_status`` that says the
  attempt did not run; ``error_kind``; ``safety_failure``
- text, only when asked for: ``input``, ``output``/``answer``, ``expected``/
  ``expected_output``, ``metadata``

A record with an error and no score scores 0 (and is counted as an error).

The file is read in pieces of whole lines. A piece in the common agentv shape takes the
plain path (:mod:`evaldelta.io._jsonl_fast`: typed decoding that checks the shape as it
goes, and columns built with little Python per record); any other piece takes the general path,
which reads every spelling above and names the line of anything wrong. Both give the
same columns for the same records (``tests/io/test_jsonl.py`` holds them to it).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from evaldelta._plain import picked
from evaldelta.errors import ParseError
from evaldelta.io._agentv import (
    ERROR_STATUSES,
    INFRA_STATUSES,
    INTERRUPTED_STATUSES,
    STOPPED_EARLY,
    AttemptRangeError,
    attempt_column,
    fill,
    one_object_per_line,
    passed_column,
    scorer_columns,
)
from evaldelta.io._errors import explain_line, explain_line_decode
from evaldelta.io._jsonl_fast import PlainDecoder as _PlainDecoder
from evaldelta.io._reader import NO_RECORDS, decode_by_line, error_text, fill_scores
from evaldelta.io._source import LineChunk, iter_line_chunks, paused_gc
from evaldelta.model import NUMBER_FIELDS, Factorized, Factorizer, Run, float_column

if TYPE_CHECKING:
    pass

NAME = "jsonl"

__all__ = [
    "ERROR_STATUSES",
    "INFRA_STATUSES",
    "INTERRUPTED_STATUSES",
    "NAME",
    "from_records",
    "read",
    "sniff",
]

#: Pieces in a row the plain path may fail to read before it leaves the file to the
#: general path (a file of another shape should not be decoded three times over).
_MAX_PLAIN_MISSES = 3


class _TokenUsage(msgspec.Struct, gc=False):
    """``token_usage`` of a record (or of its trace), in agentv's or the OpenAI names."""

    input: float | None = None
    output: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    prompt_tokens: float | None = None
    completion_tokens: float | None = None

    def tokens_in(self) -> float | None:
        return _first(self.input, self.input_tokens, self.prompt_tokens)

    def tokens_out(self) -> float | None:
        return _first(self.output, self.output_tokens, self.completion_tokens)


class _Trace(msgspec.Struct, gc=False):
    """``trace`` of a record: where agentv puts duration, token usage and cost."""

    duration_ms: float | None = None
    latency_ms: float | None = None
    token_usage: _TokenUsage | None = None
    cost_usd: float | None = None


class _Scorer(msgspec.Struct, gc=False):
    """One entry of a record's ``scores`` list: a scorer's name and score."""

    name: str | None = None
    score: float | None = None


class _Record(msgspec.Struct, gc=False):
    """The fields we read; every other field of a line is skipped unparsed.

    ``gc=False``: a million records must not wake the cycle collector again and
    again (it made reading four times slower); these objects hold no cycles.
    """

    test_id: str | int | None = None
    eval_id: str | int | None = None
    testId: str | int | None = None  # noqa: N815 - the file's own spelling
    target: str | None = None
    score: float | None = None
    scores: list[_Scorer] | dict[str, float | None] | None = None
    passed: bool | None = None
    attempt: int | None = None
    latency_ms: float | None = None
    duration_ms: float | None = None
    wait_ms: float | None = None
    token_usage: _TokenUsage | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost_usd: float | None = None
    trace: _Trace | None = None
    error: Any = None
    error_kind: str | None = None
    execution_status: str | None = None
    safety_failure: Any = None
    category: str | None = None
    tags: list[str] | dict[str, Any] | None = None
    # Kept undecoded: fingerprinted to tell whether two runs asked the same questions.
    input: msgspec.Raw = msgspec.Raw(b"")
    # Run metadata, read leniently: a file must not become unreadable over them.
    timestamp: Any = None
    start_time: Any = None
    run_status: Any = None
    config: Any = None
    # What a run of `evaldelta eval --against` recorded (its first record, on export).
    case_order: Any = None
    sequential: Any = None
    run_finished_at: Any = None  # when one record's timestamp cannot also say the end


class _RecordWithText(_Record, gc=False):
    output: Any = None
    answer: Any = None
    expected: Any = None
    expected_output: Any = None
    metadata: dict[str, Any] | None = None


_DECODERS: dict[bool, msgspec.json.Decoder[Any]] = {
    False: msgspec.json.Decoder(_Record),
    True: msgspec.json.Decoder(_RecordWithText),
}


def _decoder(keep_text: bool, extra_fields: tuple[str, ...]) -> msgspec.json.Decoder[Any]:
    """The decoder for records, with any extra top-level fields the caller asked for."""
    base = _RecordWithText if keep_text else _Record
    wanted = [f for f in extra_fields if f not in base.__struct_fields__ and f != "input"]
    if not wanted:
        return _DECODERS[keep_text]
    fields = [(f"extra_{i}", Any, None) for i in range(len(wanted))]
    rename = {f"extra_{i}": name for i, name in enumerate(wanted)}
    struct = msgspec.defstruct("_RecordExtra", fields, bases=(base,), rename=rename, gc=False)
    return msgspec.json.Decoder(struct)


def _explain(err: ValueError, line: bytes) -> str:
    """What is wrong with a line that does not decode."""
    if isinstance(err, msgspec.ValidationError):
        return explain_line(str(err), line)
    return explain_line_decode(str(err), line)


def _first(*values: float | None) -> float | None:
    for v in values:
        if v is not None:
            return v
    return None


def sniff(path: Path, head: bytes) -> bool:
    """True when the file looks like JSON Lines: its first line is one JSON object."""
    first = head.lstrip().split(b"\n", 1)[0].strip()
    # A lone "{" opens a pretty-printed JSON document, not a line of JSONL.
    return first.startswith(b"{") and first != b"{"


def read(
    path: Path,
    *,
    keep_text: bool = True,
    extra_fields: Sequence[str] = (),
    mapping: Mapping[str, str] | None = None,
    fast: bool = True,
) -> Run:
    """Read a JSONL results file into a :class:`Run`.

    ``extra_fields``: further top-level fields to keep (e.g. a document id to cluster by).
    ``mapping`` (``--map``): read by :mod:`evaldelta.io._mapped` instead, as
    :func:`evaldelta.io.load` routes it (kept here for callers of this function).
    ``fast``: read pieces of the common agentv shape by the plain path (see
    :class:`_PlainDecoder`); ``False`` reads every piece by the general path. Both give
    the same run, and a test holds them to it.
    """
    if mapping:
        from evaldelta.io import _mapped as mapped

        return mapped.read(path, keep_text=keep_text, extra_fields=extra_fields, mapping=mapping)
    src = str(path)
    extra = tuple(dict.fromkeys(extra_fields))
    decoder = _decoder(keep_text, extra)
    plain = _PlainDecoder(keep_text, _MAX_PLAIN_MISSES) if fast and not extra else None
    factorizers = {"test_id": _Ids(), "target": Factorizer(), "category": Factorizer()}
    columns = _Columns(_file_size(path), keep_text)
    with paused_gc():
        for k, chunk in enumerate(iter_line_chunks(path)):
            if k == 0:
                _check_repeated_keys(src, chunk)
            part = plain.columns(chunk, factorizers) if plain is not None else None
            if part is None:
                part = _general_columns(src, chunk, decoder, keep_text, extra, factorizers)
            if part is not None:
                columns.add(part, len(chunk.data))
    if not columns.size:
        raise ParseError(src, None, f"is empty: {NO_RECORDS}")
    run = columns.run(src, factorizers)
    _check_id_types(src, run, factorizers["test_id"])
    return run


#: Lines at the start of a file checked for a key written twice in one object.
REPEATED_KEY_LINES = 1000


class _RepeatedKeyError(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _check_repeated_keys(src: str, chunk: LineChunk) -> None:
    """Refuse a record that gives a key twice (``"score": 0.1, "score": 0.9``), which a
    decoder would quietly read as its last value. A writer that does it does it on every
    line, so the first REPEATED_KEY_LINES lines are checked (a full check would parse
    every line twice)."""
    import json

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKeyError(key)
            seen.add(key)
        return dict(pairs)

    end = (
        len(chunk.data)
        if len(chunk.breaks) < REPEATED_KEY_LINES
        else int(chunk.breaks[REPEATED_KEY_LINES - 1])
    )
    head = bytes(chunk.data[:end])
    for number, line in enumerate(head.split(b"\n"), start=chunk.first_line):
        if not line.strip():
            continue
        try:
            json.loads(line, object_pairs_hook=unique)
        except _RepeatedKeyError as repeated:
            raise ParseError(
                src,
                number,
                f'the key "{repeated.key}" is given twice in one object: which value is '
                "meant cannot be told; write each key once",
            ) from None
        except (ValueError, RecursionError):
            return  # not JSON (or too deep): the reader names the line itself


def check_repeated_keys_head(src: str, head: bytes) -> None:
    """:func:`_check_repeated_keys` on the first bytes of a file (its whole lines), for
    a reader that does not read the file in :class:`LineChunk` pieces."""
    import numpy as np

    whole = head[: head.rfind(b"\n") + 1]
    if not whole:
        return
    breaks = np.flatnonzero(np.frombuffer(whole, dtype=np.uint8) == 10)
    _check_repeated_keys(src, LineChunk(memoryview(whole), 1, breaks))


class _Ids(Factorizer):
    """The test ids' factorizer, which also counts the ids written as numbers (id ->
    [records, first line]): ``1`` and ``"1"`` must not quietly become one case."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: dict[str, list[int]] = {}


def _check_id_types(src: str, run: Run, ids: Factorizer) -> None:
    """Refuse an id written as a number on some records and as a string on others."""
    if not isinstance(ids, _Ids) or not ids.numbers:
        return
    import numpy as np

    counts = np.bincount(run.test_index, minlength=len(run.test_ids))
    for code, tid in enumerate(run.test_ids):
        seen = ids.numbers.get(tid)
        if seen is not None and int(counts[code]) > seen[0]:
            raise ParseError(
                src,
                seen[1],
                f'"test_id" is the number {tid} here and the string "{tid}" elsewhere: they '
                "would be read as one case; write every test id the same way (as a string)",
            )


def from_records(
    records: Sequence[Mapping[str, Any]],
    *,
    source: str,
    keep_text: bool = True,
    status: str | None = None,
    config: Mapping[str, Any] | None = None,
) -> Run:
    """A run of records given as JSON objects in agentv's shape, read exactly as the
    same objects written to a ``.jsonl`` file would be (the runner builds its runs
    this way, so a stored run and its ``--out`` file give the same comparison).

    ``status`` and ``config``, when given, replace what the records declare.
    """
    import numpy as np

    if not records:
        raise ParseError(source, None, "has no records")
    data = msgspec.json.Encoder().encode_lines(list(records))
    view = memoryview(data)
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    factorizers = {"test_id": _Ids(), "target": Factorizer(), "category": Factorizer()}
    columns = _Columns(len(data), keep_text)
    with paused_gc():
        part = _general_columns(
            source, LineChunk(view, 1, breaks), _decoder(keep_text, ()), keep_text, (), factorizers
        )
        assert part is not None
        columns.add(part, len(data))
    run = columns.run(source, factorizers)
    if status is not None:
        run.status = status
    if config is not None:
        run.config = dict(config)
    return run


def _file_size(path: Path) -> int | None:
    """The size of an uncompressed file (``None`` for gzip: its size tells little)."""
    if path.suffix == ".gz":
        return None
    try:
        return path.stat().st_size
    except OSError:
        return None


def _general_columns(
    src: str,
    chunk: LineChunk,
    decoder: msgspec.json.Decoder[Any],
    keep_text: bool,
    extra: tuple[str, ...],
    factorizers: dict[str, Factorizer],
) -> dict[str, Any] | None:
    """The columns of one piece of the file, any shape; ``None`` for blank lines only."""
    data = chunk.data
    try:
        recs: list[_Record] = decoder.decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        recs = []  # the line-by-line reading below names the bad line
    lines: Sequence[int]
    if recs and one_object_per_line(chunk, len(recs)):
        lines = range(chunk.first_line, chunk.first_line + len(recs))
    elif not recs and bytes(data).isspace():
        return None
    else:
        recs, lines = decode_by_line(
            src, bytes(data), decoder.decode, _explain, first_line=chunk.first_line
        )
    return _chunk_columns(src, lines, recs, keep_text, extra, factorizers)


def _input_hashes(recs: list[Any]) -> list[int]:
    """CRC-32 of each record's input, 0 where it has none (absent or null).

    A string input hashes as its text, as the other readers hash it; any other value in
    a canonical form (keys sorted, no spacing, numbers as msgspec writes them), so two
    tools that write the same question differently still agree, and so does a reader
    that gets the value from DuckDB's JSON. Attempts repeat their input, so each
    distinct one is canonicalised once.
    """
    raws = [bytes(r.input) for r in recs]
    fingerprint: dict[bytes, int] = {}
    for raw in dict.fromkeys(raws):
        value = msgspec.json.decode(raw) if raw else None
        if value is None:
            fingerprint[raw] = 0
        elif isinstance(value, str):
            fingerprint[raw] = zlib.crc32(value.encode("utf-8", "surrogatepass")) or 1
        else:
            fingerprint[raw] = zlib.crc32(msgspec.json.encode(value, order="sorted")) or 1
    return list(map(fingerprint.__getitem__, raws))


def _run_facts(recs: list[Any]) -> tuple[str, dict[str, Any], str | None, str | None]:
    """Status, config, and first and last timestamp declared by the records."""
    statuses = {str(r.run_status).lower() for r in recs if r.run_status is not None}
    status = (
        "interrupted"
        if statuses & INTERRUPTED_STATUSES
        else STOPPED_EARLY
        if STOPPED_EARLY in statuses
        else "complete"
    )
    found = next((r.config for r in recs if r.config), None)
    config: dict[str, Any] = (
        found if isinstance(found, dict) else ({"config": found} if found is not None else {})
    )
    raw = [r.timestamp if r.timestamp is not None else r.start_time for r in recs]
    ends = [r.run_finished_at for r in recs if r.run_finished_at is not None]
    # "" (as runs export writes it): the run declared a start and no end.
    no_end = "" in ends
    raw += [t for t in ends if t != ""]
    stamps = [s for s in (_iso(t) for t in raw if t is not None) if s]
    # ISO 8601 stamps in one time zone sort as text; the extremes are all we need.
    return (
        status,
        config,
        (min(stamps) if stamps else None),
        (max(stamps) if stamps and not no_end else None),
    )


def _flag(value: Any) -> bool:
    """A yes/no field written as true, 1 or "true"."""
    if value is None or value is False:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return value != 0
    return isinstance(value, str) and value.strip().lower() in ("true", "yes", "1")


def _iso(value: Any) -> str | None:
    """A timestamp as ISO 8601 text: strings as they are, epoch seconds or ms converted."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        from datetime import datetime, timezone

        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat()
        except (OverflowError, OSError, ValueError):
            return None
    return None


def _chunk_columns(
    src: str,
    lines: Sequence[int],
    recs: list[Any],
    keep_text: bool,
    extra: tuple[str, ...],
    factorizers: dict[str, Factorizer],
) -> dict[str, Any]:
    """The columns of one chunk of records: numbers as arrays, strings as codes."""
    import numpy as np

    n = len(recs)
    test_ids: list[Any] = fill(
        [r.test_id for r in recs],
        lambda: [r.eval_id for r in recs],
        lambda: [r.testId for r in recs],
    )
    if None in test_ids:
        i = test_ids.index(None)
        raise ParseError(
            src,
            lines[i],
            'record has no "test_id" (nor "eval_id" or "testId"); every record needs one',
        )
    if not all(type(t) is str for t in test_ids):
        ids = factorizers["test_id"]
        if isinstance(ids, _Ids):
            for t, line in zip(test_ids, lines, strict=True):
                if type(t) is not str:
                    ids.numbers.setdefault(str(t), [0, line])[0] += 1
        test_ids = [str(t) for t in test_ids]
    if "" in test_ids:
        i = test_ids.index("")
        raise ParseError(src, lines[i], '"test_id" is empty; every record needs a test id')
    targets = [r.target for r in recs]
    if "" in targets:
        i = targets.index("")
        raise ParseError(
            src, lines[i], '"target" is empty; name the target, or leave the field out'
        )

    errors: dict[int, str] = {}
    raw_errors = [r.error for r in recs]
    statuses = [r.execution_status for r in recs]
    if raw_errors.count(None) != n or statuses.count(None) != n:
        for i, (err, status) in enumerate(zip(raw_errors, statuses, strict=True)):
            text = error_text(err)
            if text is None and status is not None and status.lower() in ERROR_STATUSES:
                text = f"execution_status: {status}"
            if text is not None:
                errors[i] = text

    scorer_cols = scorer_columns(recs)
    scores = fill_scores(
        [r.score for r in recs],
        scorer_cols,
        errors,
        lambda i: ParseError(
            src,
            lines[i],
            f'record {test_ids[i]!r} has no "score"; every record needs a number '
            '(or an "error" for an attempt that did not run)',
        ),
    )

    traces = [r.trace for r in recs]
    has_trace = traces.count(None) != n

    def from_trace(attr: str) -> Callable[[], list[Any]]:
        return lambda: [getattr(t, attr) if t is not None else None for t in traces]

    latency = fill(
        [r.latency_ms for r in recs],
        lambda: [r.duration_ms for r in recs],
        *((from_trace("duration_ms"), from_trace("latency_ms")) if has_trace else ()),
    )
    usage = fill(
        [r.token_usage for r in recs], *((from_trace("token_usage"),) if has_trace else ())
    )
    no_usage = usage.count(None) == n

    def tokens(attr: str, of_usage: str) -> list[Any]:
        """The records' own counts, else their ``token_usage``'s (or their trace's)."""
        own = [getattr(r, attr) for r in recs]
        if no_usage:
            return own
        return fill(own, lambda: [getattr(u, of_usage)() if u is not None else None for u in usage])

    input_tokens = tokens("input_tokens", "tokens_in")
    output_tokens = tokens("output_tokens", "tokens_out")
    cost = fill([r.cost_usd for r in recs], *((from_trace("cost_usd"),) if has_trace else ()))

    tags: dict[int, tuple[str, ...]] = {}
    raw_tags = [r.tags for r in recs]
    if raw_tags.count(None) != n:
        for i, t in enumerate(raw_tags):
            if t:
                tags[i] = (
                    tuple(f"{k}={v}" for k, v in t.items()) if isinstance(t, dict) else tuple(t)
                )
    try:
        attempt = attempt_column([r.attempt for r in recs])
    except AttemptRangeError as err:
        raise ParseError(src, lines[err.index], str(err)) from None
    kinds = [r.error_kind for r in recs]
    error_kinds = (
        {} if kinds.count(None) == n else {i: k for i, k in enumerate(kinds) if k is not None}
    )
    if statuses.count(None) != n:
        for i, status in enumerate(statuses):
            if status is not None and i not in error_kinds and status.lower() in INFRA_STATUSES:
                error_kinds[i] = "infra"

    texts = None
    if keep_text:
        texts = {
            "input": [msgspec.json.decode(r.input) if len(r.input) else None for r in recs],
            "output": fill([r.output for r in recs], lambda: [r.answer for r in recs]),
            "expected": fill([r.expected for r in recs], lambda: [r.expected_output for r in recs]),
            "metadata": [r.metadata for r in recs],
        }
    status, config, started_at, finished_at = _run_facts(recs)
    order = next((r.case_order for r in recs if isinstance(r.case_order, list)), None)
    sequential = next((r.sequential for r in recs if isinstance(r.sequential, dict)), None)
    extra_columns: dict[str, list[Any]] = {}
    if extra:
        names = [f for f in extra if f not in _RecordWithText.__struct_fields__ and f != "input"]
        for i, name in enumerate(names):
            extra_columns[name] = [getattr(r, f"extra_{i}") for r in recs]
        for name in extra:
            if name not in extra_columns and name in _Record.__struct_fields__:
                extra_columns[name] = [getattr(r, name, None) for r in recs]
    return {
        "n": n,
        "lines": (
            np.arange(lines.start, lines.stop, dtype=np.int64)
            if isinstance(lines, range)
            else np.asarray(lines, dtype=np.int64)
        ),
        "status": status,
        "config": config,
        "case_order": None if order is None else [str(t) for t in order],
        "sequential": sequential,
        "started_at": started_at,
        "finished_at": finished_at,
        "input_hash": np.asarray(_input_hashes(recs), dtype=np.int64),
        "extra": extra_columns,
        "test_id": factorizers["test_id"].codes(test_ids),
        "score": float_column(scores, n),
        "target": factorizers["target"].codes(targets),
        "passed": passed_column([r.passed for r in recs]),
        "attempt": attempt,
        "latency_ms": float_column(latency, n),
        "wait_ms": float_column([r.wait_ms for r in recs], n),
        "input_tokens": float_column(input_tokens, n),
        "output_tokens": float_column(output_tokens, n),
        "cost_usd": float_column(cost, n),
        "errors": errors,
        "error_kinds": error_kinds,
        "safety_failure": np.asarray([_flag(r.safety_failure) for r in recs], dtype=np.bool_),
        "category": factorizers["category"].codes([r.category for r in recs]),
        "tags": tags,
        "scorer_scores": {k: float_column(v, n) for k, v in scorer_cols.items()},
        "texts": texts,
    }


#: The columns every piece gives as an array of one entry per record, and their types.
_ARRAY_COLUMNS = {
    "lines": "int64",
    "input_hash": "int64",
    "test_id": "int64",
    "target": "int64",
    "category": "int64",
    "score": "float64",
    "passed": "int64",
    "attempt": "int64",
    **dict.fromkeys(NUMBER_FIELDS, "float64"),
    "safety_failure": "bool",
}


class _Columns:
    """The columns of a run, filled piece by piece.

    Each column is one array, grown in place as pieces arrive (sized at first from the
    file's size and the first piece's records per byte), so that reading never holds
    the pieces and their join at once, nor leaves the memory of a thousand small
    arrays behind.
    """

    def __init__(self, file_size: int | None, keep_text: bool) -> None:
        self.file_size = file_size
        self.keep_text = keep_text
        self.size = 0
        self.arrays: dict[str, Any] = {}
        self.scorers: dict[str, Any] = {}
        self.errors: dict[int, str] = {}
        self.error_kinds: dict[int, str] = {}
        self.tags: dict[int, tuple[str, ...]] = {}
        self.extra: dict[str, list[Any]] = {}
        self.texts: dict[str, list[Any]] | None = None
        self.interrupted = False
        self.stopped_early = False
        self.config: dict[str, Any] = {}
        self.case_order: list[str] | None = None
        self.sequential: dict[str, Any] | None = None
        self.started_at: str | None = None
        self.finished_at: str | None = None

    def _reserve(self, n: int, piece_bytes: int) -> None:
        """Room for ``n`` more records."""
        import numpy as np

        need = self.size + n
        capacity = next(iter(self.arrays.values())).shape[0] if self.arrays else 0
        if need <= capacity:
            return
        if not self.arrays and self.file_size and piece_bytes:
            # A guess from the first piece, a little over so that it is seldom grown.
            capacity = int(self.file_size / piece_bytes * n * 1.05) + 1024
        capacity = max(capacity, need, int(capacity * 1.5))
        if not self.arrays:
            self.arrays = {k: np.empty(capacity, dtype=t) for k, t in _ARRAY_COLUMNS.items()}
        else:
            for arr in (*self.arrays.values(), *self.scorers.values()):
                arr.resize(capacity, refcheck=False)  # in place: no view of it exists

    def add(self, part: dict[str, Any], piece_bytes: int) -> None:
        """Append the columns of one piece (see :func:`_chunk_columns`)."""
        import numpy as np

        n: int = part["n"]
        self._reserve(n, piece_bytes)
        at, end = self.size, self.size + n
        for key, arr in self.arrays.items():
            arr[at:end] = part[key]
        capacity = next(iter(self.arrays.values())).shape[0]
        for name, values in part["scorer_scores"].items():
            if name not in self.scorers:
                column = np.empty(capacity, dtype=np.float64)
                column[:at] = np.nan
                self.scorers[name] = column
            self.scorers[name][at:end] = values
        for name, column in self.scorers.items():
            if name not in part["scorer_scores"]:
                column[at:end] = np.nan
        for mine, theirs in (
            (self.errors, part["errors"]),
            (self.error_kinds, part["error_kinds"]),
            (self.tags, part["tags"]),
        ):
            mine.update({i + at: v for i, v in theirs.items()})
        for name, values in part["extra"].items():
            self.extra.setdefault(name, [None] * at).extend(values)
        for name, values in self.extra.items():
            if name not in part["extra"]:
                values.extend([None] * n)
        if self.keep_text:
            if self.texts is None:
                self.texts = {k: [] for k in part["texts"]}
            for k, values in self.texts.items():
                values.extend(part["texts"][k])
        self.interrupted = self.interrupted or part["status"] == "interrupted"
        self.stopped_early = self.stopped_early or part["status"] == STOPPED_EARLY
        self.config = self.config or part["config"]
        self.case_order = self.case_order or part.get("case_order")
        self.sequential = self.sequential or part.get("sequential")
        if part["started_at"]:
            self.started_at = min(filter(None, (self.started_at, part["started_at"])))
        if part["finished_at"]:
            self.finished_at = max(filter(None, (self.finished_at, part["finished_at"])))
        self.size = end

    def run(self, src: str, factorizers: dict[str, Factorizer]) -> Run:
        """The run of every record added."""
        for arr in (*self.arrays.values(), *self.scorers.values()):
            arr.resize(self.size, refcheck=False)  # gives back what the guess had over
        columns = dict(self.arrays)
        for key, factorizer in factorizers.items():
            columns[key] = Factorized(list(factorizer.index), columns[key])
        run = Run.from_columns(
            source=src,
            format=NAME,
            **columns,
            **picked(self, "errors error_kinds tags scorer_scores=scorers extra texts"),
            **picked(self, "config started_at finished_at"),
            status=(
                "interrupted"
                if self.interrupted
                else STOPPED_EARLY
                if self.stopped_early
                else "complete"
            ),
        )
        run.case_order = self.case_order
        run.sequential = self.sequential
        return run
