"""Intervals: normal, clustered, bootstrap, Wilson, checked against hand-worked values,
statsmodels, and each other."""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest

from evaldelta.errors import UsageError
from evaldelta.stats import _intervals as intervals
from evaldelta.stats._intervals import (
    Interval,
    bootstrap_mean,
    clustered_normal_interval,
    normal_interval,
    wilson_interval,
    z_value,
)

# statistics.NormalDist().inv_cdf(0.975)
Z95 = 1.959963984540054


def data(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- z and the Interval object -------------------------------------------------------------


def test_z_value() -> None:
    assert z_value(0.95) == pytest.approx(Z95, rel=1e-15)
    # statistics.NormalDist().inv_cdf(0.995) -> 2.5758293035489
    assert z_value(0.99) == pytest.approx(2.5758293035489, rel=1e-12)


@pytest.mark.parametrize("level", [0, 1, 1.5, -0.1, math.nan, "0.95", True])
def test_level_out_of_range(level: object) -> None:
    with pytest.raises(UsageError, match=r"level must be a number between 0 and 1 \(exclusive\)"):
        z_value(level)  # type: ignore[arg-type]


def test_excludes_zero() -> None:
    assert Interval(0.1, 0.05, 0.2, 0.95, "normal", 10).excludes_zero()
    assert Interval(-0.1, -0.2, -0.05, 0.95, "normal", 10).excludes_zero()
    assert not Interval(0.1, -0.05, 0.2, 0.95, "normal", 10).excludes_zero()
    assert not Interval(0.0, 0.0, 0.2, 0.95, "normal", 10).excludes_zero()
    assert not Interval(1.0, math.nan, math.nan, 0.95, "normal", 1).excludes_zero()


def test_to_dict_rounds_and_writes_nan_as_none() -> None:
    iv = Interval(0.1 + 0.2, -1e-14, math.nan, 0.95, "bootstrap", 3, 100, 7)
    assert iv.to_dict() == {
        "estimate": 0.3,
        "ci_low": 0.0,
        "ci_high": None,
        "level": 0.95,
        "method": "bootstrap",
        "n": 3,
        "resamples": 100,
        "seed": 7,
        "units": "cases",
    }


# --- normal ---------------------------------------------------------------------------------


def test_normal_interval_hand_worked() -> None:
    # [1, 2, 3, 4]: mean 2.5, sd = sqrt(5/3), SE = sd / 2 = 0.6454972243679028,
    # 2.5 -+ 1.959963984540054 * 0.6454972243679028 = [1.2348486881183403, 3.7651513118816595]
    iv = normal_interval([1, 2, 3, 4])
    assert iv.estimate == 2.5
    assert iv.ci_low == pytest.approx(1.2348486881183403, rel=1e-12)
    assert iv.ci_high == pytest.approx(3.7651513118816595, rel=1e-12)
    assert (iv.method, iv.n, iv.units, iv.level) == ("normal", 4, "cases", 0.95)
    assert (iv.resamples, iv.seed) == (None, None)


def test_normal_interval_small_samples() -> None:
    empty = normal_interval([])
    assert math.isnan(empty.estimate)
    assert math.isnan(empty.ci_low)
    assert math.isnan(empty.ci_high)
    assert (empty.method, empty.n) == ("none", 0)
    one = normal_interval([0.5])
    assert one.estimate == 0.5
    assert math.isnan(one.ci_low)
    assert math.isnan(one.ci_high)
    assert (one.method, one.n) == ("normal", 1)
    assert not one.excludes_zero()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([1.0, math.nan], r"values must be finite numbers, got nan at position 1"),
        ([1.0, math.inf, 0.0], r"values must be finite numbers, got inf at position 1"),
        (
            [[1.0, 2.0], [3.0, 4.0]],
            r"values must be a flat sequence of numbers, got shape \(2, 2\)",
        ),
        (["a", "b"], r"values must be numbers"),
    ],
)
def test_bad_values(values: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        normal_interval(values)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=message):
        bootstrap_mean(values)  # type: ignore[arg-type]


# --- clustered normal -----------------------------------------------------------------------


