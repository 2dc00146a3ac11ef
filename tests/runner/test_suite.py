"""Tests of runner/_suite.py: reading a suite and its targets file, every error at its line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from textwrap import dedent

import pytest

from evaldelta.errors import ParseError
from evaldelta.runner._suite import load_suite, suite_from_mapping

EXAMPLE = Path(__file__).parents[2] / "examples/benchmark-tooling/evals/benchmark.eval.yaml"

TARGETS = """\
targets:
  - name: local
    type: openai
    base_url: http://localhost:8000/v1
    model: m
  - name: judge
    type: openai
    base_url: http://localhost:8000/v1
    model: judge-model
  - name: agent
    type: command
    command: python agent.py
"""

ENV = {"OPENAI_API_KEY": "sk-secret-123"}


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(dedent(text), encoding="utf-8")
    return path


def suite_file(tmp_path: Path, body: str, targets: str | None = TARGETS) -> Path:
    if targets is not None:
        write(tmp_path, "targets.yaml", targets)
    return write(tmp_path, "s.eval.yaml", body)


def error(path: Path, env: dict[str, str] | None = None, **kwargs: object) -> str:
    with pytest.raises(ParseError) as info:
        load_suite(path, env=ENV if env is None else env, **kwargs)  # type: ignore[arg-type]
    message = str(info.value)
    assert "\n" not in message
    assert "sk-secret-123" not in message
    return message


BASIC = """\
targets: [local]
tests:
  - id: a
    input: hi
