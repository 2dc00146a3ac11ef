"""Reader for DeepEval test runs: the JSON DeepEval saves for a ``deepeval test run`` or
an ``evaluate()`` call (camelCase keys: ``testCases``, ``metricsData``, ...).

Each entry of ``testCases`` (and of ``conversationalTestCases``) is one attempt. DeepEval
has no repeats: entries with the same ``name`` are attempts of one case. Fields read:

- test id: ``name``. When one name covers test cases with different inputs (a loop of
  ``assert_test`` calls in one pytest test), the input's CRC-32 is appended
  (``"name [1a2b3c4d]"``), so each input stays one case and the id stays the same
  across runs.
- scorers: the case's own ``metricsData[]``, ``name`` -> ``score`` (a name met twice
  counts once, averaged). DeepEval gives a case no overall score: its score is the
  **mean of its metric scores**. The run-level ``metricsScores`` is never read: it
  also gathers the metrics of the trace's spans, which are not scores of the case.
- passed: the case's ``success``, else whether every metric succeeded.
- a metric with an ``error`` did not run: the record is an infrastructure failure, with
  the metric's name and error as message. A metric whose ``score`` is absent or null
  (and no error) is absent for that scorer only, as in every reader. A trace whose status is
  ``ERRORED`` is an error of the application (it still counts, with its scores).
- latency: ``completionTime`` (seconds), else the trace's ``startTime`` to
  ``endTime``; tokens: ``inputTokenCount``/``outputTokenCount``, else the sum over the
  trace's LLM spans; cost: ``tokenCost`` (``evaluationCost`` is the judges' cost, not
  the application's, and is not read).
- tags: the case's ``tags``, else its trace's.
- text, when asked for: ``input`` (a conversation's ``scenario`` or turns),
  ``actualOutput``, ``expectedOutput`` (or ``expectedOutcome``), ``metadata``.
  ``input_hash`` is a CRC-32 of the input (a conversation's scenario, else its user
  turns): of its UTF-8 text when it is a string, else of its sorted-key JSON.
- target: the ``model`` of the run's ``hyperparameters`` when it names one (DeepEval
  tests an application, and names no target of its own).
- run: config = the run's ``hyperparameters``, plus ``dataset`` (``datasetAlias``) and
  ``evaluation_model`` (the judge models named by the metrics); started and finished
  from the traces' first start and last end. DeepEval records no sign of an
  interrupted run: every run reads as complete.

``extra_fields`` are looked up in each test case, then in its ``metadata``. ``mapping``
(``--map``) does not apply to this fixed format and is ignored.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._reader import (
    RAW_NONE,
    ReadOptions,
    decode_document,
    decoded,
    extra_columns,
    read_content,
    reader,
)
from evaldelta.io._source import crc_of, fingerprint_bytes, paused_gc, raw_fingerprint_bytes
from evaldelta.model import Run

NAME = "deepeval"


class _Metric(msgspec.Struct, gc=False):
    """One entry of a test case's ``metricsData``: a metric's score and outcome."""

    name: str | None = None
    score: float | None = None
    success: bool | None = None
    error: str | None = None
    evaluationModel: str | None = None  # noqa: N815 - the file's own spelling


class _Span(msgspec.Struct, gc=False):
    name: str | None = None
    status: str | None = None
    error: str | None = None
    inputTokenCount: float | None = None  # noqa: N815
    outputTokenCount: float | None = None  # noqa: N815


class _Trace(msgspec.Struct, gc=False):
    status: str | None = None
    error: str | None = None
    startTime: str | None = None  # noqa: N815
    endTime: str | None = None  # noqa: N815
    tags: list[str] | None = None
    baseSpans: list[_Span] | None = None  # noqa: N815
    agentSpans: list[_Span] | None = None  # noqa: N815
    llmSpans: list[_Span] | None = None  # noqa: N815
    retrieverSpans: list[_Span] | None = None  # noqa: N815
    toolSpans: list[_Span] | None = None  # noqa: N815


class _Turn(msgspec.Struct, gc=False):
    role: str | None = None
    content: msgspec.Raw = RAW_NONE


class _TestCase(msgspec.Struct, gc=False):
    """One test case; every other field is skipped unparsed (``gc=False``: no cycles)."""

    name: str | None = None
    input: msgspec.Raw = RAW_NONE
    actualOutput: msgspec.Raw = RAW_NONE  # noqa: N815
    expectedOutput: msgspec.Raw = RAW_NONE  # noqa: N815
    success: bool | None = None
    metricsData: list[_Metric] | None = None  # noqa: N815
    tokenCost: float | None = None  # noqa: N815
    inputTokenCount: float | None = None  # noqa: N815
    outputTokenCount: float | None = None  # noqa: N815
    completionTime: float | None = None  # noqa: N815
    tags: list[str] | None = None
    metadata: msgspec.Raw = RAW_NONE
    additionalMetadata: msgspec.Raw = RAW_NONE  # noqa: N815
    trace: _Trace | None = None
    # conversational test cases
    scenario: msgspec.Raw = RAW_NONE
    expectedOutcome: msgspec.Raw = RAW_NONE  # noqa: N815
    turns: list[_Turn] | None = None


class _TestRun(msgspec.Struct, gc=False):
    testCases: list[_TestCase] | None = None  # noqa: N815
    conversationalTestCases: list[_TestCase] | None = None  # noqa: N815
    hyperparameters: dict[str, Any] | None = None
    datasetAlias: str | None = None  # noqa: N815


_DECODER = msgspec.json.Decoder(_TestRun)

_CASES = re.compile(rb'"testCases"\s*:')
_RUN_KEYS = re.compile(
    rb'"(?:metricsData|metricsScores|conversationalTestCases|testPassed|testFailed)"\s*:'
)


def sniff(path: Path, head: bytes) -> bool:
    """True for a DeepEval test run: one JSON document with ``"testCases"`` and one of
    DeepEval's own keys (``metricsData``, ``metricsScores``, ``testPassed``, ...)."""
    text = head.lstrip()
    return text.startswith(b"{") and bool(_CASES.search(text)) and bool(_RUN_KEYS.search(text))


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read a DeepEval test run into a :class:`Run` (``mapping`` is ignored)."""
    src, data = read_content(path, "no test cases to compare; check DeepEval saved its test run")
    with paused_gc():
        run = decode_document(
            src,
            data,
            _DECODER,
            not_an_object="is this a DeepEval test run?",
            mend="save the test run again with DeepEval",
        )
        return _to_run(src, data, run, options.keep_text, options.extra)


# -- errors -----------------------------------------------------------------------------


# -- building the run -------------------------------------------------------------------


def _case_input(case: _TestCase) -> bytes:
    """What the case asks: its input, a conversation's scenario, or its user turns."""
    if len(case.input):
        return raw_fingerprint_bytes(case.input)
    if len(case.scenario):
        return raw_fingerprint_bytes(case.scenario)
    if case.turns:
        said = [msgspec.json.decode(t.content) for t in case.turns if t.role == "user"]
        return fingerprint_bytes(said) if said else b""
    return b""


