"""The dashboard's own pages as HTML strings: the runs list, a run, and errors.

Pure functions of the views in :mod:`evaldelta.serve._views`: no store, no socket. Every
text that comes from a run (names, test ids, inputs, outputs, config) goes through
:func:`esc`; the only script is :data:`RUNS_SCRIPT`, inline, which the Content Security
Policy lets run by its hash (nothing else runs, nothing is fetched). The comparison
page is the HTML report's (:func:`evaldelta.report._html.render_html`), not drawn here.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from evaldelta.report._html import script_policy
from evaldelta.report._text import ms, usd
from evaldelta.serve._summary import COLUMNS, SUMMARY_COLUMNS, RunRow
from evaldelta.serve._views import AttemptView, CaseView, RunsView, RunView

__all__ = [
    "CSP",
    "RUNS_SCRIPT",
    "error_page",
    "esc",
    "run_page",
    "runs_page",
]

_SURROGATE = re.compile("[\ud800-\udfff]")


def esc(value: object) -> str:
    """``value`` as text safe in HTML content and in quoted attributes (lone
    surrogates, which UTF-8 cannot carry, shown as U+FFFD)."""
    return html.escape(_SURROGATE.sub("\ufffd", str(value)), quote=True)


def _url(path: str, params: Mapping[str, Any]) -> str:
    """``path`` with the non-empty ``params`` as its query, escaped for an attribute."""
    kept = {k: _SURROGATE.sub("\ufffd", str(v)) for k, v in params.items() if v not in (None, "")}
    return esc(f"{path}?{urlencode(kept)}" if kept else path)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.1f}%"


def _score(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _cost(x: float | None) -> str:
    return "n/a" if x is None else usd(x)


def _ms(x: float | None) -> str:
    return "n/a" if x is None else ms(x)


def _asset(name: str) -> str:
    """A file of ``serve/assets/``, shipped in the package (and the wheel)."""
    return (
        resources.files("evaldelta.serve")
        .joinpath("assets")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )


CSS = _asset("dashboard.css")

#: The runs page's script: ticks, the baseline mark and the Compare button. The ticked
#: runs are kept in sessionStorage, so that ticks survive paging, sorting and filtering;
#: the first ticked (or the one marked) is the baseline.
RUNS_SCRIPT = _asset("runs.js")

#: The Content Security Policy of the dashboard's own pages: only the runs page's
#: script runs, nothing is fetched, forms go to the dashboard only, no framing.
CSP = script_policy(RUNS_SCRIPT, "form-action 'self'; frame-ancestors 'none'")


def _layout(title: str, body: str, *, store: str = "", script: str | None = None) -> str:
    store_note = f'<span class="store">store: {esc(store)}</span>' if store else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<link rel="icon" href="data:,">\n'
        f"<title>{esc(title)} · evaldelta</title>\n"
        f"<style>\n{CSS}</style>\n"
        "</head>\n<body>\n"
        '<header class="top"><a class="brand" href="/">evaldelta</a>'
        f'<a href="/">Runs</a>{store_note}</header>\n'
        f"<main>\n{body}\n</main>\n"
        "<footer>evaldelta dashboard: read-only, local; this page fetches nothing "
        "from the network.</footer>\n"
        + (f"<script>{script}</script>\n" if script else "")
        + "</body>\n</html>\n"
    )


# -- the runs list ----------------------------------------------------------------------


def _state(view: RunsView, **changes: Any) -> dict[str, Any]:
    """The runs list's query, with ``changes``; defaults left out of the URL."""
    state = {
        "name": view.name,
        "target": view.target,
        "sort": view.sort,
        "order": view.order,
        "page": view.page,
    }
    state.update(changes)
    if state["sort"] == "id" and state["order"] == "desc":
        state["sort"] = state["order"] = None
    if state["page"] == 1:
        state["page"] = None
    return state


def _heading(view: RunsView, key: str) -> str:
    heading, first = COLUMNS[key]
    if view.sort == key:
        order = "asc" if view.order == "desc" else "desc"
        arrow = " ▲" if view.order == "asc" else " ▼"
        sorted_ = f' aria-sort="{"ascending" if view.order == "asc" else "descending"}"'
    else:
        order, arrow, sorted_ = first, "", ""
    numeric = ' class="num"' if key in ("id", "cases", "attempts") or key in SUMMARY_COLUMNS else ""
    link = _url("/", _state(view, sort=key, order=order, page=1))
    return f'<th{sorted_}{numeric} data-key="{key}"><a href="{link}">{esc(heading)}{arrow}</a></th>'


