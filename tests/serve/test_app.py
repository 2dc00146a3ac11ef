"""The dashboard's routes, answered without a socket: pages, errors, escaping, and that
the store is only ever read."""

from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from evaldelta.analysis._summary import summarise
from evaldelta.api import compare, compare_matrix
from evaldelta.errors import StoreError
from evaldelta.report._html import render_html
from evaldelta.serve import Dashboard
from evaldelta.serve._combine import combine_runs
from evaldelta.store import open_store
from tests.serve.conftest import error_of, get, row_ids
from tests.serve.stores import (
    HOSTILE_ID,
    HOSTILE_MODEL,
    HOSTILE_NAME,
    HOSTILE_OUTPUT,
    FewRuns,
    few_runs,
    tiny_runs,
)


def payload(page: str) -> dict[str, Any]:
    """The JSON the HTML report carries."""
    found = re.search(
        r'<script type="application/json" id="evaldelta-data">(.*?)</script>', page, re.S
    )
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


# -- the runs list ------------------------------------------------------------------------


def test_runs_page_lists_every_run_newest_first(dash: Dashboard, few: FewRuns) -> None:
    page = get(dash, "/").text
    assert row_ids(page) == [few.hostile, few.interrupted, few.v3, few.v2, few.v1]
    assert "Runs 1–5 of 5" in page
    row = re.search(rf'data-id="{few.v1}">(.*?)</tr>', page, re.S)
    assert row is not None
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1))]
    # tick, baseline mark, id, name, when, target / model, cases, attempts, pass rate,
    # mean score, cost, status
    with open_store(few.path) as store:
        figures = summarise(store.get_run(few.v1))[0]
    assert cells[2:8] == [
        str(few.v1),
        "support-v1",
        "2026-11-28 09:00",
        "support-agent · gpt-4.1",
        "40",
        "120",
    ]
    assert cells[8] == f"{figures['pass_rate'] * 100:.1f}%"
    assert cells[9] == f"{figures['mean_score']:.3f}"
    assert cells[10] == f"${figures['cost_usd']:.2f}"
    assert cells[11] == "complete"


def test_interrupted_runs_are_marked(dash: Dashboard, few: FewRuns) -> None:
    page = get(dash, "/").text
    row = re.search(r'<tr class="run-row interrupted" data-id="(\d+)">', page)
    assert row is not None
    assert int(row.group(1)) == few.interrupted
    assert page.count('class="status interrupted"') == 1


def test_a_run_still_going_is_marked_running_not_interrupted(tmp_path: Path) -> None:
    """A run that `evaldelta eval` is still running (its process holds the run's lock)
    shows its attempts so far as running; once the process lets go without finishing
    it, the run reads as interrupted."""
    path = tmp_path / "runs.db"
    with open_store(path) as store:
        rid = store.begin_run(
            name="nightly/gpt", suite="nightly", config={}, targets=["gpt"], case_order=["a"]
        )
        store.add_attempt(rid, {"test_id": "a", "target": "gpt", "attempt": 1, "score": 1.0})
        page = get(Dashboard(path), "/").text
        assert page.count('class="status running"') == 1
        assert 'class="status interrupted"' not in page
        assert get(Dashboard(path), f"/runs/{rid}").text.count('class="status running"') == 1
    page = get(Dashboard(path), "/").text
    assert page.count('class="status interrupted"') == 1


