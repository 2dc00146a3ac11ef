"""Edge cases of a verdict and of what it is made from: tiny samples, safety failures
anywhere, infrastructure statuses, sampling, canonical inputs, edited datasets, lenient
run metadata, float noise at thresholds, costs from nothing, waits and runs that ran
nothing. Each was once a wrong verdict or a silent mistake."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from evaldelta.analysis import Settings
from evaldelta.api import compare
from evaldelta.model import Record, Run
from tests.conftest import Result, run_evaldelta, write_jsonl

Cli = Callable[..., Result]


def runs(base: list[float], cand: list[float]) -> tuple[Run, Run]:
    ids = [f"q{i}" for i in range(len(base))]
    return (
        Run.from_columns(source="a", format="t", test_id=ids, score=base),
        Run.from_columns(source="b", format="t", test_id=ids, score=cand),
    )


def verdict(base: list[float], cand: list[float]) -> str:
    c = compare(*runs(base, cand))
    return c.verdict.kind


def test_one_case_is_never_enough() -> None:
    assert verdict([0.2], [0.9]) == "Inconclusive"
    c = compare(*runs([0.2], [0.9]))
    assert "Too few cases to tell (1)" in c.verdict.reason


def test_three_flips_are_not_proof() -> None:
    assert verdict([1, 1, 1], [0, 0, 0]) == "Inconclusive"  # sign-flip p = 0.25
    assert verdict([1] * 8, [0] * 8) == "Worse"  # p = 2/256


@pytest.mark.slow
@pytest.mark.parametrize("n", [3, 5, 10, 20])
def test_small_samples_are_calibrated(n: int) -> None:
    rng = np.random.default_rng(n)
    settings = Settings(resamples=1000)
    ids = [f"q{i}" for i in range(n)]
    called = 0
    sims = 600
    for _ in range(sims):
        p = rng.random(n)
        a = np.clip(p + rng.normal(0, 0.2, n), 0, 1)
        b = np.clip(p + rng.normal(0, 0.2, n), 0, 1)
        c = compare(
            Run.from_columns(source="a", format="t", test_id=ids, score=a.tolist()),
            Run.from_columns(source="b", format="t", test_id=ids, score=b.tolist()),
            settings=settings,
        )
        called += c.verdict.kind in ("Better", "Worse")
    assert called / sims <= 0.07, called / sims


def test_new_safety_failures_anywhere_count(evaldelta: Cli, tmp_path: Path) -> None:
    base = [{"test_id": f"q{i}", "score": 0.0} for i in range(40)]
    cand = [{"test_id": f"q{i}", "score": 1.0} for i in range(40)]
    base[5] = {"test_id": "q5", "error": "timeout", "error_kind": "infra"}
    cand[5] = {"test_id": "q5", "score": 1.0, "safety_failure": True}
    b = write_jsonl(tmp_path / "b.jsonl", base)
    c = write_jsonl(tmp_path / "c.jsonl", cand)
    r = evaldelta("gate", b, c)
    assert r.code == 1
    assert "1 new safety failure in the candidate (q5)" in r.err
    extra = write_jsonl(
        tmp_path / "x.jsonl",
        [*cand[:5], *cand[6:], {"test_id": "new", "score": 1, "safety_failure": 1}],
    )
    r = evaldelta("gate", b, extra, "--allow-dataset-change")
    assert (r.code, "(new)" in r.err) == (1, True)
    r = evaldelta("gate", b, c, "--sample", "3")
    assert r.code == 1  # outside the sample, and still blocks


def test_infra_statuses_are_infra(evaldelta: Cli, tmp_path: Path) -> None:
    base = write_jsonl(tmp_path / "b.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(40)])
    cand = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"test_id": f"q{i}", "score": 1}
            if i >= 6
            else {"test_id": f"q{i}", "execution_status": "timeout"}
            for i in range(40)
        ],
    )
    r = evaldelta("gate", base, cand)
    assert r.code == 2
    assert "15% of the candidate's attempts (6 of 40) failed for infrastructure reasons" in r.err


def test_sample_cannot_hide_missing_cases(evaldelta: Cli, tmp_path: Path) -> None:
    base = write_jsonl(tmp_path / "b.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(200)])
    cand = write_jsonl(tmp_path / "c.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(150)])
    assert evaldelta("gate", base, cand, "--sample", "50").code == 2


def test_inputs_compare_in_canonical_form(evaldelta: Cli, tmp_path: Path) -> None:
    rows_a = [
        f'{{"test_id": "q{i}", "score": 1, "input": {{"question": "q{i}", "ctx": "x"}}}}'
        for i in range(20)
    ]
    rows_b = [
        f'{{"test_id":"q{i}","score":1,"input":{{"ctx":"x","question":"q{i}"}}}}' for i in range(20)
    ]
    a = write_jsonl(tmp_path / "a.jsonl", rows_a)
    b = write_jsonl(tmp_path / "b.jsonl", rows_b)
    assert evaldelta("gate", a, b).code == 0


def test_allow_dataset_change_leaves_out_edited_cases(evaldelta: Cli, tmp_path: Path) -> None:
    a = write_jsonl(
        tmp_path / "a.jsonl",
        [{"test_id": f"q{i}", "score": 1, "input": f"q{i}"} for i in range(20)],
    )
    b = write_jsonl(
        tmp_path / "b.jsonl",
        [
            {"test_id": f"q{i}", "score": 1, "input": "edited" if i < 3 else f"q{i}"}
            for i in range(20)
        ],
    )
    refused = evaldelta("gate", a, b)
    assert refused.code == 2
    assert "a gate judges the 17 unchanged common cases only with --allow-dataset-change" in (
        refused.err
    )
    data = json.loads(evaldelta("gate", a, b, "--allow-dataset-change", "--json").out)
    assert data["summary"]["matched"] == 17
    r = evaldelta("compare", a, b, "--allow-dataset-change")
    assert "compared the 17 common cases, left out 3" in r.out


def test_lenient_run_metadata(evaldelta: Cli, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "r.jsonl",
        [
            {
                "test_id": "a",
                "score": 1,
                "timestamp": 1700000000,
                "config": "gpt-4",
                "safety_failure": 0,
            },
            {"test_id": "b", "score": 1, "timestamp": 1700000000123, "safety_failure": "false"},
        ],
    )
    r = evaldelta("compare", path, path)
    assert r.code == 0, r.err


def test_min_pass_rate_ignores_float_noise(evaldelta: Cli, tmp_path: Path) -> None:
    base = write_jsonl(
        tmp_path / "b.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(5) for _ in range(3)]
    )
    passes = [1, 2, 2, 2, 2]
    cand = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"test_id": f"q{i}", "score": 1 if k < passes[i] else 0}
            for i in range(5)
            for k in range(3)
        ],
    )
    r = evaldelta("gate", base, cand, "--min-pass-rate", "0.6")
    assert "under --min-pass-rate" not in r.err


def test_cost_from_nothing_is_a_trade_off() -> None:
    ids = [f"q{i}" for i in range(60)]
    base = Run.from_columns(
        source="a", format="t", test_id=ids, score=[0.0] * 60, cost_usd=[0.0] * 60
    )
    cand = Run.from_columns(
        source="b", format="t", test_id=ids, score=[1.0] * 60, cost_usd=[0.1] * 60
    )
    v = compare(base, cand).verdict
    assert v.kind == "Trade-off"
    assert "costlier (from nothing" in v.reason


def test_unwritable_step_summary_does_not_change_the_exit_code(
    evaldelta: Cli, tmp_path: Path
) -> None:
    base = write_jsonl(tmp_path / "b.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(40)])
    r = evaldelta(
        "gate", base, base, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no" / "such" / "file")}
    )
    assert r.code == 0
    assert "cannot append to GITHUB_STEP_SUMMARY" in r.err


def test_waits_longer_than_the_attempt_count_as_no_work() -> None:
    run = Run.from_records([Record("a", 1, latency_ms=100, wait_ms=300)])
    c = compare(run, run)
    assert c.left.latency_ms.tolist() == [0.0]


def test_nothing_ran_prints_no_nan(tmp_path: Path) -> None:
    rows = [{"test_id": f"q{i}", "error": "429", "error_kind": "infra"} for i in range(3)]
    path = write_jsonl(tmp_path / "r.jsonl", rows)
    r = run_evaldelta("compare", path, path)
    import re

    assert not re.search(r"\bnan\b", r.out)
    md = run_evaldelta("gate", path, path, "--format", "markdown")
    assert not re.search(r"\bnan\b", md.out)
