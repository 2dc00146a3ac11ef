"""Markdown for a pull-request comment or a CI job summary (GitHub-flavoured).

It formats the result it is given; every figure comes from the analysis (or, for the
N-way matrix, from the :class:`~evaldelta.analysis._comparison.MatrixComparison`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evaldelta.analysis._verdict import format_p, level_text
from evaldelta.pairing._pairwise import MatchedCase
from evaldelta.report._text import (
    METRIC_FORMATS,
    Matrix,
    Pairwise,
    analysis_of,
    holm_line,
    method_text,
    plural,
    relative_suffix,
    signed_metric,
)

if TYPE_CHECKING:
    from evaldelta.analysis import Analysis
    from evaldelta.stats import Interval

__all__ = [
    "GATE_WORDS",
    "MatrixGateRow",
    "changed_cases",
    "comparison_row",
    "count_lines",
    "escape",
    "figure_rows",
    "mcnemar_line",
    "render_markdown",
    "render_matrix_markdown",
]

#: The gate's exit code as one word, for people.
GATE_WORDS = {0: "pass", 1: "block", 2: "cannot judge"}
#: Most per-case rows a report lists; the rest are counted (the JSON has them all).
CASE_LIMIT = 500
#: Matrices with more tests than this fold into <details>.
FOLD_MATRIX_ABOVE = 30

_ESCAPES = str.maketrans(
    {
        "\\": "\\\\",
        "|": "\\|",
        "`": "\\`",
        "*": "\\*",
        "~": "\\~",
        "[": "\\[",
        "]": "\\]",
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
    }
)


#: An underscore that could open or close emphasis: not inside a word (GFM leaves
#: ``long_chain`` alone, so ids keep their plain look there).
_EMPHASIS_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def escape(text: str) -> str:
    """``text`` safe inside a Markdown table cell or a line of prose.

    Pipes, backticks, emphasis, strike-through and link brackets are backslash-escaped;
    ``&``, ``<`` and ``>`` become entities, so HTML in an id shows as text. Line
    breaks (which would end a table row) become spaces.
    """
    out = _EMPHASIS_UNDERSCORE.sub(r"\\_", text.translate(_ESCAPES))
    return " ".join(out.split())


def _num(x: float, spec: str) -> str:
    return "n/a" if math.isnan(x) else format(x, spec)


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:.1f}%"


def _ci(iv: Interval, scale: float, digits: int) -> str:
    if math.isnan(iv.ci_low):
        return "n/a"
    if iv.n >= 2 and iv.ci_high - iv.ci_low < 1e-12 * max(1.0, abs(iv.estimate)):
        return "none: nothing varies"
    return f"[{iv.ci_low * scale:+.{digits}f}, {iv.ci_high * scale:+.{digits}f}]"


def figure_rows(a: Analysis) -> list[tuple[str, str, str, str, str]]:
    """The headline figures as text: (what, baseline, candidate, change, interval).

    Shared by the Markdown and the HTML report so both read the same.
    """
    f = a.figures
    rows: list[tuple[str, str, str, str, str]] = []
    seq = a.sequential
    if seq is not None and seq.record is not None:
        # The run stopped (or could have) when settled: only the sequence is valid.
        scale, digits = (100, 1) if f.points else (1, 3)
        rows.append(
            (
                "Mean score",
                _num(f.baseline_mean, ".3f"),
                _num(f.candidate_mean, ".3f"),
                f"{_num(f.score.estimate * scale, f'+.{digits}f')}{' points' if f.points else ''}",
                f"{_ci(seq.interval, scale, digits)} (confidence sequence)",
            )
        )
    elif f.points:
        rows.append(
            (
                "Mean score",
                _num(f.baseline_mean, ".3f"),
                _num(f.candidate_mean, ".3f"),
                f"{_num(f.score.estimate * 100, '+.1f')} points",
                _ci(f.score, 100, 1),
            )
        )
    else:
        rows.append(
            (
                "Mean score",
                _num(f.baseline_mean, ".4g"),
                _num(f.candidate_mean, ".4g"),
                _num(f.score.estimate, "+.4g"),
                _ci(f.score, 1, 3),
            )
        )
    pr = f.pass_rates
    rows.append(
        (
            "Pass rate",
            _pct(pr.baseline.estimate),
            _pct(pr.candidate.estimate),
            f"{_num(pr.change.estimate * 100, '+.1f')} points",
            _ci(pr.change, 100, 1),
        )
    )
    for m in f.metrics:
        label, fmt = METRIC_FORMATS[m.name]
        if m.name == "latency_ms":
            label += " (excluding waits)"
        rel = relative_suffix(m.relative)
        ci = (
            _ci(m.delta, 1, 0)
            if _ci(m.delta, 1, 0) in ("n/a", "none: nothing varies")
            else f"[{signed_metric(m.delta.ci_low, fmt)}, {signed_metric(m.delta.ci_high, fmt)}]"
        )
        rows.append(
            (
                label,
                fmt(m.baseline_mean),
                fmt(m.candidate_mean),
                f"{signed_metric(m.delta.estimate, fmt)}{rel}",
                ci,
            )
        )
    return rows


def mcnemar_line(a: Analysis) -> str:
    """McNemar's counts and p-value, and how the mean score's interval was made."""
    f = a.figures
    mc = f.mcnemar
    method = method_text(f.score)
    return (
        f"McNemar (exact, two-sided): {mc.improved} improved, {mc.regressed} regressed, "
        f"{format_p(mc.pvalue)} ({f.partly_changed} more changed only partly). "
        f"Mean score interval: {method}."
    )


def same_change(c: Pairwise) -> str | None:
    """``every case changed by exactly +20.0 points`` (or ``no case changed``) when every
    matched case's delta is the same, over two cases or more; None otherwise."""
    a = analysis_of(c)
    n = len(c.delta)
    if a is None or n < 2 or float(c.delta.max() - c.delta.min()) > 1e-12:
        return None
    d = float(c.delta[0])
    if abs(d) < 1e-12:
        return f"no case changed: all {n:,} scored the same in both runs"
    if a.figures.points:
        return f"every case changed by exactly {d * 100:+.1f} points"
    return f"every case changed by exactly {d:+.4g}"


