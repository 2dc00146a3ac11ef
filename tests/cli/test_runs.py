"""``evaldelta runs`` end to end, and stored runs wherever a results file is accepted.

Every test keeps its store in a temporary folder (``EVALDELTA_STORE`` or ``--store``) and
runs the command there, so that no ``.evaldelta/`` is ever written in the repository.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import evaldelta
from evaldelta.store import SCHEMA_VERSION, open_store
from tests.cli.test_gate import run_file
from tests.conftest import FIXTURES, Result

Cli = Callable[..., Result]
BASELINE = FIXTURES / "baseline.jsonl"
CANDIDATE = FIXTURES / "candidate.jsonl"
COMBINED = FIXTURES / "combined-results.jsonl"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return tmp_path / "store" / "runs.db"


@pytest.fixture
def cli(evaldelta: Cli, tmp_path: Path, store: Path) -> Cli:
    """The installed command, run in ``tmp_path`` with ``EVALDELTA_STORE`` set."""

    def run(*args: Any, env: dict[str, str] | None = None) -> Result:
        return evaldelta(*args, env={"EVALDELTA_STORE": str(store), **(env or {})}, cwd=tmp_path)

    return run


def ok(r: Result) -> Result:
    assert r.code == 0, r.err
    return r


@pytest.fixture
def two_runs(cli: Cli) -> None:
    """before (run 1) and after (run 2): the baseline and candidate fixtures."""
    ok(cli("runs", "import", BASELINE, "--name", "before", "--config", "prompt=v1"))
    ok(
        cli(
            "runs",
            "import",
            CANDIDATE,
            "--name",
            "after",
            "--config",
            "prompt=v2",
            "--notes",
            "new prompt",
        )
    )


# -- import, list, show ---------------------------------------------------------------


def test_import_prints_the_new_ids(cli: Cli, store: Path) -> None:
    r = ok(cli("runs", "import", BASELINE, "--name", "before"))
    assert r.out == "Stored run 1: before (3 cases, 3 records)\n"
    assert r.err == ""
    r = ok(cli("runs", "import", COMBINED, "--name", "bench"))
    assert r.out == (
        "Stored run 2: bench/gemini-3-flash-preview (3 cases, 3 records)\n"
        "Stored run 3: bench/gpt-4.1 (3 cases, 3 records)\n"
        "Stored run 4: bench/gpt-5-mini (3 cases, 3 records)\n"
    )
    r = ok(cli("runs", "import", COMBINED, "--target", "gpt-4.1", "--json"))
    (made,) = json.loads(r.out)
    assert (made["id"], made["name"], made["targets"]) == (5, "combined-results", ["gpt-4.1"])
    assert store.is_file()


def test_list(cli: Cli, two_runs: None, store: Path) -> None:
    lines = ok(cli("runs", "list")).out.splitlines()
    assert len(lines) == 4
    assert lines[0].split() == [
        "ID",
        "Name",
        "Created",
        "(UTC)",
        "Status",
        "Cases",
        "Records",
        "Pass",
        "rate",
        "Mean",
        "score",
        "Source",
    ]
    assert lines[2].startswith("   2  after ")
    assert lines[2].endswith(
        "  complete      3        3     100.0%       0.817  candidate.jsonl (jsonl)"
    )
    assert lines[3].startswith("   1  before ")
    assert lines[3].endswith(
        "  complete      3        3     100.0%       0.817  baseline.jsonl (jsonl)"
    )

    listed = json.loads(ok(cli("runs", "list", "--json")).out)
    assert [(r["id"], r["name"], r["config"], r["notes"]) for r in listed] == [
        (2, "after", {"prompt": "v2"}, "new prompt"),
        (1, "before", {"prompt": "v1"}, None),
    ]
    shown = json.loads(ok(cli("runs", "show", "after", "--json")).out)
    assert listed[0]["summary"] == shown["summary"]
    assert listed[0]["source"] == str(CANDIDATE)
    assert [
        r["id"] for r in json.loads(ok(cli("runs", "list", "--name", "bef*", "--json")).out)
    ] == [1]
    assert [r["id"] for r in json.loads(ok(cli("runs", "list", "--limit", "1", "--json")).out)] == [
        2
    ]
    assert ok(cli("runs", "list", "--name", "nothing*")).out == (
        f"No runs named 'nothing*' in {store}.\n"
    )
    r = cli("runs", "list", "--limit", "0")
    assert (r.code, r.err) == (2, "evaldelta: error: --limit must be at least 1, got 0\n")


def test_show(cli: Cli, two_runs: None) -> None:
    r = ok(cli("runs", "show", "after"))
    lines = r.out.splitlines()
    assert lines[0] == "Run 2: after"
    assert "  Status:   complete" in lines
    assert f"  Source:   {CANDIDATE} (jsonl)" in lines
    assert "  Config:   prompt=v2" in lines
    assert "  Notes:    new prompt" in lines
    assert any(line.startswith("  Dataset:  c6a1c8e2663b (3 cases, 3 records)") for line in lines)
    assert (
        "  support-agent      3  3 (1 per case)     100.0%       0.817    823ms   n/a       0"
        in lines
    )

    shown = json.loads(ok(cli("runs", "show", "2", "--json")).out)
    assert shown["name"] == "after"
    assert shown["config"] == {"prompt": "v2"}
    (figures,) = shown["summary"]
    assert figures["target"] == "support-agent"
    assert (figures["cases"], figures["attempts"], figures["pass_rate"]) == (3, 3, 1.0)
    assert figures["mean_score"] == pytest.approx((0.9 + 0.8 + 0.75) / 3)


def test_config_values_keep_their_json_type(cli: Cli) -> None:
    ok(
        cli(
            "runs",
            "import",
            BASELINE,
            "--config",
            "temperature=0.2",
            "--config",
            "retries=3",
            "--config",
            "cache=true",
            "--config",
            "model=gpt-4.1",
            "--config",
            'stop=["\\n"]',
        )
    )
    shown = json.loads(ok(cli("runs", "show", "1", "--json")).out)
    assert shown["config"] == {
        "temperature": 0.2,
        "retries": 3,
        "cache": True,
        "model": "gpt-4.1",
        "stop": ["\n"],
    }
    r = cli("runs", "import", BASELINE, "--config", "novalue")
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: --config takes KEY=VALUE, got 'novalue' (e.g. --config prompt=v2)\n"
    )


def test_config_before_the_file_takes_one_setting(cli: Cli) -> None:
    """``--config`` takes one KEY=VALUE: the file after it is the file, not a setting."""
    ok(cli("runs", "import", "--config", "prompt=v3", CANDIDATE, "--name", "x"))
    shown = json.loads(ok(cli("runs", "show", "x", "--json")).out)
    assert shown["config"]["prompt"] == "v3"
    assert shown["source"] == str(CANDIDATE)
    r = cli("runs", "import", "--config", "a=1", "b=2", CANDIDATE)
    assert r.code == 2
    assert "unrecognized arguments" in r.err


def test_list_by_a_name_with_glob_characters(cli: Cli, store: Path) -> None:
    for name in ("qa[v2]", "qav", "qa2"):
        ok(cli("runs", "import", BASELINE, "--name", name))

    def listed(*args: str) -> list[str]:
        return [r["name"] for r in json.loads(ok(cli("runs", "list", *args, "--json")).out)]

    assert listed("--name", "qa[v2]") == ["qa[v2]"]  # the run of that exact name
    assert listed("--name-glob", "qa[v2]") == ["qa2", "qav"]
    assert listed("--name", "qa?") == ["qa2", "qav"]  # no run is named so: a pattern
    assert listed("--name-glob", "qa*") == ["qa2", "qav", "qa[v2]"]
    assert ok(cli("runs", "list", "--name", "qa")).out == f"No runs named 'qa' in {store}.\n"
    assert ok(cli("runs", "list", "--name-glob", "x*")).out == (
        f"No runs matching 'x*' in {store}.\n"
    )
    shown = json.loads(ok(cli("runs", "show", "qa[v2]", "--json")).out)
    assert shown["name"] == "qa[v2]"


# -- compare, gate and power take stored runs -----------------------------------------


def test_compare_by_id_and_by_name(cli: Cli, two_runs: None) -> None:
    by_id = ok(cli("compare", "1", "2"))
    assert "Comparing: before (run 1) -> after (run 2)" in by_id.out
    assert "Differs in:   prompt" in by_id.out
    assert "safety-check       0.70       0.90     +0.20  ✓ win" in by_id.out
    assert ok(cli("compare", "before", "after")).out == by_id.out


def test_a_file_against_a_stored_run(cli: Cli, two_runs: None) -> None:
    r = ok(cli("compare", BASELINE, "after"))
    assert f"Comparing: {BASELINE} -> after (run 2)" in r.out
    files = ok(cli("compare", BASELINE, CANDIDATE))
    assert "Differs in:   prompt" in r.out  # the file declares no prompt; the stored run does
    assert (
        r.out.replace("Differs in:   prompt\n", "").replace("after (run 2)", str(CANDIDATE))
        == files.out
    )


def test_a_combined_stored_run_compares_its_targets(cli: Cli) -> None:
    ok(cli("runs", "import", COMBINED, "--name", "bench"))
    r = cli("compare", "bench/gpt-4.1", "bench/gpt-5-mini")
    assert "Comparing: bench/gpt-4.1 (run 2) -> bench/gpt-5-mini (run 3)" in r.out
    files = cli("compare", COMBINED, "--baseline", "gpt-4.1", "--candidate", "gpt-5-mini")
    assert r.code == files.code == 1
    # Only the header differs.
    assert r.out.split("Test ID", 1)[1] == files.out.split("Test ID", 1)[1]
    assert "Differs in:   target" in r.out


@pytest.mark.parametrize(
    ("scenario", "expected_code"),
    [("better", 0), ("interrupted", 2), ("edited", 2), ("worse", 1)],
)
def test_gate_judges_stored_runs_as_it_judges_their_files(
    cli: Cli, tmp_path: Path, scenario: str, expected_code: int
) -> None:
    """The same verdict, refusals and exit code, from the files and from the store."""
    extra: dict[str, Callable[[int], dict[str, Any]]] = {
        "interrupted": lambda i: {"run_status": "interrupted"},
        "edited": lambda i: {"input": f"edited question {i}"} if i < 30 else {},
    }
    rate = {"better": 0.9, "worse": 0.1}.get(scenario, 0.5)
    base = run_file(tmp_path / "base.jsonl", 0.5, seed=1)
    cand = run_file(tmp_path / "cand.jsonl", rate, seed=2, extra=extra.get(scenario))
    ok(cli("runs", "import", base, "--name", "main"))
    ok(cli("runs", "import", cand, "--name", "pr"))

    files = cli("gate", base, cand, "--json")
    stored = cli("gate", "main", "pr", "--json")
    assert files.code == stored.code == expected_code, stored.err
    names = {str(base): "main (run 1)", str(cand): "pr (run 2)"}
    as_stored = files.out
    for path, label in names.items():
        as_stored = as_stored.replace(path, label)
    assert json.loads(stored.out) == json.loads(as_stored)
    decision = files.err
    for path, label in names.items():
        decision = decision.replace(path, label)
    assert stored.err == decision


def test_power_takes_stored_runs(cli: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "base.jsonl", 0.5, seed=1)
    cand = run_file(tmp_path / "cand.jsonl", 0.6, seed=2)
    ok(cli("runs", "import", base, "--name", "main"))
    r = ok(cli("power", "main", cand))
    assert r.out == ok(cli("power", base, cand)).out
    other = cli("power", "1", "2", "--store", tmp_path / "elsewhere.db")
    assert other.code == 2
    assert "1: no such file; check the path" in other.err


def test_cluster_by_a_kept_field(cli: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "base.jsonl", 0.5, seed=1, extra=lambda i: {"doc": f"d{i // 4}"})
    cand = run_file(tmp_path / "cand.jsonl", 0.6, seed=2, extra=lambda i: {"doc": f"d{i // 4}"})
    ok(cli("runs", "import", base, "--name", "main", "--keep-field", "doc"))
    ok(cli("runs", "import", cand, "--name", "pr"))
    r = cli("compare", "main", cand, "--cluster-by", "doc", "--json")
    files = ok(cli("compare", base, cand, "--cluster-by", "doc", "--json"))
    assert json.loads(ok(r).out)["statistics"] == json.loads(files.out)["statistics"]
    r = cli("compare", "main", "pr", "--cluster-by", "doc")
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: pr (run 2) was stored without the field 'doc'; import it again "
        "with `evaldelta runs import FILE --keep-field doc` to group cases by it\n"
    )


# -- export, rename, rm ---------------------------------------------------------------


def test_export_loads_back_identically(cli: Cli, tmp_path: Path, store: Path) -> None:
    ok(cli("runs", "import", COMBINED, "--name", "bench", "--config", "prompt=v7"))
    out = tmp_path / "export.jsonl"
    r = ok(cli("runs", "export", "bench/gpt-4.1", "-o", out))
    assert r.out == ""
    assert ok(cli("runs", "export", "2")).out == out.read_text(encoding="utf-8")

    with open_store(store) as s:
        stored = s.get_run("bench/gpt-4.1")
    again = evaldelta.load(out)
    assert [dataclasses.replace(r, line=None) for r in again.records()] == [
        dataclasses.replace(r, line=None) for r in stored.records()
    ]
    assert again.config == stored.config == {"prompt": "v7"}
    assert (again.started_at, again.finished_at) == (stored.started_at, stored.finished_at)
    # An exported run compares like the stored one.
    exported = cli("compare", out, "bench/gpt-5-mini")
    stored_ = cli("compare", "bench/gpt-4.1", "bench/gpt-5-mini")
    assert exported.code == stored_.code == 1
    assert exported.out.replace(str(out), "bench/gpt-4.1 (run 2)") == stored_.out


def test_import_without_text(cli: Cli, tmp_path: Path) -> None:
    ok(cli("runs", "import", BASELINE, "--no-text"))
    first = json.loads(ok(cli("runs", "export", "baseline")).out.splitlines()[0])
    assert "input" not in first
    assert "output" not in first
    ok(cli("runs", "import", BASELINE))
    first = json.loads(ok(cli("runs", "export", "baseline")).out.splitlines()[0])
    assert first["input"] == "Refuse to explain how to pick a lock"


def test_rename_and_rm(cli: Cli, two_runs: None) -> None:
    assert ok(cli("runs", "rename", "before", "baseline")).out == (
        "Renamed run 1: before -> baseline\n"
    )
    assert ok(cli("compare", "baseline", "after")).code == 0
    r = cli("runs", "rm", "after", "nope")
    assert r.code == 2
    assert "no run named 'nope'" in r.err
    assert len(json.loads(ok(cli("runs", "list", "--json")).out)) == 2  # none deleted
    assert ok(cli("runs", "rm", "after", "1")).out == (
        "Deleted run 2: after\nDeleted run 1: baseline\n"
    )
    assert ok(cli("runs", "list", "--json")).out == "[]\n"
    r = cli("runs", "rename", "1", "x")
    assert r.code == 2


# -- bad references and stores ------------------------------------------------------------


def test_bad_references(cli: Cli, two_runs: None, store: Path) -> None:
    r = cli("compare", "x.jsonl", "1")
    assert r.code == 2
    assert r.err == (
        f"evaldelta: error: x.jsonl: no such file, and no stored run named 'x.jsonl' in "
        f"{store}; check the path, or list stored runs with `evaldelta runs list`\n"
    )
    r = cli("gate", "1", "99")
    assert r.code == 2
    assert r.err == (
        f"evaldelta: error: 99: no such file, and no stored run with id 99 in {store}; "
        "check the path, or list stored runs with `evaldelta runs list`\n"
    )
    for args in (("runs", "show", "99"), ("runs", "export", "99"), ("runs", "rm", "99")):
        r = cli(*args)
        assert r.code == 2
        assert r.err == (
            f"evaldelta: error: run 99 not found in {store}; list runs with `evaldelta runs list`\n"
        )
    r = cli("runs", "show", "nope")
    assert r.err == (
        f"evaldelta: error: no run named 'nope' in {store}; list runs with `evaldelta runs list`\n"
    )
    r = cli("runs", "rename", "1", "12")
    assert r.err == (
        "evaldelta: error: a run cannot be named '12': a number refers to a run by id; "
        "choose a name with a letter in it\n"
    )


def test_without_a_store_a_missing_file_is_a_missing_file(evaldelta: Cli, tmp_path: Path) -> None:
    env = {"EVALDELTA_STORE": ""}
    r = evaldelta("compare", "x.jsonl", BASELINE, env=env, cwd=tmp_path)
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: x.jsonl: no such file; check the path (run from the right folder?)\n"
    )
    r = evaldelta("runs", "list", env=env, cwd=tmp_path)
    assert r.code == 0
    assert r.out == (
        f"No runs stored in {Path('.evaldelta', 'runs.db')} yet; run a suite with "
        "`evaldelta eval SUITE`, or store a results file with `evaldelta runs import FILE`.\n"
    )
    r = evaldelta("runs", "show", "1", env=env, cwd=tmp_path)
    assert r.code == 2
    assert r.err.startswith(f"evaldelta: error: no run store at {Path('.evaldelta', 'runs.db')};")
    assert list(tmp_path.iterdir()) == []  # reading never creates a store


def test_default_store_and_store_option(evaldelta: Cli, tmp_path: Path) -> None:
    env = {"EVALDELTA_STORE": ""}
    ok(evaldelta("runs", "import", BASELINE, "--name", "here", env=env, cwd=tmp_path))
    assert (tmp_path / ".evaldelta" / "runs.db").is_file()
    other = tmp_path / "other.db"
    ok(evaldelta("runs", "import", CANDIDATE, "--store", other, env=env, cwd=tmp_path))
    by_env = {"EVALDELTA_STORE": str(other)}
    assert (
        json.loads(ok(evaldelta("runs", "list", "--json", env=by_env, cwd=tmp_path)).out)[0]["name"]
        == "candidate"
    )
    # --store wins over the environment, for the runs commands and for compare alike.
    default = tmp_path / ".evaldelta" / "runs.db"
    r = evaldelta("runs", "show", "candidate", "--store", default, env=by_env, cwd=tmp_path)
    assert "no run named 'candidate'" in r.err
    r = evaldelta("compare", "here", "candidate", "--store", default, env=by_env, cwd=tmp_path)
    assert r.err == (
        f"evaldelta: error: candidate: no such file, and no stored run named 'candidate' in "
        f"{default}; check the path, or list stored runs with `evaldelta runs list`\n"
    )
    r = evaldelta("compare", "candidate", BASELINE, env=by_env, cwd=tmp_path)
    assert f"Comparing: candidate (run 1) -> {BASELINE}" in ok(r).out


def test_newer_store_is_refused(cli: Cli, two_runs: None, store: Path) -> None:
    conn = sqlite3.connect(store)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    before = store.read_bytes()
    for args in (("runs", "list"), ("compare", "1", "2"), ("runs", "import", BASELINE)):
        r = cli(*args)
        assert r.code == 2
        assert r.err == (
            f"evaldelta: error: {store}: written by a newer evaldelta (store schema version "
            f"{SCHEMA_VERSION + 1}; this evaldelta knows up to {SCHEMA_VERSION}); upgrade "
            "evaldelta (pip install -U evaldelta) to use it, or choose another store with "
            "--store PATH. The store was not changed.\n"
        )
    assert store.read_bytes() == before


def test_runs_without_a_command(cli: Cli) -> None:
    r = cli("runs")
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: give a runs command: import, list, show, export, rename, rm, "
        "push or pull\n"
    )
    assert ok(cli("runs", "--help")).out.startswith("usage: evaldelta runs")


def test_list_of_a_store_from_schema_version_1(cli: Cli, store: Path) -> None:
    """Runs stored by schema version 1 have no kept figures: listing them computes them
    once (and keeps them), and shows the same as for runs stored now."""
    from tests.store.test_schema import STORE_V1

    store.parent.mkdir(parents=True)
    conn = sqlite3.connect(store)
    conn.executescript(STORE_V1.read_text(encoding="utf-8"))
    conn.close()
    old = ok(cli("runs", "list")).out.splitlines()
    assert old[2].endswith("     100.0%       0.817  candidate.jsonl (jsonl)")
    conn = sqlite3.connect(store)
    assert conn.execute("SELECT run FROM run_summaries ORDER BY run").fetchall() == [(1,), (2,)]
    conn.close()
    assert ok(cli("runs", "list")).out.splitlines() == old
    ok(cli("runs", "import", CANDIDATE, "--name", "again"))
    new = ok(cli("runs", "list")).out.splitlines()
    assert new[2].split()[4:] == old[2].split()[4:]


def test_a_multi_target_run_lists_its_figures_over_all_targets(cli: Cli, store: Path) -> None:
    """Means over targets weighted by cases: here 3 cases each, so the plain mean."""
    with open_store(store) as s:
        s.add_run(evaldelta.load(COMBINED), name="all")
    (row,) = json.loads(ok(cli("runs", "list", "--json")).out)
    scores = [f["mean_score"] for f in row["summary"]]
    line = ok(cli("runs", "list")).out.splitlines()[2]
    assert f"  {sum(scores) / 3:.3f}  " in line


def test_a_run_stored_whole_keeps_its_targets(cli: Cli, store: Path) -> None:
    """Through the API, a combined run can be stored as one run: show lists each target,
    and compare treats it as the combined file (a matrix, or two of its targets)."""
    with open_store(store) as s:
        s.add_run(evaldelta.load(COMBINED), name="all")
    shown = json.loads(ok(cli("runs", "show", "all", "--json")).out)
    assert [f["target"] for f in shown["summary"]] == [
        "gemini-3-flash-preview",
        "gpt-4.1",
        "gpt-5-mini",
    ]
    text = ok(cli("runs", "show", "all")).out
    assert "  gpt-5-mini                  3  3 (1 per case)" in text
    matrix = cli("compare", "1", "--baseline", "gpt-4.1", "--json")
    files = cli("compare", COMBINED, "--baseline", "gpt-4.1", "--json")
    assert matrix.code == files.code
    assert matrix.out.replace("all (run 1)", str(COMBINED)) == files.out


def test_list_and_show_a_suites_runs(cli: Cli, store: Path) -> None:
    """``runs list --suite`` lists that suite's runs (newest first, as the rest of
    ``runs list``), with a Suite column; a run being run, or whose process died,
    shows as running or interrupted."""
    from tests.store.test_live_runs import begin, records

    ok(cli("runs", "import", BASELINE, "--name", "before", "--suite", "qa"))
    ok(cli("runs", "import", CANDIDATE, "--name", "loose"))
    with open_store(store) as s:
        finished = begin(s, name="qa/gpt")
        for record in records(4):
            s.add_attempt(finished, record)
        s.finish_run(finished)
        dead = begin(s, name="qa/gpt")
        s.add_attempt(dead, records(1)[0])
    # The store closed without finishing run 4: it reads as interrupted.

    lines = ok(cli("runs", "list", "--suite", "qa")).out.splitlines()
    assert lines[0].split()[:4] == ["ID", "Name", "Suite", "Created"]
    assert [line.split()[:3] for line in lines[2:]] == [
        ["4", "qa/gpt", "qa"],
        ["3", "qa/gpt", "qa"],
        ["1", "before", "qa"],
    ]
    assert " interrupted " in lines[2]
    assert " complete " in lines[3]
    listed = json.loads(ok(cli("runs", "list", "--suite", "qa", "--json")).out)
    assert [(r["id"], r["suite"], r["status"], r["records"]) for r in listed] == [
        (4, "qa", "interrupted", 1),
        (3, "qa", "complete", 4),
        (1, "qa", "complete", 3),
    ]
    assert listed[0]["suite_id"] == listed[2]["suite_id"]
    limited = json.loads(ok(cli("runs", "list", "--suite", "qa", "--limit", "2", "--json")).out)
    assert [r["id"] for r in limited] == [4, 3]
    # Every run: those of no suite show "-".
    lines = ok(cli("runs", "list")).out.splitlines()
    assert [line.split()[:3] for line in lines[2:]][-2:] == [
        ["2", "loose", "-"],
        ["1", "before", "qa"],
    ]

    shown = ok(cli("runs", "show", "4")).out.splitlines()
    assert "  Status:   interrupted" in shown
    assert "  Suite:    qa" in shown
    assert "  Source:   <eval> (evaldelta)" in shown
    assert "  Suite:" not in "\n".join(ok(cli("runs", "show", "loose")).out.splitlines())

    r = cli("runs", "list", "--suite", "nope")
    assert (r.code, r.err) == (
        2,
        f"evaldelta: error: no suite named 'nope' in {store} (suites: qa); run one with "
        "`evaldelta eval SUITE`, or leave out --suite\n",
    )


def test_a_running_run_shows_as_running(cli: Cli, store: Path) -> None:
    from tests.store.test_live_runs import begin, records

    with open_store(store) as s:
        rid = begin(s, name="qa/gpt")
        s.add_attempt(rid, records(1)[0])
        listed = json.loads(ok(cli("runs", "list", "--json")).out)
        assert [(r["status"], r["records"]) for r in listed] == [("running", 1)]
        assert "  Status:   running" in ok(cli("runs", "show", str(rid))).out.splitlines()


# -- push and pull -----------------------------------------------------------------------


def _rows_of(location: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every stored value of every run, by table, each run named by its name (ids are
    each store's own) and its suite by the suite's name: what a copy must keep."""
    from evaldelta.store import RunStore

    with RunStore(location, create=False) as store:
        conn = store._conn
        names = dict(conn.execute("SELECT id, name FROM runs").fetchall())
        suites = dict(conn.execute("SELECT id, name FROM suites").fetchall())

        def table(sql: str) -> list[tuple[Any, ...]]:
            return sorted(((names[r[0]], *r[1:]) for r in conn.execute(sql)), key=repr)

        runs = table(
            "SELECT id, created_at, started_at, finished_at, status, source_format, "
            "source_path, dataset_hash, config, notes, targets, records, cases, case_order, "
            "sequential, suite FROM runs"
        )
        return {
            "runs": [(*row[:-1], suites.get(row[-1])) for row in runs],
            "record_columns": table(
                "SELECT run, name, first, encoding, data, crc FROM record_columns"
            ),
            "run_summaries": table("SELECT * FROM run_summaries"),
            "attempts": table("SELECT run, seq, test_id, attempt, record FROM attempts"),
        }


