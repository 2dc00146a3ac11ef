"""The HTML report in a real browser: it shows its figures and charts with scripts off,
filters, expands, runs none of the data, and stays quick with 10,000 cases."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from evaldelta.api import compare, compare_matrix
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.report._html import render_html
from tests.browser.conftest import watched_page
from tests.conftest import EXAMPLE, REPO

BEFORE = REPO / "examples" / "agent-versions" / "before.jsonl"
AFTER = REPO / "examples" / "agent-versions" / "after.jsonl"
COMBINED = EXAMPLE / "fixtures" / "combined-results.jsonl"
CHARTS = ("#chart-heatmap", "#chart-rates", "#chart-forest", "#chart-deltas")


def _docs_screenshot(page: Any, name: str) -> None:
    """With EVALDELTA_DOCS_SCREENSHOTS=1, the README's screenshot under docs/ (the top of
    the page, as a reader first sees it)."""
    if os.environ.get("EVALDELTA_DOCS_SCREENSHOTS") == "1":
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(REPO / "docs" / name))


def _write(tmp_path: Path, name: str, page: str) -> Path:
    path = tmp_path / name
    path.write_text(page, encoding="utf-8")
    return path


def _only_itself(opened: Any, path: Path) -> None:
    """No console error, and no request but the file itself."""
    assert opened.errors == []
    assert opened.requests == [path.resolve().as_uri()]


def _rows(page: Any) -> list[dict[str, str]]:
    heads = page.eval_on_selector_all(
        "#case-table thead th[data-key]", "ths => ths.map(th => th.dataset.key)"
    )
    cells = page.eval_on_selector_all(
        "#case-table tr.case-row",
        "rows => rows.map(r => Array.from(r.cells).slice(1).map(c => c.textContent))",
    )
    return [dict(zip(heads, row, strict=True)) for row in cells]


def test_pairwise_report(open_report: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the runs named as a user in the repository names them
    runs = tuple(load(p.relative_to(REPO), keep_text=True) for p in (BEFORE, AFTER))
    path = _write(tmp_path, "report.html", render_html(compare(*runs), runs=runs))
    opened = open_report(path)
    page = opened.page

    for chart in CHARTS:
        shapes = page.eval_on_selector_all(f"{chart} svg rect, {chart} svg line", "n => n.length")
        assert shapes > 0, chart
        box = page.locator(f"{chart} svg").bounding_box()
        assert box is not None, chart
        assert box["width"] > 100, chart
        assert box["height"] > 50, chart
    assert page.locator("#chart-heatmap rect[fill]").count() >= 120  # 60 cases x 2 runs
    assert page.locator("#chart-forest rect").count() == 2  # mean score, pass rate
    assert "Inconclusive" in page.inner_text("#verdict")

    rows = _rows(page)
    assert len(rows) == 50
    assert rows[0]["outcome"] == "regression"
    assert page.inner_text("#page-info") == "Showing 1–50 of 60 cases"

    page.check("#filter-regressions")
    rows = _rows(page)
    assert len(rows) == 14
    assert {r["outcome"] for r in rows} == {"regression"}
    assert page.inner_text("#page-info") == "Showing 1–14 of 14 matching cases (60 in all)"

    page.select_option("#filter-category", "math")
    rows = _rows(page)
    assert rows
    assert {r["category"] for r in rows} == {"math"}
    assert {r["outcome"] for r in rows} == {"regression"}

    page.uncheck("#filter-regressions")
    page.select_option("#filter-category", "")
    page.fill("#filter-text", "question #52 ")
    rows = _rows(page)
    assert [r["test_id"] for r in rows] == ["long_chain-52"]

    page.fill("#filter-text", "")
    page.click("#case-table th[data-key=test_id]")
    assert [r["test_id"] for r in _rows(page)][:2] == ["long_chain-00", "long_chain-04"]
    page.click("#page-next")
    assert page.inner_text("#page-info") == "Showing 51–60 of 60 cases"
    page.click("#page-prev")

    page.click("#case-table tr.case-row >> nth=0")
    detail = page.locator("#case-table tr.case-detail")
    assert detail.count() == 1
    text = detail.inner_text()
    assert "Input" in text
    assert "Customer question #0 (long chain)" in text
    assert "Baseline: " in text
    assert "Candidate: " in text
    assert page.locator("#case-table tr.case-row >> nth=0").get_attribute("aria-expanded") == "true"

    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000
    page.click("#case-table tr.case-row >> nth=0")  # folded again, for the docs
    _docs_screenshot(page, "html-report.png")
    _only_itself(opened, path)


def test_matrix_report(open_report: Any, tmp_path: Path) -> None:
    run = load(COMBINED, keep_text=True)
    page_text = render_html(compare_matrix(run, baseline="gpt-4.1"), runs=(run,))
    path = _write(tmp_path, "matrix.html", page_text)
    opened = open_report(path)
    page = opened.page

    assert page.locator("#chart-heatmap rect[fill]").count() >= 9  # 3 tests x 3 targets
    assert "gpt-4.1\nbaseline" in page.inner_text("#chart-heatmap")
    assert page.locator("#chart-rates rect.bar").count() == 3
    assert page.locator("#chart-forest rect").count() == 2
    assert page.inner_text("#comparison h2") == "gpt-4.1 → gemini-3-flash-preview"

    page.select_option("#comparison-select", "1")
    assert page.inner_text("#comparison h2") == "gpt-4.1 → gpt-5-mini"
    assert len(_rows(page)) == 3

    page.click("#case-table tr.case-row >> nth=0")
    detail = page.locator("#case-table tr.case-detail")
    # Both outputs side by side, the differences marked on each side.
    assert detail.locator(".side-by-side pre").count() == 2
    assert detail.locator("mark.removed").count() > 0
    assert detail.locator("mark.added").count() > 0
    page.screenshot(path=str(tmp_path / "matrix.png"), full_page=True)
    _only_itself(opened, path)


def _open_without_script(browser: Any, path: Path) -> Any:
    context = browser.new_context(
        viewport={"width": 1400, "height": 1000}, java_script_enabled=False
    )
    opened = watched_page(context)
    opened.page.goto(path.resolve().as_uri())
    opened.page.wait_for_load_state("load")
    return context, opened


def _visible_box(page: Any, selector: str) -> dict[str, float]:
    locator = page.locator(selector)
    assert locator.count() == 1, selector
    assert locator.is_visible(), selector
    box = locator.bounding_box()
    assert box is not None, selector
    return dict(box)


def test_pairwise_report_without_script(
    browser: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts off (a CI artifact viewer, a mail client, print): the verdict, the figures
    and every chart still show; only the case table says it needs JavaScript."""
    monkeypatch.chdir(REPO)
    runs = tuple(load(p.relative_to(REPO), keep_text=True) for p in (BEFORE, AFTER))
    path = _write(tmp_path, "report.html", render_html(compare(*runs), runs=runs))
    context, opened = _open_without_script(browser, path)
    page = opened.page
    try:
        assert page.evaluate("1 + 1") == 2  # playwright's own evaluation still works
        assert page.get_attribute("html", "data-ready") is None  # the page's script did not run
        assert "Inconclusive" in page.inner_text("#verdict")
        table = _visible_box(page, "table.figures >> nth=0")
        assert table["height"] > 100
        figures = page.inner_text("table.figures >> nth=0")
        assert "Mean score" in figures
        assert "72.2%" in figures
        for chart in CHARTS:
            box = _visible_box(page, f"{chart} svg")
            assert box["width"] > 100, chart
            assert box["height"] > 50, chart
            assert page.locator(f"{chart} svg rect").count() > 0, chart
        assert page.locator("#chart-heatmap rect[fill]").count() >= 120  # 60 cases x 2 runs
        assert page.locator("#chart-forest rect").count() == 2  # mean score, pass rate
        assert page.locator("#chart-deltas rect.bar").count() == 21
        assert "needs JavaScript" in page.inner_text(".case-slot")
        assert page.locator("#case-table").count() == 0
        page.screenshot(path=str(tmp_path / "no-script.png"), full_page=True)
        assert (tmp_path / "no-script.png").stat().st_size > 10_000
        _only_itself(opened, path)
    finally:
        context.close()


