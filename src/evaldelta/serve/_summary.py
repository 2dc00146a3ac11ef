"""The runs list's rows: what the store says about each run, and its figures, read
once per run and kept in memory.

Listing runs reads only the ``runs`` table; the pass rate, mean score and cost of a
run come from the figures the store keeps beside it (computed from its records, and
not written back, for a run stored before the store kept them). They are read for the
rows a page shows (or, to sort by one of them, for every run listed) and kept: a
stored run's records never change, so a figure read once stays true for as long as
the run exists.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from evaldelta.errors import StoreError

if TYPE_CHECKING:
    from evaldelta.store import RunStore, StoredRun

__all__ = [
    "COLUMNS",
    "SUMMARY_COLUMNS",
    "RunRow",
    "RunSummary",
    "SummaryCache",
    "filter_rows",
    "row_of",
    "sort_rows",
    "summary_of",
]


@dataclass(frozen=True, slots=True)
class RunSummary:
    """A run's figures over all its cases (across targets, weighted by cases)."""

    pass_rate: float | None
    mean_score: float | None
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class RunRow:
    """One row of the runs list."""

    id: int
    name: str
    label: str
    when: str  # "2026-11-30 09:15" (UTC): when the run started, else when it was stored
    target: str  # the run's targets, comma-separated ("" when none is named)
    model: str | None  # the ``model`` the run's config declares
    cases: int
    attempts: int
    status: str
    summary: RunSummary | None = None

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"

    @property
    def running(self) -> bool:
        return self.status == "running"


def _when(info: StoredRun) -> str:
    """When the run ran (its declared start, else when it was stored), in UTC."""
    for text in (info.started_at, info.created_at):
        if not text:
            continue
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            continue
        if moment.tzinfo is not None:
            moment = moment.astimezone(timezone.utc)
        return moment.strftime("%Y-%m-%d %H:%M")
    return info.created_at[:16].replace("T", " ")


def row_of(info: StoredRun, summary: RunSummary | None = None) -> RunRow:
    """The row of a stored run, from what the store keeps beside its records."""
    model = info.config.get("model")
    return RunRow(
        id=info.id,
        name=info.name,
        label=info.label,
        when=_when(info),
        target=", ".join(t for t in info.targets if t is not None),
        model=None if model is None or model == "" else str(model),
        cases=info.cases,
        attempts=info.records,
        status=info.status,
        summary=summary,
    )


def summary_of(figures: Iterable[dict[str, Any]]) -> RunSummary:
    """One summary from the per-target figures of
    :func:`evaldelta.analysis._summary.summarise`: means weighted by cases, cost summed."""
    from evaldelta.analysis._summary import over_targets

    per_target = list(figures)
    costs = [f["cost_usd"] for f in per_target if f["cost_usd"] is not None]
    return RunSummary(
        pass_rate=over_targets(per_target, "pass_rate"),
        mean_score=over_targets(per_target, "mean_score"),
        cost_usd=sum(costs) if costs else None,
    )


Key = tuple[int, str, str, int]


class SummaryCache:
    """Each run's :class:`RunSummary`, computed from its records at most once (per
    process), safely from several threads."""

    def __init__(self, pass_threshold: float = 0.5) -> None:
        self.pass_threshold = pass_threshold
        self._lock = threading.Lock()
        self._done: dict[Key, RunSummary] = {}
        #: How many runs' records were read (for tests, and to see the cache work).
        self.computed = 0

    @staticmethod
    def key(info: StoredRun) -> Key:
        # The id alone would do, but for a store deleted and made anew under the
        # server: its ids start again at 1.
        return (info.id, info.created_at, info.dataset_hash, info.records)

    def get(self, info: StoredRun) -> RunSummary | None:
        with self._lock:
            return self._done.get(self.key(info))

    def fill(self, store: RunStore, infos: Iterable[StoredRun]) -> dict[int, RunSummary]:
        """The summaries of ``infos`` by run id: those not yet known are read from the
        figures the store keeps (computed from the records, and not written back, for
        runs stored before it kept them); a run deleted meanwhile is left out."""
        out: dict[int, RunSummary] = {}
        unknown: list[StoredRun] = []
        for info in infos:
            known = self.get(info)
            if known is None:
                unknown.append(info)
            else:
                out[info.id] = known
        if not unknown:
            return out
        try:
            figures = store.summaries(
                [i.id for i in unknown], pass_threshold=self.pass_threshold, keep=False
            )
        except StoreError:  # one of them deleted meanwhile: one by one, leaving it out
            figures = {}
            for info in unknown:
                if store.find(info.id) is not None:
                    figures.update(
                        store.summaries([info.id], pass_threshold=self.pass_threshold, keep=False)
                    )
        for info in unknown:
            if info.id in figures:
                known = summary_of(figures[info.id])
                with self._lock:
                    self._done[self.key(info)] = known
                    self.computed += 1
                out[info.id] = known
        return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._done)


#: Columns of the runs list a user can sort by: key -> (heading, first order).
COLUMNS: dict[str, tuple[str, str]] = {
    "id": ("ID", "desc"),
    "name": ("Name", "asc"),
    "when": ("When (UTC)", "desc"),
    "target": ("Target / model", "asc"),
    "cases": ("Cases", "desc"),
    "attempts": ("Attempts", "desc"),
    "pass_rate": ("Pass rate", "desc"),
    "mean_score": ("Mean score", "desc"),
    "cost": ("Cost", "desc"),
    "status": ("Status", "asc"),
}
#: Columns whose values need the runs' records (their summaries).
SUMMARY_COLUMNS = frozenset({"pass_rate", "mean_score", "cost"})


def _target_text(row: RunRow) -> str:
    return f"{row.target} {row.model or ''}".casefold()


_SORT_VALUES: dict[str, Any] = {
    "id": lambda r: r.id,
    "name": lambda r: r.name.casefold(),
    "when": lambda r: r.when,
    "target": lambda r: _target_text(r).strip() or None,
    "cases": lambda r: r.cases,
    "attempts": lambda r: r.attempts,
    "pass_rate": lambda r: r.summary.pass_rate if r.summary else None,
    "mean_score": lambda r: r.summary.mean_score if r.summary else None,
    "cost": lambda r: r.summary.cost_usd if r.summary else None,
    "status": lambda r: r.status,
}


def filter_rows(rows: Iterable[RunRow], name: str = "", target: str = "") -> list[RunRow]:
    """The rows whose name contains ``name`` and whose targets or model contain
    ``target`` (both ignoring case; empty matches all)."""
    name_part, target_part = name.strip().casefold(), target.strip().casefold()
    return [r for r in rows if name_part in r.name.casefold() and target_part in _target_text(r)]


def sort_rows(rows: Iterable[RunRow], key: str, order: str) -> list[RunRow]:
    """``rows`` sorted by column ``key`` (``asc`` or ``desc``); rows without a value
    (a run with no cost) come last either way, and ties newest first."""
    value = _SORT_VALUES[key]
    present = [r for r in rows if value(r) is not None]
    missing = [r for r in rows if value(r) is None]
    present.sort(key=lambda r: r.id, reverse=True)
    present.sort(key=value, reverse=order == "desc")  # stable: ties stay newest first
    missing.sort(key=lambda r: r.id, reverse=True)
    return present + missing
