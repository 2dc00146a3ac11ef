"""An anytime-valid confidence sequence for a mean paired difference of bounded scores.

A confidence sequence (CS) is a sequence of intervals ``C_1, C_2, ...`` that covers the
true mean *at every look at once* with probability at least ``1 - alpha``: a run may be
checked after every case and stopped whenever its interval settles, and the guarantee
still holds. An ordinary interval re-checked after every case does not (re-testing a
null difference after each of 1,000 cases calls a change in some 40% of runs).

The sequence here is the predictable plug-in empirical-Bernstein CS (PrPl-EB) of
Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting",
JRSS-B 86(1), 2024, section 3.2, two-sided, taken as a running intersection. Scores
lie in [0, 1], so a paired difference ``d = candidate - baseline`` lies in [-1, 1];
it is mapped to ``x = (d + 1) / 2`` in [0, 1], and the bounds are mapped back:

- ``mu_t = (1/2 + sum_{i<=t} x_i) / (t + 1)``,
  ``sigma2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1)`` (``mu_0 = 1/2``,
  ``sigma2_0 = 1/4``);
- ``lambda_t = min(sqrt(2 log(2/alpha) / (sigma2_{t-1} t log(t + 1))), c)``;
- ``psi(l) = (-log(1 - l) - l) / 4``, ``v_i = 4 (x_i - mu_{i-1})^2``;
- ``C_t = sum l_i x_i / sum l_i  +/-  (log(2/alpha) + sum v_i psi(l_i)) / sum l_i``,
  intersected with [0, 1] and with ``C_{t-1}``.

The values enter in an order fixed before the run (a seeded shuffle), never in the
order they finished: if faster failures came in first, the sequence would be biased.
Pass/fail outcomes use the same sequence on the per-case pass differences (in
{-1, 0, 1}, or fractions when attempts are averaged): a valid, if not the most
powerful, test of McNemar's question, one method for every kind of score.

Pure functions: numpy only, no randomness, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evaldelta.errors import UsageError
from evaldelta.stats._intervals import Interval, check_probability, clean_float

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from evaldelta.stats._intervals import FloatArray

__all__ = [
    "METHOD",
    "ConfidenceSequence",
    "RunningSequence",
    "Settled",
    "confidence_sequence",
    "path_points",
    "settle",
    "settled_kind",
]

METHOD = "confidence sequence (PrPl-EB, running intersection)"
#: The betting fractions' cap: 1/2 as in the paper's experiments (3/4 also valid).
DEFAULT_CAP = 0.5

SettledKind = Literal["Better", "Worse", "No change"]


@dataclass(frozen=True, slots=True)
class ConfidenceSequence:
    """The sequence's bounds after each look (``low[t - 1]``, ``high[t - 1]`` after
    ``t`` values), on the scale of the differences, and the running mean."""

    low: FloatArray
    high: FloatArray
    mean: FloatArray
    alpha: float

    def __len__(self) -> int:
        return int(self.low.shape[-1])

    def interval(self, t: int | None = None) -> Interval:
        """The interval after ``t`` values (default: all of them)."""
        n = len(self)
        t = n if t is None else t
        if t == 0:
            return Interval(math.nan, math.nan, math.nan, 1 - self.alpha, METHOD, 0)
        if not 1 <= t <= n:
            raise UsageError(f"a sequence of {n} values has no look {t}")
        return Interval(
            float(self.mean[t - 1]),
            float(self.low[t - 1]),
            float(self.high[t - 1]),
            1 - self.alpha,
            METHOD,
            t,
        )


def _check(d: FloatArray) -> None:
    import numpy as np

    if d.size and not (np.isfinite(d).all() and (np.abs(d) <= 1 + 1e-12).all()):
        raise UsageError(
            "a confidence sequence needs paired differences of scores in [0, 1] (so "
            "each difference lies in [-1, 1]); rescale the scores to [0, 1] first"
        )


def confidence_sequence(
    differences: ArrayLike, *, alpha: float = 0.05, cap: float = DEFAULT_CAP
) -> ConfidenceSequence:
    """The PrPl-EB confidence sequence of the mean of ``differences`` (each in [-1, 1])
    after each look, in the order given. Vectorised over the last axis: a 2-D array is
    a batch of sequences (what the calibration simulations use).

    Raises:
        UsageError: a difference outside [-1, 1] or not finite; ``alpha`` not in (0, 1);
            ``cap`` not in (0, 1).
    """
    import numpy as np

    alpha = check_probability("alpha", alpha)
    cap = check_probability("cap", cap)
    d = np.asarray(differences, dtype=np.float64)
    _check(d)
    d = np.clip(d, -1.0, 1.0)
    x = (d + 1.0) / 2.0
    n = x.shape[-1]
    if n == 0:
        empty = np.zeros(x.shape, dtype=np.float64)
        return ConfidenceSequence(empty, empty.copy(), empty.copy(), alpha)
    t = np.arange(1, n + 1, dtype=np.float64)
    lead = (*x.shape[:-1], 1)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)
    mu_before = np.concatenate([np.full(lead, 0.5), mu[..., :-1]], axis=-1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    sigma2_before = np.concatenate([np.full(lead, 0.25), sigma2[..., :-1]], axis=-1)
    log_term = math.log(2 / alpha)
    lam = np.minimum(np.sqrt(2 * log_term / (sigma2_before * t * np.log(t + 1))), cap)
    psi = (-np.log1p(-lam) - lam) / 4
    v = 4 * (x - mu_before) ** 2
    weight = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * x, axis=-1) / weight
    half = (log_term + np.cumsum(v * psi, axis=-1)) / weight
    low = np.maximum.accumulate(np.maximum(centre - half, 0.0), axis=-1)
    high = np.minimum.accumulate(np.minimum(centre + half, 1.0), axis=-1)
    # The running intersection may cross itself only by floating-point noise.
    high = np.maximum(high, low)
    mean = np.cumsum(d, axis=-1) / t
    return ConfidenceSequence(2 * low - 1, 2 * high - 1, mean, alpha)


class RunningSequence:
    """The same sequence, one value at a time (what a run being run keeps up to date):
    after ``add(d)``, ``low`` and ``high`` equal :func:`confidence_sequence`'s bounds
    at that look, in O(1) per value."""

    def __init__(self, *, alpha: float = 0.05, cap: float = DEFAULT_CAP) -> None:
        self.alpha = check_probability("alpha", alpha)
        self.cap = check_probability("cap", cap)
        self.n = 0
        self._sum_x = 0.0
        self._sum_d = 0.0
        self._sum_sq = 0.0
        self._mu = 0.5
        self._sigma2 = 0.25
        self._weight = 0.0
        self._weighted = 0.0
        self._penalty = 0.0
        self._low = 0.0
        self._high = 1.0

    @property
    def low(self) -> float:
        return 2 * self._low - 1

    @property
    def high(self) -> float:
        return 2 * self._high - 1

    @property
    def mean(self) -> float:
        return self._sum_d / self.n if self.n else math.nan

    def interval(self) -> Interval:
        if not self.n:
            return Interval(math.nan, math.nan, math.nan, 1 - self.alpha, METHOD, 0)
        return Interval(self.mean, self.low, self.high, 1 - self.alpha, METHOD, self.n)

    def add(self, difference: float) -> None:
        """One more paired difference, in [-1, 1]."""
        if not (math.isfinite(difference) and abs(difference) <= 1 + 1e-12):
            raise UsageError(
                f"a confidence sequence needs paired differences in [-1, 1], got {difference!r}"
            )
        d = min(max(float(difference), -1.0), 1.0)
        x = (d + 1.0) / 2.0
        t = self.n + 1
        log_term = math.log(2 / self.alpha)
        lam = min(math.sqrt(2 * log_term / (self._sigma2 * t * math.log(t + 1))), self.cap)
        psi = (-math.log1p(-lam) - lam) / 4
        self._penalty += 4 * (x - self._mu) ** 2 * psi
        self._weight += lam
        self._weighted += lam * x
        self._sum_x += x
        self._sum_d += d
        self._mu = (0.5 + self._sum_x) / (t + 1)
        self._sum_sq += (x - self._mu) ** 2
        self._sigma2 = (0.25 + self._sum_sq) / (t + 1)
        centre = self._weighted / self._weight
        half = (log_term + self._penalty) / self._weight
        self._low = max(self._low, centre - half, 0.0)
        self._high = max(min(self._high, centre + half, 1.0), self._low)
        self.n = t


def settled_kind(low: float, high: float, margin: float | None = None) -> SettledKind | None:
    """What an interval of the change settles, if anything: ``No change`` when it lies
    within ``[-margin, +margin]`` (checked first: a change smaller than the margin is
    one the user said does not matter), ``Better`` when above 0, ``Worse`` when below."""
    if math.isnan(low) or math.isnan(high):
        return None
    if margin is not None and -margin <= low and high <= margin:
        return "No change"
    if low > 0:
        return "Better"
    if high < 0:
        return "Worse"
    return None


@dataclass(frozen=True, slots=True)
class Settled:
    """Where a sequence settled: after ``cases`` values, on ``kind``."""

    cases: int
    kind: SettledKind

    def to_dict(self) -> dict[str, Any]:
        return {"after": self.cases, "verdict": self.kind}


def settle(
    sequence: ConfidenceSequence, *, margin: float | None = None, min_cases: int = 20
) -> Settled | None:
    """The first look (at least ``min_cases``) at which the sequence settles, or None."""
    import numpy as np

    low, high = sequence.low, sequence.high
    if margin is not None and not (math.isfinite(margin) and margin >= 0):
        raise UsageError(f"margin must be a number >= 0, got {margin!r}")
    if low.ndim != 1:
        raise UsageError("settle() takes one sequence, not a batch")
    hit = (low > 0) | (high < 0)
    if margin is not None:
        hit |= (low >= -margin) & (high <= margin)
    hit[: max(min_cases, 1) - 1] = False
    if not hit.any():
        return None
    t = int(np.argmax(hit))
    kind = settled_kind(float(low[t]), float(high[t]), margin)
    assert kind is not None
    return Settled(t + 1, kind)


def path_points(sequence: ConfidenceSequence, most: int = 2000) -> list[dict[str, Any]]:
    """The sequence as ``{"cases", "low", "high"}`` points for JSON: every look up to
    ``most`` looks, else ``most`` looks evenly spread (the first and last included)."""
    import numpy as np

    n = len(sequence)
    if n <= most:
        looks = np.arange(n)
    else:
        looks = np.unique(np.linspace(0, n - 1, most).round().astype(np.int64))
    return [
        {"cases": int(i) + 1, "low": clean_float(lo), "high": clean_float(hi)}
        for i, lo, hi in zip(
            looks.tolist(),
            sequence.low[looks].tolist(),
            sequence.high[looks].tolist(),
            strict=True,
        )
    ]
