"""Reader for promptfoo results: the JSON document of ``promptfoo eval -o results.json``
or ``promptfoo export``, and the rows of ``promptfoo eval -o results.jsonl``.

Each row of ``results.results`` (each line of the JSONL form) is one attempt: one test
(``testIdx``) run by one provider with one prompt. Fields read:

- test id: the test's ``description`` when it has one, else ``vars-`` and a 12-digit
  hex BLAKE2b digest of its ``vars`` (keys sorted, promptfoo's own ``_conversation``
  left out). promptfoo gives each ``--repeat`` a new ``testIdx`` and nothing marks it as
  a repeat, so a test is known by what it asks: rows with the same description (or, lacking
  one, the same vars) are attempts of one case, numbered in ``testIdx`` order, and the id
  stays the same across runs of the same suite. A description shared by tests with
  different vars gets the digest appended (``"name [vars-...]"``); a test with neither
  is known by its ``testIdx`` (``test-3``), so its repeats count as separate cases. Give
  tests a ``description`` to name them, and to pair them with another tool's ids.
- target: the provider's ``label``, else its ``id``; when the file holds several
  prompts, `` / `` and the prompt's label are appended.
- ``score``; ``success`` -> passed; ``latencyMs`` (absent for a cached response: the
  cache's latency is not the provider's); ``cost`` (else ``response.cost``); tokens from
  ``response.tokenUsage`` (else the row's ``tokenUsage``): ``prompt``, ``completion``.
- scorers: ``gradingResult.componentResults``, one per assertion, named by its
  ``metric``, else its ``type``; a name met twice in one row counts once, averaged.
- ``failureReason`` 2 (an error, not a failed assertion) is an infrastructure failure,
  with the row's ``error`` as message. promptfoo also fills ``error`` when an assertion
  fails (``failureReason`` 1): that is a failed attempt, not an error.
- text, when asked for: input = the vars, output = ``response.output``, metadata = the
  test's ``metadata``. ``input_hash`` is a CRC-32 of the vars as they identify the test
  (sorted-key JSON).
- run: config ``model`` (the providers), ``prompt`` (the prompt templates) and
  ``description`` (the suite's); ``started_at`` from ``results.timestamp``,
  ``finished_at`` from it plus ``stats.durationMs`` when the file has it. promptfoo
  records no sign of an interrupted run: every run reads as complete.

``extra_fields`` are looked up in each row, then in its vars, then in its test's
metadata. ``mapping`` (``--map``) does not apply to this fixed format and is ignored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._errors import explain_decode, explain_validation
from evaldelta.io._reader import (
    RAW_NONE,
    ReadOptions,
    decode_document,
    decode_lines,
    decoded,
    extra_columns,
    read_content,
    reader,
)
from evaldelta.io._source import crc_of, fingerprint_bytes, paused_gc
from evaldelta.model import Run

NAME = "promptfoo"

#: ``failureReason`` of a row that failed with an error (``ResultFailureReason.ERROR``).
FAILURE_ERROR = 2
#: Vars promptfoo fills in itself, which differ between runs of the same test.
_OWN_VARS = ("_conversation",)


class _TokenUsage(msgspec.Struct, gc=False):
    prompt: float | None = None
    completion: float | None = None


class _Response(msgspec.Struct, gc=False):
    tokenUsage: _TokenUsage | None = None  # noqa: N815 - the file's own spelling
    cost: float | None = None
    cached: bool | None = None
    output: msgspec.Raw = RAW_NONE


class _Provider(msgspec.Struct, gc=False):
    id: str | None = None
    label: str | None = None


class _Prompt(msgspec.Struct, gc=False):
    label: str | None = None


class _Assertion(msgspec.Struct, gc=False):
    """The assertion a component result grades: its type and named metric."""

    type: str | None = None
    metric: str | None = None


class _Component(msgspec.Struct, gc=False):
    """One assertion's result inside ``gradingResult.componentResults``."""

    score: float | None = None
    assertion: _Assertion | None = None