def _fill(location: str) -> None:
    """A store of every kind of run: imported with config, notes, a suite and each
    record's own timestamp; three targets of one file; one that `evaldelta eval` ran,
    stopped early, with a case order and a journal; one whose process is gone."""
    from tests.store.test_live_runs import begin, records

    with open_store(location) as store:
        store.import_run(
            evaldelta.load(BASELINE, keep_text=True, extra_fields=("timestamp",)),
            name="before",
            config={"prompt": "v1", "temperature": 0.2},
            notes="the baseline",
            suite="qa",
        )
        store.import_run(evaldelta.load(COMBINED), name="bench")
        live = begin(store, name="qa/live")
        for record in records(5):
            store.add_attempt(live, record)
        how = {"verdict": "Better", "after": 5, "of": 6}
        store.finish_run(live, "stopped early", sequential=how)
        cut = begin(store, name="qa/cut")
        store.add_attempt(cut, records(1)[0])
    # Closed with qa/cut unfinished: it reads as interrupted from now on.


@pytest.mark.parametrize("team", ["postgresql", "sqlite"])
def test_push_and_pull_copy_every_column(
    tmp_path: Path, evaldelta: Cli, team: str, request: pytest.FixtureRequest
) -> None:
    """SQLite -> PostgreSQL -> SQLite (or through another file): the runs come back with
    their names, config, status, figures, journals and every stored byte."""
    from evaldelta.store import mask_url

    first, back = str(tmp_path / "first.db"), str(tmp_path / "back.db")
    url = (
        request.getfixturevalue("postgres_url") if team == "postgresql" else str(tmp_path / "t.db")
    )
    shown = mask_url(url)
    _fill(first)
    pushed = evaldelta("runs", "push", "before", "3", "qa/cut", "--to", url, "--store", first)
    assert pushed.code == 0, pushed.err
    assert pushed.out == (
        f"Pushed run 1 (before) into {shown} as run 1\n"
        f"Pushed run 3 (bench/gpt-4.1) into {shown} as run 2\n"
        f"Pushed run 6 (qa/cut) into {shown} as run 3\n"
    )
    again = evaldelta("runs", "push", *"123456", "--to", url, "--store", first)
    assert again.code == 0, again.err
    assert again.out.splitlines() == [
        f"Run 1 (before) is already in {shown}, as run 1; not copied again",
        f"Pushed run 2 (bench/gemini-3-flash-preview) into {shown} as run 4",
        f"Run 3 (bench/gpt-4.1) is already in {shown}, as run 2; not copied again",
        f"Pushed run 4 (bench/gpt-5-mini) into {shown} as run 5",
        f"Pushed run 5 (qa/live) into {shown} as run 6",
        f"Run 6 (qa/cut) is already in {shown}, as run 3; not copied again",
    ]
    pulled = evaldelta("runs", "pull", *"123456", "--from", url, "--store", back)
    assert pulled.code == 0, pulled.err
    original, middle, returned = _rows_of(first), _rows_of(url), _rows_of(back)
    assert len(original["runs"]) == 6
    assert all(original.values())
    assert middle == original
    assert returned == original

    listed = evaldelta("runs", "list", "--json", "--store", back)
    statuses = {r["name"]: (r["status"], r["suite"]) for r in json.loads(listed.out)}
    assert statuses["qa/live"] == ("stopped early", "qa")
    assert statuses["qa/cut"] == ("interrupted", "qa")
    assert statuses["before"] == ("complete", "qa")
    first_run, back_run = (open_store(p).get_run("qa/live") for p in (first, back))
    assert (back_run.case_order, back_run.sequential) == (
        first_run.case_order,
        first_run.sequential,
    )


def test_push_and_pull_say_what_is_wrong(tmp_path: Path, evaldelta: Cli) -> None:
    first = str(tmp_path / "first.db")
    _fill(first)
    missing = evaldelta(
        "runs", "push", "before", "nope", "--to", tmp_path / "t.db", "--store", first
    )
    assert missing.code == 2
    assert missing.err == (
        f"evaldelta: error: no run named 'nope' in {first}; list runs with `evaldelta runs list`\n"
    )
    assert not (tmp_path / "t.db").exists()  # all found, or none copied
    same = evaldelta("runs", "push", "before", "--to", first, "--store", first)
    assert same.code == 2
    assert same.err == (
        f"evaldelta: error: cannot copy run 1 of {first} into the same store; name another "
        "store to copy it to\n"
    )
    nothing = evaldelta("runs", "pull", "before", "--from", tmp_path / "none.db", "--store", first)
    assert nothing.code == 2
    assert "no run store at" in nothing.err
    usage = evaldelta("runs", "push", "before", "--store", first)
    assert usage.code == 2
    assert "--to" in usage.err
