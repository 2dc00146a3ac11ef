"""Fairness before figures: can these two runs be compared at all, and what to warn about.

A problem that makes a judgement impossible (different datasets, an interrupted
run, more than 10% infrastructure failures) *refuses*: ``gate`` exits 2 on it,
``compare`` shows it as a warning and still compares the common cases.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from evaldelta._plain import picked
from evaldelta.analysis._sequential import not_reached, sequential_side

if TYPE_CHECKING:
    from evaldelta.model import Run
    from evaldelta.pairing._cases import Cases
    from evaldelta.pairing._pairwise import Pairing

__all__ = ["INFRA_LIMIT", "DatasetCheck", "Problem", "check_fairness", "dataset_hash", "differs_in"]

#: The status of a run that stopped once its comparison was settled.
STOPPED_EARLY = "stopped early"
#: Share of a run's attempts lost to infrastructure beyond which it cannot be judged.
INFRA_LIMIT = 0.10
#: Runs further apart than this may have met different model versions or services.
MAX_APART_HOURS = 24


@dataclass(frozen=True, slots=True)
class Problem:
    """Something a reader of the comparison must know; ``refuse`` when it cannot be judged."""

    code: str
    message: str
    refuse: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "refuse": self.refuse}


@dataclass(frozen=True, slots=True)
class DatasetCheck:
    """Whether both runs asked the same questions."""

    baseline_hash: str
    candidate_hash: str
    only_baseline: int
    only_candidate: int
    inputs_changed: int

    @property
    def same(self) -> bool:
        return self.baseline_hash == self.candidate_hash

    def to_dict(self) -> dict[str, Any]:
        return picked(
            self,
            "baseline_hash candidate_hash same only_in_baseline=only_baseline "
            "only_in_candidate=only_candidate inputs_changed",
        )


def dataset_hash(cases: Cases) -> str:
    """sha256 over the sorted test ids and a fingerprint of each one's input (12 hex digits)."""
    fingerprints = dict(zip(cases.test_ids, cases.input_hash.tolist(), strict=True))
    if len(fingerprints) == len(cases.test_ids):
        # One case per test id (as ever): sorting the ids sorts the rows, and faster.
        text = "\x01".join([f"{tid}\x00{fingerprints[tid]}" for tid in sorted(fingerprints)])
    else:
        rows = sorted(zip(cases.test_ids, cases.input_hash.tolist(), strict=True))
        text = "\x01".join(f"{tid}\x00{fp}" for tid, fp in rows)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _same_dataset(c: Pairing, a: Cases, b: Cases) -> bool:
    """Whether two sides hold the same test ids with the same input fingerprints (the
    targets of one combined file), in one order or not: every case paired, and each pair
    of one input. Then they have one dataset hash, and it is taken once (0.1-0.25 s on
    100,000 cases)."""
    import numpy as np

    return (
        len(c.left) == len(a)
        and len(c.right) == len(b)
        and bool(np.array_equal(c.left.input_hash, c.right.input_hash))
    )


def differs_in(
    base_run: Run, cand_run: Run, base_target: str | None, cand_target: str | None
) -> list[str]:
    """Settings that differ between the runs: their configs, and the target itself."""
    keys = list(dict.fromkeys([*base_run.config, *cand_run.config]))
    missing = object()
    out = [k for k in keys if base_run.config.get(k, missing) != cand_run.config.get(k, missing)]
    if base_target != cand_target and "target" not in out and "model" not in out:
        out.append("target")
    return out


