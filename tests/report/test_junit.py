"""Golden output of the JUnit report; valid XML whatever the ids hold."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evaldelta.api import compare, compare_matrix
from evaldelta.io import load
from evaldelta.model import Record, Run
from evaldelta.report._junit import render_junit, xml_text
from tests.conftest import EXAMPLE, FIXTURES

SPEC_JUNIT = """\
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="evaldelta" tests="4" failures="1" errors="0" skipped="0">
  <testsuite name="evaldelta: {a} → {b}" tests="4" failures="1" errors="0" skipped="0">
    <properties>
      <property name="baseline" value="{a}"/>
      <property name="candidate" value="{b}"/>
      <property name="threshold" value="0.1"/>
      <property name="mean_delta" value="+0.000000"/>
      <property name="verdict" value="Inconclusive"/>
      <property name="reason" value="This could be chance: the true change is plausibly \
between -45 and +45 points."/>
    </properties>
    <testcase classname="evaldelta.verdict" name="verdict">
      <system-out>Inconclusive. This could be chance: the true change is plausibly between \
-45 and +45 points.</system-out>
    </testcase>
    <testcase classname="evaldelta.case" name="safety-check"/>
    <testcase classname="evaldelta.case" name="accuracy-test"/>
    <testcase classname="evaldelta.case" name="latency-eval">
      <failure type="regression" message="regression: score 0.90 -&gt; 0.75 (delta -0.15, \
threshold 0.1)">regression: score 0.90 -&gt; 0.75 (delta -0.15, threshold 0.1)</failure>
    </testcase>
  </testsuite>
</testsuites>
"""


def test_spec_junit() -> None:
    a, b = FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"
    assert render_junit(compare(a, b)) == SPEC_JUNIT.format(a=a, b=b)


def _cases(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    return {tc.get("name", ""): tc for tc in root.iter("testcase")}


def test_worse_fails_the_verdict_testcase() -> None:
    base = Run.from_records([Record(f"q{i}", 1.0) for i in range(60)])
    cand = Run.from_records([Record(f"q{i}", 0.0 if i < 40 else 1.0) for i in range(60)])
    xml = render_junit(compare(base, cand))
    root = ET.fromstring(xml)
    assert root.get("tests") == "61"
    assert root.get("failures") == "41"
    verdict = _cases(xml)["verdict"]
    failure = verdict.find("failure")
    assert failure is not None
    assert failure.get("type") == "Worse"
    assert _cases(xml)["q0"].find("failure") is not None
    assert _cases(xml)["q59"].find("failure") is None


def test_the_gate_decides_the_verdict_testcase() -> None:
    a, b = FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"
    c = compare(a, b)
    blocked = _cases(render_junit(c, gate=(1, "block (--block-inconclusive): ...")))["verdict"]
    failure = blocked.find("failure")
    assert failure is not None
    assert failure.get("message") == "block (--block-inconclusive): ..."
    cannot = _cases(render_junit(c, gate=(2, "cannot judge: datasets differ")))["verdict"]
    assert cannot.find("error") is not None
    passed = _cases(render_junit(c, gate=(0, "pass, with a warning")))["verdict"]
    assert passed.find("failure") is None
    assert passed.find("error") is None


def test_cases_on_one_side_only_are_skipped() -> None:
    base = Run.from_records([Record("both", 1.0), Record("old", 1.0)])
    cand = Run.from_records([Record("both", 1.0), Record("new", 1.0)])
    root = ET.fromstring(render_junit(compare(base, cand)))
    assert root.get("skipped") == "2"
    skipped = {tc.get("name") for tc in root.iter("testcase") if tc.find("skipped") is not None}
    assert skipped == {"old", "new"}


def test_matrix_has_one_suite_per_comparison() -> None:
    src = EXAMPLE / "fixtures" / "combined-results.jsonl"
    root = ET.fromstring(render_junit(compare_matrix(load(src), baseline="gpt-4.1")))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [
        "evaldelta: gpt-4.1 → gemini-3-flash-preview",
        "evaldelta: gpt-4.1 → gpt-5-mini",
    ]
    assert [s.get("failures") for s in suites] == ["1", "1"]
    assert root.get("tests") == "8"


def test_hostile_text_gives_valid_xml() -> None:
    ids = [
        "quote\"apos'amp&lt<gt>",
        "]]><evil/>",
        "ctrl\x00\x01\x08\x0b\x0c\x1f-chars",
        "nonchar\ufffe\uffff",
        "tab\tnew\nline",
        "emoji 🙂",
    ]
    base = Run.from_records([Record(t, 1.0, target="<base>") for t in ids])
    cand = Run.from_records([Record(t, 0.0, target='"cand"') for t in ids])
    xml = render_junit(compare(base, cand, baseline_target="<base>", candidate_target='"cand"'))
    root = ET.fromstring(xml)  # raises on invalid XML
    names = {tc.get("name") for tc in root.iter("testcase")}
    assert "quote\"apos'amp&lt<gt>" in names
    assert "]]><evil/>" in names
    assert "ctrl-chars" in names
    assert "nonchar" in names
    assert "tab\tnew\nline" in names  # kept as character references in the attribute
    assert "emoji 🙂" in names
    assert "<evil/>" not in xml


def test_xml_text_strips_what_xml_forbids() -> None:
    assert xml_text("a\x00b\x1bc\ud800d\ufffee") == "abcde"
    assert xml_text("<&>") == "&lt;&amp;&gt;"
    assert xml_text("\t\n\r") == "\t\n\r"
