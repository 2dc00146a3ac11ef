"""Parquet files of records, read and written through DuckDB: how a team whose results
sit in a data lake uses evaldelta, and how big runs move between machines.

One row per record, in the common model's columns, by name:

- ``test_id`` (text, required), ``target`` (text), ``score`` (a number; else the mean of
  ``scores``, else 0 for a record with an ``error``), ``attempt`` (an integer),
  ``passed`` and ``safety_failure`` (booleans);
- ``scores``: a struct (or a map) of scorer name -> number;
- ``latency_ms``, ``wait_ms``, ``input_tokens``, ``output_tokens``, ``cost_usd`` (numbers);
- ``error``, ``error_kind``, ``category`` (text), ``tags`` (a list of text);
- ``input``, ``output``, ``expected``, ``metadata``: JSON (Parquet's JSON type), or text;
- ``input_hash`` (an integer): the input's fingerprint, when the writer kept it (a run
  exported by evaldelta does; else it is taken from ``input``).

A NULL is an absent value. The run's own facts (status, config, start and end, the
recorded order of its cases, how a sequential run settled) ride in the file's key-value
metadata, under ``evaldelta``. :func:`write_parquet` writes such a file from a run (``runs
export --format parquet``); reading it gives the run back, column for column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaldelta.errors import InputError, ParseError
from evaldelta.io._reader import ReadOptions, reader

if TYPE_CHECKING:
    import duckdb

    from evaldelta.model import Run

NAME = "parquet"

__all__ = ["NAME", "read", "sniff", "write_parquet"]

#: The key of the file's metadata that holds the run's own facts.
META_KEY = "evaldelta"
#: Records written at a time: bounded memory whatever the size of the run.
BATCH = 100_000
NUMBERS = ("latency_ms", "wait_ms", "input_tokens", "output_tokens", "cost_usd")
TEXTS = ("input", "output", "expected", "metadata")
_KINDS = {
    "text": ("VARCHAR",),
    "integer": (
        "BIGINT", "INTEGER", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT",
        "UTINYINT",
    ),
    "number": ("DOUBLE", "FLOAT", "HUGEINT", "DECIMAL"),
    "boolean": ("BOOLEAN",),
}  # fmt: skip
_COLUMN_KINDS = {
    "test_id": "text",
    "target": "text",
    "score": "number",
    "attempt": "integer",
    "passed": "boolean",
    "safety_failure": "boolean",
    "error": "text",
    "error_kind": "text",
    "category": "text",
    "input_hash": "integer",
    **dict.fromkeys(NUMBERS, "number"),
}


def sniff(path: Path, head: bytes) -> bool:
    """A Parquet file starts with the magic bytes ``PAR1``."""
    return head[:4] == b"PAR1"


def _source(path: Path) -> str:
    return "read_parquet(" + "'" + str(path).replace("'", "''") + "')"


def _schema(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, str]:
    """Column name -> DuckDB type, refusing a file DuckDB cannot read as Parquet."""
    import duckdb

    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM {_source(path)}").fetchall()
    except duckdb.Error as exc:
        raise ParseError(
            str(path), None, f"is not a readable Parquet file ({_first_line(exc)})"
        ) from exc
    return {str(r[0]): str(r[1]) for r in rows}


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _kind_of(duck_type: str) -> str | None:
    base = duck_type.split("(", 1)[0]
    for kind, types in _KINDS.items():
        if base in types:
            return kind
    return None


def _check_types(src: str, schema: Mapping[str, str]) -> None:
    """Each column of the common model holds what it should, or the file is refused."""
    if "test_id" not in schema:
        found = ", ".join(f'"{c}"' for c in schema) or "none"
        raise ParseError(
            src,
            None,
            f'has no "test_id" column (columns found: {found}); a Parquet file of records '
            "needs test_id and score (or scores), one row per attempt",
        )
    for name, kind in _COLUMN_KINDS.items():
        if name in schema:
            found_kind = _kind_of(schema[name])
            if found_kind != kind and not (kind == "number" and found_kind == "integer"):
                raise ParseError(
                    src,
                    None,
                    f'column "{name}" must hold {"an" if kind == "integer" else "a"} {kind}, '
                    f"got {schema[name]}; write it as such",
                )
    if "score" not in schema and "scores" not in schema:
        raise ParseError(src, None, 'has neither a "score" nor a "scores" column')
    scores = schema.get("scores")
    if scores is not None and not scores.startswith(("STRUCT(", "MAP(")):
        raise ParseError(
            src, None, f'column "scores" must be a struct or a map of numbers, got {scores}'
        )


def _scorer_names(
    con: duckdb.DuckDBPyConnection, path: Path, schema: Mapping[str, str]
) -> list[str]:
    """The scorers of the file, in order: a struct's fields, or a map's keys in order of
    first appearance."""
    kind = schema.get("scores")
    if kind is None:
        return []
    if kind.startswith("STRUCT("):
        rows = con.execute(f"DESCRIBE SELECT unnest(scores) FROM {_source(path)}").fetchall()
        return [str(r[0]) for r in rows]
    rows = con.execute(
        f"""SELECT name FROM (SELECT unnest(map_keys(scores)) AS name, ordinality AS rn
            FROM {_source(path)} WITH ORDINALITY) GROUP BY name ORDER BY min(rn)"""
    ).fetchall()
    return [str(r[0]) for r in rows]


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read a Parquet file of records into a :class:`~evaldelta.model.Run` (through
    DuckDB, imported now)."""
    import numpy as np

    from evaldelta.io._duckdb import connect
    from evaldelta.model import Run

    src = str(path)
    with connect() as con:
        schema = _schema(con, path)
        _check_types(src, schema)
        scorers = _scorer_names(con, path, schema)
        if len(scorers) != len(set(scorers)):
            raise ParseError(src, None, 'column "scores" names a scorer twice')
        wanted = [c for c in _COLUMN_KINDS if c in schema]
        wanted += [c for c in ("tags",) if c in schema]
        texts = [c for c in TEXTS if c in schema] if options.keep_text else []
        if "input" in schema and "input_hash" not in schema and "input" not in texts:
            texts.append("input")
        extra = [c for c in options.extra if c in schema and c not in wanted + texts]
        columns = [f'"{c}"' for c in dict.fromkeys([*wanted, *texts, *extra])]
        columns += [
            f'CAST(scores[{_quote(s)}] AS DOUBLE) AS "scorer:{i}"' for i, s in enumerate(scorers)
        ]
        data = con.execute(f"SELECT {', '.join(columns)} FROM {_source(path)}").fetchnumpy()
        meta = _metadata(con, path)
    n = len(data["test_id"])
    if not n:
        raise ParseError(src, None, "has no records: no rows in the file")
    test_ids = _texts(data["test_id"])
    if None in test_ids:
        row = test_ids.index(None) + 1
        raise ParseError(src, None, f'row {row} has no "test_id"; every record needs one')
    if "" in test_ids:
        row = test_ids.index("") + 1
        raise ParseError(src, None, f'row {row}: "test_id" is empty; every record needs a test id')
    targets = _texts(data["target"]) if "target" in data else None
    if targets is not None and "" in targets:
        row = targets.index("") + 1
        raise ParseError(src, None, f'row {row}: "target" is empty; name it or leave it NULL')
    scorer_scores = {s: _floats(data[f"scorer:{i}"]) for i, s in enumerate(scorers)}
    errors = (
        {i: e for i, e in enumerate(_texts(data["error"])) if e is not None}
        if "error" in data
        else {}
    )
    score: Any = _floats(data["score"]) if "score" in data else np.full(n, np.nan)
    # NULL is an absent score; a NaN one is refused as not finite (Run checks it).
    null = _mask(data["score"]) if "score" in data else np.ones(n, dtype=np.bool_)
    missing = np.flatnonzero(null) if null is not None else np.zeros(0, dtype=np.int64)
    for i in missing.tolist():
        parts = [float(col[i]) for col in scorer_scores.values() if not math.isnan(col[i])]
        if parts:
            score[i] = sum(parts) / len(parts)
        elif i in errors:
            score[i] = 0.0
        else:
            raise ParseError(
                src,
                None,
                f'row {i + 1} ({test_ids[i]!r}) has no "score"; every record needs a number '
                '(or an "error" for an attempt that did not run)',
            )
    kinds = (
        {i: k for i, k in enumerate(_texts(data["error_kind"])) if k is not None}
        if "error_kind" in data
        else {}
    )
    tags = {}
    if "tags" in data:
        for i, t in enumerate(data["tags"].tolist()):
            if t is not None and len(t):
                tags[i] = tuple(str(x) for x in t)
    text_columns = None
    if options.keep_text:
        text_columns = {
            c: _json_values(data[c], schema[c]) if c in data else [None] * n for c in TEXTS
        }
    input_hash = (
        _integers(data["input_hash"], 0)
        if "input_hash" in data
        else _fingerprints(_json_values(data["input"], schema["input"]))
        if "input" in data
        else None
    )
    run = Run.from_columns(
        source=src,
        format=NAME,
        test_id=test_ids,
        score=score,
        target=targets,
        passed=(_integers(data["passed"], -1) if "passed" in data else None),
        attempt=_integers(data["attempt"], 0) if "attempt" in data else None,
        **{c: _floats(data[c]) for c in NUMBERS if c in data},
        errors=errors,
        error_kinds=kinds,
        safety_failure=(
            _integers(data["safety_failure"], 0).astype(bool) if "safety_failure" in data else None
        ),
        category=_texts(data["category"]) if "category" in data else None,
        tags=tags,
        scorer_scores=scorer_scores,
        texts=text_columns,
        input_hash=input_hash,
        extra={c: _json_values(data[c], schema[c]) for c in extra},
        status=str(meta.get("status") or "complete"),
        config=meta.get("config") if isinstance(meta.get("config"), dict) else {},
        started_at=meta.get("started_at"),
        finished_at=meta.get("finished_at"),
    )
    run.case_order = meta.get("case_order")
    run.sequential = meta.get("sequential")
    return run


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _metadata(con: duckdb.DuckDBPyConnection, path: Path) -> dict[str, Any]:
    """The run's facts from the file's key-value metadata (none for another writer's)."""
    import msgspec

    rows = con.execute(
        f"SELECT value FROM parquet_kv_metadata({_quote(str(path))}) "
        f"WHERE decode(key) = {_quote(META_KEY)}"
    ).fetchall()
    if not rows:
        return {}
    try:
        found = msgspec.json.decode(bytes(rows[0][0]))
    except msgspec.DecodeError:
        return {}
    return found if isinstance(found, dict) else {}


