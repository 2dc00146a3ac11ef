"""The promptfoo reader: the real export, repeats, prompts, errors, and every bad input
it names."""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.errors import ParseError
from evaldelta.io import _promptfoo as promptfoo
from tests.conftest import FIXTURES, write_jsonl

HERE = FIXTURES / "promptfoo"
ECHO = "I speak without a mouth and hear without ears. I have no body, but I come alive with wind. What am I?"  # noqa: E501
BOAT = "You see a boat filled with people. It has not sunk, but when you look again you don't see a single person on the boat. Why?"  # noqa: E501


def vars_id(variables: dict[str, Any]) -> str:
    """The documented id of a test without a description, computed independently."""
    text = json.dumps(variables, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "vars-" + hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def row(**fields: Any) -> dict[str, Any]:
    """A minimal result row, as ``promptfoo eval -o results.jsonl`` writes one."""
    base: dict[str, Any] = {
        "testIdx": 0,
        "promptIdx": 0,
        "provider": {"id": "openai:gpt-4o-mini", "label": ""},
        "vars": {"q": "2+2?"},
        "score": 1,
        "success": True,
        "failureReason": 0,
        "latencyMs": 100,
    }
    base.update(fields)
    return base


def test_reads_the_real_export() -> None:
    run = promptfoo.read(HERE / "sample-export.json")
    assert run.format == "promptfoo"
    echo, boat = vars_id({"riddle": ECHO}), vars_id({"riddle": BOAT})
    assert (echo, boat) == ("vars-3611cb884b8d", "vars-74f881cad827")
    records = run.records()
    assert [(r.test_id, r.target, r.attempt) for r in records] == [
        (echo, "openai:gpt-5-mini", 1),
        (echo, "openai:gpt-5", 1),
        (boat, "openai:gpt-5-mini", 1),
        (boat, "openai:gpt-5", 1),
    ]
    assert [r.score for r in records] == [0.75, 0.5, 2 / 3, 2 / 3]
    assert [r.passed for r in records] == [False] * 4
    assert [r.latency_ms for r in records] == [5794, 6197, 4669, 5027]
    assert [(r.input_tokens, r.output_tokens) for r in records] == [
        (37, 245),
        (37, 204),
        (41, 157),
        (41, 102),
    ]
    assert records[1].cost_usd == 0.00208625
    # One scorer per assertion type; the row's score is promptfoo's own.
    assert records[0].scores == {"cost": 1.0, "latency": 0.0, "contains": 1.0, "llm-rubric": 1.0}
    assert records[2].scores == {"cost": 1.0, "latency": 0.0, "llm-rubric": 1.0}
    assert run.scorers == ["cost", "latency", "contains", "llm-rubric"]
    # A failed assertion fills "error" too (failureReason 1): a failure, not an error.
    assert not run.is_error.any()
    assert run.errors == {}
    assert run.input_hash[0] == run.input_hash[1] != run.input_hash[2] == run.input_hash[3]
    reference = json.dumps({"riddle": ECHO}, sort_keys=True, separators=(",", ":"))
    assert run.input_hash[0] == zlib.crc32(reference.encode())
    assert records[0].input == {"riddle": ECHO}
    assert records[1].output == "An echo."
    assert records[0].line is None
    assert run.status == "complete"
    assert run.config == {
        "model": ["openai:gpt-5", "openai:gpt-5-mini"],
        "prompt": "Solve this riddle: {{riddle}}",
        "description": "Comparing OpenAI flagship and mini models performance on riddles",
    }
    assert (run.started_at, run.finished_at) == ("2025-10-01T20:08:11.168Z", None)


def test_ids_are_stable_across_runs_of_the_same_suite() -> None:
    base = promptfoo.read(HERE / "sample-export.json")
    cand = promptfoo.read(HERE / "candidate-export.json")
    assert cand.test_ids == base.test_ids
    assert cand.input_hash.tolist() == base.input_hash.tolist()


def test_repeats_cached_responses_and_errors() -> None:
    run = promptfoo.read(HERE / "repeats-errors.json")
    first, second, cached, errored = run.records()
    two_plus_two = vars_id({"question": "What is 2 + 2?"})
    # The described test is known by its description; --repeat gave each attempt a new
    # testIdx, and attempts are numbered in testIdx order, not file order.
    assert [(r.test_id, r.attempt) for r in run] == [
        ("capital of France", 2),
        ("capital of France", 1),
        (two_plus_two, 1),
        (two_plus_two, 2),
    ]
    assert (first.score, first.passed, first.error) == (0.5, False, None)
    assert first.scores == {"equals": 0.0, "brevity": 1.0}  # named by its metric
    assert (second.score, second.passed) == (1.0, True)
    # A cached response: neither its latency nor its tokens are the provider's.
    assert (cached.latency_ms, cached.input_tokens, cached.output_tokens) == (None, None, None)
    assert cached.cost_usd == 0.0
    # failureReason 2: an infrastructure failure, scoring 0 and left out of the figures.
    assert (errored.error, errored.error_kind, errored.score) == (
        "API error: 429 Too Many Requests",
        "infra",
        0.0,
    )
    assert errored.scores == {}
    assert run.is_error.tolist() == [False, False, False, True]
    assert run.config == {
        "model": "openai:gpt-4o-mini",
        "prompt": "Answer briefly: {{question}}",
        "description": "Geography and arithmetic, repeated twice",
    }
    assert (run.started_at, run.finished_at) == (
        "2025-10-03T09:00:00.000Z",
        "2025-10-03T09:00:31.540000+00:00",
    )


def test_jsonl_rows_with_several_prompts() -> None:
    run = promptfoo.read(HERE / "two-prompts.jsonl")
    assert run.targets == ["haiku / terse", "haiku / verbose"]
    assert [(r.test_id, r.target, r.score, r.line) for r in run] == [
        ("explain tides", "haiku / terse", 1.0, 1),
        ("explain tides", "haiku / verbose", 0.5, 2),
        ("explain volcanoes", "haiku / terse", 0.5, 3),
        ("explain volcanoes", "haiku / verbose", 0.0, 4),
    ]
    assert run.config == {"model": "haiku", "prompt": ["terse", "verbose"]}
    assert (run.started_at, run.finished_at) == (None, None)


def test_how_a_test_is_known(tmp_path: Path) -> None:
    described = {"testCase": {"description": "same name"}}
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [
            # one description over two different tests: the vars digest tells them apart
            row(testIdx=0, vars={"q": "a"}, **described),
            row(testIdx=1, vars={"q": "b"}, **described),
            # promptfoo's own _conversation var differs between runs: it is left out
            row(testIdx=2, vars={"q": "c", "_conversation": []}),
            row(testIdx=3, vars={"_conversation": [{"input": "x"}], "q": "c"}),
            # nothing but testIdx: each row is its own case
            row(testIdx=4, vars={}),
        ],
    )
    ids = [r.test_id for r in promptfoo.read(path)]
    assert ids == [
        f"same name [{vars_id({'q': 'a'})}]",
        f"same name [{vars_id({'q': 'b'})}]",
        vars_id({"q": "c"}),
        vars_id({"q": "c"}),
        "test-4",
    ]


