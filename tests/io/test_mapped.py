"""JSON Lines read through --map: the option's text, JSON paths, defaults, and every bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evaldelta.errors import ParseError, UsageError
from evaldelta.io import _jsonl as jsonl_reader
from evaldelta.io import _mapped as mapped

Make = Callable[..., Path]

KNOWN = (
    "known fields: test_id, target, score, passed, attempt, latency_ms, wait_ms, "
    "input_tokens, output_tokens, cost_usd, error, error_kind, category, input, output, "
    "expected, scores.NAME (a scorer)"
)


# -- the --map option -------------------------------------------------------------------


def test_parse_mapping() -> None:
    assert mapped.parse_mapping(
        " test_id = question_id ,score=result.metrics.accuracy,target=model name,"
        "scores.exact=em,input=a=b,"
    ) == {
        "test_id": "question_id",
        "score": "result.metrics.accuracy",
        "target": "model name",
        "scores.exact": "em",
        "input": "a=b",
    }


def test_parse_mapping_accepts_every_field() -> None:
    text = ",".join(f"{field}=col_{field}" for field in mapped.FIELDS)
    assert list(mapped.parse_mapping(text)) == list(mapped.FIELDS)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "test_id",
            '--map: "test_id" is not FIELD=COLUMN; write e.g. '
            "--map test_id=question_id,score=correct",
        ),
        (
            "test_id=q,=correct",
            '--map: "=correct" is not FIELD=COLUMN; write e.g. '
            "--map test_id=question_id,score=correct",
        ),
        (
            "test_id=q,score=",
            '--map: "score=" is not FIELD=COLUMN; write e.g. '
            "--map test_id=question_id,score=correct",
        ),
        (" , ", "--map: no FIELD=COLUMN given; write e.g. --map test_id=question_id,score=correct"),
        (
            "score=a,score=b",
            '--map: "score" is given twice ("a" and "b"); keep one',
        ),
        ("scor=correct", f'--map: unknown field "scor" (did you mean "score"?); {KNOWN}'),
        ("Target=model", f'--map: unknown field "Target" (did you mean "target"?); {KNOWN}'),
        ("question=q", f'--map: unknown field "question"; {KNOWN}'),
        (
            "scores.=judge",
            '--map: "scores." names no scorer; write scores.NAME=COLUMN, e.g. scores.exact=em',
        ),
    ],
)
def test_parse_mapping_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError) as info:
        mapped.parse_mapping(text)
    assert str(info.value) == message


def test_check_mapping_rejects_an_empty_column() -> None:
    with pytest.raises(UsageError) as info:
        mapped.check_mapping({"score": " "})
    assert str(info.value) == '--map: "score" is mapped to nothing; write score=COLUMN'


# -- reading ----------------------------------------------------------------------------


def read(path: Path, mapping: dict[str, str], **options: Any) -> list[Any]:
    return mapped.read(path, mapping=mapping, **options).records()


def test_dotted_paths_and_list_indices(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {
                "qid": "q1",
                "model": "gpt-x",
                "result": {"metrics": {"accuracy": 0.75}},
                "usage": {"prompt_tokens": 12, "completion_tokens": 3},
                "choices": [{"text": "four"}, {"text": "4"}],
                "timing": {"ms": 420},
                "meta.topic": "math",  # a key that itself holds a dot
                "gold": ["4"],
            }
        ],
    )
    (r,) = read(
        path,
        {
            "test_id": "qid",
            "target": "model",
            "score": "result.metrics.accuracy",
            "input_tokens": "usage.prompt_tokens",
            "output_tokens": "usage.completion_tokens",
            "output": "choices.1.text",
            "expected": "gold.-1",
            "latency_ms": "timing.ms",
            "category": "meta.topic",
        },
    )
    assert (r.test_id, r.target, r.score) == ("q1", "gpt-x", 0.75)
    assert (r.input_tokens, r.output_tokens, r.latency_ms) == (12, 3, 420)
    assert (r.output, r.expected, r.category) == ("4", "4", "math")
    assert r.line == 1


def test_absent_values_stay_absent(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"qid": 1, "acc": 1, "usage": {"prompt_tokens": 5}, "choices": [{"text": "a"}]},
            {"qid": 2, "acc": 0, "usage": None, "choices": []},
            {"qid": 3, "acc": 0, "usage": "n/a"},
        ],
    )
    records = read(
        path,
        {
            "test_id": "qid",
            "score": "acc",
            "input_tokens": "usage.prompt_tokens",
            "output": "choices.0.text",
        },
    )
    assert [r.test_id for r in records] == ["1", "2", "3"]
    assert [r.input_tokens for r in records] == [5, None, None]
    assert [r.output for r in records] == ["a", None, None]
    assert [r.latency_ms for r in records] == [None, None, None]


def test_booleans_score_and_pass(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"id": "a", "correct": True, "ok": "yes"},
            {"id": "b", "correct": False, "ok": 0},
            {"id": "c", "correct": 0.5, "ok": None},
        ],
    )
    records = read(path, {"score": "correct", "passed": "ok"})
    # "id" is one of the usual names of the test id, used when --map does not name it.
    assert [(r.test_id, r.score, r.passed) for r in records] == [
        ("a", 1.0, True),
        ("b", 0.0, False),
        ("c", 0.5, None),
    ]


def test_unmapped_fields_use_their_usual_names(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {
                "test_id": "a",
                "acc": 1,
                "target": "m",
                "duration_ms": 7,
                "cost_usd": 0.5,
                "answer": "x",
                "expected_output": "y",
                "metadata": {"k": 1},
                "error_kind": "none",
            }
        ],
    )
    (r,) = read(path, {"score": "acc"})
    assert (r.target, r.latency_ms, r.cost_usd) == ("m", 7, 0.5)
    assert (r.output, r.expected, r.metadata, r.error_kind) == ("x", "y", {"k": 1}, "none")


def test_a_mapped_name_is_not_also_read_as_its_own_field(jsonl: Make) -> None:
    path = jsonl("r.jsonl", [{"id": "a", "score": 1, "target": "Paris"}])
    (r,) = read(path, {"expected": "target"})
    assert (r.target, r.expected) == (None, "Paris")


def test_scorers_mapped_and_from_a_scores_object(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"id": "a", "grades": {"judge": 0.5}, "scores": {"exact": 1, "judge": 0.0}},
            {"id": "b", "grades": {"judge": 0.25}},
            {"id": "c", "scores": [{"name": "exact", "score": 0}, {"name": "exact", "score": 1}]},
        ],
    )
    run = mapped.read(path, mapping={"scores.judge": "grades.judge"})
    a, b, c = run.records()
    assert run.scorers == ["judge", "exact"]
    # A mapped scorer wins over the scores object's scorer of the same name.
    assert (a.scores, a.score) == ({"judge": 0.5, "exact": 1.0}, 0.75)
    assert (b.scores, b.score) == ({"judge": 0.25}, 0.25)
    assert (c.scores, c.score) == ({"exact": 0.5}, 0.5)


def test_errors_without_score_count_as_zero(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"id": "a", "acc": 1, "failure": None},
            {"id": "b", "failure": {"message": "rate limited"}, "kind": "infra"},
            {"id": "d", "acc": 0.5, "failure": "judge flaked"},
        ],
    )
    run = mapped.read(path, mapping={"score": "acc", "error": "failure", "error_kind": "kind"})
    a, b, d = run.records()
    assert (a.score, a.error) == (1.0, None)
    assert (b.score, b.error, b.error_kind) == (0.0, "rate limited", "infra")
    assert (d.score, d.error) == (0.5, "judge flaked")
    assert run.is_error.tolist() == [False, True, True]


def test_execution_status_when_the_error_is_not_mapped(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"q": "a", "execution_status": "timeout"},
            {"q": "b", "execution_status": "ok", "s": 1},
            {"q": "c", "execution_status": "crashed"},
        ],
    )
    a, b, c = read(path, {"test_id": "q", "score": "s"})
    # As the jsonl reader reads it: a timeout blames the infrastructure, a crash the agent.
    assert (a.score, a.error, a.error_kind) == (0.0, "execution_status: timeout", "infra")
    assert (b.score, b.error, b.error_kind) == (1.0, None, None)
    assert (c.score, c.error, c.error_kind) == (0.0, "execution_status: crashed", None)


def test_a_mapped_error_may_be_absent_everywhere(jsonl: Make) -> None:
    path = jsonl("r.jsonl", [{"id": "a", "acc": 1}])
    assert read(path, {"score": "acc", "error": "failure", "error_kind": "kind"})[0].error is None


def test_attempts_by_repeated_ids_and_given(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [
            {"q": "a", "m": "x", "s": 1},
            {"q": "a", "m": "y", "s": 1},
            {"q": "a", "m": "x", "s": 0},
            {"q": "b", "m": "x", "s": 0, "try": 3.0},
        ],
    )
    run = mapped.read(path, mapping={"test_id": "q", "target": "m", "score": "s", "attempt": "try"})
    assert run.attempt.tolist() == [1, 1, 2, 3]


def test_run_facts_blank_lines_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        b'{"q": "a", "s": 1, "config": {"temperature": 0}, "timestamp": "2026-01-02"}\r\n'
        b"\r\n"
        b'{"q": "b", "s": 0, "run_status": "cancelled", "timestamp": "2026-01-01"}\r\n'
    )
    run = mapped.read(path, mapping={"test_id": "q", "score": "s"})
    assert [(r.test_id, r.line) for r in run] == [("a", 1), ("b", 3)]
    assert (run.status, run.config) == ("interrupted", {"temperature": 0})
    assert (run.started_at, run.finished_at) == ("2026-01-01", "2026-01-02")


def test_extra_fields_keep_text_and_fingerprint(jsonl: Make) -> None:
    path = jsonl(
        "r.jsonl",
        [{"q": "a", "s": 1, "prompt": "hi", "doc": {"id": 7}}, {"q": "b", "s": 0, "prompt": "yo"}],
    )
    mapping = {"test_id": "q", "score": "s", "input": "prompt"}
    run = mapped.read(path, mapping=mapping, keep_text=False, extra_fields=["doc.id", "nope"])
    assert run.texts is None
    assert run.extra == {"doc.id": [7, None], "nope": [None, None]}
    # The same fingerprint as the jsonl reader gives, for a string or a structured input.
    plain = jsonl("plain.jsonl", [{"test_id": "a", "score": 1, "input": "hi"}])
    assert run.input_hash[0] == jsonl_reader.read(plain).input_hash[0] != 0
    messages = [{"role": "user", "content": "hi"}]
    both = jsonl("both.jsonl", [{"test_id": "a", "score": 1, "input": messages}])
    assert (
        mapped.read(both, mapping={"score": "score"}).input_hash.tolist()
        == jsonl_reader.read(both).input_hash.tolist()
    )
    assert mapped.read(path, mapping=mapping).records()[1].input == "yo"


def test_the_jsonl_reader_hands_a_mapping_over(jsonl: Make) -> None:
    path = jsonl("r.jsonl", [{"question_id": "a", "correct": 1}])
    run = jsonl_reader.read(path, mapping={"test_id": "question_id", "score": "correct"})
    assert (run.format, run.test_ids, run.score.tolist()) == ("jsonl", ["a"], [1.0])


# -- bad input: each message says what, where and how to mend it -----------------------


@pytest.mark.parametrize(
    ("lines", "mapping", "line", "message"),
    [
        (
            ['{"q": "a", "s": 1}', '{"q": "b", "s": "yes"}'],
            {"test_id": "q", "score": "s"},
            2,
            '"s" must be a number, got "yes"',
        ),
        (
            ['{"q": "a", "r": {"acc": [1]}}'],
            {"test_id": "q", "score": "r.acc"},
            1,
            '"r.acc" must be a number, got [1]',
        ),
        (
            ['{"q": "a", "s": 1, "u": {"in": "12"}}'],
            {"test_id": "q", "score": "s", "input_tokens": "u.in"},
            1,
            '"u.in" must be a number, got "12"',
        ),
        (
            ['{"q": "a", "s": 1, "ok": "maybe"}'],
            {"test_id": "q", "score": "s", "passed": "ok"},
            1,
            '"ok" must be true or false (or 1/0, "yes"/"no"), got "maybe"',
        ),
        (
            ['{"q": "a", "s": 1, "n": 0}'],
            {"test_id": "q", "score": "s", "attempt": "n"},
            1,
            '"n" must be a whole number from 1 to 9223372036854775807, got 0',
        ),
        (
            ['{"q": "a", "s": 1, "m": {"name": "x"}}'],
            {"test_id": "q", "score": "s", "target": "m"},
            1,
            '"m" must be a string or an integer, got {"name":"x"}',
        ),
        (
            ['{"q": 1.5, "s": 1}'],
            {"test_id": "q", "score": "s"},
            1,
            '"q" must be a string or an integer, got 1.5',
        ),
        (
            ['{"q": "a", "s": 1}', '{"q": "", "s": 1}'],
            {"test_id": "q", "score": "s"},
            2,
            'record has no test id ("q"); every record needs one',
        ),
        (
            ['{"test_id": "a", "s": 1}', '{"s": 1}'],
            {"score": "s"},
            2,
            'record has no test id ("test_id", "eval_id", "testId" or "id"); '
            "every record needs one",
        ),
        (
            ['{"q": "a", "s": 1}', "", '{"q": "b", "s": null}'],
            {"test_id": "q", "score": "s"},
            3,
            "record 'b' has no \"s\"; every record needs a number "
            '(or an "error" for an attempt that did not run)',
        ),
        (
            ['{"q": "a", "s": 1, "g": 1}', '{"q": "b", "g": null}'],
            {"test_id": "q", "score": "s", "scores.judge": "g"},
            2,
            "record 'b' has no \"s\" (nor a scorer); every record needs a number "
            '(or an "error" for an attempt that did not run)',
        ),
        (
            ['{"q": "a", "scores": {"x": "good"}}'],
            {"test_id": "q"},
            1,
            '"scores.x" must be a number, got "good"',
        ),
        (
            ['{"q": "a", "scores": [0.5]}'],
            {"test_id": "q"},
            1,
            '"scores" must be an object of name -> score (or a list of {"name", "score"}), '
            "got [0.5]",
        ),
        (
            ['{"q": "a", "s": 1}', '{"q": "b", "s": '],
            {"test_id": "q", "score": "s"},
            2,
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
        (
            ['{"q": "a", "s": NaN}'],
            {"test_id": "q", "score": "s"},
            1,
            '"s" must be a finite number, got NaN '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            ['{"q": "a", "s": 1e999}'],
            {"test_id": "q", "score": "s"},
            1,
            "a number is out of range (beyond 1.8e308); write a finite number",
        ),
        (
            ['{"q": "a", "s": 1}', '["b", 1]'],
            {"test_id": "q", "score": "s"},
            2,
            "expected a JSON object, got a list; each line must be one JSON object",
        ),
    ],
)
def test_bad_records_are_named(
    jsonl: Make, lines: list[str], mapping: dict[str, str], line: int, message: str
) -> None:
    path = jsonl("bad.jsonl", lines)
    with pytest.raises(ParseError) as info:
        mapped.read(path, mapping=mapping)
    assert (info.value.path, info.value.line, info.value.reason) == (str(path), line, message)
    assert str(info.value) == f"{path}:{line}: {message}"


@pytest.mark.parametrize(
    ("lines", "mapping", "message"),
    [
        (
            ['{"question_id": "a", "correct": 1}'],
            {"test_id": "question_id", "score": "corect"},
            'no record has "corect" (from --map score=corect); the records have '
            '"question_id", "correct"; check the path',
        ),
        (
            ['{"q": "a", "s": 1, "usage": {"input": 3}}'],
            {"test_id": "q", "score": "s", "input_tokens": "usage.prompt_tokens"},
            'no record has "usage.prompt_tokens" (from --map input_tokens=usage.prompt_tokens); '
            'the records have "q", "s", "usage"; check the path',
        ),
        (
            ['{"q": "a", "s": 1}'],
            {"test_id": "q", "scores.judge": "grade"},
            'no record has "grade" (from --map scores.judge=grade); the records have '
            '"q", "s"; check the path',
        ),
        (
            ['{"question": "a", "correct": 1}'],
            {"score": "correct"},
            'no record has a test id ("test_id", "eval_id", "testId" or "id"); the records '
            'have "question", "correct"; name it with --map test_id=PATH',
        ),
        (
            ['{"question": "a", "correct": 1}'],
            {"test_id": "question"},
            'no record has a score ("score", or scorers in "scores"); the records have '
            '"question", "correct"; name it with --map score=PATH '
            "(or scores.NAME=PATH for each scorer)",
        ),
        (
            ["", "  "],
            {"test_id": "q"},
            "is empty: no records to compare; check the eval wrote its results",
        ),
    ],
)
def test_bad_files_are_named(
    jsonl: Make, lines: list[str], mapping: dict[str, str], message: str
) -> None:
    path = jsonl("bad.jsonl", lines)
    with pytest.raises(ParseError) as info:
        mapped.read(path, mapping=mapping)
    assert (info.value.line, info.value.reason) == (None, message)
    assert str(info.value) == f"{path}: {message}"


def test_unknown_field_in_a_mapping_given_directly(jsonl: Make) -> None:
    path = jsonl("r.jsonl", [{"q": "a", "s": 1}])
    with pytest.raises(UsageError, match=r'^--map: unknown field "test"'):
        mapped.read(path, mapping={"test": "q"})
