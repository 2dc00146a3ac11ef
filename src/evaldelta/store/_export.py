"""A run written back as JSON Lines that :func:`evaldelta.load` reads into the same records.

One line per record, in the run's order, with the fields the JSONL reader reads.
The run's own facts ride on the records, as the reader expects them: ``config`` and
``run_status`` on the first record. A :class:`Run` keeps no time per record, only
``started_at`` and ``finished_at`` (the reader's earliest and latest ``timestamp``), so
those two go out as the ``timestamp`` of the first and the last record; a run read
with ``extra_fields=["timestamp"]`` does hold each record's own, and then every record
gets its own back.

What the reader cannot be told, and so does not come back: a single record carries one
``timestamp``, so a run of one record whose start and end differ comes back with both
at its start; a run that knows only one of the two comes back with both set to it; and
an ``input_hash`` that another reader took from something other than the input text
(Inspect's messages without their ids, lm-eval's ``doc_hash``) is taken afresh from
the text. ``tests/store/test_export.py`` names each such loss, fixture by fixture.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import IO, Any

from evaldelta.model import Run

__all__ = ["export_jsonl", "jsonl_lines"]

#: Records encoded at a time: bounded memory whatever the size of the run.
BATCH = 10_000

#: Fields a record line already uses; an extra field of the same name is left out.
_RESERVED = frozenset(
    {
        "test_id",
        "target",
        "attempt",
        "score",
        "passed",
        "scores",
        "latency_ms",
        "wait_ms",
        "input_tokens",
        "output_tokens",
        "cost_usd",
        "error",
        "error_kind",
        "safety_failure",
        "category",
        "tags",
        "input",
        "output",
        "expected",
        "metadata",
        "config",
        "run_status",
        "timestamp",
    }
)


def _record_dicts(run: Run, start: int, stop: int) -> list[dict[str, Any]]:
    """The JSON objects of records ``start`` to ``stop``, built from the columns."""
    test_ids, targets, categories = run.test_ids, run.targets, run.categories
    sl = slice(start, stop)
    tests = run.test_index[sl].tolist()
    target_codes = run.target_index[sl].tolist()
    attempts = run.attempt[sl].tolist()
    scores = run.score[sl].tolist()
    passed = run.passed[sl].tolist()
    cats = run.category_index[sl].tolist()
    safety = run.safety_failure[sl].tolist()
    optional = {
        name: getattr(run, name)[sl].tolist()
        for name in ("latency_ms", "wait_ms", "input_tokens", "output_tokens", "cost_usd")
    }
    scorers = {name: col[sl].tolist() for name, col in run.scorer_scores.items()}
    texts = run.texts or {}
    extra = {k: v for k, v in run.extra.items() if k not in _RESERVED}
    out: list[dict[str, Any]] = []
    for j in range(stop - start):
        i = start + j
        rec: dict[str, Any] = {"test_id": test_ids[tests[j]]}
        target = targets[target_codes[j]]
        if target is not None:
            rec["target"] = target
        rec["attempt"] = attempts[j]
        rec["score"] = scores[j]
        if passed[j] >= 0:
            rec["passed"] = bool(passed[j])
        by_scorer = {n: col[j] for n, col in scorers.items() if not math.isnan(col[j])}
        if by_scorer:
            rec["scores"] = by_scorer
        for name, col in optional.items():
            if not math.isnan(col[j]):
                rec[name] = col[j]
        if i in run.errors:
            rec["error"] = run.errors[i]
        if i in run.error_kinds:
            rec["error_kind"] = run.error_kinds[i]
        if safety[j]:
            rec["safety_failure"] = True
        if cats[j] >= 0:
            rec["category"] = categories[cats[j]]
        if i in run.tags:
            rec["tags"] = list(run.tags[i])
        for name, values in texts.items():
            if values[i] is not None:
                rec[name] = values[i]
        for name, values in extra.items():
            if values[i] is not None:
                rec[name] = values[i]
        out.append(rec)
    return out


def _record_stamps(run: Run) -> list[str | None] | None:
    """Each record's own ``timestamp``, when the run holds them (read with
    ``extra_fields=["timestamp"]``) and they give back its start and end as the reader
    takes them (earliest and latest); ``None`` otherwise."""
    stamps = run.extra.get("timestamp")
    if stamps is None or not all(s is None or isinstance(s, str) for s in stamps):
        return None
    found = [s for s in stamps if s]
    if not found or (min(found), max(found)) != (run.started_at, run.finished_at):
        return None
    return list(stamps)


def jsonl_lines(run: Run) -> Iterator[bytes]:
    """The run as JSON Lines, a batch of lines at a time."""
    import msgspec

    encoder = msgspec.json.Encoder()
    n = len(run)
    stamps = _record_stamps(run)
    for start in range(0, n, BATCH):
        stop = min(start + BATCH, n)
        batch = _record_dicts(run, start, stop)
        if start == 0:
            if run.config:
                batch[0]["config"] = run.config
            if run.status != "complete":
                batch[0]["run_status"] = run.status
            if run.case_order is not None:
                batch[0]["case_order"] = run.case_order
            if run.sequential is not None:
                batch[0]["sequential"] = run.sequential
        if stamps is not None:
            for rec, stamp in zip(batch, stamps[start:stop], strict=True):
                if stamp is not None:
                    rec["timestamp"] = stamp
        else:
            if start == 0 and run.started_at is not None:
                batch[0]["timestamp"] = run.started_at
            if stop == n and run.finished_at is not None and (n > 1 or run.started_at is None):
                batch[-1]["timestamp"] = run.finished_at
            if (
                start == 0
                and n == 1
                and None not in (run.started_at, run.finished_at)
                and run.started_at != run.finished_at
            ):
                # One record, one timestamp: the end goes beside it.
                batch[0]["run_finished_at"] = run.finished_at
            if start == 0 and run.started_at is not None and run.finished_at is None:
                batch[0]["run_finished_at"] = ""  # a start and no end: none, not the start
        yield encoder.encode_lines(batch)


def export_jsonl(
    run: Run, out: IO[bytes], *, progress: Callable[[int, int], None] | None = None
) -> int:
    """Write ``run`` to ``out`` as JSON Lines; returns the number of records written.

    ``progress`` is told how many records have been written, out of how many.
    """
    n = len(run)
    for i, lines in enumerate(jsonl_lines(run)):
        out.write(lines)
        if progress is not None:
            progress(min((i + 1) * BATCH, n), n)
    return n
