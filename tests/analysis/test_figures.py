"""Figures of a paired comparison, checked by hand on small runs."""

from __future__ import annotations

import pytest

from evaldelta.analysis import Figures, Settings
from evaldelta.api import compare, compare_matrix
from evaldelta.model import Record, Run


def run(rows: list[tuple[str, list[float]]], **fields: object) -> Run:
    return Run.from_records(
        [Record(tid, s, **fields) for tid, scores in rows for s in scores]  # type: ignore[arg-type]
    )


def figures(base: Run, cand: Run, **kw: object) -> Figures:
    c = compare(base, cand, settings=Settings(**kw))  # type: ignore[arg-type]
    return c.figures


def test_mcnemar_counts_clean_flips_only() -> None:
    base = run([("a", [1, 1, 1]), ("b", [0, 0, 0]), ("c", [1, 1, 0]), ("d", [1, 1, 1])])
    cand = run([("a", [0, 0, 0]), ("b", [1, 1, 1]), ("c", [1, 1, 1]), ("d", [1, 1, 1])])
    f = figures(base, cand)
    assert (f.mcnemar.regressed, f.mcnemar.improved, f.partly_changed) == (1, 1, 1)
    assert f.mcnemar.pvalue == 1.0


def test_pass_rates_wilson_for_one_attempt_bootstrap_for_several() -> None:
    one = run([(f"q{i}", [1.0 if i < 5 else 0.0]) for i in range(12)])
    f = figures(one, one)
    assert f.pass_rates.baseline.method == "wilson"
    assert (round(f.pass_rates.baseline.ci_low, 4), round(f.pass_rates.baseline.ci_high, 4)) == (
        0.1933,
        0.6805,
    )
    several = run([(f"q{i}", [1.0, 0.0]) for i in range(12)])
    assert figures(several, several).pass_rates.baseline.method == "bootstrap"


def test_pass_threshold_and_passed_flag() -> None:
    base = Run.from_records([Record("a", 0.6), Record("b", 0.9, passed=False)])
    f = figures(base, base, pass_threshold=0.7)
    # a: 0.6 < 0.7 fails; b: the record says it failed, whatever its score.
    assert f.pass_rates.baseline.estimate == 0.0


def test_latency_excludes_waits_and_scorers_and_categories() -> None:
    base = Run.from_records(
        [
            Record("a", 1, latency_ms=1000, wait_ms=400, category="x", scores={"j": 0.5}),
            Record("b", 0, latency_ms=500, category="y", scores={"j": 0.5}),
        ]
    )
    cand = Run.from_records(
        [
            Record("a", 1, latency_ms=700, category="x", scores={"j": 0.9}),
            Record("b", 1, latency_ms=500, category="y", scores={"j": 0.5}),
        ]
    )
    f = figures(base, cand)
    lat = f.metric("latency_ms")
    assert (lat.baseline_mean, lat.candidate_mean, lat.delta.estimate) == (550, 600, 50)
    (j,) = f.scorers
    assert (j.name, round(j.delta.estimate, 9), j.improved, j.unchanged) == ("j", 0.2, 1, 1)
    (moved,) = f.categories
    assert (moved.category, moved.baseline_rate, moved.candidate_rate) == ("y", 0.0, 1.0)


def test_holm_in_matrix_with_baseline() -> None:
    recs = [Record(f"q{i}", float(i % 2), target=t) for t in ("a", "b", "c") for i in range(20)]
    m = compare_matrix(Run.from_records(recs), baseline="a")
    levels = [p.figures.level for p in m.pairwise]
    # Nothing decided in Holm's first round: both stay at 1 - alpha/2.
    assert levels == [pytest.approx(1 - 0.05 / 2)] * 2
    assert m.pairwise[0].to_dict()["statistics"]["adjustment"] == (
        "Holm step-down: 2 comparisons against the baseline; this one at level 1 - alpha/2"
    )
    every_pair = compare_matrix(Run.from_records(recs))
    assert {p.figures.level for p in every_pair.pairwise} == {0.95}


@pytest.mark.parametrize(
    ("documents", "questions", "method"), [(10, 10, "t"), (60, 4, "bootstrap-cluster")]
)
def test_cluster_interval_is_wider_for_grouped_questions(
    documents: int, questions: int, method: str
) -> None:
    # Questions on a document move together: Student's t over the documents' means
    # below 50 of them, the cluster bootstrap above.
    base, cand = [], []
    for d in range(documents):
        shift = 1.0 if d % 2 else 0.0
        for q in range(questions):
            tid = f"d{d}-q{q}"
            base.append(Record(tid, 0.0, category=f"doc{d}"))
            cand.append(Record(tid, shift, category=f"doc{d}"))
    b, c = Run.from_records(base), Run.from_records(cand)
    plain = figures(b, c).score
    clustered = figures(b, c, cluster_by="category").score
    assert (clustered.method, clustered.units, clustered.n) == (method, "clusters", documents)
    assert clustered.ci_high - clustered.ci_low > 1.5 * (plain.ci_high - plain.ci_low)


def test_bad_settings() -> None:
    from evaldelta.errors import UsageError

    with pytest.raises(UsageError, match="alpha must be between 0 and 1"):
        Settings(alpha=1.5)
    with pytest.raises(UsageError, match="resamples must be at least 100"):
        Settings(resamples=10)


def test_bootstrap_where_affordable_else_the_normal_interval() -> None:
    """Values on few levels get the bootstrap at any size (its multinomial shortcut costs
    a draw per level per resample); values on many levels, over many cases, are
    continuous for this purpose and get the normal interval, and say so."""
    import numpy as np

    from evaldelta.analysis._figures import BOOTSTRAP_BUDGET, MULTINOMIAL_BUDGET, mean_interval

    settings = Settings()
    n = BOOTSTRAP_BUDGET // settings.resamples + 1  # past the case-by-case budget
    rng = np.random.default_rng(0)
    coarse = rng.integers(-5, 6, n) / 5  # 11 levels: the score delta of 5 attempts
    levels = MULTINOMIAL_BUDGET // settings.resamples + 1  # one level too many
    fine = rng.integers(0, levels, n) / levels
    assert mean_interval(coarse, settings, 0.95).method == "bootstrap"
    assert mean_interval(fine, settings, 0.95).method == "normal"
    # A small sample is always bootstrapped, whatever its levels.
    assert mean_interval(fine[:1000], settings, 0.95).method == "bootstrap"


def test_a_continuous_score_on_many_cases_gets_the_normal_interval() -> None:
    """The change of the mean score follows the rule of every figure: over 5,000 cases of
    continuous scores (over 200 levels), the normal interval, which matches the bootstrap
    there (checked here against 10,000 seeded resamples, the bootstrap it replaces)."""
    import numpy as np

    from evaldelta.stats import bootstrap_mean

    rng = np.random.default_rng(3)
    n = 6000
    base = rng.random(n)
    cand = np.clip(base + rng.normal(0.01, 0.2, n), 0, 1)

    def run(scores: np.ndarray) -> Run:
        return Run.from_records(
            Record(test_id=f"q{i}", score=float(s)) for i, s in enumerate(scores)
        )

    c = compare(run(base), run(cand))
    score = c.figures.score
    assert (score.method, score.n, score.resamples) == ("normal", n, None)
    boot = bootstrap_mean(cand - base, level=0.95, resamples=10_000, seed=0)
    assert score.estimate == pytest.approx(boot.estimate, abs=1e-12)
    assert score.ci_low == pytest.approx(boot.ci_low, abs=5e-4)
    assert score.ci_high == pytest.approx(boot.ci_high, abs=5e-4)
