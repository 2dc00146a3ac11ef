"""The common model every reader produces and everything after the readers uses.

A :class:`Run` is a set of records; a :class:`Record` is one attempt of one test
case by one target. Nothing here knows a file format.

A run is stored by column (numpy arrays, one entry per record) rather than as a
Python object per record, so that a million records cost a few arrays, not a
million objects. :class:`Record` objects are made on demand, when a caller asks
for one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

from evaldelta.errors import InputError, PairingError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    IntArray = npt.NDArray[np.int64]
    BoolArray = npt.NDArray[np.bool_]

    from typing_extensions import Unpack

    from evaldelta.analysis._comparison import Comparison
    from evaldelta.analysis._settings import CompareOptions

__all__ = ["NUMBER_FIELDS", "TEXT_FIELDS", "CaseTotals", "Record", "Run"]

#: Free-text fields of a record: kept only when a reader is asked to keep them.
TEXT_FIELDS = ("input", "output", "expected", "metadata")
#: Optional measurements of a record: ``None`` in a record, NaN in a run's column.
NUMBER_FIELDS = ("latency_ms", "wait_ms", "input_tokens", "output_tokens", "cost_usd")


@dataclass(frozen=True, slots=True)
class Record:
    """One attempt of one test case by one target."""

    test_id: str
    score: float
    target: str | None = None
    scores: Mapping[str, float] = field(default_factory=dict)
    passed: bool | None = None
    attempt: int = 1
    latency_ms: float | None = None
    wait_ms: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    error_kind: str | None = None
    safety_failure: bool = False
    category: str | None = None
    tags: tuple[str, ...] = ()
    input: Any = None
    output: Any = None
    expected: Any = None
    metadata: Mapping[str, Any] | None = None
    line: int | None = None

    @property
    def is_error(self) -> bool:
        """True when the attempt failed to run (it then scores 0 unless it had a score)."""
        return self.error is not None


class Factorized(NamedTuple):
    """A column given as its distinct values and a code per record (readers that
    build it piece by piece pass this to :meth:`Run.from_columns`)."""

    values: list[Any]
    codes: IntArray

    def __len__(self) -> int:  # the number of records, like a plain column
        return int(self.codes.shape[0])


class Factorizer:
    """Factorizes a column piece by piece: codes stay consistent across pieces."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}

    def codes(self, values: Sequence[Any]) -> IntArray:
        import numpy as np

        index = self.index
        # Look every value up at C speed; only those not seen before take the Python
        # loop, which numbers them in order of first appearance.
        codes = list(map(index.get, values))
        if None in codes:
            i = codes.index(None)
            try:
                while True:
                    v = values[i]
                    code = index.get(v)
                    if code is None:
                        code = index[v] = len(index)
                    codes[i] = code
                    i = codes.index(None, i + 1)
            except ValueError:  # no None left
                pass
        return np.array(codes, dtype=np.int64)

    def result(self, pieces: Sequence[IntArray]) -> Factorized:
        import numpy as np

        codes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        return Factorized(list(self.index), codes)


def factorize(values: Sequence[Any]) -> tuple[list[Any], IntArray]:
    """Codes for values, numbered in order of first appearance: (uniques, codes)."""
    import numpy as np

    if isinstance(values, Factorized):
        return list(values.values), values.codes

    uniques = list(dict.fromkeys(values))
    if len(uniques) == 1:
        return uniques, np.zeros(len(values), dtype=np.int64)
    if len(uniques) <= 16 and len(values) > 10_000:
        # Few distinct values (targets, categories): one vectorised pass per value.
        as_objects = np.empty(len(values), dtype=object)
        as_objects[:] = values
        codes = np.empty(len(values), dtype=np.int64)
        for i, v in enumerate(uniques):
            codes[as_objects == v] = i
        return uniques, codes
    index = {v: i for i, v in enumerate(uniques)}
    return uniques, np.fromiter(map(index.__getitem__, values), np.int64, len(values))


