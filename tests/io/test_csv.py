"""The CSV reader: the columns it reads, --map, scorers, TSV, and every bad input it names."""

from __future__ import annotations

import csv as stdlib_csv
import gzip
import math
from pathlib import Path

import pytest

from evaldelta.errors import ParseError, UsageError
from evaldelta.io import _csv as csv
from evaldelta.io import _jsonl as jsonl
from tests.conftest import FIXTURES

CSV_FIXTURES = FIXTURES / "csv"


def write(tmp_path: Path, text: str, name: str = "results.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_reads_plain_columns() -> None:
    run = csv.read(CSV_FIXTURES / "results.csv")
    records = run.records()
    assert run.format == "csv"
    assert [(r.test_id, r.attempt, r.line) for r in records] == [
        ("q1", 1, 2),
        ("q1", 2, 3),
        ("q2", 1, 4),  # its input cell spans lines 4 and 5
        ("q3", 3, 6),
    ]
    q1, q1_again, q2, q3 = records
    assert (q1.target, q1.score, q1.passed, q1.category) == ("gpt-a", 1.0, True, "math")
    assert (q1.latency_ms, q1.input_tokens, q1.output_tokens, q1.cost_usd) == (1200, 100, 20, 0.002)
    assert (q1_again.score, q1_again.passed, q1_again.latency_ms) == (0.5, False, 1350.5)
    assert q1_again.output == "four, I think"
    # An error without a score scores 0; empty cells stay absent, never 0.
    assert (q2.score, q2.error, q2.error_kind, q2.passed) == (
        0.0,
        "timeout after 60s",
        "timeout",
        None,
    )
    assert (q2.latency_ms, q2.input_tokens, q2.cost_usd) == (None, None, None)
    assert q2.input == "Capital of France?\n(one word)"
    assert (q2.output, q2.expected) == (None, "Paris")
    assert (q3.passed, q3.category, q3.output_tokens) == (False, None, None)
    assert run.is_error.tolist() == [False, False, True, False]
    assert run.input_hash[0] == run.input_hash[1] != 0


def test_map_renames_columns() -> None:
    run = csv.read(
        CSV_FIXTURES / "mapped.csv",
        mapping={
            "test_id": "question_id",
            "target": "model",
            "score": "correct",
            "input_tokens": "prompt_tokens",
            "category": "difficulty",
        },
    )
    assert [(r.test_id, r.attempt, r.score) for r in run] == [
        ("101", 1, 1.0),
        ("102", 1, 0.0),
        ("101", 2, 1.0),
    ]
    assert run.target_names == ["model-x"]
    assert run.records()[1].input_tokens == 15
    assert run.categories == ["easy", "hard"]


def test_scorer_columns_and_tsv() -> None:
    run = csv.read(CSV_FIXTURES / "scorers.tsv")
    a, b, c = run.records()
    # Ids lose surrounding spaces; the usual names match whatever their case ("Target").
    assert (a.test_id, a.target) == ("a", "m1")
    assert run.scorers == ["exact", "judge"]
    # No score column: a row's score is the mean of the scorers it has.
    assert (a.score, a.scores) == (0.75, {"exact": 1.0, "judge": 0.5})
    assert (b.score, b.scores) == (0.0, {"exact": 0.0})
    assert (c.score, c.scores) == (0.25, {"judge": 0.25})


def test_score_column_wins_over_the_mean_of_scorers(tmp_path: Path) -> None:
    path = write(tmp_path, "id,score,score_exact,score_judge\na,0.9,1,0\nb,,1,0\n")
    run = csv.read(path)
    assert run.score.tolist() == [0.9, 0.5]
    assert run.scorers == ["exact", "judge"]


def test_mapped_scorers_join_the_scorer_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "id,grade,score_exact,score_em\na,0.5,1,1\n")
    run = csv.read(path, mapping={"scores.judge": "grade", "scores.exact": "score_em"})
    # A mapped scorer keeps its name; a column the mapping took is not read again.
    assert run.records()[0].scores == {"judge": 0.5, "exact": 1.0}


