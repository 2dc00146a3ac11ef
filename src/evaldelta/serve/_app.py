"""The dashboard's routes: a request (method, target, Host) in, a :class:`Response` out.

No socket here (:mod:`evaldelta.serve._server` puts this behind one), so that every page,
error and header can be tested by calling :meth:`Dashboard.handle`.

The dashboard only reads: each request opens an SQLite store, reads, and closes it; a
PostgreSQL store is read through a few connections kept open (:class:`StorePool`), in
read-only transactions. GET and HEAD are the only methods served. Routes::

    /                                   the runs list (?name= &target= &sort= &order= &page=)
    /runs/3                             a run (?page= of its cases)
    /compare?baseline=3&candidate=7     the HTML report of run 7 against run 3
    /compare?baseline=3&candidate=7&candidate=9   the N-way matrix against run 3
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit

from evaldelta.errors import EvalDeltaError, StoreError
from evaldelta.serve import _pages as pages
from evaldelta.serve._summary import (
    COLUMNS,
    SUMMARY_COLUMNS,
    SummaryCache,
    filter_rows,
    row_of,
    sort_rows,
)
from evaldelta.serve._views import RunsView, RunView, case_views, page_count

if TYPE_CHECKING:
    from evaldelta.analysis import Settings
    from evaldelta.model import Run
    from evaldelta.store import RunStore, StoredRun

__all__ = ["Dashboard", "Response"]

#: Runs per page of the runs list, and cases per page of a run.
PAGE_SIZE = 50
#: Most candidates one comparison takes (the matrix's columns stay readable).
MAX_CANDIDATES = 12
#: Seconds a request waits for another process's import to release the store.
STORE_TIMEOUT = 10.0
#: Connections to a PostgreSQL store kept open at most (the summaries' warm-up holds one).
POOL_SIZE = 4
#: Largest id accepted in a URL (SQLite's integers are 64-bit).
MAX_ID = 2**63 - 1

HTML = "text/html; charset=utf-8"
T = TypeVar("T")


@dataclass(frozen=True)
class Response:
    """What to answer: status, body, and headers beside the usual ones."""

    status: int
    body: bytes
    content_type: str = HTML
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


class RequestError(Exception):
    """A request answered with an error page (400, 404, ...), not a traceback."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


class _LRU(Generic[T]):
    """A few recent values by key, shared by the request threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Any, T] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> T | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Any, value: T) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)


class StorePool:
    """A few read-only stores of one PostgreSQL URL, each lent to one request at a time:
    a request waits (``timeout`` seconds at most) while all are lent. A store whose
    request failed on the store is closed rather than lent again (its connection may
    be broken); a new one takes its place when next asked for."""

    def __init__(self, location: str, *, size: int = POOL_SIZE, timeout: float = STORE_TIMEOUT):
        self.location = location
        self.timeout = timeout
        self._idle: list[RunStore] = []
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def lend(self) -> Iterator[RunStore]:
        from evaldelta.store import RunStore

        if not self._slots.acquire(timeout=self.timeout):
            raise StoreError(
                "the dashboard's connections to the store are all busy; try again in a moment"
            )
        try:
            with self._lock:
                store = self._idle.pop() if self._idle else None
            if store is None:
                store = RunStore(self.location, create=False, timeout=self.timeout, readonly=True)
            try:
                yield store
            except StoreError:
                store.close()
                raise
            except BaseException:
                self._give_back(store)
                raise
            self._give_back(store)
        finally:
            self._slots.release()

    def _give_back(self, store: RunStore) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(store)
                return
        store.close()

    def close(self) -> None:
        """Close the stores not lent; those lent are closed when given back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for store in idle:
            store.close()


def _headers(csp: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        # The store holds prompts and outputs, and changes under the server: keep no copy.
        "Cache-Control": "no-store",
    }


