"""Statistics for comparing runs: intervals, the exact McNemar test, power.

Pure functions: seeded, no I/O, no printing; numpy loads on first use. The
unit is the case (attempts averaged first); every result names its method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaldelta.stats._intervals import (
    Interval,
    bootstrap_mean,
    clustered_normal_interval,
    normal_interval,
    t_interval,
    t_value,
    wilson_interval,
    z_value,
)
from evaldelta.stats._mcnemar import McNemarResult, mcnemar_exact
from evaldelta.stats._signflip import SignFlipResult, sign_flip_test

if TYPE_CHECKING:
    from evaldelta.stats._power import (
        PowerResult,
        cases_needed,
        minimum_detectable_effect,
        paired_variance,
    )

#: Loaded when first asked for: only `evaldelta power` needs them, and a compare should not
#: pay for importing them at start-up.
_POWER = ("PowerResult", "cases_needed", "minimum_detectable_effect", "paired_variance")


def __getattr__(name: str) -> Any:
    if name not in _POWER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from evaldelta.stats import _power

    globals()[name] = value = getattr(_power, name)
    return value


__all__ = [
    "Interval",
    "McNemarResult",
    "PowerResult",
    "SignFlipResult",
    "bootstrap_mean",
    "cases_needed",
    "clustered_normal_interval",
    "mcnemar_exact",
    "minimum_detectable_effect",
    "normal_interval",
    "paired_variance",
    "sign_flip_test",
    "t_interval",
    "t_value",
    "wilson_interval",
    "z_value",
]