def _mask(values: Any) -> Any:
    import numpy as np

    return np.ma.getmaskarray(values) if isinstance(values, np.ma.MaskedArray) else None


def _texts(values: Any) -> list[Any]:
    """A text column, ``None`` where it is NULL."""
    import numpy as np

    data = np.ma.getdata(values).tolist()
    mask = _mask(values)
    if mask is None:
        return data  # type: ignore[no-any-return]
    return [None if m else v for v, m in zip(data, mask.tolist(), strict=True)]


def _floats(values: Any) -> Any:
    """A numeric column as floats, NaN where it is NULL."""
    import numpy as np

    out = np.asarray(np.ma.getdata(values), dtype=np.float64).copy()
    mask = _mask(values)
    if mask is not None:
        out[mask] = np.nan
    return out


def _integers(values: Any, fill: int) -> Any:
    """An integer or boolean column as int64, ``fill`` where it is NULL."""
    import numpy as np

    out = np.asarray(np.ma.getdata(values)).astype(np.int64)
    mask = _mask(values)
    if mask is not None:
        out[mask] = fill
    return out


def _json_values(values: Any, duck_type: str) -> list[Any]:
    """A JSON column's values decoded (text as it is), ``None`` where NULL."""
    import msgspec

    texts = _texts(values)
    if duck_type != "JSON":
        return texts
    decode = msgspec.json.decode
    return [None if t is None else decode(t) for t in texts]


