"""The three kinds of target, and their retries, against a fake server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from random import Random
from typing import Any, TypeVar

import httpx
import pytest

from evaldelta.errors import ParseError, TargetError
from evaldelta.runner._spec import (
    InfraFailure,
    Reply,
    RetryPolicy,
    TargetSpec,
    TaskFailure,
    TestCase,
)
from evaldelta.runner._targets import (
    Calling,
    CommandTarget,
    OpenAITarget,
    PythonTarget,
    Target,
    backoff_delay,
    build_target,
    parse_retry_after,
)
from tests.runner.fake_openai import FakeOpenAI, Step

T = TypeVar("T")

#: Retries fast enough for tests.
FAST = RetryPolicy(max=3, initial_delay_s=0.01, max_delay_s=0.02, retry_after_cap_s=5.0)
FAKE_SCRIPT = Path(__file__).with_name("fake_openai.py")
KEY = "sk-test-0123456789abcdef"


def make(spec: TargetSpec, base_dir: Path | None = None, **kwargs: Any) -> Target:
    options: dict[str, Any] = {"timeout_s": 5.0, "retries": FAST, "rng": Random(0)}
    options.update(kwargs)
    return build_target(spec, Calling(base_dir=base_dir or Path.cwd(), **options))


def run(target: Target, work: Callable[[Target], Awaitable[T]]) -> T:
    async def go() -> T:
        try:
            return await work(target)
        finally:
            await target.aclose()

    return asyncio.run(go())


def call(target: Target, test: TestCase | None = None, attempt: int = 1) -> Reply:
    return run(target, lambda t: t.call(test or TestCase("t1", "What is the capital?"), attempt))


def openai(server: FakeOpenAI, name: str = "gpt", **settings: Any) -> TargetSpec:
    return TargetSpec(
        name,
        "openai",
        {"base_url": server.base_url, "model": "m1", **settings},
        secrets=frozenset({"api_key"}),
    )


@pytest.fixture
def server() -> Any:
    with FakeOpenAI() as s:
        yield s


# -- backoff ---------------------------------------------------------------------------


def test_backoff_is_full_jitter_capped() -> None:
    policy = RetryPolicy(max=10, initial_delay_s=1.0, max_delay_s=8.0)
    rng = Random(1)
    for k, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (4, 8.0), (2000, 8.0)]:
        delays = [backoff_delay(policy, k, rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # spread over the whole range
    # Seeded: the same generator state gives the same delays.
    assert backoff_delay(policy, 3, Random(7)) == backoff_delay(policy, 3, Random(7))


def test_retry_after_wins_over_the_cap_up_to_its_own() -> None:
    policy = RetryPolicy(max_delay_s=2.0, retry_after_cap_s=10.0)
    assert backoff_delay(policy, 0, Random(0), retry_after=5.0) == 5.0
    assert backoff_delay(policy, 0, Random(0), retry_after=99.0) == 10.0


def test_parse_retry_after() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None


# -- openai ----------------------------------------------------------------------------


def test_openai_reply_tokens_and_cost(server: FakeOpenAI) -> None:
    server.script(Step(content="Paris", usage=(12, 3)))
    price = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}
    reply = call(make(openai(server, price=price)))
    assert reply.output == "Paris"
    assert (reply.input_tokens, reply.output_tokens) == (12, 3)
    assert reply.cost_usd == pytest.approx((12 * 2.0 + 3 * 8.0) / 1e6)
    assert reply.tries == 1
    assert reply.wait_ms == 0
    assert server.requests[0]["model"] == "m1"
    assert server.requests[0]["messages"] == [{"role": "user", "content": "What is the capital?"}]


def test_openai_without_usage_or_price(server: FakeOpenAI) -> None:
    server.script(Step(content="x", usage=None), Step(content="y", usage=(1, 1)))
    target = make(openai(server))

    async def both(t: Any) -> list[Reply]:
        return [await t.call(TestCase("a", "q"), 1), await t.call(TestCase("b", "q"), 1)]

    first, second = run(target, both)
    assert (first.input_tokens, first.output_tokens, first.cost_usd) == (None, None, None)
    assert (second.input_tokens, second.cost_usd) == (1, None)


def test_429_then_503_then_200_waits_apart_from_latency(server: FakeOpenAI) -> None:
    server.script(
        Step(status=429, headers={"Retry-After": "1"}),
        Step(status=503),
        Step(content="ok", delay_s=0.05),
    )
    reply = call(make(openai(server)))
    assert reply.output == "ok"
    assert reply.tries == 3
    assert reply.wait_ms >= 1000
    assert reply.latency_ms < 500
    assert server.count() == 3


def test_retries_exhausted_is_infra_failure(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(status=503)
    with pytest.raises(InfraFailure) as caught:
        call(make(openai(server)))
    message = str(caught.value)
    assert message.startswith('target "gpt": gave up after 4 tries: last: 503 Service Unavailable')
    assert server.base_url in message
    assert server.count() == 4
    assert caught.value.wait_ms > 0
    assert caught.value.latency_ms == 0  # no try answered: the time lost is all wait_ms


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502])
def test_transient_statuses_are_retried(server: FakeOpenAI, status: int) -> None:
    server.script(Step(status=status))
    assert call(make(openai(server))).tries == 2


def test_no_retries_means_one_try(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(status=500)
    with pytest.raises(InfraFailure, match="gave up after 1 try: last: 500"):
        call(make(openai(server), retries=RetryPolicy(max=0)))
    assert server.count() == 1


def test_injected_sleep_gets_the_delays(server: FakeOpenAI) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    server.script(Step(status=429, headers={"Retry-After": "2"}), Step(status=500))
    reply = call(make(openai(server), sleep=sleep))
    assert reply.tries == 3
    assert slept[0] == 2.0
    assert 0 <= slept[1] <= FAST.initial_delay_s * 2


def test_401_is_target_error_at_once(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(status=401)
    target = make(openai(server, "gpt-4.1", api_key=KEY, api_key_env="OPENAI_API_KEY"))
    with pytest.raises(TargetError) as caught:
        call(target)
    assert str(caught.value) == (
        'target "gpt-4.1": the endpoint refused the API key (401 Unauthorized from '
        f"{server.base_url}/chat/completions); check api_key_env (OPENAI_API_KEY)"
    )
    assert caught.value.status == 401
    assert caught.value.target == "gpt-4.1"
    assert server.count() == 1


def test_403_without_a_key_says_none_was_sent(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(status=403)
    with pytest.raises(TargetError, match=r"wants an API key and none was sent \(403 Forbidden"):
        call(make(openai(server)))
    assert server.count() == 1


def test_404_is_target_error_at_once(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(status=404)
    with pytest.raises(TargetError) as caught:
        call(make(openai(server)))
    assert str(caught.value) == (
        f'target "gpt": no such model or path (404 Not Found from {server.base_url}'
        f"/chat/completions): check base_url ({server.base_url}) and model (m1)"
    )
    assert server.count() == 1


def test_a_wrong_base_url_is_a_404(server: FakeOpenAI) -> None:
    spec = openai(server, base_url=server.base_url.removesuffix("/v1") + "/nope/")
    with pytest.raises(TargetError, match="no such model or path"):
        call(make(spec))


def test_400_is_target_error_with_the_servers_message_and_no_key(server: FakeOpenAI) -> None:
    error = {"error": {"message": f"Unsupported parameter: 'temperature' (key {KEY})" + "x" * 300}}
    server.default = lambda request: Step(status=400, body=error)
    with pytest.raises(TargetError) as caught:
        call(make(openai(server, api_key=KEY)))
    message = str(caught.value)
    assert "the endpoint rejected the request (400 Bad Request from" in message
    assert "Unsupported parameter: 'temperature'" in message
    assert KEY not in message
    assert "x" * 201 not in message
    assert caught.value.status == 400
    assert server.count() == 1


def test_dropped_connection_is_retried(server: FakeOpenAI) -> None:
    server.script(Step(drop=True), Step(content="second"))
    reply = call(make(openai(server)))
    assert (reply.output, reply.tries) == ("second", 2)


def test_connection_refused_gives_up_as_infra() -> None:
    with FakeOpenAI() as gone:
        spec = openai(gone)
    with pytest.raises(InfraFailure, match=r"connection error with http://127\.0\.0\.1"):
        call(make(spec, retries=RetryPolicy(max=1, initial_delay_s=0.01)))


def test_malformed_200_is_retried(server: FakeOpenAI) -> None:
    server.script(Step(raw_body="not json"), Step(body={"choices": []}), Step(content="fine"))
    reply = call(make(openai(server)))
    assert (reply.output, reply.tries) == ("fine", 3)


def test_malformed_200_exhausted_says_what_came(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(raw_body="<html>oops</html>")
    with pytest.raises(InfraFailure, match=r"a malformed reply \(200 from .*'<html>oops</html>'"):
        call(make(openai(server)))


def test_null_content_is_the_tasks_failure(server: FakeOpenAI) -> None:
    server.script(Step(content=None, finish_reason="content_filter"))
    with pytest.raises(TaskFailure, match=r"no content \(finish_reason: content_filter\)"):
        call(make(openai(server)))


def test_transport_timeout_is_retried(server: FakeOpenAI) -> None:
    server.script(Step(content="slow", delay_s=1.0), Step(content="quick"))
    reply = call(make(openai(server, timeout_s=0.2)))
    assert (reply.output, reply.tries) == ("quick", 2)


def test_transport_timeout_exhausted(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(delay_s=0.5)
    with pytest.raises(InfraFailure, match=r"no answer within timeout_s \(0.1 s\)"):
        call(make(openai(server), timeout_s=0.1, retries=RetryPolicy(max=1, initial_delay_s=0)))


def test_headers_and_authorization_are_sent(server: FakeOpenAI) -> None:
    call(make(openai(server, api_key=KEY, headers={"X-Team": "evals"})))
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-team"] == "evals"


def test_no_key_no_authorization(server: FakeOpenAI) -> None:
    call(make(openai(server)))
    assert "authorization" not in server.requests[0].headers


def test_system_prompt_and_params_are_sent(server: FakeOpenAI) -> None:
    spec = openai(server, system="Be brief.", params={"temperature": 0.7, "max_tokens": 50})
    call(make(spec))
    body = server.requests[0]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is the capital?"},
    ]
    assert (body["temperature"], body["max_tokens"]) == (0.7, 50)


def test_chat_messages_input_is_used_as_is(server: FakeOpenAI) -> None:
    messages = [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Arr"},
        {"role": "user", "content": "Where is the treasure?"},
    ]
    reply = call(make(openai(server)), TestCase("chat", messages))
    assert server.requests[0]["messages"] == messages
    assert reply.output == "Where is the treasure?"


def test_chat_passes_params_over_the_settings(server: FakeOpenAI) -> None:
    server.responder = lambda request: "PASS" if "rubric" in str(request["messages"]) else "FAIL"
    target = make(openai(server, params={"temperature": 0.9, "seed": 1}))
    assert isinstance(target, OpenAITarget)
    reply = run(
        target, lambda t: target.chat([{"role": "user", "content": "rubric"}], temperature=0)
    )
    assert reply.output == "PASS"
    assert (server.requests[0]["temperature"], server.requests[0]["seed"]) == (0, 1)


def test_responder_answers_per_model(server: FakeOpenAI) -> None:
    server.responder = lambda request: f"I am {request['model']}"
    assert call(make(openai(server, model="m2"))).output == "I am m2"
    assert server.count(model="m2") == 1
    assert server.count(model="m1") == 0


def test_concurrency_is_what_the_caller_allows(server: FakeOpenAI) -> None:
    server.default = lambda request: Step(delay_s=0.1)
    target = make(openai(server))

    async def gathered(t: Target) -> list[Reply]:
        gate = asyncio.Semaphore(4)

        async def one(i: int) -> Reply:
            async with gate:
                return await t.call(TestCase(f"t{i}", f"q{i}"), 1)

        return await asyncio.gather(*(one(i) for i in range(8)))

    replies = run(target, gathered)
    assert sorted(r.output for r in replies) == sorted(f"q{i}" for i in range(8))
    assert server.count() == 8
    assert 2 <= server.max_in_flight <= 4


def test_aclose_then_call_again(server: FakeOpenAI) -> None:
    target = make(openai(server))

    async def twice(t: Target) -> Reply:
        await t.call(TestCase("a", "one"), 1)
        await t.aclose()
        return await t.call(TestCase("a", "two"), 2)

    assert run(target, twice).output == "two"


# -- python ----------------------------------------------------------------------------


def python(function: Callable[..., Any], name: str = "fn", **settings: Any) -> TargetSpec:
    return TargetSpec(name, "python", settings, function=function)


def test_python_sync_function() -> None:
    def answer(question: str) -> str:
        return question.upper()

    reply = call(make(python(answer)), TestCase("t", "hi"))
    assert reply.output == "HI"
    assert reply.latency_ms >= 0
    assert reply.tries == 1


def test_python_async_function() -> None:
    async def answer(question: str) -> str:
        await asyncio.sleep(0.01)
        return f"async {question}"

    reply = call(make(python(answer)), TestCase("t", "hi"))
    assert reply.output == "async hi"
    assert reply.latency_ms >= 10


def test_python_context_positional_and_keyword() -> None:
    seen: list[dict[str, Any]] = []

    def positional(question: str, ctx: dict[str, Any]) -> str:
        seen.append(ctx)
        return "p"

    async def keyword(question: str, *, context: dict[str, Any]) -> str:
        seen.append(context)
        return "k"

    test = TestCase("t7", "hi", expected_output="HI", category="greet", metadata={"lang": "en"})
    assert call(make(python(positional)), test, attempt=2).output == "p"
    assert call(make(python(keyword)), test, attempt=3).output == "k"
    base = {"id": "t7", "input": "hi", "expected_output": "HI", "category": "greet"}
    assert seen == [
        {**base, "metadata": {"lang": "en"}, "attempt": 2},
        {**base, "metadata": {"lang": "en"}, "attempt": 3},
    ]


def test_python_dict_return_with_tokens_and_cost() -> None:
    def answer(question: str) -> dict[str, Any]:
        return {"output": "42", "input_tokens": 10, "output_tokens": 2, "cost_usd": 0.001}

    reply = call(make(python(answer)))
    assert (reply.output, reply.input_tokens, reply.output_tokens, reply.cost_usd) == (
        "42",
        10,
        2,
        0.001,
    )


@pytest.mark.parametrize("value", [{"answer": 1}, [1, 2], 3.5, True])
def test_python_other_json_is_the_output_as_is(value: Any) -> None:
    assert call(make(python(lambda q: value))).output == value


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (lambda q: None, "returned None"),
        (lambda q: {"output": None}, "returned output None"),
        (lambda q: object(), "returned a object, which is neither text nor JSON"),
        (lambda q: {"output": "x", "input_tokens": "ten"}, "returned input_tokens 'ten'"),
    ],
)
def test_python_junk_is_the_tasks_failure(function: Callable[..., Any], message: str) -> None:
    with pytest.raises(TaskFailure, match=message):
        call(make(python(function)))


def test_python_raising_is_the_tasks_failure() -> None:
    def answer(question: str) -> str:
        raise ValueError("no idea")

    with pytest.raises(TaskFailure) as caught:
        call(make(python(answer)))
    assert str(caught.value) == "raised ValueError: no idea"
    assert caught.value.latency_ms >= 0


def test_python_raising_timeout_error_is_not_the_timeout() -> None:
    async def answer(question: str) -> str:
        raise TimeoutError("upstream")

    with pytest.raises(TaskFailure, match="raised TimeoutError: upstream"):
        call(make(python(answer)))


def test_python_infra_failure_passes_through() -> None:
    def answer(question: str) -> str:
        raise InfraFailure("rate limited upstream")

    with pytest.raises(InfraFailure, match="rate limited upstream"):
        call(make(python(answer)))


def test_python_timeout_sync_and_async() -> None:
    def slow(question: str) -> str:
        time.sleep(1)
        return "late"

    async def slow_async(question: str) -> str:
        await asyncio.sleep(5)
        return "late"

    for function in (slow, slow_async):
        started = time.monotonic()
        with pytest.raises(TaskFailure, match=r"^exceeded timeout_s \(0.2 s\)$") as caught:
            call(make(python(function), timeout_s=0.2))
        assert caught.value.latency_ms >= 200
        assert time.monotonic() - started < 1.5


def test_python_timeout_setting_overrides() -> None:
    async def slow(question: str) -> str:
        await asyncio.sleep(1)
        return "late"

    with pytest.raises(TaskFailure, match=r"exceeded timeout_s \(0.05 s\)"):
        call(make(python(slow, timeout_s=0.05)))


def test_python_function_by_reference(tmp_path: Path) -> None:
    module = f"agent_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text("def answer(q):\n    return 'ref ' + q\n")
    spec = TargetSpec("ref", "python", {"function": f"{module}:answer"})
    assert call(make(spec, tmp_path), TestCase("t", "hi")).output == "ref hi"


def test_python_bad_reference_is_a_parse_error(tmp_path: Path) -> None:
    spec = TargetSpec("ref", "python", {"function": "no_such_module_xyz:answer"})
    with pytest.raises(ParseError, match="cannot import module 'no_such_module_xyz'"):
        make(spec, tmp_path)


def test_python_without_a_function() -> None:
    with pytest.raises(TargetError, match='target "fn": a python target needs `function:'):
        make(TargetSpec("fn", "python", {}))


# -- command ---------------------------------------------------------------------------

AGENT = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path

    test = json.loads(sys.stdin.readline())
    mode = sys.argv[1]
    if mode == "json":
        print(json.dumps({"output": test["input"].upper(), "input_tokens": 5,
                          "output_tokens": 1, "cost_usd": 0.5}))
    elif mode == "text":
        flavour = os.environ.get("FLAVOUR")
        sys.stdout.write(f"{test['id']} attempt {test['attempt']} {flavour}\\n\\n")
    elif mode == "flaky":
        counter = Path("counter.txt")
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        if n == 0:
            sys.exit(75)
        print("recovered")
    elif mode == "always75":
        sys.exit(75)
    elif mode == "fail":
        print("some output")
        sys.stderr.write("warming up\\nValueError: the model file is missing\\n")
        sys.exit(3)
    elif mode == "sleep":
        Path("started.txt").write_text(str(os.getpid()))
        time.sleep(30)
    """
)