def _test_ids(src: str, cases: list[_TestCase], names: list[str], canon: list[bytes]) -> list[str]:
    inputs_by_name: dict[str, set[bytes]] = {}
    for i, (case, where) in enumerate(zip(cases, names, strict=True)):
        if not case.name:
            raise ParseError(
                src,
                None,
                f'{where} has no "name"; every test case needs one (DeepEval names them '
                "test_case_0, test_case_1, ... unless given a name)",
            )
        inputs_by_name.setdefault(case.name, set()).add(canon[i])
    shared = {name for name, found in inputs_by_name.items() if len(found) > 1}
    if not shared:
        return [c.name or "" for c in cases]
    return [
        f"{c.name} [{crc_of(k):08x}]" if c.name in shared else c.name or ""
        for c, k in zip(cases, canon, strict=True)
    ]


def _metric_failures(metrics: list[_Metric]) -> str | None:
    """The metrics that did not run, with their errors; ``None`` when all ran."""
    failed = [f"{m.name or 'metric'}: {m.error}" for m in metrics if m.error]
    return "; ".join(failed) or None


def _spans(trace: _Trace) -> list[_Span]:
    return [
        s
        for group in (
            trace.agentSpans,
            trace.llmSpans,
            trace.toolSpans,
            trace.retrieverSpans,
            trace.baseSpans,
        )
        for s in group or ()
    ]


def _trace_error(trace: _Trace | None) -> str | None:
    """The error of a trace that ended ``ERRORED``: its own, else its first span's."""
    if trace is None or (trace.status or "").upper() != "ERRORED":
        return None
    if trace.error:
        return f"trace errored: {trace.error}"
    for s in _spans(trace):
        if s.error:
            return f"trace errored in span {s.name!r}: {s.error}"
    return "trace errored"


