"""Runs and results as pandas DataFrames, for notebooks: a run (one row per record), a
pairwise comparison (one row per matched case), an N-way matrix (one row per test id).

pandas is optional (``pip install 'evaldelta[pandas]'``) and imported only when a
frame is asked for. Columns are made from the arrays the result already holds, never
from a Python object per row; like every renderer, these compute nothing of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evaldelta.errors import MissingDependencyError
from evaldelta.report._text import Matrix, Pairwise, analysis_of

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from evaldelta.model import IntArray, Run

__all__ = ["PANDAS_EXTRA", "comparison_frame", "import_pandas", "matrix_frame", "run_frame"]

#: How to install what ``to_pandas()`` needs.
PANDAS_EXTRA = "pip install 'evaldelta[pandas]'"

#: Per-record columns of a run that hold a number (NaN when absent).
_FLOAT_COLUMNS = ("latency_ms", "wait_ms", "input_tokens", "output_tokens", "cost_usd")


def import_pandas(what: str) -> Any:
    """The pandas module, or :class:`MissingDependencyError` saying how to install it."""
    import importlib

    try:
        return importlib.import_module("pandas")
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} needs pandas, which is not installed; install it with {PANDAS_EXTRA}"
        ) from exc


def _objects(values: Sequence[Any]) -> npt.NDArray[np.object_]:
    """A 1-D object array of ``values`` (tuples stay elements, not rows)."""
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _decoded(names: Sequence[Any], codes: IntArray) -> npt.NDArray[np.object_]:
    """Each code's name; code -1 is ``None``."""
    return _objects([*names, None])[codes]


def _sparse(values: Mapping[int, Any], n: int) -> npt.NDArray[np.object_]:
    """A column of ``n`` entries from record index -> value, ``None`` elsewhere."""
    import numpy as np

    out = np.full(n, None, dtype=object)
    if values:
        keys = np.fromiter(values.keys(), dtype=np.int64, count=len(values))
        out[keys] = _objects(list(values.values()))
    return out


def run_frame(run: Run) -> Any:
    """One row per record: ``test_id``, ``target``, ``attempt``, ``score``, ``passed``
    (nullable boolean), latency, wait, tokens, cost, ``error``, ``error_kind``,
    ``safety_failure``, ``category``, ``tags``, one ``scores.NAME`` column per scorer,
    then the texts and extra fields the run kept, and the source ``line``."""
    pd = import_pandas("Run.to_pandas()")
    n = len(run)
    data: dict[str, Any] = {
        "test_id": _decoded(run.test_ids, run.test_index),
        "target": _decoded(run.targets, run.target_index),
        "attempt": run.attempt,
        "score": run.score,
        "passed": pd.arrays.BooleanArray(run.passed == 1, run.passed < 0),
    }
    for name in _FLOAT_COLUMNS:
        data[name] = getattr(run, name)
    data["error"] = _sparse(run.errors, n)
    data["error_kind"] = _sparse(run.error_kinds, n)
    data["safety_failure"] = run.safety_failure
    data["category"] = _decoded(run.categories, run.category_index)
    data["tags"] = _sparse(run.tags, n)
    for name, column in run.scorer_scores.items():
        data[f"scores.{name}"] = column
    for name, values in (run.texts or {}).items():
        data[name] = _objects(values)
    for name, values in run.extra.items():
        data.setdefault(name, _objects(values))
    if run.lines is not None:
        data["line"] = run.lines
    return pd.DataFrame(data)


def comparison_frame(c: Pairwise) -> Any:
    """One row per matched case, in the baseline's order: ``test_id``, ``category``
    (when the runs have categories), baseline and candidate score, ``delta``,
    ``outcome`` (win / tie / loss at the comparison's threshold), then per side the
    pass rate (share of the case's attempts that passed), attempts, errors, latency
    (excluding waits), cost, tokens and safety failure, and ``baseline_scores.NAME`` /
    ``candidate_scores.NAME`` for each scorer both sides have."""
    import numpy as np

    pd = import_pandas("Comparison.to_pandas()")
    left, right = c.left, c.right
    data: dict[str, Any] = {"test_id": _objects(c.test_ids)}
    a = analysis_of(c)
    if a is not None and a.categories is not None:
        data["category"] = _objects(a.categories)
    outcome_names = _objects(["loss", "tie", "win"])  # outcome codes -1, 0, 1
    data.update(
        {
            "baseline_score": c.score1,
            "candidate_score": c.score2,
            "delta": c.delta,
            "outcome": outcome_names[np.asarray(c.outcome, dtype=np.int64) + 1],
        }
    )
    for side, cases in (("baseline", left), ("candidate", right)):
        data.update(
            {
                f"{side}_pass_rate": cases.pass_rate,
                f"{side}_attempts": cases.attempts,
                f"{side}_errors": cases.errors,
                f"{side}_latency_ms": cases.latency_ms,
                f"{side}_cost_usd": cases.cost_usd,
                f"{side}_input_tokens": cases.input_tokens,
                f"{side}_output_tokens": cases.output_tokens,
                f"{side}_safety_failure": cases.safety,
            }
        )
    for name in left.scorers:
        if name in right.scorers:
            data[f"baseline_scores.{name}"] = left.scorers[name]
            data[f"candidate_scores.{name}"] = right.scorers[name]
    return pd.DataFrame(data)


def matrix_frame(m: Matrix) -> Any:
    """One row per test id (the index, named ``test_id``), one column per target: its
    mean score over its attempts (NaN where the target has no record of the test)."""
    pd = import_pandas("MatrixComparison.to_pandas()")
    data = {target: m.scores[:, j] for j, target in enumerate(m.targets)}
    return pd.DataFrame(data, index=pd.Index(_objects(m.test_ids), name="test_id"))
