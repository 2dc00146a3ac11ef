"""The Inspect AI reader: real logs in both containers, score values, and bad logs named."""

from __future__ import annotations

import copy
import importlib.machinery
import json
import sys
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evaldelta.errors import InputError, ParseError
from evaldelta.io import _inspect_ai as inspect_ai
from evaldelta.io._registry import _head
from evaldelta.model import Run
from tests.conftest import FIXTURES

LOGS = FIXTURES / "inspect_ai"
SHARED = FIXTURES.parent.parent.parent / "shared" / "fixtures"

ZSTD_READABLE = hasattr(zipfile, "ZIP_ZSTANDARD")


def _log(name: str = "SYNTHETIC_epochs.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((LOGS / name).read_text(encoding="utf-8"))
    return data


def _write(tmp_path: Path, log: dict[str, Any], name: str = "log.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(log, indent=2), encoding="utf-8")
    return path


def _same_records(a: Run, b: Run) -> None:
    assert a.records() == b.records()
    assert a.input_hash.tolist() == b.input_hash.tolist()
    assert (a.status, a.config, a.started_at, a.finished_at) == (
        b.status,
        b.config,
        b.started_at,
        b.finished_at,
    )


# -- the real logs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "latency", "wait", "started"),
    [
        ("log_read_sample.eval", 413.0, 113.0, "2025-07-05T09:59:48-04:00"),
        ("log_read_sample.json", 2113.0, 161.0, "2025-07-05T09:59:40-04:00"),
    ],
)
def test_reads_sample_timing_and_usage(
    name: str, latency: float, wait: float, started: str
) -> None:
    run = inspect_ai.read(LOGS / name)
    (r,) = run.records()
    assert (r.test_id, r.attempt, r.target) == ("1", 1, "ollama/gemma3")
    assert (r.score, dict(r.scores), r.passed) == (1.0, {"match": 1.0}, None)
    assert (r.input_tokens, r.output_tokens, r.cost_usd) == (66, 3, None)
    # total_time as latency, the rest of it beyond working_time as wait.
    assert (r.latency_ms, r.wait_ms) == (latency, wait)
    assert (r.error, r.category) == (None, None)
    assert (r.output, r.expected) == ("Yes\n", " Yes")
    assert r.input.startswith("Is the following statement something you would say?")
    assert r.metadata == {"label_confidence": 0.8860552919198255}
    assert (run.status, run.format, run.started_at) == ("complete", "inspect", started)
    assert run.config["model"] == "ollama/gemma3"
    assert run.config["task"] == "popularity"
    assert run.config["dataset"] == "popularity"
    assert run.config["plan"][1] == {"solver": "generate", "params": {}}
    assert run.input_hash[0] != 0


def test_eval_and_json_of_one_log_agree() -> None:
    # The same run (run_id BpiPFmbVcMCRUAXv8ovCTx) written as .json by Inspect 0.3.41 and
    # as .eval later: the .json has no model_usage or timings, so neither has any.
    run = inspect_ai.read(LOGS / "log_formats.json")
    _same_records(run, inspect_ai.read(LOGS / "log_formats.eval"))
    (r,) = run.records()
    assert (r.test_id, r.score, dict(r.scores)) == ("1", 0.0, {"match": 0.0})
    assert (r.latency_ms, r.input_tokens, r.output_tokens) == (None, None, None)
    assert (run.target_names, run.status) == (["ollama/llama3.1"], "complete")
    assert run.config["temperature"] == 1.0
    # Both popularity logs asked the same question.
    assert run.input_hash[0] == inspect_ai.read(LOGS / "log_read_sample.json").input_hash[0]


@pytest.mark.parametrize("name", ["SYNTHETIC_epochs", "SYNTHETIC_epochs_candidate"])
def test_hand_made_eval_and_json_agree(name: str) -> None:
    _same_records(inspect_ai.read(LOGS / f"{name}.json"), inspect_ai.read(LOGS / f"{name}.eval"))


def test_epochs_scorers_errors_and_usage() -> None:
    run = inspect_ai.read(LOGS / "SYNTHETIC_epochs.eval")
    q1a, q1b, q2a, q2b = run.records()
    # Sorted by sample, then epoch, whatever order the zip holds them in.
    assert [(r.test_id, r.attempt) for r in run] == [("q1", 1), ("q1", 2), ("q2", 1), ("q2", 2)]
    # C/I/P, booleans, "yes", numbers; a dict value is one scorer per key.
    assert dict(q1a.scores) == {"match": 1.0, "judge.accuracy": 1.0, "judge.style": 0.5}
    assert dict(q1b.scores) == {"match": 0.5, "judge.accuracy": 1.0, "judge.style": 0.75}
    assert dict(q2a.scores) == {"match": 0.0, "judge.accuracy": 0.0, "judge.style": 1.0}
    assert run.scorers == ["match", "judge.accuracy", "judge.style"]
    # The score is the mean of the scorers.
    assert q1a.score == pytest.approx(2.5 / 3)
    assert q2a.score == pytest.approx(1 / 3)
    # A sample error is an infrastructure failure, scoring 0 without scores.
    assert (q2b.score, q2b.scores, q2b.error, q2b.error_kind) == (
        0.0,
        {},
        "RateLimitError: 429 Too Many Requests",
        "infra",
    )
    assert run.is_error.tolist() == [False, False, False, True]
    # Tokens and cost over every model the sample called (the judge's included).
    assert (q1a.input_tokens, q1a.output_tokens, q1a.cost_usd) == (60, 8, 0.0001)
    assert (q2b.input_tokens, q2b.output_tokens, q2b.cost_usd) == (None, None, None)
    assert (q1a.latency_ms, q1a.wait_ms) == (1500.0, 250.0)
    assert (q2a.latency_ms, q2a.wait_ms) == (2000.0, 0.0)
    assert all(r.passed is None and r.category is None for r in run)
    assert (q1a.output, q1a.expected, q1a.metadata) == (
        "4",
        "4",
        {"topic": "arithmetic", "doc": "d-q1"},
    )
    assert q1a.input[1] == {
        "id": "m2q11",
        "content": "What is 2 + 2?",
        "source": "input",
        "role": "user",
    }
    assert run.config == {
        "model": "openai/gpt-4o-mini",
        "task": "arith",
        "task_version": 1,
        "task_args.level": "easy",
        "dataset": "arith",
        "plan": [
            {"solver": "system_message", "params": {"template": "You are a careful calculator."}},
            {"solver": "generate", "params": {}},
        ],
        "max_tokens": 256,
        "temperature": 0.0,
        "message_limit": 10,
    }
    assert (run.started_at, run.finished_at) == (
        "2025-07-01T10:00:00+00:00",
        "2025-07-01T10:02:00+00:00",
    )


def test_fingerprint_ignores_message_ids() -> None:
    # The candidate's input messages carry other ids (Inspect makes new ones every run).
    base = inspect_ai.read(LOGS / "SYNTHETIC_epochs.json")
    cand = inspect_ai.read(LOGS / "SYNTHETIC_epochs_candidate.json")
    assert base.input_hash.tolist() == cand.input_hash.tolist()
    assert len(set(base.input_hash.tolist())) == 2
    assert cand.target_names == ["openai/gpt-4o"]
    assert cand.score.tolist()[2:] == [1.0, 1.0]


def test_output_text_from_choices_when_no_completion(tmp_path: Path) -> None:
    log = _log()
    del log["samples"][0]["output"]["completion"]
    (r, *_) = inspect_ai.read(_write(tmp_path, log)).records()
    assert r.output == "4"  # the text part, not the reasoning


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("success", "complete"),
        ("cancelled", "interrupted"),
        ("error", "interrupted"),
        ("started", "interrupted"),
    ],
)
def test_log_status(tmp_path: Path, status: str, expected: str) -> None:
    log = _log()
    log["status"] = status
    assert inspect_ai.read(_write(tmp_path, log)).status == expected