def command(tmp_path: Path, mode: str, **settings: Any) -> TargetSpec:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    return TargetSpec(
        "cmd", "command", {"command": [sys.executable, str(script), mode], **settings}
    )


def test_command_json_output(tmp_path: Path) -> None:
    reply = call(make(command(tmp_path, "json"), tmp_path), TestCase("t", "hi"))
    assert (reply.output, reply.input_tokens, reply.output_tokens, reply.cost_usd) == (
        "HI",
        5,
        1,
        0.5,
    )


def test_command_text_output_env_and_stdin(tmp_path: Path) -> None:
    spec = command(tmp_path, "text", env={"FLAVOUR": "mint"})
    target = make(spec, tmp_path, env={"PATH": "/usr/bin:/bin"})
    reply = call(target, TestCase("t9", "hi"), attempt=2)
    assert reply.output == "t9 attempt 2 mint\n"  # one trailing newline stripped, not two


def test_command_env_settings_need_the_callers_env(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="pass env="):
        make(command(tmp_path, "text", env={"FLAVOUR": "mint"}), tmp_path)


def test_command_exit_75_is_retried(tmp_path: Path) -> None:
    reply = call(make(command(tmp_path, "flaky"), tmp_path))
    assert (reply.output, reply.tries) == ("recovered", 2)
    assert (tmp_path / "counter.txt").read_text() == "2"