def test_keep_text_false_and_extra_fields() -> None:
    path = HERE / "repeats-errors.json"
    assert promptfoo.read(path, keep_text=False).texts is None
    run = promptfoo.read(path, extra_fields=["topic", "question", "id"])
    assert run.extra["topic"] == ["geo", "geo", "math", "math"]  # the test's metadata
    assert run.extra["question"][2] == "What is 2 + 2?"  # its vars
    assert run.extra["id"] == ["row-1", "row-0", "row-2", "row-3"]  # the row itself


def test_compare_two_exports() -> None:
    result = evaldelta.compare(
        promptfoo.read(HERE / "sample-export.json"),
        promptfoo.read(HERE / "candidate-export.json"),
        baseline_target="openai:gpt-5",
        candidate_target="openai:gpt-5",
    )
    assert result.test_ids == [vars_id({"riddle": ECHO}), vars_id({"riddle": BOAT})]
    assert result.delta.tolist() == [0.5, 0.0]
    assert result.unmatched_baseline == result.unmatched_candidate == []
    assert result.analysis is not None
    assert result.analysis.dataset.same
    assert result.analysis.differs_in == []


# -- bad input: each message says what, where and how to mend it -----------------------


def export(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"evalId": "eval-x", "results": {"version": 3, "results": rows}}


