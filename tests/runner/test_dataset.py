"""Tests of runner/_dataset.py: ``suite_from_task``, the suite ``evaluate()`` builds from a
dataset of dicts, a task function and named scorers; the keys an item may use, the ids
it gets, the suite's fingerprint, and every error message a user can meet."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from evaldelta.errors import UsageError
from evaldelta.runner._dataset import suite_from_task
from evaldelta.runner._spec import AssertionSpec, RetryPolicy, Suite, TargetSpec, TestCase, Where


def task(question: Any) -> str:
    return str(question)


def exact(output: Any, expected: Any) -> bool:
    return bool(output == expected)


def mentions(*, output: Any, expected: Any, input: Any) -> float:
    return float(str(expected) in str(output))


def build(dataset: Any = None, **kwargs: Any) -> Suite:
    options: dict[str, Any] = {"name": "qa", "model": "gpt-4o", "task": task}
    options.update(kwargs)
    return suite_from_task(
        dataset=[{"input": "2+2"}] if dataset is None else dataset,
        **options,
    )


def usage_error(dataset: Any = None, **kwargs: Any) -> str:
    with pytest.raises(UsageError) as info:
        build(dataset, **kwargs)
    return str(info.value)


# -- the suite ---------------------------------------------------------------------------


def test_a_one_target_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    suite = build([{"id": "q1", "input": "2+2", "expected": "4"}])
    assert suite.name == "qa"
    assert suite.description is None
    assert suite.attempts == 1
    assert suite.concurrency == 4
    assert suite.timeout_s == 120.0
    assert suite.retries == RetryPolicy()
    assert suite.seed == 0
    assert suite.judge is None
    assert suite.judge_target is None
    assert suite.base_dir == tmp_path
    assert suite.where == Where("<evaluate>")
    assert suite.tests == (
        TestCase(
            id="q1",
            input="2+2",
            expected_output="4",
            category=None,
            metadata={},
            threshold=None,
            assertions=(),
            where=Where("<evaluate>", 1),
        ),
    )


def test_the_target_is_the_task() -> None:
    suite = build()
    assert suite.targets == (
        TargetSpec(
            name="gpt-4o",
            type="python",
            settings={"model": "gpt-4o", "function": f"{__name__}:task"},
            function=task,
            where=Where("<evaluate>"),
        ),
    )
    assert suite.target("gpt-4o").function is task
    assert suite.targets[0].public_settings() == {
        "type": "python",
        "model": "gpt-4o",
        "function": "tests.runner.test_dataset:task",
    }


def test_a_nested_task_is_named_by_its_qualified_name() -> None:
    def agent(question: Any) -> str:
        return "x"

    suite = build(task=agent)
    assert suite.targets[0].settings["function"] == (
        "tests.runner.test_dataset:test_a_nested_task_is_named_by_its_qualified_name.<locals>.agent"
    )


def test_a_builtin_task_is_named_by_its_module() -> None:
    assert build(task=len).targets[0].settings["function"] == "builtins:len"


def test_options_are_carried_over() -> None:
    retries = RetryPolicy(max=0, initial_delay_s=0.5)
    suite = build(trials=3, max_concurrency=7, timeout_s=9.5, seed=42, retries=retries)
    assert (suite.attempts, suite.concurrency, suite.timeout_s, suite.seed) == (3, 7, 9.5, 42)
    assert suite.retries is retries


def test_name_and_model_are_made_strings() -> None:
    suite = build(name=2024, model=4)
    assert suite.name == "2024"
    assert suite.targets[0].name == "4"
    assert suite.targets[0].settings["model"] == "4"


# -- the tests: ids, inputs, expected answers ---------------------------------------------


def test_items_without_ids_are_numbered_by_position() -> None:
    suite = build([{"input": "a"}, {"id": "named", "input": "b"}, {"input": "c"}])
    assert [t.id for t in suite.tests] == ["case-1", "named", "case-3"]
    assert [t.where for t in suite.tests] == [
        Where("<evaluate>", 1),
        Where("<evaluate>", 2),
        Where("<evaluate>", 3),
    ]
    assert [str(t.where) for t in suite.tests] == ["<evaluate>:1", "<evaluate>:2", "<evaluate>:3"]


@pytest.mark.parametrize(
    ("item", "test_id"),
    [
        ({"id": "a", "test_id": "b", "input": "x"}, "a"),
        ({"test_id": "b", "input": "x"}, "b"),
        ({"id": 7, "input": "x"}, "7"),
        ({"id": None, "test_id": "b", "input": "x"}, "case-1"),  # the first key present wins
    ],
)
def test_id_keys(item: dict[str, Any], test_id: str) -> None:
    assert build([item]).tests[0].id == test_id


@pytest.mark.parametrize(
    ("item", "value"),
    [
        ({"input": "i", "question": "q", "prompt": "p"}, "i"),
        ({"question": "q", "prompt": "p"}, "q"),
        ({"prompt": "p"}, "p"),
    ],
)
def test_input_keys(item: dict[str, Any], value: str) -> None:
    assert build([item]).tests[0].input == value


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"expected": "e", "expected_output": "eo", "answer": "a", "target": "t"}, "e"),
        ({"expected_output": "eo", "answer": "a", "target": "t"}, "eo"),
        ({"answer": "a", "target": "t"}, "a"),
        ({"target": "t"}, "t"),
        ({"expected": None, "answer": "a"}, None),  # the first key present wins
        ({}, None),
        ({"expected": {"n": 4}}, {"n": 4}),
    ],
)
def test_expected_keys(item: dict[str, Any], expected: Any) -> None:
    assert build([{"input": "x", **item}]).tests[0].expected_output == expected


def test_chat_messages_are_kept_as_a_list() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert build([{"input": messages}]).tests[0].input == messages


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": 1, "b": [2, 3]}, '{"a": 1, "b": [2, 3]}'),
        (42, "42"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),
        ("", ""),
    ],
)
def test_other_inputs_become_json(value: Any, text: str) -> None:
    assert build([{"input": value}]).tests[0].input == text


def test_category_and_metadata() -> None:
    suite = build(
        [
            {"input": "a", "category": "math", "metadata": {"source": "faq"}},
            {"input": "b", "category": 3, "metadata": ["not", "a", "mapping"]},
            {"input": "c", "category": None, "metadata": None},
            {"input": "d"},
        ]
    )
    assert [t.category for t in suite.tests] == ["math", "3", None, None]
    assert [t.metadata for t in suite.tests] == [{"source": "faq"}, {}, {}, {}]


def test_metadata_is_copied() -> None:
    metadata = {"source": "faq"}
    suite = build([{"input": "a", "metadata": metadata}])
    metadata["source"] = "changed"
    assert suite.tests[0].metadata == {"source": "faq"}
    assert type(suite.tests[0].metadata) is dict


def test_other_keys_are_ignored() -> None:
    suite = build([{"input": "a", "difficulty": "hard", "tags": ["x"]}])
    assert suite.tests[0].to_dict() == {
        "id": "case-1",
        "input": "a",
        "expected_output": None,
        "category": None,
        "metadata": {},
    }


def test_threshold_applies_to_every_test() -> None:
    suite = build([{"input": "a"}, {"input": "b"}], threshold=0.8)
    assert [t.threshold for t in suite.tests] == [0.8, 0.8]


def test_a_dataset_may_be_any_iterable_of_mappings() -> None:
    class Row(Mapping[str, Any]):
        def __init__(self, **values: Any) -> None:
            self._values = values

        def __getitem__(self, key: str) -> Any:
            return self._values[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self._values)

        def __len__(self) -> int:
            return len(self._values)

    rows = (Row(id=f"r{i}", question=f"q{i}", answer=str(i)) for i in range(3))
    suite = build(rows)
    assert [(t.id, t.input, t.expected_output) for t in suite.tests] == [
        ("r0", "q0", "0"),
        ("r1", "q1", "1"),
        ("r2", "q2", "2"),
    ]


# -- scorers ---------------------------------------------------------------------------------


def test_each_scorer_is_a_named_python_assertion() -> None:
    suite = build([{"input": "a"}, {"input": "b"}], scorers={"exact": exact, "mentions": mentions})
    expected = (
        AssertionSpec(type="python", value=exact, metric="exact", where=Where("<evaluate>")),
        AssertionSpec(type="python", value=mentions, metric="mentions", where=Where("<evaluate>")),
    )
    assert suite.tests[0].assertions == expected
    assert suite.tests[1].assertions == expected
    first = suite.tests[0].assertions[0]
    assert (first.negate, first.threshold, first.weight, first.required) == (
        False,
        None,
        1.0,
        False,
    )


def test_no_scorers_no_assertions() -> None:
    assert build(scorers=None).tests[0].assertions == ()
    assert build(scorers={}).tests[0].assertions == ()


# -- the fingerprint ---------------------------------------------------------------------------


def test_the_hash_is_the_sha256_of_what_decides_the_run() -> None:
    suite = build(
        [{"id": "q1", "input": "2+2", "expected": "4"}], scorers={"exact": exact}, trials=2
    )
    fingerprint = json.dumps(
        {
            "tests": [["q1", "2+2", "4", None]],
            "scorers": {"exact": "tests.runner.test_dataset:exact"},
            "target": {
                "type": "python",
                "model": "gpt-4o",
                "function": "tests.runner.test_dataset:task",
            },
            "attempts": 2,
        },
        sort_keys=True,
    )
    assert suite.hash == hashlib.sha256(fingerprint.encode()).hexdigest()
    assert len(suite.hash) == 64


def test_the_hash_is_stable() -> None:
    dataset = [{"id": "q1", "input": "2+2", "expected": "4"}, {"input": {"x": 1}}]
    assert build(dataset, scorers={"exact": exact}).hash == (
        build(dataset, scorers={"exact": exact}).hash
    )


@pytest.mark.parametrize(
    "change",
    [
        {"dataset": [{"id": "q1", "input": "2+3", "expected": "4"}]},
        {"dataset": [{"id": "q1", "input": "2+2", "expected": "5"}]},
        {"dataset": [{"id": "q9", "input": "2+2", "expected": "4"}]},
        {"threshold": 0.5},
        {"trials": 2},
        {"model": "gpt-4o-mini"},
        {"task": exact},
        {"scorers": {"exact": mentions}},
        {"scorers": {"renamed": exact}},
        {"scorers": {}},
    ],
)
def test_the_hash_changes_with_what_decides_the_run(change: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "dataset": [{"id": "q1", "input": "2+2", "expected": "4"}],
        "scorers": {"exact": exact},
    }
    assert build(**{**base, **change}).hash != build(**base).hash


@pytest.mark.parametrize(
    "change",
    [
        {"dataset": [{"id": "q1", "input": "2+2", "expected": "4", "category": "math"}]},
        {"dataset": [{"id": "q1", "input": "2+2", "expected": "4", "metadata": {"a": 1}}]},
        {"seed": 7},
        {"max_concurrency": 1},
        {"timeout_s": 1.0},
        {"retries": RetryPolicy(max=0)},
        {"name": "another-suite"},
    ],
)
def test_the_hash_ignores_how_it_runs(change: dict[str, Any]) -> None:
    base: dict[str, Any] = {"dataset": [{"id": "q1", "input": "2+2", "expected": "4"}]}
    assert build(**{**base, **change}).hash == build(**base).hash


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "   ", None])
def test_name_must_be_given(name: Any) -> None:
    assert (
        usage_error(name=name) == "evaluate(): name must be a non-empty string (the suite's name)"
    )


@pytest.mark.parametrize("model", ["", "\t", None])
def test_model_must_be_given(model: Any) -> None:
    assert (
        usage_error(model=model)
        == "evaluate(): model must be a non-empty string (the target's name)"
    )


@pytest.mark.parametrize("not_a_function", [None, "my_agent:answer", 42])
def test_task_must_be_a_function(not_a_function: Any) -> None:
    assert (
        usage_error(task=not_a_function)
        == "evaluate(): task must be a function of the input (the agent)"
    )


@pytest.mark.parametrize("trials", [0, -1])
def test_trials_must_be_at_least_one(trials: int) -> None:
    assert usage_error(trials=trials) == "evaluate(): trials must be at least 1"


def test_a_scorer_must_be_a_function() -> None:
    assert (
        usage_error(scorers={"exact": exact, "bad": "exact_match"})
        == "evaluate(): scorer 'bad' is not a function"
    )


def test_the_scorers_are_checked_before_the_dataset() -> None:
    assert usage_error([], scorers={"bad": 1}) == "evaluate(): scorer 'bad' is not a function"


def test_the_first_error_is_the_name() -> None:
    assert usage_error([], name="", model="", task=None, trials=0).startswith(
        "evaluate(): name must"
    )


def test_an_empty_dataset() -> None:
    assert usage_error([]) == "evaluate(): the dataset is empty: give at least one item"
    assert usage_error(iter(())) == "evaluate(): the dataset is empty: give at least one item"


@pytest.mark.parametrize(
    ("item", "kind"),
    [("what is 2+2?", "str"), (["2+2"], "list"), (None, "NoneType"), (4, "int")],
)
def test_an_item_that_is_not_a_dict(item: Any, kind: str) -> None:
    assert usage_error([{"input": "ok"}, item]) == (
        f"evaluate(): dataset item 2 is a {kind}, not a dict with an 'input'"
    )


def test_an_item_without_an_input() -> None:
    assert usage_error([{"input": "ok"}, {"id": "q2", "text": "hi", "expected": "4"}]) == (
        "evaluate(): dataset item 2 has no 'input' (keys: id, text, expected)"
    )


def test_an_empty_item() -> None:
    assert usage_error([{}]) == "evaluate(): dataset item 1 has no 'input' (keys: none)"


def test_an_item_with_keys_that_are_not_strings() -> None:
    assert usage_error([{1: "a", None: "b"}]) == (
        "evaluate(): dataset item 1 has no 'input' (keys: 1, None)"
    )


def test_a_repeated_id() -> None:
    dataset = [{"id": "q1", "input": "a"}, {"id": "q2", "input": "b"}, {"id": "q1", "input": "c"}]
    assert usage_error(dataset) == "evaluate(): dataset item 3 repeats the id 'q1'"


def test_an_id_that_repeats_a_number_given_as_text() -> None:
    assert usage_error([{"id": 1, "input": "a"}, {"id": "1", "input": "b"}]) == (
        "evaluate(): dataset item 2 repeats the id '1'"
    )


def test_an_id_that_repeats_a_generated_one() -> None:
    assert usage_error([{"input": "a"}, {"id": "case-1", "input": "b"}]) == (
        "evaluate(): dataset item 2 repeats the id 'case-1'"
    )


def test_errors_are_usage_errors_without_an_option() -> None:
    with pytest.raises(UsageError) as info:
        build([])
    assert info.value.option is None


class _Agent:
    """A callable object as the task: its repr holds a memory address."""

    def __call__(self, text: str) -> str:
        return text


def test_a_callable_object_or_a_partial_hashes_the_same_in_every_process() -> None:
    def made(task: Any, scorer: Any) -> Suite:
        return suite_from_task(
            name="n", model="m", dataset=[{"input": "q"}], task=task, scorers={"s": scorer}
        )

    first = made(_Agent(), functools.partial(_score, bonus=0))
    again = made(_Agent(), functools.partial(_score, bonus=0))
    assert first.hash == again.hash  # so that resume=True finds the run it made
    assert first.targets[0].settings["function"] == f"{__name__}:_Agent"
    assert made(_Agent(), functools.partial(_score, bonus=1)).hash != first.hash


def _score(output: str, expected: str, bonus: int) -> float:
    return float(output == expected) + bonus


def test_an_input_that_is_not_json_is_a_usage_error() -> None:
    assert usage_error([{"input": "a"}, {"question": {1, 2}}]) == (
        "evaluate(): dataset item 2's 'question' cannot be written as JSON (Object of type "
        "set is not JSON serializable); give text, a list of chat messages, or JSON values"
    )


@pytest.mark.parametrize(("key", "value"), [("id", ""), ("test_id", "  ")])
def test_an_empty_id_is_a_usage_error(key: str, value: str) -> None:
    assert usage_error([{key: value, "input": "a"}]) == (
        f"evaluate(): dataset item 1 has an empty {key!r}; give it a non-empty id, or leave "
        "the key out to have it called 'case-1'"
    )


class _Client:
    """An object given to a partial: its repr holds a memory address."""


def test_a_partials_arguments_are_named_without_addresses_or_secrets() -> None:
    task = functools.partial(_score, _Client(), "x", bonus=_score, api_key="sk-live-SECRET123")
    suite = suite_from_task(name="n", model="m", dataset=[{"input": "q"}], task=task)
    assert suite.targets[0].settings["function"] == (
        f"partial({__name__}:_score, _Client, 'x', bonus={__name__}:_score, api_key=***)"
    )
    again = functools.partial(_score, _Client(), "x", bonus=_score, api_key="sk-live-SECRET123")
    assert suite_from_task(name="n", model="m", dataset=[{"input": "q"}], task=again).hash == (
        suite.hash
    )
