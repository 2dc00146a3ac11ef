"""JSON output: the specs' field names, exactly, and equal to ``to_dict()``."""

from __future__ import annotations

import json

from evaldelta.io import load
from evaldelta.pairing._matrix import build_matrix
from evaldelta.pairing._pairwise import pair
from evaldelta.report._json import render_json
from tests.conftest import FIXTURES


def test_pairwise_json_matches_to_dict() -> None:
    c = pair(load(FIXTURES / "baseline.jsonl"), load(FIXTURES / "candidate.jsonl"))
    data = json.loads(render_json(c))
    assert data == c.to_dict()
    assert set(data) >= {"matched", "unmatched", "summary"}
    assert set(data["matched"][0]) >= {"test_id", "score1", "score2", "delta", "outcome"}
    assert set(data["unmatched"]) >= {"file1", "file2"}
    assert set(data["summary"]) >= {"total", "matched", "wins", "losses", "ties", "mean_delta"}
    assert data["matched"][0]["delta"] == 0.2
    assert data["summary"]["mean_delta"] == 0.0


def test_matrix_json_shape() -> None:
    m = build_matrix(load(FIXTURES / "combined-results.jsonl"))
    data = json.loads(render_json(m))
    assert data == m.to_dict()
    assert data["targets"] == ["gemini-3-flash-preview", "gpt-4.1", "gpt-5-mini"]
    assert data["matrix"][0]["scores"] == {
        "gemini-3-flash-preview": 0.9,
        "gpt-4.1": 0.85,
        "gpt-5-mini": 0.95,
    }
    p = data["pairwise"][0]
    assert (p["baseline"], p["candidate"]) == ("gemini-3-flash-preview", "gpt-4.1")
    assert set(p) >= {"matched", "unmatched", "summary"}
