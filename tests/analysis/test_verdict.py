"""The verdict as a pure function of the figures."""

from __future__ import annotations

import math

from evaldelta.analysis._figures import PairedMetric
from evaldelta.analysis._verdict import decide, format_change, level_text
from evaldelta.stats import Interval


def iv(low: float, high: float, est: float | None = None, n: int = 100) -> Interval:
    mid = (low + high) / 2 if est is None else est
    return Interval(mid, low, high, 0.95, "bootstrap", n, 10_000, 0)


def verdict(score: Interval, **kw: object) -> tuple[str, str]:
    args: dict[str, object] = {
        "points": True,
        "new_safety_failures": [],
        "latency": None,
        "cost": None,
        "max_slowdown": 0.1,
        "max_cost_increase": 0.1,
    }
    args.update(kw)
    v = decide(score, **args)  # type: ignore[arg-type]
    return v.kind, v.reason


def test_better_worse_inconclusive() -> None:
    assert verdict(iv(0.01, 0.05))[0] == "Better"
    assert verdict(iv(-0.05, -0.01))[0] == "Worse"
    kind, reason = verdict(iv(-0.091, 0.109))
    assert kind == "Inconclusive"
    assert reason == "This could be chance: the true change is plausibly between -9 and +11 points."


def test_interval_touching_zero_is_inconclusive() -> None:
    assert verdict(iv(0.0, 0.05))[0] == "Inconclusive"
    assert verdict(iv(-0.05, 0.0))[0] == "Inconclusive"


def test_new_safety_failure_is_worse_even_when_better() -> None:
    kind, reason = verdict(iv(0.05, 0.10), new_safety_failures=["q1", "q2"])
    assert kind == "Worse"
    assert reason == "2 new safety failures in the candidate (q1, q2)."


def _metric(base: float, cand: float, low: float, high: float) -> PairedMetric:
    return PairedMetric("latency_ms", "ms", 100, base, cand, iv(low, high, cand - base))


def test_trade_off_needs_significant_and_large_growth() -> None:
    slower = _metric(1000, 1300, 200, 400)
    kind, reason = verdict(iv(0.02, 0.06), latency=slower)
    assert kind == "Trade-off"
    assert "+30% slower" in reason
    # Significant but within tolerance: still Better.
    assert verdict(iv(0.02, 0.06), latency=_metric(1000, 1050, 10, 90))[0] == "Better"
    # Large but not significant: still Better.
    assert verdict(iv(0.02, 0.06), latency=_metric(1000, 1300, -50, 650))[0] == "Better"
    cost = PairedMetric("cost_usd", "USD", 100, 0.01, 0.02, iv(0.008, 0.012, 0.01))
    assert "+100% costlier" in verdict(iv(0.02, 0.06), cost=cost)[1]


def test_no_cases_is_inconclusive() -> None:
    empty = Interval(math.nan, math.nan, math.nan, 0.95, "none", 0)
    assert verdict(empty)[0] == "Inconclusive"


def test_units() -> None:
    assert format_change(0.1234, True) == "+12"
    assert format_change(-0.004, True, 1) == "-0.4"
    assert format_change(2.5, False) == "+2.5"
    assert level_text(0.95) == "95%"
    assert level_text(0.975) == "97.5%"
    assert level_text(1 - 0.05 / 3) == "98.33%"
    _, reason = verdict(iv(-1.5, 2.5), points=False)
    assert reason == "This could be chance: the true change is plausibly between -1.5 and +2.5."
