"""How many cases a comparison needs, and the smallest effect a given number can detect.

Paired normal approximation (Miller 2024, "Adding Error Bars to Evals", on power):

    n = (z_{1−α/2} + z_{1−β})² · ω² / δ²,   δ = (z_{1−α/2} + z_{1−β}) · ω / √n,

with ω² = Var(A) + Var(B) − 2 Cov(A, B), the per-case variance of the paired
difference. For pass rates without data, Var = p(1 − p) and Cov = r · sd_A · sd_B
for a stated correlation r.

Attempts: only the within-case part of a variance shrinks with K attempts per
case. Pass rates alone cannot tell between- from within-case variance, so:

- without ``within_variance``, all of p(1 − p) is taken as between-case (each
  case passes or fails for good) and ``attempts`` changes nothing;
- with ``within_variance`` = w (per attempt, the same in both runs),
  Var_X = (p_X(1 − p_X) − w) + w / K. The covariance comes from the cases
  alone, so it does not shrink with K: r is the correlation of single-attempt
  outcomes, Cov = r · √(p_A(1 − p_A) · p_B(1 − p_B)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaldelta._plain import picked
from evaldelta.errors import UsageError
from evaldelta.stats._intervals import (
    as_values,
    check_probability,
    clean_float,
    finite_number,
    whole_number,
    z_value,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["PowerResult", "cases_needed", "minimum_detectable_effect", "paired_variance"]

_FORMULA = "paired normal approximation, n = (z_{1-alpha/2} + z_{1-beta})^2 * omega^2 / delta^2"
_RATES = "omega^2 = p_A(1-p_A) + p_B(1-p_B) - 2 r sd_A sd_B"
_BETWEEN_ONLY = "all variance taken as between-case, so attempts do not change it"
_WITHIN = (
    "within-case variance w per attempt divided by K attempts, "
    "r the correlation of single-attempt outcomes"
)
#: Grid on which the minimum detectable effect is first bracketed, before bisection.
_GRID = 2048


@dataclass(frozen=True, slots=True)
class PowerResult:
    """Cases needed for an effect, or the minimum detectable effect for some cases.

    ``cases`` is rounded up; ``omega2`` is the per-case variance of the paired
    difference used. ``effect`` is NaN when no improvement up to a pass rate of
    1 is detectable with the given cases.
    """

    cases: int | None
    effect: float
    alpha: float
    power: float
    baseline_rate: float | None
    correlation: float | None
    attempts: int
    omega2: float
    method: str

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: floats to 12 decimals, NaN as ``None``."""
        spec = "cases ~effect ~alpha ~power ~baseline_rate ~correlation attempts ~omega2 method"
        return picked(self, spec, clean_float)


def _check_rate(name: str, value: float) -> float:
    rate = finite_number(name, value)
    if not 0 < rate < 1:
        raise UsageError(f"{name} must be between 0 and 1 (exclusive), got {value!r}")
    return rate


def _check_correlation(value: float) -> float:
    r = finite_number("correlation", value)
    if not -1 <= r <= 1:
        raise UsageError(f"correlation must be between -1 and 1, got {value!r}")
    return r


def _check_within(value: float | None, limit: float, where: str) -> float | None:
    if value is None:
        return None
    w = finite_number("within_variance", value)
    if not 0 <= w <= limit:
        raise UsageError(
            f"within_variance must be between 0 and p(1-p) = {limit:.6g} {where}, got {value!r}"
        )
    return w


def _z_sum(alpha: float, power: float) -> float:
    from statistics import NormalDist

    return z_value(1 - alpha) + NormalDist().inv_cdf(power)


def _variance(rate: float, within: float | None, attempts: int) -> float:
    """Per-case variance of a K-attempt mean pass rate (see the module docstring)."""
    total = rate * (1 - rate)
    if within is None:
        return total
    part = min(within, total)  # a pass rate p cannot vary more than p(1-p) within a case
    return total - part + part / attempts


def _omega2(
    baseline_rate: float, candidate_rate: float, r: float, within: float | None, attempts: int
) -> float:
    cov = r * math.sqrt(baseline_rate * (1 - baseline_rate) * candidate_rate * (1 - candidate_rate))
    return (
        _variance(baseline_rate, within, attempts)
        + _variance(candidate_rate, within, attempts)
        - 2 * cov
    )


def _method(within: float | None) -> str:
    return f"{_FORMULA}; {_RATES}; {_BETWEEN_ONLY if within is None else _WITHIN}"


def cases_needed(
    baseline_rate: float,
    effect: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    correlation: float = 0.0,
    attempts: int = 1,
    within_variance: float | None = None,
) -> PowerResult:
    """Cases needed to detect a change ``effect`` in a pass rate (paired normal approximation).

    n = (z_{1−α/2} + z_{1−β})² · ω² / δ², rounded up, with
    ω² = p_A(1−p_A) + p_B(1−p_B) − 2 r sd_A sd_B and p_B = p_A + δ. See the module
    docstring for ``attempts`` and ``within_variance``.

    Example: p_A = 0.80, δ = 0.03, r = 0, α = 0.05, power 0.8 -> 2626 cases.

    Raises UsageError for a value out of range, naming it and the range.
    """
    p_a = _check_rate("baseline_rate", baseline_rate)
    delta = finite_number("effect", effect)
    if delta == 0:
        raise UsageError("effect must be a non-zero change in pass rate, got 0")
    p_b = p_a + delta
    if not 0 < p_b < 1:
        raise UsageError(
            f"baseline_rate + effect must be between 0 and 1 (exclusive), "
            f"got {p_a!r} + {delta!r} = {p_b:.6g}"
        )
    alpha = check_probability("alpha", alpha)
    power = check_probability("power", power)
    z = _z_sum(alpha, power)
    r = _check_correlation(correlation)
    k = whole_number("attempts", attempts, 1)
    limit = min(p_a * (1 - p_a), p_b * (1 - p_b))
    within = _check_within(within_variance, limit, "of both runs")
    omega2 = _omega2(p_a, p_b, r, within, k)
    if omega2 <= 0:
        raise UsageError(
            f"correlation {r!r} leaves no variance in the paired difference "
            f"for pass rates {p_a!r} and {p_b:.6g}: use a lower correlation"
        )
    # Rounding first keeps float noise (2626.0000000001) from adding a case.
    n = max(1, math.ceil(round(z * z * omega2 / (delta * delta), 9)))
    return PowerResult(
        cases=n,
        effect=delta,
        alpha=alpha,
        power=power,
        baseline_rate=p_a,
        correlation=r,
        attempts=k,
        omega2=omega2,
        method=_method(within),
    )


