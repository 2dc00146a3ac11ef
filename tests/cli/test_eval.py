"""`evaldelta eval` end to end, through the installed command, against a fake
OpenAI-compatible server of our own on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EVALDELTA, REPO, Result
from tests.runner.fake_openai import FakeOpenAI, Step

Run = Callable[..., Result]

AGENT = """
def answer(question, context):
    if "boom" in question:
        raise RuntimeError("the agent broke")
    return {"output": "Paris is the capital" if "France" in question else "no idea",
            "input_tokens": 10, "output_tokens": 4}
"""


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as s:
        yield s


def _suite(
    folder: Path, base_url: str, *, attempts: int = 3, extra: str = "", tests: str | None = None
) -> Path:
    (folder / "agent.py").write_text(AGENT, encoding="utf-8")
    (folder / "targets.yaml").write_text(
        "targets:\n"
        "  - name: a\n"
        "    type: python\n"
        "    function: agent:answer\n"
        "  - name: b\n"
        "    type: openai\n"
        "    base_url: ${FAKE_BASE_URL}\n"
        "    model: fake-model\n"
        "    api_key_env: FAKE_KEY\n"
        "    price: {input_per_mtok: 1.0, output_per_mtok: 2.0}\n",
        encoding="utf-8",
    )
    suite = folder / "suite.yaml"
    suite.write_text(
        "name: qa\n"
        "targets: [a, b]\n"
        f"attempts: {attempts}\n"
        "retries: {max: 2, initial_delay_s: 0.01, max_delay_s: 0.05}\n"
        + extra
        + (
            tests
            or "tests:\n"
            "  - id: capital\n"
            "    input: What is the capital of France?\n"
            "    assert: [{type: icontains, value: paris}]\n"
            "  - id: greeting\n"
            "    input: Say hello\n"
            "    assert: [{type: contains, value: hello}]\n"
            "  - id: other\n"
            "    input: Anything at all\n"
            "    assert: [{type: not-contains, value: zzz}]\n"
        ),
        encoding="utf-8",
    )
    return suite


def _env(server: FakeOpenAI, store: Path) -> dict[str, str]:
    return {
        "FAKE_BASE_URL": server.base_url,
        "FAKE_KEY": "sk-test-secret",
        "EVALDELTA_STORE": str(store),
    }


def test_two_targets_three_attempts_store_two_runs_and_the_out_file_agrees(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url)
    store = tmp_path / "runs.db"
    out = tmp_path / "out.jsonl"
    r = evaldelta("eval", suite, "--out", out, env=_env(server, store))
    assert r.code == 0, r.err
    assert "Next: evaldelta compare qa/a qa/b" in r.out
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 18
    assert {(x["target"], x["test_id"], x["attempt"]) for x in records} == {
        (t, i, k) for t in "ab" for i in ("capital", "greeting", "other") for k in (1, 2, 3)
    }
    assert server.count() == 9  # only target b calls the endpoint
    b = [x for x in records if x["target"] == "b"]
    assert all(x["input_tokens"] > 0 and x["cost_usd"] > 0 for x in b)
    assert "sk-test-secret" not in out.read_text() + r.out + r.err

    listed = evaldelta("runs", "list", "--suite", "qa", "--json", env=_env(server, store))
    assert listed.code == 0, listed.err
    runs = json.loads(listed.out)
    assert sorted(x["name"] for x in runs) == ["qa/a", "qa/b"]
    assert all(x["status"] == "complete" and x["records"] == 9 for x in runs)
    assert "sk-test-secret" not in listed.out

    stored = evaldelta("compare", "qa/a", "qa/b", "--json", env=_env(server, store))
    from_file = evaldelta(
        "compare", out, "--baseline", "a", "--candidate", "b", "--json", env=_env(server, store)
    )
    assert stored.code in (0, 1), stored.err
    assert from_file.code == stored.code, from_file.err
    s, f = json.loads(stored.out), json.loads(from_file.out)
    for key in ("summary", "matched", "unmatched", "verdict", "statistics", "dataset"):
        assert _without_labels(s[key]) == _without_labels(f[key]), key


def _without_labels(value: Any) -> Any:
    """A comparison's JSON without what names its sources or their settings."""
    drop = {"baseline", "candidate", "source", "label", "differs_in", "config", "warnings", "name"}
    if isinstance(value, dict):
        return {k: _without_labels(v) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_without_labels(v) for v in value]
    return value


