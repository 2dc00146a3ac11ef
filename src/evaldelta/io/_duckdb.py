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
which reads it or names what is wrong by file and line (:class:`FallbackError`). Sums over a
case's attempts are taken as :func:`evaldelta.pairing._cases.sum_by_cell` takes them,
whatever the order DuckDB's threads add in.

``duckdb`` is imported here only, when a large file (or a Parquet one) is read.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaldelta.io._agentv import (
    ERROR_STATUSES,
    INFRA_STATUSES,
    INTERRUPTED_STATUSES,
    STOPPED_EARLY,
)
from evaldelta.io._source import ENGINE, ENGINE_MAX_LINE, LIMITS, Engine, crc_of

if TYPE_CHECKING:
    import duckdb

    from evaldelta.model import Run

__all__ = ["ENGINE", "Engine", "FallbackError", "connect", "grouped_jsonl"]


class FallbackError(Exception):
    """The DuckDB path cannot give exactly what the plain path gives: read the file the
    plain way (which reads it, or names what is wrong with it by line)."""


#: DuckDB's own memory, at most: past it, what it can it writes to a temporary folder
#: (removed after), and what it cannot sends the file to the plain path. The JSON
#: reader's buffers and the groups of a million cases fit (256 MB did not, always);
#: memory then grows with the cases evaldelta keeps, not with DuckDB's appetite (by
#: default, 80% of the machine).
MEMORY_LIMIT = "512MB"


