"""The public Python API: what `import evaldelta` offers, and that it matches the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evaldelta
from evaldelta.report._json import render_json
from tests.conftest import FIXTURES, run_evaldelta


def test_public_names() -> None:
    for name in evaldelta.__all__:
        assert getattr(evaldelta, name) is not None
    assert callable(evaldelta.compare)


def test_compare_stays_a_function_after_importing_the_pairing_package() -> None:
    import evaldelta.pairing._pairwise  # the import is the point

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


def test_store_names_are_public() -> None:
    from evaldelta.store import RunStore, StoredRun, open_store

    assert evaldelta.RunStore is RunStore
    assert evaldelta.StoredRun is StoredRun
    assert evaldelta.open_store is open_store
    assert issubclass(evaldelta.StoreError, evaldelta.EvalDeltaError)
    assert issubclass(evaldelta.MissingDependencyError, evaldelta.EvalDeltaError)
    assert evaldelta.compare_runs is evaldelta.api.compare_runs
    assert {"RunStore", "StoredRun", "open_store", "StoreError", "compare_runs"} <= set(
        evaldelta.__all__
    )


def test_importing_the_package_leaves_the_store_unloaded() -> None:
    import subprocess
    import sys

    code = "import evaldelta, sys; print('sqlite3' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- the specs' Python API ------------------------------------------------------------


def _scored(tid_scores: dict[str, tuple[float, float]], latency: float) -> evaldelta.Run:
    return evaldelta.Run.from_records(
        evaldelta.Record(tid, (e + f) / 2, scores={"exact": e, "factual": f}, latency_ms=latency)
        for tid, (e, f) in tid_scores.items()
    )


def test_run_store_as_the_spec_uses_it(tmp_path: Path) -> None:
    """``RunStore(path)`` creates the store on first use; runs go in and come back."""
    path = tmp_path / "evals" / "store.db"
    store = evaldelta.RunStore(path)
    assert path.is_file()
    before = _scored({"a": (0.8, 1.0), "b": (0.5, 0.5)}, 1000.0)
    first = store.add_run(before, name="qa-eval", config={"model": "small"})
    second = store.add_run(
        _scored({"a": (0.9, 0.85), "b": (0.5, 0.4)}, 850.0), name="qa-eval", config={}
    )
    assert [r.id for r in store.list_runs(name="qa-eval")] == [second, first]
    assert store.get_run(first).records()[0].scores == {"exact": 0.8, "factual": 1.0}
    assert store.info(first).config == {"model": "small"}
    store.delete_run(first)
    assert [r.id for r in store.list_runs()] == [second]
    store.close()


def test_compare_runs_by_id_name_path_and_run(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    base = _scored({"a": (0.8, 1.0), "b": (0.5, 0.5), "gone": (1.0, 1.0)}, 1000.0)
    cand = _scored({"b": (0.5, 0.4), "a": (0.9, 0.85), "new": (1.0, 1.0)}, 850.0)
    with evaldelta.open_store(path) as store:
        b, c = store.add_run(base, name="before"), store.add_run(cand, name="after")
        by_id = evaldelta.compare_runs(store, b, c)
        assert by_id.baseline == "before (run 1)"
        assert by_id.candidate == "after (run 2)"
        assert by_id.total_cases_compared == 2
        assert (by_id.only_in_baseline, by_id.only_in_candidate) == (["gone"], ["new"])
        assert by_id.scorer_summaries["factual"].mean_delta == pytest.approx(-0.125)
        assert by_id.regression.regressed
        assert by_id.regression.scorers == ["factual"]
        assert by_id.cost_delta.latency_delta_ms == -150.0
        assert evaldelta.compare_runs(store, "before", str(c)) == by_id
        assert evaldelta.compare_runs(store, b, cand).candidate == "<records>"
        lenient = evaldelta.compare_runs(store, b, c, tolerance=0.2, regression_threshold=0.2)
        assert not lenient.regression.regressed
        assert lenient.scorer_summaries["factual"].regressed_count == 0
    # A path is opened for the call (and closed again).
    assert evaldelta.compare_runs(str(path), 1, 2) == by_id
    assert evaldelta.compare_runs(path, 1, 2).to_dict() == by_id.to_dict()
    assert evaldelta.compare_runs(None, base, cand).total_cases_compared == 2


def test_one_run_under_two_spellings_is_one_run(tmp_path: Path) -> None:
    """3, "3" and the run's name are the same run: read once, and compared as itself."""
    run = _scored({"a": (0.8, 1.0), "b": (0.5, 0.5)}, 1000.0)
    with evaldelta.open_store(tmp_path / "store.db") as store:
        rid = store.add_run(run, name="only")
        reads: list[object] = []
        get_run = store.get_run

        def counted(ref: object, **kwargs: object) -> object:
            reads.append(ref)
            return get_run(ref, **kwargs)  # type: ignore[arg-type]

        store.get_run = counted  # type: ignore[method-assign]
        by_id = evaldelta.compare_runs(store, rid, rid)
        assert len(reads) == 1
        assert evaldelta.compare_runs(store, rid, str(rid)) == by_id
        assert evaldelta.compare_runs(store, "only", rid) == by_id
        assert len(reads) == 3  # one read per comparison, whatever the spelling
        assert not by_id.regression.regressed


