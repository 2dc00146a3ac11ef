"""Power: cases needed, minimum detectable effect, and variances from paired runs."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from evaldelta.errors import UsageError
from evaldelta.stats._power import (
    PowerResult,
    cases_needed,
    minimum_detectable_effect,
    paired_variance,
)

# statistics.NormalDist().inv_cdf(0.975) + statistics.NormalDist().inv_cdf(0.8)
Z_SUM = 1.959963984540054 + 0.8416212335729143


def test_worked_example() -> None:
    # statistics.md: p_A = 0.80, p_B = 0.83, r = 0 -> omega^2 = 0.16 + 0.1411 = 0.3011 and
    # n = (1.959964 + 0.841621)^2 * 0.3011 / 0.03^2 = 2625.92 -> 2626
    result = cases_needed(0.80, 0.03)
    assert result.cases == 2626
    assert result.omega2 == pytest.approx(0.3011, rel=1e-12)
    assert (result.effect, result.alpha, result.power) == (0.03, 0.05, 0.8)
    assert (result.baseline_rate, result.correlation, result.attempts) == (0.8, 0.0, 1)
    assert "between-case" in result.method
    assert result.to_dict()["cases"] == 2626
    assert result.to_dict()["omega2"] == 0.3011


def test_a_regression_needs_as_many_cases() -> None:
    # 0.83 -> 0.80 has the same two variances as 0.80 -> 0.83
    assert cases_needed(0.83, -0.03).cases == 2626


def test_more_correlation_needs_fewer_cases() -> None:
    needed = [cases_needed(0.8, 0.03, correlation=r).cases for r in (-0.5, 0.0, 0.3, 0.6, 0.9)]
    assert all(a is not None and b is not None and a > b for a, b in itertools.pairwise(needed))
    # r = 0.6: omega^2 = 0.3011 - 2 * 0.6 * 0.4 * sqrt(0.1411) = 0.12079..., n = 1054
    assert needed[3] == math.ceil(Z_SUM**2 * (0.3011 - 1.2 * 0.4 * math.sqrt(0.1411)) / 0.03**2)


def test_attempts_shrink_only_the_within_case_variance() -> None:
    plain = cases_needed(0.8, 0.03)
    assert cases_needed(0.8, 0.03, attempts=5).cases == plain.cases  # no split given
    assert cases_needed(0.8, 0.03, attempts=1, within_variance=0.1).cases == plain.cases
    three = cases_needed(0.8, 0.03, attempts=3, within_variance=0.1)
    # var_A = 0.16 - 0.1 + 0.1 / 3, var_B = 0.1411 - 0.1 + 0.1 / 3
    assert three.omega2 == pytest.approx(0.3011 - 2 * 0.1 + 2 * 0.1 / 3, rel=1e-12)
    assert three.cases == math.ceil(Z_SUM**2 * three.omega2 / 0.03**2)
    assert "within-case variance" in three.method
    many = [cases_needed(0.8, 0.03, attempts=k, within_variance=0.1).cases for k in (1, 2, 4, 8)]
    assert many == sorted(many, reverse=True)
    assert len(set(many)) == 4


def z_sum_for(kwargs: dict[str, float]) -> float:
    from statistics import NormalDist

    alpha = kwargs.get("alpha", 0.05)
    power = kwargs.get("power", 0.8)
    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


@pytest.mark.parametrize(
    ("rate", "effect", "kwargs"),
    [
        (0.8, 0.03, {}),
        (0.8, 0.03, {"correlation": 0.5}),
        (0.5, 0.1, {"alpha": 0.01, "power": 0.9}),
        (0.2, 0.05, {"attempts": 3, "within_variance": 0.05, "correlation": 0.3}),
        (0.95, 0.02, {}),
    ],
)
def test_minimum_detectable_effect_inverts_cases_needed(
    rate: float, effect: float, kwargs: dict[str, Any]
) -> None:
    needed = cases_needed(rate, effect, **kwargs)
    assert needed.cases is not None
    mde = minimum_detectable_effect(needed.cases, baseline_rate=rate, **kwargs)
    assert mde.effect == pytest.approx(effect, abs=1e-3)
    assert mde.effect <= effect  # n was rounded up
    assert mde.cases == needed.cases
    # the solution satisfies delta = z * omega(p_A + delta) / sqrt(n)
    assert mde.effect == pytest.approx(z_sum_for(kwargs) * math.sqrt(mde.omega2 / needed.cases))


def test_minimum_detectable_effect_from_omega2() -> None:
    # delta = (1.959964 + 0.841621) * sqrt(0.25 / 400)
    mde = minimum_detectable_effect(400, omega2=0.25)
    assert mde.effect == pytest.approx(Z_SUM * math.sqrt(0.25 / 400), rel=1e-12)
    assert (mde.cases, mde.baseline_rate, mde.correlation, mde.omega2) == (400, None, None, 0.25)
    assert "from the runs" in mde.method


def test_nothing_detectable_with_too_few_cases() -> None:
    # One case at p_A = 0.8: even delta = 0.2 needs 2.8 * omega, with omega >= 0.4
    mde = minimum_detectable_effect(1, baseline_rate=0.8)
    assert math.isnan(mde.effect)
    assert mde.to_dict()["effect"] is None


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0.0, 0.1), {}, r"baseline_rate must be between 0 and 1 \(exclusive\), got 0.0"),
        ((1.2, 0.1), {}, r"baseline_rate must be between 0 and 1 \(exclusive\), got 1.2"),
        ((0.8, 0), {}, r"effect must be a non-zero change in pass rate, got 0"),
        (
            (0.8, 0.25),
            {},
            r"baseline_rate \+ effect must be between 0 and 1 \(exclusive\), "
            r"got 0.8 \+ 0.25 = 1.05",
        ),
        ((0.8, math.nan), {}, r"effect must be a finite number, got nan"),
        ((0.8, 0.03), {"alpha": 0}, r"alpha must be a number between 0 and 1 \(exclusive\), got 0"),
        ((0.8, 0.03), {"power": 1.0}, r"power must be a number between 0 and 1 \(exclusive\)"),
        ((0.8, 0.03), {"correlation": 1.5}, r"correlation must be between -1 and 1, got 1.5"),
        ((0.8, 0.03), {"attempts": 0}, r"attempts must be a whole number >= 1, got 0"),
        (
            (0.8, 0.03),
            {"within_variance": 0.15},
            r"within_variance must be between 0 and p\(1-p\) = 0.1411 of both runs, got 0.15",
        ),
        (
            (0.4, 0.2),
            {"correlation": 1.0},
            r"correlation 1.0 leaves no variance in the paired difference",
        ),
    ],
)
def test_cases_needed_bad_input(
    args: tuple[float, float], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        cases_needed(*args, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"cases": 0, "baseline_rate": 0.8}, r"cases must be a whole number >= 1, got 0"),
        ({"cases": 100}, r"give baseline_rate \(pass rates\) or omega2 \(estimated from runs\)"),
        (
            {"cases": 100, "baseline_rate": 0.8, "omega2": 0.3},
            r"give baseline_rate or omega2, not both",
        ),
        ({"cases": 100, "omega2": -0.1}, r"omega2 must be a variance >= 0, got -0.1"),
        ({"cases": 100, "omega2": math.nan}, r"omega2 must be a finite number, got nan"),
        (
            {"cases": 100, "omega2": 0.3, "within_variance": 0.1},
            r"within_variance applies to baseline_rate only",
        ),
        (
            {"cases": 100, "baseline_rate": 0.8, "within_variance": 0.2},
            r"within_variance must be between 0 and p\(1-p\) = 0.16 of the baseline, got 0.2",
        ),
        ({"cases": 100, "omega2": 0.3, "alpha": 2}, r"alpha must be a number between 0 and 1"),
    ],
)
def test_minimum_detectable_effect_bad_input(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        minimum_detectable_effect(**kwargs)


def test_paired_variance_matches_numpy() -> None:
    rng = np.random.default_rng(0)
    a = rng.random(200)
    b = 0.6 * a + 0.4 * rng.random(200)
    var_a, var_b, cov, corr = paired_variance(a, b)
    # np.cov(a, b, ddof=1) and np.corrcoef(a, b)
    reference = np.cov(a, b, ddof=1)
    assert var_a == pytest.approx(reference[0, 0], rel=1e-12)
    assert var_b == pytest.approx(reference[1, 1], rel=1e-12)
    assert cov == pytest.approx(reference[0, 1], rel=1e-12)
    assert corr == pytest.approx(np.corrcoef(a, b)[0, 1], rel=1e-12)
    # the variance of the paired difference
    assert var_a + var_b - 2 * cov == pytest.approx(float(np.var(b - a, ddof=1)), rel=1e-12)


def test_paired_variance_edge_cases() -> None:
    assert paired_variance([1.0, 1.0, 1.0], [0.0, 1.0, 0.5]) == (0.0, 0.25, 0.0, 0.0)
    assert all(math.isnan(v) for v in paired_variance([1.0], [0.0]))
    with pytest.raises(UsageError, match=r"one score per case each: got 3 and 2 scores"):
        paired_variance([1.0, 0.0, 1.0], [1.0, 0.0])
    with pytest.raises(UsageError, match=r"candidate must be finite numbers, got nan"):
        paired_variance([1.0, 0.0], [1.0, math.nan])


def test_result_is_a_power_result() -> None:
    assert isinstance(cases_needed(0.5, 0.1), PowerResult)
    assert set(cases_needed(0.5, 0.1).to_dict()) == {
        "cases",
        "effect",
        "alpha",
        "power",
        "baseline_rate",
        "correlation",
        "attempts",
        "omega2",
        "method",
    }
