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


@pytest.mark.parametrize("edited", [False, True])
def test_each_side_has_its_own_dataset_hash(tmp_path: Path, edited: bool) -> None:
    inputs = {f"case-{i}": f"question {i}" for i in range(60)}
    changed = {**inputs, "case-7": "another question"} if edited else inputs
    path = write_jsonl(tmp_path / "both.jsonl", _records("a", inputs) + _records("b", changed))
    c = compare(path, path, baseline_target="a", candidate_target="b")
    check = c.analysis.dataset
    assert check.baseline_hash == dataset_hash(c.left)
    assert check.candidate_hash == dataset_hash(c.right)
    assert (check.baseline_hash == check.candidate_hash) is not edited
    assert check.inputs_changed == int(edited)
