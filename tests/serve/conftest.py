"""The dashboard's fixtures: a store of a few runs, and the dashboard over it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaldelta.serve import Dashboard, Response
from tests.serve.stores import FewRuns, few_runs


@pytest.fixture
def few(tmp_path: Path) -> FewRuns:
    return few_runs(tmp_path / "store" / "runs.db")


@pytest.fixture
def dash(few: FewRuns) -> Dashboard:
    return Dashboard(str(few.path), allowed_hosts=["127.0.0.1", "localhost", "::1"])


def get(dash: Dashboard, url: str, status: int = 200) -> Response:
    """GET ``url`` from the dashboard, as a browser on this machine asks for it."""
    response = dash.handle("GET", url, "127.0.0.1:8765")
    assert response.status == status, (url, response.status, error_of(response))
    return response


def error_of(response: Response) -> str | None:
    """The message of an error page (unescaped), or None for another page."""
    import html

    found = re.search(r'<p id="error-message">(.*?)</p>', response.text, re.S)
    return html.unescape(found.group(1)) if found else None


def row_ids(page: str) -> list[int]:
    """The run ids of the runs list's rows, in order."""
    return [int(m) for m in re.findall(r'<tr class="run-row[^"]*" data-id="(\d+)"', page)]