class _Grading(msgspec.Struct, gc=False):
    """``gradingResult`` of a row: the per-assertion results scorers come from."""

    componentResults: list[_Component] | None = None  # noqa: N815


class _TestCase(msgspec.Struct, gc=False):
    description: str | None = None
    vars: msgspec.Raw = RAW_NONE
    metadata: msgspec.Raw = RAW_NONE


class _Row(msgspec.Struct, gc=False):
    """One result row; every other field is skipped unparsed.

    ``gc=False``: these objects hold no cycles, and big files make many of them.
    """

    testIdx: int | None = None  # noqa: N815
    promptId: str | None = None  # noqa: N815
    provider: _Provider | str | None = None
    prompt: _Prompt | None = None
    description: str | None = None
    vars: msgspec.Raw = RAW_NONE
    testCase: _TestCase | None = None  # noqa: N815
    response: _Response | None = None
    error: str | None = None
    failureReason: int | None = None  # noqa: N815
    success: bool | None = None
    score: float | None = None
    latencyMs: float | None = None  # noqa: N815
    gradingResult: _Grading | None = None  # noqa: N815
    cost: float | None = None
    tokenUsage: _TokenUsage | None = None  # noqa: N815


class _CompletedPrompt(msgspec.Struct, gc=False):
    raw: str | None = None
    label: str | None = None


class _Stats(msgspec.Struct, gc=False):
    durationMs: float | None = None  # noqa: N815


class _Summary(msgspec.Struct, gc=False):
    timestamp: str | None = None
    results: list[_Row] | None = None
    prompts: list[_CompletedPrompt] | None = None
    stats: _Stats | None = None


class _Config(msgspec.Struct, gc=False):
    description: str | None = None


class _Metadata(msgspec.Struct, gc=False):
    evaluationCreatedAt: str | None = None  # noqa: N815


class _Export(msgspec.Struct, gc=False):
    # ``promptfoo export`` and ``eval -o x.json`` nest the summary under "results";
    # a summary saved on its own has the rows there directly.
    results: _Summary | list[_Row] | None = None
    timestamp: str | None = None
    prompts: list[_CompletedPrompt] | None = None
    stats: _Stats | None = None
    config: _Config | None = None
    metadata: _Metadata | None = None


class _Peek(msgspec.Struct, gc=False):
    results: msgspec.Raw = RAW_NONE


_EXPORT = msgspec.json.Decoder(_Export)
_ROW = msgspec.json.Decoder(_Row)
_PEEK = msgspec.json.Decoder(_Peek)

_BLANK = re.compile(rb"\s*")

_NOT_AN_EXPORT = "is this a promptfoo results file?"
_MEND = "re-export the results with promptfoo"
_MEND_SYNTAX = "export the results again with promptfoo"
_DOC_KEYS = (re.compile(rb'"evalId"\s*:'), re.compile(rb'"results"\s*:'))
_ROW_KEYS = (re.compile(rb'"testIdx"\s*:'), re.compile(rb'"promptIdx"\s*:'))


def sniff(path: Path, head: bytes) -> bool:
    """True for a promptfoo export (``"evalId"`` and ``"results"``) or result rows
    (``"testIdx"`` and ``"promptIdx"``, which no other tool writes together)."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return False
    if all(k.search(text) for k in _ROW_KEYS):
        return True
    return all(k.search(text) for k in _DOC_KEYS)


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read a promptfoo results file into a :class:`Run` (``mapping`` is ignored)."""
    src, data = read_content(path, "no results to compare; check promptfoo wrote its output")
    with paused_gc():
        export, rows, lines = _decode(src, data)
        return _to_run(src, data, export, rows, lines, options.keep_text, options.extra)


# -- decoding ---------------------------------------------------------------------------


def _first_line(data: bytes) -> bytes:
    """The first non-blank line, stripped (copying that line only, not the file)."""
    start = _BLANK.match(data).end()  # type: ignore[union-attr]  # \s* always matches
    end = data.find(b"\n", start)
    return data[start : end if end >= 0 else len(data)].strip()


