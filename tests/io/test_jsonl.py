"""The JSONL reader: every field spelling it accepts, and every bad input it names."""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from evaldelta.errors import InputError, ParseError, UnknownFormatError
from evaldelta.io import load
from tests.conftest import FIXTURES

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


def test_empty_file(jsonl: Make, tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n  \n")
    with pytest.raises(ParseError) as info:
        load(path)
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
def test_bad_lines_are_named(jsonl: Make, lines: list[str], line: int, message: str) -> None:
    path = jsonl("bad.jsonl", lines)
    with pytest.raises(ParseError) as info:
        load(path)
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
def test_one_object_per_line(jsonl: Make, lines: list[str], line: int, message: str) -> None:
    path = jsonl("r.jsonl", lines)
    with pytest.raises(ParseError) as info:
        load(path)
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


def test_chunked_reading_matches_one_piece(
    jsonl: Make, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
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
    whole = load(path)
    monkeypatch.setattr("evaldelta.io._source.CHUNK_SIZE", 200)
    pieces = load(path)
    assert pieces.records() == whole.records()
    assert pieces.status == whole.status == "interrupted"
    assert pieces.scorers == ["late"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(path.read_text() + '{"test_id": "x", "score": "high"}\n')
    with pytest.raises(ParseError) as info:
        load(bad)
    assert info.value.line == len(path.read_text().splitlines()) + 1
