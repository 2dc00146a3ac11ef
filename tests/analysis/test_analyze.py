"""One comparison analysed (``evaldelta.analysis._analyze``): :func:`analyze` called on
paired cases directly, and the pieces it is made of: clusters and categories per case,
the few-clusters warning, the exact sign-flip test where no interval can be trusted,
the pass rates' note, the confidence sequence of a run that stopped early, and
:class:`Analysis` itself (``refusals``, ``to_dict()``).

Intervals are checked against scipy's Student's t, sign-flip p-values against exact
counts worked by hand and scipy's permutation test."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from evaldelta.analysis._analyze import (
    FEW_CLUSTERS,
    Analysis,
    _categories,
    _clusters,
    _pass_rates_moved,
    _same_delta,
    _sign_flip,
    analyze,
    few_clusters,
)
from evaldelta.analysis._fairness import Problem
from evaldelta.analysis._sequential import sequential_figures
from evaldelta.analysis._settings import Settings
from evaldelta.errors import UsageError
from evaldelta.model import Record, Run
from evaldelta.pairing import Pairing
from evaldelta.pairing._cases import cases
from evaldelta.pairing._pairwise import compare_cases


def analysed(
    base: Run, cand: Run, settings: Settings | None = None, **kwargs: object
) -> tuple[Analysis, Pairing]:
    """What :func:`evaldelta.compare` does, without loading, sampling or editing."""
    st = settings or Settings()
    b = cases(base, label="base", pass_threshold=st.pass_threshold)
    c = cases(cand, label="cand", pass_threshold=st.pass_threshold)
    p = compare_cases(b, c, st.threshold)
    return analyze(p, b, c, base, cand, st, **kwargs), p  # type: ignore[arg-type]


def ids(n: int) -> list[str]:
    return [f"q{i:02d}" for i in range(n)]


def scored(scores: list[float], source: str, **columns: object) -> Run:
    return Run.from_columns(
        source=source,
        format="t",
        test_id=ids(len(scores)),
        score=scores,
        **columns,  # type: ignore[arg-type]
    )


def t_bounds(values: list[float], level: float = 0.95) -> tuple[float, float]:
    """Student's t interval of a mean, from scipy."""
    x = np.asarray(values, dtype=np.float64)
    half = stats.t.ppf(1 - (1 - level) / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean() - half), float(x.mean() + half)


# -- small helpers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "same"),
    [
        ([], None),
        ([0.3], None),  # one case: no "every case"
        ([0.2, 0.2, 0.2], 0.2),
        ([0.0, 0.0], 0.0),
        ([-0.5, -0.5], -0.5),
        ([0.2, 0.2 + 1e-13], 0.2),  # float noise
        ([0.2, 0.2 + 1e-11], None),
        ([0.2, 0.3], None),
    ],
)
def test_same_delta(delta: list[float], same: float | None) -> None:
    assert _same_delta(np.asarray(delta, dtype=np.float64)) == same


def test_sign_flip_over_cases_is_exact() -> None:
    # Eight equal positive changes: only all-plus and all-minus reach |sum| = 4.
    assert _sign_flip(np.full(8, 0.5), None, 0) == 2 / 2**8
    # Zeros carry no sign: three non-zero changes, 2 of 8 assignments.
    assert _sign_flip(np.array([0.5, 0.0, 0.5, 0.5, 0.0]), None, 0) == 2 / 2**3


def test_sign_flip_over_clusters_takes_their_totals() -> None:
    deltas = np.array([0.5, 0.5, 0.2, 0.2, -0.1, 0.1, 0.3, 0.1])
    clusters = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    # Totals 1.0, 0.4, 0.0, 0.4: the zero drops out; of the 8 sign assignments of the
    # other three only all-plus and all-minus reach |1.8|.
    assert _sign_flip(deltas, clusters, 0) == 2 / 8
    # Eight cluster totals of mixed sign: against scipy's exact test of all 2**8 signs.
    rng = np.random.default_rng(7)
    deltas = rng.uniform(-0.3, 0.8, 40)
    clusters = np.repeat(np.arange(8), 5)
    totals = np.bincount(clusters, weights=deltas)
    ref = stats.permutation_test(
        (totals,), np.sum, permutation_type="samples", n_resamples=np.inf
    ).pvalue
    assert _sign_flip(deltas, clusters, 0) == pytest.approx(ref, abs=1e-12)


