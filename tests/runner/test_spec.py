"""Tests of runner/_spec.py: the runner's spec types (places, retry policy, assertions,
tests, targets, suites, replies, failures), secret names and URL redaction, and
``import_callable`` with each of its error messages at its ``path:line``."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path
from textwrap import dedent

import pytest

from evaldelta.errors import InputError, ParseError
from evaldelta.runner._spec import (
    ASSERTION_TYPES,
    TARGET_TYPES,
    AssertionSpec,
    InfraFailure,
    Reply,
    RetryPolicy,
    Suite,
    TargetSpec,
    TaskFailure,
    TestCase,
    Where,
    import_callable,
    redact_url,
    secret_name,
    url_secrets,
)

# -- the vocabularies ------------------------------------------------------------------


def test_assertion_types() -> None:
    assert ASSERTION_TYPES == (
        "equals",
        "contains",
        "icontains",
        "contains-any",
        "contains-all",
        "starts-with",
        "regex",
        "is-json",
        "numeric",
        "python",
        "latency",
        "cost",
        "llm-rubric",
    )


def test_target_types() -> None:
    assert TARGET_TYPES == ("openai", "python", "command")


# -- Where -------------------------------------------------------------------------------


def test_where_with_a_line() -> None:
    where = Where("evals/qa.eval.yaml", 12)
    assert str(where) == "evals/qa.eval.yaml:12"
    assert (where.path, where.line) == ("evals/qa.eval.yaml", 12)


def test_where_without_a_line_is_the_whole_file() -> None:
    where = Where("targets.yaml")
    assert where.line is None
    assert str(where) == "targets.yaml"


def test_where_line_zero_is_still_a_line() -> None:
    assert str(Where("f.yaml", 0)) == "f.yaml:0"


def test_where_error_is_a_parse_error_at_its_place() -> None:
    error = Where("s.eval.yaml", 7).error("no input")
    assert isinstance(error, ParseError)
    assert isinstance(error, InputError)
    assert (error.path, error.line, error.reason) == ("s.eval.yaml", 7, "no input")
    assert str(error) == "s.eval.yaml:7: no input"


def test_where_error_without_a_line() -> None:
    error = Where("s.eval.yaml").error("empty file")
    assert error.line is None
    assert str(error) == "s.eval.yaml: empty file"


def test_where_is_frozen_and_hashable() -> None:
    where = Where("a", 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        where.line = 2  # type: ignore[misc]
    assert where == Where("a", 1)
    assert where != Where("a", 2)
    assert len({Where("a", 1), Where("a", 1), Where("a")}) == 2


# -- RetryPolicy -------------------------------------------------------------------------


def test_retry_policy_defaults() -> None:
    policy = RetryPolicy()
    assert (policy.max, policy.initial_delay_s, policy.max_delay_s, policy.retry_after_cap_s) == (
        3,
        1.0,
        30.0,
        60.0,
    )


def test_retry_policy_is_a_value() -> None:
    assert RetryPolicy(max=0) == RetryPolicy(0, 1.0, 30.0, 60.0)
    assert RetryPolicy(max=0) != RetryPolicy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        RetryPolicy().max = 5  # type: ignore[misc]


# -- AssertionSpec -----------------------------------------------------------------------


def test_assertion_spec_defaults() -> None:
    spec = AssertionSpec("contains")
    assert spec.value is None
    assert spec.negate is False
    assert spec.threshold is None
    assert spec.weight == 1.0
    assert spec.required is False
    assert spec.metric is None
    assert spec.options == {}
    assert spec.where == Where("<python>")


def test_assertion_spec_options_are_not_shared() -> None:
    assert AssertionSpec("equals").options is not AssertionSpec("equals").options


@pytest.mark.parametrize(
    ("type_", "negate", "label"),
    [
        ("contains", False, "contains"),
        ("contains", True, "not-contains"),
        ("is-json", True, "not-is-json"),
        ("llm-rubric", False, "llm-rubric"),
    ],
)
def test_assertion_label(type_: str, negate: bool, label: str) -> None:
    assert AssertionSpec(type_, "x", negate=negate).label == label


# -- TestCase ----------------------------------------------------------------------------


def test_test_case_defaults() -> None:
    case = TestCase("q1", "hi")
    assert case.expected_output is None
    assert case.category is None
    assert case.metadata == {}
    assert case.threshold is None
    assert case.assertions == ()
    assert case.where == Where("<python>")


def test_test_case_is_not_collected_by_pytest() -> None:
    assert TestCase.__test__ is False


def test_test_case_to_dict() -> None:
    metadata = {"source": "faq", "n": 3}
    case = TestCase(
        "q1",
        [{"role": "user", "content": "hi"}],
        expected_output={"answer": 4},
        category="math",
        metadata=metadata,
        threshold=0.5,
        assertions=(AssertionSpec("equals", "4"),),
        where=Where("s.yaml", 3),
    )
    shown = case.to_dict()
    assert shown == {
        "id": "q1",
        "input": [{"role": "user", "content": "hi"}],
        "expected_output": {"answer": 4},
        "category": "math",
        "metadata": {"source": "faq", "n": 3},
    }
    assert list(shown) == ["id", "input", "expected_output", "category", "metadata"]
    # The metadata is a copy: changing it does not change the test.
    shown["metadata"]["n"] = 99
    assert metadata["n"] == 3


def test_test_case_to_dict_of_a_bare_test() -> None:
    assert TestCase("a", "x").to_dict() == {
        "id": "a",
        "input": "x",
        "expected_output": None,
        "category": None,
        "metadata": {},
    }


# -- TargetSpec --------------------------------------------------------------------------


def test_target_spec_defaults() -> None:
    target = TargetSpec("local", "openai")
    assert target.settings == {}
    assert target.secrets == frozenset()
    assert target.function is None
    assert target.where == Where("<python>")
    assert target.public_settings() == {"type": "openai"}
    assert target.secret_values() == []


def test_public_settings_leave_out_secrets_and_mask_urls_and_params() -> None:
    target = TargetSpec(
        "gpt",
        "openai",
        settings={
            "base_url": "https://user:hunter22@api.example.com/v1?api_key=sk-abc123&region=eu",
            "model": "gpt-4.1",
            "api_key": "sk-live-0000",
            "headers": {"Authorization": "Bearer tok-9999"},
            "params": {"temperature": 0.2, "access_token": "tok-1234", "Max-Tokens": 100},
            "system": "Be brief.",
        },
        secrets=frozenset({"api_key", "headers"}),
    )
    shown = target.public_settings()
    assert shown == {
        "type": "openai",
        "base_url": "https://user:***@api.example.com/v1?api_key=***&region=eu",
        "model": "gpt-4.1",
        # "Max-Tokens" says token: masked too (better one too many than one too few)
        "params": {"temperature": 0.2, "access_token": "***", "Max-Tokens": "***"},
        "system": "Be brief.",
    }
    assert list(shown) == ["type", "base_url", "model", "params", "system"]
    # The target's own settings are left as they were.
    assert target.settings["params"]["access_token"] == "tok-1234"


def test_public_settings_redact_an_endpoint() -> None:
    target = TargetSpec("c", "command", settings={"endpoint": "http://u:pw-secret@h/x"})
    assert target.public_settings() == {"type": "command", "endpoint": "http://u:***@h/x"}


def test_public_settings_keep_non_text_urls_and_non_mapping_params() -> None:
    target = TargetSpec("t", "openai", settings={"base_url": None, "params": ["key", "x"]})
    assert target.public_settings() == {"type": "openai", "base_url": None, "params": ["key", "x"]}


def test_public_settings_of_a_python_target() -> None:
    target = TargetSpec(
        "agent", "python", settings={"function": "agent:answer"}, function=lambda x: x
    )
    assert target.public_settings() == {"type": "python", "function": "agent:answer"}


def test_secret_values_longest_first() -> None:
    # (lengths 19, 14, 12, 10, 8: the order of equal lengths is not defined)
    target = TargetSpec(
        "gpt",
        "openai",
        settings={
            "base_url": "https://u:pw-12345@h/v1?token=t-123456789012",
            "api_key": "sk-0123456789abcdef",
            "headers": {"X-Api-Key": "hdr-123456"},
            "params": {"client_secret": "cs-123456789", "temperature": 0.5},
        },
        secrets=frozenset({"headers"}),
    )
    assert target.secret_values() == [
        "sk-0123456789abcdef",
        "t-123456789012",
        "cs-123456789",
        "hdr-123456",
        "pw-12345",
    ]


def test_secret_values_always_include_the_api_key() -> None:
    # ``api_key`` is scrubbed even when the secrets set does not name it.
    target = TargetSpec("t", "openai", settings={"api_key": "sk-xyz"})
    assert target.secret_values() == ["sk-xyz"]


def test_secret_values_drop_short_empty_and_duplicate_values() -> None:
    target = TargetSpec(
        "t",
        "openai",
        settings={
            "api_key": "ab",  # too short to scrub without mangling the message
            "token": "",
            "headers": {"A": "same-value", "B": "same-value", "C": "xy"},
            "params": {"api_key": "same-value", "secret": None},
        },
        secrets=frozenset({"token", "headers"}),
    )
    assert target.secret_values() == ["same-value"]


def test_secret_values_of_a_setting_not_named_secret_are_left_alone() -> None:
    target = TargetSpec("t", "openai", settings={"model": "gpt-4.1", "system": "long text"})
    assert target.secret_values() == []


# -- Suite -------------------------------------------------------------------------------


def test_suite_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    suite = Suite("qa", (TestCase("a", "x"),), (TargetSpec("m", "python"),))
    assert suite.description is None
    assert suite.attempts == 1
    assert suite.concurrency == 4
    assert suite.timeout_s == 120.0
    assert suite.retries == RetryPolicy()
    assert suite.seed == 0
    assert suite.judge is None
    assert suite.judge_target is None
    assert suite.base_dir == tmp_path
    assert suite.hash == ""
    assert suite.where == Where("<python>")


def test_suite_target_by_name() -> None:
    first = TargetSpec("a", "python")
    second = TargetSpec("b", "command", settings={"command": "x"})
    suite = Suite("s", (), (first, second))
    assert suite.target("b") is second
    assert suite.target("a") is first


def test_suite_target_unknown_is_a_key_error() -> None:
    suite = Suite("s", (), (TargetSpec("a", "python"),))
    with pytest.raises(KeyError) as info:
        suite.target("nope")
    assert info.value.args == ("nope",)


def test_suite_target_first_of_two_with_one_name() -> None:
    first = TargetSpec("a", "python", settings={"n": 1})
    suite = Suite("s", (), (first, TargetSpec("a", "python", settings={"n": 2})))
    assert suite.target("a") is first


# -- secret names and URLs ---------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "api_key",
        "API-KEY",
        "X-Api-Key",
        "apikey",
        "access_token",
        "client_secret",
        "password",
        "db_passwd",
        "Credentials",
        "Authorization-Token",
    ],
)
def test_secret_names(name: str) -> None:
    assert secret_name(name) is True


@pytest.mark.parametrize(
    "name", ["model", "temperature", "base_url", "Authorization", "user", "pass", ""]
)
def test_names_that_are_not_secret(name: str) -> None:
    assert secret_name(name) is False


def test_url_secrets() -> None:
    url = "https://bob:pa55word@host:8443/v1?api_key=k-1&region=eu&token=t-2&x-api-key=k-3"
    assert url_secrets(url) == ["pa55word", "k-1", "t-2", "k-3"]


def test_url_secrets_of_a_plain_url() -> None:
    assert url_secrets("http://localhost:8000/v1") == []
    assert url_secrets("http://bob@host/v1") == []  # a user without a password
    assert url_secrets("http://host/v1?key=&model=m") == []  # blank values are no secrets
    assert url_secrets("") == []


def test_redact_url() -> None:
    assert (
        redact_url("https://bob:pa55word@host/v1?key=k-123&region=eu")
        == "https://bob:***@host/v1?key=***&region=eu"
    )


def test_redact_url_masks_a_secret_containing_another_whole() -> None:
    # The longer secret is replaced first, so no tail of it is left showing.
    url = "http://u:abc@h/?token=abcdef"
    assert redact_url(url) == "http://u:***@h/?token=***"


def test_redact_url_masks_percent_encoded_secrets_and_nothing_else() -> None:
    assert redact_url("https://h/v1?api_key=abc%2Fdef") == "https://h/v1?api_key=***"
    assert redact_url("https://h/v1?token=a+b&x=1") == "https://h/v1?token=***&x=1"
    # the password's text elsewhere in the URL (here the path) is no secret of its own
    assert redact_url("http://u:v1@host/v1") == "http://u:***@host/v1"
    assert redact_url("http://u:p%40ss@host/x?key=k") == "http://u:***@host/x?key=***"


def test_redact_url_masks_a_secret_found_again_in_the_path() -> None:
    url = "https://host/SEKRET/v1?api_key=SEKRET"
    assert redact_url(url) == "https://host/***/v1?api_key=***"


def test_url_secrets_holds_each_secret_as_written_and_as_decoded() -> None:
    # a message may show the URL as given, or the decoded value a client sent
    assert url_secrets("https://h/v1?api_key=abc%2Fdef") == ["abc%2Fdef", "abc/def"]
    assert url_secrets("http://u:p%40ss@h/?token=a+b") == ["p%40ss", "p@ss", "a+b", "a b"]


def test_secret_values_of_equal_length_come_in_one_order() -> None:
    spec = TargetSpec(
        name="t",
        type="openai",
        settings={"api_key": "bbb", "params": {"token": "aaa"}, "base_url": "http://h/?key=ccc"},
    )
    assert spec.secret_values() == ["aaa", "bbb", "ccc"]


def test_redact_url_leaves_a_plain_url_alone() -> None:
    url = "https://api.openai.com/v1?model=gpt-4.1"
    assert redact_url(url) == url


# -- Reply and the failures ----------------------------------------------------------------


def test_reply_defaults() -> None:
    reply = Reply("Paris", 12.5)
    assert (reply.output, reply.latency_ms) == ("Paris", 12.5)
    assert reply.wait_ms == 0.0
    assert reply.input_tokens is None
    assert reply.output_tokens is None
    assert reply.cost_usd is None
    assert reply.tries == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        reply.tries = 2  # type: ignore[misc]


def test_reply_with_every_field() -> None:
    reply = Reply({"a": 1}, 3.0, 1500.0, 10, 20, 0.0004, 3)
    assert dataclasses.astuple(reply) == ({"a": 1}, 3.0, 1500.0, 10, 20, 0.0004, 3)


def test_infra_failure() -> None:
    failure = InfraFailure("gave up after 4 tries: last: 503", wait_ms=7000.0, latency_ms=40.0)
    assert str(failure) == "gave up after 4 tries: last: 503"
    assert failure.args == ("gave up after 4 tries: last: 503",)
    assert (failure.wait_ms, failure.latency_ms) == (7000.0, 40.0)
    assert isinstance(failure, Exception)
    assert not isinstance(failure, TaskFailure)


def test_infra_failure_defaults() -> None:
    failure = InfraFailure("x")
    assert (failure.wait_ms, failure.latency_ms) == (0.0, 0.0)


def test_task_failure() -> None:
    failure = TaskFailure("exceeded timeout_s (2 s)", wait_ms=1.0, latency_ms=2000.0)
    assert str(failure) == "exceeded timeout_s (2 s)"
    assert (failure.wait_ms, failure.latency_ms) == (1.0, 2000.0)
    assert failure.still_running is None
    assert not isinstance(failure, InfraFailure)


def test_task_failure_defaults() -> None:
    failure = TaskFailure("raised ValueError: no")
    assert (failure.wait_ms, failure.latency_ms, failure.still_running) == (0.0, 0.0, None)


# -- import_callable -----------------------------------------------------------------------


@pytest.fixture
def clean_imports(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Restore ``sys.path`` and forget the modules a test imported."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


WHERE = Where("evals/qa.eval.yaml", 9)


def write_module(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(dedent(text), encoding="utf-8")
    return path


def import_error(ref: str, base_dir: Path) -> ParseError:
    with pytest.raises(ParseError) as info:
        import_callable(ref, base_dir, WHERE)
    assert (info.value.path, info.value.line) == ("evals/qa.eval.yaml", 9)
    return info.value


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_from_beside_the_suite(tmp_path: Path) -> None:
    write_module(
        tmp_path,
        "evd_spec_agent",
        """\
        def answer(question):
            return question.upper()

        class Agent:
            @staticmethod
            def run(question):
                return "run:" + question
        """,
    )
    func = import_callable("evd_spec_agent:answer", tmp_path, WHERE)
    assert func("hi") == "HI"
    method = import_callable("evd_spec_agent:Agent.run", tmp_path, WHERE)
    assert method("q") == "run:q"
    assert sys.path[0] == str(tmp_path)


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_adds_the_folder_once(tmp_path: Path) -> None:
    write_module(tmp_path, "evd_spec_once", "def f():\n    return 1\n")
    import_callable("evd_spec_once:f", tmp_path, WHERE)
    import_callable("evd_spec_once:f", tmp_path, WHERE)
    assert sys.path.count(str(tmp_path)) == 1


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_of_an_installed_module(tmp_path: Path) -> None:
    import json

    assert import_callable("json:dumps", tmp_path, WHERE) is json.dumps
    assert import_callable("os.path:join", tmp_path, WHERE)("a", "b") == str(Path("a", "b"))


@pytest.mark.parametrize("ref", ["agent", "agent:", ":answer", ""])
@pytest.mark.usefixtures("clean_imports")
def test_import_callable_needs_module_colon_function(tmp_path: Path, ref: str) -> None:
    error = import_error(ref, tmp_path)
    assert str(error) == (
        f'evals/qa.eval.yaml:9: {ref!r} is not "module:function"; write e.g. "my_agent:answer"'
    )
    # Nothing was imported, and the path was left alone.
    assert str(tmp_path) not in sys.path


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_of_a_missing_module(tmp_path: Path) -> None:
    error = import_error("evd_spec_nosuch:answer", tmp_path)
    assert str(error) == (
        "evals/qa.eval.yaml:9: cannot import module 'evd_spec_nosuch' for "
        "'evd_spec_nosuch:answer' (No module named 'evd_spec_nosuch'); check the name, and "
        f"that the module sits beside the suite ({tmp_path}) or is installed"
    )
    assert isinstance(error.__cause__, ModuleNotFoundError)


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_of_a_module_that_raises(tmp_path: Path) -> None:
    write_module(tmp_path, "evd_spec_broken", "raise RuntimeError('no config found')\n")
    error = import_error("evd_spec_broken:answer", tmp_path)
    assert str(error) == (
        "evals/qa.eval.yaml:9: importing module 'evd_spec_broken' for "
        "'evd_spec_broken:answer' failed: RuntimeError: no config found"
    )
    assert isinstance(error.__cause__, RuntimeError)


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_of_a_module_that_does_not_parse(tmp_path: Path) -> None:
    write_module(tmp_path, "evd_spec_syntax", "def f(:\n")
    error = import_error("evd_spec_syntax:f", tmp_path)
    assert error.reason.startswith(
        "importing module 'evd_spec_syntax' for 'evd_spec_syntax:f' failed: SyntaxError: "
    )


@pytest.mark.parametrize("attr", ["missing", "Agent.missing", "nothing"])
@pytest.mark.usefixtures("clean_imports")
def test_import_callable_of_a_missing_function(tmp_path: Path, attr: str) -> None:
    write_module(tmp_path, "evd_spec_partial", "class Agent:\n    pass\n\nnothing = None\n")
    error = import_error(f"evd_spec_partial:{attr}", tmp_path)
    assert str(error) == (
        f"evals/qa.eval.yaml:9: module 'evd_spec_partial' has no {attr!r}; "
        "check the name after the colon"
    )


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_of_something_not_callable(tmp_path: Path) -> None:
    write_module(tmp_path, "evd_spec_value", "ANSWER = 42\n")
    error = import_error("evd_spec_value:ANSWER", tmp_path)
    assert str(error) == (
        "evals/qa.eval.yaml:9: 'evd_spec_value:ANSWER' is not a function; "
        "name a function after the colon"
    )


@pytest.mark.usefixtures("clean_imports")
def test_import_callable_error_without_a_line(tmp_path: Path) -> None:
    with pytest.raises(ParseError) as info:
        import_callable("nocolon", tmp_path, Where("<evaluate>"))
    assert str(info.value) == (
        '<evaluate>: \'nocolon\' is not "module:function"; write e.g. "my_agent:answer"'
    )
