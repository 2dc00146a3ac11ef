"""The plain path of the JSONL reader (``io/_jsonl_fast.py``): pieces in the common
agentv shape decoded with typed records, and turned into the very columns the general
path (``io/_jsonl.py``) makes of the same lines.

What is held here: the columns of a piece, value for value; that every tricky line the
plain path reads (escapes, unicode, numbers, null and absent fields, CRLF, a byte-order
mark) it reads exactly as the general path does (also as a seeded property); that it
hands every piece it must not read to the general path, which reads it or names the
bad line, so that a file reads the same, or fails with the same message, either way;
the types it learns from the pieces read so far; and when it gives up on a file."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaldelta.errors import InputError, ParseError
from evaldelta.io import _jsonl
from evaldelta.io._jsonl_fast import (
    _GENERAL_ONLY,
    _MAX_SPELLED,
    PlainDecoder,
    _codes,
    _plain_input_hashes,
    _plain_record_type,
    _Shape,
)
from evaldelta.io._source import LineChunk, iter_line_chunks
from evaldelta.model import Factorizer

#: Keys the general path gives that the plain path leaves out (``_Columns`` reads
#: them with ``.get``): never set by a piece the plain path can read.
_GENERAL_KEYS = {"case_order": None, "sequential": None}
#: Its CRC-32 is 0, the value that means "no input": the fingerprint is 1 instead.
CRC_ZERO = "q4-j~^9"

Factorizers = dict[str, Factorizer]


def _chunk(data: bytes, first_line: int = 1) -> LineChunk:
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return LineChunk(memoryview(data), first_line, breaks)


def _factorizers() -> Factorizers:
    return {"test_id": _jsonl._Ids(), "target": Factorizer(), "category": Factorizer()}


def _lines(*records: dict[str, Any] | str, sep: str = "\n") -> bytes:
    """Records (or raw lines) one a line, each line ending in ``sep``."""
    text = [r if isinstance(r, str) else json.dumps(r) for r in records]
    return "".join(line + sep for line in text).encode()


def _plain(
    data: bytes, keep_text: bool = False, first_line: int = 1
) -> tuple[dict[str, Any] | None, Factorizers]:
    factorizers = _factorizers()
    part = PlainDecoder(keep_text, 3).columns(_chunk(data, first_line), factorizers)
    return part, factorizers


def _general(
    data: bytes,
    keep_text: bool = False,
    first_line: int = 1,
    factorizers: Factorizers | None = None,
) -> tuple[dict[str, Any], Factorizers]:
    factorizers = factorizers if factorizers is not None else _factorizers()
    decoder = _jsonl._decoder(keep_text, ())
    chunk = _chunk(data, first_line)
    part = _jsonl._general_columns("r.jsonl", chunk, decoder, keep_text, (), factorizers)
    assert part is not None
    return part, factorizers


def _same_value(name: str, a: Any, b: Any) -> None:
    if isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray), name
        assert a.dtype == b.dtype, name
        assert a.shape == b.shape, name
        if a.dtype.kind == "f":
            assert np.array_equal(a, b, equal_nan=True), (name, a, b)
            assert np.array_equal(np.signbit(a), np.signbit(b)), (name, a, b)  # -0.0
        else:
            assert np.array_equal(a, b), (name, a, b)
    elif isinstance(a, dict) and any(isinstance(v, np.ndarray) for v in a.values()):
        assert list(a) == list(b), name
        for key in a:
            _same_value(f"{name}[{key}]", a[key], b[key])
    else:
        assert a == b, (name, a, b)
        assert type(a) is type(b), name


def _same_columns(
    plain: dict[str, Any] | None,
    plain_f: Factorizers,
    general: dict[str, Any],
    general_f: Factorizers,
    learnt: bool = False,
) -> None:
    """The plain path's columns of a piece are the general path's, key for key; so are
    the values numbered so far (in the same order).

    ``learnt``: the piece may have been read with spelled-out types, which give a column
    (of NaN) for each scorer learnt from the pieces before, whether this piece has it or
    not; the general path gives only this piece's scorers (the run fills in NaN alike).
    """
    assert plain is not None, "the plain path left the piece to the general path"
    assert set(general) - set(plain) == set(_GENERAL_KEYS)
    assert {k: general[k] for k in _GENERAL_KEYS} == _GENERAL_KEYS
    assert set(plain) <= set(general)
    for name in plain:
        if name == "scorer_scores" and learnt:
            mine, theirs = plain[name], general[name]
            assert set(theirs) <= set(mine), (mine, theirs)
            _same_value(name, {k: mine[k] for k in theirs}, theirs)
            for scorer in set(mine) - set(theirs):
                assert np.isnan(mine[scorer]).all(), (scorer, mine[scorer])
        else:
            _same_value(name, plain[name], general[name])
    for name, factorizer in plain_f.items():
        assert list(factorizer.index.items()) == list(general_f[name].index.items()), name


def _assert_plain_reads_as_general(data: bytes, keep_text: bool = False) -> dict[str, Any]:
    plain, plain_f = _plain(data, keep_text)
    general, general_f = _general(data, keep_text)
    _same_columns(plain, plain_f, general, general_f)
    assert plain is not None
    return plain


# -- the columns of a piece ------------------------------------------------------------------

_PIECE = [
    {
        "timestamp": "2026-01-02T10:00:00Z",
        "test_id": "q1",
        "target": "gpt",
        "attempt": 1,
        "score": 1,
        "scores": {"exact": 1, "judge": 0.5},
        "latency_ms": 120,
        "input": "Say hi",
        "execution_status": "ok",
        "passed": True,
        "category": "math",
        "answer": "hi",
        "expected_output": "hi!",
        "verdict": {"unread": [1, 2]},
    },
    {
        "test_id": "q2",
        "target": "claude",
        "score": 0.25,
        "scores": {"judge": None},
        "input": [{"role": "user", "content": "hi"}],
        "execution_status": "Timeout",
        "output": "out",
        "answer": "not shown",
        "expected": "e",
        "metadata": {"k": 1},
    },
    {
        "timestamp": "2026-01-01T09:00:00Z",
        "test_id": "q1",
        "score": 0,
        "execution_status": "execution_error",
        "error": None,
        "input": None,
    },
]


def test_the_columns_of_a_lines() -> None:
    factorizers = _factorizers()
    part = PlainDecoder(False, 3).columns(_chunk(_lines(*_PIECE), 10), factorizers)
    assert part is not None
    nan = math.nan
    structured = msgspec.json.encode([{"content": "hi", "role": "user"}])
    expected_arrays: dict[str, tuple[list[Any], Any]] = {
        "lines": ([10, 11, 12], np.int64),
        "input_hash": ([zlib.crc32(b"Say hi"), zlib.crc32(structured), 0], np.int64),
        "test_id": ([0, 1, 0], np.int64),
        "score": ([1.0, 0.25, 0.0], np.float64),
        "target": ([0, 1, 2], np.int64),
        "passed": ([1, -1, -1], np.int64),
        "attempt": ([1, 0, 0], np.int64),
        "latency_ms": ([120.0, nan, nan], np.float64),
        "wait_ms": ([nan] * 3, np.float64),
        "input_tokens": ([nan] * 3, np.float64),
        "output_tokens": ([nan] * 3, np.float64),
        "cost_usd": ([nan] * 3, np.float64),
        "safety_failure": ([False] * 3, np.bool_),
        "category": ([0, 1, 1], np.int64),
    }
    for name, (values, dtype) in expected_arrays.items():
        _same_value(name, part[name], np.asarray(values, dtype=dtype))
    _same_value(
        "scorer_scores",
        part["scorer_scores"],
        {"exact": np.array([1.0, nan, nan]), "judge": np.array([0.5, nan, nan])},
    )
    others = {k: v for k, v in part.items() if k not in expected_arrays and k != "scorer_scores"}
    assert others == {
        "n": 3,
        "status": "complete",
        "config": {},
        "started_at": "2026-01-01T09:00:00Z",
        "finished_at": "2026-01-02T10:00:00Z",
        "extra": {},
        "errors": {1: "execution_status: Timeout", 2: "execution_status: execution_error"},
        "error_kinds": {1: "infra"},
        "tags": {},
        "texts": None,
    }
    assert factorizers["test_id"].index == {"q1": 0, "q2": 1}
    assert factorizers["target"].index == {"gpt": 0, "claude": 1, None: 2}
    assert factorizers["category"].index == {"math": 0, None: 1}


def test_the_text_columns_of_a_lines() -> None:
    part = _assert_plain_reads_as_general(_lines(*_PIECE), keep_text=True)
    assert part["texts"] == {
        "input": ["Say hi", [{"role": "user", "content": "hi"}], None],
        "output": ["hi", "out", None],  # "output", else "answer"
        "expected": ["hi!", "e", None],  # "expected", else "expected_output"
        "metadata": [None, {"k": 1}, None],
    }


@pytest.mark.parametrize("keep_text", [False, True])
def test_the_piece_reads_as_the_general_path_reads_it(keep_text: bool) -> None:
    _assert_plain_reads_as_general(_lines(*_PIECE), keep_text)


def test_the_fewest_fields_a_record_may_have() -> None:
    part = _assert_plain_reads_as_general(_lines({"test_id": "a", "score": 0.5}))
    assert part["n"] == 1
    assert part["target"].tolist() == [0]
    assert (part["started_at"], part["finished_at"]) == (None, None)
    assert part["scorer_scores"] == {}
    assert part["input_hash"].tolist() == [0]


# -- tricky lines, read exactly as the general path reads them -------------------------------

_TRICKY = {
    "escapes": r'{"test_id": "a\"b\\c\/d\n\t\u0001", "score": 1, "input": "q\"\\"}',
    "unicode escapes": r'{"test_id": "caf\u00e9 \ud83d\ude80", "target": "\u6570", "score": 1}',
    "unicode": '{"test_id": "café 🚀", "target": "数据", "score": 1, "category": "ü"}',
    "exponent": '{"test_id": "a", "score": 1e3, "latency_ms": 1E+2}',
    "negative zero": '{"test_id": "a", "score": -0.0, "latency_ms": -0}',
    "huge integers": (
        '{"test_id": "a", "score": 100000000000000000000000000000, '
        '"latency_ms": 18446744073709551616, "attempt": 9223372036854775807}'
    ),
    "tiny and negative numbers": '{"test_id": "a", "score": -1.5e-300, "attempt": -2}',
    "nulls": (
        '{"test_id": "a", "target": null, "score": 1, "scores": null, "attempt": null, '
        '"latency_ms": null, "input": null, "execution_status": null, "passed": null, '
        '"category": null, "timestamp": null}'
    ),
    "empty scores and inputs": '{"test_id": "a", "score": 1, "scores": {}, "input": ""}',
    "a null scorer": '{"test_id": "a", "score": 1, "scores": {"x": null, "": 0.5}}',
    "structured inputs": (
        '{"test_id": "a", "score": 1, "input": {"b": [1, 2.5, null], "a": {"z": true}}}'
    ),
    "spacing": '{  "score" : 1 ,\t"test_id" : "a" , "target":"t"  }  \t',
    "keys in another order": '{"score": 1, "category": "c", "target": "t", "test_id": "a"}',
    "skipped fields of every kind": (
        '{"test_id": "a", "score": 1, "answer": {"deep": [[[1]]]}, "x": [null, "\\u0000"], '
        '"notes": "NaN", "n": 1e999999}'
    ),
    "empty strings where allowed": (
        '{"test_id": "a", "score": 1, "category": "", "timestamp": "", "execution_status": ""}'
    ),
}


@pytest.mark.parametrize("keep_text", [False, True])
@pytest.mark.parametrize("line", list(_TRICKY.values()), ids=list(_TRICKY))
@pytest.mark.parametrize("sep", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_tricky_lines_read_as_the_general_path_reads_them(
    line: str, sep: str, keep_text: bool
) -> None:
    data = _lines('{"test_id": "first", "target": "t", "score": 0}', line, sep=sep)
    _assert_plain_reads_as_general(data, keep_text)


def test_numbers_are_read_exactly() -> None:
    part = _assert_plain_reads_as_general(
        _lines(
            _TRICKY["exponent"],
            _TRICKY["negative zero"],
            _TRICKY["huge integers"],
            _TRICKY["tiny and negative numbers"],
        )
    )
    score = part["score"]
    assert score.tolist() == [1000.0, 0.0, 1e29, -1.5e-300]
    assert np.signbit(score).tolist() == [False, True, False, True]
    latency = part["latency_ms"].tolist()
    assert latency[:3] == [100.0, 0.0, 18446744073709551616.0]
    assert not np.signbit(part["latency_ms"][1])  # the integer -0 is 0
    assert math.isnan(part["latency_ms"][3])
    assert part["attempt"].tolist() == [0, 0, 2**63 - 1, -2]


def test_escaped_and_unicode_strings_are_read_exactly() -> None:
    factorizers = _factorizers()
    data = _lines(_TRICKY["escapes"], _TRICKY["unicode escapes"], _TRICKY["unicode"])
    part = PlainDecoder(True, 3).columns(_chunk(data), factorizers)
    assert part is not None
    # escaped or written out, the same characters are the same test id
    assert list(factorizers["test_id"].index) == ['a"b\\c/d\n\t\x01', "café 🚀"]
    assert part["test_id"].tolist() == [0, 1, 1]
    assert list(factorizers["target"].index) == [None, "数", "数据"]
    assert part["texts"]["input"] == ['q"\\', None, None]
    assert part["input_hash"].tolist() == [zlib.crc32(b'q"\\'), 0, 0]


def test_a_file_with_a_byte_order_mark_and_crlf_is_read_by_the_plain_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + _lines(*_PIECE, sep="\r\n"))
    (chunk,) = iter_line_chunks(path)
    part = PlainDecoder(False, 3).columns(chunk, _factorizers())
    assert part is not None
    assert part["lines"].tolist() == [1, 2, 3]

    general_calls: list[int] = []
    general = _jsonl._general_columns

    def counted(*args: Any, **kwargs: Any) -> Any:
        general_calls.append(1)
        return general(*args, **kwargs)

    monkeypatch.setattr(_jsonl, "_general_columns", counted)
    fast = _jsonl.read(path, keep_text=True)
    assert general_calls == []  # the plain path read it all
    slow = _jsonl.read(path, keep_text=True, fast=False)
    assert general_calls == [1]
    assert fast.records() == slow.records()
    assert [r.test_id for r in fast] == ["q1", "q2", "q1"]


# -- what the plain path leaves to the general path ----------------------------------------


@pytest.mark.parametrize("field", _GENERAL_ONLY)
def test_a_field_only_the_general_path_knows_may_be_null(field: str) -> None:
    line = json.dumps({"test_id": "a", "score": 1, field: None})
    _assert_plain_reads_as_general(_lines(line))


_GENERAL_VALUES: dict[str, Any] = {
    "eval_id": "e",
    "testId": "t",
    "duration_ms": 5,
    "wait_ms": 5,
    "token_usage": {"input": 1},
    "input_tokens": 1,
    "output_tokens": 1,
    "cost_usd": 0.5,
    "trace": {"duration_ms": 1},
    "error": "boom",
    "error_kind": "infra",
    "safety_failure": True,
    "tags": ["t"],
    "start_time": "2026-01-01",
    "run_status": "interrupted",
    "config": {"model": "m"},
    "case_order": ["a"],
    "sequential": {"k": 1},
    "run_finished_at": "2026-01-02",
}


def test_every_field_only_the_general_path_knows_has_an_example() -> None:
    assert set(_GENERAL_VALUES) == set(_GENERAL_ONLY)


def _read_both(path: Path, keep_text: bool = False) -> tuple[Any, Any]:
    return _jsonl.read(path, keep_text=keep_text), _jsonl.read(
        path, keep_text=keep_text, fast=False
    )


@pytest.mark.parametrize("field", _GENERAL_ONLY)
def test_a_field_only_the_general_path_knows_sends_the_piece_there(
    field: str, tmp_path: Path
) -> None:
    data = _lines(
        {"test_id": "a", "score": 1}, {"test_id": "b", "score": 1, field: _GENERAL_VALUES[field]}
    )
    assert _plain(data)[0] is None
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    fast, slow = _read_both(path)
    assert fast.records() == slow.records()
    assert (fast.status, fast.config, fast.case_order) == (
        slow.status,
        slow.config,
        slow.case_order,
    )


_OTHER_SHAPES = {
    "an id written as a number": '{"test_id": 7, "score": 1}',
    "an input that is a number": '{"test_id": "a", "score": 1, "input": 5}',
    "agentv's list of scores": '{"test_id": "a", "scores": [{"name": "x", "score": 1}]}',
    "a score from the scorers": '{"test_id": "a", "scores": {"x": 1, "y": 0.5}}',
    "an error with no score": '{"test_id": "a", "error": "boom"}',
    "a timestamp in epoch seconds": '{"test_id": "a", "score": 1, "timestamp": 1767225600}',
    "a blank line": "",
    "a line opening with a space": ' {"test_id": "a", "score": 1}',
}


@pytest.mark.parametrize("line", list(_OTHER_SHAPES.values()), ids=list(_OTHER_SHAPES))
def test_a_line_of_another_shape_is_left_to_the_general_path(line: str, tmp_path: Path) -> None:
    data = _lines({"test_id": "first", "score": 0}, line, {"test_id": "last", "score": 1})
    assert _plain(data)[0] is None
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    fast, slow = _read_both(path, keep_text=True)
    assert fast.records() == slow.records()


_NO_SCORE = (
    "record 'b' has no \"score\"; every record needs a number "
    '(or an "error" for an attempt that did not run)'
)
_BAD_LINES = {
    "no test id": (
        '{"score": 1}',
        'record has no "test_id" (nor "eval_id" or "testId"); every record needs one',
    ),
    "a null test id": (
        '{"test_id": null, "score": 1}',
        'record has no "test_id" (nor "eval_id" or "testId"); every record needs one',
    ),
    "an empty test id": (
        '{"test_id": "", "score": 1}',
        '"test_id" is empty; every record needs a test id',
    ),
    "an empty target": (
        '{"test_id": "b", "target": "", "score": 1}',
        '"target" is empty; name the target, or leave the field out',
    ),
    "no score": ('{"test_id": "b"}', _NO_SCORE),
    "a null score": ('{"test_id": "b", "score": null}', _NO_SCORE),
    "a score in words": (
        '{"test_id": "b", "score": "high"}',
        '"score" must be a number, got "high"',
    ),
    "a score of true": ('{"test_id": "b", "score": true}', '"score" must be a number, got true'),
    "a NaN score": (
        '{"test_id": "b", "score": NaN}',
        '"score" must be a finite number, got NaN '
        '(not valid JSON; write a number, or null with an "error")',
    ),
    "an infinite latency": (
        '{"test_id": "b", "score": 1, "latency_ms": -Infinity}',
        '"latency_ms" must be a finite number, got -Infinity '
        '(not valid JSON; write a number, or null with an "error")',
    ),
    "a score out of range": (
        '{"test_id": "b", "score": 1e999}',
        '"score" must be a finite number, got a number out of range',
    ),
    "a lowercase nan score": (
        '{"test_id": "b", "score": nan}',
        '"score" must be a finite number, got nan '
        '(not valid JSON; write a number, or null with an "error")',
    ),
    "an attempt past 2**63 - 1": (
        '{"test_id": "b", "score": 1, "attempt": 9223372036854775808}',
        '"attempt" must be an integer from -9223372036854775808 to 9223372036854775807, '
        "got 9223372036854775808; number a case's attempts 1, 2, 3, ... or leave the field out",
    ),
    "an attempt below -2**63": (
        '{"test_id": "b", "score": 1, "attempt": -9223372036854775809}',
        '"attempt" must be an integer from -9223372036854775808 to 9223372036854775807, '
        "got -9223372036854775809; number a case's attempts 1, 2, 3, ... or leave the field out",
    ),
    "a fractional attempt": (
        '{"test_id": "b", "score": 1, "attempt": 1.5}',
        '"attempt" must be an integer, got 1.5',
    ),
    "passed in words": (
        '{"test_id": "b", "score": 1, "passed": "yes"}',
        '"passed" must be true or false, got "yes"',
    ),
    "a numeric target": (
        '{"test_id": "b", "target": 3, "score": 1}',
        '"target" must be a string, got 3',
    ),
    "a scorer in words": (
        '{"test_id": "b", "score": 1, "scores": {"x": "good"}}',
        'values in "scores" must each be a number, got {"x":"good"}',
    ),
    "a status that is a number": (
        '{"test_id": "b", "score": 1, "execution_status": 2}',
        '"execution_status" must be a string, got 2',
    ),
    "a list": ("[1, 2]", "expected a JSON object, got a list; each line must be one JSON object"),
    "two objects": (
        '{"test_id": "b", "score": 1}{"test_id": "c", "score": 1}',
        "more than one JSON value on the line; each line must be one JSON object",
    ),
    "a line cut short": (
        '{"test_id": "b", "score": ',
        "not valid JSON (the line ends before the JSON object does); "
        "each line must be one JSON object",
    ),
    "single quotes": (
        "{'test_id': 'b'}",
        "not valid JSON (object keys must be strings at column 2); "
        "each line must be one JSON object",
    ),
}


@pytest.mark.parametrize("keep_text", [False, True])
@pytest.mark.parametrize(("line", "message"), list(_BAD_LINES.values()), ids=list(_BAD_LINES))
def test_a_bad_line_is_refused_with_the_general_paths_message(
    line: str, message: str, keep_text: bool, tmp_path: Path
) -> None:
    """The plain path reads none of it; the file fails the same way read either way,
    naming the file and the line (4: after a blank one)."""
    data = _lines({"test_id": "a", "score": 1}, "", {"test_id": "a", "score": 0}, line, sep="\r\n")
    no_blank = _lines({"test_id": "a", "score": 1}, line)
    assert _plain(no_blank, keep_text)[0] is None
    assert _plain(data, keep_text)[0] is None
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    errors = []
    for fast in (True, False):
        with pytest.raises(ParseError) as info:
            _jsonl.read(path, keep_text=keep_text, fast=fast)
        errors.append(str(info.value))
        assert (info.value.path, info.value.line, info.value.reason) == (str(path), 4, message)
    assert errors == [f"{path}:4: {message}"] * 2


def test_nothing_but_blank_lines_is_left_to_the_general_path() -> None:
    assert _plain(b"\n\r\n  \n")[0] is None
    assert _plain(b"")[0] is None


# -- the types learnt from the pieces read so far -------------------------------------------


def test_the_shape_of_the_pieces_read_is_spelled_out() -> None:
    decoder = PlainDecoder(False, 3)
    assert decoder.spelled is None
    data = _lines(
        {"test_id": "a", "target": "x", "score": 1, "scores": {"e": 1}, "execution_status": "ok"},
        {"test_id": "b", "target": "y", "score": 0, "timestamp": "t", "latency_ms": None},
        {"test_id": "c", "target": "x", "score": 0, "execution_status": "failed", "attempt": 2},
    )
    assert decoder.columns(_chunk(data), _factorizers()) is not None
    assert decoder.spelled is not None
    assert decoder.spelled[0] == _Shape(
        targets=("x", "y"),
        scorers=("e",),
        statuses=("failed", "ok"),
        present=frozenset({"timestamp", "attempt"}),  # latency_ms: null only
    )


def test_a_status_that_means_an_error_leaves_the_statuses_open() -> None:
    decoder = PlainDecoder(False, 3)
    data = _lines({"test_id": "a", "score": 0, "execution_status": "TIMED_OUT"})
    part = decoder.columns(_chunk(data), _factorizers())
    assert part is not None
    assert (part["errors"], part["error_kinds"]) == (
        {0: "execution_status: TIMED_OUT"},
        {0: "infra"},
    )
    assert decoder.spelled is not None
    assert decoder.spelled[0] == _Shape(targets=(), scorers=(), statuses=None, present=frozenset())


def test_more_targets_than_are_spelled_out_are_left_open() -> None:
    decoder = PlainDecoder(False, 3)
    many = [{"test_id": "a", "target": f"t{i}", "score": 1} for i in range(_MAX_SPELLED + 1)]
    assert decoder.columns(_chunk(_lines(*many)), _factorizers()) is not None
    assert decoder.spelled is not None
    assert decoder.spelled[0].targets is None
    decoder = PlainDecoder(False, 3)
    assert decoder.columns(_chunk(_lines(*many[:_MAX_SPELLED])), _factorizers()) is not None
    assert decoder.spelled is not None
    assert decoder.spelled[0].targets == tuple(f"t{i}" for i in range(_MAX_SPELLED))


class _CountingDecoder:
    """A decoder that counts its ``decode_lines`` calls."""

    def __init__(self, decoder: Any) -> None:
        self.decoder = decoder
        self.calls = 0

    def decode_lines(self, data: Any) -> Any:
        self.calls += 1
        return self.decoder.decode_lines(data)


_FIRST = (
    {"test_id": "a", "target": "x", "score": 1, "scores": {"e": 1}, "latency_ms": 5},
    {"test_id": "b", "target": "y", "score": 0, "scores": {"e": 0}, "execution_status": "ok"},
)


def _two_pieces(second: tuple[dict[str, Any], ...]) -> tuple[PlainDecoder, _CountingDecoder, Any]:
    """A decoder that read ``_FIRST``, then ``second``; and the general path's reading of
    ``second`` after ``_FIRST``, to hold the plain path's to."""
    decoder = PlainDecoder(False, 3)
    plain_f = _factorizers()
    assert decoder.columns(_chunk(_lines(*_FIRST)), plain_f) is not None
    counting = _CountingDecoder(decoder.open)
    decoder.open = counting  # type: ignore[assignment]
    part = decoder.columns(_chunk(_lines(*second), 3), plain_f)
    general_f = _factorizers()
    _general(_lines(*_FIRST), factorizers=general_f)
    general, _ = _general(_lines(*second), first_line=3, factorizers=general_f)
    _same_columns(part, plain_f, general, general_f, learnt=True)
    return decoder, counting, part


