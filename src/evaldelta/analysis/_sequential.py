"""A comparison taken case by case, in the order the cases ran: where its anytime-valid
confidence sequence settles, and what stopping there saves.

Two uses. A run that ``evaldelta eval --stop-when-settled`` stopped early is judged by
its sequence: the bootstrap interval assumes the number of cases was fixed in advance,
which it was not, and is not valid after optional stopping. And ``compare A B
--sequential`` replays two finished runs, to show where a run would have settled and
what that would have saved.

The order is the one the cases ran in: the stopped run's recorded order, else the
baseline's, else the candidate's (``evaldelta eval`` records a seeded shuffle with each
run); runs that recorded none (files of other tools) are taken in a seeded shuffle of
the test ids, never in the order of the file, which may be sorted by outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaldelta.errors import UsageError
from evaldelta.pairing._cases import seeded_order

if TYPE_CHECKING:
    from evaldelta.model import Run
    from evaldelta.pairing._pairwise import Pairing
    from evaldelta.stats import Interval
    from evaldelta.stats._sequential import ConfidenceSequence, Settled

__all__ = [
    "DEFAULT_MIN_CASES",
    "Saving",
    "SequentialFigures",
    "not_reached",
    "sequential_figures",
    "sequential_side",
]

#: No verdict settles before this many cases (a guard against a lucky start).
DEFAULT_MIN_CASES = 20


@dataclass(frozen=True, slots=True)
class Saving:
    """What a run that stopped at the settle point would not have spent: its cases
    after that point, their attempts' tokens and cost (``None`` where not reported)."""

    cases: int
    tokens: float | None
    cost_usd: float | None
    estimated: bool = False  # figured from the cases that ran (a run stopped early)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "tokens": None if self.tokens is None else round(self.tokens, 3),
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 9),
            "estimated": self.estimated,
        }

    def words(self) -> str:
        """``788 cases, about 2.1M tokens and $4.20 not spent``."""
        about = "about " if self.estimated else ""
        parts = [f"{self.cases:,} case{'s' if self.cases != 1 else ''}"]
        if self.tokens is not None and self.tokens > 0:
            parts.append(f"{about}{_count(self.tokens)} tokens")
        if self.cost_usd is not None and self.cost_usd > 0:
            parts.append(f"{about if len(parts) < 2 else ''}${self.cost_usd:,.2f}")
        joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"{joined} not spent"


def _count(n: float) -> str:
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


@dataclass(frozen=True, slots=True)
class SequentialFigures:
    """The comparison's confidence sequence over its cases in the order they ran.

    Attributes:
        sequence: the bounds after each case, on the scale of the score delta.
        test_ids: the cases in the order they entered the sequence.
        order: where that order comes from, in words.
        settled: the first look (at least ``min_cases``) at which the interval settled,
            or ``None``.
        planned: the cases a run to the end would have had (the other run's cases).
        record: how the run of ``--stop-when-settled`` went (``Run.sequential``), when
            one of the runs is one; the verdict then comes from the sequence.
        side: which run that is (``baseline`` / ``candidate``), if one is.
        saving: what stopping at the settle point saves (replay), or saved (a run that
            stopped early: estimated from the cases it ran).
        not_reached: the other run's cases that the run of ``--stop-when-settled`` did
            not reach (not compared, and no change of dataset).
    """

    alpha: float
    margin: float | None
    min_cases: int
    order: str
    sequence: ConfidenceSequence
    test_ids: list[str]
    settled: Settled | None
    planned: int
    record: dict[str, Any] | None = None
    side: str | None = None
    saving: Saving | None = None
    not_reached: list[str] = field(default_factory=list)

    @property
    def cases(self) -> int:
        return len(self.test_ids)

    @property
    def interval(self) -> Interval:
        """The sequence's interval after its last case (what the verdict reads when a
        run stopped early)."""
        return self.sequence.interval()

    def sentence(self, points: bool = True) -> str:
        """``Settled Better after 212 of 1,000 cases (...); 788 cases ... not spent.``"""
        if self.record is not None:
            reason = self.record.get("reason")
            head = f"The {self.side} ran with --stop-when-settled: {reason}." if reason else ""
            return (
                f"{head} Its verdict comes from the {self.level_text} confidence sequence "
                f"over the {self.cases:,} cases in the order they ran (valid however early "
                "a run stops; the bootstrap interval is not)."
            ).strip()
        if self.settled is None:
            return (
                f"Taken case by case ({self.order}), the {self.level_text} confidence "
                f"sequence did not settle within the {self.cases:,} cases"
                + (f" (at least {self.min_cases} before any stop)" if self.cases else "")
                + ": a run stopped when settled would have run them all."
            )
        lo, hi = self.sequence.low, self.sequence.high
        t = self.settled.cases
        scale = 100 if points else 1
        unit = " points" if points else ""
        fmt = ".1f" if points else ".3g"
        where = f"[{lo[t - 1] * scale:+{fmt}}, {hi[t - 1] * scale:+{fmt}}]{unit}"
        saved = f"; {self.saving.words()}" if self.saving is not None else ""
        return (
            f"Taken case by case ({self.order}), the {self.level_text} confidence sequence "
            f"settled {self.settled.kind} after {t:,} of {self.planned:,} cases "
            f"(interval {where}){saved}."
        )

    @property
    def level_text(self) -> str:
        from evaldelta.analysis._verdict import level_text

        return level_text(1 - self.alpha)

    def to_dict(self) -> dict[str, Any]:
        from evaldelta.stats._sequential import METHOD, path_points

        return {
            "method": METHOD,
            "alpha": self.alpha,
            "margin": self.margin,
            "min_cases": self.min_cases,
            "order": self.order,
            "cases": self.cases,
            "planned": self.planned,
            "settled": None if self.settled is None else self.settled.to_dict(),
            "interval": self.interval.to_dict(),
            "run": self.record,
            "run_side": self.side,
            "saving": None if self.saving is None else self.saving.to_dict(),
            "not_reached": len(self.not_reached),
            "path": path_points(self.sequence),
        }


