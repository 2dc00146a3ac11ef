"""Better, Worse, Trade-off, No change or Inconclusive: one pure function of the figures.

- No change: given a margin, the interval lies within [-margin, +margin] (an
  equivalence test: whatever changed, it is smaller than what the user said matters).
- Better: the confidence interval of the mean score delta lies above 0.
- Worse: it lies below 0, or the candidate has a new safety failure.
- Trade-off: Better, but latency or cost grew significantly (its interval lies
  above 0) and by more than the tolerance (10% by default).
- Inconclusive: anything else. It means "could not tell", never "the same": the
  verdict gives the range the true change plausibly lies in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from evaldelta.analysis._figures import PairedMetric
    from evaldelta.stats import Interval

__all__ = ["Verdict", "decide", "format_change", "format_p", "level_text"]

Kind = Literal["Better", "Worse", "Trade-off", "No change", "Inconclusive"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer, and the sentence that explains it."""

    kind: Kind
    reason: str
    low: float
    high: float
    unit: str

    def __post_init__(self) -> None:
        # A sentence of its own: "Inconclusive. This could be chance: ...".
        object.__setattr__(self, "reason", self.reason[:1].upper() + self.reason[1:])

    def to_dict(self) -> dict[str, Any]:
        def num(x: float) -> float | None:
            return None if math.isnan(x) else round(x, 12)

        return {
            "verdict": self.kind,
            "code": self.kind.lower().replace("-", "_").replace(" ", "_"),
            "reason": self.reason,
            "plausible_change": {"low": num(self.low), "high": num(self.high), "unit": self.unit},
        }

    def sentence(self) -> str:
        return f"{self.kind}. {self.reason}"


def level_text(level: float) -> str:
    """95% for 0.95; 97.5% and 98.33% for the levels of several comparisons."""
    pct = level * 100
    return f"{pct:.0f}%" if abs(pct - round(pct)) < 1e-9 else f"{pct:.4g}%"


def format_p(p: float, spec: str = ".3f") -> str:
    """``p = 0.042``, and ``p < 0.001`` below that (never the misleading ``p = 0.000``)."""
    if math.isnan(p):
        return "p = n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:{spec}}"


def format_change(value: float, points: bool, digits: int = 0) -> str:
    """A change in points (scores in [0, 1] times 100) or in score units, signed."""
    if math.isnan(value):
        return "n/a"
    if points:
        return f"{value * 100:+.{digits}f}"
    return f"{value:+.{max(digits, 3)}g}"


