"""A :class:`~evaldelta.model.Run`'s columns as BLOBs, and back.

Each column of a run becomes one or more chunks: ``(name, first, encoding, data)``,
``first`` the index of the chunk's first record. Numbers are raw little-endian
arrays (integers in the narrowest type that holds them); names, free text and sparse
per-record values are msgpack. Reading back is ``numpy.frombuffer`` and one msgpack
decode per chunk: no Python object per record except where the run itself holds one
(texts, extra fields).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from evaldelta.model import Run

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Chunk", "DamagedColumnError", "column_names", "decode_run", "encode_run"]

#: Records per chunk of a numeric column (8 MB of float64).
NUMERIC_CHUNK = 1 << 20
#: Records per chunk of a column of Python values, halved while a chunk is too big.
OBJECT_CHUNK = 8192
#: Largest msgpack chunk written (SQLite's own limit on a BLOB is 1 GB).
MAX_BLOB = 64 << 20

MSGPACK = "msgpack"

#: Integer columns: name in the run -> numpy dtype in the run.
INT_COLUMNS = {
    "test_index": "int64",
    "target_index": "int64",
    "category_index": "int64",
    "attempt": "int64",
    "passed": "int64",
    "input_hash": "int64",
}
#: Float columns always stored; the optional ones are left out when all NaN.
FLOAT_COLUMNS = ("score",)
OPTIONAL_FLOAT_COLUMNS = ("latency_ms", "wait_ms", "input_tokens", "output_tokens", "cost_usd")
#: Sparse per-record values: record index -> value.
SPARSE_COLUMNS = ("errors", "error_kinds", "tags")


class Chunk(NamedTuple):
    """One stored piece of a column."""

    name: str
    first: int
    encoding: str
    data: bytes


def _msgpack(value: Any) -> bytes:
    import msgspec

    return msgspec.msgpack.encode(value)


def _narrow(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Integers in the smallest type that holds them (codes and attempts are small)."""
    import numpy as np

    if values.dtype.kind != "i" or values.size == 0:
        return values
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values


def _array_chunks(name: str, values: npt.NDArray[Any]) -> Iterator[Chunk]:
    small = _narrow(values)
    little = small.astype(small.dtype.newbyteorder("<"), copy=False)
    for first in range(0, max(len(little), 1), NUMERIC_CHUNK):
        part = little[first : first + NUMERIC_CHUNK]
        yield Chunk(name, first, part.dtype.str, part.tobytes())


def _object_chunks(
    name: str, n: int, piece: Callable[[int, int], Any], size: int | None = None
) -> Iterator[Chunk]:
    """msgpack chunks of ``piece(start, stop)``, ``size`` records each (by default
    :data:`OBJECT_CHUNK`, read now, not when this module was loaded), split further
    while one is too big; a ``None`` piece (nothing in that range) is left out."""
    if size is None:
        size = OBJECT_CHUNK
    for first in range(0, n, size):
        yield from _split(name, first, min(first + size, n), piece)


def _split(name: str, start: int, stop: int, piece: Callable[[int, int], Any]) -> Iterator[Chunk]:
    value = piece(start, stop)
    if value is None:
        return
    data = _msgpack(value)
    if len(data) > MAX_BLOB and stop - start > 1:
        middle = (start + stop) // 2
        yield from _split(name, start, middle, piece)
        yield from _split(name, middle, stop, piece)
        return
    yield Chunk(name, start, MSGPACK, data)


def _sparse_piece(mapping: Mapping[int, Any]) -> Callable[[int, int], Any]:
    keys = sorted(mapping)

    def piece(start: int, stop: int) -> Any:
        import bisect

        lo, hi = bisect.bisect_left(keys, start), bisect.bisect_left(keys, stop)
        if lo == hi:
            return None
        chosen = keys[lo:hi]
        return [chosen, [mapping[k] for k in chosen]]

    return piece


def _list_piece(values: Sequence[Any]) -> Callable[[int, int], Any]:
    return lambda start, stop: list(values[start:stop])


def _single(name: str, value: Any) -> Iterator[Chunk]:
    yield Chunk(name, 0, MSGPACK, _msgpack(value))


def _sparse_chunks(name: str, n: int, mapping: Mapping[int, Any]) -> Iterator[Chunk]:
    return _object_chunks(name, n, _sparse_piece(mapping))


