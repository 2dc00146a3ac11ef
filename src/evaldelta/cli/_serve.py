"""``evaldelta serve``: the dashboard, a local web app over the run store (read-only)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from evaldelta.cli._options import add_command
from evaldelta.cli._output import EXIT_OK
from evaldelta.errors import UsageError

if TYPE_CHECKING:
    from evaldelta.cli._options import Commands

#: The one-line help and the description of ``evaldelta serve``.
ABOUT = (
    "browse stored runs in a local web dashboard; tick two, press Compare",
    "Serve a local, read-only web dashboard over the run store: list the "
    "runs, look at one, compare those ticked.",
)

HELP = """\
the runs page lists every stored run (filter, sort, pages of 50); tick two or more and
press Compare for the HTML report (the first ticked, or the one marked, is the
baseline). A comparison has a stable URL to share:

  http://127.0.0.1:8765/compare?baseline=3&candidate=7
  http://127.0.0.1:8765/compare?baseline=3&candidate=7&candidate=9   (N-way)

the dashboard only reads the store, and listens on this machine only unless --host
says otherwise: the store holds prompts and outputs.
"""


def add_parser(commands: Commands) -> None:
    from evaldelta.cli._store import STORE_HELP

    p = add_command(commands, "serve", ABOUT, HELP)
    p.add_argument("--store", metavar="PATH", help=STORE_HELP)
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="interface to listen on (default: 127.0.0.1, this machine only); "
        "another one shares the store's runs with the network",
    )
    p.add_argument(
        "--port", type=int, default=8765, help="port to listen on (default: 8765; 0: any free)"
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=64,
        metavar="N",
        help="connections served at once; one more is told '503 busy' (default: 64)",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="close a connection that sends no whole request for this long (default: 15)",
    )
    p.add_argument("--open", action="store_true", help="open the dashboard in a web browser")
    p.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(run=run)


def _log(message: str) -> None:
    print(f"evaldelta serve: {message}", file=sys.stderr, flush=True)


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM (a service manager, ``kill``): stop as on Ctrl-C."""
    raise KeyboardInterrupt


def run(args: argparse.Namespace) -> int:
    import signal

    from evaldelta.cli._store import shown, store_path
    from evaldelta.serve import Dashboard, is_loopback, make_server

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {args.port}")
    path = store_path(args)
    dashboard = Dashboard(path, log=_log)
    count = dashboard.check()  # no store there: one line and exit 2, before listening
    if args.max_connections < 1:
        raise UsageError(f"--max-connections must be at least 1, got {args.max_connections}")
    if not args.idle_timeout > 0:
        raise UsageError(f"--idle-timeout must be a number of seconds > 0, got {args.idle_timeout}")
    try:
        server = make_server(
            dashboard,
            args.host,
            args.port,
            idle_timeout=args.idle_timeout,
            max_connections=args.max_connections,
        )
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port} ({exc.strerror or exc}); "
            "choose another port with --port PORT (0 picks a free one)"
            + ("" if is_loopback(args.host) else ", or another --host")
        ) from exc
    if not is_loopback(args.host):
        _log(
            f"warning: listening on {args.host}, not on this machine only: anyone who can "
            f"reach it on port {server.port} can read every stored run, prompts and outputs "
            "included. Use --host 127.0.0.1 to keep it to this machine."
        )
    print(
        f"evaldelta dashboard: {server.url} ({count:,} runs in {shown(path)}, read-only). "
        "Press Ctrl-C to stop.",
        flush=True,
    )
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (called from a test or an embedding program)
        previous = None
    try:
        if args.open:
            import threading
            import webbrowser

            threading.Thread(target=webbrowser.open, args=(server.url,), daemon=True).start()
        dashboard.start_warmup()
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        server.server_close()
        dashboard.close()
    print("evaldelta dashboard: stopped", flush=True)
    return EXIT_OK
