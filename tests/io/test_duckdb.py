"""The DuckDB engine compares exactly as the plain path does, or leaves the file to it.

Every figure of the comparisons (``to_dict()``, which is what ``--json`` prints) and every
column of the case tables is held equal on the benchmark's generated files, on files
with every field the engine reads in SQL, and on every fixture in agentv's JSONL. A file
that breaks a rule raises, by file and line, exactly what the plain path raises.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import math
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evaldelta
from evaldelta.io import _duckdb, load
from evaldelta.model import Run
from evaldelta.pairing import case_matrix
from evaldelta.report._json import render_json
from tests.conftest import FIXTURES, REPO


@pytest.fixture
def engine() -> Iterator[None]:
    """The engine takes every file, whatever its size (as ``EVALDELTA_DUCKDB_MB=0``)."""
    before = _duckdb.ENGINE.duckdb_bytes
    _duckdb.ENGINE.duckdb_bytes = 0
    try:
        yield
    finally:
        _duckdb.ENGINE.duckdb_bytes = before


def both(path: Path, pass_threshold: float = 0.5) -> tuple[Run, Run]:
    """The run read by the engine (grouped), and the run read by the plain path."""
    before = _duckdb.ENGINE.duckdb_bytes
    try:
        _duckdb.ENGINE.duckdb_bytes = 0
        grouped = load(path, keep_text=False, grouped=pass_threshold)
        _duckdb.ENGINE.duckdb_bytes = None
        plain = load(path, keep_text=False)
    finally:
        _duckdb.ENGINE.duckdb_bytes = before
    return grouped, plain


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(a == b)


def assert_same(grouped: Run, plain: Run, settings: evaldelta.Settings | None = None) -> None:
    """Every comparison of the two runs' targets, and the case tables, are equal."""
    assert grouped.totals is not None, "the engine left the file to the plain path"
    assert plain.totals is None
    assert grouped.targets == plain.targets
    assert grouped.test_ids == plain.test_ids
    assert (grouped.status, grouped.config) == (plain.status, plain.config)
    assert (grouped.started_at, grouped.finished_at) == (plain.started_at, plain.finished_at)
    assert grouped.scorers == plain.scorers
    # Fewer resamples than the default keep the test quick; the figures are compared
    # all the same (both paths draw the same seeded resamples from the same cases).
    settings = settings or evaldelta.Settings(resamples=400)
    threshold = settings.pass_threshold
    codes = list(range(len(plain.targets)))
    table, expected = (case_matrix(r, codes, pass_threshold=threshold) for r in (grouped, plain))
    # ``first_record`` points into each run's own rows (a case's row, a record): what it
    # points at (the category, the input's fingerprint) is held equal instead.
    for f in fields(table):
        if f.name != "first_record":
            assert _equal(getattr(table, f.name), getattr(expected, f.name)), f.name
    names = plain.target_names
    pairs = [(a, b) for a in names for b in names if a != b] or [(None, None)]
    for base, cand in pairs:
        one = evaldelta.compare(
            grouped, grouped, baseline_target=base, candidate_target=cand, settings=settings
        )
        other = evaldelta.compare(
            plain, plain, baseline_target=base, candidate_target=cand, settings=settings
        )
        assert render_json(one) == render_json(other)
        for side in ("left", "right"):
            mine, theirs = getattr(one, side), getattr(other, side)
            for f in fields(mine):
                if f.name != "first_record":
                    assert _equal(getattr(mine, f.name), getattr(theirs, f.name)), f.name
    if len(names) > 1:
        for baseline in (None, names[0]):
            assert render_json(
                evaldelta.compare_matrix(grouped, baseline=baseline, settings=settings)
            ) == render_json(evaldelta.compare_matrix(plain, baseline=baseline, settings=settings))


# -- the benchmark's files ------------------------------------------------------------


