"""The store's chunk codec (:mod:`evaldelta.store._codec`): every column of a run
encoded to chunks and decoded back unchanged, the encodings and chunk boundaries it
writes, integer narrowing, and what a damaged chunk does: the codec raises one of the
errors the store turns into "the store is damaged", and a chunk whose stored checksum
does not match its bytes, or a column whose chunks do not hold each record once (a chunk
lost, one too many), is refused with that message on both databases."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import numpy as np
import pytest

from evaldelta.errors import StoreError
from evaldelta.model import Run
from evaldelta.store import RunStore, open_store
from evaldelta.store import _codec as codec
from evaldelta.store._codec import Chunk, column_names, decode_run, encode_run

#: What the run store catches around :func:`decode_run` and reports as damage.
DAMAGE = (ValueError, TypeError, KeyError, IndexError)

MEND = (
    "; export the runs that still read (evaldelta runs export ID --store PATH), then "
    "restore the store from a copy"
)


def full_run() -> Run:
    """Six records with every kind of column filled: codes, narrowed integers, 64-bit
    hashes, booleans, floats with holes, sparse maps, scorers, extra fields and texts."""
    return Run.from_columns(
        source="full.jsonl",
        format="jsonl",
        test_id=["q1", "q1", "q2", "q2", "q3", "q3"],
        target=["m-a", "m-b"] * 3,
        score=[1.0, 0.0, 0.5, 0.25, 1.0, 0.75],
        passed=[True, False, None, True, True, False],
        attempt=[1, 1, 1, 1, 1, 200],
        latency_ms=[10.5, None, 30.0, 40.0, None, 60.0],
        input_tokens=[100, 200, 300, 400, 500, 600],
        output_tokens=[1, 2, 3, 4, 5, 6],
        cost_usd=[0.001, 0.002, None, None, None, 0.006],
        errors={1: "timeout", 4: "boom"},
        error_kinds={1: "infra"},
        safety_failure=[False, False, True, False, False, False],
        category=["easy", "hard", None, "easy", "hard", None],
        tags={0: ("a", "b"), 5: ()},
        scorer_scores={"exact": [1, 0, 1, 0, 1, None], "judge": [0.9, 0.1, 0.5, 0.4, 1.0, 0.7]},
        texts={
            "input": ["é", "x\ny", None, "", "long" * 10, "🙂"],
            "output": ["1", "2", "3", "4", "5", "6"],
        },
        lines=[1, 2, 3, 4, 5, 6],
        input_hash=[2**62, -(2**62), 0, 1, 2, 3],
        extra={"timestamp": ["2026-01-01", None, 3, 4.5, {"k": [1, 2]}, True]},
        status="interrupted",
        config={"model": "m", "temperature": 0.2},
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T01:00:00Z",
    )


def small_run(n: int, **columns: Any) -> Run:
    """``n`` records of distinct cases, with ``columns`` on top."""
    return Run.from_columns(
        source="small.jsonl",
        format="jsonl",
        test_id=[f"c{i}" for i in range(n)],
        score=[i / 10 for i in range(n)],
        **columns,
    )


def by_column(chunks: Iterable[Chunk]) -> dict[str, list[tuple[int, str, bytes]]]:
    """Chunks as :func:`decode_run` takes them: name -> [(first, encoding, data)] in order."""
    out: dict[str, list[tuple[int, str, bytes]]] = {}
    for chunk in chunks:
        out.setdefault(chunk.name, []).append((chunk.first, chunk.encoding, chunk.data))
    return out


def decode(columns: dict[str, list[tuple[int, str, bytes]]], like: Run) -> Run:
    """``columns`` decoded with ``like``'s run-level facts."""
    return decode_run(
        columns,
        len(like),
        source=like.source,
        format=like.format,
        status=like.status,
        config=like.config,
        started_at=like.started_at,
        finished_at=like.finished_at,
    )


