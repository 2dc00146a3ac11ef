"""The per-case deltas binned for a histogram: equal-width bins, one centred on zero.

Kept here, with the other figures, so that a renderer only draws the counts it is
given (the HTML report's delta histogram).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evaldelta._plain import picked

__all__ = ["DELTA_BINS", "DeltaHistogram", "delta_histogram"]

#: Bins of the delta histogram: odd, so that one bin is centred on zero (the ties).
DELTA_BINS = 21


@dataclass(frozen=True)
class DeltaHistogram:
    """Counts of per-case deltas in ``len(counts)`` equal-width bins centred on
    ``-extent, -extent + step, ..., +extent``, where ``extent`` is the largest
    absolute delta (symmetric, so that zero is the middle bin's centre)."""

    counts: tuple[int, ...]
    extent: float
    step: float
    n: int
    method: str = "equal-width bins centred on 0, spanning the largest absolute delta"

    @property
    def centres(self) -> list[float]:
        """The centre of each bin, lowest first."""
        middle = (len(self.counts) - 1) // 2
        return [(b - middle) * self.step for b in range(len(self.counts))]

    def to_dict(self) -> dict[str, Any]:
        return {"counts": list(self.counts), **picked(self, "extent step n method")}


def delta_histogram(deltas: Iterable[float], bins: int = DELTA_BINS) -> DeltaHistogram:
    """Bin ``deltas`` (candidate minus baseline, one per case; non-finite ones skipped)
    into ``bins`` equal-width bins centred on multiples of the step, the middle one on 0.

    A delta halfway between two centres goes to the higher bin. With every delta 0 (or
    none), every case is in the middle bin and the bins span -1 to +1.
    """
    if bins < 1 or bins % 2 == 0:
        raise ValueError(f"bins must be a positive odd number, got {bins}")
    values = [d for d in deltas if math.isfinite(d)]
    extent = max((abs(d) for d in values), default=0.0)
    middle = (bins - 1) // 2
    step = (extent if extent > 0 else 1.0) / max(1, middle)
    counts = [0] * bins
    for d in values:
        b = middle + math.floor(d / step + 0.5) if extent > 0 else middle
        counts[min(bins - 1, max(0, b))] += 1
    return DeltaHistogram(tuple(counts), extent, step, len(values))