def _plan(run: Run) -> Iterator[tuple[str, Callable[[], Iterator[Chunk]]]]:
    """Each stored column of ``run``: its name, and how to encode it (when asked)."""
    import numpy as np

    n = len(run)
    for name in ("test_ids", "targets", "categories"):
        yield name, partial(_single, name, getattr(run, name))
    for name in INT_COLUMNS:
        yield name, partial(_array_chunks, name, getattr(run, name))
    yield "safety_failure", partial(_array_chunks, "safety_failure", run.safety_failure)
    for name in FLOAT_COLUMNS:
        yield name, partial(_array_chunks, name, getattr(run, name))
    for name in OPTIONAL_FLOAT_COLUMNS:
        col = getattr(run, name)
        if not np.isnan(col).all():
            yield name, partial(_array_chunks, name, col)
    if run.lines is not None:
        yield "lines", partial(_array_chunks, "lines", run.lines)
    for name in SPARSE_COLUMNS:
        mapping = getattr(run, name)
        if mapping:
            yield name, partial(_sparse_chunks, name, n, mapping)
    scorers = list(run.scorer_scores)
    yield "scorers", partial(_single, "scorers", scorers)
    for i, name in enumerate(scorers):
        yield f"scorer:{i}", partial(_array_chunks, f"scorer:{i}", run.scorer_scores[name])
    extra = list(run.extra)
    yield "extra", partial(_single, "extra", extra)
    for i, name in enumerate(extra):
        yield f"extra:{i}", partial(_object_chunks, f"extra:{i}", n, _list_piece(run.extra[name]))
    if run.texts is not None:
        fields = list(run.texts)
        yield "texts", partial(_single, "texts", fields)
        for name in fields:
            text = f"text:{name}"
            yield text, partial(_object_chunks, text, n, _list_piece(run.texts[name]))


def encode_run(run: Run) -> Iterator[Chunk]:
    """Every column of ``run`` as chunks, column after column (run-level facts are the
    caller's to store)."""
    for _, chunks in _plan(run):
        yield from chunks()


def column_names(run: Run) -> list[str]:
    """The names of the columns :func:`encode_run` writes for ``run``, in its order
    (without encoding anything: to tell how far an import has got)."""
    return [name for name, _ in _plan(run)]


class DamagedColumnError(ValueError):
    """A column whose chunks do not hold exactly the run's records (one lost, one too
    many): what the store reports as damage, naming the run. The message is the
    column's name and what is wrong with it."""

    def __init__(self, column: str, problem: str) -> None:
        super().__init__(f"column {column!r} {problem}")
        self.column = column


#: A stored column as :func:`decode_run` takes it: its chunks ``(first, encoding,
#: data)``, in record order.
StoredColumn = Sequence[tuple[int, str, bytes]]


def _records(first: int, last: int) -> str:
    return f"record {first}" if first == last else f"records {first} to {last}"


def _check_cover(name: str, parts: Sequence[tuple[int, int]], n: int) -> None:
    """Refuse a column whose chunks, ``(first, records)`` in order, do not hold records
    0 to ``n - 1`` once each: a checksum covers a chunk's bytes, not whether a chunk is
    there, so a lost chunk is seen only here."""
    expected = 0
    for first, count in parts:
        if first > expected:
            raise DamagedColumnError(
                name, f"is missing {_records(expected, first - 1)} of the run's {n}"
            )
        if first < expected:
            raise DamagedColumnError(name, f"holds {_records(first, expected - 1)} twice")
        expected = first + count
    if expected < n:
        raise DamagedColumnError(name, f"is missing {_records(expected, n - 1)} of the run's {n}")
    if expected > n:
        raise DamagedColumnError(name, f"holds {_records(n, expected - 1)}, beyond the run's {n}")


def _array(chunks: Sequence[tuple[str, bytes]], dtype: str) -> npt.NDArray[Any]:
    import numpy as np

    return _joined(
        [np.frombuffer(data, dtype=np.dtype(encoding)) for encoding, data in chunks], dtype
    )


def _joined(parts: Sequence[npt.NDArray[Any]], dtype: str) -> npt.NDArray[Any]:
    import numpy as np

    if not parts:
        return np.zeros(0, dtype=dtype)
    joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return joined.astype(dtype)  # a copy: writable, native byte order


def _objects(chunks: Sequence[tuple[str, bytes]]) -> list[Any]:
    import msgspec

    out: list[Any] = []
    for _, data in chunks:
        out.extend(msgspec.msgpack.decode(data))
    return out


def _record_array(name: str, column: StoredColumn, n: int, dtype: str) -> npt.NDArray[Any]:
    """A numeric column of one value per record, refused unless it holds all ``n``."""
    import numpy as np

    parts = [np.frombuffer(data, dtype=np.dtype(encoding)) for _, encoding, data in column]
    _check_cover(
        name, [(first, len(part)) for (first, _, _), part in zip(column, parts, strict=True)], n
    )
    return _joined(parts, dtype)