def test_a_piece_of_the_same_shape_is_read_with_the_spelled_out_types() -> None:
    second = (
        {"test_id": "c", "target": "y", "score": 0.5, "scores": {"e": None}, "latency_ms": 7},
        {"test_id": "a", "target": "x", "score": 1, "execution_status": "ok"},
    )
    decoder, counting, part = _two_pieces(second)
    assert counting.calls == 0  # the open types were not needed
    assert part["lines"].tolist() == [3, 4]
    assert part["latency_ms"].tolist()[0] == 7.0
    assert list(part["scorer_scores"]) == ["e"]
    assert decoder.misses == 0


def test_a_piece_without_the_fields_seen_before_is_read_with_the_spelled_out_types() -> None:
    _, counting, part = _two_pieces(({"test_id": "c", "score": 0.5},))
    assert counting.calls == 0
    assert part["scorer_scores"] == {}
    assert part["passed"].tolist() == [-1]


@pytest.mark.parametrize(
    ("record", "learnt"),
    [
        (
            {"test_id": "c", "target": "z", "score": 1},
            _Shape(("x", "y", "z"), ("e",), ("ok",), frozenset({"latency_ms"})),
        ),
        (
            {"test_id": "c", "score": 1, "scores": {"e": 1, "new": 0.5}},
            _Shape(("x", "y"), ("e", "new"), ("ok",), frozenset({"latency_ms"})),
        ),
        (
            {"test_id": "c", "score": 1, "execution_status": "skipped"},
            _Shape(("x", "y"), ("e",), ("ok", "skipped"), frozenset({"latency_ms"})),
        ),
        (
            {"test_id": "c", "score": 1, "execution_status": "crashed"},
            _Shape(("x", "y"), ("e",), None, frozenset({"latency_ms"})),
        ),
        (
            {"test_id": "c", "score": 1, "category": "math", "passed": False},
            _Shape(("x", "y"), ("e",), ("ok",), frozenset({"latency_ms", "category", "passed"})),
        ),
    ],
    ids=["a new target", "a new scorer", "a new status", "an error status", "new fields"],
)
def test_a_piece_with_something_new_is_read_with_open_types_and_learnt(
    record: dict[str, Any], learnt: _Shape
) -> None:
    decoder, counting, part = _two_pieces((record,))
    assert counting.calls == 1
    assert part is not None
    assert decoder.spelled is not None
    assert decoder.spelled[0] == learnt