def same_change_note(same: str, score: Interval) -> str:
    """What an interval means when every case changed by the same."""
    if score.ci_high - score.ci_low < 1e-12:
        why = "the interval has no width because nothing varies, not because the change is certain"
    else:
        why = (
            f"the interval still leaves room for chance: {score.n:,} "
            f"{score.units} say little about the next ones"
        )
    return f"{same[:1].upper()}{same[1:]}: {why}."


def sequential_line(a: Analysis) -> str | None:
    """Where the comparison's confidence sequence settled (or, for a run stopped
    early, that the verdict comes from it), in one sentence; None without one."""
    if a.sequential is None:
        return None
    return a.sequential.sentence(a.figures.points)


def changed_cases(c: Pairwise) -> list[MatchedCase]:
    """Wins and losses, regressions first (largest drop first), then improvements."""
    changed = [m for m in c.matched() if m.outcome != "tie"]
    order = {"loss": 0, "win": 1}
    changed.sort(key=lambda m: (order[m.outcome], m.delta if m.outcome == "loss" else -m.delta))
    return changed


def count_lines(c: Pairwise) -> list[str]:
    """Cases compared, wins, losses, ties and the mean delta; then the cases not
    compared, if any. Plain text (numbers only), shared with the HTML summary."""
    s = c.summary
    lines = [
        f"{plural(s.matched, 'case', 'cases')} compared: {plural(s.wins, 'win', 'wins')}, "
        f"{plural(s.losses, 'loss', 'losses')}, {plural(s.ties, 'tie', 'ties')} "
        f"(threshold {c.threshold:g}); mean delta {s.mean_delta:+.3f}."
    ]
    only = [
        plural(len(ids), f"case only in the {side}", f"cases only in the {side}")
        for ids, side in ((c.unmatched_baseline, "baseline"), (c.unmatched_candidate, "candidate"))
        if ids
    ]
    if c.not_run:
        shown = ", ".join(c.not_run[:5]) + (
            f" and {len(c.not_run) - 5} more" if len(c.not_run) > 5 else ""
        )
        only.append(
            plural(len(c.not_run), "case", "cases")
            + f" lost to infrastructure failures on one side ({shown})"
        )
    if only:
        lines.append(f"Not compared: {', '.join(only)}.")
    return lines


