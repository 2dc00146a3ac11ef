"""A suite made in Python, in the shape of spec 004's ``evaluate({name, model, dataset,
task, scorers})``: a dataset of dicts, a task function, scorers by name."""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from evaldelta.errors import UsageError
from evaldelta.runner._spec import (
    AssertionSpec,
    RetryPolicy,
    Suite,
    TargetSpec,
    TestCase,
    Where,
    secret_name,
)

__all__ = ["suite_from_task"]

#: Keys a dataset item may use for its parts (the first present wins).
_ID_KEYS = ("id", "test_id")
_INPUT_KEYS = ("input", "question", "prompt")
_EXPECTED_KEYS = ("expected", "expected_output", "answer", "target")


def _first(item: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in item:
            return key, item[key]
    return None, None


def _name_of(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a function; of its class for a callable object; a
    partial's function and arguments. Never a ``repr`` with a memory address, which
    would change the suite's hash in every process and so refuse every resume."""
    if isinstance(fn, functools.partial):
        given = [
            *map(_argument, fn.args),
            *(f"{k}={'***' if secret_name(k) else _argument(v)}" for k, v in fn.keywords.items()),
        ]
        return f"partial({', '.join([_name_of(fn.func), *given])})"
    named: Any = fn if hasattr(fn, "__qualname__") else type(fn)
    return f"{getattr(named, '__module__', None) or '?'}:{named.__qualname__}"


def _argument(value: Any) -> str:
    """A partial's argument as its name shows it: plain values as written, a function by
    its name, any other object by its class (its ``repr`` may hold a memory address)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return repr(value)
    if callable(value):
        return _name_of(value)
    return type(value).__qualname__


def suite_from_task(
    *,
    name: str,
    model: str,
    dataset: Iterable[Mapping[str, Any]],
    task: Callable[..., Any],
    scorers: Mapping[str, Callable[..., Any]] | None = None,
    trials: int = 1,
    max_concurrency: int = 4,
    timeout_s: float = 120.0,
    threshold: float | None = None,
    seed: int = 0,
    retries: RetryPolicy | None = None,
) -> Suite:
    """A one-target suite: ``task`` (the agent, a function of the input) is the target
    called ``model``; each item of ``dataset`` is a test; each scorer (a function of
    ``output``, ``expected`` and ``input``, returning 0..1 or a bool) is a named
    assertion, and an attempt's score is their mean.

    Items are dicts with ``input`` (or ``question``, ``prompt``), optionally ``id``,
    ``expected`` (or ``expected_output``, ``answer``), ``category``, ``metadata``; an
    item without an id is ``case-1``, ``case-2``... in the dataset's order.

    Raises:
        UsageError: an empty dataset, an item without an input or with one that is
            not JSON, an empty or repeated id.
    """
    if not name or not str(name).strip():
        raise UsageError("evaluate(): name must be a non-empty string (the suite's name)")
    if not model or not str(model).strip():
        raise UsageError("evaluate(): model must be a non-empty string (the target's name)")
    if not callable(task):
        raise UsageError("evaluate(): task must be a function of the input (the agent)")
    if trials < 1:
        raise UsageError("evaluate(): trials must be at least 1")
    where = Where("<evaluate>")
    assertions = tuple(
        AssertionSpec(type="python", value=fn, metric=metric, where=where)
        for metric, fn in (scorers or {}).items()
    )
    for metric, fn in (scorers or {}).items():
        if not callable(fn):
            raise UsageError(f"evaluate(): scorer {metric!r} is not a function")
    tests: list[TestCase] = []
    seen: set[str] = set()
    for i, item in enumerate(dataset):
        if not isinstance(item, Mapping):
            raise UsageError(
                f"evaluate(): dataset item {i + 1} is a {type(item).__name__}, not a dict "
                "with an 'input'"
            )
        key, value = _first(item, _INPUT_KEYS)
        if key is None:
            raise UsageError(
                f"evaluate(): dataset item {i + 1} has no 'input' (keys: "
                f"{', '.join(map(str, item)) or 'none'})"
            )
        id_key, test_id = _first(item, _ID_KEYS)
        tid = str(test_id) if test_id is not None else f"case-{i + 1}"
        if not tid.strip():
            raise UsageError(
                f"evaluate(): dataset item {i + 1} has an empty {id_key!r}; give it a "
                "non-empty id, or leave the key out to have it called "
                f"'case-{i + 1}'"
            )
        if tid in seen:
            raise UsageError(f"evaluate(): dataset item {i + 1} repeats the id {tid!r}")
        seen.add(tid)
        _, expected = _first(item, _EXPECTED_KEYS)
        metadata = item.get("metadata")
        if not isinstance(value, (str, list)):
            try:
                value = json.dumps(value)
            except (TypeError, ValueError) as exc:
                raise UsageError(
                    f"evaluate(): dataset item {i + 1}'s {key!r} cannot be written as JSON "
                    f"({exc}); give text, a list of chat messages, or JSON values"
                ) from exc
        tests.append(
            TestCase(
                id=tid,
                input=value,
                expected_output=expected,
                category=None if item.get("category") is None else str(item["category"]),
                metadata=dict(metadata) if isinstance(metadata, Mapping) else {},
                threshold=threshold,
                assertions=assertions,
                where=Where("<evaluate>", i + 1),
            )
        )
    if not tests:
        raise UsageError("evaluate(): the dataset is empty: give at least one item")
    target = TargetSpec(
        name=str(model),
        type="python",
        settings={"model": str(model), "function": _name_of(task)},
        function=task,
        where=where,
    )
    fingerprint = json.dumps(
        {
            "tests": [[t.id, t.input, t.expected_output, t.threshold] for t in tests],
            "scorers": {m: _name_of(fn) for m, fn in (scorers or {}).items()},
            "target": target.public_settings(),
            "attempts": trials,
        },
        sort_keys=True,
        default=str,
    )
    return Suite(
        name=str(name),
        tests=tuple(tests),
        targets=(target,),
        attempts=trials,
        concurrency=max_concurrency,
        timeout_s=timeout_s,
        retries=retries or RetryPolicy(),
        seed=seed,
        base_dir=Path.cwd(),
        hash=hashlib.sha256(fingerprint.encode()).hexdigest(),
        where=where,
    )
