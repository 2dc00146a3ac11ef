"""The knobs of a comparison (``evaldelta.analysis._settings``): the defaults of
:class:`Settings` and of ``compare_runs``, the confidence level, ``to_dict()``, every
message a wrong value meets, and the keyword parameters of :class:`CompareOptions`."""

from __future__ import annotations

import dataclasses
import math

import pytest

from evaldelta.analysis._settings import (
    DEFAULT_MARGIN,
    DEFAULT_REGRESSION_THRESHOLD,
    DEFAULT_TOLERANCE,
    CompareOptions,
    Settings,
)
from evaldelta.errors import UsageError

NAN, INF = math.nan, math.inf


def test_the_module_constants() -> None:
    assert (DEFAULT_MARGIN, DEFAULT_TOLERANCE, DEFAULT_REGRESSION_THRESHOLD) == (0.01, 0.01, 0.05)


def test_defaults() -> None:
    s = Settings()
    assert s.threshold == 0.1
    assert s.pass_threshold == 0.5
    assert s.alpha == 0.05
    assert s.resamples == 10_000
    assert s.seed == 0
    assert s.cluster_by is None
    assert s.max_slowdown == 0.10
    assert s.max_cost_increase == 0.10
    assert s.margin == DEFAULT_MARGIN
    assert s.sequential is False
    assert s.min_cases == 20
    assert s.metric == "score"


def test_to_dict_holds_every_field_in_declaration_order() -> None:
    d = Settings(seed=7, cluster_by="category", margin=None, metric="pass_rate").to_dict()
    assert d == {
        "threshold": 0.1,
        "pass_threshold": 0.5,
        "alpha": 0.05,
        "resamples": 10_000,
        "seed": 7,
        "cluster_by": "category",
        "max_slowdown": 0.1,
        "max_cost_increase": 0.1,
        "margin": None,
        "sequential": False,
        "min_cases": 20,
        "metric": "pass_rate",
    }
    assert list(d) == [f.name for f in dataclasses.fields(Settings)]


@pytest.mark.parametrize(("alpha", "level"), [(0.05, 0.95), (0.1, 0.9), (0.01, 0.99)])
def test_level_is_one_minus_alpha(alpha: float, level: float) -> None:
    assert Settings(alpha=alpha).level == pytest.approx(level, abs=1e-15)


def test_settings_are_frozen_and_slotted() -> None:
    s = Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.alpha = 0.1  # type: ignore[misc]
    assert not hasattr(s, "__dict__")
    assert s == Settings()
    assert hash(s) == hash(Settings())
    assert s != Settings(seed=1)