# -- giving up on a file of another shape -------------------------------------------------------

_GOOD = _lines({"test_id": "a", "score": 1})
_OTHER = _lines({"test_id": "a", "score": 1, "trace": {"duration_ms": 1}})


def test_the_plain_path_gives_up_after_missing_max_misses_pieces_in_a_row() -> None:
    decoder = PlainDecoder(False, 2)
    factorizers = _factorizers()
    assert decoder.columns(_chunk(_OTHER), factorizers) is None
    assert decoder.misses == 1
    assert decoder.columns(_chunk(_OTHER), factorizers) is None
    assert decoder.misses == 2
    counting = _CountingDecoder(decoder.open)
    decoder.open = counting  # type: ignore[assignment]
    assert decoder.columns(_chunk(_GOOD), factorizers) is None  # not even tried
    assert counting.calls == 0
    assert decoder.misses == 2


def test_a_piece_read_forgives_the_misses_before_it() -> None:
    decoder = PlainDecoder(False, 2)
    factorizers = _factorizers()
    assert decoder.columns(_chunk(_OTHER), factorizers) is None
    assert decoder.columns(_chunk(_GOOD), factorizers) is not None
    assert decoder.misses == 0
    assert decoder.columns(_chunk(_OTHER), factorizers) is None
    assert decoder.columns(_chunk(_GOOD), factorizers) is not None
    assert decoder.misses == 0


