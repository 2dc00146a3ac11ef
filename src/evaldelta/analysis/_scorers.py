"""Per-scorer deltas of two runs, case by case: the plain regression check of
:func:`evaldelta.compare_runs`.

Each paired case's delta (``candidate - baseline``) on each scorer is *improved* when
it is above ``tolerance``, *regressed* when below ``-tolerance``, else *unchanged*;
a scorer *regresses* when its mean delta over the paired cases is below
``-regression_threshold``. Both comparisons allow 1e-9 of floating-point noise, so
that ``0.81 - 0.80`` is unchanged at a tolerance of 0.01 although it computes to
0.010000000000000009.

Cases are paired by test id (see :func:`evaldelta.pairing.compare_cases`), never by
position; cases in one run only are listed, not compared. There are no intervals and
no verdict here: :func:`evaldelta.compare` judges whether a change could be chance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from evaldelta._plain import dicts, fields_dict, picked
from evaldelta.analysis._settings import DEFAULT_REGRESSION_THRESHOLD, DEFAULT_TOLERANCE
from evaldelta.errors import PairingError, UsageError
from evaldelta.pairing._pairwise import TOLERANCE, clean

if TYPE_CHECKING:
    from evaldelta.model import FloatArray, IntArray
    from evaldelta.pairing._cases import Cases
    from evaldelta.pairing._pairwise import Pairing

__all__ = [
    "DEFAULT_REGRESSION_THRESHOLD",
    "DEFAULT_TOLERANCE",
    "OVERALL",
    "CaseDiff",
    "CostDelta",
    "Regression",
    "RunComparison",
    "ScoreDelta",
    "ScorerRegression",
    "ScorerSummary",
    "check_options",
    "compare_scorers",
    "scorer_names",
]

Change = Literal["improved", "regressed", "unchanged"]
IMPROVED, UNCHANGED, REGRESSED = 1, 0, -1
_CHANGE_NAMES: dict[int, Change] = {
    IMPROVED: "improved",
    UNCHANGED: "unchanged",
    REGRESSED: "regressed",
}

#: The scorer a run without named scorers is compared on: its overall score.
OVERALL = "score"


def _figure(x: float | None) -> float | None:
    return None if x is None else clean(x)


@dataclass(frozen=True, slots=True)
class ScoreDelta:
    """One scorer's scores of one case on each side, and how the case changed."""

    baseline: float
    candidate: float
    delta: float
    change: Change

    def to_dict(self) -> dict[str, Any]:
        return fields_dict(self, clean)


@dataclass(frozen=True, slots=True)
class CaseDiff:
    """One case present in both runs: its delta on each scorer both sides have for it."""

    test_id: str
    scorer_deltas: dict[str, ScoreDelta]

    def to_dict(self) -> dict[str, Any]:
        return {"test_id": self.test_id, "scorer_deltas": dicts(self.scorer_deltas)}


@dataclass(frozen=True, slots=True)
class ScorerSummary:
    """One scorer over the paired cases; ``mean_delta`` is ``None`` when no paired case
    has that scorer on both sides."""

    mean_delta: float | None
    improved_count: int
    regressed_count: int
    unchanged_count: int

    def to_dict(self) -> dict[str, Any]:
        return picked(self, "~mean_delta improved_count regressed_count unchanged_count", _figure)


@dataclass(frozen=True, slots=True)
class CostDelta:
    """Candidate minus baseline, per attempt, averaged over the paired cases that report
    the figure on both sides (latency excludes waits); ``None`` when none does."""

    latency_delta_ms: float | None
    token_in_delta: float | None
    token_out_delta: float | None
    cost_delta_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        spec = "~latency_delta_ms ~token_in_delta ~token_out_delta ~cost_delta_usd"
        return picked(self, spec, _figure)


@dataclass(frozen=True, slots=True)
class ScorerRegression:
    """Whether one scorer's mean delta is below ``-regression_threshold``."""

    mean_delta: float | None
    exceeds: bool

    def to_dict(self) -> dict[str, Any]:
        return {"mean_delta": _figure(self.mean_delta), "exceeds": self.exceeds}


