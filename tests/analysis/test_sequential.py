"""A comparison taken case by case (``evaldelta.analysis._sequential``): which run stopped
early (:func:`sequential_side`), the cases it did not reach, the order the cases enter
the confidence sequence, where the sequence settles, what stopping there saves
(:class:`Saving`), and the sentence and JSON of :class:`SequentialFigures`.

The bounds are checked against the plain-Python PrPl-EB reference of
``tests/stats/test_sequential.py``, written from the paper's definitions."""

from __future__ import annotations

import math
from random import Random
from typing import Any

import pytest

from evaldelta.analysis._sequential import (
    DEFAULT_MIN_CASES,
    Saving,
    SequentialFigures,
    not_reached,
    sequential_figures,
    sequential_side,
)
from evaldelta.errors import UsageError
from evaldelta.model import Record, Run
from evaldelta.pairing import Pairing, pair
from tests.stats.test_sequential import reference

METHOD = "confidence sequence (PrPl-EB, running intersection)"


def ids(n: int, start: int = 0) -> list[str]:
    return [f"q{i:03d}" for i in range(start, start + n)]


def scored(test_ids: list[str], scores: list[float], source: str) -> Run:
    return Run.from_columns(source=source, format="t", test_id=test_ids, score=scores)


def runs(base: list[float], cand: list[float]) -> tuple[Run, Run, Pairing]:
    """Two runs on the same cases q000, q001, ... and their pairing."""
    names = ids(len(base))
    b, c = scored(names, base, "base.jsonl"), scored(names, cand, "cand.jsonl")
    return b, c, pair(b, c)


def seeded(test_ids: list[str], seed: int) -> list[str]:
    """The seeded shuffle of ``evaldelta eval``, written out: sorted ids, then Python's
    ``random.Random`` seeded with ``evaldelta-order:SEED``."""
    order = sorted(test_ids)
    Random(f"evaldelta-order:{seed}").shuffle(order)
    return order


def first_settled(bounds: list[tuple[float, float]], min_cases: int, hit: Any) -> int | None:
    return next((t for t, (lo, hi) in enumerate(bounds, 1) if t >= min_cases and hit(lo, hi)), None)


def test_default_min_cases() -> None:
    assert DEFAULT_MIN_CASES == 20
    b, c, p = runs([0.0] * 40, [1.0] * 40)
    assert sequential_figures(p, b, c).min_cases == 20


# -- Saving ------------------------------------------------------------------------------


def test_saving_to_dict_rounds_tokens_and_cost() -> None:
    saving = Saving(788, 2_123_456.789_12, 4.123_456_789_1, estimated=True)
    assert saving.to_dict() == {
        "cases": 788,
        "tokens": 2_123_456.789,
        "cost_usd": 4.123_456_789,
        "estimated": True,
    }
    assert Saving(3, None, None).to_dict() == {
        "cases": 3,
        "tokens": None,
        "cost_usd": None,
        "estimated": False,
    }


@pytest.mark.parametrize(
    ("saving", "words"),
    [
        (Saving(788, 2_100_000, 4.2, estimated=True), "788 cases, about 2.1M tokens and $4.20"),
        (Saving(788, 2_100_000, 4.2), "788 cases, 2.1M tokens and $4.20"),
        (Saving(1, None, None), "1 case"),
        (Saving(0, None, None), "0 cases"),
        (Saving(1234, 999, None), "1,234 cases and 999 tokens"),
        (Saving(5, 1000, None), "5 cases and 1.0k tokens"),
        (Saving(5, 45_678, None, estimated=True), "5 cases and about 45.7k tokens"),
        (Saving(5, 1_500_000_000, None), "5 cases and 1.5G tokens"),
        # "about" once, before the first estimate: here the cost
        (Saving(5, None, 1234.5, estimated=True), "5 cases and about $1,234.50"),
        # nothing not spent is not said
        (Saving(5, 0.0, 0.0), "5 cases"),
        (Saving(2, 0.0, 0.75), "2 cases and $0.75"),
    ],
)
def test_saving_words(saving: Saving, words: str) -> None:
    assert saving.words() == f"{words} not spent"