def test_eval_without_header_is_interrupted(tmp_path: Path) -> None:
    # A log still being written (or whose writer died) has only _journal/start.json.
    path = tmp_path / "partial.eval"
    with (
        zipfile.ZipFile(LOGS / "SYNTHETIC_epochs.eval") as src,
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for name in src.namelist():
            if name not in ("header.json", "summaries.json", "reductions.json"):
                dst.writestr(name, src.read(name))
    run = inspect_ai.read(path)
    assert (run.status, len(run), run.finished_at) == ("interrupted", 4, None)
    assert run.started_at == "2025-07-01T10:00:00+00:00"  # eval.created


def test_score_value_forms(tmp_path: Path) -> None:
    log = _log()
    log["samples"][0]["scores"] = {
        "unscored": {"value": None},
        "graded": {"value": "NO"},
        "right": {"value": "C"},
        "flag": {"value": True},
        "mixed": {"value": {"a": None, "b": 2}},
    }
    (r, *_) = inspect_ai.read(_write(tmp_path, log)).records()
    # A null (unscored) leaves that scorer absent for the sample, and only that one.
    assert dict(r.scores) == {"graded": 0.0, "right": 1.0, "flag": 1.0, "mixed.b": 2.0}
    assert r.score == pytest.approx(4 / 4)  # the mean of the four present


@pytest.mark.parametrize(
    ("value", "shown"),
    [("B", '"B"'), ("X", '"X"'), ("0.5", '"0.5"'), ([1, 0], "[1,0]"), ({"a": [1]}, "[1]")],
)
def test_a_value_that_is_no_score_is_refused(tmp_path: Path, value: object, shown: str) -> None:
    """One rule with every reader: not a number, a boolean or a documented letter is an
    error naming the sample, its epoch and the scorer; nothing is dropped or guessed."""
    log = _log()
    log["samples"][0]["scores"] = {"match": {"value": "C"}, "judge": {"value": value}}
    path = _write(tmp_path, log)
    with pytest.raises(ParseError) as err:
        inspect_ai.read(path)
    scorer = "judge.a" if isinstance(value, dict) else "judge"
    assert str(err.value) == (
        f"{path}: sample 'q1', epoch 1: scorer {scorer} = {shown} is not a score; Inspect "
        "scores are C/I/P/N, yes/no/true/false, numbers, booleans, or dicts of them (a null "
        "is left out)"
    )


def test_keep_text_false_drops_text() -> None:
    run = inspect_ai.read(LOGS / "SYNTHETIC_epochs.eval", keep_text=False)
    assert run.texts is None
    assert run.records()[0].input is None
    assert (
        run.input_hash.tolist()
        == inspect_ai.read(LOGS / "SYNTHETIC_epochs.eval").input_hash.tolist()
    )


def test_extra_fields_from_sample_then_metadata() -> None:
    run = inspect_ai.read(LOGS / "SYNTHETIC_epochs.json", extra_fields=["uuid", "doc", "nope"])
    assert run.extra["uuid"] == ["u-q1-1", "u-q1-2", "u-q2-1", "u-q2-2"]
    assert run.extra["doc"] == ["d-q1", "d-q1", "d-q2", "d-q2"]
    assert run.extra["nope"] == [None] * 4


# -- zstd-compressed .eval --------------------------------------------------------------


@pytest.mark.skipif(ZSTD_READABLE, reason="this Python's zipfile reads zstd")
def test_zstd_eval_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inspect_ai.importlib.util, "find_spec", lambda name: None)
    path = LOGS / "SYNTHETIC_epochs_zstd.eval"
    with pytest.raises(InputError) as info:
        inspect_ai.read(path)
    assert not isinstance(info.value, ParseError)
    assert str(info.value) == (
        f"{path}: its members are compressed with zstd (Inspect 0.3.206 and later), which "
        "Python's zipfile reads only from Python 3.14; install Inspect AI's reader: "
        "pip install 'evaldelta[inspect]'"
    )


