"""Stopping once the answer is in, end to end through the installed command, on the
repository's example (examples/stop-early: 1,000 questions, v2 about 12 points better):
``eval --against RUN --stop-when-settled``, then ``compare``/``gate`` of the stopped run,
and ``compare --sequential``'s what-if on two finished runs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO, Result, run_evaldelta

SUITE = REPO / "examples" / "stop-early" / "suite.yaml"
Run = Callable[..., Result]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the baseline (main/v1), a run of v2 against it that stopped early
    (pr/v2), and a full run of v2 (full/v2)."""
    path = tmp_path_factory.mktemp("stop-early") / "runs.db"
    for args in (
        ("--target", "v1", "--name", "main"),
        ("--target", "v2", "--name", "pr", "--against", "main/v1", "--stop-when-settled"),
        ("--target", "v2", "--name", "full"),
    ):
        r = run_evaldelta("eval", SUITE, *args, "--store", path, "-q")
        assert r.code == 0, r.err
    return path


def test_eval_against_stops_once_settled_and_says_what_it_saved(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    assert run_evaldelta("eval", SUITE, "--target", "v1", "--name", "main", "--store", db).code == 0
    r = run_evaldelta(
        "eval", SUITE, "--target", "v2", "--name", "pr", "--store", db,
        "--against", "main/v1", "--stop-when-settled",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert r.err == ""
    m = re.search(
        r"Stopped early against main/v1 \(run 1\): settled Better after (\d+) of 1,000 cases; "
        r"(\d+) cases, about [\d.]+k tokens and \$[\d.]+ not spent \(95% confidence sequence, "
        r"the recorded order of main/v1 \(run 1\)\)\.",
        r.out,
    )
    assert m, r.out
    after, not_run = int(m[1]), int(m[2])
    assert 20 <= after < 500
    assert not_run > 400
    assert re.search(r"  v2      2    stopped early  \d+/1000 ", r.out), r.out
    assert f"Next: evaldelta compare main/v1 pr/v2 --store {db}" in r.out
    shown = json.loads(run_evaldelta("runs", "show", "pr/v2", "--store", db, "--json").out)
    assert shown["status"] == "stopped early"
    assert shown["sequential"]["verdict"] == "Better"
    assert shown["sequential"]["after"] == after


def test_compare_and_gate_judge_a_stopped_run_by_its_sequence(store: Path) -> None:
    r = run_evaldelta("compare", "main/v1", "pr/v2", "--store", store)
    assert r.code == 0, r.err
    assert "ran with --stop-when-settled (settled Better after " in r.out
    assert "the verdict comes from the confidence sequence, not the bootstrap interval" in r.out
    assert "Not reached: " in r.out
    assert "the candidate stopped once the comparison was settled" in r.out
    assert "Unmatched:" not in r.out
    assert re.search(r"Mean score: .* 95% CS \[\+[\d.]+, \+[\d.]+\]   \(anytime-valid", r.out)
    assert "bootstrap" not in r.out.split("Mean score:")[1].split("\n")[0]
    assert re.search(
        r"Verdict: Better\. The candidate scores higher: the true change is plausibly between "
        r"\+[\d.]+ and \+[\d.]+ points \(95% confidence sequence\)\.",
        r.out,
    ), r.out

    data = json.loads(run_evaldelta("compare", "main/v1", "pr/v2", "--store", store, "--json").out)
    seq = data["sequential"]
    assert seq["run_side"] == "candidate"
    assert seq["run"]["verdict"] == "Better"
    assert seq["interval"]["ci_low"] > 0
    assert data["verdict"]["plausible_change"]["low"] == pytest.approx(seq["interval"]["ci_low"])
    assert next(p["code"] for p in data["problems"]) == "sequential"

    gate = run_evaldelta("gate", "main/v1", "pr/v2", "--store", store)
    assert gate.code == 0, gate.err
    md = run_evaldelta("gate", "main/v1", "pr/v2", "--store", store, "--format", "markdown")
    assert "**Sequential:** The candidate ran with --stop-when-settled: settled Better" in md.out
    assert "(confidence sequence) |" in md.out


def test_compare_sequential_replays_two_finished_runs(store: Path) -> None:
    r = run_evaldelta("compare", "main/v1", "full/v2", "--store", store, "--sequential")
    assert r.code == 0, r.err
    m = re.search(
        r"Sequential:   Taken case by case \(in the order the baseline run took them\), the 95% "
        r"confidence sequence settled Better after (\d+) of 1,000 cases \(interval "
        r"\[\+[\d.]+, \+[\d.]+\] points\); (\d+) cases, [\d.]+k tokens and \$[\d.]+ not spent\.",
        r.out,
    )
    assert m, r.out
    after = int(m[1])
    assert int(m[2]) == 1000 - after
    # The full run's own verdict stays the bootstrap's: it ran to the end.
    assert "bootstrap, 10,000 resamples" in r.out

    data = json.loads(
        run_evaldelta(
            "compare", "main/v1", "full/v2", "--store", store, "--sequential", "--json"
        ).out
    )
    seq = data["sequential"]
    assert seq["settled"] == {"after": after, "verdict": "Better"}
    assert seq["cases"] == seq["planned"] == 1000
    path = seq["path"]
    assert len(path) == 1000
    assert path[0]["cases"] == 1
    assert path[-1]["cases"] == 1000
    assert path[after - 1]["low"] > 0 >= path[after - 2]["low"]
    assert all(p["low"] <= p["high"] for p in path)
    assert seq["saving"]["cases"] == 1000 - after


def test_compare_sequential_of_files_takes_a_seeded_order(tmp_path: Path) -> None:
    before = REPO / "examples" / "agent-versions" / "before.jsonl"
    after = REPO / "examples" / "agent-versions" / "after.jsonl"
    r = run_evaldelta("compare", before, after, "--sequential", "--json", "--seed", "4")
    assert r.code in (0, 1), r.err
    seq = json.loads(r.out)["sequential"]
    assert seq["order"] == "in a seeded shuffle, seed 4"
    assert seq["cases"] == 60


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--stop-when-settled",),
            "evaldelta: error: --stop-when-settled needs --against RUN (the baseline to "
            "compare with)\n",
        ),
        (("--margin", "2"), "evaldelta: error: --margin needs --against RUN"),
        (("--against", "nothing-here"), "nothing-here: no such file, and no stored run named"),
    ],
)
def test_eval_against_mistakes_are_one_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    db = tmp_path / "runs.db"
    assert (
        run_evaldelta("eval", SUITE, "--target", "v1", "--name", "m", "--store", db, "-q").code == 0
    )
    r = run_evaldelta("eval", SUITE, "--target", "v2", "--store", db, *args)
    assert r.code == 2
    assert message in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


