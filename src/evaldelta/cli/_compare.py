"""``evaldelta compare``: pairwise (two files, or two targets of one) or N-way matrix."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from evaldelta.cli._options import (
    add_command,
    add_dataset_option,
    add_input_options,
    add_output_options,
    add_statistics_options,
    compare_options,
    load_for,
    settings_from,
)
from evaldelta.cli._output import (
    EXIT_CANNOT_JUDGE,
    EXIT_OK,
    EXIT_REGRESSION,
    can_show,
    use_color,
    write_output,
)
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from evaldelta.analysis._comparison import Comparison, MatrixComparison
    from evaldelta.cli._options import Commands
    from evaldelta.model import Run

#: The one-line help and the description of ``evaldelta compare``.
ABOUT = (
    "compare evaluation runs case by case, with statistics and a verdict",
    "Compare evaluation runs case by case: deltas, wins, losses and ties, "
    "confidence intervals, exact McNemar, and a verdict.",
)

HELP = """\
modes:
  evaldelta compare BASELINE CANDIDATE            two files, pairwise
  evaldelta compare RESULTS --baseline A --candidate B
                                                  two targets of one combined file
  evaldelta compare RESULTS [--targets A B ...] [--baseline A]
                                                  N-way matrix of a combined file
  evaldelta compare BASELINE CANDIDATE --sequential
                                                  where a run stopped when settled
                                                  would have stopped, and the saving

exit codes:
  0  candidate equal or better (mean delta >= 0); matrix without --baseline
  1  regression: mean delta < 0 (matrix: any target below the baseline)
  2  cannot judge: bad input, bad options, or no test ids in common
"""


#: Output formats of compare and gate.
REPORT_FORMATS = ("table", "json", "markdown", "html", "junit")


def add_parser(commands: Commands) -> None:
    p = add_command(commands, "compare", ABOUT, HELP)
    p.add_argument("results", nargs="*", metavar="RESULTS", help="one combined file, or two files")
    add_input_options(p)
    p.add_argument(
        "--targets",
        nargs="+",
        action="extend",
        metavar="TARGET",
        help="targets to include in the matrix, in this order",
    )
    add_statistics_options(p)
    p.add_argument(
        "--sequential",
        action="store_true",
        help="also take the cases one by one in the order they ran, with an anytime-valid "
        "confidence sequence: where a run stopped when settled would have stopped, and "
        "what it would have saved (JSON: the path of the sequence)",
    )
    add_dataset_option(p)
    add_output_options(p, REPORT_FORMATS)
    p.set_defaults(run=run)


def load_run(args: argparse.Namespace, path: str) -> Run:
    """Load a results file as the options say; with inputs and outputs for HTML, which
    shows them (the other formats never do, so they skip the cost). A large file may be
    read already grouped per case (the DuckDB engine) when nothing asked for needs its
    records: no report that shows them, no scorer to score by, no sequential replay (a
    confidence sequence needs a run's recorded order), no field to cluster by."""
    html = args.format == "html"
    needs_records = (
        html
        or getattr(args, "scorer", None) is not None
        or getattr(args, "sequential", False)
        or getattr(args, "cluster_by", None) not in (None, "category")
    )
    grouped = None if needs_records else args.pass_threshold
    return load_for(args, path, keep_text=html, grouped=grouped)


def render_report(
    args: argparse.Namespace,
    result: Comparison | MatrixComparison,
    runs: tuple[Run, ...],
    gate: tuple[int, str] | None = None,
) -> str | None:
    """The report in a Markdown, HTML or JUnit --format, or None for the other formats."""
    from evaldelta.analysis._comparison import MatrixComparison

    if args.format == "markdown":
        from evaldelta.report._markdown import render_markdown, render_matrix_markdown

        if isinstance(result, MatrixComparison):
            return render_matrix_markdown(result)
        return render_markdown(result, gate=gate)
    if args.format == "html":
        from evaldelta.report._html import render_html

        return render_html(result, runs=runs)
    if args.format == "junit":
        from evaldelta.report._junit import render_junit

        return render_junit(result, gate=gate)
    return None


def run(args: argparse.Namespace) -> int:
    files: list[str] = args.results
    if not files:
        hint = (
            "; put it before --targets (evaldelta compare RESULTS --targets A B)"
            if args.targets
            else ""
        )
        raise UsageError(f"no results file given: give one combined file, or two files{hint}")
    if len(files) > 2:
        raise UsageError(
            f"compare takes one combined file or two files, got {len(files)}; "
            "put several targets in one file to compare them all at once"
        )
    if args.candidate is not None and args.baseline is None and len(files) == 1:
        raise UsageError("--candidate needs --baseline (the target to compare it with)")
    if len(files) == 1 and args.candidate is not None and args.candidate == args.baseline:
        raise UsageError(
            f"--baseline and --candidate are both {args.baseline!r}: "
            "a target compared with itself tells nothing"
        )

    settings = settings_from(args)

    def load(path: str) -> Run:
        return load_run(args, path)

    if len(files) == 2:
        if args.targets:
            raise UsageError("--targets is for the matrix of one combined file, not for two files")
        from evaldelta.api import compare

        runs = (load(files[0]), load(files[1]))
        result = compare(runs[0], runs[1], **compare_options(args, settings))
        shown = shown_runs(args, runs)
        del runs  # the records, unless the report shows them: free them before rendering
        return _emit(args, result, runs=shown)

    run_ = load(files[0])
    if args.candidate is not None:
        if args.targets:
            raise UsageError(
                "--targets is for the matrix; with --baseline and --candidate, drop --targets"
            )
        from evaldelta.api import compare

        result = compare(run_, run_, **compare_options(args, settings))
        shown = shown_runs(args, (run_,))
        del run_  # the records, unless the report shows them: free them before rendering
        return _emit(args, result, runs=shown)

    from evaldelta.api import compare_matrix

    matrix = compare_matrix(
        run_, args.targets, args.baseline, settings=settings, scorer=args.scorer
    )
    shown = shown_runs(args, (run_,))
    del run_  # the records, unless the report shows them: free them before rendering
    return _emit(args, matrix, runs=shown)


def shown_runs(args: argparse.Namespace, runs: tuple[Run, ...]) -> tuple[Run, ...]:
    """The runs a report needs beside the result: the HTML report shows their records;
    the other formats need none, so a million records need not outlive the figures."""
    return runs if args.format == "html" else ()


def _emit(
    args: argparse.Namespace, result: Comparison | MatrixComparison, *, runs: tuple[Run, ...]
) -> int:
    from evaldelta.analysis._comparison import Comparison

    if isinstance(result, Comparison) and not result.test_ids:
        # Nothing to show: one line, not a report of nothing.
        return _exit_code(result)
    report = render_report(args, result, runs)
    if report is not None:
        text = report
    elif args.format == "json":
        from evaldelta.report._json import render_json

        text = render_json(result)
        if args.output is None and not can_show(text):
            # JSON is UTF-8 by definition, whatever the terminal's encoding.
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode("utf-8"))
            sys.stdout.flush()
            return _exit_code(result)
    else:
        text = table_text(args, result)
    write_output(text, args.output)
    return _exit_code(result)