# -- which run stopped, and what it did not reach ------------------------------------------


@pytest.mark.parametrize(
    ("base_stopped", "cand_stopped", "side"),
    [
        (False, False, None),
        (False, True, "candidate"),
        (True, False, "baseline"),
        (True, True, "candidate"),
    ],
)
def test_sequential_side(base_stopped: bool, cand_stopped: bool, side: str | None) -> None:
    b, c, _ = runs([0.5], [0.5])
    b.sequential = {"verdict": "Better"} if base_stopped else None
    c.sequential = {"verdict": "Better"} if cand_stopped else None
    assert sequential_side(b, c) == side


def test_a_run_compared_with_itself_is_the_candidate_side() -> None:
    b, _, _ = runs([0.5], [0.5])
    assert sequential_side(b, b) is None
    b.sequential = {"verdict": "Better"}
    assert sequential_side(b, b) == "candidate"


def test_not_reached_is_the_stopped_runs_planned_cases_it_did_not_run() -> None:
    base = scored(ids(10), [0.5] * 10, "base")
    cand = scored(ids(6), [0.5] * 6, "cand")
    p = pair(base, cand)
    assert p.unmatched_baseline == ids(4, start=6)
    assert not_reached(p, base, cand) == []  # no run stopped early
    cand.case_order = ids(8)  # it planned q000..q007 and ran q000..q005
    assert not_reached(p, base, cand) == []  # still none: it did not stop when settled
    cand.sequential = {"verdict": "Better"}
    # q008 and q009 were never planned: a change of dataset, not "not reached"
    assert not_reached(p, base, cand) == ["q006", "q007"]
    cand.case_order = None
    assert not_reached(p, base, cand) == []


def test_not_reached_of_a_stopped_baseline_is_on_the_candidate_side() -> None:
    base = scored(ids(3), [0.5] * 3, "base")
    cand = scored(ids(5), [0.5] * 5, "cand")
    base.sequential = {"verdict": "Worse"}
    base.case_order = ids(4)
    p = pair(base, cand)
    assert p.unmatched_candidate == ["q003", "q004"]
    assert not_reached(p, base, cand) == ["q003"]


# -- the order the cases enter the sequence ----------------------------------------------


def test_runs_without_an_order_take_a_seeded_shuffle() -> None:
    b, c, p = runs([0.2] * 30, [0.6] * 30)
    for seed in (0, 5):
        f = sequential_figures(p, b, c, seed=seed)
        assert f.order == f"in a seeded shuffle, seed {seed}"
        assert f.test_ids == seeded(ids(30), seed)
    assert (
        sequential_figures(p, b, c, seed=0).test_ids != sequential_figures(p, b, c, seed=5).test_ids
    )


def test_the_baseline_order_comes_first_then_the_candidates() -> None:
    b, c, p = runs([0.5] * 5, [0.5] * 5)
    c.case_order = ["q001", "q000", "q004", "q003", "q002"]
    f = sequential_figures(p, b, c)
    assert (f.order, f.test_ids) == ("in the order the candidate run took them", c.case_order)
    b.case_order = ["q004", "q003", "q002", "q001", "q000"]
    f = sequential_figures(p, b, c)
    assert (f.order, f.test_ids) == ("in the order the baseline run took them", b.case_order)
    # A candidate that stopped early is taken in its own order.
    c.sequential = {"verdict": "Better"}
    f = sequential_figures(p, b, c)
    assert (f.order, f.test_ids) == ("in the order the candidate run took them", c.case_order)


def test_an_order_missing_matched_cases_takes_them_last_in_a_seeded_shuffle() -> None:
    b, c, p = runs([0.5] * 8, [0.5] * 8)
    # q099 is no matched case: skipped; q002..q007 are missing from the order
    b.case_order = ["q001", "q099", "q000"]
    f = sequential_figures(p, b, c, seed=3)
    rest = [t for t in ids(8) if t not in ("q000", "q001")]
    assert f.test_ids == ["q001", "q000", *seeded(rest, 3)]
    assert f.cases == 8


