"""Every figure of a paired comparison, computed on the cases present in both runs.

Cases are the unit throughout: a case's score is the mean over its attempts, and
intervals resample cases (or whole clusters of cases), never attempts, because
attempts at the same question are not independent (Miller 2024, "Adding Error
Bars to Evals", arXiv 2411.00640).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaldelta._plain import FieldsDict, picked
from evaldelta.analysis._settings import Settings
from evaldelta.pairing._pairwise import LOSS, TIE, WIN, classify_all, clean

if TYPE_CHECKING:
    from evaldelta.model import FloatArray, IntArray
    from evaldelta.pairing._cases import Cases
    from evaldelta.pairing._pairwise import Pairing
    from evaldelta.stats import Interval, McNemarResult, SignFlipResult

__all__ = [
    "BOOTSTRAP_BUDGET",
    "MULTINOMIAL_BUDGET",
    "CategoryMove",
    "Figures",
    "PairedMetric",
    "PassRates",
    "ScorerFigures",
    "compute_figures",
    "mean_interval",
]

#: Largest resamples x cases for a case-by-case bootstrap of continuous values; beyond
#: it (100,000 latencies x 10,000 resamples) the normal interval is used, and says so.
BOOTSTRAP_BUDGET = 50_000_000
#: Largest resamples x distinct values for the bootstrap's multinomial shortcut, which
#: costs one binomial draw per distinct value per resample whatever the number of cases:
#: values on a few levels (scores, pass rates: 200 levels at 10,000 resamples, ~0.1 s)
#: always get the bootstrap. Values on more levels than that (a judge's 0.00-1.00 score
#: averaged over attempts: ~600 levels, ~0.6 s) are continuous for this purpose, and above
#: BOOTSTRAP_BUDGET they get the normal interval like any other continuous values.
MULTINOMIAL_BUDGET = 2_000_000
#: Below this many cases (or clusters) intervals are Student's t, not the bootstrap: the
#: percentile bootstrap is too narrow on a handful of units.
SMALL_SAMPLE = 50


def mean_interval(
    values: FloatArray,
    settings: Settings,
    level: float,
    clusters: IntArray | None = None,
) -> Interval:
    """Interval of the mean of per-case values: the bootstrap where affordable.

    Percentile bootstrap over cases (or clusters); for large samples of continuous
    values, the normal interval (clustered when clusters are given), which the
    central limit theorem makes equivalent there. The same rule for every figure, the
    change of the mean score and of the pass rate included: on 100,000 cases of
    continuous scores the bootstrap took 1.2 s of a compare, the normal interval none.
    """
    import numpy as np

    from evaldelta.stats import bootstrap_mean, clustered_normal_interval, normal_interval

    n = int(values.shape[0])
    distinct = _distinct(np.round(values, 12))
    affordable = (
        distinct * settings.resamples <= MULTINOMIAL_BUDGET
        or n * settings.resamples <= BOOTSTRAP_BUDGET
    )
    if clusters is not None and len(np.unique(clusters)) * settings.resamples <= BOOTSTRAP_BUDGET:
        affordable = True
    if affordable:
        return bootstrap_mean(
            values,
            level=level,
            resamples=settings.resamples,
            seed=settings.seed,
            clusters=clusters,
        )
    if clusters is not None:
        return clustered_normal_interval(values, clusters, level)
    return normal_interval(values, level)


def _distinct(values: FloatArray) -> int:
    """How many distinct values (NaNs as one), as ``len(np.unique(values))`` counts them
    but without the ~10 ms import of ``numpy.ma`` that numpy's ``unique`` costs."""
    import numpy as np

    if not values.shape[0]:
        return 0
    s = np.sort(values)
    nans = int(np.count_nonzero(np.isnan(s)))
    return int(np.count_nonzero(s[1:] != s[:-1])) + 1 - max(nans - 1, 0)


@dataclass(frozen=True, slots=True)
class PairedMetric:
    """A cost of running the agent (latency, cost, tokens), paired per case."""

    name: str
    unit: str
    n: int
    baseline_mean: float
    candidate_mean: float
    delta: Interval

    @property
    def relative(self) -> float:
        """Relative change of the mean, candidate / baseline - 1 (NaN when the baseline
        is 0 or negative: a share of a credit says nothing)."""
        if not self.baseline_mean > 0:
            return math.nan
        return self.delta.estimate / self.baseline_mean

    def to_dict(self) -> dict[str, Any]:
        rel = self.relative
        return {
            **picked(self, "name unit cases=n ~baseline_mean ~candidate_mean", _num),
            "delta": self.delta.to_dict(),
            "relative_change": _num(rel),
        }


@dataclass(frozen=True, slots=True)
class PassRates(FieldsDict):
    """Pass rate of each run on the common cases, and the change in points."""

    baseline: Interval
    candidate: Interval
    change: Interval


