"""End to end through the installed ``evaldelta`` command: every acceptance
criterion of the two compare specs, every exit code, every bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from evaldelta.io import formats
from tests.conftest import EVALDELTA, FIXTURES, Result

Cli = Callable[..., Result]
Jsonl = Callable[..., Path]
BASE = FIXTURES / "baseline.jsonl"
CAND = FIXTURES / "candidate.jsonl"
COMBINED = FIXTURES / "combined-results.jsonl"


# -- spec 000: two-file pairwise ---------------------------------------------------------


def test_pairwise_table_of_the_spec(evaldelta: Cli) -> None:
    r = evaldelta("compare", BASE, CAND)
    assert r.code == 0, r.err
    assert r.err == ""
    lines = r.out.splitlines()
    assert f"Comparing: {BASE} -> {CAND}" in lines
    assert "  safety-check       0.70       0.90     +0.20  ✓ win" in lines
    assert "  accuracy-test      0.85       0.80     -0.05  = tie" in lines
    assert "  latency-eval       0.90       0.75     -0.15  ✗ loss" in lines
    assert "Summary: 1 win, 1 loss, 1 tie | Mean delta: +0.000 | Status: neutral" in lines
    assert lines[-1].startswith("Verdict: Inconclusive. This could be chance")


def test_regression_exits_1_and_improvement_exits_0(evaldelta: Cli, jsonl: Jsonl) -> None:
    worse = jsonl("worse.jsonl", [{"test_id": "safety-check", "score": 0.1}])
    r = evaldelta("compare", BASE, worse)
    assert r.code == 1
    assert "Status: regressed" in r.out
    r = evaldelta("compare", worse, BASE)
    assert r.code == 0
    assert "Status: improved" in r.out


def test_threshold_option(evaldelta: Cli) -> None:
    for flag in ("--threshold", "-t"):
        r = evaldelta("compare", BASE, CAND, flag, "0.05")
        assert r.code == 0
        assert "  accuracy-test      0.85       0.80     -0.05  ✗ loss" in r.out.splitlines()
        assert "Summary: 1 win, 2 losses, 0 ties" in r.out
    r = evaldelta("compare", BASE, CAND, "-t", "0.25")
    assert "Summary: 0 wins, 0 losses, 3 ties" in r.out


@pytest.mark.parametrize(
    "flags", [["--json"], ["--format", "json"], ["-f", "json"], ["--format=json"]]
)
def test_json_output(evaldelta: Cli, flags: list[str]) -> None:
    r = evaldelta("compare", BASE, CAND, *flags)
    assert r.code == 0
    data = json.loads(r.out)
    assert data["matched"][0] == {
        "test_id": "safety-check",
        "score1": 0.7,
        "score2": 0.9,
        "delta": 0.2,
        "outcome": "win",
        "attempts1": 1,
        "attempts2": 1,
        "errors1": 0,
        "errors2": 0,
    }
    assert {k: data["unmatched"][k] for k in ("file1", "file2")} == {"file1": 0, "file2": 0}
    assert {
        k: data["summary"][k] for k in ("total", "matched", "wins", "losses", "ties", "mean_delta")
    } == {"total": 6, "matched": 3, "wins": 1, "losses": 1, "ties": 1, "mean_delta": 0.0}


def test_unmatched_counts_in_json_and_table(evaldelta: Cli, jsonl: Jsonl) -> None:
    extra = jsonl(
        "extra.jsonl",
        [{"test_id": "safety-check", "score": 0.9}, {"test_id": "brand-new", "score": 1}],
    )
    data = json.loads(evaldelta("compare", BASE, extra, "--json").out)
    assert data["unmatched"] == {
        "file1": 2,
        "file2": 1,
        "file1_ids": ["accuracy-test", "latency-eval"],
        "file2_ids": ["brand-new"],
    }
    r = evaldelta("compare", BASE, extra)
    assert (
        "Unmatched: 2 only in baseline (accuracy-test, latency-eval); "
        "1 only in candidate (brand-new)" in r.out
    )


def test_colour_rules(evaldelta: Cli) -> None:
    # Piped output: no colour. FORCE_COLOR forces it; NO_COLOR (non-empty) stops it.
    assert "\x1b[" not in evaldelta("compare", BASE, CAND).out
    assert "\x1b[32m" in evaldelta("compare", BASE, CAND, env={"FORCE_COLOR": "1"}).out
    assert (
        "\x1b["
        not in evaldelta("compare", BASE, CAND, "--color", "never", env={"FORCE_COLOR": "1"}).out
    )
    assert "\x1b[31m" in evaldelta("compare", BASE, CAND, "--color", "always").out


def test_no_color_on_a_terminal(tmp_path: Path) -> None:
    """On a real terminal colour is on, unless NO_COLOR is set to a non-empty value."""
    import pty

    def on_tty(env: dict[str, str]) -> str:
        main, child = pty.openpty()
        full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
        full.update(env)
        subprocess.run(
            [str(EVALDELTA), "compare", str(BASE), str(CAND)],
            stdout=child,
            stderr=child,
            env=full,
            timeout=60,
            check=False,
        )
        os.close(child)
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        os.close(main)
        return b"".join(chunks).decode()

    assert "\x1b[32m" in on_tty({})
    assert "\x1b[" not in on_tty({"NO_COLOR": "1"})
    assert "\x1b[32m" in on_tty({"NO_COLOR": ""})  # empty means unset (no-color.org)


def test_ci_gate_script_from_the_spec(tmp_path: Path, jsonl: Jsonl) -> None:
    script = tmp_path / "gate.sh"
    script.write_text(
        "#!/bin/bash\n"
        f'"{EVALDELTA}" compare "$1" "$2"\n'
        "if [ $? -eq 1 ]; then\n"
        '  echo "Regression detected! Candidate performs worse than baseline."\n'
        "  exit 1\nfi\n"
        'echo "Candidate is equal or better than baseline."\n'
    )
    ok = subprocess.run(
        ["bash", str(script), BASE, CAND], capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0
    assert ok.stdout.endswith("Candidate is equal or better than baseline.\n")
    worse = jsonl("worse.jsonl", [{"test_id": "latency-eval", "score": 0.1}])
    bad = subprocess.run(
        ["bash", str(script), BASE, worse], capture_output=True, text=True, check=False
    )
    assert bad.returncode == 1
    assert "Regression detected!" in bad.stdout


def test_pairwise_picks_targets_from_each_file(evaldelta: Cli) -> None:
    r = evaldelta(
        "compare", COMBINED, COMBINED, "--baseline", "gpt-4.1", "--candidate", "gpt-5-mini"
    )
    assert r.code == 1
    assert f"Comparing: {COMBINED} [gpt-4.1] -> {COMBINED} [gpt-5-mini]" in r.out


def test_output_file(evaldelta: Cli, tmp_path: Path) -> None:
    out = tmp_path / "cmp.json"
    r = evaldelta("compare", BASE, CAND, "--json", "-o", out)
    assert (r.code, r.out) == (0, "")
    assert json.loads(out.read_text())["summary"]["matched"] == 3


# -- spec 001: combined file, pairwise and N-way -----------------------------------------


def test_matrix_of_a_combined_file(evaldelta: Cli) -> None:
    r = evaldelta("compare", COMBINED)
    assert r.code == 0  # informational without --baseline
    lines = r.out.splitlines()
    assert "Test ID          gemini-3-flash-preview  gpt-4.1  gpt-5-mini" in lines
    assert "greeting                           0.90     0.85        0.95" in lines
    assert "code-generation                    0.70     0.80        0.75" in lines
    assert "summarization                      0.85     0.90        0.80" in lines
    assert "Pairwise Summary:" in lines
    for expected in (
        "  gemini-3-flash-preview → gpt-4.1:     1 win, 0 losses, 2 ties  (Δ +0.033)",
        "  gemini-3-flash-preview → gpt-5-mini:  0 wins, 0 losses, 3 ties  (Δ +0.017)",
        "  gpt-4.1 → gpt-5-mini:                 1 win, 1 loss, 1 tie  (Δ -0.017)",
    ):
        assert any(line.startswith(expected) for line in lines), expected


def test_combined_pairwise_with_baseline_and_candidate(evaldelta: Cli) -> None:
    r = evaldelta("compare", COMBINED, "--baseline", "gpt-4.1", "--candidate", "gpt-5-mini")
    assert r.code == 1
    lines = r.out.splitlines()
    assert f"Comparing: gpt-4.1 -> gpt-5-mini (targets of {COMBINED})" in lines
    assert "  greeting             0.85       0.95     +0.10  ✓ win" in lines
    assert "Summary: 1 win, 1 loss, 1 tie | Mean delta: -0.017 | Status: regressed" in lines
    r = evaldelta("compare", COMBINED, "-b", "gpt-5-mini", "-c", "gpt-4.1")
    assert r.code == 0
    assert "Status: improved" in r.out


def test_matrix_with_baseline_exits_1_on_regression(evaldelta: Cli, jsonl: Jsonl) -> None:
    r = evaldelta("compare", COMBINED, "--baseline", "gpt-4.1")
    assert r.code == 1
    assert "gpt-4.1 (baseline)" in r.out
    assert "Regressed vs gpt-4.1: gemini-3-flash-preview, gpt-5-mini" in r.out
    # The weakest target as the baseline: nobody regresses against it.
    path = jsonl(
        "c.jsonl",
        [
            {"test_id": "a", "target": "old", "score": 0.5},
            {"test_id": "a", "target": "new", "score": 0.9},
            {"test_id": "b", "target": "old", "score": 0.5},
            {"test_id": "b", "target": "new", "score": 0.5},
        ],
    )
    r = evaldelta("compare", path, "--baseline", "old")
    assert r.code == 0
    assert "No target regressed vs old." in r.out


def test_targets_limit_the_matrix(evaldelta: Cli) -> None:
    r = evaldelta("compare", COMBINED, "--targets", "gpt-5-mini", "gpt-4.1")
    assert r.code == 0
    lines = r.out.splitlines()
    assert "Test ID          gpt-5-mini  gpt-4.1" in lines
    assert "gemini" not in r.out
    assert any(
        line.startswith("  gpt-5-mini → gpt-4.1:  1 win, 1 loss, 1 tie  (Δ +0.017)")
        for line in lines
    )
    # Repeating the flag works too, as agentv's --targets does.
    again = evaldelta("compare", COMBINED, "--targets", "gpt-5-mini", "--targets", "gpt-4.1")
    assert again.out == r.out


def test_matrix_json(evaldelta: Cli) -> None:
    r = evaldelta("compare", COMBINED, "--json")
    assert r.code == 0
    data = json.loads(r.out)
    assert data["targets"] == ["gemini-3-flash-preview", "gpt-4.1", "gpt-5-mini"]
    assert data["matrix"][1] == {
        "test_id": "code-generation",
        "scores": {"gemini-3-flash-preview": 0.7, "gpt-4.1": 0.8, "gpt-5-mini": 0.75},
        "attempts": {"gemini-3-flash-preview": 1, "gpt-4.1": 1, "gpt-5-mini": 1},
    }
    assert len(data["pairwise"]) == 3
    pw = data["pairwise"][2]
    assert (pw["baseline"], pw["candidate"]) == ("gpt-4.1", "gpt-5-mini")
    assert pw["summary"]["mean_delta"] == -0.016666666667
    assert pw["matched"][0]["test_id"] == "greeting"
    with_base = json.loads(evaldelta("compare", COMBINED, "--json", "--baseline", "gpt-4.1").out)
    assert with_base["baseline"] == "gpt-4.1"
    assert with_base["regressions"] == ["gemini-3-flash-preview", "gpt-5-mini"]


def test_python_dash_m(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evaldelta", "compare", str(BASE), str(CAND)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    assert "Status: neutral" in proc.stdout


def test_version_and_help(evaldelta: Cli) -> None:
    assert evaldelta("--version").out.startswith("evaldelta ")
    r = evaldelta("compare", "--help")
    assert r.code == 0
    assert "exit codes:" in r.out
    assert evaldelta().code == 2  # no command: usage, and "cannot judge"


def test_repeated_attempts_are_averaged(evaldelta: Cli, jsonl: Jsonl) -> None:
    base = jsonl("b.jsonl", [{"test_id": "a", "score": s} for s in (1, 0, 1)])
    cand = jsonl("c.jsonl", [{"test_id": "a", "score": s} for s in (1, 1, 1)])
    r = evaldelta("compare", base, cand)
    assert "  a            0.67       1.00     3 / 3     +0.33  ✓ win" in r.out.splitlines()


def test_errors_are_counted(evaldelta: Cli, jsonl: Jsonl) -> None:
    base = jsonl("b.jsonl", [{"test_id": "a", "score": 1}, {"test_id": "b", "score": 1}])
    cand = jsonl(
        "c.jsonl", [{"test_id": "a", "error": "rate limited"}, {"test_id": "b", "score": 1}]
    )
    r = evaldelta("compare", base, cand)
    assert r.code == 1
    assert "Errors: 0 attempts in baseline, 1 attempt in candidate had an error" in r.out
    assert json.loads(evaldelta("compare", base, cand, "--json").out)["summary"]["errors"] == {
        "file1": 0,
        "file2": 1,
    }


# -- bad input: one line on stderr, exit 2, no traceback ----------------------------------


def _bad(r: Result, message: str) -> None:
    assert r.code == 2, (r.out, r.err)
    assert r.err == f"evaldelta: error: {message}\n"
    assert "Traceback" not in r.err


def test_missing_file(evaldelta: Cli, tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    _bad(
        evaldelta("compare", missing, CAND),
        f"{missing}: no such file; check the path (run from the right folder?)",
    )


def test_empty_file(evaldelta: Cli, tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    _bad(
        evaldelta("compare", BASE, empty),
        f"{empty}: is empty: no records to compare; check the eval wrote its results",
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"test_id": "b", "score": 0.5',
            "not valid JSON (the line ends before the JSON object does); "
            "each line must be one JSON object",
        ),
        (
            '{"score": 0.5}',
            'record has no "test_id" (nor "eval_id" or "testId"); every record needs one',
        ),
        ('{"test_id": "b", "score": "high"}', '"score" must be a number, got "high"'),
        (
            '{"test_id": "b", "score": 1e999}',
            '"score" must be a finite number, got a number out of range',
        ),
        (
            '{"test_id": "b", "score": -Infinity}',
            '"score" must be a finite number, got -Infinity '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            '{"test_id": "b", "score": NaN}',
            '"score" must be a finite number, got NaN '
            '(not valid JSON; write a number, or null with an "error")',
        ),
        (
            '{"test_id": "b", "score": 1e300}',
            '"score" must be a finite number within +-1e12, got 1e+300',
        ),
        (
            '{"test_id": "b", "score": 1} {"test_id": "c", "score": 1}',
            "more than one JSON value on the line; each line must be one JSON object",
        ),
        (
            '{"test_id": "", "score": 1}',
            '"test_id" is empty; every record needs a test id',
        ),
        (
            '{"test_id": "b"}',
            "record 'b' has no \"score\"; every record needs a number "
            '(or an "error" for an attempt that did not run)',
        ),
    ],
)
def test_bad_line_is_named(evaldelta: Cli, jsonl: Jsonl, line: str, message: str) -> None:
    path = jsonl("bad.jsonl", ['{"test_id": "a", "score": 1}', "", line])
    _bad(evaldelta("compare", BASE, path), f"{path}:3: {message}")


def test_combined_file_without_target(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl(
        "plain.jsonl",
        ['{"test_id": "a", "target": "x", "score": 1}', "", '{"test_id": "a", "score": 1}'],
    )
    _bad(
        evaldelta("compare", path),
        f'{path}:3: record has no "target"; comparing the targets of one combined file needs a '
        "target on every record (or pass two files to compare them pairwise)",
    )


def test_unknown_target(evaldelta: Cli) -> None:
    _bad(
        evaldelta("compare", COMBINED, "--baseline", "claude", "--candidate", "gpt-4.1"),
        f"{COMBINED}: no records for target 'claude' (targets present: gemini-3-flash-preview, "
        "gpt-4.1, gpt-5-mini); check the name, or list them with --format json",
    )
    r = evaldelta("compare", COMBINED, "--targets", "gpt-4.1", "nope")
    assert r.code == 2
    assert "no records for target 'nope'" in r.err


def test_several_targets_need_a_choice(evaldelta: Cli) -> None:
    _bad(
        evaldelta("compare", COMBINED, BASE),
        f"{COMBINED}: holds 3 targets (gemini-3-flash-preview, gpt-4.1, gpt-5-mini); choose one "
        "to compare (--baseline/--candidate TARGET on the command line)",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["compare", BASE, CAND, BASE],
            "compare takes one combined file or two files, got 3; "
            "put several targets in one file to compare them all at once",
        ),
        (
            ["compare", COMBINED, "--candidate", "gpt-4.1"],
            "--candidate needs --baseline (the target to compare it with)",
        ),
        (
            ["compare", BASE, CAND, "--targets", "x"],
            "--targets is for the matrix of one combined file, not for two files",
        ),
        (["compare", BASE, CAND, "-t", "-0.1"], "--threshold must be a number >= 0, got -0.1"),
    ],
)
def test_usage_errors(evaldelta: Cli, args: list[str], message: str) -> None:
    _bad(evaldelta(*args), message)


def test_argparse_errors_are_one_line_and_exit_2(evaldelta: Cli) -> None:
    r = evaldelta("compare", BASE, CAND, "--format", "xml")
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1
    assert "invalid choice: 'xml'" in r.err
    r = evaldelta("compare", BASE, CAND, "-t", "high")
    assert (r.code, len(r.err.strip().splitlines())) == (2, 1)


def test_no_cases_in_common_cannot_be_judged(evaldelta: Cli, jsonl: Jsonl) -> None:
    other = jsonl("other.jsonl", [{"test_id": "zzz", "score": 1}])
    r = evaldelta("compare", BASE, other)
    assert r.code == 2
    assert r.out == ""  # one line, not a report of nothing
    assert r.err.startswith(f"evaldelta: error: no test ids in common between {BASE} and {other}")
    assert len(r.err.strip().splitlines()) == 1


def test_debug_shows_the_traceback(evaldelta: Cli, tmp_path: Path) -> None:
    r = evaldelta("--debug", "compare", tmp_path / "nope.jsonl", CAND)
    assert r.code != 0
    assert "Traceback" in r.err
    assert "InputError" in r.err


# -- found in review: each was a silent or confusing failure -------------------------------


def test_matrix_regression_outranks_an_unjudged_target(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl(
        "m.jsonl",
        [
            {"test_id": "a", "target": "base", "score": 1},
            {"test_id": "a", "target": "worse", "score": 0},
            {"test_id": "zzz", "target": "other", "score": 1},
        ],
    )
    r = evaldelta("compare", path, "--baseline", "base")
    assert r.code == 1
    assert "Regressed vs base: worse" in r.out
    assert "Cannot judge vs base (no tests in common): other" in r.out


def test_pairwise_of_targets_refuses_records_without_target(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl(
        "mixed.jsonl",
        [
            {"test_id": "a", "target": "x", "score": 1},
            {"test_id": "a", "target": "y", "score": 1},
            {"test_id": "b", "score": 0},
        ],
    )
    r = evaldelta("compare", path, "--baseline", "x", "--candidate", "y")
    assert r.code == 2
    assert r.err.startswith(f'evaldelta: error: {path}:3: record has no "target"')


def test_terminal_without_unicode(evaldelta: Cli, jsonl: Jsonl) -> None:
    env = {"PYTHONIOENCODING": "cp1252"}
    r = evaldelta("compare", COMBINED, env=env)
    assert r.code == 0, r.err
    assert "  gpt-4.1 -> gpt-5-mini:" in r.out
    assert "(delta -0.017)" in r.out
    r = evaldelta("compare", BASE, CAND, env=env)
    assert "+ win" in r.out
    assert "x loss" in r.out
    ids = jsonl("ids.jsonl", [{"test_id": "数学", "score": 1}])
    r = evaldelta("compare", ids, ids, env=env)
    assert (r.code, r.err) == (0, "")
    assert "  ??  " in r.out
    data = subprocess.run(
        [str(EVALDELTA), "compare", str(ids), str(ids), "--json"],
        capture_output=True,
        env={**os.environ, **env},
        check=False,
    )
    assert json.loads(data.stdout.decode("utf-8"))["matched"][0]["test_id"] == "数学"


def test_control_characters_in_ids_are_escaped(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl("c.jsonl", [{"test_id": "line\nbreak\u001b[31m", "score": 1}])
    r = evaldelta("compare", path, path)
    assert "line\\nbreak\\x1b[31m" in r.out
    assert "\x1b" not in r.out


def test_json_documents_are_named(evaldelta: Cli, tmp_path: Path) -> None:
    array = tmp_path / "array.json"
    array.write_text('[{"test_id": "a", "score": 1}]')
    _bad(
        evaldelta("compare", array, array),
        f"{array}: is a JSON array, not JSON Lines; write one JSON object per line "
        f"(supported formats: {', '.join(formats())})",
    )
    pretty = tmp_path / "pretty.json"
    pretty.write_text('{\n  "test_id": "a",\n  "score": 1\n}\n')
    r = evaldelta("compare", pretty, pretty)
    assert r.code == 2
    assert "is one pretty-printed JSON document, not JSON Lines" in r.err
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02garbage")
    r = evaldelta("compare", binary, binary)
    assert r.code == 2
    assert "not a results file evaldelta can read" in r.err


def test_input_format_flag(evaldelta: Cli, tmp_path: Path) -> None:
    odd = tmp_path / "results.txt"
    odd.write_text('  \n{"test_id": "a", "score": 1}\n')
    assert evaldelta("compare", odd, odd, "--input-format", "jsonl").code == 0
    _bad(
        evaldelta("compare", odd, odd, "--input-format", "yaml"),
        f"unknown input format 'yaml'; choose one of: {', '.join(formats())}",
    )


def test_tiny_regression_shows_its_sign(evaldelta: Cli, jsonl: Jsonl) -> None:
    a = jsonl("a.jsonl", [{"test_id": "x", "score": 0.5}, {"test_id": "y", "score": 0.5}])
    b = jsonl("b.jsonl", [{"test_id": "x", "score": 0.4992}, {"test_id": "y", "score": 0.5}])
    r = evaldelta("compare", a, b)
    assert r.code == 1
    assert "Mean delta: -0.0004 | Status: regressed" in r.out


def test_matrix_shows_errors(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl(
        "m.jsonl",
        [
            {"test_id": "a", "target": "x", "score": 1},
            {"test_id": "a", "target": "y", "error": "HTTP 500"},
        ],
    )
    r = evaldelta("compare", path)
    assert "Errors: y 1 attempt had an error (those without a score count as 0)" in r.out
    data = json.loads(evaldelta("compare", path, "--json").out)
    assert data["matrix"][0]["errors"] == {"y": 1}
    assert data["errors"] == {"x": 0, "y": 1}


def test_same_target_twice_and_misplaced_file(evaldelta: Cli) -> None:
    _bad(
        evaldelta("compare", COMBINED, "--baseline", "gpt-4.1", "--candidate", "gpt-4.1"),
        "--baseline and --candidate are both 'gpt-4.1': "
        "a target compared with itself tells nothing",
    )
    _bad(
        evaldelta("compare", "--targets", "gpt-4.1", "gpt-5-mini", COMBINED),
        "no results file given: give one combined file, or two files; put it before --targets "
        "(evaldelta compare RESULTS --targets A B)",
    )


def test_empty_target_is_refused(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl("e.jsonl", [{"test_id": "a", "target": "", "score": 1}])
    _bad(
        evaldelta("compare", path),
        f'{path}:1: "target" is empty; name the target, or leave the field out',
    )


def test_overflowing_scorer_mean(evaldelta: Cli, jsonl: Jsonl) -> None:
    path = jsonl(
        "s.jsonl",
        [{"test_id": "a", "score": 1}, {"test_id": "b", "scores": {"x": 1e308, "y": 1e308}}],
    )
    _bad(
        evaldelta("compare", path, path),
        f'{path}:2: "score" must be a finite number within +-1e12, got inf',
    )


def test_scorer_option(evaldelta: Cli, jsonl: Jsonl) -> None:
    base = jsonl(
        "b.jsonl", [{"test_id": f"q{i}", "scores": {"exact": 1, "judge": 0.5}} for i in range(3)]
    )
    cand = jsonl(
        "c.jsonl", [{"test_id": f"q{i}", "scores": {"exact": 0, "judge": 0.9}} for i in range(3)]
    )
    overall = json.loads(evaldelta("compare", base, cand, "--json").out)
    assert overall["summary"]["mean_delta"] == -0.3  # mean of the scorers: 0.75 -> 0.45
    judge = json.loads(evaldelta("compare", base, cand, "--scorer", "judge", "--json").out)
    assert judge["summary"]["mean_delta"] == 0.4
    assert evaldelta("compare", base, cand, "--scorer", "exact").code == 1
    _bad(
        evaldelta("compare", base, cand, "--scorer", "rouge"),
        f"{base}: no scorer named 'rouge' (scorers present: exact, judge)",
    )
    partial = jsonl(
        "p.jsonl",
        [{"test_id": "q0", "score": 1, "scores": {"judge": 1}}, {"test_id": "q1", "score": 1}],
    )
    r = evaldelta("compare", partial, partial, "--scorer", "judge")
    assert r.code == 2
    assert "p.jsonl:2: scorer 'judge' is missing on 1 records that ran" in r.err


def test_csv_with_map(evaldelta: Cli, tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("question_id,correct,model\nq1,1,a\nq2,0,a\nq1,1,b\nq2,1,b\n")
    r = evaldelta(
        "compare",
        path,
        "--map",
        "test_id=question_id,score=correct,target=model",
        "--baseline",
        "a",
        "--candidate",
        "b",
        "--json",
    )
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [(m["test_id"], m["delta"]) for m in data["matched"]] == [("q1", 0.0), ("q2", 1.0)]
    _bad(
        evaldelta("compare", path, "--map", "test_id=question_id", "--map", "test_id=x"),
        "--map gives 'test_id' twice ('question_id' and 'x'); keep one",
    )


def test_a_tiny_p_value_reads_below_a_thousandth(evaldelta: Cli, jsonl: Jsonl) -> None:
    base = jsonl("base.jsonl", [{"test_id": f"q{i}", "score": 1} for i in range(12)])
    cand = jsonl("cand.jsonl", [{"test_id": f"q{i}", "score": 0} for i in range(12)])
    table = evaldelta("compare", base, cand).out
    assert "McNemar:      0 improved, 12 regressed   p < 0.001" in table
    assert "p = 0.000" not in table
    md = evaldelta("compare", base, cand, "--format", "markdown").out
    assert "0 improved, 12 regressed, p < 0.001 (" in md


def test_a_change_that_does_not_vary_is_said_so(evaldelta: Cli, jsonl: Jsonl) -> None:
    base = jsonl("base.jsonl", [{"test_id": f"q{i}", "score": 0.5} for i in range(30)])
    cand = jsonl("cand.jsonl", [{"test_id": f"q{i}", "score": 0.7} for i in range(30)])
    r = evaldelta("compare", base, cand)
    assert (
        "Mean score:   0.5 -> 0.7   every case changed by exactly +20.0 points (no interval: "
        "the change does not vary)" in r.out
    )
    assert (
        "Verdict: Better. The candidate scores higher: every case changed by exactly +20.0 "
        "points, and an exact sign-flip test over the 30 cases finds p < 0.001." in r.out
    )
    assert "CI [+20.0, +20.0]" not in r.out
    md = evaldelta("compare", base, cand, "--format", "markdown").out
    assert "Every case changed by exactly +20.0 points: the interval has no width" in md
    assert "| Mean score | 0.500 | 0.700 | +20.0 points | none: nothing varies |" in md
    as_json = evaldelta("compare", base, cand, "--format", "json")
    assert json.loads(as_json.out)["verdict"]["code"] == "better"
    same = evaldelta("compare", base, base)
    assert "no case changed: all 30 scored the same in both runs" in same.out
    assert (
        "Verdict: No change. No case changed: all 30 cases scored the same in both runs and "
        "passed alike, so the change is within +/-1.0 points." in same.out
    )
    off = evaldelta("compare", base, base, "--margin", "0")
    assert (
        "Verdict: Inconclusive. No case changed (every delta is exactly 0): there is no "
        "change to tell from none; give a margin (--margin POINTS) to call it No change." in off.out
    )
