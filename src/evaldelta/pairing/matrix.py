"""N-way comparison: every target of a combined run side by side.

Rows are test ids in order of first appearance, columns are targets in order of
first appearance (or as the caller lists them). Pairwise summaries follow: with a
baseline, the baseline against each other target; without, every pair.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaldelta.errors import PairingError, UsageError
from evaldelta.model import Run
from evaldelta.pairing.cases import DEFAULT_PASS_THRESHOLD, case_matrix, missing_target_error
from evaldelta.pairing.pairwise import (
    DEFAULT_THRESHOLD,
    Comparison,
    check_threshold,
    clean,
    compare_cases,
)

if TYPE_CHECKING:
    from evaldelta.model import FloatArray, IntArray

__all__ = ["MatrixComparison", "build_matrix"]


@dataclass(frozen=True)
class MatrixComparison:
    """Scores of every test id by every target, and the pairwise comparisons.

    ``scores[i, j]`` is test ``i``'s mean score for target ``j`` (NaN when the
    target has no record of it); ``attempts[i, j]`` counts the attempts behind it.
    """

    source: str
    targets: list[str]
    baseline: str | None
    threshold: float
    test_ids: list[str]
    scores: FloatArray
    attempts: IntArray
    errors: IntArray
    pairwise: list[Comparison]

    @property
    def regressions(self) -> list[Comparison]:
        """Comparisons against the baseline whose mean delta is negative."""
        if self.baseline is None:
            return []
        return [p for p in self.pairwise if p.baseline == self.baseline and p.regressed]

    @property
    def max_attempts(self) -> int:
        return int(self.attempts.max()) if self.attempts.size else 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the documented JSON shape: ``targets``, ``matrix``, ``pairwise``."""
        rows = []
        score_rows = self.scores.tolist()
        attempt_rows = self.attempts.tolist()
        error_rows = self.errors.tolist()
        for tid, scores, attempts, errors in zip(
            self.test_ids, score_rows, attempt_rows, error_rows, strict=True
        ):
            row: dict[str, Any] = {
                "test_id": tid,
                "scores": {
                    t: clean(s)
                    for t, s, a in zip(self.targets, scores, attempts, strict=True)
                    if a > 0
                },
                "attempts": {t: a for t, a in zip(self.targets, attempts, strict=True) if a > 0},
            }
            if any(errors):
                row["errors"] = {t: e for t, e in zip(self.targets, errors, strict=True) if e > 0}
            rows.append(row)
        return {
            "source": self.source,
            "targets": list(self.targets),
            "baseline": self.baseline,
            "threshold": self.threshold,
            "matrix": rows,
            "pairwise": [p.to_dict() for p in self.pairwise],
            "regressions": [p.candidate for p in self.regressions],
            "errors": dict(zip(self.targets, self.errors.sum(axis=0).tolist(), strict=True)),
        }


def build_matrix(
    run: Run | str | os.PathLike[str],
    targets: Sequence[str] | None = None,
    baseline: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
) -> MatrixComparison:
    """Pair every target of a combined run (or those listed in ``targets``), no statistics.

    Raises:
        InputError: a record names no target.
        PairingError: a listed target (or the baseline) is not in the run.
        UsageError: a target is listed twice, or the threshold is negative.
    """
    check_threshold(threshold)
    if not isinstance(run, Run):
        from evaldelta.io import load

        run = load(run, keep_text=False)
    if run.has_unnamed_target:
        raise missing_target_error(run)

    if targets:
        dupes = sorted({t for t in targets if list(targets).count(t) > 1})
        if dupes:
            raise UsageError(f"target listed more than once: {', '.join(dupes)}")
        names = list(targets)
    else:
        names = run.target_names
    codes = [run.target_code(t) for t in names]
    if baseline is not None:
        run.target_code(baseline)
        if baseline not in names:
            raise PairingError(
                f"baseline {baseline!r} is not among the targets compared "
                f"({', '.join(names)}); add it to --targets"
            )

    grid = case_matrix(run, codes, pass_threshold=pass_threshold)
    columns = [grid.column(j, label=t) for j, t in enumerate(names)]
    pairwise: list[Comparison] = []
    if baseline is not None:
        b = names.index(baseline)
        pairwise = [
            compare_cases(columns[b], columns[j], threshold) for j in range(len(names)) if j != b
        ]
    else:
        pairwise = [
            compare_cases(columns[i], columns[j], threshold)
            for i in range(len(names))
            for j in range(i + 1, len(names))
        ]
    return MatrixComparison(
        source=run.source,
        targets=names,
        baseline=baseline,
        threshold=threshold,
        test_ids=grid.test_ids,
        scores=grid.score,
        attempts=grid.attempts,
        errors=grid.errors,
        pairwise=pairwise,
    )
