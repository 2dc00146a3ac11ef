"""The OpenAI evals reader: the legacy oaieval log and the platform output items, and
every bad input it names."""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.errors import ParseError
from evaldelta.io import _openai_evals as openai_evals
from tests.conftest import FIXTURES, write_jsonl

HERE = FIXTURES / "openai_evals"
LOG = HERE / "230417220821DPM75QNS_auto_gpt_completion_fn_test-match.jsonl"


def test_reads_the_real_oaieval_log() -> None:
    run = openai_evals.read(LOG)
    assert run.format == "openai-evals"
    # The final report comes before the events (they are flushed at exit): still read.
    records = run.records()
    assert [(r.test_id, r.attempt, r.line) for r in records] == [
        ("test-match.s1.2", 1, 4),
        ("test-match.s1.1", 1, 6),
        ("test-match.s1.0", 1, 8),
    ]
    assert [(r.score, r.passed) for r in records] == [(0.0, False), (1.0, True), (0.0, False)]
    assert run.targets == ["auto_gpt_completion_fn"]
    # The log records no latency, no cost, and (for this completion fn) no usage.
    assert all(
        (r.latency_ms, r.input_tokens, r.output_tokens, r.cost_usd) == (None,) * 4 for r in records
    )
    assert records[0].input == (
        "Complete the phrase as concisely as possible.\nUser: OpenAI was founded in 20\nAssistant: "
    )
    assert (records[0].output, records[0].expected) == ("OpenAI was founded in 2015.2015", "15")
    assert run.input_hash[0] == zlib.crc32(records[0].input.encode())  # the text itself
    assert not run.is_error.any()
    assert run.status == "complete"
    assert run.config == {
        "model": "auto_gpt_completion_fn",
        "eval": "test-match.s1.simple-v0",
        "eval_class": "evals.elsuite.basic.match:Match",
        "eval_args": {"samples_jsonl": "test_match/samples.jsonl"},
        "seed": 20220722,
    }
    assert (run.started_at, run.finished_at) == (
        "2023-04-17T22:10:13.127375+00:00",
        "2023-04-17T22:12:04.691064+00:00",
    )


def test_log_of_an_interrupted_run() -> None:
    run = openai_evals.read(HERE / "oaieval-interrupted.jsonl")
    first, wrong, right, failed = run.records()
    # No final_report line: the run did not finish.
    assert run.status == "interrupted"
    assert [(r.test_id, r.attempt) for r in run] == [
        ("arithmetic.dev.0", 1),
        ("arithmetic.dev.1", 1),
        ("arithmetic.dev.1", 2),
        ("arithmetic.dev.2", 1),
    ]
    assert (first.input_tokens, first.output_tokens) == (10, 1)
    # Two samplings and two matches of one sample: paired in order.
    assert [(r.score, r.output_tokens) for r in (wrong, right)] == [(0.0, 2), (1.0, 3)]
    assert wrong.input == right.input == [{"role": "user", "content": "7*6="}]
    # An error event and no match: the sample did not run.
    assert (failed.error, failed.error_kind, failed.score, failed.passed) == (
        "RateLimitError: Rate limit reached for gpt-3.5-turbo",
        "infra",
        0.0,
        None,
    )
    assert failed.input is None
    assert run.input_hash[3] == 0
    assert run.config["max_samples"] == 4


def test_reads_api_output_items() -> None:
    run = openai_evals.read(HERE / "output-items.jsonl")
    right, wrong, failed = run.records()
    assert [(r.test_id, r.line) for r in run] == [("0", 1), ("1", 2), ("2", 3)]
    assert run.targets == ["gpt-4.1-mini-2025-04-14"]
    assert (right.score, right.passed, right.scores) == (
        1.0,
        True,
        {"Match output to human label": 1.0},
    )
    assert (right.input_tokens, right.output_tokens, right.latency_ms) == (58, 2, None)
    assert right.input == {"ticket_text": "My monitor won't turn on!", "correct_label": "Hardware"}
    assert right.output == [{"role": "assistant", "content": "Hardware"}]
    assert (wrong.score, wrong.passed) == (0.0, False)
    # The API sends an empty error on every sample: only a real one is an error.
    assert (failed.error, failed.error_kind, failed.score, failed.passed) == (
        "rate_limit_exceeded: Rate limit reached",
        "infra",
        0.0,
        None,
    )
    assert run.is_error.tolist() == [False, False, True]
    assert run.status == "complete"
    assert run.config == {
        "model": "gpt-4.1-mini-2025-04-14",
        "temperature": 1.0,
        "top_p": 1.0,
        "max_completion_tokens": 2048,
        "seed": 42,
    }
    assert (run.started_at, run.finished_at) == ("2025-03-27T16:14:29+00:00", None)


def test_reads_dashboard_export_rows() -> None:
    run = openai_evals.read(HERE / "openai-evals-items.jsonl")
    first, second = run.records()
    assert [r.test_id for r in run] == ["10", "3"]
    # No overall score: the mean of the graders, whatever their scales.
    assert first.scores == {"Relevance": 6.0, "Directness": 3.0, "Tool called": 1.0}
    assert first.score == pytest.approx(10 / 3)
    assert (first.passed, second.passed) == (True, False)
    assert run.targets == [None]  # these rows name no model
    assert (first.input_tokens, first.latency_ms) == (None, None)
    assert first.input["input"] == "How do I unsubscribe from marketing emails?"
    assert run.config == {}


