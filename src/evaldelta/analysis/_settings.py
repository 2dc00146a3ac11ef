"""The knobs of a comparison, in one place, with their defaults."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, TypedDict

from evaldelta.errors import UsageError

__all__ = [
    "DEFAULT_MARGIN",
    "DEFAULT_REGRESSION_THRESHOLD",
    "DEFAULT_TOLERANCE",
    "CompareOptions",
    "Settings",
]

#: A change smaller than this (1 point) does not matter: the No change verdict's margin.
DEFAULT_MARGIN = 0.01
#: compare_runs' defaults (spec 004): a case within this of its baseline is unchanged...
DEFAULT_TOLERANCE = 0.01
#: ...and a scorer whose mean drops by more than this regressed.
DEFAULT_REGRESSION_THRESHOLD = 0.05


@dataclass(frozen=True, slots=True)
class Settings:
    """How to compare two runs.

    Attributes:
        threshold: smallest per-case delta that counts as a win or a loss.
        pass_threshold: an attempt without a ``passed`` flag passes at this score.
        alpha: 1 - the confidence level of every interval (0.05: 95% intervals).
        resamples: bootstrap resamples.
        seed: seed of the bootstrap's random generator, so output is reproducible.
        cluster_by: a field whose equal values mark questions that come in groups
            (``category``, or any top-level field of the records); intervals then
            resample whole groups.
        max_slowdown / max_cost_increase: relative growth in latency / cost beyond
            which a significantly better candidate is a Trade-off, not Better.
        margin: a change smaller than this does not matter (score units: 0.01, the
            default, is 1 point): an interval within [-margin, +margin] is No change,
            and so are runs in which no case changed at all. ``None`` or 0: no
            equivalence verdict.
        sequential: also take the cases one by one in the order they ran, with an
            anytime-valid confidence sequence: where it would have settled, and what
            stopping there would have saved (a run that stopped early always is).
        min_cases: the fewest cases a sequential comparison settles on.
        metric: what decides the verdict: ``score`` (the mean score, the default) or
            ``pass_rate`` (the share of attempts that pass).
    """

    threshold: float = 0.1
    pass_threshold: float = 0.5
    alpha: float = 0.05
    resamples: int = 10_000
    seed: int = 0
    cluster_by: str | None = None
    max_slowdown: float = 0.10
    max_cost_increase: float = 0.10
    margin: float | None = DEFAULT_MARGIN
    sequential: bool = False
    min_cases: int = 20
    metric: str = "score"

    def __post_init__(self) -> None:
        def bad(name: str, value: object, allowed: str) -> UsageError:
            return UsageError(f"{name} must be {allowed}, got {value!r}", option=name)

        if not (math.isfinite(self.threshold) and self.threshold >= 0):
            raise bad("threshold", self.threshold, "a number >= 0")
        if not math.isfinite(self.pass_threshold):
            raise bad("pass_threshold", self.pass_threshold, "a finite number")
        if not 0 < self.alpha < 1:
            raise bad("alpha", self.alpha, "between 0 and 1 (0.05 for 95% intervals)")
        if self.resamples < 100:
            raise bad("resamples", self.resamples, "at least 100 (10000 is the default)")
        for name in ("max_slowdown", "max_cost_increase"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise bad(name, value, "a fraction >= 0 (0.1 for 10%)")
        if self.margin is not None and not (math.isfinite(self.margin) and self.margin >= 0):
            raise bad("margin", self.margin, "a number >= 0 (0.01 for 1 point)")
        if (
            isinstance(self.min_cases, bool)
            or not isinstance(self.min_cases, int)
            or (self.min_cases < 1)
        ):
            raise bad("min_cases", self.min_cases, "a whole number >= 1")
        if self.metric not in ("score", "pass_rate"):
            raise bad("metric", self.metric, "'score' or 'pass_rate'")

    @property
    def level(self) -> float:
        """The confidence level, 1 - alpha."""
        return 1 - self.alpha

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class CompareOptions(TypedDict, total=False):
    """The keyword parameters of :func:`evaldelta.compare`, as :meth:`Run.compare
    <evaldelta.model.Run.compare>` passes them on (see that function for each)."""

    baseline_target: str | None
    candidate_target: str | None
    settings: Settings | None
    allow_dataset_change: bool
    sample: int | None
    scorer: str | None
