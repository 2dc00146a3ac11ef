"""The HTML report's charts as inline SVG: pure functions, figures in, markup out.

Each chart is a ``<figure class="chart">`` holding one ``<svg class="plot">``, drawn
when the report is written, so that it shows with scripts off (CI artifact viewers,
mail clients, previews, print). Every text that comes from the data (test ids, target
names, labels) is escaped; a long one is shortened on the chart and given in full in a
``<title>``, which browsers show as a tooltip. The charts only draw what they are
given: the figures, intervals and bin counts come from the analysis.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from evaldelta.analysis._histogram import DeltaHistogram

__all__ = [
    "chart",
    "delta_histogram_chart",
    "escape",
    "fixed",
    "forest_chart",
    "heatmap_chart",
    "rate_chart",
    "signed",
    "viridis",
]

_SURROGATE = re.compile("[\ud800-\udfff]")

#: Stops of the viridis colour map (perceptually uniform, readable in grey and by
#: most colour-blind readers), interpolated linearly.
VIRIDIS = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))

#: Verdict -> the CSS class of its colour.
VERDICT_CLASS = {
    "Better": "better",
    "Worse": "worse",
    "Trade-off": "tradeoff",
    "No change": "nochange",
    "Inconclusive": "inconclusive",
}


def escape(text: str) -> str:
    """``text`` escaped for HTML and SVG, lone surrogates replaced (the file is UTF-8)."""
    return html.escape(_SURROGATE.sub("\ufffd", text), quote=True)


def _half_up(x: float) -> int:
    return math.floor(x + 0.5)


def _n(x: float) -> str:
    """A coordinate: at most two decimals, no trailing zeros."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fixed(x: float | None, digits: int) -> str:
    """``x`` with ``digits`` decimals, "n/a" when there is none."""
    if x is None or math.isnan(x):
        return "n/a"
    return f"{x:.{digits}f}"


def signed(x: float | None, digits: int) -> str:
    """``x`` with ``digits`` decimals and its sign, "n/a" when there is none."""
    text = fixed(x, digits)
    return text if text == "n/a" or text.startswith("-") else "+" + text


def _shorten(text: str, limit: int) -> str:
    return text[: limit - 1] + "…" if len(text) > limit else text


def viridis(t: float) -> tuple[str, bool]:
    """The colour of ``t`` in [0, 1] as ``rgb(r,g,b)``, and whether it is dark (for the
    colour of a label drawn on it)."""
    t = max(0.0, min(1.0, t))
    x = t * (len(VIRIDIS) - 1)
    i = min(len(VIRIDIS) - 2, math.floor(x))
    f = x - i
    a, b = VIRIDIS[i], VIRIDIS[i + 1]
    c = [_half_up(a[k] + (b[k] - a[k]) * f) for k in range(3)]
    luma = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]
    return "rgb({},{},{})".format(*c), luma < 140


def _title(text: str | None) -> str:
    return f"<title>{escape(text)}</title>" if text else ""


def _text(
    x: float,
    y: float,
    content: str,
    anchor: str | None = None,
    cls: str = "axis",
    title: str | None = None,
) -> str:
    where = f' text-anchor="{anchor}"' if anchor else ""
    return (
        f'<text x="{_n(x)}" y="{_n(y)}" class="{cls}"{where}>'
        f"{_title(title)}{escape(content)}</text>"
    )


def _line(x1: float, x2: float, y1: float, y2: float, cls: str) -> str:
    return f'<line x1="{_n(x1)}" x2="{_n(x2)}" y1="{_n(y1)}" y2="{_n(y2)}" class="{cls}"/>'


def _rect(
    x: float,
    y: float,
    width: float,
    height: float,
    *,
    cls: str | None = None,
    fill: str | None = None,
    title: str | None = None,
) -> str:
    attrs = f'x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}"'
    if cls:
        attrs += f' class="{cls}"'
    if fill:
        attrs += f' fill="{fill}"'
    if title:
        return f"<rect {attrs}>{_title(title)}</rect>"
    return f"<rect {attrs}/>"


