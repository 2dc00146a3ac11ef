"""Options shared by the commands that compare runs (compare, gate)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from evaldelta.cli._progress import add_progress_option, progress_line
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from typing import TypeAlias

    from evaldelta.analysis._settings import CompareOptions, Settings
    from evaldelta.cli._output import Parser
    from evaldelta.model import Run

    #: What ``add_subparsers()`` returns: the subcommands of ``evaldelta``.
    Commands: TypeAlias = argparse._SubParsersAction[Parser]


#: What may decide the verdict (``--metric``).
METRICS = ("score", "pass_rate")
METRIC_HELP = "what decides the verdict: the mean score (default) or the pass rate"


def add_input_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-b", "--baseline", metavar="TARGET", help="target to use as the baseline")
    p.add_argument("-c", "--candidate", metavar="TARGET", help="target to use as the candidate")
    p.add_argument(
        "--input-format",
        metavar="NAME",
        help="read the results as this format instead of guessing from the content",
    )
    p.add_argument(
        "--map",
        metavar="FIELD=COLUMN,...",
        action="append",
        help="map the model's fields onto a CSV's columns or a JSONL's JSON paths, e.g. "
        "test_id=question_id,score=correct,target=model (repeatable)",
    )
    p.add_argument(
        "--scorer",
        metavar="NAME",
        help="compare on this scorer's scores instead of the overall score",
    )
    add_reference_options(p)


def add_reference_options(p: argparse.ArgumentParser) -> None:
    """``--store`` for RESULTS given as run references, and ``--progress``."""
    from evaldelta.cli._store import REFERENCE_STORE_HELP

    p.add_argument("--store", metavar="PATH", help=REFERENCE_STORE_HELP)
    add_progress_option(p)


def add_dataset_option(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument(
        "--allow-dataset-change",
        action="store_true",
        help="compare the common cases of runs whose datasets differ (cases whose input "
        "changed left out), with a warning instead of a refusal",
    )


def add_command(
    commands: Commands, name: str, about: tuple[str, str], epilog: str, **extra: Any
) -> argparse.ArgumentParser:
    """A subcommand: ``about`` is its one-line help and its description; ``epilog``
    (examples) is shown as written."""
    summary, description = about
    parser: argparse.ArgumentParser = commands.add_parser(
        name,
        help=summary,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        **extra,
    )
    return parser


def add_statistics_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("statistics")
    g.add_argument(
        "-t",
        "--threshold",
        type=float,
        default=0.1,
        help="score delta that counts as a win or a loss (default: 0.1)",
    )
    g.add_argument(
        "--pass-threshold",
        type=float,
        default=0.5,
        help="an attempt without a 'passed' flag passes at this score (default: 0.5)",
    )
    g.add_argument(
        "--confidence",
        type=float,
        default=0.95,
        help="confidence level of the intervals (default: 0.95)",
    )
    g.add_argument(
        "--resamples", type=int, default=10_000, help="bootstrap resamples (default: 10000)"
    )
    g.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap, for reproducible output"
    )
    g.add_argument(
        "--cluster-by",
        metavar="FIELD",
        help="resample whole groups of cases sharing FIELD (e.g. category)",
    )
    g.add_argument(
        "--max-slowdown",
        type=float,
        default=0.10,
        help="latency growth beyond which Better becomes Trade-off (default: 0.10)",
    )
    g.add_argument(
        "--max-cost-increase",
        type=float,
        default=0.10,
        help="cost growth beyond which Better becomes Trade-off (default: 0.10)",
    )
    g.add_argument(
        "--margin",
        type=float,
        metavar="POINTS",
        default=1.0,
        help="a change smaller than this many points does not matter: an interval within "
        "+/-POINTS, or runs in which no case changed, is No change (default: 1; 0 for no "
        "such verdict)",
    )
    g.add_argument("--metric", choices=METRICS, default="score", help=METRIC_HELP)
    g.add_argument(
        "--min-cases",
        type=int,
        default=20,
        metavar="N",
        help="with --sequential: no settle point before N cases (default: 20)",
    )


def add_output_options(p: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    p.add_argument("-f", "--format", choices=formats, default="table", help="output format")
    p.add_argument(
        "--json", dest="format", action="store_const", const="json", help="same as --format json"
    )
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE")
    p.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the table (auto: on a terminal, unless NO_COLOR is set)",
    )
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)


def compare_options(args: argparse.Namespace, settings: Settings) -> CompareOptions:
    """The keyword parameters of :func:`evaldelta.compare` the options ask for."""
    return {
        "baseline_target": args.baseline,
        "candidate_target": args.candidate,
        "settings": settings,
        "allow_dataset_change": args.allow_dataset_change,
        "sample": getattr(args, "sample", None),
        "scorer": args.scorer,
    }


def settings_from(args: argparse.Namespace) -> Any:
    """The statistics settings the options ask for."""
    from evaldelta.analysis import Settings

    # Rounded so that 0.95 gives alpha 0.05, not 0.050000000000000044; a level within
    # 1e-12 of 0 or 1 would round to an alpha of 0 or 1, and is refused here too.
    alpha = round(1 - args.confidence, 12)
    if not 0 < args.confidence < 1:
        raise UsageError(f"--confidence must be between 0 and 1 (e.g. 0.95), got {args.confidence}")
    if not 0 < alpha < 1:
        raise UsageError(
            "--confidence must be at least 1e-12 away from 0 and from 1 (e.g. 0.95), got "
            f"{args.confidence}"
        )
    return Settings(
        # the options whose values are the settings' as given (the library checks them)
        **{name: getattr(args, name) for name in _SETTINGS_AS_GIVEN},
        alpha=alpha,
        margin=_margin(args.margin),
        sequential=bool(getattr(args, "sequential", False)),
        min_cases=_min_cases(args.min_cases),
    )


#: The settings an option of the same name sets, value as given.
_SETTINGS_AS_GIVEN = (
    "threshold",
    "pass_threshold",
    "resamples",
    "seed",
    "cluster_by",
    "max_slowdown",
    "max_cost_increase",
    "metric",
)


def _margin(points: float) -> float | None:
    import math

    if not (math.isfinite(points) and points >= 0):
        raise UsageError(f"--margin must be a number of points >= 0 (e.g. 1), got {points:g}")
    return points / 100 if points > 0 else None


def _min_cases(n: int) -> int:
    if n < 1:
        raise UsageError(f"--min-cases must be a whole number >= 1, got {n}")
    return n


def mapping_from(args: argparse.Namespace) -> dict[str, str] | None:
    """The ``--map`` options merged into one mapping (a field mapped twice is an error)."""
    specs = getattr(args, "map", None)
    if not specs:
        return None
    from evaldelta.io._mapped import parse_mapping

    merged: dict[str, str] = {}
    for spec in specs:
        for field, column in parse_mapping(spec).items():
            if field in merged and merged[field] != column:
                raise UsageError(
                    f"--map gives {field!r} twice ({merged[field]!r} and {column!r}); keep one"
                )
            merged[field] = column
    return merged


def load_for(
    args: argparse.Namespace,
    path: str,
    *,
    keep_text: bool = False,
    grouped: float | None = None,
) -> Run:
    """Load a results file as the options say. A run store file is read as its latest
    run, ``store.db:NAME`` or ``store.db:ID`` as the run named. An argument that is no
    existing path is looked up in the run store of the options: a number as a run id,
    anything else as a run name (the latest run of that name). ``grouped``: the pass
    threshold at which a large file may be read already grouped per case (see
    :func:`evaldelta.io.load`)."""
    import os

    from evaldelta.cli._store import run_from_store_file, store_file_ref
    from evaldelta.io import load

    cluster_by = getattr(args, "cluster_by", None)
    extra = (cluster_by,) if cluster_by and cluster_by != "category" else ()
    in_store = store_file_ref(path)
    if in_store is not None:
        file, ref = in_store
        return run_from_store_file(args, file, ref, extra, keep_text=keep_text)
    if not os.path.lexists(path):
        from evaldelta.cli._store import stored_run

        stored = stored_run(args, path, extra, keep_text=keep_text)
        if stored is not None:
            return stored
    with progress_line(args) as line, line.ticking(f"reading {path}"):
        return load(
            path,
            format=args.input_format,
            keep_text=keep_text,
            extra_fields=extra,
            mapping=mapping_from(args),
            grouped=grouped,
        )