def _run_row(row: RunRow) -> str:
    summary = row.summary
    target = esc(row.target) if row.target else '<span class="muted">—</span>'
    if row.model and row.model != row.target:
        target += f' <span class="muted">· {esc(row.model)}</span>'
    status = (
        '<span class="status interrupted" title="the run stopped before it finished: '
        'a comparison with it cannot be judged">interrupted</span>'
        if row.interrupted
        else '<span class="status running" title="the run is still going: its attempts so '
        'far are shown">running</span>'
        if row.running
        else f'<span class="status">{esc(row.status)}</span>'
    )
    rid = row.id
    return (
        f'<tr class="run-row{" interrupted" if row.interrupted else ""}" data-id="{rid}">'
        f'<td><input type="checkbox" class="tick" name="run" value="{rid}" '
        f'aria-label="Tick run {rid}"></td>'
        f'<td><input type="radio" class="mark" name="baseline" value="{rid}" '
        f'aria-label="Mark run {rid} as the baseline"></td>'
        f'<td class="num">{rid}</td>'
        f'<td class="name"><a href="/runs/{rid}">{esc(row.name)}</a></td>'
        f"<td>{esc(row.when)}</td>"
        f"<td>{target}</td>"
        f'<td class="num">{row.cases:,}</td>'
        f'<td class="num">{row.attempts:,}</td>'
        f'<td class="num">{_pct(summary.pass_rate if summary else None)}</td>'
        f'<td class="num">{_score(summary.mean_score if summary else None)}</td>'
        f'<td class="num">{_cost(summary.cost_usd if summary else None)}</td>'
        f"<td>{status}</td></tr>"
    )


def _pager(page: int, pages: int, url_of: Any, what: str) -> str:
    if pages <= 1:
        return ""
    prev = (
        f'<a href="{url_of(page - 1)}" rel="prev" id="prev-page">← Previous</a>'
        if page > 1
        else '<span class="muted">← Previous</span>'
    )
    next_ = (
        f'<a href="{url_of(page + 1)}" rel="next" id="next-page">Next →</a>'
        if page < pages
        else '<span class="muted">Next →</span>'
    )
    where = f"<span>Page {page} of {pages}</span>"
    return f'<nav class="pages" aria-label="{what}">{prev}{where}{next_}</nav>'


def runs_page(view: RunsView) -> str:
    """The runs list: filters, a sortable table of one page of runs, ticks and Compare."""
    filtered = bool(view.name.strip() or view.target.strip())
    first = (view.page - 1) * view.page_size
    if view.rows:
        count = f"Runs {first + 1:,}–{first + len(view.rows):,} of {view.matched:,}" + (
            f" matching (of {view.stored:,} stored)" if filtered else ""
        )
    elif view.stored:
        count = f"No run matches these filters (of {view.stored:,} stored)."
    else:
        count = "No runs stored yet: store one with <code>evaldelta runs import FILE</code>."
    keep = "".join(
        f'<input type="hidden" name="{k}" value="{esc(v)}">'
        for k, v in (("sort", view.sort), ("order", view.order))
        if not (view.sort == "id" and view.order == "desc")
    )
    clear = (
        f' <a href="{_url("/", _state(view, name="", target="", page=1))}" id="clear-filters">'
        "Clear filters</a>"
        if filtered
        else ""
    )
    filters = (
        '<form class="filters" method="get" action="/" role="search">'
        f'<label>Name<input type="search" name="name" id="filter-name" value="{esc(view.name)}" '
        'placeholder="part of a name"></label>'
        '<label>Target or model<input type="search" name="target" id="filter-target" '
        f'value="{esc(view.target)}" placeholder="part of a target or model"></label>'
        f'{keep}<button type="submit" id="filter">Filter</button>{clear}</form>'
    )
    headings = "".join(_heading(view, key) for key in COLUMNS)
    rows = "\n".join(_run_row(r) for r in view.rows)
    table = (
        '<table class="list" id="runs"><thead><tr><th title="tick to compare">Compare</th>'
        f'<th title="the run the others are compared with">Baseline</th>{headings}</tr></thead>'
        f"<tbody>\n{rows}\n</tbody></table>"
        if view.rows
        else ""
    )
    pager = _pager(
        view.page, view.pages, lambda p: _url("/", _state(view, page=p)), "pages of runs"
    )
    body = (
        "<h1>Runs</h1>\n"
        f"{filters}\n"
        f'<form id="pick" method="get" action="/compare">\n'
        '<div class="actions"><button type="submit" class="primary" id="compare">Compare'
        '</button><span id="ticked" class="note" aria-live="polite">Tick two or more runs, '
        "then press Compare: the first ticked (or the one marked as baseline) is the "
        'baseline.</span><button type="button" id="clear-ticks" hidden>Clear ticks</button>'
        "</div>\n"
        f'<p class="note" id="count">{count}</p>\n'
        f"{table}\n</form>\n{pager}"
    )
    return _layout("Runs", body, store=view.store, script=RUNS_SCRIPT)