def test_command_exit_75_exhausted_is_infra(tmp_path: Path) -> None:
    with pytest.raises(InfraFailure, match=r"gave up after 2 tries: last: exited with code 75"):
        call(
            make(
                command(tmp_path, "always75"),
                tmp_path,
                retries=RetryPolicy(max=1, initial_delay_s=0),
            )
        )


def test_command_nonzero_exit_is_the_tasks_failure(tmp_path: Path) -> None:
    with pytest.raises(TaskFailure) as caught:
        call(make(command(tmp_path, "fail"), tmp_path))
    assert str(caught.value) == "exited with code 3: ValueError: the model file is missing"


def test_command_timeout_kills_it(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(TaskFailure, match=r"exceeded timeout_s \(0.5 s\)"):
        call(make(command(tmp_path, "sleep"), tmp_path, timeout_s=0.5))
    assert time.monotonic() - started < 5
    pid = int((tmp_path / "started.txt").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_command_cwd_setting(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    call(make(command(tmp_path, "flaky", cwd="work"), tmp_path))
    assert (tmp_path / "work" / "counter.txt").exists()


def test_command_missing_executable_is_target_error(tmp_path: Path) -> None:
    spec = TargetSpec("cmd", "command", {"command": ["no-such-agent-xyz", "--go"]})
    with pytest.raises(TargetError) as caught:
        call(make(spec, tmp_path))
    assert str(caught.value) == (
        "target \"cmd\": cannot run 'no-such-agent-xyz' (No such file or directory); "
        "check the command, and that it is installed"
    )


def test_command_must_be_a_list(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="needs `command:` as a list of strings"):
        make(TargetSpec("cmd", "command", {"command": [1, 2]}), tmp_path)


def test_target_types_are_built() -> None:
    with FakeOpenAI() as s:
        assert isinstance(make(openai(s)), OpenAITarget)
    assert isinstance(make(python(str)), PythonTarget)
    assert isinstance(make(TargetSpec("c", "command", {"command": ["true"]})), CommandTarget)


# -- the fake server as a program ------------------------------------------------------


def test_fake_server_as_a_program(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps({"default": {"content": "hello"}, "by_model": {"m2": {"content": "two"}}})
    )
    log = tmp_path / "requests.jsonl"
    process = subprocess.Popen(
        [
            sys.executable,
            str(FAKE_SCRIPT),
            "--port",
            "0",
            "--script",
            str(script),
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        url = f"http://127.0.0.1:{port}/v1"
        with httpx.Client(base_url=url, timeout=5) as client:
            for model in ("m1", "m2"):
                body = {"model": model, "messages": [{"role": "user", "content": f"hi {model}"}]}
                response = client.post("/chat/completions", json=body)
                assert response.status_code == 200
                data = response.json()
                assert data["object"] == "chat.completion"
                assert (
                    data["choices"][0]["message"]["content"] == {"m1": "hello", "m2": "two"}[model]
                )
                assert data["usage"]["total_tokens"] == 3
            assert client.get("/models").json()["object"] == "list"
    finally:
        process.terminate()
        process.wait(timeout=5)
        assert process.stdout is not None
        process.stdout.close()
    assert process.returncode == 0
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == [{"model": "m1", "content": "hi m1"}, {"model": "m2", "content": "hi m2"}]
