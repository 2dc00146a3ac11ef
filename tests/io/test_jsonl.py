"""The JSONL reader: every field spelling it accepts, and every bad input it names."""

from __future__ import annotations

import gzip
import importlib.util
import math
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaldelta.errors import InputError, ParseError, UnknownFormatError
from evaldelta.io import _jsonl as jsonl_reader
from evaldelta.io import load
from evaldelta.model import Run
from tests.conftest import FIXTURES, REPO

Make = Callable[..., Path]


def test_reads_agentv_fields(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {
                "test_id": "a",
                "target": "gpt",
                "score": 0.5,
                "scores": [
                    {"name": "exact", "score": 1, "type": "contains", "verdict": "pass"},
                    {"name": "judge", "score": 0.25},
                    {"name": "judge", "score": 0.75},
                ],
                "token_usage": {"input": 100, "output": 20},
                "duration_ms": 1702,
                "cost_usd": 0.002,
                "category": "math",
                "tags": {"experiment": "with-skills"},
                "execution_status": "ok",
                "input": [{"role": "user", "content": "hi"}],
                "answer": "hello",
                "expected_output": "hello!",
                "unknown_field": {"deep": [1, 2, 3]},
            }
        ],
    )
    run = load(path)
    (r,) = run.records()
    assert (r.test_id, r.target, r.score) == ("a", "gpt", 0.5)
    # A scorer named twice in one record counts once, averaged.
    assert r.scores == {"exact": 1.0, "judge": 0.5}
    assert (r.input_tokens, r.output_tokens, r.latency_ms, r.cost_usd) == (100, 20, 1702, 0.002)
    assert r.category == "math"
    assert r.tags == ("experiment=with-skills",)
    assert r.error is None
    assert r.input == [{"role": "user", "content": "hi"}]
    assert (r.output, r.expected) == ("hello", "hello!")
    assert r.line == 1
    assert run.format == "jsonl"


def test_test_id_spellings_and_trace_fallbacks(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"eval_id": "e", "score": 1, "latency_ms": 5},
            {
                "testId": "c",
                "score": 0,
                "trace": {"duration_ms": 7, "cost_usd": 0.5, "token_usage": {"input_tokens": 3}},
            },
            {"test_id": 42, "score": 0.5, "scores": {"exact": 0.5, "judge": None}},
        ],
    )
    records = load(path).records()
    assert [r.test_id for r in records] == ["e", "c", "42"]
    assert records[0].latency_ms == 5
    assert (records[1].latency_ms, records[1].cost_usd, records[1].input_tokens) == (7, 0.5, 3)
    assert records[2].scores == {"exact": 0.5}


def test_score_defaults_to_mean_of_scorers(jsonl: Make) -> None:
    run = load(jsonl("r.jsonl", [{"test_id": "a", "scores": {"x": 1, "y": 0.5}}]))
    assert run.records()[0].score == 0.75


def test_error_without_score_counts_as_zero(jsonl: Make) -> None:
    run = load(
        jsonl(
            "r.jsonl",
            [
                {"test_id": "a", "error": "timeout after 60s"},
                {"test_id": "b", "execution_status": "execution_error"},
                {"test_id": "c", "score": 0.4, "error": {"message": "judge flaked"}},
                {"test_id": "d", "score": 1, "execution_status": "quality_failure"},
            ],
        )
    )
    a, b, c, d = run.records()
    assert (a.score, a.error) == (0.0, "timeout after 60s")
    assert (b.score, b.error) == (0.0, "execution_status: execution_error")
    assert (c.score, c.error) == (0.4, "judge flaked")
    assert (d.score, d.error) == (1.0, None)
    assert run.is_error.tolist() == [True, True, True, False]


def test_attempts_are_numbered_in_order(jsonl: Make) -> None:
    run = load(
        jsonl(
            "r.jsonl",
            [
                {"test_id": "a", "target": "x", "score": 1},
                {"test_id": "a", "target": "y", "score": 1},
                {"test_id": "a", "target": "x", "score": 0},
                {"test_id": "b", "target": "x", "score": 0, "attempt": 7},
            ],
        )
    )
    assert run.attempt.tolist() == [1, 1, 2, 7]


