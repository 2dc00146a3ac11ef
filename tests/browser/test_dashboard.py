"""The dashboard in a real browser: headless Chromium against ``evaldelta.serve`` on a free
loopback port, over a store of a few runs (and one of 1,000, timed).

The list renders and filters; ticking two runs and pressing Compare opens the
comparison with the verdict ``compare`` gives; three runs give the N-way matrix; a bad
id gives the 404 page; hostile text stays text. Screenshots go to each test's
temporary folder; with EVALDELTA_DOCS_SCREENSHOTS=1, the README's two go to docs/.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evaldelta.api import compare
from evaldelta.store import open_store
from tests.browser.conftest import Opened, watched_page
from tests.conftest import REPO
from tests.serve.stores import (
    HOSTILE_ID,
    HOSTILE_NAME,
    HOSTILE_OUTPUT,
    FewRuns,
    few_runs,
    serve,
    serving,
    tiny_runs,
)

Open = Callable[..., Opened]


@pytest.fixture
def few(tmp_path: Path) -> Iterator[tuple[FewRuns, str]]:
    """A store of a few runs, served; yields it and the dashboard's URL."""
    runs = few_runs(tmp_path / "store" / "runs.db")
    with serving(runs.path) as url:
        yield runs, url


@pytest.fixture
def open_page(browser: Any) -> Iterator[Open]:
    """``open_page(url)``: the page at ``url`` in a fresh browser context, with what it
    complained about and every request it made."""
    contexts: list[Any] = []

    def open_(url: str, *, ready: bool = True) -> Opened:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        contexts.append(context)
        opened = watched_page(context)
        opened.page.goto(url)
        if ready:
            opened.page.wait_for_selector("html[data-ready]", timeout=10_000)
        return opened

    yield open_
    for context in contexts:
        context.close()


def _ids(page: Any) -> list[int]:
    return [
        int(v)
        for v in page.eval_on_selector_all("#runs tr.run-row", "rs => rs.map(r => r.dataset.id)")
    ]


def _tick(page: Any, rid: int) -> None:
    page.check(f"tr[data-id='{rid}'] input.tick")


def _compare(page: Any) -> None:
    """Press Compare and wait for the report to have drawn itself."""
    with page.expect_navigation():
        page.click("#compare")
    page.wait_for_selector("html[data-ready]", timeout=20_000)


#: What Chromium says of a page answered with a 404 status, as the 404 page is.
NOT_FOUND = (
    "console error: Failed to load resource: the server responded with a status of 404 (Not Found)"
)


def _only_the_dashboard(opened: Opened, url: str, *, not_found: int = 0) -> None:
    """No console error (but ``not_found`` 404 pages), no dialog, and no request
    anywhere but the dashboard's pages."""
    assert opened.errors == [NOT_FOUND] * not_found
    assert opened.requests
    for request in opened.requests:
        assert request.startswith(url) or request == "about:blank", request
    assert opened.page.evaluate("typeof window.__xss") == "undefined"


def _verdict(path: Path, baseline: int, candidate: int) -> str:
    with open_store(path) as store:
        result = compare(store.get_run(baseline), store.get_run(candidate))
    assert result.analysis is not None
    return result.analysis.verdict.kind


def _docs_screenshot(page: Any, name: str) -> None:
    if os.environ.get("EVALDELTA_DOCS_SCREENSHOTS") == "1":
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=str(REPO / "docs" / name))


def test_the_runs_list_renders(few: tuple[FewRuns, str], open_page: Open, tmp_path: Path) -> None:
    runs, url = few
    opened = open_page(url)
    page = opened.page
    assert page.title() == "Runs · evaldelta"
    assert _ids(page) == [runs.hostile, runs.interrupted, runs.v3, runs.v2, runs.v1]
    # Hostile text shows as text, and runs nothing.
    assert page.inner_text(f"tr[data-id='{runs.hostile}'] td.name") == HOSTILE_NAME
    assert page.locator("#runs img").count() == 0
    # The interrupted run is marked.
    assert page.inner_text(f"tr[data-id='{runs.interrupted}'] .status") == "interrupted"
    # Compare waits for two ticks.
    assert page.is_disabled("#compare")
    _tick(page, runs.v1)
    assert page.is_disabled("#compare")
    assert "1 ticked: baseline run 1; tick at least one more" in page.inner_text("#ticked")
    # Sorting by a column, from its heading.
    with page.expect_navigation():
        page.click("th[data-key=pass_rate] a")
    page.wait_for_selector("html[data-ready]")
    assert _ids(page)[0] == runs.v2  # the best pass rate first
    assert page.url == f"{url}?sort=pass_rate&order=desc"
    page.screenshot(path=str(tmp_path / "runs.png"), full_page=True)
    assert (tmp_path / "runs.png").stat().st_size > 10_000
    _only_the_dashboard(opened, url)