def _plot(width: float, height: float, description: str, shapes: Sequence[str]) -> str:
    return (
        f'<svg class="plot" width="{_n(width)}" height="{_n(height)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" role="img" aria-label="{escape(description)}">\n'
        + "\n".join(shapes)
        + "\n</svg>"
    )


def chart(chart_id: str, title: str, note: str | None, body: str) -> str:
    """A chart in its frame: a caption, the drawing, an optional note under it."""
    under = f'\n<p class="note">{escape(note)}</p>' if note else ""
    return (
        f'<figure class="chart" id="{escape(chart_id)}">\n'
        f"<figcaption>{escape(title)}</figcaption>\n{body}{under}\n</figure>"
    )


def heatmap_chart(
    targets: Sequence[str],
    test_ids: Sequence[str],
    scores: Sequence[Sequence[float | None]],
    shown: Sequence[int],
    *,
    baseline: int = -1,
    total: int | None = None,
) -> str:
    """Score per test (row) and target (column), coloured from the lowest to the
    highest score shown (at least 0 to 1); ``shown`` are the rows drawn, ``baseline``
    the column marked as the baseline (-1: none), ``total`` the tests in all."""
    k = len(targets)
    label_w = 170
    cell_w = max(44, min(150, 480 // max(1, k)))
    cell_h = 16
    top = 40
    width = label_w + k * cell_w + 60
    height = top + len(shown) * cell_h + 40
    present = [v for i in shown for v in scores[i] if v is not None and not math.isnan(v)]
    lo, hi = min([0.0, *present]), max([1.0, *present])
    shapes: list[str] = []
    for j, target in enumerate(targets):
        marked = j == baseline
        cx = label_w + j * cell_w + cell_w / 2
        short = _shorten(target, max(6, math.floor(cell_w / 6.5)))
        cls = "axis strong" if marked else "axis"
        shapes.append(_text(cx, top - (20 if marked else 8), short, "middle", cls, target))
        if marked:
            shapes.append(_text(cx, top - 8, "baseline", "middle"))
    for r, i in enumerate(shown):
        y = top + r * cell_h
        test_id = test_ids[i]
        shapes.append(
            _text(label_w - 6, y + cell_h - 4, _shorten(test_id, 26), "end", title=test_id)
        )
        for j, v in enumerate(scores[i]):
            x = label_w + j * cell_w + 1
            where = f"{test_id} / {targets[j]}: "
            if v is None or math.isnan(v):
                box = _rect(
                    x, y + 1, cell_w - 2, cell_h - 2, cls="missing", title=where + "no result"
                )
                shapes.append(box)
                continue
            fill, dark = viridis((v - lo) / ((hi - lo) or 1))
            shapes.append(
                _rect(x, y + 1, cell_w - 2, cell_h - 2, fill=fill, title=where + fixed(v, 3))
            )
            cls = "cell light" if dark else "cell"
            shapes.append(_text(x + cell_w / 2 - 1, y + cell_h - 4, fixed(v, 2), "middle", cls))
    # The legend: the colour scale from the lowest to the highest score shown.
    ly = top + len(shown) * cell_h + 14
    steps = 20
    lw = min(200, k * cell_w)
    for s in range(steps):
        fill, _ = viridis(s / (steps - 1))
        shapes.append(_rect(label_w + s * lw / steps, ly, lw / steps + 0.5, 8, fill=fill))
    shapes.append(_text(label_w - 6, ly + 8, fixed(lo, 2), "end"))
    shapes.append(_text(label_w + lw + 6, ly + 8, fixed(hi, 2)))
    total = len(scores) if total is None else total
    note = (
        f"The {len(shown)} of {total:,} tests whose scores differ most across targets."
        if len(shown) < total
        else None
    )
    body = _plot(width, height, "Score per test and target", shapes)
    return chart("chart-heatmap", "Score per test and target", note, body)


def _pct(x: float | None) -> str:
    return fixed(None if x is None else x * 100, 1)


def rate_chart(rates: Sequence[Mapping[str, Any]], *, mark_baseline: bool = False) -> str:
    """Pass rate per target, a bar with its interval; each row of ``rates`` has
    ``target``, ``baseline`` (bool), ``level`` and ``pass_rate`` (``estimate``,
    ``ci_low``, ``ci_high``, fractions). ``mark_baseline`` names the baseline's row."""
    label_w = 170
    plot_w = 300
    row_h = 26
    top = 10
    bottom = top + len(rates) * row_h

    def x(v: float) -> float:
        return label_w + max(0.0, min(1.0, v)) * plot_w

    shapes: list[str] = []
    for t in range(5):
        gx = label_w + t * plot_w / 4
        shapes.append(_line(gx, gx, top, bottom, "grid"))
        shapes.append(_text(gx, bottom + 16, f"{t * 25}%", "middle"))
    for r, row in enumerate(rates):
        y = top + r * row_h
        cy = y + row_h / 2
        iv = row["pass_rate"]
        name = str(row["target"]) + (" (baseline)" if row["baseline"] and mark_baseline else "")
        cls = "axis strong" if row["baseline"] else "axis"
        shapes.append(_text(label_w - 6, cy + 4, _shorten(name, 26), "end", cls, name))
        estimate, low, high = iv["estimate"], iv["ci_low"], iv["ci_high"]
        if estimate is None:
            continue
        interval = f"{_pct(low)}% to {_pct(high)}%"
        summary = f"{name}: pass rate {_pct(estimate)}% ({row['level']} CI {interval})"
        shapes.append(
            _rect(
                label_w,
                y + 5,
                max(0.5, x(estimate) - label_w),
                row_h - 10,
                cls="bar baseline" if row["baseline"] else "bar",
                title=summary,
            )
        )
        if low is not None and high is not None:
            a, b = x(low), x(high)
            shapes.append(_line(a, b, cy, cy, "whisker"))
            shapes.append(_line(a, a, cy - 6, cy + 6, "whisker"))
            shapes.append(_line(b, b, cy - 6, cy + 6, "whisker"))
        text = f"{_pct(estimate)}% [{_pct(low)}, {_pct(high)}]"
        shapes.append(_text(label_w + plot_w + 8, cy + 4, text))
    level = str(rates[0]["level"]) if rates else ""
    body = _plot(label_w + plot_w + 150, bottom + 30, "Pass rate per target", shapes)
    return chart("chart-rates", f"Pass rate per target, {level} CI", None, body)


def _ticks(lo: float, hi: float, count: int) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) from ``lo`` to ``hi``."""
    span = hi - lo
    if not span > 0:
        return [lo]
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next((m * magnitude for m in (1, 2, 5, 10) if span / (m * magnitude) <= count), raw)
    out = []
    t = math.ceil(lo / step) * step
    while t <= hi + 1e-9:
        out.append(0.0 if abs(t) < 1e-12 else t)
        t += step
    return out


def forest_chart(forest: Mapping[str, Any]) -> str:
    """Each change with its interval against a dashed zero line: ``forest`` has
    ``rows`` (``label``, ``estimate``, ``low``, ``high``, ``excludes_zero`` and the
    ``verdict`` that colours it, if any), ``unit``, ``digits`` and ``level``."""
    rows: Sequence[Mapping[str, Any]] = forest["rows"]
    digits = int(forest["digits"])
    unit = str(forest["unit"])
    label_w = 230
    plot_w = 320
    row_h = 26
    top = 10
    bottom = top + len(rows) * row_h
    lo = min([0.0, *(float(r["low"]) for r in rows if r["low"] is not None)])
    hi = max([0.0, *(float(r["high"]) for r in rows if r["high"] is not None)])
    pad = (hi - lo) * 0.08 or 1.0
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return label_w + (v - lo) / (hi - lo) * plot_w

    shapes = [_line(label_w, label_w + plot_w, bottom, bottom, "grid")]
    for t in _ticks(lo, hi, 5):
        shapes.append(_line(x(t), x(t), bottom, bottom + 4, "grid"))
        shapes.append(_text(x(t), bottom + 16, signed(t, digits), "middle"))
    shapes.append(_line(x(0), x(0), top - 4, bottom, "zero"))
    for r, row in enumerate(rows):
        cy = top + r * row_h + row_h / 2
        name = str(row["label"])
        shapes.append(_text(label_w - 8, cy + 4, _shorten(name, 34), "end", title=name))
        estimate, low, high = row["estimate"], row["low"], row["high"]
        if estimate is None:
            shapes.append(_text(label_w + 4, cy + 4, "n/a"))
            continue
        kind = VERDICT_CLASS.get(row["verdict"] or "")
        if kind is None and row["excludes_zero"]:
            kind = "better" if estimate > 0 else "worse"
        cls = f"mark {kind or 'inconclusive'}"
        text = f"{signed(estimate, digits)} [{signed(low, digits)}, {signed(high, digits)}]"
        if low is not None and high is not None:
            shapes.append(_line(x(low), x(high), cy, cy, cls + " ci"))
        verdict = f" ({row['verdict']})" if row["verdict"] else ""
        tip = f"{name}: {text} {unit}{verdict}"
        shapes.append(_rect(x(estimate) - 5, cy - 5, 10, 10, cls=cls, title=tip))
        shapes.append(_text(label_w + plot_w + 8, cy + 4, text))
    body = _plot(
        label_w + plot_w + 160, bottom + 34, "Change of each comparison with its CI", shapes
    )
    return chart(
        "chart-forest",
        f"Change against the baseline ({unit}), {forest['level']} CI",
        "A whisker that crosses the dashed zero line could be chance.",
        body,
    )


def delta_histogram_chart(histogram: DeltaHistogram, chart_id: str = "chart-deltas") -> str:
    """The binned per-case deltas: red bins below zero, green above, grey the ties
    (``chart_id``: the figure's id, one per comparison on the page)."""
    counts = histogram.counts
    bins = len(counts)
    most = max(1, *counts)
    plot_w = 460
    plot_h = 150
    left = 40
    top = 10
    base = top + plot_h
    bw = plot_w / bins
    shapes: list[str] = []
    for b, (n, centre) in enumerate(zip(counts, histogram.centres, strict=True)):
        bh = n / most * plot_h
        cls = "bar tie"
        if centre < -1e-9:
            cls = "bar worse"
        elif centre > 1e-9:
            cls = "bar better"
        what = f"{n} case{'' if n == 1 else 's'} with a delta near {signed(centre, 2)}"
        shapes.append(_rect(left + b * bw + 1, base - bh, bw - 2, bh, cls=cls, title=what))
    shapes.append(_line(left, left + plot_w, base, base, "grid"))
    shapes.append(_text(left - 6, top + 10, str(most), "end"))
    shapes.append(_text(left - 6, base, "0", "end"))
    for b in (0, (bins - 1) // 2, bins - 1):
        centre = histogram.centres[b]
        shapes.append(_text(left + b * bw + bw / 2, base + 16, signed(centre, 2), "middle"))
    shapes.append(_text(left + plot_w / 2, base + 32, "candidate − baseline, per case", "middle"))
    body = _plot(left + plot_w + 20, base + 36, "Distribution of per-case deltas", shapes)
    return chart(
        chart_id,
        f"Distribution of per-case deltas ({histogram.n:,} cases)",
        "Red: the candidate scored lower on the case; green: higher.",
        body,
    )