def test_matrix_report_without_script(browser: Any, tmp_path: Path) -> None:
    run = load(COMBINED, keep_text=True)
    path = _write(
        tmp_path, "matrix.html", render_html(compare_matrix(run, baseline="gpt-4.1"), runs=(run,))
    )
    context, opened = _open_without_script(browser, path)
    page = opened.page
    try:
        _visible_box(page, "#chart-heatmap svg")
        assert page.locator("#chart-heatmap rect[fill]").count() >= 9  # 3 tests x 3 targets
        assert "gpt-4.1\nbaseline" in page.inner_text("#chart-heatmap")
        _visible_box(page, "#chart-rates svg")
        _visible_box(page, "#chart-forest svg")
        # With no picker, every comparison shows, one after the other.
        headings = page.locator("section.comparison h2:not(.case-slot h2)")
        assert headings.all_inner_texts() == [
            "gpt-4.1 → gemini-3-flash-preview",
            "gpt-4.1 → gpt-5-mini",
        ]
        assert page.locator("section.comparison table.figures").count() == 2
        assert page.locator("section.comparison [id^=chart-deltas] svg").count() == 2
        assert page.locator("#chart-deltas-1").count() == 1  # ids stay unique
        assert page.locator("#comparison-select").count() == 0
        page.screenshot(path=str(tmp_path / "matrix-no-script.png"), full_page=True)
        _only_itself(opened, path)
    finally:
        context.close()


