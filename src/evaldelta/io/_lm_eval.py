"""Reader for lm-evaluation-harness per-sample logs (``lm_eval ... --log_samples``).

lm-eval writes, in ``OUTPUT/<model>/``, one ``samples_<task>_<timestamp>.jsonl`` per task
and a ``results_<timestamp>.json`` for the run. This reader takes one samples file, a
folder of them (one run), or a run's ``results_<timestamp>.json`` (its samples files are
read beside it); the results file of the same timestamp gives the model and the settings.

One record per line, that is per document and filter. What each field means here:

- test id: ``<task>/<doc_id>``, plus ``/<filter>`` when the filter is not the default
  ``none`` (``gsm8k/0/strict-match``); the task comes from the file name
- target: the model (``model_name`` of the results file, or ``pretrained=`` of its
  ``model_args``); unknown without a results file
- scorers: one per metric the line lists in ``metrics`` (``acc``, ``exact_match``...):
  numbers and booleans as they are, and the strings ``"True"``/``"False"`` and numeric
  strings lm-eval writes for numpy values; a list of booleans (IFEval's per-instruction
  results) is its mean. Corpus-level values (bleu's ``[reference, prediction]`` pairs,
  perplexity's ``[loglikelihood, words]``) are not per-sample scores and are left out
- score: the mean of the line's scorers; category: the task
- input fingerprint: ``doc_hash`` (a hash of the dataset document), else the ``doc``
- run: started at the results file's ``date``, finished ``total_evaluation_time_seconds``
  later; the status is always complete (lm-eval has none)
- config: model, backend, other ``model_args``, ``gen_kwargs``, seeds, chat template and
  system instruction hashes, harness version, and per task its version, few-shot count
  and ``task_hashes`` entry
- text, only when asked for: ``doc`` (input), ``filtered_resps`` (output), ``target``
  (expected), and the filter and hashes (metadata)

lm-eval records no latency, tokens, cost, pass/fail, attempts or errors: those stay absent.
"""

from __future__ import annotations

import json
import math
import os
import re
import zlib
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import msgspec

from evaldelta.errors import InputError, ParseError
from evaldelta.io._errors import explain_expected, shown
from evaldelta.io._reader import (
    ReadOptions,
    decode_lines,
    decoded,
    read_content,
    reader,
    struct_extra_columns,
    with_extra_fields,
)
from evaldelta.io._source import check_utf8, paused_gc, read_bytes
from evaldelta.model import Run

NAME = "lm-eval"

#: The filter of tasks that declare none.
DEFAULT_FILTER = "none"

#: ``model_args`` keys that name the model (the target), not a setting of it.
MODEL_NAME_ARGS = ("pretrained", "model", "engine")

#: Run-wide settings of the results file's ``config`` kept in the run's config.
RUN_SETTINGS = ("gen_kwargs", "random_seed", "numpy_seed", "torch_seed", "fewshot_seed")

_STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_SAMPLES_FILE = re.compile(rf"samples_(?P<task>.+?)_(?P<stamp>{_STAMP})\.jsonl")
_STAMPED_JSON = re.compile(rf"(?P<stem>.+)_(?P<stamp>{_STAMP})\.json")
_SAMPLES_START = re.compile(rb'\s*\{\s*"doc_id"\s*:\s*[^,{}\[\]]+,\s*"doc"\s*:')
_DOC_ID_START = re.compile(rb'\s*\{\s*"doc_id"\s*:')
_RESULTS_START = re.compile(rb'\s*\{\s*"results"\s*:\s*\{')


class _Sample(msgspec.Struct, gc=False):
    """The fields of a line we read; ``arguments``, ``resps`` and the rest are skipped."""

    doc_id: int | str | None = None
    filter: str | None = None
    metrics: list[str] | None = None
    doc_hash: str | None = None
    # Kept undecoded: fingerprinted, and decoded only when text is kept.
    doc: msgspec.Raw = msgspec.Raw(b"")


class _SampleWithText(_Sample, gc=False):
    target: Any = None
    filtered_resps: Any = None
    prompt_hash: str | None = None
    target_hash: str | None = None