def _fingerprints(inputs: Sequence[Any]) -> Any:
    import numpy as np

    from evaldelta.io._source import fingerprint

    table: dict[Any, int] = {}
    out = np.empty(len(inputs), dtype=np.int64)
    for i, value in enumerate(inputs):
        try:
            out[i] = table[value]
        except KeyError:
            out[i] = table[value] = fingerprint(value)
        except TypeError:  # structured: not hashable
            out[i] = fingerprint(value)
    return out


def write_parquet(run: Run, path: str | Path) -> int:
    """Write ``run`` to a Parquet file, one row per record in the run's order (see the
    module's docstring); returns the number of records written.

    Raises:
        InputError: the file cannot be written.
    """
    import duckdb

    from evaldelta.io._duckdb import connect

    scorers = list(run.scorer_scores)
    struct = ", ".join(f"{_ident(s)} DOUBLE" for s in scorers)
    texts = [c for c in TEXTS if run.texts is not None and c in run.texts]
    columns = [
        "test_id VARCHAR NOT NULL",
        "target VARCHAR",
        "attempt BIGINT",
        "score DOUBLE",
        "passed BOOLEAN",
        *([f"scores STRUCT({struct})"] if scorers else []),
        *(f"{c} DOUBLE" for c in NUMBERS),
        "error VARCHAR",
        "error_kind VARCHAR",
        "safety_failure BOOLEAN",
        "category VARCHAR",
        "tags VARCHAR[]",
        *(f"{c} JSON" for c in texts),
        "input_hash BIGINT",
    ]
    try:
        with connect() as con:
            _write(con, run, path, columns, scorers, texts)
    except duckdb.IOException as exc:
        raise InputError(f"{path}: cannot write the Parquet file ({_first_line(exc)})") from exc
    return len(run)


