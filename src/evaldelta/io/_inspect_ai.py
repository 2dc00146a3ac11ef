"""Reader for Inspect AI eval logs: the ``.eval`` zip and the ``.json`` document.

One record per sample and epoch. What each field means here:

- test id: the sample's ``id`` (a number becomes a string); attempt: its ``epoch``
- target: the log's model (``eval.model``)
- scorers: each entry of the sample's ``scores``. ``"C"``/``"I"``/``"P"``/``"N"`` are
  1/0/0.5/0 and ``yes``/``true``/``no``/``false`` 1 and 0 (the letters and words of
  Inspect's ``value_to_float``), numbers and booleans as they are; a dict value becomes
  one scorer per key (``judge.accuracy``). A null value (Inspect's "unscored") leaves
  that scorer absent for the sample. Anything else (another string, even a numeric one
  such as ``"0.5"``, a list, a nested dict) is an error naming the sample, its epoch and
  the scorer: the same rule as every reader's, nothing dropped or guessed
- score: the mean of the sample's scorers (the scorer itself when there is one); an
  attempt with an error and no score scores 0
- latency: ``total_time`` (seconds, as ms) with ``total_time - working_time`` as
  ``wait_ms``, so the latency compared is Inspect's working time, which leaves out
  waiting for rate limits, retries and concurrency slots
- tokens and cost: the sums over the sample's ``model_usage`` (every model the sample
  called, graders included) of ``input_tokens``, ``output_tokens`` and ``total_cost``
  (Inspect's ``input_tokens`` leaves out cache reads and writes)
- errors: a sample ``error`` is an infrastructure failure (``error_kind`` "infra")
- run status: ``success`` is complete; ``cancelled``, ``error`` and ``started`` (a log
  still being written, or whose writer died) are interrupted
- config: model, task, task version and arguments, dataset, the plan (solvers and
  their parameters), generation settings and the per-sample limits
- input fingerprint: the sample's ``input`` without Inspect's per-run message ids
- text, only when asked for: ``input``, the output's text, ``target``, ``metadata``

Newer ``.eval`` files (Inspect 0.3.206 on) compress their members with zstd, which
Python's ``zipfile`` reads only from Python 3.14. Such a file is read with Inspect's
own ``inspect_ai.log.read_eval_log`` when the package is installed
(``pip install 'evaldelta[inspect]'``).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import io
import math
import re
import zipfile
import zlib
from pathlib import Path
from types import GenericAlias
from typing import Any, cast

import msgspec

from evaldelta.errors import InputError, ParseError
from evaldelta.io._agentv import ATTEMPT_MAX, ATTEMPT_MIN
from evaldelta.io._errors import explain_expected
from evaldelta.io._reader import (
    ReadOptions,
    decoded,
    error_text,
    reader,
    struct_extra_columns,
    with_extra_fields,
)
from evaldelta.io._source import (
    LIMITS,
    check_utf8,
    fingerprint,
    line_too_long,
    paused_gc,
    read_bounded,
    read_bytes,
)
from evaldelta.model import Run

NAME = "inspect"

#: What ``pip install`` needs to read zstd-compressed ``.eval`` files.
INSTALL_HINT = "pip install 'evaldelta[inspect]'"

#: Score letters Inspect's scorers use, as numbers (``value_to_float``'s defaults).
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}

#: Log statuses of a run that finished.
COMPLETE_STATUSES = frozenset({"success"})

#: Per-sample limits of the eval config that change what a sample may do. (Epochs are
#: not among them: they are the attempts, which the comparison counts itself.)
LIMIT_SETTINGS = (
    "message_limit",
    "token_limit",
    "time_limit",
    "working_limit",
    "cost_limit",
)

_ZSTD_METHOD = 93
_READABLE_METHODS = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
    | ({_ZSTD_METHOD} if hasattr(zipfile, "ZIP_ZSTANDARD") else set())
)
_SAMPLE_MEMBER = re.compile(r"samples/[^/]+\.json")
_JSON_LOG_START = re.compile(rb'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"')


class _Usage(msgspec.Struct, gc=False):
    input_tokens: float | None = None
    output_tokens: float | None = None
    total_cost: float | None = None


class _Score(msgspec.Struct, gc=False):
    value: Any = None


class _Sample(msgspec.Struct, gc=False):
    """The fields of a sample we read; messages, events and the rest are skipped unparsed."""

    id: str | int | None = None
    epoch: int | None = None
    # Kept undecoded until fingerprinted: only then is it worth building.
    input: msgspec.Raw = msgspec.Raw(b"")
    scores: dict[str, _Score] | None = None
    model_usage: dict[str, _Usage] | None = None
    total_time: float | None = None
    working_time: float | None = None
    error: Any = None


class _Message(msgspec.Struct, gc=False):
    content: Any = None


class _Choice(msgspec.Struct, gc=False):
    message: _Message | None = None


class _Output(msgspec.Struct, gc=False):
    completion: str | None = None
    choices: list[_Choice] | None = None


class _SampleWithText(_Sample, gc=False):
    target: Any = None
    output: _Output | None = None
    metadata: dict[str, Any] | None = None


class _Dataset(msgspec.Struct, gc=False):
    """``eval.dataset``: the dataset's name and where it was read from."""

    name: str | None = None
    location: str | None = None


