"""The one result type: a pairing and its analysis, with the pairing's attributes."""

from __future__ import annotations

from pathlib import Path

import evaldelta
from evaldelta.analysis import Analysis
from evaldelta.analysis._comparison import Comparison, MatrixComparison
from evaldelta.api import compare, compare_matrix
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.pairing import MatrixPairing, Pairing, pair
from tests.conftest import FIXTURES


def test_compare_returns_a_pairing_and_its_analysis() -> None:
    c = compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl")
    assert isinstance(c, Comparison)
    assert isinstance(c.pairing, Pairing)
    assert isinstance(c.analysis, Analysis)
    assert c.verdict is c.analysis.verdict
    assert c.figures is c.analysis.figures
    assert c.settings is c.analysis.settings
    assert c.problems == c.analysis.problems
    assert c.test_ids == c.pairing.test_ids
    assert c.summary == c.pairing.summary
    assert c.matched() == c.pairing.matched()


def test_to_dict_is_the_pairing_with_the_analysis_before_its_summary() -> None:
    c = compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl")
    plain = pair(load(FIXTURES / "baseline.jsonl"), load(FIXTURES / "candidate.jsonl")).to_dict()
    data = c.to_dict()
    assert list(data) == [*list(plain)[:-1], *c.analysis.to_dict(), "summary"]
    assert {k: data[k] for k in plain} == plain


def test_regressed_is_the_mean_delta_not_the_verdict() -> None:
    ids = [f"q{i}" for i in range(3)]
    base = Run.from_columns(source="a", format="t", test_id=ids, score=[1.0, 1.0, 1.0])
    cand = Run.from_columns(source="b", format="t", test_id=ids, score=[0.9, 1.0, 1.0])
    c = compare(base, cand)
    assert c.regressed  # the mean delta is below 0 ...
    assert c.verdict.kind != "Worse"  # ... but three cases prove nothing


def test_matrix_holds_a_comparison_per_pair() -> None:
    recs = [Record(f"q{i}", float(i % 2), target=t) for t in ("a", "b", "c") for i in range(6)]
    m = compare_matrix(Run.from_records(recs), baseline="a")
    assert isinstance(m, MatrixComparison)
    assert isinstance(m.pairing, MatrixPairing)
    assert all(isinstance(p, Comparison) for p in m.pairwise)
    assert m.targets == m.pairing.targets == ["a", "b", "c"]
    assert m.to_dict()["pairwise"] == [p.to_dict() for p in m.pairwise]


def test_the_result_types_are_exported() -> None:
    assert evaldelta.Comparison is Comparison
    assert evaldelta.MatrixComparison is MatrixComparison
    assert evaldelta.Analysis is Analysis
    assert evaldelta.Figures.__name__ == "Figures"
    assert evaldelta.Verdict.__name__ == "Verdict"


def test_repr_is_one_short_line(tmp_path: Path) -> None:
    """Not the generated repr, which printed every array (some 10 KB for 30 cases)."""
    before, after = tmp_path / "before.jsonl", tmp_path / "after.jsonl"
    before.write_text("".join(f'{{"test_id": "q{i}", "score": 0.5}}\n' for i in range(30)))
    after.write_text("".join(f'{{"test_id": "q{i}", "score": 0.6}}\n' for i in range(30)))
    c = compare(before, after)
    assert repr(c) == str(c)
    assert repr(c) == (
        f"Comparison(baseline={str(before)!r}, candidate={str(after)!r}, matched=30, "
        f"mean_delta=+0.100, verdict={c.verdict.kind!r})"
    )


def test_matrix_repr_is_one_short_line() -> None:
    recs = [Record(f"q{i}", float(i % 2), target=t) for t in ("a", "b", "c") for i in range(6)]
    m = compare_matrix(Run.from_records(recs), baseline="a")
    assert repr(m) == "MatrixComparison(targets=['a', 'b', 'c'], baseline='a', comparisons=2)"
    whole = compare_matrix(Run.from_records(recs))
    assert repr(whole) == (
        "MatrixComparison(targets=['a', 'b', 'c'], baseline=None, comparisons=3)"
    )