def test_against_with_two_targets_asks_for_one(store: Path) -> None:
    r = run_evaldelta("eval", SUITE, "--against", "main/v1", "--store", store, "-q")
    assert r.code == 2
    assert "--against runs one target against the baseline; the suite has 2 (v1, v2)" in r.err


def test_an_unchanged_candidate_is_no_change(store: Path) -> None:
    # main/v1 against itself: no case changed, within the default margin of 1 point.
    r = run_evaldelta("gate", "main/v1", "main/v1", "--store", store, "--block-inconclusive")
    assert r.code == 0, r.err
    assert (
        "evaldelta gate: pass: No change. No case changed: all 1,000 cases scored the same "
        "in both runs and passed alike, so the change is within +/-1.0 points.\n" in r.err
    )
    wide = run_evaldelta("gate", "main/v1", "main/v1", "--store", store, "--margin", "5")
    assert "so the change is within +/-5.0 points." in wide.err


def test_the_progress_bar_shows_the_interval() -> None:
    from evaldelta.cli._eval import interval_text
    from evaldelta.runner._engine import SequenceMoved

    moving = SequenceMoved("v2", 45, -0.0412, 0.2511, None)
    assert interval_text(moving) == "[-4.1, +25.1] pts after 45"
    settled = SequenceMoved("v2", 136, 0.0004, 0.258, "Better")
    assert interval_text(settled) == "[+0.0, +25.8] pts after 136: Better"