class _Spec(msgspec.Struct, gc=False):
    """``eval`` of a log's header: model, task, dataset and their arguments."""

    model: str | None = None
    task: str | None = None
    task_version: Any = None
    task_args: dict[str, Any] | None = None
    dataset: _Dataset | None = None
    model_args: dict[str, Any] | None = None
    model_generate_config: dict[str, Any] | None = None
    config: dict[str, Any] | None = None
    created: str | None = None


class _Step(msgspec.Struct, gc=False):
    solver: str | None = None
    params: dict[str, Any] | None = None


class _Plan(msgspec.Struct, gc=False):
    """``plan``: the solver steps and the generation config the task ran with."""

    steps: list[_Step] | None = None
    config: dict[str, Any] | None = None


class _Stats(msgspec.Struct, gc=False):
    """``stats``: when the eval started and completed."""

    started_at: str | None = None
    completed_at: str | None = None


class _Header(msgspec.Struct, gc=False):
    """``header.json`` of a ``.eval`` (and ``_journal/start.json``, which lacks a status)."""

    status: str | None = None
    eval: _Spec | None = None
    plan: _Plan | None = None
    stats: _Stats | None = None


_HEADER = msgspec.json.Decoder(_Header)


def sniff(path: Path, head: bytes) -> bool:
    """True for an Inspect ``.eval`` zip, or a ``.json`` log (``{"version": N, "status": ...``)."""
    if head.startswith(b"PK\x03\x04"):
        return path.suffix == ".eval" or b"_journal/start.json" in head or b"header.json" in head
    return bool(_JSON_LOG_START.match(head)) and b'"eval"' in head


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read an Inspect AI log (``.eval`` or ``.json``) into a :class:`Run`.

    ``extra_fields``: further sample fields to keep, looked up at the top of the sample,
    then in its ``metadata``. ``mapping`` does not apply to this fixed format.
    """
    src = str(path)
    keep_text, extra, _ = options
    sample_type = _sample_type(keep_text, extra)
    data = read_bytes(path)
    with paused_gc():
        if data.startswith(b"PK\x03\x04"):
            header, samples = _read_eval(src, path, data, sample_type)
        else:
            check_utf8(src, data)
            header, samples = _read_json(src, data, sample_type)
        return _to_run(src, header, samples, keep_text, extra)


# -- reading the two containers ---------------------------------------------------------


def _sample_type(keep_text: bool, extra: tuple[str, ...]) -> type[_Sample]:
    """The struct of a sample, with any extra fields the caller asked for."""
    base: type[_Sample] = _SampleWithText if keep_text or extra else _Sample
    return with_extra_fields(base, extra, "_SampleExtra")


@functools.cache
def _log_type(sample_type: type[_Sample]) -> type[_Header]:
    """A whole ``.json`` log: the header and its samples."""
    samples = GenericAlias(list, (sample_type,)) | None
    log = msgspec.defstruct("_Log", [("samples", samples, None)], bases=(_Header,), gc=False)
    return cast("type[_Header]", log)


def _read_json(
    src: str, data: bytes, sample_type: type[_Sample]
) -> tuple[_Header, list[tuple[str, _Sample]]]:
    """A ``.json`` log: one document holding the header and every sample."""
    try:
        log: Any = msgspec.json.decode(data, type=_log_type(sample_type))
    except msgspec.ValidationError as err:
        raise ParseError(src, None, _explain(str(err))) from None
    except msgspec.DecodeError as err:
        raise ParseError(
            src, None, f"is not valid JSON ({err}); write the log again with Inspect"
        ) from None
    samples = [(f"samples[{i}]", s) for i, s in enumerate(log.samples or ())]
    return log, samples


def _read_eval(
    src: str, path: Path, data: bytes, sample_type: type[_Sample]
) -> tuple[_Header, list[tuple[str, _Sample]]]:
    """A ``.eval`` log: a zip of ``header.json`` and one ``samples/ID_epoch_N.json`` each."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ParseError(
            src, None, f"is not a readable .eval file ({exc}); copy the log again"
        ) from None
    with archive:
        names = set(archive.namelist())
        if any(info.compress_type not in _READABLE_METHODS for info in archive.infolist()):
            return _read_json(src, _with_inspect(src, path, archive), sample_type)
        decoder = msgspec.json.Decoder(sample_type)
        if "header.json" in names:
            header = _decode_member(src, archive, "header.json", _HEADER)
        elif "_journal/start.json" in names:
            # No header yet: the log is still being written, or its writer died.
            header = _decode_member(src, archive, "_journal/start.json", _HEADER)
            header.status = "started"
        else:
            raise ParseError(
                src,
                None,
                "has neither header.json nor _journal/start.json, so it is not an Inspect "
                "log; pass the .eval file Inspect wrote",
            )
        samples = [
            (name, _decode_member(src, archive, name, decoder))
            for name in archive.namelist()
            if _SAMPLE_MEMBER.fullmatch(name)
        ]
    return header, samples