def test_dry_run_calls_nothing(evaldelta: Run, server: FakeOpenAI, tmp_path: Path) -> None:
    suite = _suite(tmp_path, server.base_url)
    store = tmp_path / "runs.db"
    r = evaldelta("eval", suite, "--dry-run", env=_env(server, store))
    assert r.code == 0, r.err
    assert "3 tests x 2 targets x 3 attempts = 18 calls, at most 4 at once" in r.out
    assert "Nothing was called (--dry-run)." in r.out
    assert server.count() == 0
    assert not store.exists()


def test_run_is_an_alias_and_filters_apply(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url, attempts=1)
    store = tmp_path / "runs.db"
    r = evaldelta(
        "run",
        suite,
        "--target",
        "b",
        "--test-id",
        "cap*",
        "--name",
        "before",
        env=_env(server, store),
    )
    assert r.code == 0, r.err
    assert server.count() == 1
    assert "before/b" in r.out


def test_infrastructure_failures_are_kept_without_a_score_and_the_gate_refuses(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url, attempts=1)
    store = tmp_path / "runs.db"
    server.responder = lambda body: Step(status=503)
    r = evaldelta(
        "eval",
        suite,
        "--target",
        "b",
        "--name",
        "cand",
        "--out",
        tmp_path / "c.jsonl",
        env=_env(server, store),
    )
    assert r.code == 0, r.err
    records = [json.loads(x) for x in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(records) == 3
    assert all(x["error_kind"] == "infra" and "score" not in x for x in records)
    assert server.count() == 9  # 1 try + 2 retries, each attempt
    server.responder = None
    base = evaldelta("eval", suite, "--target", "b", "--name", "base", env=_env(server, store))
    assert base.code == 0, base.err
    gate = evaldelta("gate", "base/b", "cand/b", env=_env(server, store))
    assert gate.code == 2, gate.out + gate.err
    assert "infrastructure" in gate.err


def test_a_refused_key_stops_the_target_at_once(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url, attempts=3)
    store = tmp_path / "runs.db"
    server.responder = lambda body: Step(status=401, body={"error": {"message": "bad key"}})
    r = evaldelta("eval", suite, "--workers", "1", env=_env(server, store))
    assert r.code == 2
    errors = [line for line in r.err.splitlines() if line.startswith("evaldelta: error:")]
    assert len(errors) == 1, r.err
    assert "401" in errors[0]
    assert '"b"' in errors[0]
    assert "sk-test-secret" not in r.err + r.out
    assert server.count() == 1  # no further requests to that target
    listed = json.loads(evaldelta("runs", "list", "--json", env=_env(server, store)).out)
    by_name = {x["name"]: x for x in listed}
    assert by_name["qa/a"]["status"] == "complete"
    assert by_name["qa/b"]["status"] == "interrupted"


def test_a_python_target_that_raises_is_a_task_failure(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    tests = "tests:\n  - id: explodes\n    input: boom\n    assert: [{type: contains, value: x}]\n"
    suite = _suite(tmp_path, server.base_url, attempts=1, tests=tests)
    out = tmp_path / "out.jsonl"
    r = evaldelta("eval", suite, "--target", "a", "--out", out, env=_env(server, tmp_path / "s.db"))
    assert r.code == 0, r.err
    (record,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert record["score"] == 0
    assert record["error_kind"] == "task"
    assert "the agent broke" in record["error"]
    assert "1 task" in r.out


@pytest.mark.parametrize(
    ("suite_text", "message"),
    [
        ("name: x\ntargets: [a\n", "suite.yaml:"),
        (
            "name: x\ntargets: [a]\ntests:\n  - id: t\n    input: hi\n"
            "    assert: [{type: containz, value: q}]\n",
            "suite.yaml:6",
        ),
        ("name: x\ntargets: [nope]\ntests:\n  - id: t\n    input: hi\n", "suite.yaml:2"),
        (
            "name: x\ntargets: [a]\ntests:\n  - id: t\n    input: hi\n  - id: t\n    input: ho\n",
            "suite.yaml:6",
        ),
    ],
    ids=["bad-yaml", "unknown-assertion", "unknown-target", "duplicate-ids"],
)
def test_a_bad_suite_is_one_line_and_exit_2(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path, suite_text: str, message: str
) -> None:
    _suite(tmp_path, server.base_url)
    suite = tmp_path / "suite.yaml"
    suite.write_text(suite_text, encoding="utf-8")
    r = evaldelta("eval", suite, env=_env(server, tmp_path / "s.db"))
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("evaldelta: error: "), lines[0]
    assert message in lines[0], lines[0]
    assert "Traceback" not in r.err


def test_a_missing_function_is_one_line_and_exit_2(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url)
    (tmp_path / "targets.yaml").write_text(
        "targets:\n  - name: a\n    type: python\n    function: agent:nothing_here\n"
        "  - name: b\n    type: python\n    function: agent:answer\n",
        encoding="utf-8",
    )
    r = evaldelta("eval", suite, env=_env(server, tmp_path / "s.db"))
    assert r.code == 2
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert "targets.yaml:2" in lines[0], r.err
    assert "nothing_here" in lines[0], r.err


# -- interruption and resume ------------------------------------------------------------


def _fake_server_process(tmp_path: Path, delay_s: float) -> tuple[subprocess.Popen[str], str, Path]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"content": "hello there", "delay_s": delay_s}}))
    log = tmp_path / "requests.log"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "tests" / "runner" / "fake_openai.py"),
            "--port",
            "0",
            "--script",
            str(script),
            "--log",
            str(log),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None
    port = proc.stdout.readline().strip()
    return proc, f"http://127.0.0.1:{port}/v1", log


