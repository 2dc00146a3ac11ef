"""The dashboard: a local, read-only web app over the run store.

``evaldelta serve`` lists the stored runs (filter, sort, pages of 50), shows a run and
its cases, and compares the runs ticked in the list with the HTML report's own page
(pairwise, or the N-way matrix against a baseline), at a stable URL::

    from evaldelta.serve import Dashboard, make_server

    server = make_server(Dashboard(".evaldelta/runs.db"), "127.0.0.1", 8765)
    server.serve_forever()

:mod:`~evaldelta.serve._app` answers requests without a socket;
:mod:`~evaldelta.serve._pages` draws the pages; :mod:`~evaldelta.serve._server` puts it
all behind the standard library's HTTP server.
"""

from __future__ import annotations

from evaldelta.serve._app import Dashboard, Response
from evaldelta.serve._server import DashboardServer, is_loopback, make_server

__all__ = ["Dashboard", "DashboardServer", "Response", "is_loopback", "make_server"]