@contextmanager
def connect() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory DuckDB (imported now: nothing else in evaldelta imports it), closed
    after, with its memory bounded (:data:`MEMORY_LIMIT`) and a folder to spill to."""
    import tempfile

    import duckdb

    with tempfile.TemporaryDirectory(prefix="evaldelta-duckdb-") as spill:
        con = duckdb.connect(":memory:", config={"preserve_insertion_order": True})
        try:
            con.execute("SET enable_progress_bar = false")
            con.execute(f"SET memory_limit = {_quote(MEMORY_LIMIT)}")
            con.execute(f"SET temp_directory = {_quote(spill)}")
            yield con
        finally:
            con.close()


def _quote(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# -- the JSON type of a value, from its first character (DuckDB writes JSON minified) --

_DIGIT = "(ascii({0}) BETWEEN 48 AND 57 OR ascii({0}) = 45)"


def _is_number(j: str) -> str:
    return f"({j} IS NULL OR ({_DIGIT.format(j)} AND {_number(j)} IS NOT NULL))"


def _is_string(j: str) -> str:
    return f"({j} IS NULL OR ascii({j}) = 34)"


def _is_bool(j: str) -> str:
    return f"({j} IS NULL OR {j} IN ('true', 'false'))"


def _is_int(j: str) -> str:
    # Within 64 bits, as the plain path's column of attempts (it refuses any other).
    return (
        f"({j} IS NULL OR ({_DIGIT.format(j)} AND NOT contains({j}, '.') "
        f"AND NOT contains(lower({j}), 'e') "
        f"AND TRY_CAST(CAST({j} AS VARCHAR) AS BIGINT) IS NOT NULL))"
    )


def _number(j: str) -> str:
    # TRY_: SQL does not stop at a false AND; a value that is no number is caught apart.
    return f"TRY_CAST(CAST({j} AS VARCHAR) AS DOUBLE)"


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
    "scores": "JSON",
    "passed": "JSON",
    "attempt": "JSON",
    "latency_ms": "JSON",
    "category": "JSON",
    "input": "JSON",
    "timestamp": "JSON",
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
    "config": "JSON",
    "run_status": "JSON",
}
#: Fields that only the general reader knows what to make of: any value sends the file
#: to the plain path.
_GENERAL_ONLY = (
    "eval_id",
    "testId",
    "tags",
    "start_time",
    "case_order",
    "sequential",
    "run_finished_at",
)
#: Optional fields, by group: a query reads only the groups the file's first records
#: have, and notes any record that has another (it is then read again, with it).
_GROUPS: dict[str, tuple[str, ...]] = {
    "errors": ("error", "error_kind", "execution_status"),
    "duration": ("duration_ms",),
    "wait": ("wait_ms",),
    "tokens": ("input_tokens", "output_tokens", "token_usage"),
    "cost": ("cost_usd",),
    "trace": ("trace",),
    "safety": ("safety_failure",),
    "run": ("config", "run_status"),
    "category": ("category",),
    "stamp": ("timestamp",),
}
_TOKEN_NAMES = ("input", "output", "input_tokens", "output_tokens", "prompt_tokens",
                "completion_tokens")  # fmt: skip
#: The bits of a record's ``mask``: what sends the file to the plain path, what makes
#: the query run again, and, from bit 16 on, each measured column's value that is not a
#: multiple of 1e-6 (see :func:`evaldelta.pairing._cases.sum_by_cell`).
_WRONG = 1
_GENERAL = 2
_UNKNOWN_SCORER = 4
_GROUP_BIT = {name: 8 << i for i, name in enumerate(_GROUPS)}
_MEASURE_SHIFT = 16
_MAX_MEASURES = 46


@dataclass
class _Plan:
    """What one query reads: the optional groups of fields, the scorers (in order of
    first appearance), and the measured columns whose sums are taken in ascending order
    (see ``sum_by_cell``)."""

    groups: set[str]
    scorers: list[str]
    sorted_sums: set[str] = field(default_factory=set)

    def measures(self) -> dict[str, str]:
        """Measured column -> the column of the records that holds it."""
        out = {"score": "score", "latency_ms": "net_latency"}
        if "cost" in self.groups or "trace" in self.groups:
            out["cost_usd"] = "cost_usd"
        if "tokens" in self.groups or "trace" in self.groups:
            out["input_tokens"] = "input_tokens"
            out["output_tokens"] = "output_tokens"
        out.update({f"scorer:{s}": f"s{i}" for i, s in enumerate(self.scorers)})
        return out


def _jsonl_source(path: Path, gzip: bool, *, slim: bool = False) -> str:
    """The file as DuckDB reads it: one row per line, the fields read, typed (``slim``:
    the test id and target only)."""
    columns = dict(_JSONL_COLUMNS)
    columns.update(dict.fromkeys(_GENERAL_ONLY, "JSON"))
    if slim:
        columns = {"test_id": "JSON", "target": "JSON"}
    spec = ", ".join(f"{_quote(k)}: {_quote(v)}" for k, v in columns.items())
    return (
        f"read_json({_quote(str(path))}, format='newline_delimited', records=true, "
        f"compression={_quote('gzip' if gzip else 'none')}, "
        f"maximum_object_size={_max_line()}, columns={{{spec}}})"
    )


#: A record's ``config`` when Python would find it true (the plain path takes the first
#: such): no empty object, list or text, no 0, no false.
_RUN_CONFIG = (
    "CASE WHEN config IS NULL OR config IN ('{}', '[]', '\"\"', 'false') "
    f"OR ({_DIGIT.format('config')} AND {_number('config')} = 0) THEN NULL "
    "ELSE config END"
)


def _max_line() -> int:
    """The longest line DuckDB reads (see ``ENGINE_MAX_LINE``)."""
    return min(LIMITS.line_bytes + 1, ENGINE_MAX_LINE)


def _any(conditions: Iterable[str]) -> str:
    found = [f"({c})" for c in conditions]
    return " OR ".join(found) if found else "false"


def _pointer(name: str) -> str:
    """A scorer's JSON pointer (``/name``, with ``~`` and ``/`` escaped)."""
    return "/" + name.replace("~", "~0").replace("/", "~1")


