"""Reader for any JSON Lines results file, its fields picked by ``--map``.

``--map test_id=question_id,score=result.metrics.accuracy,target=model`` says where
each field of the common model is: a dotted JSON path (``usage.prompt_tokens``; a
number picks from a list, ``choices.0.text``; a key that itself holds dots is found
as it is). A field that ``--map`` does not name is looked for under its usual names
(:data:`DEFAULT_NAMES`), unless the mapping uses that name for another field.

Values: numbers must be JSON numbers (``true``/``false`` count as 1/0 for a score or
a scorer); ``passed`` takes true/false, 1/0, "yes"/"no" and "pass"/"fail"; a missing
value or ``null`` is absent, never 0. A record with scorers and no score scores their
mean; one with an error and no score scores 0 (and is counted as an error). Run facts
come from the usual top-level keys: ``run_status``, ``config``, ``timestamp``.

This is the flexible path: every line is decoded to a ``dict`` and walked. The
``jsonl`` reader, for files shaped like agentv's, is the fast one.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import ParseError, UsageError
from evaldelta.io._agentv import (
    ATTEMPT_MAX,
    ERROR_STATUSES,
    INFRA_STATUSES,
    INTERRUPTED_STATUSES,
    WHOLE_ATTEMPT,
)
from evaldelta.io._errors import explain_line_decode, listed, shown
from evaldelta.io._reader import (
    ReadOptions,
    decode_lines,
    error_text,
    fill_scores,
    read_content,
    reader,
)
from evaldelta.io._source import fingerprint, paused_gc
from evaldelta.model import NUMBER_FIELDS, Run

__all__ = [
    "DEFAULT_NAMES",
    "FIELDS",
    "NAME",
    "SCORER_PREFIX",
    "check_mapping",
    "input_fingerprint",
    "parse_mapping",
    "read",
    "sniff",
]

#: ``--map scores.NAME=PATH`` reads the scorer NAME from PATH.
SCORER_PREFIX = "scores."

#: Where a field is looked for when ``--map`` does not name it (first present wins).
DEFAULT_NAMES: dict[str, tuple[str, ...]] = {
    "test_id": ("test_id", "eval_id", "testId", "id"),
    "target": ("target",),
    "score": ("score",),
    "passed": ("passed",),
    "attempt": ("attempt",),
    "latency_ms": ("latency_ms", "duration_ms"),
    "wait_ms": ("wait_ms",),
    "input_tokens": ("input_tokens",),
    "output_tokens": ("output_tokens",),
    "cost_usd": ("cost_usd",),
    "error": ("error",),
    "error_kind": ("error_kind",),
    "category": ("category",),
    "input": ("input",),
    "output": ("output", "answer"),
    "expected": ("expected", "expected_output"),
}

#: Fields of the common model that ``--map`` can place (plus ``scores.NAME``).
FIELDS: tuple[str, ...] = tuple(DEFAULT_NAMES)

#: A mapped run is JSON Lines: the registry's ``jsonl`` line hands ``--map`` here.
NAME = "jsonl"

#: Fields a file may lack on every record without the mapping being wrong: a run
#: in which nothing failed has no error anywhere.
OPTIONAL_EVERYWHERE = frozenset({"error", "error_kind"})

#: Text accepted for ``passed``, lower-cased.
BOOLEAN_WORDS: dict[str, bool] = {
    "true": True,
    "false": False,
    "1": True,
    "0": False,
    "1.0": True,
    "0.0": False,
    "yes": True,
    "no": False,
    "pass": True,
    "fail": False,
}

_EXAMPLE = "e.g. --map test_id=question_id,score=correct"


# -- the --map option -------------------------------------------------------------------


def parse_mapping(text: str) -> dict[str, str]:
    """Turn ``--map`` text (``FIELD=COLUMN,FIELD=COLUMN``) into field -> column or path.

    Spaces around names are ignored; a column name cannot hold a comma.

    Raises:
        UsageError: an entry that is not ``FIELD=COLUMN``, a field given twice, or a
            field the common model does not have (the message lists those it has).
    """
    mapping: dict[str, str] = {}
    for entry in text.split(","):
        entry = entry.strip()
        if not entry:
            continue  # a trailing comma is harmless
        key, sep, value = entry.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise UsageError(f'--map: "{entry}" is not FIELD=COLUMN; write {_EXAMPLE}')
        if key in mapping:
            raise UsageError(
                f'--map: "{key}" is given twice ("{mapping[key]}" and "{value}"); keep one'
            )
        mapping[key] = value
    if not mapping:
        raise UsageError(f"--map: no FIELD=COLUMN given; write {_EXAMPLE}")
    check_mapping(mapping)
    return mapping


def check_mapping(mapping: Mapping[str, str]) -> None:
    """Raise :class:`UsageError` for a field the common model lacks or an empty column."""
    for key, value in mapping.items():
        if key.startswith(SCORER_PREFIX):
            if key == SCORER_PREFIX:
                raise UsageError(
                    f'--map: "{key}" names no scorer; write scores.NAME=COLUMN, '
                    "e.g. scores.exact=em"
                )
        elif key not in FIELDS:
            close = difflib.get_close_matches(key, FIELDS, n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise UsageError(
                f'--map: unknown field "{key}"{hint}; known fields: '
                f"{', '.join(FIELDS)}, scores.NAME (a scorer)"
            )
        if not value.strip():
            raise UsageError(f'--map: "{key}" is mapped to nothing; write {key}=COLUMN')


# -- reading ----------------------------------------------------------------------------


def sniff(path: Path, head: bytes) -> bool:
    """Never: a file is read this way because ``--map`` says so, not for its content."""
    return False


_MISSING: Any = object()
_INDEX = re.compile(r"-?\d+")

_Getter = Callable[[dict[str, Any]], Any]


def _getter(path: str) -> _Getter:
    """A function that finds ``path`` in a decoded line (``_MISSING`` when absent)."""
    parts = path.split(".")

    def get(obj: dict[str, Any]) -> Any:
        value: Any = obj.get(path, _MISSING)  # a key that itself holds dots wins
        if value is not _MISSING:
            return value
        value = obj
        for part in parts:
            if type(value) is dict:
                value = value.get(part, _MISSING)
                if value is _MISSING:
                    return _MISSING
            elif type(value) is list and _INDEX.fullmatch(part):
                i = int(part)
                if not -len(value) <= i < len(value):
                    return _MISSING
                value = value[i]
            else:
                return _MISSING
        return value

    return get


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read a JSON Lines file whose fields ``mapping`` places (see the module docstring).

    ``extra_fields``: further fields (or dotted paths) to keep, in ``run.extra``.

    Raises:
        ParseError: a line that is not one JSON object, a value of the wrong kind, a
            record without a test id or score, or a mapped path found in no record.
        UsageError: a mapping with a field the common model lacks.
    """
    check_mapping(options.mapping)
    src, data = read_content(path)
    with paused_gc():
        objs, lines = decode_lines(src, data, _OBJECTS, _explain, _object)
        return _Builder(src, objs, lines, options.mapping).run(options.keep_text, options.extra)


