"""``gate FILE --baseline T``: every other target of a combined file against T (seed
001's agentv compare case), through the installed command."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import REPO, Result, run_evaldelta

COMBINED = REPO / "examples" / "benchmark-tooling" / "fixtures" / "combined-results.jsonl"


def _combined(path: Path, targets: dict[str, Callable[[int], float]], n: int = 40) -> Path:
    lines = [
        {"test_id": f"q{i:02d}", "target": name, "score": score(i)}
        for i in range(n)
        for name, score in targets.items()
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _gate(*args: Any) -> Result:
    return run_evaldelta("gate", *args)


def test_every_target_against_the_baseline_passes(tmp_path: Path) -> None:
    r = _gate(COMBINED, "--baseline", "gpt-4.1")
    assert r.code == 0, r.err
    assert "Pairwise Summary:" in r.out
    assert "Holm's step-down for 2 comparisons against gpt-4.1" in r.out
    assert r.err.splitlines() == [
        # Three cases: Student's t with 2 degrees of freedom, at Holm's 97.5%.
        "evaldelta gate: gemini-3-flash-preview: pass, with a warning: Inconclusive. This "
        "could be chance: the true change is plausibly between -31 and +24 points.",
        "evaldelta gate: gpt-5-mini: pass, with a warning: Inconclusive. This could be "
        "chance: the true change is plausibly between -39 and +36 points.",
        "evaldelta gate: pass, with a warning: every one of the 2 targets against gpt-4.1",
    ]


def test_one_worse_target_blocks_and_is_named(tmp_path: Path) -> None:
    path = _combined(
        tmp_path / "combined.jsonl",
        {
            "base": lambda i: 1.0 if i % 4 else 0.0,
            "same": lambda i: 1.0 if i % 4 else 0.0,
            "bad": lambda i: 1.0 if i % 2 else 0.0,
        },
    )
    r = _gate(path, "--baseline", "base")
    assert r.code == 1, r.err
    assert "evaldelta gate: bad: block: Worse. The candidate scores lower" in r.err
    assert r.err.splitlines()[-1] == "evaldelta gate: block: bad (1 of 2 against base)"

    data = json.loads(_gate(path, "--baseline", "base", "--json").out)
    gate = data["gate"]
    assert gate["exit_code"] == 1
    assert gate["result"] == "block"
    assert [(t["target"], t["result"], t["verdict"]) for t in gate["targets"]] == [
        ("same", "pass", "No change"),
        ("bad", "block", "Worse"),
    ]
    assert data["baseline"] == "base"

    md = _gate(path, "--baseline", "base", "--format", "markdown").out
    assert md.startswith("## evaldelta gate: block (2 targets vs base)\n")
    # Holm's step-down: bad decided at 97.5%, then same at 95%; each says its own.
    assert "| Target | Verdict | Change | CI | Pass rate | Gate |" in md
    assert "| bad | Worse | -25.0 points | " in md
    assert "| 75.0% → 50.0% | block: Worse. " in md
    assert "| same | No change | +0.0 points | " in md

    report = tmp_path / "report.md"
    summary = tmp_path / "summary.md"
    again = run_evaldelta(
        "gate", path, "--baseline", "base", "--report", report,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert again.code == 1
    assert report.read_text(encoding="utf-8") == md
    assert summary.read_text(encoding="utf-8") == md + "\n"


def test_the_matrix_gate_keeps_the_pairwise_rules(tmp_path: Path) -> None:
    path = _combined(
        tmp_path / "combined.jsonl",
        {"base": lambda i: 1.0 if i % 4 else 0.0, "other": lambda i: 1.0 if i % 4 else 0.0},
    )
    assert _gate(path, "--baseline", "base").code == 0
    # No case changed: No change, which passes even with --block-inconclusive...
    assert _gate(path, "--baseline", "base", "--block-inconclusive").code == 0
    # ...unless the margin is off, when there is no telling.
    blocked = _gate(path, "--baseline", "base", "--block-inconclusive", "--margin", "0")
    assert blocked.code == 1
    assert "other: block (--block-inconclusive)" in blocked.err
    low = _gate(path, "--baseline", "base", "--min-pass-rate", "0.9")
    assert low.code == 1
    assert "pass rate 75.0% is under --min-pass-rate 90.0%" in low.err
    assert _gate(path, "--baseline", "base", "--margin", "1").code == 0


def test_a_target_missing_a_case_cannot_be_judged(tmp_path: Path) -> None:
    path = _combined(
        tmp_path / "combined.jsonl",
        {"base": lambda i: 1.0, "other": lambda i: 1.0},
        n=30,
    )
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # other lacks q29
    r = _gate(path, "--baseline", "base")
    assert r.code == 2
    assert r.err.splitlines()[-1] == "evaldelta gate: cannot judge: other (1 of 1 against base)"


def test_mistakes_are_one_line(tmp_path: Path) -> None:
    r = _gate(COMBINED)
    assert r.code == 2
    assert "one combined file: give --baseline TARGET" in r.err
    r = _gate(COMBINED, "--baseline", "gpt-4.1", "--sample", "2")
    assert r.code == 2
    assert "--sample is for two runs" in r.err
    r = _gate(COMBINED, "--baseline", "nope")
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1


def test_the_missing_case_is_named(tmp_path: Path) -> None:
    path = _combined(tmp_path / "combined.jsonl", {"base": lambda i: 1.0, "other": lambda i: 1.0})
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # other lacks q39
    r = _gate(path, "--baseline", "base", "--candidate", "other")
    assert r.code == 2
    assert "different datasets (1 test id only in the baseline: q39; dataset hash" in r.err


def test_cases_lost_to_infrastructure_are_named_and_counted(tmp_path: Path) -> None:
    base = tmp_path / "b.jsonl"
    cand = tmp_path / "c.jsonl"
    base.write_text(
        "".join(
            json.dumps({"test_id": t, "score": s}) + "\n"
            for t, s in zip("abcd", [1, 0.5, 1, 0], strict=True)
        ),
        encoding="utf-8",
    )
    cand.write_text(
        json.dumps({"test_id": "a", "score": 1}) + "\n"
        + json.dumps({"test_id": "b", "error": "timeout", "error_kind": "infra"}) + "\n"
        + json.dumps({"test_id": "c", "error": "agent crashed"}) + "\n"
        + json.dumps({"test_id": "d", "score": 1}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    r = run_evaldelta("compare", base, cand)
    assert (
        "Warning: 1 case lost every attempt to infrastructure failures on one side and could "
        "not be compared (b); re-run them" in r.out
    )
    assert (
        "Not compared: 1 case lost every attempt to infrastructure failures on one side (b)"
        in r.out
    )
    assert (
        "Errors: 0 attempts in baseline, 2 attempts in candidate (1 of them infrastructure "
        "failures) had an error (task failures without a score count as 0, infrastructure "
        "failures are left out)" in r.out
    )
    summary = json.loads(run_evaldelta("compare", base, cand, "--json").out)["summary"]
    assert summary["not_run"] == 1
    assert summary["not_run_ids"] == ["b"]
    assert summary["infrastructure_failures"] == {"file1": 0, "file2": 1}
    md = run_evaldelta("compare", base, cand, "--format", "markdown").out
    assert "1 case lost to infrastructure failures on one side (b)" in md