def _decode_member(
    src: str, archive: zipfile.ZipFile, name: str, decoder: msgspec.json.Decoder[Any]
) -> Any:
    try:
        # The member's stated size can lie: read at most the limit, and refuse past it.
        with archive.open(name) as fh:
            raw = read_bounded(
                fh, LIMITS.line_bytes, lambda: line_too_long(src, None, f"member {name} is")
            )
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError) as exc:
        raise ParseError(
            src, None, f"{name}: cannot be unpacked ({exc}); copy the log again"
        ) from None
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as err:
        raise ParseError(src, None, f"{name}: {_explain(str(err))}") from None
    except msgspec.DecodeError as err:
        raise ParseError(
            src, None, f"{name}: is not valid JSON ({err}); write the log again with Inspect"
        ) from None


def _with_inspect(src: str, path: Path, archive: zipfile.ZipFile) -> bytes:
    """The whole log as JSON, read by Inspect itself (for members zipfile cannot unpack)."""
    methods = {i.compress_type for i in archive.infolist()} - _READABLE_METHODS
    if importlib.util.find_spec("inspect_ai") is None:
        if _ZSTD_METHOD in methods:
            raise InputError(
                f"{src}: its members are compressed with zstd (Inspect 0.3.206 and later), "
                "which Python's zipfile reads only from Python 3.14; install Inspect AI's "
                f"reader: {INSTALL_HINT}"
            )
        listed = ", ".join(str(m) for m in sorted(methods))
        raise InputError(
            f"{src}: its members use a zip compression method ({listed}) that Python's "
            f"zipfile cannot unpack; install Inspect AI's reader: {INSTALL_HINT}"
        )
    try:
        log = importlib.import_module("inspect_ai.log").read_eval_log(str(path))
        dumped: str | bytes = log.model_dump_json(exclude_none=True)
    except Exception as exc:  # whatever Inspect raises, the user needs the file named
        raise ParseError(
            src, None, f"Inspect AI could not read it ({exc}); check it opens in `inspect view`"
        ) from exc
    return dumped.encode() if isinstance(dumped, str) else dumped


# -- from samples to a run --------------------------------------------------------------


def _id_key(sample: _Sample) -> tuple[int, int, str, int]:
    """Samples by id (numbers before strings), then by epoch: the same order whichever
    container, and whatever order the zip holds its members in."""
    sid, epoch = sample.id, sample.epoch or 0
    if isinstance(sid, int):
        return (0, sid, "", epoch)
    return (1, 0, str(sid), epoch)