def test_clustered_equals_plain_when_each_case_is_its_own_cluster() -> None:
    x = data().normal(size=500)
    plain = normal_interval(x)
    clustered = clustered_normal_interval(x, np.arange(500))
    assert clustered.estimate == plain.estimate
    assert clustered.ci_low == pytest.approx(plain.ci_low, rel=1e-12)
    assert clustered.ci_high == pytest.approx(plain.ci_high, rel=1e-12)
    assert (clustered.method, clustered.n, clustered.units) == ("normal-cluster", 500, "clusters")


@pytest.mark.parametrize(
    "labels",
    [["a", "a", "b", "b"], [7, 7, 3, 3], [None, None, "x", "x"], np.array([1.5, 1.5, 2.0, 2.0])],
    ids=["str", "int", "object", "float"],
)
def test_clustered_hand_worked(labels: object) -> None:
    # values [1, 2, 3, 6] in clusters {1, 2}, {3, 6}: mean 3, e = [-2, -1, 0, 3];
    # SE^2 = sum e^2 / (n - 1) / n = 14 / 12; the pairs within clusters add
    # (1/n^2) * 2 * ((-2)(-1) + (0)(3)) = 4 / 16, so SE_c = sqrt(14/12 + 0.25) = 1.1902380714238083
    # and the interval is 3 -+ 1.959963984540054 * SE_c = [0.6671762469809237, 5.332823753019076].
    iv = clustered_normal_interval([1, 2, 3, 6], labels)  # type: ignore[arg-type]
    assert iv.estimate == 3.0
    assert iv.ci_low == pytest.approx(0.6671762469809237, rel=1e-12)
    assert iv.ci_high == pytest.approx(5.332823753019076, rel=1e-12)
    assert (iv.n, iv.units) == (2, "clusters")


def test_clustered_is_wider_for_correlated_clusters() -> None:
    levels = np.repeat(data().normal(size=50), 8)  # 50 clusters of 8 identical values
    plain = normal_interval(levels)
    clustered = clustered_normal_interval(levels, np.repeat(np.arange(50), 8))
    ratio = (clustered.ci_high - clustered.ci_low) / (plain.ci_high - plain.ci_low)
    assert ratio == pytest.approx(math.sqrt(8), rel=0.05)


def test_clustered_small_samples() -> None:
    empty = clustered_normal_interval([], [])
    assert (empty.method, empty.n, empty.units) == ("none", 0, "clusters")
    one_cluster = clustered_normal_interval([1.0, 2.0, 3.0], ["a", "a", "a"])
    assert one_cluster.estimate == 2.0
    assert math.isnan(one_cluster.ci_low)
    assert math.isnan(one_cluster.ci_high)
    assert one_cluster.n == 1


def test_clusters_must_align() -> None:
    with pytest.raises(UsageError, match=r"clusters must hold one label per value: got shape"):
        clustered_normal_interval([1.0, 2.0, 3.0], ["a", "b"])
    with pytest.raises(UsageError, match=r"clusters must hold one label per value"):
        bootstrap_mean([1.0, 2.0, 3.0], clusters=["a", "b"])


# --- bootstrap ------------------------------------------------------------------------------


def test_bootstrap_is_reproducible() -> None:
    x = data().normal(size=300)
    first = bootstrap_mean(x, seed=42, resamples=2000)
    assert bootstrap_mean(x, seed=42, resamples=2000) == first
    other = bootstrap_mean(x, seed=43, resamples=2000)
    assert (other.ci_low, other.ci_high) != (first.ci_low, first.ci_high)
    assert (first.method, first.resamples, first.seed, first.n) == ("bootstrap", 2000, 42, 300)
    assert first.estimate == pytest.approx(float(x.mean()), rel=1e-15)


def test_bootstrap_fast_path_is_reproducible() -> None:
    x = (data().random(1000) < 0.3).astype(float)
    assert bootstrap_mean(x, seed=1) == bootstrap_mean(x, seed=1)
    assert bootstrap_mean(x, seed=1) != bootstrap_mean(x, seed=2)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_fast_and_general_paths_agree(level: float) -> None:
    x = (data(5).random(1000) < 0.3).astype(float)
    fast = bootstrap_mean(x, seed=11, level=level)
    general = bootstrap_mean(x, seed=11, level=level, _force_general=True)
    assert fast != general  # two different draws...
    assert fast.ci_low == pytest.approx(general.ci_low, abs=0.01)  # ...of one distribution
    assert fast.ci_high == pytest.approx(general.ci_high, abs=0.01)