def render_markdown(c: Pairwise, *, gate: tuple[int, str] | None = None) -> str:
    """The comparison as Markdown: verdict, figures, categories, per-case changes."""
    a = analysis_of(c)
    lines: list[str] = []
    title = f"{escape(c.baseline)} → {escape(c.candidate)}"
    if a is None:
        lines.append(f"## evaldelta: {title}")
    else:
        lines.append(f"## evaldelta: {a.verdict.kind} ({title})")
    lines.append("")
    if gate is not None:
        code = gate[0]
        lines.append(
            f"**Gate: {GATE_WORDS.get(code, str(code))}** (exit code {code}). {escape(gate[1])}"
        )
        lines.append("")
    if a is not None:
        for p in a.problems:
            lines.append(f"> **Warning:** {escape(p.message)}")
        if a.problems:
            lines.append("")
        lines.append(f"**Verdict: {a.verdict.kind}.** {escape(a.verdict.reason)}")
        lines.append("")
        f = a.figures
        lines.append(f"| | Baseline | Candidate | Change | {level_text(f.level)} CI |")
        lines.append("| --- | ---: | ---: | ---: | --- |")
        lines.extend(f"| {' | '.join(row)} |" for row in figure_rows(a))
        lines.append("")
        same = same_change(c)
        if same is not None:
            lines.append(same_change_note(same, f.score))
            lines.append("")
        lines.append(mcnemar_line(a))
        sequential = sequential_line(a)
        if sequential is not None:
            lines.append("")
            lines.append(f"**Sequential:** {escape(sequential)}")
        if a.differs_in:
            lines.append("")
            # Not as code spans: a backslash escape would show there as typed.
            lines.append("Differs in: " + ", ".join(escape(k) for k in a.differs_in))
        if f.categories:
            lines.append("")
            lines.append("**Categories that moved** (leads to investigate, not proof):")
            lines.append("")
            lines.append("| Category | Baseline | Candidate | Cases |")
            lines.append("| --- | ---: | ---: | ---: |")
            for mv in f.categories[:10]:
                lines.append(
                    f"| {escape(mv.category)} | {_pct(mv.baseline_rate)} | "
                    f"{_pct(mv.candidate_rate)} | {mv.cases} |"
                )
            if len(f.categories) > 10:
                lines.append("")
                lines.append(f"... and {len(f.categories) - 10} more (see the JSON output).")
    lines.append("")
    s = c.summary
    lines.extend(count_lines(c))
    changed = changed_cases(c)
    if changed:
        lines.append("")
        lines.append(
            f"<details><summary>Per-case changes: "
            f"{plural(s.losses, 'regression', 'regressions')}, "
            f"{plural(s.wins, 'improvement', 'improvements')}</summary>"
        )
        lines.append("")
        lines.append("| Test ID | Baseline | Candidate | Delta | Result |")
        lines.append("| --- | ---: | ---: | ---: | --- |")
        for case in changed[:CASE_LIMIT]:
            result = "regression" if case.outcome == "loss" else "improvement"
            lines.append(
                f"| {escape(case.test_id)} | {case.score1:.2f} | {case.score2:.2f} | "
                f"{case.delta:+.2f} | {result} |"
            )
        if len(changed) > CASE_LIMIT:
            lines.append("")
            lines.append(f"... and {len(changed) - CASE_LIMIT} more (see the JSON output).")
        lines.append("")
        lines.append("</details>")
    return "\n".join(lines) + "\n"