def test_clusters_per_case_from_the_baselines_records() -> None:
    # A case without a value is a cluster of its own; values are told apart by repr,
    # so 1 and "1" are two clusters.
    docs = ["d1", None, "d1", 1, "1", None, 1, "d2"]
    base = scored([0.5] * 8, "base.jsonl", extra={"doc": docs})
    cand = scored([0.5] * 8, "cand.jsonl", extra={"doc": ["same"] * 8})
    _, p = analysed(base, cand)
    codes = _clusters(p, base, "doc")
    assert codes is not None
    assert codes.tolist() == [0, 1, 0, 2, 3, 4, 2, 5]
    assert codes.dtype == np.int64
    same = scored([0.5] * 8, "same.jsonl", extra={"doc": ["d"] * 8})
    assert _clusters(analysed(same, cand)[1], same, "doc").tolist() == [0] * 8  # type: ignore[union-attr]
    assert _clusters(p, base, None) is None


def test_clusters_by_category() -> None:
    base = scored([0.5] * 4, "base", category=["x", "y", None, "x"])
    _, p = analysed(base, base)
    assert _clusters(p, base, "category").tolist() == [0, 1, 2, 0]  # type: ignore[union-attr]


def test_clustering_by_a_field_the_run_was_read_without() -> None:
    base = scored([0.5] * 3, "base.jsonl")
    with pytest.raises(UsageError) as err:
        analysed(base, base, Settings(cluster_by="doc"))
    assert str(err.value) == (
        "cannot cluster by 'doc': base.jsonl was read without that field (load it with "
        "extra_fields=(...), or use cluster_by='category')"
    )
    assert err.value.option == "cluster_by"


@pytest.mark.parametrize("field", ["doc", "category"])
def test_clustering_by_a_field_no_record_has(field: str) -> None:
    base = scored([0.5] * 3, "base.jsonl", extra={"doc": [None] * 3})
    with pytest.raises(UsageError) as err:
        analysed(base, base, Settings(cluster_by=field))
    assert str(err.value) == (
        f"no record of base.jsonl has a {field!r} field to cluster by; check the field name"
    )


def test_categories_are_the_baselines_else_the_candidates() -> None:
    base = scored([0.5] * 4, "base", category=["x", None, None, "y"])
    cand = scored([0.5] * 4, "cand", category=["other", "z", None, "other"])
    a, p = analysed(base, cand)
    assert _categories(p, base, cand) == ["x", "z", None, "y"]
    assert a.categories == ["x", "z", None, "y"]
    plain = scored([0.5] * 4, "plain")
    assert _categories(p, plain, plain) is None
    assert analysed(plain, plain)[0].categories is None
    assert _categories(p, plain, cand) == ["other", "z", None, "other"]


# -- few clusters --------------------------------------------------------------------------


def clustered(groups: int, size: int, shift: list[float]) -> tuple[Run, Run]:
    """``groups`` categories of ``size`` cases; cluster g's cases change by ``shift[g]``
    (and by +/-0.05 around it, so that cases within a cluster differ)."""
    base, cand = [], []
    for g in range(groups):
        for q in range(size):
            tid = f"g{g}-q{q}"
            wobble = 0.05 if q % 2 else -0.05
            base.append(Record(tid, 0.3, category=f"c{g}"))
            cand.append(Record(tid, 0.3 + shift[g] + wobble, category=f"c{g}"))
    return Run.from_records(base, source="base"), Run.from_records(cand, source="cand")