@dataclass(frozen=True, slots=True)
class Regression:
    """``regressed`` when any scorer's mean delta is below ``-regression_threshold``."""

    regressed: bool
    details: dict[str, ScorerRegression]

    @property
    def scorers(self) -> list[str]:
        """The scorers that regressed, in the comparison's scorer order."""
        return [name for name, d in self.details.items() if d.exceeds]

    def to_dict(self) -> dict[str, Any]:
        return {"regressed": self.regressed, "details": dicts(self.details)}


@dataclass(frozen=True, slots=True)
class _CaseTable:
    """The paired cases by column: one row per case, one column per scorer."""

    test_ids: list[str]
    baseline: dict[str, FloatArray]
    candidate: dict[str, FloatArray]
    change: dict[str, IntArray]


@dataclass(frozen=True)
class RunComparison:
    """Two runs compared scorer by scorer, case by case (see the module docstring).

    ``case_diffs`` (one :class:`CaseDiff` per paired case, in the baseline's order) is
    built on first use, from the columns the figures were computed from.
    ``to_dict()`` is the spec's result shape in snake_case, with the cases in one run
    only and the warnings beside it.
    """

    baseline: str
    candidate: str
    tolerance: float
    regression_threshold: float
    scorers: list[str]
    scorer_summaries: dict[str, ScorerSummary]
    cost_delta: CostDelta
    total_cases_compared: int
    regression: Regression
    only_in_baseline: list[str] = field(default_factory=list)
    only_in_candidate: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _cases: _CaseTable | None = field(default=None, repr=False, compare=False)

    @cached_property
    def case_diffs(self) -> list[CaseDiff]:
        """Each paired case's deltas, per scorer present on both sides for it."""
        import numpy as np

        table = self._cases
        if table is None:
            return []
        columns = []
        for name in self.scorers:
            base, cand = table.baseline[name], table.candidate[name]
            both = (~(np.isnan(base) | np.isnan(cand))).tolist()
            columns.append(
                [
                    ScoreDelta(b, k, d, _CHANGE_NAMES[c]) if ok else None
                    for b, k, d, c, ok in zip(
                        base.tolist(),
                        cand.tolist(),
                        (cand - base).tolist(),
                        table.change[name].tolist(),
                        both,
                        strict=True,
                    )
                ]
            )
        names = self.scorers
        return [
            CaseDiff(tid, {n: d for n, d in zip(names, deltas, strict=True) if d is not None})
            for tid, deltas in zip(table.test_ids, zip(*columns, strict=True), strict=True)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            **picked(self, "baseline candidate tolerance regression_threshold"),
            "scorers": list(self.scorers),
            "case_diffs": [d.to_dict() for d in self.case_diffs],
            "scorer_summaries": dicts(self.scorer_summaries),
            "cost_delta": self.cost_delta.to_dict(),
            "total_cases_compared": self.total_cases_compared,
            "regression": self.regression.to_dict(),
            "only_in_baseline": list(self.only_in_baseline),
            "only_in_candidate": list(self.only_in_candidate),
            "not_run": list(self.not_run),
            "warnings": list(self.warnings),
        }