def _bench_generate() -> Any:
    spec = importlib.util.spec_from_file_location("bench_generate", REPO / "bench" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


@pytest.mark.parametrize(("cases", "targets", "attempts", "seed"), [(400, 2, 5, 0), (250, 4, 3, 7)])
def test_the_benchmarks_files_compare_the_same(
    tmp_path: Path, cases: int, targets: int, attempts: int, seed: int
) -> None:
    path = tmp_path / "bench.jsonl"
    _bench_generate()(path, cases=cases, targets=targets, attempts=attempts, seed=seed)
    assert_same(*both(path))


def test_a_gzip_file_compares_the_same(tmp_path: Path) -> None:
    plain = tmp_path / "bench.jsonl"
    _bench_generate()(plain, cases=300, targets=2, attempts=3, seed=1)
    packed = tmp_path / "bench.jsonl.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert_same(*both(packed))


# -- every field the engine reads in SQL ------------------------------------------------


def _records(seed: int, n_cases: int = 120) -> list[dict[str, Any]]:
    """Records that use every field the engine reads, in every spelling and shape it
    takes, with values that need every way of adding up (grids, fractions, big ones)."""
    rng = np.random.default_rng(seed)
    targets = ["base", "cand", "third"]
    out: list[dict[str, Any]] = []
    for i in range(n_cases * len(targets) * 3):
        case = int(rng.integers(n_cases))
        target = targets[int(rng.integers(len(targets)))]
        record: dict[str, Any] = {"test_id": f"case-{case:03d}", "target": target}
        kind = int(rng.integers(5))
        record["score"] = [
            int(rng.integers(2)),
            round(float(rng.random()), 2),
            float(rng.random()),
            1 / 3,
            float(rng.integers(0, 4)) / 4,
        ][kind]
        scores: dict[str, Any] = {"exact": int(rng.integers(2))}
        if rng.random() < 0.7:
            scores["judge"] = float(rng.random()) if seed % 2 else round(float(rng.random()), 3)
        if rng.random() < 0.1:
            scores["judge"] = None
        if i > 600 and rng.random() < 0.3:
            scores["late"] = round(float(rng.random()), 1)  # named after the first records
        record["scores"] = scores
        latency = float(rng.integers(100, 3000))
        where = int(rng.integers(4))
        if where == 0:
            record["latency_ms"] = latency
        elif where == 1:
            record["duration_ms"] = latency + 0.123456789
        elif where == 2:
            record["trace"] = {"duration_ms": latency, "cost_usd": 0.0001 * case}
        if rng.random() < 0.3:
            record["wait_ms"] = float(rng.integers(0, 4000))
        if rng.random() < 0.5:
            record["token_usage"] = {"input": int(rng.integers(1000)), "output": 40}
        elif rng.random() < 0.5:
            record["input_tokens"] = int(rng.integers(1000))
            record["output_tokens"] = int(rng.integers(100))
        if rng.random() < 0.5:
            record["cost_usd"] = round(float(rng.random()) / 100, 6)
        trouble = rng.random()
        if trouble < 0.04:
            del record["score"]
            del record["scores"]
            record["error"] = "timeout"
            record["error_kind"] = "infra"
        elif trouble < 0.08:
            record["execution_status"] = ["timeout", "execution_error", "ok", "RATE_LIMITED"][
                int(rng.integers(4))
            ]
        elif trouble < 0.1:
            record["error"] = [{}, "", False, {"message": "boom"}, 0][int(rng.integers(5))]
        if rng.random() < 0.3:
            record["passed"] = bool(rng.integers(2))
        if rng.random() < 0.05:
            record["safety_failure"] = [True, False, 1, 0][int(rng.integers(4))]
        if case % 3:
            record["category"] = ["math", "code", "qa"][case % 3]
        shape = case % 4
        if shape == 0:
            record["input"] = f"question {case}"
        elif shape == 1:
            record["input"] = [{"role": "user", "content": f"q{case}"}, {"b": 1, "a": 2}]
        elif shape == 2:
            record["input"] = None
        record["attempt"] = int(rng.integers(1, 4))
        if rng.random() < 0.5:
            record["timestamp"] = f"2026-11-{1 + case % 28:02d}T10:00:00Z"
        record["answer"] = "text the engine never reads " * int(rng.integers(3))
        out.append(record)
    out[3]["config"] = {"model": "m", "temperature": 0.2}
    return out


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_every_field_compares_the_same(tmp_path: Path, seed: int) -> None:
    assert_same(*both(_write(tmp_path / "all.jsonl", _records(seed))))


def test_another_pass_threshold_compares_the_same(tmp_path: Path) -> None:
    path = _write(tmp_path / "all.jsonl", _records(5))
    grouped, plain = both(path, pass_threshold=0.7)
    assert_same(grouped, plain, evaldelta.Settings(pass_threshold=0.7, resamples=400))
    with pytest.raises(evaldelta.UsageError, match=r"pass threshold of 0\.7"):
        evaldelta.compare(grouped, grouped, baseline_target="base", candidate_target="cand")


def test_attempts_that_disagree_on_their_input_take_the_first(tmp_path: Path) -> None:
    records = [
        {"test_id": "a", "target": "x", "score": 1, "input": "second", "category": "late"},
        {"test_id": "a", "target": "y", "score": 0, "input": "first"},
        {"test_id": "a", "target": "x", "score": 0, "input": "other"},
        {"test_id": "b", "target": "y", "score": 0},
        {"test_id": "b", "target": "x", "score": 1, "input": "q", "category": "c"},
        {"test_id": "b", "target": "y", "score": 1, "input": "q", "config": {"run": 2}},
        {"test_id": "a", "target": "y", "score": 1, "input": "first", "config": {"run": 1}},
    ]
    grouped, plain = both(_write(tmp_path / "r.jsonl", records))
    assert_same(grouped, plain)
    assert grouped.config == {"run": 2}


def test_a_status_the_run_declares_is_read(tmp_path: Path) -> None:
    records = [{"test_id": f"q{i}", "target": "t", "score": i % 2} for i in range(30)]
    records[20]["run_status"] = "Interrupted"
    grouped, plain = both(_write(tmp_path / "r.jsonl", records))
    assert grouped.status == plain.status == "interrupted"
    assert_same(grouped, plain)


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in [*FIXTURES.glob("*.jsonl"), *(REPO / "examples").rglob("*.jsonl")]
        if p.read_bytes().lstrip().startswith(b'{"test_id"')
    ),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_every_fixture_compares_the_same(path: Path) -> None:
    """Each agentv JSONL file of the fixtures and examples: grouped by the engine, or
    (suites' test lists, runs with recorded orders) left to the plain path."""
    grouped, plain = both(path)
    if grouped.totals is None:
        assert grouped.test_ids == plain.test_ids
        return
    assert_same(grouped, plain)