# -- the sequence and where it settles -----------------------------------------------------


def test_the_sequence_follows_the_reference_in_the_order_taken() -> None:
    base = [0.0, 0.5, 1.0, 0.25, 0.75, 1.0, 0.0, 0.5, 0.2, 0.9] * 3
    cand = [1.0, 0.5, 0.5, 1.0, 0.75, 0.0, 0.3, 1.0, 0.8, 0.9] * 3
    b, c, p = runs(base, cand)
    f = sequential_figures(p, b, c, seed=11)
    delta = {t: y - x for t, x, y in zip(ids(30), base, cand, strict=True)}
    ordered = [delta[t] for t in f.test_ids]
    want = reference(ordered, alpha=0.05)
    assert f.sequence.low.tolist() == pytest.approx([w[0] for w in want], abs=1e-12)
    assert f.sequence.high.tolist() == pytest.approx([w[1] for w in want], abs=1e-12)
    assert f.sequence.alpha == 0.05
    interval = f.interval
    assert interval.estimate == pytest.approx(sum(ordered) / 30, abs=1e-12)
    assert (interval.ci_low, interval.ci_high) == pytest.approx(want[-1], abs=1e-12)
    assert interval.level == pytest.approx(0.95, abs=1e-15)
    assert (interval.method, interval.n) == (METHOD, 30)


@pytest.mark.parametrize(("min_cases", "settled_at"), [(1, 16), (10, 16), (20, 20), (35, 35)])
def test_a_clear_gain_settles_better_not_before_min_cases(min_cases: int, settled_at: int) -> None:
    b, c, p = runs([0.0] * 40, [1.0] * 40)
    f = sequential_figures(p, b, c, min_cases=min_cases)
    # The reference's lower bound for forty +1 deltas first clears 0 after 16.
    assert first_settled(reference([1.0] * 40), 1, lambda lo, hi: lo > 0) == 16
    assert f.settled is not None
    assert (f.settled.cases, f.settled.kind) == (settled_at, "Better")
    assert f.min_cases == min_cases


def test_a_clear_loss_settles_worse() -> None:
    b, c, p = runs([1.0] * 40, [0.0] * 40)
    f = sequential_figures(p, b, c)
    assert first_settled(reference([-1.0] * 40), 1, lambda lo, hi: hi < 0) == 16
    assert f.settled is not None
    assert (f.settled.cases, f.settled.kind) == (20, "Worse")


def test_no_change_settles_only_with_a_margin() -> None:
    b, c, p = runs([0.5] * 100, [0.5] * 100)
    assert sequential_figures(p, b, c).settled is None
    assert sequential_figures(p, b, c, margin=None).settled is None
    f = sequential_figures(p, b, c, margin=0.2)
    # The reference's bounds for zero deltas first lie within +/-0.2 after 74 cases.
    assert first_settled(reference([0.0] * 100), 20, lambda lo, hi: lo >= -0.2 and hi <= 0.2) == 74
    assert f.settled is not None
    assert (f.settled.cases, f.settled.kind) == (74, "No change")
    assert f.margin == 0.2


def test_alpha_widens_the_sequence() -> None:
    base = [0.0, 1.0, 0.5, 0.5, 1.0] * 10
    cand = [1.0, 1.0, 0.5, 1.0, 0.0] * 10
    b, c, p = runs(base, cand)
    f = sequential_figures(p, b, c, alpha=0.2)
    ordered = [y - x for x, y in zip(base, cand, strict=True)]
    by_id = dict(zip(ids(50), ordered, strict=True))
    want = reference([by_id[t] for t in f.test_ids], alpha=0.2)
    assert f.sequence.low.tolist() == pytest.approx([w[0] for w in want], abs=1e-12)
    assert (f.alpha, f.level_text) == (0.2, "80%")


