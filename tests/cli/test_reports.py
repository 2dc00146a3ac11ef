"""The reports end to end: --format markdown / html / junit of the installed command,
the GitHub Action's gate step run locally, the example workflow, and a report rendered
from a built wheel installed into a fresh virtual environment."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import venv
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EVALDELTA, EXAMPLE, REPO, Result

Cli = Callable[..., Result]

BEFORE = REPO / "examples" / "agent-versions" / "before.jsonl"
AFTER = REPO / "examples" / "agent-versions" / "after.jsonl"
COMBINED = EXAMPLE / "fixtures" / "combined-results.jsonl"
ACTION = REPO / "action.yml"
STORE_CI = REPO / "examples" / "store-ci"
WORKFLOW = REPO / "examples" / "github-actions" / "evaldelta.yml"


def _payload(page: str) -> dict[str, Any]:
    found = re.search(r'id="evaldelta-data">(.*?)</script>', page, re.S)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


# -- --format markdown / html / junit ----------------------------------------------------


def test_compare_markdown(evaldelta: Cli) -> None:
    r = evaldelta("compare", BEFORE, AFTER, "--format", "markdown")
    assert r.code == 0, r.err
    assert r.out.startswith(f"## evaldelta: Inconclusive ({BEFORE} → {AFTER})\n")
    assert "**Verdict: Inconclusive.**" in r.out
    assert "| Mean score | 0.722 | 0.794 | +7.2 points | [-1.1, +15.6] |" in r.out
    assert "McNemar (exact, two-sided): 0 improved, 0 regressed" in r.out
    assert "| no_tool | 57.8% | 100.0% | 15 |" in r.out
    details = r.out.index("<details><summary>Per-case changes: 14 regressions, 22 improvements")
    first_regression = r.out.index("| long_chain-52 | 1.00 | 0.33 | -0.67 | regression |")
    first_improvement = r.out.index("| improvement |")
    assert details < first_regression < first_improvement
    assert r.err == ""


def test_compare_matrix_markdown(evaldelta: Cli) -> None:
    r = evaldelta("compare", COMBINED, "--baseline", "gpt-4.1", "--format", "markdown")
    assert r.code == 1  # the matrix's exit code is unchanged by the format
    assert r.out.startswith("## evaldelta: 2 of 2 targets regressed vs gpt-4.1")
    assert "| Test ID | gemini-3-flash-preview | gpt-4.1 (baseline) | gpt-5-mini |" in r.out


def test_compare_junit_is_valid_xml(evaldelta: Cli) -> None:
    r = evaldelta("compare", BEFORE, AFTER, "--format", "junit")
    assert r.code == 0, r.err
    root = ET.fromstring(r.out)
    assert root.get("tests") == "61"
    assert root.get("failures") == "14"
    failed = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert "long_chain-52" in failed


def test_compare_html_keeps_texts(evaldelta: Cli, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = evaldelta("compare", COMBINED, "--baseline", "gpt-4.1", "--format", "html", "-o", out)
    assert r.code == 1, r.err
    assert r.out == ""
    data = _payload(out.read_text(encoding="utf-8"))
    assert data["kind"] == "matrix"
    assert data["cases"]["input"][0] == "Say hello"
    assert data["cases"]["outputs"][0][0] == "Hello! 👋 How can I help you today?"


def test_compare_two_targets_html(evaldelta: Cli, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    args = ("--baseline", "gpt-4.1", "--candidate", "gpt-5-mini", "--format", "html", "-o", out)
    r = evaldelta("compare", COMBINED, *args)
    assert r.code in (0, 1), r.err
    data = _payload(out.read_text(encoding="utf-8"))
    assert data["kind"] == "pairwise"
    outputs = data["cases"]["outputs"]
    assert outputs[0][0] == "Hi there. What can I do for you?"
    assert outputs[1][0] == "Hello! It's nice to meet you. How can I help?"


def test_gate_formats(evaldelta: Cli, tmp_path: Path) -> None:
    junit = evaldelta("gate", BEFORE, AFTER, "--block-inconclusive", "--format", "junit")
    assert junit.code == 1
    verdict = next(
        tc for tc in ET.fromstring(junit.out).iter("testcase") if tc.get("name") == "verdict"
    )
    failure = verdict.find("failure")
    assert failure is not None
    assert (failure.get("message") or "").startswith("block (--block-inconclusive)")

    page = tmp_path / "gate.html"
    html = evaldelta("gate", BEFORE, AFTER, "--format", "html", "--output", page)
    assert html.code == 0
    assert _payload(page.read_text(encoding="utf-8"))["cases"]["input"][0].startswith(
        "Customer question #0"
    )

    md = tmp_path / "gate.md"
    r = evaldelta("gate", BEFORE, AFTER, "--format", "markdown", "-o", md)
    assert r.code == 0
    assert "**Gate: pass** (exit code 0)." in md.read_text(encoding="utf-8")


def test_unknown_format_lists_the_formats(evaldelta: Cli) -> None:
    r = evaldelta("compare", BEFORE, AFTER, "--format", "pdf")
    assert r.code == 2
    assert "'table', 'json', 'markdown', 'html', 'junit'" in r.err


def test_example_readme_html_command(evaldelta: Cli, tmp_path: Path) -> None:
    """The README's HTML command (in a ```sh block, as it writes a file) runs too."""
    readme = (REPO / "examples" / "github-actions" / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    commands = [line for b in blocks for line in b.splitlines() if line.startswith("evaldelta ")]
    assert commands
    for command in commands:
        args = command.split()[1:]
        args[args.index("-o") + 1] = str(tmp_path / "out.html")
        r = evaldelta(*args, cwd=REPO)
        assert r.code in (0, 1), r.err
        assert (tmp_path / "out.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# -- the GitHub Action ---------------------------------------------------------------------


def _section(text: str, name: str) -> list[str]:
    """The lines of a top-level YAML section (``inputs:``, ``outputs:``, ``runs:``)."""
    lines = text.splitlines()
    start = lines.index(f"{name}:") + 1
    end = next(
        (i for i in range(start, len(lines)) if lines[i] and not lines[i].startswith(" ")),
        len(lines),
    )
    return lines[start:end]


def _keys(section: list[str], indent: int) -> list[str]:
    pattern = re.compile(rf"^ {{{indent}}}([A-Za-z0-9_-]+):")
    return [m.group(1) for line in section if (m := pattern.match(line))]


def _inputs() -> dict[str, str]:
    """Input name -> default, read from action.yml."""
    section = _section(ACTION.read_text(encoding="utf-8"), "inputs")
    defaults: dict[str, str] = {}
    name = ""
    for line in section:
        if m := re.match(r"^  ([a-z0-9-]+):$", line):
            name = m.group(1)
            defaults[name] = ""
        elif m := re.match(r'^    default: "?(.*?)"?$', line):
            defaults[name] = m.group(1)
    return defaults


def _step_script(step_id: str) -> str:
    lines = ACTION.read_text(encoding="utf-8").splitlines()
    at = lines.index(f"      id: {step_id}")
    start = next(i for i in range(at, len(lines)) if lines[i] == "      run: |") + 1
    end = next(
        (
            i
            for i in range(start, len(lines))
            if lines[i].strip() and not lines[i].startswith(" " * 8)
        ),
        len(lines),
    )
    return textwrap.dedent("\n".join(lines[start:end])) + "\n"


def test_action_is_well_formed() -> None:
    text = ACTION.read_text(encoding="utf-8")
    assert "\t" not in text
    assert re.search(r"^runs:\n  using: composite$", text, re.M)
    for top in ("name", "description", "inputs", "outputs", "runs"):
        assert re.search(rf"^{top}:", text, re.M), top
    inputs = _inputs()
    assert {
        "baseline-db",
        "candidate-db",
        "baseline",
        "candidate",
        "block-inconclusive",
        "block-scorer-regression",
        "min-pass-rate",
        "sample",
    } <= set(inputs)
    outputs = ["verdict", "exit-code", "report", "report-path"]
    assert _keys(_section(text, "outputs"), 2) == outputs
    # Every ${{ inputs.x }} names an input, and every input is used.
    used = set(re.findall(r"\$\{\{ inputs\.([a-z0-9-]+) \}\}", text))
    assert used == set(inputs)
    # Outputs come from what the gate step writes to $GITHUB_OUTPUT.
    script = _step_script("gate")
    for output in outputs:
        assert f"${{{{ steps.gate.outputs.{output} }}}}" in text
        assert f'echo "{output}=' in script or f'echo "{output}<<' in script
    assert "pip install" in _step_script("install")
    assert '"$ACTION_PATH"' in _step_script("install")
    assert "${{ github.action_path }}" in text


def test_action_passes_only_flags_the_gate_has(evaldelta: Cli) -> None:
    help_text = evaldelta("gate", "--help").out
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", _step_script("gate")))
    assert flags
    for flag in flags:
        assert re.search(rf"(?<![\w-]){flag}\b", help_text), flag


def _github_output(text: str) -> dict[str, str]:
    """Parse $GITHUB_OUTPUT as GitHub does: ``name=value`` lines, and multi-line values
    as ``name<<DELIMITER``, the value's lines, then ``DELIMITER`` alone on a line."""
    outputs: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value: list[str] = []
            for part in lines:
                if part == delimiter:
                    break
                value.append(part)
            else:
                raise AssertionError(f"{name}: no closing {delimiter!r}")
            assert name not in outputs, name
            outputs[name] = "\n".join(value)
        else:
            name, value_text = line.split("=", 1)
            assert name not in outputs, name
            outputs[name] = value_text
    return outputs


def _run_gate_step(
    tmp_path: Path, evaldelta: Path = EVALDELTA, **inputs: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, str], Path]:
    values = {**_inputs(), "report": str(tmp_path / "report.md"), **inputs}
    output = tmp_path / "github_output"
    summary = tmp_path / "step_summary"
    output.write_text("")
    summary.write_text("# earlier step\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_"))}
    env.update({f"INPUT_{k.upper().replace('-', '_')}": v for k, v in values.items()})
    env.update(
        EVALDELTA=str(evaldelta),
        EVALDELTA_PYTHON=sys.executable,
        RUNNER_TEMP=str(tmp_path),
        GITHUB_OUTPUT=str(output),
        GITHUB_STEP_SUMMARY=str(summary),
    )
    script = tmp_path / "gate.sh"
    script.write_text(_step_script("gate"))
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    return proc, _github_output(output.read_text(encoding="utf-8")), summary