@pytest.mark.parametrize("fast", [True, False])
def test_attempt_numbers_are_read_across_the_64_bit_range(jsonl: Make, fast: bool) -> None:
    """The ends of the range are kept; 0 and below count as none, numbered in order."""
    path = jsonl(
        "r.jsonl",
        [
            {"test_id": "a", "score": 1, "attempt": 2**63 - 1},
            {"test_id": "b", "score": 1, "attempt": -(2**63)},
            {"test_id": "b", "score": 1, "attempt": 0},
            {"test_id": "b", "score": 1, "attempt": -5},
        ],
    )
    assert jsonl_reader.read(path, fast=fast).attempt.tolist() == [2**63 - 1, 1, 2, 3]


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("attempt", [2**63, -(2**63) - 1, 2**64])
def test_an_attempt_beyond_64_bits_is_refused_by_line(
    jsonl: Make, fast: bool, attempt: int
) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"test_id": "a", "score": 1, "attempt": 1},
            {"test_id": "b", "score": 1, "attempt": attempt},
        ],
    )
    with pytest.raises(ParseError) as info:
        jsonl_reader.read(path, fast=fast)
    assert str(info.value) == (
        f'{path}:2: "attempt" must be an integer from -9223372036854775808 to '
        f"9223372036854775807, got {attempt}; number a case's attempts 1, 2, 3, ... or leave "
        "the field out"
    )


def test_blank_lines_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b'\xef\xbb\xbf{"test_id": "a", "score": 1}\r\n\r\n  \n{"test_id": "b", "score": 0}\r\n'
    )
    assert [(r.test_id, r.line) for r in load(path)] == [("a", 1), ("b", 4)]


def test_gzip_and_run_directory(tmp_path: Path) -> None:
    data = (FIXTURES / "baseline.jsonl").read_bytes()
    gz = tmp_path / "baseline.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    assert len(load(gz)) == 3
    run_dir = tmp_path / "2026-11-30T10-00-00"
    run_dir.mkdir()
    (run_dir / "index.jsonl").write_bytes(data)
    assert [r.test_id for r in load(run_dir)] == [r.test_id for r in load(gz)]
    agentv_dir = tmp_path / "agentv-run"
    (agentv_dir / ".internal").mkdir(parents=True)
    (agentv_dir / ".internal" / "index.jsonl").write_bytes(data)
    assert len(load(agentv_dir)) == 3


def test_keep_text_false_drops_text(jsonl: Make) -> None:
    run = load(
        jsonl("r.jsonl", [{"test_id": "a", "score": 1, "input": "x" * 1000}]), keep_text=False
    )
    assert run.texts is None
    assert run.records()[0].input is None


# -- bad input: each message says what, where and how to mend it -----------------------


def _error(path: Path) -> str:
    with pytest.raises(InputError) as info:
        load(path)
    return str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    msg = _error(tmp_path / "nope.jsonl")
    assert (
        msg
        == f"{tmp_path / 'nope.jsonl'}: no such file; check the path (run from the right folder?)"
    )


def test_directory_without_index(tmp_path: Path) -> None:
    assert "is a directory without a results index" in _error(tmp_path)


