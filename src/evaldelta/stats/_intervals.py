"""Confidence intervals for a mean or a pass rate: normal, clustered, bootstrap, Wilson.

The unit is the *case*: callers average a case's attempts first and pass one
value per case (Miller 2024, "Adding Error Bars to Evals", arXiv 2411.00640).
Resampling attempts as if they were independent cases makes intervals too narrow.

Conventions for small samples, the same in every function here:

- ``n == 0``: nothing to estimate; ``estimate``, ``ci_low`` and ``ci_high`` are
  NaN and ``method`` is ``"none"``.
- Normal intervals need a standard deviation: with fewer than 2 units (cases,
  or clusters for the clustered interval) the bounds are NaN, the estimate is
  the mean and ``method`` keeps its name.
- The bootstrap of a single value is that value: ``ci_low == ci_high == v``.

NaN never compares as excluding zero, and ``to_dict()`` writes it as ``None``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evaldelta._plain import picked
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from numpy.typing import ArrayLike

    FloatArray = npt.NDArray[np.float64]
    IntArray = npt.NDArray[np.int64]

__all__ = [
    "Interval",
    "bootstrap_mean",
    "clustered_normal_interval",
    "normal_interval",
    "t_interval",
    "t_value",
    "wilson_interval",
    "z_value",
]

#: Bootstrap fast path: at most this many distinct values (or distinct clusters).
_MAX_DISTINCT = 2048
#: Random draws (or multinomial cells) held in memory at once while resampling.
_DRAWS_PER_CHUNK = 2_000_000
#: Decimals kept when grouping values, so that float noise (0.2 vs 0.20000000000000007)
#: does not split one value in two.
_DIGITS = 12


def clean_float(x: float | None, digits: int = _DIGITS) -> float | None:
    """``x`` rounded to ``digits`` decimals for JSON: ``None`` for NaN or infinity, no ``-0.0``."""
    if x is None or not math.isfinite(x):
        return None
    r = round(float(x), digits)
    return 0.0 if r == 0 else r


@dataclass(frozen=True, slots=True)
class Interval:
    """A point estimate with a two-sided confidence interval, and how it was made.

    ``n`` counts the resampled units: cases, or clusters when ``units`` is
    ``"clusters"``. ``resamples`` and ``seed`` are set for bootstrap intervals.
    """

    estimate: float
    ci_low: float
    ci_high: float
    level: float
    method: str
    n: int
    resamples: int | None = None
    seed: int | None = None
    units: str = "cases"

    def excludes_zero(self) -> bool:
        """True when the whole interval lies on one side of 0 (False for NaN bounds)."""
        return self.ci_low > 0 or self.ci_high < 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: floats to 12 decimals, NaN as ``None``."""
        return picked(
            self, "~estimate ~ci_low ~ci_high ~level method n resamples seed units", clean_float
        )


def z_value(level: float) -> float:
    """The two-sided normal quantile for ``level``: 1.959964 for 0.95.

    Raises UsageError unless 0 < level < 1.
    """
    from statistics import NormalDist

    level = check_probability("level", level)
    return NormalDist().inv_cdf(1 - (1 - level) / 2)