"""


# -- loading ---------------------------------------------------------------------------


def test_benchmark_example_loads(tmp_path: Path) -> None:
    suite_path = tmp_path / "benchmark.eval.yaml"
    shutil.copy(EXAMPLE, suite_path)
    write(
        tmp_path,
        "targets.yaml",
        """\
        targets:
          - {name: gemini-3-flash-preview, type: openai, base_url: "http://x/v1", model: g}
          - {name: gpt-4.1, type: openai, base_url: "https://api.openai.com/v1",
             model: gpt-4.1, api_key_env: OPENAI_API_KEY}
          - {name: gpt-5-mini, type: openai, base_url: "https://api.openai.com/v1",
             model: gpt-5-mini, api_key_env: OPENAI_API_KEY}
          - {name: unused, type: openai, base_url: "${UNSET_BUT_UNUSED}", model: u}
        """,
    )
    suite = load_suite(suite_path, env=ENV)
    assert suite.name == "benchmark"
    assert suite.description == "Benchmark three models on everyday assistant tasks"
    assert [t.name for t in suite.targets] == ["gemini-3-flash-preview", "gpt-4.1", "gpt-5-mini"]
    assert [t.id for t in suite.tests] == ["greeting", "code-generation", "summarization"]
    greeting = suite.tests[0]
    assert greeting.input == "Say hello"
    assert greeting.where.line == 12
    (rubric,) = greeting.assertions
    assert rubric.type == "llm-rubric"
    assert rubric.value == "The response should contain a greeting"
    assert rubric.metric == "llm-rubric"
    assert suite.attempts == 1
    assert suite.concurrency == 4
    assert suite.timeout_s == 120.0
    assert suite.seed == 0
    assert suite.judge is None
    assert suite.judge_target is None
    assert suite.base_dir == tmp_path.resolve()
    assert str(suite.where) == str(suite_path)
    assert len(suite.hash) == 64
    assert suite.target("gpt-4.1").settings["api_key"] == "sk-secret-123"


def test_defaults_and_policies(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path,
        """\
        name: smoke
        description: a few checks
        targets: [local]
        attempts: 3
        concurrency: 2
        timeout_s: 30
        retries: {max: 5, initial_delay_s: 0.5, max_delay_s: 10}
        seed: 7
        x-owner: evals-team
        $schema: ignored
        tests:
          - id: 1
            input: hi
            expected: hello
            category: greet
            metadata: {source: faq}
            threshold: 0.5
        """,
    )
    suite = load_suite(path, env=ENV)
    assert suite.name == "smoke"
    assert (suite.attempts, suite.concurrency, suite.timeout_s, suite.seed) == (3, 2, 30.0, 7)
    assert (suite.retries.max, suite.retries.initial_delay_s, suite.retries.max_delay_s) == (
        5,
        0.5,
        10.0,
    )
    test = suite.tests[0]
    assert test.id == "1"
    assert test.expected_output == "hello"
    assert test.category == "greet"
    assert test.metadata == {"source": "faq"}
    assert test.threshold == 0.5
    assert load_suite(path, env=ENV, name="other").name == "other"


@pytest.mark.parametrize(
    "head",
    [
        "execution: {targets: [local], trials: {count: 2}}",
        "execution: {target: local}\nrepeat: 2",
        "targets: local\nattempts: 2",
    ],
)
def test_aliases_of_targets_and_attempts(tmp_path: Path, head: str) -> None:
    path = suite_file(tmp_path, head + "\ntests: [{id: a, input: hi}]\n")
    suite = load_suite(path, env=ENV)
    assert [t.name for t in suite.targets] == ["local"]
    assert suite.attempts == 2


def test_expected_output_and_chat_input(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path,
        """\
        targets: [local]
        tests:
          - id: chat
            input:
              - {role: system, content: Be brief.}
              - {role: user, content: Hi}
            expected_output: {answer: 42}
        """,
    )
    test = load_suite(path, env=ENV).tests[0]
    assert test.input == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert type(test.input[0]) is dict
    assert test.expected_output == {"answer": 42}


def test_assertions_metrics_and_suite_assert(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path,
        """\
        targets: [local]
        judge: judge
        assert:
          - type: latency
            threshold: 5000
        tests:
          - id: a
            input: hi
            criteria: polite
            assert:
              - {type: contains, value: hello}
              - {type: contains, value: world, weight: 2, required: true}
              - {type: not-contains, value: sorry}
              - {type: numeric, value: 42, abs_tol: 0.5}
              - {type: is-json, value: {type: object}}
              - {type: regex, value: '\\d+', metric: digits}
              - {type: contains-any, value: [a, b]}
              - {type: python, value: "checks:score", threshold: 0.5}
              - {type: equals, value: null}
        """,
    )
    suite = load_suite(path, env=ENV)
    a = suite.tests[0].assertions
    assert [x.metric for x in a] == [
        "contains",
        "contains-2",
        "not-contains",
        "numeric",
        "is-json",
        "digits",
        "contains-any",
        "python",
        "equals",
        "llm-rubric",
        "latency",
    ]
    assert a[1].weight == 2.0
    assert a[1].required
    assert a[2].negate
    assert a[2].type == "contains"
    assert a[3].options == {"abs_tol": 0.5}
    assert a[4].value == {"type": "object"}
    assert a[4].options == {"schema": {"type": "object"}}
    assert a[7].threshold == 0.5
    assert a[9].value == "polite"
    assert a[10].threshold == 5000.0
    assert a[10].where.line == 4
    assert a[0].where.line == 11
    assert suite.judge == "judge"
    assert suite.judge_target is not None
    assert suite.judge_target.settings["model"] == "judge-model"
    assert [t.name for t in suite.targets] == ["local"]


def test_tests_from_a_yaml_file(tmp_path: Path) -> None:
    write(tmp_path, "cases.yaml", "tests:\n  - id: a\n    input: hi\n  - id: b\n    input: yo\n")
    path = suite_file(tmp_path, "targets: [local]\ntests: cases.yaml\n")
    suite = load_suite(path, env=ENV)
    assert [t.id for t in suite.tests] == ["a", "b"]
    assert suite.tests[1].where.path == str(tmp_path / "cases.yaml")
    assert suite.tests[1].where.line == 4


def test_tests_from_a_jsonl_file(tmp_path: Path) -> None:
    rows = [{"id": "a", "input": "hi"}, {"id": "b", "input": "yo", "assert": []}]
    (tmp_path / "cases.jsonl").write_text(
        json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n", encoding="utf-8"
    )
    path = suite_file(tmp_path, "targets: [local]\ntests: cases.jsonl\n")
    suite = load_suite(path, env=ENV)
    assert [(t.id, t.where.line) for t in suite.tests] == [("a", 1), ("b", 3)]


def test_jsonl_errors_name_that_file_and_line(tmp_path: Path) -> None:
    jsonl = tmp_path / "cases.jsonl"
    jsonl.write_text('{"id": "a", "input": "hi"}\n{"id": "b", "input": 3}\n', encoding="utf-8")
    path = suite_file(tmp_path, "targets: [local]\ntests: cases.jsonl\n")
    assert error(path).startswith(f'{jsonl}:2: `input` of test "b" must be a string')
    jsonl.write_text('{"id": "a", "input": "hi"}\n{"id": \n', encoding="utf-8")
    assert error(path).startswith(f"{jsonl}:2: invalid JSON: ")


def test_env_substitution_and_defaults(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path,
        BASIC,
        targets="""\
        targets:
          - name: local
            type: openai
            base_url: ${BASE:-http://localhost:8000/v1}
            model: ${MODEL}
            params: {stop: ["${STOP}"]}
        """,
    )
    env = {"MODEL": "qwen", "STOP": "END"}
    target = load_suite(path, env=env).targets[0]
    assert target.settings == {
        "base_url": "http://localhost:8000/v1",
        "model": "qwen",
        "params": {"stop": ["END"]},
    }
    target = load_suite(path, env={**env, "BASE": "https://example.org/v1"}).targets[0]
    assert target.settings["base_url"] == "https://example.org/v1"
    assert error(path, env={"STOP": "x"}) == (
        f'{tmp_path / "targets.yaml"}:5: ${{MODEL}} is not set (target "local"); export it, '
        "or write ${MODEL:-default} to give a default"
    )


def test_api_key_env_and_secrets(tmp_path: Path) -> None:
    targets = """\
    targets:
      - name: local
        type: openai
        base_url: https://api.openai.com/v1
        model: gpt-4.1
        api_key_env: OPENAI_API_KEY
        headers: {X-Api-Key: "${OPENAI_API_KEY}", X-Team: evals}
    """
    path = suite_file(tmp_path, BASIC, targets=targets)
    suite = load_suite(path, env=ENV)
    target = suite.targets[0]
    assert target.settings["api_key"] == "sk-secret-123"
    assert target.secrets == {"api_key", "headers"}
    shown = target.public_settings()
    assert shown == {
        "type": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "gpt-4.1",
        "api_key_env": "OPENAI_API_KEY",
    }
    assert "sk-secret-123" not in json.dumps(shown)
    # The key is not part of the hash: a new key measures the same thing.
    assert load_suite(path, env={"OPENAI_API_KEY": "sk-other"}).hash == suite.hash
    path = suite_file(tmp_path, BASIC, targets=targets.replace("X-Api-Key", "X-Other"))
    assert error(path, env={"OPENAI_API_KEY": ""}) == (
        f"{tmp_path / 'targets.yaml'}:6: environment variable OPENAI_API_KEY (api_key_env of "
        'target "local") is not set; export it, or remove api_key_env for an endpoint that '
        "needs no key"
    )


def test_hash_follows_what_is_measured(tmp_path: Path) -> None:
    base = load_suite(suite_file(tmp_path, BASIC), env=ENV).hash
    policies = load_suite(
        suite_file(tmp_path, BASIC + "concurrency: 9\ntimeout_s: 5\nretries: {max: 0}\n"), env=ENV
    ).hash
    assert policies == base
    changed = load_suite(suite_file(tmp_path, BASIC.replace("hi", "hello")), env=ENV).hash
    assert changed != base
    assert load_suite(suite_file(tmp_path, BASIC + "attempts: 2\n"), env=ENV).hash != base


def test_inline_python_and_command_targets(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path,
        """\
        targets:
          - {name: fn, type: python, function: "my_agent:answer"}
          - name: cli
            type: command
            command: ["python", "agent.py"]
            cwd: agent
            env: {LOG_LEVEL: debug, PORT: 8080}
        tests: [{id: a, input: hi}]
        """,
        targets=None,
    )
    fn, cli = load_suite(path, env={}).targets
    assert fn.settings == {"function": "my_agent:answer"}
    assert fn.where.line == 2
    assert cli.settings == {
        "command": ["python", "agent.py"],
        "cwd": str(tmp_path.resolve() / "agent"),
        "env": {"LOG_LEVEL": "debug", "PORT": "8080"},
    }


def test_targets_file_argument_and_agentv_folder(tmp_path: Path) -> None:
    evals = tmp_path / "project" / "evals" / "deep"
    evals.mkdir(parents=True)
    (tmp_path / "project" / ".agentv").mkdir()
    write(tmp_path / "project" / ".agentv", "targets.yaml", TARGETS)
    path = write(evals, "s.yaml", BASIC)
    assert load_suite(path, env={}).targets[0].where.path.endswith(".agentv/targets.yaml")
    other = write(tmp_path, "other.yaml", TARGETS.replace("model: m", "model: other"))
    suite = load_suite(path, env={}, targets_file=other)
    assert suite.targets[0].settings["model"] == "other"
    assert suite.name == "s"


def test_suite_from_mapping(tmp_path: Path) -> None:
    suite = suite_from_mapping(
        {
            "name": "py",
            "targets": [{"name": "fn", "type": "python", "function": "m:f"}],
            "tests": [{"id": "a", "input": "hi", "assert": [{"type": "contains", "value": "h"}]}],
        },
        base_dir=tmp_path,
        env={},
    )
    assert suite.name == "py"
    assert suite.tests[0].assertions[0].metric == "contains"
    with pytest.raises(ParseError, match=r"^<python>: unknown key `attempt` in the suite"):
        suite_from_mapping({"name": "x", "attempt": 2}, base_dir=tmp_path, env={})


# -- errors ----------------------------------------------------------------------------


def test_bad_yaml(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "targets: [local]\ntests:\n  - id: a\n   input: hi\n")
    message = error(path)
    assert message.startswith(f"{path}:4: invalid YAML: ")
    assert "check the indentation" in message


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "targets: [agent]\n")
    assert (
        error(path)
        == f"{path}:5: `targets` is given twice in this mapping (first at line 1); keep one"
    )


def test_empty_suite(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "")
    assert error(path) == f"{path}: the suite is empty; write at least `targets:` and `tests:`"


def test_unknown_top_level_key(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "atempts: 3\n")
    message = error(path)
    assert message.startswith(
        f"{path}:5: unknown key `atempts` in the suite; did you mean `attempts`? known keys: name,"
    )


def test_unknown_key_in_a_test(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "    expectd: x\n")
    assert error(path).startswith(
        f"{path}:5: unknown key `expectd` in a test; did you mean `expected`?"
    )


def test_unknown_assertion_type(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "    assert:\n      - type: not-containz\n")
    assert error(path).startswith(
        f'{path}:6: unknown assertion type "not-containz"; did you mean "not-contains"? '
        "known types: equals, contains,"
    )


def test_bad_regex(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "    assert:\n      - type: regex\n        value: '('\n")
    message = error(path)
    assert message.startswith(f'{path}:7: the pattern "(" does not compile: missing ), ')


def test_duplicate_test_ids(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "  - id: a\n    input: again\n")
    assert error(path) == (
        f'{path}:5: duplicate test id "a" (first at {path}:3); give each test its own id'
    )


def test_unknown_target(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC.replace("[local]", "[local, gpt-4.1]"))
    message = error(path)
    assert message.startswith(
        f'{path}:1: unknown target "gpt-4.1": define it in targets.yaml beside the suite '
        "(or --targets FILE), e.g. targets: [{name: gpt-4.1, type: openai,"
    )
    assert message.endswith(
        f"defined: local, judge, agent (targets file {tmp_path / 'targets.yaml'})"
    )


def test_unknown_target_without_a_targets_file(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC, targets=None)
    message = error(path)
    assert message.startswith(f'{path}:1: unknown target "local": define it in targets.yaml')
    assert "no targets file found" in message


def test_no_targets(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "tests: [{id: a, input: hi}]\n")
    assert error(path).startswith(f"{path}:1: the suite names no targets; add targets:")


def test_missing_id(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "targets: [local]\ntests:\n  - input: hi\n")
    assert error(path) == (
        f"{path}:3: a test needs `id:` (a name unique in the suite); write e.g. id: greeting"
    )


def test_input_of_the_wrong_type(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "targets: [local]\ntests:\n  - id: a\n    input: {q: hi}\n")
    assert error(path).startswith(
        f'{path}:4: `input` of test "a" must be a string or a non-empty list of chat '
        "messages, got a mapping;"
    )


def test_bad_message_role(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path, "targets: [local]\ntests:\n  - id: a\n    input: [{role: bot, content: x}]\n"
    )
    assert error(path).startswith(f"{path}:4: a message's `role` must be one of system, user,")


def test_attempts_zero(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "attempts: 0\n")
    assert error(path) == f"{path}:5: `attempts` must be a whole number of at least 1, got 0"


def test_attempts_given_twice(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "attempts: 2\nrepeat: 3\n")
    assert error(path).startswith(f"{path}:6: the number of attempts is given twice")


def test_judge_not_openai(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "judge: {target: agent}\n")
    assert error(path).startswith(
        f'{path}:5: the judge "agent" is a command target; a judge must be an openai target'
    )


def test_judge_unknown(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC + "judge: jduge\n")
    assert error(path).startswith(f'{path}:5: unknown judge target "jduge" (did you mean "judge"?)')


def test_contains_any_not_a_list(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path, BASIC + "    assert:\n      - type: contains-any\n        value: yes please\n"
    )
    assert error(path) == (
        f"{path}:7: a contains-any assertion's `value` must be a non-empty list of strings, "
        'got "yes please"; write e.g. value: ["yes", "correct"]'
    )


def test_is_json_invalid_schema(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path, BASIC + "    assert:\n      - type: is-json\n        schema: {type: objekt}\n"
    )
    message = error(path)
    assert message.startswith(
        f"{path}:7: the schema of this is-json assertion is not a valid JSON Schema: "
    )
    assert "'objekt' is not valid" in message


@pytest.mark.parametrize(
    ("assertion", "line", "text"),
    [
        ("{type: latency}", 6, "a latency assertion needs `threshold:`"),
        ("{type: cost, threshold: -1}", 6, "`threshold` must be a number of at least 0, got -1"),
        ("{type: python, value: nocolon}", 6, '`value` must be "module:function", got "nocolon"'),
        ("{type: numeric, value: ten}", 6, "a numeric assertion's `value` must be a number"),
        ("{type: contains, value: x, treshold: 1}", 6, "unknown key `treshold` in a contains"),
        ("{type: contains, value: x, threshold: 1}", 6, "`threshold` has no meaning for a"),
        ("{type: equals}", 6, "a equals assertion needs `value:`"),
        ("{type: contains, value: x, weight: -2}", 6, "`weight` must be a number of at least 0"),
        ("{type: llm-rubric, value: ''}", 6, "`value` must be a non-empty string"),
        ("hello", 6, "each assertion is a mapping with `type:`"),
    ],
)
def test_assertion_errors(tmp_path: Path, assertion: str, line: int, text: str) -> None:
    path = suite_file(tmp_path, BASIC + f"    assert:\n      - {assertion}\n")
    message = error(path)
    assert message.startswith(f"{path}:{line}: {text}")


@pytest.mark.parametrize(
    ("target", "line", "text"),
    [
        ("{name: local, type: openai, model: m}", 2, 'openai target "local" needs `base_url:`'),
        ("{name: local, type: openai, base_url: localhost, model: m}", 2, "`base_url` of"),
        ("{name: local, provider: azure, model: m}", 2, 'target "local": provider "azure"'),
        (
            "{name: local, type: opneai}",
            2,
            'target "local": unknown type "opneai"; did you mean "openai"?',
        ),
        ("{name: local, type: python, function: m:f, modle: x}", 2, "unknown key `modle`"),
        ("{name: local, type: command, command: []}", 2, "`command` of target"),
    ],
)
def test_target_errors(tmp_path: Path, target: str, line: int, text: str) -> None:
    path = suite_file(tmp_path, BASIC, targets=f"targets:\n  - {target}\n")
    assert error(path).startswith(f"{tmp_path / 'targets.yaml'}:{line}: {text}")


def test_provider_openai_is_accepted(tmp_path: Path) -> None:
    targets = "targets:\n  - {name: local, provider: openai, endpoint: 'http://h/v1', model: m}\n"
    path = suite_file(tmp_path, BASIC, targets=targets)
    target = load_suite(path, env={}).targets[0]
    assert (target.type, target.settings["base_url"]) == ("openai", "http://h/v1")


def test_missing_targets_file_argument(tmp_path: Path) -> None:
    path = suite_file(tmp_path, BASIC)
    missing = tmp_path / "nope.yaml"
    assert error(path, targets_file=missing) == (
        f"{missing}: no such targets file; check the --targets path"
    )


def test_missing_tests_file(tmp_path: Path) -> None:
    path = suite_file(tmp_path, "targets: [local]\ntests: cases.jsonl\n")
    assert error(path) == (
        f"{path}:2: `tests` names {tmp_path / 'cases.jsonl'}, which does not exist; the path "
        "is relative to the suite"
    )
