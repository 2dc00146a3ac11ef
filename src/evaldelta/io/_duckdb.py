"""DuckDB, the reader and grouper of large inputs: a large agentv JSONL file (plain or
gzip) or a Parquet file of records is read with explicit column types and grouped per
case and target in SQL, and the run comes back as one row per case with its totals
(:class:`~evaldelta.model.CaseTotals`), not a row per record: memory and time then grow
with the cases, not with the text of the file.

The rule is that this path gives the comparison the plain path gives, figure for figure,
or none at all: each record is checked in SQL against what the plain path accepts (the
JSON type of every field read, finite numbers, no field that only the general reader
knows), and anything else, as well as any error DuckDB raises (a line that is not one
JSON object, invalid UTF-8, a key given twice ...), sends the file to the plain path,
which reads it or names what is wrong by file and line (:class:`Fallback`). Sums over a
case's attempts are taken as :func:`evaldelta.pairing._cases.sum_by_cell` takes them,
whatever the order DuckDB's threads add in.

``duckdb`` is imported here only, when a large file (or a Parquet one) is read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaldelta.io._agentv import ERROR_STATUSES, INFRA_STATUSES
from evaldelta.io._source import LIMITS, crc_of

if TYPE_CHECKING:
    import duckdb

    from evaldelta.model import Run

__all__ = ["ENGINE", "Engine", "Fallback", "connect", "grouped_jsonl", "large"]


@dataclass
class Engine:
    """When the DuckDB engine reads a file: from ``duckdb_bytes`` bytes on (``None``:
    never; ``0``: every file). On the command line, ``EVALDELTA_DUCKDB_MB`` (a number of
    MiB, or ``off``)."""

    duckdb_bytes: int | None = 16 * 2**20


#: When the engine reads a file (``evaldelta.io.ENGINE``).
ENGINE = Engine()


class Fallback(Exception):
    """The DuckDB path cannot give exactly what the plain path gives: read the file the
    plain way (which reads it, or names what is wrong with it by line)."""


def large(path: Path) -> bool:
    """Whether ``path`` is large enough for the DuckDB engine (see :class:`Engine`)."""
    if ENGINE.duckdb_bytes is None:
        return False
    try:
        return path.stat().st_size >= ENGINE.duckdb_bytes
    except OSError:
        return False


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB, imported now: nothing else in evaldelta imports it."""
    import duckdb

    return duckdb.connect(":memory:", config={"preserve_insertion_order": True})