def _jsonl_records(source: str, plan: _Plan) -> str:
    """The records of an agentv JSONL file in the common model's columns, one row each,
    with the ``mask`` of what each needs (see ``_WRONG`` and the other bits). Text is
    kept as its JSON (test ids and targets are grouped by it, and decoded once per case)."""
    groups = plan.groups
    numbers = ["score", "latency_ms"]
    if "duration" in groups:
        numbers.append("duration_ms")
    if "wait" in groups:
        numbers.append("wait_ms")
    if "cost" in groups:
        numbers.append("cost_usd")
    if "tokens" in groups:
        numbers += ["input_tokens", "output_tokens", *(f"token_usage.{n}" for n in _TOKEN_NAMES)]
    if "trace" in groups:
        numbers += ["trace.duration_ms", "trace.latency_ms", "trace.cost_usd",
                    *(f"trace.token_usage.{n}" for n in _TOKEN_NAMES)]  # fmt: skip
    # A scorer's value: JSON null is no value, as an absent one.
    scorer_json = [f"nullif(scorer_values[{i + 1}], 'null')" for i in range(len(plan.scorers))]
    # Each number is cast once, in the inner query, and checked and used by its alias.
    alias = {n: f"n{k}" for k, n in enumerate([*numbers, *scorer_json])}

    def num(j: str) -> str:
        return alias.get(j) or _number(j)

    def is_number(j: str) -> str:
        # The JSON of a number is all a cast to DOUBLE takes: a string keeps its quotes.
        return f"({j} IS NULL OR {num(j)} IS NOT NULL)"

    known = "[" + ", ".join(_quote(s) for s in plan.scorers) + "]"
    no_scores = "scores IS NULL OR scores = 'null'"
    wrong = [
        "test_id IS NULL OR ascii(test_id) <> 34 OR test_id = '\"\"'",
        f"NOT {_is_string('target')} OR target = '\"\"'",
        *(f"NOT {is_number(n)}" for n in [*numbers, *scorer_json]),
        f"NOT {_is_bool('passed')}",
        f"NOT {_is_int('attempt')}",
        # agentv's list of scorers, a scorer named twice: the general path knows them.
        f"NOT ({no_scores}) AND (ascii(scores) <> 123 "
        "OR len(scorer_names) <> len(list_distinct(scorer_names)))",
    ]
    if "category" in groups:
        wrong.append(f"NOT {_is_string('category')}")
    if "stamp" in groups:
        # Stamps are compared as their JSON: no escapes, which would change the order.
        wrong.append(f"NOT {_is_string('timestamp')} OR contains(timestamp, '\\\\')")
    if "errors" in groups:
        wrong += [f"NOT {_is_string('error_kind')}", f"NOT {_is_string('execution_status')}"]
    if "safety" in groups:
        wrong.append(
            "safety_failure IS NOT NULL AND safety_failure NOT IN ('true', 'false') "
            f"AND NOT {_DIGIT.format('safety_failure')}"
        )
    bits = [
        f"CASE WHEN {_any(wrong)} THEN {_WRONG} ELSE 0 END",
        f"CASE WHEN {_any(f'{n} IS NOT NULL' for n in _GENERAL_ONLY)} THEN {_GENERAL} ELSE 0 END",
        f"CASE WHEN NOT ({no_scores}) AND NOT list_has_all({known}, scorer_names) "
        f"THEN {_UNKNOWN_SCORER} ELSE 0 END",
        *(
            f"CASE WHEN {_any(f'{n} IS NOT NULL' for n in fields)} THEN {_GROUP_BIT[g]} ELSE 0 END"
            for g, fields in _GROUPS.items()
            if g not in groups
        ),
    ]
    if "errors" in groups:
        status = "lower(execution_status ->> '$')"
        kind = "(error_kind ->> '$')"
        is_error = (
            "(error IS NOT NULL AND error NOT IN ('false', '\"\"', '{}', '[]')) "
            f"OR coalesce({status} IN {_in(ERROR_STATUSES)}, false)"
        )
        infra = (
            f"CASE WHEN {kind} IS NOT NULL THEN lower({kind}) = 'infra' "
            f"ELSE coalesce({status} IN {_in(INFRA_STATUSES)}, false) END"
        )
    else:
        is_error = infra = "false"
    latency = ["latency_ms"] + (["duration_ms"] if "duration" in groups else [])
    latency += ["trace.duration_ms", "trace.latency_ms"] if "trace" in groups else []
    usage = "coalesce(token_usage, trace.token_usage)" if "trace" in groups else "token_usage"

    def tokens(own: str, names: tuple[str, ...]) -> str:
        if "tokens" not in groups and "trace" not in groups:
            return "NULL::DOUBLE"
        parts = [own] if "tokens" in groups else []
        return (
            "coalesce("
            + ", ".join([*(num(p) for p in parts), *(_number(f"{usage}.{n}") for n in names)])
            + ")"
        )

    cost = ["cost_usd"] if "cost" in groups else []
    cost += ["trace.cost_usd"] if "trace" in groups else []
    safety = (
        "coalesce(safety_failure = 'true' OR "
        f"({_DIGIT.format('safety_failure')} AND {_number('safety_failure')} <> 0), false)"
        if "safety" in groups
        else "false"
    )
    any_scorer = " OR ".join(f"{j} IS NOT NULL" for j in scorer_json) or "false"
    casts = ", ".join(f"{_number(n)} AS {a}" for n, a in alias.items())
    if "run" in groups:
        config = _RUN_CONFIG
        status = "lower(run_status ->> '$')"
    else:
        config = status = "NULL"
    pointers = "[" + ", ".join(_quote(_pointer(s)) for s in plan.scorers) + "]"
    values = (
        f"CASE WHEN {no_scores} THEN NULL ELSE json_extract(scores, {pointers}) END"
        if plan.scorers
        else "NULL::JSON[]"
    )
    return f"""
        SELECT
            test_id,
            target,
            hash(test_id, target) AS cell,
            {num("score")} AS raw_score,
            passed = 'true' AS passed,
            {is_error} AS is_error,
            {infra} AS infra,
            coalesce({", ".join(num(n) for n in latency)}) AS latency,
            {num("wait_ms") if "wait" in groups else "NULL::DOUBLE"} AS wait,
            {"coalesce(" + ", ".join(num(c) for c in cost) + ")" if cost else "NULL::DOUBLE"}
                AS cost_usd,
            {tokens("input_tokens", ("input", "input_tokens", "prompt_tokens"))} AS input_tokens,
            {tokens("output_tokens", ("output", "output_tokens", "completion_tokens"))}
                AS output_tokens,
            {safety} AS safety,
            {"category" if "category" in groups else "NULL::JSON"} AS category,
            input,
            {"timestamp" if "stamp" in groups else "NULL::JSON"} AS stamp,
            {any_scorer} AS any_scorer,
            {config} AS config,
            {status} AS run_status,
            {", ".join(f"{num(j)} AS s{i}" for i, j in enumerate(scorer_json)) or "NULL AS s_"},
            {" | ".join(bits)} AS mask
        FROM (
            SELECT *, {casts} FROM (
                SELECT *,
                    CASE WHEN scores IS NULL OR scores = 'null' THEN []
                         ELSE json_keys(scores) END AS scorer_names,
                    {values} AS scorer_values
                FROM {source}
            )
        )
    """