def test_action_gate_step_passes(tmp_path: Path) -> None:
    proc, outputs, summary = _run_gate_step(tmp_path, baseline=str(BEFORE), candidate=str(AFTER))
    assert proc.returncode == 0, proc.stderr
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    # The report's text arrives intact, every line of it (the file ends in a newline,
    # which the multi-line form leaves out).
    assert report.count("\n") > 20
    assert outputs == {
        "verdict": "Inconclusive",
        "exit-code": "0",
        "report-path": str(tmp_path / "report.md"),
        "report": report.removesuffix("\n"),
    }
    assert "**Gate: pass** (exit code 0)." in report
    assert summary.read_text(encoding="utf-8") == "# earlier step\n" + report + "\n"
    assert "evaldelta gate: pass, with a warning" in proc.stderr


def test_action_gate_step_blocks_and_fails_the_job(tmp_path: Path) -> None:
    proc, outputs, _ = _run_gate_step(
        tmp_path, baseline=str(BEFORE), candidate=str(AFTER), **{"block-inconclusive": "true"}
    )
    assert proc.returncode == 1
    assert outputs["verdict"] == "Inconclusive"
    assert outputs["exit-code"] == "1"
    assert "**Gate: block** (exit code 1)." in (tmp_path / "report.md").read_text()