_OBJECTS = msgspec.json.Decoder(dict[str, Any])


class _NotAnObjectError(ValueError):
    """A line that is JSON but not an object; the message is what it is instead."""


def _object(line: bytes) -> dict[str, Any]:
    """One line, decoded (the dict type is checked after: an untyped decode is faster)."""
    obj = msgspec.json.decode(line)
    if type(obj) is not dict:
        raise _NotAnObjectError(_kind(obj))
    return obj


def _explain(err: ValueError, line: bytes) -> str:
    if isinstance(err, _NotAnObjectError):
        return f"expected a JSON object, got {err}; each line must be one JSON object"
    if isinstance(err, msgspec.ValidationError):
        # The only validation an untyped decode does: numbers too big for a float.
        return "a number is out of range (beyond 1.8e308); write a finite number"
    return explain_line_decode(str(err), line)


#: CRC-32 of an input, as every reader takes it (see ``_source.fingerprint``).
input_fingerprint = fingerprint


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "null" if value is None else "a JSON object"


class _Builder:
    """Columns of the common model from decoded lines, one field at a time."""

    def __init__(
        self,
        src: str,
        objs: list[dict[str, Any]],
        lines: Sequence[int],
        fields: dict[str, str],
    ) -> None:
        self.src = src
        self.objs = objs
        self.lines = lines
        self.fields = fields
        self.n = len(objs)
        # A name the mapping gives to one field is not also read as another.
        self.taken = set(fields.values())
        # Every top-level key: a field no record has costs no pass over the records.
        self.keys: set[str] = set().union(*objs)

    # -- finding values --------------------------------------------------------------

    def _keys_found(self) -> str:
        keys = list(dict.fromkeys(k for obj in self.objs[:100] for k in obj))
        shown = ", ".join(f'"{k}"' for k in keys[:20])
        more = f" and {len(keys) - 20} more" if len(keys) > 20 else ""
        return f"{shown}{more}" if keys else "no keys"

    def _absent_everywhere(self, field: str, path: str) -> ParseError:
        return ParseError(
            self.src,
            None,
            f'no record has "{path}" (from --map {field}={path}); '
            f"the records have {self._keys_found()}; check the path",
        )

    def paths(self, field: str) -> list[str]:
        """Where to look for ``field``: its mapped path, else its usual names."""
        if field in self.fields:
            return [self.fields[field]]
        return [name for name in DEFAULT_NAMES[field] if name not in self.taken]

    def raw(self, field: str, path: str) -> list[Any]:
        """The values at ``path`` (``None`` where absent); a mapped path that no record
        has is a mistake in the mapping."""
        values: list[Any] = []
        missing = self.n
        if path in self.keys:
            values = [obj.get(path, _MISSING) for obj in self.objs]
            missing = values.count(_MISSING)
        elif path.split(".", 1)[0] in self.keys:
            values = list(map(_getter(path), self.objs))
            missing = values.count(_MISSING)
        if missing == 0:
            return values
        if missing == self.n:
            if self.fields.get(field) == path and field not in OPTIONAL_EVERYWHERE:
                raise self._absent_everywhere(field, path)
            return [None] * self.n
        return [None if v is _MISSING else v for v in values]

    def column(self, field: str, convert: Callable[[list[Any], str], list[Any]]) -> list[Any]:
        """``field`` converted, each record's value from the first path that has one."""
        out: list[Any] | None = None
        for path in self.paths(field):
            values = self.raw(field, path)
            if values.count(None) != self.n:
                values = convert(values, path)
            if out is None:
                out = values
            else:
                out = [a if a is not None else b for a, b in zip(out, values, strict=True)]
            if out.count(None) == 0:
                break
        return out if out is not None else [None] * self.n

    # -- converting values -----------------------------------------------------------

    def _bad(self, i: int, path: str, wanted: str, value: Any) -> ParseError:
        return ParseError(self.src, self.lines[i], f'"{path}" must be {wanted}, got {shown(value)}')

    def labels(self, values: list[Any], path: str) -> list[Any]:
        """Strings (an integer is written as one); ``""`` is absent."""
        if all(type(v) is str or v is None for v in values):
            return [v if v != "" else None for v in values]
        out: list[str | None] = []
        for i, v in enumerate(values):
            if v is None or v == "":
                out.append(None)
            elif type(v) is str:
                out.append(v)
            elif type(v) is int:
                out.append(str(v))
            else:
                raise self._bad(i, path, "a string or an integer", v)
        return out

    def numbers(self, values: list[Any], path: str, *, booleans: bool = False) -> list[Any]:
        """Finite floats; ``true``/``false`` are 1/0 when ``booleans``."""
        out: list[float | None] = []
        for i, v in enumerate(values):
            kind = type(v)
            if v is None:
                out.append(None)
            elif kind is float or kind is int:
                out.append(float(v))
            elif kind is bool and booleans:
                out.append(1.0 if v else 0.0)
            else:
                raise self._bad(i, path, "a number", v)
        return out

    def scores(self, values: list[Any], path: str) -> list[Any]:
        return self.numbers(values, path, booleans=True)

    def booleans(self, values: list[Any], path: str) -> list[Any]:
        out: list[bool | None] = []
        for i, v in enumerate(values):
            if v is None or type(v) is bool:
                out.append(v)
            elif type(v) is int and v in (0, 1):
                out.append(bool(v))
            elif type(v) is str and v.strip().lower() in BOOLEAN_WORDS:
                out.append(BOOLEAN_WORDS[v.strip().lower()])
            else:
                raise self._bad(i, path, 'true or false (or 1/0, "yes"/"no")', v)
        return out

    def attempts(self, values: list[Any], path: str) -> list[Any]:
        out: list[int | None] = []
        for i, v in enumerate(values):
            if v is None:
                out.append(None)
            elif type(v) in (int, float) and 1 <= v <= ATTEMPT_MAX and float(v).is_integer():
                out.append(int(v))
            else:
                raise self._bad(i, path, WHOLE_ATTEMPT, v)
        return out

    def anything(self, values: list[Any], path: str) -> list[Any]:
        return values

    # -- the record's parts ----------------------------------------------------------

    def test_ids(self) -> list[str]:
        ids = self.column("test_id", self.labels)
        if None not in ids:
            return ids
        i = ids.index(None)
        if "test_id" in self.fields:
            names = [self.fields["test_id"]]
        else:
            names = self.paths("test_id")
            if all(v is None for v in ids):
                raise ParseError(
                    self.src,
                    None,
                    f"no record has a test id ({listed(names)}); the records have "
                    f"{self._keys_found()}; name it with --map test_id=PATH",
                )
        raise ParseError(
            self.src,
            self.lines[i],
            f"record has no test id ({listed(names)}); every record needs one",
        )

    def scorers(self) -> dict[str, list[Any]]:
        """Scorer name -> score per record: mapped ones first, then a ``scores`` object."""
        cols: dict[str, list[Any]] = {}
        for key, path in self.fields.items():
            if key.startswith(SCORER_PREFIX):
                cols[key[len(SCORER_PREFIX) :]] = self.scores(self.raw(key, path), path)
        if "scores" in self.taken or "scores" not in self.keys:
            return cols
        raw = [obj.get("scores") for obj in self.objs]
        if raw.count(None) == self.n:
            return cols
        per_record: list[dict[str, Any]] = []
        for i, found in enumerate(raw):
            if not found:
                per_record.append({})
            elif type(found) is dict:
                per_record.append(found)
            elif type(found) is list and all(
                type(s) is dict and type(s.get("name")) is str for s in found
            ):
                # agentv's list form; a scorer named twice in one record counts once, averaged.
                seen: dict[str, list[float]] = {}
                for s in found:
                    score = s.get("score")
                    if score is None:
                        continue
                    if type(score) not in (int, float, bool):
                        raise self._bad(
                            i, "scores", 'a list of {"name", "score"} with number scores', found
                        )
                    seen.setdefault(s["name"], []).append(float(score))
                per_record.append({k: sum(v) / len(v) for k, v in seen.items()})
            else:
                raise self._bad(
                    i,
                    "scores",
                    'an object of name -> score (or a list of {"name", "score"})',
                    found,
                )
        for name in dict.fromkeys(k for d in per_record for k in d):
            if name not in cols:
                values = [d.get(name) for d in per_record]
                cols[name] = self.scores(values, f"{SCORER_PREFIX}{name}")
        return {name: col for name, col in cols.items() if col.count(None) != self.n}

    def errors(self) -> tuple[dict[int, str], set[int]]:
        """Error text per failed record, and the records whose ``execution_status``
        blames the infrastructure (as the jsonl reader reads it)."""
        errors: dict[int, str] = {}
        infra: set[int] = set()
        for path in self.paths("error"):
            for i, value in enumerate(self.raw("error", path)):
                text = error_text(value)
                if text is not None and i not in errors:
                    errors[i] = text
        if (
            "error" not in self.fields
            and "execution_status" in self.keys
            and "execution_status" not in self.taken
        ):
            for i, obj in enumerate(self.objs):
                status = obj.get("execution_status")
                if type(status) is not str:
                    continue
                if i not in errors and status.lower() in ERROR_STATUSES:
                    errors[i] = f"execution_status: {status}"
                if status.lower() in INFRA_STATUSES:
                    infra.add(i)
        return errors, infra

    def overall_scores(
        self, ids: list[str], scorers: dict[str, list[Any]], errors: dict[int, str]
    ) -> list[float]:
        if "score" in self.fields:
            path = self.fields["score"]
            scores = self.scores(self.raw("score", path), path)
            what = f'"{path}"'
        else:
            scores = self.column("score", self.scores)
            what = '"score"'
            if not scorers and all(v is None for v in scores):
                raise ParseError(
                    self.src,
                    None,
                    f'no record has a score ("score", or scorers in "scores"); the records '
                    f"have {self._keys_found()}; name it with --map score=PATH "
                    "(or scores.NAME=PATH for each scorer)",
                )
        if scorers:
            what += " (nor a scorer)"
        return fill_scores(
            scores,
            scorers,
            errors,
            lambda i: ParseError(
                self.src,
                self.lines[i],
                f"record {ids[i]!r} has no {what}; every record needs a number "
                '(or an "error" for an attempt that did not run)',
            ),
        )

    def run_facts(self) -> tuple[str, dict[str, Any], str | None, str | None]:
        """Status, config and first and last timestamp, from the usual top-level keys."""
        objs = self.objs if self.keys & {"run_status", "config", "timestamp", "start_time"} else []
        statuses = {s.lower() for obj in objs if type(s := obj.get("run_status")) is str}
        status = "interrupted" if statuses & INTERRUPTED_STATUSES else "complete"
        config = next((c for obj in objs if type(c := obj.get("config")) is dict and c), {})
        stamps = [
            t for obj in objs if type(t := obj.get("timestamp", obj.get("start_time"))) is str and t
        ]
        # ISO 8601 stamps in one time zone sort as text; the extremes are all we need.
        return status, config, (min(stamps) if stamps else None), (max(stamps) if stamps else None)

    def run(self, keep_text: bool, extra: tuple[str, ...]) -> Run:
        ids = self.test_ids()
        scorers = self.scorers()
        errors, infra = self.errors()
        scores = self.overall_scores(ids, scorers, errors)
        kinds = self.column("error_kind", self.labels)
        error_kinds = {i: k for i, k in enumerate(kinds) if k is not None}
        for i in infra:
            error_kinds.setdefault(i, "infra")
        inputs = self.column("input", self.anything)
        texts = None
        if keep_text:
            metadata: list[Any] = [None] * self.n
            if "metadata" in self.keys:
                metadata = [
                    m if type(m := obj.get("metadata")) is dict else None for obj in self.objs
                ]
            texts = {
                "input": inputs,
                "output": self.column("output", self.anything),
                "expected": self.column("expected", self.anything),
                "metadata": metadata,
            }
        status, config, started_at, finished_at = self.run_facts()
        measurements: dict[str, Any] = {f: self.column(f, self.numbers) for f in NUMBER_FIELDS}
        return Run.from_columns(
            source=self.src,
            format=NAME,
            lines=self.lines,
            status=status,
            config=config,
            started_at=started_at,
            finished_at=finished_at,
            input_hash=list(map(input_fingerprint, inputs)),
            extra={name: self.raw("", name) for name in extra},
            test_id=ids,
            score=scores,
            target=self.column("target", self.labels),
            passed=self.column("passed", self.booleans),
            attempt=self.column("attempt", self.attempts),
            **measurements,
            errors=errors,
            error_kinds=error_kinds,
            category=self.column("category", self.labels),
            scorer_scores=scorers,
            texts=texts,
        )