#: Every per-record array of the model, read from the model itself, so that a column
#: added to it is held to the round trip too (``lines``, optional, is checked apart).
ARRAYS = tuple(
    name
    for name in Run.__slots__
    if name != "lines" and isinstance(getattr(full_run(), name), np.ndarray)
)


def assert_same_array(got: np.ndarray[Any, Any], want: np.ndarray[Any, Any], name: str) -> None:
    """Same dtype (native), same bytes: NaN holes included, bit for bit."""
    assert got.dtype == want.dtype, name
    assert got.dtype.isnative, name
    assert got.tobytes() == want.tobytes(), name


def assert_same_run(got: Run, want: Run) -> None:
    for name in ARRAYS:
        assert_same_array(getattr(got, name), getattr(want, name), name)
    assert (got.test_ids, got.targets, got.categories) == (
        want.test_ids,
        want.targets,
        want.categories,
    )
    assert (got.errors, got.error_kinds, got.tags) == (want.errors, want.error_kinds, want.tags)
    assert list(got.scorer_scores) == list(want.scorer_scores)
    for name, column in want.scorer_scores.items():
        assert_same_array(got.scorer_scores[name], column, f"scorer {name}")
    assert got.extra == want.extra
    assert got.texts == want.texts
    if want.lines is None:
        assert got.lines is None
    else:
        assert got.lines is not None
        assert_same_array(got.lines, want.lines, "lines")
    assert (got.source, got.format, got.status, got.config, got.started_at, got.finished_at) == (
        want.source,
        want.format,
        want.status,
        want.config,
        want.started_at,
        want.finished_at,
    )


# -- round trips --------------------------------------------------------------------------


def test_every_column_type_round_trips() -> None:
    run = full_run()
    back = decode(by_column(encode_run(run)), run)
    assert_same_run(back, run)
    assert len(back) == 6
    # The values themselves, not only agreement with the original.
    assert back.passed.tolist() == [1, 0, -1, 1, 1, 0]
    assert back.category_index.tolist() == [0, 1, -1, 0, 1, -1]
    assert back.input_hash.tolist() == [2**62, -(2**62), 0, 1, 2, 3]
    assert back.attempt.tolist() == [1, 1, 1, 1, 1, 200]
    assert back.is_error.tolist() == [False, True, False, False, True, False]
    assert back.safety_failure.tolist() == [False, False, True, False, False, False]
    assert np.isnan(back.latency_ms).tolist() == [False, True, False, False, True, False]
    assert np.isnan(back.wait_ms).all()
    assert back.tags == {0: ("a", "b"), 5: ()}
    assert back.extra == {"timestamp": ["2026-01-01", None, 3, 4.5, {"k": [1, 2]}, True]}
    assert type(back.extra["timestamp"][5]) is bool
    assert back.texts == {
        "input": ["é", "x\ny", None, "", "long" * 10, "🙂"],
        "output": ["1", "2", "3", "4", "5", "6"],
    }
    assert back.records() == run.records()


def test_decoded_arrays_are_writable_native_copies() -> None:
    back = decode(by_column(encode_run(full_run())), full_run())
    for name in ARRAYS:
        column = getattr(back, name)
        assert column.flags.writeable, name
    back.score[0] = 0.125  # frombuffer alone would be read-only
    assert back.score[0] == 0.125


def test_a_run_without_optional_columns_round_trips() -> None:
    run = small_run(3)
    assert run.texts is None
    assert run.lines is None
    back = decode(by_column(encode_run(run)), run)
    assert_same_run(back, run)
    assert back.texts is None
    assert back.lines is None
    assert back.scorer_scores == {}
    assert back.extra == {}


