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

#: Names loaded when first asked for: only `evaldelta power` needs them, and a compare
#: should not pay for importing them at start-up.
_LAZY = {
    "PowerResult": "evaldelta.stats._power",
    "cases_needed": "evaldelta.stats._power",
    "minimum_detectable_effect": "evaldelta.stats._power",
    "paired_variance": "evaldelta.stats._power",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
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