@pytest.mark.parametrize(
    ("low", "high", "span"),
    [(0.0, 2.0, "0 to 2"), (-0.5, 1.0, "-0.5 to 1"), (0.0, 1.5, "0 to 1.5")],
)
def test_scores_outside_zero_one_are_refused(low: float, high: float, span: str) -> None:
    b, c, p = runs([low, 0.5, 0.5], [0.5, 0.5, high])
    with pytest.raises(UsageError) as err:
        sequential_figures(p, b, c)
    assert str(err.value) == (
        "a sequential comparison needs scores in [0, 1] (the confidence sequence bounds "
        f"each case's change by them); these scores span {span}: compare on a scorer in "
        "[0, 1] (--scorer NAME)"
    )
    assert err.value.option == "sequential"


def test_scores_a_hair_outside_zero_one_are_float_noise() -> None:
    b, c, p = runs([-1e-13, 0.5], [1 + 1e-13, 0.5])
    assert sequential_figures(p, b, c).cases == 2


def test_no_case_in_common() -> None:
    base, cand = scored(["x"], [1.0], "a"), scored(["y"], [0.0], "b")
    f = sequential_figures(pair(base, cand), base, cand)
    assert (f.cases, f.planned, f.test_ids, f.settled, f.saving) == (0, 0, [], None, None)
    assert math.isnan(f.interval.estimate)
    assert f.sentence() == (
        "Taken case by case (in a seeded shuffle, seed 0), the 95% confidence sequence did "
        "not settle within the 0 cases: a run stopped when settled would have run them all."
    )
    assert f.to_dict()["path"] == []


# -- what stopping at the settle point saves (a replay) ----------------------------------


def attempts_run(
    n: int, score: float, cost: bool = True, tokens: bool = True, source: str = "cand"
) -> Run:
    """``n`` cases of two attempts each; case i costs 0.001 * i and uses 100 + i input
    and 50 output tokens per attempt."""
    return Run.from_records(
        [
            Record(
                t,
                score,
                cost_usd=0.001 * i if cost else None,
                input_tokens=100 + i if tokens else None,
                output_tokens=50 if tokens else None,
            )
            for i, t in enumerate(ids(n))
            for _ in range(2)
        ],
        source=source,
    )


def test_saving_is_the_candidates_cases_after_the_settle_point() -> None:
    base = attempts_run(40, 0.0, cost=False, tokens=False, source="base")
    cand = attempts_run(40, 1.0)
    base.case_order = ids(40)  # run in id order: the cases after the point are known
    f = sequential_figures(pair(base, cand), base, cand)
    assert f.settled is not None
    assert f.settled.cases == 20
    saving = f.saving
    assert saving is not None
    assert (saving.cases, saving.estimated, f.planned) == (20, False, 40)
    # cases q020..q039, two attempts each: (100 + i + 50) tokens and 0.001 * i dollars;
    # 20 + 21 + ... + 39 = 590
    assert saving.tokens == pytest.approx(sum(2 * (150 + i) for i in range(20, 40)), abs=1e-9)
    assert saving.cost_usd == pytest.approx(sum(0.002 * i for i in range(20, 40)), abs=1e-12)
    assert saving.tokens == pytest.approx(7_180.0, abs=1e-9)  # 2 * (20 * 150 + 590)
    assert saving.cost_usd == pytest.approx(1.18, abs=1e-12)  # 0.002 * 590


def test_infrastructure_failures_are_no_saving() -> None:
    """A case's cost is the mean over the attempts that ran, times those attempts: an
    attempt lost to infrastructure costs nothing here, whatever it reports."""
    names = ids(21)
    base = scored(names, [0.0] * 21, "base")
    base.case_order = names
    cand = Run.from_records(
        [Record(t, 1.0, cost_usd=0.5) for t in names]
        + [Record("q020", 0.0, cost_usd=9.0, error="503", error_kind="infra")],
        source="cand",
    )
    f = sequential_figures(pair(base, cand), base, cand)
    assert f.settled is not None
    assert f.settled.cases == 20
    assert f.saving == Saving(1, None, 0.5)


