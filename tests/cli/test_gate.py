"""``evaldelta gate`` end to end: its three exit codes, every flag, every refusal."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, Result, write_jsonl

Cli = Callable[..., Result]
Runs = Callable[..., tuple[Path, Path]]

STORE_CI = REPO / "examples" / "store-ci"
FACTUAL = "scorer factual dropped: -10.0 points, 95% CI [-16.3, -3.7]"


def run_file(
    path: Path,
    rate: float,
    n: int = 200,
    *,
    seed: int = 1,
    latency: float | None = None,
    extra: Callable[[int], dict[str, Any]] | None = None,
) -> Path:
    """A run of n cases, each passing (score 1) with probability ``rate``."""
    rng = random.Random(seed)
    records = []
    for i in range(n):
        rec: dict[str, Any] = {
            "test_id": f"q{i:03d}",
            "score": 1.0 if rng.random() < rate else 0.0,
            "input": f"question {i}",
        }
        if latency is not None:
            rec["latency_ms"] = latency + rng.random() * 10
        if extra is not None:
            rec.update(extra(i))
        records.append(rec)
    return write_jsonl(path, records)


@pytest.fixture
def runs(tmp_path: Path) -> Callable[..., tuple[Path, Path]]:
    def make(rate1: float, rate2: float, **kwargs: Any) -> tuple[Path, Path]:
        base_kwargs = {k[5:]: v for k, v in kwargs.items() if k.startswith("base_")}
        cand_kwargs = {k[5:]: v for k, v in kwargs.items() if k.startswith("cand_")}
        common = {k: v for k, v in kwargs.items() if not k.startswith(("base_", "cand_"))}
        return (
            run_file(tmp_path / "base.jsonl", rate1, seed=1, **{**common, **base_kwargs}),
            run_file(tmp_path / "cand.jsonl", rate2, seed=2, **{**common, **cand_kwargs}),
        )

    return make


def test_better_passes(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.4, 0.9)
    r = evaldelta("gate", base, cand)
    assert r.code == 0, r.err
    assert r.err.startswith("evaldelta gate: pass: Better. The candidate scores higher")
    assert "Verdict: Better." in r.out


def test_worse_blocks(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.9, 0.4)
    r = evaldelta("gate", base, cand)
    assert r.code == 1
    assert r.err.startswith("evaldelta gate: block: Worse. The candidate scores lower")


def test_inconclusive_passes_with_a_warning_or_blocks_on_request(
    evaldelta: Cli, runs: Runs
) -> None:
    base, cand = runs(0.7, 0.7, n=40)
    r = evaldelta("gate", base, cand)
    assert r.code == 0
    assert r.err.startswith(
        "evaldelta gate: pass, with a warning: Inconclusive. This could be chance"
    )
    r = evaldelta("gate", base, cand, "--block-inconclusive")
    assert r.code == 1
    assert r.err.startswith("evaldelta gate: block (--block-inconclusive): Inconclusive.")


def test_trade_off_passes_with_a_warning(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.4, 0.9, base_latency=1000.0, cand_latency=1500.0)
    r = evaldelta("gate", base, cand)
    assert r.code == 0
    assert "pass, with a warning: Trade-off." in r.err
    assert "+50% slower" in r.err
    # A looser tolerance makes the same slowdown acceptable.
    r = evaldelta("gate", base, cand, "--max-slowdown", "0.6")
    assert r.err.startswith("evaldelta gate: pass: Better.")


def test_new_safety_failure_blocks(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.4, seed=1)
    cand = run_file(tmp_path / "c.jsonl", 0.9, seed=2, extra=lambda i: {"safety_failure": i == 7})
    r = evaldelta("gate", base, cand)
    assert r.code == 1
    assert "block: Worse. 1 new safety failure in the candidate (q007)." in r.err


def test_min_pass_rate(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.4, 0.9)
    r = evaldelta("gate", base, cand, "--min-pass-rate", "0.95")
    assert r.code == 1
    assert "is under --min-pass-rate 95.0%" in r.err
    assert evaldelta("gate", base, cand, "--min-pass-rate", "0.5").code == 0


def test_different_datasets_cannot_be_judged(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.5, n=100, seed=1)
    cand = run_file(tmp_path / "c.jsonl", 0.5, n=110, seed=2)
    r = evaldelta("gate", base, cand)
    assert r.code == 2
    assert (
        "cannot judge: the runs have different datasets (10 only in the candidate: q100, q101, "
        "q102, q103, q104 and 5 more; dataset hash " in r.err
    )
    assert (
        "a gate judges the 100 unchanged common cases only with --allow-dataset-change; "
        "or compare runs of the same dataset" in r.err
    )
    r = evaldelta("gate", base, cand, "--allow-dataset-change")
    assert r.code == 0
    assert (
        "Warning: the datasets differ (10 only in the candidate: q100, q101, q102, q103, q104 "
        "and 5 more): compared the 100" in r.out
    )
    assert "(datasets differ: on the 100 common cases)" in r.out


def test_edited_inputs_are_a_different_dataset(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.5, seed=1)
    cand = run_file(
        tmp_path / "c.jsonl", 0.5, seed=1, extra=lambda i: {"input": "edited"} if i < 3 else {}
    )
    r = evaldelta("gate", base, cand)
    assert r.code == 2
    assert "3 with a changed input" in r.err


def test_interrupted_run_cannot_be_judged(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.5, seed=1)
    cand = run_file(
        tmp_path / "c.jsonl", 0.5, seed=2, extra=lambda i: {"run_status": "interrupted"}
    )
    r = evaldelta("gate", base, cand)
    assert r.code == 2
    assert f"the candidate run ({cand}) declares itself interrupted" in r.err


def test_infrastructure_failures(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.5, seed=1)
    many = run_file(
        tmp_path / "many.jsonl",
        0.5,
        seed=2,
        extra=lambda i: (
            {"error": "429 rate limited", "error_kind": "infra", "score": None}
            if i % 5 == 0
            else {}
        ),
    )
    r = evaldelta("gate", base, many)
    assert r.code == 2
    assert "20% of the candidate's attempts (40 of 200) failed for infrastructure reasons" in r.err
    few = run_file(
        tmp_path / "few.jsonl",
        0.5,
        seed=2,
        extra=lambda i: (
            {"error": "timeout", "error_kind": "infra", "score": None} if i < 10 else {}
        ),
    )
    r = evaldelta("gate", base, few)
    assert r.code == 0
    assert "10 of the candidate's 200 attempts failed for infrastructure reasons" in r.out
    data = json.loads(evaldelta("gate", base, few, "--json").out)
    # Infrastructure failures are left out of scores, not counted as task failures.
    assert data["summary"]["matched"] == 190


def test_sample(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.4, 0.9)
    data = json.loads(evaldelta("gate", base, cand, "--sample", "50", "--json").out)
    assert data["summary"]["matched"] == 50
    again = json.loads(evaldelta("gate", base, cand, "--sample", "50", "--json").out)
    assert [m["test_id"] for m in data["matched"]] == [m["test_id"] for m in again["matched"]]
    other = json.loads(evaldelta("gate", base, cand, "--sample", "50", "--seed", "7", "--json").out)
    assert [m["test_id"] for m in data["matched"]] != [m["test_id"] for m in other["matched"]]


def test_report_and_step_summary(evaldelta: Cli, runs: Runs, tmp_path: Path) -> None:
    base, cand = runs(0.4, 0.9)
    report = tmp_path / "report.md"
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    r = evaldelta("gate", base, cand, "--report", report, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.code == 0
    md = report.read_text()
    assert md.startswith(f"## evaldelta: Better ({base} → {cand})")
    assert "**Gate: pass** (exit code 0)." in md
    assert "| Mean score |" in md
    assert "<details><summary>Per-case changes:" in md
    assert summary.read_text() == "# earlier step\n" + md + "\n"


def test_json_carries_the_gate_and_every_figure(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.4, 0.9, latency=800.0)
    data = json.loads(evaldelta("gate", base, cand, "--json").out)
    assert data["gate"] == {
        "exit_code": 0,
        "result": "pass",
        "reason": data["gate"]["reason"],
        "scorer_regressions": [],
    }
    assert data["verdict"]["verdict"] == "Better"
    delta = data["statistics"]["mean_score"]["delta"]
    assert (delta["method"], delta["resamples"], delta["seed"], delta["level"]) == (
        "bootstrap",
        10000,
        0,
        0.95,
    )
    assert data["statistics"]["mean_score"]["delta_normal"]["method"] == "normal"
    assert data["statistics"]["mcnemar"]["method"] == "exact McNemar, two-sided"
    assert data["statistics"]["metrics"][0]["name"] == "latency_ms"
    assert data["settings"]["resamples"] == 10000


def test_warnings(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(
        tmp_path / "b.jsonl",
        0.5,
        seed=1,
        extra=lambda i: {
            "timestamp": "2026-11-01T10:00:00Z",
            "config": {"model": "gpt-4.1", "prompt": "v1", "temperature": 0},
        },
    )
    cand = run_file(
        tmp_path / "c.jsonl",
        0.5,
        seed=2,
        extra=lambda i: {
            "timestamp": "2026-11-03T10:00:00Z",
            "config": {"model": "gpt-5-mini", "prompt": "v2", "temperature": 0},
        },
    )
    r = evaldelta("compare", base, cand)
    assert "Differs in:   model, prompt" in r.out
    assert "Warning: the runs started 48 hours apart" in r.out
    assert "Warning: 2 settings differ (model, prompt)" in r.out


def test_attempts_differ_warning(evaldelta: Cli, tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "one.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(20)])
    three = write_jsonl(
        tmp_path / "three.jsonl",
        [{"test_id": f"q{i}", "score": 1} for i in range(20) for _ in range(3)],
    )
    r = evaldelta("compare", one, three)
    assert "Warning: the baseline has 1 attempt per case, the candidate 3" in r.out
    r = evaldelta("compare", one, one)
    assert "Warning: every common case scored the same in both runs" in r.out


def test_usage_errors(evaldelta: Cli, runs: Runs) -> None:
    base, _ = runs(0.5, 0.5)
    r = evaldelta("gate", base)
    assert r.code == 2
    assert "one combined file: give --baseline TARGET (every other target is gated" in r.err
    r = evaldelta("gate", base, base, "--min-pass-rate", "85")
    assert (r.code, "must be between 0 and 1" in r.err) == (2, True)
    r = evaldelta("gate", base, base, "--confidence", "95")
    assert (r.code, "--confidence must be between 0 and 1" in r.err) == (2, True)
    r = evaldelta("gate", base, base, "--sample", "0")
    assert (r.code, "--sample must be at least 1" in r.err) == (2, True)


def test_cluster_by_a_field(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.5, seed=1, extra=lambda i: {"doc": f"d{i // 10}"})
    cand = run_file(tmp_path / "c.jsonl", 0.6, seed=2, extra=lambda i: {"doc": f"d{i // 10}"})
    data = json.loads(evaldelta("compare", base, cand, "--cluster-by", "doc", "--json").out)
    delta = data["statistics"]["mean_score"]["delta"]
    # 20 documents: Student's t over their means (the cluster bootstrap from 50 on).
    assert (delta["method"], delta["units"], delta["n"]) == ("t", "clusters", 20)
    assert data["statistics"]["mean_score"]["delta_normal"]["method"] == "normal-cluster"
    r = evaldelta("compare", base, cand, "--cluster-by", "nothing")
    assert r.code == 2
    assert "has a 'nothing' field to cluster by" in r.err


# -- a scorer's significant drop (issue 13) ----------------------------------------------


def test_store_ci_gate_warns_about_a_scorer_drop(evaldelta: Cli) -> None:
    """The overall score is Inconclusive, but factual's interval lies wholly below zero:
    the gate passes and names it."""
    r = evaldelta("gate", "monday.jsonl", "tuesday.jsonl", cwd=STORE_CI)
    assert r.code == 0, r.err
    assert f"evaldelta gate: warning: {FACTUAL}\n" in r.err
    assert "exact dropped" not in r.err  # +4.0 points: a rise is no warning
    assert r.err.rstrip().splitlines()[-1].startswith("evaldelta gate: pass, with a warning:")


def test_store_ci_gate_blocks_on_a_scorer_drop(evaldelta: Cli) -> None:
    r = evaldelta(
        "gate", "monday.jsonl", "tuesday.jsonl", "--block-scorer-regression", cwd=STORE_CI
    )
    assert r.code == 1
    assert r.err.strip() == f"evaldelta gate: block (--block-scorer-regression): {FACTUAL}"


def test_scorer_regressions_in_the_json_gate(evaldelta: Cli) -> None:
    args = ("gate", "monday.jsonl", "tuesday.jsonl", "--format", "json")
    gate = json.loads(evaldelta(*args, cwd=STORE_CI).out)["gate"]
    assert gate["result"] == "pass"
    (dropped,) = gate["scorer_regressions"]
    assert dropped["scorer"] == "factual"
    delta = dropped["delta"]
    # Student's t on 10 cases (scipy.stats.t.interval(0.95, 9, -0.1, sem) agrees).
    assert (delta["estimate"], delta["ci_low"], delta["ci_high"]) == (
        -0.1,
        -0.163088549062,
        -0.036911450938,
    )
    assert (delta["method"], delta["n"]) == ("t", 10)
    assert delta["level"] == 0.95
    blocked = json.loads(evaldelta(*args, "--block-scorer-regression", cwd=STORE_CI).out)
    assert blocked["gate"]["exit_code"] == 1
    assert blocked["gate"]["reason"] == f"block (--block-scorer-regression): {FACTUAL}"


def test_no_scorer_regression_no_warning(evaldelta: Cli, runs: Runs) -> None:
    base, cand = runs(0.5, 0.5)
    r = evaldelta("gate", base, cand, "--block-scorer-regression", "--format", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["gate"]["scorer_regressions"] == []
    assert "warning: scorer" not in r.err


def test_the_markdown_says_why_the_gate_blocked(evaldelta: Cli) -> None:
    store_ci = REPO / "examples" / "store-ci"
    r = evaldelta(
        "gate", store_ci / "monday.jsonl", store_ci / "tuesday.jsonl",
        "--block-scorer-regression", "--format", "markdown",
    )  # fmt: skip
    assert r.code == 1
    assert (
        "**Gate: block** (exit code 1). block (--block-scorer-regression): scorer factual "
        "dropped: -10.0 points, 95% CI \\[-16.3, -3.7\\]" in r.out
    )


# -- small samples, No change, clusters, the deciding metric (issue 14) ------------------


def test_a_file_against_itself_is_no_change_and_passes(evaldelta: Cli, tmp_path: Path) -> None:
    base = run_file(tmp_path / "b.jsonl", 0.5, seed=1)
    r = evaldelta("gate", base, base, "--block-inconclusive")
    assert r.code == 0, r.err
    assert r.err.strip().splitlines()[-1] == (
        "evaldelta gate: pass: No change. No case changed: all 200 cases scored the same in "
        "both runs and passed alike, so the change is within +/-1.0 points."
    )
    data = json.loads(evaldelta("gate", base, base, "--json").out)
    assert (data["verdict"]["verdict"], data["verdict"]["code"]) == ("No change", "no_change")
    md = evaldelta("gate", base, base, "--format", "markdown").out
    assert md.startswith("## evaldelta: No change (")


def test_three_clusters_are_too_few_and_say_so(evaldelta: Cli, tmp_path: Path) -> None:
    doc = {"extra": lambda i: {"doc": f"d{i % 3}"}}
    base = run_file(tmp_path / "b.jsonl", 0.3, seed=1, **doc)
    cand = run_file(tmp_path / "c.jsonl", 0.9, seed=2, **doc)
    r = evaldelta("compare", base, cand, "--cluster-by", "doc")
    warning = (
        "Warning: only 3 clusters of doc: too few for a clustered interval (10 or more are "
        "needed), so Better or Worse also needs the exact sign-flip test over the 3 cluster "
        "totals, which cannot find p < 0.05 with fewer than 6 clusters; compare more "
        "clusters, or drop --cluster-by if the cases are independent"
    )
    assert warning in r.out
    assert "(Student's t, 3 clusters)" in r.out
    # +60 points on every document, yet three documents cannot prove it.
    assert "Verdict: Inconclusive. Too few clusters to tell (3):" in r.out
    assert "exact sign-flip test over the clusters finds p = 0.25" in r.out
    assert (
        json.loads(evaldelta("compare", base, cand, "--cluster-by", "doc", "--json").out)[
            "statistics"
        ]["clusters"]
        == 3
    )


def test_the_metric_that_decides(evaldelta: Cli, tmp_path: Path) -> None:
    """Scores equal, `passed` flags from none to all: the score says No change and names
    the pass rates; --metric pass_rate judges by them."""
    base = write_jsonl(
        tmp_path / "b.jsonl",
        [{"test_id": f"q{i}", "score": 0.5, "passed": False} for i in range(20)],
    )
    cand = write_jsonl(
        tmp_path / "c.jsonl",
        [{"test_id": f"q{i}", "score": 0.5, "passed": True} for i in range(20)],
    )
    r = evaldelta("gate", base, cand)
    assert r.code == 0
    assert r.err.strip() == (
        "evaldelta gate: pass: No change. No case's score changed, so the change is within "
        "+/-1.0 points. Pass rates moved up, though: 0.0% -> 100.0% (McNemar: 20 improved, "
        "0 regressed, p < 0.001); judge by them with --metric pass_rate."
    )
    by_rate = evaldelta("gate", base, cand, "--metric", "pass_rate")
    assert by_rate.code == 0
    assert by_rate.err.strip() == (
        "evaldelta gate: pass: Better. The candidate passes more often: every case's pass "
        "rate changed by exactly +100.0 points, and an exact sign-flip test over the 20 cases "
        "finds p < 0.001."
    )
    worse = evaldelta("gate", cand, base, "--metric", "pass_rate")
    assert worse.code == 1
    assert "block: Worse. The candidate passes less often" in worse.err
