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

import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._source import iter_line_chunks, paused_gc
from evaldelta.model import Factorizer, Run, float_column

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
) -> Run:
    """Read a JSONL results file into a :class:`Run`.

    ``extra_fields``: further top-level fields to keep (e.g. a document id to cluster by).
    ``mapping`` (``--map``) is handled by the mapped reader, not here.
    """
    if mapping:
        from evaldelta.io import mapped

        return mapped.read(path, keep_text=keep_text, extra_fields=extra_fields, mapping=mapping)
    src = str(path)
    extra = tuple(dict.fromkeys(extra_fields))
    decoder = _decoder(keep_text, extra)
    parts: list[dict[str, Any]] = []
    factorizers = {"test_id": Factorizer(), "target": Factorizer(), "category": Factorizer()}
    with paused_gc():
        for data, first_line, breaks in iter_line_chunks(path):
            if data.isspace():
                continue
            try:
                recs: list[_Record] = decoder.decode_lines(data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                recs = []  # the line-by-line reading below names the bad line
            lines: Sequence[int]
            if recs and _one_object_per_line(data, len(recs), breaks):
                lines = range(first_line, first_line + len(recs))
            else:
                recs, lines = _decode_by_line(src, data, decoder, first_line)
            parts.append(_chunk_columns(src, lines, recs, keep_text, extra, factorizers))
            del recs
    if not parts:
        raise ParseError(
            src, None, "is empty: no records to compare; check the eval wrote its results"
        )
    return _combine(src, parts, keep_text, factorizers)


def _one_object_per_line(data: bytes | bytearray, n: int, newlines: int | None = None) -> bool:
    """True when record ``i`` is certainly on line ``i + 1``: ``n`` lines, each
    starting with ``{``, none blank. (Anything else takes the careful path.)"""
    if newlines is None:
        newlines = data.count(b"\n")
    lines = newlines + (0 if data.endswith(b"\n") else 1)
    opening = data.count(b"\n{") + (1 if data.startswith(b"{") else 0)
    return lines == n and opening == n


def _decode_by_line(
    src: str, data: bytes | bytearray, decoder: msgspec.json.Decoder[Any], first_line: int = 1
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
        "passed": [r.passed for r in recs],
        "attempt": [r.attempt for r in recs],
        "latency_ms": float_column(latency, n),
        "wait_ms": float_column([r.wait_ms for r in recs], n),
        "input_tokens": float_column(input_tokens, n),
        "output_tokens": float_column(output_tokens, n),
        "cost_usd": float_column(cost, n),
        "errors": errors,
        "error_kinds": error_kinds,
        "safety_failure": [_flag(r.safety_failure) for r in recs],
        "category": factorizers["category"].codes([r.category for r in recs]),
        "tags": tags,
        "scorer_scores": {k: float_column(v, n) for k, v in scorer_cols.items()},
        "texts": texts,
    }


def _combine(
    src: str, parts: list[dict[str, Any]], keep_text: bool, factorizers: dict[str, Factorizer]
) -> Run:
    """One run from the columns of its chunks."""
    import numpy as np

    if len(parts) == 1:
        (p,) = parts
        merged = dict(p)
    else:
        merged = {"n": sum(p["n"] for p in parts)}
        offsets = [0]
        for p in parts[:-1]:
            offsets.append(offsets[-1] + p["n"])
        for key in (
            "input_hash",
            "score",
            "latency_ms",
            "wait_ms",
            "input_tokens",
            "output_tokens",
            "cost_usd",
        ):
            merged[key] = np.concatenate([p[key] for p in parts])
        for key in ("passed", "attempt", "safety_failure"):
            merged[key] = [x for p in parts for x in p[key]]
        merged["lines"] = np.concatenate([p["lines"] for p in parts])
        for key in ("errors", "error_kinds", "tags"):
            merged[key] = {
                i + off: v for p, off in zip(parts, offsets, strict=True) for i, v in p[key].items()
            }
        names = dict.fromkeys(k for p in parts for k in p["scorer_scores"])
        merged["scorer_scores"] = {
            k: np.concatenate([p["scorer_scores"].get(k, np.full(p["n"], np.nan)) for p in parts])
            for k in names
        }
        extra_names = dict.fromkeys(k for p in parts for k in p["extra"])
        merged["extra"] = {
            k: [x for p in parts for x in p["extra"].get(k, [None] * p["n"])] for k in extra_names
        }
        merged["texts"] = (
            {k: [x for p in parts for x in p["texts"][k]] for k in parts[0]["texts"]}
            if keep_text
            else None
        )
        statuses = [p["status"] for p in parts]
        merged["status"] = "interrupted" if "interrupted" in statuses else "complete"
        merged["config"] = next((p["config"] for p in parts if p["config"]), {})
        starts = [p["started_at"] for p in parts if p["started_at"]]
        ends = [p["finished_at"] for p in parts if p["finished_at"]]
        merged["started_at"] = min(starts) if starts else None
        merged["finished_at"] = max(ends) if ends else None
    for key, factorizer in factorizers.items():
        merged[key] = factorizer.result([p[key] for p in parts])
    return Run.from_columns(
        source=src,
        format=NAME,
        **{k: v for k, v in merged.items() if k != "n"},
    )
