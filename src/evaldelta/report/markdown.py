"""Markdown for a pull-request comment or a CI job summary (GitHub-flavoured).

It formats the comparison it is given; every figure comes from the analysis.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from evaldelta.analysis.verdict import level_text
from evaldelta.pairing.pairwise import Comparison
from evaldelta.report._text import METRIC_FORMATS, analysis_of, signed_metric

if TYPE_CHECKING:
    from evaldelta.stats import Interval

__all__ = ["escape", "render_markdown"]

_GATE_WORDS = {0: "pass", 1: "block", 2: "cannot judge"}


def escape(text: str) -> str:
    """``text`` safe inside a Markdown table cell: pipes, backticks, brackets, HTML."""
    out = (
        text.replace("\\", "\\\\")
        .replace("|", "\\|")
        .replace("`", "\\`")
        .replace("*", "\\*")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )
    return " ".join(out.split())  # newlines would end the table row


def _num(x: float, spec: str) -> str:
    return "n/a" if math.isnan(x) else format(x, spec)


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{x * 100:.1f}%"


def _ci(iv: Interval, scale: float, digits: int) -> str:
    if math.isnan(iv.ci_low):
        return "n/a"
    return f"[{iv.ci_low * scale:+.{digits}f}, {iv.ci_high * scale:+.{digits}f}]"


def render_markdown(c: Comparison, *, gate: tuple[int, str] | None = None) -> str:
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
        lines.append(f"**Gate: {_GATE_WORDS.get(code, str(code))}** (exit code {code}).")
        lines.append("")
    if a is not None:
        for p in a.problems:
            lines.append(f"> **Warning:** {escape(p.message)}")
        if a.problems:
            lines.append("")
        lines.append(f"**Verdict: {a.verdict.kind}.** {escape(a.verdict.reason)}")
        lines.append("")
        f = a.figures
        lvl = level_text(f.level)
        lines.append(f"| | Baseline | Candidate | Change | {lvl} CI |")
        lines.append("| --- | ---: | ---: | ---: | --- |")
        if f.points:
            lines.append(
                f"| Mean score | {_num(f.baseline_mean, '.3f')} | "
                f"{_num(f.candidate_mean, '.3f')} | "
                f"{_num(f.score.estimate * 100, '+.1f')} points | {_ci(f.score, 100, 1)} |"
            )
        else:
            lines.append(
                f"| Mean score | {_num(f.baseline_mean, '.4g')} | "
                f"{_num(f.candidate_mean, '.4g')} | "
                f"{_num(f.score.estimate, '+.4g')} | {_ci(f.score, 1, 3)} |"
            )
        pr = f.pass_rates
        lines.append(
            f"| Pass rate | {_pct(pr.baseline.estimate)} | {_pct(pr.candidate.estimate)} | "
            f"{_num(pr.change.estimate * 100, '+.1f')} points | {_ci(pr.change, 100, 1)} |"
        )
        for m in f.metrics:
            label, fmt = METRIC_FORMATS[m.name]
            if m.name == "latency_ms":
                label += " (excluding waits)"
            rel = "" if math.isnan(m.relative) else f" ({m.relative:+.0%})"
            ci = f"[{signed_metric(m.delta.ci_low, fmt)}, {signed_metric(m.delta.ci_high, fmt)}]"
            lines.append(
                f"| {label} | {fmt(m.baseline_mean)} | {fmt(m.candidate_mean)} | "
                f"{signed_metric(m.delta.estimate, fmt)}{rel} | {ci} |"
            )
        lines.append("")
        mc = f.mcnemar
        lines.append(
            f"McNemar (exact, two-sided): {mc.improved} improved, {mc.regressed} regressed, "
            f"p = {mc.pvalue:.3f} ({f.partly_changed} more changed only partly). "
            f"Mean score interval: {f.score.method}"
            + (
                f", {f.score.resamples:,} resamples, seed {f.score.seed}."
                if f.score.resamples
                else "."
            )
        )
        if a.differs_in:
            lines.append("")
            lines.append("Differs in: " + ", ".join(f"`{escape(k)}`" for k in a.differs_in))
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
    lines.append("")
    s = c.summary
    lines.append(
        f"{s.matched} cases compared: {s.wins} wins, {s.losses} losses, {s.ties} ties "
        f"(threshold {c.threshold:g}); mean delta {s.mean_delta:+.3f}."
    )
    changed = [m for m in c.matched() if m.outcome != "tie"]
    if changed:
        order = {"loss": 0, "win": 1}
        changed.sort(key=lambda m: (order[m.outcome], m.delta if m.outcome == "loss" else -m.delta))
        lines.append("")
        lines.append(
            f"<details><summary>Per-case changes: {s.losses} regressions, {s.wins} improvements"
            "</summary>"
        )
        lines.append("")
        lines.append("| Test ID | Baseline | Candidate | Delta | Result |")
        lines.append("| --- | ---: | ---: | ---: | --- |")
        limit = 500
        for case in changed[:limit]:
            result = "regression" if case.outcome == "loss" else "improvement"
            lines.append(
                f"| {escape(case.test_id)} | {case.score1:.2f} | {case.score2:.2f} | "
                f"{case.delta:+.2f} | {result} |"
            )
        if len(changed) > limit:
            lines.append("")
            lines.append(f"... and {len(changed) - limit} more (see the JSON output).")
        lines.append("")
        lines.append("</details>")
    return "\n".join(lines) + "\n"
