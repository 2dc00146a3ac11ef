"""Run against a baseline, and stop paying once the answer is in.

``evaldelta eval SUITE --against RUN --stop-when-settled``: the candidate runs the
baseline run's cases in the baseline's recorded order (a seeded shuffle), and after
each case both runs have, the anytime-valid confidence sequence of the mean score
delta is brought up to date (:mod:`evaldelta.stats._sequential`). Once it lies above 0
(Better), below 0 (Worse) or within ``margin`` of 0 (No change), after at least
``min_cases`` cases, nothing new is scheduled; the calls in flight finish.

Cases enter the sequence in the pre-committed order, never in the order they finish:
faster failures arriving first would bias it. A case that finishes early waits until
the ones before it are in. A case's score is the mean over its attempts, as everywhere;
a case whose attempts were all lost to infrastructure failures does not enter (it is
not compared either).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from evaldelta.model import Run
    from evaldelta.stats._sequential import RunningSequence, Settled

__all__ = ["Against", "Sequencer"]


@dataclass(frozen=True, slots=True)
class Against:
    """The baseline a run is made against: its case scores and the order to run them in.

    Attributes:
        scores: test id -> the baseline's case score (mean over its attempts, in [0, 1]).
        order: the cases in the order to run them (the baseline's recorded order).
        label: the baseline, as output names it (``before/v1 (run 3)``).
        run_id: the baseline's id in the store, if it is a stored run.
        order_source: where ``order`` comes from, in words.
        stop_when_settled: stop once the comparison is settled (else only run the
            baseline's cases in its order).
        alpha, margin, min_cases: the sequence's error rate; a change smaller than
            ``margin`` (score units) does not matter; no stop before ``min_cases``.
    """

    scores: Mapping[str, float]
    order: Sequence[str]
    label: str
    run_id: int | None = None
    order_source: str = "the baseline's recorded order"
    stop_when_settled: bool = True
    alpha: float = 0.05
    margin: float | None = None
    min_cases: int = 20

    @classmethod
    def of_run(
        cls,
        run: Run,
        *,
        label: str,
        run_id: int | None = None,
        seed: int = 0,
        stop_when_settled: bool = True,
        alpha: float = 0.05,
        margin: float | None = None,
        min_cases: int = 20,
    ) -> Against:
        """The baseline ``run`` (one target): its cases that have a score, in its
        recorded order, else in a seeded shuffle.

        Raises:
            UsageError: a run of several targets, scores outside [0, 1], no case with
                a score, a bad alpha, margin or minimum.
        """
        import numpy as np

        from evaldelta.pairing._cases import cases, seeded_order
        from evaldelta.stats._intervals import check_probability

        check_probability("alpha", alpha)
        if margin is not None and not (math.isfinite(margin) and margin >= 0):
            raise UsageError(f"--margin must be a number of points >= 0, got {margin * 100:g}")
        if isinstance(min_cases, bool) or not isinstance(min_cases, int) or min_cases < 1:
            raise UsageError(f"--min-cases must be a whole number >= 1, got {min_cases!r}")
        names = run.target_names
        if len(names) > 1:
            raise UsageError(
                f"--against {label}: the run holds {len(names)} targets "
                f"({', '.join(names)}); a baseline is one target's run (NAME/TARGET)",
                option="against",
            )
        base = cases(run, names[0] if names else None, label=label)
        ok = ~np.isnan(base.score)
        if not ok.any():
            raise UsageError(
                f"--against {label}: the run has no case with a score to compare with",
                option="against",
            )
        scored = base.score[ok]
        if scored.min() < -1e-12 or scored.max() > 1 + 1e-12:
            raise UsageError(
                f"--against {label}: its scores span {scored.min():g} to {scored.max():g}; "
                "stopping when settled needs scores in [0, 1]",
                option="against",
            )
        scores = dict(
            zip(
                [t for t, good in zip(base.test_ids, ok.tolist(), strict=True) if good],
                scored.tolist(),
                strict=True,
            )
        )
        if run.case_order:
            order = [t for t in run.case_order if t in scores]
            source = f"the recorded order of {label}"
        else:
            order = seeded_order(list(scores), seed)
            source = f"a seeded shuffle (seed {seed}): {label} recorded no order"
        return cls(
            scores=scores,
            order=order,
            label=label,
            run_id=run_id,
            order_source=source,
            stop_when_settled=stop_when_settled,
            alpha=alpha,
            margin=margin,
            min_cases=min_cases,
        )


@dataclass(slots=True)
class Sequencer:
    """The confidence sequence of a run being made against a baseline, kept up to date
    as attempts finish, case by case in the order given.

    ``add`` each finished attempt's record (and, on resume, the kept ones first);
    :attr:`settled` says when the sequence settled.
    """

    against: Against
    order: Sequence[str]  # the cases this run takes, in order
    attempts: int
    sequence: RunningSequence = field(init=False)
    settled: Settled | None = None
    settled_interval: tuple[float, float] | None = None
    position: int = 0
    entered: int = 0
    done: dict[str, int] = field(default_factory=dict)
    _scores: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from evaldelta.stats._sequential import RunningSequence

        self.sequence = RunningSequence(alpha=self.against.alpha)

    def add(self, record: Mapping[str, Any]) -> bool:
        """One finished attempt; True when this made the sequence settle."""
        tid = str(record["test_id"])
        self.done[tid] = self.done.get(tid, 0) + 1
        if record.get("error_kind") != "infra":
            score = record.get("score")
            self._scores.setdefault(tid, []).append(0.0 if score is None else float(score))
        return self._advance()

    def _advance(self) -> bool:
        from evaldelta.stats._sequential import Settled, settled_kind

        newly = False
        while self.position < len(self.order):
            tid = self.order[self.position]
            if self.done.get(tid, 0) < self.attempts:
                break  # the next case in order is not in yet: later ones wait
            self.position += 1
            scores = self._scores.get(tid)
            if not scores or tid not in self.against.scores:
                continue  # lost to infrastructure: not compared, not in the sequence
            mean = sum(scores) / len(scores)
            self.sequence.add(mean - self.against.scores[tid])
            self.entered += 1
            if self.settled is None and self.entered >= self.against.min_cases:
                kind = settled_kind(self.sequence.low, self.sequence.high, self.against.margin)
                if kind is not None:
                    self.settled = Settled(self.entered, kind)
                    self.settled_interval = (self.sequence.low, self.sequence.high)
                    newly = True
        return newly

    @property
    def should_stop(self) -> bool:
        return self.against.stop_when_settled and self.settled is not None

    def reason(self, saving: str | None = None) -> str:
        """``settled Better after 212 of 1,000 cases; 788 cases ... not spent``."""
        if self.settled is None:
            return f"did not settle within {self.entered:,} of {len(self.order):,} cases"
        text = (
            f"settled {self.settled.kind} after {self.settled.cases:,} of {len(self.order):,} cases"
        )
        return f"{text}; {saving}" if saving else text

    def record(
        self,
        *,
        started: int,
        tokens: float | None,
        cost_usd: float | None,
        finished: int,
    ) -> dict[str, Any]:
        """What the store keeps with the run (``Run.sequential``).

        Args:
            started: cases of the order with at least one attempt started.
            tokens, cost_usd: what the run spent (targets and judge), or None.
            finished: cases with every attempt finished.
        """
        from evaldelta.analysis._sequential import Saving

        planned = len(self.order)
        not_run = max(planned - started, 0)
        saving = None
        if self.settled is not None and self.against.stop_when_settled:
            each = finished or 1
            saving = Saving(
                not_run,
                None if tokens is None else tokens / each * not_run,
                None if cost_usd is None else cost_usd / each * not_run,
                estimated=True,
            )
        interval = self.settled_interval or (self.sequence.low, self.sequence.high)
        return {
            "settled": self.settled is not None,
            "verdict": None if self.settled is None else self.settled.kind,
            "after": None if self.settled is None else self.settled.cases,
            "of": planned,
            "cases_run": started,
            "cases_in_sequence": self.entered,
            "interval": {"low": interval[0], "high": interval[1]},
            "alpha": self.against.alpha,
            "margin": self.against.margin,
            "min_cases": self.against.min_cases,
            "against": {"run": self.against.run_id, "name": self.against.label},
            "order": self.against.order_source,
            "saved": None if saving is None else saving.to_dict(),
            "reason": self.reason(None if saving is None else saving.words()),
        }
