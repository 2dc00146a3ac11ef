"""Statistics -> one verdict: the figures of a paired comparison, the fairness checks
that come before them, and Better / Worse / Trade-off / No change / Inconclusive; taken
case by case, the anytime-valid confidence sequence."""

from __future__ import annotations

from evaldelta.analysis._analyze import Analysis, analyze
from evaldelta.analysis._fairness import DatasetCheck, Problem
from evaldelta.analysis._figures import Figures
from evaldelta.analysis._sequential import SequentialFigures
from evaldelta.analysis._settings import Settings
from evaldelta.analysis._verdict import Verdict

__all__ = [
    "Analysis",
    "DatasetCheck",
    "Figures",
    "Problem",
    "SequentialFigures",
    "Settings",
    "Verdict",
    "analyze",
]
