"""Running a suite: every test against every target, ``attempts`` times, into the store.

The order is seeded: the cases are shuffled once with the suite's seed and recorded
with each run, so that a later comparison can take them in the order they ran. Each
finished attempt is committed to the store's journal as it finishes; a run is
``running`` while this process holds it, then ``complete`` or ``interrupted``. A run
whose process died reads as interrupted at once (the store's liveness lock), and
``resume=True`` runs only what is missing or was lost to infrastructure failures.

Nothing here prints or reads the environment: the caller passes ``env`` (for the
targets' commands) and ``on_event`` (to show progress), and asks to stop through
``should_stop``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from random import Random
from typing import TYPE_CHECKING, Any

from evaldelta._plain import picked
from evaldelta.errors import TargetError, UsageError
from evaldelta.pairing._cases import seeded_order
from evaldelta.runner._sequential import Against, Sequencer
from evaldelta.runner._spec import InfraFailure, Reply, Suite, TargetSpec, TaskFailure, TestCase
from evaldelta.store._runstore import latest_attempts

if TYPE_CHECKING:
    from evaldelta.runner._judge import LLMJudge
    from evaldelta.runner._targets import Calling, Target
    from evaldelta.store import RunStore, StoredRun

__all__ = [
    "AttemptDone",
    "EvalOptions",
    "EvalOutcome",
    "Job",
    "Plan",
    "RunStarted",
    "SequenceMoved",
    "TargetStopped",
    "TargetTotals",
    "latest_attempts",
    "plan_suite",
    "run_suite",
    "seeded_order",
]

#: How far ahead of the sequence a run against a baseline starts cases, in workers.
LOOKAHEAD = 4


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """What to run of a suite, and how.

    Args:
        name: the runs' name: each target's run is ``NAME/target`` (default: the
            suite's name).
        workers: calls at once, never more (default: the suite's ``concurrency``).
        limit: the first ``limit`` tests of the seeded order only.
        test_ids: globs; only tests whose id matches one of them.
        targets: only these targets (by name).
        max_cost_usd: stop scheduling once this much has been spent (targets and the
            judge); the runs are then marked interrupted.
        resume: continue the latest run of each target instead of starting anew:
            only attempts missing, or lost to infrastructure failures, are run.
        judge: the target that judges ``llm-rubric`` (overrides the suite's).
        order: run these cases, in this order, instead of the seeded shuffle (a run
            made against a baseline takes the baseline's cases in its order); cases the
            suite does not have are left out.
    """

    name: str | None = None
    workers: int | None = None
    limit: int | None = None
    test_ids: Sequence[str] = ()
    targets: Sequence[str] = ()
    max_cost_usd: float | None = None
    resume: bool = False
    judge: str | None = None
    order: Sequence[str] | None = None


@dataclass(frozen=True, slots=True)
class Job:
    """One attempt to make: a test, a target, an attempt number (1-based)."""

    test: TestCase
    target: str
    attempt: int


@dataclass(frozen=True, slots=True)
class Plan:
    """What a run will do, before it calls anything (``--dry-run`` prints it)."""

    suite: Suite
    name: str
    tests: tuple[TestCase, ...]  # in the seeded order
    targets: tuple[TargetSpec, ...]
    judge: TargetSpec | None
    jobs: tuple[Job, ...]
    workers: int

    @property
    def calls(self) -> int:
        return len(self.jobs)

    @property
    def judge_calls(self) -> int:
        """Judge calls at most (one per ``llm-rubric`` assertion and attempt, before repairs)."""
        return sum(1 for job in self.jobs for a in job.test.assertions if a.type == "llm-rubric")

    def run_name(self, target: str) -> str:
        return f"{self.name}/{target}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite.name,
            "name": self.name,
            "tests": len(self.tests),
            "targets": [t.name for t in self.targets],
            "attempts": self.suite.attempts,
            "calls": self.calls,
            "judge": self.judge.name if self.judge else None,
            "judge_calls": self.judge_calls,
            "workers": self.workers,
            "order": [t.id for t in self.tests],
        }


# -- events the caller may show -----------------------------------------------------


@dataclass(slots=True)
class TargetTotals:
    """A target's running totals: what a progress bar and the closing table show."""

    target: str
    run_id: int
    total: int  # attempts this run makes
    done: int = 0
    already: int = 0  # attempts kept from an earlier process (resume)
    task_failures: int = 0
    infra_failures: int = 0
    passed: int = 0
    score_sum: float = 0.0
    scored: int = 0
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    cost_usd: float = 0.0
    cost_known: bool = False
    stopped: str | None = None  # why the target stopped early

    @property
    def failures(self) -> int:
        return self.task_failures + self.infra_failures

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def to_dict(self) -> dict[str, Any]:
        return {
            **picked(
                self,
                "target run_id attempts=total done kept_from_earlier=already task_failures "
                "infra_failures passed mean_score input_tokens output_tokens",
            ),
            "cost_usd": self.cost_usd if self.cost_known else None,
            "stopped": self.stopped,
        }


@dataclass(frozen=True, slots=True)
class RunStarted:
    plan: Plan
    totals: Mapping[str, TargetTotals]


@dataclass(frozen=True, slots=True)
class AttemptDone:
    target: str
    record: Mapping[str, Any]
    totals: TargetTotals


@dataclass(frozen=True, slots=True)
class TargetStopped:
    target: str
    reason: str


@dataclass(frozen=True, slots=True)
class SequenceMoved:
    """A run against a baseline took in one more case: its confidence sequence now."""

    target: str
    cases: int
    low: float
    high: float
    settled: str | None  # the verdict it settled on, once it has


Event = RunStarted | AttemptDone | TargetStopped | SequenceMoved


@dataclass(slots=True)
class EvalOutcome:
    """What a run did: its stored runs (one per target), their totals, and how it ended.

    ``status`` is ``complete`` when every planned attempt ran; ``stopped early`` when a
    run against a baseline stopped once settled (``stop_reason`` says how); else
    ``interrupted``, with ``stop_reason`` saying why (Ctrl-C, ``--max-cost``, a target
    that refused).
    ``fatal`` holds the error of a target that could not be used at all.
    """

    plan: Plan
    runs: dict[str, StoredRun]
    totals: dict[str, TargetTotals]
    status: str
    stop_reason: str | None = None
    fatal: list[TargetError] = field(default_factory=list)
    judge_cost_usd: float = 0.0
    judge_tokens: float = 0.0
    elapsed_s: float = 0.0

    @property
    def run(self) -> StoredRun:
        """The one stored run, when the suite ran one target."""
        if len(self.runs) != 1:
            names = ", ".join(self.runs)
            raise UsageError(f"this evaluation made {len(self.runs)} runs ({names}); use .runs")
        return next(iter(self.runs.values()))

    @property
    def id(self) -> int:
        """The one stored run's id (spec 004's ``evaluate(...)`` result)."""
        return self.run.id

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "stop_reason": self.stop_reason,
            "plan": self.plan.to_dict(),
            "runs": {t: r.to_dict() for t, r in self.runs.items()},
            "totals": {t: s.to_dict() for t, s in self.totals.items()},
            "judge_cost_usd": self.judge_cost_usd,
            "elapsed_s": self.elapsed_s,
            "errors": [str(e) for e in self.fatal],
        }


# -- planning -----------------------------------------------------------------------


def plan_suite(suite: Suite, options: EvalOptions | None = None) -> Plan:
    """The tests, targets and attempts a run of ``suite`` makes, in the seeded order.

    Raises:
        UsageError: a ``--target`` or ``--judge`` that the suite does not define, a
            filter that leaves nothing to run, an ``llm-rubric`` without a judge.
    """
    options = options or EvalOptions()
    targets = suite.targets
    if options.targets:
        known = {t.name: t for t in suite.targets}
        unknown = [n for n in options.targets if n not in known]
        if unknown:
            raise UsageError(
                f"--target {unknown[0]!r}: the suite has no such target (its targets: "
                f"{', '.join(known)})"
            )
        targets = tuple(known[n] for n in dict.fromkeys(options.targets))
    tests = list(suite.tests)
    if options.test_ids:
        tests = [t for t in tests if any(fnmatch.fnmatchcase(t.id, g) for g in options.test_ids)]
        if not tests:
            raise UsageError(
                f"--test-id {' '.join(options.test_ids)}: matches none of the suite's "
                f"{len(suite.tests)} tests"
            )
    by_id = {t.id: t for t in tests}
    if options.order is not None:
        order = [i for i in dict.fromkeys(options.order) if i in by_id]
        if not order:
            raise UsageError(
                "--against: none of the baseline's cases is a test of this suite (or of "
                "the tests chosen); run the suite the baseline ran",
                option="against",
            )
    else:
        order = seeded_order([t.id for t in tests], suite.seed)
    ordered = [by_id[i] for i in order]
    if options.limit is not None:
        if options.limit < 1:
            raise UsageError("--limit must be at least 1")
        ordered = ordered[: options.limit]
    judge = _judge(suite, options)
    if judge is None:
        for t in ordered:
            for a in t.assertions:
                if a.type == "llm-rubric":
                    raise UsageError(
                        f"{a.where}: llm-rubric needs a judge: set `judge: {{target: NAME}}` "
                        "in the suite, or pass --judge NAME (an openai target)"
                    )
    jobs = tuple(
        Job(test, target.name, attempt)
        for test in ordered
        for attempt in range(1, suite.attempts + 1)
        for target in targets
    )
    workers = options.workers if options.workers is not None else suite.concurrency
    if workers < 1:
        raise UsageError("--workers must be at least 1")
    return Plan(
        suite=suite,
        name=options.name or suite.name,
        tests=tuple(ordered),
        targets=targets,
        judge=judge,
        jobs=jobs,
        workers=workers,
    )


def _judge(suite: Suite, options: EvalOptions) -> TargetSpec | None:
    name = options.judge
    if name is None:
        return suite.judge_target
    candidates = [*suite.targets, *([suite.judge_target] if suite.judge_target else [])]
    for spec in candidates:
        if spec.name == name:
            if spec.type != "openai":
                raise UsageError(
                    f"--judge {name}: the judge must be an openai target; {name} is a "
                    f"{spec.type} target"
                )
            return spec
    raise UsageError(
        f"--judge {name}: no such target in the suite or its targets file "
        f"(defined: {', '.join(t.name for t in candidates) or 'none'})"
    )


# -- running ------------------------------------------------------------------------


def run_config(plan: Plan, target: TargetSpec) -> dict[str, Any]:
    """A stored run's config: the target's settings (without secrets) and what of the
    suite decides the results."""
    suite = plan.suite
    config: dict[str, Any] = {
        **target.public_settings(),
        "target": target.name,
        "suite": suite.name,
        "suite_hash": suite.hash,
        "attempts": suite.attempts,
        "seed": suite.seed,
    }
    if plan.judge is not None:
        config["judge"] = plan.judge.public_settings().get("model", plan.judge.name)
    return config


async def run_suite(
    plan: Plan,
    store: RunStore,
    *,
    env: Mapping[str, str] | None = None,
    on_event: Callable[[Event], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    max_cost_usd: float | None = None,
    resume: bool = False,
    sleep: Callable[[float], Any] = asyncio.sleep,
    against: Against | None = None,
) -> EvalOutcome:
    """Run ``plan`` into ``store``; returns how it went.

    Every finished attempt is committed to the store at once. ``should_stop`` is asked
    before each new attempt: once it answers true, nothing new starts, the calls in
    flight finish, and the runs are marked interrupted. ``max_cost_usd`` is the budget
    of the runs as a whole (what earlier processes spent on a resumed run counts).

    ``against`` makes the run against a baseline (the plan then holds one target, and
    the baseline's cases in its order: ``EvalOptions(order=...)``): the comparison's
    confidence sequence is kept up to date case by case, and with
    ``stop_when_settled`` nothing new starts once it settles; the run is then stored
    ``stopped early``, with how it went (``Run.sequential``).

    Raises:
        StoreError: ``resume`` of a run whose suite has changed since.
        ParseError, TargetError: a target that cannot be built (nothing is stored).
        UsageError: ``against`` with a plan of several targets.
    """
    from concurrent.futures import ThreadPoolExecutor

    from evaldelta.runner._targets import Calling, build_target

    if max_cost_usd is not None and not max_cost_usd >= 0:
        raise UsageError(f"--max-cost must be a number of dollars >= 0, got {max_cost_usd}")
    sequencer: Sequencer | None = None
    if against is not None:
        if len(plan.targets) != 1:
            raise UsageError(
                f"--against runs one target against the baseline; the suite has "
                f"{len(plan.targets)} ({', '.join(t.name for t in plan.targets)}): choose one "
                "with --target NAME",
                option="against",
            )
        sequencer = Sequencer(against, [t.id for t in plan.tests], plan.suite.attempts)
    started = time.monotonic()
    emit = on_event or (lambda event: None)
    stop_asked = should_stop or (lambda: False)
    suite = plan.suite
    rng = Random(f"evaldelta-retry:{suite.seed}")
    # Sync python targets run in threads: as many as calls may run at once.
    asyncio.get_running_loop().set_default_executor(
        ThreadPoolExecutor(max_workers=plan.workers, thread_name_prefix="evaldelta-target")
    )

    # Targets are built before anything is stored or scheduled, so that a missing
    # function or command is named at once and leaves no empty run behind.
    targets: dict[str, Target] = {}
    judge_client: Target | None = None
    calling = Calling(suite.base_dir, suite.timeout_s, suite.retries, rng, sleep, env)
    try:
        for spec in plan.targets:
            targets[spec.name] = build_target(spec, calling)
        grader: LLMJudge | None = None
        if plan.judge is not None:
            grader, judge_client = _make_judge(plan.judge, calling)

        # The stored runs: new ones, or the latest of each name when resuming.
        run_ids: dict[str, int] = {}
        done_keys: dict[str, set[tuple[str, int]]] = {}
        jobs_of: dict[str, list[Job]] = {}
        totals: dict[str, TargetTotals] = {}
        order = [t.id for t in plan.tests]
        for target in plan.targets:
            name = plan.run_name(target.name)
            planned = [j for j in plan.jobs if j.target == target.name]
            if resume:
                rid, kept, recorded_order = _reopen(store, plan, name)
                # The run is finished when the cases it set out to run are: those of
                # its recorded order (filters given now only narrow what runs now).
                wanted = set(recorded_order)
                planned = [j for j in planned if j.test.id in wanted]
                required = {(tid, k) for tid in wanted for k in range(1, suite.attempts + 1)}
                kept = [r for r in kept if (str(r["test_id"]), int(r["attempt"])) in required]
                total = len(required)
            else:
                rid = store.begin_run(
                    name=name,
                    suite=plan.suite.name,
                    config=run_config(plan, target),
                    targets=[target.name],
                    case_order=order,
                    started_at=_now(),
                    source=suite.where.path,
                )
                kept, total = [], len(planned)
            run_ids[target.name] = rid
            done_keys[target.name] = {(str(r["test_id"]), int(r["attempt"])) for r in kept}
            jobs_of[target.name] = planned
            t = TargetTotals(target.name, rid, total=total)
            for record in kept:
                _count(t, record)
            t.already = t.done
            totals[target.name] = t
            if sequencer is not None:
                for record in kept:
                    sequencer.add(record)
        emit(RunStarted(plan, totals))
        started_cases = {tid for keys in done_keys.values() for tid, _ in keys}

        spent = sum(t.cost_usd for t in totals.values())
        attempts_done = 0
        stopped: dict[str, str] = {}
        fatal: list[TargetError] = []
        stop_reason: str | None = None
        semaphore = asyncio.Semaphore(plan.workers)
        in_flight: set[asyncio.Task[None]] = set()
        # Against a baseline, cases enter the sequence in order only: a slow case holds
        # the later ones back, so no case is started more than LOOKAHEAD x workers past
        # the first one not yet in (else a straggler would let the run finish every case
        # before the sequence could settle, and nothing would be saved).
        advanced = asyncio.Event()
        ahead = max(LOOKAHEAD * plan.workers, 16)
        index_of = {tid: i for i, tid in enumerate(sequencer.order)} if sequencer else {}

        running = 0  # attempts started and not yet counted

        async def attempt(job: Job) -> None:
            nonlocal spent, attempts_done, running
            pending: Any = None
            try:
                record, pending = await _attempt(job, targets[job.target], plan, grader)
                if job.target in stopped:
                    return  # a refusal came in meanwhile: keep the run as far as it got
                store.add_attempt(run_ids[job.target], record)
                t = totals[job.target]
                _count(t, record)
                spent += float(record.get("cost_usd") or 0.0)
                attempts_done += 1
                emit(AttemptDone(job.target, record, t))
                if sequencer is not None:
                    before = sequencer.entered
                    sequencer.add(record)
                    advanced.set()
                    if sequencer.entered != before:
                        settled = sequencer.settled
                        emit(
                            SequenceMoved(
                                job.target,
                                sequencer.entered,
                                sequencer.sequence.low,
                                sequencer.sequence.high,
                                None if settled is None else settled.kind,
                            )
                        )
            except TargetError as exc:
                if job.target not in stopped:
                    stopped[job.target] = str(exc)
                    fatal.append(exc)
                    totals[job.target].stopped = str(exc)
                    emit(TargetStopped(job.target, str(exc)))
            finally:
                if pending is not None:
                    # A timed-out sync function's thread still runs: it keeps its slot.
                    await asyncio.wait({asyncio.ensure_future(pending)})
                # Released once the attempt is counted, so that the next one is
                # scheduled knowing what this one cost.
                running -= 1
                semaphore.release()

        def over_budget() -> bool:
            if max_cost_usd is None:
                return False
            # Calls in flight will cost about what the finished ones did on average.
            each = spent / attempts_done if attempts_done else 0.0
            judging = grader.usage.cost_usd if grader is not None else 0.0
            return spent + judging + running * each >= max_cost_usd

        schedule = [
            job
            for target in plan.targets
            for job in jobs_of[target.name]
            if (job.test.id, job.attempt) not in done_keys[job.target]
        ]
        # Interleave the targets as the plan does: case by case, target by target.
        position = {id(job): i for i, job in enumerate(plan.jobs)}
        schedule.sort(key=lambda job: position[id(job)])
        for job in schedule:
            if job.target in stopped:
                continue
            if sequencer is not None:
                while (
                    index_of.get(job.test.id, 0) >= sequencer.position + ahead
                    and in_flight
                    and not sequencer.should_stop
                    and not stop_asked()
                ):
                    advanced.clear()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(advanced.wait(), 0.2)
            await semaphore.acquire()
            if job.target in stopped:
                semaphore.release()
                continue
            if stop_asked():
                semaphore.release()
                stop_reason = "stopped by Ctrl-C"
                break
            if over_budget():
                semaphore.release()
                stop_reason = f"--max-cost {max_cost_usd:g} reached"
                break
            if sequencer is not None and sequencer.should_stop:
                semaphore.release()
                break
            running += 1
            started_cases.add(job.test.id)
            task = asyncio.create_task(attempt(job))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        if in_flight:
            await asyncio.gather(*in_flight)
    finally:
        for target_obj in targets.values():
            await target_obj.aclose()
        if judge_client is not None:
            await judge_client.aclose()

    judged = grader.usage if grader is not None else None
    judge_cost = judged.cost_usd if judged is not None else 0.0
    judge_tokens = judged.tokens if judged is not None else 0.0
    runs: dict[str, StoredRun] = {}
    for spec in plan.targets:
        t = totals[spec.name]
        status = "complete" if t.done >= t.total and spec.name not in stopped else "interrupted"
        how: dict[str, Any] | None = None
        if sequencer is not None:
            how = sequencer.record(
                started=len(started_cases),
                tokens=(t.input_tokens + t.output_tokens + judge_tokens) or None,
                cost_usd=(t.cost_usd + judge_cost) if t.cost_known else None,
                finished=sum(1 for n in sequencer.done.values() if n >= suite.attempts),
            )
            if status == "interrupted" and sequencer.should_stop and stop_reason is None:
                status, stop_reason = "stopped early", str(how["reason"])
        runs[spec.name] = store.finish_run(
            run_ids[spec.name], status, finished_at=_now(), sequential=how
        )
    if stop_reason is None and stopped:
        stop_reason = "a target could not be used: " + "; ".join(stopped.values())
    if stop_reason is None and any(r.status != "complete" for r in runs.values()):
        stop_reason = "some attempts did not run"
    statuses = {r.status for r in runs.values()}
    overall = next(iter(statuses)) if len(statuses) == 1 else "interrupted"
    return EvalOutcome(
        plan=plan,
        runs=runs,
        totals=totals,
        status=overall,
        stop_reason=stop_reason,
        fatal=fatal,
        judge_cost_usd=judge_cost,
        judge_tokens=judge_tokens,
        elapsed_s=time.monotonic() - started,
    )


def _reopen(store: RunStore, plan: Plan, name: str) -> tuple[int, list[dict[str, Any]], list[str]]:
    """The latest run called ``name``, reopened; its attempts worth keeping (the latest
    of each, but those lost to infrastructure failures); the order of cases it set
    out to run."""
    from evaldelta.errors import StoreError

    runs = store.list_runs(name=name, limit=1)
    runs = [r for r in runs if r.name == name]
    if not runs:
        raise StoreError(
            f"--resume: no run named {name!r} in the store to resume; run without --resume "
            "to start one"
        )
    last = runs[0]
    recorded = last.config.get("suite_hash")
    if recorded != plan.suite.hash:
        raise StoreError(
            f"--resume: the suite changed since run {last.id} ({name}) started (its tests, "
            "assertions, targets or attempts differ), so the attempts would not be "
            "comparable; run it anew without --resume"
        )
    recorded_order = store.case_order(last.id) or [t.id for t in plan.suite.tests]
    store.reopen_run(last.id)
    kept = [r for r in latest_attempts(store.attempts(last.id)) if r.get("error_kind") != "infra"]
    return last.id, kept, recorded_order


def _count(t: TargetTotals, record: Mapping[str, Any]) -> None:
    t.done += 1
    kind = record.get("error_kind")
    if kind == "infra":
        t.infra_failures += 1
    elif kind is not None:
        t.task_failures += 1
    score = record.get("score")
    if score is not None and kind != "infra":
        t.score_sum += float(score)
        t.scored += 1
    if record.get("passed"):
        t.passed += 1
    for key in ("input_tokens", "output_tokens"):
        value = record.get(key)
        if value is not None:
            setattr(t, key, getattr(t, key) + float(value))
    cost = record.get("cost_usd")
    if cost is not None:
        t.cost_usd += float(cost)
        t.cost_known = True


def _make_judge(spec: TargetSpec, calling: Calling) -> tuple[LLMJudge, Target]:
    """The judge, and its client (to close when the run ends)."""
    from evaldelta.runner._judge import LLMJudge
    from evaldelta.runner._targets import build_target

    client: Any = build_target(spec, calling)

    async def chat(messages: list[dict[str, Any]]) -> Reply:
        reply: Reply = await client.chat(messages, temperature=0)
        return reply

    return LLMJudge(chat), client


async def _attempt(
    job: Job, target: Target, plan: Plan, grader: LLMJudge | None
) -> tuple[dict[str, Any], Any]:
    """One attempt, scored, as a record in agentv's shape, and any work a timeout could
    not stop (see :attr:`TaskFailure.still_running`). Raises TargetError only."""
    from evaldelta.runner._assertions import Attempt, check, combine

    test = job.test
    record: dict[str, Any] = {
        "test_id": test.id,
        "target": job.target,
        "attempt": job.attempt,
    }
    if test.category is not None:
        record["category"] = test.category
    record["input"] = test.input
    if test.expected_output is not None:
        record["expected"] = test.expected_output
    if test.metadata:
        record["metadata"] = dict(test.metadata)
    try:
        reply = await target.call(test, job.attempt)
    except TaskFailure as exc:
        record.update(score=0.0, passed=False, error=str(exc), error_kind="task")
        _times(record, exc.latency_ms, exc.wait_ms)
        record["timestamp"] = _now()
        return record, exc.still_running
    except InfraFailure as exc:
        record.update(error=str(exc), error_kind="infra")
        _times(record, None, exc.wait_ms)
        record["timestamp"] = _now()
        return record, None
    _times(record, reply.latency_ms, reply.wait_ms)
    for key in ("input_tokens", "output_tokens", "cost_usd"):
        value = getattr(reply, key)
        if value is not None:
            record[key] = value
    record["output"] = reply.output
    try:
        results = await check(
            test.assertions,
            Attempt(
                output=reply.output,
                test=test,
                latency_ms=reply.latency_ms,
                cost_usd=reply.cost_usd,
            ),
            base_dir=plan.suite.base_dir,
            judge=grader,
        )
    except InfraFailure as exc:  # the judge, or a scorer, failed: not the agent's fault
        record.update(error=str(exc), error_kind="infra")
        record["timestamp"] = _now()
        return record, None
    scored = combine(results, test.threshold)
    record["score"] = scored.score
    record["passed"] = scored.passed
    if scored.scores:
        record["scores"] = dict(scored.scores)
    if scored.reasons:
        record["misses"] = list(scored.reasons)
    record["timestamp"] = _now()
    return record, None


def _times(record: dict[str, Any], latency_ms: float | None, wait_ms: float | None) -> None:
    """``latency_ms``: the target's own time (none for an attempt lost to
    infrastructure); ``wait_ms``: the time lost to retrying."""
    if latency_ms is not None and math.isfinite(latency_ms):
        record["latency_ms"] = round(latency_ms, 3)
    if wait_ms is not None and math.isfinite(wait_ms):
        record["wait_ms"] = round(wait_ms, 3)


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