def test_few_clusters_message() -> None:
    assert FEW_CLUSTERS == 10
    base, cand = clustered(5, 4, [0.4, 0.5, 0.6, 0.5, 0.45])
    settings = Settings(cluster_by="category")
    a, _ = analysed(base, cand, settings)
    assert a.figures.clusters == 5
    assert few_clusters(a.figures, settings) == Problem(
        "few-clusters",
        "only 5 clusters of category: too few for a clustered interval (10 or more are "
        "needed), so Better or Worse also needs the exact sign-flip test over the 5 cluster "
        "totals, which cannot find p < 0.05 with fewer than 6 clusters; compare more "
        "clusters, or drop --cluster-by if the cases are independent",
    )
    one = dataclasses.replace(a.figures, clusters=1)
    assert few_clusters(one, Settings(cluster_by="topic")).message.startswith(
        "only 1 cluster of topic: too few for a clustered interval"
    )
    assert few_clusters(one, settings).refuse is False


@pytest.mark.parametrize(("groups", "warned"), [(9, True), (10, False)])
def test_the_warning_below_ten_clusters(groups: int, warned: bool) -> None:
    base, cand = clustered(groups, 2, [0.1] * groups)
    a, _ = analysed(base, cand, Settings(cluster_by="category"))
    assert a.figures.clusters == groups
    assert ("few-clusters" in [p.code for p in a.problems]) is warned
    assert [p.code for p in analysed(base, cand)[0].problems] == []


def test_few_clusters_need_the_sign_flip_test_too() -> None:
    shift = [0.4, 0.5, 0.6, 0.5, 0.45]
    base, cand = clustered(5, 4, shift)
    a, _ = analysed(base, cand, Settings(cluster_by="category"))
    assert [p.code for p in a.problems] == ["few-clusters"]
    # Equal cluster sizes: the clustered t interval is the t interval of the cluster
    # means (the wobble cancels within each cluster).
    low, high = t_bounds(shift)
    assert (a.figures.score.ci_low, a.figures.score.ci_high) == pytest.approx(
        (low, high), abs=1e-12
    )
    assert low > 0
    # All five totals positive: 2 of 32 sign assignments, p = 0.0625 >= 0.05.
    assert a.figures.small_sample is not None
    assert a.figures.small_sample.pvalue == 2 / 32
    assert a.verdict.kind == "Inconclusive"
    assert (round(low, 4), round(high, 4)) == (0.3979, 0.5821)
    assert a.verdict.reason == (
        "Too few clusters to tell (5): the interval says between +40 and +58 points, but an "
        "exact sign-flip test over the clusters finds p = 0.0625, so this could be chance."
    )
    # The same cases without clusters: 20 cases, the interval alone decides.
    plain, _ = analysed(base, cand)
    assert plain.verdict.kind == "Better"


# -- the verdict: intervals, flat changes, the sign-flip test --------------------------------


def test_a_varied_change_on_few_cases_is_judged_by_its_t_interval() -> None:
    deltas = [0.4, 0.5, 0.6, 0.5, 0.5]
    a, _ = analysed(scored([0.0] * 5, "base"), scored(deltas, "cand"))
    low, high = t_bounds(deltas)  # about [+0.412, +0.588]
    assert (a.verdict.low, a.verdict.high) == pytest.approx((low, high), abs=1e-12)
    assert (round(low, 3), round(high, 3)) == (0.412, 0.588)
    # The sign-flip test (p = 2/32) is not asked: no clusters, and the changes vary.
    assert a.figures.small_sample is not None
    assert a.figures.small_sample.pvalue == 2 / 32
    assert a.verdict.kind == "Better"
    assert a.verdict.reason == (
        "The candidate scores higher: the true change is plausibly between +41 and +59 "
        "points (95% interval)."
    )


def test_the_same_change_on_eight_cases_is_better_by_the_sign_flip_test() -> None:
    a, _ = analysed(scored([0.5] * 8, "base"), scored([1.0] * 8, "cand"))
    assert (a.figures.score.ci_low, a.figures.score.ci_high) == (0.5, 0.5)
    assert a.verdict.kind == "Better"
    # p = 2 / 2**8 = 0.0078125
    assert a.verdict.reason == (
        "The candidate scores higher: every case changed by exactly +50.0 points, and an "
        "exact sign-flip test over the 8 cases finds p = 0.00781."
    )