def _quote(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# -- the JSON type of a value, from its first character (DuckDB writes JSON minified) --

_DIGIT = "(ascii({0}) BETWEEN 48 AND 57 OR ascii({0}) = 45)"


def _is_number(j: str) -> str:
    return f"({j} IS NULL OR {_DIGIT.format(j)})"


def _is_string(j: str) -> str:
    return f"({j} IS NULL OR ascii({j}) = 34)"


def _is_bool(j: str) -> str:
    return f"({j} IS NULL OR {j} IN ('true', 'false'))"


def _is_int(j: str) -> str:
    return (
        f"({j} IS NULL OR ({_DIGIT.format(j)} AND NOT contains({j}, '.') "
        f"AND NOT contains(lower({j}), 'e')))"
    )


def _number(j: str) -> str:
    return f"CAST(CAST({j} AS VARCHAR) AS DOUBLE)"


def _string(j: str) -> str:
    return f"({j} ->> '$')"


def _in(values: Iterable[str]) -> str:
    return "(" + ", ".join(_quote(v) for v in sorted(values)) + ")"


_USAGE = (
    "STRUCT(input JSON, output JSON, input_tokens JSON, output_tokens JSON, "
    "prompt_tokens JSON, completion_tokens JSON)"
)
#: The fields of agentv's records read here, with the type DuckDB reads each as. JSON
#: keeps the value's own type, which is checked: DuckDB would quietly turn "0.5" or true
#: into a number, and 2.5 into the attempt 2.
_JSONL_COLUMNS = {
    "test_id": "JSON",
    "target": "JSON",
    "score": "JSON",
    "scores": "MAP(VARCHAR, JSON)",
    "passed": "JSON",
    "attempt": "JSON",
    "latency_ms": "JSON",
    "duration_ms": "JSON",
    "wait_ms": "JSON",
    "token_usage": _USAGE,
    "input_tokens": "JSON",
    "output_tokens": "JSON",
    "cost_usd": "JSON",
    "trace": f"STRUCT(duration_ms JSON, latency_ms JSON, token_usage {_USAGE}, cost_usd JSON)",
    "error": "JSON",
    "error_kind": "JSON",
    "execution_status": "JSON",
    "safety_failure": "JSON",
    "category": "JSON",
    "input": "JSON",
    "timestamp": "JSON",
}
#: Fields that only the general reader knows what to make of: any value sends the file
#: to the plain path.
_GENERAL_ONLY = (
    "eval_id",
    "testId",
    "tags",
    "start_time",
    "run_status",
    "config",
    "case_order",
    "sequential",
    "run_finished_at",
)
_NUMBERS = (
    "score",
    "latency_ms",
    "duration_ms",
    "wait_ms",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "trace.duration_ms",
    "trace.latency_ms",
    "trace.cost_usd",
    *(
        f"{usage}.{name}"
        for usage in ("token_usage", "trace.token_usage")
        for name in (
            "input",
            "output",
            "input_tokens",
            "output_tokens",
            "prompt_tokens",
            "completion_tokens",
        )
    ),
)


def _usage_tokens(names: tuple[str, ...]) -> str:
    usage = "coalesce(token_usage, trace.token_usage)"
    return "coalesce(" + ", ".join(_number(f"{usage}.{n}") for n in names) + ")"


@dataclass
class _Plan:
    """What one query asks for: the scorers (in order of first appearance) and the
    measured columns whose sums are taken in ascending order (see ``sum_by_cell``)."""

    scorers: list[str]
    sorted_sums: set[str] = field(default_factory=set)


def _jsonl_source(path: Path, gzip: bool) -> str:
    """The file as DuckDB reads it: one row per line, the fields read, typed."""
    columns = dict(_JSONL_COLUMNS)
    columns.update(dict.fromkeys(_GENERAL_ONLY, "JSON"))
    spec = ", ".join(f"{_quote(k)}: {_quote(v)}" for k, v in columns.items())
    return (
        f"read_json({_quote(str(path))}, format='newline_delimited', records=true, "
        f"compression={_quote('gzip' if gzip else 'none')}, "
        f"maximum_object_size={min(LIMITS.line_bytes + 1, 2**31 - 1)}, columns={{{spec}}})"
    )


def _jsonl_records(source: str, plan: _Plan) -> str:
    """The records of an agentv JSONL file in the common model's columns, one row each,
    with ``bad`` > 0 where a record needs the plain path."""
    known = " + ".join(f"map_contains(scores, {_quote(s)})::INT" for s in plan.scorers) or "0"
    checks = [
        "test_id IS NULL OR ascii(test_id) <> 34 OR test_id = '\"\"'",
        f"NOT {_is_string('target')} OR target = '\"\"'",
        *(f"NOT {_is_number(n)}" for n in _NUMBERS),
        f"NOT {_is_bool('passed')}",
        f"NOT {_is_int('attempt')}",
        f"NOT {_is_string('error_kind')}",
        f"NOT {_is_string('execution_status')}",
        f"NOT {_is_string('category')}",
        f"NOT {_is_string('timestamp')}",
        "safety_failure IS NOT NULL AND safety_failure NOT IN ('true', 'false') "
        f"AND NOT {_DIGIT.format('safety_failure')}",
        f"scores IS NOT NULL AND cardinality(scores) <> {known}",
        "scores IS NOT NULL AND "
        f"NOT list_bool_and(list_transform(map_values(scores), lambda v: {_is_number('v')}))",
        *(f"{name} IS NOT NULL" for name in _GENERAL_ONLY),
    ]
    status = "lower(execution_status ->> '$')"
    kind = "(error_kind ->> '$')"
    scorer_values = [_number(f"scores[{_quote(s)}]") for s in plan.scorers]
    any_scorer = " OR ".join(f"{v} IS NOT NULL" for v in scorer_values) or "false"
    return f"""
        SELECT
            {_string("test_id")} AS test_id,
            {_string("target")} AS target,
            row_number() OVER () AS rn,
            {_number("score")} AS raw_score,
            passed = 'true' AS passed,
            (error IS NOT NULL AND error NOT IN ('false', '""', '{{}}', '[]'))
                OR coalesce({status} IN {_in(ERROR_STATUSES)}, false) AS is_error,
            CASE WHEN {kind} IS NOT NULL THEN lower({kind}) = 'infra'
                 ELSE coalesce({status} IN {_in(INFRA_STATUSES)}, false) END AS infra,
            coalesce({_number("latency_ms")}, {_number("duration_ms")},
                     {_number("trace.duration_ms")}, {_number("trace.latency_ms")}) AS latency,
            {_number("wait_ms")} AS wait,
            coalesce({_number("cost_usd")}, {_number("trace.cost_usd")}) AS cost_usd,
            coalesce({_number("input_tokens")},
                     {_usage_tokens(("input", "input_tokens", "prompt_tokens"))}) AS input_tokens,
            coalesce({_number("output_tokens")},
                     {_usage_tokens(("output", "output_tokens", "completion_tokens"))})
                AS output_tokens,
            coalesce(safety_failure = 'true'
                     OR (ascii(safety_failure) BETWEEN 48 AND 57 OR ascii(safety_failure) = 45)
                        AND {_number("safety_failure")} <> 0, false) AS safety,
            {_string("category")} AS category,
            input,
            {_string("timestamp")} AS stamp,
            {any_scorer} AS any_scorer,
            {", ".join(f"{v} AS s{i}" for i, v in enumerate(scorer_values)) or "NULL AS s_none"},
            ({" OR ".join(f"({c})" for c in checks)})::INT AS bad
        FROM {source}
    """


def _grouped_query(records: str, plan: _Plan) -> str:
    """Per (test id, target): counts, firsts and the sums of every measured column."""
    measures = {
        "score": "score",
        "latency_ms": "net_latency",
        "cost_usd": "cost_usd",
        "input_tokens": "input_tokens",
        "output_tokens": "output_tokens",
        **{f"scorer:{s}": f"s{i}" for i, s in enumerate(plan.scorers)},
    }
    parts = []
    for i, (name, column) in enumerate(measures.items()):
        ok = f"NOT infra AND {column} IS NOT NULL"
        micro = f"round({column} * 1e6)"
        parts += [
            f"sum({micro}) FILTER (WHERE {ok}) AS m{i}_micro",
            f"count(*) FILTER (WHERE {ok}) AS m{i}_n",
            f"bool_and({micro} / 1e6 = {column}) FILTER (WHERE {ok}) AS m{i}_dec",
            f"sum(abs({micro})) FILTER (WHERE {ok}) AS m{i}_mag",
        ]
        if name in plan.sorted_sums:
            parts.append(f"list_sum(list_sort(list({column}) FILTER (WHERE {ok}))) AS m{i}_sorted")
    return f"""
        WITH raw AS ({records}),
        records AS (
            SELECT *,
                CASE WHEN raw_score IS NOT NULL THEN raw_score
                     WHEN is_error AND NOT any_scorer THEN 0.0 END AS score,
                CASE WHEN latency IS NULL THEN NULL
                     ELSE greatest(latency - coalesce(wait, 0.0), 0.0) END AS net_latency
            FROM raw
        )
        SELECT
            test_id, target,
            min(rn) AS first,
            count(*) AS attempts,
            count(*) FILTER (WHERE NOT infra) AS valid,
            count(*) FILTER (WHERE is_error) AS errors,
            count(*) FILTER (WHERE infra) AS infra,
            count(*) FILTER (WHERE NOT infra AND coalesce(passed, score >= $threshold))
                AS passes,
            bool_or(safety) AS safety,
            arg_min(category, rn) AS category,
            max(category) AS any_category,
            arg_min(input, rn) AS input,
            min(stamp) FILTER (WHERE stamp <> '') AS started,
            max(stamp) FILTER (WHERE stamp <> '') AS finished,
            sum(bad) + count(*) FILTER (WHERE score IS NULL OR NOT isfinite(score)
                OR abs(score) > 1e12 OR NOT isfinite(coalesce(latency, 0) + coalesce(wait, 0)
                + coalesce(cost_usd, 0) + coalesce(input_tokens, 0)
                + coalesce(output_tokens, 0))) AS bad,
            {", ".join(parts)}
        FROM records
        GROUP BY test_id, target
        ORDER BY first
    """


def _measure_names(plan: _Plan) -> list[str]:
    return [
        "score",
        "latency_ms",
        "cost_usd",
        "input_tokens",
        "output_tokens",
        *(f"scorer:{s}" for s in plan.scorers),
    ]


def grouped_jsonl(path: Path, head: bytes, pass_threshold: float, *, gzip: bool) -> Run:
    """The run of a large agentv JSONL file, grouped per case and target in SQL.

    Raises:
        Fallback: the plain path must read the file (see the module's docstring).
    """
    import duckdb

    plan = _Plan(scorers=_head_scorers(head), sorted_sums=_head_sorted(head))
    source = _jsonl_source(path, gzip)
    con = connect()
    try:
        for _ in range(3):
            try:
                return _grouped_run(con, source, _jsonl_records(source, plan), plan, path,
                                    pass_threshold)
            except _Replan as again:
                if again.scorers is not None:
                    plan.scorers = again.scorers
                plan.sorted_sums |= again.sorted_sums
        raise Fallback("the plan did not settle")
    except duckdb.Error as exc:
        raise Fallback(str(exc)) from exc
    finally:
        con.close()


class _Replan(Exception):
    """The query must run again: with these scorers, or these columns' sums sorted."""

    def __init__(self, scorers: list[str] | None = None, sorted_sums: set[str] | None = None):
        self.scorers = scorers
        self.sorted_sums = sorted_sums or set()


def _grouped_run(
    con: duckdb.DuckDBPyConnection,
    source: str,
    records: str,
    plan: _Plan,
    path: Path,
    pass_threshold: float,
) -> Run:
    import numpy as np

    from evaldelta.model import CaseTotals, Run
    from evaldelta.pairing._cases import DECIMAL_LIMIT, DECIMAL_SCALE

    threshold = pass_threshold - 1e-12
    cols = con.execute(_grouped_query(records, plan), {"threshold": threshold}).fetchnumpy()
    if not len(cols["test_id"]):
        raise Fallback("no records")
    if int(np.asarray(cols["bad"]).sum()):
        found = _all_scorers(con, source)
        if set(found) - set(plan.scorers):
            raise _Replan(scorers=found)
        raise Fallback("records the plain path must read")
    names = _measure_names(plan)
    target_col = _strings(cols["target"])
    target_names = list(dict.fromkeys(target_col))
    if None in target_names and len(target_names) > 1:
        raise Fallback("records without a target beside targets")
    target_of = {t: i for i, t in enumerate(target_names)}
    target_index = np.fromiter(map(target_of.__getitem__, target_col), np.int64, len(target_col))
    sums: dict[str, Any] = {}
    counts: dict[str, Any] = {}
    resort: set[str] = set()
    k = len(target_names)
    for i, name in enumerate(names):
        n = np.asarray(cols[f"m{i}_n"], dtype=np.int64)
        decimal = _filled(cols[f"m{i}_dec"], True, np.bool_)
        magnitude = _filled(cols[f"m{i}_mag"], 0.0, np.float64)
        bad_target = np.bincount(
            target_index, weights=(~decimal | (magnitude >= DECIMAL_LIMIT)) & (n > 0), minlength=k
        )
        by_sort = (bad_target > 0)[target_index]
        total = _filled(cols[f"m{i}_micro"], 0.0, np.float64) / DECIMAL_SCALE
        if by_sort.any():
            if name not in plan.sorted_sums:
                resort.add(name)
                continue
            ordered = _filled(cols[f"m{i}_sorted"], 0.0, np.float64)
            total = np.where(by_sort, ordered, total)
        sums[name] = total
        counts[name] = n
    if resort:
        raise _Replan(sorted_sums=resort)

    test_col = _strings(cols["test_id"])
    if any(not t.strip() for t in set(test_col)):
        raise Fallback("a test id of white space only")
    test_ids = list(dict.fromkeys(test_col))
    test_of = {t: i for i, t in enumerate(test_ids)}
    test_index = np.fromiter(map(test_of.__getitem__, test_col), np.int64, len(test_col))
    firsts = _strings(cols["category"])
    anys = _strings(cols["any_category"])
    categories = list(dict.fromkeys(c for c in firsts if c is not None))
    category_of = {c: i for i, c in enumerate(categories)}
    category_index = np.asarray([category_of.get(c, -1) for c in firsts], dtype=np.int64)
    # A category on later records only: the run has categories all the same.
    categories += [c for c in dict.fromkeys(a for a in anys if a is not None) if c not in category_of]
    rows = len(test_col)
    nan = np.full(rows, np.nan)
    scores = sums["score"] / np.maximum(counts["score"], 1)
    started = [s for s in _strings(cols["started"]) if s is not None]
    finished = [s for s in _strings(cols["finished"]) if s is not None]
    totals = CaseTotals(
        pass_threshold=pass_threshold,
        first=np.asarray(cols["first"], dtype=np.int64),
        attempts=np.asarray(cols["attempts"], dtype=np.int64),
        valid=np.asarray(cols["valid"], dtype=np.int64),
        errors=np.asarray(cols["errors"], dtype=np.int64),
        infra=np.asarray(cols["infra"], dtype=np.int64),
        passes=np.asarray(cols["passes"], dtype=np.int64),
        safety=np.asarray(cols["safety"], dtype=np.bool_),
        sums=sums,
        counts=counts,
    )
    return Run(
        source=str(path),
        format="jsonl",
        status="complete",
        config={},
        started_at=min(started) if started else None,
        finished_at=max(finished) if finished else None,
        input_hash=_fingerprints(_strings(cols["input"])),
        extra={},
        test_ids=test_ids,
        targets=target_names,
        categories=categories,
        test_index=test_index,
        target_index=target_index,
        category_index=category_index,
        score=scores,
        passed=np.full(rows, -1, dtype=np.int64),
        attempt=np.ones(rows, dtype=np.int64),
        latency_ms=nan,
        wait_ms=nan,
        input_tokens=nan,
        output_tokens=nan,
        cost_usd=nan,
        is_error=totals.errors > 0,
        safety_failure=totals.safety,
        errors={},
        error_kinds={},
        tags={},
        scorer_scores={s: np.full(rows, np.nan) for s in plan.scorers},
        texts=None,
        lines=None,
        totals=totals,
    )


def _filled(values: Any, fill: Any, dtype: Any) -> Any:
    """A column fetched from DuckDB, its NULLs (a masked array) given ``fill``."""
    import numpy as np

    if isinstance(values, np.ma.MaskedArray):
        return values.filled(fill).astype(dtype, copy=False)
    return np.asarray(values, dtype=dtype)


def _strings(values: Any) -> list[Any]:
    """A column of text fetched from DuckDB, ``None`` where it is NULL."""
    import numpy as np

    if isinstance(values, np.ma.MaskedArray):
        data = values.data.tolist()
        mask = np.ma.getmaskarray(values).tolist()
        return [None if m else v for v, m in zip(data, mask, strict=True)]
    return [None if v is None else v for v in values.tolist()]


def _fingerprints(inputs: list[Any]) -> Any:
    """The input fingerprint of each case's first record, from its JSON text (see
    :func:`evaldelta.io._source.fingerprint_bytes`)."""
    import msgspec
    import numpy as np

    table: dict[Any, int] = {}
    for raw in dict.fromkeys(inputs):
        if raw is None:
            table[raw] = 0
            continue
        value = msgspec.json.decode(raw)
        if value is None:
            table[raw] = 0
        elif isinstance(value, str):
            table[raw] = zlib.crc32(value.encode("utf-8", "surrogatepass")) or 1
        else:
            table[raw] = crc_of(msgspec.json.encode(value, order="sorted"))
    return np.asarray(list(map(table.__getitem__, inputs)), dtype=np.int64)


def _all_scorers(con: duckdb.DuckDBPyConnection, source: str) -> list[str]:
    """Every scorer named in the file, in order of first appearance."""
    rows = con.execute(
        f"""
        SELECT name FROM (
            SELECT unnest(map_keys(scores)) AS name,
                   unnest(generate_series(1, cardinality(scores))) AS place, rn
            FROM (SELECT scores, row_number() OVER () AS rn FROM {source})
            WHERE scores IS NOT NULL)
        GROUP BY name ORDER BY min(rn * 100000 + place)
        """
    ).fetchall()
    return [str(r[0]) for r in rows]


def _head_records(head: bytes) -> list[dict[str, Any]]:
    """The whole records of the file's first bytes, leniently decoded."""
    import msgspec

    out = []
    for line in head.split(b"\n")[:-1]:
        try:
            value = msgspec.json.decode(line)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _head_scorers(head: bytes) -> list[str]:
    """The scorers named in the file's first records, in order of first appearance."""
    names: dict[str, None] = {}
    for record in _head_records(head):
        scores = record.get("scores")
        if isinstance(scores, dict):
            names.update(dict.fromkeys(scores))
    return list(names)


def _head_sorted(head: bytes) -> set[str]:
    """The measured columns whose first values are not all multiples of 1e-6: their
    sums are taken in ascending order from the first query on."""
    from evaldelta.pairing._cases import DECIMAL_SCALE

    def decimal(value: Any) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return True
        return round(value * DECIMAL_SCALE) / DECIMAL_SCALE == value

    out: set[str] = set()
    for record in _head_records(head):
        for name in ("score", "latency_ms", "wait_ms", "cost_usd", "input_tokens", "output_tokens"):
            if not decimal(record.get(name)):
                out.add("latency_ms" if name == "wait_ms" else name)
        scores = record.get("scores")
        if isinstance(scores, dict):
            out.update(f"scorer:{k}" for k, v in scores.items() if not decimal(v))
    return out