def check_options(tolerance: float, regression_threshold: float) -> None:
    """Both must be finite numbers >= 0; :class:`UsageError` naming the one that is not."""
    for name, value in (("tolerance", tolerance), ("regression_threshold", regression_threshold)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (ok and math.isfinite(value) and value >= 0):
            raise UsageError(f"{name} must be a number >= 0 (e.g. 0.05), got {value!r}")


def scorer_names(baseline: Cases, candidate: Cases) -> list[str]:
    """The scorers both sides have, in the baseline's order; a side without named
    scorers has one, :data:`OVERALL` (its overall score).

    Raises:
        PairingError: the two sides share no scorer.
    """
    base = list(baseline.scorers) or [OVERALL]
    cand = list(candidate.scorers) or [OVERALL]
    common = [name for name in base if name in cand]
    if not common:
        raise PairingError(
            f"{baseline.label} and {candidate.label} share no scorer (baseline: "
            f"{', '.join(base)}; candidate: {', '.join(cand)}); compare runs scored by the "
            "same scorers, or compare their overall scores with evaldelta.compare()"
        )
    return common


def _scores(cases: Cases, name: str) -> FloatArray:
    column = cases.scorers.get(name)
    if column is not None:
        return column
    if name == OVERALL:
        return cases.score
    raise PairingError(
        f"{cases.label}: no scorer named {name!r} (scorers present: "
        f"{', '.join(cases.scorers) or 'none'})"
    )


def _mean_delta(baseline: FloatArray, candidate: FloatArray) -> float | None:
    import numpy as np

    both = ~(np.isnan(baseline) | np.isnan(candidate))
    if not both.any():
        return None
    return float((candidate[both] - baseline[both]).mean())


def compare_scorers(
    c: Pairing,
    tolerance: float = DEFAULT_TOLERANCE,
    regression_threshold: float = DEFAULT_REGRESSION_THRESHOLD,
    *,
    scorers: Sequence[str] | None = None,
    warnings: Sequence[str] = (),
) -> RunComparison:
    """Compare the paired cases of ``c`` on each scorer (see the module docstring).

    Args:
        c: the paired cases, as :func:`evaldelta.pairing.compare_cases` returns them.
        tolerance: largest absolute delta of a case that counts as unchanged.
        regression_threshold: a scorer regresses when its mean delta is below minus this.
        scorers: the scorers to compare (default: those both sides have).
        warnings: warnings about the runs to pass on (interrupted runs, ...).

    Raises:
        UsageError: a negative or non-finite tolerance or threshold.
        PairingError: no case in common, or no scorer in common.
    """
    import numpy as np

    check_options(tolerance, regression_threshold)
    left, right = c.left, c.right
    n = len(c.test_ids)
    if n == 0:
        raise PairingError(
            f"{c.baseline} and {c.candidate} have no case in common that ran on both sides "
            f"({c.baseline_cases} and {c.candidate_cases} cases); compare runs of the same "
            "dataset"
        )
    names = list(scorers) if scorers is not None else scorer_names(left, right)

    baseline, candidate, change = {}, {}, {}
    summaries, details = {}, {}
    for name in names:
        b, k = _scores(left, name), _scores(right, name)
        delta = k - b
        both = ~(np.isnan(b) | np.isnan(k))
        improved = both & (delta > tolerance + TOLERANCE)
        regressed = both & (delta < -tolerance - TOLERANCE)
        codes = np.where(improved, IMPROVED, np.where(regressed, REGRESSED, UNCHANGED))
        mean = float(delta[both].mean()) if both.any() else None
        if mean is not None and abs(mean) < TOLERANCE:
            mean = 0.0
        baseline[name], candidate[name], change[name] = b, k, codes.astype(np.int64)
        summaries[name] = ScorerSummary(
            mean_delta=mean,
            improved_count=int(improved.sum()),
            regressed_count=int(regressed.sum()),
            unchanged_count=int((both & ~improved & ~regressed).sum()),
        )
        details[name] = ScorerRegression(
            mean_delta=mean,
            exceeds=mean is not None and mean < -regression_threshold - TOLERANCE,
        )

    notes = list(warnings)
    only_b, only_c = list(c.unmatched_baseline), list(c.unmatched_candidate)
    if only_b or only_c:
        notes.append(
            f"the runs hold different cases ({len(only_b)} only in the baseline, "
            f"{len(only_c)} only in the candidate): only the {n} cases in both are "
            "compared, which may mislead; compare runs of the same dataset"
        )
    if c.not_run:
        notes.append(
            f"{len(c.not_run)} cases in both runs failed to run on one side "
            "(infrastructure failures) and are left out"
        )
    return RunComparison(
        baseline=c.baseline,
        candidate=c.candidate,
        tolerance=tolerance,
        regression_threshold=regression_threshold,
        scorers=names,
        scorer_summaries=summaries,
        cost_delta=CostDelta(
            latency_delta_ms=_mean_delta(left.latency_ms, right.latency_ms),
            token_in_delta=_mean_delta(left.input_tokens, right.input_tokens),
            token_out_delta=_mean_delta(left.output_tokens, right.output_tokens),
            cost_delta_usd=_mean_delta(left.cost_usd, right.cost_usd),
        ),
        total_cases_compared=n,
        regression=Regression(regressed=any(d.exceeds for d in details.values()), details=details),
        only_in_baseline=only_b,
        only_in_candidate=only_c,
        not_run=list(c.not_run),
        warnings=notes,
        _cases=_CaseTable(list(c.test_ids), baseline, candidate, change),
    )
