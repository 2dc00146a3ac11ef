"""Every input format end to end: two files of the format, compared by the installed
command with the format found by sniffing; and two formats compared with each other."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, Result

Cli = Callable[..., Result]

PAIRS = [
    ("inspect", "inspect_ai/SYNTHETIC_epochs.eval", "inspect_ai/SYNTHETIC_epochs_candidate.eval"),
    ("inspect", "inspect_ai/SYNTHETIC_epochs.json", "inspect_ai/SYNTHETIC_epochs_candidate.json"),
    ("lm-eval", "lm_eval/SYNTHETIC_model_A", "lm_eval/SYNTHETIC_model_B"),
    ("promptfoo", "promptfoo/sample-export.json", "promptfoo/candidate-export.json"),
    ("deepeval", "deepeval/test_run_variants.json", "deepeval/test_run_candidate.json"),
    (
        "openai-evals",
        "openai_evals/output-items.jsonl",
        "openai_evals/output-items-candidate.jsonl",
    ),
    ("csv", "csv/results.csv", "csv/results.csv"),
]


@pytest.mark.parametrize(
    ("fmt", "a", "b"), PAIRS, ids=[f"{p[0]}-{p[1].split('.')[-1]}" for p in PAIRS]
)
def test_compare_two_files_of_a_format(evaldelta: Cli, fmt: str, a: str, b: str) -> None:
    args: list[str | Path] = ["compare", FIXTURES / a, FIXTURES / b, "--json"]
    if fmt == "promptfoo":
        # The export holds two providers: pick the same one on both sides.
        args += ["--baseline", "openai:gpt-5-mini", "--candidate", "openai:gpt-5-mini"]
    r = evaldelta(*args)
    assert r.code in (0, 1), r.err
    data = json.loads(r.out)
    assert data["summary"]["matched"] >= 1
    assert data["verdict"]["verdict"] in (
        "Better",
        "Worse",
        "Trade-off",
        "No change",
        "Inconclusive",
    )
    forced = evaldelta(*args, "--input-format", fmt)
    assert json.loads(forced.out)["summary"] == data["summary"]


def test_oaieval_log_and_interrupted_log(evaldelta: Cli) -> None:
    log = FIXTURES / "openai_evals" / "230417220821DPM75QNS_auto_gpt_completion_fn_test-match.jsonl"
    cut = FIXTURES / "openai_evals" / "oaieval-interrupted.jsonl"
    assert evaldelta("compare", log, log).code == 0
    r = evaldelta("gate", log, cut)
    assert r.code == 2
    assert "declares itself interrupted" in r.err


def test_inspect_against_promptfoo(evaldelta: Cli, tmp_path: Path) -> None:
    """Two tools, one set of questions: the ids agree, so the cases pair up."""
    export = json.loads((FIXTURES / "promptfoo" / "sample-export.json").read_text())
    rows = [r for r in export["results"]["results"] if r["provider"]["id"] == "openai:gpt-5-mini"]
    for row in rows:
        row["testCase"]["description"] = f"q{row['testIdx'] + 1}"
    export["results"]["results"] = rows
    promptfoo = tmp_path / "promptfoo.json"
    promptfoo.write_text(json.dumps(export))
    inspect = FIXTURES / "inspect_ai" / "SYNTHETIC_epochs.eval"
    r = evaldelta("compare", inspect, promptfoo, "--json")
    assert r.code in (0, 1), r.err
    data = json.loads(r.out)
    assert sorted(m["test_id"] for m in data["matched"]) == ["q1", "q2"]
    # Tools fingerprint inputs differently: not a dataset change across formats.
    assert not [p for p in data["problems"] if p["code"] == "dataset-changed"]


def test_unknown_format_names_the_options(evaldelta: Cli, tmp_path: Path) -> None:
    odd = tmp_path / "notes.txt"
    odd.write_text("hello: world\n")
    r = evaldelta("compare", odd, odd)
    assert r.code == 2
    assert (
        "supported formats: inspect, lm-eval, promptfoo, deepeval, openai-evals, parquet, csv, "
        "jsonl" in r.err
    )
    assert "--input-format" in r.err
    assert "--map test_id=" in r.err


def test_one_object_in_no_known_format_names_the_formats_and_the_hints(
    evaldelta: Cli, tmp_path: Path
) -> None:
    odd = tmp_path / "hello.jsonl"
    odd.write_text('{"hello": "world"}\n')
    r = evaldelta("compare", odd, odd)
    assert (r.code, r.out) == (2, "")
    assert r.err == (
        f"evaldelta: error: {odd}:1: not a results file evaldelta can read: the first "
        'record has none of the fields of any format evaldelta reads (fields found: "hello"); '
        "formats tried: inspect, lm-eval, promptfoo, deepeval, openai-evals, parquet, csv, jsonl; "
        "force one with --input-format FORMAT, or name this file's own fields with "
        "--map FIELD=NAME (e.g. --map test_id=id,score=correct)\n"
    )
    # As the hint says: --map names the file's own fields, and it reads.
    odd.write_text('{"hello": "world", "ok": 1}\n')
    r = evaldelta("compare", odd, odd, "--map", "test_id=hello,score=ok", "--json")
    assert r.code in (0, 1), r.err
    assert [m["test_id"] for m in json.loads(r.out)["matched"]] == ["world"]


def test_an_agentv_record_without_test_id_keeps_its_message(evaldelta: Cli, tmp_path: Path) -> None:
    """A first record with agentv's fields but no test id is a bad record, not a format."""
    path = tmp_path / "results.jsonl"
    path.write_text('{"score": 0.5}\n')
    r = evaldelta("compare", path, path)
    assert r.code == 2
    assert r.err == (
        f'evaldelta: error: {path}:1: record has no "test_id" (nor "eval_id" or "testId"); '
        "every record needs one\n"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "p.json",
            '{"evalId":"e","results":{"results":[{"testIdx":0,"score":1e999}]}}',
            '"results.results[0].score" must be a finite number, got a number out of range; '
            "re-export the results with promptfoo",
        ),
        (
            "o.jsonl",
            '{"data_source_idx":0,"item":{},"grades":{"acc":1e999}}',
            'values in "grades" must each be a finite number, got a number out of range',
        ),
        (
            "o.jsonl",
            '{"data_source_idx":0,"item":{},"grades":{"acc":"x"}}',
            'values in "grades" must each be a number, got {"acc":"x"}',
        ),
    ],
    ids=["promptfoo score out of range", "openai-evals grade out of range", "grade in words"],
)
def test_a_wrong_value_in_promptfoo_or_openai_evals_is_named(
    evaldelta: Cli, tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text + "\n")
    r = evaldelta("compare", path, path)
    where = f"{path}:1" if name.endswith(".jsonl") else f"{path}"
    assert (r.code, r.out, r.err) == (2, "", f"evaldelta: error: {where}: {message}\n")