def float_column(values: Sequence[float | None] | None, n: int) -> FloatArray:
    """A float64 column, NaN where a value is ``None``."""
    import numpy as np

    if values is None:
        return np.full(n, np.nan)
    if isinstance(values, np.ndarray):
        return values.astype(np.float64, copy=False)
    return np.asarray(values, dtype=np.float64)  # numpy reads None as NaN here


#: A column's values are added up exactly, in integers of 1e-6, when every value is a
#: multiple of 1e-6 (0/1 scores, scores on a grid, milliseconds, tokens, dollars to the
#: micro-dollar) of at most 1e8 and no case has more than 45 of them: the sum of their
#: micro-units stays below 2**52, so it is the same whatever the order. Any other column
#: is added up in ascending order within each case. Both are exact definitions that a
#: reader grouping in SQL computes identically (see
#: :func:`evaldelta.pairing._cases.sum_by_cell`).
DECIMAL_SCALE = 1e6
DECIMAL_MAX_VALUE = 1e8
DECIMAL_MAX_COUNT = 45


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseTotals:
    """What the attempts of each case add up to, for a run read already grouped.

    A reader that groups records itself (the DuckDB engine, on large inputs) gives a run
    with one row per case and target, the case's first record, and these totals beside
    it, one entry per row. :func:`evaldelta.pairing.cases` reads them instead of the
    records, with the same result as from the records themselves.

    ``first``: the position of the case's first record in the file (orders the cases);
    ``attempts``, ``valid``, ``errors``, ``infra``: records, those that ran (not lost to
    infrastructure failures), with an error, and lost to infrastructure failures;
    ``passes``: attempts that ran and passed at ``pass_threshold``; ``safety``: any
    attempt had a safety failure; ``sums`` and ``counts``: per measured column (``score``,
    ``latency_ms`` net of waits, ``cost_usd``, ``input_tokens``, ``output_tokens``, and
    ``scorer:NAME``), the sum over the attempts that ran and gave a value (see
    :func:`evaldelta.pairing._cases.sum_by_cell` for how it is added up) and their number.
    """

    pass_threshold: float
    first: IntArray
    attempts: IntArray
    valid: IntArray
    errors: IntArray
    infra: IntArray
    passes: IntArray
    safety: BoolArray
    sums: dict[str, FloatArray]
    counts: dict[str, IntArray]

    @property
    def records(self) -> int:
        """Number of records (attempts) behind the rows."""
        return int(self.attempts.sum())

    def take(self, rows: IntArray) -> CaseTotals:
        """The totals of ``rows``, in that order."""
        return CaseTotals(
            pass_threshold=self.pass_threshold,
            first=self.first[rows],
            attempts=self.attempts[rows],
            valid=self.valid[rows],
            errors=self.errors[rows],
            infra=self.infra[rows],
            passes=self.passes[rows],
            safety=self.safety[rows],
            sums={k: v[rows] for k, v in self.sums.items()},
            counts={k: v[rows] for k, v in self.counts.items()},
        )