def test_filtering(few: tuple[FewRuns, str], open_page: Open, tmp_path: Path) -> None:
    runs, url = few
    opened = open_page(url)
    page = opened.page
    page.fill("#filter-name", "Support-V2")
    with page.expect_navigation():
        page.press("#filter-name", "Enter")
    page.wait_for_selector("html[data-ready]")
    assert _ids(page) == [runs.interrupted, runs.v2]
    assert page.input_value("#filter-name") == "Support-V2"
    assert page.inner_text("#count") == "Runs 1–2 of 2 matching (of 5 stored)"

    page.fill("#filter-name", "")
    page.fill("#filter-target", "claude")
    with page.expect_navigation():
        page.click("#filter")
    page.wait_for_selector("html[data-ready]")
    assert _ids(page) == [runs.v3]
    assert page.url == f"{url}?name=&target=claude"
    page.screenshot(path=str(tmp_path / "filtered.png"), full_page=True)

    page.fill("#filter-target", "no such model")
    with page.expect_navigation():
        page.press("#filter-target", "Enter")
    assert page.inner_text("#count") == "No run matches these filters (of 5 stored)."
    with page.expect_navigation():
        page.click("#clear-filters")
    page.wait_for_selector("html[data-ready]")
    assert len(_ids(page)) == 5
    _only_the_dashboard(opened, url)


def test_tick_two_and_compare(few: tuple[FewRuns, str], open_page: Open, tmp_path: Path) -> None:
    runs, url = few
    expected = _verdict(runs.path, runs.v1, runs.v2)
    assert expected == "Better"
    opened = open_page(url)
    page = opened.page
    _tick(page, runs.v1)
    _tick(page, runs.v2)
    assert page.is_enabled("#compare")
    assert page.inner_text("#ticked") == "2 ticked: baseline run 1, candidates run 2"
    assert page.is_checked(f"tr[data-id='{runs.v1}'] input.mark")
    page.screenshot(path=str(tmp_path / "ticked.png"), full_page=True)
    _compare(page)
    assert page.url == f"{url}compare?baseline={runs.v1}&candidate={runs.v2}"
    assert page.inner_text("#verdict .badge") == expected
    assert page.inner_text("header h1") == "support-v1 → support-v2"
    # The report's charts and case table, as in a report file.
    for chart in ("#chart-deltas", "#chart-forest", "#chart-heatmap"):
        assert page.locator(f"{chart} svg").count() == 1, chart
    assert page.locator("#case-table tr.case-row").count() == 40
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    assert (tmp_path / "compare.png").stat().st_size > 10_000
    _only_the_dashboard(opened, url)

    # Back to the list: the ticks are still there.
    with page.expect_navigation():
        page.click("nav.links a >> text=All runs")
    page.wait_for_selector("html[data-ready]")
    assert page.is_checked(f"tr[data-id='{runs.v1}'] input.tick")
    assert page.is_checked(f"tr[data-id='{runs.v2}'] input.tick")
    page.click("#clear-ticks")
    assert page.locator("input.tick:checked").count() == 0
    assert page.is_disabled("#compare")