def test_fixtures_the_engine_groups() -> None:
    """The fixtures above are not all left to the plain path."""
    grouped = [
        p
        for p in (
            FIXTURES / "combined-results.jsonl",
            FIXTURES / "baseline.jsonl",
            REPO / "examples" / "agent-versions" / "before.jsonl",
            REPO / "examples" / "store-ci" / "monday.jsonl",
        )
        if both(p)[0].totals is not None
    ]
    assert len(grouped) == 4


# -- what the plain path refuses, the engine refuses alike ------------------------------

GOOD = '{"test_id": "q1", "target": "t", "score": 0.5}'

BAD = {
    "a score that is a word": '{"test_id": "q2", "target": "t", "score": "high"}',
    "a score written as text": '{"test_id": "q2", "target": "t", "score": "0.5"}',
    "a score that is true": '{"test_id": "q2", "target": "t", "score": true}',
    "a score that is NaN": '{"test_id": "q2", "target": "t", "score": NaN}',
    "a score too large": '{"test_id": "q2", "target": "t", "score": 1e13}',
    "no score": '{"test_id": "q2", "target": "t"}',
    "an attempt of 2.5": '{"test_id": "q2", "target": "t", "score": 1, "attempt": 2.5}',
    "an attempt past 2**63 - 1": (
        '{"test_id": "q2", "target": "t", "score": 1, "attempt": 9223372036854775808}'
    ),
    "an attempt below -2**63": (
        '{"test_id": "q2", "target": "t", "score": 1, "attempt": -9223372036854775809}'
    ),
    "passed as text": '{"test_id": "q2", "target": "t", "score": 1, "passed": "yes"}',
    "latency as text": '{"test_id": "q2", "target": "t", "score": 1, "latency_ms": "12"}',
    "a scorer as text": '{"test_id": "q2", "target": "t", "score": 1, "scores": {"a": "x"}}',
    "a target that is a number": '{"test_id": "q2", "target": 3, "score": 1}',
    "an empty target": '{"test_id": "q2", "target": "", "score": 1}',
    "an empty test id": '{"test_id": "", "target": "t", "score": 1}',
    "a blank test id": '{"test_id": "  ", "target": "t", "score": 1}',
    "a test id written as a number": '{"test_id": 1, "target": "t", "score": 1}',
    "a key given twice": '{"test_id": "q2", "target": "t", "score": 0.1, "score": 0.9}',
    "two objects on a line": f"{GOOD} {GOOD}",
    "an array": "[1, 2]",
    "broken JSON": '{"test_id": "q2", "score": ',
    "a category that is a number": '{"test_id": "q2", "target": "t", "score": 1, "category": 7}',
    "a record without a target": '{"test_id": "q2", "score": 1}',
}


