"""Golden outputs of the Markdown report, and its escaping of ids and targets."""

from __future__ import annotations

import re

from evaldelta.api import compare, compare_matrix
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.report._markdown import escape, render_markdown, render_matrix_markdown
from tests.conftest import EXAMPLE, FIXTURES

SPEC_REPORT = """\
## evaldelta: Inconclusive ({a} → {b})

> **Warning:** only 3 cases in common: intervals are wide and the verdict is shaky

**Verdict: Inconclusive.** This could be chance: the true change is plausibly between -45 and \
+45 points.

| | Baseline | Candidate | Change | 95% CI |
| --- | ---: | ---: | ---: | --- |
| Mean score | 0.817 | 0.817 | +0.0 points | [-44.8, +44.8] |
| Pass rate | 100.0% | 100.0% | +0.0 points | none: nothing varies |
| Latency (excluding waits) | 830ms | 823ms | -7ms (-0.8%) | [-708ms, +694ms] |

McNemar (exact, two-sided): 0 improved, 0 regressed, p = 1.000 (0 more changed only partly). \
Mean score interval: Student's t, 3 cases.

3 cases compared: 1 win, 1 loss, 1 tie (threshold 0.1); mean delta +0.000.

<details><summary>Per-case changes: 1 regression, 1 improvement</summary>

| Test ID | Baseline | Candidate | Delta | Result |
| --- | ---: | ---: | ---: | --- |
| latency-eval | 0.90 | 0.75 | -0.15 | regression |
| safety-check | 0.70 | 0.90 | +0.20 | improvement |

</details>
"""

MATRIX_REPORT = """\
## evaldelta: 2 of 2 targets regressed vs gpt-4.1 ({src})

3 tests x 3 targets. Baseline: **gpt-4.1**.

| Comparison | Wins | Losses | Ties | Mean delta | 97.5% CI (points) | Verdict |
| --- | ---: | ---: | ---: | ---: | --- | --- |
| gpt-4.1 → gemini-3-flash-preview | 0 | 1 | 2 | -0.033 | [-30.7, +24.0] | Inconclusive |
| gpt-4.1 → gpt-5-mini | 1 | 1 | 1 | -0.017 | [-39.0, +35.6] | Inconclusive |

Intervals: Holm's step-down for 2 comparisons against gpt-4.1 (gemini-3-flash-preview at 97.5%, \
gpt-5-mini at 97.5%).

**Regressed vs gpt-4.1** (mean delta below 0): gemini-3-flash-preview, gpt-5-mini

| Test ID | gemini-3-flash-preview | gpt-4.1 (baseline) | gpt-5-mini |
| --- | ---: | ---: | ---: |
| greeting | 0.90 | 0.85 | 0.95 |
| code-generation | 0.70 | 0.80 | 0.75 |
| summarization | 0.85 | 0.90 | 0.80 |
"""


def test_spec_pairwise_report() -> None:
    a, b = FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"
    assert render_markdown(compare(a, b)) == SPEC_REPORT.format(a=a, b=b)


def test_matrix_report_marks_the_baseline() -> None:
    src = EXAMPLE / "fixtures" / "combined-results.jsonl"
    report = render_matrix_markdown(compare_matrix(load(src), baseline="gpt-4.1"))
    assert report == MATRIX_REPORT.format(src=src)


def test_matrix_without_baseline_lists_every_pair() -> None:
    src = EXAMPLE / "fixtures" / "combined-results.jsonl"
    report = render_matrix_markdown(compare_matrix(load(src)))
    assert report.startswith(f"## evaldelta: score matrix ({src})\n")
    assert "| gemini-3-flash-preview → gpt-4.1 | 1 | 0 | 2 | +0.033 |" in report
    assert "| Test ID | gemini-3-flash-preview | gpt-4.1 | gpt-5-mini |" in report
    assert "(baseline)" not in report
    assert "Intervals: 95%, Student's t, 3 cases." in report


def test_big_matrix_folds_and_is_cut() -> None:
    records = [Record(f"q{i}", score=(i % 3) / 2, target=t) for i in range(600) for t in ("a", "b")]
    report = render_matrix_markdown(compare_matrix(Run.from_records(records), baseline="a"))
    assert "<details><summary>Score matrix: 600 tests x 2 targets</summary>" in report
    assert report.count("\n| q") == 500
    assert "... and 100 more tests (see the JSON output)." in report
    assert report.rstrip().endswith("</details>")


def test_gate_line_names_the_decision() -> None:
    a, b = FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"
    report = render_markdown(compare(a, b), gate=(1, "block: something"))
    assert "**Gate: block** (exit code 1)." in report


def test_escape_neutralises_markdown_and_html() -> None:
    assert escape("a|b") == "a\\|b"
    assert escape("`code`") == "\\`code\\`"
    assert escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert escape("&lt;") == "&amp;lt;"
    assert escape("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert escape("*bold* ~strike~") == "\\*bold\\* \\~strike\\~"
    assert escape("one\ntwo\r\nthree") == "one two three"
    # Underscores inside words are left alone (GFM does not read them as emphasis).
    assert escape("long_chain-52") == "long_chain-52"
    assert escape("_emphasis_") == "\\_emphasis\\_"


def _table_rows(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("|")]


def _cells(row: str) -> list[str]:
    """A GFM table row's cells: split on pipes that are not backslash-escaped."""
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


def test_hostile_ids_and_targets_keep_the_tables_whole() -> None:
    hostile = ["a|b", "`tick`", "<img src=x onerror=alert(1)>", "x\ny", "</details>"]
    records = [
        Record(tid, score=s, target=t)
        for tid in hostile
        for t, s in (("base|line", 1.0), ("<b>cand</b>", 0.0))
    ]
    run = Run.from_records(records)
    pairwise = render_markdown(
        compare(run, run, baseline_target="base|line", candidate_target="<b>cand</b>")
    )
    matrix = render_matrix_markdown(compare_matrix(run, baseline="base|line"))
    for report in (pairwise, matrix):
        assert "<img" not in report
        assert "<b>" not in report
        assert report.count("</details>") == report.count("<details>")
        for row in _table_rows(report):
            assert row.count("`") == row.count("\\`"), row
    case_rows = [r for r in _table_rows(pairwise) if "regression" in r]
    assert len(case_rows) == len(hostile)
    assert all(len(_cells(r)) == 5 for r in case_rows)
    matrix_rows = [r for r in _table_rows(matrix) if r.endswith("| 1.00 | 0.00 |")]
    assert len(matrix_rows) == len(hostile)
    assert all(len(_cells(r)) == 3 for r in matrix_rows)
    assert "base\\|line (baseline)" in matrix
