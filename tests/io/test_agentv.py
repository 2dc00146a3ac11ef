"""agentv's vocabulary (``io/_agentv.py``): the statuses that mean an attempt did not run
or a run did not finish, the check that each record sits on its own line of a piece, and
the columns both paths of the JSONL reader build alike (fallbacks, scorers, ``passed``,
``attempt``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaldelta.io._agentv import (
    ATTEMPT_MAX,
    ATTEMPT_MIN,
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
from evaldelta.io._source import LineChunk, iter_line_chunks


def _chunk(data: bytes, first_line: int = 1) -> LineChunk:
    breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    return LineChunk(memoryview(data), first_line, breaks)


@dataclass
class _Rec:
    """A decoded record as far as :func:`scorer_columns` reads it."""

    scores: Any


@dataclass
class _Scorer:
    """One entry of agentv's list form of ``scores``."""

    name: str | None
    score: float | None


# -- the vocabulary ----------------------------------------------------------------------


def test_error_statuses_are_exactly_these() -> None:
    assert (
        frozenset(
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
        == ERROR_STATUSES
    )


def test_infra_statuses_are_error_statuses_that_blame_the_infrastructure() -> None:
    assert (
        frozenset({"timeout", "timed_out", "infra_error", "rate_limited", "provider_error"})
        == INFRA_STATUSES
    )
    assert INFRA_STATUSES < ERROR_STATUSES
    not_infra = ERROR_STATUSES - INFRA_STATUSES
    assert not_infra == {"execution_error", "error", "errored", "crashed"}


def test_run_statuses() -> None:
    assert STOPPED_EARLY == "stopped early"
    assert (
        frozenset({"interrupted", "incomplete", "cancelled", "canceled", "error"})
        == INTERRUPTED_STATUSES
    )
    assert STOPPED_EARLY not in INTERRUPTED_STATUSES


def test_the_statuses_are_lower_case_for_a_lower_cased_lookup() -> None:
    for status in ERROR_STATUSES | INTERRUPTED_STATUSES:
        assert status == status.lower()


# -- one_object_per_line -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "n", "expected"),
    [
        (b'{"a":1}\n{"a":2}\n', 2, True),
        (b'{"a":1}\n{"a":2}', 2, True),  # no break after the last line
        (b'{"a":1}\r\n{"a":2}\r\n', 2, True),  # CRLF: every line still opens with "{"
        (b'{"a":1}\n', 1, True),
        (b'{"a":1}', 1, True),
        (b'{"a":1}\n{"a":2}\n', 1, False),  # more lines than records
        (b'{"a":1}\n{"a":2}\n', 3, False),  # fewer lines than records
        (b'{"a":1}\n\n{"a":2}\n', 2, False),  # a blank line between
        (b'{"a":1}\n\n', 1, False),  # a blank line at the end
        (b'\n{"a":1}\n', 1, False),  # a blank line at the start
        (b' {"a":1}\n{"a":2}\n', 2, False),  # the first line opens with a space
        (b'{"a":1}\n {"a":2}\n', 2, False),  # a later line opens with a space
        (b'{"a":1}{"a":2}\n{"a":3}\n', 3, False),  # two objects on one line
        (b'{"a":\n1}\n', 1, False),  # one object over two lines
        (b'[1]\n{"a":2}\n', 2, False),
        (b"", 0, False),
        (b"", 1, False),
        (b"\n", 0, False),
    ],
)
def test_one_object_per_line(data: bytes, n: int, expected: bool) -> None:
    assert one_object_per_line(_chunk(data), n) is expected


def test_one_object_per_line_does_not_depend_on_the_first_line_number() -> None:
    data = b'{"a":1}\n{"a":2}\n'
    assert one_object_per_line(_chunk(data, first_line=500), 2) is True
    assert one_object_per_line(_chunk(data, first_line=500), 3) is False


def test_one_object_per_line_on_the_pieces_a_file_is_read_in(tmp_path: Path) -> None:
    """The pieces :func:`iter_line_chunks` hands out (byte-order mark gone, each piece
    ending at a line break) are judged by their own lines."""
    path = tmp_path / "r.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"a":1}\n{"a":2}\n{"a":3}\n')
    judged = [(c.first_line, one_object_per_line(c, 3)) for c in iter_line_chunks(path)]
    assert judged == [(1, True)]
    path.write_bytes(b'{"a":1}\n\n{"a":3}\n')
    judged = [(c.first_line, one_object_per_line(c, 2)) for c in iter_line_chunks(path)]
    assert judged == [(1, False)]


# -- fill ------------------------------------------------------------------------------------


def test_fill_returns_the_primary_column_itself_when_it_is_full() -> None:
    primary = ["a", "b"]
    called: list[int] = []

    def fallback() -> list[Any]:
        called.append(1)
        return ["x", "y"]

    assert fill(primary, fallback) is primary
    assert called == []  # a fallback is built only when needed


def test_fill_takes_each_gap_from_the_first_fallback_with_a_value() -> None:
    primary: list[Any] = ["a", None, None, None]
    out = fill(primary, lambda: [None, "b1", None, None], lambda: ["z", "b2", "c2", None])
    assert out == ["a", "b1", "c2", None]
    assert primary == ["a", None, None, None]  # not changed in place