def _is_document(data: bytes) -> bool:
    """True for one JSON document (an export); False for JSON Lines of result rows."""
    first = _first_line(data)
    if first == b"{":
        return True  # a pretty-printed document
    try:
        return len(_PEEK.decode(first).results) > 0
    except (msgspec.DecodeError, msgspec.ValidationError):
        return True  # not one object per line: let the document decoder name the problem


def _decode(src: str, data: bytes) -> tuple[_Export | None, list[_Row], Sequence[int] | None]:
    if not _is_document(data):
        rows, numbers = decode_lines(src, data, _ROW, _explain_row)
        return None, rows, numbers
    export = decode_document(
        src,
        data,
        _EXPORT,
        not_an_object=_NOT_AN_EXPORT,
        mend=_MEND,
        mend_syntax=_MEND_SYNTAX,
    )
    found = export.results
    rows_found = found if isinstance(found, list) else found.results if found else None
    if rows_found is None:
        raise ParseError(
            src,
            None,
            'has no "results.results" list of result rows; export the eval with '
            "`promptfoo export <eval id>` or `promptfoo eval -o results.json`",
        )
    return export, rows_found, None


def _explain_row(err: ValueError, line: bytes) -> str:
    """What is wrong with a line of result rows."""
    if isinstance(err, msgspec.ValidationError):
        return explain_validation(str(err), line, not_an_object=_NOT_AN_EXPORT, mend=_MEND)
    message = explain_decode(str(err), line, _MEND_SYNTAX)[1].replace("the file", "the line")
    return f"{message}; each line must be one promptfoo result row"


# -- building the run -------------------------------------------------------------------


def _canonical_vars(raw: msgspec.Raw) -> bytes:
    """The vars as sorted-key JSON, without promptfoo's own vars; ``b""`` when none."""
    if not len(raw):
        return b""
    value = msgspec.json.decode(raw)
    if isinstance(value, dict):
        for name in _OWN_VARS:
            value.pop(name, None)
    return fingerprint_bytes(value or None)


def _digest(canonical: bytes) -> str:
    return "vars-" + hashlib.blake2b(canonical, digest_size=6).hexdigest()


def _where(i: int, lines: Sequence[int] | None) -> tuple[int | None, str]:
    """(line, record name) of row ``i`` for an error message."""
    if lines is not None:
        return lines[i], "row"
    return None, f"results.results[{i}]"


def _test_ids(
    src: str, rows: list[_Row], lines: Sequence[int] | None
) -> tuple[list[str], list[int]]:
    """Each row's test id (see the module docstring) and input fingerprint."""
    cache: dict[bytes, bytes] = {}
    canon: list[bytes] = []
    for r in rows:
        raw = r.vars if len(r.vars) or r.testCase is None else r.testCase.vars
        key = bytes(raw)
        found = cache.get(key)
        if found is None:
            found = cache[key] = _canonical_vars(raw)
        canon.append(found)
    descriptions = [
        (r.testCase.description if r.testCase is not None else None) or r.description or None
        for r in rows
    ]
    vars_by_description: dict[str, set[bytes]] = {}
    for d, c in zip(descriptions, canon, strict=True):
        if d is not None:
            vars_by_description.setdefault(d, set()).add(c)
    shared = {d for d, found in vars_by_description.items() if len(found) > 1}
    digests = {c: _digest(c) for c in set(canon) if c}
    ids: list[str] = []
    for i, (r, d, c) in enumerate(zip(rows, descriptions, canon, strict=True)):
        digest = digests.get(c, "")
        if d is not None:
            ids.append(f"{d} [{digest}]" if d in shared and digest else d)
        elif digest:
            ids.append(digest)
        elif r.testIdx is not None:
            ids.append(f"test-{r.testIdx}")
        else:
            line, name = _where(i, lines)
            raise ParseError(
                src,
                line,
                f'{name} has no "testCase.description", "vars" or "testIdx": nothing tells '
                "which test it is; give each test a description",
            )
    return ids, [crc_of(c) for c in canon]


