"""The PrPl-EB confidence sequence: the issue's worked values, an independent plain-Python
reference written from the paper's definitions, the running form, and settling."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from evaldelta.errors import UsageError
from evaldelta.stats._sequential import (
    ConfidenceSequence,
    RunningSequence,
    Settled,
    confidence_sequence,
    path_points,
    settle,
    settled_kind,
)

D = [1, 1, 0, 1, -1, 1, 1, 0, 1, 1] * 4


def reference(d: list[float], alpha: float = 0.05, c: float = 0.5) -> list[tuple[float, float]]:
    """Waudby-Smith & Ramdas (JRSS-B 2024), PrPl-EB, two-sided, running intersection,
    one look at a time, straight from the definitions (x = (d + 1) / 2 in [0, 1])."""
    xs = [(v + 1) / 2 for v in d]
    out = []
    mus = [0.5]  # mu_hat_0
    sigmas = [0.25]  # sigma2_hat_0
    lo, hi = 0.0, 1.0
    lam_sum = lam_x = pen = 0.0
    for t, x in enumerate(xs, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (sigmas[t - 1] * t * math.log(t + 1))), c)
        psi = (-math.log(1 - lam) - lam) / 4
        v = 4 * (x - mus[t - 1]) ** 2
        lam_sum += lam
        lam_x += lam * x
        pen += v * psi
        mus.append((0.5 + sum(xs[:t])) / (t + 1))
        sigmas.append((0.25 + sum((xs[i] - mus[i + 1]) ** 2 for i in range(t))) / (t + 1))
        centre = lam_x / lam_sum
        half = (math.log(2 / alpha) + pen) / lam_sum
        lo = max(lo, centre - half, 0.0)
        hi = min(hi, centre + half, 1.0)
        out.append((2 * lo - 1, 2 * hi - 1))
    return out


def test_the_worked_values() -> None:
    s = confidence_sequence(D)
    for t, (low, high) in ((10, (-0.9931, 1.0)), (20, (-0.2420, 1.0)), (40, (0.1350, 1.0))):
        assert round(float(s.low[t - 1]), 4) == low
        assert round(float(s.high[t - 1]), 4) == high
    assert s.interval(40).n == 40
    assert s.interval().level == pytest.approx(0.95)


@pytest.mark.parametrize("seed", range(6))
def test_matches_the_plain_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    d = rng.integers(-1, 2, n).astype(float) if seed % 2 else rng.beta(2, 3, n) - rng.beta(2, 3, n)
    got = confidence_sequence(d, alpha=[0.05, 0.1, 0.01][seed % 3])
    want = reference(list(d), alpha=[0.05, 0.1, 0.01][seed % 3])
    np.testing.assert_allclose(got.low, [w[0] for w in want], atol=1e-12)
    np.testing.assert_allclose(got.high, [w[1] for w in want], atol=1e-12)
    np.testing.assert_allclose(got.mean, np.cumsum(d) / np.arange(1, n + 1), atol=1e-12)


def test_the_running_form_equals_the_vectorised_one() -> None:
    rng = np.random.default_rng(9)
    d = rng.uniform(-1, 1, 400)
    s = confidence_sequence(d)
    r = RunningSequence()
    for i, v in enumerate(d):
        r.add(float(v))
        assert r.low == pytest.approx(float(s.low[i]), abs=1e-12)
        assert r.high == pytest.approx(float(s.high[i]), abs=1e-12)
    assert r.n == 400
    assert r.interval().estimate == pytest.approx(float(d.mean()))


def test_a_batch_is_its_rows() -> None:
    rng = np.random.default_rng(3)
    batch = rng.integers(-1, 2, (5, 120)).astype(float)
    s = confidence_sequence(batch)
    for row in range(5):
        one = confidence_sequence(batch[row])
        np.testing.assert_array_equal(s.low[row], one.low)
        np.testing.assert_array_equal(s.high[row], one.high)


def test_bounds_are_nested_and_narrow() -> None:
    rng = np.random.default_rng(4)
    s = confidence_sequence(rng.uniform(-0.5, 0.5, 10_000))
    assert (np.diff(s.low) >= 0).all()
    assert (np.diff(s.high) <= 0).all()
    assert (s.low <= s.high).all()
    assert (s.low >= -1).all()
    assert (s.high <= 1).all()
    width = s.high - s.low
    # Roughly sqrt(log t / t): 100 times the cases, well under a fifth of the width.
    assert width[9_999] < width[99] / 5


def test_empty_and_errors() -> None:
    s = confidence_sequence([])
    assert len(s) == 0
    assert math.isnan(s.interval().estimate)
    with pytest.raises(UsageError, match=r"rescale the scores to \[0, 1\]"):
        confidence_sequence([0.5, 1.5])
    with pytest.raises(UsageError, match=r"rescale the scores to \[0, 1\]"):
        confidence_sequence([0.5, float("nan")])
    with pytest.raises(UsageError, match="alpha must be a number between 0 and 1"):
        confidence_sequence([0.1], alpha=1.5)
    with pytest.raises(UsageError, match=r"differences in \[-1, 1\], got 1.5"):
        RunningSequence().add(1.5)
    with pytest.raises(UsageError, match="no look 5"):
        confidence_sequence([0.0] * 4).interval(5)


def _settled(sequence: ConfidenceSequence, **options: Any) -> Settled:
    settled = settle(sequence, **options)
    assert settled is not None
    return settled


def test_settle_waits_for_the_minimum_and_names_the_verdict() -> None:
    up = confidence_sequence([1.0] * 60)
    first = int(np.argmax(up.low > 0)) + 1
    assert first < 20
    assert _settled(up, min_cases=20).cases == 20
    assert _settled(up, min_cases=1).cases == first
    assert _settled(up).kind == "Better"
    down = confidence_sequence([-1.0] * 60)
    assert _settled(down).kind == "Worse"
    flat = confidence_sequence([0.0] * 400)
    assert settle(flat) is None
    at = settle(flat, margin=0.05)
    assert at is not None
    assert at.kind == "No change"
    assert flat.high[at.cases - 1] <= 0.05 < flat.high[at.cases - 2]
    assert at.to_dict() == {"after": at.cases, "verdict": "No change"}


def test_settled_kind() -> None:
    assert settled_kind(0.01, 0.2) == "Better"
    assert settled_kind(-0.2, -0.01) == "Worse"
    assert settled_kind(-0.1, 0.1) is None
    assert settled_kind(-0.01, 0.01, margin=0.02) == "No change"
    # Within the margin wins over a side of zero: a change smaller than it does not matter.
    assert settled_kind(0.001, 0.01, margin=0.02) == "No change"
    assert settled_kind(float("nan"), 0.1) is None


def test_path_points_keep_every_look_or_thin_evenly() -> None:
    s = confidence_sequence(np.zeros(50))
    points = path_points(s)
    assert [p["cases"] for p in points] == list(range(1, 51))
    thin = path_points(confidence_sequence(np.zeros(5000)), most=100)
    assert len(thin) == 100
    assert thin[0]["cases"] == 1
    assert thin[-1]["cases"] == 5000
    assert set(thin[0]) == {"cases", "low", "high"}