def test_action_gate_step_can_leave_the_job_green(tmp_path: Path) -> None:
    proc, outputs, summary = _run_gate_step(
        tmp_path,
        baseline=str(BEFORE),
        candidate=str(AFTER),
        **{"block-inconclusive": "true", "fail-on-block": "false", "summary": "false"},
    )
    assert proc.returncode == 0
    assert outputs["exit-code"] == "1"
    assert summary.read_text() == "# earlier step\n"


def test_action_gate_step_on_a_combined_file(tmp_path: Path) -> None:
    proc, outputs, _ = _run_gate_step(
        tmp_path,
        baseline=str(COMBINED),
        **{"baseline-target": "gpt-4.1", "candidate-target": "gpt-5-mini"},
    )
    assert proc.returncode == 0, proc.stderr
    assert outputs["verdict"] == "Inconclusive"


def test_action_gate_step_reports_unreadable_runs(tmp_path: Path) -> None:
    proc, outputs, summary = _run_gate_step(
        tmp_path, baseline=str(tmp_path / "missing.jsonl"), candidate=str(AFTER)
    )
    assert proc.returncode == 2
    report = (tmp_path / "report.md").read_text()
    assert outputs == {
        "verdict": "",
        "exit-code": "2",
        "report-path": str(tmp_path / "report.md"),
        "report": report.removesuffix("\n"),
    }
    assert report.startswith("## evaldelta: cannot judge\n")
    assert "missing.jsonl" in report
    assert report in summary.read_text()


