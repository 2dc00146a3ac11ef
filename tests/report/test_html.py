"""The HTML report as text: self-contained, data escaped, the JSON it carries intact.
(tests/browser/ opens it in a real browser.)"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evaldelta.analysis._comparison import Comparison
from evaldelta.api import compare, compare_matrix
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.report._html import (
    render_html,
    render_html_summary,
    report_script,
    script_json,
)
from evaldelta.report._json import render_json
from evaldelta.report._markdown import count_lines, mcnemar_line, render_markdown
from tests.conftest import EXAMPLE, FIXTURES, REPO

AGENT = REPO / "examples" / "agent-versions"
COMBINED = EXAMPLE / "fixtures" / "combined-results.jsonl"
HOSTILE = [
    "<script>window.__xss = 1</script>",
    '"><img src=x onerror="window.__xss = 2">',
    "</script><script>window.__xss = 3</script>",
    "<!-- <script>",
    "\u2028\u2029&amp;",
]


def payload(page: str) -> dict[str, Any]:
    """The JSON the page carries."""
    found = re.search(
        r'<script type="application/json" id="evaldelta-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_script_json_cannot_end_its_element() -> None:
    data = {"a": "</script><script>alert(1)</script>", "b": "<!--", "c": "x\u2028y\u2029&"}
    text = script_json(data)
    assert "<" not in text
    assert ">" not in text
    assert "&" not in text
    assert "\u2028" not in text
    assert "\u2029" not in text
    assert json.loads(text) == data


def test_script_json_writes_non_finite_numbers_as_null() -> None:
    assert json.loads(script_json({"x": float("nan"), "y": [float("inf"), 1.5]})) == {
        "x": None,
        "y": [None, 1.5],
    }


def test_script_json_escapes_lone_surrogates() -> None:
    text = script_json({"x": "a\ud800b"})
    text.encode("utf-8")  # no lone surrogate left to fail the file's encoding
    assert "\\ud800" in text


def test_page_is_self_contained() -> None:
    page = render_html(compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"))
    assert page.startswith("<!DOCTYPE html>")
    # No address to fetch: the only URLs are the SVG namespace and an empty data: icon.
    urls = set(re.findall(r"[a-z]+://[^\s\"'<>)]*", page))
    assert urls <= {"http://www.w3.org/2000/svg"}
    assert re.findall(r"\b(?:src|href)\s*=", page) == ["href="]
    assert '<link rel="icon" href="data:,">' in page
    assert page.count("<script") == 2
    assert page.count("<style>") == 1


def test_content_security_policy_allows_only_our_script() -> None:
    page = render_html(compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"))
    script = report_script()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in page
    assert "default-src 'none'" in page
    assert f"<script>{script}</script>" in page


def test_script_never_parses_data_as_html() -> None:
    script = report_script()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in script
    assert "</" not in script  # nothing in it could end its own element


def test_page_carries_the_json_result() -> None:
    c = compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl")
    data = payload(render_html(c))
    assert data["result"] == json.loads(render_json(c))
    assert data["kind"] == "pairwise"
    assert data["comparisons"][0]["verdict"] == "Inconclusive"
    assert data["comparisons"][0]["figures"][0] == [
        "Mean score",
        "0.817",
        "0.817",
        "+0.0 points",
        "[-44.8, +44.8]",
    ]
    assert data["has_texts"] is False


def test_texts_and_categories_come_from_the_runs() -> None:
    before, after = AGENT / "before.jsonl", AGENT / "after.jsonl"
    runs = (load(before, keep_text=True), load(after, keep_text=True))
    data = payload(render_html(compare(*runs), runs=runs))
    cases = data["cases"]
    assert cases["test_ids"][0] == "long_chain-00"
    assert cases["category"][:3] == ["long_chain", "no_tool", "retrieval"]
    assert cases["input"][0] == "Customer question #0 (long chain)"
    assert data["has_texts"] is True
    forest = data["forest"]
    assert [r["label"] for r in forest["rows"]] == ["Mean score", "Pass rate"]
    assert forest["rows"][0]["estimate"] == pytest.approx(7.2222, abs=1e-3)
    assert forest["unit"] == "points"
    assert [r["target"] for r in data["rates"]] == ["Baseline", "Candidate"]


def test_matrix_page_maps_each_comparison_to_matrix_rows() -> None:
    run = load(COMBINED, keep_text=True)
    m = compare_matrix(run, baseline="gpt-4.1")
    data = payload(render_html(m, runs=(run,)))
    assert data["kind"] == "matrix"
    assert data["targets"] == ["gemini-3-flash-preview", "gpt-4.1", "gpt-5-mini"]
    assert data["heatmap"]["baseline"] == 1
    assert data["cases"]["scores"][0] == [0.9, 0.85, 0.95]
    outputs = data["cases"]["outputs"]
    assert outputs[1][0] == "Hi there. What can I do for you?"
    assert [c["columns"] for c in data["comparisons"]] == [[1, 0], [1, 2]]
    assert data["comparisons"][0]["rows"] == [0, 1, 2]
    assert [r["label"] for r in data["forest"]["rows"]] == [
        "gpt-4.1 → gemini-3-flash-preview",
        "gpt-4.1 → gpt-5-mini",
    ]
    assert [r["baseline"] for r in data["rates"]] == [False, True, False]


def test_heat_map_keeps_the_tests_that_differ_most() -> None:
    records = [
        Record(f"q{i:03d}", score=1.0 if (t == "b" and i % 10 == 0) else 0.5, target=t)
        for i in range(200)
        for t in ("a", "b")
    ]
    data = payload(render_html(compare_matrix(Run.from_records(records), baseline="a")))
    rows = data["heatmap"]["rows"]
    assert len(rows) == 60
    assert data["heatmap"]["total"] == 200
    assert set(range(0, 200, 10)) <= set(rows)
    assert rows == sorted(rows)


def test_long_texts_are_cut() -> None:
    run = Run.from_records(
        [Record("q", 1.0, target="a", output="x" * 50), Record("q", 0.0, target="b")]
    )
    c = compare(run, run, baseline_target="a", candidate_target="b")
    data = payload(render_html(c, runs=(run,), max_text=10))
    assert data["cases"]["outputs"][0][0] == "x" * 10 + "\n… (cut: 50 characters in all)"


def test_hostile_text_stays_text() -> None:
    records = []
    base, cand = "base" + HOSTILE[0], "cand" + HOSTILE[1]
    for k, bad in enumerate(HOSTILE):
        for target, score in ((base, 1.0), (cand, 0.0)):
            records.append(
                Record(
                    f"id{k}{bad}",
                    score,
                    target=target,
                    category="cat" + bad,
                    input="in" + bad,
                    output="out" + bad,
                    expected="exp" + bad,
                )
            )
    run = Run.from_records(records)
    for result in (
        compare(run, run, baseline_target=base, candidate_target=cand),
        compare_matrix(run),
    ):
        page = render_html(result, runs=(run,), title="report " + HOSTILE[1])
        assert page.count("<script") == 2
        assert page.count("</script>") == 2
        assert "<img" not in page
        assert "<!-- <script>" not in page
        assert f"<h1>{html.escape('report ' + HOSTILE[1])}</h1>" in page
        if isinstance(result, Comparison):  # its header names both sides
            assert f"<strong>{html.escape(base)}</strong>" in page
        data = payload(page)
        assert data["cases"]["test_ids"][0] == "id0" + HOSTILE[0]
        assert data["cases"]["input"][1] == "in" + HOSTILE[1]


# -- the summary fragment that Jupyter shows (_repr_html_) ------------------------------


def _hostile_run() -> tuple[Run, str, str]:
    base, cand = "base" + HOSTILE[0], "cand" + HOSTILE[1]
    records = [
        Record(f"id{k}{bad}", score, target=target)
        for k, bad in enumerate(HOSTILE)
        for target, score in ((base, 1.0), (cand, 0.0))
    ]
    return Run.from_records(records), base, cand


def test_summary_fragment_of_a_comparison() -> None:
    before, after = load(AGENT / "before.jsonl"), load(AGENT / "after.jsonl")
    c = compare(before, after)
    fragment = c._repr_html_()
    assert fragment == render_html_summary(c)
    assert fragment.startswith('<div class="evaldelta">\n<h3>evaldelta: comparison</h3>')
    assert fragment.endswith("</div>")
    assert "<script" not in fragment
    assert "<style" not in fragment
    # The same words and figures as the Markdown report, as HTML.
    a = c.analysis
    assert a is not None
    verdict = html.escape(a.verdict.reason)
    assert f'<span class="badge inconclusive">Inconclusive</span> {verdict}</p>' in fragment
    markdown = render_markdown(c)
    assert '<td>Pass rate</td><td style="text-align:right">72.2%</td>' in fragment
    assert "| Pass rate | 72.2% | 79.4% | +7.2 points | [-1.1, +15.6] |" in markdown
    assert f"<p>{html.escape(mcnemar_line(a))}</p>" in fragment
    for line in count_lines(c):
        assert line in markdown
        assert f"<p>{html.escape(line)}</p>" in fragment


def test_summary_fragment_of_a_matrix() -> None:
    m = compare_matrix(load(COMBINED), baseline="gpt-4.1")
    fragment = m._repr_html_()
    assert fragment.startswith('<div class="evaldelta">\n<h3>evaldelta: N-way comparison</h3>')
    assert "<th>Comparison</th>" in fragment
    assert fragment.count("<tr>") == 1 + len(m.pairwise)
    assert f"<td>{html.escape('gpt-4.1 → gpt-5-mini')}</td>" in fragment


def test_summary_fragment_of_a_pairing_without_statistics() -> None:
    from evaldelta.pairing import pair

    c = pair(load(FIXTURES / "baseline.jsonl"), load(FIXTURES / "candidate.jsonl"))
    fragment = c._repr_html_()
    assert "badge" not in fragment
    assert "<table>" not in fragment
    assert (
        "<p>3 cases compared: 1 win, 1 loss, 1 tie (threshold 0.1); mean delta +0.000.</p>"
        in fragment
    )


def test_summary_fragment_escapes_everything() -> None:
    run, base, cand = _hostile_run()
    for result in (
        compare(run, run, baseline_target=base, candidate_target=cand),
        compare_matrix(run, baseline=base),
    ):
        fragment = result._repr_html_()
        assert "<script" not in fragment
        assert "<img" not in fragment
        assert "<!--" not in fragment
        assert html.escape(base) in fragment
        assert html.escape(cand) in fragment


# -- static first: figures and charts in the file, the script only for the case table ----


def _main(page: str) -> str:
    found = re.search(r'<main id="app">\n(.*?)\n</main>', page, re.S)
    assert found is not None
    return found.group(1)


def test_pairwise_page_has_its_figures_and_charts_without_script() -> None:
    before, after = AGENT / "before.jsonl", AGENT / "after.jsonl"
    runs = (load(before, keep_text=True), load(after, keep_text=True))
    page = render_html(compare(*runs), runs=runs)
    main = _main(page)
    assert "<script" not in main
    assert main.count("<svg") == 4
    for chart in ("chart-deltas", "chart-forest", "chart-rates", "chart-heatmap"):
        assert f'<figure class="chart" id="{chart}">' in main
    assert main.count('<section class="comparison"') == 1
    assert '<table class="figures">' in main
    assert '<th>Pass rate</th><td class="num">72.2%</td>' in main
    assert "<h3>Categories that moved (leads to investigate, not proof)</h3>" in main
    assert "Distribution of per-case deltas (60 cases)" in main
    # 60 tests x 2 runs in the heat map, each with its score as a tooltip
    assert main.count("<title>long_chain-00 / ") == 2
    assert '<div class="case-slot"><h2>Cases</h2><noscript>' in main


def test_matrix_page_shows_its_heat_map_and_every_comparison_without_script() -> None:
    run = load(COMBINED, keep_text=True)
    m = compare_matrix(run, baseline="gpt-4.1")
    main = _main(render_html(m, runs=(run,)))
    heat = main[main.index('<figure class="chart" id="chart-heatmap">') :]
    heat = heat[: heat.index("</figure>")]
    assert len(re.findall(r'<rect [^>]*fill="rgb\(', heat)) == 9 + 20  # cells, legend
    assert "<title>greeting / gpt-4.1: 0.850</title>" in heat
    assert 'class="axis strong" text-anchor="middle"><title>gpt-4.1</title>' in heat
    # the overview once, then one section (verdict, figures, histogram) per comparison
    assert main.count("<svg") == 3 + len(m.pairwise)
    assert main.count('<section class="comparison"') == len(m.pairwise) == 2
    assert '<section class="comparison" id="comparison" data-index="0">' in main
    assert "<h2>gpt-4.1 → gpt-5-mini</h2>" in main
    ids = re.findall(r' id="([^"]+)"', main)
    assert len(ids) == len(set(ids))


def test_one_target_has_nothing_to_compare() -> None:
    m = compare_matrix(Run.from_records([Record("q", 1.0, target="a")]))
    main = _main(render_html(m))
    assert '<p class="note">One target: nothing to compare.</p>' in main
    assert "<section" not in main


def test_hostile_text_in_the_charts_stays_text() -> None:
    run, base, cand = _hostile_run()
    for result in (
        compare(run, run, baseline_target=base, candidate_target=cand),
        compare_matrix(run, baseline=base),
    ):
        main = _main(render_html(result, runs=(run,)))
        assert "<script" not in main
        assert "<img" not in main
        assert "<!--" not in main
        assert f"<title>{html.escape('id0' + HOSTILE[0])} / " in main
        assert main.count("<svg") == main.count("</svg>")


def test_script_and_stylesheet_are_package_files() -> None:
    from importlib import resources

    folder = resources.files("evaldelta.report").joinpath("assets")
    assert report_script() == folder.joinpath("report.js").read_text(encoding="utf-8")
    css = folder.joinpath("report.css").read_text(encoding="utf-8")
    page = render_html(compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"))
    assert f"<style>\n{css}</style>" in page


def test_script_parses(tmp_path: Path) -> None:
    """``node --check`` parses the report's script (``make lint`` runs ESLint over it,
    and tests/browser/ runs it). Node.js is needed for ``make lint``: in CI its absence
    fails here too."""
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed: `make lint` needs Node.js and npm")
        pytest.skip("node is not installed: the script's syntax is checked in tests/browser/")
    script = tmp_path / "report.js"
    script.write_text(report_script(), encoding="utf-8")
    proc = subprocess.run([node, "--check", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert report_script().lstrip().startswith("// ")
    assert '"use strict";' in report_script()


def test_the_report_names_the_package_version() -> None:
    import evaldelta
    from evaldelta._version import __version__

    assert evaldelta.__version__ == __version__
    page = render_html(compare(FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"))
    assert f"<footer>Made by evaldelta {__version__}." in page
    assert payload(page)["generator"] == f"evaldelta {__version__}"
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '[tool.hatch.version]\npath = "src/evaldelta/_version.py"' in pyproject
