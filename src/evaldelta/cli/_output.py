"""What every subcommand shares: the exit codes, the parser and writing the output."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

__all__ = [
    "EXIT_CANNOT_JUDGE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "Parser",
    "can_show",
    "use_color",
    "write_output",
]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_CANNOT_JUDGE = 2


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2, as argparse does)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CANNOT_JUDGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def use_color(choice: str, stream: object) -> bool:
    """Colour for ``--color auto|always|never``.

    ``auto``: FORCE_COLOR (non-empty) forces it; NO_COLOR (non-empty, see
    no-color.org) turns it off; otherwise colour only on a terminal.
    """
    if choice != "auto":
        return choice == "always"
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def write_output(text: str, path: str | None) -> None:
    """Write to ``path``, or to stdout when it is ``None``."""
    from evaldelta.errors import InputError

    if path is None:
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError:
            # A terminal that cannot show some character of an id: show "?" for it.
            encoding = sys.stdout.encoding or "ascii"
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode(encoding, errors="replace"))
        sys.stdout.flush()
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the output ({exc.strerror or exc})") from exc


def can_show(text: str, stream: object = None) -> bool:
    """True when ``stream`` (stdout by default) can encode ``text``."""
    encoding = getattr(stream if stream is not None else sys.stdout, "encoding", None) or "utf-8"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
