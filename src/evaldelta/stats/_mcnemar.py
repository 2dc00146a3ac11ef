"""Exact McNemar test on the cases that flipped cleanly between two runs.

b (``regressed``) counts cases that passed in the baseline on every attempt and
failed in the candidate on every attempt; c (``improved``) the reverse. Under
"no difference" each flip goes either way with probability 1/2, so the exact
two-sided p-value is a binomial tail (McNemar 1947; exact form as in
``scipy.stats.binomtest(min(b, c), b + c, 0.5)``):

    p = min(1, 2 · Σ_{i=0..min(b,c)} C(b+c, i) / 2^(b+c)),  p = 1 when b + c = 0.

Cases that changed only partly are not flips; the caller counts them apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from evaldelta._plain import picked
from evaldelta.stats._intervals import clean_float, whole_number

__all__ = ["McNemarResult", "mcnemar_exact"]

#: Up to this many flips the tail is summed exactly in integers.
_EXACT_LIMIT = 1000
_LN_2PI = math.log(2 * math.pi)


@dataclass(frozen=True, slots=True)
class McNemarResult:
    """The flip counts and the exact two-sided p-value."""

    improved: int
    regressed: int
    pvalue: float
    method: str = "exact McNemar, two-sided"

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON (p-value to 12 decimals)."""
        return picked(self, "improved regressed ~pvalue method", clean_float)


def mcnemar_exact(regressed: int, improved: int) -> McNemarResult:
    """Exact two-sided McNemar test for ``regressed`` (b) and ``improved`` (c) flips.

    Exact integer arithmetic up to 1000 flips; above, the largest tail term
    comes from Loader's saddle-point expansion of the binomial probability
    (relative error ~1e-14 at any size, where log-gamma differences lose
    digits) and the rest of the tail from the ratio of successive terms.

    Examples: (3, 9) -> 0.1460; (0, 6) -> 0.03125; (0, 5) -> 0.0625.
    """
    b = whole_number("regressed", regressed)
    c = whole_number("improved", improved)
    return McNemarResult(improved=c, regressed=b, pvalue=_two_sided_p(min(b, c), b + c))


def _two_sided_p(k: int, n: int) -> float:
    """min(1, 2 P(X <= k)) for X ~ Binomial(n, 1/2), k <= n / 2."""
    if 2 * k >= n - 1:  # the tail holds at least half the mass (n = 0 included)
        return 1.0
    if n <= _EXACT_LIMIT:
        coefficient = count = 1
        for i in range(1, k + 1):
            coefficient = coefficient * (n - i + 1) // i
            count += coefficient
        return min(1.0, count / (1 << (n - 1)))  # int / int rounds correctly
    # P(X <= k) = P(X = k) · (1 + r_k + r_k r_{k-1} + ...), r_i = i / (n - i + 1) < 1,
    # the ratios falling as i falls: stop once the geometric bound on the rest is negligible.
    relative = [1.0]
    term = 1.0
    for i in range(k, 0, -1):
        ratio = i / (n - i + 1)
        term *= ratio
        relative.append(term)
        next_ratio = (i - 1) / (n - i + 2)
        if term * next_ratio / (1 - next_ratio) < 1e-17:  # the sum is >= 1
            break
    return min(1.0, 2 * _binomial_half_pmf(k, n) * math.fsum(relative))


def _binomial_half_pmf(k: int, n: int) -> float:
    """P(X = k) for X ~ Binomial(n, 1/2), by Loader's saddle-point method.

    Loader (2000), "Fast and Accurate Computation of Binomial Probabilities":
    the same expansion as R's ``dbinom``.
    """
    if k == 0:
        return math.ldexp(1.0, -n)
    half = n / 2
    log_ratio = (
        _stirling_error(n)
        - _stirling_error(k)
        - _stirling_error(n - k)
        - _deviance(k, half)
        - _deviance(n - k, half)
    )
    log_scale = _LN_2PI + math.log(k) + math.log1p(-k / n)
    return math.exp(log_ratio - 0.5 * log_scale)


def _stirling_error(n: int) -> float:
    """log(n!) − log(√(2πn) (n/e)^n), the error of Stirling's formula."""
    if n <= 15:
        return math.lgamma(n + 1) - (n + 0.5) * math.log(n) + n - 0.5 * _LN_2PI
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    nn = n * n
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _deviance(x: float, mean: float) -> float:
    """x log(x / mean) + mean − x, without cancellation when x is near mean."""
    if abs(x - mean) < 0.1 * (x + mean):
        v = (x - mean) / (x + mean)
        total = (x - mean) * v
        term = 2 * x * v
        v2 = v * v
        for j in range(1, 1000):
            term *= v2
            updated = total + term / (2 * j + 1)
            if updated == total:
                return updated
            total = updated
        return total
    return x * math.log(x / mean) + mean - x