def decide(
    score: Interval,
    *,
    points: bool,
    new_safety_failures: list[str],
    latency: PairedMetric | None,
    cost: PairedMetric | None,
    max_slowdown: float,
    max_cost_increase: float,
    small_sample_p: float | None = None,
    alpha: float = 0.05,
    margin: float | None = None,
    interval_name: str = "interval",
    same_delta: float | None = None,
    pass_rates_moved: bool = False,
    what: str = "score",
) -> Verdict:
    """The verdict from the interval of the mean score delta and the guard rails.

    Args:
        score: interval of the mean per-case score delta (candidate - baseline).
        points: scores lie in [0, 1], so changes read as points (x100).
        new_safety_failures: test ids that fail a safety check only in the candidate.
        latency, cost: paired figures, or None when the runs do not report them.
        small_sample_p: with too few clusters for any interval, or on few cases whose
            changes do not vary (a zero-width interval), the exact sign-flip test's
            p-value over the units; the interval alone is then not enough for Better
            or Worse.
        margin: a change smaller than this (in score units: 0.01 is 1 point) does not
            matter: an interval within [-margin, +margin] is No change.
        interval_name: what ``score`` is, in the sentence (``interval``, or
            ``confidence sequence`` for a run that stopped early).
        same_delta: the change of every case, when all (two or more) changed by the
            same; None when the changes vary.
        pass_rates_moved: some case's pass rate changed (so "no case changed" is not
            said when only the scores stayed equal).
        what: what ``score`` measures, in the sentence: ``score`` or ``pass rate``.
    """
    unit = "points" if points else "score"
    low, high = score.ci_low, score.ci_high
    level = level_text(score.level)

    # Every case changed by the same: a zero-width interval says nothing varies, not
    # that the change is certain; the sentence says so instead of "between x and x".
    flat = same_delta is not None and high - low < 1e-12
    if margin is not None and margin <= 0:
        margin = None

    def rng(digits: int = 0) -> str:
        lo, hi = format_change(low, points, digits), format_change(high, points, digits)
        if flat:
            return f"exactly {lo}{' ' + unit if points else ''} in every case"
        return f"between {lo} and {hi} {unit}" if points else f"between {lo} and {hi}"

    if new_safety_failures:
        shown = ", ".join(new_safety_failures[:5])
        more = f" and {len(new_safety_failures) - 5} more" if len(new_safety_failures) > 5 else ""
        return Verdict(
            "Worse",
            f"{len(new_safety_failures)} new safety failure"
            f"{'s' if len(new_safety_failures) != 1 else ''} in the candidate ({shown}{more}).",
            low,
            high,
            unit,
        )
    if score.n == 1 and (math.isnan(low) or math.isnan(high)):
        return Verdict(
            "Inconclusive",
            f"too few {score.units} to tell (1): one alone cannot say how much of the change "
            "is chance.",
            low,
            high,
            unit,
        )
    if score.n == 0 or math.isnan(low) or math.isnan(high):
        return Verdict(
            "Inconclusive",
            "there are no cases in common to compare, so the change cannot be told.",
            low,
            high,
            unit,
        )
    unchanged = same_delta is not None and abs(same_delta) < 1e-12 and not pass_rates_moved
    if unchanged and margin is None:
        return Verdict(
            "Inconclusive",
            "no case changed (every delta is exactly 0): there is no change to tell from "
            "none; give a margin (--margin POINTS) to call it No change.",
            low,
            high,
            unit,
        )
    alike = (
        "scored the same in both runs and passed alike"
        if what == "score"
        else "passed alike in both runs"
    )
    if unchanged and margin is not None:
        within = format_change(margin, points, 1 if points and margin < 0.1 else 0).lstrip("+")
        return Verdict(
            "No change",
            f"no case changed: all {f'{score.n:,}' if score.units == 'cases' else 'the'} cases "
            f"{alike}, "
            f"so the change is within +/-{within}{' points' if points else ''}.",
            low,
            high,
            unit,
        )

    def exactly() -> str:
        if abs(low) < 1e-12:
            return f"no case's {what} changed"
        whose = "every case" if what == "score" else f"every case's {what}"
        return f"{whose} changed by exactly {format_change(low, points, 1)}" + (
            " points" if points else ""
        )

    def because() -> str:
        """Why the change is real: the interval, or when nothing varies, the test."""
        if not flat:
            return f"the true change is plausibly {rng(digits)} ({level} {interval_name})"
        if small_sample_p is not None:
            return (
                f"{exactly()}, and an exact sign-flip test over the {score.n} {score.units} "
                f"finds {format_p(small_sample_p, '.3g')}"
            )
        return f"{exactly()} (nothing varies, so there is no interval)"

    # One decimal for a narrow interval, or for a bound that would read as 0 but is not.
    near_zero = any(0 < abs(x) < 0.005 for x in (low, high))
    digits = 1 if points and (high - low < 0.1 or near_zero) else 0
    if margin is not None and -margin - 1e-12 <= low and high <= margin + 1e-12:
        within = format_change(margin, points, 1 if points and margin < 0.1 else 0).lstrip("+")
        return Verdict(
            "No change",
            (
                f"{exactly()}, so the change is within +/-{within}{' points' if points else ''}."
                if flat
                else f"the true change is within +/-{within}{' points' if points else ''}: "
                f"plausibly {rng(max(digits, 1) if points else digits)} ({level} {interval_name})."
            ),
            low,
            high,
            unit,
        )

    if (high < 0 or low > 0) and small_sample_p is not None and small_sample_p >= alpha:
        says = exactly() if flat else f"the interval says {rng(digits)}"
        return Verdict(
            "Inconclusive",
            f"too few {score.units} to tell ({score.n}): {says}, "
            f"but an exact sign-flip test over the {score.units} finds "
            f"{format_p(small_sample_p, '.3g')}, so this could be chance.",
            low,
            high,
            unit,
        )
    if high < 0:
        return Verdict(
            "Worse",
            f"the candidate {'scores lower' if what == 'score' else 'passes less often'}: "
            f"{because()}.",
            low,
            high,
            unit,
        )
    if low > 0:
        costs = []
        for metric, tolerance, word in (
            (latency, max_slowdown, "slower"),
            (cost, max_cost_increase, "costlier"),
        ):
            if metric is None or not metric.delta.ci_low > 0:
                continue
            rel = metric.relative
            if metric.baseline_mean == 0:
                costs.append(f"{word} (from nothing to {metric.candidate_mean:.4g} {metric.unit})")
            elif not math.isnan(rel) and rel > tolerance:
                costs.append(f"{rel:+.0%} {word}")
        if costs:
            return Verdict(
                "Trade-off",
                f"the candidate {'scores higher' if what == 'score' else 'passes more often'} "
                f"(plausibly {rng(digits)}), but it is "
                f"{' and '.join(costs)}, beyond the tolerance.",
                low,
                high,
                unit,
            )
        return Verdict(
            "Better",
            f"the candidate {'scores higher' if what == 'score' else 'passes more often'}: "
            f"{because()}.",
            low,
            high,
            unit,
        )
    named = "" if interval_name == "interval" else f" ({level} {interval_name})"
    return Verdict(
        "Inconclusive",
        f"this could be chance: the true change is plausibly {rng(digits)}{named}.",
        low,
        high,
        unit,
    )
