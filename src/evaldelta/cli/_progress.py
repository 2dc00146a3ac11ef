"""``--progress``: one line on stderr that says how far a long step has got.

Our own, a few lines, rather than rich's bars: evaldelta keeps its start-up light.
The line is drawn only when stderr is a terminal and only once a step has lasted more
than a second (a quick import shows nothing), and it is wiped when the step ends, so
that nothing of it stays in the terminal or ever reaches a file or a pipe.

The core knows nothing of it: it takes a ``progress(done, total)`` callback
(:data:`evaldelta.store.Progress`), which a :class:`ProgressLine` is. A step that
cannot say how far it has got (reading a results file) shows the time it has taken.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

__all__ = ["DELAY", "ProgressLine", "add_progress_option", "progress_line"]

#: Seconds a step runs before its line is drawn.
DELAY = 1.0
#: Seconds between two redraws (and between the ticks of a step without a total).
INTERVAL = 0.1
#: Width of the bar, in characters.
BAR = 24


class ProgressLine:
    """A progress line on ``stream`` (stderr by default); a no-op unless ``enabled`` and
    the stream is a terminal.

    Call it as ``line(done, total)`` to report, :meth:`step` to start a new step with a
    new label, :meth:`ticking` around work that cannot report, :meth:`close` (or leave
    the ``with`` block) to wipe the line.
    """

    def __init__(
        self,
        label: str,
        *,
        enabled: bool = True,
        stream: TextIO | None = None,
        delay: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = enabled and bool(isatty and isatty())
        self.delay = DELAY if delay is None else delay
        self.clock = clock
        # The ticking thread draws too. threading is imported only when a line can be
        # drawn: every command makes one, and start-up time counts.
        self._lock: Any = _NoLock()
        if self.enabled:
            import threading

            self._lock = threading.Lock()
        self._drawn = 0  # width of the line on screen, 0 when none is
        self._last_draw = -INTERVAL
        self.step(label)

    def step(self, label: str) -> None:
        """Start a new step: a new label, and its own second before anything is drawn."""
        with self._lock:
            self.label = label
            self.started = self.clock()
            self.done: int | None = None
            self.total: int | None = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        with self._lock:
            self.done, self.total = done, total
            self._draw(force=done >= total)

    def tick(self) -> None:
        """Redraw with the time taken so far (for a step that does not report)."""
        if self.enabled:
            with self._lock:
                self._draw()

    def text(self) -> str:
        """The line as it would be drawn now."""
        elapsed = f"{self.clock() - self.started:.1f} s"
        if self.total is None or self.done is None:
            return f"{self.label}... {elapsed}"
        share = min(max(self.done / self.total, 0.0), 1.0) if self.total > 0 else 1.0
        filled = round(share * BAR)
        bar = "#" * filled + "-" * (BAR - filled)
        return f"{self.label} [{bar}] {share * 100:3.0f}%  {elapsed}"

    def _draw(self, force: bool = False) -> None:
        now = self.clock()
        if now - self.started < self.delay:
            return
        if not force and now - self._last_draw < INTERVAL:
            return
        self._last_draw = now
        text = self.text()
        width = _columns() - 1
        if len(text) > width:
            text = text[: max(width, 0)]
        pad = " " * max(self._drawn - len(text), 0)
        self.stream.write(f"\r{text}{pad}")
        self.stream.flush()
        self._drawn = len(text)

    def ticking(self, label: str) -> _Ticking:
        """A step that cannot report how far it has got (``with line.ticking(...):``):
        a thread redraws the line with the time it has taken."""
        self.step(label)
        return _Ticking(self)

    def close(self) -> None:
        """Wipe the line, if one was drawn."""
        with self._lock:
            if self._drawn:
                self.stream.write("\r" + " " * self._drawn + "\r")
                self.stream.flush()
                self._drawn = 0

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _NoLock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _Ticking:
    """Redraws a line every :data:`INTERVAL` seconds while the ``with`` block runs."""

    def __init__(self, line: ProgressLine) -> None:
        self.line = line
        self.stop: Any = None
        self.thread: Any = None

    def __enter__(self) -> None:
        if not self.line.enabled:
            return
        import threading

        stop = self.stop = threading.Event()

        def run() -> None:
            while not stop.wait(INTERVAL):
                self.line.tick()

        self.thread = threading.Thread(target=run, name="evaldelta-progress", daemon=True)
        self.thread.start()

    def __exit__(self, *exc: object) -> None:
        if self.thread is not None:
            self.stop.set()
            self.thread.join()


def add_progress_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action="store_true",
        help="show on stderr how far reading or storing runs has got, when it takes more "
        "than a second (on a terminal only)",
    )


def progress_line(args: argparse.Namespace, label: str = "") -> ProgressLine:
    """The progress line the options ask for: drawn only with --progress, on a terminal."""
    return ProgressLine(label, enabled=bool(getattr(args, "progress", False)))


def _columns() -> int:
    import shutil

    return shutil.get_terminal_size((80, 24)).columns
