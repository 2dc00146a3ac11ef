"""Reader for OpenAI evals results, in both of their JSON Lines shapes.

**The legacy ``oaieval`` event log** (``openai/evals``): a ``{"spec": ...}`` line, then
events ``{"run_id", "event_id", "sample_id", "type", "data", "created_at"}``, and a
``{"final_report": ...}`` line written when the run ends (events are flushed in batches,
so it may come before them). Each ``match`` event is one attempt:

- test id: ``sample_id`` (``<eval>.<split>.<index>``); a sample with several match
  events has several attempts, in the order of the file.
- passed: ``data.correct``; score 1 or 0 accordingly. An ``error`` event of a sample
  without a match event is an infrastructure failure (the sample did not run).
- tokens: ``usage`` of the sample's ``sampling`` events (``prompt_tokens``,
  ``completion_tokens``), summed (paired one to one when a sample has as many
  samplings as matches). The log records no latency and no cost.
- target: the spec's ``completion_fns``, joined by ``,``; config: ``model`` (the same),
  ``eval`` (``eval_name``), ``eval_class``, ``eval_args`` (the samples file among
  them), ``seed``, ``max_samples``. A run without its ``final_report`` line did not
  finish: its status is ``interrupted``. Start and finish: the first and last events'
  ``created_at`` (UTC).
- text, when asked for: input = the first sampling's ``prompt`` (which ``input_hash``
  fingerprints), output = ``sampled``, expected = ``expected``.

**Platform eval run output items**: one line per item, as the Evals API lists them
(``datasource_item_id``, ``results[]``, ``sample``), or as the dashboard exports them
(``data_source_idx``, ``grades``, ``passes``, ``sample.token_usage``):

- test id: ``datasource_item_id`` (else ``data_source_idx``), the item's place in the
  data source: the same across runs of the same data.
- scorers: ``results[].name`` -> ``score`` (else ``grades``); the platform gives no
  overall score, so a record's score is the **mean of its grader scores**. Graders on
  different scales (a 1-7 model grade beside a 0/1 check) make that mean hard to read:
  compare with ``--scorer`` then. passed: every grader passed (``results[].passed``,
  else ``passes``).
- a ``sample.error`` with a message or code is an infrastructure failure (the model
  never answered); such an item scores 0.
- tokens: ``sample.usage`` (else ``sample.token_usage``). No latency, no cost.
- target: ``sample.model`` (else ``sample.sampled_model_name``); when the file holds
  several runs of one model, the run id is appended (``"gpt-4.1 (evalrun_...)"``).
  config: ``model``, and the sampling settings every item shares (``temperature``,
  ``top_p``, ``max_completion_tokens``, ``seed``). Start: the earliest ``created_at``.
- text, when asked for: input = the data source item (which ``input_hash``
  fingerprints), output = the sample's output.

``extra_fields`` are looked up in each record's line, then in its ``data`` (log) or its
data source item (output items). ``mapping`` (``--map``) is ignored. ``input_hash`` is
a CRC-32 of the input's UTF-8 text when it is a string, else of its sorted-key JSON.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import ParseError
from evaldelta.io._errors import explain_validation
from evaldelta.io._reader import (
    RAW_NONE,
    ReadOptions,
    decode_lines,
    decoded,
    extra_columns,
    read_content,
    reader,
)
from evaldelta.io._source import crc_of, paused_gc, raw_fingerprint_bytes
from evaldelta.model import Run

NAME = "openai-evals"


class _Usage(msgspec.Struct, gc=False):
    """Token counts of a sample, in the Chat Completions or the Responses API's names."""

    prompt_tokens: float | None = None
    completion_tokens: float | None = None
    input_tokens: float | None = None
    output_tokens: float | None = None

    def tokens_in(self) -> float | None:
        return self.prompt_tokens if self.prompt_tokens is not None else self.input_tokens

    def tokens_out(self) -> float | None:
        return self.completion_tokens if self.completion_tokens is not None else self.output_tokens


# -- the legacy oaieval log ---------------------------------------------------------------


