"""The dashboard behind a real socket: statuses, headers, HEAD, the Host guard."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from evaldelta.serve import Dashboard, DashboardServer, is_loopback, make_server
from tests.serve.stores import FewRuns, serving


def request(
    url: str, path: str, method: str = "GET", host: str | None = None
) -> tuple[int, dict[str, str], bytes]:
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Host": host} if host is not None else {}
        conn.request(method, path, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def test_pages_over_http(few: FewRuns) -> None:
    with serving(few.path) as url:
        assert url.startswith("http://127.0.0.1:")
        status, headers, body = request(url, "/")
        assert status == 200
        assert headers["content-type"] == "text/html; charset=utf-8"
        assert int(headers["content-length"]) == len(body)
        assert "default-src 'none'" in headers["content-security-policy"]
        assert headers["server"].startswith("evaldelta")
        assert b"support-v1" in body
        status, _, body = request(url, f"/compare?baseline={few.v1}&candidate={few.v2}")
        assert status == 200
        assert b'<span class="badge better">Better</span>' in body
        status, _, body = request(url, "/runs/424242")
        assert status == 404
        assert b"No run 424242 in this store" in body
        status, _, _ = request(url, "/?page=nope")
        assert status == 400


def test_head_has_no_body(few: FewRuns) -> None:
    with serving(few.path) as url:
        status, headers, body = request(url, "/", "HEAD")
        assert status == 200
        assert int(headers["content-length"]) > 1000
        assert body == b""


def test_writes_are_refused(few: FewRuns) -> None:
    with serving(few.path) as url:
        for method in ("POST", "PUT", "DELETE"):
            status, headers, body = request(url, f"/runs/{few.v1}", method)
            assert status == 405
            assert headers["allow"] == "GET, HEAD"
            assert b"The dashboard is read-only" in body


def test_a_refused_body_is_not_read_as_the_next_request(few: FewRuns) -> None:
    """A POST's body is never read: the server closes the connection after its 405,
    so the body cannot be taken for a request of its own."""
    with serving(few.path) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("POST", "/", body=b"GET /runs/424242 HTTP/1.1\r\n\r\n")
            r = conn.getresponse()
            assert r.status == 405
            assert r.getheader("Connection") == "close"
            r.read()
        finally:
            conn.close()


def test_a_loopback_server_answers_loopback_names_only(few: FewRuns) -> None:
    with serving(few.path) as url:
        port = url.rstrip("/").rsplit(":", 1)[1]
        assert request(url, "/", host=f"localhost:{port}")[0] == 200
        status, _, body = request(url, "/", host=f"attacker.example:{port}")
        assert status == 421
        assert b"attacker.example" in body


def test_a_server_told_to_listen_elsewhere_takes_any_name(few: FewRuns) -> None:
    dashboard = Dashboard(str(few.path))
    server = make_server(dashboard, "0.0.0.0", 0)
    assert dashboard.allowed_hosts is None
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.port}/"
        assert request(url, "/", host="my-box.lan")[0] == 200
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_a_taken_port_is_an_os_error(few: FewRuns) -> None:
    with serving(few.path) as url:
        port = int(url.rstrip("/").rsplit(":", 1)[1])
        with pytest.raises(OSError, match=r"[Aa]ddress already in use"):
            make_server(Dashboard(str(few.path)), "127.0.0.1", port)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("localhost", True),
        ("::1", True),
        ("[::1]", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.168.1.5", False),
        ("example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_requests_run_side_by_side(tmp_path: Path, few: FewRuns) -> None:
    """Several requests at once, each with its own connection to the store."""
    results: list[int] = []
    with serving(few.path) as url:

        def fetch(path: str) -> None:
            results.append(request(url, path)[0])

        paths = ["/", f"/runs/{few.v1}", f"/compare?baseline={few.v1}&candidate={few.v3}"] * 4
        threads = [threading.Thread(target=fetch, args=(p,)) for p in paths]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert results == [200] * len(paths)


@contextmanager
def _bounded(dashboard: Dashboard, **limits: float) -> Iterator[DashboardServer]:
    """``dashboard`` served on a free port with these connection limits, stopped after."""
    server = make_server(dashboard, "127.0.0.1", 0, **limits)  # type: ignore[arg-type]
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        dashboard.close()
        thread.join(timeout=10)


def _half_sent(port: int) -> socket.socket:
    """A connection that starts a request and never ends its headers."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    return s


def test_idle_and_half_sent_connections_are_cut_off_and_bounded(few: FewRuns) -> None:
    """Clients that connect and never finish a request hold at most the bound of
    threads; a new client takes the place of the one idle longest (so it is served at
    once), and the rest are closed after the idle timeout."""
    idle: list[socket.socket] = []
    with _bounded(Dashboard(str(few.path)), idle_timeout=1.5, max_connections=8) as server:
        try:
            before = threading.active_count()
            started = time.monotonic()
            for _ in range(40):
                idle.append(_half_sent(server.port))
                time.sleep(0.005)  # each arrives after the one before
            time.sleep(0.2)
            # At most 8 handler threads, whatever the number of sockets.
            assert threading.active_count() - before <= 8
            # Each newcomer beyond the bound took the place of the oldest: 32 were closed.
            for s in idle[:32]:
                s.settimeout(5)
                assert s.recv(200) == b""
            # A real client now is served at once, in the place of another idle one...
            t0 = time.monotonic()
            status, _, body = request(server.url, "/")
            assert (status, b"support-v1" in body) == (200, True)
            assert time.monotonic() - t0 < 1.0
            # ...and the idle ones left are cut off after the idle timeout.
            for s in idle[32:]:
                s.settimeout(5)
                assert s.recv(4096) == b""
            assert time.monotonic() - started < 5.0
            assert threading.active_count() <= before + 1
        finally:
            for s in idle:
                s.close()


def test_a_client_is_told_busy_only_when_every_slot_is_answering(few: FewRuns) -> None:
    dashboard = Dashboard(str(few.path))
    release = threading.Event()
    answer = dashboard.handle

    def slow(*args: object, **kwargs: object) -> object:
        release.wait(10)
        return answer(*args, **kwargs)  # type: ignore[arg-type]

    dashboard.handle = slow  # type: ignore[method-assign]
    working: list[socket.socket] = []
    with _bounded(dashboard, idle_timeout=5, max_connections=2) as server:
        try:
            for _ in range(2):
                s = socket.create_connection(("127.0.0.1", server.port), timeout=5)
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                working.append(s)
            time.sleep(0.3)  # both are being answered (slowly)
            status, headers, body = request(server.url, "/")
            assert status == 503
            assert headers["retry-after"] == "1"
            assert body == b"evaldelta: too many connections at once"
            release.set()
            for s in working:
                assert s.recv(64).startswith(b"HTTP/1.1 200")
        finally:
            release.set()
            for s in working:
                s.close()