def _t_central(theta: float, df: int) -> float:
    """P(|T| <= t) for Student's t with ``df`` degrees of freedom, where
    theta = atan(t / sqrt(df)): the finite series of Abramowitz & Stegun 26.7.3-4."""
    c2, term, total = math.cos(theta) ** 2, 1.0, 1.0
    if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2*4/(3*5) cos^4 + ...))
        if df == 1:
            return 2 * theta / math.pi
        for k in range(1, (df - 1) // 2):
            term *= c2 * (2 * k) / (2 * k + 1)
            total += term
        return 2 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)
    for k in range(1, df // 2):  # even: sin (1 + 1/2 cos^2 + 1*3/(2*4) cos^4 + ...)
        term *= c2 * (2 * k - 1) / (2 * k)
        total += term
    return math.sin(theta) * total


def t_value(level: float, df: int) -> float:
    """The two-sided quantile of Student's t for ``level``: 2.093024 for 0.95 and 19
    degrees of freedom. The exact finite series for the distribution (Abramowitz &
    Stegun 26.7.3-4), inverted by bisection to machine precision: numpy has no t
    distribution, and scipy is too heavy to load for one number.

    Raises UsageError unless 0 < level < 1 and ``df`` >= 1.
    """
    level = check_probability("level", level)
    df = whole_number("degrees of freedom", df, 1)
    if df > 1000:  # the series costs O(df): Cornish-Fisher (A&S 26.7.5) is exact enough
        z = z_value(level)
        return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if _t_central(mid, df) < level:
            lo = mid
        else:
            hi = mid
    return math.sqrt(df) * math.tan((lo + hi) / 2)


def whole_number(name: str, value: int, minimum: int = 0) -> int:
    """``value`` as an int (numpy integers too), at least ``minimum``; bools are refused."""
    import operator

    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise UsageError(f"{name} must be a whole number >= {minimum}, got {value!r}") from None
    if number < minimum:
        raise UsageError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    return number


def finite_number(name: str, value: float) -> float:
    """``value`` as a float (numpy scalars too) if it is a finite real number; not a bool."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_probability(name: str, value: float) -> float:
    """A number strictly between 0 and 1 (a level, an alpha, a power), as a float."""
    try:
        number = finite_number(name, value)
    except UsageError:
        number = math.nan
    if not 0 < number < 1:
        raise UsageError(f"{name} must be a number between 0 and 1 (exclusive), got {value!r}")
    return number


def _nan_interval(level: float, units: str = "cases") -> Interval:
    nan = math.nan
    return Interval(nan, nan, nan, level, "none", 0, units=units)


def as_values(values: ArrayLike, name: str = "values") -> FloatArray:
    """One finite float per case, as a 1-D array."""
    import numpy as np

    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{name} must be numbers: {exc}") from exc
    if x.ndim != 1:
        raise UsageError(f"{name} must be a flat sequence of numbers, got shape {x.shape}")
    bad = np.flatnonzero(~np.isfinite(x))
    if bad.size:
        i = int(bad[0])
        raise UsageError(f"{name} must be finite numbers, got {float(x[i])} at position {i}")
    return x


def _cluster_codes(clusters: ArrayLike, n: int) -> tuple[IntArray, int]:
    """Cluster labels (ints, strings, any hashable) as codes 0..C-1, and C."""
    import numpy as np

    labels = np.asarray(clusters)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise UsageError(
            f"clusters must hold one label per value: got shape {labels.shape} for {n} values"
        )
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0
    if labels.dtype.kind in "biufUS":
        _, inverse = np.unique(labels, return_inverse=True)
        codes = np.asarray(inverse, dtype=np.int64).reshape(-1)
    else:
        seen: dict[Any, int] = {}
        codes = np.fromiter(
            (seen.setdefault(label, len(seen)) for label in labels.tolist()),
            dtype=np.int64,
            count=n,
        )
    return codes, int(codes.max()) + 1


def normal_interval(values: ArrayLike, level: float = 0.95) -> Interval:
    """Normal (CLT) interval for a mean: mean ± z · sd / √n, sd with n − 1.

    Too narrow below a few hundred cases; prefer :func:`bootstrap_mean` there.
    With one case the bounds are NaN (no spread to measure); with none,
    everything is NaN and ``method`` is ``"none"``.
    """
    z = z_value(level)
    x = as_values(values)
    n = int(x.shape[0])
    if n == 0:
        return _nan_interval(level)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, level, "normal", n)
    se = float(x.std(ddof=1)) / math.sqrt(n)
    return Interval(mean, mean - z * se, mean + z * se, level, "normal", n)


def clustered_normal_interval(
    values: ArrayLike, clusters: ArrayLike, level: float = 0.95
) -> Interval:
    """Normal interval with a cluster-robust standard error (Miller 2024).

    For cases that come in groups (several questions about one document):
    SE_c² = SE² + (1/n²) Σ_clusters Σ_{i≠j in cluster} (d_i − d̄)(d_j − d̄), with
    SE² = var(d, ddof=1) / n. When every case is its own cluster, SE_c = SE.

    Args:
        values: one value per case.
        clusters: one hashable label (int or str) per case, aligned with ``values``.
        level: confidence level.

    ``n`` is the number of clusters (``units="clusters"``); the estimate is the
    plain mean over cases. Fewer than 2 clusters give NaN bounds. A negative
    within-cluster correlation can make SE_c² negative in a sample: it is then
    taken as 0.
    """
    import numpy as np

    z = z_value(level)
    x = as_values(values)
    n = int(x.shape[0])
    codes, n_clusters = _cluster_codes(clusters, n)
    if n == 0:
        return _nan_interval(level, units="clusters")
    mean = float(x.mean())
    if n_clusters < 2:
        return Interval(
            mean, math.nan, math.nan, level, "normal-cluster", n_clusters, units="clusters"
        )
    e = x - mean
    sum_sq = float(e @ e)
    cluster_sums = np.bincount(codes, weights=e, minlength=n_clusters)
    cross = float(cluster_sums @ cluster_sums) - sum_sq  # Σ over pairs i ≠ j in a cluster
    se2 = sum_sq / (n - 1) / n + cross / n**2
    se = math.sqrt(max(se2, 0.0))
    return Interval(
        mean, mean - z * se, mean + z * se, level, "normal-cluster", n_clusters, units="clusters"
    )


def t_interval(
    values: ArrayLike, level: float = 0.95, clusters: ArrayLike | None = None
) -> Interval:
    """Student's t interval for a mean, on few cases (or clusters), where the percentile
    bootstrap is too narrow: mean +/- t(level, k - 1) * se over the k units.

    Cases: se = sd / sqrt(n). Clusters: the cluster-robust se with the small-sample
    factor G / (G - 1) (Cameron & Miller 2015, "A practitioner's guide to
    cluster-robust inference", sec. VI), sqrt(G / (G - 1) * sum_g e_g^2) / n with e_g
    the sum of a cluster's residuals: with equal sizes, exactly the t interval of the
    cluster means. Fewer than 2 units give NaN bounds; no spread, a zero-width interval.
    """
    import numpy as np

    x = as_values(values)
    n = int(x.shape[0])
    units = "cases" if clusters is None else "clusters"
    if n == 0:
        return _nan_interval(level, units=units)
    mean = float(x.mean())
    if clusters is None:
        k = n
        se = float(x.std(ddof=1)) / math.sqrt(n) if n >= 2 else math.nan
    else:
        codes, k = _cluster_codes(clusters, n)
        totals = np.bincount(codes, weights=x - mean, minlength=k)
        se = math.sqrt(k / (k - 1) * float(totals @ totals)) / n if k >= 2 else math.nan
    if k < 2:
        return Interval(mean, math.nan, math.nan, level, "t", k, units=units)
    t = t_value(level, k - 1)
    return Interval(mean, mean - t * se, mean + t * se, level, "t", k, units=units)


def bootstrap_mean(
    values: ArrayLike,
    *,
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
    clusters: ArrayLike | None = None,
    _force_general: bool = False,
) -> Interval:
    """Percentile bootstrap interval for a mean, resampling cases or whole clusters.

    Efron & Tibshirani (1993), ch. 13: draw the units with replacement
    ``resamples`` times, and take the (1 − level)/2 and (1 + level)/2 quantiles
    (numpy's default linear interpolation) of the resampled means. With
    ``clusters``, whole clusters are drawn (C of them) and a resample's mean is
    the sum of the drawn clusters' sums over the sum of their sizes.

    Reproducible: the draws come from ``numpy.random.default_rng(seed)`` only.

    Fast path: when the units take few distinct values (at most 2048, after
    rounding to 12 decimals; for clusters, distinct (sum, size) pairs), one
    resample is the count of each distinct value, ~ Multinomial(n, c/n): the
    same distribution as drawing the units, at O(k) per resample instead of
    O(n). Otherwise the units are drawn in chunks of about two million draws,
    never an n × B index matrix.

    ``estimate`` is the plain mean of ``values``. One value gives (v, v); no
    values give NaN and ``method="none"``.
    """
    import numpy as np

    z_value(level)  # validates level
    resamples = whole_number("resamples", resamples, 1)
    seed = whole_number("seed", seed)
    x = as_values(values)
    n = int(x.shape[0])
    units = "cases" if clusters is None else "clusters"
    method = "bootstrap" if clusters is None else "bootstrap-cluster"

    if clusters is None:
        sums = x
        sizes = np.ones(n, dtype=np.float64)
    else:
        codes, n_clusters = _cluster_codes(clusters, n)
        sums = np.asarray(np.bincount(codes, weights=x, minlength=n_clusters), dtype=np.float64)
        sizes = np.bincount(codes, minlength=n_clusters).astype(np.float64)
    if n == 0:
        return _nan_interval(level, units=units)

    means = _resampled_means(sums, sizes, resamples, seed, force_general=_force_general)
    alpha = 1 - level
    low, high = _quantiles(means, (alpha / 2, 1 - alpha / 2))
    return Interval(
        estimate=float(x.mean()),
        ci_low=float(low),
        ci_high=float(high),
        level=level,
        method=method,
        n=int(sums.shape[0]),
        resamples=resamples,
        seed=seed,
        units=units,
    )


def _resampled_means(
    sums: FloatArray, sizes: FloatArray, resamples: int, seed: int, *, force_general: bool
) -> FloatArray:
    """``resamples`` bootstrap means of units with these sums and sizes (cases: size 1)."""
    import numpy as np
    from numpy.random import default_rng

    rng = default_rng(seed)
    count = int(sums.shape[0])
    means = np.empty(resamples, dtype=np.float64)

    rounded = np.round(sums, _DIGITS) + 0.0  # + 0.0 turns -0.0 into 0.0
    equal_sizes = bool(np.all(sizes == sizes[0]))
    if equal_sizes:  # cases, or clusters of one size: group by value alone (much faster)
        _, inverse, multiplicity = np.unique(rounded, return_inverse=True, return_counts=True)
        distinct_sizes = np.full(multiplicity.shape[0], sizes[0])
    else:
        distinct, inverse, multiplicity = np.unique(
            np.column_stack([rounded, sizes]), axis=0, return_inverse=True, return_counts=True
        )
        distinct_sizes = distinct[:, 1]
    k = int(multiplicity.shape[0])
    if k <= _MAX_DISTINCT and not force_general:
        inverse = np.asarray(inverse).reshape(-1)
        # Each distinct unit's sum is the mean of the exact sums it stands for.
        distinct_sums = np.bincount(inverse, weights=sums, minlength=k) / multiplicity
        pvals = multiplicity / count
        chunk = max(1, _DRAWS_PER_CHUNK // k)
        for start in range(0, resamples, chunk):
            stop = min(start + chunk, resamples)
            drawn = rng.multinomial(count, pvals, size=stop - start).astype(np.float64)
            means[start:stop] = (drawn @ distinct_sums) / (drawn @ distinct_sizes)
        return means

    chunk = max(1, _DRAWS_PER_CHUNK // count)
    for start in range(0, resamples, chunk):
        stop = min(start + chunk, resamples)
        idx = rng.integers(0, count, size=(stop - start, count))
        total = sums[idx].sum(axis=1)
        if equal_sizes:
            means[start:stop] = total / (count * sizes[0])
        else:
            means[start:stop] = total / sizes[idx].sum(axis=1)
    return means


def wilson_interval(successes: int, n: int, level: float = 0.95) -> Interval:
    """Wilson score interval for a pass rate (Wilson 1927), for one attempt per case.

    centre = (p + z²/2n) / (1 + z²/n), half-width = z √(p(1−p)/n + z²/4n²) / (1 + z²/n),
    with p = successes / n. Example: 5 of 12 gives [0.1933, 0.6805]. ``n == 0``
    gives NaN and ``method="none"``. With several attempts per case use
    :func:`bootstrap_mean` on the per-case pass rates.
    """
    z = z_value(level)
    successes = whole_number("successes", successes)
    n = whole_number("n", n)
    if successes > n:
        raise UsageError(f"successes must be at most n ({n}), got {successes}")
    if n == 0:
        return _nan_interval(level)
    p = successes / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high, level, "wilson", n)


def _quantiles(x: FloatArray, probs: tuple[float, float]) -> tuple[float, float]:
    """Quantiles by linear interpolation, as ``numpy.quantile``'s default, without the
    ~10 ms that importing ``numpy.ma`` for it costs every run."""
    import numpy as np

    s = np.sort(x)
    n = s.shape[0]
    out = []
    for q in probs:
        h = (n - 1) * q
        lo = int(np.floor(h))
        hi = min(lo + 1, n - 1)
        out.append(float(s[lo] + (h - lo) * (s[hi] - s[lo])))
    return out[0], out[1]