def _provider_name(p: _Provider | str | None) -> str | None:
    if p is None or isinstance(p, str):
        return p or None
    return p.label or p.id or None


def _targets(rows: list[_Row], providers: list[str | None]) -> list[str | None]:
    """The provider, with the prompt's label when the file holds several prompts."""
    prompt_keys = [r.promptId or (r.prompt.label if r.prompt else None) for r in rows]
    distinct = dict.fromkeys(k for k in prompt_keys if k is not None)
    if len(distinct) <= 1:
        return providers
    labels: dict[str, str] = {}
    for r, k in zip(rows, prompt_keys, strict=True):
        if k is not None and k not in labels:
            labels[k] = (r.prompt.label if r.prompt else None) or k[:12]
    if len(set(labels.values())) < len(labels):  # two prompts under one label
        labels = {k: f"{label} ({k[:8]})" for k, label in labels.items()}
    return [
        p if k is None else f"{p} / {labels[k]}" if p else labels[k]
        for p, k in zip(providers, prompt_keys, strict=True)
    ]


def _attempts(rows: list[_Row], test_ids: list[str], targets: list[str | None]) -> list[int]:
    """Attempt numbers within each (test id, target), in ``testIdx`` order."""
    position = [r.testIdx if r.testIdx is not None else -1 for r in rows]
    order = sorted(range(len(rows)), key=position.__getitem__)
    seen: dict[tuple[str, str | None], int] = {}
    attempt = [0] * len(rows)
    for i in order:
        key = (test_ids[i], targets[i])
        seen[key] = attempt[i] = seen.get(key, 0) + 1
    return attempt


def _scorer_columns(rows: list[_Row]) -> dict[str, list[float | None]]:
    """Assertion name -> score per row (``None`` where a row lacks it), filled column by
    column: no dict per row."""
    n = len(rows)
    columns: dict[str, list[float | None]] = {}
    repeated: dict[tuple[str, int], list[float]] = {}
    for i, r in enumerate(rows):
        grading = r.gradingResult
        if grading is None or not grading.componentResults:
            continue
        for c in grading.componentResults:
            a = c.assertion
            name = (a.metric or a.type) if a is not None else None
            if not name or c.score is None:
                continue
            column = columns.get(name)
            if column is None:
                column = columns[name] = [None] * n
            first = column[i]
            if first is None:
                column[i] = c.score
            else:
                repeated.setdefault((name, i), [first]).append(c.score)
    for (name, i), scores in repeated.items():
        columns[name][i] = sum(scores) / len(scores)
    return columns


def _one_or_list(values: Sequence[str | None]) -> str | list[str] | None:
    """The one value, or the sorted distinct values (row order depends on concurrency)."""
    distinct = sorted({v for v in values if v})
    return distinct[0] if len(distinct) == 1 else distinct or None


def _run_facts(
    export: _Export | None, rows: list[_Row], providers: list[str | None]
) -> tuple[dict[str, Any], str | None, str | None]:
    """Config, start and finish of the run."""
    summary = (
        export.results if export is not None and isinstance(export.results, _Summary) else None
    )
    prompts = (summary.prompts if summary else None) or (export.prompts if export else None)
    templates = [p.raw or p.label for p in prompts] if prompts else []
    if not templates:
        templates = [r.prompt.label for r in rows if r.prompt is not None]
    config: dict[str, Any] = {
        "model": _one_or_list(providers),
        "prompt": _one_or_list(templates),
    }
    if export is not None and export.config is not None and export.config.description:
        config["description"] = export.config.description
    config = {k: v for k, v in config.items() if v is not None}
    started = summary.timestamp if summary else None
    if not started and export is not None:
        started = export.timestamp or (
            export.metadata.evaluationCreatedAt if export.metadata is not None else None
        )
    stats = (summary.stats if summary else None) or (export.stats if export else None)
    finished = None
    if started and stats is not None and stats.durationMs is not None:
        try:
            start = datetime.fromisoformat(started.replace("Z", "+00:00"))
            finished = (start + timedelta(milliseconds=stats.durationMs)).isoformat()
        except ValueError:
            finished = None
    return config, started, finished


