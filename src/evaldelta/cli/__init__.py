"""The ``evaldelta`` command: parse, call the public API, render, map to an exit code.

Exit codes: 0 pass, 1 regression, 2 cannot judge (bad input, usage errors, no
cases in common). An error is one line on stderr; ``--debug`` adds the traceback.
Each subcommand is a private module (``_compare``, ``_gate``, ...) with
``add_parser(commands)``; ``_main`` builds the parser and runs it.
"""

from __future__ import annotations

from evaldelta.cli._main import build_parser, error_message, main
from evaldelta.cli._output import EXIT_CANNOT_JUDGE, EXIT_OK, EXIT_REGRESSION

__all__ = [
    "EXIT_CANNOT_JUDGE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "build_parser",
    "error_message",
    "main",
]
