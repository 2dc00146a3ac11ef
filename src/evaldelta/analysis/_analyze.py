"""One comparison analysed: its figures, fairness problems and verdict (:func:`analyze`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from evaldelta.analysis._fairness import DatasetCheck, Problem, check_fairness, differs_in
from evaldelta.analysis._figures import Figures, compute_figures
from evaldelta.analysis._sequential import SequentialFigures, sequential_figures, sequential_side
from evaldelta.analysis._settings import Settings
from evaldelta.analysis._verdict import Verdict, decide, format_p

if TYPE_CHECKING:
    from evaldelta.model import FloatArray, IntArray, Run
    from evaldelta.pairing._cases import Cases
    from evaldelta.pairing._pairwise import Pairing

__all__ = ["FEW_CLUSTERS", "Analysis", "analyze", "few_clusters"]


@dataclass(frozen=True, slots=True)
class Analysis:
    """Statistics, fairness problems and the verdict of one comparison.

    ``categories`` is the category of each matched case (the baseline's, else the
    candidate's), in the comparison's row order, or ``None`` when neither run has
    categories; it is kept for tables of cases and is not part of ``to_dict()``.
    """

    settings: Settings
    figures: Figures
    verdict: Verdict
    problems: list[Problem]
    dataset: DatasetCheck
    differs_in: list[str] = field(default_factory=list)
    sample: int | None = None
    categories: list[str | None] | None = None
    sequential: SequentialFigures | None = None

    @property
    def refusals(self) -> list[Problem]:
        """Problems that make the comparison impossible to judge."""
        return [p for p in self.problems if p.refuse]

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.to_dict(),
            "statistics": self.figures.to_dict(),
            "sequential": None if self.sequential is None else self.sequential.to_dict(),
            "problems": [p.to_dict() for p in self.problems],
            "differs_in": list(self.differs_in),
            "dataset": self.dataset.to_dict(),
            "settings": {**self.settings.to_dict(), "sample": self.sample},
        }


def analyze(
    c: Pairing,
    base_cases: Cases,
    cand_cases: Cases,
    base_run: Run,
    cand_run: Run,
    settings: Settings,
    *,
    level: float | None = None,
    comparisons: int = 1,
    step: int = 1,
    allow_dataset_change: bool = False,
    sample: int | None = None,
    all_cases: tuple[Cases, Cases] | None = None,
    edited: int = 0,
) -> Analysis:
    """Figures, problems and verdict for a paired comparison of two runs' cases."""
    clusters = _clusters(c, base_run, settings.cluster_by)
    categories = _categories(c, base_run, cand_run)
    figures = compute_figures(
        c,
        settings,
        level=level,
        comparisons=comparisons,
        step=step,
        clusters=clusters,
        categories=categories,
        safety_from=all_cases or (base_cases, cand_cases),
    )
    differ = differs_in(base_run, cand_run, base_cases.target, cand_cases.target)
    problems, dataset = check_fairness(
        c,
        base_cases,
        cand_cases,
        base_run,
        cand_run,
        allow_dataset_change=allow_dataset_change,
        settings_differ=differ,
        edited=edited,
    )
    # A run that stopped once settled is judged by its confidence sequence (the
    # bootstrap interval is not valid after optional stopping); --sequential replays.
    side = sequential_side(base_run, cand_run)
    sequential = None
    if settings.sequential or side is not None:
        sequential = sequential_figures(
            c,
            base_run,
            cand_run,
            alpha=round(1 - figures.level, 12),
            margin=settings.margin,
            min_cases=settings.min_cases,
            seed=settings.seed,
        )
    # Below FEW_CLUSTERS clusters no interval can be trusted, and a zero-width one (no
    # case's change differs) measures no chance: Better or Worse then needs the exact
    # sign-flip test over the units as well (with fewer than 6 it cannot pass).
    few = figures.clusters is not None and figures.clusters < FEW_CLUSTERS
    if few:
        problems.append(few_clusters(figures, settings))
    by_rate = settings.metric == "pass_rate"
    deltas = (c.right.pass_rate - c.left.pass_rate) if by_rate else c.delta
    judged = figures.pass_rates.change if by_rate else figures.score
    flat = judged.ci_high - judged.ci_low < 1e-12
    small_p = None
    if figures.small_sample is not None and (few or flat):
        small_p = (
            _sign_flip(deltas, clusters, settings.seed) if by_rate else figures.small_sample.pvalue
        )
    score, margin = judged, settings.margin
    if side is not None and sequential is not None:
        score, small_p, margin = sequential.interval, None, sequential.margin
    moved = bool(figures.partly_changed or figures.mcnemar.improved or figures.mcnemar.regressed)
    verdict = decide(
        score,
        points=figures.points or by_rate,
        new_safety_failures=figures.new_safety_failures,
        latency=figures.metric("latency_ms"),
        cost=figures.metric("cost_usd"),
        max_slowdown=settings.max_slowdown,
        max_cost_increase=settings.max_cost_increase,
        small_sample_p=small_p,
        alpha=1 - figures.level,
        margin=margin,
        interval_name="confidence sequence" if side is not None else "interval",
        # The sequence judges a sequential run, whatever its cases did.
        same_delta=_same_delta(deltas) if side is None else None,
        pass_rates_moved=moved and not by_rate,
        what="pass rate" if by_rate else "score",
    )
    if not by_rate and side is None and verdict.kind in ("Inconclusive", "No change"):
        note = _pass_rates_moved(figures)
        if note is not None:
            verdict = replace(verdict, reason=f"{verdict.reason} {note}")
    return Analysis(
        settings=settings,
        figures=figures,
        verdict=verdict,
        problems=problems,
        dataset=dataset,
        differs_in=differ,
        sample=sample,
        categories=categories,
        sequential=sequential,
    )


def _sign_flip(deltas: FloatArray, clusters: IntArray | None, seed: int) -> float:
    import numpy as np

    from evaldelta.stats import sign_flip_test

    sums = deltas if clusters is None else np.bincount(clusters, weights=deltas)
    return sign_flip_test(sums.astype(np.float64), seed=seed).pvalue


def _pass_rates_moved(figures: Figures) -> str | None:
    """When the score does not decide but the pass rates moved beyond chance, the
    sentence that says so (and how to judge by them); else None."""
    change = figures.pass_rates.change
    if figures.score.excludes_zero():
        return None  # the score moved too: the pass rates add nothing to say
    if not change.excludes_zero() or change.ci_high - change.ci_low < 1e-12:
        # McNemar counts cases: no evidence when the cases come in clusters.
        mc = figures.mcnemar
        if figures.clusters is not None or not (
            mc.pvalue < 1 - figures.level and mc.improved + mc.regressed > 0
        ):
            return None
    pr = figures.pass_rates
    direction = "up" if change.estimate > 0 else "down"
    mc = figures.mcnemar
    return (
        f"Pass rates moved {direction}, though: {pr.baseline.estimate:.1%} -> "
        f"{pr.candidate.estimate:.1%} (McNemar: {mc.improved} improved, {mc.regressed} "
        f"regressed, {format_p(mc.pvalue)}); judge by them with --metric pass_rate."
    )


def _same_delta(delta: FloatArray) -> float | None:
    """The change of every case when two or more all changed by the same, else None."""
    if delta.shape[0] < 2 or float(delta.max() - delta.min()) > 1e-12:
        return None
    return float(delta[0])


#: Fewer clusters than this cannot support a clustered interval.
FEW_CLUSTERS = 10


def few_clusters(figures: Figures, settings: Settings) -> Problem:
    """The warning for a comparison clustered into fewer than FEW_CLUSTERS clusters."""
    k = figures.clusters
    return Problem(
        "few-clusters",
        f"only {k} cluster{'s' if k != 1 else ''} of {settings.cluster_by}: too few for a "
        f"clustered interval ({FEW_CLUSTERS} or more are needed), so Better or Worse also "
        f"needs the exact sign-flip test over the {k} cluster totals, which cannot find "
        "p < 0.05 with fewer than 6 clusters; compare more clusters, or drop --cluster-by "
        "if the cases are independent",
    )


def _field_values(run: Run, name: str, records: IntArray) -> list[Any]:
    from evaldelta.errors import UsageError

    if name == "category":
        codes = run.category_index[records].tolist()
        return [run.categories[k] if k >= 0 else None for k in codes]
    if name not in run.extra:
        raise UsageError(
            f"cannot cluster by {name!r}: {run.source} was read without that field "
            "(load it with extra_fields=(...), or use cluster_by='category')",
            option="cluster_by",
        )
    column = run.extra[name]
    return [column[i] for i in records.tolist()]


def _clusters(c: Pairing, run: Run, name: str | None) -> IntArray | None:
    """Cluster code per matched case; a case without a value is a cluster of its own."""
    import numpy as np

    from evaldelta.errors import UsageError

    if name is None:
        return None
    values = _field_values(run, name, c.left.first_record)
    if values and all(v is None for v in values):
        raise UsageError(
            f"no record of {run.source} has a {name!r} field to cluster by; check the field name"
        )
    labels: dict[Any, int] = {}
    codes = []
    for i, v in enumerate(values):
        key = ("\x00case", i) if v is None else repr(v)
        codes.append(labels.setdefault(key, len(labels)))
    return np.asarray(codes, dtype=np.int64)


def _categories(c: Pairing, base_run: Run, cand_run: Run) -> list[str | None] | None:
    if not base_run.categories and not cand_run.categories:
        return None
    base = _field_values(base_run, "category", c.left.first_record)
    cand = _field_values(cand_run, "category", c.right.first_record)
    return [b if b is not None else k for b, k in zip(base, cand, strict=True)]