def _grouped_query(records: str, plan: _Plan) -> str:
    """Per (test id, target): counts, firsts and the sums of every measured column; the
    groups of fields the file does not have are left out. What each record adds is worked
    out before the grouping (an aggregate with a filter costs more than a plain one)."""
    groups = plan.groups
    measures = plan.measures()
    values = []  # per record, before the grouping
    parts = []  # per case
    decimal_bits = []
    for i, (name, column) in enumerate(measures.items()):
        values.append(f"CASE WHEN NOT infra THEN {column} END AS v{i}")
        parts += [f"sum(round(v{i} * 1e6)) AS m{i}_micro", f"count(v{i}) AS m{i}_n"]
        decimal_bits.append(
            f"CASE WHEN round(v{i} * 1e6) / 1e6 = v{i} AND abs(v{i}) <= 1e8 OR v{i} IS NULL "
            f"THEN 0 ELSE {1 << (_MEASURE_SHIFT + i)} END"
        )
        if name in plan.sorted_sums:
            parts.append(f"list_sum(list_sort(list(v{i}))) AS m{i}_sorted")
    if "errors" in groups:
        parts += [
            "count(*) - sum(infra::INT) AS valid",
            "sum(is_error::INT) AS errors",
            "sum(infra::INT) AS infra",
        ]
    if "safety" in groups:
        parts.append("bool_or(safety) AS safety")
    if "category" in groups:
        parts += [
            "any_value(category) AS category",
            "min(category) AS category_low",
            "max(category) AS category_high",
            "count(category) AS category_n",
        ]
    if "run" in groups:
        values.append("hash(config) AS config_hash")
        parts += [
            "any_value(config) AS config",
            "min(config_hash) FILTER (WHERE config IS NOT NULL) AS config_low",
            "max(config_hash) FILTER (WHERE config IS NOT NULL) AS config_high",
            f"bool_or(run_status IN {_in(INTERRUPTED_STATUSES)}) AS interrupted",
            f"bool_or(run_status = {_quote(STOPPED_EARLY)}) AS stopped_early",
        ]
    if "stamp" in groups:
        values.append("nullif(stamp, '\"\"') AS stamp_set")
        parts += ["min(stamp_set) AS started", "max(stamp_set) AS finished"]
    finite = " + ".join(
        f"coalesce({c}, 0)" for c in ("latency", "wait", "cost_usd", "input_tokens",
                                      "output_tokens", *(f"s{i}" for i in range(len(plan.scorers))))
    )  # fmt: skip
    return f"""
        WITH raw AS NOT MATERIALIZED ({records}),
        scored AS NOT MATERIALIZED (
            SELECT *,
                CASE WHEN raw_score IS NOT NULL THEN raw_score
                     WHEN is_error AND NOT any_scorer THEN 0.0 END AS score,
                CASE WHEN latency IS NULL THEN NULL
                     ELSE greatest(latency - coalesce(wait, 0.0), 0.0) END AS net_latency
            FROM raw
        ),
        records AS NOT MATERIALIZED (
            SELECT test_id, target, cell, input, category, config, run_status, stamp, safety,
                is_error, infra,
                (NOT infra AND coalesce(passed, score >= $threshold))::INT AS passing,
                CASE WHEN input IS NOT NULL THEN hash(input) END AS input_hash,
                mask | CASE WHEN score IS NULL OR NOT isfinite(score) OR abs(score) > 1e12
                    OR NOT isfinite({finite}) THEN {_WRONG} ELSE 0 END AS checked,
                {", ".join(values)}
            FROM scored
        )
        SELECT
            test_id, target,
            test_id ->> '$' AS test_text,
            target ->> '$' AS target_text,
            min(cell) AS cell,
            count(*) AS attempts,
            sum(passing) AS passes,
            any_value(input) AS input,
            min(input_hash) AS input_low,
            max(input_hash) AS input_high,
            count(input) AS input_n,
            bit_or(checked | {" | ".join(decimal_bits)}) AS mask,
            {", ".join(parts)}
        FROM records
        GROUP BY test_id, target
    """


