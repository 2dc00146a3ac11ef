"""The dashboard's pages as strings: every text escaped, one script, nothing fetched."""

from __future__ import annotations

import re

from evaldelta.serve._pages import CSS, RUNS_SCRIPT, error_page, esc, runs_page
from evaldelta.serve._summary import RunRow, RunSummary
from evaldelta.serve._views import RunsView, page_count, text_of

NASTY = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\ud800'


def _row(rid: int, name: str = "run", **changes: object) -> RunRow:
    values: dict[str, object] = {
        "id": rid,
        "name": name,
        "label": f"{name} (run {rid})",
        "when": "2026-12-01 10:00",
        "target": "gpt-4.1",
        "model": None,
        "cases": 1234,
        "attempts": 3702,
        "status": "complete",
        "summary": RunSummary(0.8734, 0.81234, 0.0123),
    }
    values.update(changes)
    return RunRow(**values)  # type: ignore[arg-type]


def _view(rows: list[RunRow], **changes: object) -> RunsView:
    values: dict[str, object] = {
        "rows": rows,
        "matched": len(rows),
        "stored": len(rows),
        "page": 1,
        "pages": 1,
        "page_size": 50,
    }
    values.update(changes)
    return RunsView(**values)  # type: ignore[arg-type]


def test_esc() -> None:
    assert esc(NASTY) == (
        "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;\ufffd"
    )
    assert esc("it's") == "it&#x27;s"


def test_a_row_shows_its_figures() -> None:
    page = runs_page(_view([_row(7, "nightly", model="gpt-4.1-mini")]))
    row = re.search(r'<tr class="run-row" data-id="7">(.*?)</tr>', page, re.S)
    assert row is not None
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]
    assert cells[2:] == [
        "7",
        "nightly",
        "2026-12-01 10:00",
        "gpt-4.1 · gpt-4.1-mini",
        "1,234",
        "3,702",
        "87.3%",
        "0.812",
        "$0.012",
        "complete",
    ]
    assert 'value="7" aria-label="Tick run 7"' in page
    assert 'href="/runs/7"' in page


def test_a_row_without_figures_says_na() -> None:
    page = runs_page(
        _view([_row(1, summary=RunSummary(None, None, None), target="", status="interrupted")])
    )
    assert page.count(">n/a</td>") == 3
    assert '<span class="muted">—</span>' in page
    assert '<tr class="run-row interrupted"' in page


def test_every_text_of_a_run_is_escaped() -> None:
    row = _row(3, NASTY, target=NASTY, model=NASTY, when=NASTY, status=NASTY)
    page = runs_page(_view([row], name=NASTY, target=NASTY, store=NASTY))
    assert "<img" not in page
    assert "<script>alert" not in page
    assert "\ud800" not in page
    assert page.count(esc(NASTY)) >= 6  # name, target, model, when, status, store, filters
    # The filters' values stay in their attributes.
    assert f'id="filter-name" value="{esc(NASTY)}"' in page


def test_only_the_one_script() -> None:
    page = runs_page(_view([_row(1)]))
    assert re.findall(r"<script[^>]*>", page) == ["<script>"]
    assert f"<script>{RUNS_SCRIPT}</script>" in page
    assert "http" not in CSS
    assert "url(" not in CSS
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_sort_links_keep_the_filters() -> None:
    page = runs_page(_view([_row(1)], name="a b", target="x&y", sort="cost", order="asc"))
    assert '<th aria-sort="ascending" class="num" data-key="cost">' in page
    assert 'href="/?name=a+b&amp;target=x%26y&amp;sort=cost&amp;order=desc">Cost ▲' in page
    # Another column starts in its natural order, from the first page.
    assert 'href="/?name=a+b&amp;target=x%26y&amp;sort=name&amp;order=asc">Name<' in page
    assert '<input type="hidden" name="sort" value="cost">' in page


def test_empty_lists_say_why() -> None:
    assert "No runs stored yet" in runs_page(_view([]))
    filtered = runs_page(_view([], stored=4, name="zzz"))
    assert "No run matches these filters (of 4 stored)." in filtered
    assert 'id="runs"' not in filtered


def test_error_page() -> None:
    page = error_page(404, f"No run {NASTY}")
    assert '<h1 id="error-title">Not found</h1>' in page
    assert f'<p id="error-message">No run {esc(NASTY)}</p>' in page
    assert "<script" not in page
    assert "Error 418" in error_page(418, "teapot")


def test_page_count_and_texts() -> None:
    assert [page_count(n, 50) for n in (0, 1, 50, 51, 1000)] == [1, 1, 1, 2, 20]
    assert text_of(None) is None
    assert text_of({"a": [1, "é"]}) == '{\n  "a": [\n    1,\n    "é"\n  ]\n}'
    long = text_of("x" * 5000, limit=10)
    assert long == "xxxxxxxxxx\n… (cut: 5,000 characters in all)"


def test_the_script_and_stylesheet_are_the_shipped_files() -> None:
    """The dashboard's script and stylesheet are real files of the package (linted by
    ``make lint``), read with importlib.resources, and carried in the page as they are."""
    from importlib import resources

    folder = resources.files("evaldelta.serve").joinpath("assets")
    assert folder.joinpath("runs.js").read_text(encoding="utf-8") == RUNS_SCRIPT
    assert folder.joinpath("dashboard.css").read_text(encoding="utf-8") == CSS
    assert RUNS_SCRIPT.startswith("// ")
    assert '"use strict";' in RUNS_SCRIPT
    page = runs_page(_view([_row(1)]))
    assert f"<style>\n{CSS}</style>" in page
