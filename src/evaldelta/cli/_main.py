"""The ``evaldelta`` command's entry point: parse, call the public API, render, map to an exit code.

Exit codes: 0 pass, 1 regression, 2 cannot judge (bad input, usage errors, no
cases in common). An error is one line on stderr; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evaldelta.cli._output import EXIT_CANNOT_JUDGE, EXIT_OK, Parser

if TYPE_CHECKING:
    from evaldelta.errors import EvalDeltaError


def build_parser() -> argparse.ArgumentParser:
    from evaldelta import __version__
    from evaldelta.cli import _compare as compare_cmd
    from evaldelta.cli import _eval as eval_cmd
    from evaldelta.cli import _gate as gate_cmd
    from evaldelta.cli import _power as power_cmd
    from evaldelta.cli import _runs as runs_cmd
    from evaldelta.cli import _serve as serve_cmd

    parser = Parser(
        prog="evaldelta",
        description="Compare evaluation runs: is the candidate really better than the baseline?",
        epilog="Exit codes: 0 pass, 1 regression, 2 cannot judge (bad input or usage).",
    )
    parser.add_argument("--version", action="version", version=f"evaldelta {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="show the full traceback when something fails"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    eval_cmd.add_parser(commands)
    compare_cmd.add_parser(commands)
    gate_cmd.add_parser(commands)
    power_cmd.add_parser(commands)
    runs_cmd.add_parser(commands)
    serve_cmd.add_parser(commands)
    return parser


def _flag_phrases() -> dict[str, tuple[tuple[str, str], ...]]:
    """For each parameter a library error can name (its ``option``): what its message
    says in the parameter's terms, and how the command line says it, with the flag."""
    from evaldelta.pairing._cases import WHICH_TARGETS
    from evaldelta.store._schema import NO_STORE_MEND

    return {
        "store": (
            (
                NO_STORE_MEND,
                "store a run first with `evaldelta eval SUITE` or `evaldelta runs import "
                "FILE`, or choose a store with --store PATH or EVALDELTA_STORE",
            ),
            ("store=PATH", "--store PATH"),
        ),
        "name": (("name=NAME", "--name NAME"),),
        "target": (
            ("target=TARGET", "--target TARGET"),
            ("; check the name", "; check the name, or list them with --format json"),
        ),
        "baseline_target": ((WHICH_TARGETS, "--baseline/--candidate TARGET on the command line"),),
        "targets": (("add it to targets", "add it to --targets"),),
        "sample": (("sample must", "--sample must"),),
        "cluster_by": (("cluster_by='category'", "--cluster-by category"),),
        # Settings the command line passes on as given (--confidence, --margin and
        # --min-cases are checked, and named, before they become alpha, margin, min_cases).
        **{
            name: ((f"{name} must", f"--{name.replace('_', '-')} must"),)
            for name in (
                "threshold",
                "pass_threshold",
                "resamples",
                "max_slowdown",
                "max_cost_increase",
            )
        },
    }


def error_message(exc: EvalDeltaError) -> str:
    """The message of ``exc`` as the command line shows it: the parameter it names
    (``exc.option``) written as the flag that sets it."""
    text = str(exc)
    for library, flag in _flag_phrases().get(exc.option or "", ()):
        text = text.replace(library, flag)
    return text


def _limits_from_environment() -> None:
    """``EVALDELTA_MAX_LINE_MB`` / ``EVALDELTA_MAX_UNPACKED_MB``: the readers' bounds on
    one line (or archive member) and on what a compressed file unpacks to, raised for
    a file that truly is that large; ``EVALDELTA_DUCKDB_MB``: the size from which a file
    is read by the DuckDB engine (``off``: never)."""
    from evaldelta.errors import UsageError

    engine = os.environ.get("EVALDELTA_DUCKDB_MB")
    if engine:
        from evaldelta.io._source import ENGINE

        if engine.strip().lower() == "off":
            ENGINE.duckdb_bytes = None
        else:
            try:
                size = float(engine)
            except ValueError:
                size = -1.0
            if not size >= 0:
                raise UsageError(
                    f"EVALDELTA_DUCKDB_MB must be a number of MiB >= 0, or off; got {engine!r}"
                )
            ENGINE.duckdb_bytes = int(size * 2**20)
    names = {"EVALDELTA_MAX_LINE_MB": "line_bytes", "EVALDELTA_MAX_UNPACKED_MB": "unpacked_bytes"}
    given = {name: os.environ[name] for name in names if os.environ.get(name)}
    if not given:
        return
    from evaldelta.io._source import LIMITS

    for name, text in given.items():
        try:
            mb = float(text)
        except ValueError:
            mb = -1.0
        if not mb > 0:
            raise UsageError(f"{name} must be a number of MiB > 0, got {text!r}")
        setattr(LIMITS, names[name], int(mb * 2**20))


#: From this size on, a file named on the command line (or the store) makes
#: :func:`_keep_freed_memory` worth its 4 ms.
LARGE_INPUT = 16 * 2**20


#: The commands of a short process over files or a store: ``eval`` runs for long (its
#: memory is its targets'), ``serve`` until stopped; both keep glibc's defaults.
_SHORT_COMMANDS = frozenset({"compare", "gate", "power", "runs"})


def large_input(args: argparse.Namespace, argv: Sequence[str]) -> bool:
    """Whether a short command's input is a file of :data:`LARGE_INPUT` bytes or more:
    a file named on its command line (``--option=FILE`` too), or the store it reads."""
    from evaldelta.cli._store import store_path

    if args.command not in _SHORT_COMMANDS:
        return False
    names = [a.partition("=")[2] if a.startswith("--") else a for a in argv]
    names.append(store_path(args))
    try:
        return any(os.path.isfile(n) and os.path.getsize(n) >= LARGE_INPUT for n in names if n)
    except (OSError, ValueError):
        return False


def _keep_freed_memory(args: argparse.Namespace, argv: Sequence[str]) -> None:
    """Have glibc's allocator keep memory it is given back for reuse, instead of
    returning every large block to the system at once and taking it anew: on a large
    input the readers allocate and free pieces of tens of MB many times over, and each
    new block costs a page fault per 4 KiB page (on a 1,000,000-record compare, 490,000
    faults and 2 of its 8 seconds, against 41,000 so). Only for one command of a short
    process, on a large input; only on Linux, and a no-op where the C library is not
    glibc."""
    if not sys.platform.startswith("linux") or not large_input(args, argv):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError, ValueError):
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 2**30)
    mallopt(m_trim_threshold, 2**31 - 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help()
            return EXIT_CANNOT_JUDGE
        args.argv = args_list
        _limits_from_environment()
        if argv is None:
            _keep_freed_memory(args, args_list)
        code: int = args.run(args)
        return code
    except KeyboardInterrupt:
        print("evaldelta: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like: not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        from evaldelta.errors import EvalDeltaError

        if debug:
            raise
        if isinstance(exc, EvalDeltaError):
            print(f"evaldelta: error: {error_message(exc)}", file=sys.stderr)
        else:
            print(
                f"evaldelta: internal error: {type(exc).__name__}: {exc} "
                "(run again with --debug for the traceback, and please report it)",
                file=sys.stderr,
            )
        return EXIT_CANNOT_JUDGE
