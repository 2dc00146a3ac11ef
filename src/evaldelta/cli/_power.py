"""``evaldelta power``: how many cases it takes to tell a change from chance."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from evaldelta.cli._options import add_command, add_reference_options
from evaldelta.cli._output import EXIT_OK, write_output
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from evaldelta.cli._options import Commands

#: The one-line help and the description of ``evaldelta power``.
ABOUT = (
    "cases needed to detect a change, or the smallest change some cases can detect",
    "Power analysis for paired comparisons: cases needed to detect an "
    "effect, or the minimum detectable effect for a number of cases.",
)

HELP = """\
examples:
  evaldelta power --baseline-rate 0.80 --effect 0.03        cases needed to see +3 points
  evaldelta power --baseline-rate 0.80 --effect -0.05       ... to see a 5-point drop
  evaldelta power --baseline-rate 0.80 --cases 500          smallest change 500 cases can see
  evaldelta power baseline.jsonl candidate.jsonl            from the variance of two real runs
"""

EFFECTS = (0.01, 0.02, 0.03, 0.05, 0.10)


def add_parser(commands: Commands) -> None:
    p = add_command(commands, "power", ABOUT, HELP)
    p.add_argument("results", nargs="*", metavar="RESULTS", help="BASELINE CANDIDATE (optional)")
    p.add_argument("-b", "--baseline", metavar="TARGET", help="target of the baseline run")
    p.add_argument("-c", "--candidate", metavar="TARGET", help="target of the candidate run")
    p.add_argument("--input-format", metavar="NAME", help="force the input format (jsonl)")
    add_reference_options(p)
    p.add_argument("--baseline-rate", type=float, metavar="P", help="baseline pass rate, 0-1")
    p.add_argument(
        "--effect",
        type=float,
        metavar="D",
        help="change to detect (0.03 = +3 points; negative for a drop)",
    )
    p.add_argument("--cases", type=int, metavar="N", help="compute the minimum detectable effect")
    p.add_argument("--alpha", type=float, default=0.05, help="two-sided level (default 0.05)")
    p.add_argument("--power", type=float, default=0.8, help="power, 1 - beta (default 0.8)")
    p.add_argument(
        "--correlation",
        type=float,
        default=0.0,
        help="correlation of the two runs' per-case results (default 0)",
    )
    p.add_argument("--attempts", type=int, default=1, help="attempts per case (default 1)")
    p.add_argument(
        "--within-variance",
        type=float,
        metavar="V",
        help="per-attempt variance within a case (lets --attempts shrink the variance)",
    )
    p.add_argument("--pass-threshold", type=float, default=0.5, help=argparse.SUPPRESS)
    p.add_argument("-f", "--format", choices=("table", "json"), default="table")
    p.add_argument("--json", dest="format", action="store_const", const="json")
    p.add_argument("-o", "--output", metavar="FILE", help="write the output to FILE")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from evaldelta.stats import cases_needed, minimum_detectable_effect

    common = {
        "alpha": args.alpha,
        "power": args.power,
        "attempts": args.attempts,
    }
    lines: list[str] = []
    data: dict[str, Any] = {}
    if args.results:
        if len(args.results) != 2 and not (args.baseline and args.candidate):
            raise UsageError(
                "give BASELINE CANDIDATE files (or one file with --baseline/--candidate)"
            )
        return _from_runs(args)
    if args.baseline_rate is None:
        raise UsageError(
            "give --baseline-rate P with --effect D or --cases N, "
            "or two result files to estimate from"
        )
    if args.cases is not None:
        if args.effect is not None:
            raise UsageError(
                "give --effect (cases needed) or --cases (detectable effect), not both"
            )
        r = minimum_detectable_effect(
            args.cases,
            baseline_rate=args.baseline_rate,
            correlation=args.correlation,
            within_variance=args.within_variance,
            **common,
        )
        data = {"minimum_detectable_effect": r.to_dict()}
        effect = (
            "none up to a pass rate of 100%"
            if math.isnan(r.effect)
            else (
                f"{r.effect * 100:+.1f} points ({args.baseline_rate:.1%} -> "
                f"{args.baseline_rate + r.effect:.1%})"
            )
        )
        lines.append(
            f"With {args.cases:,} cases, the smallest change detectable at alpha "
            f"{args.alpha:g} with power {args.power:g} is {effect}."
        )
    else:
        if args.effect is None:
            raise UsageError("give --effect D (e.g. 0.03 for +3 points) or --cases N")
        r = cases_needed(
            args.baseline_rate,
            args.effect,
            correlation=args.correlation,
            within_variance=args.within_variance,
            **common,
        )
        data = {"cases_needed": r.to_dict()}
        lines.append(
            f"To detect {args.effect * 100:+.1f} points ({args.baseline_rate:.1%} -> "
            f"{args.baseline_rate + args.effect:.1%}) at alpha {args.alpha:g} with power "
            f"{args.power:g}: {r.cases:,} cases."
        )
    lines.append("")
    lines.append(f"  {'Effect':>8}  {'Cases needed':>12}")
    table = []
    for d in EFFECTS:
        sign = -1 if (args.effect is not None and args.effect < 0) else 1
        eff = sign * d
        if not 0 < args.baseline_rate + eff < 1:
            continue
        n = cases_needed(
            args.baseline_rate,
            eff,
            correlation=args.correlation,
            within_variance=args.within_variance,
            **common,
        ).cases
        table.append({"effect": eff, "cases": n})
        lines.append(f"  {eff * 100:>+7.0f}p  {n:>12,}")
    lines.append("")
    lines.append(f"Method: {r.method}; correlation {args.correlation:g}, attempts {args.attempts}.")
    data["table"] = table
    _emit(args, lines, data)
    return EXIT_OK


def _from_runs(args: argparse.Namespace) -> int:
    import numpy as np

    from evaldelta.api import compare
    from evaldelta.cli._options import load_for
    from evaldelta.stats import cases_needed, minimum_detectable_effect, paired_variance

    files = args.results
    base = load_for(args, files[0])
    cand = base if len(files) == 1 else load_for(args, files[1])
    c = compare(base, cand, baseline_target=args.baseline, candidate_target=args.candidate)
    if len(c.left) < 2:
        raise UsageError("need at least 2 cases in common to estimate variances")
    a, b = c.left.score, c.right.score
    var_a, var_b, cov, corr = paired_variance(a, b)
    tiny = 1e-20  # float noise of a constant column's variance
    omega2 = var_a + var_b - 2 * cov
    omega2 = omega2 if omega2 > tiny else 0.0
    n = len(a)
    notes: list[str] = []
    # A run whose scores do not vary has no correlation with anything: say so, and plan
    # as for independent runs (correlation 0) rather than print a number that is not one.
    estimable = var_a > tiny and var_b > tiny
    correlation = f"correlation {corr:.2f}" if estimable else "correlation unknown"
    if not estimable:
        corr = 0.0
        notes.append(
            "the correlation cannot be estimated: "
            f"{'the baseline' if var_a <= tiny else 'the candidate'}'s scores do not vary; "
            "taken as 0"
        )
    if omega2 <= 0:
        if var_a + var_b <= tiny:
            raise UsageError(
                f"the scores do not vary in either run ({n:,} common cases), so they say "
                "nothing about how large a change could be seen; give --baseline-rate and "
                "--effect instead"
            )
        notes.append(
            "the per-case differences do not vary (the runs agree case by case), so the "
            "detectable change is worked out as for independent runs (correlation 0)"
        )
        omega2 = var_a + var_b
        correlation += ", taken as 0" if estimable else ""
    mde = minimum_detectable_effect(n, omega2=omega2, alpha=args.alpha, power=args.power)
    lines = [
        f"From {n:,} common cases: score variance {var_a:.4f} (baseline), {var_b:.4f} "
        f"(candidate), {correlation}; variance of the per-case difference {omega2:.4f}.",
        *(f"Note: {note}." for note in notes),
        f"With these {n:,} cases the smallest detectable change in mean score is "
        f"{mde.effect:+.4f} (alpha {args.alpha:g}, power {args.power:g}).",
        "",
        f"  {'Effect':>8}  {'Cases needed':>12}",
    ]
    table = []
    for d in EFFECTS:
        need = math.ceil((mde.effect * math.sqrt(n) / d) ** 2) if omega2 > 0 else 1
        table.append({"effect": d, "cases": need})
        lines.append(f"  {d:>+8.2f}  {need:>12,}")
    rate = float(np.mean(c.left.pass_rate))
    if 0 < rate < 1 and 0 < rate + 0.03 < 1:
        pr = cases_needed(
            rate, 0.03, correlation=max(min(corr, 0.99), -0.99), alpha=args.alpha, power=args.power
        )
        lines.append("")
        lines.append(
            f"For pass rates ({rate:.1%} now), +3 points needs {pr.cases:,} cases at this "
            "correlation."
        )
    data = {
        "cases": n,
        "variance_baseline": var_a,
        "variance_candidate": var_b,
        "covariance": cov,
        "correlation": corr if estimable else None,
        "omega2": omega2,
        "notes": notes,
        "minimum_detectable_effect": mde.to_dict(),
        "table": table,
    }
    _emit(args, lines, data)
    return EXIT_OK


def _emit(args: argparse.Namespace, lines: list[str], data: dict[str, Any]) -> None:
    if args.format == "json":
        import msgspec

        text = msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n"
    else:
        text = "\n".join(lines) + "\n"
    write_output(text, args.output)
