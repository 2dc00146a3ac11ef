"""The per-case deltas binned for the report's histogram (hand-worked cases)."""

from __future__ import annotations

import pytest

from evaldelta.analysis._histogram import DELTA_BINS, delta_histogram


def test_bins_are_centred_on_zero_and_span_the_largest_delta() -> None:
    # extent 0.5, 5 bins: centres -0.5, -0.25, 0, +0.25, +0.5 (step 0.25)
    h = delta_histogram([-0.5, 0.0, 0.0, 0.25, 0.5, 0.1], bins=5)
    assert h.counts == (1, 0, 3, 1, 1)
    assert h.extent == 0.5
    assert h.step == 0.25
    assert h.centres == [-0.5, -0.25, 0.0, 0.25, 0.5]
    assert h.n == 6


def test_a_delta_halfway_between_centres_goes_up() -> None:
    # -0.125 and +0.125 lie halfway between two centres (step 0.25): both go up.
    assert delta_histogram([-0.5, -0.125, 0.125], bins=5).counts == (1, 0, 1, 1, 0)


def test_default_bins_and_the_asymmetric_case() -> None:
    h = delta_histogram([-1.0, 0.0, 0.1, 0.1])
    assert len(h.counts) == DELTA_BINS == 21
    assert h.step == pytest.approx(0.1)
    assert h.counts[0] == 1  # -1.0
    assert h.counts[10] == 1  # 0.0
    assert h.counts[11] == 2  # +0.1
    assert sum(h.counts) == 4


def test_all_ties_or_none_fall_in_the_middle_bin() -> None:
    h = delta_histogram([0.0, 0.0, 0.0])
    assert h.counts[10] == 3
    assert sum(h.counts) == 3
    assert h.centres[0] == pytest.approx(-1.0)
    assert h.centres[-1] == pytest.approx(1.0)
    empty = delta_histogram([])
    assert empty.n == 0
    assert sum(empty.counts) == 0


def test_non_finite_deltas_are_skipped() -> None:
    h = delta_histogram([float("nan"), float("inf"), 0.5, -0.5], bins=3)
    assert h.counts == (1, 0, 1)
    assert h.n == 2
    assert h.to_dict()["counts"] == [1, 0, 1]
    assert "equal-width" in h.to_dict()["method"]


@pytest.mark.parametrize("bins", [0, 4, -3])
def test_bins_must_be_positive_and_odd(bins: int) -> None:
    with pytest.raises(ValueError, match=f"bins must be a positive odd number, got {bins}"):
        delta_histogram([1.0], bins=bins)
