"""The DeepEval reader: the real test run, metric errors, repeated names, conversations,
and every bad input it names."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.errors import ParseError
from evaldelta.io import _deepeval as deepeval
from tests.conftest import FIXTURES

HERE = FIXTURES / "deepeval"


def faq_id(question: str) -> str:
    """The documented id of a case whose name covers several inputs."""
    return f"test_faq [{zlib.crc32(question.encode()):08x}]"


def test_reads_the_real_test_run() -> None:
    run = deepeval.read(HERE / "test_run_sample.json")
    assert run.format == "deepeval"
    (r,) = run.records()
    assert (r.test_id, r.target, r.attempt, r.passed) == ("sample_test_case", None, 1, False)
    # The case's own metrics only: the run-level metricsScores also holds the spans'
    # Faithfulness (0.91, 0.88), which are not scores of this case.
    assert r.scores == {"Answer Relevancy": 0.92, "Faithfulness": 0.45}
    assert r.score == pytest.approx((0.92 + 0.45) / 2)
    assert run.scorers == ["Answer Relevancy", "Faithfulness"]
    # No completionTime or token counts on the case: the trace's span and its LLM spans.
    assert r.latency_ms == pytest.approx(11420)
    assert (r.input_tokens, r.output_tokens) == (1200 + 2200 + 540 + 880, 48 + 0 + 180 + 64)
    assert r.cost_usd is None  # evaluationCost is the judges' cost, not the application's
    # The trace ended ERRORED (a rate limit inside the agent): an error of the application,
    # not an infrastructure failure; the case keeps its scores.
    assert r.error == (
        "trace errored in span 'synthesize_answer': "
        "openai.RateLimitError: Rate limit exceeded for gpt-4o (tier 1)."
    )
    assert r.error_kind is None
    assert r.tags == ("rag", "experimental", "v2")
    assert r.input == "What is CECL forecasting and how does Abrigo handle allowance variance?"
    assert (r.output, r.expected, r.line) == ("{...}", None, None)
    assert run.input_hash[0] == zlib.crc32(r.input.encode())  # the text itself
    assert run.status == "complete"
    assert run.config == {"evaluation_model": "gpt-5.4"}
    assert (run.started_at, run.finished_at) == (
        "2026-05-12T03:01:00+00:00",
        "2026-05-12T03:01:11.420000+00:00",
    )


def test_reads_every_kind_of_case() -> None:
    run = deepeval.read(HERE / "test_run_variants.json")
    refund, abroad, delivery, payment, convo = run.records()
    assert refund.test_id == "test_refund"
    assert (refund.score, refund.passed) == (pytest.approx(0.85), True)
    assert (refund.latency_ms, refund.input_tokens, refund.output_tokens, refund.cost_usd) == (
        1250,
        120,
        30,
        0.00042,
    )
    assert (refund.tags, refund.metadata) == (("refunds",), {"ticket": "T-1"})
    assert refund.expected == "We offer a 30-day full refund at no extra cost."
    # One name over two inputs (assert_test in a loop): each input stays its own case.
    assert abroad.test_id == faq_id("Do you ship abroad?")
    assert delivery.test_id == faq_id("How long does delivery take?")
    assert (abroad.score, abroad.passed, abroad.input_tokens) == (0.6, False, None)
    # The judge errored: the metric did not run, an infrastructure failure scoring 0.
    assert (payment.score, payment.scores, payment.passed) == (0.0, {}, False)
    assert (payment.error, payment.error_kind) == (
        "Answer Relevancy: RateLimitError: Rate limit reached for gpt-4o",
        "infra",
    )
    assert convo.test_id == "convo_return"
    assert (convo.score, convo.input, convo.expected) == (
        1.0,
        "A customer wants to return shoes",
        "A return label is sent",
    )
    assert run.is_error.tolist() == [False, False, False, True, False]
    assert run.targets == ["gpt-4o-mini"]  # the hyperparameters' model
    assert run.config == {
        "model": "gpt-4o-mini",
        "prompt template": "You are a helpful support agent.",
        "dataset": "support-faq",
        "evaluation_model": "gpt-4o",
    }
    assert (run.started_at, run.finished_at) == (None, None)


def test_keep_text_false_and_extra_fields() -> None:
    path = HERE / "test_run_variants.json"
    assert deepeval.read(path, keep_text=False).texts is None
    run = deepeval.read(path, extra_fields=["ticket", "order"])
    assert run.extra["ticket"] == ["T-1", "T-2", None, None, None]  # from the metadata
    assert run.extra["order"] == [0, 1, 2, 3, 0]  # from the test case


def test_compare_two_test_runs() -> None:
    result = evaldelta.compare(
        deepeval.read(HERE / "test_run_variants.json"),
        deepeval.read(HERE / "test_run_candidate.json"),
    )
    assert result.test_ids == [
        "test_refund",
        faq_id("Do you ship abroad?"),
        faq_id("How long does delivery take?"),
        "convo_return",
    ]
    assert result.delta.tolist() == pytest.approx([-0.15, 0.35, 0.0, 0.0])
    assert result.unmatched_baseline == result.unmatched_candidate == []
    assert result.analysis is not None
    assert result.analysis.dataset.same
    assert result.analysis.differs_in == ["model"]
    # test_payment's judge failed in the baseline: it could not be compared.
    assert result.not_run == ["test_payment"]


# -- bad input: each message says what, where and how to mend it -----------------------


def case(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "t",
        "input": "hi",
        "success": True,
        "metricsData": [{"name": "m", "score": 1.0, "success": True}],
    }
    base.update(fields)
    return base


def write(tmp_path: Path, doc: Any) -> Path:
    path = tmp_path / "test_run.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            {"testCases": [], "metricsScores": []},
            'has no "testCases": no test cases to compare; check the test run evaluated some',
        ),
        (
            {"testCases": [case(), case(name=None)]},
            'testCases[1] has no "name"; every test case needs one (DeepEval names them '
            "test_case_0, test_case_1, ... unless given a name)",
        ),
        (
            {"testCases": [case(), case(name="t2", metricsData=[])]},
            "testCases[1] ('t2') has no metric scores (\"metricsData\"); "
            "evaluate each test case with at least one metric",
        ),
        (
            {"testCases": [case(metricsData=[{"name": "m", "score": "high"}])]},
            '"testCases[0].metricsData[0].score" must be a number, got "high"; '
            "save the test run again with DeepEval",
        ),
        (
            {"testCases": {"name": "t"}},
            '"testCases" must be a list, got {"name":"t"}; save the test run again with DeepEval',
        ),
        (
            [case()],
            "expected a JSON object, got a list; is this a DeepEval test run?",
        ),
    ],
)
def test_bad_test_runs_are_named(tmp_path: Path, doc: Any, message: str) -> None:
    path = write(tmp_path, doc)
    with pytest.raises(ParseError) as info:
        deepeval.read(path)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), None, message)


def test_bad_json_and_empty_files(tmp_path: Path) -> None:
    path = tmp_path / "test_run.json"
    path.write_text('{\n  "testCases": [\n    {"name": "t",}\n  ]\n}\n')
    with pytest.raises(ParseError) as info:
        deepeval.read(path)
    assert (info.value.line, info.value.reason) == (
        3,
        "not valid JSON (trailing comma in object); save the test run again with DeepEval",
    )
    path.write_text("   ")
    with pytest.raises(ParseError) as info:
        deepeval.read(path)
    assert str(info.value) == (
        f"{path}: is empty: no test cases to compare; check DeepEval saved its test run"
    )


# -- sniffing ---------------------------------------------------------------------------


def head(path: Path) -> bytes:
    return b"" if path.is_dir() else path.read_bytes()[:65536]


@pytest.mark.parametrize("path", sorted(HERE.iterdir()), ids=lambda p: p.name)
def test_sniffs_its_own_files(path: Path) -> None:
    assert deepeval.sniff(path, head(path))


OTHERS = sorted(p for p in FIXTURES.rglob("*") if HERE not in (p, *p.parents))


@pytest.mark.parametrize("path", OTHERS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_leaves_other_formats_alone(path: Path) -> None:
    assert not deepeval.sniff(path, head(path))


def test_leaves_agentv_jsonl_alone() -> None:
    line = b'{"test_id": "a", "target": "x", "score": 1}\n'
    assert not deepeval.sniff(Path("results.jsonl"), line)