@pytest.mark.parametrize("keep_text", [True, False])
def test_empty_file(jsonl: Make, tmp_path: Path, keep_text: bool) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    with pytest.raises(ParseError) as info:
        load(path, keep_text=keep_text)
    assert (
        str(info.value)
        == f"{path}: is empty: no records to compare; check the eval wrote its results"
    )
    assert info.value.line is None


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            ['{"test_id": "a", "score": 1}', '{"test_id": "b", "score": '],
            2,
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
        (
            ['{"test_id": "a", "score": 1}', "", "{'test_id': 'b'}"],
            3,
            "not valid JSON (object keys must be strings at column 2); "
            "each line must be one JSON object",
        ),
        (
            ['{"test_id": "a", "score": 1}}'],
            1,
            "more than one JSON value on the line; each line must be one JSON object",
        ),
        (['{"test_id": "a", "score": "high"}'], 1, '"score" must be a number, got "high"'),
        (['{"test_id": "a", "score": true}'], 1, '"score" must be a number, got true'),
        (
            ['{"test_id": "a", "score": 1e999}'],
            1,
            '"score" must be a finite number, got a number out of range',
        ),
        (
            ['{"test_id": "a", "score": 1}', "[1, 2]"],
            2,
            "expected a JSON object, got a list; each line must be one JSON object",
        ),
        (
            ['{"test_id": ["a"], "score": 1}'],
            1,
            '"test_id" must be a string or an integer, got ["a"]',
        ),
        (['{"test_id": "a", "target": 3, "score": 1}'], 1, '"target" must be a string, got 3'),
        (
            ['{"test_id": "a", "scores": {"x": "good"}}'],
            1,
            'values in "scores" must each be a number, got {"x":"good"}',
        ),
        (
            ['{"test_id": "a", "score": 1}', '{"score": 1}'],
            2,
            'record has no "test_id" (nor "eval_id" or "testId"); every record needs one',
        ),
        (
            ['{"test_id": "a", "score": 1}', "", '{"test_id": "b"}'],
            3,
            "record 'b' has no \"score\"; every record needs a number "
            '(or an "error" for an attempt that did not run)',
        ),
        (
            ['{"test_id": "a", "score": null}'],
            1,
            "record 'a' has no \"score\"; every record needs a number "
            '(or an "error" for an attempt that did not run)',
        ),
    ],
)
@pytest.mark.parametrize("keep_text", [True, False])  # the general path; the plain path first
def test_bad_lines_are_named(
    jsonl: Make, lines: list[str], line: int, message: str, keep_text: bool
) -> None:
    path = jsonl("bad.jsonl", lines)
    with pytest.raises(ParseError) as info:
        load(path, keep_text=keep_text)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), line, message)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_not_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "results.txt"
    path.write_text("hello: world\n")
    with pytest.raises(
        UnknownFormatError, match=r"results.txt: not a results file evaldelta can read"
    ):
        load(path)


def test_unknown_forced_format(jsonl: Make) -> None:
    with pytest.raises(UnknownFormatError, match="unknown input format 'yaml'; choose one of: "):
        load(jsonl("r.jsonl", [{"test_id": "a", "score": 1}]), format="yaml")


def test_broken_gzip(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ParseError, match="is not a readable gzip file"):
        load(path)


def test_scores_are_floats(jsonl: Make) -> None:
    run = load(jsonl("r.jsonl", [{"test_id": "a", "score": 1}]))
    assert run.score.dtype.kind == "f"
    assert math.isnan(run.latency_ms[0])


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            ['{"test_id": "a", "score": 1}', '{"test_id": "b",', ' "score": 1}'],
            2,
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
        (
            ['{"test_id": "a", "score": 1}', "{", '  "test_id": "b", "score": 1', "}"],
            2,
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
        (
            ['{"test_id": "a", "score": 1}{"test_id": "b", "score": 1}'],
            1,
            "more than one JSON value on the line; each line must be one JSON object",
        ),
    ],
)
@pytest.mark.parametrize("keep_text", [True, False])
def test_one_object_per_line(
    jsonl: Make, lines: list[str], line: int, message: str, keep_text: bool
) -> None:
    path = jsonl("r.jsonl", lines)
    with pytest.raises(ParseError) as info:
        load(path, keep_text=keep_text)
    assert (info.value.line, info.value.reason) == (line, message)


