"""A run store file wherever a results file is accepted: ``gate baseline.db candidate.db``
(its latest run), or ``store.db:NAME`` / ``store.db:ID`` to pick one."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaldelta.store import SCHEMA_VERSION, RunStore
from tests.conftest import Result

Cli = Callable[..., Result]
CASES = 40


@pytest.fixture
def cli(evaldelta: Cli, tmp_path: Path) -> Cli:
    """The installed command, run in ``tmp_path`` with a default store that is not there
    (so nothing here can be found by the default-store lookup by mistake)."""

    def run(*args: Any) -> Result:
        env = {"EVALDELTA_STORE": str(tmp_path / "no-default.db")}
        return evaldelta(*args, env=env, cwd=tmp_path)

    return run


@pytest.fixture
def make_store(cli: Cli, jsonl: Callable[..., Path], tmp_path: Path) -> Callable[..., Path]:
    """A store ``NAME.db`` holding one imported run per ``(run name, score)`` given."""

    def make(name: str, *runs: tuple[str, float], interrupted: bool = False) -> Path:
        store = tmp_path / f"{name}.db"
        for run_name, score in runs:
            records: list[dict[str, Any]] = [
                {"test_id": f"case-{i}", "score": score} for i in range(CASES)
            ]
            if interrupted:
                records[0]["run_status"] = "interrupted"
            results = jsonl(f"{name}-{run_name}.jsonl", records)
            r = cli("runs", "import", results, "--store", store, "--name", run_name)
            assert r.code == 0, r.err
        return store

    return make


def test_gate_two_stores_better_passes(cli: Cli, make_store: Callable[..., Path]) -> None:
    make_store("baseline", ("before", 0.5))
    make_store("candidate", ("after", 0.9))
    r = cli("gate", "baseline.db", "candidate.db")
    assert r.code == 0, r.err
    assert "Comparing: baseline.db:before (run 1) -> candidate.db:after (run 1)" in r.out
    assert "Verdict: Better." in r.out
    assert r.err.startswith("evaldelta gate: pass: Better.")


def test_gate_two_stores_worse_blocks(cli: Cli, make_store: Callable[..., Path]) -> None:
    make_store("baseline", ("before", 0.5))
    make_store("candidate", ("after", 0.1))
    r = cli("gate", "baseline.db", "candidate.db")
    assert r.code == 1, r.err
    assert "Verdict: Worse." in r.out
    assert r.err.startswith("evaldelta gate: block: Worse.")


def test_gate_interrupted_candidate_store_cannot_judge(
    cli: Cli, make_store: Callable[..., Path]
) -> None:
    make_store("baseline", ("before", 0.5))
    make_store("candidate", ("after", 0.9), interrupted=True)
    r = cli("gate", "baseline.db", "candidate.db")
    assert r.code == 2
    assert r.err.splitlines()[-1] == (
        "evaldelta gate: cannot judge: the candidate run (candidate.db:after (run 1)) "
        "declares itself interrupted; re-run it to completion"
    )


def test_latest_run_is_the_highest_id(cli: Cli, make_store: Callable[..., Path]) -> None:
    make_store("baseline", ("before", 0.5))
    # Run 2 (the latest) is the one read: Worse, though run 1 alone would be Better.
    make_store("candidate", ("good", 0.9), ("bad", 0.1))
    r = cli("gate", "baseline.db", "candidate.db")
    assert r.code == 1, r.err
    assert "-> candidate.db:bad (run 2)" in r.out


def test_compare_picks_runs_by_name_and_id(cli: Cli, make_store: Callable[..., Path]) -> None:
    make_store("base", ("before", 0.5), ("later", 0.1))
    make_store("cand", ("bad", 0.1), ("good", 0.9))
    r = cli("compare", "base.db:before", "cand.db:2")
    assert r.code == 0, r.err
    assert "Comparing: base.db:before (run 1) -> cand.db:good (run 2)" in r.out
    assert "Verdict: Better." in r.out


def test_a_store_with_no_runs_is_refused(cli: Cli, make_store: Callable[..., Path]) -> None:
    RunStore(make_store("empty")).close()
    make_store("candidate", ("after", 0.9))
    r = cli("gate", "empty.db", "candidate.db")
    assert r.code == 2
    assert r.err == (
        "evaldelta: error: empty.db: the run store holds no runs; import one with "
        "`evaldelta runs import FILE --store empty.db`, or give a results file\n"
    )


@pytest.mark.parametrize(
    ("ref", "what"), [("nope", "named 'nope'"), ("7", "with id 7")], ids=["name", "id"]
)
def test_an_unknown_ref_names_the_store(
    cli: Cli, make_store: Callable[..., Path], ref: str, what: str
) -> None:
    make_store("baseline", ("before", 0.5))
    make_store("candidate", ("after", 0.9))
    r = cli("compare", f"baseline.db:{ref}", "candidate.db")
    assert r.code == 2
    assert r.err == (
        f"evaldelta: error: baseline.db:{ref}: no run {what} in the run store baseline.db; "
        "list its runs with `evaldelta runs list --store baseline.db`\n"
    )


def test_a_store_of_a_newer_evaldelta_is_refused(cli: Cli, make_store: Callable[..., Path]) -> None:
    store = make_store("baseline", ("before", 0.5))
    make_store("candidate", ("after", 0.9))
    conn = sqlite3.connect(store)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    before = store.read_bytes()
    for ref in ("baseline.db", "baseline.db:before"):
        r = cli("gate", ref, "candidate.db")
        assert r.code == 2
        assert r.err == (
            f"evaldelta: error: baseline.db: written by a newer evaldelta (store schema "
            f"version {SCHEMA_VERSION + 1}; this evaldelta knows up to {SCHEMA_VERSION}); "
            "upgrade evaldelta (pip install -U evaldelta) to use it, or choose another store "
            "with --store PATH. The store was not changed.\n"
        )
    assert store.read_bytes() == before


def test_a_results_file_with_a_colon_is_still_a_results_file(
    cli: Cli, make_store: Callable[..., Path], jsonl: Callable[..., Path]
) -> None:
    make_store("baseline", ("before", 0.5))
    jsonl("cand:v2.jsonl", [{"test_id": f"case-{i}", "score": 0.9} for i in range(CASES)])
    r = cli("gate", "baseline.db:before", "cand:v2.jsonl")
    assert r.code == 0, r.err
    assert "-> cand:v2.jsonl" in r.out
