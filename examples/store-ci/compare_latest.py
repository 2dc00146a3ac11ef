"""Block a deployment when the latest run of an evaluation regressed against the one before.

The CI example of the run-store seed, against evaldelta's Python API: open the run
store, take the last two runs stored under a name, compare them scorer by scorer with
``evaldelta.compare_runs``, and

- exit 1, naming the scorers that regressed (mean delta below -0.05), on a regression;
- exit 0 when no scorer regressed, or when there are fewer than two runs to compare;
- exit 2 when the runs cannot be compared (no store, no case in common, ...).

    python examples/store-ci/compare_latest.py qa-eval --store .evaldelta/runs.db

The store is --store, else $EVALDELTA_STORE, else .evaldelta/runs.db (as for the
``evaldelta`` command).
"""

from __future__ import annotations

import argparse
import os
import sys

import evaldelta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Compare the last two stored runs of an evaluation; exit 1 on a regression."
    )
    parser.add_argument("name", help="the name the evaluation's runs are stored under")
    parser.add_argument(
        "--store",
        default=os.environ.get("EVALDELTA_STORE") or os.path.join(".evaldelta", "runs.db"),
        help="the run store (default: $EVALDELTA_STORE, else .evaldelta/runs.db)",
    )
    parser.add_argument("--tolerance", type=float, default=0.01)
    parser.add_argument("--regression-threshold", type=float, default=0.05)
    args = parser.parse_args(argv)

    if not os.path.exists(args.store):
        print(f"Not enough runs to compare: no run store at {args.store} yet")
        return 0
    try:
        with evaldelta.open_store(args.store, create=False) as store:
            runs = store.list_runs(name=args.name, limit=2)  # newest first
            if len(runs) < 2:
                stored = f"{len(runs)} run" + ("" if len(runs) == 1 else "s")
                print(f"Not enough runs to compare: {stored} named {args.name!r}")
                return 0
            candidate, baseline = runs
            result = evaldelta.compare_runs(
                store,
                baseline.id,
                candidate.id,
                tolerance=args.tolerance,
                regression_threshold=args.regression_threshold,
            )
    except evaldelta.EvalDeltaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    print(f"{result.baseline} -> {result.candidate}: {result.total_cases_compared} cases compared")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for scorer, summary in result.scorer_summaries.items():
        mean = "n/a" if summary.mean_delta is None else f"{summary.mean_delta:+.3f}"
        print(
            f"  {scorer}: mean delta {mean} ({summary.improved_count} improved, "
            f"{summary.regressed_count} regressed, {summary.unchanged_count} unchanged)"
        )

    if result.regression.regressed:
        print("Regression detected!", file=sys.stderr)
        for scorer, details in result.regression.details.items():
            if details.exceeds:
                print(f"  - {scorer}: {details.mean_delta:.3f}", file=sys.stderr)
        return 1
    print("No regressions detected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