def _when(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _typical_attempts(cases: Cases) -> int:
    counts = Counter(cases.valid.tolist())
    return counts.most_common(1)[0][0] if counts else 0


def check_fairness(
    c: Pairing,
    base_cases: Cases,
    cand_cases: Cases,
    base_run: Run,
    cand_run: Run,
    *,
    allow_dataset_change: bool = False,
    settings_differ: list[str] | None = None,
    edited: int = 0,
) -> tuple[list[Problem], DatasetCheck]:
    """Problems with comparing these runs, refusals first, and the dataset check."""
    problems: list[Problem] = []

    # Same questions? Test ids on both sides, and the same input for each.
    changed = 0
    # Tools fingerprint different things (promptfoo its vars, Inspect the prompt text):
    # inputs are compared only between runs of one format.
    if len(c.left) and base_run.format == cand_run.format:
        a, b = c.left.input_hash, c.right.input_hash
        changed = int(((a != b) & (a != 0) & (b != 0)).sum())
    # A run of --stop-when-settled that settled has not reached the rest of the other
    # run's cases: that is no change of dataset.
    unreached = len(not_reached(c, base_run, cand_run))
    side = sequential_side(base_run, cand_run)
    baseline_hash = dataset_hash(base_cases)
    dataset = DatasetCheck(
        baseline_hash=baseline_hash,
        candidate_hash=baseline_hash
        if _same_dataset(c, base_cases, cand_cases)
        else dataset_hash(cand_cases),
        only_baseline=len(c.unmatched_baseline) - (unreached if side == "candidate" else 0),
        only_candidate=len(c.unmatched_candidate) - (unreached if side == "baseline" else 0),
        inputs_changed=changed + edited,
    )
    if side is not None:
        run = cand_run if side == "candidate" else base_run
        record = run.sequential or {}
        reason = record.get("reason") or "it ran case by case"
        left_out = (
            f"the {unreached:,} cases it did not reach are not compared, and " if unreached else ""
        )
        problems.append(
            Problem(
                "sequential",
                f"the {side} run ({run.source}) ran with --stop-when-settled ({reason}): "
                f"{left_out}the verdict comes from the confidence sequence, not the "
                "bootstrap interval",
            )
        )
    changed += edited
    if dataset.only_baseline or dataset.only_candidate or changed:
        parts = []
        skip = set(not_reached(c, base_run, cand_run))

        def ids(found: list[str]) -> str:
            shown = [t for t in found if t not in skip][:5]
            more = len(found) - len(skip & set(found)) - len(shown)
            return ", ".join(shown) + (f" and {more} more" if more > 0 else "")

        if dataset.only_baseline:
            n = dataset.only_baseline
            parts.append(
                f"{n} test id{'s' if n != 1 else ''} only in the baseline: "
                f"{ids(c.unmatched_baseline)}"
            )
        if dataset.only_candidate:
            parts.append(
                f"{dataset.only_candidate} only in the candidate: {ids(c.unmatched_candidate)}"
            )
        if changed:
            parts.append(f"{changed} with a changed input")
        detail = "; ".join(parts)
        common = len(c.left) - changed
        if allow_dataset_change:
            problems.append(
                Problem(
                    "dataset-changed",
                    f"the datasets differ ({detail}): compared the {len(c.left)} common cases, "
                    f"left out {dataset.only_baseline + dataset.only_candidate + edited}",
                )
            )
        else:
            problems.append(
                Problem(
                    "dataset-changed",
                    f"the runs have different datasets ({detail}; dataset hash "
                    f"{dataset.baseline_hash} vs {dataset.candidate_hash}): a gate judges "
                    f"the {common} unchanged common cases only with --allow-dataset-change; "
                    "or compare runs of the same dataset",
                    refuse=True,
                )
            )

    same_run = base_run is cand_run
    for run, side in ((base_run, "baseline"), (cand_run, "candidate")):
        if run.status not in ("complete", STOPPED_EARLY) and not (same_run and side == "candidate"):
            problems.append(
                Problem(
                    "interrupted",
                    f"the {side} run ({run.source}) declares itself {run.status}; "
                    "re-run it to completion",
                    refuse=True,
                )
            )

    for cases, side in ((base_cases, "baseline"), (cand_cases, "candidate")):
        attempts = int(cases.attempts.sum())
        infra = int(cases.infra.sum())
        if not attempts or not infra:
            continue
        share = infra / attempts
        if share > INFRA_LIMIT:
            problems.append(
                Problem(
                    "infra-failures",
                    f"{share:.0%} of the {side}'s attempts ({infra} of {attempts}) failed for "
                    "infrastructure reasons (timeouts, rate limits, provider errors), over the "
                    f"{INFRA_LIMIT:.0%} that can be judged; re-run them",
                    refuse=True,
                )
            )
        else:
            problems.append(
                Problem(
                    "some-infra-failures",
                    f"{infra} of the {side}'s {attempts} attempts failed for infrastructure "
                    "reasons and were left out of the figures",
                )
            )

    t1, t2 = _typical_attempts(c.left), _typical_attempts(c.right)
    if len(c.left) and t1 != t2:
        problems.append(
            Problem(
                "attempts-differ",
                f"the baseline has {t1} attempt{'s' if t1 != 1 else ''} per case, the candidate "
                f"{t2}: case scores are not equally noisy on both sides",
            )
        )

    if not same_run:
        start1, start2 = _when(base_run.started_at), _when(cand_run.started_at)
        if start1 is not None and start2 is not None:
            hours = abs((start2 - start1).total_seconds()) / 3600
            if hours > MAX_APART_HOURS:
                problems.append(
                    Problem(
                        "far-apart",
                        f"the runs started {hours:.0f} hours apart: the model or its provider "
                        "may have changed in between",
                    )
                )

    if settings_differ and len(settings_differ) > 1:
        problems.append(
            Problem(
                "settings-differ",
                f"{len(settings_differ)} settings differ ({', '.join(settings_differ)}): "
                "the comparison cannot tell which one caused a change",
            )
        )
    if c.not_run:
        shown = ", ".join(c.not_run[:10])
        more = f" and {len(c.not_run) - 10} more" if len(c.not_run) > 10 else ""
        problems.append(
            Problem(
                "not-run",
                f"{len(c.not_run)} case{'s' if len(c.not_run) != 1 else ''} lost every attempt "
                f"to infrastructure failures on one side and could not be compared "
                f"({shown}{more}); re-run them",
            )
        )
    n = len(c.left)
    if 0 < n < 10:
        problems.append(
            Problem(
                "few-cases",
                f"only {n} case{'s' if n != 1 else ''} in common: intervals are wide and "
                "the verdict is shaky",
            )
        )
    if n and bool((abs(c.delta) < 1e-9).all()):
        problems.append(Problem("all-ties", "every common case scored the same in both runs"))
    problems.sort(key=lambda p: not p.refuse)
    return problems, dataset
