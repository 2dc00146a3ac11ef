"""The public Python API: what `import evaldelta` offers, and that it matches the CLI."""

from __future__ import annotations

import json

import evaldelta
from evaldelta.report.json import render_json
from tests.conftest import FIXTURES, run_evaldelta


def test_public_names() -> None:
    for name in evaldelta.__all__:
        assert getattr(evaldelta, name) is not None
    assert callable(evaldelta.compare)


def test_compare_stays_a_function_after_importing_the_pairing_package() -> None:
    import evaldelta.pairing.pairwise  # the import is the point

    assert callable(evaldelta.compare)
    assert evaldelta.compare is evaldelta.api.compare


def test_to_dict_is_the_cli_json() -> None:
    base, cand = FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl"
    c = evaldelta.compare(evaldelta.load(base), evaldelta.load(cand), threshold=0.1)
    cli = json.loads(run_evaldelta("compare", base, cand, "--json").out)
    assert c.to_dict() == cli
    combined = FIXTURES / "combined-results.jsonl"
    m = evaldelta.compare_matrix(evaldelta.load(combined), baseline="gpt-4.1")
    cli = json.loads(run_evaldelta("compare", combined, "--json", "--baseline", "gpt-4.1").out)
    assert m.to_dict() == cli
    assert json.loads(render_json(m)) == cli


def test_errors_form_one_tree() -> None:
    for name in ("InputError", "ParseError", "UnknownFormatError", "PairingError", "UsageError"):
        assert issubclass(getattr(evaldelta, name), evaldelta.EvalDeltaError)
    assert issubclass(evaldelta.ParseError, evaldelta.InputError)