def table_text(args: argparse.Namespace, result: Comparison | MatrixComparison) -> str:
    """The terminal table of ``result``: colour and Unicode marks where they show."""
    from evaldelta.analysis._comparison import MatrixComparison
    from evaldelta.report._table import render_matrix_table, render_table

    # Output to a file gets colour only when asked for explicitly.
    color = use_color(args.color, None if args.output else sys.stdout)
    unicode = args.output is not None or can_show("✓✗→─Δ")
    if isinstance(result, MatrixComparison):
        return render_matrix_table(result, color=color, unicode=unicode)
    return render_table(result, color=color, unicode=unicode)


def _exit_code(result: Comparison | MatrixComparison) -> int:
    """0 pass, 1 regression (a mean delta below 0: the specs' rule, not the verdict),
    2 cannot judge (nothing in common to compare)."""
    from evaldelta.analysis._comparison import Comparison

    if isinstance(result, Comparison):
        if not result.test_ids:
            _cannot_judge(f"no test ids in common between {result.baseline} and {result.candidate}")
            return EXIT_CANNOT_JUDGE
        return EXIT_REGRESSION if result.regressed else EXIT_OK
    if result.baseline is None:
        return EXIT_OK
    if result.regressions:
        # A known regression outranks a target that could not be judged.
        return EXIT_REGRESSION
    empty = [p.candidate for p in result.pairwise if not p.test_ids]
    if empty:
        _cannot_judge(
            f"no test ids in common between baseline {result.baseline} and {', '.join(empty)}"
        )
        return EXIT_CANNOT_JUDGE
    return EXIT_OK


def _cannot_judge(message: str) -> None:
    print(
        f"evaldelta: error: {message}; nothing to compare (are these runs of the same eval?)",
        file=sys.stderr,
    )