def test_an_empty_run_round_trips() -> None:
    empty = decode_run(
        {},
        0,
        source="s",
        format="f",
        status="complete",
        config={},
        started_at=None,
        finished_at=None,
    )
    assert len(empty) == 0
    chunks = list(encode_run(empty))
    # A numeric column is always written, as one empty chunk; no object chunks for 0 records.
    assert [(c.name, c.first, c.encoding, c.data) for c in chunks] == [
        ("test_ids", 0, "msgpack", b"\x90"),
        ("targets", 0, "msgpack", b"\x90"),
        ("categories", 0, "msgpack", b"\x90"),
        ("test_index", 0, "<i8", b""),
        ("target_index", 0, "<i8", b""),
        ("category_index", 0, "<i8", b""),
        ("attempt", 0, "<i8", b""),
        ("passed", 0, "<i8", b""),
        ("input_hash", 0, "<i8", b""),
        ("safety_failure", 0, "|b1", b""),
        ("score", 0, "<f8", b""),
        ("scorers", 0, "msgpack", b"\x90"),
        ("extra", 0, "msgpack", b"\x90"),
    ]
    assert_same_run(decode(by_column(chunks), empty), empty)


def test_texts_are_left_out_when_the_caller_leaves_their_columns_out() -> None:
    run = full_run()
    columns = {
        name: chunks
        for name, chunks in by_column(encode_run(run)).items()
        if not name.startswith("text")
    }
    back = decode(columns, run)
    assert back.texts is None
    assert back.records() != run.records()  # the texts are really gone
    assert [r.input for r in back.records()] == [None] * 6


# -- what is written ------------------------------------------------------------------------


def test_the_chunks_of_a_full_run() -> None:
    chunks = list(encode_run(full_run()))
    assert [(c.name, c.first, c.encoding) for c in chunks] == [
        ("test_ids", 0, "msgpack"),
        ("targets", 0, "msgpack"),
        ("categories", 0, "msgpack"),
        ("test_index", 0, "|i1"),
        ("target_index", 0, "|i1"),
        ("category_index", 0, "|i1"),
        ("attempt", 0, "<i2"),  # 200 is beyond int8
        ("passed", 0, "|i1"),
        ("input_hash", 0, "<i8"),  # 2**62 needs all 64 bits
        ("safety_failure", 0, "|b1"),
        ("score", 0, "<f8"),
        ("latency_ms", 0, "<f8"),
        # wait_ms: every value absent, so not written
        ("input_tokens", 0, "<f8"),
        ("output_tokens", 0, "<f8"),
        ("cost_usd", 0, "<f8"),
        ("lines", 0, "|i1"),
        ("errors", 0, "msgpack"),
        ("error_kinds", 0, "msgpack"),
        ("tags", 0, "msgpack"),
        ("scorers", 0, "msgpack"),
        ("scorer:0", 0, "<f8"),
        ("scorer:1", 0, "<f8"),
        ("extra", 0, "msgpack"),
        ("extra:0", 0, "msgpack"),
        ("texts", 0, "msgpack"),
        ("text:input", 0, "msgpack"),
        ("text:output", 0, "msgpack"),
    ]
    assert column_names(full_run()) == list(dict.fromkeys(c.name for c in chunks))
    assert all(isinstance(c.data, bytes) for c in chunks)