def _order_query(path: Path, gzip: bool) -> str:
    """The cell of every record, in the order of the file: where each case first
    appears, without a window over the records (which would read the file on one
    thread); only the two fields it needs are read."""
    return f"SELECT hash(test_id, target) AS cell FROM {_jsonl_source(path, gzip, slim=True)}"


def _firsts_query(source: str) -> str:
    """The category and input of each case's first record, for a file whose attempts
    of one case do not all agree on them (read in order, so on one thread)."""
    return f"""
        SELECT test_id, target,
               arg_min_null(category, ordinality) AS category,
               arg_min_null(input, ordinality) AS input
        FROM {source} WITH ORDINALITY
        GROUP BY ALL
    """


def grouped_jsonl(path: Path, head: bytes, pass_threshold: float, *, gzip: bool) -> Run:
    """The run of a large agentv JSONL file, grouped per case and target in SQL.

    Raises:
        FallbackError: the plain path must read the file (see the module's docstring).
    """
    import duckdb

    records = _head_records(head)
    plan = _Plan(
        groups={g for g, fields in _GROUPS.items() if _head_has(records, fields)},
        scorers=_head_scorers(records),
        sorted_sums=_head_sorted(records),
    )
    source = _jsonl_source(path, gzip)
    try:
        with connect() as con:
            return _settled_run(con, source, plan, path, pass_threshold, gzip)
    except duckdb.Error as exc:
        raise FallbackError(str(exc)) from exc