def test_saving_says_none_where_the_candidate_reports_nothing() -> None:
    base = attempts_run(40, 0.0, cost=False, tokens=False, source="base")
    cand = attempts_run(40, 1.0, cost=False, tokens=False)
    f = sequential_figures(pair(base, cand), base, cand)
    assert f.saving == Saving(20, None, None)


def test_nothing_is_saved_where_the_sequence_does_not_settle() -> None:
    b, c, p = runs([0.5] * 30, [0.5] * 30)
    assert sequential_figures(p, b, c).saving is None


# -- a run that stopped early brings its own settings ----------------------------------


def stopped(record: dict[str, Any], ran: int = 40, planned: int = 100) -> tuple[Run, Run, Pairing]:
    """A baseline of ``planned`` cases, and a candidate that ran the first ``ran`` of them
    in id order and stopped; every case improved by 1."""
    base = scored(ids(planned), [0.0] * planned, "base")
    cand = scored(ids(ran), [1.0] * ran, "cand")
    cand.case_order = ids(planned)
    cand.sequential = record
    return base, cand, pair(base, cand)


RECORD = {
    "settled": True,
    "verdict": "Better",
    "after": 16,
    "alpha": 0.1,
    "margin": 0.05,
    "min_cases": 10,
    "of": 100,
    "saved": {"cases": 60, "tokens": 12_345.0, "cost_usd": 1.5},
    "reason": "settled Better after 16 of 100 cases",
}


def test_a_stopped_run_brings_alpha_margin_min_cases_and_plan() -> None:
    b, c, p = stopped(dict(RECORD))
    f = sequential_figures(p, b, c, alpha=0.05, margin=None, min_cases=20)
    assert (f.alpha, f.margin, f.min_cases, f.planned) == (0.1, 0.05, 10, 100)
    assert (f.side, f.record, f.order) == (
        "candidate",
        RECORD,
        "in the order the candidate run took them",
    )
    assert f.sequence.alpha == 0.1
    want = reference([1.0] * 40, alpha=0.1)
    assert f.sequence.low.tolist() == pytest.approx([w[0] for w in want], abs=1e-12)
    # settled by the record's min_cases, 10, at the first look whose bound clears 0
    assert f.settled is not None
    assert f.settled.cases == first_settled(want, 10, lambda lo, hi: lo > 0)
    assert f.saving == Saving(60, 12_345.0, 1.5, estimated=True)
    assert f.not_reached == ids(60, start=40)
    assert f.cases == 40


def test_a_stopped_run_without_its_own_figures_keeps_the_arguments() -> None:
    b, c, p = stopped({"verdict": "Better"})
    f = sequential_figures(p, b, c, alpha=0.05, margin=0.02, min_cases=25)
    assert (f.alpha, f.margin, f.min_cases, f.planned) == (0.05, 0.02, 25, 40)
    # no "of": planned is the cases compared, so nothing was saved
    assert f.saving == Saving(0, None, None, estimated=True)
    b, c, p = stopped({"margin": None, "of": 100})
    f = sequential_figures(p, b, c, margin=0.02)
    assert f.margin == 0.02
    # no "saved": the cases planned but not compared
    assert f.saving == Saving(60, None, None, estimated=True)


def test_a_stopped_baseline_is_the_side_too() -> None:
    base = scored(ids(30), [0.0] * 30, "base")
    cand = scored(ids(50), [1.0] * 50, "cand")
    base.case_order = ids(50)
    base.sequential = {"of": 50, "alpha": 0.05}
    f = sequential_figures(pair(base, cand), base, cand)
    assert (f.side, f.order, f.planned) == (
        "baseline",
        "in the order the baseline run took them",
        50,
    )
    assert f.not_reached == ids(20, start=30)


# -- sentence and JSON -------------------------------------------------------------------