def test_permission_denied(jsonl: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    path = jsonl("r.jsonl", [{"test_id": "a", "score": 1}])

    def denied(*args: object, **kwargs: object) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    monkeypatch.setattr("builtins.open", denied)
    with pytest.raises(
        InputError, match=r"r.jsonl: permission denied; check the file's permissions"
    ):
        load(path)


@pytest.mark.parametrize("keep_text", [True, False])
def test_chunked_reading_matches_one_piece(
    jsonl: Make, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, keep_text: bool
) -> None:
    """Big files are read in pieces; the pieces must join seamlessly."""
    rows: list[dict[str, object] | str] = []
    for i in range(60):
        row: dict[str, object] = {"test_id": f"q{i % 20}", "target": "ab"[i % 2], "score": i / 60}
        if i > 40:
            row["scores"] = {"late": 0.5}
        if i % 7 == 0:
            row["error"] = "boom"
        if i % 11 == 0:
            row["tags"] = ["t"]
        if i == 50:
            row["run_status"] = "interrupted"
        rows.append(row)
        if i % 13 == 0:
            rows.append("")
    path = jsonl("r.jsonl", rows)
    whole = load(path, keep_text=keep_text)
    monkeypatch.setattr("evaldelta.io._source.CHUNK_SIZE", 200)
    pieces = load(path, keep_text=keep_text)
    assert pieces.records() == whole.records()
    assert pieces.status == whole.status == "interrupted"
    assert pieces.scorers == ["late"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + '{"test_id": "x", "score": "high"}\n')
    with pytest.raises(ParseError) as info:
        load(bad, keep_text=keep_text)
    assert info.value.line == len(path.read_text().splitlines()) + 1


# -- the plain path: the common shape read fast, and exactly as the general path reads it --


def _same_runs(fast: Run, general: Run) -> None:
    """Every column of two runs equal (NaN equal to NaN)."""
    for name in Run.__slots__:
        a, b = getattr(fast, name), getattr(general, name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype, name
            assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), name
        elif name == "scorer_scores":
            assert list(a) == list(b), name
            for scorer in a:
                assert np.array_equal(a[scorer], b[scorer], equal_nan=True), (name, scorer)
        else:
            assert a == b, name


def _same_comparisons(fast: Run, general: Run, baseline: str, candidate: str) -> None:
    """The same pairwise comparison and the same matrix, figure for figure (as JSON,
    where NaN is null and so equal to itself)."""
    from evaldelta import compare
    from evaldelta.api import compare_matrix
    from evaldelta.report._json import render_json

    def pairwise(run: Run) -> str:
        return render_json(compare(run, run, baseline_target=baseline, candidate_target=candidate))

    assert pairwise(fast) == pairwise(general)
    assert render_json(compare_matrix(fast)) == render_json(compare_matrix(general))


def _count_calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (in a one-item list, read after the calls)."""
    calls = [0]
    original = getattr(owner, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


@pytest.mark.parametrize("keep_text", [False, True])
def test_plain_path_reads_the_benchmark_file_as_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep_text: bool
) -> None:
    """The file ``bench/generate.py`` writes (the shape of agentv's results) is read by
    the plain path only, and gives the same run and the same comparisons."""
    spec = importlib.util.spec_from_file_location("bench_generate", REPO / "bench" / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    path = tmp_path / "bench.jsonl"
    generator.generate(path, cases=400, targets=3, attempts=3, seed=7)
    # Small pieces: the spelled-out types are learnt from the first and used after.
    monkeypatch.setattr("evaldelta.io._source.CHUNK_SIZE", 16_384)
    general = _count_calls(monkeypatch, jsonl_reader, "_general_columns")

    fast = jsonl_reader.read(path, keep_text=keep_text)
    assert general[0] == 0  # every piece went the plain way
    plain = jsonl_reader.read(path, keep_text=keep_text, fast=False)
    assert general[0] > 0

    _same_runs(fast, plain)
    assert len(fast) == 400 * 3 * 3
    assert fast.scorers == ["exact", "judge"]
    _same_comparisons(fast, plain, "gpt-4.1", "gpt-5-mini")


def _mixed_records(rng: random.Random, n: int) -> list[dict[str, Any] | str]:
    """Records of many shapes, most of them plain, some only the general path reads,
    with new targets, scorers, statuses and fields turning up as the file goes on."""
    rows: list[dict[str, Any] | str] = []
    for i in range(n):
        late = i > n // 2
        row: dict[str, Any] = {
            "test_id": f"case-{rng.randrange(n // 4):04d}",
            "target": rng.choice(["a", "b", "c"] if late else ["a", "b"]),
            "score": rng.choice([0, 1, 0.5, 0.25]),
        }
        if rng.random() < 0.7:
            scores: dict[str, Any] = {"exact": rng.choice([0, 1]), "judge": rng.random()}
            if late and rng.random() < 0.3:
                scores["style"] = None if rng.random() < 0.5 else 0.5
            row["scores"] = scores if rng.random() < 0.95 else {}
        choice = rng.random()
        if choice < 0.6:
            row["input"] = rng.choice(["Say hello", 'Quote "this"\nplease', "café ☕", "数据"])
        elif choice < 0.7:
            row["input"] = [{"role": "user", "content": "hi"}] if rng.random() < 0.5 else {"q": 1}
        elif choice < 0.75:
            row["input"] = None
        if rng.random() < 0.5:
            row["attempt"] = rng.randrange(1, 4)
        if rng.random() < 0.6:
            row["latency_ms"] = rng.choice([None, 120, 1500.5])
        if late and rng.random() < 0.5:
            row["category"] = rng.choice(["math", "code", None])
        if rng.random() < 0.5:
            row["timestamp"] = f"2026-11-0{rng.randrange(1, 9)}T10:00:00Z"
        if rng.random() < 0.4:
            row["execution_status"] = rng.choice(
                ["ok", "quality_failure"] + (["timeout", "execution_error"] if late else [])
            )
        if rng.random() < 0.1:
            row["passed"] = rng.random() < 0.5
        if rng.random() < 0.05:  # only the general path knows these
            key = rng.choice(["error", "tags", "cost_usd", "trace", "eval_id", "safety_failure"])
            row[key] = {
                "error": "boom",
                "tags": ["t"],
                "cost_usd": 0.01,
                "trace": {"duration_ms": 9},
                "eval_id": "other",
                "safety_failure": True,
            }[key]
        if rng.random() < 0.03:
            row["scores"] = [{"name": "exact", "score": 1}, {"name": "judge", "score": 0.5}]
        if rng.random() < 0.02:
            row["test_id"] = rng.randrange(1000)
        if rng.random() < 0.05:
            row["error"] = None  # null: still the plain shape
        row["answer"] = rng.choice(["fine", "a\tb\\c", "émoji 🚀", "x" * 300])
        if rng.random() < 0.1:
            row["output"] = rng.choice([None, "shown instead of the answer", {"text": "hi"}])
        if rng.random() < 0.1:
            row[rng.choice(["expected", "expected_output"])] = "hello"
        if rng.random() < 0.05:
            row["metadata"] = {"run": rng.randrange(3)}
        rows.append(row)
        if rng.random() < 0.01:
            rows.append("")
    return rows


@pytest.mark.parametrize(("seed", "keep_text"), [(0, False), (1, False), (2, True)])
def test_plain_and_general_paths_agree_on_every_shape(
    jsonl: Make, monkeypatch: pytest.MonkeyPatch, seed: int, keep_text: bool
) -> None:
    path = jsonl("mixed.jsonl", _mixed_records(random.Random(seed), 600))
    monkeypatch.setattr("evaldelta.io._source.CHUNK_SIZE", 2_000)  # ~10 records a piece
    monkeypatch.setattr(jsonl_reader, "_MAX_PLAIN_MISSES", 10**9)  # never give up here
    general = _count_calls(monkeypatch, jsonl_reader, "_general_columns")
    plain = _count_calls(monkeypatch, jsonl_reader._PlainDecoder, "_columns")

    fast = jsonl_reader.read(path, keep_text=keep_text)
    assert plain[0] > 0
    assert general[0] > 0  # both paths were taken
    slow = jsonl_reader.read(path, keep_text=keep_text, fast=False)
    _same_runs(fast, slow)
    _same_comparisons(fast, slow, "a", "b")


def test_plain_path_leaves_a_file_of_another_shape_to_the_general_path(
    jsonl: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file whose pieces the plain path cannot read is not decoded three times over:
    after a few pieces in a row, the general path reads the rest alone."""
    rows = [
        {"test_id": f"q{i}", "score": 1, "trace": {"duration_ms": i}, "answer": "x" * 100}
        for i in range(200)
    ]
    path = jsonl("traced.jsonl", rows)
    monkeypatch.setattr("evaldelta.io._source.CHUNK_SIZE", 1_000)
    tries = _count_calls(monkeypatch, jsonl_reader._PlainDecoder, "_read")
    general = _count_calls(monkeypatch, jsonl_reader, "_general_columns")

    run = jsonl_reader.read(path, keep_text=False)
    assert tries[0] == jsonl_reader._MAX_PLAIN_MISSES
    assert general[0] > tries[0]
    assert run.latency_ms.tolist() == list(range(200))
    _same_runs(run, jsonl_reader.read(path, keep_text=False, fast=False))