def comparison_row(
    p: Pairwise, shared: str | None = "95%"
) -> tuple[str, str, str, str, str, str, str]:
    """One pairwise comparison of a matrix as text: (label, wins, losses, ties,
    mean delta, interval, verdict); the label is not escaped. ``shared``: the level all
    rows share, or None to write each interval's own."""
    s = p.summary
    label = f"{p.baseline} → {p.candidate}"
    if not p.test_ids:
        return (label, "0", "0", "0", "n/a", "n/a", "cannot judge: no tests in common")
    pa = analysis_of(p)
    ci, verdict = "", ""
    if pa is not None:
        scale, digits = (100, 1) if pa.figures.points else (1, 3)
        ci = _ci_at(pa, scale, digits, shared)
        verdict = pa.verdict.kind
    return (label, str(s.wins), str(s.losses), str(s.ties), f"{s.mean_delta:+.3f}", ci, verdict)


def one_level(pairs: Sequence[Pairwise]) -> str | None:
    """The confidence level every pair shares (``95%``), or None when Holm's step-down
    set them apart (each interval then says its own)."""
    levels = {a.figures.level for p in pairs if (a := analysis_of(p)) is not None}
    return level_text(levels.pop()) if len(levels) == 1 else None


def _ci_at(a: Analysis, scale: float, digits: int, shared: str | None) -> str:
    ci = _ci(a.figures.score, scale, digits)
    if shared is not None or ci in ("n/a", "none: nothing varies"):
        return ci
    return f"{ci} at {level_text(a.figures.level)}"


def _matrix_status(m: Matrix) -> str:
    if m.baseline is None:
        return "score matrix"
    if not m.pairwise:
        return "nothing to compare"
    if m.regressions:
        return (
            f"{len(m.regressions)} of {plural(len(m.pairwise), 'target', 'targets')} "
            f"regressed vs {m.baseline}"
        )
    if any(not p.test_ids for p in m.pairwise):
        return f"cannot judge every target vs {m.baseline}"
    return f"no regression vs {m.baseline}"


#: One target's line of a matrix gate: (target, exit code, decision).
MatrixGateRow = tuple[str, int, str]


def render_matrix_gate_markdown(
    m: Matrix, rows: Sequence[MatrixGateRow], gate: tuple[int, str]
) -> str:
    """The gate of every target against the baseline: the decision, one row per
    target (verdict, change and interval, pass rates, what the gate made of it), then
    the matrix report."""
    code, decision = gate
    lines = [
        f"## evaldelta gate: {GATE_WORDS.get(code, str(code))} "
        f"({plural(len(rows), 'target', 'targets')} vs {escape(m.baseline or '')})",
        "",
        f"**Gate: {GATE_WORDS.get(code, str(code))}** (exit code {code}). {escape(decision)}",
        "",
    ]
    by_candidate = {p.candidate: p for p in m.pairwise if p.baseline == m.baseline}
    shared = one_level(list(by_candidate.values()))
    level = f"{shared} " if shared is not None else ""
    lines.append(f"| Target | Verdict | Change | {level}CI | Pass rate | Gate |")
    lines.append("| --- | --- | ---: | --- | --- | --- |")
    for target, _, why in rows:
        p = by_candidate[target]
        pa = analysis_of(p)
        if pa is None or not p.test_ids:
            cells = ["cannot judge", "n/a", "n/a", "n/a"]
        else:
            f = pa.figures
            scale, digits = (100, 1) if f.points else (1, 3)
            unit = " points" if f.points else ""
            rates = f.pass_rates
            cells = [
                pa.verdict.kind,
                f"{_num(f.score.estimate * scale, f'+.{digits}f')}{unit}",
                _ci_at(pa, scale, digits, shared),
                f"{_pct(rates.baseline.estimate)} → {_pct(rates.candidate.estimate)}",
            ]
        lines.append(f"| {escape(target)} | {' | '.join(cells)} | {escape(why)} |")
    lines.append("")
    body = render_matrix_markdown(m).split("\n", 1)[1]
    return "\n".join(lines) + body


