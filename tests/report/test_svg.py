"""Golden outputs of the HTML report's charts: small fixed inputs, exact SVG."""

from __future__ import annotations

import re
from typing import Any

from evaldelta.analysis._histogram import delta_histogram
from evaldelta.report._svg import (
    delta_histogram_chart,
    escape,
    forest_chart,
    heatmap_chart,
    rate_chart,
    signed,
    viridis,
)

HOSTILE = '</svg><script>window.__xss = 1</script>"><img src=x onerror=alert(1)>&amp;'

HISTOGRAM = """\
<figure class="chart" id="chart-deltas">
<figcaption>Distribution of per-case deltas (5 cases)</figcaption>
<svg class="plot" width="520" height="196" viewBox="0 0 520 196" role="img" \
aria-label="Distribution of per-case deltas">
<rect x="41" y="85" width="90" height="75" class="bar worse"><title>1 case with a delta near \
-0.50</title></rect>
<rect x="133" y="160" width="90" height="0" class="bar worse"><title>0 cases with a delta near \
-0.25</title></rect>
<rect x="225" y="10" width="90" height="150" class="bar tie"><title>2 cases with a delta near \
+0.00</title></rect>
<rect x="317" y="85" width="90" height="75" class="bar better"><title>1 case with a delta near \
+0.25</title></rect>
<rect x="409" y="85" width="90" height="75" class="bar better"><title>1 case with a delta near \
+0.50</title></rect>
<line x1="40" x2="500" y1="160" y2="160" class="grid"/>
<text x="34" y="20" class="axis" text-anchor="end">2</text>
<text x="34" y="160" class="axis" text-anchor="end">0</text>
<text x="86" y="176" class="axis" text-anchor="middle">-0.50</text>
<text x="270" y="176" class="axis" text-anchor="middle">+0.00</text>
<text x="454" y="176" class="axis" text-anchor="middle">+0.50</text>
<text x="270" y="192" class="axis" text-anchor="middle">candidate − baseline, per case</text>
</svg>
<p class="note">Red: the candidate scored lower on the case; green: higher.</p>
</figure>"""

FOREST = """\
<figure class="chart" id="chart-forest">
<figcaption>Change against the baseline (points), 95% CI</figcaption>
<svg class="plot" width="710" height="96" viewBox="0 0 710 96" role="img" \
aria-label="Change of each comparison with its CI">
<line x1="230" x2="550" y1="62" y2="62" class="grid"/>
<line x1="230.85" x2="230.85" y1="62" y2="66" class="grid"/>
<text x="230.85" y="78" class="axis" text-anchor="middle">-5.0</text>
<line x1="336.95" x2="336.95" y1="62" y2="66" class="grid"/>
<text x="336.95" y="78" class="axis" text-anchor="middle">+0.0</text>
<line x1="443.05" x2="443.05" y1="62" y2="66" class="grid"/>
<text x="443.05" y="78" class="axis" text-anchor="middle">+5.0</text>
<line x1="549.15" x2="549.15" y1="62" y2="66" class="grid"/>
<text x="549.15" y="78" class="axis" text-anchor="middle">+10.0</text>
<line x1="336.95" x2="336.95" y1="6" y2="62" class="zero"/>
<text x="222" y="27" class="axis" text-anchor="end"><title>Mean score</title>Mean score</text>
<line x1="358.17" x2="527.93" y1="23" y2="23" class="mark better ci"/>
<rect x="438.05" y="18" width="10" height="10" class="mark better"><title>Mean score: +5.0 \
[+1.0, +9.0] points (Better)</title></rect>
<text x="558" y="27" class="axis">+5.0 [+1.0, +9.0]</text>
<text x="222" y="53" class="axis" text-anchor="end"><title>Scorer x</title>Scorer x</text>
<line x1="252.07" x2="326.34" y1="49" y2="49" class="mark worse ci"/>
<rect x="289.51" y="44" width="10" height="10" class="mark worse"><title>Scorer x: -2.0 \
[-4.0, -0.5] points</title></rect>
<text x="558" y="53" class="axis">-2.0 [-4.0, -0.5]</text>
</svg>
<p class="note">A whisker that crosses the dashed zero line could be chance.</p>
</figure>"""

RATES = """\
<figure class="chart" id="chart-rates">
<figcaption>Pass rate per target, 95% CI</figcaption>
<svg class="plot" width="620" height="92" viewBox="0 0 620 92" role="img" \
aria-label="Pass rate per target">
<line x1="170" x2="170" y1="10" y2="62" class="grid"/>
<text x="170" y="78" class="axis" text-anchor="middle">0%</text>
<line x1="245" x2="245" y1="10" y2="62" class="grid"/>
<text x="245" y="78" class="axis" text-anchor="middle">25%</text>
<line x1="320" x2="320" y1="10" y2="62" class="grid"/>
<text x="320" y="78" class="axis" text-anchor="middle">50%</text>
<line x1="395" x2="395" y1="10" y2="62" class="grid"/>
<text x="395" y="78" class="axis" text-anchor="middle">75%</text>
<line x1="470" x2="470" y1="10" y2="62" class="grid"/>
<text x="470" y="78" class="axis" text-anchor="middle">100%</text>
<text x="164" y="27" class="axis strong" text-anchor="end"><title>a (baseline)</title>\
a (baseline)</text>
<rect x="170" y="15" width="150" height="16" class="bar baseline"><title>a (baseline): pass rate \
50.0% (95% CI 25.0% to 75.0%)</title></rect>
<line x1="245" x2="395" y1="23" y2="23" class="whisker"/>
<line x1="245" x2="245" y1="17" y2="29" class="whisker"/>
<line x1="395" x2="395" y1="17" y2="29" class="whisker"/>
<text x="478" y="27" class="axis">50.0% [25.0, 75.0]</text>
<text x="164" y="53" class="axis" text-anchor="end"><title>b</title>b</text>
</svg>
</figure>"""


