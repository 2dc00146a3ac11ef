"""The dashboard behind a socket: the standard library's threading HTTP server.

No framework: nothing to install, nothing fetched, and it starts in a fraction of a
second. Each request runs in its own thread (a slow comparison does not hold up the
runs list) and opens the store for itself.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from evaldelta.serve._app import Dashboard

__all__ = ["DashboardServer", "is_loopback", "loopback_names", "make_server"]


def is_loopback(host: str) -> bool:
    """True when ``host`` names this machine only (``127.0.0.1``, ``::1``, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def loopback_names(host: str) -> list[str]:
    """The Host header names a browser on this machine may use for a loopback server."""
    return sorted({"localhost", "127.0.0.1", "::1", host.strip("[]").lower()})


class _Handler(BaseHTTPRequestHandler):
    server: DashboardServer
    server_version = "evaldelta"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        # A client that connects and says nothing (or half a request) is cut off after
        # the server's idle timeout, instead of holding a thread forever.
        super().setup()
        self.connection.settimeout(self.server.idle_timeout)

    def handle_one_request(self) -> None:
        # Until a whole request has arrived this connection only waits: the one a new
        # client may take the place of when every slot is held (see process_request).
        self.server.waiting(self.connection)
        super().handle_one_request()

    def finish(self) -> None:
        self.server.gone(self.connection)
        super().finish()

    def _answer(self) -> None:
        self.server.working(self.connection)
        response = self.server.dashboard.handle(self.command, self.path, self.headers.get("Host"))
        self.send_response(response.status)
        if self.command not in ("GET", "HEAD"):
            # Its body is never read: close, lest it be taken for the next request.
            self.send_header("Connection", "close")
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for name, value in response.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(response.body)

    # Every method gets an answer: GET and HEAD a page, the others a 405 page.
    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _answer  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a dashboard's requests are no news (failures are logged by the app)."""

    def log_error(self, format: str, *args: Any) -> None:
        self.server.dashboard.log(f"{self.address_string()}: {format % args}")


#: Seconds a connection may sit without sending a whole request before it is closed.
IDLE_TIMEOUT_S = 15.0
#: Connections served at once; one more takes the place of the connection that has waited
#: longest for a request, or, when every one is answering, is told "503 busy".
MAX_CONNECTIONS = 64

_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: 39\r\n\r\n"
    b"evaldelta: too many connections at once"
)


class DashboardServer(ThreadingHTTPServer):
    """A threading HTTP server answering with a :class:`Dashboard`: at most
    ``max_connections`` at once, each closed after ``idle_timeout`` seconds without a
    request, so idle or half-sent connections cannot pile up threads and memory; a new
    client takes the place of the one idle longest, so idle clients cannot crowd out
    the others either."""

    daemon_threads = True  # Ctrl-C does not wait for a browser's idle connections...
    block_on_close = False  # ...nor does closing the server (it would join every thread)
    request_queue_size = 128  # a burst of connections waits to be taken or told "busy"

    def __init__(
        self,
        address: tuple[str, int],
        dashboard: Dashboard,
        *,
        idle_timeout: float = IDLE_TIMEOUT_S,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        import threading

        host = address[0]
        if ":" in host:
            self.address_family = socket.AF_INET6
        self.dashboard = dashboard
        self.idle_timeout = idle_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        #: Connections waiting for (the rest of) a request, and since when.
        self._waiting: dict[Any, float] = {}
        self._waiting_lock = threading.Lock()
        super().__init__((host.strip("[]"), address[1]), _Handler)

    def waiting(self, conn: Any) -> None:
        import time

        with self._waiting_lock:
            self._waiting[conn] = time.monotonic()

    def working(self, conn: Any) -> None:
        with self._waiting_lock:
            self._waiting.pop(conn, None)

    gone = working

    def _evict_one(self) -> bool:
        """Close the connection that has waited longest for a request, so that a new
        client is served rather than turned away; False when every one is working."""
        with self._waiting_lock:
            if not self._waiting:
                return False
            oldest = min(self._waiting, key=self._waiting.__getitem__)
            del self._waiting[oldest]
        with contextlib.suppress(OSError):  # gone by itself meanwhile
            oldest.shutdown(socket.SHUT_RDWR)
        return True

    def _take_slot(self) -> bool:
        """A slot for a new connection: a free one, else the place of the connection
        that has waited longest for a request; False when every one is answering."""
        if self._slots.acquire(blocking=False):
            return True
        while self._evict_one():
            if self._slots.acquire(timeout=1.0):
                return True
        return False

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._take_slot():
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:  # the thread did not start: it will not give the slot back
            self._slots.release()
            raise
        # (Not on Ctrl-C: KeyboardInterrupt may land after the thread started, and
        # releasing its slot twice would raise instead and swallow the interrupt.)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        host = str(self.server_address[0])
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A browser that went away mid-answer is no error worth a traceback."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        self.dashboard.log(f"{client_address[0]}: {type(exc).__name__}: {exc}")


def make_server(
    dashboard: Dashboard,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    idle_timeout: float = IDLE_TIMEOUT_S,
    max_connections: int = MAX_CONNECTIONS,
) -> DashboardServer:
    """A server for ``dashboard`` listening on ``host:port`` (port 0: any free port).

    Bound to a loopback address, it answers only requests naming a loopback host (a
    guard against DNS rebinding) unless the dashboard was told otherwise.

    Raises:
        OSError: the address cannot be bound (the port is taken, no such interface).
    """
    if dashboard.allowed_hosts is None and is_loopback(host):
        dashboard.allowed_hosts = frozenset(loopback_names(host))
    return DashboardServer(
        (host, port), dashboard, idle_timeout=idle_timeout, max_connections=max_connections
    )
