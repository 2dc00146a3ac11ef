"""What each page shows, as plain data: built from the store's objects here, turned into
HTML by :mod:`evaldelta.serve._pages`."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaldelta.serve._summary import RunRow

if TYPE_CHECKING:
    from evaldelta.model import Run
    from evaldelta.store import StoredRun

__all__ = [
    "AttemptView",
    "CaseView",
    "RunView",
    "RunsView",
    "case_views",
    "page_count",
    "text_of",
]

#: Longest input, expected answer or output shown per attempt on a run's page.
MAX_TEXT = 4_000


@dataclass(frozen=True, slots=True)
class RunsView:
    """One page of the runs list, and how it was asked for."""

    rows: list[RunRow]
    matched: int  # runs the filters keep
    stored: int  # runs in the store
    page: int
    pages: int
    page_size: int
    name: str = ""
    target: str = ""
    sort: str = "id"
    order: str = "desc"
    store: str = ""


@dataclass(frozen=True, slots=True)
class AttemptView:
    attempt: int
    target: str | None
    score: float
    passed: bool
    latency_ms: float | None
    cost_usd: float | None
    error: str | None
    error_kind: str | None
    safety_failure: bool
    output: str | None


@dataclass(frozen=True, slots=True)
class CaseView:
    test_id: str
    category: str | None
    input: str | None
    expected: str | None
    attempts: list[AttemptView] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RunView:
    """A run's page: its facts, per-target figures, and one page of its cases."""

    info: StoredRun
    figures: list[dict[str, Any]]
    cases: list[CaseView]
    case_count: int
    page: int
    pages: int
    page_size: int
    has_texts: bool
    store: str = ""


def page_count(items: int, size: int) -> int:
    """Pages of ``size`` needed for ``items`` (at least one, which may be empty)."""
    return max(1, math.ceil(items / size))


def text_of(value: Any, limit: int = MAX_TEXT) -> str | None:
    """A text field as shown: strings as they are, other JSON values as JSON, long
    ones cut (saying so)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    else:
        try:
            text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
        except (TypeError, ValueError):
            text = str(value)
    if len(text) > limit:
        return f"{text[:limit]}\n… (cut: {len(text):,} characters in all)"
    return text


def case_views(run: Run, first: int, count: int, pass_threshold: float = 0.5) -> list[CaseView]:
    """Cases ``first`` to ``first + count`` of ``run`` (in order of first appearance),
    each with its attempts in the order the run holds them."""
    import numpy as np

    from evaldelta.pairing._cases import passed_mask

    codes = range(first, min(first + count, len(run.test_ids)))
    if not codes:
        return []
    wanted = np.isin(run.test_index, np.asarray(codes, dtype=np.int64))
    records = np.flatnonzero(wanted)
    by_case = records[np.argsort(run.test_index[records], kind="stable")]
    passed = passed_mask(run, pass_threshold)
    texts = run.texts or {}
    several_targets = len(run.targets) > 1

    def field_of(name: str, i: int) -> str | None:
        column = texts.get(name)
        return None if column is None else text_of(column[i])

    def opt(value: float) -> float | None:
        return None if math.isnan(value) else value

    cases: dict[int, CaseView] = {}
    for i in by_case.tolist():
        code = int(run.test_index[i])
        case = cases.get(code)
        if case is None:
            category = int(run.category_index[i])
            case = cases[code] = CaseView(
                test_id=run.test_ids[code],
                category=run.categories[category] if category >= 0 else None,
                input=field_of("input", i),
                expected=field_of("expected", i),
            )
        case.attempts.append(
            AttemptView(
                attempt=int(run.attempt[i]),
                target=run.targets[int(run.target_index[i])] if several_targets else None,
                score=float(run.score[i]),
                passed=bool(passed[i]),
                latency_ms=opt(float(run.latency_ms[i])),
                cost_usd=opt(float(run.cost_usd[i])),
                error=run.errors.get(i),
                error_kind=run.error_kinds.get(i),
                safety_failure=bool(run.safety_failure[i]),
                output=field_of("output", i),
            )
        )
    return [cases[c] for c in codes if c in cases]
