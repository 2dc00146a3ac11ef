"""agentv's vocabulary, shared by the readers of JSON Lines in its shape (``jsonl``, its
plain path, and ``mapped``): the statuses that mean an attempt did not run or its run
did not finish, and the columns both paths of the JSONL reader build alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from evaldelta.io._errors import shown

if TYPE_CHECKING:
    from evaldelta.io._source import LineChunk
    from evaldelta.model import IntArray

#: ``execution_status`` values that mean the attempt did not run.
ERROR_STATUSES = frozenset(
    {
        "execution_error",
        "error",
        "errored",
        "timeout",
        "timed_out",
        "crashed",
        "infra_error",
        "rate_limited",
        "provider_error",
    }
)
#: Of those, the ones that blame the infrastructure, not the agent: left out of scores.
INFRA_STATUSES = frozenset(
    {"timeout", "timed_out", "infra_error", "rate_limited", "provider_error"}
)

#: The ``run_status`` of a run that ``evaldelta eval --stop-when-settled`` stopped once its
#: comparison was settled (as ``runs export`` writes it).
STOPPED_EARLY = "stopped early"
#: ``run_status`` values by which a record says its run did not finish.
INTERRUPTED_STATUSES = frozenset({"interrupted", "incomplete", "cancelled", "canceled", "error"})


def one_object_per_line(chunk: LineChunk, n: int) -> bool:
    """True when record ``i`` is certainly on line ``i + 1``: ``n`` lines, each
    starting with ``{``, none blank. (Anything else takes the careful path.)"""
    import numpy as np

    data, breaks = chunk.data, chunk.breaks
    size = len(data)
    ends_with_break = size > 0 and data[size - 1] == 10
    lines = int(breaks.shape[0]) + (0 if ends_with_break else 1)
    if lines != n:
        return False
    opening = int(size > 0 and data[0] == 123)  # "{"
    after = breaks[:-1] + 1 if ends_with_break else breaks + 1
    opening += int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8)[after] == 123))
    return opening == n


def fill(primary: list[Any], *fallbacks: Callable[[], list[Any]]) -> list[Any]:
    """``primary``, with its ``None`` entries taken from the first fallback column
    that has a value there (fallback columns are built only when needed)."""
    if primary.count(None) == 0:
        return primary
    out = list(primary)
    for make in fallbacks:
        missing = [i for i, v in enumerate(out) if v is None]
        if not missing:
            break
        column = make()
        for i in missing:
            out[i] = column[i]
    return out


def scorer_columns(recs: list[Any]) -> dict[str, list[float | None]]:
    """Scorer name -> score per record (``None`` where a record lacks it)."""
    raw = [r.scores for r in recs]
    if raw.count(None) == len(raw):
        return {}
    if all(type(x) is dict for x in raw if x is not None):
        # The common mapping form: no per-record conversion needed.
        mappings: list[Any] = raw
        names = dict.fromkeys(k for d in mappings if d for k in d)
        return {name: [d.get(name) if d is not None else None for d in mappings] for name in names}
    per_record: list[dict[str, float | None] | None] = []
    for scores in raw:
        if not scores:
            per_record.append(None)
        elif isinstance(scores, dict):
            per_record.append(scores)
        else:
            # agentv's list form; a scorer named twice in one record counts once, averaged.
            seen: dict[str, list[float]] = {}
            for s in scores:
                if s.name is not None and s.score is not None:
                    seen.setdefault(s.name, []).append(s.score)
            per_record.append({k: sum(v) / len(v) for k, v in seen.items()})
    names = dict.fromkeys(k for d in per_record if d for k in d)
    return {name: [d.get(name) if d is not None else None for d in per_record] for name in names}


def passed_column(passed: list[bool | None]) -> IntArray:
    """``passed`` as :attr:`Run.passed` holds it: 1 / 0, or -1 where a record does not say."""
    import numpy as np

    if passed.count(None) == len(passed):
        return np.full(len(passed), -1, dtype=np.int64)
    return np.asarray([-1 if p is None else int(p) for p in passed], dtype=np.int64)


#: The attempt numbers a record may give: what the column of attempts holds (64 bits).
#: A number below 1 counts as none (numbered in order), as it always has.
ATTEMPT_MIN, ATTEMPT_MAX = -(2**63), 2**63 - 1
#: What a column of attempt numbers that must count from 1 (CSV, ``--map``) may hold.
WHOLE_ATTEMPT = f"a whole number from 1 to {ATTEMPT_MAX}"


class AttemptRangeError(ValueError):
    """A record's attempt number is beyond what the column holds: ``index`` is the
    record, and the message says what an attempt number must be."""

    def __init__(self, index: int, value: int) -> None:
        super().__init__(
            f'"attempt" must be an integer from {ATTEMPT_MIN} to {ATTEMPT_MAX}, got '
            f"{shown(value)}; number a case's attempts 1, 2, 3, ... or leave the field out"
        )
        self.index = index


def attempt_column(attempts: list[int | None]) -> IntArray:
    """Attempt numbers, 0 where a record gives none (numbered later, in order).

    Raises:
        AttemptRangeError: a number is below :data:`ATTEMPT_MIN` or above
            :data:`ATTEMPT_MAX`.
    """
    import numpy as np

    try:
        try:
            return np.asarray(attempts, dtype=np.int64)
        except TypeError:  # some record gives none
            return np.asarray([0 if a is None else a for a in attempts], dtype=np.int64)
    except OverflowError:
        i, value = next(
            (i, a)
            for i, a in enumerate(attempts)
            if a is not None and not ATTEMPT_MIN <= a <= ATTEMPT_MAX
        )
        raise AttemptRangeError(i, value) from None