def _record_objects(name: str, column: StoredColumn, n: int) -> list[Any]:
    """A msgpack column of one value per record, refused unless it holds all ``n``."""
    import msgspec

    parts = [msgspec.msgpack.decode(data) for _, _, data in column]
    _check_cover(
        name, [(first, len(part)) for (first, _, _), part in zip(column, parts, strict=True)], n
    )
    return [value for part in parts for value in part]


def _record_sparse(
    name: str, column: StoredColumn, n: int, convert: Callable[[Any], Any] = str
) -> dict[int, Any]:
    """A sparse column (record index -> value), refused if it holds a record the run
    does not have, or one twice. Its chunks leave out the ranges without a value, so a
    lost chunk cannot be told from a range without one."""
    import msgspec

    out: dict[int, Any] = {}
    previous = -1
    for first, _, data in column:
        keys, values = msgspec.msgpack.decode(data)
        for key in keys:
            if not 0 <= key < n:
                raise DamagedColumnError(name, f"holds record {key}, not one of the run's {n}")
            if key == previous:
                raise DamagedColumnError(name, f"holds record {key} twice")
            if key < previous or key < first:
                raise DamagedColumnError(name, f"holds record {key} out of order")
            previous = key
        out.update(zip(keys, map(convert, values), strict=True))
    return out


def decode_run(
    columns: Mapping[str, StoredColumn],
    n: int,
    *,
    source: str,
    format: str,
    status: str,
    config: dict[str, Any],
    started_at: str | None,
    finished_at: str | None,
) -> Run:
    """The run of ``n`` records whose columns are ``columns``: name -> [(first,
    encoding, data)] in record order.

    Text columns are restored when present in ``columns`` (the caller leaves them out
    when it does not want them).

    Raises:
        DamagedColumnError: a column that does not hold each of the ``n`` records once
            (a chunk lost, or one too many), or a list the run needs that is not there.
        ValueError, TypeError, KeyError, IndexError: a chunk that does not decode.
    """
    import numpy as np

    def listed(name: str) -> list[Any]:
        """A list stored once for the whole run: its cases, targets, scorers, ..."""
        if name not in columns:
            if n:  # written for every run; only a run of no records may do without
                raise DamagedColumnError(name, "is missing")
            return []
        return _objects([(encoding, data) for _, encoding, data in columns[name]])

    def ints(name: str, dtype: str = "int64") -> npt.NDArray[Any]:
        return _record_array(name, columns.get(name, ()), n, dtype)

    def objects(name: str) -> list[Any]:
        return _record_objects(name, columns.get(name, ()), n)

    def floats(name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        if name not in columns and name in OPTIONAL_FLOAT_COLUMNS:
            return np.full(n, np.nan)
        return _record_array(name, columns.get(name, ()), n, "float64")

    def sparse(name: str, convert: Callable[[Any], Any] = str) -> dict[int, Any]:
        return _record_sparse(name, columns.get(name, ()), n, convert)

    errors = sparse("errors")
    is_error = np.zeros(n, dtype=np.bool_)
    if errors:
        is_error[list(errors)] = True
    scorers = listed("scorers")
    extra_names = listed("extra")
    if "texts" in columns:
        text_names: list[Any] | None = listed("texts")
    elif any(name.startswith("text:") for name in columns):
        raise DamagedColumnError("texts", "is missing")
    else:
        text_names = None
    lines = ints("lines") if "lines" in columns else None
    return Run(
        source=source,
        format=format,
        status=status,
        config=config,
        started_at=started_at,
        finished_at=finished_at,
        input_hash=ints("input_hash"),
        extra={name: objects(f"extra:{i}") for i, name in enumerate(extra_names)},
        test_ids=listed("test_ids"),
        targets=listed("targets"),
        categories=listed("categories"),
        test_index=ints("test_index"),
        target_index=ints("target_index"),
        category_index=ints("category_index"),
        score=floats("score"),
        passed=ints("passed"),
        attempt=ints("attempt"),
        latency_ms=floats("latency_ms"),
        wait_ms=floats("wait_ms"),
        input_tokens=floats("input_tokens"),
        output_tokens=floats("output_tokens"),
        cost_usd=floats("cost_usd"),
        is_error=is_error,
        safety_failure=ints("safety_failure", "bool"),
        errors=errors,
        error_kinds=sparse("error_kinds"),
        tags=sparse("tags", tuple),
        scorer_scores={name: floats(f"scorer:{i}") for i, name in enumerate(scorers)},
        texts=(
            None if text_names is None else {name: objects(f"text:{name}") for name in text_names}
        ),
        lines=lines,
    )