def test_replace_checks_the_new_value_too() -> None:
    """``dataclasses.replace`` (what ``compare(threshold=...)`` uses) runs the checks."""
    assert dataclasses.replace(Settings(), threshold=0.3).threshold == 0.3
    with pytest.raises(UsageError) as err:
        dataclasses.replace(Settings(), threshold=-1.0)
    assert str(err.value) == "threshold must be a number >= 0, got -1.0"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": -0.1}, "threshold must be a number >= 0, got -0.1"),
        ({"threshold": NAN}, "threshold must be a number >= 0, got nan"),
        ({"threshold": INF}, "threshold must be a number >= 0, got inf"),
        ({"pass_threshold": NAN}, "pass_threshold must be a finite number, got nan"),
        ({"pass_threshold": -INF}, "pass_threshold must be a finite number, got -inf"),
        ({"alpha": 0.0}, "alpha must be between 0 and 1 (0.05 for 95% intervals), got 0.0"),
        ({"alpha": 1.0}, "alpha must be between 0 and 1 (0.05 for 95% intervals), got 1.0"),
        ({"alpha": 1.5}, "alpha must be between 0 and 1 (0.05 for 95% intervals), got 1.5"),
        ({"alpha": -0.05}, "alpha must be between 0 and 1 (0.05 for 95% intervals), got -0.05"),
        ({"alpha": NAN}, "alpha must be between 0 and 1 (0.05 for 95% intervals), got nan"),
        ({"resamples": 99}, "resamples must be at least 100 (10000 is the default), got 99"),
        ({"resamples": 0}, "resamples must be at least 100 (10000 is the default), got 0"),
        (
            {"max_slowdown": -0.1},
            "max_slowdown must be a fraction >= 0 (0.1 for 10%), got -0.1",
        ),
        ({"max_slowdown": NAN}, "max_slowdown must be a fraction >= 0 (0.1 for 10%), got nan"),
        ({"max_slowdown": INF}, "max_slowdown must be a fraction >= 0 (0.1 for 10%), got inf"),
        (
            {"max_cost_increase": -0.5},
            "max_cost_increase must be a fraction >= 0 (0.1 for 10%), got -0.5",
        ),
        (
            {"max_cost_increase": NAN},
            "max_cost_increase must be a fraction >= 0 (0.1 for 10%), got nan",
        ),
        ({"margin": -0.01}, "margin must be a number >= 0 (0.01 for 1 point), got -0.01"),
        ({"margin": NAN}, "margin must be a number >= 0 (0.01 for 1 point), got nan"),
        ({"margin": INF}, "margin must be a number >= 0 (0.01 for 1 point), got inf"),
        ({"min_cases": 0}, "min_cases must be a whole number >= 1, got 0"),
        ({"min_cases": -3}, "min_cases must be a whole number >= 1, got -3"),
        ({"min_cases": 2.0}, "min_cases must be a whole number >= 1, got 2.0"),
        ({"min_cases": True}, "min_cases must be a whole number >= 1, got True"),
        ({"min_cases": "20"}, "min_cases must be a whole number >= 1, got '20'"),
        ({"metric": "mean"}, "metric must be 'score' or 'pass_rate', got 'mean'"),
        ({"metric": "pass-rate"}, "metric must be 'score' or 'pass_rate', got 'pass-rate'"),
    ],
)
def test_every_bad_value_is_a_usage_error_that_says_what_is_allowed(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError) as err:
        Settings(**kwargs)  # type: ignore[arg-type]  # wrong types on purpose
    assert str(err.value) == message
    (name,) = kwargs  # the message names the parameter, and so does the error
    assert err.value.option == name
    assert str(err.value).startswith(f"{name} must be")


def test_the_first_bad_value_in_field_order_is_the_one_reported() -> None:
    with pytest.raises(UsageError) as err:
        Settings(metric="mean", alpha=2.0, threshold=-1.0)
    assert str(err.value).startswith("threshold must be")
    with pytest.raises(UsageError) as err:
        Settings(metric="mean", min_cases=0, margin=-1.0)
    assert str(err.value).startswith("margin must be")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 0.0},
        {"threshold": 5.0},
        {"pass_threshold": -2.0},  # any finite number: scores need not lie in [0, 1]
        {"pass_threshold": 10.0},
        {"alpha": 1e-9},
        {"alpha": 0.999},
        {"resamples": 100},
        {"max_slowdown": 0.0, "max_cost_increase": 0.0},
        {"max_slowdown": 3.0, "max_cost_increase": 3.0},
        {"margin": None},
        {"margin": 0.0},
        {"margin": 1.0},
        {"min_cases": 1},
        {"metric": "pass_rate"},
        {"seed": -1, "cluster_by": "doc", "sequential": True},
    ],
)
def test_values_at_the_edges_are_allowed(kwargs: dict[str, object]) -> None:
    s = Settings(**kwargs)  # type: ignore[arg-type]
    for name, value in kwargs.items():
        assert getattr(s, name) == value


def test_compare_options_are_the_keywords_of_compare_all_optional() -> None:
    assert list(CompareOptions.__annotations__) == [
        "baseline_target",
        "candidate_target",
        "settings",
        "allow_dataset_change",
        "sample",
        "scorer",
    ]
    assert CompareOptions.__required_keys__ == frozenset()
    assert CompareOptions.__optional_keys__ == frozenset(CompareOptions.__annotations__)
    options: CompareOptions = {"sample": 3, "settings": Settings(seed=2)}
    assert options == {"sample": 3, "settings": Settings(seed=2)}