def _to_run(
    src: str,
    header: _Header,
    located: list[tuple[str, _Sample]],
    keep_text: bool,
    extra: tuple[str, ...],
) -> Run:
    spec = header.eval
    if spec is None or not spec.model:
        raise ParseError(
            src,
            None,
            'has no "eval.model", so the target is unknown; pass the log as Inspect wrote it',
        )
    if not located:
        raise ParseError(
            src,
            None,
            "has no samples: the log keeps only the summary (written with "
            "--no-log-samples?); re-run the eval with samples logged",
        )
    for where, s in located:
        if s.id is None or s.id == "":
            raise ParseError(src, None, f'{where}: sample has no "id"; every sample needs one')
        if s.epoch is None:
            raise ParseError(
                src, None, f'{where}: sample {s.id!r} has no "epoch"; every sample needs one'
            )
        if not ATTEMPT_MIN <= s.epoch <= ATTEMPT_MAX:
            raise ParseError(
                src,
                None,
                f'{where}: sample {s.id!r} has "epoch" {s.epoch}, beyond the 64-bit whole '
                f"numbers ({ATTEMPT_MIN} to {ATTEMPT_MAX}); epochs count 1, 2, 3, ...",
            )
    located.sort(key=lambda pair: _id_key(pair[1]))
    samples = [s for _, s in located]
    n = len(samples)

    errors: dict[int, str] = {}
    for i, s in enumerate(samples):
        text = _error_text(s.error)
        if text is not None:
            errors[i] = text

    per_record: list[dict[str, float]] = []
    scores: list[float] = []
    for i, s in enumerate(samples):
        values, unusable = _scorer_values(s.scores)
        if unusable:
            raise ParseError(
                src,
                None,
                f"sample {s.id!r}, epoch {s.epoch}: {unusable[0]} is not a score; Inspect "
                "scores are C/I/P/N, yes/no/true/false, numbers, booleans, or dicts of them "
                "(a null is left out)",
            )
        per_record.append(values)
        if values:
            scores.append(sum(values.values()) / len(values))
        elif i in errors:
            scores.append(0.0)
        else:
            raise ParseError(src, None, _no_score(s, unusable))
    names = dict.fromkeys(k for values in per_record for k in values)
    scorer_scores = {name: [v.get(name) for v in per_record] for name in names}

    latency: list[float | None] = []
    wait: list[float | None] = []
    for s in samples:
        total, working = s.total_time, s.working_time
        if total is not None:
            latency.append(total * 1000.0)
            wait.append(None if working is None else max(total * 1000.0 - working * 1000.0, 0.0))
        else:
            latency.append(None if working is None else working * 1000.0)
            wait.append(None)

    usage = [_usage_sums(s.model_usage) for s in samples]
    texts = None
    if keep_text:
        with_text: list[Any] = samples
        texts = {
            "input": [decoded(s.input) for s in samples],
            "output": [_output_text(s.output) for s in with_text],
            "expected": [s.target for s in with_text],
            "metadata": [s.metadata for s in with_text],
        }
    status = header.status or "success"
    stats = header.stats or _Stats()
    return Run.from_columns(
        source=src,
        format=NAME,
        status="complete" if status in COMPLETE_STATUSES else "interrupted",
        config=_config(header),
        started_at=stats.started_at or spec.created,
        finished_at=stats.completed_at,
        input_hash=[_input_hash(s.input) for s in samples],
        extra=_extra_columns(samples, extra),
        test_id=[s.id if isinstance(s.id, str) else str(s.id) for s in samples],
        score=scores,
        target=[spec.model] * n,
        attempt=[s.epoch for s in samples],
        latency_ms=latency,
        wait_ms=wait,
        input_tokens=[u[0] for u in usage],
        output_tokens=[u[1] for u in usage],
        cost_usd=[u[2] for u in usage],
        errors=errors,
        error_kinds=dict.fromkeys(errors, "infra"),
        scorer_scores=scorer_scores,
        texts=texts,
    )