def test_a_run_that_stopped_early_says_against_what_and_why(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    how = {
        "settled": True,
        "verdict": "Better",
        "against": {"run": 1, "name": "main/v1 (run 1)"},
        "reason": "settled Better after 136 of 1,000 cases; 864 cases not spent",
    }
    with open_store(path) as store:
        rid = store.begin_run(name="pr/v2", suite="s", config={}, targets=["v2"], case_order=["a"])
        store.add_attempt(rid, {"test_id": "a", "target": "v2", "attempt": 1, "score": 1.0})
        store.finish_run(rid, "stopped early", sequential=how)
    page = get(Dashboard(path), f"/runs/{rid}").text
    assert '<span class="status">stopped early</span>' in page
    assert (
        "<dt>Against</dt><dd>main/v1 (run 1): settled Better after 136 of 1,000 cases; 864 "
        "cases not spent" in page
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("name=support-v2", ["interrupted", "v2"]),
        ("name=SUPPORT-V", ["interrupted", "v3", "v2", "v1"]),
        ("name=v1", ["v1"]),
        ("target=claude", ["v3"]),
        ("target=GPT-4.1&name=retry", ["interrupted"]),
        ("target=support-agent", ["hostile", "interrupted", "v3", "v2", "v1"]),
        ("name=nothing-like-it", []),
    ],
)
def test_filters(dash: Dashboard, few: FewRuns, query: str, expected: list[str]) -> None:
    page = get(dash, f"/?{query}").text
    assert row_ids(page) == [getattr(few, e) for e in expected]
    if not expected:
        assert "No run matches these filters (of 5 stored)." in page
    else:
        assert f"of {len(expected)} matching (of 5 stored)" in page
    assert 'id="clear-filters"' in page


def _column_values(dash: Dashboard, few: FewRuns) -> dict[str, dict[int, Any]]:
    """Each sortable column's value per run, figured independently of the dashboard."""
    with open_store(few.path) as store:
        infos = {i.id: i for i in store.list_runs()}
        figures = {rid: summarise(store.get_run(rid))[0] for rid in infos}
    return {
        "id": {rid: rid for rid in infos},
        "name": {rid: i.name.casefold() for rid, i in infos.items()},
        "when": {rid: i.started_at for rid, i in infos.items()},
        "target": {
            rid: f"{i.targets[0]} {i.config['model']}".casefold() for rid, i in infos.items()
        },
        "cases": {rid: i.cases for rid, i in infos.items()},
        "attempts": {rid: i.records for rid, i in infos.items()},
        "pass_rate": {rid: f["pass_rate"] for rid, f in figures.items()},
        "mean_score": {rid: f["mean_score"] for rid, f in figures.items()},
        "cost": {rid: f["cost_usd"] for rid, f in figures.items()},
        "status": {rid: i.status for rid, i in infos.items()},
    }


@pytest.mark.parametrize(
    "key",
    [
        "id",
        "name",
        "when",
        "target",
        "cases",
        "attempts",
        "pass_rate",
        "mean_score",
        "cost",
        "status",
    ],
)
@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sort_by_any_column(dash: Dashboard, few: FewRuns, key: str, order: str) -> None:
    values = _column_values(dash, few)[key]
    # Ties newest first, whichever the order.
    newest_first = sorted(values, reverse=True)
    expected = sorted(newest_first, key=values.__getitem__, reverse=order == "desc")
    page = get(dash, f"/?sort={key}&order={order}").text
    assert row_ids(page) == expected
    assert f'aria-sort="{"ascending" if order == "asc" else "descending"}" ' in page
    # The heading links to the other order; the filters keep the sort.
    flipped = "desc" if order == "asc" else "asc"
    heading = re.search(rf'data-key="{key}"><a href="([^"]+)"', page)
    assert heading is not None
    link = html.unescape(heading.group(1))
    if (key, flipped) == ("id", "desc"):
        assert link == "/"
    else:
        assert link == f"/?sort={key}&order={flipped}"


def test_sorting_by_a_figure_reads_each_run_once(dash: Dashboard, few: FewRuns) -> None:
    get(dash, "/?sort=pass_rate")
    assert dash.summaries.computed == 5
    get(dash, "/?sort=cost&order=asc")
    get(dash, "/?sort=mean_score&page=1")
    get(dash, "/")
    assert dash.summaries.computed == 5