class _Results(msgspec.Struct, gc=False):
    """The run-wide facts of ``results_<timestamp>.json``."""

    model_name: str | None = None
    config: dict[str, Any] | None = None
    configs: dict[str, Any] | None = None
    versions: dict[str, Any] | None = None
    n_shot: dict[str, Any] | None = msgspec.field(name="n-shot", default=None)
    task_hashes: dict[str, Any] | None = None
    date: float | None = None
    total_evaluation_time_seconds: float | str | None = None
    lm_eval_version: str | None = None
    system_instruction_sha: str | None = None
    chat_template_sha: str | None = None
    fewshot_as_multiturn: bool | None = None


#: Keys of a samples line that are not metrics (for old files without ``metrics``).
_NOT_METRICS = frozenset(
    {*_SampleWithText.__struct_fields__, "arguments", "resps", "doc_hash", "prompt_hash"}
)


def sniff(path: Path, head: bytes) -> bool:
    """True for a samples file, a folder of them, or an lm-eval results file."""
    if not head:
        return path.is_dir() and bool(_samples_in(path))
    if _SAMPLES_START.match(head):
        return True
    if _DOC_ID_START.match(head):
        return _SAMPLES_FILE.fullmatch(path.name) is not None
    return bool(_RESULTS_START.match(head)) and b'"alias"' in head


@reader
def read(path: Path, options: ReadOptions) -> Run:
    """Read lm-eval samples (a file, a run's folder, or its results file) into a :class:`Run`.

    ``extra_fields``: further fields of each line to keep, looked up at the top of the
    line, then in its ``doc``. ``mapping`` does not apply to this fixed format.
    """
    files, results_file = _run_files(path)
    results = _read_results(results_file) if results_file is not None else _Results()
    keep_text, extra, _ = options
    sample_type = _sample_type(keep_text, extra)
    columns = _Columns()
    with paused_gc():
        for file in files:
            _read_samples(file, sample_type, keep_text, extra, columns)
    tasks = list(dict.fromkeys(columns.category))
    started, finished = _times(results)
    n = len(columns.test_id)
    return Run.from_columns(
        source=str(path),
        format=NAME,
        config=_config(results, tasks),
        started_at=started,
        finished_at=finished,
        test_id=columns.test_id,
        score=columns.score,
        target=[_model_name(results)] * n,
        category=columns.category,
        scorer_scores={
            name: [values.get(name) for values in columns.scorers]
            for name in dict.fromkeys(k for values in columns.scorers for k in values)
        },
        input_hash=columns.input_hash,
        extra=columns.extra,
        texts=columns.texts if keep_text else None,
        # Line numbers only when they are lines of the file the run is named after.
        lines=columns.lines if files == [path] else None,
    )


# -- finding the files of a run ---------------------------------------------------------


def _samples_in(folder: Path) -> list[Path]:
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file())
    except OSError:
        return []
    return [folder / name for name in names if _SAMPLES_FILE.fullmatch(name)]


def _stamp(name: str) -> str | None:
    found = _SAMPLES_FILE.fullmatch(name) or _STAMPED_JSON.fullmatch(name)
    return found.group("stamp") if found else None


def _results_beside(folder: Path, stamp: str | None) -> Path | None:
    """The results file of the run that wrote samples at ``stamp``."""
    if stamp is None:
        return None
    named = folder / f"results_{stamp}.json"
    if named.is_file():
        return named
    # With an --output_path ending in .json, lm-eval names it <stem>_<timestamp>.json.
    others = sorted(folder.glob(f"*_{stamp}.json"))
    return others[0] if len(others) == 1 else None