# -- the record types -----------------------------------------------------------------------------


def test_the_open_record_type() -> None:
    open_type = _plain_record_type(_Shape())
    record = msgspec.json.decode(json.dumps(_PIECE[0]).encode(), type=open_type)
    assert (record.test_id, record.target, record.score, record.attempt) == ("q1", "gpt", 1.0, 1)
    assert record.scores == {"exact": 1.0, "judge": 0.5}
    assert (record.input, record.execution_status, record.passed) == ("Say hi", "ok", True)
    assert not hasattr(record, "answer")  # text fields only when kept
    with_text = msgspec.json.decode(
        json.dumps(_PIECE[1]).encode(), type=_plain_record_type(_Shape(), keep_text=True)
    )
    assert (with_text.output, with_text.answer, with_text.expected) == ("out", "not shown", "e")
    assert (with_text.expected_output, with_text.metadata) == (None, {"k": 1})
    bare = msgspec.json.decode(b'{"test_id": "a", "score": 1}', type=_plain_record_type(_Shape()))
    assert bare.input is msgspec.UNSET
    assert bare.target is None


@pytest.mark.parametrize(
    "line",
    [
        b'{"score": 1}',
        b'{"test_id": "a"}',
        b'{"test_id": null, "score": 1}',
        b'{"test_id": "a", "score": null}',
        b'{"test_id": "a", "score": 1, "error": "boom"}',
        b'{"test_id": "a", "score": 1, "scores": [{"name": "x", "score": 1}]}',
        b'{"test_id": "a", "score": 1, "input": 5}',
    ],
)
def test_the_open_record_type_refuses_what_the_general_path_must_read(line: bytes) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(line, type=_plain_record_type(_Shape()))