def test_several_runs_of_one_model_in_one_file() -> None:
    run = openai_evals.read(HERE / "openai-evals-multi-run-items.jsonl")
    failed, passed = run.records()
    assert run.targets == ["gpt-4.1 (evalrun_error_fixture)", "gpt-4.1 (evalrun_pass_fixture)"]
    assert failed.test_id == passed.test_id == "0"
    assert (failed.error, failed.error_kind, failed.score) == (
        "invalid_request_error: Response input item missing role",
        "infra",
        0.0,
    )
    assert (passed.score, passed.passed, passed.input_tokens, passed.output_tokens) == (
        1.0,
        True,
        8,
        2,
    )
    assert run.input_hash[0] == run.input_hash[1] != 0
    assert run.config == {"model": "gpt-4.1"}


def test_keep_text_false_and_extra_fields() -> None:
    assert openai_evals.read(LOG, keep_text=False).texts is None
    run = openai_evals.read(LOG, extra_fields=["event_id", "picked"])
    assert run.extra["event_id"] == [1, 3, 5]  # from the match event
    assert run.extra["picked"] == [None, "George Washington", None]  # from its data
    items = openai_evals.read(HERE / "output-items.jsonl", extra_fields=["correct_label"])
    assert items.extra["correct_label"] == ["Hardware", "Software", "Other"]


def test_compare_two_runs_of_output_items() -> None:
    result = evaldelta.compare(
        openai_evals.read(HERE / "output-items.jsonl"),
        openai_evals.read(HERE / "output-items-candidate.jsonl"),
    )
    # Item 2 failed in the baseline: it could not be compared.
    assert result.test_ids == ["0", "1"]
    assert result.not_run == ["2"]
    assert result.delta.tolist() == [0.0, 1.0]
    assert result.analysis is not None
    assert result.analysis.dataset.same
    assert result.analysis.differs_in == ["model"]


# -- bad input: each message says what, where and how to mend it -----------------------

SPEC = {"spec": {"completion_fns": ["gpt-4"], "eval_name": "e.dev.v0", "run_id": "r1"}}


def event(sample: str | None, kind: str, data: Any) -> dict[str, Any]:
    return {"run_id": "r1", "event_id": 0, "sample_id": sample, "type": kind, "data": data}


def item(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "datasource_item_id": 0,
        "results": [{"name": "g", "score": 1.0, "passed": True}],
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        (
            [SPEC, event("s.0", "match", {"expected": "4"})],
            2,
            "match event of sample 's.0' has no \"data.correct\"; "
            "it must say whether the answer was right (true or false)",
        ),
        (
            [SPEC, event("s.0", "match", {"correct": "yes"})],
            2,
            '"match" event: "data.correct" must be true or false, got "yes"',
        ),
        (
            [SPEC, event("s.0", "match", [True])],
            2,
            '"match" event: expected a JSON object, got a list; '
            'the "data" of a "match" event must be one',
        ),
        (
            [SPEC, event(None, "match", {"correct": True})],
            2,
            '"match" event has no "sample_id"; every event of a sample needs one',
        ),
        (
            [SPEC, event("s.0", "match", {"correct": True}), "", '{"run_id": "r1", "sample_'],
            4,
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be an oaieval event",
        ),
        (
            [item(), item(datasource_item_id=None)],
            2,
            'output item has no "datasource_item_id" (nor "data_source_idx"); every item '
            "needs the index of its data source item",
        ),
        (
            [item(), item(datasource_item_id=4, results=[])],
            2,
            'output item \'4\' has no grader scores ("results[].score" or "grades") and no '
            '"sample.error"; export the run\'s output items again once grading has finished',
        ),
        (
            [item(), item(results=[{"name": "g", "score": "high"}])],
            2,
            '"results[0].score" must be a number, got "high"',
        ),
        (
            [item(), "[1, 2]"],
            2,
            "expected a JSON object, got a list; each line must be an eval run output item",
        ),
    ],
)
def test_bad_lines_are_named(
    tmp_path: Path, lines: list[dict[str, Any] | str], line: int, message: str
) -> None:
    path = write_jsonl(tmp_path / "results.jsonl", lines)
    with pytest.raises(ParseError) as info:
        openai_evals.read(path)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), line, message)
    assert str(info.value) == f"{path}:{line}: {message}"


def test_log_without_match_events(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "log.jsonl",
        [SPEC, event("s.0", "metrics", {"score": 1}), {"final_report": {"score": 1}}],
    )
    with pytest.raises(ParseError) as info:
        openai_evals.read(path)
    assert (info.value.line, info.value.reason) == (
        None,
        'has no "match" events: evaldelta reads pass/fail from oaieval\'s match events '
        "(a model-graded eval records metrics instead); convert the results to JSONL with "
        "test_id and score",
    )


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text("\n\n")
    with pytest.raises(ParseError) as info:
        openai_evals.read(path)
    assert str(info.value) == (
        f"{path}: is empty: no results to compare; check the eval wrote its results"
    )


# -- sniffing ---------------------------------------------------------------------------


def head(path: Path) -> bytes:
    return b"" if path.is_dir() else path.read_bytes()[:65536]


@pytest.mark.parametrize("path", sorted(HERE.iterdir()), ids=lambda p: p.name)
def test_sniffs_its_own_files(path: Path) -> None:
    assert openai_evals.sniff(path, head(path))


OTHERS = sorted(p for p in FIXTURES.rglob("*") if HERE not in (p, *p.parents))


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_leaves_other_formats_alone(path: Path) -> None:
    assert not openai_evals.sniff(path, head(path))


@pytest.mark.parametrize(
    "first",
    [
        b'{"test_id": "a", "target": "x", "score": 1}',
        b'{"spec": "a", "test_id": "a", "score": 1}',
        b'{"run_id": "r", "sample_id": "s", "score": 1}',
        b'{"results": [], "test_id": "a"}',
        b"{",
    ],
)
def test_leaves_agentv_jsonl_alone(first: bytes) -> None:
    assert not openai_evals.sniff(Path("results.jsonl"), first + b"\n")