def _write(
    con: duckdb.DuckDBPyConnection,
    run: Run,
    path: str | Path,
    columns: list[str],
    scorers: list[str],
    texts: list[str],
) -> None:
    """The records of ``run`` into a table, batch by batch, and the table to ``path``."""
    import msgspec
    import numpy as np

    encode = msgspec.json.encode
    n = len(run)
    con.execute(f"CREATE TABLE records ({', '.join(columns)})")
    for start in range(0, n, BATCH):
        stop = min(start + BATCH, n)
        sl = slice(start, stop)
        batch: dict[str, Any] = {
            "test_id": np.asarray(run.test_ids, dtype=object)[run.test_index[sl]],
            "target": np.asarray(run.targets, dtype=object)[run.target_index[sl]],
            "attempt": run.attempt[sl],
            "score": run.score[sl],
            "passed": np.ma.masked_array(run.passed[sl] == 1, mask=run.passed[sl] < 0),
            **{f"s{i}": run.scorer_scores[s][sl] for i, s in enumerate(scorers)},
            **{c: getattr(run, c)[sl] for c in NUMBERS},
            "error": _sparse(run.errors, start, stop),
            "error_kind": _sparse(run.error_kinds, start, stop),
            "safety_failure": run.safety_failure[sl],
            "category": _categories(run, sl),
            "tags": _sparse({i: list(t) for i, t in run.tags.items()}, start, stop),
            **{
                c: np.asarray(
                    [None if v is None else encode(v).decode() for v in run.texts[c][sl]],
                    dtype=object,
                )
                for c in texts
                if run.texts is not None
            },
            "input_hash": run.input_hash[sl],
        }
        con.register("batch", batch)
        scores = (
            f"struct_pack({', '.join(f'{_ident(s)} := s{i}' for i, s in enumerate(scorers))}), "
            if scorers
            else ""
        )
        con.execute(
            "INSERT INTO records SELECT test_id, target, attempt, score, passed, "
            f"{scores}{', '.join(NUMBERS)}, error, error_kind, safety_failure, category, "
            f"tags, {''.join(f'{c}, ' for c in texts)}input_hash FROM batch"
        )
        con.unregister("batch")
    meta = encode(
        {
            "status": run.status,
            "config": run.config,
            "started_at": run.started_at,
            "finished_at": run.finished_at,
            "case_order": run.case_order,
            "sequential": run.sequential,
        }
    ).decode()
    con.execute(
        f"COPY records TO {_quote(str(path))} (FORMAT parquet, COMPRESSION zstd, "
        f"KV_METADATA {{{META_KEY}: {_quote(meta)}}})"
    )


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sparse(values: Mapping[int, Any], start: int, stop: int) -> Any:
    import numpy as np

    out = np.full(stop - start, None, dtype=object)
    for i, v in values.items():
        if start <= i < stop:
            out[i - start] = v
    return out


def _categories(run: Run, sl: slice) -> Any:
    import numpy as np

    names = np.asarray([*run.categories, None], dtype=object)
    codes = run.category_index[sl]
    return names[np.where(codes >= 0, codes, len(run.categories))]