def test_pages_of_fifty(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    tiny_runs(path, 120)
    dash = Dashboard(str(path))
    first = dash.handle("GET", "/").text
    assert row_ids(first) == list(range(120, 70, -1))
    assert "Runs 1–50 of 120" in first
    assert "Page 1 of 3" in first
    assert 'href="/?page=2" rel="next"' in first
    assert dash.summaries.computed == 50  # only the rows shown
    last = dash.handle("GET", "/?page=3").text
    assert row_ids(last) == list(range(20, 0, -1))
    assert "Runs 101–120 of 120" in last
    assert 'href="/?page=2" rel="prev"' in last
    assert 'id="next-page"' not in last
    # A page past the end (a filter that left fewer pages): the last one.
    assert row_ids(dash.handle("GET", "/?page=40").text) == list(range(20, 0, -1))
    # Paging keeps the filters and the sort.
    page = dash.handle("GET", "/?name=nightly-00&sort=name&order=asc").text
    assert row_ids(page) == list(range(1, 51))
    assert 'href="/?name=nightly-00&amp;sort=name&amp;order=asc&amp;page=2"' in page


def test_an_empty_store(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    open_store(path).close()
    page = Dashboard(str(path)).handle("GET", "/")
    assert page.status == 200
    assert "No runs stored yet" in page.text
    assert row_ids(page.text) == []


# -- a run ----------------------------------------------------------------------------------


def test_run_page(dash: Dashboard, few: FewRuns) -> None:
    page = get(dash, f"/runs/{few.v1}").text
    assert '<h1 id="run-name">support-v1 <span class="muted">run 1</span></h1>' in page
    with open_store(few.path) as store:
        figures = summarise(store.get_run(few.v1))[0]
    summary = re.search(r'<table class="list" id="summary">(.*?)</table>', page, re.S)
    assert summary is not None
    assert f"{figures['pass_rate'] * 100:.1f}%" in summary.group(1)
    assert "120 (3 per case)" in summary.group(1)
    assert "<td>prompt</td><td>v1</td>" in page
    assert "<td>model</td><td>gpt-4.1</td>" in page
    assert "2026-11-28T09:00:00Z → 2026-11-28T09:40:00Z" in page
    # The cases, 40 of them on one page, with their attempts and outputs.
    assert page.count('<section class="case">') == 40
    assert "Cases 1–40 of 40" in page
    case = re.search(r'<h3 class="test-id">q-007.*?</section>', page, re.S)
    assert case is not None
    assert "Customer question #7" in case.group(0)
    assert "Answer 7" in case.group(0)
    assert case.group(0).count('<tr><td class="num">') == 3  # three attempts


def test_run_page_cases_are_paginated(tmp_path: Path, few: FewRuns) -> None:
    dash = Dashboard(str(few.path), page_size=15)
    first = get(dash, f"/runs/{few.v2}").text
    assert "Cases 1–15 of 40" in first
    assert "Page 1 of 3" in first
    assert re.findall(r'<h3 class="test-id">(q-\d+)', first)[0] == "q-000"
    last = get(dash, f"/runs/{few.v2}?page=3").text
    assert "Cases 31–40 of 40" in last
    assert re.findall(r'<h3 class="test-id">(q-\d+)', last) == [f"q-{i:03d}" for i in range(30, 40)]
    assert f'href="/runs/{few.v2}?page=2" rel="prev"' in last


def test_interrupted_run_page_says_so(dash: Dashboard, few: FewRuns) -> None:
    page = get(dash, f"/runs/{few.interrupted}").text
    assert '<span class="status interrupted">interrupted</span>' in page


# -- comparisons -------------------------------------------------------------------------------


def test_compare_is_the_html_report(dash: Dashboard, few: FewRuns) -> None:
    """Two runs: exactly the page render_html makes of compare(), plus the way back."""
    response = get(dash, f"/compare?baseline={few.v1}&candidate={few.v2}")
    with open_store(few.path) as store:
        runs = (store.get_run(few.v1), store.get_run(few.v2))
    result = compare(*runs)
    assert result.analysis is not None
    assert result.analysis.verdict.kind == "Better"
    nav = [
        ("/", "← All runs"),
        (f"/runs/{few.v1}", "support-v1 (run 1)"),
        (f"/runs/{few.v2}", "support-v2 (run 2)"),
    ]
    assert response.text == render_html(result, runs=runs, title="support-v1 → support-v2", nav=nav)
    assert '<span class="badge better">Better</span>' in response.text
    assert '<nav class="links"><a href="/">← All runs</a>' in response.text
    data = payload(response.text)
    assert data["kind"] == "pairwise"
    assert data["has_texts"]
    # The same URL, the same page (kept, not computed again).
    assert get(dash, f"/compare?baseline={few.v1}&candidate={few.v2}").body == response.body


def test_compare_the_other_way(dash: Dashboard, few: FewRuns) -> None:
    page = get(dash, f"/compare?baseline={few.v1}&candidate={few.v3}").text
    assert '<span class="badge worse">Worse</span>' in page


def test_compare_with_an_interrupted_run_cannot_judge(dash: Dashboard, few: FewRuns) -> None:
    page = get(dash, f"/compare?baseline={few.v1}&candidate={few.interrupted}").text
    data = payload(page)
    problems = data["comparisons"][0]["problems"]
    assert any("interrupted" in p for p in problems), problems


def test_n_way_compare_is_the_matrix(dash: Dashboard, few: FewRuns) -> None:
    url = f"/compare?baseline={few.v1}&candidate={few.v2}&candidate={few.v3}"
    page = get(dash, url).text
    with open_store(few.path) as store:
        runs = [store.get_run(r) for r in (few.v1, few.v2, few.v3)]
        labels = [store.info(r).label for r in (few.v1, few.v2, few.v3)]
    combined = combine_runs(runs, labels, source=f"runs {few.v1}, {few.v2}, {few.v3}")
    result = compare_matrix(combined, labels, labels[0])
    data = payload(page)
    assert data["kind"] == "matrix"
    assert (
        data["targets"]
        == labels
        == ["support-v1 (run 1)", "support-v2 (run 2)", "support-v3 (run 3)"]
    )
    assert data["result"] == payload(render_html(result, runs=(combined,)))["result"]
    verdicts = [c["verdict"] for c in data["comparisons"]]
    assert verdicts == ["Better", "Worse"]
    assert "support-v1 against 2 candidates" in page
    assert "40 tests x 3 targets; baseline <strong>support-v1 (run 1)</strong>" in page


def test_the_list_form_without_its_script_redirects(dash: Dashboard, few: FewRuns) -> None:
    r = get(dash, f"/compare?run={few.v3}&run={few.v1}&run={few.v2}", 303)
    assert (
        r.headers["Location"] == f"/compare?baseline={few.v3}&candidate={few.v1}&candidate={few.v2}"
    )
    r = get(dash, f"/compare?run={few.v3}&run={few.v1}&baseline={few.v1}", 303)
    assert r.headers["Location"] == f"/compare?baseline={few.v1}&candidate={few.v3}"
    r = get(dash, f"/compare?run={few.v3}", 400)
    assert error_of(r) == "Tick two or more runs to compare them."


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/runs/999", "No run 999 in this store: it may have been deleted."),
        ("/runs/abc", "No page here: runs are at /runs/ID, e.g. /runs/3."),
        ("/runs/%D9%A3", "No page here: runs are at /runs/ID, e.g. /runs/3."),
        (
            "/compare?baseline=1&candidate=999",
            "No run 999 in this store: it may have been deleted.",
        ),
        (
            "/compare?baseline=999&candidate=1",
            "No run 999 in this store: it may have been deleted.",
        ),
        ("/nothing/here", "No page at /nothing/here: the runs are listed at /."),
        ("/favicon.ico", "No page at /favicon.ico: the runs are listed at /."),
    ],
)
def test_unknown_pages_are_404(dash: Dashboard, url: str, message: str) -> None:
    r = get(dash, url, 404)
    assert error_of(r) == message
    assert '<h1 id="error-title">Not found</h1>' in r.text
    assert 'href="/" id="back"' in r.text
    assert "Traceback" not in r.text


