"""From records to cases: the attempts of one test id by one target, averaged.

A case's score is the mean over its attempts. (agentv keeps the last row of a
repeated test id instead; we deliberately do not, since repeated attempts are
there to be averaged.) Attempts that failed for infrastructure reasons
(``error_kind: "infra"``: timeouts, rate limits, provider errors) are left out of
every figure and only counted: they say nothing about the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from evaldelta.errors import InputError
from evaldelta.model import DECIMAL_MAX_COUNT, DECIMAL_MAX_VALUE, DECIMAL_SCALE, Run

if TYPE_CHECKING:
    from evaldelta.model import BoolArray, CaseTotals, FloatArray, IntArray

__all__ = [
    "DEFAULT_PASS_THRESHOLD",
    "CaseMatrix",
    "Cases",
    "case_matrix",
    "cases",
    "seeded_order",
]

#: How to say which target of a run holding several to compare, in the parameters'
#: names (``option="baseline_target"``: the command line shows its flags instead).
WHICH_TARGETS = "baseline_target=TARGET / candidate_target=TARGET"

#: An attempt without a ``passed`` flag passes when its score reaches this.
DEFAULT_PASS_THRESHOLD = 0.5
INFRA = "infra"


def seeded_order(test_ids: Sequence[str], seed: int) -> list[str]:
    """The test ids shuffled by ``seed``: the same ids and seed give the same order,
    whatever order they come in (``evaldelta eval`` runs cases in this order, and a
    sequential comparison of runs that recorded no order takes them in it)."""
    from random import Random

    order = sorted(test_ids)
    Random(f"evaldelta-order:{seed}").shuffle(order)
    return order


@dataclass(frozen=True, slots=True, kw_only=True)
class _CaseColumns:
    """The columns :class:`Cases` and :class:`CaseMatrix` share (see :class:`Cases`)."""

    test_ids: list[str]
    score: FloatArray
    attempts: IntArray
    errors: IntArray
    valid: IntArray
    infra: IntArray
    passes: IntArray
    latency_ms: FloatArray
    cost_usd: FloatArray
    input_tokens: FloatArray
    output_tokens: FloatArray
    safety: BoolArray
    input_hash: IntArray
    first_record: IntArray
    scorers: dict[str, FloatArray] = field(default_factory=dict)

    def _picked(self, rows: IntArray, column: int | None = None) -> dict[str, Any]:
        """Every column at ``rows`` (of target ``column`` in a matrix), by field name."""
        index: Any = rows if column is None else (rows, column)
        out: dict[str, Any] = {"test_ids": list(map(self.test_ids.__getitem__, rows.tolist()))}
        for name in ARRAYS:
            out[name] = getattr(self, name)[index]
        out["scorers"] = {k: v[index] for k, v in self.scorers.items()}
        return out


#: The per-case arrays of :class:`Cases` and :class:`CaseMatrix` (one entry per case, or
#: per case and target), in the order they are declared.
ARRAYS = tuple(f.name for f in fields(_CaseColumns) if f.name not in ("test_ids", "scorers"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Cases(_CaseColumns):
    """The cases of one target, by column, in order of first appearance.

    Per case: ``score`` mean over the attempts that ran (infrastructure failures left
    out; NaN when none ran); ``attempts`` all records; ``valid`` those that ran;
    ``errors`` records with an error (infrastructure ones included); ``infra`` the
    infrastructure failures; ``passes`` passing attempts among ``valid``; latency
    (excluding waits), cost and tokens as means over the attempts that report them
    (NaN when none does); ``safety`` whether any attempt had a safety failure;
    ``first_record`` the index in the run of the case's first record; ``scorers``
    per-scorer means.
    """

    label: str
    source: str
    target: str | None

    def __len__(self) -> int:
        return len(self.test_ids)

    @property
    def records(self) -> int:
        """Number of records (attempts) behind these cases."""
        return int(self.attempts.sum())

    @property
    def pass_rate(self) -> FloatArray:
        """Share of each case's attempts that passed (NaN when none ran)."""
        import numpy as np

        with np.errstate(invalid="ignore", divide="ignore"):
            out: FloatArray = np.where(
                self.valid > 0, self.passes / np.maximum(self.valid, 1), np.nan
            )
        return out

    def take(self, rows: IntArray) -> Cases:
        """The cases at ``rows``, in that order."""
        return Cases(
            label=self.label,
            source=self.source,
            target=self.target,
            **self._picked(rows),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseMatrix(_CaseColumns):
    """Cases of several targets side by side: rows = test ids, columns = targets.

    Every array is ``rows x targets`` with the meaning it has in :class:`Cases`;
    where a target has no record of a test, ``attempts`` is 0 and means are NaN.
    """

    source: str
    targets: list[str | None]

    @property
    def present(self) -> BoolArray:
        """Where a target has a case that ran (at least one attempt not lost to infra)."""
        return self.valid > 0

    def column(self, j: int, label: str | None = None) -> Cases:
        """The cases of target ``j``, in row order (a case whose every attempt failed
        for infrastructure reasons included: it has ``valid == 0`` and a NaN score)."""
        import numpy as np

        rows = np.flatnonzero(self.attempts[:, j] > 0)
        target = self.targets[j]
        return Cases(
            label=label if label is not None else (target or self.source),
            source=self.source,
            target=target,
            **self._picked(rows, j),
        )


def passed_mask(run: Run, pass_threshold: float = DEFAULT_PASS_THRESHOLD) -> BoolArray:
    """Whether each attempt passed: its ``passed`` flag, else its score >= the threshold."""
    import numpy as np

    by_score = run.score >= pass_threshold - 1e-12
    out: BoolArray = np.where(run.passed >= 0, run.passed == 1, by_score)
    return out


def infra_mask(run: Run) -> BoolArray:
    """Whether each attempt failed for infrastructure reasons."""
    import numpy as np

    mask = np.zeros(len(run), dtype=np.bool_)
    infra = [i for i, kind in run.error_kinds.items() if kind.lower() == INFRA]
    if infra:
        mask[infra] = True
    return mask


def sum_by_cell(
    values: FloatArray,
    ok: BoolArray,
    cell: IntArray,
    size: int,
    targets: IntArray,
    k: int,
    counts: Any = None,
) -> FloatArray:
    """The sum of ``values`` where ``ok``, by cell, added up in a way that does not depend
    on the order of the records (so that a reader grouping in SQL, whose threads add up
    in any order, gets the very same floats).

    Per target (``targets``: its column of each value, ``k`` of them): when every value
    it has is a multiple of 1e-6 of at most 1e8 and no cell has more than 45 values, the
    micro-units are added as integers (exact) and divided by 1e6; else the values of each
    cell are added one by one in ascending order. ``counts``: the values per cell, when
    the caller has them.
    """
    import numpy as np

    out = np.zeros(size, dtype=np.float64)
    if not ok.any():
        return out
    every = bool(ok.all())
    vals = values if every else values[ok]
    cells = cell if every else cell[ok]
    cols = targets if every else targets[ok]
    with np.errstate(invalid="ignore", over="ignore"):
        micro = np.round(vals * DECIMAL_SCALE)
        exact = (micro / DECIMAL_SCALE == vals) & (np.abs(vals) <= DECIMAL_MAX_VALUE)
    per_cell = np.bincount(cells, minlength=size) if counts is None else counts
    decimal = _decimal_targets(exact, cells, cols, per_cell, k)
    if decimal.all():
        out += np.bincount(cells, weights=micro, minlength=size) / DECIMAL_SCALE
        return out
    by_sort = ~decimal[cols]
    if not by_sort.all():
        whole = ~by_sort
        out += np.bincount(cells[whole], weights=micro[whole], minlength=size) / DECIMAL_SCALE
    cs, vs = cells[by_sort], vals[by_sort]
    order = np.lexsort((vs, cs))
    out += np.bincount(cs[order], weights=vs[order], minlength=size)
    return out


def _decimal_targets(
    exact: BoolArray, cells: IntArray, cols: IntArray, per_cell: Any, k: int
) -> BoolArray:
    """Per target: every value decimal (``exact``) and no cell holding more than
    DECIMAL_MAX_COUNT of them."""
    import numpy as np

    decimal: BoolArray = np.ones(k, dtype=np.bool_)
    if not exact.all():
        decimal &= np.bincount(cols, weights=~exact, minlength=k) == 0
    full = np.flatnonzero(np.asarray(per_cell) > DECIMAL_MAX_COUNT)
    if full.shape[0]:
        owner = np.zeros(len(per_cell), dtype=np.int64)
        owner[cells] = cols
        decimal[np.unique(owner[full])] = False
    return decimal


def case_matrix(
    run: Run, target_codes: Sequence[int], *, pass_threshold: float = DEFAULT_PASS_THRESHOLD
) -> CaseMatrix:
    """Average each (test id, target) group of ``run`` for the targets given by code.

    Rows are test ids in order of first appearance among those targets' records;
    columns follow ``target_codes``. A run read already grouped (``run.totals``) gives
    the same cases from its totals.
    """
    import numpy as np

    if run.totals is not None:
        return _grouped_matrix(run, run.totals, target_codes, pass_threshold)
    k = len(target_codes)
    col_of = np.full(len(run.targets), -1, dtype=np.int64)
    col_of[np.asarray(target_codes, dtype=np.int64)] = np.arange(k, dtype=np.int64)
    if k == len(run.targets):
        selected = np.arange(len(run), dtype=np.int64)
    else:
        selected = np.flatnonzero(col_of[run.target_index] >= 0)
    tests = run.test_index[selected]
    cols = col_of[run.target_index[selected]]

    # Renumber test codes by first appearance within the selection. (Codes are small
    # integers: a first-position table beats sorting a million of them.)
    first = _first_positions(tests, len(run.test_ids))
    used = np.flatnonzero(first < tests.shape[0])
    order = np.argsort(first[used], kind="stable")
    rank = np.full(len(run.test_ids), -1, dtype=np.int64)
    rank[used[order]] = np.arange(len(used), dtype=np.int64)
    rows = rank[tests]
    n = len(used)
    size = n * k
    cell = rows * k + cols

    infra = infra_mask(run)[selected]
    ran = ~infra
    ran_f = ran.astype(np.float64)

    def count(mask: BoolArray) -> IntArray:
        return np.bincount(cell, weights=mask, minlength=size).astype(np.int64).reshape(n, k)

    def mean(values: FloatArray, only: BoolArray) -> FloatArray:
        ok = only & ~np.isnan(values)
        if not ok.any():  # a figure no record gives (cost, tokens, ...)
            return np.full((n, k), np.nan)
        counts = np.bincount(cell, weights=ok, minlength=size)
        sums = sum_by_cell(values, ok, cell, size, cols, k, counts)
        return _means(sums, counts).reshape(n, k)

    attempts = np.bincount(cell, minlength=size).astype(np.int64).reshape(n, k)
    valid = np.bincount(cell, weights=ran_f, minlength=size).astype(np.int64).reshape(n, k)
    wait = run.wait_ms[selected]
    # A wait longer than the whole attempt is a bookkeeping error: count no work, not less.
    latency = np.maximum(run.latency_ms[selected] - np.where(np.isnan(wait), 0.0, wait), 0.0)

    # The first record of each cell (its input fingerprint) and of each row.
    first_of_cell = _first_positions(cell, size)
    cells_seen = np.flatnonzero(first_of_cell < cell.shape[0])
    first_in_cell = first_of_cell[cells_seen]
    first_record = np.full(size, -1, dtype=np.int64)
    first_record[cells_seen] = selected[first_in_cell]
    input_hash = np.zeros(size, dtype=np.int64)
    input_hash[cells_seen] = run.input_hash[selected[first_in_cell]]

    scores = run.score[selected]
    return CaseMatrix(
        source=run.source,
        targets=[run.targets[c] for c in target_codes],
        test_ids=list(map(run.test_ids.__getitem__, used[order].tolist())),
        score=mean(scores, ran),
        attempts=attempts,
        errors=count(run.is_error[selected]),
        valid=valid,
        infra=count(infra),
        passes=count(passed_mask(run, pass_threshold)[selected] & ran),
        latency_ms=mean(latency, ran),
        cost_usd=mean(run.cost_usd[selected], ran),
        input_tokens=mean(run.input_tokens[selected], ran),
        output_tokens=mean(run.output_tokens[selected], ran),
        safety=count(run.safety_failure[selected]) > 0,
        input_hash=input_hash.reshape(n, k),
        first_record=first_record.reshape(n, k),
        scorers={name: mean(col[selected], ran) for name, col in run.scorer_scores.items()},
    )


def _means(sums: FloatArray, counts: Any) -> FloatArray:
    """``sums / counts``, NaN where nothing was counted."""
    import numpy as np

    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return out


#: The measured columns of :class:`~evaldelta.model.CaseTotals` and of :class:`Cases`.
MEASURES = ("latency_ms", "cost_usd", "input_tokens", "output_tokens")


def _grouped_matrix(
    run: Run, totals: CaseTotals, target_codes: Sequence[int], pass_threshold: float
) -> CaseMatrix:
    """:func:`case_matrix` of a run read already grouped: each row is one cell."""
    import numpy as np

    from evaldelta.errors import UsageError

    if abs(totals.pass_threshold - pass_threshold) > 0:
        raise UsageError(
            f"{run.source} was grouped at a pass threshold of {totals.pass_threshold:g}, "
            f"not {pass_threshold:g}; load it again with that threshold"
        )
    k = len(target_codes)
    col_of = np.full(len(run.targets), -1, dtype=np.int64)
    col_of[np.asarray(target_codes, dtype=np.int64)] = np.arange(k, dtype=np.int64)
    selected = np.flatnonzero(col_of[run.target_index] >= 0)
    tests = run.test_index[selected]
    cols = col_of[run.target_index[selected]]
    # A test's place: the first of its records among the targets chosen.
    where = np.full(len(run.test_ids), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(where, tests, totals.first[selected])
    used = np.flatnonzero(where < np.iinfo(np.int64).max)
    order = np.argsort(where[used], kind="stable")
    rank = np.full(len(run.test_ids), -1, dtype=np.int64)
    rank[used[order]] = np.arange(len(used), dtype=np.int64)
    n = len(used)
    size = n * k
    cell = rank[tests] * k + cols

    def placed(values: Any, fill: Any, dtype: Any) -> Any:
        out = np.full(size, fill, dtype=dtype)
        out[cell] = values[selected]
        return out.reshape(n, k)

    def mean(name: str) -> FloatArray:
        if name not in totals.sums:
            return np.full((n, k), np.nan)
        counts = placed(totals.counts[name], 0, np.int64)
        return _means(placed(totals.sums[name], 0.0, np.float64), counts)

    return CaseMatrix(
        source=run.source,
        targets=[run.targets[c] for c in target_codes],
        test_ids=list(map(run.test_ids.__getitem__, used[order].tolist())),
        score=mean("score"),
        attempts=placed(totals.attempts, 0, np.int64),
        errors=placed(totals.errors, 0, np.int64),
        valid=placed(totals.valid, 0, np.int64),
        infra=placed(totals.infra, 0, np.int64),
        passes=placed(totals.passes, 0, np.int64),
        latency_ms=mean("latency_ms"),
        cost_usd=mean("cost_usd"),
        input_tokens=mean("input_tokens"),
        output_tokens=mean("output_tokens"),
        safety=placed(totals.safety, False, np.bool_),
        input_hash=placed(run.input_hash, 0, np.int64),
        first_record=placed(np.arange(len(run), dtype=np.int64), -1, np.int64),
        scorers={name: mean(f"scorer:{name}") for name in run.scorer_scores},
    )


def _first_positions(codes: IntArray, size: int) -> IntArray:
    """For each code in ``range(size)``, the position of its first occurrence in ``codes``
    (``len(codes)`` for a code that does not occur)."""
    import numpy as np

    n = codes.shape[0]
    first = np.full(size, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    return first


def cases(
    run: Run,
    target: str | None = None,
    *,
    label: str | None = None,
    pass_threshold: float = DEFAULT_PASS_THRESHOLD,
) -> Cases:
    """The cases of one target of ``run`` (or of the whole run when it has one target).

    Raises:
        PairingError: ``target`` is not in the run, or it is ``None`` and the run
            holds several targets, so which one to use is ambiguous.
        InputError: ``target`` is given but some records name no target.
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
            f"choose one to compare ({WHICH_TARGETS})",
            option="baseline_target",
        )
    return case_matrix(run, [code], pass_threshold=pass_threshold).column(0, label=label)


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
