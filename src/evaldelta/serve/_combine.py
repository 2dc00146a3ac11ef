"""Several stored runs as one combined run, each its own target, for the N-way matrix.

``compare_matrix`` compares the targets of one run; the dashboard compares stored runs.
Each run becomes the target named by its label (``before (run 3)``), so the matrix, its
charts and its verdicts name runs as the runs list does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from evaldelta.errors import PairingError
from evaldelta.model import Factorized, Run

if TYPE_CHECKING:
    from evaldelta.model import IntArray

__all__ = ["combine_runs"]


def _codes(index: dict[Any, int], names: Sequence[Any], codes: IntArray) -> IntArray:
    """``codes`` into ``names`` as codes into the shared ``index`` (grown as needed)."""
    import numpy as np

    lookup = np.asarray([index.setdefault(n, len(index)) for n in names] or [0], dtype=np.int64)
    out: IntArray = lookup[codes] if len(codes) else np.zeros(0, dtype=np.int64)
    return out


def combine_runs(runs: Sequence[Run], labels: Sequence[str], *, source: str) -> Run:
    """One run holding the records of ``runs``, the records of ``runs[j]`` under the
    target ``labels[j]``.

    Texts, scorers and extra fields a run lacks are absent (``None``, NaN) for its
    records. The combined run is interrupted when any of the runs is, so that the
    matrix's fairness checks still see it; it declares no config and no times.

    Raises:
        PairingError: a run holds records of several targets (the dashboard compares
            runs of one target each, as ``evaldelta runs import`` stores them).
    """
    import numpy as np

    if len(runs) != len(labels) or len(set(labels)) != len(labels):
        raise ValueError("combine_runs takes one distinct label per run")
    for run, label in zip(runs, labels, strict=True):
        if len(run.targets) > 1:
            held = ", ".join(str(t) for t in run.targets)
            raise PairingError(
                f"{label} holds records of {len(run.targets)} targets ({held}); compare runs "
                "of one target each (`evaldelta runs import` stores one run per target)"
            )

    test_index: dict[str, int] = {}
    category_index: dict[str | None, int] = {None: 0}
    tests: list[IntArray] = []
    categories: list[IntArray] = []
    for run in runs:
        tests.append(_codes(test_index, run.test_ids, run.test_index))
        # Category code -1 (none) becomes the shared code of None.
        categories.append(_codes(category_index, [None, *run.categories], run.category_index + 1))

    sizes = [len(run) for run in runs]
    starts = np.cumsum([0, *sizes[:-1]]).tolist()

    def concat(name: str) -> Any:
        return np.concatenate([getattr(run, name) for run in runs])

    def sparse(name: str) -> dict[int, Any]:
        out: dict[int, Any] = {}
        for run, start in zip(runs, starts, strict=True):
            out.update({start + i: v for i, v in getattr(run, name).items()})
        return out

    def lists(columns: Sequence[dict[str, list[Any]] | None]) -> dict[str, list[Any]]:
        fields = list(dict.fromkeys(k for c in columns if c for k in c))
        return {
            f: [v for c, size in zip(columns, sizes, strict=True) for v in _column(c, f, size)]
            for f in fields
        }

    scorer_names = list(dict.fromkeys(s for run in runs for s in run.scorer_scores))
    scorers: dict[str, Any] = {
        s: np.concatenate([run.scorer_scores.get(s, np.full(len(run), np.nan)) for run in runs])
        for s in scorer_names
    }
    passed = concat("passed").tolist()
    texts = lists([run.texts for run in runs]) if any(run.texts for run in runs) else None
    # Factorized columns: codes as they are, no Python object per record.
    columns: dict[str, Any] = dict(
        source=source,
        format="store",
        test_id=Factorized(list(test_index), np.concatenate(tests)),
        target=Factorized(list(labels), np.repeat(np.arange(len(runs), dtype=np.int64), sizes)),
        category=Factorized(list(category_index), np.concatenate(categories)),
        score=concat("score"),
        passed=[None if p < 0 else bool(p) for p in passed],
        attempt=concat("attempt").tolist(),
        latency_ms=concat("latency_ms"),
        wait_ms=concat("wait_ms"),
        input_tokens=concat("input_tokens"),
        output_tokens=concat("output_tokens"),
        cost_usd=concat("cost_usd"),
        errors=sparse("errors"),
        error_kinds=sparse("error_kinds"),
        safety_failure=concat("safety_failure").tolist(),
        tags=sparse("tags"),
        scorer_scores=scorers,
        texts=texts,
        input_hash=concat("input_hash"),
        extra=lists([run.extra for run in runs]),
        status="complete" if all(run.status == "complete" for run in runs) else "interrupted",
    )
    return Run.from_columns(**columns)


def _column(columns: dict[str, list[Any]] | None, name: str, size: int) -> list[Any]:
    if columns and name in columns:
        return columns[name]
    return [None] * size