def test_the_bytes_of_numeric_and_msgpack_chunks() -> None:
    data = {c.name: c.data for c in encode_run(full_run())}
    assert data["test_index"] == bytes([0, 0, 1, 1, 2, 2])
    assert data["category_index"] == bytes([0, 1, 0xFF, 0, 1, 0xFF])  # -1 as int8
    assert data["attempt"] == b"\x01\x00" * 5 + b"\xc8\x00"  # little-endian int16
    assert data["safety_failure"] == bytes([0, 0, 1, 0, 0, 0])
    assert data["score"] == np.array([1.0, 0.0, 0.5, 0.25, 1.0, 0.75], dtype="<f8").tobytes()
    assert msgspec.msgpack.decode(data["test_ids"]) == ["q1", "q2", "q3"]
    assert msgspec.msgpack.decode(data["targets"]) == ["m-a", "m-b"]
    assert msgspec.msgpack.decode(data["categories"]) == ["easy", "hard"]
    # Sparse columns: [record indexes, values].
    assert msgspec.msgpack.decode(data["errors"]) == [[1, 4], ["timeout", "boom"]]
    assert msgspec.msgpack.decode(data["error_kinds"]) == [[1], ["infra"]]
    assert msgspec.msgpack.decode(data["tags"]) == [[0, 5], [["a", "b"], []]]
    assert msgspec.msgpack.decode(data["scorers"]) == ["exact", "judge"]
    assert msgspec.msgpack.decode(data["extra"]) == ["timestamp"]
    assert msgspec.msgpack.decode(data["texts"]) == ["input", "output"]
    assert msgspec.msgpack.decode(data["text:output"]) == ["1", "2", "3", "4", "5", "6"]


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([0, 127, -128], "int8"),
        ([128], "int16"),
        ([-129], "int16"),
        ([32767, -32768], "int16"),
        ([32768], "int32"),
        ([-32769], "int32"),
        ([2**31 - 1, -(2**31)], "int32"),
        ([2**31], "int64"),
        ([-(2**31) - 1], "int64"),
        ([2**63 - 1, -(2**63)], "int64"),
    ],
)
def test_integers_are_kept_in_the_narrowest_type(values: list[int], dtype: str) -> None:
    narrowed = codec._narrow(np.array(values, dtype=np.int64))
    assert narrowed.dtype == np.dtype(dtype)
    assert narrowed.tolist() == values


def test_floats_booleans_and_empty_arrays_are_not_narrowed() -> None:
    floats = np.array([1.0, 2.0])
    assert codec._narrow(floats) is floats
    flags = np.array([True, False])
    assert codec._narrow(flags) is flags
    empty = np.zeros(0, dtype=np.int64)
    assert codec._narrow(empty) is empty


def test_big_endian_columns_are_written_little_endian() -> None:
    floats = np.array([1.5, -2.0, np.inf], dtype=">f8")
    (chunk,) = codec._array_chunks("score", floats)
    assert chunk == Chunk("score", 0, "<f8", np.array([1.5, -2.0, np.inf], "<f8").tobytes())
    ints = np.array([70000, -1], dtype=">i8")
    (chunk,) = codec._array_chunks("attempt", ints)
    assert (chunk.encoding, chunk.data) == ("<i4", np.array([70000, -1], "<i4").tobytes())


def test_chunks_of_different_encodings_are_joined_as_the_runs_dtype() -> None:
    parts = [("|i1", bytes([1, 0xFF])), ("<i2", b"\x00\x01"), (">i8", (7).to_bytes(8, "big"))]
    joined = codec._array(parts, "int64")
    assert joined.dtype == np.dtype("int64")
    assert joined.tolist() == [1, -1, 256, 7]
    assert codec._array([], "float64").dtype == np.dtype("float64")
    assert codec._array([], "float64").shape == (0,)


# -- chunk boundaries -------------------------------------------------------------------------


def test_numeric_columns_are_cut_every_numeric_chunk_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(codec, "NUMERIC_CHUNK", 4)
    run = small_run(10)
    chunks = [c for c in encode_run(run) if c.name == "score"]
    assert [(c.first, len(c.data)) for c in chunks] == [(0, 32), (4, 32), (8, 16)]
    assert_same_run(decode(by_column(encode_run(run)), run), run)


def test_object_columns_are_cut_every_object_chunk_records() -> None:
    values = [f"q{i}" for i in range(10)]
    chunks = list(codec._object_chunks("text:input", 10, codec._list_piece(values), 4))
    assert [(c.name, c.first, c.encoding) for c in chunks] == [
        ("text:input", 0, "msgpack"),
        ("text:input", 4, "msgpack"),
        ("text:input", 8, "msgpack"),
    ]
    assert [msgspec.msgpack.decode(c.data) for c in chunks] == [
        ["q0", "q1", "q2", "q3"],
        ["q4", "q5", "q6", "q7"],
        ["q8", "q9"],
    ]
    assert codec._objects([(c.encoding, c.data) for c in chunks]) == values


