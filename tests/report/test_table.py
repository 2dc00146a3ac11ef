"""Golden outputs of the terminal tables."""

from __future__ import annotations

from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.pairing._matrix import build_matrix
from evaldelta.pairing._pairwise import pair
from evaldelta.report._table import render_matrix_table, render_table
from evaldelta.report._text import width
from tests.conftest import FIXTURES

SPEC_TABLE = """
Comparing: {a} -> {b}

  Test ID        Baseline  Candidate     Delta  Result
  -------------  --------  ---------  --------  --------
  safety-check       0.70       0.90     +0.20  ✓ win
  accuracy-test      0.85       0.80     -0.05  = tie
  latency-eval       0.90       0.75     -0.15  ✗ loss

Summary: 1 win, 1 loss, 1 tie | Mean delta: +0.000 | Status: neutral
"""

SPEC_MATRIX = """\
Score matrix: {src} (3 tests x 3 targets)

Test ID          gemini-3-flash-preview  gpt-4.1  gpt-5-mini
────────────────────────────────────────────────────────────
greeting                           0.90     0.85        0.95
code-generation                    0.70     0.80        0.75
summarization                      0.85     0.90        0.80

Pairwise Summary:
  gemini-3-flash-preview → gpt-4.1:     1 win, 0 losses, 2 ties  (Δ +0.033)
  gemini-3-flash-preview → gpt-5-mini:  0 wins, 0 losses, 3 ties  (Δ +0.017)
  gpt-4.1 → gpt-5-mini:                 1 win, 1 loss, 1 tie  (Δ -0.017)
"""

BASELINE_MATRIX_TAIL = """\
Pairwise Summary:
  gpt-4.1 → gemini-3-flash-preview:  0 wins, 1 loss, 2 ties  (Δ -0.033)  regressed
  gpt-4.1 → gpt-5-mini:              1 win, 1 loss, 1 tie  (Δ -0.017)  regressed

Regressed vs gpt-4.1: gemini-3-flash-preview, gpt-5-mini
"""


def test_spec_pairwise_table() -> None:
    a, b = FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"
    assert render_table(pair(load(a), load(b))) == SPEC_TABLE.format(a=a, b=b)


def test_spec_matrix_table() -> None:
    src = FIXTURES / "combined-results.jsonl"
    assert render_matrix_table(build_matrix(load(src))) == SPEC_MATRIX.format(src=src)


def test_matrix_with_baseline_marks_it() -> None:
    text = render_matrix_table(
        build_matrix(load(FIXTURES / "combined-results.jsonl"), baseline="gpt-4.1")
    )
    assert "gpt-4.1 (baseline)" in text
    assert text.endswith(BASELINE_MATRIX_TAIL)


def test_colour_only_when_asked() -> None:
    c = pair(load(FIXTURES / "baseline.jsonl"), load(FIXTURES / "candidate.jsonl"))
    assert "\x1b[" not in render_table(c)
    coloured = render_table(c, color=True)
    assert "\x1b[32m✓ win\x1b[0m" in coloured
    assert "\x1b[31m✗ loss\x1b[0m" in coloured
    assert "\x1b[90m= tie\x1b[0m" in coloured
    assert "Status: \x1b[90mneutral\x1b[0m" in coloured


def test_attempts_unmatched_and_errors_are_shown() -> None:
    base = Run.from_records(
        [Record("数学", 1), Record("b", 0.5), Record("b", 0), Record("gone", 0, error="x")]
    )
    cand = Run.from_records([Record("数学", 0), Record("b", 0.5), Record("new", 1)])
    text = render_table(pair(base, cand))
    lines = text.splitlines()
    header = next(line for line in lines if "Test ID" in line)
    row = next(line for line in lines if "数学" in line)
    # Wide characters take two columns: the columns still line up.
    assert width(row[: row.index("1.00") + 4]) == width(header[: header.index("Baseline") + 8])
    assert "  b            0.25       0.50     2 / 1     +0.25  ✓ win" in lines
    assert "Unmatched: 1 only in baseline (gone); 1 only in candidate (new)" in lines
    assert lines[-1] == "Summary: 1 win, 1 loss, 0 ties | Mean delta: -0.375 | Status: regressed"
    assert any(
        line.startswith("Errors: 1 attempt in baseline, 0 attempts in candidate") for line in lines
    )


def test_no_common_cases() -> None:
    c = pair(Run.from_records([Record("a", 1)]), Run.from_records([Record("b", 1)]))
    assert "No test ids in common between the baseline and the candidate." in render_table(c)


def test_matrix_missing_cell_and_attempts() -> None:
    run = Run.from_records(
        [Record("t1", 0.5, target="a"), Record("t1", 1, target="a"), Record("t2", 1, target="b")]
    )
    text = render_matrix_table(build_matrix(run, baseline="a"))
    assert "t1           0.75 (2)        --" in text
    assert "t2                 --      1.00" in text
    assert "(n): mean score over n attempts" in text
    assert "  a → b:  no tests in common" in text
    assert text.endswith("Cannot judge vs a (no tests in common): b\n")


def test_tiny_deltas_keep_their_sign() -> None:
    c = pair(Run.from_records([Record("a", 0.501)]), Run.from_records([Record("a", 0.5)]), 0.1)
    text = render_table(c)
    assert "  -0.001  = tie" in text
    assert "Mean delta: -0.001 | Status: regressed" in text
    same = pair(Run.from_records([Record("a", 0.5)]), Run.from_records([Record("a", 0.5)]))
    assert "   +0.00  = tie" in render_table(same)