class _EvalSpec(msgspec.Struct, gc=False):
    cls: str | None = None
    args: dict[str, Any] | None = None


class _RunConfig(msgspec.Struct, gc=False):
    """``run_config`` of a log's spec line: the eval's class, seed and sample cap."""

    eval_spec: _EvalSpec | None = None
    seed: int | None = None
    max_samples: int | None = None


class _Spec(msgspec.Struct, gc=False):
    """The ``spec`` line of an evals log: run id, completion functions, eval name."""

    run_id: str | None = None
    completion_fns: list[str] | None = None
    eval_name: str | None = None
    run_config: _RunConfig | None = None


class _LogLine(msgspec.Struct, gc=False):
    """A spec line, a final report line or an event; ``data`` is decoded by type later
    (only the events read here), so other events' data are skipped unparsed."""

    spec: _Spec | None = None
    final_report: msgspec.Raw = RAW_NONE
    run_id: str | None = None
    sample_id: str | None = None
    type: str | None = None
    data: msgspec.Raw = RAW_NONE
    created_at: str | None = None


class _Match(msgspec.Struct, gc=False):
    correct: bool | None = None
    expected: msgspec.Raw = RAW_NONE
    sampled: msgspec.Raw = RAW_NONE


class _Sampling(msgspec.Struct, gc=False):
    prompt: msgspec.Raw = RAW_NONE
    sampled: msgspec.Raw = RAW_NONE
    usage: _Usage | None = None


class _Error(msgspec.Struct, gc=False):
    type: Any = None
    message: Any = None


# -- platform output items ----------------------------------------------------------------


class _Result(msgspec.Struct, gc=False):
    """One grader's result on an item of an Evals API run."""

    name: str | None = None
    score: float | None = None
    passed: bool | None = None


class _SampleError(msgspec.Struct, gc=False):
    """An item's ``sample.error``: a failed call (counted as infrastructure)."""

    code: str | None = None
    type: str | None = None
    message: str | None = None


class _Sample(msgspec.Struct, gc=False):
    """An item's ``sample``: the model's answer, its usage and generation settings."""

    model: str | None = None
    sampled_model_name: str | None = None
    usage: _Usage | None = None
    token_usage: _Usage | None = None
    error: _SampleError | str | None = None
    output: msgspec.Raw = RAW_NONE
    outputs: msgspec.Raw = RAW_NONE
    temperature: float | None = None
    top_p: float | None = None
    max_completion_tokens: int | None = None
    seed: int | None = None


class _Item(msgspec.Struct, gc=False):
    """One output item; every other field is skipped unparsed (``gc=False``: no cycles)."""

    run_id: str | None = None
    created_at: float | None = None
    datasource_item_id: int | str | None = None
    datasource_item: msgspec.Raw = RAW_NONE
    results: list[_Result] | None = None
    data_source_idx: int | str | None = None
    item: msgspec.Raw = RAW_NONE
    grades: dict[str, float | None] | None = None
    passes: dict[str, bool | None] | None = None
    sample: _Sample | None = None


_LOG = msgspec.json.Decoder(_LogLine)
_ITEM = msgspec.json.Decoder(_Item)
_MATCH = msgspec.json.Decoder(_Match)
_SAMPLING = msgspec.json.Decoder(_Sampling)
_ERROR = msgspec.json.Decoder(_Error)


def _key(name: str) -> re.Pattern[bytes]:
    return re.compile(rb'"' + name.encode() + rb'"\s*:')


_SPEC = re.compile(rb'^\{\s*"spec"\s*:')
_SPEC_KEYS = (_key("completion_fns"), _key("eval_name"))
_EVENT_KEYS = (_key("run_id"), _key("event_id"), _key("sample_id"), _key("type"))
_API_ITEM = (_key("datasource_item_id"), _key("results"))
_EXPORT_ITEM = (_key("data_source_idx"), _key("item"))
_EXPORT_GRADES = (_key("grades"), _key("passes"))


_BLANK = re.compile(rb"\s*")


