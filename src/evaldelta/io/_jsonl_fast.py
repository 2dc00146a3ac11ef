"""The plain path of the JSONL reader: pieces of a file in the common agentv shape,
decoded with types that check the shape as they go and turned into columns with little
Python per record. A piece of any other shape is left to the general path
(:mod:`evaldelta.io._jsonl`), which gives the same columns for the same records."""

from __future__ import annotations

import zlib
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from evaldelta.io import _agentv
from evaldelta.model import Factorizer, float_column

if TYPE_CHECKING:
    from evaldelta.io._source import LineChunk
    from evaldelta.model import IntArray

__all__ = ["PlainDecoder"]

#: Fields the plain path takes only when absent or null: any other value sends the piece
#: to the general path, which knows what each means.
_GENERAL_ONLY = (
    "eval_id",
    "testId",
    "duration_ms",
    "wait_ms",
    "token_usage",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "trace",
    "error",
    "error_kind",
    "safety_failure",
    "tags",
    "start_time",
    "run_status",
    "config",
    "case_order",
    "sequential",
    "run_finished_at",
)
#: Optional fields the plain path reads, with their type.
_PLAIN_OPTIONAL: dict[str, Any] = {
    "attempt": int,
    "passed": bool,
    "latency_ms": float,
    "category": str,
    "timestamp": str,
}
#: Most distinct targets (or statuses) the plain path spells out in its types.
_MAX_SPELLED = 64


class _Shape(NamedTuple):
    """What the plain path's record type spells out; ``None`` leaves a part of it open.

    ``targets``: the targets accepted (open: any string). ``scorers``: the names
    ``scores`` may hold, as a struct that forbids others (open: a mapping of any names;
    empty: no ``scores``). ``statuses``: the ``execution_status`` values accepted, none
    of which means an error (open: any string). ``present``: the optional fields that
    may have a value (open: all; the others must be absent or null).
    """

    targets: tuple[str, ...] | None = None
    scorers: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = None
    present: frozenset[str] | None = None

    def absent(self, name: str) -> bool:
        return self.present is not None and name not in self.present


def _plain_record_type(shape: _Shape, keep_text: bool = False) -> Any:
    """The record type of the plain path, spelled out as ``shape`` says; with the text
    fields when ``keep_text`` (read as the general path reads them)."""
    from typing import Literal

    def spelled(values: tuple[str, ...] | None) -> Any:
        if values is None:
            return str | None
        return Literal[values] | None if values else None

    scores_type: Any
    if shape.scorers is None:
        scores_type = dict[str, float | None] | None
    elif not shape.scorers:
        scores_type = None
    else:
        names = {f"scorer_{i}": name for i, name in enumerate(shape.scorers)}
        scores_type = (
            msgspec.defstruct(
                "_PlainScores",
                [(field, float | None, None) for field in names],
                rename=names,
                forbid_unknown_fields=True,
                gc=False,
            )
            | None
        )

    def optional(name: str) -> tuple[str, Any, None]:
        return (name, None if shape.absent(name) else _PLAIN_OPTIONAL[name] | None, None)

    # In the order agentv writes its fields (and bench/generate.py): msgspec looks each
    # key up from where the last one was found.
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
        optional("timestamp"),
        ("test_id", str),
        ("target", spelled(shape.targets), None),
        optional("attempt"),
        ("score", float),
        ("scores", scores_type, None),
        optional("latency_ms"),
        ("input", str | list | dict | None | msgspec.UnsetType, msgspec.UNSET),
        ("execution_status", spelled(shape.statuses), None),
        optional("passed"),
        optional("category"),
        *((name, None, None) for name in _GENERAL_ONLY),
    ]
    if keep_text:
        fields += [
            ("output", Any, None),
            ("answer", Any, None),
            ("expected", Any, None),
            ("expected_output", Any, None),
            ("metadata", dict[str, Any] | None, None),
        ]
    return msgspec.defstruct("_PlainRecord", fields, kw_only=True, gc=False)