def test_object_columns_are_one_chunk_up_to_object_chunk_records() -> None:
    run = small_run(codec.OBJECT_CHUNK + 1, texts={"input": ["q"] * (codec.OBJECT_CHUNK + 1)})
    chunks = list(encode_run(run))
    assert [c.first for c in chunks if c.name == "text:input"] == [0, 8192]
    # The lists of names are one chunk whatever their length.
    assert [c.first for c in chunks if c.name == "test_ids"] == [0]
    assert decode(by_column(chunks), run).texts == run.texts


def test_object_chunk_is_read_when_a_run_is_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not fixed when the module was loaded: changing it changes the chunks."""
    monkeypatch.setattr(codec, "OBJECT_CHUNK", 4)
    run = small_run(10, texts={"input": [f"q{i}" for i in range(10)]}, errors={1: "a", 9: "b"})
    chunks = list(encode_run(run))
    assert [c.first for c in chunks if c.name == "text:input"] == [0, 4, 8]
    assert [c.first for c in chunks if c.name == "errors"] == [0, 8]
    assert_same_run(decode(by_column(chunks), run), run)


def test_sparse_columns_write_only_the_ranges_that_hold_values() -> None:
    piece = codec._sparse_piece({9: "late", 1: "early"})
    chunks = list(codec._object_chunks("errors", 12, piece, 4))
    assert [(c.first, msgspec.msgpack.decode(c.data)) for c in chunks] == [
        (0, [[1], ["early"]]),
        (8, [[9], ["late"]]),  # records 4 to 7 have none: no chunk
    ]
    stored = [(c.first, c.encoding, c.data) for c in chunks]
    assert codec._record_sparse("errors", stored, 12) == {1: "early", 9: "late"}
    assert list(codec._object_chunks("errors", 12, codec._sparse_piece({}), 4)) == []


def test_a_run_with_errors_in_several_chunks_round_trips() -> None:
    n = codec.OBJECT_CHUNK * 2 + 1
    errors = {0: "first", n - 1: "last"}
    run = small_run(n, errors=errors, error_kinds={n - 1: "infra"})
    chunks = list(encode_run(run))
    assert [(c.name, c.first) for c in chunks if c.name in ("errors", "error_kinds")] == [
        ("errors", 0),
        ("errors", 2 * codec.OBJECT_CHUNK),  # the chunk between holds none
        ("error_kinds", 2 * codec.OBJECT_CHUNK),
    ]
    back = decode(by_column(chunks), run)
    assert back.errors == errors
    assert back.error_kinds == {n - 1: "infra"}
    assert back.is_error.nonzero()[0].tolist() == [0, n - 1]


def test_a_chunk_over_max_blob_is_halved_until_it_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    run = small_run(4, texts={"input": ["x" * 10] * 4})
    # Four strings of ten characters: 45 bytes of msgpack; two of them: 23.
    monkeypatch.setattr(codec, "MAX_BLOB", 25)
    text = [c for c in encode_run(run) if c.name == "text:input"]
    assert [(c.first, len(c.data)) for c in text] == [(0, 23), (2, 23)]
    # A single record over the limit is written whole: it cannot be split further.
    monkeypatch.setattr(codec, "MAX_BLOB", 10)
    text = [c for c in encode_run(run) if c.name == "text:input"]
    assert [(c.first, len(c.data)) for c in text] == [(0, 12), (1, 12), (2, 12), (3, 12)]
    assert decode(by_column(encode_run(run)), run).texts == {"input": ["x" * 10] * 4}


def test_column_names_encode_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object) -> bytes:
        raise AssertionError("column_names encoded a value")

    monkeypatch.setattr(codec, "_msgpack", refuse)
    monkeypatch.setattr(codec, "_array_chunks", refuse)
    assert column_names(full_run())[:3] == ["test_ids", "targets", "categories"]
    assert len(column_names(full_run())) == 27


def test_optional_float_columns_are_written_when_any_value_is_there() -> None:
    run = small_run(3, wait_ms=[None, None, 5.0])
    assert "wait_ms" in column_names(run)
    assert "latency_ms" not in column_names(run)
    back = decode(by_column(encode_run(run)), run)
    assert np.isnan(back.wait_ms).tolist() == [True, True, False]
    assert back.wait_ms[2] == 5.0


# -- damage -------------------------------------------------------------------------------------


def damaged(name: str, data: bytes | None = None, encoding: str | None = None) -> Exception:
    """What decoding the full run raises with the first chunk of ``name`` replaced."""
    run = full_run()
    columns = by_column(encode_run(run))
    first, old_encoding, old_data = columns[name][0]
    columns[name][0] = (first, encoding or old_encoding, old_data if data is None else data)
    with pytest.raises(DAMAGE) as err:
        decode(columns, run)
    return err.value


def test_a_torn_numeric_chunk_does_not_decode() -> None:
    score = next(c.data for c in encode_run(full_run()) if c.name == "score")
    err = damaged("score", score[:-1])
    assert type(err) is ValueError
    assert str(err) == "buffer size must be a multiple of element size"


def test_a_chunk_of_unknown_encoding_does_not_decode() -> None:
    err = damaged("score", encoding="nonsense")
    assert type(err) is TypeError
    assert str(err) == "data type 'nonsense' not understood"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\xc1", "MessagePack data is malformed: invalid opcode '\\xc1' (byte 0)"),
        (b"\x93\xa2q1", "Input data was truncated"),
    ],
)
def test_a_malformed_msgpack_chunk_does_not_decode(data: bytes, message: str) -> None:
    err = damaged("test_ids", data)
    assert type(err) is msgspec.DecodeError
    assert isinstance(err, ValueError)
    assert str(err) == message


def test_a_sparse_chunk_whose_indexes_and_values_disagree_does_not_decode() -> None:
    err = damaged("errors", msgspec.msgpack.encode([[1, 4], ["timeout"]]))
    assert type(err) is ValueError
    assert str(err) == "zip() argument 2 is shorter than argument 1"


def test_an_error_index_beyond_the_run_does_not_decode() -> None:
    err = damaged("errors", msgspec.msgpack.encode([[1, 9], ["timeout", "boom"]]))
    assert type(err) is codec.DamagedColumnError
    assert str(err) == "column 'errors' holds record 9, not one of the run's 6"


Columns = dict[str, list[tuple[int, str, bytes]]]


def floats_at(first: int, *values: float) -> tuple[int, str, bytes]:
    return (first, "<f8", np.array(values, dtype="<f8").tobytes())


def without(name: str, first: int | None = None) -> Callable[[Columns], None]:
    """Lose column ``name``'s chunk at ``first`` (all its chunks: ``None``)."""

    def edit(columns: Columns) -> None:
        if first is None:
            del columns[name]
        else:
            columns[name] = [chunk for chunk in columns[name] if chunk[0] != first]

    return edit


