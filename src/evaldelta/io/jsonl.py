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
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._source import line_number, read_bytes
from evaldelta.model import Run

NAME = "jsonl"

#: ``execution_status`` values that mean the attempt did not run.
ERROR_STATUSES = frozenset(
    {"execution_error", "error", "errored", "timeout", "timed_out", "crashed", "infra_error"}
)


class _TokenUsage(msgspec.Struct):
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


class _Trace(msgspec.Struct):
    duration_ms: float | None = None
    latency_ms: float | None = None
    token_usage: _TokenUsage | None = None
    cost_usd: float | None = None


class _Scorer(msgspec.Struct):
    name: str | None = None
    score: float | None = None


class _Record(msgspec.Struct):
    """The fields we read; every other field of a line is skipped unparsed."""

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
    safety_failure: bool | None = None
    category: str | None = None
    tags: list[str] | dict[str, Any] | None = None


class _RecordWithText(_Record):
    input: Any = None
    output: Any = None
    answer: Any = None
    expected: Any = None
    expected_output: Any = None
    metadata: dict[str, Any] | None = None


_DECODERS: dict[bool, msgspec.json.Decoder[Any]] = {
    False: msgspec.json.Decoder(_Record),
    True: msgspec.json.Decoder(_RecordWithText),
}

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


def sniff(head: bytes) -> bool:
    """True when the file looks like JSON Lines: its first line is one JSON object."""
    first = head.lstrip().split(b"\n", 1)[0].strip()
    # A lone "{" opens a pretty-printed JSON document, not a line of JSONL.
    return first.startswith(b"{") and first != b"{"


def read(path: Path, *, keep_text: bool = True) -> Run:
    """Read a JSONL results file into a :class:`Run`."""
    data = read_bytes(path)
    src = str(path)
    if not data.strip():
        raise ParseError(
            src, None, "is empty: no records to compare; check the eval wrote its results"
        )
    try:
        recs: list[_Record] = _DECODERS[keep_text].decode_lines(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise _locate_error(src, data, keep_text, exc) from None
    return _to_run(src, data, recs, keep_text)


def _locate_error(src: str, data: bytes, keep_text: bool, exc: Exception) -> ParseError:
    """Find the first bad line and say what is wrong with it."""
    decoder = _DECODERS[keep_text]
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            decoder.decode(line)
        except msgspec.ValidationError as err:
            return ParseError(src, lineno, _explain(str(err), line))
        except msgspec.DecodeError as err:
            detail = str(err).replace("JSON is malformed: ", "")
            if detail == "Input data was truncated":
                detail = "the line ends before the JSON object does"
            at = re.search(r" \(byte (\d+)\)$", detail)
            if at:
                detail = f"{detail[: at.start()]} at column {int(at.group(1)) + 1}"
            return ParseError(
                src, lineno, f"not valid JSON ({detail}); each line must be one JSON object"
            )
    return ParseError(src, None, f"could not be read as JSON Lines ({exc})")


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


def _line_numbers(data: bytes, n: int) -> list[int] | range:
    """1-based line of each record (blank lines hold no record)."""
    newlines = data.count(b"\n")
    if newlines + (0 if data.endswith(b"\n") else 1) == n:
        return range(1, n + 1)  # no blank lines: the common case, and free
    return [i for i, line in enumerate(data.split(b"\n"), start=1) if line.strip()]


def _error_text(value: Any) -> str | None:
    if value is None or value is False or value == "" or value == {} or value == []:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("message"), str):
        return str(value["message"])
    return msgspec.json.encode(value).decode()