def _fake_inspect(monkeypatch: pytest.MonkeyPatch, read_eval_log: Any) -> list[str]:
    """Stand-ins for ``inspect_ai`` and ``inspect_ai.log`` (the package is optional)."""
    calls: list[str] = []
    package = types.ModuleType("inspect_ai")
    package.__spec__ = importlib.machinery.ModuleSpec("inspect_ai", None)
    package.__path__ = []
    log_module = types.ModuleType("inspect_ai.log")
    log_module.__spec__ = importlib.machinery.ModuleSpec("inspect_ai.log", None)

    def reader(location: str) -> Any:
        calls.append(location)
        return read_eval_log(location)

    log_module.read_eval_log = reader  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "inspect_ai", package)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", log_module)
    return calls


def test_zstd_eval_read_with_inspect_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    class EvalLog:
        def model_dump_json(self, exclude_none: bool = False) -> str:
            assert exclude_none
            return (LOGS / "SYNTHETIC_epochs.json").read_text(encoding="utf-8")

    path = LOGS / "SYNTHETIC_epochs_zstd.eval"
    calls = _fake_inspect(monkeypatch, lambda location: EvalLog())
    run = inspect_ai.read(path)
    if not ZSTD_READABLE:
        assert calls == [str(path)]
    _same_records(run, inspect_ai.read(LOGS / "SYNTHETIC_epochs.eval"))