def test_the_same_change_on_three_cases_could_be_chance() -> None:
    a, _ = analysed(scored([0.5] * 3, "base"), scored([1.0] * 3, "cand"))
    assert a.verdict.kind == "Inconclusive"
    # p = 2 / 2**3
    assert a.verdict.reason == (
        "Too few cases to tell (3): every case changed by exactly +50.0 points, but an exact "
        "sign-flip test over the cases finds p = 0.25, so this could be chance."
    )
    assert [p.code for p in a.problems] == ["few-cases"]


def test_no_case_changed_is_no_change_within_the_margin() -> None:
    run = scored([0.25, 0.75] * 15, "base")
    a, _ = analysed(run, scored([0.25, 0.75] * 15, "cand"))
    assert a.verdict.kind == "No change"
    assert a.verdict.reason == (
        "No case changed: all 30 cases scored the same in both runs and passed alike, so "
        "the change is within +/-1.0 points."
    )
    a, _ = analysed(run, scored([0.25, 0.75] * 15, "cand"), Settings(margin=None))
    assert a.verdict.kind == "Inconclusive"
    assert a.verdict.reason.startswith("No case changed (every delta is exactly 0)")


# -- the pass rates ------------------------------------------------------------------------


def flags(n: int, base: bool, cand: bool, flipped: int | None = None) -> tuple[Run, Run]:
    """``n`` cases scoring 0.7 on both sides, whose records say they passed (or not):
    the baseline ``base`` for all, the candidate ``cand`` for the first ``flipped``
    (all by default) and ``base`` for the rest."""
    k = n if flipped is None else flipped
    return (
        scored([0.7] * n, "base", passed=[base] * n),
        scored([0.7] * n, "cand", passed=[cand] * k + [base] * (n - k)),
    )


def test_judged_by_pass_rate_the_sign_flip_test_takes_the_pass_rate_changes() -> None:
    base, cand = flags(8, base=False, cand=True)
    a, _ = analysed(base, cand, Settings(metric="pass_rate"))
    # The scores did not change (their sign-flip p is 1); the pass rates all rose by 1.
    assert a.figures.small_sample is not None
    assert a.figures.small_sample.pvalue == 1.0
    assert a.verdict.kind == "Better"
    assert a.verdict.reason == (
        "The candidate passes more often: every case's pass rate changed by exactly +100.0 "
        "points, and an exact sign-flip test over the 8 cases finds p = 0.00781."
    )
    assert a.verdict.to_dict()["plausible_change"] == {"low": 1.0, "high": 1.0, "unit": "points"}


def test_unchanged_scores_with_moved_pass_rates_say_so() -> None:
    base, cand = flags(8, base=False, cand=True)
    a, _ = analysed(base, cand)
    # McNemar: 8 improved, 0 regressed, p = 2 / 2**8 = 0.0078 (reads 0.008).
    assert (a.figures.mcnemar.improved, a.figures.mcnemar.regressed) == (8, 0)
    assert a.figures.mcnemar.pvalue == 2 / 2**8
    note = (
        "Pass rates moved up, though: 0.0% -> 100.0% (McNemar: 8 improved, 0 regressed, "
        "p = 0.008); judge by them with --metric pass_rate."
    )
    assert _pass_rates_moved(a.figures) == note
    assert a.verdict.kind == "No change"
    assert a.verdict.reason == (
        f"No case's score changed, so the change is within +/-1.0 points. {note}"
    )


def test_pass_rates_that_moved_down_over_many_cases() -> None:
    base, cand = flags(60, base=True, cand=False, flipped=20)
    a, _ = analysed(base, cand, Settings(resamples=1000))
    change = a.figures.pass_rates.change
    assert change.estimate == pytest.approx(-20 / 60, abs=1e-12)
    assert change.ci_high < 0
    # McNemar: 20 regressed, 0 improved, p = 2 / 2**20 < 0.001
    note = (
        "Pass rates moved down, though: 100.0% -> 66.7% (McNemar: 0 improved, 20 regressed, "
        "p < 0.001); judge by them with --metric pass_rate."
    )
    assert _pass_rates_moved(a.figures) == note
    assert a.verdict.kind == "No change"
    assert a.verdict.reason == (
        f"No case's score changed, so the change is within +/-1.0 points. {note}"
    )