def test_the_marked_run_is_the_baseline(few: tuple[FewRuns, str], open_page: Open) -> None:
    runs, url = few
    expected = _verdict(runs.path, runs.v1, runs.v3)
    assert expected == "Worse"
    opened = open_page(url)
    page = opened.page
    _tick(page, runs.v3)
    _tick(page, runs.v1)
    assert page.is_checked(f"tr[data-id='{runs.v3}'] input.mark")  # first ticked
    page.check(f"tr[data-id='{runs.v1}'] input.mark")
    assert page.inner_text("#ticked") == "2 ticked: baseline run 1, candidates run 3"
    _compare(page)
    assert page.url == f"{url}compare?baseline={runs.v1}&candidate={runs.v3}"
    assert page.inner_text("#verdict .badge") == expected
    _only_the_dashboard(opened, url)


def test_n_way_compare_shows_the_matrix(
    few: tuple[FewRuns, str], open_page: Open, tmp_path: Path
) -> None:
    runs, url = few
    opened = open_page(url)
    page = opened.page
    for rid in (runs.v1, runs.v2, runs.v3):
        _tick(page, rid)
    assert page.inner_text("#ticked") == "3 ticked: baseline run 1, candidates run 2, run 3"
    _compare(page)
    assert page.url == f"{url}compare?baseline={runs.v1}&candidate={runs.v2}&candidate={runs.v3}"
    assert "40 tests x 3 targets; baseline support-v1 (run 1)" in page.inner_text("header")
    assert page.locator("#chart-heatmap rect[fill]").count() >= 120  # 40 cases x 3 runs
    assert page.locator("#chart-rates rect.bar").count() == 3
    assert "support-v1 (run 1)\nbaseline" in page.inner_text("#chart-heatmap")
    assert page.inner_text("#comparison h2") == "support-v1 (run 1) → support-v2 (run 2)"
    assert page.inner_text("#comparison .verdict .badge") == "Better"
    page.select_option("#comparison-select", "1")
    assert page.inner_text("#comparison h2") == "support-v1 (run 1) → support-v3 (run 3)"
    assert page.inner_text("#comparison .verdict .badge") == "Worse"
    page.screenshot(path=str(tmp_path / "matrix.png"), full_page=True)
    _only_the_dashboard(opened, url)


def test_a_bad_id_shows_the_404_page(
    few: tuple[FewRuns, str], open_page: Open, tmp_path: Path
) -> None:
    runs, url = few
    for path in ("runs/4242", f"compare?baseline={runs.v1}&candidate=4242"):
        opened = open_page(url + path, ready=False)
        page = opened.page
        assert page.inner_text("#error-title") == "Not found"
        assert (
            page.inner_text("#error-message")
            == "No run 4242 in this store: it may have been deleted."
        )
        page.screenshot(path=str(tmp_path / "404.png"))
        with page.expect_navigation():
            page.click("#back")
        page.wait_for_selector("html[data-ready]")
        assert len(_ids(page)) == 5
        _only_the_dashboard(opened, url, not_found=1)
    response = open_page(url, ready=False).page.goto(url + "runs/4242")
    assert response.status == 404


def test_a_run_and_its_hostile_text(
    few: tuple[FewRuns, str], open_page: Open, tmp_path: Path
) -> None:
    runs, url = few
    opened = open_page(url)
    page = opened.page
    with page.expect_navigation():
        page.click(f"tr[data-id='{runs.hostile}'] td.name a")
    assert page.inner_text("#run-name") == f"{HOSTILE_NAME} run {runs.hostile}"
    assert page.locator("section.case").count() == 40
    first = page.locator("section.case").first
    assert first.locator("h3").inner_text().startswith(HOSTILE_ID)
    assert HOSTILE_OUTPUT in first.inner_text()
    assert page.locator("main img, main b, main script").count() == 0
    page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
    _only_the_dashboard(opened, url)