def test_sentence_of_a_stopped_run() -> None:
    b, c, p = stopped(dict(RECORD))
    f = sequential_figures(p, b, c)
    assert f.sentence() == (
        "The candidate ran with --stop-when-settled: settled Better after 16 of 100 cases. "
        "Its verdict comes from the 90% confidence sequence over the 40 cases in the order "
        "they ran (valid however early a run stops; the bootstrap interval is not)."
    )
    b, c, p = stopped({"alpha": 0.025})
    assert sequential_figures(p, b, c).sentence() == (
        "Its verdict comes from the 97.5% confidence sequence over the 40 cases in the order "
        "they ran (valid however early a run stops; the bootstrap interval is not)."
    )


def test_sentence_of_a_replay_that_settled() -> None:
    b, c, p = runs([0.0] * 40, [1.0] * 40)
    b.case_order = ids(40)
    f = sequential_figures(p, b, c)
    lo, hi = reference([1.0] * 40)[19]  # after 20 cases: (+0.2468, +1.0)
    assert (f"{lo * 100:+.1f}", f"{hi * 100:+.1f}") == ("+24.7", "+100.0")
    assert f.sentence() == (
        "Taken case by case (in the order the baseline run took them), the 95% confidence "
        "sequence settled Better after 20 of 40 cases (interval [+24.7, +100.0] points); "
        "20 cases not spent."
    )
    assert f.sentence(points=False) == (
        "Taken case by case (in the order the baseline run took them), the 95% confidence "
        "sequence settled Better after 20 of 40 cases (interval [+0.247, +1]); "
        "20 cases not spent."
    )


def test_sentence_of_a_replay_that_did_not_settle() -> None:
    b, c, p = runs([0.5] * 1200, [0.5] * 1200)
    f = sequential_figures(p, b, c, seed=2)
    assert f.sentence() == (
        "Taken case by case (in a seeded shuffle, seed 2), the 95% confidence sequence did "
        "not settle within the 1,200 cases (at least 20 before any stop): a run stopped "
        "when settled would have run them all."
    )


def test_to_dict() -> None:
    b, c, p = stopped(dict(RECORD))
    f = sequential_figures(p, b, c)
    d = f.to_dict()
    path = d.pop("path")
    want = reference([1.0] * 40, alpha=0.1)
    after = first_settled(want, 10, lambda lo, hi: lo > 0)
    assert d == {
        "method": METHOD,
        "alpha": 0.1,
        "margin": 0.05,
        "min_cases": 10,
        "order": "in the order the candidate run took them",
        "cases": 40,
        "planned": 100,
        "settled": {"after": after, "verdict": "Better"},
        "interval": f.interval.to_dict(),
        "run": RECORD,
        "run_side": "candidate",
        "saving": {"cases": 60, "tokens": 12_345.0, "cost_usd": 1.5, "estimated": True},
        "not_reached": 60,
    }
    assert d["interval"]["estimate"] == 1.0
    assert d["interval"]["n"] == 40
    assert [pt["cases"] for pt in path] == list(range(1, 41))
    assert [pt["low"] for pt in path] == pytest.approx([w[0] for w in want], abs=1e-9)
    assert [pt["high"] for pt in path] == pytest.approx([w[1] for w in want], abs=1e-9)


def test_to_dict_of_a_replay_without_a_record() -> None:
    b, c, p = runs([0.5] * 25, [0.5] * 25)
    d = sequential_figures(p, b, c).to_dict()
    assert (d["run"], d["run_side"], d["saving"], d["settled"], d["not_reached"]) == (
        None,
        None,
        None,
        None,
        0,
    )
    assert (d["cases"], d["planned"], len(d["path"])) == (25, 25, 25)


def test_figures_are_frozen() -> None:
    b, c, p = runs([0.5] * 3, [0.5] * 3)
    f = sequential_figures(p, b, c)
    assert isinstance(f, SequentialFigures)
    with pytest.raises(AttributeError):
        f.alpha = 0.5  # type: ignore[misc]