TWICE = "A run is named twice; compare different runs (a run compared with itself tells nothing)."


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "/?sort=size",
            "sort must be one of id, name, when, target, cases, attempts, pass_rate, "
            "mean_score, cost, status, got 'size'.",
        ),
        ("/?order=up", "order must be asc or desc, got 'up'."),
        ("/?page=0", "page must be a whole number from 1, got '0'."),
        ("/?page=-2", "page must be a whole number from 1, got '-2'."),
        ("/?page=two", "page must be a whole number from 1, got 'two'."),
        ("/?page=99999999999", "page must be a whole number from 1, got '99999999999'."),
        ("/?name=a&name=b", "name is given 2 times; give it once."),
        ("/runs/1?page=x", "page must be a whole number from 1, got 'x'."),
        (
            "/compare",
            "Say which run is the baseline: /compare?baseline=3&candidate=7 (tick runs in "
            "the list and press Compare).",
        ),
        ("/compare?baseline=1", "Give at least one candidate: /compare?baseline=3&candidate=7."),
        (
            "/compare?baseline=one&candidate=2",
            "baseline must be a run id (a number, as in the runs list), got 'one'.",
        ),
        (
            "/compare?baseline=1&candidate=2.0",
            "candidate must be a run id (a number, as in the runs list), got '2.0'.",
        ),
        (
            "/compare?baseline=1&candidate=-2",
            "candidate must be a run id (a number, as in the runs list), got '-2'.",
        ),
        (
            "/compare?baseline=1&candidate=99999999999999999999",
            "candidate must be a run id (a number, as in the runs list), "
            "got '99999999999999999999'.",
        ),
        (
            "/compare?baseline=1&candidate=1",
            TWICE,
        ),
        (
            "/compare?baseline=1&candidate=2&candidate=2",
            TWICE,
        ),
        ("/compare?baseline=1&baseline=2&candidate=3", "baseline is given 2 times; give it once."),
        (
            "/compare?baseline=1&" + "&".join(f"candidate={i}" for i in range(2, 15)),
            "At most 12 candidates at once, got 13.",
        ),
        (
            "/?name=%ff",
            "The query cannot be read: 'utf-8' codec can't decode byte 0xff in position 0: "
            "invalid start byte.",
        ),
    ],
)
def test_bad_queries_are_400(dash: Dashboard, url: str, message: str) -> None:
    r = get(dash, url, 400)
    assert error_of(r) == message
    assert '<h1 id="error-title">Bad request</h1>' in r.text