def _settled_run(
    con: duckdb.DuckDBPyConnection,
    source: str,
    plan: _Plan,
    path: Path,
    pass_threshold: float,
    gzip: bool,
) -> Run:
    """The grouped run, once the plan settles: the query runs again with what it learnt
    (groups of fields, scorers, sums to take in order) at most a few times."""
    for _ in range(4):
        try:
            return _grouped_run(
                con,
                source,
                _jsonl_records(source, plan),
                plan,
                path,
                pass_threshold,
                _order_query(path, gzip),
            )
        except _ReplanError as again:
            plan.groups |= again.groups
            plan.scorers = again.scorers or plan.scorers
            plan.sorted_sums |= again.sorted_sums
    raise FallbackError("the plan did not settle")


class _ReplanError(Exception):
    """The query must run again: with more groups of fields, other scorers, or these
    columns' sums sorted."""

    def __init__(
        self,
        groups: set[str] | None = None,
        scorers: list[str] | None = None,
        sorted_sums: set[str] | None = None,
    ) -> None:
        self.groups = groups or set()
        self.scorers = scorers
        self.sorted_sums = sorted_sums or set()


def _grouped_run(
    con: duckdb.DuckDBPyConnection,
    source: str,
    records: str,
    plan: _Plan,
    path: Path,
    pass_threshold: float,
    order_query: str,
) -> Run:
    import numpy as np

    from evaldelta.model import DECIMAL_MAX_COUNT, DECIMAL_SCALE, CaseTotals, Run

    measures = plan.measures()
    if len(measures) > _MAX_MEASURES:
        raise FallbackError("more scorers than one query sums")
    threshold = pass_threshold - 1e-12
    # The groups need no order (the cells' order comes from the order query): DuckDB
    # then holds no rows back to keep it.
    con.execute("SET preserve_insertion_order = false")
    cols = con.execute(_grouped_query(records, plan), {"threshold": threshold}).fetchnumpy()
    con.execute("SET preserve_insertion_order = true")
    if not len(cols["test_id"]):
        raise FallbackError("no records")
    masks = np.asarray(cols["mask"], dtype=np.int64)
    seen = int(np.bitwise_or.reduce(masks))
    if seen & (_WRONG | _GENERAL):
        raise FallbackError("records the plain path must read")
    missing = {g for g, bit in _GROUP_BIT.items() if seen & bit}
    if seen & _UNKNOWN_SCORER or missing:
        scorers = _all_scorers(con, source) if seen & _UNKNOWN_SCORER else None
        raise _ReplanError(groups=missing, scorers=scorers)
    first = _first_positions(con, order_query, cols)
    order = np.argsort(first, kind="stable")
    for name in list(cols):  # one column at a time: never two copies of them all
        cols[name] = cols[name][order]
    masks = masks[order]
    first = first[order]
    rows = len(first)
    _fill_absent(cols, plan, rows)
    _settle_firsts(con, source, cols)
    target_col = _strings(cols["target_text"])
    test_col = _strings(cols["test_text"])
    if len(set(zip(test_col, target_col, strict=True))) != rows:
        raise FallbackError("one case's test id or target written in two ways")
    target_names = list(dict.fromkeys(target_col))
    if None in target_names and len(target_names) > 1:
        raise FallbackError("records without a target beside targets")
    target_of = {t: i for i, t in enumerate(target_names)}
    target_index = np.fromiter(map(target_of.__getitem__, target_col), np.int64, len(target_col))
    sums: dict[str, Any] = {}
    counts: dict[str, Any] = {}
    resort: set[str] = set()
    k = len(target_names)
    for i, name in enumerate(measures):
        n = np.asarray(cols[f"m{i}_n"], dtype=np.int64)
        # Per target, as sum_by_cell decides: values not multiples of 1e-6 (or too
        # large), or a cell with too many of them, and its sums are taken in order.
        odd = ((masks >> (_MEASURE_SHIFT + i)) & 1).astype(np.bool_) | (n > DECIMAL_MAX_COUNT)
        by_sort = (np.bincount(target_index, weights=odd, minlength=k) > 0)[target_index]
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
        raise _ReplanError(sorted_sums=resort)

    if any(not t.strip() for t in set(test_col)):
        raise FallbackError("a test id of white space only")
    test_ids = list(dict.fromkeys(test_col))
    test_of = {t: i for i, t in enumerate(test_ids)}
    test_index = np.fromiter(map(test_of.__getitem__, test_col), np.int64, len(test_col))
    firsts = _decoded(cols["category"])
    anys = _decoded(cols["category_high"])
    categories = list(dict.fromkeys(c for c in firsts if c is not None))
    category_of = {c: i for i, c in enumerate(categories)}
    category_index = np.asarray([category_of.get(c, -1) for c in firsts], dtype=np.int64)
    # A category on later records only: the run has categories all the same.
    categories += [
        c for c in dict.fromkeys(a for a in anys if a is not None) if c not in category_of
    ]
    nan = np.full(rows, np.nan)
    scores = sums["score"] / np.maximum(counts["score"], 1)
    started = [s for s in _decoded(cols["started"]) if s is not None]
    config, status = _run_facts(con, source, cols)
    finished = [s for s in _decoded(cols["finished"]) if s is not None]
    totals = CaseTotals(
        pass_threshold=pass_threshold,
        first=first,
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
        status=status,
        config=config,
        started_at=min(started) if started else None,
        finished_at=max(finished) if finished else None,
        input_hash=_fingerprints(_strings(cols.pop("input"))),
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


def _run_facts(
    con: duckdb.DuckDBPyConnection, source: str, cols: dict[str, Any]
) -> tuple[dict[str, Any], str]:
    """The run's config (the first one a record declares, as the plain path takes it)
    and status."""
    import msgspec
    import numpy as np

    interrupted = _filled(cols["interrupted"], False, np.bool_).any()
    stopped = _filled(cols["stopped_early"], False, np.bool_).any()
    status = "interrupted" if interrupted else STOPPED_EARLY if stopped else "complete"
    low = np.ma.getdata(cols["config_low"])[~np.ma.getmaskarray(cols["config_low"])]
    high = np.ma.getdata(cols["config_high"])[~np.ma.getmaskarray(cols["config_high"])]
    if not low.shape[0]:
        return {}, status
    if (low != low[0]).any() or (high != low[0]).any():
        # Records declare different configs: the first one in the file is the run's.
        row = con.execute(
            f"SELECT config FROM (SELECT {_RUN_CONFIG} AS config, ordinality FROM {source} "
            "WITH ORDINALITY) WHERE config IS NOT NULL ORDER BY ordinality LIMIT 1"
        ).fetchone()
        raw = row[0] if row else None
    else:
        raw = next(c for c in _strings(cols["config"]) if c is not None)
    found = msgspec.json.decode(raw) if raw is not None else None
    if found is None:
        return {}, status
    return (found if isinstance(found, dict) else {"config": found}), status


def _first_positions(con: duckdb.DuckDBPyConnection, order_query: str, cols: dict[str, Any]) -> Any:
    """Where each cell's first record is in the file, from the cells of the records in
    the order of the file (a 64-bit hash of the test id and target each)."""
    import numpy as np

    cells = np.asarray(cols["cell"], dtype=np.uint64)
    stream = con.execute(order_query).fetchnumpy()["cell"]
    keys, first = np.unique(np.asarray(stream, dtype=np.uint64), return_index=True)
    if keys.shape[0] != cells.shape[0]:
        raise FallbackError("two cases share a key")  # a hash collision: never in practice
    where = np.searchsorted(keys, cells)
    if (where >= keys.shape[0]).any() or (
        keys[np.minimum(where, keys.shape[0] - 1)] != cells
    ).any():
        raise FallbackError("a case without records")
    out: Any = first[where].astype(np.int64)
    return out


def _settle_firsts(con: duckdb.DuckDBPyConnection, source: str, cols: dict[str, Any]) -> None:
    """Each case's category and input as its first record has them: the one value its
    records agree on (every record has it, or none does), else read in order."""
    import numpy as np

    attempts = np.asarray(cols["attempts"], dtype=np.int64)
    agree = np.ones(attempts.shape[0], dtype=np.bool_)
    for name in ("category", "input"):
        if f"{name}_n" not in cols:
            continue
        n = np.asarray(cols[f"{name}_n"], dtype=np.int64)
        # (Never iterate a masked array: each element costs microseconds.)
        low, high = np.ma.getdata(cols[f"{name}_low"]), np.ma.getdata(cols[f"{name}_high"])
        same = np.asarray(low == high, dtype=np.bool_)
        agree &= (n == 0) | ((n == attempts) & same)
    if agree.all():
        return
    found = {(t, g): (c, i) for t, g, c, i in con.execute(_firsts_query(source)).fetchall()}
    tests, targets = _strings(cols["test_id"]), _strings(cols["target"])
    category, inputs = _strings(cols["category"]), _strings(cols["input"])
    for r in np.flatnonzero(~agree).tolist():
        category[r], inputs[r] = found[(tests[r], targets[r])]
    cols["category"] = np.asarray(category, dtype=object)
    cols["input"] = np.asarray(inputs, dtype=object)


def _fill_absent(cols: dict[str, Any], plan: _Plan, rows: int) -> None:
    """The columns of the groups of fields the file does not have: what the plain path
    makes of fields no record has."""
    import numpy as np

    attempts = np.asarray(cols["attempts"], dtype=np.int64)
    none = np.full(rows, None, dtype=object)
    defaults: dict[str, Any] = {
        "valid": attempts,
        "errors": np.zeros(rows, dtype=np.int64),
        "infra": np.zeros(rows, dtype=np.int64),
        "safety": np.zeros(rows, dtype=np.bool_),
        "category": none,
        "category_high": none,
        "started": none,
        "finished": none,
        "interrupted": np.zeros(rows, dtype=np.bool_),
        "stopped_early": np.zeros(rows, dtype=np.bool_),
        "config_low": np.ma.masked_array(np.zeros(rows, dtype=np.uint64), mask=True),
        "config_high": np.ma.masked_array(np.zeros(rows, dtype=np.uint64), mask=True),
    }
    for name, value in defaults.items():
        cols.setdefault(name, value)


def _decoded(values: Any) -> list[Any]:
    """A column of JSON text (test ids, targets, categories, stamps) decoded, ``None``
    where it is NULL: each distinct value decoded once."""
    import msgspec

    texts = _strings(values)
    table = {t: (None if t is None else msgspec.json.decode(t)) for t in set(texts)}
    return list(map(table.__getitem__, texts))


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
            SELECT unnest(names) AS name, unnest(generate_series(1, len(names))) AS place, rn
            FROM (SELECT json_keys(scores) AS names, ordinality AS rn
                  FROM {source} WITH ORDINALITY
                  WHERE scores IS NOT NULL AND scores <> 'null'))
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


