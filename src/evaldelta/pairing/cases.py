"""From records to cases: the attempts of one test id by one target, averaged.

A case's score is the mean over its attempts. (agentv keeps the last row of a
repeated test id instead; we deliberately do not, since repeated attempts are
there to be averaged.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evaldelta.errors import InputError
from evaldelta.model import Run

if TYPE_CHECKING:
    from evaldelta.model import BoolArray, FloatArray, IntArray

__all__ = ["CaseMatrix", "Cases", "case_matrix", "cases"]


@dataclass(frozen=True, slots=True)
class Cases:
    """The cases of one target, by column, in order of first appearance."""

    label: str
    source: str
    target: str | None
    test_ids: list[str]
    score: FloatArray
    attempts: IntArray
    errors: IntArray

    def __len__(self) -> int:
        return len(self.test_ids)

    @property
    def records(self) -> int:
        """Number of records (attempts) behind these cases."""
        return int(self.attempts.sum())


@dataclass(frozen=True, slots=True)
class CaseMatrix:
    """Cases of several targets side by side: rows = test ids, columns = targets.

    ``present[i, j]`` says whether target ``j`` has test ``i``; where it has not,
    ``score`` is NaN and ``attempts`` and ``errors`` are 0.
    """

    source: str
    targets: list[str | None]
    test_ids: list[str]
    score: FloatArray
    attempts: IntArray
    errors: IntArray

    @property
    def present(self) -> BoolArray:
        return self.attempts > 0

    def column(self, j: int, label: str | None = None) -> Cases:
        """The cases of target ``j`` (rows where it has records, in row order)."""
        import numpy as np

        rows = np.flatnonzero(self.attempts[:, j] > 0)
        target = self.targets[j]
        return Cases(
            label=label if label is not None else (target or self.source),
            source=self.source,
            target=target,
            test_ids=[self.test_ids[i] for i in rows.tolist()],
            score=self.score[rows, j],
            attempts=self.attempts[rows, j],
            errors=self.errors[rows, j],
        )


def case_matrix(run: Run, target_codes: Sequence[int]) -> CaseMatrix:
    """Average each (test id, target) group of ``run`` for the targets given by code.

    Rows are test ids in order of first appearance among those targets' records;
    columns follow ``target_codes``.
    """
    import numpy as np

    k = len(target_codes)
    col_of = np.full(len(run.targets), -1, dtype=np.int64)
    col_of[np.asarray(target_codes, dtype=np.int64)] = np.arange(k, dtype=np.int64)
    if k == len(run.targets):
        selected = np.arange(len(run), dtype=np.int64)
    else:
        selected = np.flatnonzero(col_of[run.target_index] >= 0)
    tests = run.test_index[selected]
    cols = col_of[run.target_index[selected]]

    # Renumber test codes by first appearance within the selection.
    used, first, inverse = np.unique(tests, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(used), dtype=np.int64)
    rank[order] = np.arange(len(used), dtype=np.int64)
    rows = rank[inverse.reshape(-1)]
    n = len(used)

    cell = rows * k + cols
    size = n * k
    attempts = np.bincount(cell, minlength=size)
    sums = np.bincount(cell, weights=run.score[selected], minlength=size)
    errors = np.bincount(cell, weights=run.is_error[selected], minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(attempts > 0, sums / np.maximum(attempts, 1), np.nan)
    return CaseMatrix(
        source=run.source,
        targets=[run.targets[c] for c in target_codes],
        test_ids=[run.test_ids[int(c)] for c in used[order].tolist()],
        score=score.reshape(n, k),
        attempts=attempts.reshape(n, k).astype(np.int64),
        errors=errors.reshape(n, k).astype(np.int64),
    )


def cases(run: Run, target: str | None = None, *, label: str | None = None) -> Cases:
    """The cases of one target of ``run`` (or of the whole run when it has one target).

    Raises:
        PairingError: ``target`` is not in the run, or it is ``None`` and the run
            holds several targets, so which one to use is ambiguous.
    """
    from evaldelta.errors import PairingError

    if target is not None:
        if run.has_unnamed_target:
            # Records without a target would silently drop out of the comparison.
            raise missing_target_error(run)
        code = run.target_code(target)
    elif len(run.targets) == 1:
        code = 0
    else:
        names = ", ".join(t if t is not None else "(no target)" for t in run.targets)
        raise PairingError(
            f"{run.source}: holds {len(run.targets)} targets ({names}); "
            "choose one to compare (--baseline/--candidate TARGET on the command line)"
        )
    return case_matrix(run, [code]).column(0, label=label)


def missing_target_error(run: Run) -> InputError:
    """The error for a run where a target is needed but some record names none."""
    import numpy as np

    code = run.targets.index(None)
    first = int(np.flatnonzero(run.target_index == code)[0])
    if run.lines is not None:
        where = f"{run.source}:{int(run.lines[first])}"
    else:
        where = f"{run.source} (record {first + 1})"
    return InputError(
        f'{where}: record has no "target"; comparing the targets of one combined file '
        "needs a target on every record (or pass two files to compare them pairwise)"
    )
