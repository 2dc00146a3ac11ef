"""``evaldelta gate``: turn a comparison into the exit code a CI job acts on.

0 pass (Better, or No change within --margin; Inconclusive and Trade-off pass with a
warning), 1 block (Worse, a
new safety failure, a pass rate under --min-pass-rate, Inconclusive with
--block-inconclusive, or a scorer's significant drop with --block-scorer-regression),
2 cannot judge (different datasets, an interrupted run,
too many infrastructure failures, bad input).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from evaldelta.cli import _options as options
from evaldelta.cli._compare import (
    REPORT_FORMATS,
    load_run,
    render_report,
    shown_runs,
    table_text,
)
from evaldelta.cli._output import EXIT_CANNOT_JUDGE, EXIT_OK, EXIT_REGRESSION, write_output
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from evaldelta.analysis._comparison import Comparison, MatrixComparison
    from evaldelta.analysis._figures import ScorerFigures
    from evaldelta.cli._options import Commands

#: The one-line help and the description of ``evaldelta gate``.
ABOUT = (
    "pass or block a candidate in CI, from a comparison with a baseline",
    "Compare a candidate with a baseline and exit 0 (pass), 1 (block) or 2 (cannot judge).",
)

HELP = """\
exit codes:
  0  pass: Better or No change (--margin), or Inconclusive / Trade-off without new
     safety failures (with a warning)
  1  block: Worse, a new safety failure, a pass rate under --min-pass-rate,
     Inconclusive with --block-inconclusive, or a scorer whose interval lies wholly
     below zero with --block-scorer-regression (without it: a warning)
  2  cannot judge: different datasets, an interrupted run, over 10% infrastructure
     failures, or bad input

examples:
  evaldelta gate baseline.jsonl candidate.jsonl
  evaldelta gate results.jsonl --baseline gpt-4.1 --candidate gpt-5-mini --report report.md
  evaldelta gate results.jsonl --baseline gpt-4.1     every other target against gpt-4.1
                                                    (Holm); blocks if any blocks
  evaldelta gate main.jsonl pr.jsonl --block-inconclusive --min-pass-rate 0.85
  evaldelta gate main.jsonl pr.jsonl --block-scorer-regression