def _first_line(data: bytes) -> bytes:
    """The first non-blank line, stripped (copying that line only, not the file)."""
    start = _BLANK.match(data).end()  # type: ignore[union-attr]  # \s* always matches
    end = data.find(b"\n", start)
    return data[start : end if end >= 0 else len(data)].strip()


def _is_log(first: bytes) -> bool:
    if _SPEC.match(first):
        return any(k.search(first) for k in _SPEC_KEYS)
    return all(k.search(first) for k in _EVENT_KEYS)


def _is_items(first: bytes) -> bool:
    if b'"eval.run.output_item"' in first or all(k.search(first) for k in _API_ITEM):
        return True
    return all(k.search(first) for k in _EXPORT_ITEM) and any(
        k.search(first) for k in _EXPORT_GRADES
    )


def sniff(path: Path, head: bytes) -> bool:
    """True when the first line is an ``oaieval`` spec or event, or a platform output
    item (``datasource_item_id`` and ``results``, or ``data_source_idx``, ``item`` and
    ``grades``/``passes``)."""
    first = _first_line(head)
    return first.startswith(b"{") and first != b"{" and (_is_log(first) or _is_items(first))


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read an ``oaieval`` log or platform output items into a :class:`Run`."""
    src, data = read_content(path, "no results to compare; check the eval wrote its results")
    keep_text, extra, _ = options
    with paused_gc():
        if _is_log(_first_line(data)):
            lines, numbers = _decode(src, data, _LOG, "an oaieval event")
            return _log_to_run(src, data, lines, numbers, keep_text, extra)
        items, numbers = _decode(src, data, _ITEM, "an eval run output item")
        return _items_to_run(src, data, items, numbers, keep_text, extra)


# -- decoding -------------------------------------------------------------------------------


def _decode(
    src: str, data: bytes, decoder: msgspec.json.Decoder[Any], what: str
) -> tuple[list[Any], Sequence[int]]:
    """Every line, decoded, with its line number (the fast way when lines are plain)."""

    def explain(err: ValueError, line: bytes) -> str:
        if isinstance(err, msgspec.ValidationError):
            return explain_validation(str(err), line, not_an_object=f"each line must be {what}")
        detail = str(err).replace("JSON is malformed: ", "")
        if detail == "Input data was truncated":
            detail = "the line ends before the JSON object does"
        return f"not valid JSON ({detail}); each line must be {what}"

    return decode_lines(src, data, decoder, explain)


def _data(
    src: str, line: int, raw: msgspec.Raw, decoder: msgspec.json.Decoder[Any], kind: str
) -> Any:
    """An event's ``data``, decoded as its type says."""
    try:
        return decoder.decode(raw if len(raw) else b"{}")
    except msgspec.ValidationError as err:
        hint = f'the "data" of a "{kind}" event must be one'
        message = explain_validation(str(err), bytes(raw), not_an_object=hint, prefix="data.")
        raise ParseError(src, line, f'"{kind}" event: {message}') from None


# -- shared -----------------------------------------------------------------------------------


def _iso(stamp: str | None) -> str | None:
    """oaieval's ``str(datetime)`` (``2023-04-17 22:10:13.1+00:00``) as ISO 8601."""
    return stamp.replace(" ", "T", 1) if stamp else None


def _extra_columns(
    data: bytes, lines: Sequence[int], names: tuple[str, ...], inner: tuple[str, ...]
) -> dict[str, list[Any]]:
    """The ``extra_fields`` asked for: from each record's line, else from its ``inner``
    objects (an event's data, an item's data source item)."""
    if not names:
        return {}
    text = data.split(b"\n")
    objects = [msgspec.json.decode(text[n - 1]) for n in lines]
    return extra_columns(objects, names, lambda obj: (obj.get(key) for key in inner))


def _summed(usages: list[_Usage]) -> tuple[float | None, float | None]:
    """Input and output tokens summed over ``usages`` (``None`` when none counts them)."""
    ins = [x for u in usages if (x := u.tokens_in()) is not None]
    outs = [x for u in usages if (x := u.tokens_out()) is not None]
    return (sum(ins) if ins else None), (sum(outs) if outs else None)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