def _extra_columns(
    data: bytes, export: _Export | None, names: tuple[str, ...], n: int
) -> dict[str, list[Any]]:
    """The ``extra_fields`` asked for: from the row, its vars or its test's metadata."""
    if not names:
        return {}
    if export is None:
        rows: list[Any] = msgspec.json.Decoder().decode_lines(data)
    else:
        doc = msgspec.json.decode(data)
        found = doc.get("results")
        rows = found if isinstance(found, list) else found.get("results", [])

    def places(row: dict[str, Any]) -> tuple[Any, ...]:
        found = row.get("testCase")
        test: dict[str, Any] = found if isinstance(found, dict) else {}
        return row.get("vars"), test.get("vars"), test.get("metadata")

    return extra_columns(rows[:n], names, places)


def _to_run(
    src: str,
    data: bytes,
    export: _Export | None,
    rows: list[_Row],
    lines: Sequence[int] | None,
    keep_text: bool,
    extra: tuple[str, ...],
) -> Run:
    n = len(rows)
    if n == 0:
        raise ParseError(
            src, None, "has no result rows: no results to compare; check the eval ran its tests"
        )
    test_ids, input_hash = _test_ids(src, rows, lines)
    providers = [_provider_name(r.provider) for r in rows]
    targets = _targets(rows, providers)

    errors: dict[int, str] = {}
    for i, r in enumerate(rows):
        if r.failureReason == FAILURE_ERROR:
            errors[i] = r.error or "promptfoo reported an error (failureReason 2)"
    raw_scores = [r.score for r in rows]
    if None in raw_scores:
        for i, s in enumerate(raw_scores):
            if s is None and i not in errors:
                line, name = _where(i, lines)
                raise ParseError(
                    src,
                    line,
                    f'{name} (test {test_ids[i]!r}) has no "score"; every row that ran '
                    "needs one: re-export the eval with a current promptfoo",
                )
    # An errored row without a score scores 0 (it is left out as an infrastructure failure).
    scores = [0.0 if s is None else s for s in raw_scores]

    responses = [r.response for r in rows]
    latency = [
        None if resp is not None and resp.cached else r.latencyMs
        for r, resp in zip(rows, responses, strict=True)
    ]
    usage = [
        resp.tokenUsage if resp is not None and resp.tokenUsage is not None else r.tokenUsage
        for r, resp in zip(rows, responses, strict=True)
    ]
    cost = [
        r.cost if r.cost is not None else resp.cost if resp is not None else None
        for r, resp in zip(rows, responses, strict=True)
    ]
    texts = None
    if keep_text:
        texts = {
            "input": [
                decoded(r.vars if len(r.vars) or r.testCase is None else r.testCase.vars)
                for r in rows
            ],
            "output": [decoded(resp.output) if resp is not None else None for resp in responses],
            "expected": [None] * n,
            "metadata": [decoded(r.testCase.metadata) if r.testCase else None for r in rows],
        }
    config, started_at, finished_at = _run_facts(export, rows, providers)
    return Run.from_columns(
        source=src,
        format=NAME,
        test_id=test_ids,
        score=scores,
        target=targets,
        passed=[r.success for r in rows],
        attempt=_attempts(rows, test_ids, targets),
        latency_ms=latency,
        input_tokens=[u.prompt if u is not None else None for u in usage],
        output_tokens=[u.completion if u is not None else None for u in usage],
        cost_usd=cost,
        errors=errors,
        error_kinds=dict.fromkeys(errors, "infra"),
        scorer_scores=_scorer_columns(rows),
        texts=texts,
        lines=lines,
        input_hash=input_hash,
        extra=_extra_columns(data, export, extra, n),
        status="complete",
        config=config,
        started_at=started_at,
        finished_at=finished_at,
    )