def _head_has(records: list[dict[str, Any]], fields: Iterable[str]) -> bool:
    """Whether one of the first records has a value for one of ``fields``."""
    return any(record.get(f) is not None for record in records for f in fields)


def _head_scorers(records: list[dict[str, Any]]) -> list[str]:
    """The scorers named in the first records, in order of first appearance."""
    names: dict[str, None] = {}
    for record in records:
        scores = record.get("scores")
        if isinstance(scores, dict):
            names.update(dict.fromkeys(scores))
    return list(names)


def _head_sorted(records: list[dict[str, Any]]) -> set[str]:
    """The measured columns whose first values are not all multiples of 1e-6: their
    sums are taken in ascending order from the first query on."""
    from evaldelta.model import DECIMAL_SCALE

    def decimal(value: Any) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return True
        return round(value * DECIMAL_SCALE) / DECIMAL_SCALE == value

    out: set[str] = set()
    for record in records:
        for name in ("score", "latency_ms", "wait_ms", "cost_usd", "input_tokens", "output_tokens"):
            if not decimal(record.get(name)):
                out.add("latency_ms" if name == "wait_ms" else name)
        scores = record.get("scores")
        if isinstance(scores, dict):
            out.update(f"scorer:{k}" for k, v in scores.items() if not decimal(v))
    return out