def test_action_gate_step_needs_a_baseline(tmp_path: Path) -> None:
    proc, outputs, _ = _run_gate_step(tmp_path, candidate=str(AFTER))
    assert proc.returncode == 2
    assert outputs["exit-code"] == "2"
    message = "evaldelta action: give the baseline run as the input baseline-db (or baseline)"
    assert message in outputs["report"]


def _recording_gate(tmp_path: Path) -> Path:
    """A stand-in for the evaldelta command: it records its arguments, one a line, and
    writes a report whose lines include what a naive delimiter might be."""
    fake = tmp_path / "fake-evaldelta"
    fake.write_text(
        textwrap.dedent(
            """\
            #!/usr/bin/env bash
            printf '%s\\n' "$@" > "$RUNNER_TEMP/args"
            while [ $# -gt 0 ]; do
              if [ "$1" = --report ]; then printf '## r\\nEOF\\nreport<<EOF\\nlast line' > "$2"; fi
              shift
            done
            exit 0
            """
        )
    )
    fake.chmod(0o755)
    return fake


def test_action_inputs_map_to_the_gate_flags(tmp_path: Path) -> None:
    proc, outputs, _ = _run_gate_step(
        tmp_path,
        _recording_gate(tmp_path),
        **{
            "baseline-db": "main.db",
            "candidate-db": "pr.db",
            "baseline": "ignored-baseline.jsonl",
            "candidate": "ignored-candidate.jsonl",
            "min-pass-rate": "0.85",
            "sample": "50",
            "block-inconclusive": "true",
            "block-scorer-regression": "true",
        },
    )
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:3] == ["gate", "main.db", "pr.db"]
    assert "ignored-baseline.jsonl" not in args
    assert "ignored-candidate.jsonl" not in args
    joined = " ".join(args)
    assert "--min-pass-rate 0.85" in joined
    assert "--sample 50" in joined
    assert "--block-inconclusive" in args
    assert "--block-scorer-regression" in args
    # A report without a final newline, with lines that look like delimiters: intact.
    assert outputs["report"] == "## r\nEOF\nreport<<EOF\nlast line"


def test_action_aliases_and_defaults_map_to_the_gate_flags(tmp_path: Path) -> None:
    proc, _, _ = _run_gate_step(
        tmp_path, _recording_gate(tmp_path), baseline="a.jsonl", candidate="b.jsonl"
    )
    assert proc.returncode == 0, proc.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[:3] == ["gate", "a.jsonl", "b.jsonl"]
    for flag in (
        "--min-pass-rate",
        "--sample",
        "--block-inconclusive",
        "--block-scorer-regression",
    ):
        assert flag not in args