def test_runs_that_cannot_be_compared_give_a_page(tmp_path: Path, few: FewRuns) -> None:
    """A run of several targets (stored by the API, not by `runs import`): a 422 page
    that says why, in a matrix as in a pair."""
    from tests.store.conftest import synthetic_run

    with open_store(few.path) as store:
        both = store.add_run(synthetic_run(5, targets=2), name="two-targets")
    dash = Dashboard(str(few.path))
    for url in (
        f"/compare?baseline={few.v1}&candidate={both}",
        f"/compare?baseline={few.v1}&candidate={few.v2}&candidate={both}",
    ):
        r = dash.handle("GET", url)
        assert r.status == 422
        assert '<h1 id="error-title">Cannot compare these runs</h1>' in r.text
        message = error_of(r)
        assert message is not None
        assert "model-0" in message
        assert "model-1" in message


def test_only_get_and_head(dash: Dashboard) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        r = dash.handle(method, "/", "127.0.0.1")
        assert r.status == 405
        assert r.headers["Allow"] == "GET, HEAD"
        assert error_of(r) == f"The dashboard is read-only: {method} is not served, only GET."
    assert dash.handle("HEAD", "/", "127.0.0.1").status == 200


@pytest.mark.parametrize(
    ("host", "status"),
    [
        ("127.0.0.1:8765", 200),
        ("localhost:8765", 200),
        ("LOCALHOST", 200),
        ("[::1]:8765", 200),
        ("evil.example:8765", 421),
        ("127.0.0.1.evil.example", 421),
        (None, 421),
    ],
)
def test_host_header_is_checked(dash: Dashboard, host: str | None, status: int) -> None:
    """A page elsewhere cannot read the dashboard through a name rebound to 127.0.0.1."""
    assert dash.handle("GET", "/", host).status == status