def _run_files(path: Path) -> tuple[list[Path], Path | None]:
    """The samples files to read and the results file beside them."""
    if path.is_dir():
        files = _samples_in(path)
        if not files:
            raise InputError(
                f"{path}: no samples_<task>_<timestamp>.jsonl files in this folder; "
                "run lm-eval with --log_samples, and pass the folder it wrote them to"
            )
        stamps = list(dict.fromkeys(_stamp(f.name) for f in files))
        if len(stamps) > 1:
            raise InputError(
                f"{path}: holds the samples of {len(stamps)} lm-eval runs "
                f"({', '.join(str(s) for s in stamps)}); pass one run's "
                "results_<timestamp>.json (its samples are read beside it) or one samples file"
            )
        return files, _results_beside(path, stamps[0])
    if _RESULTS_START.match(_head(path)):
        stamp = _stamp(path.name)
        files = [f for f in _samples_in(path.parent) if _stamp(f.name) == stamp]
        if stamp is None or not files:
            raise InputError(
                f"{path}: is an lm-eval results file without its per-sample results beside "
                "it (samples_<task>_<timestamp>.jsonl of the same timestamp); run lm-eval "
                "with --log_samples, or pass the samples files"
            )
        return files, path
    return [path], _results_beside(path.parent, _stamp(path.name))


def _head(path: Path, size: int = 4096) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(size)
    except OSError:
        return b""  # reading the file later raises the error that names it


def _read_results(path: Path) -> _Results:
    try:
        data = read_bytes(path)
        check_utf8(str(path), data)
        return msgspec.json.decode(data, type=_Results)
    except msgspec.ValidationError as err:
        raise ParseError(str(path), None, _explain(str(err), "results file")) from None
    except msgspec.DecodeError as err:
        raise ParseError(
            str(path), None, f"is not valid JSON ({err}); pass the results file lm-eval wrote"
        ) from None


# -- reading the samples ----------------------------------------------------------------


class _Columns:
    """The run's columns, filled file after file."""

    def __init__(self) -> None:
        self.test_id: list[str] = []
        self.score: list[float] = []
        self.category: list[str] = []
        self.scorers: list[dict[str, float]] = []
        self.input_hash: list[int] = []
        self.lines: list[int] = []
        self.extra: dict[str, list[Any]] = {}
        self.texts: dict[str, list[Any]] = {
            "input": [],
            "output": [],
            "expected": [],
            "metadata": [],
        }


def _sample_type(keep_text: bool, extra: tuple[str, ...]) -> type[_Sample]:
    """The struct of a line, with any extra fields the caller asked for."""
    base: type[_Sample] = _SampleWithText if keep_text else _Sample
    return with_extra_fields(base, extra, "_SampleExtra")


def _task(file: Path) -> str:
    found = _SAMPLES_FILE.fullmatch(file.name)
    if found:
        return found.group("task")
    return file.name.removesuffix(".jsonl").removeprefix("samples_")


def _read_samples(
    file: Path,
    sample_type: type[_Sample],
    keep_text: bool,
    extra: tuple[str, ...],
    out: _Columns,
) -> None:
    src, data = read_content(file, "no samples to compare; check lm-eval ran with --log_samples")
    samples, lines = _decode(src, data, sample_type)
    names = _metric_names(src, data, samples, lines)
    odd = next((n for n in names if any(c in n for c in '"\\') or not n.isprintable()), None)
    if odd is not None:
        raise ParseError(
            src,
            None,
            f"a metric is named {odd!r}: a quote, a backslash or a control character in a "
            "metric's name is not lm-eval's; pass the samples file as lm-eval wrote it",
        )
    metric_type = msgspec.defstruct(
        "_Metrics",
        [(f"m{i}", Any, msgspec.UNSET) for i in range(len(names))],
        rename={f"m{i}": name for i, name in enumerate(names)},
        gc=False,
    )
    metric_rows, _ = _decode(src, data, metric_type)
    task = _task(file)
    for s, row, line in zip(samples, metric_rows, lines, strict=True):
        if s.doc_id is None:
            raise ParseError(
                src,
                line,
                'record has no "doc_id"; pass the samples file as lm-eval wrote it',
            )
        listed = s.metrics if s.metrics is not None else names
        values: dict[str, float] = {}
        corpus: list[str] = []
        missing: list[str] = []
        for metric in listed:
            value = getattr(row, f"m{names.index(metric)}")
            if value is msgspec.UNSET:
                raise ParseError(
                    src,
                    line,
                    f'record lists "{metric}" in "metrics" but has no "{metric}" value; '
                    "the line was cut or edited: re-run lm-eval with --log_samples",
                )
            number = _as_number(value)
            if number is not None:
                values[metric] = number
            elif value is None:
                # NaN (written by Python's json) or null: the metric failed on this document.
                missing.append(metric)
            else:
                corpus.append(f"{metric} = {shown(value, 40)}")
        if not values:
            raise ParseError(src, line, _no_score(s.doc_id, corpus, missing))
        test_id = f"{task}/{s.doc_id}"
        if s.filter is not None and s.filter != DEFAULT_FILTER:
            test_id += f"/{s.filter}"
        out.test_id.append(test_id)
        out.score.append(sum(values.values()) / len(values))
        out.category.append(task)
        out.scorers.append(values)
        out.lines.append(line)
        out.input_hash.append(_input_hash(s))
    if keep_text:
        with_text: list[Any] = samples
        out.texts["input"].extend(decoded(s.doc) for s in with_text)
        out.texts["output"].extend(_unwrap(s.filtered_resps) for s in with_text)
        out.texts["expected"].extend(s.target for s in with_text)
        out.texts["metadata"].extend(_metadata(s) for s in with_text)
    _extend_extra(out.extra, samples, extra)