def test_fill_stops_building_fallbacks_once_every_gap_is_filled() -> None:
    built: list[str] = []

    def make(name: str, column: list[Any]) -> Any:
        def build() -> list[Any]:
            built.append(name)
            return column

        return build

    out = fill([None, 1], make("first", [0, 9]), make("second", [5, 5]))
    assert out == [0, 1]
    assert built == ["first"]


def test_fill_keeps_falsy_values_and_without_fallbacks_keeps_the_gaps() -> None:
    assert fill([0, "", False, None], lambda: [1, 1, 1, 1]) == [0, "", False, 1]
    assert fill([None, "a"]) == [None, "a"]
    assert fill([]) == []


# -- scorer_columns ----------------------------------------------------------------------


def test_scorer_columns_of_records_without_scores_is_empty() -> None:
    assert scorer_columns([_Rec(None), _Rec(None)]) == {}
    assert scorer_columns([]) == {}


def test_scorer_columns_of_mappings_in_order_of_first_appearance() -> None:
    recs = [_Rec({"judge": 0.5}), _Rec(None), _Rec({"exact": 1.0, "judge": None}), _Rec({})]
    assert scorer_columns(recs) == {
        "judge": [0.5, None, None, None],
        "exact": [None, None, 1.0, None],
    }


def test_scorer_columns_of_agentv_lists_average_a_scorer_named_twice() -> None:
    recs = [
        _Rec([_Scorer("exact", 1.0), _Scorer("judge", 0.25), _Scorer("judge", 0.75)]),
        _Rec([_Scorer("judge", 0.0)]),
    ]
    assert scorer_columns(recs) == {"exact": [1.0, None], "judge": [0.5, 0.0]}


def test_scorer_columns_skip_list_entries_without_a_name_or_a_score() -> None:
    recs = [
        _Rec([_Scorer(None, 1.0), _Scorer("judge", None), _Scorer("exact", 0.0)]),
        _Rec([]),  # an empty list: no scorer for this record
        _Rec([_Scorer("judge", None)]),  # nothing usable: an empty row
    ]
    assert scorer_columns(recs) == {"exact": [0.0, None, None]}


def test_scorer_columns_of_lists_and_mappings_mixed() -> None:
    recs = [
        _Rec({"b": 0.5, "a": None}),
        _Rec([_Scorer("a", 1.0), _Scorer("c", 0.0)]),
        _Rec({}),
        _Rec(None),
    ]
    assert scorer_columns(recs) == {
        "b": [0.5, None, None, None],
        "a": [None, 1.0, None, None],
        "c": [None, 0.0, None, None],
    }


# -- passed_column and attempt_column --------------------------------------------------------


def test_passed_column() -> None:
    column = passed_column([True, None, False])
    assert column.dtype == np.int64
    assert column.tolist() == [1, -1, 0]


def test_passed_column_of_records_that_do_not_say() -> None:
    column = passed_column([None, None])
    assert column.dtype == np.int64
    assert column.tolist() == [-1, -1]
    assert passed_column([]).tolist() == []


def test_attempt_column() -> None:
    column = attempt_column([1, 2, 7])
    assert column.dtype == np.int64
    assert column.tolist() == [1, 2, 7]


def test_attempt_column_gives_zero_where_a_record_gives_none() -> None:
    column = attempt_column([None, 3, None])
    assert column.dtype == np.int64
    assert column.tolist() == [0, 3, 0]
    assert attempt_column([None]).tolist() == [0]
    assert attempt_column([]).tolist() == []


def test_attempt_column_keeps_the_extremes_of_int64() -> None:
    low, high = -(2**63), 2**63 - 1
    assert attempt_column([low, None, high]).tolist() == [low, 0, high]


def test_attempt_numbers_may_be_any_64_bit_integer() -> None:
    assert (ATTEMPT_MIN, ATTEMPT_MAX) == (-(2**63), 2**63 - 1)
    # 0 and below are kept (Run numbers them in order, as records that give none).
    assert attempt_column([0, -5, 1]).tolist() == [0, -5, 1]


@pytest.mark.parametrize(
    ("attempts", "index", "shown"),
    [
        ([2**63], 0, "9223372036854775808"),
        ([1, -(2**63) - 1], 1, "-9223372036854775809"),
        ([None, 2, 2**64, 2**63], 2, "18446744073709551616"),  # the first, past a None
        ([1, 2**200], 1, "160693804425899027554196209234116260252220299378279283530..."),  # cut
    ],
)
def test_attempt_column_refuses_a_number_beyond_64_bits(
    attempts: list[int | None], index: int, shown: str
) -> None:
    """Not an OverflowError (an internal error): the record and what is allowed."""
    with pytest.raises(AttemptRangeError) as info:
        attempt_column(attempts)
    assert info.value.index == index
    assert str(info.value) == (
        '"attempt" must be an integer from -9223372036854775808 to 9223372036854775807, '
        f"got {shown}; number a case's attempts 1, 2, 3, ... or leave the field out"
    )