@dataclass(frozen=True, slots=True)
class ScorerFigures(FieldsDict):
    """One scorer's mean delta and its per-case counts."""

    name: str
    delta: Interval
    improved: int
    regressed: int
    unchanged: int


@dataclass(frozen=True, slots=True)
class CategoryMove:
    """A category whose pass rate moved: a lead to investigate, not proof."""

    category: str
    cases: int
    baseline_rate: float
    candidate_rate: float

    @property
    def change(self) -> float:
        return self.candidate_rate - self.baseline_rate

    def to_dict(self) -> dict[str, Any]:
        spec = "category cases ~baseline_pass_rate=baseline_rate "
        spec += "~candidate_pass_rate=candidate_rate ~change"
        return picked(self, spec, _num)


@dataclass(frozen=True, slots=True)
class Figures:
    """Every figure of one comparison."""

    level: float
    comparisons: int
    score: Interval
    score_normal: Interval
    baseline_mean: float
    candidate_mean: float
    points: bool
    pass_rates: PassRates
    mcnemar: McNemarResult
    partly_changed: int
    small_sample: SignFlipResult | None = None
    metrics: list[PairedMetric] = field(default_factory=list)
    scorers: list[ScorerFigures] = field(default_factory=list)
    categories: list[CategoryMove] = field(default_factory=list)
    new_safety_failures: list[str] = field(default_factory=list)
    cluster_by: str | None = None
    clusters: int | None = None
    step: int = 1

    @property
    def adjustment(self) -> str | None:
        """How the level was adjusted for several comparisons against one baseline."""
        if self.comparisons < 2:
            return None
        return (
            f"Holm step-down: {self.comparisons} comparisons against the baseline; "
            f"this one at level 1 - alpha/{self.step}"
        )

    def metric(self, name: str) -> PairedMetric | None:
        return next((m for m in self.metrics if m.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": round(self.level, 12),
            "comparisons": self.comparisons,
            "adjustment": self.adjustment,
            "cluster_by": self.cluster_by,
            "clusters": self.clusters,
            "mean_score": {
                "baseline": _num(self.baseline_mean),
                "candidate": _num(self.candidate_mean),
                "delta": self.score.to_dict(),
                "delta_normal": self.score_normal.to_dict(),
            },
            "pass_rate": self.pass_rates.to_dict(),
            "mcnemar": {**self.mcnemar.to_dict(), "partly_changed": self.partly_changed},
            "small_sample_test": (
                self.small_sample.to_dict() if self.small_sample is not None else None
            ),
            "metrics": [m.to_dict() for m in self.metrics],
            "scorers": [s.to_dict() for s in self.scorers],
            "categories_moved": [c.to_dict() for c in self.categories],
            "new_safety_failures": list(self.new_safety_failures),
        }


def _num(x: float) -> float | None:
    return None if math.isnan(x) else clean(float(x))


_METRICS = (
    ("latency_ms", "ms"),
    ("cost_usd", "USD"),
    ("input_tokens", "tokens"),
    ("output_tokens", "tokens"),
)


def compute_figures(
    c: Pairing,
    settings: Settings,
    *,
    level: float | None = None,
    comparisons: int = 1,
    step: int = 1,
    clusters: IntArray | None = None,
    categories: list[str | None] | None = None,
    safety_from: tuple[Cases, Cases] | None = None,
) -> Figures:
    """All figures of a comparison.

    Args:
        c: the paired comparison (its ``left``/``right`` cases aligned row by row).
        level: the confidence level (defaults to the settings'; Holm passes less).
        comparisons: how many comparisons against one baseline share alpha.
        step: the j of Holm's level 1 - alpha/j this comparison was decided at (or
            left undecided at), for the record.
        clusters: cluster code per matched case, when cases come in groups.
        categories: category per matched case, for "categories that moved".
        safety_from: all cases of each run (not only the compared ones): a new safety
            failure counts wherever it is, compared or not.
    """
    import numpy as np

    from evaldelta.stats import mcnemar_exact, normal_interval, wilson_interval

    lvl = settings.level if level is None else level
    left, right = c.left, c.right
    n = len(left)

    delta = c.delta
    both = np.concatenate([left.score, right.score]) if n else np.zeros(0)
    points = bool(n == 0 or (both.min() >= -1e-12 and both.max() <= 1 + 1e-12))
    units = len(np.unique(clusters)) if clusters is not None else n
    small = None
    rate1, rate2 = left.pass_rate, right.pass_rate
    if 0 < units < SMALL_SAMPLE:
        from evaldelta.stats import sign_flip_test, t_interval

        # Few cases (or clusters): the percentile bootstrap is too narrow there; Student's
        # t keeps its coverage (statistics.md, "Few clusters, few cases"; the calibration test).
        score = t_interval(delta, lvl, clusters)
        change = t_interval(rate2 - rate1, lvl, clusters)
        sums = delta if clusters is None else np.bincount(clusters, weights=delta)
        small = sign_flip_test(sums.astype(np.float64), seed=settings.seed)
    else:
        score = mean_interval(delta, settings, lvl, clusters)
        change = mean_interval(rate2 - rate1, settings, lvl, clusters)
    from evaldelta.stats import clustered_normal_interval

    score_normal = (
        clustered_normal_interval(delta, clusters, lvl)
        if clusters is not None
        else normal_interval(delta, lvl)
    )

    # Pass rates: Wilson with one attempt per case, the case bootstrap with several.

    def run_rate(cases_rate: FloatArray, passes: IntArray, valid: IntArray) -> Interval:
        if n and bool((valid == 1).all()) and clusters is None:
            return wilson_interval(int(passes.sum()), n, lvl)
        return mean_interval(cases_rate, settings, lvl, clusters)

    pass_rates = PassRates(
        baseline=run_rate(rate1, left.passes, left.valid),
        candidate=run_rate(rate2, right.passes, right.valid),
        change=change,
    )

    # McNemar on clean flips: every attempt passed on one side and failed on the other.
    all1, none1 = left.passes == left.valid, left.passes == 0
    all2, none2 = right.passes == right.valid, right.passes == 0
    regressed = int(np.count_nonzero(all1 & none2))
    improved = int(np.count_nonzero(none1 & all2))
    changed = np.abs(rate2 - rate1) > 1e-12
    partly = int(np.count_nonzero(changed)) - regressed - improved

    def metric_interval(d: FloatArray, where: IntArray | None) -> Interval:
        """Student's t on few units, as for the score; else the bootstrap (or normal)."""
        from evaldelta.stats import t_interval

        if small is not None:
            return t_interval(d, lvl, where)
        return mean_interval(d, settings, lvl, where)

    metrics = []
    for name, unit in _METRICS:
        a, b = getattr(left, name), getattr(right, name)
        ok = ~(np.isnan(a) | np.isnan(b))
        m = int(np.count_nonzero(ok))
        if m == 0:
            continue
        d = b[ok] - a[ok]
        metrics.append(
            PairedMetric(
                name=name,
                unit=unit,
                n=m,
                baseline_mean=float(a[ok].mean()),
                candidate_mean=float(b[ok].mean()),
                delta=metric_interval(d, None if clusters is None else clusters[ok]),
            )
        )

    scorers = []
    for name in [s for s in left.scorers if s in right.scorers]:
        a, b = left.scorers[name], right.scorers[name]
        ok = ~(np.isnan(a) | np.isnan(b))
        if not ok.any():
            continue
        d = b[ok] - a[ok]
        outcomes = classify_all(d, settings.threshold)
        scorers.append(
            ScorerFigures(
                name=name,
                delta=metric_interval(d, None if clusters is None else clusters[ok]),
                improved=int(np.count_nonzero(outcomes == WIN)),
                regressed=int(np.count_nonzero(outcomes == LOSS)),
                unchanged=int(np.count_nonzero(outcomes == TIE)),
            )
        )

    moves: list[CategoryMove] = []
    if categories is not None and any(cat is not None for cat in categories):
        groups: dict[str, list[int]] = {}
        for i, cat in enumerate(categories):
            if cat is not None:
                groups.setdefault(cat, []).append(i)
        for cat, rows in groups.items():
            idx = np.asarray(rows, dtype=np.int64)
            r1, r2 = float(rate1[idx].mean()), float(rate2[idx].mean())
            if abs(r2 - r1) > 1e-12:
                moves.append(CategoryMove(cat, len(rows), r1, r2))
        moves.sort(key=lambda mv: (-abs(mv.change), mv.category))

    base_all, cand_all = safety_from if safety_from is not None else (left, right)
    unsafe_before = {
        t for t, s in zip(base_all.test_ids, base_all.safety.tolist(), strict=True) if s
    }
    new_safety = [
        tid
        for tid, s2 in zip(cand_all.test_ids, cand_all.safety.tolist(), strict=True)
        if s2 and tid not in unsafe_before
    ]
    return Figures(
        level=lvl,
        comparisons=comparisons,
        step=step,
        score=score,
        score_normal=score_normal,
        baseline_mean=float(left.score.mean()) if n else math.nan,
        candidate_mean=float(right.score.mean()) if n else math.nan,
        points=points,
        pass_rates=pass_rates,
        mcnemar=mcnemar_exact(regressed, improved),
        partly_changed=partly,
        small_sample=small,
        metrics=metrics,
        scorers=scorers,
        categories=moves,
        new_safety_failures=new_safety,
        cluster_by=settings.cluster_by,
        clusters=None if clusters is None else len(np.unique(clusters)),
    )
