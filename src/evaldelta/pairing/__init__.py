"""Pairing cases across runs (named ``pairing`` so it never shadows ``evaldelta.compare()``), deltas, win/loss/tie, and the N-way matrix: pure functions."""

from __future__ import annotations

from evaldelta.pairing.cases import CaseMatrix, Cases, case_matrix, cases
from evaldelta.pairing.matrix import MatrixComparison, compare_matrix
from evaldelta.pairing.pairwise import (
    DEFAULT_THRESHOLD,
    TOLERANCE,
    Comparison,
    MatchedCase,
    Summary,
    classify,
    compare,
    compare_cases,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "TOLERANCE",
    "CaseMatrix",
    "Cases",
    "Comparison",
    "MatchedCase",
    "MatrixComparison",
    "Summary",
    "case_matrix",
    "cases",
    "classify",
    "compare",
    "compare_cases",
    "compare_matrix",
]