class Dashboard:
    """The dashboard over the run store at ``store_path``: :meth:`handle` answers a request.

    Args:
        store_path: the store's file, or a PostgreSQL URL (it must hold a store: the
            dashboard never creates one).
        allowed_hosts: Host header values accepted (without port), or ``None`` for any.
            A server bound to the loopback interface accepts only loopback names, so that
            a web page cannot reach it through a DNS name rebound to 127.0.0.1.
        settings: statistics settings of the comparisons (the defaults of ``compare``).
        log: where a request that failed unexpectedly is reported (one line).
        page_size: runs per page of the list, and cases per page of a run.
    """

    def __init__(
        self,
        store_path: str,
        *,
        allowed_hosts: Sequence[str] | None = None,
        settings: Settings | None = None,
        log: Callable[[str], None] | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.store_path = store_path
        self.allowed_hosts = None if allowed_hosts is None else frozenset(allowed_hosts)
        self.settings = settings
        self.log = log or (lambda _message: None)
        self.page_size = page_size
        self.summaries = SummaryCache(settings.pass_threshold if settings else 0.5)
        self._pages: _LRU[bytes] = _LRU(8)
        self._runs: _LRU[Run] = _LRU(4)
        self._stop = threading.Event()
        self._warmer: threading.Thread | None = None
        # Requests being answered: the background work waits while there are any.
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._idle = threading.Event()
        self._idle.set()
        self._pool: StorePool | None = None
        # evaldelta.store.is_url's test, written out: importing the store package here
        # would load sqlite3 before the first page (test_the_dashboard_starts_light).
        if str(store_path)[:13].lower().startswith(("postgresql://", "postgres://")):
            self._pool = StorePool(store_path)
        self._shown: str | None = None

    @property
    def store_shown(self) -> str:
        """The store as the pages name it: a URL without its password."""
        if self._shown is None:
            from evaldelta.store import mask_url

            self._shown = mask_url(self.store_path)
        return self._shown

    # -- the store --------------------------------------------------------------------

    @contextmanager
    def store(self) -> Iterator[RunStore]:
        """The store, open for one request (a connection is not shared across threads)."""
        if self._pool is not None:
            with self._pool.lend() as lent:
                yield lent
            return
        from evaldelta.store import RunStore
        from evaldelta.store._runstore import can_write

        store = RunStore(
            self.store_path,
            create=False,
            timeout=STORE_TIMEOUT,
            readonly=not can_write(self.store_path),
        )
        try:
            yield store
        finally:
            store.close()

    def check(self) -> int:
        """Open the store once, as the server starts; returns how many runs it holds.

        Raises:
            StoreError: no store there, or one this evaldelta cannot read.
        """
        with self.store() as store:
            return len(store.list_runs())

    def start_warmup(self) -> None:
        """Compute every run's summary in the background, newest first, so that sorting
        by pass rate, score or cost is instant once done. It gives way to requests: it
        computes nothing while one is being answered."""
        if self._warmer is not None:
            return
        self._warmer = threading.Thread(target=self._warm, name="summaries", daemon=True)
        self._warmer.start()

    def _warm(self) -> None:
        try:
            with self.store() as store:
                for info in store.list_runs():
                    self._idle.wait()
                    if self._stop.is_set():
                        return
                    self.summaries.fill(store, [info])
        except Exception as exc:  # the pages compute what they need anyway
            self.log(f"computing run summaries stopped: {type(exc).__name__}: {exc}")

    def close(self) -> None:
        """Stop the background work."""
        self._stop.set()
        self._idle.set()
        if self._warmer is not None:
            self._warmer.join(timeout=5)
        if self._pool is not None:
            self._pool.close()

    # -- requests ----------------------------------------------------------------------

    def handle(self, method: str, target: str, host: str | None = None) -> Response:
        """Answer one request: ``target`` is the path and query (``/compare?baseline=3``)."""
        with self._busy_lock:
            self._busy += 1
            self._idle.clear()
        try:
            return self._handle(method, target, host)
        finally:
            with self._busy_lock:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

    def _handle(self, method: str, target: str, host: str | None) -> Response:
        try:
            if self.allowed_hosts is not None:
                name = _host_name(host)
                if name not in self.allowed_hosts:
                    raise RequestError(
                        421,
                        f"This dashboard answers on {', '.join(sorted(self.allowed_hosts))} "
                        f"only, not on {host or '(no Host header)'}.",
                    )
            if method not in ("GET", "HEAD"):
                raise RequestError(
                    405,
                    f"The dashboard is read-only: {method} is not served, only GET.",
                    {"Allow": "GET, HEAD"},
                )
            parts = urlsplit(target)
            try:
                query = parse_qs(
                    parts.query, keep_blank_values=True, max_num_fields=200, errors="strict"
                )
            except (ValueError, UnicodeDecodeError) as exc:
                raise RequestError(400, f"The query cannot be read: {exc}.") from exc
            return self._route(parts.path, query)
        except RequestError as problem:
            return self._error(problem.status, problem.message, problem.headers)
        except StoreError as exc:
            return self._error(503, str(exc))
        except Exception as exc:
            self.log(f"{method} {target}: {type(exc).__name__}: {exc}")
            return self._error(
                500,
                f"{type(exc).__name__}: {exc}. The server's output says more; please report it.",
            )

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        body = pages.error_page(status, message, store=self.store_shown)
        return Response(
            status, body.encode("utf-8"), headers={**_headers(pages.CSP), **(headers or {})}
        )

    def _page(self, html: str) -> Response:
        return Response(200, html.encode("utf-8"), headers=_headers(pages.CSP))

    def _route(self, path: str, query: dict[str, list[str]]) -> Response:
        if path in ("/", "/runs", "/runs/"):
            return self._page(self.runs_list(query))
        if path.startswith("/runs/"):
            ref = path.removeprefix("/runs/").rstrip("/")
            if not ref.isdigit() or not ref.isascii():
                raise RequestError(404, "No page here: runs are at /runs/ID, e.g. /runs/3.")
            return self._page(self.run_page(_id(ref, "run"), query))
        if path == "/compare":
            return self.compare_page(query)
        raise RequestError(404, f"No page at {path}: the runs are listed at /.")

    # -- the runs list ------------------------------------------------------------------

    def runs_list(self, query: dict[str, list[str]]) -> str:
        name = _one(query, "name", "")
        target = _one(query, "target", "")
        sort = _one(query, "sort", "id")
        if sort not in COLUMNS:
            raise RequestError(400, f"sort must be one of {', '.join(COLUMNS)}, got {sort!r}.")
        order = _one(query, "order", COLUMNS[sort][1])
        if order not in ("asc", "desc"):
            raise RequestError(400, f"order must be asc or desc, got {order!r}.")
        page = _positive(_one(query, "page", "1"), "page")

        with self.store() as store:
            infos = store.list_runs()
            by_id = {info.id: info for info in infos}
            rows = filter_rows(
                (row_of(info, self.summaries.get(info)) for info in infos), name, target
            )
            if sort in SUMMARY_COLUMNS:
                done = self.summaries.fill(store, (by_id[r.id] for r in rows))
                rows = [row_of(by_id[r.id], done.get(r.id)) for r in rows]
            rows = sort_rows(rows, sort, order)
            pages_ = page_count(len(rows), self.page_size)
            page = min(page, pages_)  # a filter that leaves fewer pages: its last one
            shown = rows[(page - 1) * self.page_size : page * self.page_size]
            done = self.summaries.fill(store, (by_id[r.id] for r in shown))
        shown = [row_of(by_id[r.id], done.get(r.id)) for r in shown]
        return pages.runs_page(
            RunsView(
                rows=shown,
                matched=len(rows),
                stored=len(infos),
                page=page,
                pages=pages_,
                page_size=self.page_size,
                name=name,
                target=target,
                sort=sort,
                order=order,
                store=self.store_shown,
            )
        )

    # -- a run --------------------------------------------------------------------------

    def _run(self, store: RunStore, info: StoredRun) -> Run:
        """The run with its texts, kept for the next pages of it."""
        key = SummaryCache.key(info)
        run = self._runs.get(key)
        if run is None:
            run = store.get_run(info.id, keep_text=True)
            self._runs.put(key, run)
        return run

    def _info(self, store: RunStore, rid: int) -> StoredRun:
        if store.find(rid) is None:
            raise RequestError(404, f"No run {rid} in this store: it may have been deleted.")
        return store.info(rid)

    def run_page(self, rid: int, query: dict[str, list[str]]) -> str:
        from evaldelta.analysis._summary import summarise

        page = _positive(_one(query, "page", "1"), "page")
        with self.store() as store:
            info = self._info(store, rid)
            run = self._run(store, info)
        pass_threshold = self.summaries.pass_threshold
        pages_ = page_count(len(run.test_ids), self.page_size)
        page = min(page, pages_)
        return pages.run_page(
            RunView(
                info=info,
                figures=summarise(run, pass_threshold),
                cases=case_views(run, (page - 1) * self.page_size, self.page_size, pass_threshold),
                case_count=len(run.test_ids),
                page=page,
                pages=pages_,
                page_size=self.page_size,
                has_texts=bool(run.texts),
                store=self.store_shown,
            )
        )

    # -- comparisons ----------------------------------------------------------------------

    def compare_page(self, query: dict[str, list[str]]) -> Response:
        if "run" in query:
            return self._picked(query)
        if "baseline" not in query:
            raise RequestError(
                400,
                "Say which run is the baseline: /compare?baseline=3&candidate=7 (tick runs in "
                "the list and press Compare).",
            )
        baseline = _id(_one(query, "baseline", ""), "baseline")
        candidates = [_id(v, "candidate") for v in query.get("candidate", [])]
        if not candidates:
            raise RequestError(400, "Give at least one candidate: /compare?baseline=3&candidate=7.")
        ids = [baseline, *candidates]
        if len(set(ids)) != len(ids):
            raise RequestError(
                400,
                "A run is named twice; compare different runs (a run compared with itself "
                "tells nothing).",
            )
        if len(candidates) > MAX_CANDIDATES:
            raise RequestError(
                400, f"At most {MAX_CANDIDATES} candidates at once, got {len(candidates)}."
            )
        with self.store() as store:
            infos = [self._info(store, rid) for rid in ids]
            key = tuple((SummaryCache.key(i), i.name) for i in infos)
            body = self._pages.get(key)
            runs = [self._run(store, info) for info in infos] if body is None else []
        if body is None:
            body = self._comparison(infos, runs).encode("utf-8")
            self._pages.put(key, body)
        # The report carries its own policy (its script by hash, no requests).
        return Response(200, body, headers=_headers("frame-ancestors 'none'"))

    def _picked(self, query: dict[str, list[str]]) -> Response:
        """The runs list's form sent without its script (``run=3&run=7[&baseline=7]``):
        a redirect to the comparison's stable URL."""
        ticked = [_id(v, "run") for v in query["run"]]
        marked = query.get("baseline")
        baseline = _id(marked[0], "baseline") if marked else (ticked[0] if ticked else None)
        others = [r for r in dict.fromkeys(ticked) if r != baseline]
        if baseline is None or not others:
            raise RequestError(400, "Tick two or more runs to compare them.")
        location = "/compare?" + urlencode(
            [("baseline", baseline), *(("candidate", r) for r in others)]
        )
        return Response(303, b"", headers={"Location": location, "Cache-Control": "no-store"})

    def _comparison(self, infos: Sequence[StoredRun], runs: Sequence[Run]) -> str:
        from evaldelta.api import compare, compare_matrix
        from evaldelta.report._html import render_html

        nav = [("/", "← All runs")] + [(f"/runs/{i.id}", i.label) for i in infos]
        base = infos[0]
        try:
            if len(runs) == 2:
                pairwise = compare(runs[0], runs[1], settings=self.settings)
                title = f"{base.name} → {infos[1].name}"
                return render_html(pairwise, runs=runs, title=title, nav=nav)
            from evaldelta.serve._combine import combine_runs

            labels = [i.label for i in infos]
            combined = combine_runs(
                runs, labels, source="runs " + ", ".join(str(i.id) for i in infos)
            )
            matrix = compare_matrix(combined, labels, labels[0], settings=self.settings)
            title = f"{base.name} against {len(infos) - 1} candidates"
            return render_html(matrix, runs=(combined,), title=title, nav=nav)
        except EvalDeltaError as exc:
            if isinstance(exc, StoreError):
                raise
            raise RequestError(422, str(exc)) from exc


def _host_name(host: str | None) -> str:
    """The name part of a Host header: ``127.0.0.1:8765`` -> ``127.0.0.1``, ``[::1]:80``
    -> ``::1``."""
    if not host:
        return ""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _one(query: dict[str, list[str]], name: str, default: str) -> str:
    values = query.get(name)
    if not values:
        return default
    if len(values) > 1:
        raise RequestError(400, f"{name} is given {len(values)} times; give it once.")
    return values[0]


def _positive(text: str, name: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1 or len(text) > 9:
        raise RequestError(400, f"{name} must be a whole number from 1, got {text!r}.")
    return int(text)


def _id(text: str, name: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or int(text) > MAX_ID:
        raise RequestError(
            400, f"{name} must be a run id (a number, as in the runs list), got {text!r}."
        )
    return int(text)
