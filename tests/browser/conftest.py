"""Headless Chromium for the report tests: Debian's ``chromium`` driven by playwright.

Playwright's own browser download is not used (``.ci/browser-deps.sh`` installs both).
Without either, the tests here fail and say what to run: a report nobody opened in a
browser is not tested.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium")


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests, closed when they are done: Playwright's sync
    API keeps an event loop running in this thread while it is open, and the runner's
    tests that come after start event loops of their own."""
    try:
        from playwright import sync_api
    except ImportError:
        pytest.fail("playwright is not installed: run `make browser-deps` (or `make test`)")
    executable = _chromium()
    if executable is None:
        pytest.fail("Debian's chromium is not installed: run `make browser-deps` (or `make test`)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class Opened:
    """A report open in a page, with what the page complained about and fetched."""

    page: Any
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def watched_page(context: Any) -> Opened:
    """A new page of ``context``, recording what it complains about and fetches."""
    page = context.new_page()
    opened = Opened(page)
    page.on(
        "console",
        lambda m: (
            opened.errors.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda e: opened.errors.append(f"page error: {e}"))
    page.on("dialog", lambda d: opened.errors.append(f"dialog: {d.message}"))
    page.on("request", lambda r: opened.requests.append(r.url))
    return opened


@pytest.fixture
def open_report(browser: Any) -> Iterator[Any]:
    """``open_report(path)``: the report at ``path``, opened from disk and ready."""
    contexts: list[Any] = []

    def open_(path: Path, *, timeout_ms: float = 10_000) -> Opened:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        contexts.append(context)
        opened = watched_page(context)
        opened.page.goto(path.resolve().as_uri())
        opened.page.wait_for_selector("html[data-ready]", timeout=timeout_ms)
        return opened

    yield open_
    for context in contexts:
        context.close()
