"""N-way comparison: every target of a combined run side by side.

Rows are test ids in order of first appearance, columns are targets in order of
first appearance (or as the caller lists them). Pairwise summaries follow: with a
baseline, the baseline against each other target; without, every pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import TYPE_CHECKING, Any

from evaldelta.errors import PairingError, UsageError
from evaldelta.model import Run
from evaldelta.pairing._cases import (
    DEFAULT_PASS_THRESHOLD,
    Cases,
    case_matrix,
    missing_target_error,
)
from evaldelta.pairing._pairwise import (
    DEFAULT_THRESHOLD,
    Pairing,
    check_threshold,
    clean_all,
    compare_cases,
)

if TYPE_CHECKING:
    from evaldelta.model import FloatArray, IntArray

__all__ = ["MatrixPairing", "build_matrix", "build_matrix_and_cases", "matrix_dict"]


@dataclass(frozen=True)
class MatrixPairing:
    """Scores of every test id by every target, and the pairings of targets (no
    statistics: :func:`evaldelta.compare_matrix` adds them in a
    :class:`evaldelta.MatrixComparison`).

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
    pairwise: Sequence[Pairing]

    @property
    def regressions(self) -> Sequence[Pairing]:
        """Pairings against the baseline whose mean delta is negative."""
        if self.baseline is None:
            return []
        return [p for p in self.pairwise if p.baseline == self.baseline and p.regressed]

    @property
    def max_attempts(self) -> int:
        return int(self.attempts.max()) if self.attempts.size else 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data in the documented JSON shape: ``targets``, ``matrix``, ``pairwise``."""
        return matrix_dict(
            self,
            [p.to_dict() for p in self.pairwise],
            [p.candidate for p in self.regressions],
        )

    # -- conveniences that hand over to the renderers (imported when called) -------

    def to_pandas(self) -> Any:
        """The score matrix as a pandas ``DataFrame``: one row per test id, one column per
        target (needs pandas: ``pip install 'evaldelta[pandas]'``)."""
        from evaldelta.report._frames import matrix_frame

        return matrix_frame(self)

    def _repr_html_(self) -> str:
        """The summary as an HTML fragment, for Jupyter."""
        from evaldelta.report._html import render_html_summary

        return render_html_summary(self)


def matrix_dict(
    m: MatrixPairing, pairwise: list[dict[str, Any]], regressions: list[str]
) -> dict[str, Any]:
    """The JSON shape of a matrix, with ``pairwise`` (each pair's ``to_dict()``) and
    ``regressions`` (the candidates that regressed) as given: shared by
    :class:`MatrixPairing` and :class:`evaldelta.MatrixComparison`."""
    import numpy as np

    targets = m.targets
    k = len(targets)
    cleaned = clean_all(m.scores.ravel().tolist())  # each distinct score once
    # Rows as tuples of k, grouped in C (k may be 0: then empty rows).
    n = len(m.test_ids)
    ran = m.attempts.ravel().tolist()
    score_rows = list(zip(*[iter(cleaned)] * k, strict=True)) if k else [()] * n
    attempt_rows = list(zip(*[iter(ran)] * k, strict=True)) if k else [()] * n
    scores: Iterable[dict[str, Any]]
    attempts: Iterable[dict[str, Any]]
    if bool((m.attempts > 0).all()):
        # Every target ran every case (the usual matrix): whole rows, built in C.
        scores = map(dict, map(zip, repeat(targets), score_rows))
        attempts = map(dict, map(zip, repeat(targets), attempt_rows))
    else:
        scores = (
            {t: s for t, s, a in zip(targets, row, done, strict=True) if a > 0}
            for row, done in zip(score_rows, attempt_rows, strict=True)
        )
        attempts = (
            {t: a for t, a in zip(targets, done, strict=True) if a > 0} for done in attempt_rows
        )
    rows: list[dict[str, Any]] = [
        {"test_id": tid, "scores": s, "attempts": a}
        for tid, s, a in zip(m.test_ids, scores, attempts, strict=True)
    ]
    with_errors = np.flatnonzero(m.errors.any(axis=1))
    for i, errors in zip(with_errors.tolist(), m.errors[with_errors].tolist(), strict=True):
        rows[i]["errors"] = {t: e for t, e in zip(targets, errors, strict=True) if e > 0}
    return {
        "source": m.source,
        "targets": list(m.targets),
        "baseline": m.baseline,
        "threshold": m.threshold,
        "matrix": rows,
        "pairwise": pairwise,
        "regressions": regressions,
        "errors": dict(zip(m.targets, m.errors.sum(axis=0).tolist(), strict=True)),
    }


def build_matrix(
    run: Run,
    targets: Sequence[str] | None = None,
    baseline: str | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
) -> MatrixPairing:
    """Pair every target of a combined run (or those listed in ``targets``), no statistics.

    Raises:
        InputError: a record names no target.
        PairingError: a listed target (or the baseline) is not in the run.
        UsageError: a target is listed twice, or the threshold is negative.
    """
    matrix, _ = build_matrix_and_cases(run, targets, baseline, threshold, pass_threshold)
    return matrix


def build_matrix_and_cases(
    run: Run,
    targets: Sequence[str] | None,
    baseline: str | None,
    threshold: float,
    pass_threshold: float,
) -> tuple[MatrixPairing, dict[str, Cases]]:
    """:func:`build_matrix` (every parameter given), and the cases of each target (all
    of them, by name), which the statistics of each pair need: worked out once for both."""
    check_threshold(threshold)
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
                f"({', '.join(names)}); add it to targets",
                option="targets",
            )

    grid = case_matrix(run, codes, pass_threshold=pass_threshold)
    columns = [grid.column(j, label=t) for j, t in enumerate(names)]
    pairwise: list[Pairing] = []
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
    matrix = MatrixPairing(
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
    return matrix, dict(zip(names, columns, strict=True))