def _as_number(value: Any) -> float | None:
    """A score value as a number, the way Inspect's ``value_to_float`` reads it; ``None``
    when it is not one (null is Inspect's "unscored")."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        if value in LETTERS:
            return LETTERS[value]
        word = value.strip().lower()
        if word in ("yes", "true"):
            return 1.0
        if word in ("no", "false"):
            return 0.0
    return None


def _scorer_values(scores: dict[str, _Score] | None) -> tuple[dict[str, float], list[str]]:
    """Scorer name -> number for one sample, and the values that are not numbers (a
    null is no value: that scorer is absent for the sample)."""
    values: dict[str, float] = {}
    unusable: list[str] = []

    def put(name: str, value: Any) -> None:
        number = _as_number(value)
        if number is not None:
            values[name] = number
        elif value is not None:
            unusable.append(f"scorer {name} = {msgspec.json.encode(value).decode()}")

    for name, score in (scores or {}).items():
        value = score.value
        if isinstance(value, dict):
            for key, part in value.items():
                put(f"{name}.{key}", part)
        else:
            put(name, value)
    return values, unusable


def _no_score(sample: _Sample, unusable: list[str]) -> str:
    what = f"sample {sample.id!r}, epoch {sample.epoch}"
    return f'{what}: has no "scores" and no "error"; score the log first (inspect score LOG)'


def _error_text(value: Any) -> str | None:
    """What a sample's ``error`` says; a ``false`` or ``[]`` there is said as it is."""
    if value is False or value == []:
        return msgspec.json.encode(value).decode()
    return error_text(value)


def _usage_sums(
    usage: dict[str, _Usage] | None,
) -> tuple[float | None, float | None, float | None]:
    """Input tokens, output tokens and cost over every model a sample called."""
    if not usage:
        return None, None, None

    def total(values: list[float | None]) -> float | None:
        present = [v for v in values if v is not None]
        return sum(present) if present else None

    models = list(usage.values())
    return (
        total([u.input_tokens for u in models]),
        total([u.output_tokens for u in models]),
        total([u.total_cost for u in models]),
    )


def _without_ids(value: Any) -> Any:
    """The input with Inspect's message ids removed: they are new on every run."""
    if isinstance(value, list):
        return [
            {k: v for k, v in m.items() if k != "id"} if isinstance(m, dict) else m for m in value
        ]
    return value


def _input_hash(raw: msgspec.Raw) -> int:
    """CRC-32 of the input, serialised the same way whatever file it came from."""
    if not len(raw):
        return 0
    return fingerprint(_without_ids(msgspec.json.decode(raw)))


def _content_text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            c["text"]
            for c in content
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        ]
        return "".join(parts) if parts else None
    return None


def _output_text(output: _Output | None) -> str | None:
    if output is None:
        return None
    if output.completion:
        return output.completion
    for choice in output.choices or ():
        if choice.message is not None:
            return _content_text(choice.message.content)
    return None


def _config(header: _Header) -> dict[str, Any]:
    """The settings the log declares, one key each, for the fairness checks."""
    spec = header.eval or _Spec()
    config: dict[str, Any] = {"model": spec.model, "task": spec.task}
    if spec.task_version is not None:
        config["task_version"] = spec.task_version
    for key, value in (spec.task_args or {}).items():
        config[f"task_args.{key}"] = value
    if spec.dataset is not None and (spec.dataset.name or spec.dataset.location):
        config["dataset"] = spec.dataset.name or spec.dataset.location
    if spec.model_args:
        config["model_args"] = spec.model_args
    plan = header.plan
    if plan is not None and plan.steps:
        config["plan"] = [{"solver": s.solver, "params": s.params or {}} for s in plan.steps]
    # The model's own generation settings, overridden by those given to the eval.
    generate = {**(spec.model_generate_config or {}), **((plan.config if plan else None) or {})}
    config.update({k: v for k, v in generate.items() if v is not None})
    eval_config = spec.config or {}
    config.update({k: eval_config[k] for k in LIMIT_SETTINGS if eval_config.get(k) is not None})
    return config


def _extra_columns(samples: list[_Sample], extra: tuple[str, ...]) -> dict[str, list[Any]]:
    """Each extra field from the top of the sample, else from its metadata."""

    def from_metadata(sample: Any, name: str) -> Any:
        return (getattr(sample, "metadata", None) or {}).get(name)

    return struct_extra_columns(samples, extra, from_metadata)


def _explain(message: str) -> str:
    """msgspec's validation message, in the reader's words."""
    return explain_expected(
        message, what="an Inspect log", mend="pass the log as Inspect wrote it", whole="the log"
    )
