"""The engine: scheduling, concurrency, retries into records, stopping, the judge, and
``evaluate()`` in spec 004's shape."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.runner._engine import (
    AttemptDone,
    EvalOptions,
    latest_attempts,
    plan_suite,
    run_suite,
    seeded_order,
)
from evaldelta.runner._spec import AssertionSpec, RetryPolicy, Suite, TargetSpec, TestCase
from evaldelta.store import RunStore
from tests.runner.fake_openai import FakeOpenAI, Step


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


@pytest.fixture
def store(tmp_path: Path) -> Iterator[RunStore]:
    with RunStore(tmp_path / "runs.db") as s:
        yield s


def _openai(server: FakeOpenAI, name: str = "m", **settings: Any) -> TargetSpec:
    return TargetSpec(
        name=name,
        type="openai",
        settings={"base_url": server.base_url, "model": name, **settings},
    )


def _suite(targets: tuple[TargetSpec, ...], n: int = 3, **kw: Any) -> Suite:
    tests = tuple(
        TestCase(
            id=f"t{i:02d}",
            input=f"question {i}",
            assertions=(AssertionSpec(type="contains", value="question", metric="contains"),),
        )
        for i in range(n)
    )
    kw.setdefault("retries", RetryPolicy(max=3, initial_delay_s=0.01, max_delay_s=0.05))
    return Suite(name="s", tests=tests, targets=targets, hash="h", **kw)


def _run(plan: Any, store: RunStore, **kw: Any) -> Any:
    return asyncio.run(run_suite(plan, store, **kw))


def test_seeded_order_is_fixed_by_the_seed_not_the_listing() -> None:
    ids = [f"t{i}" for i in range(20)]
    assert seeded_order(ids, 1) == seeded_order(list(reversed(ids)), 1)
    assert seeded_order(ids, 1) != seeded_order(ids, 2)
    assert sorted(seeded_order(ids, 1)) == sorted(ids)


def test_the_order_is_recorded_with_the_run(server: FakeOpenAI, store: RunStore) -> None:
    plan = plan_suite(_suite((_openai(server),), n=6, seed=3))
    outcome = _run(plan, store)
    assert store.case_order(outcome.run.id) == [t.id for t in plan.tests]
    assert [t.id for t in plan.tests] == seeded_order([f"t{i:02d}" for i in range(6)], 3)


def test_never_more_calls_at_once_than_the_concurrency(server: FakeOpenAI, store: RunStore) -> None:
    server.default = lambda body: Step(content=body["messages"][-1]["content"], delay_s=0.1)
    plan = plan_suite(_suite((_openai(server),), n=20, concurrency=4))
    started = time.monotonic()
    outcome = _run(plan, store)
    elapsed = time.monotonic() - started
    assert outcome.status == "complete"
    assert server.count() == 20
    assert server.max_in_flight == 4
    # 20 calls of 100 ms, 4 at once: about 0.5 s (one at a time would take 2 s; a busy
    # machine adds some)
    assert 0.45 <= elapsed < 1.8, elapsed


def test_429_then_503_then_200_is_one_record_with_its_waits(
    server: FakeOpenAI, store: RunStore
) -> None:
    server.script(
        Step(status=429, headers={"Retry-After": "1"}),
        Step(status=503),
        Step(content="question answered", usage=(120, 30), delay_s=0.05),
    )
    target = _openai(server, price={"input_per_mtok": 2.0, "output_per_mtok": 8.0})
    outcome = _run(plan_suite(_suite((target,), n=1)), store)
    (record,) = store.attempts(outcome.run.id)
    assert record["score"] == 1.0
    assert "error" not in record
    assert record["wait_ms"] >= 1000
    assert 40 <= record["latency_ms"] < 500
    assert record["input_tokens"] == 120
    assert record["output_tokens"] == 30
    assert record["cost_usd"] == pytest.approx((120 * 2.0 + 30 * 8.0) / 1e6)
    assert server.count() == 3


def test_retries_exhausted_is_an_infrastructure_failure_without_a_score(
    server: FakeOpenAI, store: RunStore
) -> None:
    server.default = lambda body: Step(status=500)
    suite = _suite((_openai(server),), n=2, retries=RetryPolicy(max=2, initial_delay_s=0.01))
    outcome = _run(plan_suite(suite), store)
    records = store.attempts(outcome.run.id)
    assert len(records) == 2
    assert all(r["error_kind"] == "infra" and "score" not in r for r in records)
    assert server.count() == 6
    assert outcome.totals["m"].infra_failures == 2
    run = store.get_run(outcome.run.id)
    assert run.error_kinds == {0: "infra", 1: "infra"}


def test_max_cost_stops_scheduling_and_marks_the_run_interrupted(
    server: FakeOpenAI, store: RunStore
) -> None:
    server.default = lambda body: Step(content="question", usage=(1000, 1000))
    target = _openai(server, price={"input_per_mtok": 1.0, "output_per_mtok": 1.0})  # $0.002 each
    plan = plan_suite(_suite((target,), n=10, concurrency=1))
    outcome = _run(plan, store, max_cost_usd=0.005)
    assert outcome.status == "interrupted"
    assert outcome.stop_reason == "--max-cost 0.005 reached"
    assert server.count() == 3
    assert store.info(outcome.run.id).status == "interrupted"


def test_should_stop_lets_calls_in_flight_finish(server: FakeOpenAI, store: RunStore) -> None:
    server.default = lambda body: Step(content="question", delay_s=0.1)
    seen: list[Any] = []
    plan = plan_suite(_suite((_openai(server),), n=10, concurrency=2))
    outcome = _run(
        plan,
        store,
        on_event=seen.append,
        should_stop=lambda: sum(isinstance(e, AttemptDone) for e in seen) >= 2,
    )
    assert outcome.status == "interrupted"
    assert outcome.stop_reason == "stopped by Ctrl-C"
    assert server.count() == len(store.attempts(outcome.run.id)) < 10


def test_llm_rubric_is_judged_by_the_judge_target(server: FakeOpenAI, store: RunStore) -> None:
    def respond(body: dict[str, Any]) -> Step:
        if body["model"] == "judge":
            good = "Paris" in body["messages"][-1]["content"]
            return Step(
                content=f'{{"score": {1 if good else 0}, "pass": {str(good).lower()}, '
                '"reason": "checked"}',
                usage=(50, 10),
            )
        return Step(content="Paris" if "France" in body["messages"][-1]["content"] else "Rome")

    server.default = respond
    tests = (
        TestCase(
            id="fr",
            input="Capital of France?",
            assertions=(AssertionSpec(type="llm-rubric", value="Names Paris"),),
        ),
        TestCase(
            id="it",
            input="Capital of Spain?",
            assertions=(AssertionSpec(type="llm-rubric", value="Names Madrid"),),
        ),
    )
    suite = Suite(
        name="j",
        tests=tests,
        targets=(_openai(server, "agent"),),
        hash="h",
        judge="judge",
        judge_target=_openai(server, "judge"),
    )
    outcome = _run(plan_suite(suite), store)
    records = {r["test_id"]: r for r in store.attempts(outcome.run.id)}
    assert records["fr"]["score"] == 1.0
    assert records["fr"]["passed"] is True
    assert records["it"]["score"] == 0.0
    assert records["it"]["passed"] is False
    assert server.count("judge") == 2
    assert outcome.judge_tokens == 120


def test_the_judges_spend_counts_toward_the_budget_and_the_outcome(
    server: FakeOpenAI, store: RunStore
) -> None:
    def respond(body: dict[str, Any]) -> Step:
        if body["model"] == "judge":  # $0.002 a grade
            return Step(content='{"score": 1, "pass": true, "reason": "ok"}', usage=(1000, 1000))
        return Step(content="an answer", usage=(0, 0))  # the agent costs nothing

    server.default = respond
    tests = tuple(
        TestCase(id=f"t{i}", input="q", assertions=(AssertionSpec(type="llm-rubric", value="r"),))
        for i in range(10)
    )
    price = {"input_per_mtok": 1.0, "output_per_mtok": 1.0}
    suite = Suite(
        name="j",
        tests=tests,
        targets=(_openai(server, "agent", price=price),),
        hash="h",
        concurrency=1,
        judge="judge",
        judge_target=_openai(server, "judge", price=price),
    )
    outcome = _run(plan_suite(suite), store, max_cost_usd=0.005)
    assert outcome.stop_reason == "--max-cost 0.005 reached"
    assert server.count("judge") == 3  # the agent alone would never reach the budget
    assert outcome.judge_cost_usd == pytest.approx(0.006)
    assert outcome.judge_tokens == 6000


def test_a_rubric_without_a_judge_is_refused_before_anything_runs(server: FakeOpenAI) -> None:
    tests = (
        TestCase(id="x", input="q", assertions=(AssertionSpec(type="llm-rubric", value="r"),)),
    )
    with pytest.raises(evaldelta.UsageError, match="llm-rubric needs a judge"):
        plan_suite(Suite(name="j", tests=tests, targets=(_openai(server),), hash="h"))


def test_plan_filters() -> None:
    target = TargetSpec(name="p", type="python", function=lambda q: q)
    suite = _suite((target,), n=5, attempts=2)
    plan = plan_suite(suite, EvalOptions(test_ids=("t0[12]",)))
    assert sorted(t.id for t in plan.tests) == ["t01", "t02"]
    assert plan.calls == 4
    assert plan_suite(suite, EvalOptions(limit=2)).calls == 4
    with pytest.raises(evaldelta.UsageError, match="--target 'zz'"):
        plan_suite(suite, EvalOptions(targets=("zz",)))
    with pytest.raises(evaldelta.UsageError, match="matches none"):
        plan_suite(suite, EvalOptions(test_ids=("nope*",)))


def test_latest_attempts_keeps_one_record_per_attempt() -> None:
    records = [
        {"test_id": "a", "target": "m", "attempt": 1, "error_kind": "infra"},
        {"test_id": "b", "target": "m", "attempt": 1, "score": 1},
        {"test_id": "a", "target": "m", "attempt": 1, "score": 0.5},
    ]
    assert latest_attempts(records) == [records[2], records[1]]


# -- evaluate(), in spec 004's shape ------------------------------------------------------


def test_evaluate_in_spec_004s_shape(tmp_path: Path) -> None:
    store = evaldelta.RunStore(tmp_path / "store.db")
    dataset = [
        {"id": "q1", "input": "2+2", "expected": "4"},
        {"id": "q2", "input": "capital of France", "expected": "Paris"},
        {"id": "q3", "input": "3*3", "expected": "9"},
    ]
    answers = {"2+2": "4", "capital of France": "Paris", "3*3": "6"}

    def task(question: str) -> str:
        return answers[question]

    async def better_task(question: str) -> str:
        return {**answers, "3*3": "9"}[question]

    scorers = {"exact": evaldelta.scorers.exact_match, "includes": evaldelta.scorers.includes}
    baseline = evaldelta.evaluate(
        name="qa-eval",
        model="gpt-4o-mini",
        dataset=dataset,
        task=task,
        scorers=scorers,
        store=store,
    )
    candidate = evaldelta.evaluate(
        name="qa-eval",
        model="gpt-4o",
        dataset=dataset,
        task=better_task,
        scorers=scorers,
        store=store,
        trials=3,
        max_concurrency=2,
    )
    assert baseline.run.name == "qa-eval/gpt-4o-mini"
    assert candidate.totals["gpt-4o"].done == 9

    suite = store.find_suite_by_name("qa-eval")
    assert suite is not None
    runs = store.list_runs(suite.id)
    assert [r.id for r in runs[-2:]] == [baseline.id, candidate.id]
    result = evaldelta.compare_runs(store, runs[-2].id, runs[-1].id)
    assert result.scorer_summaries["exact"].improved_count == 1
    assert not result.regression.regressed
    assert result.total_cases_compared == 3


def test_evaluate_needs_a_suite_or_a_task(tmp_path: Path) -> None:
    with pytest.raises(evaldelta.UsageError, match="give a suite file"):
        evaldelta.evaluate(store=tmp_path / "s.db")
    with pytest.raises(evaldelta.UsageError, match="dataset is empty"):
        evaldelta.evaluate(name="x", model="m", dataset=[], task=str, store=tmp_path / "s.db")


def test_a_judge_reply_that_is_not_json_gets_one_repair_then_is_an_infra_failure(
    server: FakeOpenAI, store: RunStore
) -> None:
    replies = {
        "fixed": ["Sure! It names Paris.", '{"score": 1, "pass": true, "reason": "ok"}'],
        "broken": ["Looks right to me.", "Still not JSON, sorry."],
    }

    def respond(body: dict[str, Any]) -> Step:
        if body["model"] != "judge":
            return Step(content="Paris")
        which = "fixed" if "Names Paris" in body["messages"][1]["content"] else "broken"
        return Step(content=replies[which].pop(0))

    server.default = respond
    tests = tuple(
        TestCase(
            id=tid,
            input="Capital of France?",
            assertions=(AssertionSpec(type="llm-rubric", value=rubric),),
        )
        for tid, rubric in (("fixed", "Names Paris"), ("broken", "Is correct"))
    )
    suite = Suite(
        name="j",
        tests=tests,
        targets=(_openai(server, "agent"),),
        hash="h",
        judge="judge",
        judge_target=_openai(server, "judge"),
        concurrency=1,
    )
    outcome = _run(plan_suite(suite), store)
    records = {r["test_id"]: r for r in store.attempts(outcome.run.id)}
    assert records["fixed"]["score"] == 1.0
    assert records["broken"]["error_kind"] == "infra"
    assert "score" not in records["broken"]
    assert "judge reply is not the JSON asked for" in records["broken"]["error"]
    assert records["broken"]["output"] == "Paris"  # the answer is kept
    assert server.count("judge") == 4  # one repair each, no further retries


# -- found in review ------------------------------------------------------------------------


def test_resuming_part_of_an_interrupted_run_leaves_it_interrupted(
    server: FakeOpenAI, store: RunStore
) -> None:
    suite = _suite((_openai(server),), n=6, attempts=2, concurrency=1)
    done: list[Any] = []
    first = _run(
        plan_suite(suite),
        store,
        on_event=done.append,
        should_stop=lambda: sum(isinstance(e, AttemptDone) for e in done) >= 3,
    )
    assert first.status == "interrupted"
    some = plan_suite(suite, EvalOptions(test_ids=("t00",)))
    again = _run(some, store, resume=True)
    assert again.run.id == first.run.id
    assert again.run.status == "interrupted"  # 4 of its 12 attempts, not complete
    assert again.totals["m"].total == 12
    everything = _run(plan_suite(suite), store, resume=True)
    assert everything.run.status == "complete"
    assert everything.run.records == 12


def test_a_target_that_cannot_be_built_stores_nothing(tmp_path: Path, store: RunStore) -> None:
    target = TargetSpec(name="p", type="python", settings={"function": "no_such_module:f"})
    with pytest.raises(evaldelta.ParseError, match="cannot import module 'no_such_module'"):
        _run(plan_suite(_suite((target,), n=2)), store)
    assert store.list_runs() == []


def test_a_sync_function_past_its_timeout_keeps_its_slot(store: RunStore) -> None:
    import threading

    lock = threading.Lock()
    now = peak = 0

    def slow(question: str) -> str:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.3)
        with lock:
            now -= 1
        return "question"

    target = TargetSpec(name="p", type="python", function=slow)
    suite = _suite((target,), n=4, concurrency=2, timeout_s=0.1)
    outcome = _run(plan_suite(suite), store)
    records = store.attempts(outcome.run.id)
    assert [r["error_kind"] for r in records] == ["task"] * 4
    assert all("exceeded timeout_s (0.1 s)" in r["error"] for r in records)
    assert peak == 2  # never more at once than the concurrency, timed out or not


def test_many_sync_functions_run_as_wide_as_the_concurrency(store: RunStore) -> None:
    def slow(question: str) -> str:
        time.sleep(0.1)
        return "question"

    target = TargetSpec(name="p", type="python", function=slow)
    started = time.monotonic()
    _run(plan_suite(_suite((target,), n=16, concurrency=16)), store)
    assert time.monotonic() - started < 0.6  # 16 at once, not the default pool's few


def test_evaluate_from_a_running_event_loop(tmp_path: Path) -> None:
    store = evaldelta.RunStore(tmp_path / "s.db")

    async def notebook() -> Any:
        return evaldelta.evaluate(
            name="nb",
            model="m",
            dataset=[{"input": "a", "expected": "a"}],
            task=str,
            scorers={"exact": evaldelta.scorers.exact_match},
            store=store,
        )

    outcome = asyncio.run(notebook())
    assert outcome.run.status == "complete"
    assert store.get_run(outcome.id).score.tolist() == [1.0]


def test_secrets_in_a_url_or_params_are_never_shown_or_stored(
    server: FakeOpenAI, store: RunStore
) -> None:
    url = server.base_url.replace("http://", "http://user:pw-secret-1@") + "?key=q-secret-2"
    target = TargetSpec(
        name="m",
        type="openai",
        settings={"base_url": url, "model": "m", "params": {"api_token": "p-secret-3", "n": 1}},
    )
    shown = repr(target.public_settings())
    for secret in ("pw-secret-1", "q-secret-2", "p-secret-3"):
        assert secret not in shown
    assert "'n': 1" in shown
    # The fake server knows no query string: it answers 404, and the message names the
    # URL with the path before the query, its secrets masked.
    outcome = _run(plan_suite(_suite((target,), n=1, retries=RetryPolicy(max=0))), store)
    (refusal,) = outcome.fatal
    assert "/v1/chat/completions?key=***" in str(refusal)
    assert "user:***@" in str(refusal)
    text = str(refusal) + repr(store.info(outcome.run.id).config)
    for secret in ("pw-secret-1", "q-secret-2", "p-secret-3"):
        assert secret not in text