HOSTILE = [
    "<script>window.__xss = 1</script>",
    '"><img src=x onerror="window.__xss = 2">',
    "</script><script>window.__xss = 3</script>",
    '<svg onload="window.__xss = 4"></svg>',
    "javascript:window.__xss = 5",
    "<!-- \u2028 &amp; ]]>",
]


def _hostile_run() -> Run:
    base, cand = "base" + HOSTILE[0], "cand" + HOSTILE[1]
    records = []
    for k, bad in enumerate(HOSTILE):
        for target, score in ((base, 1.0), (cand, 0.0 if k % 2 else 1.0)):
            records.append(
                Record(
                    f"id{k} {bad}",
                    score,
                    target=target,
                    category=f"cat {bad}",
                    input=f"in {bad}",
                    expected={"answer": bad},
                    output=f"out {target} {bad}",
                    metadata={"note": bad},
                )
            )
    return Run.from_records(records)


@pytest.mark.parametrize("kind", ["pairwise", "matrix"])
def test_hostile_text_runs_nothing(open_report: Any, tmp_path: Path, kind: str) -> None:
    run = _hostile_run()
    base, cand = "base" + HOSTILE[0], "cand" + HOSTILE[1]
    result: Any = (
        compare(run, run, baseline_target=base, candidate_target=cand)
        if kind == "pairwise"
        else compare_matrix(run, baseline=base)
    )
    path = _write(tmp_path, f"{kind}.html", render_html(result, runs=(run,), title=HOSTILE[1]))
    opened = open_report(path)
    page = opened.page
    for row in range(len(HOSTILE)):
        page.click(f"#case-table tr.case-row >> nth={row}")
    for bad in HOSTILE[:3]:
        page.fill("#filter-text", f"in {bad}")
        assert len(_rows(page)) == 1
    page.fill("#filter-text", "")

    # Every payload shows as the literal text it is, in the table and the expanded rows.
    ids = [c.text_content() for c in page.locator("#case-table td.id").all()]
    assert sorted(ids) == sorted(f"id{k} {bad}" for k, bad in enumerate(HOSTILE))
    texts = page.locator("pre.text").all_text_contents()
    for bad in HOSTILE:
        assert f"in {bad}" in texts
        assert json.dumps({"answer": bad}, indent=2, ensure_ascii=False) in texts
    assert page.title() == HOSTILE[1]
    assert page.inner_text("h1") == HOSTILE[1]
    if kind == "pairwise":  # the header names both runs
        assert page.inner_text("header .sub") == f"Baseline {base} → candidate {cand}"
    else:
        assert page.inner_text("#comparison h2") == f"{base} → {cand}"
    page.select_option("#filter-category", f"cat {HOSTILE[2]}")
    assert [r["category"] for r in _rows(page)] == [f"cat {HOSTILE[2]}"]

    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 2  # the data and the report's own script
    _only_itself(opened, path)


def test_ten_thousand_cases_open_and_filter_quickly(open_report: Any, tmp_path: Path) -> None:
    n = 10_000
    records = []
    for i in range(n):
        for target, flip in (("before", 0), ("after", 1)):
            passed = (i * 7 + flip * (i % 5 == 0)) % 3 != 0
            records.append(
                Record(
                    f"case-{i:05d}",
                    1.0 if passed else 0.0,
                    target=target,
                    category=f"cat{i % 7}",
                    input=f"Question {i}: what is {i} + {i}?",
                    output=f"{target} answers {2 * i if passed else i}",
                )
            )
    run = Run.from_records(records)
    c = compare(run, run, baseline_target="before", candidate_target="after")
    path = _write(tmp_path, "big.html", render_html(c, runs=(run,)))

    start = time.perf_counter()
    opened = open_report(path)
    opened_in = time.perf_counter() - start
    page = opened.page
    assert len(_rows(page)) == 50  # paginated: one page of rows in the document

    start = time.perf_counter()
    page.check("#filter-regressions")
    page.select_option("#filter-category", "cat3")
    page.fill("#filter-text", "question 99")
    info = page.inner_text("#page-info")
    filtered_in = time.perf_counter() - start
    assert "matching cases (10,000 in all)" in info
    rows = _rows(page)
    assert rows
    assert all(r["outcome"] == "regression" and r["category"] == "cat3" for r in rows)

    assert opened_in < 2.0, f"opening took {opened_in:.2f}s"
    assert filtered_in < 2.0, f"filtering took {filtered_in:.2f}s"
    _only_itself(opened, path)