"""


def add_parser(commands: Commands) -> None:
    p = options.add_command(commands, "gate", ABOUT, HELP)
    p.add_argument(
        "results",
        nargs="+",
        metavar="RESULTS",
        help="BASELINE CANDIDATE files, or one combined file with --baseline (and "
        "--candidate for one target only)",
    )
    options.add_input_options(p)
    options.add_statistics_options(p)
    g = p.add_argument_group("gate")
    g.add_argument(
        "--block-inconclusive",
        action="store_true",
        help="block when the verdict is Inconclusive (small drops can hide there)",
    )
    g.add_argument(
        "--block-scorer-regression",
        action="store_true",
        help="block when a scorer's interval lies wholly below zero (else a warning)",
    )
    g.add_argument(
        "--min-pass-rate",
        type=float,
        metavar="RATE",
        help="block when the candidate's pass rate is below RATE (e.g. 0.85)",
    )
    g.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="judge a fixed, seeded sample of N cases (the same ids in both runs)",
    )
    options.add_dataset_option(g)
    g.add_argument(
        "--report",
        metavar="FILE",
        help="write the Markdown report to FILE (also appended to $GITHUB_STEP_SUMMARY)",
    )
    options.add_output_options(p, REPORT_FORMATS)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from evaldelta.api import compare

    files: list[str] = args.results
    if len(files) > 2:
        raise UsageError(f"gate takes two files, or one combined file, got {len(files)}")
    if len(files) == 1 and args.baseline is None:
        raise UsageError(
            "one combined file: give --baseline TARGET (every other target is gated "
            "against it), and --candidate TARGET to gate only that one"
        )
    if len(files) == 1 and args.candidate is None:
        return _run_matrix(args, files[0])
    if len(files) == 1 and args.baseline == args.candidate:
        raise UsageError(f"--baseline and --candidate are both {args.baseline!r}")
    if args.min_pass_rate is not None and not 0 <= args.min_pass_rate <= 1:
        raise UsageError(f"--min-pass-rate must be between 0 and 1, got {args.min_pass_rate}")
    settings = options.settings_from(args)
    base = load_run(args, files[0])
    cand = base if len(files) == 1 else load_run(args, files[1])
    result = compare(base, cand, **options.compare_options(args, settings))
    code, decision = decide_gate(result, args)
    dropped = scorer_regressions(result) if code != EXIT_CANNOT_JUDGE else []
    runs = shown_runs(args, (base, cand))
    del base, cand  # the records, unless the report shows them: free them before rendering

    from evaldelta.report._markdown import render_markdown

    report = render_report(args, result, runs, gate=(code, decision))
    if report is not None:
        text = report
    elif args.format == "json":
        from evaldelta.report._json import render_json

        text = render_json(_with_gate(result, code, decision, dropped))
    else:
        text = table_text(args, result)
    write_output(text, args.output)

    if args.report or os.environ.get("GITHUB_STEP_SUMMARY"):
        _summarise(render_markdown(result, gate=(code, decision)), args)
    if not args.block_scorer_regression:
        for sc in dropped:
            print(f"evaldelta gate: warning: {_dropped(result, sc)}", file=sys.stderr)
    print(f"evaldelta gate: {decision}", file=sys.stderr)
    return code


def _run_matrix(args: argparse.Namespace, path: str) -> int:
    """``gate FILE --baseline T``: every other target of a combined file against T, at
    levels of Holm's step-down, each by the rules of a pairwise gate; blocks when any
    target blocks, cannot judge when none blocks and any cannot be judged."""
    from evaldelta.api import compare_matrix
    from evaldelta.report._markdown import render_matrix_gate_markdown

    if args.sample is not None:
        raise UsageError("--sample is for two runs; a combined file is gated whole")
    if args.allow_dataset_change:
        raise UsageError(
            "--allow-dataset-change is for two runs; in a combined file, cases a target "
            "lacks are named in its warning"
        )
    if args.min_pass_rate is not None and not 0 <= args.min_pass_rate <= 1:
        raise UsageError(f"--min-pass-rate must be between 0 and 1, got {args.min_pass_rate}")
    settings = options.settings_from(args)
    run_ = load_run(args, path)
    matrix = compare_matrix(run_, None, args.baseline, settings=settings, scorer=args.scorer)
    pairs = [p for p in matrix.pairwise if p.baseline == args.baseline]
    if not pairs:
        raise UsageError(
            f"--baseline {args.baseline}: {path} holds no other target to gate against it",
            option="baseline",
        )
    decided = [(p, *decide_gate(p, args)) for p in pairs]
    codes = [code for _, code, _ in decided]
    code = (
        EXIT_REGRESSION
        if EXIT_REGRESSION in codes
        else EXIT_CANNOT_JUDGE
        if EXIT_CANNOT_JUDGE in codes
        else EXIT_OK
    )
    word = {EXIT_OK: "pass", EXIT_REGRESSION: "block", EXIT_CANNOT_JUDGE: "cannot judge"}
    which = [p.candidate for p, each, _ in decided if each == code]
    k = len(pairs)
    if code == EXIT_OK:
        warned = any("with a warning" in why for _, _, why in decided)
        decision = (
            f"pass{', with a warning' if warned else ''}: every one of the {k} targets "
            f"against {args.baseline}"
        )
    else:
        decision = f"{word[code]}: {', '.join(which)} ({len(which)} of {k} against {args.baseline})"
    rows = [(p.candidate, each, why) for p, each, why in decided]
    runs = shown_runs(args, (run_,))
    del run_

    if args.format == "markdown":
        text = render_matrix_gate_markdown(matrix, rows, (code, decision))
    elif args.format == "json":
        from evaldelta.report._json import render_json

        text = render_json(_MatrixGate(matrix, code, decision, decided))
    else:
        report = render_report(args, matrix, runs, gate=(code, decision))
        text = report if report is not None else table_text(args, matrix)
    write_output(text, args.output)
    if args.report or os.environ.get("GITHUB_STEP_SUMMARY"):
        _summarise(render_matrix_gate_markdown(matrix, rows, (code, decision)), args)
    for p, _, why in decided:
        if not args.block_scorer_regression:
            for sc in scorer_regressions(p):
                print(f"evaldelta gate: warning: {p.candidate}: {_dropped(p, sc)}", file=sys.stderr)
        print(f"evaldelta gate: {p.candidate}: {why}", file=sys.stderr)
    print(f"evaldelta gate: {decision}", file=sys.stderr)
    return code


def _summarise(report: str, args: argparse.Namespace) -> None:
    """The Markdown report to --report FILE and to the job summary, when there is one."""
    if args.report:
        write_output(report, args.report)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(report + "\n")
        except OSError as exc:
            # The verdict stands; the summary is a courtesy.
            print(
                f"evaldelta gate: warning: cannot append to GITHUB_STEP_SUMMARY "
                f"({summary}): {exc.strerror or exc}",
                file=sys.stderr,
            )


class _MatrixGate:
    """A matrix's JSON with the gate's decision first, overall and per target."""

    def __init__(
        self,
        matrix: MatrixComparison,
        code: int,
        decision: str,
        decided: list[tuple[Comparison, int, str]],
    ) -> None:
        self.matrix, self.code, self.decision, self.decided = matrix, code, decision, decided

    def to_dict(self) -> dict[str, Any]:
        targets = [
            {
                "target": p.candidate,
                "verdict": p.verdict.kind if p.test_ids else None,
                **_gate_entry(each, why, scorer_regressions(p)),
            }
            for p, each, why in self.decided
        ]
        return {
            "gate": {**_gate_entry(self.code, self.decision), "targets": targets},
            **self.matrix.to_dict(),
        }


def _gate_entry(
    code: int, decision: str, dropped: list[ScorerFigures] | None = None
) -> dict[str, Any]:
    """A gate decision as JSON: exit code, result word, reason (and scorers that dropped)."""
    labels = {EXIT_OK: "pass", EXIT_REGRESSION: "block", EXIT_CANNOT_JUDGE: "cannot judge"}
    entry: dict[str, Any] = {"exit_code": code, "result": labels[code], "reason": decision}
    if dropped is not None:
        entry["scorer_regressions"] = [
            {"scorer": sc.name, "delta": sc.delta.to_dict()} for sc in dropped
        ]
    return entry


class _WithGate:
    """A comparison's JSON with the gate's decision first."""

    def __init__(
        self, result: Comparison, code: int, decision: str, dropped: list[ScorerFigures]
    ) -> None:
        self.result, self.code, self.decision, self.dropped = result, code, decision, dropped

    def to_dict(self) -> dict[str, Any]:
        return {
            "gate": _gate_entry(self.code, self.decision, self.dropped),
            **self.result.to_dict(),
        }


def _with_gate(
    result: Comparison, code: int, decision: str, dropped: list[ScorerFigures]
) -> _WithGate:
    return _WithGate(result, code, decision, dropped)


def scorer_regressions(result: Comparison) -> list[ScorerFigures]:
    """The scorers whose interval of the change lies wholly below zero: a significant
    drop of one scorer that the overall score can hide."""
    return [sc for sc in result.figures.scorers if sc.delta.ci_high < 0]


def _dropped(result: Comparison, sc: ScorerFigures) -> str:
    """``scorer factual dropped: -10.0 points, 95% CI [-15.0, -5.0]``, as compare shows it."""
    from evaldelta.analysis._verdict import level_text

    scale, digits, unit = (100, 1, " points") if result.figures.points else (1, 3, "")
    iv = sc.delta
    return (
        f"scorer {sc.name} dropped: {iv.estimate * scale:+.{digits}f}{unit}, "
        f"{level_text(iv.level)} CI [{iv.ci_low * scale:+.{digits}f}, "
        f"{iv.ci_high * scale:+.{digits}f}]"
    )


def decide_gate(result: Comparison, args: argparse.Namespace) -> tuple[int, str]:
    """The exit code and the one-line reason for it (the policy of this command): from
    the verdict (Worse blocks), not from the mean delta alone."""
    refusals = result.refusals
    if refusals:
        return EXIT_CANNOT_JUDGE, "cannot judge: " + "; ".join(p.message for p in refusals)
    if not result.test_ids:
        return EXIT_CANNOT_JUDGE, "cannot judge: no cases in common"
    verdict = result.verdict
    figures = result.figures
    if verdict.kind == "Worse":
        return EXIT_REGRESSION, f"block: {verdict.sentence()}"
    rate = figures.pass_rates.candidate.estimate
    if args.min_pass_rate is not None and rate < args.min_pass_rate - 1e-9:
        return EXIT_REGRESSION, (
            f"block: the candidate's pass rate {rate:.1%} is under --min-pass-rate "
            f"{args.min_pass_rate:.1%}"
        )
    if verdict.kind == "Inconclusive" and args.block_inconclusive:
        return EXIT_REGRESSION, f"block (--block-inconclusive): {verdict.sentence()}"
    dropped = scorer_regressions(result)
    if dropped and args.block_scorer_regression:
        return EXIT_REGRESSION, "block (--block-scorer-regression): " + "; ".join(
            _dropped(result, sc) for sc in dropped
        )
    if verdict.kind == "Inconclusive":
        return EXIT_OK, f"pass, with a warning: {verdict.sentence()}"
    if verdict.kind == "Trade-off":
        return EXIT_OK, f"pass, with a warning: {verdict.sentence()}"
    return EXIT_OK, f"pass: {verdict.sentence()}"