def render_matrix_markdown(m: Matrix) -> str:
    """The N-way matrix as Markdown: status, pairwise comparisons, the score matrix."""
    lines = [f"## evaldelta: {escape(_matrix_status(m))} ({escape(m.source)})", ""]
    if not m.test_ids:
        lines.append("No results to compare.")
        return "\n".join(lines) + "\n"
    shape = (
        f"{plural(len(m.test_ids), 'test', 'tests')} x "
        f"{plural(len(m.targets), 'target', 'targets')}"
    )
    baseline = f" Baseline: **{escape(m.baseline)}**." if m.baseline is not None else ""
    lines.append(f"{shape}.{baseline}")

    first = next((a for p in m.pairwise if (a := analysis_of(p)) is not None), None)
    if m.pairwise:
        lines.append("")
        unit = " (points)" if first is not None and first.figures.points else ""
        shared = one_level(m.pairwise)
        level = f"{shared} " if shared is not None else ""
        lines.append(
            f"| Comparison | Wins | Losses | Ties | Mean delta | {level}CI{unit} | Verdict |"
        )
        lines.append("| --- | ---: | ---: | ---: | ---: | --- | --- |")
        for p in m.pairwise:
            label, *rest = comparison_row(p, shared)
            lines.append(f"| {escape(label)} | {' | '.join(rest)} |")
        if first is not None:
            lines.append("")
            if first.figures.comparisons > 1:
                lines.append(holm_line(m.pairwise, m.baseline or "", escape))
            else:
                lines.append(
                    f"Intervals: {level_text(first.figures.level)}, "
                    f"{method_text(first.figures.score)}."
                )
    for p in m.pairwise:
        pa = analysis_of(p)
        for problem in pa.problems if pa is not None else []:
            if problem.refuse or problem.code in ("some-infra-failures", "not-run"):
                lines.append("")
                lines.append(
                    f"> **Warning:** {escape(p.baseline)} → {escape(p.candidate)}: "
                    f"{escape(problem.message)}"
                )
    if m.baseline is not None and m.regressions:
        lines.append("")
        lines.append(
            f"**Regressed vs {escape(m.baseline)}** (mean delta below 0): "
            + ", ".join(escape(p.candidate) for p in m.regressions)
        )

    lines.append("")
    fold = len(m.test_ids) > FOLD_MATRIX_ABOVE
    if fold:
        lines.append(f"<details><summary>Score matrix: {shape}</summary>")
        lines.append("")
    headers = [f"{escape(t)} (baseline)" if t == m.baseline else escape(t) for t in m.targets]
    lines.append(f"| Test ID | {' | '.join(headers)} |")
    lines.append(f"| --- |{' ---: |' * len(headers)}")
    scores, attempts = m.scores.tolist(), m.attempts.tolist()
    for tid, row, counts in list(zip(m.test_ids, scores, attempts, strict=True))[:CASE_LIMIT]:
        cells = [
            "--" if n == 0 or math.isnan(s) else f"{s:.2f}" + (f" ({n})" if n > 1 else "")
            for s, n in zip(row, counts, strict=True)
        ]
        lines.append(f"| {escape(tid)} | {' | '.join(cells)} |")
    if len(m.test_ids) > CASE_LIMIT:
        lines.append("")
        lines.append(f"... and {len(m.test_ids) - CASE_LIMIT} more tests (see the JSON output).")
    if m.max_attempts > 1:
        lines.append("")
        lines.append("(n): mean score over n attempts.")
    if fold:
        lines.append("")
        lines.append("</details>")
    return "\n".join(lines) + "\n"