def test_a_mapped_column_is_not_also_read_under_its_own_name(tmp_path: Path) -> None:
    path = write(tmp_path, "test_id,target,score\na,Paris,1\n")
    run = csv.read(path, mapping={"expected": "target"})
    (r,) = run.records()
    assert (r.target, r.expected) == (None, "Paris")


def test_semicolons_crlf_bom_and_blank_rows(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_bytes(b"\xef\xbb\xbfTest_ID;Score;Passed\r\n\r\na;1;Yes\r\n;;\r\nb;0,0;no\r\n")
    with pytest.raises(ParseError) as info:
        csv.read(path)
    # A decimal comma is not a number here: said, not guessed.
    assert (info.value.line, info.value.reason) == (
        5,
        'column "Score" must be a number, got "0,0"',
    )
    path.write_bytes(b"\xef\xbb\xbfTest_ID;Score;Passed\r\n\r\na;1;Yes\r\n;;\r\nb;0;no\r\n")
    run = csv.read(path)
    assert [(r.test_id, r.score, r.passed, r.line) for r in run] == [
        ("a", 1.0, True, 3),
        ("b", 0.0, False, 5),
    ]


def test_gzip(tmp_path: Path) -> None:
    path = tmp_path / "results.csv.gz"
    path.write_bytes(gzip.compress((CSV_FIXTURES / "results.csv").read_bytes()))
    assert len(csv.read(path)) == 4
    assert csv.sniff(path, (CSV_FIXTURES / "results.csv").read_bytes())


def test_attempt_numbers_beyond_a_floats_exact_integers_are_read_from_their_digits(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "id,score,attempt\na,1,9223372036854775807\nb,1,9223372036854775000\nc,1,9007199254740993\n",
    )
    assert csv.read(path).attempt.tolist() == [2**63 - 1, 9223372036854775000, 2**53 + 1]


def test_numbers_booleans_and_attempts(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "id,score,passed,attempt,latency_ms\n"
        "a, 1e-1 ,TRUE,2.0,-0\n"
        "b,-3,pass,,\n"
        "c,.5,0,1,7\n"
        "c,+2,FAIL,,\n",
    )
    run = csv.read(path)
    assert run.score.tolist() == [0.1, -3.0, 0.5, 2.0]
    assert [r.passed for r in run] == [True, True, False, False]
    # Unnumbered attempts are numbered in order within their test case.
    assert run.attempt.tolist() == [2, 1, 1, 2]
    assert [r.latency_ms for r in run] == [0.0, None, 7.0, None]


def test_keep_text_false_drops_text_but_keeps_the_fingerprint() -> None:
    run = csv.read(CSV_FIXTURES / "results.csv", keep_text=False)
    assert run.texts is None
    assert run.records()[0].input is None
    assert run.input_hash[0] != 0


def test_input_fingerprint_matches_the_jsonl_reader(tmp_path: Path) -> None:
    from_csv = csv.read(write(tmp_path, 'test_id,score,input\na,1,"say ""hi"""\n'))
    lines = tmp_path / "r.jsonl"
    lines.write_text('{"test_id": "a", "score": 1, "input": "say \\"hi\\""}\n')
    assert from_csv.input_hash.tolist() == jsonl.read(lines).input_hash.tolist()


def test_extra_fields(tmp_path: Path) -> None:
    path = write(tmp_path, "id,score,doc\na,1,d1\nb,0,\n")
    run = csv.read(path, extra_fields=("doc", "nope"))
    assert run.extra == {"doc": ["d1", None], "nope": [None, None]}


def test_long_cells(tmp_path: Path) -> None:
    long_output = "x" * 200_000  # beyond the csv module's default cell limit
    before = stdlib_csv.field_size_limit()
    run = csv.read(write(tmp_path, f"id,score,output\na,1,{long_output}\n"))
    assert run.records()[0].output == long_output
    assert stdlib_csv.field_size_limit() == before


def test_empty_scorer_column_is_no_scorer(tmp_path: Path) -> None:
    run = csv.read(write(tmp_path, "id,score,score_judge\na,1,\n"))
    assert run.scorers == []
    assert math.isnan(run.latency_ms[0])


@pytest.mark.parametrize(
    ("name", "head", "claimed"),
    [
        ("results.csv", b"anything,at,all\n1,2,3\n", True),
        ("RESULTS.TSV", b"a\tb\n", True),
        ("results.csv.gz", b"question,correct\n", True),
        ("results.txt", b"test_id,score\na,1\n", True),
        ("results.txt", b"\n\nid\tscore\na\t1\n", True),
        ("results.dat", b'"Eval_ID";"Score"\n', True),
        ("results.txt", b"question,correct\n", False),
        ("results.txt", b"id\n1\n", False),
        ("results.csv", b'{"test_id": "a", "score": 1}\n', False),
        ("results.csv", b'[{"test_id": "a"}]\n', False),
        ("results.csv", b"[ 1, 2]\n", False),
        ("results.csv", b"[provider] prompt,test_id\n", True),
        ("results.csv", b"  \n", False),
        ("results.jsonl", b'{"test_id": "a", "score": 1}\n', False),
        ("results.txt", b"id,score\x00\n", False),
    ],
)
def test_sniff(name: str, head: bytes, claimed: bool) -> None:
    assert csv.sniff(Path(name), head) is claimed


def test_sniff_never_claims_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "runs.csv"
    folder.mkdir()
    assert csv.sniff(folder, b"") is False


# -- bad input: each message says what, where and how to mend it -----------------------


def _error(path: Path, mapping: dict[str, str] | None = None) -> ParseError:
    with pytest.raises(ParseError) as info:
        csv.read(path, mapping=mapping)
    assert str(info.value) == (
        f"{path}:{info.value.line}: {info.value.reason}"
        if info.value.line is not None
        else f"{path}: {info.value.reason}"
    )
    return info.value


@pytest.mark.parametrize(
    ("text", "mapping", "line", "message"),
    [
        (
            "question_id,correct\n1,yes\n",
            {"test_id": "question_id", "score": "correct"},
            2,
            'column "correct" must be a number, got "yes"',
        ),
        (
            "id,score\na,1\nb,0\nc,0\nd,1\ne,0\nf,high\n",
            None,
            7,
            'column "score" must be a number, got "high"',
        ),
        ("id,score\na,nan\n", None, 2, 'column "score" must be a finite number, got "nan"'),
        ("id,score\na,-inf\n", None, 2, 'column "score" must be a finite number, got "-inf"'),
        ("id,score\na,1_000\n", None, 2, 'column "score" must be a number, got "1_000"'),
        ("id,score\na,85%\n", None, 2, 'column "score" must be a number, got "85%"'),
        (
            "id,score_judge\na,good\n",
            None,
            2,
            'column "score_judge" must be a number, got "good"',
        ),
        (
            "id,score,input_tokens\na,1,1 200\n",
            None,
            2,
            'column "input_tokens" must be a number, got "1 200"',
        ),
        (
            "id,score,passed\na,1,maybe\n",
            None,
            2,
            'column "passed" must be true or false (or 1/0, yes/no, pass/fail), got "maybe"',
        ),
        (
            "id,score,attempt\na,1,0\n",
            None,
            2,
            'column "attempt" must be a whole number from 1 to 9223372036854775807, got "0"',
        ),
        (
            "id,score,attempt\na,1,1.5\n",
            None,
            2,
            'column "attempt" must be a whole number from 1 to 9223372036854775807, got "1.5"',
        ),
        (
            "id,score\na,1\n  ,0\n",
            None,
            3,
            'row has no test id (column "id" is empty); every row needs one',
        ),
        (
            "id,score\na,1\nb,\n",
            None,
            3,
            "row 'b' has no score (column \"score\" is empty); every row needs a number "
            '(or an "error" for an attempt that did not run)',
        ),
        (
            "id,score,score_a,scores.b\na,,,0\nb,,,\n",
            None,
            3,
            'row \'b\' has no score (columns "score", "score_a" and "scores.b" are empty); '
            'every row needs a number (or an "error" for an attempt that did not run)',
        ),
        (
            "question,correct,model\nq,1,m\n",
            None,
            1,
            'no test id column ("test_id", "eval_id", "testId" or "id"); columns found: '
            '"question", "correct", "model"; name it with --map test_id=COLUMN',
        ),
        (
            "\nid,correct,model\nq,1,m\n",
            None,
            2,
            'no score column ("score", or scorer columns "score_<name>"); columns found: '
            '"id", "correct", "model"; name it with --map score=COLUMN',
        ),
        (
            "question_id,correct\nq,1\n",
            {"test_id": "question_id", "score": "corect"},
            1,
            'no column "corect" (from --map score=corect); columns found: "question_id", '
            '"correct"; check the name',
        ),
        (
            "id,score\nq,1\n",
            {"scores.judge": "Judge"},
            1,
            'no column "Judge" (from --map scores.judge=Judge); columns found: "id", "score"; '
            "check the name",
        ),
        (
            "id,score,score\nq,1,0\n",
            None,
            1,
            'column "score" appears 2 times in the header; rename all but one',
        ),
        (
            "id,score,output\na,1,ok\nb,0,yes, but late\n",
            None,
            3,
            "row has 4 cells, but the header has 3 columns; "
            'put a cell that contains a comma in "quotes"',
        ),
        (
            "id\tscore\toutput\na\t1\tok\tmore\n",
            None,
            2,
            "row has 4 cells, but the header has 3 columns; "
            'put a cell that contains a tab in "quotes"',
        ),
        (
            "id,score,output\na,1\n",
            None,
            2,
            "row has 2 cells, but the header has 3 columns; every row needs a cell for each "
            "column (an empty cell is fine)",
        ),
        (
            'id,score,output\na,1,ok\nb,0,"never closed\nc,1,ok\n',
            None,
            3,
            "not valid CSV (a quoted cell is never closed: "
            'a cell that starts with " must end with ")',
        ),
        (
            'id,score,output\na,1,"ok" then more\n',
            None,
            2,
            "not valid CSV (a quoted cell goes on after its closing quote: "
            'write a " inside one as "")',
        ),
    ],
)
def test_bad_input_is_named(
    tmp_path: Path, text: str, mapping: dict[str, str] | None, line: int, message: str
) -> None:
    error = _error(write(tmp_path, text), mapping=mapping)
    assert (error.line, error.reason) == (line, message)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_bytes("id,score,input\na,1,ok\nb,0,caf\u00e9\n".encode("latin-1"))
    error = _error(path)
    assert (error.line, error.reason) == (
        3,
        "not valid UTF-8 (byte 0xe9 at column 8); save the file as UTF-8",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '\n{"test_id": "a", "score": 1}\n',
            "is JSON, not CSV; read it with --input-format jsonl (with --map if need be)",
        ),
        ("", "is empty: no records to compare; check the eval wrote its results"),
        (" \n\n", "is empty: no records to compare; check the eval wrote its results"),
        (",,\n\n", "is empty: no records to compare; check the eval wrote its results"),
        (
            "id,score\n\n",
            "has a header row but no rows: no records to compare; check the eval wrote its results",
        ),
    ],
)
def test_empty(tmp_path: Path, text: str, message: str) -> None:
    error = _error(write(tmp_path, text))
    assert (error.line, error.reason) == (None, message)


def test_unknown_mapped_field(tmp_path: Path) -> None:
    path = write(tmp_path, "id,score\na,1\n")
    with pytest.raises(
        UsageError, match=r'^--map: unknown field "scor" \(did you mean "score"\?\)'
    ):
        csv.read(path, mapping={"scor": "score"})
