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
plain path (:class:`_PlainDecoder`: typed decoding that checks the shape as it goes, and
columns built with little Python per record); any other piece takes the general path,
which reads every spelling above and names the line of anything wrong. Both give the
same columns for the same records (``tests/io/test_jsonl.py`` holds them to it).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._source import LineChunk, iter_line_chunks, paused_gc
from evaldelta.model import Factorized, Factorizer, Run, float_column

if TYPE_CHECKING:
    from evaldelta.model import IntArray

NAME = "jsonl"

#: ``execution_status`` values that mean the attempt did not run.
ERROR_STATUSES = frozenset(
    {
        "execution_error",
        "error",
        "errored",
        "timeout",
        "timed_out",
        "crashed",
        "infra_error",
        "rate_limited",
        "provider_error",
    }
)
#: Of those, the ones that blame the infrastructure, not the agent: left out of scores.
INFRA_STATUSES = frozenset(
    {"timeout", "timed_out", "infra_error", "rate_limited", "provider_error"}
)


class _TokenUsage(msgspec.Struct, gc=False):
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
    duration_ms: float | None = None
    latency_ms: float | None = None
    token_usage: _TokenUsage | None = None
    cost_usd: float | None = None


class _Scorer(msgspec.Struct, gc=False):
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

#: ``run_status`` values by which a record says its run did not finish.
INTERRUPTED_STATUSES = frozenset({"interrupted", "incomplete", "cancelled", "canceled", "error"})


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


#: Fields the plain path takes only when absent or null: any other value sends the piece
#: to the general path, which knows what each means.
_GENERAL_ONLY = (
    "eval_id",
    "testId",
    "duration_ms",
    "wait_ms",
    "token_usage",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "trace",
    "error",
    "error_kind",
    "safety_failure",
    "tags",
    "start_time",
    "run_status",
    "config",
)
#: Optional fields the plain path reads, with their type.
_PLAIN_OPTIONAL: dict[str, Any] = {
    "attempt": int,
    "passed": bool,
    "latency_ms": float,
    "category": str,
    "timestamp": str,
}
#: Most distinct targets (or statuses) the plain path spells out in its types.
_MAX_SPELLED = 64
#: Pieces in a row the plain path may fail to read before it leaves the file to the
#: general path (a file of another shape should not be decoded three times over).
_MAX_PLAIN_MISSES = 3
#: The fingerprint of ``"input": null``, as the general path computes it from the raw JSON.
_NULL_INPUT = zlib.crc32(b"null")


class _Shape(NamedTuple):
    """What the plain path's record type spells out; ``None`` leaves a part of it open.

    ``targets``: the targets accepted (open: any string). ``scorers``: the names
    ``scores`` may hold, as a struct that forbids others (open: a mapping of any names;
    empty: no ``scores``). ``statuses``: the ``execution_status`` values accepted, none
    of which means an error (open: any string). ``present``: the optional fields that
    may have a value (open: all; the others must be absent or null).
    """

    targets: tuple[str, ...] | None = None
    scorers: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    present: frozenset[str] | None = None

    def absent(self, name: str) -> bool:
        return self.present is not None and name not in self.present


def _plain_record_type(shape: _Shape, keep_text: bool = False) -> Any:
    """The record type of the plain path, spelled out as ``shape`` says; with the text
    fields when ``keep_text`` (read as the general path reads them)."""
    from typing import Literal

    def spelled(values: tuple[str, ...] | None) -> Any:
        if values is None:
            return str | None
        return Literal[values] | None if values else None

    scores_type: Any
    if shape.scorers is None:
        scores_type = dict[str, float | None] | None
    elif not shape.scorers:
        scores_type = None
    else:
        names = {f"scorer_{i}": name for i, name in enumerate(shape.scorers)}
        scores_type = (
            msgspec.defstruct(
                "_PlainScores",
                [(field, float | None, None) for field in names],
                rename=names,
                forbid_unknown_fields=True,
                gc=False,
            )
            | None
        )

    def optional(name: str) -> tuple[str, Any, None]:
        return (name, None if shape.absent(name) else _PLAIN_OPTIONAL[name] | None, None)

    # In the order agentv writes its fields (and bench/generate.py): msgspec looks each
    # key up from where the last one was found.
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
        optional("timestamp"),
        ("test_id", str),
        ("target", spelled(shape.targets), None),
        optional("attempt"),
        ("score", float),
        ("scores", scores_type, None),
        optional("latency_ms"),
        ("input", str | list | dict | None | msgspec.UnsetType, msgspec.UNSET),
        ("execution_status", spelled(shape.statuses), None),
        optional("passed"),
        optional("category"),
        *((name, None, None) for name in _GENERAL_ONLY),
    ]
    if keep_text:
        fields += [
            ("output", Any, None),
            ("answer", Any, None),
            ("expected", Any, None),
            ("expected_output", Any, None),
            ("metadata", dict[str, Any] | None, None),
        ]
    return msgspec.defstruct("_PlainRecord", fields, kw_only=True, gc=False)