def test_a_thousand_runs_stay_responsive(open_page: Open, tmp_path: Path) -> None:
    """1,000 runs in the store, served by `evaldelta serve` in its own process (as a
    user runs it): each page of the list comes quickly, sorted by a figure too.

    Each page is timed by the browser itself (its navigation timing: from the request
    to the page loaded, its script run), and by the clock around the test's action,
    which adds the test's own round trips to the browser.
    """
    path = tmp_path / "runs.db"
    start = time.perf_counter()
    tiny_runs(path, 1000)
    stored_in = time.perf_counter() - start
    timings: dict[str, tuple[float, float]] = {}
    with serve("--store", str(path)) as served:
        url = served.url
        opened = open_page("about:blank", ready=False)
        page = opened.page

        def once(action: Callable[[], Any]) -> tuple[float, float]:
            start = time.perf_counter()
            with page.expect_navigation():
                action()
            page.wait_for_selector("html[data-ready]")
            wall = time.perf_counter() - start
            loaded = page.evaluate(
                "(() => { const n = performance.getEntriesByType('navigation')[0];"
                " return (n.loadEventEnd - n.requestStart) / 1000; })()"
            )
            return loaded, wall

        def timed(name: str, action: Callable[[], Any], *, again: bool = True) -> None:
            """The page's time; with ``again``, the better of it and of a reload of the
            same page (the same work for the server), so that one busy moment of this
            shared machine is not read as a slow page."""
            loaded, wall = once(action)
            if again:
                reloaded, rewall = once(page.reload)
                loaded, wall = min(loaded, reloaded), min(wall, rewall)
            timings[name] = (loaded, wall)

        # The first two are timed once: their first load is the slow one to bound.
        timed("first page", lambda: page.goto(url), again=False)
        assert len(_ids(page)) == 50
        assert page.inner_text("#count") == "Runs 1–50 of 1,000"
        assert "Page 1 of 20" in page.inner_text("nav.pages")
        # Sorting by a figure needs every run's summary: the slowest page there is.
        timed("sort by pass rate", lambda: page.click("th[data-key=pass_rate] a"), again=False)
        assert page.inner_text("#runs tr.run-row >> nth=0 >> td:nth-child(9)") == "66.7%"
        timed("sort by cost", lambda: page.click("th[data-key=cost] a"))
        timed("next page", lambda: page.click("#next-page"))
        assert "Page 2 of 20" in page.inner_text("nav.pages")
        # Ticks survive paging: one here, one on the next page.
        first = _ids(page)[0]
        _tick(page, first)
        timed("next page again", lambda: page.click("#next-page"))
        second = _ids(page)[-1]
        _tick(page, second)
        page.fill("#filter-name", "nightly-09")
        timed("filter", lambda: page.press("#filter-name", "Enter"))
        assert page.inner_text("#count") == "Runs 1–50 of 100 matching (of 1,000 stored)"
        page.screenshot(path=str(tmp_path / "thousand.png"))
        _compare(page)
        assert page.url == f"{url}compare?baseline={first}&candidate={second}"
        _only_the_dashboard(opened, url)
        assert served.stop().code == 0
    print(
        f"\n1,000 runs stored in {stored_in:.2f} s; dashboard up in {served.started_in:.2f} s; "
        + "; ".join(f"{k}: {a:.3f} s ({b:.3f} s)" for k, (a, b) in timings.items())
    )
    assert served.started_in < 1.0, served.started_in
    # The first page loads numpy in the server, and starts the page's renderer; sorting
    # by pass rate reads the runs the background work has not reached yet.
    assert timings.pop("first page")[0] < 1.0, timings
    assert timings.pop("sort by pass rate")[0] < 1.0, timings
    for name, (loaded, wall) in timings.items():
        assert loaded < 0.5, (name, loaded)
        assert wall < 2.0, (name, wall)


def test_docs_screenshots(tmp_path: Path, open_page: Open, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's pictures: the runs list with two runs ticked, and their comparison."""
    monkeypatch.chdir(tmp_path)  # the store where `evaldelta serve` looks by default
    runs = few_runs(Path(".evaldelta", "runs.db"), hostile=False)
    with serving(runs.path) as url:
        opened = open_page(url)
        page = opened.page
        page.set_viewport_size({"width": 1280, "height": 520})
        _tick(page, runs.v1)
        _tick(page, runs.v2)
        page.screenshot(path=str(tmp_path / "dashboard-runs.png"))
        _docs_screenshot(page, "dashboard-runs.png")
        _compare(page)
        page.set_viewport_size({"width": 1280, "height": 900})
        page.screenshot(path=str(tmp_path / "dashboard-compare.png"))
        _docs_screenshot(page, "dashboard-compare.png")
        assert (tmp_path / "dashboard-compare.png").stat().st_size > 10_000
        _only_the_dashboard(opened, url)