def test_fast_and_general_paths_agree_for_clusters() -> None:
    rng = data(6)
    x = rng.integers(0, 2, size=600).astype(float)
    clusters = rng.integers(0, 60, size=600)  # unequal sizes
    fast = bootstrap_mean(x, clusters=clusters, seed=3)
    general = bootstrap_mean(x, clusters=clusters, seed=3, _force_general=True)
    assert fast.ci_low == pytest.approx(general.ci_low, abs=0.01)
    assert fast.ci_high == pytest.approx(general.ci_high, abs=0.01)


def test_float_noise_does_not_split_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.1 + 0.2 and 0.3 are one value: with room for only two distinct values the fast path
    # still runs, and draws exactly what it draws for clean data.
    monkeypatch.setattr(intervals, "_MAX_DISTINCT", 2)
    noisy = [0.1 + 0.2] * 40 + [0.3] * 40 + [0.0] * 20
    clean = [0.3] * 80 + [0.0] * 20
    a = bootstrap_mean(noisy, seed=9, resamples=500)
    b = bootstrap_mean(clean, seed=9, resamples=500)
    assert a.ci_low == pytest.approx(b.ci_low, abs=1e-15)
    assert a.ci_high == pytest.approx(b.ci_high, abs=1e-15)


def test_bootstrap_matches_normal_for_large_n() -> None:
    x = data(7).normal(loc=0.2, scale=1.0, size=20_000)
    boot = bootstrap_mean(x, seed=0)
    normal = normal_interval(x)
    width = normal.ci_high - normal.ci_low
    assert boot.ci_low == pytest.approx(normal.ci_low, abs=0.03 * width)
    assert boot.ci_high == pytest.approx(normal.ci_high, abs=0.03 * width)


def test_cluster_bootstrap_is_wider_for_correlated_clusters() -> None:
    rng = data(8)
    x = np.repeat((rng.random(100) < 0.6).astype(float), 10)  # 100 clusters of 10 equal outcomes
    labels = np.repeat([f"doc-{i}" for i in range(100)], 10)
    plain = bootstrap_mean(x, seed=0)
    clustered = bootstrap_mean(x, seed=0, clusters=labels)
    assert (clustered.method, clustered.units, clustered.n) == (
        "bootstrap-cluster",
        "clusters",
        100,
    )
    assert clustered.estimate == plain.estimate
    ratio = (clustered.ci_high - clustered.ci_low) / (plain.ci_high - plain.ci_low)
    assert ratio > 2.5  # sqrt(10) = 3.16 in expectation
    reference = clustered_normal_interval(x, labels)
    assert clustered.ci_high - clustered.ci_low == pytest.approx(
        reference.ci_high - reference.ci_low, rel=0.1
    )


def test_cluster_bootstrap_of_singletons_is_the_case_bootstrap() -> None:
    x = (data(4).random(400) < 0.5).astype(float)
    assert bootstrap_mean(x, clusters=np.arange(400), seed=5, resamples=1000).ci_low == (
        pytest.approx(bootstrap_mean(x, seed=5, resamples=1000).ci_low, abs=1e-15)
    )


def test_bootstrap_small_samples() -> None:
    empty = bootstrap_mean([])
    assert math.isnan(empty.estimate)
    assert math.isnan(empty.ci_low)
    assert (empty.method, empty.n, empty.resamples, empty.seed) == ("none", 0, None, None)
    one = bootstrap_mean([0.7], seed=3)
    assert (one.estimate, one.ci_low, one.ci_high) == (0.7, 0.7, 0.7)
    assert (one.method, one.n, one.resamples, one.seed) == ("bootstrap", 1, 10_000, 3)
    constant = bootstrap_mean([0.25] * 50, _force_general=True)
    assert (constant.ci_low, constant.ci_high) == (0.25, 0.25)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"resamples": 0}, r"resamples must be a whole number >= 1, got 0"),
        ({"resamples": 2.5}, r"resamples must be a whole number >= 1, got 2.5"),
        ({"seed": -1}, r"seed must be a whole number >= 0, got -1"),
        ({"seed": True}, r"seed must be a whole number >= 0, got True"),
        ({"level": 95}, r"level must be a number between 0 and 1 \(exclusive\), got 95"),
    ],
)
def test_bootstrap_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        bootstrap_mean([0.0, 1.0], **kwargs)  # type: ignore[arg-type]