class _PlainDecoder:
    """The plain path: pieces of the common agentv shape, with little Python per record.

    The shape: a string ``test_id`` and a numeric ``score`` on every record; any of
    ``target``, ``execution_status``, ``scores`` (a mapping), ``input`` (a string, a list
    or an object) and the fields of :data:`_PLAIN_OPTIONAL`; every field of
    :data:`_GENERAL_ONLY` absent or null; all other fields (the answer, ...) skipped
    unread. msgspec checks the shape as it decodes: a piece that breaks it fails to
    decode, and the general path reads it instead (naming the bad line, if there is
    one), giving the same columns.

    What the pieces read so far held is then spelled out in the types (see
    :class:`_Shape`): targets decode to the same few string objects (quick to number),
    scores to a struct instead of a dict per record, and fields never seen, or statuses
    that mean no error, need no Python at all. A piece that holds something new fails
    with those types and is decoded again with open ones, which learn it.
    """

    def __init__(self, keep_text: bool) -> None:
        self.keep_text = keep_text
        self.open = msgspec.json.Decoder(_plain_record_type(_Shape(), keep_text))
        self.spelled: tuple[_Shape, msgspec.json.Decoder[Any]] | None = None
        self.scorers: dict[str, None] = {}
        self.statuses: dict[str, None] = {}
        self.present: set[str] = set()
        self.misses = 0  # pieces in a row the plain path could not read

    def columns(
        self, chunk: LineChunk, factorizers: dict[str, Factorizer]
    ) -> dict[str, Any] | None:
        """The columns of one piece, or ``None`` when the general path must read it."""
        if self.misses >= _MAX_PLAIN_MISSES:
            return None
        part = self._read(chunk, factorizers)
        self.misses = 0 if part is not None else self.misses + 1
        return part

    def _read(self, chunk: LineChunk, factorizers: dict[str, Factorizer]) -> dict[str, Any] | None:
        recs: list[Any] | None = None
        shape = _Shape()
        if self.spelled is not None:
            try:
                recs = self.spelled[1].decode_lines(chunk.data)
                shape = self.spelled[0]
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
        if recs is None:
            try:
                recs = self.open.decode_lines(chunk.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                return None
        n = len(recs)
        if not n or not _one_object_per_line(chunk, n):
            return None
        part = self._columns(chunk.first_line, recs, shape, factorizers)
        if part is not None and shape.present is None:
            self._learn(factorizers["target"])
        return part

    def _learn(self, targets: Factorizer) -> None:
        """Spell out in the types what the pieces read so far held."""
        names = tuple(t for t in targets.index if t is not None)
        statuses = tuple(self.statuses)
        failed = any(s.lower() in ERROR_STATUSES for s in statuses)
        shape = _Shape(
            targets=names if len(names) <= _MAX_SPELLED else None,
            scorers=tuple(self.scorers),
            statuses=None if failed or len(statuses) > _MAX_SPELLED else statuses,
            present=frozenset(self.present),
        )
        if self.spelled is None or self.spelled[0] != shape:
            self.spelled = (
                shape,
                msgspec.json.Decoder(_plain_record_type(shape, self.keep_text)),
            )

    def _values(self, recs: list[Any], name: str, shape: _Shape) -> list[Any] | None:
        """The values of an optional field, ``None`` when the types say it is absent;
        with open types, note whether any record had one."""
        if shape.absent(name):
            return None
        values = list(map(attrgetter(name), recs))
        if shape.present is None and values.count(None) != len(values):
            self.present.add(name)
        return values

    def _columns(
        self,
        first_line: int,
        recs: list[Any],
        shape: _Shape,
        factorizers: dict[str, Factorizer],
    ) -> dict[str, Any] | None:
        """The columns of the records of a piece, decoded with the types of ``shape``;
        ``None`` when something in them is for the general path to report."""
        import numpy as np

        n = len(recs)
        test_ids = [r.test_id for r in recs]
        targets = [r.target for r in recs] if shape.targets != () else None
        if "" in test_ids or (shape.targets is None and targets is not None and "" in targets):
            return None  # errors: the general path names the line

        errors: dict[int, str] = {}
        error_kinds: dict[int, str] = {}
        if shape.statuses is None:
            statuses = [r.execution_status for r in recs]
            if statuses.count(None) != n:
                distinct = set(statuses)
                distinct.discard(None)
                self.statuses.update(dict.fromkeys(sorted(distinct)))
                failed = {s for s in distinct if s.lower() in ERROR_STATUSES}
                if failed:
                    for i, status in enumerate(statuses):
                        if status in failed:
                            errors[i] = f"execution_status: {status}"
                            if status.lower() in INFRA_STATUSES:
                                error_kinds[i] = "infra"

        scorer_cols: dict[str, list[float | None]] = {}
        if shape.scorers is None:
            scorer_cols = _scorer_columns(recs)
            self.scorers.update(dict.fromkeys(scorer_cols))
        elif shape.scorers:
            scores = [r.scores for r in recs]
            kind = next((type(s) for s in scores if s is not None), None)
            if kind is not None:
                for field, name in zip(
                    kind.__struct_fields__, kind.__struct_encode_fields__, strict=True
                ):
                    get = attrgetter(field)
                    try:
                        scorer_cols[name] = list(map(get, scores))
                    except AttributeError:  # records without scores
                        scorer_cols[name] = [None if s is None else get(s) for s in scores]

        stamps = self._values(recs, "timestamp", shape)
        found = [t for t in stamps if t] if stamps is not None else []
        passed = self._values(recs, "passed", shape)
        attempts = self._values(recs, "attempt", shape)
        latency = self._values(recs, "latency_ms", shape)
        categories = self._values(recs, "category", shape)
        inputs = [r.input for r in recs]
        nan = np.full(n, np.nan)
        return {
            "n": n,
            "lines": np.arange(first_line, first_line + n, dtype=np.int64),
            "status": "complete",
            "config": {},
            "started_at": min(found) if found else None,
            "finished_at": max(found) if found else None,
            "input_hash": _plain_input_hashes(inputs),
            "extra": {},
            "test_id": factorizers["test_id"].codes(test_ids),
            "score": np.asarray([r.score for r in recs], dtype=np.float64),
            "target": _codes(factorizers["target"], targets, n),
            "passed": (
                _passed_column(passed) if passed is not None else np.full(n, -1, dtype=np.int64)
            ),
            "attempt": (
                _attempt_column(attempts) if attempts is not None else np.zeros(n, dtype=np.int64)
            ),
            "latency_ms": float_column(latency, n),
            "wait_ms": nan,
            "input_tokens": nan,
            "output_tokens": nan,
            "cost_usd": nan,
            "errors": errors,
            "error_kinds": error_kinds,
            "safety_failure": np.zeros(n, dtype=np.bool_),
            "category": _codes(factorizers["category"], categories, n),
            "tags": {},
            "scorer_scores": {k: float_column(v, n) for k, v in scorer_cols.items()},
            "texts": _plain_texts(recs, inputs) if self.keep_text else None,
        }


def _plain_texts(recs: list[Any], inputs: list[Any]) -> dict[str, list[Any]]:
    """The text columns of records the plain path decoded, as :func:`_chunk_columns`
    makes them: ``output`` else ``answer``, ``expected`` else ``expected_output``."""
    unset = msgspec.UNSET
    return {
        "input": [None if v is unset else v for v in inputs],
        "output": _fill([r.output for r in recs], lambda: [r.answer for r in recs]),
        "expected": _fill([r.expected for r in recs], lambda: [r.expected_output for r in recs]),
        "metadata": [r.metadata for r in recs],
    }


def _codes(factorizer: Factorizer, values: list[Any] | None, n: int) -> IntArray:
    """Codes of a column, ``None`` standing for ``n`` records without a value."""
    import numpy as np

    if values is not None:
        return factorizer.codes(values)
    index = factorizer.index
    return np.full(n, index.setdefault(None, len(index)), dtype=np.int64)


def _plain_input_hashes(inputs: list[Any]) -> IntArray:
    """:func:`_input_hashes` of inputs the plain path decoded: the same fingerprints."""
    import numpy as np

    def fingerprint(value: Any) -> int:
        if isinstance(value, str):
            return zlib.crc32(value.encode("utf-8", "surrogatepass")) or 1
        if value is msgspec.UNSET:
            return 0
        if value is None:
            return _NULL_INPUT
        return zlib.crc32(msgspec.json.encode(value, order="sorted")) or 1

    try:
        distinct = dict.fromkeys(inputs)
    except TypeError:  # structured inputs: lists and mappings are not hashable
        return np.asarray([fingerprint(v) for v in inputs], dtype=np.int64)
    table = {v: fingerprint(v) for v in distinct}
    return np.asarray(list(map(table.__getitem__, inputs)), dtype=np.int64)


_EXPECTED_WORDS = {
    "float": "a number",
    "int": "an integer",
    "str": "a string",
    "bool": "true or false",
    "object": "a JSON object",
    "array": "a list",
}


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
    ``mapping`` (``--map``) is handled by the mapped reader, not here.
    ``fast``: read pieces of the common agentv shape by the plain path (see
    :class:`_PlainDecoder`); ``False`` reads every piece by the general path. Both give
    the same run, and a test holds them to it.
    """
    if mapping:
        from evaldelta.io import mapped

        return mapped.read(path, keep_text=keep_text, extra_fields=extra_fields, mapping=mapping)
    src = str(path)
    extra = tuple(dict.fromkeys(extra_fields))
    decoder = _decoder(keep_text, extra)
    plain = _PlainDecoder(keep_text) if fast and not extra else None
    factorizers = {"test_id": Factorizer(), "target": Factorizer(), "category": Factorizer()}
    columns = _Columns(_file_size(path), keep_text)
    with paused_gc():
        for chunk in iter_line_chunks(path):
            part = plain.columns(chunk, factorizers) if plain is not None else None
            if part is None:
                part = _general_columns(src, chunk, decoder, keep_text, extra, factorizers)
            if part is not None:
                columns.add(part, len(chunk.data))
    if not columns.size:
        raise ParseError(
            src, None, "is empty: no records to compare; check the eval wrote its results"
        )
    return columns.run(src, factorizers)


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
    factorizers = {"test_id": Factorizer(), "target": Factorizer(), "category": Factorizer()}
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
    except (msgspec.DecodeError, msgspec.ValidationError):
        recs = []  # the line-by-line reading below names the bad line
    lines: Sequence[int]
    if recs and _one_object_per_line(chunk, len(recs)):
        lines = range(chunk.first_line, chunk.first_line + len(recs))
    elif not recs and bytes(data).isspace():
        return None
    else:
        recs, lines = _decode_by_line(src, data, decoder, chunk.first_line)
    return _chunk_columns(src, lines, recs, keep_text, extra, factorizers)


def _one_object_per_line(chunk: LineChunk, n: int) -> bool:
    """True when record ``i`` is certainly on line ``i + 1``: ``n`` lines, each
    starting with ``{``, none blank. (Anything else takes the careful path.)"""
    import numpy as np

    data, breaks = chunk.data, chunk.breaks
    size = len(data)
    ends_with_break = size > 0 and data[size - 1] == 10
    lines = int(breaks.shape[0]) + (0 if ends_with_break else 1)
    if lines != n:
        return False
    opening = int(size > 0 and data[0] == 123)  # "{"
    after = breaks[:-1] + 1 if ends_with_break else breaks + 1
    opening += int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8)[after] == 123))
    return opening == n


def _decode_by_line(
    src: str, data: memoryview, decoder: msgspec.json.Decoder[Any], first_line: int = 1
) -> tuple[list[Any], list[int]]:
    """Decode line by line, so that every record knows its line and a line that is not
    exactly one JSON object is named."""
    recs: list[Any] = []
    lines: list[int] = []
    for lineno, line in enumerate(bytes(data).split(b"\n"), start=first_line):
        if not line.strip():
            continue
        try:
            recs.append(decoder.decode(line))
        except msgspec.ValidationError as err:
            raise ParseError(src, lineno, _explain(str(err), line)) from None
        except msgspec.DecodeError as err:
            raise ParseError(src, lineno, _explain_decode(str(err), line)) from None
        lines.append(lineno)
    return recs, lines


def _explain_decode(message: str, line: bytes) -> str:
    """Say why a line is not JSON, naming NaN and Infinity, which JSON has no room for."""
    detail = message.replace("JSON is malformed: ", "")
    if detail == "Input data was truncated":
        return (
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object"
        )
    at = re.search(r" \(byte (\d+)\)$", detail)
    if at:
        byte = int(at.group(1))
        if byte > 0 and line[byte - 1 : byte] == b"-":
            byte -= 1  # the sign belongs to the token
        token = re.match(rb"-?(NaN|Infinity|inf|nan)", line[byte:])
        if token:
            key = re.search(rb'"([^"]*)"\s*:\s*$', line[:byte])
            field = f'"{key.group(1).decode(errors="replace")}" ' if key else "a number "
            return (
                f"{field}must be a finite number, got {token.group(0).decode()} "
                '(not valid JSON; write a number, or null with an "error")'
            )
        if detail.startswith("trailing characters"):
            return "more than one JSON value on the line; each line must be one JSON object"
        detail = f"{detail[: at.start()]} at column {byte + 1}"
    return f"not valid JSON ({detail}); each line must be one JSON object"


def _explain(message: str, line: bytes) -> str:
    """Turn msgspec's validation message into one a user can act on."""
    where = re.search(r" - at `\$(.*)`$", message)
    path = where.group(1) if where else ""
    reason = message[: where.start()] if where else message
    if path == "":
        got = re.search(r"got `(\w+)`", reason)
        kind = got.group(1) if got else "something else"
        return (
            f"expected a JSON object, got {_EXPECTED_WORDS.get(kind, kind)}; "
            "each line must be one JSON object"
        )
    # "[...]" stands for a key of a mapping: name the mapping instead.
    inside_mapping = path.endswith("[...]")
    base = path.removesuffix("[...]")
    field = base.lstrip(".").replace("[...]", "[]")
    subject = f'values in "{field}"' if inside_mapping else f'"{field}"'
    verb = "must be" if not inside_mapping else "must each be"
    if reason.startswith("Number out of range"):
        return f"{subject} {verb} a finite number, got a number out of range"
    expected = re.search(r"Expected `([^`]*)`", reason)
    kinds = [k for k in (expected.group(1).split(" | ") if expected else []) if k != "null"]
    # Name the most useful type first: a string before an integer for ids.
    kinds.sort(
        key=lambda k: (
            ("str", "float", "int", "bool", "object", "array").index(k)
            if k in ("str", "float", "int", "bool", "object", "array")
            else 9
        )
    )
    wanted = " or ".join(_EXPECTED_WORDS.get(k, k) for k in kinds) or "valid"
    return f"{subject} {verb} {wanted}, got {_raw_value(line, base)}"


def _raw_value(line: bytes, path: str) -> str:
    """The offending value as JSON text, for the error message."""
    try:
        value: Any = msgspec.json.decode(line)
        for part in re.findall(r"\.(\w+)|\[(\d+)\]", path):
            value = value[part[0]] if part[0] else value[int(part[1])]
    except Exception:  # the message is still right without the value
        return "a value of the wrong type"
    text = msgspec.json.encode(value).decode()
    return text if len(text) <= 60 else text[:57] + "..."


def _error_text(value: Any) -> str | None:
    if value is None or value is False or value == "" or value == {} or value == []:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return msgspec.json.encode(value).decode()


def _fill(primary: list[Any], *fallbacks: Callable[[], list[Any]]) -> list[Any]:
    """``primary``, with its ``None`` entries taken from the first fallback column
    that has a value there (fallback columns are built only when needed)."""
    if primary.count(None) == 0:
        return primary
    out = list(primary)
    for make in fallbacks:
        missing = [i for i, v in enumerate(out) if v is None]
        if not missing:
            break
        column = make()
        for i in missing:
            out[i] = column[i]
    return out


def _scorer_columns(recs: list[Any]) -> dict[str, list[float | None]]:
    """Scorer name -> score per record (``None`` where a record lacks it)."""
    raw = [r.scores for r in recs]
    if raw.count(None) == len(raw):
        return {}
    if all(type(x) is dict for x in raw if x is not None):
        # The common mapping form: no per-record conversion needed.
        mappings: list[Any] = raw
        names = dict.fromkeys(k for d in mappings if d for k in d)
        return {name: [d.get(name) if d is not None else None for d in mappings] for name in names}
    per_record: list[dict[str, float | None] | None] = []
    for scores in raw:
        if not scores:
            per_record.append(None)
        elif isinstance(scores, dict):
            per_record.append(scores)
        else:
            # agentv's list form; a scorer named twice in one record counts once, averaged.
            seen: dict[str, list[float]] = {}
            for s in scores:
                if s.name is not None and s.score is not None:
                    seen.setdefault(s.name, []).append(s.score)
            per_record.append({k: sum(v) / len(v) for k, v in seen.items()})
    names = dict.fromkeys(k for d in per_record if d for k in d)
    return {name: [d.get(name) if d is not None else None for d in per_record] for name in names}


def _input_hashes(recs: list[Any]) -> list[int]:
    """CRC-32 of each record's input, 0 where it has none.

    Structured inputs are hashed in a canonical form (keys sorted, no spacing), so two
    tools that write the same question differently still agree. Attempts repeat their
    input, so each distinct one is canonicalised once.
    """
    raws = [bytes(r.input) for r in recs]
    fingerprint: dict[bytes, int] = {}
    for raw in dict.fromkeys(raws):
        if raw[:1] in (b"{", b"["):
            canonical = msgspec.json.encode(msgspec.json.decode(raw), order="sorted")
            fingerprint[raw] = zlib.crc32(canonical) or 1
        elif raw[:1] == b'"':
            # A string input hashes as its text, as the other readers hash it.
            text: str = msgspec.json.decode(raw)
            fingerprint[raw] = zlib.crc32(text.encode("utf-8", "surrogatepass")) or 1
        else:
            fingerprint[raw] = zlib.crc32(raw)
    return list(map(fingerprint.__getitem__, raws))


def _run_facts(recs: list[Any]) -> tuple[str, dict[str, Any], str | None, str | None]:
    """Status, config, and first and last timestamp declared by the records."""
    statuses = {str(r.run_status).lower() for r in recs if r.run_status is not None}
    status = "interrupted" if statuses & INTERRUPTED_STATUSES else "complete"
    found = next((r.config for r in recs if r.config), None)
    config: dict[str, Any] = (
        found if isinstance(found, dict) else ({"config": found} if found is not None else {})
    )
    raw = [r.timestamp if r.timestamp is not None else r.start_time for r in recs]
    stamps = [s for s in (_iso(t) for t in raw if t is not None) if s]
    # ISO 8601 stamps in one time zone sort as text; the extremes are all we need.
    return status, config, (min(stamps) if stamps else None), (max(stamps) if stamps else None)


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
    test_ids: list[Any] = _fill(
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
            text = _error_text(err)
            if text is None and status is not None and status.lower() in ERROR_STATUSES:
                text = f"execution_status: {status}"
            if text is not None:
                errors[i] = text

    scorer_cols = _scorer_columns(recs)
    scores: list[Any] = [r.score for r in recs]
    if None in scores:
        for i, s in enumerate(scores):
            if s is not None:
                continue
            parts = [v for col in scorer_cols.values() if (v := col[i]) is not None]
            if parts:
                scores[i] = sum(parts) / len(parts)
            elif i in errors:
                scores[i] = 0.0
            else:
                raise ParseError(
                    src,
                    lines[i],
                    f'record {test_ids[i]!r} has no "score"; every record needs a number '
                    '(or an "error" for an attempt that did not run)',
                )

    traces = [r.trace for r in recs]
    has_trace = traces.count(None) != n

    def from_trace(attr: str) -> Callable[[], list[Any]]:
        return lambda: [getattr(t, attr) if t is not None else None for t in traces]

    latency = _fill(
        [r.latency_ms for r in recs],
        lambda: [r.duration_ms for r in recs],
        *((from_trace("duration_ms"), from_trace("latency_ms")) if has_trace else ()),
    )
    usage = _fill(
        [r.token_usage for r in recs], *((from_trace("token_usage"),) if has_trace else ())
    )
    no_usage = usage.count(None) == n
    input_tokens = (
        _fill(
            [r.input_tokens for r in recs],
            lambda: [u.tokens_in() if u is not None else None for u in usage],
        )
        if not no_usage
        else [r.input_tokens for r in recs]
    )
    output_tokens = (
        _fill(
            [r.output_tokens for r in recs],
            lambda: [u.tokens_out() if u is not None else None for u in usage],
        )
        if not no_usage
        else [r.output_tokens for r in recs]
    )
    cost = _fill([r.cost_usd for r in recs], *((from_trace("cost_usd"),) if has_trace else ()))

    tags: dict[int, tuple[str, ...]] = {}
    raw_tags = [r.tags for r in recs]
    if raw_tags.count(None) != n:
        for i, t in enumerate(raw_tags):
            if t:
                tags[i] = (
                    tuple(f"{k}={v}" for k, v in t.items()) if isinstance(t, dict) else tuple(t)
                )
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
            "output": _fill([r.output for r in recs], lambda: [r.answer for r in recs]),
            "expected": _fill(
                [r.expected for r in recs], lambda: [r.expected_output for r in recs]
            ),
            "metadata": [r.metadata for r in recs],
        }
    status, config, started_at, finished_at = _run_facts(recs)
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
        "started_at": started_at,
        "finished_at": finished_at,
        "input_hash": np.asarray(_input_hashes(recs), dtype=np.int64),
        "extra": extra_columns,
        "test_id": factorizers["test_id"].codes(test_ids),
        "score": float_column(scores, n),
        "target": factorizers["target"].codes(targets),
        "passed": _passed_column([r.passed for r in recs]),
        "attempt": _attempt_column([r.attempt for r in recs]),
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


def _passed_column(passed: list[bool | None]) -> IntArray:
    """``passed`` as :attr:`Run.passed` holds it: 1 / 0, or -1 where a record does not say."""
    import numpy as np

    if passed.count(None) == len(passed):
        return np.full(len(passed), -1, dtype=np.int64)
    return np.asarray([-1 if p is None else int(p) for p in passed], dtype=np.int64)


def _attempt_column(attempts: list[int | None]) -> IntArray:
    """Attempt numbers, 0 where a record gives none (numbered later, in order)."""
    import numpy as np

    try:
        return np.asarray(attempts, dtype=np.int64)
    except TypeError:  # some record gives none
        return np.asarray([0 if a is None else a for a in attempts], dtype=np.int64)


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
    "latency_ms": "float64",
    "wait_ms": "float64",
    "input_tokens": "float64",
    "output_tokens": "float64",
    "cost_usd": "float64",
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
        self.config: dict[str, Any] = {}
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
        self.config = self.config or part["config"]
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
        return Run.from_columns(
            source=src,
            format=NAME,
            **columns,
            errors=self.errors,
            error_kinds=self.error_kinds,
            tags=self.tags,
            scorer_scores=self.scorers,
            extra=self.extra,
            texts=self.texts,
            status="interrupted" if self.interrupted else "complete",
            config=self.config,
            started_at=self.started_at,
            finished_at=self.finished_at,
        )
