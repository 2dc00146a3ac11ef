"""Runs made against a baseline (``--against RUN --stop-when-settled``): the cases in the
baseline's order, the sequence fed in that order whatever order attempts finish in,
and the run stopped (and stored ``stopped early``) once the comparison is settled."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.errors import UsageError
from evaldelta.model import Run
from evaldelta.runner._engine import EvalOptions, SequenceMoved, plan_suite, run_suite
from evaldelta.runner._sequential import Against, Sequencer
from evaldelta.runner._spec import AssertionSpec, RetryPolicy, Suite, TargetSpec, TestCase
from evaldelta.stats._sequential import confidence_sequence
from evaldelta.store import RunStore
from tests.runner.fake_openai import FakeOpenAI, Received, Step


def _chance(*key: object) -> float:
    digest = hashlib.sha256(repr(key).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        # Model "base" is right on 55% of the questions, "better" on 85% (mostly the
        # same ones), "same" exactly where "base" is.
        rates = {"base": 0.55, "same": 0.55, "better": 0.85}

        def answer(request: Received) -> Step:
            question = str(request["messages"][-1]["content"])
            right = _chance("q", question) < rates[str(request["model"])]
            return Step(content="right" if right else "wrong", usage=(100, 10))

        s.responder = answer
        yield s


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.db") as s:
        yield s


def _suite(server: FakeOpenAI, n: int = 400, workers: int = 8) -> Suite:
    tests = tuple(
        TestCase(
            id=f"t{i:03d}",
            input=f"question {i}",
            assertions=(AssertionSpec(type="contains", value="right", metric="right"),),
        )
        for i in range(n)
    )
    targets = tuple(
        TargetSpec(name=m, type="openai", settings={"base_url": server.base_url, "model": m})
        for m in ("base", "same", "better")
    )
    return Suite(
        name="s",
        tests=tests,
        targets=targets,
        hash="h",
        concurrency=workers,
        seed=5,
        retries=RetryPolicy(max=2, initial_delay_s=0.01, max_delay_s=0.02),
    )


def _baseline(suite: Suite, store: RunStore) -> Run:
    plan = plan_suite(suite, EvalOptions(name="main", targets=("base",)))
    outcome = asyncio.run(run_suite(plan, store))
    assert outcome.status == "complete"
    return store.get_run(outcome.run.id)


def _against_run(
    suite: Suite,
    store: RunStore,
    target: str,
    *,
    margin: float | None = None,
    events: list[Any] | None = None,
) -> Any:
    base = _baseline(suite, store)
    against = Against.of_run(base, label=base.source, run_id=1, margin=margin, seed=suite.seed)
    plan = plan_suite(suite, EvalOptions(name="pr", targets=(target,), order=against.order))
    on_event = events.append if events is not None else None
    return asyncio.run(run_suite(plan, store, against=against, on_event=on_event))


def test_a_clearly_better_candidate_stops_early_and_is_stored_so(
    server: FakeOpenAI, store: RunStore
) -> None:
    suite = _suite(server)
    events: list[Any] = []
    outcome = _against_run(suite, store, "better", events=events)
    assert outcome.status == "stopped early"
    stored = outcome.run
    assert stored.status == "stopped early"
    how = stored.sequential
    assert how is not None
    assert how["settled"]
    assert how["verdict"] == "Better"
    assert 20 <= how["after"] < 300
    assert how["of"] == 400
    # Calls in flight finish (and cases that finished ahead of their turn are kept);
    # nothing new starts: far fewer calls than planned.
    assert how["after"] <= how["cases_run"] < 300
    assert server.count() == 400 + how["cases_run"]
    assert how["saved"]["cases"] == 400 - how["cases_run"]
    assert how["saved"]["tokens"] == pytest.approx(110 * how["saved"]["cases"], rel=1e-6)
    assert how["reason"].startswith(f"settled Better after {how['after']} of 400 cases; ")
    assert outcome.stop_reason == how["reason"]
    # The progress events carry the sequence as cases enter it, in order (several at
    # once when a case that held them up comes in).
    moved = [e for e in events if isinstance(e, SequenceMoved)]
    counts = [e.cases for e in moved]
    assert counts == sorted(set(counts))
    assert counts[-1] == how["cases_in_sequence"]
    first = next(e for e in moved if e.settled is not None)
    assert first.settled == "Better"
    assert first.cases >= how["after"]
    assert all(e.settled is None for e in moved if e.cases < how["after"])

    # Compare judges it by the sequence; the cases it did not reach are no refusal.
    run = store.get_run(stored.id)
    assert run.case_order == store.get_run(1).case_order
    # (The fake server's latencies are the machine's noise: no slowdown is a Trade-off.)
    result = evaldelta.compare(
        store.get_run(1), run, settings=evaldelta.Settings(max_slowdown=100.0)
    )
    assert result.verdict.kind == "Better"
    assert "confidence sequence" in result.verdict.reason
    assert not result.refusals
    assert any(p.code == "sequential" for p in result.problems)
    seq = result.analysis.sequential
    assert seq is not None
    assert seq.record == how
    assert seq.side == "candidate"
    assert len(seq.not_reached) == 400 - how["cases_run"]
    # The sequence over the cases in the order they ran, recomputed from the records.
    order = {t: i for i, t in enumerate(run.case_order or [])}
    rows = sorted(range(len(result.test_ids)), key=lambda i: order[result.test_ids[i]])
    expected = confidence_sequence(result.delta[rows])
    assert seq.interval.ci_low == pytest.approx(expected.low[-1])
    assert seq.interval.ci_high == pytest.approx(expected.high[-1])
    assert result.verdict.low == pytest.approx(expected.low[-1])


def test_identical_targets_run_to_the_end(server: FakeOpenAI, store: RunStore) -> None:
    suite = _suite(server, n=200)
    outcome = _against_run(suite, store, "same")
    assert outcome.status == "complete"
    how = outcome.run.sequential
    assert how is not None
    assert not how["settled"]
    assert how["verdict"] is None
    assert how["saved"] is None
    assert how["reason"] == "did not settle within 200 of 200 cases"
    result = evaldelta.compare(store.get_run(1), store.get_run(outcome.run.id))
    assert result.verdict.kind == "Inconclusive"
    assert "confidence sequence" in result.verdict.reason


def test_identical_targets_with_a_margin_stop_on_no_change(
    server: FakeOpenAI, store: RunStore
) -> None:
    # One call at a time: with several, a straggler holds the cases after it back.
    suite = _suite(server, n=400, workers=1)
    outcome = _against_run(suite, store, "same", margin=0.10)
    assert outcome.status == "stopped early"
    how = outcome.run.sequential
    assert how["verdict"] == "No change"
    assert how["margin"] == 0.10
    assert how["after"] < 400
    result = evaldelta.compare(store.get_run(1), store.get_run(outcome.run.id))
    assert result.verdict.kind == "No change"
    assert result.verdict.reason.startswith("The true change is within +/-10 points")


def test_against_needs_one_target(server: FakeOpenAI, store: RunStore) -> None:
    suite = _suite(server, n=30)
    base = _baseline(suite, store)
    against = Against.of_run(base, label="main/base")
    plan = plan_suite(suite, EvalOptions(name="pr", order=against.order))
    with pytest.raises(UsageError, match="--against runs one target against the baseline"):
        asyncio.run(run_suite(plan, store, against=against))


def test_the_plan_takes_the_baseline_cases_in_its_order(server: FakeOpenAI) -> None:
    suite = _suite(server, n=10)
    order = ["t007", "t002", "nope", "t009"]
    plan = plan_suite(suite, EvalOptions(targets=("better",), order=order))
    assert [t.id for t in plan.tests] == ["t007", "t002", "t009"]
    with pytest.raises(UsageError, match="none of the baseline's cases is a test"):
        plan_suite(suite, EvalOptions(order=["x", "y"]))


# -- the sequencer, alone ---------------------------------------------------------------


def _against(scores: dict[str, float], **kw: Any) -> Against:
    return Against(scores=scores, order=list(scores), label="base", **kw)


def _record(tid: str, score: float | None, infra: bool = False) -> dict[str, Any]:
    record: dict[str, Any] = {"test_id": tid, "attempt": 1, "score": score}
    if infra:
        record["error_kind"] = "infra"
    return record


def test_cases_enter_in_the_order_given_not_the_order_they_finish() -> None:
    scores = {f"c{i}": 0.0 for i in range(5)}
    seq = Sequencer(_against(scores, min_cases=1), list(scores), attempts=2)
    # c1 and c2 finish first: they wait for c0.
    for tid in ("c1", "c1", "c2", "c2", "c0"):
        seq.add(_record(tid, 1.0))
    assert seq.entered == 0
    seq.add(_record("c0", 0.0))  # c0 done (mean 0.5): c0, c1, c2 enter, in order
    assert seq.entered == 3
    expected = confidence_sequence([0.5, 1.0, 1.0])
    assert seq.sequence.low == pytest.approx(expected.low[-1])
    assert seq.sequence.high == pytest.approx(expected.high[-1])


def test_a_case_lost_to_infrastructure_does_not_enter() -> None:
    scores = {"a": 0.0, "b": 0.0, "c": 0.0}
    seq = Sequencer(_against(scores), list(scores), attempts=1)
    seq.add(_record("a", None, infra=True))
    seq.add(_record("b", 1.0))
    assert seq.entered == 1
    assert seq.position == 2
    # An attempt that failed on the agent's side counts as 0.
    seq.add(_record("c", None))
    assert seq.entered == 2
    assert seq.sequence.mean == pytest.approx(0.5)


def test_no_stop_before_the_minimum() -> None:
    scores = {f"c{i}": 0.0 for i in range(60)}
    seq = Sequencer(_against(scores, min_cases=50), list(scores), attempts=1)
    settled_at = None
    for i, tid in enumerate(scores):
        if seq.add(_record(tid, 1.0)):
            settled_at = i + 1
    # Every case +1: the sequence excludes 0 long before case 50, but waits for it.
    assert confidence_sequence([1.0] * 16).low[-1] > 0
    assert settled_at == 50
    assert seq.settled is not None
    assert seq.settled.cases == 50


def test_against_of_run_checks_the_baseline() -> None:
    two = Run.from_records(
        [
            evaldelta.Record("a", 1.0, target="x"),
            evaldelta.Record("a", 1.0, target="y"),
        ]
    )
    with pytest.raises(UsageError, match="the run holds 2 targets"):
        Against.of_run(two, label="both")
    wide = Run.from_records([evaldelta.Record("a", 7.0)])
    with pytest.raises(UsageError, match="needs scores in \\[0, 1\\]"):
        Against.of_run(wide, label="wide")
    plain = Run.from_records([evaldelta.Record(f"t{i}", 0.5) for i in range(5)])
    against = Against.of_run(plain, label="plain", seed=3)
    assert sorted(against.order) == [f"t{i}" for i in range(5)]
    assert "seeded shuffle (seed 3)" in against.order_source
    with pytest.raises(UsageError, match="--min-cases"):
        Against.of_run(plain, label="plain", min_cases=0)


def test_a_straggler_does_not_let_the_run_finish_every_case(
    server: FakeOpenAI, store: RunStore
) -> None:
    """One early case answers slowly: the cases after it cannot enter the sequence
    before it, so the run starts no more than LOOKAHEAD x workers cases past it
    meanwhile, and still stops early once it is in (no case is run only to wait)."""
    from evaldelta.runner._engine import LOOKAHEAD

    suite = _suite(server, n=400, workers=4)
    base = _baseline(suite, store)
    against = Against.of_run(base, label=base.source, run_id=1, seed=suite.seed)
    slow_question = f"question {int(against.order[2][1:])}"
    answer = server.responder

    def slow(request: Received) -> Step:
        step = answer(request)
        if request["messages"][-1]["content"] == slow_question:
            return Step(content=step.content, usage=step.usage, delay_s=1.5)
        return step

    server.responder = slow
    plan = plan_suite(suite, EvalOptions(name="pr", targets=("better",), order=against.order))
    outcome = asyncio.run(run_suite(plan, store, against=against))
    assert outcome.status == "stopped early"
    how = outcome.run.sequential
    assert how is not None
    assert how["settled"]
    ahead = max(LOOKAHEAD * suite.concurrency, 16)
    assert how["cases_run"] <= max(how["after"], 2) + ahead + suite.concurrency, how
    assert how["cases_run"] < 400