class PlainDecoder:
    """The plain path: pieces of the common agentv shape, with little Python per record.

    The shape: a string ``test_id`` and a numeric ``score`` on every record; any of
    ``target``, ``execution_status``, ``scores`` (a mapping), ``input`` (a string, a list
    or an object) and the fields of :data:`_PLAIN_OPTIONAL`; every field of
    :data:`_GENERAL_ONLY` absent or null; all other fields (the answer, ...) skipped
    unread. msgspec checks the shape as it decodes: a piece that breaks it fails to
    decode, and the general path reads it instead (naming the bad line, if there is
    one), giving the same columns.

    What the pieces read so far held is then spelled out in the types (see
    :class:`_Shape`): targets decode to the same few string objects (quick to number),
    scores to a struct instead of a dict per record, and fields never seen, or statuses
    that mean no error, need no Python at all. A piece that holds something new fails
    with those types and is decoded again with open ones, which learn it.
    """

    def __init__(self, keep_text: bool, max_misses: int) -> None:
        self.keep_text = keep_text
        self.max_misses = max_misses  # pieces in a row it may fail before it gives up
        self.open = msgspec.json.Decoder(_plain_record_type(_Shape(), keep_text))
        self.spelled: tuple[_Shape, msgspec.json.Decoder[Any]] | None = None
        self.scorers: dict[str, None] = {}
        self.statuses: dict[str, None] = {}
        self.present: set[str] = set()
        self.misses = 0  # pieces in a row the plain path could not read

    def columns(
        self, chunk: LineChunk, factorizers: dict[str, Factorizer]
    ) -> dict[str, Any] | None:
        """The columns of one piece, or ``None`` when the general path must read it."""
        if self.misses >= self.max_misses:
            return None
        part = self._read(chunk, factorizers)
        self.misses = 0 if part is not None else self.misses + 1
        return part

    def _read(self, chunk: LineChunk, factorizers: dict[str, Factorizer]) -> dict[str, Any] | None:
        recs: list[Any] | None = None
        shape = _Shape()
        if self.spelled is not None:
            try:
                recs = self.spelled[1].decode_lines(chunk.data)
                shape = self.spelled[0]
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                pass
        if recs is None:
            try:
                recs = self.open.decode_lines(chunk.data)
            except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                return None
        n = len(recs)
        if not n or not _agentv.one_object_per_line(chunk, n):
            return None
        part = self._columns(chunk.first_line, recs, shape, factorizers)
        if part is not None and shape.present is None:
            self._learn(factorizers["target"])
        return part

    def _learn(self, targets: Factorizer) -> None:
        """Spell out in the types what the pieces read so far held."""
        names = tuple(t for t in targets.index if t is not None)
        statuses = tuple(self.statuses)
        failed = any(s.lower() in _agentv.ERROR_STATUSES for s in statuses)
        shape = _Shape(
            targets=names if len(names) <= _MAX_SPELLED else None,
            scorers=tuple(self.scorers),
            statuses=None if failed or len(statuses) > _MAX_SPELLED else statuses,
            present=frozenset(self.present),
        )
        if self.spelled is None or self.spelled[0] != shape:
            self.spelled = (
                shape,
                msgspec.json.Decoder(_plain_record_type(shape, self.keep_text)),
            )

    def _values(self, recs: list[Any], name: str, shape: _Shape) -> list[Any] | None:
        """The values of an optional field, ``None`` when the types say it is absent;
        with open types, note whether any record had one."""
        if shape.absent(name):
            return None
        values = list(map(attrgetter(name), recs))
        if shape.present is None and values.count(None) != len(values):
            self.present.add(name)
        return values

    def _columns(
        self,
        first_line: int,
        recs: list[Any],
        shape: _Shape,
        factorizers: dict[str, Factorizer],
    ) -> dict[str, Any] | None:
        """The columns of the records of a piece, decoded with the types of ``shape``;
        ``None`` when something in them is for the general path to report."""
        import numpy as np

        n = len(recs)
        test_ids = [r.test_id for r in recs]
        targets = [r.target for r in recs] if shape.targets != () else None
        if "" in test_ids or (shape.targets is None and targets is not None and "" in targets):
            return None  # errors: the general path names the line

        errors: dict[int, str] = {}
        error_kinds: dict[int, str] = {}
        if shape.statuses is None:
            statuses = [r.execution_status for r in recs]
            if statuses.count(None) != n:
                distinct = set(statuses)
                distinct.discard(None)
                self.statuses.update(dict.fromkeys(sorted(distinct)))
                failed = {s for s in distinct if s.lower() in _agentv.ERROR_STATUSES}
                if failed:
                    for i, status in enumerate(statuses):
                        if status in failed:
                            errors[i] = f"execution_status: {status}"
                            if status.lower() in _agentv.INFRA_STATUSES:
                                error_kinds[i] = "infra"

        scorer_cols: dict[str, list[float | None]] = {}
        if shape.scorers is None:
            scorer_cols = _agentv.scorer_columns(recs)
            self.scorers.update(dict.fromkeys(scorer_cols))
        elif shape.scorers:
            scores = [r.scores for r in recs]
            kind = next((type(s) for s in scores if s is not None), None)
            if kind is not None:
                for field, name in zip(
                    kind.__struct_fields__, kind.__struct_encode_fields__, strict=True
                ):
                    get = attrgetter(field)
                    try:
                        scorer_cols[name] = list(map(get, scores))
                    except AttributeError:  # records without scores
                        scorer_cols[name] = [None if s is None else get(s) for s in scores]

        stamps = self._values(recs, "timestamp", shape)
        found = [t for t in stamps if t] if stamps is not None else []
        passed = self._values(recs, "passed", shape)
        attempts = self._values(recs, "attempt", shape)
        try:
            attempt = (
                _agentv.attempt_column(attempts)
                if attempts is not None
                else np.zeros(n, dtype=np.int64)
            )
        except _agentv.AttemptRangeError:
            return None  # the general path names the line
        latency = self._values(recs, "latency_ms", shape)
        categories = self._values(recs, "category", shape)
        inputs = [r.input for r in recs]
        nan = np.full(n, np.nan)
        return {
            "n": n,
            "lines": np.arange(first_line, first_line + n, dtype=np.int64),
            "status": "complete",
            "config": {},
            "started_at": min(found) if found else None,
            "finished_at": max(found) if found else None,
            "input_hash": _plain_input_hashes(inputs),
            "extra": {},
            "test_id": factorizers["test_id"].codes(test_ids),
            "score": np.asarray([r.score for r in recs], dtype=np.float64),
            "target": _codes(factorizers["target"], targets, n),
            "passed": (
                _agentv.passed_column(passed)
                if passed is not None
                else np.full(n, -1, dtype=np.int64)
            ),
            "attempt": attempt,
            "latency_ms": float_column(latency, n),
            "wait_ms": nan,
            "input_tokens": nan,
            "output_tokens": nan,
            "cost_usd": nan,
            "errors": errors,
            "error_kinds": error_kinds,
            "safety_failure": np.zeros(n, dtype=np.bool_),
            "category": _codes(factorizers["category"], categories, n),
            "tags": {},
            "scorer_scores": {k: float_column(v, n) for k, v in scorer_cols.items()},
            "texts": _plain_texts(recs, inputs) if self.keep_text else None,
        }