@pytest.mark.parametrize(
    "line",
    [
        b'{"test_id": "a", "target": "other", "score": 1}',
        b'{"test_id": "a", "score": 1, "scores": {"other": 1}}',
        b'{"test_id": "a", "score": 1, "execution_status": "other"}',
        b'{"test_id": "a", "score": 1, "passed": true}',
    ],
    ids=["target", "scorer", "status", "absent field"],
)
def test_a_spelled_out_record_type_refuses_anything_new(line: bytes) -> None:
    shape = _Shape(targets=("x",), scorers=("e",), statuses=("ok",), present=frozenset())
    record_type = _plain_record_type(shape)
    known = msgspec.json.decode(
        b'{"test_id": "a", "target": "x", "score": 1, "scores": {"e": 0.5}, '
        b'"execution_status": "ok", "passed": null}',
        type=record_type,
    )
    assert (known.target, known.scores.scorer_0, known.execution_status) == ("x", 0.5, "ok")
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(line, type=record_type)


# -- input fingerprints and codes ------------------------------------------------------------------


def test_a_string_whose_crc_is_zero() -> None:
    assert zlib.crc32(CRC_ZERO.encode()) == 0


@pytest.mark.parametrize(
    "inputs",
    [
        ["a", None, "a", msgspec.UNSET, "", CRC_ZERO],  # hashable: each distinct one once
        ["a", None, [1, "x"], {"b": 1, "a": 2}, msgspec.UNSET, "", CRC_ZERO],  # structured
    ],
    ids=["strings", "structured"],
)
def test_input_fingerprints(inputs: list[Any]) -> None:
    def expected(value: Any) -> int:
        if value is None or value is msgspec.UNSET:
            return 0
        if isinstance(value, str):
            return zlib.crc32(value.encode()) or 1
        return zlib.crc32(msgspec.json.encode(value, order="sorted")) or 1

    hashes = _plain_input_hashes(inputs)
    assert hashes.dtype == np.int64
    assert hashes.tolist() == [expected(v) for v in inputs]
    assert hashes.tolist()[inputs.index(CRC_ZERO)] == 1  # not 0, which means no input
    assert hashes.tolist()[inputs.index("")] == 1  # an empty input is still an input


