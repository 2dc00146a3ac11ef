"""The sign-flip test against brute force and known values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaldelta.stats import sign_flip_test


def brute_force(d: list[float]) -> float:
    nz = [x for x in d if abs(x) > 1e-12]
    obs = abs(sum(nz))
    flips = [
        abs(sum(s * x for s, x in zip(signs, nz, strict=True)))
        for signs in itertools.product((1, -1), repeat=len(nz))
    ]
    return sum(f >= obs - 1e-9 for f in flips) / len(flips)


@pytest.mark.parametrize(
    "d",
    [
        [0.7],
        [-1.0, -1.0, -1.0],
        [0.1, -0.2, 0.3, 0.5],
        [1, 1, 1, 1, 1, 0, 0],
        [0.5, 0.25, -0.1, 0.9, 0.3, 0.2],
    ],
)
def test_exact_matches_brute_force(d: list[float]) -> None:
    assert sign_flip_test(d).pvalue == pytest.approx(brute_force(d))


def test_known_values() -> None:
    assert sign_flip_test([0.7]).pvalue == 1.0  # one case can never be significant
    assert sign_flip_test([-1, -1, -1]).pvalue == 0.25  # as McNemar's (0, 3)
    assert sign_flip_test([1] * 6).pvalue == 0.03125  # as McNemar's (0, 6)
    assert sign_flip_test([0, 0]).pvalue == 1.0


def test_monte_carlo_is_seeded_and_close_to_exact() -> None:
    rng = np.random.default_rng(3)
    d = rng.normal(0.2, 1, 40)
    a = sign_flip_test(d, seed=1)
    assert a.method == "sign-flip, Monte Carlo"
    assert a == sign_flip_test(d, seed=1)
    from scipy import stats  # reference: the same test by scipy's permutation_test

    ref = stats.permutation_test(
        (d,), np.mean, permutation_type="samples", n_resamples=20000, random_state=0
    ).pvalue
    assert a.pvalue == pytest.approx(ref, abs=0.02)