def write_json(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"evalId": "eval-x", "config": {}},
            'has no "results.results" list of result rows; export the eval with '
            "`promptfoo export <eval id>` or `promptfoo eval -o results.json`",
        ),
        (
            export([]),
            "has no result rows: no results to compare; check the eval ran its tests",
        ),
        (
            export([row(), row(score="high")]),
            '"results.results[1].score" must be a number, got "high"; '
            "re-export the results with promptfoo",
        ),
        (
            export([row(score=None, testCase={"description": "t1"})]),
            "results.results[0] (test 't1') has no \"score\"; every row that ran needs one: "
            "re-export the eval with a current promptfoo",
        ),
        (
            export([row(vars=None, testIdx=None)]),
            'results.results[0] has no "testCase.description", "vars" or "testIdx": nothing '
            "tells which test it is; give each test a description",
        ),
        (
            [row()],
            "expected a JSON object, got a list; is this a promptfoo results file?",
        ),
    ],
)
def test_bad_exports_are_named(tmp_path: Path, doc: Any, message: str) -> None:
    path = write_json(tmp_path, doc)
    with pytest.raises(ParseError) as info:
        promptfoo.read(path)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), None, message)


def test_bad_json_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{\n  "evalId": "x",\n  "results": {"results": [}\n}\n')
    with pytest.raises(ParseError) as info:
        promptfoo.read(path)
    assert (info.value.line, info.value.reason) == (
        3,
        "not valid JSON (invalid character); export the results again with promptfoo",
    )
    path.write_text('{\n  "evalId": "x",\n  "results": {\n')
    with pytest.raises(ParseError) as info:
        promptfoo.read(path)
    assert (info.value.line, info.value.reason) == (
        None,
        "not valid JSON: the file ends before the JSON does (was it cut short?)",
    )


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            [row(), row(score=None, testCase={"description": "t2"})],
            2,
            "row (test 't2') has no \"score\"; every row that ran needs one: "
            "re-export the eval with a current promptfoo",
        ),
        (
            [row(), "", row(latencyMs="slow")],
            3,
            '"latencyMs" must be a number, got "slow"; re-export the results with promptfoo',
        ),
        (
            [row(), '{"testIdx": 1, "promptIdx": 0, '],
            2,
            "not valid JSON: the line ends before the JSON does (was it cut short?); "
            "each line must be one promptfoo result row",
        ),
    ],
)
def test_bad_rows_are_named(
    tmp_path: Path, lines: list[dict[str, Any] | str], line: int, message: str
) -> None:
    path = write_jsonl(tmp_path / "results.jsonl", lines)
    with pytest.raises(ParseError) as info:
        promptfoo.read(path)
    assert (info.value.line, info.value.reason) == (line, message)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text("\n")
    with pytest.raises(ParseError) as info:
        promptfoo.read(path)
    assert str(info.value) == (
        f"{path}: is empty: no results to compare; check promptfoo wrote its output"
    )


# -- sniffing ---------------------------------------------------------------------------


def head(path: Path) -> bytes:
    return b"" if path.is_dir() else path.read_bytes()[:65536]


@pytest.mark.parametrize("path", sorted(HERE.iterdir()), ids=lambda p: p.name)
def test_sniffs_its_own_files(path: Path) -> None:
    assert promptfoo.sniff(path, head(path))


OTHERS = sorted(p for p in FIXTURES.rglob("*") if HERE not in (p, *p.parents))


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_leaves_other_formats_alone(path: Path) -> None:
    assert not promptfoo.sniff(path, head(path))


def test_leaves_agentv_jsonl_alone() -> None:
    line = b'{"test_id": "a", "target": "x", "score": 1}\n'
    assert not promptfoo.sniff(Path("results.jsonl"), line)


def test_scores_stay_floats() -> None:
    run = promptfoo.read(HERE / "two-prompts.jsonl")
    assert run.score.dtype.kind == "f"
    assert not math.isnan(run.latency_ms[0])
