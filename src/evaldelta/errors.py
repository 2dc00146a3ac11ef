"""The one error tree of evaldelta.

Every error a user can meet is one of these, and its message says what went
wrong, where (``path:line`` when there is a line), and how to mend it::

    EvalDeltaError
    ├── InputError            a results file or argument we cannot use
    │   ├── ParseError        a line that is not what it should be (.path, .line)
    │   └── UnknownFormatError  a file no reader recognises
    ├── PairingError          runs that cannot be paired (no common cases, unknown target)
    ├── StoreError            a run store we cannot use (no such run, newer schema, locked)
    │   └── RunNotFoundError  a run reference (id or name) that names no stored run
    ├── UsageError            options that contradict each other
    ├── TargetError           a target that cannot be used (401/403/404, no such function)
    └── MissingDependencyError  an optional package a feature needs is not installed

The CLI turns any of them into one line on stderr and exit code 2 (an error's
``option``, the parameter its message names, shown as the matching flag).
"""

from __future__ import annotations


class EvalDeltaError(Exception):
    """Base class of every error evaldelta raises on purpose.

    ``option``, when set, names the Python parameter the message tells the user to
    set or change (``"allow_dataset_change"``, ``"store"``, ``"target"``, ...). The
    message speaks of that parameter (``pass allow_dataset_change=True``); the command
    line shows it as its flag instead (``--allow-dataset-change``).
    """

    def __init__(self, *args: object, option: str | None = None) -> None:
        super().__init__(*args)
        self.option = option


class InputError(EvalDeltaError):
    """A results file (or a value in it) that cannot be used as given."""


class ParseError(InputError):
    """A file, or one line of it, that does not parse.

    ``path`` and ``line`` (1-based, or ``None`` for the whole file) say where.
    """

    def __init__(self, path: str, line: int | None, message: str) -> None:
        self.path = path
        self.line = line
        self.reason = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class UnknownFormatError(InputError):
    """A file that no reader recognises."""


class PairingError(EvalDeltaError):
    """Runs that cannot be paired: no common cases, or a target that is not there."""


class StoreError(EvalDeltaError):
    """A run store, or a run reference, that cannot be used: no such run, a store
    written by a newer evaldelta, a file that is no store, a store that stays locked."""


class RunNotFoundError(StoreError):
    """A run reference (an id, or a name) that names no run in the store."""


class UsageError(EvalDeltaError):
    """Options or arguments that do not fit together."""


class TargetError(EvalDeltaError):
    """A target of a suite that cannot be used at all: the endpoint refused the key
    (401, 403) or has no such model or path (404). The runner stops that target at
    once rather than spend the rest of the run on the same refusal.

    ``target`` names it; ``status`` is the HTTP status, when there is one.
    """

    def __init__(self, target: str, message: str, status: int | None = None) -> None:
        self.target = target
        self.status = status
        super().__init__(message)


class MissingDependencyError(EvalDeltaError):
    """An optional package that a feature needs (pandas for ``to_pandas()``) is not
    installed; the message names the extra to install."""
