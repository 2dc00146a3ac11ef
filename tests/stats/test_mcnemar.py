"""Exact McNemar: worked values, and scipy.stats.binomtest as the independent reference."""

from __future__ import annotations

import itertools

import pytest

from evaldelta.errors import UsageError
from evaldelta.stats._mcnemar import McNemarResult, mcnemar_exact


@pytest.mark.parametrize(
    ("regressed", "improved", "pvalue"),
    [
        # statistics.md; scipy.stats.binomtest(3, 12, 0.5).pvalue -> 0.14599609375
        (3, 9, 0.14599609375),
        # 2 * 2**-6 and 2 * 2**-5
        (0, 6, 0.03125),
        (0, 5, 0.0625),
        (9, 3, 0.14599609375),
        (0, 0, 1.0),
        (4, 4, 1.0),
        (4, 5, 1.0),
        (0, 1, 1.0),
    ],
)
def test_worked_values(regressed: int, improved: int, pvalue: float) -> None:
    assert mcnemar_exact(regressed, improved).pvalue == pytest.approx(pvalue, rel=1e-12)


def test_fields_follow_the_argument_order() -> None:
    result = mcnemar_exact(3, 9)  # regressed first, improved second
    assert (result.regressed, result.improved) == (3, 9)
    assert result.method == "exact McNemar, two-sided"
    assert result.to_dict() == {
        "improved": 9,
        "regressed": 3,
        "pvalue": 0.14599609375,
        "method": "exact McNemar, two-sided",
    }
    assert isinstance(result, McNemarResult)


SMALL = list(itertools.product(range(31), repeat=2))
LARGE = [
    (50, 80),
    (123, 200),
    (400, 450),
    (480, 519),  # 999 flips: the last exact sum
    (480, 520),  # 1000
    (480, 521),  # 1001: the first saddle-point one
    (500, 700),
    (1000, 1100),
    (1500, 1700),
    (1800, 2000),
    (2000, 1990),
    (2000, 2000),
    (5, 1500),
    (0, 2000),
    (700, 1300),
    (40000, 40500),
    (1_000_000, 1_003_000),
    (3_000_000, 3_005_000),
]


@pytest.mark.parametrize(("regressed", "improved"), SMALL + LARGE)
def test_against_scipy_binomtest(regressed: int, improved: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    # scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue, two-sided
    n = regressed + improved
    expected = 1.0 if n == 0 else stats.binomtest(min(regressed, improved), n, 0.5).pvalue
    assert mcnemar_exact(regressed, improved).pvalue == pytest.approx(expected, rel=1e-9, abs=0)


def test_symmetric() -> None:
    for b, c in [(3, 9), (100, 1500), (40000, 40500)]:
        assert mcnemar_exact(b, c).pvalue == mcnemar_exact(c, b).pvalue


def test_millions_of_flips_are_fast_and_in_range() -> None:
    # scipy's binomtest counts tail terms within a relative 1e-7 of the observed one as
    # "as extreme", so past ~1e7 flips it differs from the exact tail; check sanity instead.
    p = mcnemar_exact(10_000_000, 10_000_002).pvalue
    assert 0.999 < p < 1.0
    assert mcnemar_exact(10_000_000, 10_020_000).pvalue < 0.01


@pytest.mark.parametrize(
    ("regressed", "improved", "message"),
    [
        (-1, 3, r"regressed must be a whole number >= 0, got -1"),
        (3, -2, r"improved must be a whole number >= 0, got -2"),
        (1.5, 3, r"regressed must be a whole number >= 0, got 1.5"),
        (True, 3, r"regressed must be a whole number >= 0, got True"),
    ],
)
def test_bad_counts(regressed: int, improved: int, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        mcnemar_exact(regressed, improved)
