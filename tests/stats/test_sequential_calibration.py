"""The confidence sequence keeps its promise, checked by seeded simulation.

For each of five kinds of scores, 2,000 pairs of runs of 1,000 cases are simulated at
once (numpy, vectorised over runs): the paired per-case differences go through
:func:`confidence_sequence` in order, and a run "settles" at the first look, from case
20 on, where the interval excludes zero. With no true difference, at most alpha (5%)
of the runs may ever settle on Better or Worse (plus three simulation standard errors);
the interval must cover the true mean at every look (with the running intersection:
the last interval covers it) in at least 1 - alpha of the runs, with no difference and
with a true +10 points. The same null runs show why this is needed: the ordinary 95%
interval, re-checked after every case, calls a difference far more often than 5%.

Kinds of scores (p: a case's chance to pass, shared by both runs, which then answer
independently): pass/fail with p ~ U(0.2, 0.9); mostly deterministic pass/fail with
p ~ Beta(0.3, 0.3); continuous scores, Beta with a case mean in U(0.2, 0.8) and
concentration 8; clustered difficulty, 100 clusters of 10 cases sharing p, shuffled;
means over 3 attempts (scores in {0, 1/3, 2/3, 1}). Under +10 points the candidate's
p (or mean) is the baseline's + 0.1, with p drawn where that stays below 1, so the true
change is exactly +0.10.

The figures these tests measure are the README's (section "Stop paying once the answer
is in"); ``FIGURES`` below holds them, and a test checks that they still hold.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from evaldelta.stats._sequential import confidence_sequence

RUNS = 2000
CASES = 1000
ALPHA = 0.05
MIN_CASES = 20
SE = math.sqrt(ALPHA * (1 - ALPHA) / RUNS)

Draw = Callable[[np.random.Generator, float], np.ndarray]


def _binary(p: np.ndarray, delta: float, rng: np.random.Generator) -> np.ndarray:
    base = rng.random(p.shape) < p
    cand = rng.random(p.shape) < p + delta
    return cand.astype(np.float64) - base


def pass_fail(rng: np.random.Generator, delta: float) -> np.ndarray:
    p = rng.uniform(0.2, 0.9 - delta, (RUNS, CASES))
    return _binary(p, delta, rng)


def mostly_deterministic(rng: np.random.Generator, delta: float) -> np.ndarray:
    p = rng.beta(0.3, 0.3, (RUNS, CASES)) * (1 - delta)
    return _binary(p, delta, rng)


def continuous(rng: np.random.Generator, delta: float) -> np.ndarray:
    m = rng.uniform(0.2, 0.8 - delta, (RUNS, CASES))
    k = 8.0
    base = rng.beta(m * k, (1 - m) * k)
    cand = rng.beta((m + delta) * k, (1 - m - delta) * k)
    return cand - base


def clustered(rng: np.random.Generator, delta: float) -> np.ndarray:
    p = np.repeat(rng.uniform(0.1, 0.9 - delta, (RUNS, CASES // 10)), 10, axis=1)
    p = rng.permuted(p, axis=1)
    return _binary(p, delta, rng)


def three_attempts(rng: np.random.Generator, delta: float) -> np.ndarray:
    p = rng.uniform(0.2, 0.9 - delta, (RUNS, CASES, 1))
    base = (rng.random((RUNS, CASES, 3)) < p).mean(axis=2)
    cand = (rng.random((RUNS, CASES, 3)) < p + delta).mean(axis=2)
    return cand - base


REGIMES: dict[str, Draw] = {
    "pass/fail": pass_fail,
    "mostly deterministic": mostly_deterministic,
    "continuous": continuous,
    "clustered": clustered,
    "3 attempts": three_attempts,
}

_cache: dict[tuple[str, float], dict[str, Any]] = {}


def measure(name: str, delta: float) -> dict[str, Any]:
    """False (or true) settles, coverage, naive re-testing and stopping points."""
    key = (name, delta)
    if key in _cache:
        return _cache[key]
    seed = 1000 + list(REGIMES).index(name) * 10 + int(delta * 100)
    rng = np.random.default_rng(seed)
    d = REGIMES[name](rng, delta)
    seq = confidence_sequence(d, alpha=ALPHA)
    settled = (seq.low > 0) | (seq.high < 0)
    settled[:, : MIN_CASES - 1] = False
    ever = settled.any(axis=1)
    stop = np.where(ever, settled.argmax(axis=1) + 1, CASES)
    covered = (seq.low[:, -1] <= delta + 1e-12) & (seq.high[:, -1] >= delta - 1e-12)
    # The ordinary 95% interval, re-checked after every case from case 20 on.
    t = np.arange(1, CASES + 1)
    mean = np.cumsum(d, axis=1) / t
    var = np.maximum(np.cumsum(d * d, axis=1) / t - mean**2, 0) * t / np.maximum(t - 1, 1)
    naive = ((np.abs(mean) > 1.959964 * np.sqrt(var / t)) & (t >= MIN_CASES)).any(axis=1)
    out = {
        "better": float((seq.low[:, -1] > 0).mean()),
        "worse": float((seq.high[:, -1] < 0).mean()),
        "settled": float(ever.mean()),
        "covered": float(covered.mean()),
        "naive": float(naive.mean()),
        "median_stop": float(np.median(stop)),
        "stop_p10": float(np.percentile(stop, 10)),
        "stop_p90": float(np.percentile(stop, 90)),
    }
    _cache[key] = out
    return out


@pytest.mark.parametrize("name", list(REGIMES))
def test_no_true_difference_rarely_settles_on_better_or_worse(name: str) -> None:
    m = measure(name, 0.0)
    assert m["better"] + m["worse"] == pytest.approx(m["settled"])
    assert m["settled"] <= ALPHA + 3 * SE, m


@pytest.mark.parametrize("name", list(REGIMES))
@pytest.mark.parametrize("delta", [0.0, 0.1])
def test_the_sequence_covers_the_true_change_at_every_look(name: str, delta: float) -> None:
    m = measure(name, delta)
    assert m["covered"] >= 1 - ALPHA - 3 * SE, m


@pytest.mark.parametrize("name", list(REGIMES))
def test_re_testing_an_ordinary_interval_after_every_case_fails(name: str) -> None:
    m = measure(name, 0.0)
    assert m["naive"] > 0.20, m


@pytest.mark.parametrize("name", list(REGIMES))
def test_a_true_change_of_ten_points_settles_well_before_the_end(name: str) -> None:
    m = measure(name, 0.1)
    assert m["median_stop"] < 700, m
    assert m["worse"] == 0.0, m


#: What the README says (rounded): false Better/Worse at most, coverage at least,
#: naive re-testing at least, median stop with +10 points (range over the regimes).
FIGURES = {"false_at_most": 0.01, "covered_at_least": 0.99, "naive_at_least": 0.40}
MEDIAN_STOPS = (150, 550)


def test_the_readme_figures_hold() -> None:
    nulls = [measure(name, 0.0) for name in REGIMES]
    alts = [measure(name, 0.1) for name in REGIMES]
    assert max(m["settled"] for m in nulls) <= FIGURES["false_at_most"]
    assert min(m["covered"] for m in nulls + alts) >= FIGURES["covered_at_least"]
    assert min(m["naive"] for m in nulls) >= FIGURES["naive_at_least"]
    stops = [m["median_stop"] for m in alts]
    assert MEDIAN_STOPS[0] <= min(stops)
    assert max(stops) <= MEDIAN_STOPS[1]