def test_no_pass_rate_note_when_the_score_moved_or_the_rates_did_not() -> None:
    a, _ = analysed(scored([0.5] * 8, "base"), scored([1.0] * 8, "cand"))
    assert a.figures.score.excludes_zero()
    assert _pass_rates_moved(a.figures) is None
    # Two cases of 30 flip, one each way: McNemar p = 1.
    cand = scored([0.7] * 30, "cand", passed=[True] + [False] * 28 + [False])
    base = scored([0.7] * 30, "base", passed=[False] * 29 + [True])
    a, _ = analysed(base, cand)
    assert (a.figures.mcnemar.improved, a.figures.mcnemar.regressed) == (1, 1)
    assert _pass_rates_moved(a.figures) is None
    assert "Pass rates moved" not in a.verdict.reason


def test_no_pass_rate_note_for_clustered_cases() -> None:
    """McNemar counts cases: no evidence when the cases come in clusters."""
    base = scored([0.7] * 8, "base", passed=[False] * 8, category=ids(8))
    cand = scored([0.7] * 8, "cand", passed=[True] * 8, category=ids(8))
    a, _ = analysed(base, cand, Settings(cluster_by="category"))
    assert a.figures.clusters == 8
    assert a.figures.mcnemar.pvalue < 0.05
    assert _pass_rates_moved(a.figures) is None
    assert a.verdict.kind == "No change"
    assert "Pass rates moved" not in a.verdict.reason


def test_no_pass_rate_note_when_judged_by_pass_rate() -> None:
    base, cand = flags(60, base=True, cand=False, flipped=20)
    a, _ = analysed(base, cand, Settings(metric="pass_rate", resamples=1000))
    assert a.verdict.kind == "Worse"
    assert "Pass rates moved" not in a.verdict.reason
    assert a.verdict.reason.startswith("The candidate passes less often: ")


# -- the confidence sequence ---------------------------------------------------------------


def test_sequential_replays_without_changing_the_verdict() -> None:
    base, cand = scored([0.0] * 40, "base"), scored([1.0] * 40, "cand")
    plain, _ = analysed(base, cand)
    assert plain.sequential is None
    settings = Settings(sequential=True, seed=4, min_cases=25, margin=0.02)
    a, p = analysed(base, cand, settings)
    assert a.sequential is not None
    want = sequential_figures(p, base, cand, alpha=0.05, margin=0.02, min_cases=25, seed=4)
    assert a.sequential.to_dict() == want.to_dict()
    assert a.sequential.side is None
    assert a.verdict == plain.verdict  # the bootstrap interval still decides
    assert a.to_dict()["sequential"] == want.to_dict()


def test_the_sequence_takes_the_level_of_the_comparison() -> None:
    base, cand = scored([0.0] * 30, "base"), scored([1.0] * 30, "cand")
    a, _ = analysed(base, cand, Settings(sequential=True), level=0.975)
    assert a.figures.level == 0.975
    assert a.sequential is not None
    assert a.sequential.alpha == 0.025


def test_a_run_that_stopped_early_is_judged_by_its_sequence() -> None:
    base = scored([0.0] * 100, "base")
    cand = Run.from_columns(source="cand", format="t", test_id=ids(40), score=[1.0] * 40)
    cand.case_order = ids(100)
    cand.sequential = {"verdict": "Better", "of": 100, "reason": "settled Better after 16"}
    a, _ = analysed(base, cand, Settings(sequential=False))
    seq = a.sequential
    assert seq is not None
    assert seq.side == "candidate"
    assert (a.verdict.low, a.verdict.high) == (seq.interval.ci_low, seq.interval.ci_high)
    # After forty +1 changes the sequence reads [+0.6233, +1]: see tests/stats.
    assert (round(a.verdict.low, 4), a.verdict.high) == (0.6233, 1.0)
    assert a.verdict.kind == "Better"
    assert a.verdict.reason == (
        "The candidate scores higher: the true change is plausibly between +62 and +100 "
        "points (95% confidence sequence)."
    )
    codes = [p.code for p in a.problems]
    assert codes[0] == "sequential"
    assert "dataset-changed" not in codes  # the 60 cases it did not reach


