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

__all__ = ["Chunk", "column_names", "decode_run", "encode_run"]

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
    name: str, n: int, piece: Callable[[int, int], Any], size: int = OBJECT_CHUNK
) -> Iterator[Chunk]:
    """msgpack chunks of ``piece(start, stop)``, split further while one is too big;
    a ``None`` piece (nothing in that range) is left out."""
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


def _array(chunks: list[tuple[str, bytes]], dtype: str) -> npt.NDArray[Any]:
    import numpy as np

    parts = [np.frombuffer(data, dtype=np.dtype(encoding)) for encoding, data in chunks]
    if not parts:
        return np.zeros(0, dtype=dtype)
    joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
    return joined.astype(dtype)  # a copy: writable, native byte order


def _objects(chunks: list[tuple[str, bytes]]) -> list[Any]:
    import msgspec

    out: list[Any] = []
    for _, data in chunks:
        out.extend(msgspec.msgpack.decode(data))
    return out


def _sparse(chunks: list[tuple[str, bytes]], convert: Callable[[Any], Any] = str) -> dict[int, Any]:
    import msgspec

    out: dict[int, Any] = {}
    for _, data in chunks:
        keys, values = msgspec.msgpack.decode(data)
        out.update(zip(keys, map(convert, values), strict=True))
    return out


def decode_run(
    columns: Mapping[str, list[tuple[str, bytes]]],
    n: int,
    *,
    source: str,
    format: str,
    status: str,
    config: dict[str, Any],
    started_at: str | None,
    finished_at: str | None,
) -> Run:
    """The run whose columns are ``columns``: name -> [(encoding, data)] in record order.

    Text columns are restored when present in ``columns`` (the caller leaves them out
    when it does not want them).
    """
    import numpy as np

    def one(name: str) -> Any:
        return _objects(columns.get(name, []))

    def floats(name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
        if name not in columns:
            return np.full(n, np.nan)
        return _array(columns[name], "float64")

    errors = _sparse(columns.get("errors", []))
    is_error = np.zeros(n, dtype=np.bool_)
    if errors:
        is_error[list(errors)] = True
    scorers = one("scorers")
    extra_names = one("extra")
    text_names = one("texts") if "texts" in columns else None
    lines = _array(columns["lines"], "int64") if "lines" in columns else None
    return Run(
        source=source,
        format=format,
        status=status,
        config=config,
        started_at=started_at,
        finished_at=finished_at,
        input_hash=_array(columns.get("input_hash", []), "int64"),
        extra={name: one(f"extra:{i}") for i, name in enumerate(extra_names)},
        test_ids=one("test_ids"),
        targets=one("targets"),
        categories=one("categories"),
        test_index=_array(columns.get("test_index", []), "int64"),
        target_index=_array(columns.get("target_index", []), "int64"),
        category_index=_array(columns.get("category_index", []), "int64"),
        score=floats("score"),
        passed=_array(columns.get("passed", []), "int64"),
        attempt=_array(columns.get("attempt", []), "int64"),
        latency_ms=floats("latency_ms"),
        wait_ms=floats("wait_ms"),
        input_tokens=floats("input_tokens"),
        output_tokens=floats("output_tokens"),
        cost_usd=floats("cost_usd"),
        is_error=is_error,
        safety_failure=_array(columns.get("safety_failure", []), "bool"),
        errors=errors,
        error_kinds=_sparse(columns.get("error_kinds", [])),
        tags=_sparse(columns.get("tags", []), tuple),
        scorer_scores={name: floats(f"scorer:{i}") for i, name in enumerate(scorers)},
        texts=(None if text_names is None else {name: one(f"text:{name}") for name in text_names}),
        lines=lines,
    )