def test_bootstrap_accepts_numpy_integers() -> None:
    iv = bootstrap_mean([0.0, 1.0, 1.0], resamples=np.int64(100), seed=np.int64(2))  # type: ignore[arg-type]
    assert (iv.resamples, iv.seed) == (100, 2)


def test_bootstrap_100k_cases_10k_resamples_is_fast_and_small() -> None:
    # Measured on 2 cores: about 0.06 s and 5.8 MiB peak (numpy allocations, via tracemalloc).
    x = (data(1).random(100_000) < 0.7).astype(float)
    tracemalloc.start()
    try:
        start = time.perf_counter()
        iv = bootstrap_mean(x, resamples=10_000, seed=0)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert elapsed < 10
    assert peak < 100 * 2**20
    assert iv.ci_low < iv.estimate < iv.ci_high
    assert iv.ci_high - iv.ci_low == pytest.approx(2 * Z95 * math.sqrt(0.7 * 0.3 / 1e5), rel=0.05)


# --- Wilson ---------------------------------------------------------------------------------


def test_wilson_worked_example() -> None:
    # statistics.md: 5 of 12 -> [0.1933, 0.6805]
    iv = wilson_interval(5, 12)
    assert (round(iv.ci_low, 4), round(iv.ci_high, 4)) == (0.1933, 0.6805)
    assert iv.estimate == pytest.approx(5 / 12)
    assert (iv.method, iv.n, iv.units) == ("wilson", 12, "cases")


def test_wilson_edges() -> None:
    # 0 of 10: [0, z^2/n / (1 + z^2/n)] = [0, 0.27753279986288926]; 10 of 10 mirrors it.
    none = wilson_interval(0, 10)
    assert none.ci_low == 0.0
    assert none.ci_high == pytest.approx(0.27753279986288926, rel=1e-12)
    every = wilson_interval(10, 10)
    assert every.ci_high == 1.0
    assert every.ci_low == pytest.approx(1 - 0.27753279986288926, rel=1e-12)
    empty = wilson_interval(0, 0)
    assert math.isnan(empty.estimate)
    assert (empty.method, empty.n) == ("none", 0)


def test_wilson_hand_worked() -> None:
    # 50 of 100: centre 0.5, half-width = 1.959964 * sqrt(0.0025 + 1.959964^2 / 40000)
    # / (1 + 1.959964^2 / 100) = 0.0961684696..., so [0.4038315303659956, 0.5961684696340044].
    iv = wilson_interval(50, 100)
    assert iv.ci_low == pytest.approx(0.4038315303659956, rel=1e-12)
    assert iv.ci_high == pytest.approx(0.5961684696340044, rel=1e-12)