# -- the legacy log, to a run ------------------------------------------------------------------


def _spec_config(spec: _Spec) -> dict[str, Any]:
    rc = spec.run_config
    es = rc.eval_spec if rc is not None else None
    config = {
        "model": ",".join(spec.completion_fns) if spec.completion_fns else None,
        "eval": spec.eval_name,
        "eval_class": es.cls if es is not None else None,
        "eval_args": es.args if es is not None else None,
        "seed": rc.seed if rc is not None else None,
        "max_samples": rc.max_samples if rc is not None else None,
    }
    return {k: v for k, v in config.items() if v is not None}


def _merged(configs: list[dict[str, Any]]) -> dict[str, Any]:
    """One config for the runs of a file: a setting they share, or the list of them."""
    if len(configs) == 1:
        return configs[0]
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for c in configs for k in c):
        values = [c.get(key) for c in configs]
        distinct = [v for i, v in enumerate(values) if v not in values[:i]]
        out[key] = distinct[0] if len(distinct) == 1 else distinct
    return out


def _log_to_run(
    src: str,
    data: bytes,
    lines: list[_LogLine],
    numbers: Sequence[int],
    keep_text: bool,
    extra: tuple[str, ...],
) -> Run:
    specs: dict[str | None, _Spec] = {}
    reports = 0
    # Per sample: its samplings, its matches (record order) and its errors.
    samplings: dict[str, list[_Sampling]] = {}
    matches: list[tuple[int, _LogLine, _Match]] = []
    failed: dict[str, tuple[int, _LogLine, str]] = {}
    stamps: list[str] = []
    for line, ev in zip(numbers, lines, strict=True):
        if ev.spec is not None:
            specs[ev.spec.run_id] = ev.spec
            continue
        if len(ev.final_report):
            reports += 1
            continue
        if ev.created_at:
            stamps.append(ev.created_at)
        if ev.type not in ("match", "sampling", "error"):
            continue
        if not ev.sample_id:
            raise ParseError(
                src,
                line,
                f'"{ev.type}" event has no "sample_id"; every event of a sample needs one',
            )
        if ev.type == "match":
            matches.append((line, ev, _data(src, line, ev.data, _MATCH, "match")))
        elif ev.type == "sampling":
            sampling = _data(src, line, ev.data, _SAMPLING, "sampling")
            samplings.setdefault(ev.sample_id, []).append(sampling)
        elif ev.sample_id not in failed:
            err = _data(src, line, ev.data, _ERROR, "error")
            message = ": ".join(str(p) for p in (err.type, err.message) if p) or "error event"
            failed[ev.sample_id] = (line, ev, message)

    matched = {ev.sample_id for _, ev, _ in matches}
    records: list[tuple[int, _LogLine, _Match | None]] = [(ln, ev, m) for ln, ev, m in matches]
    records += [(ln, ev, None) for sid, (ln, ev, _) in failed.items() if sid not in matched]
    if not records:
        raise ParseError(
            src,
            None,
            'has no "match" events: evaldelta reads pass/fail from oaieval\'s match events '
            "(a model-graded eval records metrics instead); convert the results to JSONL "
            "with test_id and score",
        )
    if len(records) > len(matches):
        records.sort(key=lambda r: r[0])
    n = len(records)

    target_of = {
        run_id: ",".join(spec.completion_fns) if spec.completion_fns else None
        for run_id, spec in specs.items()
    }
    if len(specs) == 1:
        targets = [next(iter(target_of.values()))] * n
    else:
        targets = [target_of.get(ev.run_id) for _, ev, _ in records]

    test_ids: list[str] = []
    passed: list[bool | None] = []
    errors: dict[int, str] = {}
    input_tokens: list[float | None] = []
    output_tokens: list[float | None] = []
    match_count: dict[str, int] = {}
    for _, ev, _ in matches:
        match_count[ev.sample_id or ""] = match_count.get(ev.sample_id or "", 0) + 1
    seen: dict[str, int] = {}
    for i, (ln, ev, m) in enumerate(records):
        sid = ev.sample_id or ""
        test_ids.append(sid)
        if m is None:
            errors[i] = failed[sid][2]
            passed.append(None)
        elif m.correct is None:
            raise ParseError(
                src,
                ln,
                f'match event of sample {sid!r} has no "data.correct"; '
                "it must say whether the answer was right (true or false)",
            )
        else:
            passed.append(m.correct)
        usages = [s.usage for s in samplings.get(sid, ()) if s.usage is not None]
        count = match_count.get(sid, 0)
        k = seen[sid] = seen.get(sid, 0) + 1
        if count > 1:
            # One sampling per match: pair them in order; else which is whose is unknown.
            usages = [usages[k - 1]] if len(usages) == count else []
        tokens_in, tokens_out = _summed(usages)
        input_tokens.append(tokens_in)
        output_tokens.append(tokens_out)

    prompts = {sid: ss[0].prompt for sid, ss in samplings.items() if ss and len(ss[0].prompt)}
    canon_cache = {sid: raw_fingerprint_bytes(raw) for sid, raw in prompts.items()}
    input_hash = [crc_of(canon_cache.get(t, b"")) for t in test_ids]

    texts = None
    if keep_text:
        first_sampled = {sid: ss[0].sampled for sid, ss in samplings.items() if ss}
        texts = {
            "input": [decoded(prompts[t]) if t in prompts else None for t in test_ids],
            "output": [
                decoded(m.sampled)
                if m is not None and len(m.sampled)
                else decoded(first_sampled.get(ev.sample_id or "", RAW_NONE))
                for _, ev, m in records
            ],
            "expected": [decoded(m.expected) if m is not None else None for _, _, m in records],
            "metadata": [None] * n,
        }

    # Each run writes its final report when it ends: one missing means it did not.
    finished = reports >= max(len(specs), 1)
    return Run.from_columns(
        source=src,
        format=NAME,
        test_id=test_ids,
        score=[1.0 if p else 0.0 for p in passed],  # an error scores 0
        target=targets,
        passed=passed,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        errors=errors,
        error_kinds=dict.fromkeys(errors, "infra"),
        texts=texts,
        lines=[ln for ln, _, _ in records],
        input_hash=input_hash,
        extra=_extra_columns(data, [ln for ln, _, _ in records], extra, ("data",)),
        status="complete" if finished else "interrupted",
        config=_merged([_spec_config(s) for s in specs.values()]) if specs else {},
        # oaieval writes every stamp alike (UTC): as text, they sort as times do.
        started_at=_iso(min(stamps)) if stamps else None,
        finished_at=_iso(max(stamps)) if stamps else None,
    )


