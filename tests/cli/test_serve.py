"""``evaldelta serve`` end to end: the installed command started as a user starts it, on
a free loopback port, asked for pages, and stopped with Ctrl-C (SIGINT)."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Result
from tests.serve.stores import FewRuns, few_runs, serve

Cli = Callable[..., Result]
#: The dashboard must answer within this long of being started (the issue says "under
#: a second"; the interpreter's own start-up is part of it).
START_UP = 1.0


@pytest.fixture
def few(tmp_path: Path) -> FewRuns:
    return few_runs(tmp_path / "store" / "runs.db", hostile=False)


def test_serve_answers_and_stops_cleanly_on_ctrl_c(few: FewRuns) -> None:
    with serve("--store", str(few.path)) as served:
        assert served.started_in < START_UP, f"first page after {served.started_in:.2f} s"
        status, page = served.get("/")
        assert status == 200
        assert "support-v1" in page
        assert "support-v2-retry" in page
        status, page = served.get(f"/compare?baseline={few.v1}&candidate={few.v2}")
        assert status == 200
        assert '<span class="badge better">Better</span>' in page
        assert served.get("/runs/77")[0] == 404
        r = served.stop()
    assert r.code == 0, r.err
    assert r.out == (
        f"evaldelta dashboard: {served.url} (4 runs in {few.path}, read-only). "
        "Press Ctrl-C to stop.\n"
        "evaldelta dashboard: stopped\n"
    )
    assert r.err == ""


def test_sigterm_stops_it_too(few: FewRuns) -> None:
    with serve("--store", str(few.path)) as served:
        r = served.stop(signal.SIGTERM)
    assert r.code == 0, r.err
    assert r.out.endswith("evaldelta dashboard: stopped\n")


def test_the_store_comes_from_the_environment_or_the_default(few: FewRuns, tmp_path: Path) -> None:
    with serve(env={"EVALDELTA_STORE": str(few.path)}) as served:
        assert "support-v3" in served.get("/")[1]
        served.stop()
    folder = tmp_path / "project"
    few_runs(folder / ".evaldelta" / "runs.db", hostile=False)
    with serve(cwd=folder) as served:
        assert "support-v3" in served.get("/")[1]
        r = served.stop()
    assert os.path.join(".evaldelta", "runs.db") in r.out


def test_the_store_is_unchanged_after_a_session(few: FewRuns) -> None:
    before = few.path.read_bytes()
    mtime = few.path.stat().st_mtime_ns
    with serve("--store", str(few.path)) as served:
        for path in (
            "/?sort=pass_rate",
            f"/runs/{few.v1}",
            f"/compare?baseline={few.v1}&candidate={few.v2}&candidate={few.v3}",
        ):
            assert served.get(path)[0] == 200
        assert served.stop().code == 0
    assert few.path.read_bytes() == before
    assert few.path.stat().st_mtime_ns == mtime


def test_listening_beyond_this_machine_warns(few: FewRuns) -> None:
    with serve("--store", str(few.path), "--host", "0.0.0.0") as served:
        r = served.stop()
    assert r.code == 0
    assert r.err.startswith(
        "evaldelta serve: warning: listening on 0.0.0.0, not on this machine only: anyone "
        "who can reach it on port "
    )
    assert "prompts and outputs included. Use --host 127.0.0.1" in r.err


def test_open_starts_a_browser(few: FewRuns, tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(
        f"import sys, pathlib\npathlib.Path({str(opened)!r}).write_text(sys.argv[1])\n"
    )
    with serve(
        "--store", str(few.path), "--open", env={"BROWSER": f"{sys.executable} {browser} %s"}
    ) as served:
        deadline = time.monotonic() + 10
        while not opened.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        served.stop()
    assert opened.read_text() == served.url


def test_no_store_is_one_line_and_exit_2(evaldelta: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    r = evaldelta("serve", "--store", missing, "--port", "0")
    assert r.code == 2
    assert r.err == (
        f"evaldelta: error: no run store at {missing}; store a run first with `evaldelta eval "
        "SUITE` or `evaldelta runs import FILE`, or choose a store with --store PATH or "
        "EVALDELTA_STORE\n"
    )
    assert not missing.exists()


def test_a_taken_port_is_one_line_and_exit_2(evaldelta: Cli, few: FewRuns) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = evaldelta("serve", "--store", few.path, "--port", str(port))
    assert r.code == 2
    assert r.err == (
        f"evaldelta: error: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "choose another port with --port PORT (0 picks a free one)\n"
    )


def test_a_bad_port_is_a_usage_error(evaldelta: Cli, few: FewRuns) -> None:
    r = evaldelta("serve", "--store", few.path, "--port", "70000")
    assert r.code == 2
    assert r.err == "evaldelta: error: --port must be between 0 and 65535, got 70000\n"


def test_help(evaldelta: Cli) -> None:
    r = evaldelta("serve", "--help")
    assert r.code == 0
    for option in ("--store PATH", "--host HOST", "--port PORT", "--open"):
        assert option in r.out
    assert "/compare?baseline=3&candidate=7" in r.out
    assert "serve" in evaldelta("--help").out


def test_idle_clients_are_bounded_and_cut_off(few: FewRuns) -> None:
    """Half-sent requests hold no thread forever and crowd no one out (issue 15, 10):
    past the bound a newcomer takes the place of the client idle longest, a real client
    is served at once, and idle ones are closed after the idle timeout."""
    args = ("--store", str(few.path), "--max-connections", "8", "--idle-timeout", "1.5")
    with serve(*args) as served:
        port = int(served.url.rstrip("/").rsplit(":", 1)[1])
        idle = []
        try:
            for _ in range(40):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # never ends its headers
                idle.append(s)
                time.sleep(0.005)
            time.sleep(0.3)
            for s in idle[:32]:  # made way for the ones after them
                s.settimeout(5)
                assert s.recv(200) == b""
            t0 = time.monotonic()
            status, page = served.get("/")
            assert (status, "support-v1" in page) == (200, True)
            assert time.monotonic() - t0 < 1.0
            for s in idle[32:]:
                s.settimeout(6)
                assert s.recv(4096) == b""  # closed by the dashboard once idle too long
        finally:
            for s in idle:
                s.close()
        r = served.stop()
    assert r.code == 0, r.err
