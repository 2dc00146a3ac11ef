"""Runs and results as pandas DataFrames (``to_pandas()``), and the message without pandas."""

from __future__ import annotations

import math
import sys

import numpy as np
import pandas as pd
import pytest

import evaldelta
from evaldelta.errors import EvalDeltaError, MissingDependencyError
from evaldelta.model import Record, Run
from tests.conftest import FIXTURES


def _run() -> Run:
    return Run.from_records(
        [
            Record(
                "a",
                0.9,
                target="m",
                scores={"exact": 1.0},
                passed=True,
                latency_ms=120.0,
                category="math",
                tags=("x", "y"),
                input="2+2?",
                output="4",
            ),
            Record(
                "a", 0.0, target="m", attempt=2, error="timeout", error_kind="infra", input="2+2?"
            ),
            Record("b", 0.4, target="m", scores={"exact": 0.0}, passed=False, cost_usd=0.01),
        ],
        source="r.jsonl",
    )


def _values(column: pd.Series) -> list[object]:
    """The column's values, a missing one as None (pandas 3 keeps text as ``str``, NaN
    where missing)."""
    return [
        None if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) else v
        for v in column.tolist()
    ]


def test_a_run_is_one_row_per_record() -> None:
    df = _run().to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == [
        "test_id",
        "target",
        "attempt",
        "score",
        "passed",
        "latency_ms",
        "wait_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "error",
        "error_kind",
        "safety_failure",
        "category",
        "tags",
        "scores.exact",
        "input",
        "output",
        "expected",
        "metadata",
    ]
    assert df["test_id"].tolist() == ["a", "a", "b"]
    assert df["attempt"].tolist() == [1, 2, 1]
    assert df["score"].tolist() == [0.9, 0.0, 0.4]
    assert str(df["passed"].dtype) == "boolean"
    assert df["passed"].tolist() == [True, pd.NA, False]
    assert _values(df["error"]) == [None, "timeout", None]
    assert _values(df["error_kind"]) == [None, "infra", None]
    assert _values(df["category"]) == ["math", None, None]
    assert _values(df["tags"]) == [("x", "y"), None, None]
    assert df["latency_ms"].isna().tolist() == [False, True, True]
    assert df["scores.exact"].tolist()[::2] == [1.0, 0.0]
    assert np.isnan(df["scores.exact"][1])
    assert _values(df["input"]) == ["2+2?", "2+2?", None]


def test_a_loaded_file_keeps_its_lines() -> None:
    df = evaldelta.load(FIXTURES / "baseline.jsonl").to_pandas()
    assert len(df) == 3
    assert df["line"].tolist() == [1, 2, 3]


def test_a_comparison_is_one_row_per_matched_case() -> None:
    base = evaldelta.load(FIXTURES / "baseline.jsonl")
    cand = evaldelta.load(FIXTURES / "candidate.jsonl")
    c = evaldelta.compare(base, cand)
    df = c.to_pandas()
    assert df["test_id"].tolist() == c.test_ids
    assert df["baseline_score"].tolist() == c.score1.tolist()
    assert df["candidate_score"].tolist() == c.score2.tolist()
    assert df["delta"].tolist() == c.delta.tolist()
    assert df["outcome"].tolist() == [m.outcome for m in c.matched()]
    assert df["baseline_pass_rate"].tolist() == c.left.pass_rate.tolist()
    assert "category" not in df.columns  # neither run has categories
    assert {"baseline_latency_ms", "candidate_cost_usd", "candidate_safety_failure"} <= set(
        df.columns
    )


def test_a_comparison_names_each_case_category_and_scorers() -> None:
    base = Run.from_records(
        [
            Record("q1", 0.2, category="math", scores={"judge": 0.2}),
            Record("q2", 1.0, scores={"judge": 1.0}),
            Record("q3", 0.5, category="code", scores={"judge": 0.5}),
        ]
    )
    cand = Run.from_records(
        [
            Record("q3", 0.5, category="code", scores={"judge": 0.6}),
            Record("q2", 0.0, category="chat", scores={"judge": 0.0}),
            Record("q1", 0.9, scores={"judge": 0.9}),
        ]
    )
    df = cand.compare(base).to_pandas()
    assert df.columns[:2].tolist() == ["test_id", "category"]
    # The baseline's category, else the candidate's; in the baseline's order.
    assert df["category"].tolist() == ["math", "chat", "code"]
    assert df["outcome"].tolist() == ["win", "loss", "tie"]
    assert df["candidate_scores.judge"].tolist() == [0.9, 0.0, 0.6]
    # Without statistics (pairing only) there are no categories to name.
    assert "category" not in evaldelta.pairing.pair(base, cand).to_pandas().columns


def test_a_matrix_is_one_row_per_test_id() -> None:
    m = evaldelta.compare_matrix(evaldelta.load(FIXTURES / "combined-results.jsonl"))
    df = m.to_pandas()
    assert df.index.name == "test_id"
    assert df.index.tolist() == m.test_ids
    assert df.columns.tolist() == m.targets
    assert df.to_numpy().tolist() == m.scores.tolist()


@pytest.mark.parametrize("what", ["run", "comparison", "matrix"])
def test_without_pandas_the_error_says_how_to_install_it(
    what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = evaldelta.load(FIXTURES / "combined-results.jsonl")
    result = {
        "run": run,
        "comparison": evaldelta.compare(
            run, run, baseline_target="gpt-4.1", candidate_target="gpt-5-mini"
        ),
        "matrix": evaldelta.compare_matrix(run),
    }[what]
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now fails
    with pytest.raises(MissingDependencyError) as err:
        result.to_pandas()
    method = {"run": "Run", "comparison": "Comparison", "matrix": "MatrixComparison"}[what]
    assert str(err.value) == (
        f"{method}.to_pandas() needs pandas, which is not installed; install it with "
        "pip install 'evaldelta[pandas]'"
    )
    assert isinstance(err.value, EvalDeltaError)
    assert isinstance(err.value.__cause__, ImportError)
