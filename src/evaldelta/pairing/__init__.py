"""Pairing cases across runs, deltas, win/loss/tie, and the N-way matrix: pure functions.

(Named ``pairing`` rather than ``compare`` so that it never shadows the
``evaldelta.compare()`` function.)
"""

from __future__ import annotations

from evaldelta.pairing._cases import CaseMatrix, Cases, case_matrix, cases
from evaldelta.pairing._matrix import MatrixPairing, build_matrix
from evaldelta.pairing._pairwise import (
    DEFAULT_THRESHOLD,
    TOLERANCE,
    MatchedCase,
    Pairing,
    Summary,
    classify,
    compare_cases,
    pair,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "TOLERANCE",
    "CaseMatrix",
    "Cases",
    "MatchedCase",
    "MatrixPairing",
    "Pairing",
    "Summary",
    "build_matrix",
    "case_matrix",
    "cases",
    "classify",
    "compare_cases",
    "pair",
]
