"""A self-contained HTML report: one file, inline CSS, SVG and JavaScript, no network.

Static first: the header, the verdict, the figures and every chart (inline SVG, drawn
by :mod:`evaldelta.report._svg`) are in the file as written, so the page reads the same
with scripts off (CI artifact viewers, mail clients, previews, print). The page also
carries the comparison as JSON (the document ``--format json`` prints, plus each case's
category, input, expected answer and outputs when the runs kept them) inside
``<script type="application/json">``; a small script of our own (``assets/report.js``)
reads it to build the case table (filter, sort, pages, the two outputs side by side)
with ``textContent``, never ``innerHTML``, so that inputs and outputs (untrusted text)
can only ever show as text. A Content Security Policy lets only that script run and
forbids every request.

Every figure comes from the result; this module and the charts only format it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import math
import re
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from evaldelta._version import __version__
from evaldelta.analysis._histogram import delta_histogram
from evaldelta.analysis._verdict import level_text
from evaldelta.pairing._pairwise import clean_all
from evaldelta.report._markdown import (
    comparison_row,
    count_lines,
    figure_rows,
    mcnemar_line,
    one_level,
    sequential_line,
)
from evaldelta.report._svg import (
    VERDICT_CLASS,
    delta_histogram_chart,
    escape,
    forest_chart,
    heatmap_chart,
    rate_chart,
)
from evaldelta.report._text import Matrix, Pairwise, analysis_of, plural

if TYPE_CHECKING:
    from evaldelta.model import IntArray, Run
    from evaldelta.stats import Interval

__all__ = [
    "MAX_TEXT",
    "render_html",
    "render_html_summary",
    "report_script",
    "report_stylesheet",
    "script_json",
]

#: Longest input, expected answer or output kept per case (in characters): the rest is
#: cut, and says so, so that a run of long transcripts still gives a file that opens.
MAX_TEXT = 20_000
#: Most tests the heat map draws (those whose scores differ most across targets).
HEATMAP_ROWS = 60

_SCRIPT_ESCAPES = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}
_SURROGATE = re.compile("[\ud800-\udfff]")


def script_json(data: Any) -> str:
    """``data`` as JSON that is safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` are written as ``\\u003c`` and so on, so no ``</script>``
    or ``<!--`` in the data can end the element; U+2028/2029 are escaped too, and
    lone surrogates (which UTF-8 cannot carry) become ``\\udXXX`` escapes. Non-finite
    numbers become ``null``.
    """
    text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = text.translate(_SCRIPT_ESCAPES)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


_plain = escape


@functools.cache
def _asset(name: str) -> str:
    """A file of ``report/assets/``, shipped in the package (and the wheel)."""
    folder = resources.files("evaldelta.report").joinpath("assets")
    return folder.joinpath(name).read_text(encoding="utf-8")


def report_script() -> str:
    """The report's script, as the page carries it (and its CSP hash covers)."""
    return _asset("report.js")


def report_stylesheet() -> str:
    """The report's stylesheet, as the page carries it."""
    return _asset("report.css")


def _clip(value: Any, limit: int) -> Any:
    """A text field for the page: JSON values as they are, long strings cut."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if not isinstance(value, str):
        try:
            value = json.dumps(_finite(value), ensure_ascii=False, indent=2, allow_nan=False)
        except (TypeError, ValueError):
            value = str(value)
    if len(value) > limit:
        return f"{value[:limit]}\n… (cut: {len(value):,} characters in all)"
    return value


def _texts(run: Run | None, records: IntArray, name: str, limit: int) -> list[Any] | None:
    """Column ``name`` of ``run``'s texts at ``records`` (-1: no record), or None."""
    if run is None or not run.texts or name not in run.texts:
        return None
    column = run.texts[name]
    values = [_clip(column[i], limit) if i >= 0 else None for i in records.tolist()]
    return values if any(v is not None for v in values) else None


def _categories(run: Run | None, records: IntArray) -> list[str | None] | None:
    if run is None or not run.categories:
        return None
    codes = [int(run.category_index[i]) if i >= 0 else -1 for i in records.tolist()]
    values = [run.categories[k] if k >= 0 else None for k in codes]
    return values if any(v is not None for v in values) else None


def _merge(first: list[Any] | None, second: list[Any] | None) -> list[Any] | None:
    """``first``, its gaps filled from ``second``."""
    if first is None or second is None:
        return first if second is None else second
    return [a if a is not None else b for a, b in zip(first, second, strict=True)]


def _interval(iv: Interval, scale: float = 1.0) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return None if math.isnan(x) else round(x * scale, 12)

    return {
        "estimate": num(iv.estimate),
        "low": num(iv.ci_low),
        "high": num(iv.ci_high),
        "excludes_zero": iv.excludes_zero(),
    }


def _comparison(c: Pairwise, columns: tuple[int, int], rows: list[int] | None) -> dict[str, Any]:
    """What the page shows about one comparison, formatted as the Markdown is."""
    a = analysis_of(c)
    s = c.summary
    out: dict[str, Any] = {
        "baseline": c.baseline,
        "candidate": c.candidate,
        "columns": list(columns),
        "rows": rows,
        "verdict": None,
        "reason": None,
        "level": "",
        "figures": [],
        "notes": [],
        "problems": [],
        "categories": [],
        "summary": (
            f"{s.matched:,} cases compared: {plural(s.wins, 'win', 'wins')}, "
            f"{plural(s.losses, 'loss', 'losses')}, {plural(s.ties, 'tie', 'ties')} "
            f"(threshold {c.threshold:g}); mean delta {s.mean_delta:+.3f}."
        ),
    }
    if a is not None:
        f = a.figures
        out.update(
            verdict=a.verdict.kind,
            reason=a.verdict.reason,
            level=level_text(f.level),
            figures=[list(row) for row in figure_rows(a)],
            notes=[mcnemar_line(a)]
            + [line for line in [sequential_line(a)] if line is not None]
            + (["Differs in: " + ", ".join(a.differs_in)] if a.differs_in else []),
            problems=[p.message for p in a.problems],
            categories=[
                [
                    mv.category,
                    f"{mv.baseline_rate * 100:.1f}%",
                    f"{mv.candidate_rate * 100:.1f}%",
                    str(mv.cases),
                ]
                for mv in f.categories
            ],
        )
    return out


def _rate(target: str, iv: Interval, mean: float, baseline: bool, level: float) -> dict[str, Any]:
    return {
        "target": target,
        "baseline": baseline,
        "level": level_text(level),
        "pass_rate": {
            "estimate": None if math.isnan(iv.estimate) else iv.estimate,
            "ci_low": None if math.isnan(iv.ci_low) else iv.ci_low,
            "ci_high": None if math.isnan(iv.ci_high) else iv.ci_high,
        },
        "mean_score": None if math.isnan(mean) else mean,
    }


def _rates(
    comparisons: Sequence[Pairwise], targets: Sequence[str], baseline: str | None
) -> list[dict[str, Any]]:
    """Per target, its pass rate and interval, from the first comparison it takes part in."""
    found: dict[str, dict[str, Any]] = {}
    for c in comparisons:
        a = analysis_of(c)
        if a is None or not c.test_ids:
            continue
        f = a.figures
        for label, iv, mean in (
            (c.baseline, f.pass_rates.baseline, f.baseline_mean),
            (c.candidate, f.pass_rates.candidate, f.candidate_mean),
        ):
            found.setdefault(label, _rate(label, iv, mean, label == baseline, iv.level))
    return [found[t] for t in targets if t in found]


def _forest_pairwise(c: Pairwise) -> dict[str, Any]:
    a = analysis_of(c)
    if a is None or not c.test_ids:
        return {"rows": [], "unit": "", "digits": 1, "level": ""}
    f = a.figures
    scale = 100.0 if f.points else 1.0
    rows = [{"label": "Mean score", "verdict": a.verdict.kind, **_interval(f.score, scale)}]
    if f.points:
        rows.append(
            {"label": "Pass rate", "verdict": None, **_interval(f.pass_rates.change, 100.0)}
        )
    rows.extend(
        {"label": f"Scorer {s.name}", "verdict": None, **_interval(s.delta, scale)}
        for s in f.scorers
    )
    return {
        "rows": rows,
        "unit": "points" if f.points else "score",
        "digits": 1 if f.points else 3,
        "level": level_text(f.level),
    }


def _forest_matrix(m: Matrix) -> dict[str, Any]:
    analysed = [(p, a) for p in m.pairwise if (a := analysis_of(p)) is not None]
    if not analysed:
        return {"rows": [], "unit": "", "digits": 1, "level": ""}
    points = all(a.figures.points for _, a in analysed)
    scale = 100.0 if points else 1.0
    rows = [
        {
            "label": f"{p.baseline} → {p.candidate}",
            "verdict": a.verdict.kind if p.test_ids else None,
            **_interval(a.figures.score, scale),
        }
        for p, a in analysed
    ]
    return {
        "rows": rows,
        "unit": "points" if points else "score",
        "digits": 1 if points else 3,
        "level": level_text(analysed[0][1].figures.level),
    }


def _heatmap_rows(scores: list[list[float | None]]) -> list[int]:
    """Up to HEATMAP_ROWS rows: all when they fit, else those whose scores differ
    most across targets (ties in their order)."""
    if len(scores) <= HEATMAP_ROWS:
        return list(range(len(scores)))

    def spread(i: int) -> float:
        present = [s for s in scores[i] if s is not None]
        return max(present) - min(present) if present else -1.0

    ranked = sorted(range(len(scores)), key=lambda i: (-spread(i), i))
    return sorted(ranked[:HEATMAP_ROWS])


def _score(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 12)


def _pairwise_payload(c: Pairwise, runs: Sequence[Run], max_text: int) -> dict[str, Any]:
    base_run = runs[0] if runs else None
    cand_run = runs[1] if len(runs) > 1 else base_run
    left, right = c.left.first_record, c.right.first_record
    outputs = [
        _texts(base_run, left, "output", max_text),
        _texts(cand_run, right, "output", max_text),
    ]
    scores = [
        [_score(a), _score(b)] for a, b in zip(c.score1.tolist(), c.score2.tolist(), strict=True)
    ]
    cases = {
        "test_ids": list(c.test_ids),
        "scores": scores,
        "category": _merge(_categories(base_run, left), _categories(cand_run, right)),
        "input": _merge(
            _texts(base_run, left, "input", max_text), _texts(cand_run, right, "input", max_text)
        ),
        "expected": _merge(
            _texts(base_run, left, "expected", max_text),
            _texts(cand_run, right, "expected", max_text),
        ),
        "outputs": (
            None
            if all(o is None for o in outputs)
            else [o if o is not None else [None] * len(c.test_ids) for o in outputs]
        ),
    }
    payload = {
        "kind": "pairwise",
        # The labels are often long paths: the heading names them in full.
        "targets": ["Baseline", "Candidate"],
        "cases": cases,
        "comparisons": [_comparison(c, (0, 1), None)],
        "heatmap": {"rows": _heatmap_rows(scores), "total": len(scores), "baseline": 0},
        "rates": [
            {**rate, "target": name}
            for rate, name in zip(
                _rates([c], [c.baseline, c.candidate], c.baseline),
                ["Baseline", "Candidate"],
                strict=False,
            )
        ],
        "forest": _forest_pairwise(c),
    }
    return payload


def _first_records(run: Run, test_ids: Sequence[str], targets: Sequence[str]) -> IntArray:
    """Index of the first record of each (test id, target), -1 where there is none."""
    import numpy as np

    width = len(run.targets)
    keys = run.test_index.astype(np.int64) * width + run.target_index.astype(np.int64)
    unique, first = np.unique(keys, return_index=True)
    where = dict(zip(unique.tolist(), first.tolist(), strict=True))
    code = {t: i for i, t in enumerate(run.test_ids)}
    target_codes = [run.target_code(t) for t in targets]
    out = np.full((len(test_ids), len(targets)), -1, dtype=np.int64)
    for i, tid in enumerate(test_ids):
        k = code.get(tid)
        if k is None:
            continue
        for j, tc in enumerate(target_codes):
            out[i, j] = where.get(k * width + tc, -1)
    return out


def _matrix_payload(m: Matrix, runs: Sequence[Run], max_text: int) -> dict[str, Any]:
    import numpy as np

    run = runs[0] if runs else None
    row_of = {t: i for i, t in enumerate(m.test_ids)}
    scores = [
        [_score(s) if n > 0 else None for s, n in zip(row, counts, strict=True)]
        for row, counts in zip(m.scores.tolist(), m.attempts.tolist(), strict=True)
    ]
    cases: dict[str, Any] = {
        "test_ids": list(m.test_ids),
        "scores": scores,
        "category": None,
        "input": None,
        "expected": None,
        "outputs": None,
    }
    if run is not None and m.test_ids:
        records = _first_records(run, m.test_ids, m.targets)
        # Input, expected answer and category: from the baseline's record where there is
        # one, else from the first target that has the test.
        order = list(range(len(m.targets)))
        if m.baseline is not None:
            b = m.targets.index(m.baseline)
            order = [b, *(j for j in order if j != b)]
        any_record = np.full(len(m.test_ids), -1, dtype=np.int64)
        for j in reversed(order):
            column = records[:, j]
            any_record = np.where(column >= 0, column, any_record)
        cases["category"] = _categories(run, any_record)
        cases["input"] = _texts(run, any_record, "input", max_text)
        cases["expected"] = _texts(run, any_record, "expected", max_text)
        outputs = [_texts(run, records[:, j], "output", max_text) for j in range(len(m.targets))]
        if any(o is not None for o in outputs):
            cases["outputs"] = [o if o is not None else [None] * len(m.test_ids) for o in outputs]
    index = {t: j for j, t in enumerate(m.targets)}
    comparisons = [
        _comparison(p, (index[p.baseline], index[p.candidate]), [row_of[t] for t in p.test_ids])
        for p in m.pairwise
    ]
    payload = {
        "kind": "matrix",
        "targets": list(m.targets),
        "cases": cases,
        "comparisons": comparisons,
        "heatmap": {
            "rows": _heatmap_rows(scores),
            "total": len(scores),
            "baseline": index[m.baseline] if m.baseline is not None else -1,
        },
        "rates": _rates(m.pairwise, m.targets, m.baseline),
        "forest": _forest_matrix(m),
    }
    return payload


def _header(result: Pairwise | Matrix, title: str, level: int = 1) -> str:
    """The static top of the page (escaped): what is compared and the verdict."""
    parts = [f"<h{level}>{_plain(title)}</h{level}>"]
    if isinstance(result, Pairwise):
        parts.append(
            f'<p class="sub">Baseline <strong>{_plain(result.baseline)}</strong> → candidate '
            f"<strong>{_plain(result.candidate)}</strong></p>"
        )
        a = analysis_of(result)
        if a is not None:
            kind = a.verdict.kind
            css = VERDICT_CLASS.get(kind, "inconclusive")
            parts.append(
                f'<p class="verdict" id="verdict"><span class="badge {css}">{_plain(kind)}</span> '
                f"{_plain(a.verdict.reason)}</p>"
            )
    else:
        shape = (
            f"{plural(len(result.test_ids), 'test', 'tests')} x "
            f"{plural(len(result.targets), 'target', 'targets')}"
        )
        base = (
            f"; baseline <strong>{_plain(result.baseline)}</strong>"
            if result.baseline is not None
            else ""
        )
        parts.append(f'<p class="sub">{_plain(result.source)}: {shape}{base}</p>')
        if result.baseline is not None and result.regressions:
            names = ", ".join(_plain(p.candidate) for p in result.regressions)
            parts.append(
                f'<p class="verdict" id="verdict"><span class="badge worse">Regressed</span> '
                f"vs {_plain(result.baseline)} (mean delta below 0): {names}</p>"
            )
    return "\n".join(parts)


#: Style of the ``nav`` links, added only when a page has them.
NAV_CSS = (
    "nav.links { display: flex; flex-wrap: wrap; gap: 4px 16px; margin: 0 0 10px; }\n"
    "nav.links a { color: var(--accent); text-decoration: none; }\n"
)


def _nav(links: Sequence[tuple[str, str]]) -> str:
    if not links:
        return ""
    items = "".join(f'<a href="{_plain(href)}">{_plain(text)}</a>' for href, text in links)
    return f'<nav class="links">{items}</nav>\n'


def _figures_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table of figures: each row's first cell names it, the others are numbers."""
    head = "".join(f"<th>{_plain(h)}</th>" for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{_plain(cell)}</td>' if i else f"<th>{_plain(cell)}</th>"
            for i, cell in enumerate(row)
        )
        + "</tr>\n"
        for row in rows
    )
    return (
        f'<table class="figures">\n<thead><tr>{head}</tr></thead>\n'
        f"<tbody>\n{body}</tbody>\n</table>"
    )


_NO_SCRIPT_CASES = (
    '<noscript><p class="note">The case table (filter, sort, each case\'s input and '
    "outputs) needs JavaScript. Every case is in this file's source, as JSON, in the "
    "element with id evaldelta-data.</p></noscript>"
)


def _comparison_section(
    index: int, shown: dict[str, Any], c: Pairwise, overview: Sequence[str], pairwise: bool
) -> str:
    """One comparison, static: its verdict (a matrix's; a pairwise page's header gives
    it), warnings, figures, notes, the categories that moved and its charts, then the
    place the script puts the case table in."""
    parts: list[str] = []
    if not pairwise:
        parts.append(f"<h2>{_plain(shown['baseline'])} → {_plain(shown['candidate'])}</h2>")
        if shown["verdict"]:
            badge = VERDICT_CLASS.get(shown["verdict"], "inconclusive")
            parts.append(
                f'<p class="verdict"><span class="badge {badge}">{_plain(shown["verdict"])}'
                f"</span> {_plain(shown['reason'])}</p>"
            )
    parts += [f'<p class="warning">Warning: {_plain(p)}</p>' for p in shown["problems"]]
    if shown["figures"]:
        header = ("", "Baseline", "Candidate", "Change", f"{shown['level']} CI")
        parts.append(_figures_table(header, shown["figures"]))
    parts += [f'<p class="note">{_plain(note)}</p>' for note in shown["notes"]]
    parts.append(f'<p class="note">{_plain(shown["summary"])}</p>')
    if shown["categories"]:
        parts.append("<h3>Categories that moved (leads to investigate, not proof)</h3>")
        columns = ("Category", "Baseline", "Candidate", "Cases")
        parts.append(_figures_table(columns, shown["categories"]))
    histogram = delta_histogram_chart(
        delta_histogram(clean_all(c.delta.tolist())),
        "chart-deltas" if index == 0 else f"chart-deltas-{index}",
    )
    parts.append('<div class="charts">\n' + "\n".join([histogram, *overview]) + "\n</div>")
    parts.append(f'<div class="case-slot"><h2>Cases</h2>{_NO_SCRIPT_CASES}</div>')
    section_id = "comparison" if index == 0 else f"comparison-{index}"
    return (
        f'<section class="comparison" id="{section_id}" data-index="{index}">\n'
        + "\n".join(parts)
        + "\n</section>"
    )


def _main(result: Pairwise | Matrix, payload: dict[str, Any]) -> str:
    """The page's static body: every figure and chart, drawn from the payload (the
    figures as the page's JSON carries them) and the result's per-case deltas."""
    pairwise = payload["kind"] == "pairwise"
    cases, heatmap = payload["cases"], payload["heatmap"]
    overview = []
    if payload["forest"]["rows"]:
        overview.append(forest_chart(payload["forest"]))
    if payload["rates"]:
        overview.append(rate_chart(payload["rates"], mark_baseline=not pairwise))
    if heatmap["rows"]:
        overview.append(
            heatmap_chart(
                payload["targets"],
                cases["test_ids"],
                cases["scores"],
                heatmap["rows"],
                baseline=-1 if pairwise else heatmap["baseline"],
                total=heatmap["total"],
            )
        )
    comparisons = [result] if isinstance(result, Pairwise) else result.pairwise
    parts = (
        []
        if pairwise or not overview
        else ['<div class="charts">\n' + "\n".join(overview) + "\n</div>"]
    )
    parts += [
        _comparison_section(i, shown, c, overview if pairwise else (), pairwise)
        for i, (shown, c) in enumerate(zip(payload["comparisons"], comparisons, strict=True))
    ]
    if not comparisons:
        parts.append('<p class="note">One target: nothing to compare.</p>')
    return "\n".join(parts)


def script_policy(script: str, rest: str) -> str:
    """A Content Security Policy under which only ``script`` (by its sha256) runs,
    nothing is fetched and styles are inline, followed by ``rest``."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; "
        f"style-src 'unsafe-inline'; img-src data:; base-uri 'none'; {rest}"
    )


def render_html(
    result: Pairwise | Matrix,
    *,
    runs: Sequence[Run] = (),
    title: str | None = None,
    max_text: int = MAX_TEXT,
    nav: Sequence[tuple[str, str]] = (),
) -> str:
    """The result as one self-contained HTML page.

    Args:
        result: a pairwise comparison or an N-way matrix, as ``compare`` returns it.
        runs: the runs it was computed from, for each case's category and texts (the
            baseline's and the candidate's, or one combined run); load them with
            ``keep_text=True`` to show inputs and outputs. Without them the page has
            every figure but no texts.
        title: the page's heading (default: "evaldelta report").
        max_text: longest text kept per field and case.
        nav: links (href, text) shown above the heading, as the dashboard puts its
            way back to the runs list; none in a report written to a file.
    """
    if isinstance(result, Matrix):
        payload = _matrix_payload(result, runs, max_text)
    else:
        payload = _pairwise_payload(result, runs, max_text)
    cases = payload["cases"]
    payload.update(
        {
            "format": "evaldelta-html-report",
            "version": 1,
            "generator": f"evaldelta {__version__}",
            "has_texts": any(cases[k] is not None for k in ("input", "expected", "outputs")),
            "result": result.to_dict(),
        }
    )
    heading = title or "evaldelta report"
    script = report_script()
    csp = script_policy(script, "form-action 'none'")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{_plain(heading)}</title>\n"
        f"<style>\n{report_stylesheet()}{NAV_CSS if nav else ''}</style>\n"
        "</head>\n<body>\n<header>\n"
        f"{_nav(nav)}"
        f"{_header(result, heading)}\n"
        "</header>\n"
        f'<main id="app">\n{_main(result, payload)}\n</main>\n'
        f"<footer>Made by evaldelta {_plain(__version__)}. Self-contained: this file "
        "makes no network request.</footer>\n"
        f'<script type="application/json" id="evaldelta-data">{script_json(payload)}</script>\n'
        f"<script>{script}</script>\n"
        "</body>\n</html>\n"
    )


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], right_from: int = 1) -> str:
    """A plain HTML table of text cells (escaped); columns from ``right_from`` on are
    numbers, aligned right."""

    def cells(tag: str, row: Sequence[str]) -> str:
        return "".join(
            f'<{tag} style="text-align:right">{_plain(cell)}</{tag}>'
            if i >= right_from
            else f"<{tag}>{_plain(cell)}</{tag}>"
            for i, cell in enumerate(row)
        )

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', header)}</tr></thead><tbody>{body}</tbody></table>"


def render_html_summary(result: Pairwise | Matrix) -> str:
    """A compact HTML fragment of the result, for Jupyter's ``_repr_html_``: the
    report's header (what is compared, the verdict), its headline figures and the
    counts of cases, every text escaped. The full page is :func:`render_html`."""
    if isinstance(result, Matrix):
        parts = [_header(result, "evaldelta: N-way comparison", level=3)]
        if result.pairwise:
            shared = one_level(result.pairwise)
            level = f"{shared} CI" if shared is not None else "CI"
            columns = ("Comparison", "Wins", "Losses", "Ties", "Mean delta", level, "Verdict")
            parts.append(_table(columns, [comparison_row(p, shared) for p in result.pairwise]))
    else:
        parts = [_header(result, "evaldelta: comparison", level=3)]
        a = analysis_of(result)
        if a is not None:
            parts += [f"<p><strong>Warning:</strong> {_plain(p.message)}</p>" for p in a.problems]
            header = ("", "Baseline", "Candidate", "Change", f"{level_text(a.figures.level)} CI")
            parts.append(_table(header, figure_rows(a)))
            parts.append(f"<p>{_plain(mcnemar_line(a))}</p>")
            sequential = sequential_line(a)
            if sequential is not None:
                parts.append(f"<p>{_plain(sequential)}</p>")
        parts += [f"<p>{_plain(line)}</p>" for line in count_lines(result)]
    return '<div class="evaldelta">\n' + "\n".join(parts) + "\n</div>"
