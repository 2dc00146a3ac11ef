"""Pairwise comparison: match cases by test id, take deltas, count wins and losses.

``delta = candidate - baseline`` per case. A case is a *win* when
``delta >= threshold``, a *loss* when ``delta <= -threshold``, else a *tie*; the
comparisons allow 1e-9 of floating-point noise, so that ``0.95 - 0.85`` is a win
at a threshold of 0.1 although it computes to 0.0999999...
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any, Literal

from evaldelta.errors import UsageError
from evaldelta.model import Run
from evaldelta.pairing._cases import DEFAULT_PASS_THRESHOLD, Cases, cases

if TYPE_CHECKING:
    from evaldelta.model import FloatArray, IntArray

__all__ = [
    "TOLERANCE",
    "MatchedCase",
    "Pairing",
    "Summary",
    "classify",
    "compare_cases",
    "pair",
]

#: Floating-point noise allowed when comparing a delta with the threshold or zero.
TOLERANCE = 1e-9
DEFAULT_THRESHOLD = 0.1

WIN, TIE, LOSS = 1, 0, -1
Outcome = Literal["win", "tie", "loss"]
_OUTCOME_NAMES: dict[int, Outcome] = {WIN: "win", TIE: "tie", LOSS: "loss"}
Status = Literal["improved", "regressed", "neutral"]


def clean(x: float, digits: int = 12) -> float:
    """``x`` without floating-point noise past ``digits`` decimals (and no ``-0.0``)."""
    r = round(x, digits)
    return 0.0 if r == 0 else r


def clean_all(values: list[float], digits: int = 12) -> list[float]:
    """:func:`clean` of each value, each distinct value cleaned once (scores and deltas
    take few distinct values: this is what makes a JSON of 100,000 cases quick)."""
    cleaned = {v: clean(v, digits) for v in set(values)}
    return list(map(cleaned.__getitem__, values))


def classify(delta: float, threshold: float = DEFAULT_THRESHOLD) -> Outcome:
    """``win``, ``loss`` or ``tie`` for one case's delta (see the module docstring).

    A delta within 1e-9 of zero is always a tie, even at a threshold of 0.
    """
    if delta > TOLERANCE and delta >= threshold - TOLERANCE:
        return "win"
    if delta < -TOLERANCE and delta <= -threshold + TOLERANCE:
        return "loss"
    return "tie"


def classify_all(delta: FloatArray, threshold: float = DEFAULT_THRESHOLD) -> IntArray:
    """:func:`classify` of every delta at once, as codes: ``WIN``, ``TIE`` or ``LOSS``."""
    import numpy as np

    win = (delta > TOLERANCE) & (delta >= threshold - TOLERANCE)
    loss = (delta < -TOLERANCE) & (delta <= -threshold + TOLERANCE)
    out: IntArray = np.where(win, WIN, np.where(loss, LOSS, TIE)).astype(np.int64)
    return out


def status_of(mean_delta: float) -> Status:
    """``improved`` / ``regressed`` / ``neutral`` from a mean delta (0 within 1e-9)."""
    if mean_delta > 0:
        return "improved"
    if mean_delta < 0:
        return "regressed"
    return "neutral"


@dataclass(frozen=True, slots=True)
class MatchedCase:
    """One test id present in both runs."""

    test_id: str
    score1: float
    score2: float
    delta: float
    outcome: Outcome
    attempts1: int = 1
    attempts2: int = 1
    errors1: int = 0
    errors2: int = 0


@dataclass(frozen=True, slots=True)
class Summary:
    """Counts over the matched cases; ``mean_delta`` is 0 when within 1e-9 of it."""

    total: int
    matched: int
    wins: int
    losses: int
    ties: int
    mean_delta: float
    errors1: int = 0
    errors2: int = 0

    @property
    def status(self) -> Status:
        return status_of(self.mean_delta)


@dataclass(frozen=True)
class Pairing:
    """A candidate paired with a baseline, case by case: no statistics, no verdict.

    Columns (``test_ids``, ``score1``, ...) hold the matched cases in the
    baseline's order; ``left`` and ``right`` are the matched cases of each side with
    every per-case figure, aligned row by row. :func:`evaldelta.compare` adds the
    statistics and the verdict in a :class:`evaldelta.Comparison`. ``to_dict()`` is the
    specs' JSON shape (``matched``, ``unmatched``, ``summary``).
    """

    baseline: str
    candidate: str
    baseline_source: str
    candidate_source: str
    threshold: float
    test_ids: list[str]
    score1: FloatArray
    score2: FloatArray
    delta: FloatArray
    outcome: IntArray
    attempts1: IntArray
    attempts2: IntArray
    errors1: IntArray
    errors2: IntArray
    unmatched_baseline: list[str]
    unmatched_candidate: list[str]
    baseline_cases: int
    candidate_cases: int
    baseline_errors: int
    candidate_errors: int
    left: Cases
    right: Cases
    not_run: list[str] = field(default_factory=list)
    baseline_infra: int = 0
    candidate_infra: int = 0
    summary: Summary = field(init=False)

    def __post_init__(self) -> None:
        import numpy as np

        n = len(self.test_ids)
        mean = float(self.delta.mean()) if n else 0.0
        if abs(mean) < TOLERANCE:
            mean = 0.0
        summary = Summary(
            total=self.baseline_cases + self.candidate_cases,
            matched=n,
            wins=int(np.count_nonzero(self.outcome == WIN)),
            losses=int(np.count_nonzero(self.outcome == LOSS)),
            ties=int(np.count_nonzero(self.outcome == TIE)),
            mean_delta=mean,
            errors1=self.baseline_errors,
            errors2=self.candidate_errors,
        )
        object.__setattr__(self, "summary", summary)

    @property
    def status(self) -> Status:
        """``improved`` / ``regressed`` / ``neutral``, from the mean delta."""
        return self.summary.status

    @property
    def regressed(self) -> bool:
        """True when the mean delta is below 0 (``status == "regressed"``): the plain
        mean-delta status, not the verdict Worse (see ``Comparison.verdict``)."""
        return self.summary.mean_delta < 0

    @property
    def max_attempts(self) -> int:
        """The most attempts any matched case has, in either run."""
        if not self.test_ids:
            return 0
        return int(max(self.attempts1.max(), self.attempts2.max()))

    def matched(self) -> list[MatchedCase]:
        """The matched cases as objects, in the baseline's order."""
        return [
            MatchedCase(tid, s1, s2, d, _OUTCOME_NAMES[o], a1, a2, e1, e2)
            for tid, s1, s2, d, o, a1, a2, e1, e2 in self._case_rows(list)
        ]

    def _case_rows(self, scores: Callable[[list[float]], list[Any]]) -> Iterator[tuple[Any, ...]]:
        """(test id, score1, score2, delta, outcome code, attempts1, attempts2, errors1,
        errors2) of each matched case; ``scores`` maps each column of floats first."""
        return zip(
            self.test_ids,
            scores(self.score1.tolist()),
            scores(self.score2.tolist()),
            scores(self.delta.tolist()),
            self.outcome.tolist(),
            self.attempts1.tolist(),
            self.attempts2.tolist(),
            self.errors1.tolist(),
            self.errors2.tolist(),
            strict=True,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the documented JSON shape (snake_case, the specs' field names)."""
        s = self.summary
        return {
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_source": self.baseline_source,
            "candidate_source": self.candidate_source,
            "threshold": self.threshold,
            "matched": [
                {
                    "test_id": tid,
                    "score1": s1,
                    "score2": s2,
                    "delta": d,
                    "outcome": _OUTCOME_NAMES[o],
                    "attempts1": a1,
                    "attempts2": a2,
                    "errors1": e1,
                    "errors2": e2,
                }
                for tid, s1, s2, d, o, a1, a2, e1, e2 in self._case_rows(clean_all)
            ],
            "unmatched": {
                "file1": len(self.unmatched_baseline),
                "file2": len(self.unmatched_candidate),
                "file1_ids": list(self.unmatched_baseline),
                "file2_ids": list(self.unmatched_candidate),
            },
            "summary": {
                "total": s.total,
                "matched": s.matched,
                "wins": s.wins,
                "losses": s.losses,
                "ties": s.ties,
                "mean_delta": clean(s.mean_delta),
                "status": s.status,
                "errors": {"file1": s.errors1, "file2": s.errors2},
                "not_run": len(self.not_run),
                "not_run_ids": list(self.not_run),
                "infrastructure_failures": {
                    "file1": self.baseline_infra,
                    "file2": self.candidate_infra,
                },
            },
        }

    # -- conveniences that hand over to the renderers (imported when called) -------

    def to_pandas(self) -> Any:
        """The matched cases as a pandas ``DataFrame``, one row per case, in the
        baseline's order (needs pandas: ``pip install 'evaldelta[pandas]'``)."""
        from evaldelta.report._frames import comparison_frame

        return comparison_frame(self)

    def _repr_html_(self) -> str:
        """The summary as an HTML fragment, for Jupyter."""
        from evaldelta.report._html import render_html_summary

        return render_html_summary(self)


def compare_cases(
    baseline: Cases, candidate: Cases, threshold: float = DEFAULT_THRESHOLD
) -> Pairing:
    """Pair two sets of cases by test id and compare them."""
    import numpy as np

    check_threshold(threshold)
    position = {tid: i for i, tid in enumerate(candidate.test_ids)}
    # Where each baseline case is among the candidate's, -1 where it is not.
    where = np.fromiter(
        map(position.get, baseline.test_ids, repeat(-1)), np.int64, len(baseline.test_ids)
    )
    found = where >= 0
    # A case present on both sides but lost to infrastructure failures on either is
    # neither compared nor "unmatched": it is counted as not run.
    ran = found & (baseline.valid > 0)
    ran[found] &= candidate.valid[where[found]] > 0
    not_run = [baseline.test_ids[i] for i in np.flatnonzero(found & ~ran).tolist()]
    idx1 = np.flatnonzero(ran)
    idx2 = where[idx1]
    in_candidate = np.zeros(len(candidate), dtype=np.bool_)
    in_candidate[where[found]] = True

    left = baseline.take(idx1)
    right = candidate.take(idx2)
    score1 = left.score
    score2 = right.score
    delta = score2 - score1
    return Pairing(
        baseline=baseline.label,
        candidate=candidate.label,
        baseline_source=baseline.source,
        candidate_source=candidate.source,
        threshold=threshold,
        test_ids=list(map(baseline.test_ids.__getitem__, idx1.tolist())),
        score1=score1,
        score2=score2,
        delta=delta,
        outcome=classify_all(delta, threshold),
        attempts1=baseline.attempts[idx1],
        attempts2=candidate.attempts[idx2],
        errors1=baseline.errors[idx1],
        errors2=candidate.errors[idx2],
        unmatched_baseline=[baseline.test_ids[i] for i in np.flatnonzero(~found).tolist()],
        unmatched_candidate=[
            tid
            for tid, hit in zip(candidate.test_ids, in_candidate.tolist(), strict=True)
            if not hit
        ],
        baseline_cases=len(baseline),
        candidate_cases=len(candidate),
        baseline_errors=int(baseline.errors.sum()),
        candidate_errors=int(candidate.errors.sum()),
        left=left,
        right=right,
        not_run=not_run,
        baseline_infra=int(baseline.infra.sum()),
        candidate_infra=int(candidate.infra.sum()),
    )


def check_threshold(threshold: float) -> None:
    """A threshold must be a finite number >= 0."""
    if not (isinstance(threshold, (int, float)) and math.isfinite(threshold) and threshold >= 0):
        raise UsageError(f"threshold must be a number >= 0, got {threshold!r}")


def pair(
    baseline: Run,
    candidate: Run,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    baseline_target: str | None = None,
    candidate_target: str | None = None,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
) -> Pairing:
    """Pair a candidate run with a baseline run, case by case (no statistics: see
    :func:`evaldelta.compare` for those).

    Args:
        baseline, candidate: the runs (load files with :func:`evaldelta.load`, or
            give paths to :func:`evaldelta.compare`, which loads them).
        threshold: smallest delta that counts as a win or a loss.
        baseline_target, candidate_target: which target to take from a run that
            holds several (required then).

    Both may be the same combined run with different targets.
    """
    same_source = baseline is candidate
    base = cases(
        baseline,
        baseline_target,
        label=label_for(baseline, baseline_target, same_source),
        pass_threshold=pass_threshold,
    )
    cand = cases(
        candidate,
        candidate_target,
        label=label_for(candidate, candidate_target, same_source),
        pass_threshold=pass_threshold,
    )
    return compare_cases(base, cand, threshold)


def label_for(run: Run, target: str | None, same_source: bool) -> str:
    """How a side is named in output: the target, the file, or both."""
    if target is not None and same_source:
        return target
    if target is not None:
        return f"{run.source} [{target}]"
    return run.source