@pytest.mark.parametrize(
    ("successes", "n"), [(0, 1), (1, 1), (5, 12), (3, 7), (50, 100), (999, 1000)]
)
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_against_statsmodels(successes: int, n: int, level: float) -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    # proportion_confint(successes, n, alpha=1 - level, method="wilson")
    low, high = proportion.proportion_confint(successes, n, alpha=1 - level, method="wilson")
    iv = wilson_interval(successes, n, level)
    assert iv.ci_low == pytest.approx(low, rel=1e-9, abs=1e-12)
    assert iv.ci_high == pytest.approx(high, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(
    ("successes", "n", "message"),
    [
        (13, 12, r"successes must be at most n \(12\), got 13"),
        (-1, 12, r"successes must be a whole number >= 0, got -1"),
        (1, -2, r"n must be a whole number >= 0, got -2"),
        (0.5, 12, r"successes must be a whole number >= 0, got 0.5"),
    ],
)
def test_wilson_bad_counts(successes: int, n: int, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        wilson_interval(successes, n)


# -- Student's t (few cases and clusters) ----------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4, 9, 19, 29, 49, 120, 999, 1001, 50_000])
@pytest.mark.parametrize("level", [0.5, 0.9, 0.95, 0.99, 1 - 0.05 / 7, 0.999999])
def test_t_value_matches_scipy(df: int, level: float) -> None:
    from scipy import stats

    from evaldelta.stats import t_value

    expected = float(stats.t.ppf(1 - (1 - level) / 2, df))
    assert t_value(level, df) == pytest.approx(expected, rel=2e-7)


def test_t_value_worked_values_and_bad_input() -> None:
    from evaldelta.stats import t_value

    # Tables: t(0.975; 1) = 12.7062, t(0.975; 19) = 2.0930, t(0.975; 2) = 4.3027.
    assert t_value(0.95, 1) == pytest.approx(12.706205, abs=1e-6)
    assert t_value(0.95, 19) == pytest.approx(2.093024, abs=1e-6)
    assert t_value(0.95, 2) == pytest.approx(4.302653, abs=1e-6)
    with pytest.raises(UsageError, match="degrees of freedom"):
        t_value(0.95, 0)
    with pytest.raises(UsageError, match="level"):
        t_value(1.0, 5)


def test_t_interval_matches_scipy_on_cases() -> None:
    from scipy import stats

    from evaldelta.stats import t_interval

    x = np.random.default_rng(3).normal(0.1, 0.3, 23)
    iv = t_interval(x, 0.95)
    low, high = stats.t.interval(0.95, 22, loc=x.mean(), scale=stats.sem(x))
    assert (iv.ci_low, iv.ci_high) == (
        pytest.approx(low, abs=1e-12),
        pytest.approx(high, abs=1e-12),
    )
    assert (iv.method, iv.n, iv.units, iv.estimate) == ("t", 23, "cases", pytest.approx(x.mean()))


def test_t_interval_over_clusters() -> None:
    from scipy import stats

    from evaldelta.stats import t_interval

    rng = np.random.default_rng(4)
    # Equal sizes: exactly the t interval of the clusters' means.
    x = rng.normal(0, 1, 40)
    labels = np.repeat(np.arange(8), 5)
    iv = t_interval(x, 0.95, labels)
    means = x.reshape(8, 5).mean(axis=1)
    low, high = stats.t.interval(0.95, 7, loc=means.mean(), scale=stats.sem(means))
    assert (iv.ci_low, iv.ci_high) == (
        pytest.approx(low, abs=1e-12),
        pytest.approx(high, abs=1e-12),
    )
    assert (iv.n, iv.units) == (8, "clusters")
    # Unequal sizes: CR1, sqrt(G/(G-1) * sum of squared cluster residual totals) / n.
    y = rng.normal(0, 1, 30)
    groups = np.array([0] * 3 + [1] * 12 + [2] * 5 + [3] * 10)
    e = y - y.mean()
    totals = np.array([e[groups == g].sum() for g in range(4)])
    se = math.sqrt(4 / 3 * float(totals @ totals)) / 30
    t = float(stats.t.ppf(0.975, 3))
    iv = t_interval(y, 0.95, groups)
    assert (iv.ci_low, iv.ci_high) == (
        pytest.approx(y.mean() - t * se, abs=1e-12),
        pytest.approx(y.mean() + t * se, abs=1e-12),
    )


def test_t_interval_small_and_degenerate() -> None:
    from evaldelta.stats import t_interval

    assert math.isnan(t_interval([], 0.95).estimate)
    one = t_interval([0.4], 0.95)
    assert (one.estimate, one.n) == (0.4, 1)
    assert math.isnan(one.ci_low)
    flat = t_interval([0.2] * 5, 0.95)
    assert (flat.ci_low, flat.ci_high) == (pytest.approx(0.2), pytest.approx(0.2))
    single_cluster = t_interval([0.1, 0.3], 0.95, ["a", "a"])
    assert single_cluster.n == 1
    assert math.isnan(single_cluster.ci_high)