def test_an_unexpected_failure_is_a_page_and_a_log_line(few: FewRuns) -> None:
    logged: list[str] = []
    dash = Dashboard(str(few.path), log=logged.append)

    def broken(query: object) -> str:
        raise RuntimeError("disk on fire")

    dash.runs_list = broken  # type: ignore[method-assign]
    r = dash.handle("GET", "/?name=x")
    assert r.status == 500
    assert (
        error_of(r)
        == "RuntimeError: disk on fire. The server's output says more; please report it."
    )
    assert "Traceback" not in r.text
    assert logged == ["GET /?name=x: RuntimeError: disk on fire"]


def test_no_store_is_a_503_and_none_is_made(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "runs.db"
    dash = Dashboard(str(path))
    with pytest.raises(StoreError, match="no run store at"):
        dash.check()
    r = dash.handle("GET", "/")
    assert r.status == 503
    assert "no run store at" in (error_of(r) or "")
    assert not path.parent.exists()


# -- escaping and read-only -------------------------------------------------------------------


def test_run_text_is_escaped_everywhere(dash: Dashboard, few: FewRuns) -> None:
    assert few.hostile is not None
    pages = {
        "list": get(dash, "/").text,
        "filtered": get(dash, "/?name=" + "%3Cscript%3E").text,
        "run": get(dash, f"/runs/{few.hostile}").text,
        "compare": get(dash, f"/compare?baseline={few.hostile}&candidate={few.v1}").text,
        "matrix": get(
            dash, f"/compare?baseline={few.v1}&candidate={few.hostile}&candidate={few.v2}"
        ).text,
    }
    for where, page in pages.items():
        for text in (HOSTILE_NAME, HOSTILE_ID, HOSTILE_OUTPUT, HOSTILE_MODEL, "<script>window"):
            assert text not in page, (where, text)
        for tag in ("<img", "<i ", "<b>"):
            assert tag not in page.lower(), (where, tag)
    assert html.escape(HOSTILE_NAME) in pages["list"]
    assert html.escape(HOSTILE_MODEL) in pages["list"]
    assert row_ids(pages["filtered"]) == [few.hostile]
    assert html.escape(HOSTILE_ID) in pages["run"]
    assert html.escape(HOSTILE_OUTPUT) in pages["run"]
    # The report carries them as JSON, its own way: intact once parsed.
    data = payload(pages["matrix"])
    assert HOSTILE_ID in data["cases"]["test_ids"]
    assert HOSTILE_OUTPUT in data["cases"]["outputs"][1]
    assert data["targets"][1] == f"{HOSTILE_NAME} (run {few.hostile})"


def test_an_error_page_escapes_what_it_repeats(dash: Dashboard) -> None:
    r = get(dash, "/compare?baseline=%3Cimg%20src%3Dx%3E&candidate=2", 400)
    assert "<img src=x>" not in r.text
    assert "&lt;img src=x&gt;" in r.text
    r = get(dash, "/%3Cscript%3Ealert(1)%3C/script%3E", 404)
    assert "<script>alert" not in r.text


def test_pages_say_what_may_run(dash: Dashboard, few: FewRuns) -> None:
    """Own pages: only their script, by hash; nothing fetched; no framing."""
    from evaldelta.serve._pages import RUNS_SCRIPT

    r = get(dash, "/")
    csp = r.headers["Content-Security-Policy"]
    digest = hashlib.sha256(RUNS_SCRIPT.encode()).digest()
    import base64

    assert f"script-src 'sha256-{base64.b64encode(digest).decode()}'" in csp
    assert "default-src 'none'" in csp
    assert "frame-ancestors 'none'" in csp
    assert f"<script>{RUNS_SCRIPT}</script>" in r.text
    assert r.text.count("<script") == 1
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Cache-Control"] == "no-store"
    compare_page = get(dash, f"/compare?baseline={few.v1}&candidate={few.v2}")
    assert compare_page.headers["Content-Security-Policy"] == "frame-ancestors 'none'"
    assert '<meta http-equiv="Content-Security-Policy"' in compare_page.text
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", r.text + compare_page.text)


def test_the_store_is_only_read(few: FewRuns) -> None:
    """A session of every kind of request leaves the store's file exactly as it was,
    and leaves no journal beside it."""
    before = few.path.read_bytes()
    stat = few.path.stat()
    folder = sorted(p.name for p in few.path.parent.iterdir())
    dash = Dashboard(str(few.path))
    dash.start_warmup()
    urls = [
        "/",
        "/?sort=pass_rate",
        "/?sort=cost&order=asc&page=1",
        "/?name=support&target=gpt",
        f"/runs/{few.v1}",
        f"/runs/{few.v2}?page=1",
        f"/compare?baseline={few.v1}&candidate={few.v2}",
        f"/compare?baseline={few.v1}&candidate={few.v2}&candidate={few.v3}",
        f"/compare?run={few.v1}&run={few.v2}",
        "/runs/999",
        "/compare?baseline=x",
    ]
    for url in urls:
        assert dash.handle("GET", url).status in (200, 303, 400, 404)
    for method in ("POST", "DELETE", "PUT"):
        assert dash.handle(method, f"/runs/{few.v1}").status == 405
    dash.close()
    after = few.path.stat()
    assert few.path.read_bytes() == before
    assert (after.st_mtime_ns, after.st_size) == (stat.st_mtime_ns, stat.st_size)
    assert sorted(p.name for p in few.path.parent.iterdir()) == folder
    with open_store(few.path) as store:
        assert [r.name for r in store.list_runs()][-3:] == [
            "support-v3",
            "support-v2",
            "support-v1",
        ]


def test_a_run_stored_without_texts(tmp_path: Path) -> None:
    from tests.store.conftest import synthetic_run

    path = tmp_path / "runs.db"
    with open_store(path) as store:
        rid = store.add_run(synthetic_run(4, attempts=2), name="bare")
    page = Dashboard(str(path)).handle("GET", f"/runs/{rid}").text
    assert "Cases 1–4 of 4 The run was stored without its texts" in page
    assert page.count('<section class="case">') == 4
    assert "<th>Output</th>" not in page
    assert "timeout (infra)" in page  # the error of record 7, and its kind


# -- a PostgreSQL store ------------------------------------------------------------------


def test_the_pages_answer_from_postgresql(postgres_url: str) -> None:
    """The same store on a server: every page answers as from the file, through a few
    read-only connections kept open, and the store is named without its password."""
    import threading

    from evaldelta.serve._app import POOL_SIZE
    from evaldelta.store import mask_url

    few = few_runs(postgres_url)  # type: ignore[arg-type]
    dash = Dashboard(postgres_url, allowed_hosts=["127.0.0.1"])
    try:
        assert dash.check() == 5
        runs = get(dash, "/").text
        assert row_ids(runs) == [few.hostile, few.interrupted, few.v3, few.v2, few.v1]
        assert mask_url(postgres_url) in html.unescape(runs)
        assert "support-v2" in get(dash, f"/runs/{few.v2}").text
        report = get(dash, f"/compare?baseline={few.v1}&candidate={few.v2}").text
        assert "Better" in report
        matrix = get(dash, f"/compare?baseline={few.v1}&candidate={few.v2}&candidate={few.v3}")
        assert matrix.status == 200
        assert error_of(get(dash, "/runs/999", 404)) == (
            "No run 999 in this store: it may have been deleted."
        )
        # Many requests at once share the pool's few connections.
        answers: list[int] = []
        threads = [
            threading.Thread(
                target=lambda: answers.append(dash.handle("GET", "/", "127.0.0.1").status)
            )
            for _ in range(3 * POOL_SIZE)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert answers == [200] * (3 * POOL_SIZE)
        assert dash._pool is not None
        assert len(dash._pool._idle) <= POOL_SIZE
        # Read-only transactions: the dashboard's connections cannot write.
        with dash.store() as store:
            assert store.readonly
            with pytest.raises(StoreError, match="opened for reading only"):
                store.rename_run(few.v1, "renamed")
    finally:
        dash.close()