# -- a run --------------------------------------------------------------------------


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _figures_table(figures: Sequence[Mapping[str, Any]]) -> str:
    def attempts(f: Mapping[str, Any]) -> str:
        per = f["attempts_per_case"]
        each = "" if not per else (str(per[0]) if len(per) == 1 else f"{per[0]}–{per[-1]}")
        return f"{f['attempts']:,}" + (f" ({each} per case)" if each else "")

    rows = "".join(
        "<tr>"
        f"<td>{esc(f['target']) if f['target'] is not None else '(no target)'}</td>"
        f'<td class="num">{f["cases"]:,}</td>'
        f'<td class="num">{attempts(f)}</td>'
        f'<td class="num">{_pct(f["pass_rate"])}</td>'
        f'<td class="num">{_score(f["mean_score"])}</td>'
        f'<td class="num">{_ms(f["latency_ms"])}</td>'
        f'<td class="num">{_cost(f["cost_usd"])}</td>'
        f'<td class="num">{f["errors"]:,}</td>'
        f'<td class="num">{f["safety_failures"]:,}</td>'
        "</tr>"
        for f in figures
    )
    return (
        '<table class="list" id="summary"><thead><tr><th>Target</th><th class="num">Cases</th>'
        '<th class="num">Attempts</th><th class="num">Pass rate</th>'
        '<th class="num">Mean score</th><th class="num">Latency</th><th class="num">Cost</th>'
        '<th class="num">Errors</th><th class="num">Safety failures</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        '<p class="note">Pass rate and mean score are means over cases (each case the mean '
        "of its attempts); latency is per case, excluding waits; cost is the total; "
        "infrastructure failures are left out of every figure.</p>"
    )


def _text_block(label: str, text: str | None) -> str:
    if text is None:
        return ""
    if len(text) <= 160 and "\n" not in text:
        return f"<p><strong>{esc(label)}:</strong> {esc(text)}</p>"
    return f"<details><summary>{esc(label)}</summary><pre>{esc(text)}</pre></details>"


def _attempt_row(a: AttemptView, several_targets: bool, has_outputs: bool) -> str:
    verdict = '<span class="pass">pass</span>' if a.passed else '<span class="fail">fail</span>'
    if a.safety_failure:
        verdict += ' <span class="fail">safety</span>'
    error = ""
    if a.error is not None:
        kind = f" ({esc(a.error_kind)})" if a.error_kind else ""
        error = f"{esc(a.error)}{kind}"
    output = ""
    if a.output is not None:
        short = a.output if len(a.output) <= 80 and "\n" not in a.output else None
        output = (
            esc(short)
            if short is not None
            else f"<details><summary>{esc(a.output[:80])}…</summary><pre>{esc(a.output)}</pre>"
            "</details>"
        )
    target = f"<td>{esc(a.target)}</td>" if several_targets else ""
    return (
        f'<tr><td class="num">{a.attempt}</td>{target}<td class="num">{a.score:g}</td>'
        f'<td>{verdict}</td><td class="num">{_ms(a.latency_ms)}</td>'
        f'<td class="num">{_cost(a.cost_usd)}</td><td>{error}</td>'
        + (f'<td class="output">{output}</td>' if has_outputs else "")
        + "</tr>"
    )


def _case(case: CaseView) -> str:
    several = any(a.target is not None for a in case.attempts)
    has_outputs = any(a.output is not None for a in case.attempts)
    category = f' <span class="category">· {esc(case.category)}</span>' if case.category else ""
    head = (
        '<tr><th class="num">Attempt</th>'
        + ("<th>Target</th>" if several else "")
        + '<th class="num">Score</th><th>Result</th><th class="num">Latency</th>'
        '<th class="num">Cost</th><th>Error</th>'
        + ("<th>Output</th>" if has_outputs else "")
        + "</tr>"
    )
    rows = "".join(_attempt_row(a, several, has_outputs) for a in case.attempts)
    return (
        '<section class="case">'
        f'<h3 class="test-id">{esc(case.test_id)}{category}</h3>'
        f"{_text_block('Input', case.input)}{_text_block('Expected', case.expected)}"
        f'<table class="list attempts"><thead>{head}</thead><tbody>{rows}</tbody></table>'
        "</section>"
    )


def run_page(view: RunView) -> str:
    """A run: its facts, config, per-target figures, and one page of its cases."""
    info = view.info
    status = (
        f'<span class="status {esc(info.status)}">{esc(info.status)}</span>'
        if info.status in ("interrupted", "running")
        else f'<span class="status">{esc(info.status)}</span>'
    )
    ran = (
        f"{esc(info.started_at or '?')} → {esc(info.finished_at or '?')}"
        if info.started_at or info.finished_at
        else '<span class="muted">not declared</span>'
    )
    facts = [
        ("Stored", esc(info.created_at.replace("T", " ").replace("Z", " UTC"))),
        ("Ran", ran),
        ("Status", status),
        ("Source", f"{esc(info.source)} ({esc(info.format)})"),
        (
            "Dataset",
            f"{esc(info.dataset_hash[:12])} ({info.cases:,} cases, {info.records:,} attempts)",
        ),
    ]
    if info.sequential:
        how = info.sequential
        facts.append(
            (
                "Against",
                f"{esc(str(how.get('against', {}).get('name')))}: {esc(str(how.get('reason')))} "
                '<span class="muted">(--stop-when-settled: its comparison uses the '
                "confidence sequence)</span>",
            )
        )
    if info.notes:
        facts.append(("Notes", esc(info.notes)))
    dl = "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in facts)
    config = (
        '<table class="list kv" id="config"><thead><tr><th>Setting</th><th>Value</th></tr></thead>'
        "<tbody>"
        + "".join(
            f"<tr><td>{esc(k)}</td><td>{esc(_json_text(v))}</td></tr>"
            for k, v in info.config.items()
        )
        + "</tbody></table>"
        if info.config
        else '<p class="empty">No settings recorded.</p>'
    )
    first = (view.page - 1) * view.page_size
    shown = (
        f"Cases {first + 1:,}–{first + len(view.cases):,} of {view.case_count:,}"
        if view.cases
        else "No cases."
    )
    if not view.has_texts:
        shown += " The run was stored without its texts (<code>runs import --no-text</code>)."
    pager = _pager(
        view.page,
        view.pages,
        lambda p: esc(f"/runs/{info.id}" + (f"?page={p}" if p > 1 else "")),
        "pages of cases",
    )
    cases = "\n".join(_case(c) for c in view.cases)
    body = (
        f'<p><a href="/">← All runs</a></p>\n'
        f'<h1 id="run-name">{esc(info.name)} <span class="muted">run {info.id}</span></h1>\n'
        f'<dl class="facts">{dl}</dl>\n'
        f"<h2>Summary</h2>\n{_figures_table(view.figures)}\n"
        f"<h2>Config</h2>\n{config}\n"
        f'<h2 id="cases">Cases</h2>\n<p class="note" id="case-count">{shown}</p>\n'
        f"{pager}\n{cases}\n{pager}"
    )
    return _layout(f"{info.name} (run {info.id})", body, store=view.store)


# -- errors -------------------------------------------------------------------------

_REASONS = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    421: "Misdirected request",
    422: "Cannot compare these runs",
    500: "Something went wrong",
    503: "The run store cannot be read",
}


def error_page(status: int, message: str, *, store: str = "") -> str:
    """A page for an error: what went wrong, and the way back to the runs list."""
    title = _REASONS.get(status, "Error")
    body = (
        f'<p class="error-code">Error {status}</p>\n'
        f'<h1 id="error-title">{esc(title)}</h1>\n'
        f'<p id="error-message">{esc(message)}</p>\n'
        '<p><a href="/" id="back">← All runs</a></p>'
    )
    return _layout(title, body, store=store)