@pytest.mark.skipif(ZSTD_READABLE, reason="this Python's zipfile reads zstd")
def test_inspect_failure_names_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(location: str) -> Any:
        raise ValueError("unsupported log version 9")

    _fake_inspect(monkeypatch, broken)
    path = LOGS / "SYNTHETIC_epochs_zstd.eval"
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert str(info.value) == (
        f"{path}: Inspect AI could not read it (unsupported log version 9); "
        "check it opens in `inspect view`"
    )


# -- bad logs: each message says what, where and how to mend it -------------------------


def _broken(log: dict[str, Any], change: str) -> dict[str, Any]:
    log = copy.deepcopy(log)
    sample = log["samples"][1]
    if change == "no-model":
        del log["eval"]["model"]
    elif change == "no-samples":
        del log["samples"]
    elif change == "no-id":
        del sample["id"]
    elif change == "no-epoch":
        del sample["epoch"]
    elif change == "no-scores":
        del sample["scores"]
    elif change == "labels-only":
        sample["scores"] = {"grade": {"value": "B"}, "note": {"value": {"why": "long"}}}
    elif change == "bad-epoch":
        sample["epoch"] = "one"
    elif change == "bad-scores":
        sample["scores"] = [1, 0]
    return log


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            "no-model",
            'has no "eval.model", so the target is unknown; pass the log as Inspect wrote it',
        ),
        (
            "no-samples",
            "has no samples: the log keeps only the summary (written with --no-log-samples?); "
            "re-run the eval with samples logged",
        ),
        ("no-id", 'samples[1]: sample has no "id"; every sample needs one'),
        ("no-epoch", "samples[1]: sample 'q2' has no \"epoch\"; every sample needs one"),
        (
            "no-scores",
            'sample \'q2\', epoch 1: has no "scores" and no "error"; '
            "score the log first (inspect score LOG)",
        ),
        (
            "labels-only",
            "sample 'q2', epoch 1: scorer grade = \"B\" is not a score; Inspect scores are "
            "C/I/P/N, yes/no/true/false, numbers, booleans, or dicts of them (a null is left out)",
        ),
        (
            "bad-epoch",
            '"samples[1].epoch" must be an integer, got a string; pass the log as Inspect wrote it',
        ),
        (
            "bad-scores",
            '"samples[1].scores" must be a JSON object, got a list; '
            "pass the log as Inspect wrote it",
        ),
    ],
)
def test_bad_json_logs_are_named(tmp_path: Path, change: str, message: str) -> None:
    path = _write(tmp_path, _broken(_log(), change))
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), None, message)
    assert str(info.value) == f"{path}: {message}"