def replaced(name: str, first: int, *chunks: tuple[int, str, bytes]) -> Callable[[Columns], None]:
    """Put ``chunks`` in the place of column ``name``'s chunk at ``first``."""

    def edit(columns: Columns) -> None:
        i = [chunk[0] for chunk in columns[name]].index(first)
        columns[name][i : i + 1] = chunks

    return edit


def sparse_at(first: int, keys: list[int]) -> tuple[int, str, bytes]:
    return (first, "msgpack", msgspec.msgpack.encode([keys, ["e"] * len(keys)]))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (without("score", 8), "column 'score' is missing records 8 to 9 of the run's 10"),
        (without("score", 4), "column 'score' is missing records 4 to 7 of the run's 10"),
        (without("score", 0), "column 'score' is missing records 0 to 3 of the run's 10"),
        (without("score"), "column 'score' is missing records 0 to 9 of the run's 10"),
        (
            replaced("score", 8, floats_at(8, 0.8)),
            "column 'score' is missing record 9 of the run's 10",
        ),
        (
            replaced("score", 8, floats_at(8, 0.8, 0.9, 1.0, 1.1)),
            "column 'score' holds records 10 to 11, beyond the run's 10",
        ),
        (
            replaced("score", 8, floats_at(8, 0.8, 0.9), floats_at(10, 1.0)),
            "column 'score' holds record 10, beyond the run's 10",
        ),
        (
            replaced("score", 4, floats_at(2, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)),
            "column 'score' holds records 2 to 3 twice",
        ),
        (without("test_index", 8), "column 'test_index' is missing records 8 to 9 of the run's 10"),
        (without("attempt"), "column 'attempt' is missing records 0 to 9 of the run's 10"),
        (
            without("safety_failure", 4),
            "column 'safety_failure' is missing records 4 to 7 of the run's 10",
        ),
        (without("latency_ms", 8), "column 'latency_ms' is missing records 8 to 9 of the run's 10"),
        (without("lines", 0), "column 'lines' is missing records 0 to 3 of the run's 10"),
        (without("scorer:0", 4), "column 'scorer:0' is missing records 4 to 7 of the run's 10"),
        (without("scorer:0"), "column 'scorer:0' is missing records 0 to 9 of the run's 10"),
        (without("text:input", 4), "column 'text:input' is missing records 4 to 7 of the run's 10"),
        (without("text:input"), "column 'text:input' is missing records 0 to 9 of the run's 10"),
        (without("extra:0", 8), "column 'extra:0' is missing records 8 to 9 of the run's 10"),
        # The lists that name what the columns of codes and the columns per name hold.
        (without("test_ids"), "column 'test_ids' is missing"),
        (without("targets"), "column 'targets' is missing"),
        (without("categories"), "column 'categories' is missing"),
        (without("scorers"), "column 'scorers' is missing"),
        (without("extra"), "column 'extra' is missing"),
        (without("texts"), "column 'texts' is missing"),
        # Sparse columns: a record the run has not, or one twice.
        (
            replaced("errors", 8, sparse_at(8, [9, 12])),
            "column 'errors' holds record 12, not one of the run's 10",
        ),
        (
            replaced("error_kinds", 0, sparse_at(0, [-1])),
            "column 'error_kinds' holds record -1, not one of the run's 10",
        ),
        (replaced("errors", 0, sparse_at(0, [1, 1])), "column 'errors' holds record 1 twice"),
        (
            replaced("errors", 8, sparse_at(4, [5]), sparse_at(8, [2])),
            "column 'errors' holds record 2 out of order",
        ),
    ],
)
def test_columns_that_do_not_hold_each_record_once_are_refused(
    monkeypatch: pytest.MonkeyPatch, edit: Callable[[Columns], None], message: str
) -> None:
    """A checksum covers a chunk's bytes, not whether the chunk is there: a lost chunk
    (or one too many) is seen by counting records."""
    monkeypatch.setattr(codec, "NUMERIC_CHUNK", 4)
    monkeypatch.setattr(codec, "OBJECT_CHUNK", 4)
    run = small_run(
        10,
        latency_ms=[float(i) for i in range(10)],
        lines=range(1, 11),
        errors={1: "timeout", 9: "boom"},
        error_kinds={1: "infra"},
        scorer_scores={"exact": [1.0] * 10},
        texts={"input": [f"q{i}" for i in range(10)]},
        extra={"timestamp": list(range(10))},
    )
    columns = by_column(encode_run(run))
    assert_same_run(decode(columns, run), run)  # whole, it decodes
    edit(columns)
    with pytest.raises(codec.DamagedColumnError) as err:
        decode(columns, run)
    assert str(err.value) == message
    assert err.value.column == message.split("'")[1]
    assert isinstance(err.value, DAMAGE)


