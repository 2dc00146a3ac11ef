"""evaldelta: is the new version of an LLM agent really better, or did it get lucky?

Read evaluation results, pair cases across runs, and compare them::

    import evaldelta

    run = evaldelta.load("results.jsonl")
    result = evaldelta.compare_matrix(run, baseline="gpt-4.1")
    result.to_dict()          # what `evaldelta compare --json` prints

Importing this package is cheap: numpy and the readers load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "EvalDeltaError",
    "InputError",
    "MatchedCase",
    "MatrixComparison",
    "PairingError",
    "ParseError",
    "Record",
    "Run",
    "Settings",
    "UnknownFormatError",
    "UsageError",
    "__version__",
    "compare",
    "compare_matrix",
    "load",
]

_LAZY = {
    "compare": "evaldelta.api",
    "Comparison": "evaldelta.pairing.pairwise",
    "MatchedCase": "evaldelta.pairing.pairwise",
    "compare_matrix": "evaldelta.api",
    "Settings": "evaldelta.analysis",
    "MatrixComparison": "evaldelta.pairing.matrix",
    "load": "evaldelta.io",
    "Record": "evaldelta.model",
    "Run": "evaldelta.model",
    "EvalDeltaError": "evaldelta.errors",
    "InputError": "evaldelta.errors",
    "ParseError": "evaldelta.errors",
    "PairingError": "evaldelta.errors",
    "UnknownFormatError": "evaldelta.errors",
    "UsageError": "evaldelta.errors",
}

if TYPE_CHECKING:
    from evaldelta.analysis import Settings
    from evaldelta.api import compare, compare_matrix
    from evaldelta.errors import (
        EvalDeltaError,
        InputError,
        PairingError,
        ParseError,
        UnknownFormatError,
        UsageError,
    )
    from evaldelta.io import load
    from evaldelta.model import Record, Run
    from evaldelta.pairing.matrix import MatrixComparison
    from evaldelta.pairing.pairwise import Comparison, MatchedCase


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evaldelta' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
