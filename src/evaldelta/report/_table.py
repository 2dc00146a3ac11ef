"""Terminal tables for a pairwise comparison and for the N-way matrix.

The layout follows agentv's ``compare``: a ``Comparing: A -> B`` line, one row per
matched case, and a ``Summary:`` line; for the matrix, scores per test x target
and a ``Pairwise Summary:`` below. Wins are green, losses red, ties gray.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from evaldelta.analysis._verdict import format_p, level_text
from evaldelta.pairing._pairwise import LOSS, TIE, WIN
from evaldelta.report._markdown import same_change
from evaldelta.report._text import (
    ASCII_GLYPHS,
    METRIC_FORMATS,
    UNICODE_GLYPHS,
    Matrix,
    Pairwise,
    Style,
    analysis_of,
    clip_list,
    holm_line,
    ljust,
    method_text,
    plural,
    printable,
    relative_suffix,
    rjust,
    signed_metric,
    width,
)

if TYPE_CHECKING:
    from evaldelta.model import FloatArray
    from evaldelta.stats import Interval

__all__ = ["render_matrix_table", "render_table"]

_STATUS_STYLE = {"improved": "green", "regressed": "red", "neutral": "gray"}


def _signed(x: float, digits: int) -> str:
    """``x`` with its sign; a value that would round to zero keeps its sign visible."""
    text = f"{x:+.{digits}f}"
    if float(text) != 0 or x == 0:
        return text
    return f"{x:+.1g}"  # -0.0004, not "-0.000" or a misleading "+0.000"


def _formatted(values: FloatArray, fmt: Callable[[float], str]) -> list[str]:
    """``fmt`` of each value, each distinct value formatted once (a negative zero, which
    equals zero but formats as -0.00, is formatted on its own)."""
    import numpy as np

    floats = values.tolist()
    if bool(np.any(np.signbit(values) & (values == 0))):
        return [fmt(x) for x in floats]
    text = {x: fmt(x) for x in set(floats)}  # NaNs: each its own key, found by identity
    return list(map(text.__getitem__, floats))


def _delta_style(x: float) -> str:
    return "green" if x > 0 else "red" if x < 0 else "gray"


def _counts(c: Pairwise, style: Style) -> str:
    s = c.summary
    wins = plural(s.wins, "win", "wins")
    losses = plural(s.losses, "loss", "losses")
    ties = plural(s.ties, "tie", "ties")
    return (
        f"{style(wins, 'green') if s.wins else wins}, "
        f"{style(losses, 'red') if s.losses else losses}, {ties}"
    )


def render_table(c: Pairwise, *, color: bool = False, unicode: bool = True) -> str:
    """The pairwise comparison as a table, ending with a newline.

    ``unicode=False`` draws with ASCII only, for terminals that cannot show ✓ or ─.
    """
    st = Style(color)
    g = UNICODE_GLYPHS if unicode else ASCII_GLYPHS
    base_label, cand_label = printable(c.baseline), printable(c.candidate)
    title = f"{st('Comparing:', 'bold')} {st(base_label, 'cyan')} -> {st(cand_label, 'cyan')}"
    if c.baseline_source == c.candidate_source and c.baseline != c.baseline_source:
        title += f" (targets of {printable(c.baseline_source)})"
    lines = [*_warning_lines(c, st), "", title, ""]
    show_attempts = c.max_attempts > 1

    if not c.test_ids:
        lines.append(st("No test ids in common between the baseline and the candidate.", "yellow"))
    else:
        ids = [printable(t) for t in c.test_ids]
        joined = "".join(ids)
        if joined.isascii() and "\x1b[" not in joined:
            widths = list(map(len, ids))  # printable ASCII: one column a character
        else:
            widths = [width(t) for t in ids]
        id_w = max(7, *widths)
        header = f"  {ljust('Test ID', id_w)}  {'Baseline':>8}  {'Candidate':>9}"
        rule = f"  {'-' * id_w}  {'-' * 8}  {'-' * 9}"
        if show_attempts:
            header += f"  {'Attempts':>8}"
            rule += f"  {'-' * 8}"
        lines.append(st(header + f"  {'Delta':>8}  Result", "dim"))
        lines.append(st(rule + f"  {'-' * 8}  {'-' * 8}", "dim"))
        # Scores and deltas take few distinct values: each is formatted once.
        score1 = _formatted(c.score1, lambda x: f"{x:8.2f}")
        score2 = _formatted(c.score2, lambda x: f"{x:9.2f}")
        deltas = _formatted(c.delta, lambda x: st(rjust(_signed(x, 2), 8), _delta_style(x)))
        outcomes = {
            WIN: st(g["win"], "green"),
            LOSS: st(g["loss"], "red"),
            TIE: st("= tie", "gray"),
        }
        results = map(outcomes.__getitem__, c.outcome.tolist())
        attempts = [""] * len(ids)
        if show_attempts:
            pairs = list(zip(c.attempts1.tolist(), c.attempts2.tolist(), strict=True))
            attempt_text = {ab: f"  {f'{ab[0]} / {ab[1]}':>8}" for ab in set(pairs)}
            attempts = list(map(attempt_text.__getitem__, pairs))
        lines.extend(
            f"  {tid}{' ' * (id_w - w)}  {s1}  {s2}{a}  {d}  {r}"
            for tid, w, s1, s2, a, d, r in zip(
                ids, widths, score1, score2, attempts, deltas, results, strict=True
            )
        )

    notes = []
    analysis = analysis_of(c)
    seq = analysis.sequential if analysis is not None else None
    unreached = set(seq.not_reached) if seq is not None else set()
    if unreached and seq is not None:
        notes.append(
            f"{st('Not reached:', 'yellow')} {len(unreached):,} cases of the "
            f"{'baseline' if seq.side == 'candidate' else 'candidate'}: the {seq.side} "
            "stopped once the comparison was settled"
        )
    only_baseline = [t for t in c.unmatched_baseline if t not in unreached]
    only_candidate = [t for t in c.unmatched_candidate if t not in unreached]
    if only_baseline or only_candidate:
        parts = []
        for n, only, where in (
            (len(only_baseline), only_baseline, "baseline"),
            (len(only_candidate), only_candidate, "candidate"),
        ):
            shown = clip_list([printable(i) for i in only[:5]], total=len(only))
            parts.append(f"{n} only in {where}" + (f" ({shown})" if only else ""))
        notes.append(f"{st('Unmatched:', 'yellow')} {'; '.join(parts)}")
    if c.not_run:
        shown = clip_list([printable(i) for i in c.not_run[:5]], total=len(c.not_run))
        notes.append(
            f"{st('Not compared:', 'yellow')} {plural(len(c.not_run), 'case', 'cases')} lost "
            f"every attempt to infrastructure failures on one side ({shown})"
        )
    s = c.summary
    if s.errors1 or s.errors2:

        def side(errors: int, infra: int, where: str) -> str:
            text = f"{plural(errors, 'attempt', 'attempts')} in {where}"
            if infra and errors:
                text += f" ({infra} of them infrastructure failures)"
            return text

        infra = c.baseline_infra + c.candidate_infra
        tail = (
            "task failures without a score count as 0, infrastructure failures are left out"
            if infra
            else "those without a score count as 0"
        )
        notes.append(
            f"{st('Errors:', 'yellow')} {side(s.errors1, c.baseline_infra, 'baseline')}, "
            f"{side(s.errors2, c.candidate_infra, 'candidate')} had an error ({tail})"
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
    if analysis_of(c) is not None:
        lines.extend(_analysis_lines(c, st))
    return "\n".join(lines) + "\n"


def _warning_lines(c: Pairwise, st: Style) -> list[str]:
    a = analysis_of(c)
    if a is None or not a.problems:
        return []
    return [f"{st('Warning:', 'yellow', 'bold')} {p.message}" for p in a.problems]


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:.1f}%"


def _ci(iv: Interval, scale: float, digits: int, unit: str = "") -> str:
    if math.isnan(iv.ci_low):
        return "CI n/a"
    lo, hi = iv.ci_low * scale, iv.ci_high * scale
    return f"{level_text(iv.level)} CI [{lo:+.{digits}f}{unit}, {hi:+.{digits}f}{unit}]"


def _rate_ci(iv: Interval) -> str:
    """``[43.9%, 100.0%]``: a pass rate's own interval."""
    return f"[{iv.ci_low * 100:.1f}%, {iv.ci_high * 100:.1f}%]"