def _when(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def _trace_latency(trace: _Trace | None) -> float | None:
    if trace is None:
        return None
    start, end = _when(trace.startTime), _when(trace.endTime)
    if start is None or end is None or (start.tzinfo is None) != (end.tzinfo is None):
        return None
    return (end - start).total_seconds() * 1000


def _trace_tokens(trace: _Trace | None) -> tuple[float | None, float | None]:
    """Tokens summed over the trace's LLM spans (``None`` when no span counts them)."""
    spans = (trace.llmSpans if trace is not None else None) or []
    ins = [s.inputTokenCount for s in spans if s.inputTokenCount is not None]
    outs = [s.outputTokenCount for s in spans if s.outputTokenCount is not None]
    return (sum(ins) if ins else None), (sum(outs) if outs else None)


def _extra_columns(data: bytes, names: tuple[str, ...], n: int) -> dict[str, list[Any]]:
    """The ``extra_fields`` asked for: from each test case, else from its metadata."""
    if not names:
        return {}
    doc = msgspec.json.decode(data)
    cases = [c for key in ("testCases", "conversationalTestCases") for c in doc.get(key) or ()]
    return extra_columns(
        cases[:n], names, lambda case: (case.get("metadata"), case.get("additionalMetadata"))
    )


def _to_run(src: str, data: bytes, run: _TestRun, keep_text: bool, extra: tuple[str, ...]) -> Run:
    single = run.testCases or []
    conversational = run.conversationalTestCases or []
    cases = [*single, *conversational]
    n = len(cases)
    if n == 0:
        raise ParseError(
            src,
            None,
            'has no "testCases": no test cases to compare; check the test run evaluated some',
        )
    where = [f"testCases[{i}]" for i in range(len(single))] + [
        f"conversationalTestCases[{i}]" for i in range(len(conversational))
    ]
    canon = [_case_input(c) for c in cases]
    test_ids = _test_ids(src, cases, where, canon)

    scorer_rows: list[dict[str, float]] = []
    scores: list[float] = []
    passed: list[bool | None] = []
    errors: dict[int, str] = {}
    error_kinds: dict[int, str] = {}
    judges: set[str] = set()
    for i, case in enumerate(cases):
        metrics = case.metricsData or []
        seen: dict[str, list[float]] = {}
        for m in metrics:
            if m.score is not None and not m.error:
                seen.setdefault(m.name or "metric", []).append(m.score)
            if m.evaluationModel:
                judges.add(m.evaluationModel)
        by_name = {k: sum(v) / len(v) for k, v in seen.items()}
        scorer_rows.append(by_name)
        failure = _metric_failures(metrics)
        if failure is not None:
            errors[i], error_kinds[i] = failure, "infra"
        elif (trace_error := _trace_error(case.trace)) is not None:
            errors[i] = trace_error
        if by_name:
            scores.append(sum(by_name.values()) / len(by_name))
        elif failure is not None:
            scores.append(0.0)  # no metric ran: left out as an infrastructure failure
        else:
            raise ParseError(
                src,
                None,
                f'{where[i]} ({case.name!r}) has no metric scores ("metricsData"); '
                "evaluate each test case with at least one metric",
            )
        successes = [m.success for m in metrics if m.success is not None]
        if case.success is not None:
            passed.append(case.success)
        else:
            passed.append(all(successes) if successes else None)

    names = dict.fromkeys(k for d in scorer_rows for k in d)
    scorer_scores = {name: [d.get(name) for d in scorer_rows] for name in names}

    traces = [c.trace for c in cases]
    latency = [
        c.completionTime * 1000 if c.completionTime is not None else _trace_latency(t)
        for c, t in zip(cases, traces, strict=True)
    ]
    input_tokens: list[float | None] = []
    output_tokens: list[float | None] = []
    for c, t in zip(cases, traces, strict=True):
        if c.inputTokenCount is None and c.outputTokenCount is None:
            tokens_in, tokens_out = _trace_tokens(t)
        else:
            tokens_in, tokens_out = c.inputTokenCount, c.outputTokenCount
        input_tokens.append(tokens_in)
        output_tokens.append(tokens_out)
    tags = {
        i: tuple(found)
        for i, (c, t) in enumerate(zip(cases, traces, strict=True))
        if (found := c.tags or (t.tags if t is not None else None))
    }

    texts = None
    if keep_text:
        texts = {
            "input": [
                decoded(c.input)
                if len(c.input)
                else decoded(c.scenario)
                if len(c.scenario)
                else [{"role": t.role, "content": decoded(t.content)} for t in c.turns]
                if c.turns
                else None
                for c in cases
            ],
            "output": [decoded(c.actualOutput) for c in cases],
            "expected": [
                decoded(c.expectedOutput if len(c.expectedOutput) else c.expectedOutcome)
                for c in cases
            ],
            "metadata": [
                decoded(c.metadata if len(c.metadata) else c.additionalMetadata) for c in cases
            ],
        }

    config: dict[str, Any] = dict(run.hyperparameters or {})
    model = config.get("model")
    target = model if isinstance(model, str) and model else None
    if run.datasetAlias:
        config["dataset"] = run.datasetAlias
    if judges:
        config["evaluation_model"] = sorted(judges)[0] if len(judges) == 1 else sorted(judges)
    starts = [w for t in traces if t is not None and (w := _when(t.startTime)) is not None]
    ends = [w for t in traces if t is not None and (w := _when(t.endTime)) is not None]
    started_at = finished_at = None
    try:
        started_at = min(starts).isoformat() if starts else None
        finished_at = max(ends).isoformat() if ends else None
    except TypeError:  # stamps with and without a time zone: no honest order
        started_at = finished_at = None

    return Run.from_columns(
        source=src,
        format=NAME,
        test_id=test_ids,
        score=scores,
        target=[target] * n,
        passed=passed,
        latency_ms=latency,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=[c.tokenCost for c in cases],
        errors=errors,
        error_kinds=error_kinds,
        tags=tags,
        scorer_scores=scorer_scores,
        texts=texts,
        input_hash=[crc_of(k) for k in canon],
        extra=_extra_columns(data, extra, n),
        status="complete",
        config=config,
        started_at=started_at,
        finished_at=finished_at,
    )