def minimum_detectable_effect(
    cases: int,
    *,
    baseline_rate: float | None = None,
    omega2: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    correlation: float = 0.0,
    attempts: int = 1,
    within_variance: float | None = None,
) -> PowerResult:
    """The smallest improvement ``cases`` paired cases detect: δ = (z_{1−α/2} + z_{1−β}) · ω / √n.

    Give exactly one of:

    - ``omega2``, the per-case variance of the paired difference estimated from
      real runs (see :func:`paired_variance`): used as it is, since it already
      reflects the runs' attempts (``attempts`` is only recorded);
    - ``baseline_rate``: ω then depends on p_B = p_A + δ, and the smallest
      positive δ solving the equation is found by bracketing on a grid and
      bisection. ``correlation``, ``attempts`` and ``within_variance`` act as
      in :func:`cases_needed`. ``effect`` is NaN when no improvement up to a
      pass rate of 1 is detectable.
    """
    n = whole_number("cases", cases, 1)
    alpha = check_probability("alpha", alpha)
    power = check_probability("power", power)
    z = _z_sum(alpha, power)
    k = whole_number("attempts", attempts, 1)
    if baseline_rate is not None and omega2 is not None:
        raise UsageError("give baseline_rate or omega2, not both")
    scale = z / math.sqrt(n)

    if omega2 is not None:
        if within_variance is not None:
            raise UsageError(
                "within_variance applies to baseline_rate only: omega2 from real runs "
                "already holds the within-case variance"
            )
        variance = finite_number("omega2", omega2)
        if variance < 0:
            raise UsageError(f"omega2 must be a variance >= 0, got {omega2!r}")
        return PowerResult(
            cases=n,
            effect=scale * math.sqrt(variance),
            alpha=alpha,
            power=power,
            baseline_rate=None,
            correlation=None,
            attempts=k,
            omega2=variance,
            method=(
                "paired normal approximation, delta = (z_{1-alpha/2} + z_{1-beta}) "
                "* omega / sqrt(n); omega^2 from the runs"
            ),
        )

    if baseline_rate is None:
        raise UsageError("give baseline_rate (pass rates) or omega2 (estimated from runs)")
    p_a = _check_rate("baseline_rate", baseline_rate)
    r = _check_correlation(correlation)
    within = _check_within(within_variance, p_a * (1 - p_a), "of the baseline")

    def gap(delta: float) -> float:
        """Negative while delta is below what n cases detect at p_B = p_A + delta."""
        return delta - scale * math.sqrt(max(_omega2(p_a, p_a + delta, r, within, k), 0.0))

    top = 1 - p_a
    low = 0.0
    high = math.nan
    for j in range(1, _GRID + 1):
        delta = top * j / _GRID
        if gap(delta) >= 0:
            high = delta
            break
        low = delta
    if math.isnan(high):
        effect = math.nan
    else:
        for _ in range(200):
            mid = (low + high) / 2
            if mid in (low, high):
                break
            if gap(mid) < 0:
                low = mid
            else:
                high = mid
        effect = high
    at = p_a + effect if math.isfinite(effect) else 1.0
    return PowerResult(
        cases=n,
        effect=effect,
        alpha=alpha,
        power=power,
        baseline_rate=p_a,
        correlation=r,
        attempts=k,
        omega2=max(_omega2(p_a, at, r, within, k), 0.0),
        method=(
            "paired normal approximation, delta = (z_{1-alpha/2} + z_{1-beta}) * omega / sqrt(n) "
            f"solved for delta; {_RATES}; {_BETWEEN_ONLY if within is None else _WITHIN}"
        ),
    )


def paired_variance(baseline: ArrayLike, candidate: ArrayLike) -> tuple[float, float, float, float]:
    """Per-case (var_A, var_B, cov_AB, correlation) of two aligned score arrays, ddof=1.

    For power from real runs: ω² = var_A + var_B − 2 cov_AB. The correlation is
    0 when either variance is 0; with fewer than 2 cases all four are NaN.
    """
    import numpy as np

    a = as_values(baseline, "baseline")
    b = as_values(candidate, "candidate")
    if a.shape != b.shape:
        raise UsageError(
            f"baseline and candidate must hold one score per case each: "
            f"got {a.shape[0]} and {b.shape[0]} scores"
        )
    n = int(a.shape[0])
    if n < 2:
        return math.nan, math.nan, math.nan, math.nan
    ea = a - a.mean()
    eb = b - b.mean()
    var_a = float(ea @ ea) / (n - 1)
    var_b = float(eb @ eb) / (n - 1)
    cov = float(ea @ eb) / (n - 1)
    corr = 0.0 if var_a <= 0 or var_b <= 0 else cov / math.sqrt(var_a * var_b)
    return var_a, var_b, cov, float(np.clip(corr, -1.0, 1.0))
