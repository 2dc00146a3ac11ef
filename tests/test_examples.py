"""Every command shown in the examples' READMEs runs, from the repository root, and the
examples' scripts do what their READMEs say."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, FIXTURES, REPO, run_evaldelta

EXAMPLES = sorted((REPO / "examples").glob("*/README.md"))


def _commands(readme: Path) -> list[str]:
    text = readme.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [
        line.strip()
        for block in blocks
        for line in block.splitlines()
        if line.strip().startswith(("evaldelta ", "python "))
    ]


def test_every_readme_shows_commands() -> None:
    assert len(EXAMPLES) >= 2
    for readme in EXAMPLES:
        assert len(_commands(readme)) >= 3, readme


@pytest.mark.parametrize("readme", EXAMPLES, ids=lambda p: p.parent.name)
def test_example_commands_run_in_order(readme: Path, tmp_path: Path) -> None:
    """Every command a README shows runs, in the order shown, from the repository root,
    as a user would type them: with one run store (in a temporary folder) for the whole
    README, so that the runs one command stores are there for the next. A script runs
    from a copy of its folder: data it writes there must equal the committed files."""
    example = readme.parent.name
    env = {"EVALDELTA_STORE": str(tmp_path / "store" / "runs.db")}
    copy = tmp_path / example
    shutil.copytree(REPO / "examples" / example, copy)
    for command in _commands(readme):
        args = shlex.split(command)
        if args[0] == "python":
            script = copy / Path(args[1]).name
            proc = subprocess.run(
                [sys.executable, str(script), *args[2:]],
                cwd=REPO,
                env={**os.environ, **env},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert proc.returncode in (0, 1), f"{command}: {proc.stderr}"
            continue
        r = run_evaldelta(*args[1:], cwd=REPO, env=env)
        assert r.code in (0, 1), f"{command}: {r.err}"  # 1: a regression the example shows
        assert r.out.strip(), command
        if args[1] == "compare":
            assert r.err == "", command
    for produced in copy.glob("*.jsonl"):
        original = REPO / "examples" / example / produced.name
        assert produced.read_bytes() == original.read_bytes(), f"{original} is stale"


# -- examples/store-ci: the run-store spec's CI script ------------------------------------

STORE_CI = REPO / "examples" / "store-ci"


def _compare_latest(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "EVALDELTA_STORE"}
    script = STORE_CI / "compare_latest.py"
    return subprocess.run(
        [sys.executable, str(script), "qa-eval", "--store", str(store), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compare_latest_exits_1_on_a_regression_and_0_otherwise(tmp_path: Path) -> None:
    import evaldelta

    store = tmp_path / "ci" / "runs.db"
    r = _compare_latest(store)
    assert (r.returncode, r.stdout) == (
        0,
        f"Not enough runs to compare: no run store at {store} yet\n",
    )
    assert not store.exists()

    def add(day: str, name: str = "qa-eval") -> None:
        with evaldelta.open_store(store) as s:
            s.add_run(evaldelta.load(STORE_CI / f"{day}.jsonl"), name=name)

    add("monday")
    add("tuesday", name="other-eval")  # another evaluation's run is not compared
    r = _compare_latest(store)
    assert (r.returncode, r.stdout) == (0, "Not enough runs to compare: 1 run named 'qa-eval'\n")

    add("tuesday")  # run 3: six facts wrong
    r = _compare_latest(store)
    assert r.returncode == 1, r.stderr
    assert r.stdout == (
        "qa-eval (run 1) -> qa-eval (run 3): 10 cases compared\n"
        "  exact: mean delta +0.040 (4 improved, 0 regressed, 6 unchanged)\n"
        "  factual: mean delta -0.100 (0 improved, 6 regressed, 4 unchanged)\n"
    )
    assert r.stderr == "Regression detected!\n  - factual: -0.100\n"
    # A looser threshold lets the same drop pass.
    r = _compare_latest(store, "--regression-threshold", "0.1")
    assert (r.returncode, r.stdout.splitlines()[-1]) == (0, "No regressions detected")

    add("wednesday")  # run 4: the facts are back
    r = _compare_latest(store)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "No regressions detected"
    assert r.stderr == ""


def test_compare_latest_cannot_judge(tmp_path: Path) -> None:
    import evaldelta

    store = tmp_path / "runs.db"
    with evaldelta.open_store(store) as s:
        s.add_run(evaldelta.load(STORE_CI / "monday.jsonl"), name="qa-eval")
        s.add_run(evaldelta.load(FIXTURES / "baseline.jsonl"), name="qa-eval")
    r = _compare_latest(store)
    assert r.returncode == 2
    assert r.stderr == (
        "error: qa-eval (run 1) and qa-eval (run 2) have no case in common that ran on both "
        "sides (10 and 3 cases); compare runs of the same dataset\n"
    )
    r = _compare_latest(store, "--tolerance", "-1")
    assert (r.returncode, r.stderr) == (
        2,
        "error: tolerance must be a number >= 0 (e.g. 0.05), got -1.0\n",
    )


def test_fixture_is_the_one_the_spec_describes() -> None:
    import json

    text = (EXAMPLE / "fixtures" / "combined-results.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 9
    assert all({"test_id", "target", "score", "input", "answer"} <= set(r) for r in rows)
    assert len({(r["test_id"], r["target"]) for r in rows}) == 9


# -- examples/benchmark-tooling: the agentv suite, run as it is ------------------------


def test_the_benchmark_suite_runs_as_it_is_against_an_openai_compatible_server(
    tmp_path: Path,
) -> None:
    """The agentv suite and its targets file, against a fake server standing in for
    OpenAI's and Gemini's endpoints; then the N-way compare of the file it wrote."""
    import json

    from tests.runner.fake_openai import FakeOpenAI, Step

    def respond(body: dict[str, object]) -> Step:
        messages = body["messages"]
        assert isinstance(messages, list)
        text = str(messages[-1]["content"])
        if body["model"] == "gpt-4.1-mini":  # the judge
            good = "hello" in text.lower() or "def " in text or "regression" in text
            return Step(
                content=json.dumps(
                    {"score": 1.0 if good else 0.0, "pass": good, "reason": "checked"}
                ),
                usage=(200, 20),
            )
        answers = {
            "gpt-4.1": "Hello! def fib(n): ... reliability, speed and regression detection",
            "gpt-5-mini": "Hello there. def fib(n): ... it saves time",
            "gemini-3-flash-preview": "Hi. Here is code. Testing is good.",
        }
        return Step(content=answers[str(body["model"])], usage=(30, 12))

    out = tmp_path / "results.jsonl"
    with FakeOpenAI() as server:
        server.default = respond
        env = {
            "OPENAI_BASE_URL": server.base_url,
            "GEMINI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-fake",
            "GEMINI_API_KEY": "fake",
            "EVALDELTA_STORE": str(tmp_path / "runs.db"),
        }
        suite = EXAMPLE / "evals" / "benchmark.eval.yaml"
        r = run_evaldelta("eval", suite, "--out", out, cwd=tmp_path, env=env)
        assert r.code == 0, r.err
        assert server.count() == 9 + 9  # 3 tests x 3 targets, and the judge for each
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 9
    by_target = {
        t: [x["score"] for x in records if x["target"] == t]
        for t in ("gpt-4.1", "gpt-5-mini", "gemini-3-flash-preview")
    }
    assert by_target["gpt-4.1"] == [1.0, 1.0, 1.0]
    assert "Next: evaldelta compare benchmark/gemini-3-flash-preview benchmark/gpt-4.1" in r.out
    matrix = run_evaldelta("compare", out, cwd=tmp_path, env=env)
    assert matrix.code == 0, matrix.err
    assert "gpt-5-mini" in matrix.out
    assert "sk-fake" not in r.out + r.err + out.read_text()