def test_a_run_of_no_records_needs_no_columns() -> None:
    empty = small_run(0)
    assert_same_run(decode({}, empty), empty)
    with pytest.raises(codec.DamagedColumnError, match=r"^column 'scorers' is missing$"):
        decode({}, small_run(1))


def test_a_stored_chunks_checksum_is_the_crc32_of_its_bytes(location: str) -> None:
    run = full_run()
    with open_store(location) as store:
        rid = store.add_run(run, name="full")
        rows = store._conn.execute(
            "SELECT name, first, encoding, data, crc FROM record_columns WHERE run = ?", (rid,)
        ).fetchall()
    expected = sorted(
        (c.name, c.first, c.encoding, c.data, zlib.crc32(c.data)) for c in encode_run(run)
    )
    assert sorted((n, f, e, bytes(d), c) for n, f, e, d, c in rows) == expected


def _spoil(store: RunStore, rid: int, name: str, data: bytes, *, crc: bool) -> None:
    """Write ``data`` over the first chunk of column ``name``; keep its checksum, or
    clear it (as a chunk written before checksums has none)."""
    store._conn.execute(
        "UPDATE record_columns SET data = ?"
        + ("" if crc else ", crc = NULL")
        + " WHERE run = ? AND name = ? AND first = 0",
        (data, rid, name),
    )


