"""The fairness checks: the dataset hash of each side, taken once when both sides hold
the same cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaldelta.analysis._fairness import dataset_hash
from evaldelta.api import compare
from tests.conftest import write_jsonl


def _records(target: str, inputs: dict[str, str]) -> list[dict[str, object]]:
    return [
        {"test_id": tid, "target": target, "score": i % 3 / 2, "input": text}
        for i, (tid, text) in enumerate(inputs.items())
    ]


@pytest.mark.parametrize("reordered", [False, True])
@pytest.mark.parametrize("change", ["none", "input", "test id"])
def test_each_side_has_its_own_dataset_hash(tmp_path: Path, change: str, reordered: bool) -> None:
    inputs = {f"case-{i}": f"question {i}" for i in range(60)}
    other = dict(inputs)
    if change == "input":
        other["case-7"] = "another question"
    elif change == "test id":  # as many cases, one of them another
        other["case-60"] = other.pop("case-7")
    candidate = _records("b", other)
    if reordered:  # the candidate's cases in another order
        candidate.reverse()
    path = write_jsonl(tmp_path / "both.jsonl", _records("a", inputs) + candidate)
    c = compare(path, path, baseline_target="a", candidate_target="b")
    check = c.analysis.dataset
    # Each side's own hash: of the side compared with itself (all its cases matched).
    for target, figure in (("a", check.baseline_hash), ("b", check.candidate_hash)):
        alone = compare(path, path, baseline_target=target, candidate_target=target)
        assert figure == dataset_hash(alone.left)
    assert (check.baseline_hash == check.candidate_hash) is (change == "none")
    assert check.inputs_changed == int(change == "input")
