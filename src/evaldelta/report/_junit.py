"""JUnit XML, so that CI systems which read it show regressions as failed tests.

One ``<testsuite>`` per comparison (a matrix has one per pairwise comparison); in
it one ``<testcase>`` for the verdict, failed when it is Worse (or, under the gate,
when the gate blocks), and one per compared case, failed when the case regressed
(its outcome is a loss). Cases compared on one side only are listed as skipped.
The figures come from the result; this module only formats them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from evaldelta.report._text import Matrix, Pairwise, analysis_of

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["render_junit", "xml_text"]

#: Characters XML 1.0 does not allow in a document at all, even escaped (control
#: characters but tab, newline and carriage return; lone surrogates; U+FFFE/U+FFFF).
_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_GATE_WORDS = {0: "pass", 1: "block", 2: "cannot judge"}


def xml_text(text: str) -> str:
    """``text`` escaped for XML content, with characters XML 1.0 forbids removed."""
    text = _FORBIDDEN.sub("", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _attr(text: str) -> str:
    """``text`` escaped for a double-quoted attribute; line breaks kept as references."""
    return (
        xml_text(text)
        .replace('"', "&quot;")
        .replace("\n", "&#10;")
        .replace("\r", "&#13;")
        .replace("\t", "&#9;")
    )


def _suite(c: Pairwise, gate: tuple[int, str] | None) -> tuple[list[str], int, int, int, int]:
    """The lines of one testsuite, and its (tests, failures, errors, skipped) counts."""
    a = analysis_of(c)
    body: list[str] = []
    failures = errors = skipped = 0

    # The verdict: a failure when Worse (or when the gate blocks), an error when the
    # comparison cannot be judged.
    kind = a.verdict.kind if a is not None else None
    sentence = a.verdict.sentence() if a is not None else ""
    refusals = [p.message for p in a.refusals] if a is not None else []
    # The name stays the same whatever the verdict, so CI keeps one history for it.
    if gate is not None:
        code, decision = gate
        outcome = {1: "failure", 2: "error"}.get(code)
        message = decision
    else:
        if refusals or not c.test_ids:
            outcome = "error"
            message = "cannot judge: " + ("; ".join(refusals) if refusals else "no cases in common")
        else:
            outcome = "failure" if kind == "Worse" else None
            message = sentence
    body.append('    <testcase classname="evaldelta.verdict" name="verdict">')
    if outcome is not None:
        body.append(
            f'      <{outcome} type="{_attr(kind or "cannot judge")}" message="{_attr(message)}">'
            f"{xml_text(message)}</{outcome}>"
        )
        failures += outcome == "failure"
        errors += outcome == "error"
    if a is not None:
        body.append(f"      <system-out>{xml_text(sentence)}</system-out>")
    body.append("    </testcase>")

    for m in c.matched():
        name = _attr(m.test_id)
        if m.outcome == "loss":
            failures += 1
            message = (
                f"regression: score {m.score1:.2f} -> {m.score2:.2f} "
                f"(delta {m.delta:+.2f}, threshold {c.threshold:g})"
            )
            body.append(f'    <testcase classname="evaldelta.case" name="{name}">')
            body.append(
                f'      <failure type="regression" message="{_attr(message)}">'
                f"{xml_text(message)}</failure>"
            )
            body.append("    </testcase>")
        else:
            body.append(f'    <testcase classname="evaldelta.case" name="{name}"/>')

    for ids, why in (
        (c.unmatched_baseline, "not compared: only in the baseline"),
        (c.unmatched_candidate, "not compared: only in the candidate"),
        (c.not_run, "not compared: no attempt ran on one side (infrastructure failures)"),
    ):
        for tid in ids:
            skipped += 1
            body.append(f'    <testcase classname="evaldelta.case" name="{_attr(tid)}">')
            body.append(f'      <skipped message="{_attr(why)}"/>')
            body.append("    </testcase>")

    tests = 1 + len(c.test_ids) + skipped
    name = f"evaldelta: {c.baseline} → {c.candidate}"
    head = [
        f'  <testsuite name="{_attr(name)}" tests="{tests}" failures="{failures}" '
        f'errors="{errors}" skipped="{skipped}">',
        "    <properties>",
        *(
            f'      <property name="{key}" value="{_attr(value)}"/>'
            for key, value in _properties(c, gate)
        ),
        "    </properties>",
    ]
    return [*head, *body, "  </testsuite>"], tests, failures, errors, skipped


def _properties(c: Pairwise, gate: tuple[int, str] | None) -> Iterator[tuple[str, str]]:
    a = analysis_of(c)
    yield "baseline", c.baseline
    yield "candidate", c.candidate
    yield "threshold", f"{c.threshold:g}"
    yield "mean_delta", f"{c.summary.mean_delta:+.6f}"
    if a is not None:
        yield "verdict", a.verdict.kind
        yield "reason", a.verdict.reason
    if gate is not None:
        yield "gate", _GATE_WORDS.get(gate[0], str(gate[0]))
        yield "exit_code", str(gate[0])


def render_junit(result: Pairwise | Matrix, *, gate: tuple[int, str] | None = None) -> str:
    """The result as a JUnit XML document, ending with a newline.

    Args:
        result: a pairwise comparison, or a matrix (one testsuite per comparison).
        gate: the gate's exit code and decision; the verdict testcase then follows
            the gate (failure on block, error on cannot judge).
    """
    comparisons = result.pairwise if isinstance(result, Matrix) else [result]
    suites: list[str] = []
    tests = failures = errors = skipped = 0
    for c in comparisons:
        lines, t, f, e, s = _suite(c, gate)
        suites.extend(lines)
        tests, failures, errors, skipped = tests + t, failures + f, errors + e, skipped + s
    head = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="evaldelta" tests="{tests}" failures="{failures}" '
        f'errors="{errors}" skipped="{skipped}">',
    ]
    return "\n".join([*head, *suites, "</testsuites>"]) + "\n"