def test_a_chunk_that_fails_its_checksum_is_refused_as_damage(location: str) -> None:
    with open_store(location) as store:
        rid = store.add_run(full_run(), name="full")
        score = next(c.data for c in encode_run(full_run()) if c.name == "score")
        # Same length, other numbers: only the checksum can tell.
        _spoil(store, rid, "score", score[::-1], crc=True)
        with pytest.raises(StoreError) as err:
            store.get_run(rid)
        assert str(err.value) == (
            f"{store.location}: the store is damaged: run {rid}'s column 'score' fails its "
            f"checksum{MEND}"
        )
        assert err.value.option == "store"


def test_a_chunk_without_checksum_that_does_not_decode_is_refused_as_damage(
    location: str,
) -> None:
    with open_store(location) as store:
        rid = store.add_run(full_run(), name="full")
        score = next(c.data for c in encode_run(full_run()) if c.name == "score")
        _spoil(store, rid, "score", score[:-1], crc=False)
        with pytest.raises(StoreError) as err:
            store.get_run(rid)
        assert str(err.value) == (
            f"{store.location}: the store is damaged: run {rid}'s records do not decode "
            f"(ValueError: buffer size must be a multiple of element size){MEND}"
        )
        assert err.value.option == "store"
        assert err.value.__cause__ is None


@pytest.mark.parametrize("name", ["score", "test_index"])
def test_a_lost_chunk_is_refused_as_damage(
    location: str, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """Once read as a run of 8 records (``score``), or one that broke its summary
    (``test_index``)."""
    monkeypatch.setattr(codec, "NUMERIC_CHUNK", 4)
    with open_store(location) as store:
        rid = store.add_run(small_run(10), name="ten")
        store._conn.execute(
            "DELETE FROM record_columns WHERE run = ? AND name = ? AND first = 8", (rid, name)
        )
        with pytest.raises(StoreError) as err:
            store.get_run(rid)
        assert str(err.value) == (
            f"{store.location}: the store is damaged: run {rid}'s column {name!r} is missing "
            f"records 8 to 9 of the run's 10{MEND}"
        )
        assert err.value.option == "store"
        assert err.value.__cause__ is None