# -- safety failures, settings that differ, and the record ------------------------------------


def test_a_new_safety_failure_anywhere_in_the_candidate_is_worse() -> None:
    base = scored([0.0] * 30, "base")
    cand = Run.from_records(
        [Record(t, 1.0) for t in ids(30)] + [Record("extra", 1.0, safety_failure=True)],
        source="cand",
    )
    a, p = analysed(base, cand, allow_dataset_change=True)
    assert "extra" not in p.test_ids
    assert a.verdict.kind == "Worse"
    assert a.verdict.reason == "1 new safety failure in the candidate (extra)."


def test_all_cases_widen_where_safety_failures_are_looked_for() -> None:
    base, cand = scored([0.0] * 30, "base"), scored([1.0] * 30, "cand")
    unsafe = Run.from_records(
        [Record(t, 1.0, safety_failure=t == "q29") for t in ids(30)], source="all"
    )
    b = cases(base, label="base")
    c = cases(cand, label="cand")
    p = compare_cases(b, c)
    a = analyze(p, b, c, base, cand, Settings())
    assert a.verdict.kind == "Better"
    everything = (b, cases(unsafe, label="cand"))
    a = analyze(p, b, c, base, cand, Settings(), all_cases=everything)
    assert a.verdict.kind == "Worse"
    assert a.figures.new_safety_failures == ["q29"]


def test_settings_that_differ() -> None:
    base = scored([0.5] * 20, "base", config={"model": "a", "temperature": 0})
    cand = scored([0.5] * 20, "cand", config={"model": "b", "temperature": 0})
    a, _ = analysed(base, cand)
    assert a.differs_in == ["model"]
    cand = scored([0.5] * 20, "cand", config={"model": "b", "temperature": 1, "seed": 3})
    a, _ = analysed(base, cand)
    assert a.differs_in == ["model", "temperature", "seed"]
    assert "settings-differ" in [p.code for p in a.problems]


def test_a_changed_dataset_refuses_unless_allowed() -> None:
    base, cand = scored([0.5] * 20, "base"), scored([0.5] * 18, "cand")
    a, _ = analysed(base, cand)
    assert [p.code for p in a.refusals] == ["dataset-changed"]
    assert a.dataset.only_baseline == 2
    a, _ = analysed(base, cand, allow_dataset_change=True, edited=1)
    assert a.refusals == []
    assert a.dataset.inputs_changed == 1


def test_refusals_are_the_problems_that_refuse() -> None:
    a, _ = analysed(scored([0.5] * 20, "base"), scored([0.6] * 20, "cand"))
    keep, stop = Problem("a", "warned"), Problem("b", "refused", refuse=True)
    mixed = dataclasses.replace(a, problems=[keep, stop, Problem("c", "again", True)])
    assert mixed.refusals == [stop, Problem("c", "again", True)]
    assert dataclasses.replace(a, problems=[keep]).refusals == []


def test_to_dict() -> None:
    base = scored([0.25, 0.5] * 10, "base", category=["x", "y"] * 10)
    cand = scored([0.5, 0.5] * 10, "cand", config={"model": "m"})
    settings = Settings(seed=3, resamples=500)
    a, _ = analysed(base, cand, settings, sample=20)
    d = a.to_dict()
    assert list(d) == [
        "verdict",
        "statistics",
        "sequential",
        "problems",
        "differs_in",
        "dataset",
        "settings",
    ]
    assert d["verdict"] == a.verdict.to_dict()
    assert d["statistics"] == a.figures.to_dict()
    assert d["sequential"] is None
    assert d["problems"] == [p.to_dict() for p in a.problems]
    assert d["differs_in"] == ["model"]
    assert d["dataset"] == a.dataset.to_dict()
    assert d["settings"] == {**settings.to_dict(), "sample": 20}
    assert "categories" not in d
    assert a.categories == ["x", "y"] * 10
    assert (a.settings, a.sample) == (settings, 20)


def test_analysis_is_frozen() -> None:
    a, _ = analysed(scored([0.5] * 3, "base"), scored([0.5] * 3, "cand"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.sample = 3  # type: ignore[misc]