def sequential_side(base_run: Run, cand_run: Run) -> str | None:
    """``candidate`` or ``baseline``: the run that ``--stop-when-settled`` ran, if one is."""
    if cand_run.sequential is not None:
        return "candidate"
    if base_run.sequential is not None and base_run is not cand_run:
        return "baseline"
    return None


def not_reached(c: Pairing, base_run: Run, cand_run: Run) -> list[str]:
    """The cases a run of ``--stop-when-settled`` did not reach: in its recorded order,
    on the other side, but not run on its own (they are not a change of dataset)."""
    side = sequential_side(base_run, cand_run)
    if side is None:
        return []
    run = cand_run if side == "candidate" else base_run
    planned = set(run.case_order or ())
    missing = c.unmatched_baseline if side == "candidate" else c.unmatched_candidate
    return [tid for tid in missing if tid in planned]


def _order(
    c: Pairing, base_run: Run, cand_run: Run, side: str | None, seed: int
) -> tuple[list[str], str]:
    runs = [("baseline", base_run), ("candidate", cand_run)]
    if side == "candidate":
        runs.reverse()
    for name, run in runs:
        if run.case_order:
            return list(run.case_order), f"in the order the {name} run took them"
    return seeded_order(c.test_ids, seed), f"in a seeded shuffle, seed {seed}"


def sequential_figures(
    c: Pairing,
    base_run: Run,
    cand_run: Run,
    *,
    alpha: float = 0.05,
    margin: float | None = None,
    min_cases: int = DEFAULT_MIN_CASES,
    seed: int = 0,
) -> SequentialFigures:
    """The confidence sequence of the mean score delta, case by case in the order the
    cases ran, where it settles, and what stopping there saves.

    A run of ``--stop-when-settled`` brings its own alpha and minimum, and its margin
    when it ran by one (the stop was decided by them); ``margin`` serves otherwise.

    Raises:
        UsageError: scores outside [0, 1] (a confidence sequence needs bounded scores).
    """
    import numpy as np

    from evaldelta.stats._sequential import confidence_sequence, settle

    side = sequential_side(base_run, cand_run)
    record = None
    if side is not None:
        record = (cand_run if side == "candidate" else base_run).sequential
        assert record is not None
        alpha = float(record.get("alpha", alpha))
        if record.get("margin") is not None:
            margin = float(record["margin"])
        min_cases = int(record.get("min_cases", min_cases))
    n = len(c.test_ids)
    scores = np.concatenate([c.score1, c.score2]) if n else np.zeros(0)
    if n and (scores.min() < -1e-12 or scores.max() > 1 + 1e-12):
        raise UsageError(
            "a sequential comparison needs scores in [0, 1] (the confidence sequence "
            f"bounds each case's change by them); these scores span {scores.min():g} to "
            f"{scores.max():g}: compare on a scorer in [0, 1] (--scorer NAME)",
            option="sequential",
        )
    order, where = _order(c, base_run, cand_run, side, seed)
    row = {tid: i for i, tid in enumerate(c.test_ids)}
    rows = np.fromiter((row[t] for t in order if t in row), np.int64)
    # Matched cases the order does not hold (a run whose order missed some): last, in a
    # seeded shuffle, so that every matched case counts.
    seen = np.zeros(n, dtype=np.bool_)
    seen[rows] = True
    if not seen.all():
        rest = [c.test_ids[i] for i in np.flatnonzero(~seen).tolist()]
        rows = np.concatenate(
            [rows, np.fromiter((row[t] for t in seeded_order(rest, seed)), np.int64)]
        )
    sequence = confidence_sequence(c.delta[rows], alpha=alpha)
    settled = settle(sequence, margin=margin, min_cases=min_cases)
    ids = [c.test_ids[i] for i in rows.tolist()]
    planned = n
    saving = None
    if record is not None:
        planned = int(record.get("of", n))
        saved = record.get("saved") or {}
        saving = Saving(
            int(saved.get("cases", max(planned - n, 0))),
            saved.get("tokens"),
            saved.get("cost_usd"),
            estimated=True,
        )
    elif settled is not None:
        after = rows[settled.cases :]
        right = c.right
        tokens = right.input_tokens[after] + right.output_tokens[after]
        tokens_known = ~np.isnan(tokens)
        costs = right.cost_usd[after]
        costs_known = ~np.isnan(costs)
        attempts = right.valid[after].astype(np.float64)
        saving = Saving(
            len(after),
            float((tokens * attempts)[tokens_known].sum()) if tokens_known.any() else None,
            float((costs * attempts)[costs_known].sum()) if costs_known.any() else None,
        )
    return SequentialFigures(
        alpha=alpha,
        margin=margin,
        min_cases=min_cases,
        order=where,
        sequence=sequence,
        test_ids=ids,
        settled=settled,
        planned=planned,
        record=record,
        side=side,
        saving=saving,
        not_reached=not_reached(c, base_run, cand_run),
    )