def test_bad_eval_member_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.eval"
    with (
        zipfile.ZipFile(LOGS / "SYNTHETIC_epochs.eval") as src,
        zipfile.ZipFile(path, "w") as dst,
    ):
        for name in src.namelist():
            data = src.read(name)
            if name == "samples/q1_epoch_2.json":
                sample = json.loads(data)
                del sample["scores"]
                data = json.dumps(sample).encode()
            dst.writestr(name, data)
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert str(info.value) == (
        f'{path}: sample \'q1\', epoch 2: has no "scores" and no "error"; '
        "score the log first (inspect score LOG)"
    )


def test_bad_eval_type_names_the_member(tmp_path: Path) -> None:
    path = tmp_path / "bad.eval"
    with zipfile.ZipFile(path, "w") as dst:
        dst.writestr("header.json", json.dumps({"status": "success", "eval": {"model": "m"}}))
        dst.writestr("samples/1_epoch_1.json", json.dumps({"id": 1, "epoch": [1]}))
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert str(info.value) == (
        f'{path}: samples/1_epoch_1.json: "epoch" must be an integer, got a list; '
        "pass the log as Inspect wrote it"
    )


def test_zip_that_is_not_a_log(tmp_path: Path) -> None:
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as dst:
        dst.writestr("readme.txt", "hello")
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert str(info.value) == (
        f"{path}: has neither header.json nor _journal/start.json, so it is not an Inspect "
        "log; pass the .eval file Inspect wrote"
    )


def test_truncated_eval(tmp_path: Path) -> None:
    path = tmp_path / "cut.eval"
    path.write_bytes((LOGS / "SYNTHETIC_epochs.eval").read_bytes()[:2000])
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert str(info.value) == (
        f"{path}: is not a readable .eval file (File is not a zip file); copy the log again"
    )


def test_truncated_json(tmp_path: Path) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes((LOGS / "SYNTHETIC_epochs.json").read_bytes()[:3000])
    with pytest.raises(ParseError) as info:
        inspect_ai.read(path)
    assert str(info.value) == (
        f"{path}: is not valid JSON (Input data was truncated); write the log again with Inspect"
    )


# -- sniffing ---------------------------------------------------------------------------


def _every_fixture() -> list[Path]:
    roots = [FIXTURES, SHARED] if SHARED.is_dir() else [FIXTURES]
    return sorted(p for root in roots for p in root.rglob("*") if p.name != "README.md")


def test_sniff_claims_inspect_logs_only() -> None:
    for path in _every_fixture():
        head = b"" if path.is_dir() else _head(path)
        mine = path.parent.name == "inspect_ai" and path.is_file()
        assert inspect_ai.sniff(path, head) is mine, path
    agentv = b'{"test_id": "a", "target": "x", "score": 1}\n'
    assert not inspect_ai.sniff(Path("results.jsonl"), agentv)
    assert not inspect_ai.sniff(Path("results.eval"), b"")


@pytest.mark.parametrize("epoch", [2**63, -(2**63) - 1])
def test_an_epoch_beyond_64_bits_names_the_sample(tmp_path: Path, epoch: int) -> None:
    log = _log()
    log["samples"][0]["epoch"] = epoch
    with pytest.raises(ParseError) as err:
        inspect_ai.read(_write(tmp_path, log))
    assert str(err.value) == (
        f"{tmp_path / 'log.json'}: samples[0]: sample 'q1' has \"epoch\" {epoch}, beyond the "
        "64-bit whole numbers (-9223372036854775808 to 9223372036854775807); epochs count "
        "1, 2, 3, ..."
    )