def test_action_gate_step_blocks_on_a_scorer_drop(tmp_path: Path) -> None:
    """The store-ci example through the action: a warning, then a block with the input."""
    runs = {"baseline-db": str(STORE_CI / "monday.jsonl")}
    runs["candidate-db"] = str(STORE_CI / "tuesday.jsonl")
    dropped = "scorer factual dropped: -10.0 points, 95% CI [-16.3, -3.7]"
    proc, outputs, _ = _run_gate_step(tmp_path, **runs)
    assert proc.returncode == 0, proc.stderr
    assert f"evaldelta gate: warning: {dropped}" in proc.stderr
    proc, outputs, _ = _run_gate_step(tmp_path, **runs, **{"block-scorer-regression": "true"})
    assert proc.returncode == 1
    assert outputs["exit-code"] == "1"
    assert f"block (--block-scorer-regression): {dropped}" in proc.stderr
    assert "**Gate: block** (exit code 1)." in outputs["report"]


def test_example_workflow_uses_the_action_outputs() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert "\t" not in text
    assert re.search(r"^on:\n  pull_request:", text, re.M)
    assert "pull-requests: write" in text
    action_outputs = set(_keys(_section(ACTION.read_text(encoding="utf-8"), "outputs"), 2))
    used = set(re.findall(r"steps\.evaldelta\.outputs\.([a-z-]+)", text))
    assert used
    assert used <= action_outputs
    step = text[text.index("uses: OWNER/evaldelta@") :]
    block = re.search(r"\n        with:\n((?:          .*\n)+)", step)
    assert block is not None
    given = set(re.findall(r"^          ([a-z-]+): ", block.group(1), re.M))
    assert {"baseline-db", "candidate-db"} <= given <= set(_inputs())
    assert "steps.evaldelta.outputs.report }}" in text  # the text, posted as the comment
    assert "gh pr comment" in text
    assert "--body-file" in text


# -- the wheel -------------------------------------------------------------------------------


def test_report_renders_from_an_installed_wheel(tmp_path: Path) -> None:
    """CSS and JavaScript ship inside the package: build the wheel, install it into a
    fresh virtual environment, and render an HTML report from there."""
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(dist),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("evaldelta-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    for asset in ("report/report.js", "report/report.css", "serve/runs.js", "serve/dashboard.css"):
        package, name = asset.split("/")
        assert f"evaldelta/{package}/assets/{name}" in shipped
    fresh = tmp_path / "fresh"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--quiet",
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # Dependencies (numpy, msgspec) from this environment, appended after the fresh
    # site-packages; .pth files there are not run, so the source tree stays out.
    site = next((fresh / "lib").glob("python*/site-packages"))
    deps = {Path(m.__file__).parent.parent for m in (pytest.importorskip("numpy"),)}
    deps |= {Path(pytest.importorskip("msgspec").__file__).parent.parent}
    (site / "deps.pth").write_text("\n".join(map(str, sorted(deps))) + "\n")

    where = subprocess.run(
        [str(python), "-c", "import evaldelta.report._html as m; print(m.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout.strip()
    assert Path(where).is_relative_to(fresh), where

    page = tmp_path / "report.html"
    proc = subprocess.run(
        [
            str(fresh / "bin" / "evaldelta"),
            "compare",
            str(BEFORE),
            str(AFTER),
            "--format",
            "html",
            "-o",
            str(page),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    text = page.read_text(encoding="utf-8")
    assert "<style>" in text
    assert 'document.getElementById("evaldelta-data")' in text
    assert _payload(text)["cases"]["input"][0].startswith("Customer question #0")


def test_action_gate_step_gates_every_target_of_a_combined_file(tmp_path: Path) -> None:
    combined = REPO / "examples" / "benchmark-tooling" / "fixtures" / "combined-results.jsonl"
    proc, outputs, _ = _run_gate_step(
        tmp_path, **{"baseline-db": str(combined), "baseline-target": "gpt-4.1"}
    )
    assert proc.returncode == 0, proc.stderr
    assert outputs["exit-code"] == "0"
    assert outputs["verdict"] == "gemini-3-flash-preview: Inconclusive, gpt-5-mini: Inconclusive"
    assert outputs["report"].startswith("## evaldelta gate: pass (2 targets vs gpt-4.1)")