def test_compare_runs_errors(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with pytest.raises(evaldelta.StoreError) as err:
        evaldelta.compare_runs(path, 1, 2)
    assert str(err.value).startswith(f"no run store at {path}; store a run first")
    assert not path.exists()
    run = _scored({"a": (0.5, 0.5)}, 1.0)
    with pytest.raises(evaldelta.UsageError) as usage:
        evaldelta.compare_runs(None, run, "after")
    assert str(usage.value) == (
        "run 'after' is a reference to a stored run, but no store was given; pass a "
        "RunStore (or its path) as the first argument, or pass Run objects"
    )
    with evaldelta.open_store(path) as store:
        store.add_run(run, name="before")
        with pytest.raises(evaldelta.StoreError) as missing:
            evaldelta.compare_runs(store, "before", "after")
        assert str(missing.value) == (
            f"no run named 'after' in {path}; list runs with `evaldelta runs list`"
        )
        with pytest.raises(evaldelta.UsageError):
            evaldelta.compare_runs(store, "before", "before", tolerance=-1)


def test_compare_runs_warns_about_an_interrupted_run() -> None:
    run = _scored({"a": (0.5, 0.5)}, 1.0)
    cut = run.take(np.arange(len(run)))
    object.__setattr__(cut, "status", "interrupted")
    result = evaldelta.compare_runs(None, run, cut)
    assert result.warnings == [
        "the candidate run (<records>) was interrupted: its missing cases are not compared"
    ]


def test_run_compare_is_compare_with_the_sides_swapped() -> None:
    """Spec 002: ``after.compare(before)``; keyword options pass through."""
    before = evaldelta.load(FIXTURES / "baseline.jsonl")
    after = evaldelta.load(FIXTURES / "candidate.jsonl")
    result = after.compare(before)
    assert isinstance(result, evaldelta.Comparison)
    assert result.to_dict() == evaldelta.compare(before, after).to_dict()
    assert (result.baseline, result.candidate) == (before.source, after.source)
    settings = evaldelta.Settings(resamples=200, seed=3)
    assert (
        after.compare(before, 0.05, settings=settings).to_dict()
        == evaldelta.compare(before, after, 0.05, settings=settings).to_dict()
    )
    cli = json.loads(
        run_evaldelta(
            "compare", FIXTURES / "baseline.jsonl", FIXTURES / "candidate.jsonl", "--json"
        ).out
    )
    assert result.to_dict() == cli
    assert after.compare(FIXTURES / "baseline.jsonl").to_dict() == cli


def test_run_compare_takes_the_keywords_of_compare() -> None:
    """``candidate.compare(baseline, ...)``: the same keyword parameters, by name."""
    import inspect

    from evaldelta.analysis._settings import CompareOptions

    ours = inspect.signature(evaldelta.Run.compare).parameters
    theirs = inspect.signature(evaldelta.compare).parameters
    assert list(ours) == ["self", "baseline", "threshold", "options"]
    keywords = [p for p, v in theirs.items() if v.kind is inspect.Parameter.KEYWORD_ONLY]
    assert list(CompareOptions.__annotations__) == keywords
    combined = evaldelta.load(FIXTURES / "combined-results.jsonl")
    kwargs = {"baseline_target": "gpt-4.1", "candidate_target": "gpt-5-mini", "sample": 2}
    assert (
        combined.compare(combined, **kwargs).to_dict()
        == evaldelta.compare(combined, combined, **kwargs).to_dict()
    )


def test_errors_name_the_parameter_not_the_flag() -> None:
    run = evaldelta.load(FIXTURES / "baseline.jsonl")
    with pytest.raises(evaldelta.UsageError) as err:
        evaldelta.compare(run, run, sample=0)
    assert (str(err.value), err.value.option) == ("sample must be at least 1, got 0", "sample")
    settings = evaldelta.Settings(cluster_by="topic")
    with pytest.raises(evaldelta.UsageError) as err:
        evaldelta.compare(run, run, settings=settings)
    assert str(err.value).endswith(
        "(load it with extra_fields=(...), or use cluster_by='category')"
    )
    assert err.value.option == "cluster_by"


def _holm_run() -> evaldelta.Run:
    """A baseline and three candidates on 40 cases: A far better, B better by a margin
    Bonferroni (98.33% intervals) misses and Holm's second step (97.5%) finds, C the same."""
    changes = {
        "A": [0.3] * 30 + [0.2] * 10,
        "B": [0.1] * 20 + [0.0] * 12 + [-0.1] * 8,  # t = 2.399 on 39 degrees of freedom
        "C": [0.1] * 10 + [0.0] * 20 + [-0.1] * 10,
    }
    ids, targets, scores = [], [], []
    for i in range(40):
        ids.append(f"q{i}")
        targets.append("base")
        scores.append(0.5)
        for name, d in changes.items():
            ids.append(f"q{i}")
            targets.append(name)
            scores.append(0.5 + d[i])
    return evaldelta.Run.from_columns(
        source="holm", format="sim", test_id=ids, target=targets, score=scores
    )


def test_holm_decides_what_bonferroni_would_miss() -> None:
    m = evaldelta.compare_matrix(_holm_run(), baseline="base")
    got = {
        p.candidate: (p.verdict.kind, round(p.figures.level, 6), p.figures.step) for p in m.pairwise
    }
    assert got == {
        "A": ("Better", round(1 - 0.05 / 3, 6), 3),
        "B": ("Better", 0.975, 2),
        "C": ("Inconclusive", 0.95, 1),  # the last one left is tested at alpha itself
    }
    b = next(p for p in m.pairwise if p.candidate == "B")
    assert b.figures.to_dict()["adjustment"] == (
        "Holm step-down: 3 comparisons against the baseline; this one at level 1 - alpha/2"
    )
    # Bonferroni's level for all three leaves B undecided.
    run = _holm_run()
    strict = evaldelta.compare(
        run,
        run,
        baseline_target="base",
        candidate_target="B",
        settings=evaldelta.Settings(alpha=0.05 / 3),
    )
    assert strict.verdict.kind == "Inconclusive"
