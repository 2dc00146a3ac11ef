"""Whether the process running a run is still alive: a lock file per run, held by it.

A run that ``evaldelta eval`` is running has status ``running`` in the store. Should
its process die (killed, crashed, the machine rebooted) the store still says
``running``; the lock tells the two apart with nothing written: the process holds an
exclusive lock on ``<store>.locks/run-<id>.lock`` for as long as it runs the run, the
operating system lets go of it when the process ends however it ends, and a reader
that can take the lock at once knows nobody runs the run any more.

The lock is ``flock`` on POSIX and ``msvcrt.locking`` on Windows. (A pid written to
the file and checked with ``os.kill(pid, 0)`` is no substitute on Windows, where that
call terminates the process; and a pid can be reused by another process.)
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

__all__ = ["RunLock", "acquire", "is_held", "lock_path"]

#: Seconds :func:`acquire` keeps trying while a reader briefly holds the lock to look at it.
PROBE_GRACE = 1.0


def lock_path(store: Path, rid: int) -> Path:
    """The lock file of run ``rid`` of the store at ``store``."""
    return store.with_name(store.name + ".locks") / f"run-{rid}.lock"


class RunLock:
    """This process's hold on one run's lock file, until :meth:`release`."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        """Let go of the lock and remove its file (while still holding it on POSIX, so
        that nobody takes a lock on a file about to disappear)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if sys.platform != "win32":
            _unlink(self.path)
            os.close(fd)
        else:
            _unlock(fd)
            os.close(fd)
            _unlink(self.path)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __repr__(self) -> str:
        return f"RunLock({str(self.path)!r}, held={self.held})"


def acquire(path: Path, *, grace: float = PROBE_GRACE) -> RunLock | None:
    """Take the lock at ``path`` (creating its folder and file); ``None`` when another
    live process holds it. A reader looking at the lock holds it for an instant, so a
    refusal is tried again for ``grace`` seconds before it counts.

    Raises:
        OSError: the folder or file cannot be made.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + grace
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(fd, exclusive=True):
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)
            continue
        # The file may have been removed (its run finished) between opening and
        # locking it: a lock on a file no longer at ``path`` guards nothing.
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino or sys.platform == "win32"
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            continue
        # For people looking at the folder: which process holds it.
        if sys.platform != "win32":
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return RunLock(path, fd)


def is_held(path: Path) -> bool:
    """Whether some live process (this one included) holds the lock at ``path``;
    writes nothing, and holds the lock itself for only an instant."""
    try:
        fd = os.open(path, os.O_RDONLY if sys.platform != "win32" else os.O_RDWR)
    except FileNotFoundError:
        return False
    except OSError:
        # A lock file we may not even open (another user's run): assume it is held,
        # rather than call a run that may be going interrupted.
        return True
    try:
        if _try_lock(fd, exclusive=False):
            _unlock(fd)
            return False
        return True
    finally:
        os.close(fd)


def _unlink(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


if sys.platform != "win32":
    import fcntl

    def _try_lock(fd: int, *, exclusive: bool) -> bool:
        # A looker takes a shared lock: several readers never refuse one another.
        how = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

else:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int, *, exclusive: bool) -> bool:
        os.lseek(fd, 0, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fd: int) -> None:
        os.lseek(fd, 0, os.SEEK_SET)
        with contextlib.suppress(OSError):
            msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