def _rate(target: str, baseline: bool, *iv: float | None) -> dict[str, Any]:
    estimate, low, high = iv
    return {
        "target": target,
        "baseline": baseline,
        "level": "95%",
        "pass_rate": {"estimate": estimate, "ci_low": low, "ci_high": high},
    }


def _forest_row(label: str, verdict: str | None, *iv: float | None) -> dict[str, Any]:
    estimate, low, high = iv
    excludes = low is not None and high is not None and (low > 0 or high < 0)
    return {
        "label": label,
        "verdict": verdict,
        "estimate": estimate,
        "low": low,
        "high": high,
        "excludes_zero": excludes,
    }


def _forest(*rows: dict[str, Any]) -> dict[str, Any]:
    return {"rows": list(rows), "unit": "points", "digits": 1, "level": "95%"}


def test_delta_histogram_golden() -> None:
    chart = delta_histogram_chart(delta_histogram([-0.5, 0.0, 0.0, 0.25, 0.5], bins=5))
    assert chart == HISTOGRAM


def test_forest_golden() -> None:
    forest = _forest(
        _forest_row("Mean score", "Better", 5.0, 1.0, 9.0),
        _forest_row("Scorer x", None, -2.0, -4.0, -0.5),  # no verdict: coloured by its CI
    )
    assert forest_chart(forest) == FOREST


def test_rate_bars_golden() -> None:
    rates = [_rate("a", True, 0.5, 0.25, 0.75), _rate("b", False, None, None, None)]
    assert rate_chart(rates, mark_baseline=True) == RATES


def test_heatmap_draws_every_cell_and_marks_the_baseline() -> None:
    chart = heatmap_chart(
        ["a", "b"], ["t1", "t2"], [[0.0, 1.0], [0.5, None]], [0, 1], baseline=0, total=3
    )
    assert chart.startswith('<figure class="chart" id="chart-heatmap">\n')
    assert chart.count("<svg") == 1
    # 3 coloured cells, one missing, 20 steps of the legend
    assert len(re.findall(r'<rect [^>]*fill="rgb\(', chart)) == 3 + 20
    assert chart.count('class="missing"') == 1
    assert '<rect x="171" y="41" width="148" height="14" fill="rgb(68,1,84)">' in chart
    assert "<title>t1 / a: 0.000</title>" in chart
    assert "<title>t2 / b: no result</title>" in chart
    assert '<text x="245" y="20" class="axis strong" text-anchor="middle">' in chart
    assert '<text x="245" y="32" class="axis" text-anchor="middle">baseline</text>' in chart
    assert '<p class="note">The 2 of 3 tests whose scores differ most across targets.</p>' in chart
    unmarked = heatmap_chart(["a", "b"], ["t1"], [[0.2, 0.4]], [0])
    assert "baseline" not in unmarked
    assert '<p class="note">' not in unmarked  # every test shown


def test_long_labels_are_shortened_and_given_in_full() -> None:
    long_id = "a-very-long-test-identifier-that-goes-on"
    chart = heatmap_chart(["x"], [long_id], [[0.5]], [0])
    assert f"<title>{long_id}</title>a-very-long-test-identifi…</text>" in chart


def test_every_text_is_escaped() -> None:
    bad = escape(HOSTILE)
    charts = [
        heatmap_chart([HOSTILE, "b"], [HOSTILE], [[0.1, 0.9]], [0], baseline=0),
        rate_chart([_rate(HOSTILE, True, 0.5, 0.4, 0.6)], mark_baseline=True),
        forest_chart(_forest(_forest_row(HOSTILE, "Worse", -1.0, -2.0, -0.5))),
        delta_histogram_chart(delta_histogram([0.1, -0.1])),
    ]
    for chart in charts:
        assert "<script" not in chart
        assert "<img" not in chart
        assert chart.count("<svg") == 1
        assert chart.count("</svg>") == 1
    for chart in charts[:3]:
        assert bad in chart  # in full, in a tooltip
    assert "&lt;/svg&gt;&lt;script&gt;" in bad
    assert "&amp;amp;" in bad
    assert escape("a\ud800b") == "a\ufffdb"


def test_missing_figures_are_drawn_as_such() -> None:
    chart = forest_chart(_forest(_forest_row("Scorer y", None, None, None, None)))
    assert '<text x="234" y="27" class="axis">n/a</text>' in chart
    assert "mark" not in chart
    assert signed(None, 2) == "n/a"
    assert signed(0.0, 1) == "+0.0"
    assert signed(-0.25, 2) == "-0.25"


def test_viridis_runs_from_purple_to_yellow() -> None:
    assert viridis(0.0) == ("rgb(68,1,84)", True)
    assert viridis(0.5) == ("rgb(33,145,140)", True)
    assert viridis(1.0) == ("rgb(253,231,37)", False)
    assert viridis(-1.0) == viridis(0.0)
    assert viridis(2.0) == viridis(1.0)


def test_charts_are_pure() -> None:
    rates = [_rate("a", True, 0.5, 0.25, 0.75)]
    assert rate_chart(rates) == rate_chart(rates)
    assert rates == [_rate("a", True, 0.5, 0.25, 0.75)]  # the input is left as it was