@pytest.mark.parametrize("line", list(BAD.values()), ids=list(BAD))
def test_a_bad_record_raises_what_the_plain_path_raises(
    tmp_path: Path, engine: None, line: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(f"{GOOD}\n{line}\n{GOOD.replace('q1', 'q3')}\n", encoding="utf-8")
    outcome = []
    for grouped in (0.5, None):
        try:
            run = load(path, keep_text=False, grouped=grouped)
            outcome.append(("read", run.test_ids, run.targets))
        except evaldelta.EvalDeltaError as exc:
            outcome.append((type(exc).__name__, str(exc)))
    assert outcome[0] == outcome[1]


def test_a_bad_record_far_down_the_file_is_named_by_line(tmp_path: Path, engine: None) -> None:
    lines = [json.dumps({"test_id": f"q{i}", "target": "t", "score": 1}) for i in range(3000)]
    lines[2500] = '{"test_id": "q2500", "target": "t", "score": "high"}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(evaldelta.ParseError, match=r'bad\.jsonl:2501: "score" must be a number'):
        load(path, keep_text=False, grouped=0.5)


def test_an_attempt_beyond_64_bits_is_named_by_line(tmp_path: Path, engine: None) -> None:
    """The engine would take it (a grouped run keeps no attempt numbers): it leaves the
    file to the plain path, which refuses it."""
    path = tmp_path / "bad.jsonl"
    path.write_text(
        f'{GOOD}\n{{"test_id": "q2", "target": "t", "score": 1, "attempt": {2**63}}}\n',
        encoding="utf-8",
    )
    with pytest.raises(evaldelta.ParseError) as info:
        load(path, keep_text=False, grouped=0.5)
    assert str(info.value) == (
        f'{path}:2: "attempt" must be an integer from -9223372036854775808 to '
        "9223372036854775807, got 9223372036854775808; number a case's attempts 1, 2, 3, ... "
        "or leave the field out"
    )
    # The ends of the range are read by the engine itself.
    for attempt in (2**63 - 1, -(2**63)):
        path.write_text(
            f'{GOOD}\n{{"test_id": "q2", "target": "t", "score": 1, "attempt": {attempt}}}\n',
            encoding="utf-8",
        )
        assert_same(*both(path))


def test_invalid_utf8_is_named_by_line(tmp_path: Path, engine: None) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(f"{GOOD}\n".encode() + b'{"test_id": "q2", "score": 1, "answer": "\xff"}\n')
    with pytest.raises(evaldelta.ParseError, match=r"bad\.jsonl:2: not valid UTF-8"):
        load(path, keep_text=False, grouped=0.5)


def test_a_line_over_the_limit_is_named_by_line(
    tmp_path: Path, engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evaldelta.io import LIMITS

    monkeypatch.setattr(LIMITS, "line_bytes", 200)
    path = tmp_path / "long.jsonl"
    long = json.dumps({"test_id": "q2", "target": "t", "score": 1, "answer": "x" * 300})
    path.write_text(f"{GOOD}\n{long}\n", encoding="utf-8")
    with pytest.raises(evaldelta.ParseError, match=r"long\.jsonl:2: a line longer than"):
        load(path, keep_text=False, grouped=0.5)


def test_a_duplicate_key_in_the_first_lines_is_named(tmp_path: Path, engine: None) -> None:
    path = tmp_path / "dup.jsonl"
    path.write_text(
        f'{GOOD}\n{{"test_id": "q2", "target": "t", "score": 1, "answer": "a", "answer": "b"}}\n',
        encoding="utf-8",
    )
    with pytest.raises(
        evaldelta.ParseError, match=r'dup\.jsonl:2: the key "answer" is given twice'
    ):
        load(path, keep_text=False, grouped=0.5)


# -- when the engine reads a file -------------------------------------------------------


def test_small_files_take_the_plain_path(tmp_path: Path) -> None:
    path = _write(tmp_path / "small.jsonl", _records(0, n_cases=5))
    assert load(path, keep_text=False, grouped=0.5).totals is None  # 16 MiB at the least


def test_the_engine_is_off_when_told(tmp_path: Path, engine: None) -> None:
    path = _write(tmp_path / "r.jsonl", _records(0, n_cases=5))
    _duckdb.ENGINE.duckdb_bytes = None
    assert load(path, keep_text=False, grouped=0.5).totals is None


def test_text_extra_fields_and_maps_take_the_plain_path(tmp_path: Path, engine: None) -> None:
    path = _write(tmp_path / "r.jsonl", _records(0, n_cases=5))
    assert load(path, keep_text=True, grouped=0.5).totals is None
    assert load(path, keep_text=False, grouped=0.5, extra_fields=("answer",)).totals is None
    assert load(path, keep_text=False).totals is None


def test_a_grouped_run_is_not_scored_by_a_scorer(tmp_path: Path, engine: None) -> None:
    path = _write(tmp_path / "r.jsonl", _records(0, n_cases=5))
    run = load(path, keep_text=False, grouped=0.5)
    with pytest.raises(evaldelta.PairingError, match="read grouped by case"):
        run.score_by("exact")


@pytest.mark.parametrize(("cores", "size"), [(1, None), (2, None), (3, None), (4, 16), (64, 16)])
def test_by_default_the_engine_needs_cores_to_spare(
    monkeypatch: pytest.MonkeyPatch, cores: int, size: int | None
) -> None:
    """On two cores the engine was hardly faster than the plain reader, for more processor
    time and memory: by default it reads large files on four cores or more."""
    from evaldelta.io import _source

    monkeypatch.setattr(_source, "usable_cores", lambda: cores)
    expected = None if size is None else size * 2**20
    assert _source.Engine().duckdb_bytes == expected


# -- differential: random records with odd values, both paths agree ---------------------

# Values each field takes in a well-formed file, of every kind the engine adds up or
# reads (grids, fractions, large values, nested spellings, errors and statuses) ...
_FINE: dict[str, list[Any]] = {
    "score": [0, 1, 0.5, 0.25, 1 / 3, 0.1, -0.0, 1e-7, 999.5, 2**30],
    "scores": [{"a": 1}, {"a": 0.3, "b": None}, {"a": 0, "b": 0.125}, {}],
    "attempt": [1, 2, 3],
    "passed": [True, False],
    "latency_ms": [12, 12.5, 0, 1e12],
    "duration_ms": [100, 0.001],
    "trace": [{"duration_ms": 5}, {"cost_usd": 0.01}, {"duration_ms": 5, "cost_usd": 1e-5}],
    "token_usage": [{"input": 3, "output": 4}, {"input": 3}, {}],
    "input_tokens": [10, 0],
    "output_tokens": [7, 0],
    "cost_usd": [0.001, 0, 1e-9],
    "error": ["timeout", "", None, {}, {"message": "x"}, 0, False],
    "error_kind": ["infra", "model"],
    "execution_status": ["ok", "timeout", "execution_error", "RATE_LIMITED"],
    "safety_failure": [True, False, 0, 1],
    "category": ["math", "code"],
    "input": ["q", "", None, [{"role": "user", "content": "q"}], {"b": 1, "a": 2}],
    "timestamp": ["2026-11-01T10:00:00Z", "2026-11-02T10:00:00+01:00"],
    "wait_ms": [0, 10],
    "answer": ["text", ""],
}
# ... and the ones a careless writer produces: each sends the file to the plain path, or
# is refused by both alike.
_ODD: dict[str, list[Any]] = {
    "score": ["0.5", True, None, [1], float("nan"), 1e13, -1],
    "scores": [{"a": "x"}, {"a": True}, [1], None],
    "attempt": [0, -1, 2.0, 2.5, "2", None],
    "passed": [None, 1, "yes"],
    "latency_ms": [-3, "12", None],
    "trace": [{"duration_ms": "x"}, None, 3],
    "token_usage": [{"input": 3.5}, {"input": "3"}, None],
    "input_tokens": [None, 1.5, "10"],
    "cost_usd": [None, "0.1", -1],
    "error": [[1], 3.5],
    "error_kind": [None, 3, "other"],
    "execution_status": ["", None, 1, "weird"],
    "safety_failure": [None, "no", 2],
    "category": ["", None, 7, ["a"]],
    "input": [0, 1.5, True],
    "timestamp": ["yesterday", None, 5],
    "test_id": ["", " ", 1, None],
    "target": ["", 3, None],
}


@st.composite
def _odd_records(draw: st.DrawFn) -> list[dict[str, Any]]:
    cases = draw(st.integers(1, 6))
    out = []
    for _ in range(draw(st.integers(1, 30))):
        record: dict[str, Any] = {
            "test_id": f"q{draw(st.integers(0, cases - 1))}",
            "target": draw(st.sampled_from(["a", "b"])),
            "score": draw(st.sampled_from(_FINE["score"])),
        }
        for name in draw(st.sets(st.sampled_from(sorted(_FINE)), max_size=5)):
            record[name] = draw(st.sampled_from(_FINE[name]))
        if record.get("error") in ("timeout", {"message": "x"}) and draw(st.booleans()):
            del record["score"]  # a failed attempt, no score
        out.append(record)
    if draw(st.integers(0, 2)) == 0:  # one odd value in a third of the files
        name = draw(st.sampled_from(sorted(_ODD)))
        out[draw(st.integers(0, len(out) - 1))][name] = draw(st.sampled_from(_ODD[name]))
    return out


def _outcome(path: Path, grouped: float | None) -> tuple[Any, ...]:
    try:
        run = load(path, keep_text=False, grouped=grouped)
    except evaldelta.EvalDeltaError as exc:
        return (type(exc).__name__, str(exc))
    settings = evaldelta.Settings(resamples=200)
    figures: list[Any] = [run.test_ids, run.targets, run.status]
    names = run.target_names
    for base, cand in [(a, b) for a in names for b in names if a != b] or [(None, None)]:
        try:
            result = evaldelta.compare(
                run, run, baseline_target=base, candidate_target=cand, settings=settings
            )
            figures.append(render_json(result))
        except evaldelta.EvalDeltaError as exc:
            figures.append((type(exc).__name__, str(exc)))
    return ("read", *figures)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(records=_odd_records())
def test_odd_records_read_the_same_by_both_paths(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    path = _write(tmp_path / "odd.jsonl", records)
    before = _duckdb.ENGINE.duckdb_bytes
    try:
        _duckdb.ENGINE.duckdb_bytes = 0
        engine = _outcome(path, 0.5)
        _duckdb.ENGINE.duckdb_bytes = None
        plain = _outcome(path, None)
    finally:
        _duckdb.ENGINE.duckdb_bytes = before
    assert engine == plain