def _decode(src: str, data: bytes, struct: type[Any]) -> tuple[list[Any], Sequence[int]]:
    """Every line, decoded, with its line number; a line as Python's ``json.dumps``
    writes it (lm-eval's NaN and Infinity included) is read too: they become null, so
    such a metric is absent."""
    decoder = msgspec.json.Decoder(struct)

    def decode(line: bytes) -> Any:
        try:
            return decoder.decode(line)
        except msgspec.ValidationError:
            raise
        except msgspec.DecodeError:
            return decoder.decode(msgspec.json.encode(json.loads(line)))

    def explain(err: ValueError, line: bytes) -> str:
        if isinstance(err, msgspec.ValidationError):
            return _explain(str(err), "samples file")
        return f"not valid JSON ({err}); each line must be one JSON object, as lm-eval writes it"

    return decode_lines(src, data, decoder, explain, decode)


def _metric_names(src: str, data: bytes, samples: list[_Sample], lines: Sequence[int]) -> list[str]:
    """The metrics of a file: those its lines list, or (in files written before lm-eval
    listed them) the keys of its first line that are not lm-eval's own fields."""
    names = dict.fromkeys(m for s in samples if s.metrics for m in s.metrics)
    if names or all(s.metrics is not None for s in samples):
        return list(names)
    first = data.lstrip().split(b"\n", 1)[0]
    try:
        keys = json.loads(first)
    except ValueError:
        keys = {}
    found = [k for k in keys if k not in _NOT_METRICS] if isinstance(keys, dict) else []
    if not found:
        raise ParseError(
            src,
            lines[0],
            'record has no "metrics" and no metric values; pass the samples file as '
            "lm-eval wrote it (with --log_samples)",
        )
    return found


def _as_number(value: Any) -> float | None:
    """A metric value as a per-sample score; ``None`` for corpus-level values."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "false"):
            return float(word == "true")
        try:
            number = float(word)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    if isinstance(value, list) and value and all(isinstance(v, bool) for v in value):
        return sum(value) / len(value)
    return None


def _no_score(doc_id: int | str, corpus: list[str], missing: list[str]) -> str:
    if missing and not corpus:
        return (
            f"doc {doc_id}: every metric is NaN or null ({', '.join(missing)}), so there is "
            "no score; check the task's metrics on this document, or leave the task out"
        )
    if corpus:
        return (
            f"doc {doc_id}: no metric is a per-sample score ({'; '.join(corpus)}); lm-eval "
            "computes these over the whole corpus (bleu, perplexity...), which cannot be "
            "compared case by case: compare a task with per-sample metrics"
        )
    return (
        f'doc {doc_id}: "metrics" is empty, so there is no score; pass the samples file '
        "as lm-eval wrote it"
    )


def _input_hash(sample: _Sample) -> int:
    """CRC-32 of the document: of lm-eval's own hash of it where the line has one."""
    if sample.doc_hash:
        return zlib.crc32(sample.doc_hash.encode())
    return zlib.crc32(sample.doc) if len(sample.doc) else 0