def _slow_suite(folder: Path, base_url: str, n_tests: int = 12) -> Path:
    (folder / "targets.yaml").write_text(
        "targets:\n  - name: m\n    type: openai\n    base_url: " + base_url + "\n    model: m1\n",
        encoding="utf-8",
    )
    tests = "".join(
        f"  - id: t{i:02d}\n    input: question {i:02d}\n"
        "    assert: [{type: contains, value: hello}]\n"
        for i in range(n_tests)
    )
    suite = folder / "suite.yaml"
    suite.write_text(
        f"name: slow\ntargets: [m]\nattempts: 2\nconcurrency: 2\ntests:\n{tests}", encoding="utf-8"
    )
    return suite


def _logged(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(x) for x in log.read_text().splitlines() if x.strip()]


def _wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _start_eval(suite: Path, store: Path, *extra: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env["EVALDELTA_STORE"] = str(store)
    return subprocess.Popen(
        [str(EVALDELTA), "eval", str(suite), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_sigkill_leaves_an_interrupted_run_that_resume_completes_without_duplicates(
    evaldelta: Run, tmp_path: Path
) -> None:
    server, base_url, log = _fake_server_process(tmp_path, delay_s=0.15)
    try:
        suite = _slow_suite(tmp_path, base_url)
        store = tmp_path / "runs.db"
        proc = _start_eval(suite, store)
        _wait_for(lambda: len(_logged(log)) >= 8)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
        env = {"EVALDELTA_STORE": str(store)}
        (listed,) = json.loads(evaldelta("runs", "list", "--json", env=env).out)
        assert listed["status"] == "interrupted"
        stored = listed["records"]
        assert 0 < stored < 24
        before = len(_logged(log))

        resumed = evaldelta("eval", suite, "--resume", env=env)
        assert resumed.code == 0, resumed.err
        calls_on_resume = len(_logged(log)) - before
        (done,) = json.loads(evaldelta("runs", "list", "--json", env=env).out)
        assert done["status"] == "complete"
        assert done["records"] == 24
        assert done["id"] == listed["id"]
        exported = evaldelta("runs", "export", str(done["id"]), env=env)
        keys = [(r["test_id"], r["attempt"]) for r in map(json.loads, exported.out.splitlines())]
        assert len(keys) == len(set(keys)) == 24
        # Only what was missing was asked for again.
        assert calls_on_resume == 24 - stored
    finally:
        server.kill()
        server.communicate()


def test_one_ctrl_c_finishes_in_flight_calls_exits_130_and_prints_how_to_resume(
    evaldelta: Run, tmp_path: Path
) -> None:
    server, base_url, log = _fake_server_process(tmp_path, delay_s=0.2)
    try:
        suite = _slow_suite(tmp_path, base_url)
        store = tmp_path / "runs.db"
        proc = _start_eval(suite, store, "--name", "night")
        _wait_for(lambda: len(_logged(log)) >= 4)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 130, err
        assert "Resume with: " in err
        command = err.split("Resume with: ", 1)[1].splitlines()[0]
        assert command.endswith("--resume")
        assert "--name night" in command
        env = {"EVALDELTA_STORE": str(store)}
        (listed,) = json.loads(evaldelta("runs", "list", "--json", env=env).out)
        assert listed["status"] == "interrupted"
        # Calls in flight were finished and kept: every request seen so far is stored.
        assert listed["records"] == len(_logged(log))

        # The printed command resumes it...
        argv = command.split()[1:]
        resumed = evaldelta(*argv, env=env)
        assert resumed.code == 0, resumed.err
        (done,) = json.loads(evaldelta("runs", "list", "--json", env=env).out)
        assert done["status"] == "complete"
        assert done["records"] == 24

        # ...but a suite changed since is refused.
        suite.write_text(suite.read_text().replace("question 00", "question zero"))
        proc = _start_eval(suite, store, "--name", "night", "--resume")
        _out, err = proc.communicate(timeout=20)
        assert proc.returncode == 2
        assert "the suite changed since run" in err
    finally:
        server.kill()
        server.communicate()


def test_dry_run_and_one_target_need_no_other_key(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url, attempts=1)
    env = {"FAKE_BASE_URL": server.base_url, "EVALDELTA_STORE": str(tmp_path / "s.db")}
    plan = evaldelta("eval", suite, "--dry-run", env=env)  # FAKE_KEY is not set
    assert plan.code == 0, plan.err
    assert "target b: openai, fake-model at " in plan.out
    only_a = evaldelta("eval", suite, "--target", "a", env=env)
    assert only_a.code == 0, only_a.err
    assert server.count() == 0
    missing = evaldelta("eval", suite, "--target", "b", env=env)
    assert missing.code == 2
    assert "FAKE_KEY" in missing.err
    assert "targets.yaml:9" in missing.err


def test_max_cost_stops_and_says_how_to_go_on_with_a_larger_budget(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    server.default = lambda body: Step(content="hello", usage=(1000, 1000))  # $0.003 each
    suite = _suite(tmp_path, server.base_url, attempts=3)
    env = _env(server, tmp_path / "s.db")
    r = evaldelta("eval", suite, "--target", "b", "-j", "1", "--max-cost", "0.007", env=env)
    assert r.code == 0, r.err
    assert server.count() == 3  # the third call's cost was foreseen: no fourth
    assert "--max-cost 0.007 reached" in r.err
    assert "Resume with a larger budget: " in r.err
    command = r.err.split("Resume with a larger budget: ", 1)[1].split()
    assert command[-3:] == ["--resume", "--max-cost", "USD"]
    assert "0.007" not in command
    again = evaldelta(*command[1:-2], "--max-cost", "1", env=env)
    assert again.code == 0, again.err
    assert server.count() == 9
    (run,) = json.loads(evaldelta("runs", "list", "--json", env=env).out)
    assert run["status"] == "complete"
    assert run["records"] == 9


def test_a_missing_targets_file_is_refused(
    evaldelta: Run, server: FakeOpenAI, tmp_path: Path
) -> None:
    suite = _suite(tmp_path, server.base_url)
    r = evaldelta(
        "eval", suite, "--targets", tmp_path / "nope.yaml", env=_env(server, tmp_path / "s.db")
    )
    assert r.code == 2
    assert "nope.yaml: no such targets file; check the --targets path" in r.err
    assert not (tmp_path / "s.db").exists()