def _to_run(src: str, data: bytes, recs: list[Any], keep_text: bool) -> Run:
    n = len(recs)
    test_ids: list[Any] = [
        r.test_id if r.test_id is not None else r.eval_id if r.eval_id is not None else r.testId
        for r in recs
    ]
    if None in test_ids:
        i = test_ids.index(None)
        raise ParseError(
            src,
            line_number(data, i),
            'record has no "test_id" (nor "eval_id" or "testId"); every record needs one',
        )
    if not all(type(t) is str for t in test_ids):
        test_ids = [str(t) for t in test_ids]

    errors: dict[int, str] = {}
    for i, r in enumerate(recs):
        if r.error is not None or r.execution_status is not None:
            text = _error_text(r.error)
            if text is None and r.execution_status is not None:
                status = r.execution_status.lower()
                if status in ERROR_STATUSES:
                    text = f"execution_status: {r.execution_status}"
            if text is not None:
                errors[i] = text

    # Scorer columns, filled only where a record has scores.
    scorer_cols: dict[str, list[float | None]] = {}
    for i, r in enumerate(recs):
        if not r.scores:
            continue
        items: Iterable[tuple[str, float | None]]
        if isinstance(r.scores, dict):
            items = r.scores.items()
        else:
            items = [(s.name, s.score) for s in r.scores if s.name is not None]
        seen: dict[str, list[float]] = {}
        for name, value in items:
            if value is not None:
                seen.setdefault(name, []).append(value)
        for name, values in seen.items():
            col = scorer_cols.get(name)
            if col is None:
                col = scorer_cols[name] = [None] * n
            # A scorer named twice in one record (agentv allows it) counts once, averaged.
            col[i] = sum(values) / len(values)

    scores: list[Any] = [r.score for r in recs]
    for i, s in enumerate(scores):
        if s is not None:
            if not math.isfinite(s):
                raise ParseError(
                    src, line_number(data, i), f'"score" must be a finite number, got {s}'
                )
            continue
        parts = [v for col in scorer_cols.values() if (v := col[i]) is not None]
        if parts:
            scores[i] = sum(parts) / len(parts)
        elif i in errors:
            scores[i] = 0.0
        else:
            raise ParseError(
                src,
                line_number(data, i),
                f'record {test_ids[i]!r} has no "score"; every record needs a number '
                '(or an "error" for an attempt that did not run)',
            )

    def trace_value(attr: str) -> list[float | None]:
        return [getattr(r.trace, attr) if r.trace is not None else None for r in recs]

    latency = [
        _first(
            r.latency_ms,
            r.duration_ms,
            *((r.trace.duration_ms, r.trace.latency_ms) if r.trace is not None else ()),
        )
        for r in recs
    ]
    usage = [
        r.token_usage
        if r.token_usage is not None
        else (r.trace.token_usage if r.trace is not None else None)
        for r in recs
    ]
    tags: dict[int, tuple[str, ...]] = {}
    for i, r in enumerate(recs):
        if r.tags:
            if isinstance(r.tags, dict):
                tags[i] = tuple(f"{k}={v}" for k, v in r.tags.items())
            else:
                tags[i] = tuple(r.tags)

    texts = None
    if keep_text:
        texts = {
            "input": [r.input for r in recs],
            "output": [r.output if r.output is not None else r.answer for r in recs],
            "expected": [r.expected if r.expected is not None else r.expected_output for r in recs],
            "metadata": [r.metadata for r in recs],
        }
    cost = [_first(r.cost_usd, c) for r, c in zip(recs, trace_value("cost_usd"), strict=True)]
    return Run.from_columns(
        lines=_line_numbers(data, n),
        source=src,
        format=NAME,
        test_id=test_ids,
        score=scores,
        target=[r.target for r in recs],
        passed=[r.passed for r in recs],
        attempt=[r.attempt for r in recs],
        latency_ms=latency,
        wait_ms=[r.wait_ms for r in recs],
        input_tokens=[
            _first(r.input_tokens, u.tokens_in() if u is not None else None)
            for r, u in zip(recs, usage, strict=True)
        ],
        output_tokens=[
            _first(r.output_tokens, u.tokens_out() if u is not None else None)
            for r, u in zip(recs, usage, strict=True)
        ],
        cost_usd=cost,
        errors=errors,
        error_kinds={i: r.error_kind for i, r in enumerate(recs) if r.error_kind is not None},
        safety_failure=[bool(r.safety_failure) for r in recs],
        category=[r.category for r in recs],
        tags=tags,
        scorer_scores=scorer_cols,
        texts=texts,
    )