def _plain_texts(recs: list[Any], inputs: list[Any]) -> dict[str, list[Any]]:
    """The text columns of records the plain path decoded, as the general path makes
    them: ``output`` else ``answer``, ``expected`` else ``expected_output``."""
    unset = msgspec.UNSET
    return {
        "input": [None if v is unset else v for v in inputs],
        "output": _agentv.fill([r.output for r in recs], lambda: [r.answer for r in recs]),
        "expected": _agentv.fill(
            [r.expected for r in recs], lambda: [r.expected_output for r in recs]
        ),
        "metadata": [r.metadata for r in recs],
    }


def _codes(factorizer: Factorizer, values: list[Any] | None, n: int) -> IntArray:
    """Codes of a column, ``None`` standing for ``n`` records without a value."""
    import numpy as np

    if values is not None:
        return factorizer.codes(values)
    index = factorizer.index
    return np.full(n, index.setdefault(None, len(index)), dtype=np.int64)


def _plain_input_hashes(inputs: list[Any]) -> IntArray:
    """The fingerprints of inputs the plain path decoded: the same as the general path's."""
    import numpy as np

    def fingerprint(value: Any) -> int:
        if isinstance(value, str):
            return zlib.crc32(value.encode("utf-8", "surrogatepass")) or 1
        if value is msgspec.UNSET or value is None:
            return 0
        return zlib.crc32(msgspec.json.encode(value, order="sorted")) or 1

    try:
        distinct = dict.fromkeys(inputs)
    except TypeError:  # structured inputs: lists and mappings are not hashable
        return np.asarray([fingerprint(v) for v in inputs], dtype=np.int64)
    table = {v: fingerprint(v) for v in distinct}
    return np.asarray(list(map(table.__getitem__, inputs)), dtype=np.int64)
