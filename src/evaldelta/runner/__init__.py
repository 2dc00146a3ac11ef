"""Running suites: tests x targets x attempts, scored, into records of the common model.

    _suite.py       the suite file (agentv's shape) and targets file, with line marks
    _dataset.py     a suite from a Python task (``evaluate()``)
    _spec.py        what a suite is once read: tests, targets, assertions, policies
    _targets.py     the three kinds of target (openai, python, command) and retries
    _assertions.py  deterministic assertions and the weighted score of an attempt
    _judge.py       the LLM judge behind ``llm-rubric``
    _sequential.py  a run against a baseline: its case order and when it is settled
    _engine.py      scheduling: seeded order, concurrency, journal, resume, stopping

Nothing here prints or reads the environment: the command line passes both in.
"""

from __future__ import annotations

from evaldelta.runner._engine import (
    EvalOptions,
    EvalOutcome,
    Plan,
    SequenceMoved,
    plan_suite,
    run_suite,
)
from evaldelta.runner._sequential import Against
from evaldelta.runner._spec import AssertionSpec, RetryPolicy, Suite, TargetSpec, TestCase
from evaldelta.runner._suite import load_suite, suite_from_mapping

__all__ = [
    "Against",
    "AssertionSpec",
    "EvalOptions",
    "EvalOutcome",
    "Plan",
    "RetryPolicy",
    "SequenceMoved",
    "Suite",
    "TargetSpec",
    "TestCase",
    "load_suite",
    "plan_suite",
    "run_suite",
    "suite_from_mapping",
]