def test_input_fingerprints_of_structured_inputs_ignore_key_order() -> None:
    a, b = _plain_input_hashes(
        [{"b": 1, "a": [2, {"d": 3, "c": 4}]}, {"a": [2, {"c": 4, "d": 3}], "b": 1}]
    )
    assert a == b == zlib.crc32(b'{"a":[2,{"c":4,"d":3}],"b":1}')


def test_input_fingerprints_of_a_lone_surrogate() -> None:
    assert _plain_input_hashes(["\ud800"]).tolist() == [zlib.crc32(b"\xed\xa0\x80")]


def test_codes_of_a_column_without_values() -> None:
    factorizer = Factorizer()
    assert _codes(factorizer, ["b", "a", "b"], 3).tolist() == [0, 1, 0]
    none = _codes(factorizer, None, 2)
    assert none.dtype == np.int64
    assert none.tolist() == [2, 2]
    assert factorizer.index == {"b": 0, "a": 1, None: 2}
    assert _codes(factorizer, None, 1).tolist() == [2]  # the same code again


# -- a seeded property: any piece of the plain shape reads as the general path reads it --------

_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
_NONEMPTY = _TEXT.filter(bool)
_FLOATS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=-(2**80), max_value=2**80),
)
_INPUTS = st.recursive(
    st.one_of(st.none(), st.booleans(), _FLOATS, _TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=6,
)
_STATUSES = st.sampled_from(["ok", "quality_failure", "timeout", "Execution_Error", "", "OK"])
#: Within the +-1e12 a run accepts, and now and then past it (the run is refused then,
#: read either way, with the same message).
_SCORES = st.one_of(
    st.floats(min_value=-1e12, max_value=1e12),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from([1e3, -0.0, 5e-324, 1e12, -(10**12), 2**70]),
)
_PLAIN_RECORDS = st.fixed_dictionaries(
    {"test_id": st.one_of(st.sampled_from(["q1", "q2", "数"]), _NONEMPTY), "score": _SCORES},
    optional={
        "target": st.sampled_from([None, "a", "b", "ç ☕"]),
        "attempt": st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        "scores": st.one_of(
            st.none(),
            st.dictionaries(
                st.sampled_from(["exact", "judge", "x y"]), st.one_of(st.none(), _FLOATS)
            ),
        ),
        "latency_ms": st.one_of(st.none(), _FLOATS),
        "input": st.one_of(
            _TEXT,
            st.lists(_INPUTS, max_size=3),
            st.dictionaries(_TEXT, _INPUTS, max_size=3),
            st.none(),
        ),
        "execution_status": st.one_of(st.none(), _STATUSES),
        "passed": st.one_of(st.none(), st.booleans()),
        "category": st.one_of(st.none(), _TEXT),
        "timestamp": st.one_of(
            st.none(), st.sampled_from(["2026-01-01T00:00:00Z", "2026-02-01", ""])
        ),
        "error": st.none(),
        "answer": _INPUTS,
        "output": _INPUTS,
        "expected": _INPUTS,
        "metadata": st.one_of(st.none(), st.dictionaries(_TEXT, _INPUTS, max_size=2)),
        "notes": _INPUTS,
    },
)


def _encode(record: dict[str, Any], ascii_only: bool) -> str:
    return json.dumps(record, ensure_ascii=ascii_only)


@settings(
    max_examples=100,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    pieces=st.lists(st.lists(_PLAIN_RECORDS, min_size=1, max_size=4), min_size=1, max_size=3),
    sep=st.sampled_from(["\n", "\r\n"]),
    last_break=st.booleans(),
    ascii_only=st.booleans(),
    keep_text=st.booleans(),
)
def test_any_piece_of_the_plain_shape_reads_as_the_general_path_reads_it(
    pieces: list[list[dict[str, Any]]],
    sep: str,
    last_break: bool,
    ascii_only: bool,
    keep_text: bool,
) -> None:
    """Piece by piece (the later ones with the types learnt from those before), and as
    the run the pieces make."""
    decoder = PlainDecoder(keep_text, 3)
    plain_f, general_f = _factorizers(), _factorizers()
    plain_run, general_run = _jsonl._Columns(None, keep_text), _jsonl._Columns(None, keep_text)
    first_line = 1
    for k, records in enumerate(pieces):
        text = sep.join(_encode(r, ascii_only) for r in records) + (sep if last_break else "")
        data = text.encode()
        part = decoder.columns(_chunk(data, first_line), plain_f)
        general, _ = _general(data, keep_text, first_line, general_f)
        _same_columns(part, plain_f, general, general_f, learnt=k > 0)
        assert part is not None
        plain_run.add(part, len(data))
        general_run.add(general, len(data))
        first_line += len(records)
    assert decoder.misses == 0
    fast, slow = _run_or_error(plain_run, plain_f), _run_or_error(general_run, general_f)
    if isinstance(slow, str):  # a score past 1e12, an id of white space: the same message
        assert fast == slow
        return
    assert not isinstance(fast, str), fast
    assert fast.scorers == slow.scorers
    assert fast.records() == slow.records()
    assert (fast.started_at, fast.finished_at) == (slow.started_at, slow.finished_at)


def _run_or_error(columns: Any, factorizers: Factorizers) -> Any:
    """The run of the pieces added to ``columns``, or the message it is refused with."""
    try:
        return columns.run("r.jsonl", factorizers)
    except InputError as error:
        return str(error)
