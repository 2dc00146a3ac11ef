"""evaldelta: is the new version of an LLM agent really better, or did it get lucky?

Read evaluation results, pair cases across runs, and compare them::

    import evaldelta

    run = evaldelta.load("results.jsonl")
    result = evaldelta.compare_matrix(run, baseline="gpt-4.1")
    result.to_dict()          # what `evaldelta compare --json` prints

Keep runs in a store, and check the latest against the one before, scorer by scorer::

    store = evaldelta.RunStore(".evaldelta/runs.db")
    store.add_run(evaldelta.load("after.jsonl"), name="qa-eval")
    latest, previous = store.list_runs(name="qa-eval", limit=2)
    result = evaldelta.compare_runs(store, previous.id, latest.id)
    result.regression.regressed

Importing this package is cheap: numpy and the readers load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evaldelta._version import __version__

__all__ = [
    "Analysis",
    "Comparison",
    "EvalDeltaError",
    "EvalOutcome",
    "Figures",
    "InputError",
    "MatchedCase",
    "MatrixComparison",
    "MissingDependencyError",
    "PairingError",
    "ParseError",
    "Record",
    "Run",
    "RunComparison",
    "RunNotFoundError",
    "RunStore",
    "Settings",
    "StoreError",
    "StoredRun",
    "StoredSuite",
    "TargetError",
    "UnknownFormatError",
    "UsageError",
    "Verdict",
    "__version__",
    "compare",
    "compare_matrix",
    "compare_runs",
    "evaluate",
    "load",
    "open_store",
    "scorers",
]

_LAZY = {
    "compare": "evaldelta.api",
    "Comparison": "evaldelta.analysis._comparison",
    "Analysis": "evaldelta.analysis",
    "Figures": "evaldelta.analysis",
    "Verdict": "evaldelta.analysis",
    "MatchedCase": "evaldelta.pairing._pairwise",
    "compare_matrix": "evaldelta.api",
    "compare_runs": "evaldelta.api",
    "evaluate": "evaldelta.api",
    "EvalOutcome": "evaldelta.runner._engine",
    "StoredSuite": "evaldelta.store",
    "TargetError": "evaldelta.errors",
    "RunComparison": "evaldelta.analysis._scorers",
    "RunStore": "evaldelta.store",
    "StoredRun": "evaldelta.store",
    "open_store": "evaldelta.store",
    "Settings": "evaldelta.analysis",
    "MatrixComparison": "evaldelta.analysis._comparison",
    "load": "evaldelta.io",
    "Record": "evaldelta.model",
    "Run": "evaldelta.model",
    "EvalDeltaError": "evaldelta.errors",
    "InputError": "evaldelta.errors",
    "ParseError": "evaldelta.errors",
    "PairingError": "evaldelta.errors",
    "UnknownFormatError": "evaldelta.errors",
    "UsageError": "evaldelta.errors",
    "StoreError": "evaldelta.errors",
    "RunNotFoundError": "evaldelta.errors",
    "MissingDependencyError": "evaldelta.errors",
}

if TYPE_CHECKING:
    from evaldelta import scorers
    from evaldelta.analysis import Analysis, Figures, Settings, Verdict
    from evaldelta.analysis._comparison import Comparison, MatrixComparison
    from evaldelta.analysis._scorers import RunComparison
    from evaldelta.api import compare, compare_matrix, compare_runs, evaluate
    from evaldelta.errors import (
        EvalDeltaError,
        InputError,
        MissingDependencyError,
        PairingError,
        ParseError,
        RunNotFoundError,
        StoreError,
        TargetError,
        UnknownFormatError,
        UsageError,
    )
    from evaldelta.io import load
    from evaldelta.model import Record, Run
    from evaldelta.pairing._pairwise import MatchedCase
    from evaldelta.runner._engine import EvalOutcome
    from evaldelta.store import RunStore, StoredRun, StoredSuite, open_store


def __getattr__(name: str) -> Any:
    if name == "scorers":  # a module of its own: evaldelta.scorers.exact_match
        import importlib

        module_obj = importlib.import_module("evaldelta.scorers")
        globals()[name] = module_obj
        return module_obj
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'evaldelta' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