# -- platform output items, to a run -----------------------------------------------------------


def _sample_error(sample: _Sample | None) -> str | None:
    """The error of a sample that failed, or ``None`` (the API sends empty ones)."""
    err = sample.error if sample is not None else None
    if not err:
        return None
    if isinstance(err, str):
        return err
    if not err.message and not err.code:
        return None
    kind = err.type or err.code
    return f"{kind}: {err.message}" if kind and err.message else err.message or kind


def _item_targets(items: list[_Item]) -> list[str | None]:
    """The sampled model, with the run id when several runs of one model share the file."""
    models = [
        (s.model or s.sampled_model_name) if (s := it.sample) is not None else None for it in items
    ]
    runs_of: dict[str | None, set[str | None]] = {}
    for it, model in zip(items, models, strict=True):
        runs_of.setdefault(model, set()).add(it.run_id)
    out: list[str | None] = []
    for it, model in zip(items, models, strict=True):
        if len(runs_of[model]) > 1 and it.run_id:
            out.append(f"{model} ({it.run_id})" if model else it.run_id)
        else:
            out.append(model)
    return out


def _items_to_run(
    src: str,
    data: bytes,
    items: list[_Item],
    numbers: Sequence[int],
    keep_text: bool,
    extra: tuple[str, ...],
) -> Run:
    n = len(items)
    test_ids: list[str] = []
    for it, line in zip(items, numbers, strict=True):
        tid = it.datasource_item_id if it.datasource_item_id is not None else it.data_source_idx
        if tid is None or tid == "":
            raise ParseError(
                src,
                line,
                'output item has no "datasource_item_id" (nor "data_source_idx"); every '
                "item needs the index of its data source item",
            )
        test_ids.append(str(tid))

    scorer_rows: list[dict[str, float]] = []
    scores: list[float] = []
    passed: list[bool | None] = []
    errors: dict[int, str] = {}
    for i, (it, line) in enumerate(zip(items, numbers, strict=True)):
        seen: dict[str, list[float]] = {}
        verdicts: list[bool] = []
        if it.results:
            for r in it.results:
                if r.score is not None:
                    seen.setdefault(r.name or "grader", []).append(r.score)
                if r.passed is not None:
                    verdicts.append(r.passed)
        else:
            for name, score in (it.grades or {}).items():
                if score is not None:
                    seen.setdefault(name, []).append(score)
            verdicts = [p for p in (it.passes or {}).values() if p is not None]
        by_name = {k: _mean(v) for k, v in seen.items()}
        scorer_rows.append(by_name)
        error = _sample_error(it.sample)
        if error is not None:
            errors[i] = error
        if by_name:
            scores.append(_mean(list(by_name.values())))
        elif error is not None:
            scores.append(0.0)  # the model never answered: left out as an infra failure
        else:
            raise ParseError(
                src,
                line,
                f"output item {test_ids[i]!r} has no grader scores "
                '("results[].score" or "grades") and no "sample.error"; '
                "export the run's output items again once grading has finished",
            )
        passed.append(all(verdicts) if verdicts else None)

    names = dict.fromkeys(k for d in scorer_rows for k in d)
    samples = [it.sample for it in items]
    usage = [
        (s.usage if s.usage is not None else s.token_usage) if s is not None else None
        for s in samples
    ]
    canon = [
        raw_fingerprint_bytes(it.datasource_item if len(it.datasource_item) else it.item)
        for it in items
    ]

    texts = None
    if keep_text:
        texts = {
            "input": [
                decoded(it.datasource_item if len(it.datasource_item) else it.item) for it in items
            ],
            "output": [
                (decoded(s.output) if len(s.output) else decoded(s.outputs))
                if s is not None
                else None
                for s in samples
            ],
            "expected": [None] * n,
            "metadata": [None] * n,
        }

    targets = _item_targets(items)
    config: dict[str, Any] = {}
    models = sorted(
        {t for s in samples if s is not None and (t := s.model or s.sampled_model_name)}
    )
    if models:
        config["model"] = models[0] if len(models) == 1 else models
    for setting in ("temperature", "top_p", "max_completion_tokens", "seed"):
        values = {getattr(s, setting) for s in samples if s is not None}
        if len(values) == 1 and None not in values:
            config[setting] = values.pop()
    stamps = [it.created_at for it in items if it.created_at is not None]
    started_at = _iso_time(min(stamps)) if stamps else None

    return Run.from_columns(
        source=src,
        format=NAME,
        test_id=test_ids,
        score=scores,
        target=targets,
        passed=passed,
        input_tokens=[u.tokens_in() if u is not None else None for u in usage],
        output_tokens=[u.tokens_out() if u is not None else None for u in usage],
        errors=errors,
        error_kinds=dict.fromkeys(errors, "infra"),
        scorer_scores={name: [d.get(name) for d in scorer_rows] for name in names},
        texts=texts,
        lines=numbers,
        input_hash=[crc_of(c) for c in canon],
        extra=_extra_columns(data, numbers, extra, ("datasource_item", "item")),
        status="complete",
        config=config,
        started_at=started_at,
    )


def _iso_time(seconds: float) -> str | None:
    """A Unix time as ISO 8601; None for one no calendar holds (as the JSONL reader)."""
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return None