def _with_normal(iv: Interval, normal: str, same: str | None) -> str:
    """The interval's method, and the normal interval beside it where that says
    something (on few cases it is too narrow to show); that every case changed by the
    same, when it did."""
    also = "" if same is None else f"; {same}"
    if iv.method == "t":
        return f"({method_text(iv)}{also})"
    return f"({method_text(iv)}; normal {normal}{also})"


def _analysis_lines(c: Pairwise, st: Style) -> list[str]:
    a = analysis_of(c)
    assert a is not None
    f = a.figures
    out = [""]
    if a.differs_in:
        out.append(f"{'Differs in:':<14}{', '.join(printable(k) for k in a.differs_in)}")
    if len(c.left) == 0:
        out.append(f"{'Mean score:':<14}n/a: no case ran on both sides")
    elif a.sequential is not None and a.sequential.record is not None:
        # The run stopped (or could have) when settled: only the sequence is valid.
        scale, digits = (100, 1) if f.points else (1, 3)
        unit = " points" if f.points else ""
        cs = _ci(a.sequential.interval, scale, digits).replace(" CI ", " CS ")
        out.append(
            f"{'Mean score:':<14}{f.baseline_mean:.3f} -> {f.candidate_mean:.3f}   "
            f"{f.score.estimate * scale:+.{digits}f}{unit}   {cs}   "
            f"(anytime-valid confidence sequence, {a.sequential.cases:,} cases in order)"
        )
    elif (same := same_change(c)) is not None and f.score.ci_high - f.score.ci_low < 1e-12:
        # Nothing varies: a zero-width "95% CI" would read as certainty about a sample.
        out.append(
            f"{'Mean score:':<14}{f.baseline_mean:.4g} -> {f.candidate_mean:.4g}   "
            f"{same} (no interval: the change does not vary)"
        )
    elif f.points:
        score = (
            f"{f.baseline_mean:.3f} -> {f.candidate_mean:.3f}   "
            f"{f.score.estimate * 100:+.1f} points   {_ci(f.score, 100, 1)}"
        )
        normal = _ci(f.score_normal, 100, 1).replace(" CI ", " ")
        out.append(f"{'Mean score:':<14}{score}   {_with_normal(f.score, normal, same)}")
    else:
        score = (
            f"{f.baseline_mean:.4g} -> {f.candidate_mean:.4g}   "
            f"{f.score.estimate:+.4g}   {_ci(f.score, 1, 3)}"
        )
        normal = _ci(f.score_normal, 1, 3).replace(" CI ", " ")
        out.append(f"{'Mean score:':<14}{score}   {_with_normal(f.score, normal, same)}")
    pr = f.pass_rates
    if len(c.left):
        sides = ""
        if f.small_sample is not None:
            # On few cases the change's interval is wide whatever happened: each run's
            # own interval says how much its rate alone could be off.
            sides = (
                f"   (each run's {level_text(pr.baseline.level)} CI: {_rate_ci(pr.baseline)} "
                f"and {_rate_ci(pr.candidate)})"
            )
        ch = pr.change
        moved = (
            _ci(ch, 100, 1)
            if not (ch.n >= 2 and ch.ci_high - ch.ci_low < 1e-12)
            else "no case's pass rate changed"
            if abs(ch.estimate) < 1e-12
            else "every case's pass rate changed by the same"
        )
        out.append(
            f"{'Pass rate:':<14}{_pct(pr.baseline.estimate)} -> {_pct(pr.candidate.estimate)}   "
            f"{ch.estimate * 100:+.1f} points   {moved}{sides}"
        )
    mc = f.mcnemar
    out.append(
        f"{'McNemar:':<14}{mc.improved} improved, {mc.regressed} regressed   "
        f"{format_p(mc.pvalue)}   ({f.partly_changed} more changed only partly)"
    )
    for metric in f.metrics:
        label, fmt = METRIC_FORMATS[metric.name]
        label += ":"
        rel = relative_suffix(metric.relative)
        extra = " per case, excluding waits" if metric.name == "latency_ms" else " per case"
        d = metric.delta
        if metric.n >= 2 and d.ci_high - d.ci_low < 1e-12 * max(1.0, abs(d.estimate)):
            # Nothing varies: no "95% CI [x, x]" that reads as certainty.
            spread = (
                "no case changed"
                if abs(d.estimate) < 1e-12
                else f"every case changed by exactly {signed_metric(d.estimate, fmt)}"
            )
        else:
            spread = (
                f"{level_text(d.level)} CI [{signed_metric(d.ci_low, fmt)}, "
                f"{signed_metric(d.ci_high, fmt)}]"
                + ("" if d.method.startswith("bootstrap") else f" ({method_text(d)})")
            )
        out.append(
            f"{label:<14}{fmt(metric.baseline_mean)} -> {fmt(metric.candidate_mean)}{extra}   "
            f"{signed_metric(d.estimate, fmt)}{rel}   {spread}"
        )
    if a.sequential is not None:
        out.append(f"{'Sequential:':<14}{a.sequential.sentence(f.points)}")
    if f.scorers:
        out.append("")
        out.append("Scorers:")
        name_w = max(width(printable(sc.name)) for sc in f.scorers)
        for sc in f.scorers:
            scale, digits, unit = (100, 1, " points") if f.points else (1, 3, "")
            d = sc.delta
            flat = d.n >= 2 and d.ci_high - d.ci_low < 1e-12
            spread = (
                ("no case changed" if abs(d.estimate) < 1e-12 else "every case the same")
                if flat
                else _ci(d, scale, digits)
            )
            out.append(
                f"  {ljust(printable(sc.name), name_w)}  "
                f"{d.estimate * scale:+.{digits}f}{unit}   {spread}   "
                f"{sc.improved} improved, {sc.regressed} regressed, {sc.unchanged} unchanged"
            )
    if f.categories:
        out.append("")
        out.append("Categories that moved (leads to investigate, not proof):")
        shown = f.categories[:8]
        cat_w = max(width(printable(m.category)) for m in shown)
        for m in shown:
            out.append(
                f"  {ljust(printable(m.category), cat_w)}  {_pct(m.baseline_rate)} -> "
                f"{_pct(m.candidate_rate)}  ({plural(m.cases, 'case', 'cases')})"
            )
        if len(f.categories) > len(shown):
            out.append(f"  ... and {len(f.categories) - len(shown)} more (see --json)")
    if f.comparisons > 1:
        out.append("")
        out.append(
            f"Interval at {level_text(f.level)}: Holm's step-down for "
            f"{f.comparisons} comparisons against the baseline."
        )
    out.append("")
    v = a.verdict
    style = {"Better": "green", "Worse": "red", "Trade-off": "yellow", "No change": "green"}.get(
        v.kind, "gray"
    )
    caveat = ""
    if any(p.code == "dataset-changed" for p in a.problems):
        caveat = f" (datasets differ: on the {len(c.left)} common cases)"
    out.append(f"{st('Verdict:', 'bold')} {st(v.kind + caveat, style, 'bold')}. {v.reason}")
    return out


