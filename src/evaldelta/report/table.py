"""Terminal tables for a pairwise comparison and for the N-way matrix.

The layout follows agentv's ``compare``: a ``Comparing: A -> B`` line, one row per
matched case, and a ``Summary:`` line; for the matrix, scores per test x target
and a ``Pairwise Summary:`` below. Wins are green, losses red, ties gray.
"""

from __future__ import annotations

import math

from evaldelta.pairing.matrix import MatrixComparison
from evaldelta.pairing.pairwise import Comparison
from evaldelta.report._text import (
    ASCII_GLYPHS,
    UNICODE_GLYPHS,
    Style,
    clip_list,
    ljust,
    plural,
    printable,
    rjust,
    width,
)

__all__ = ["render_matrix_table", "render_table"]

_STATUS_STYLE = {"improved": "green", "regressed": "red", "neutral": "gray"}


def _signed(x: float, digits: int) -> str:
    """``x`` with its sign; a value that would round to zero keeps its sign visible."""
    text = f"{x:+.{digits}f}"
    if float(text) != 0 or x == 0:
        return text
    return f"{x:+.1g}"  # -0.0004, not "-0.000" or a misleading "+0.000"


def _delta_style(x: float) -> str:
    return "green" if x > 0 else "red" if x < 0 else "gray"


def _counts(c: Comparison, style: Style) -> str:
    s = c.summary
    wins = plural(s.wins, "win", "wins")
    losses = plural(s.losses, "loss", "losses")
    ties = plural(s.ties, "tie", "ties")
    return (
        f"{style(wins, 'green') if s.wins else wins}, "
        f"{style(losses, 'red') if s.losses else losses}, {ties}"
    )


def render_table(c: Comparison, *, color: bool = False, unicode: bool = True) -> str:
    """The pairwise comparison as a table, ending with a newline.

    ``unicode=False`` draws with ASCII only, for terminals that cannot show ✓ or ─.
    """
    st = Style(color)
    g = UNICODE_GLYPHS if unicode else ASCII_GLYPHS
    base_label, cand_label = printable(c.baseline), printable(c.candidate)
    title = f"{st('Comparing:', 'bold')} {st(base_label, 'cyan')} -> {st(cand_label, 'cyan')}"
    if c.baseline_source == c.candidate_source and c.baseline != c.baseline_source:
        title += f" (targets of {printable(c.baseline_source)})"
    lines = ["", title, ""]
    show_attempts = c.max_attempts > 1

    if not c.test_ids:
        lines.append(st("No test ids in common between the baseline and the candidate.", "yellow"))
    else:
        ids = [printable(t) for t in c.test_ids]
        id_w = max(7, *(width(t) for t in ids))
        header = f"  {ljust('Test ID', id_w)}  {'Baseline':>8}  {'Candidate':>9}"
        rule = f"  {'-' * id_w}  {'-' * 8}  {'-' * 9}"
        if show_attempts:
            header += f"  {'Attempts':>8}"
            rule += f"  {'-' * 8}"
        lines.append(st(header + f"  {'Delta':>8}  Result", "dim"))
        lines.append(st(rule + f"  {'-' * 8}  {'-' * 8}", "dim"))
        for tid, m in zip(ids, c.matched(), strict=True):
            row = f"  {ljust(tid, id_w)}  {m.score1:8.2f}  {m.score2:9.2f}"
            if show_attempts:
                row += f"  {f'{m.attempts1} / {m.attempts2}':>8}"
            delta = st(rjust(_signed(m.delta, 2), 8), _delta_style(m.delta))
            if m.outcome == "win":
                outcome = st(g["win"], "green")
            elif m.outcome == "loss":
                outcome = st(g["loss"], "red")
            else:
                outcome = st("= tie", "gray")
            lines.append(f"{row}  {delta}  {outcome}")

    notes = []
    if c.unmatched_baseline or c.unmatched_candidate:
        parts = []
        for n, only, where in (
            (len(c.unmatched_baseline), c.unmatched_baseline, "baseline"),
            (len(c.unmatched_candidate), c.unmatched_candidate, "candidate"),
        ):
            shown = clip_list([printable(i) for i in only[:5]], total=len(only))
            parts.append(f"{n} only in {where}" + (f" ({shown})" if only else ""))
        notes.append(f"{st('Unmatched:', 'yellow')} {'; '.join(parts)}")
    s = c.summary
    if s.errors1 or s.errors2:
        notes.append(
            f"{st('Errors:', 'yellow')} {plural(s.errors1, 'attempt', 'attempts')} in baseline, "
            f"{plural(s.errors2, 'attempt', 'attempts')} in candidate had an error "
            "(those without a score count as 0)"
        )
    if show_attempts:
        notes.append("Scores are means over each case's attempts (Attempts: baseline / candidate).")
    if notes:
        lines.append("")
        lines.extend(notes)

    lines.append("")
    mean = st(_signed(s.mean_delta, 3), _delta_style(s.mean_delta))
    status = st(s.status, _STATUS_STYLE[s.status])
    lines.append(
        f"{st('Summary:', 'bold')} {_counts(c, st)} | Mean delta: {mean} | Status: {status}"
    )
    return "\n".join(lines) + "\n"