class Run:
    """A set of records, stored by column.

    Build one with :meth:`from_records` (simple) or :meth:`from_columns` (what
    readers use). Iterating a run yields :class:`Record` objects.

    Columns (numpy arrays of one entry per record):
        test_index / target_index: codes into :attr:`test_ids` / :attr:`targets`
        score: the record's overall score; an error without a score is 0
        passed: 1 / 0, or -1 when the record does not say
        attempt: 1-based attempt number within its (test id, target)
        latency_ms, wait_ms, input_tokens, output_tokens, cost_usd: NaN when absent
        is_error, safety_failure: booleans
        category_index: code into :attr:`categories`, -1 when absent
        scorer_scores: scorer name -> score per record (NaN when absent)
    """

    __slots__ = (
        "attempt",
        "case_order",
        "categories",
        "category_index",
        "config",
        "cost_usd",
        "error_kinds",
        "errors",
        "extra",
        "finished_at",
        "format",
        "input_hash",
        "input_tokens",
        "is_error",
        "latency_ms",
        "lines",
        "output_tokens",
        "passed",
        "safety_failure",
        "score",
        "scorer_scores",
        "sequential",
        "source",
        "started_at",
        "status",
        "tags",
        "target_index",
        "targets",
        "test_ids",
        "test_index",
        "texts",
        "totals",
        "wait_ms",
    )

    source: str
    format: str
    status: str
    config: dict[str, Any]
    started_at: str | None
    finished_at: str | None
    input_hash: IntArray
    extra: dict[str, list[Any]]
    test_ids: list[str]
    targets: list[str | None]
    categories: list[str]
    test_index: IntArray
    target_index: IntArray
    category_index: IntArray
    score: FloatArray
    passed: IntArray
    attempt: IntArray
    latency_ms: FloatArray
    wait_ms: FloatArray
    input_tokens: FloatArray
    output_tokens: FloatArray
    cost_usd: FloatArray
    is_error: BoolArray
    safety_failure: BoolArray
    errors: dict[int, str]
    error_kinds: dict[int, str]
    tags: dict[int, tuple[str, ...]]
    scorer_scores: dict[str, FloatArray]
    texts: dict[str, list[Any]] | None
    lines: IntArray | None
    #: The order the cases ran in (test ids), when the run recorded it (``evaldelta
    #: eval`` does: a seeded shuffle); ``None`` for files of other tools.
    case_order: list[str] | None
    #: A run that ``evaldelta eval --stop-when-settled`` ran against a baseline: how it
    #: went (settled or not, the verdict, after how many cases, the alpha and margin,
    #: what was not spent); its status is ``stopped early`` when it settled. ``None``
    #: for any other run.
    sequential: dict[str, Any] | None
    #: A run read already grouped (large inputs, by the DuckDB engine): each row is one
    #: case of one target (its first record) and these are what its attempts add up to;
    #: ``None`` for a run of records.
    totals: CaseTotals | None

    _OPTIONAL = ("case_order", "sequential", "totals")

    def __init__(self, **columns: Any) -> None:
        for name in self.__slots__:
            if name in Run._OPTIONAL:
                object.__setattr__(self, name, columns.get(name))
            else:
                object.__setattr__(self, name, columns[name])

    # -- construction -----------------------------------------------------------------

    @classmethod
    def from_columns(
        cls,
        *,
        source: str,
        format: str,
        test_id: Sequence[str],
        score: Sequence[float],
        target: Sequence[str | None] | None = None,
        passed: Sequence[bool | None] | None = None,
        attempt: Sequence[int | None] | None = None,
        latency_ms: Sequence[float | None] | None = None,
        wait_ms: Sequence[float | None] | None = None,
        input_tokens: Sequence[float | None] | None = None,
        output_tokens: Sequence[float | None] | None = None,
        cost_usd: Sequence[float | None] | None = None,
        errors: Mapping[int, str] | None = None,
        error_kinds: Mapping[int, str] | None = None,
        safety_failure: Sequence[bool | None] | None = None,
        category: Sequence[str | None] | None = None,
        tags: Mapping[int, tuple[str, ...]] | None = None,
        scorer_scores: Mapping[str, Sequence[float | None]] | None = None,
        texts: Mapping[str, Sequence[Any]] | None = None,
        lines: Sequence[int] | None = None,
        input_hash: Sequence[int] | None = None,
        extra: Mapping[str, Sequence[Any]] | None = None,
        status: str = "complete",
        config: Mapping[str, Any] | None = None,
        started_at: str | None = None,
        finished_at: str | None = None,
    ) -> Run:
        """Build a run from plain columns of equal length (``None`` = absent).

        ``errors``, ``error_kinds`` and ``tags`` are sparse: record index -> value.
        ``input_hash`` fingerprints each record's input (0 = no input); ``extra`` holds
        any further fields a reader was asked for. ``status`` is ``complete`` or
        ``interrupted``; ``config`` what the run declares about its settings.
        """
        import numpy as np

        n = len(test_id)

        def floats(values: Sequence[float | None] | None) -> FloatArray:
            return float_column(values, n)

        def all_none(values: Sequence[Any] | None) -> bool:
            if values is None:
                return True
            if isinstance(values, Factorized):
                return values.values == [None]
            if isinstance(values, np.ndarray) and values.dtype.kind != "O":
                return values.shape[0] == 0
            if isinstance(values, list):
                return values.count(None) == n
            return all(v is None for v in values)

        line_col = (
            None
            if lines is None
            else np.arange(lines.start, lines.stop, dtype=np.int64)
            if isinstance(lines, range)
            else np.asarray(lines, dtype=np.int64)
        )
        test_ids, test_index = factorize(test_id)
        _check_blank_ids(test_ids, test_index, source, line_col)
        targets, target_index = factorize(target if target is not None else [None] * n)
        if isinstance(category, Factorized) and category.values == [None]:
            category = None
        if all_none(category):
            categories: list[str] = []
            category_codes = np.full(n, -1, dtype=np.int64)
        else:
            assert category is not None
            found, category_codes = factorize(category)
            if None in found:
                none_code = found.index(None)
                category_codes[category_codes == none_code] = -1
                category_codes[category_codes > none_code] -= 1
                found.remove(None)
            categories = found

        if all_none(passed):
            passed_col = np.full(n, -1, dtype=np.int64)
        else:
            assert passed is not None
            passed_col = (
                passed.astype(np.int64, copy=False)
                if _integral(passed)
                else np.asarray([-1 if p is None else int(p) for p in passed], dtype=np.int64)
            )
        error_map = dict(errors or {})
        is_error = np.zeros(n, dtype=np.bool_)
        if error_map:
            is_error[list(error_map)] = True

        if all_none(attempt):
            attempt_col = occurrence_rank(test_index * max(len(targets), 1) + target_index)
        else:
            assert attempt is not None
            given = (
                attempt.astype(np.int64, copy=False)
                if _integral(attempt)
                else np.asarray([0 if a is None else a for a in attempt], dtype=np.int64)
            )
            if bool((given > 0).all()):
                attempt_col = given
            else:
                ranks = occurrence_rank(test_index * max(len(targets), 1) + target_index)
                attempt_col = np.where(given > 0, given, ranks)

        return cls(
            source=source,
            format=format,
            status=status,
            config=dict(config or {}),
            started_at=started_at,
            finished_at=finished_at,
            input_hash=(
                np.zeros(n, dtype=np.int64)
                if input_hash is None
                else np.asarray(input_hash, dtype=np.int64)
            ),
            extra={k: list(v) for k, v in (extra or {}).items()},
            test_ids=test_ids,
            targets=targets,
            categories=categories,
            test_index=test_index,
            target_index=target_index,
            category_index=category_codes,
            score=_checked_scores(score, source, line_col),
            passed=passed_col,
            attempt=attempt_col,
            latency_ms=floats(latency_ms),
            wait_ms=floats(wait_ms),
            input_tokens=floats(input_tokens),
            output_tokens=floats(output_tokens),
            cost_usd=floats(cost_usd),
            is_error=is_error,
            safety_failure=(
                np.zeros(n, dtype=np.bool_)
                if all_none(safety_failure)
                else safety_failure.astype(np.bool_, copy=False)
                if _integral(safety_failure)
                else np.asarray([bool(f) for f in safety_failure or ()], dtype=np.bool_)
            ),
            errors=error_map,
            error_kinds=dict(error_kinds or {}),
            tags=dict(tags or {}),
            scorer_scores={name: floats(col) for name, col in (scorer_scores or {}).items()},
            texts=None if texts is None else {k: list(v) for k, v in texts.items()},
            lines=line_col,
        )

    @classmethod
    def from_records(
        cls, records: Iterable[Record], *, source: str = "<records>", format: str = "records"
    ) -> Run:
        """Build a run from :class:`Record` objects (handy in tests and notebooks)."""
        recs = list(records)
        names: dict[str, None] = {}
        for r in recs:
            names.update(dict.fromkeys(r.scores))
        keep_text = any(
            r.input is not None
            or r.output is not None
            or r.expected is not None
            or r.metadata is not None
            for r in recs
        )
        return cls.from_columns(
            source=source,
            format=format,
            test_id=[r.test_id for r in recs],
            score=[r.score for r in recs],
            target=[r.target for r in recs],
            passed=[r.passed for r in recs],
            attempt=[r.attempt for r in recs],
            latency_ms=[r.latency_ms for r in recs],
            wait_ms=[r.wait_ms for r in recs],
            input_tokens=[r.input_tokens for r in recs],
            output_tokens=[r.output_tokens for r in recs],
            cost_usd=[r.cost_usd for r in recs],
            errors={i: r.error for i, r in enumerate(recs) if r.error is not None},
            error_kinds={i: r.error_kind for i, r in enumerate(recs) if r.error_kind is not None},
            safety_failure=[r.safety_failure for r in recs],
            category=[r.category for r in recs],
            tags={i: r.tags for i, r in enumerate(recs) if r.tags},
            scorer_scores={n: [r.scores.get(n) for r in recs] for n in names},
            texts=(
                {name: [getattr(r, name) for r in recs] for name in TEXT_FIELDS}
                if keep_text
                else None
            ),
            lines=([r.line or 0 for r in recs] if any(r.line is not None for r in recs) else None),
        )

    # -- reading ----------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.score.shape[0])

    def __repr__(self) -> str:
        return (
            f"Run(source={self.source!r}, format={self.format!r}, records={len(self)}, "
            f"cases={len(self.test_ids)}, targets={self.target_names!r})"
        )

    @property
    def target_names(self) -> list[str]:
        """Targets named in the run, in order of first appearance (unnamed left out)."""
        return [t for t in self.targets if t is not None]

    @property
    def has_unnamed_target(self) -> bool:
        """True when some record names no target."""
        return None in self.targets

    @property
    def scorers(self) -> list[str]:
        """Scorer names present in the run, in order of first appearance."""
        return list(self.scorer_scores)

    def record(self, i: int) -> Record:
        """The ``i``-th record as a :class:`Record`."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"record {i} out of range for a run of {n} records")
        i %= n

        def opt(col: FloatArray) -> float | None:
            v = float(col[i])
            return None if math.isnan(v) else v

        cat = int(self.category_index[i])
        passed = int(self.passed[i])
        texts = self.texts or {}
        return Record(
            test_id=self.test_ids[int(self.test_index[i])],
            target=self.targets[int(self.target_index[i])],
            score=float(self.score[i]),
            scores={
                name: float(col[i])
                for name, col in self.scorer_scores.items()
                if not math.isnan(col[i])
            },
            passed=None if passed < 0 else bool(passed),
            attempt=int(self.attempt[i]),
            latency_ms=opt(self.latency_ms),
            wait_ms=opt(self.wait_ms),
            input_tokens=opt(self.input_tokens),
            output_tokens=opt(self.output_tokens),
            cost_usd=opt(self.cost_usd),
            error=self.errors.get(i),
            error_kind=self.error_kinds.get(i),
            safety_failure=bool(self.safety_failure[i]),
            category=None if cat < 0 else self.categories[cat],
            tags=self.tags.get(i, ()),
            input=texts["input"][i] if "input" in texts else None,
            output=texts["output"][i] if "output" in texts else None,
            expected=texts["expected"][i] if "expected" in texts else None,
            metadata=texts["metadata"][i] if "metadata" in texts else None,
            line=None if self.lines is None else int(self.lines[i]),
        )

    def __getitem__(self, i: int) -> Record:
        return self.record(i)

    def __iter__(self) -> Iterator[Record]:
        return (self.record(i) for i in range(len(self)))

    def records(self) -> list[Record]:
        """Every record as a :class:`Record` (costly on big runs: prefer the columns)."""
        return list(self)

    # -- subsets ----------------------------------------------------------------------

    def target_code(self, target: str) -> int:
        """The code of ``target``; :class:`PairingError` naming the targets present if absent."""
        try:
            return self.targets.index(target)
        except ValueError:
            present = ", ".join(self.target_names) or "none"
            raise PairingError(
                f"{self.source}: no records for target {target!r} (targets present: {present}); "
                "check the name",
                option="target",
            ) from None

    def select_target(self, target: str) -> Run:
        """The records of one target, as a run of their own."""
        import numpy as np

        code = self.target_code(target)
        return self.take(np.flatnonzero(self.target_index == code))

    def score_by(self, scorer: str) -> Run:
        """This run with each record's score taken from one scorer.

        Raises:
            PairingError: no such scorer (the message lists those present), or
                records that ran without an error lack it.
        """
        import numpy as np

        if self.totals is not None:
            raise PairingError(
                f"{self.source}: was read grouped by case, so its records cannot be scored "
                "by one scorer; load it without grouping"
            )
        if scorer not in self.scorer_scores:
            present = ", ".join(self.scorers) or "none"
            raise PairingError(
                f"{self.source}: no scorer named {scorer!r} (scorers present: {present})"
            )
        col = self.scorer_scores[scorer]
        missing = np.isnan(col) & ~self.is_error
        if missing.any():
            first = int(np.flatnonzero(missing)[0])
            where = (
                f"{self.source}:{int(self.lines[first])}"
                if self.lines is not None
                else (f"{self.source} (record {first + 1})")
            )
            raise PairingError(
                f"{where}: scorer {scorer!r} is missing on {int(missing.sum())} records that "
                "ran; compare on a scorer every record has, or on the overall score"
            )
        run = self.take(np.arange(len(self), dtype=np.int64))
        object.__setattr__(run, "score", np.where(np.isnan(col), 0.0, col))
        return run

    def take(self, indices: IntArray) -> Run:
        """A run of the records at ``indices`` (codes and names renumbered)."""
        import numpy as np

        idx = np.asarray(indices, dtype=np.int64)
        pos = {int(old): new for new, old in enumerate(idx.tolist())}

        def sparse(d: Mapping[int, Any]) -> dict[int, Any]:
            return {pos[k]: v for k, v in d.items() if k in pos}

        def recode(sub: IntArray, names: list[Any]) -> tuple[IntArray, list[Any]]:
            used, first = np.unique(sub, return_index=True)
            used = used[np.argsort(first, kind="stable")]
            new_names = [names[int(c)] for c in used.tolist()]
            lookup = np.full(len(names) + 1, -1, dtype=np.int64)
            lookup[used] = np.arange(len(used), dtype=np.int64)
            return lookup[sub], new_names

        test_index, test_ids = recode(self.test_index[idx], self.test_ids)
        target_index, targets = recode(self.target_index[idx], self.targets)
        cat_sub = self.category_index[idx]
        present = cat_sub >= 0
        if present.any():
            category_index = np.full(len(idx), -1, dtype=np.int64)
            category_index[present], categories = recode(cat_sub[present], self.categories)
        else:
            category_index, categories = np.full(len(idx), -1, dtype=np.int64), []
        return Run(
            source=self.source,
            format=self.format,
            status=self.status,
            config=dict(self.config),
            started_at=self.started_at,
            finished_at=self.finished_at,
            input_hash=self.input_hash[idx],
            extra={k: [v[i] for i in idx.tolist()] for k, v in self.extra.items()},
            test_ids=test_ids,
            targets=targets,
            categories=categories,
            test_index=test_index,
            target_index=target_index,
            category_index=category_index,
            score=self.score[idx],
            passed=self.passed[idx],
            attempt=self.attempt[idx],
            latency_ms=self.latency_ms[idx],
            wait_ms=self.wait_ms[idx],
            input_tokens=self.input_tokens[idx],
            output_tokens=self.output_tokens[idx],
            cost_usd=self.cost_usd[idx],
            is_error=self.is_error[idx],
            safety_failure=self.safety_failure[idx],
            errors=sparse(self.errors),
            error_kinds=sparse(self.error_kinds),
            tags=sparse(self.tags),
            scorer_scores={
                name: col[idx]
                for name, col in self.scorer_scores.items()
                if not np.isnan(col[idx]).all()
            },
            texts=(
                None
                if self.texts is None
                else {k: [v[i] for i in idx.tolist()] for k, v in self.texts.items()}
            ),
            lines=None if self.lines is None else self.lines[idx],
            case_order=self.case_order,
            sequential=self.sequential,
            totals=None if self.totals is None else self.totals.take(idx),
        )

    # -- conveniences that hand over to later layers (imported when called) ---------

    def compare(
        self,
        baseline: Run | str | os.PathLike[str],
        threshold: float | None = None,
        **options: Unpack[CompareOptions],
    ) -> Comparison:
        """Compare this run, the **candidate**, with ``baseline``.

        ``self`` is the candidate and the argument the baseline, so the call reads
        ``candidate.compare(baseline)``: ``after.compare(before)`` is exactly
        ``evaldelta.compare(before, after)``, with the same keyword parameters
        (``baseline_target``, ``candidate_target``, ``settings``,
        ``allow_dataset_change``, ``sample``, ``scorer``: see :func:`evaldelta.compare`),
        and returns the same :class:`~evaldelta.analysis._comparison.Comparison`.

        Args:
            baseline: the run to compare with, or the path of a results file.
            threshold: smallest delta that counts as a win or a loss (default 0.1).
        """
        from evaldelta.api import compare

        return compare(baseline, self, threshold, **options)

    def to_pandas(self) -> Any:
        """The records as a pandas ``DataFrame``, one row per record (needs pandas:
        ``pip install 'evaldelta[pandas]'``)."""
        from evaldelta.report._frames import run_frame

        return run_frame(self)


#: Largest score magnitude accepted: far beyond any real metric, and small enough
#: that sums and differences of a million scores stay finite.
MAX_ABS_SCORE = 1e12


def _integral(values: object) -> TypeGuard[IntArray | BoolArray]:
    """Whether a column is a numpy array of integers or booleans (taken as it is)."""
    import numpy as np

    return isinstance(values, np.ndarray) and values.dtype.kind in "biu"


def _check_blank_ids(
    test_ids: list[Any], test_index: IntArray, source: str, lines: IntArray | None
) -> None:
    """Refuse a test id of white space only, as readers refuse an empty one."""
    import numpy as np

    blank = next((k for k, t in enumerate(test_ids) if isinstance(t, str) and not t.strip()), None)
    if blank is None:
        return
    i = int(np.flatnonzero(test_index == blank)[0])
    where = f"{source}:{int(lines[i])}" if lines is not None else f"{source} (record {i + 1})"
    raise InputError(
        f'{where}: "test_id" is only white space ({test_ids[blank]!r}); every record needs '
        "a test id"
    )


def _checked_scores(score: Sequence[float], source: str, lines: IntArray | None) -> FloatArray:
    import numpy as np

    col = np.asarray(score, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(col) <= MAX_ABS_SCORE)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = f"{source}:{int(lines[i])}" if lines is not None else f"{source} (record {i + 1})"
        raise InputError(f'{where}: "score" must be a finite number within +-1e12, got {col[i]:g}')
    return col


def occurrence_rank(keys: IntArray) -> IntArray:
    """1-based rank of each entry among the entries with the same key, in order.

    ``[7, 3, 7, 7, 3] -> [1, 1, 2, 3, 2]``: the attempt number of each record of a case.
    """
    import numpy as np

    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    group_start = np.repeat(starts, np.diff(np.r_[starts, n]))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n, dtype=np.int64) - group_start + 1
    return ranks