def render_matrix_table(m: Matrix, *, color: bool = False, unicode: bool = True) -> str:
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

    pairs: Sequence[Pairwise] = m.pairwise
    if pairs:
        lines.append("")
        lines.append(st("Pairwise Summary:", "bold"))
        arrow = g["arrow"]
        labels = [f"  {printable(p.baseline)} {arrow} {printable(p.candidate)}:" for p in pairs]
        label_w = max(width(label) for label in labels)
        for label, p in zip(labels, pairs, strict=True):
            if not p.test_ids:
                lines.append(f"{ljust(label, label_w)}  {st('no tests in common', 'yellow')}")
                continue
            mean = st(_signed(p.summary.mean_delta, 3), _delta_style(p.summary.mean_delta))
            line = f"{ljust(label, label_w)}  {_counts(p, st)}  ({st(g['delta'], 'bold')} {mean})"
            pa = analysis_of(p)
            if pa is not None:
                v = pa.verdict
                scale, digits = (100, 1) if pa.figures.points else (1, 3)
                style = {"Better": "green", "Worse": "red", "Trade-off": "yellow"}.get(
                    v.kind, "gray"
                )
                line += f"  {_ci(pa.figures.score, scale, digits)}  {st(v.kind, style)}"
            unmatched = len(p.unmatched_baseline) + len(p.unmatched_candidate)
            if unmatched:
                line += f"  [{unmatched} unmatched]"
            if m.baseline is not None:
                line += "  " + st(p.status, _STATUS_STYLE[p.status])
            lines.append(line)
    elif len(m.targets) == 1:
        lines.append("")
        lines.append(f"Only one target ({targets[0]}): nothing to compare it with.")

    warned = False
    for p in m.pairwise:
        pa = analysis_of(p)
        if pa is None:
            continue
        for problem in pa.problems:
            if problem.refuse or problem.code in ("some-infra-failures", "not-run"):
                if not warned:
                    lines.append("")
                    warned = True
                label = f"{printable(p.baseline)} {g['arrow']} {printable(p.candidate)}"
                lines.append(f"{st('Warning:', 'yellow', 'bold')} {label}: {problem.message}")
    first = next((a for p in m.pairwise if (a := analysis_of(p)) is not None), None)
    if first is not None:
        lines.append("")
        scale_note = " in points" if first.figures.points else ""
        if first.figures.comparisons > 1:
            lines.append(
                holm_line(m.pairwise, m.baseline or "", printable).replace(
                    "Intervals:", f"Intervals{scale_note}:"
                )
            )
        else:
            lines.append(
                f"Intervals{scale_note}: {level_text(first.figures.level)}, "
                f"{method_text(first.figures.score)}."
            )
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