def render_matrix_table(m: MatrixComparison, *, color: bool = False, unicode: bool = True) -> str:
    """The N-way matrix and its pairwise summaries, ending with a newline."""
    st = Style(color)
    g = UNICODE_GLYPHS if unicode else ASCII_GLYPHS
    targets = [printable(t) for t in m.targets]
    baseline = printable(m.baseline) if m.baseline is not None else None
    lines: list[str] = []
    if not m.test_ids:
        return st("No results to compare.", "yellow") + "\n"

    show_attempts = m.max_attempts > 1
    lines.append(
        f"{st('Score matrix:', 'bold')} {st(printable(m.source), 'cyan')} "
        f"({plural(len(m.test_ids), 'test', 'tests')} x "
        f"{plural(len(m.targets), 'target', 'targets')})"
    )
    lines.append("")
    headers = [f"{t} (baseline)" if t == baseline else t for t in targets]
    ids = [printable(t) for t in m.test_ids]
    id_w = max(7, *(width(t) for t in ids))
    cell_w = [max(width(h), 8 if show_attempts else 4) for h in headers]
    base_col = m.targets.index(m.baseline) if m.baseline is not None else None

    lines.append(
        st(
            ljust("Test ID", id_w)
            + "".join(f"  {rjust(h, w)}" for h, w in zip(headers, cell_w, strict=True)),
            "bold",
        )
    )
    lines.append(st(g["rule"] * (id_w + sum(w + 2 for w in cell_w)), "dim"))
    scores = m.scores.tolist()
    attempts = m.attempts.tolist()
    for tid, row, counts in zip(ids, scores, attempts, strict=True):
        cells = []
        for j, (score, n, w) in enumerate(zip(row, counts, cell_w, strict=True)):
            if n == 0 or math.isnan(score):
                cells.append(f"  {rjust(st('--', 'gray'), w)}")
                continue
            text = f"{score:.2f}" + (f" ({n})" if n > 1 else "")
            if base_col is not None and j != base_col and counts[base_col] > 0:
                diff = score - row[base_col]
                if abs(diff) > 1e-9:
                    text = st(text, "green" if diff > 0 else "red")
            cells.append(f"  {rjust(text, w)}")
        lines.append(ljust(tid, id_w) + "".join(cells))
    errors = m.errors.sum(axis=0).tolist()
    if show_attempts or any(errors):
        lines.append("")
    if show_attempts:
        lines.append("(n): mean score over n attempts")
    if any(errors):
        counts_by_target = ", ".join(
            f"{t} {plural(n, 'attempt', 'attempts')}"
            for t, n in zip(targets, errors, strict=True)
            if n
        )
        lines.append(
            f"{st('Errors:', 'yellow')} {counts_by_target} had an error "
            "(those without a score count as 0)"
        )

    if m.pairwise:
        lines.append("")
        lines.append(st("Pairwise Summary:", "bold"))
        arrow = g["arrow"]
        labels = [
            f"  {printable(p.baseline)} {arrow} {printable(p.candidate)}:" for p in m.pairwise
        ]
        label_w = max(width(label) for label in labels)
        for label, p in zip(labels, m.pairwise, strict=True):
            if not p.test_ids:
                lines.append(f"{ljust(label, label_w)}  {st('no tests in common', 'yellow')}")
                continue
            mean = st(_signed(p.summary.mean_delta, 3), _delta_style(p.summary.mean_delta))
            line = f"{ljust(label, label_w)}  {_counts(p, st)}  ({st(g['delta'], 'bold')} {mean})"
            unmatched = len(p.unmatched_baseline) + len(p.unmatched_candidate)
            if unmatched:
                line += f"  [{unmatched} unmatched]"
            if m.baseline is not None:
                line += "  " + st(p.status, _STATUS_STYLE[p.status])
            lines.append(line)
    elif len(m.targets) == 1:
        lines.append("")
        lines.append(f"Only one target ({targets[0]}): nothing to compare it with.")

    if m.baseline is not None and len(m.targets) > 1:
        lines.append("")
        regressed = [printable(p.candidate) for p in m.regressions]
        unjudged = [printable(p.candidate) for p in m.pairwise if not p.test_ids]
        if regressed:
            lines.append(st(f"Regressed vs {baseline}: ", "red", "bold") + ", ".join(regressed))
        elif not unjudged:
            lines.append(st(f"No target regressed vs {baseline}.", "green"))
        if unjudged:
            lines.append(
                st(f"Cannot judge vs {baseline} (no tests in common): ", "yellow")
                + ", ".join(unjudged)
            )
    return "\n".join(lines) + "\n"