def _unwrap(value: Any) -> Any:
    """One filtered response as itself rather than a list of one."""
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _metadata(sample: _SampleWithText) -> dict[str, Any]:
    found = {
        "filter": sample.filter,
        "doc_hash": sample.doc_hash,
        "prompt_hash": sample.prompt_hash,
        "target_hash": sample.target_hash,
    }
    return {k: v for k, v in found.items() if v is not None}


def _extend_extra(out: dict[str, list[Any]], samples: list[Any], extra: tuple[str, ...]) -> None:
    """Each extra field from the top of the line, else from its ``doc``."""

    def from_doc(sample: Any, name: str) -> Any:
        doc = decoded(sample.doc)
        return doc.get(name) if isinstance(doc, dict) else None

    for name, column in struct_extra_columns(samples, extra, from_doc).items():
        out.setdefault(name, []).extend(column)


# -- the run's facts --------------------------------------------------------------------


def _model_args(results: _Results) -> dict[str, str]:
    raw = (results.config or {}).get("model_args")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    if not isinstance(raw, str) or not raw:
        return {}
    pairs = (part.split("=", 1) for part in raw.split(",") if "=" in part)
    return {k.strip(): v.strip() for k, v in pairs}


def _model_name(results: _Results) -> str | None:
    if results.model_name:
        return results.model_name
    args = _model_args(results)
    return next((args[k] for k in MODEL_NAME_ARGS if args.get(k)), None)


def _config(results: _Results, tasks: list[str]) -> dict[str, Any]:
    """The settings the run declares, one key each, for the fairness checks."""
    config: dict[str, Any] = {"model": _model_name(results), "tasks": tasks}
    run = results.config or {}
    if run.get("model") is not None:
        config["backend"] = run["model"]
    other_args = {k: v for k, v in _model_args(results).items() if k not in MODEL_NAME_ARGS}
    if other_args:
        config["model_args"] = other_args
    config.update({k: run[k] for k in RUN_SETTINGS if run.get(k) is not None})
    for key in ("system_instruction_sha", "chat_template_sha", "fewshot_as_multiturn"):
        value = getattr(results, key)
        if value is not None:
            config[key] = value
    if results.lm_eval_version is not None:
        config["lm_eval_version"] = results.lm_eval_version
    for task in tasks:
        for key, table in (
            ("version", results.versions),
            ("num_fewshot", results.n_shot),
            ("hash", results.task_hashes),
        ):
            if table and table.get(task) is not None:
                config[f"{task}.{key}"] = table[task]
        task_config = (results.configs or {}).get(task)
        if isinstance(task_config, dict) and task_config.get("dataset_path"):
            name = task_config.get("dataset_name")
            path = task_config["dataset_path"]
            config[f"{task}.dataset"] = f"{path}/{name}" if name else path
    return config


def _times(results: _Results) -> tuple[str | None, str | None]:
    """Start (``date``, a Unix time) and end (plus the evaluation's duration)."""
    if results.date is None:
        return None, None
    try:
        start = datetime.fromtimestamp(results.date, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):  # no calendar holds it: unknown
        return None, None
    try:
        seconds = float(results.total_evaluation_time_seconds or "nan")
    except ValueError:
        seconds = math.nan
    try:
        end = start + timedelta(seconds=seconds) if math.isfinite(seconds) else None
    except OverflowError:
        end = None
    return start.isoformat(), end.isoformat() if end is not None else None


def _explain(message: str, what: str) -> str:
    """msgspec's validation message, in the reader's words."""
    return explain_expected(
        message, what=f"an lm-eval {what}", mend="pass it as lm-eval wrote it", mend_fields=False
    )
