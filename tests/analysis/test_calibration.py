"""The verdict is calibrated: seeded simulations of whole comparisons.

With no true difference, Better or Worse must come out in about alpha of the
simulated pairs, and the 95% interval must cover the true change about 95% of
the time (statistics.md, "Checking ourselves"). Each simulated pair draws fresh
case difficulties, so the intervals are tested as statements about the population
of questions, not just about the sample.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaldelta.analysis import Settings
from evaldelta.api import compare
from evaldelta.model import Run

SIMULATIONS = 2000
CASES = 100


def _run(scores: np.ndarray, ids: list[str]) -> Run:
    return Run.from_columns(source="sim", format="sim", test_id=ids, score=scores.tolist())


def simulate(shift: float, seed: int) -> tuple[float, float, float]:
    """Share of Better, of Worse, and coverage of the true change by the interval."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i}" for i in range(CASES)]
    settings = Settings(resamples=2000, seed=0)
    # Expected change over the population of questions (difficulty p ~ Uniform(0, 1)).
    true_delta = shift - shift**2 / 2 if shift > 0 else 0.0
    better = worse = covered = 0
    for _ in range(SIMULATIONS):
        p = rng.random(CASES)
        base = (rng.random(CASES) < p).astype(float)
        cand = (rng.random(CASES) < np.minimum(p + shift, 1.0)).astype(float)
        c = compare(_run(base, ids), _run(cand, ids), settings=settings)
        kind = c.verdict.kind
        iv = c.figures.score
        better += kind == "Better"
        worse += kind == "Worse"
        covered += iv.ci_low <= true_delta <= iv.ci_high
    return better / SIMULATIONS, worse / SIMULATIONS, covered / SIMULATIONS


@pytest.mark.slow
def test_no_true_difference_is_rarely_called() -> None:
    better, worse, coverage = simulate(0.0, seed=20261130)
    # alpha = 0.05 in all: 2.5% per side, with room for 2,000 draws of noise.
    assert better + worse <= 0.065, (better, worse)
    assert 0.93 <= coverage <= 0.97, coverage


@pytest.mark.slow
def test_interval_covers_a_real_change() -> None:
    _, worse, coverage = simulate(0.10, seed=7)
    assert 0.93 <= coverage <= 0.97, coverage
    assert worse < 0.005
